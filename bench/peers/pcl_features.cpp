// Benchmark and reference peer: PCL 1.13 PFH / FPFH descriptors.
//
//   pcl_features CLOUD.pcd --feature pfh|fpfh|fpfh-omp [--k N | --radius R] [--every S]
//                [--threads T] [--repeat N] [-o OUT.csv] [--json]
//
// The cloud is read into pcl::PointCloud<pcl::PointNormal>; the normals are the file's
// normal_x/normal_y/normal_z fields (nothing is re-estimated). The whole cloud is the
// input (and so the search surface); with --every S only points 0, S, 2S, ... are
// queries (setIndices), so the SPFHs of their neighbors (FPFH) are computed on the
// full cloud, each from its own full-cloud neighborhood.
//
// Neighborhoods come from pcl::search::KdTree (FLANN) with sorted results:
// setKSearch(k) (the k nearest, the query itself among them) or setRadiusSearch(R)
// (every point with squared distance < R^2, strictly, as FLANN tests it; the query itself
// among them, no cap).
//
// Estimators: pfh      pcl::PFHEstimation<PointNormal, PointNormal, PFHSignature125>
//             fpfh     pcl::FPFHEstimation<PointNormal, PointNormal, FPFHSignature33>
//             fpfh-omp pcl::FPFHEstimationOMP<...> with setNumberOfThreads(T)
// all with PCL's defaults (PFH: 5 subdivisions, no pair cache; FPFH: 11+11+11 bins),
// using the instantiations precompiled in Debian's libpcl_features.
//
// Timing: compute() only (steady_clock), a fresh estimator each repetition, median of
// --repeat runs. compute() includes building the k-d tree of the cloud (Feature's
// initCompute hands the surface to the search object), as a PCL user would see it.
// PFHEstimation and FPFHEstimation are single-threaded; only fpfh-omp uses --threads.
//
// -o OUT.csv writes one line per query: "index,v0,v1,..." (125 or 33 values, %.9g),
// where index is the query's index in the cloud; a NaN value is written "nan" (PCL
// fills a descriptor with NaN only when the search finds no neighbor at all).

#include <pcl/features/fpfh.h>
#include <pcl/features/fpfh_omp.h>
#include <pcl/features/pfh.h>
#include <pcl/io/pcd_io.h>
#include <pcl/pcl_config.h>
#include <pcl/point_types.h>
#include <pcl/search/kdtree.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using PointT = pcl::PointNormal;
using Cloud = pcl::PointCloud<PointT>;

namespace {

[[noreturn]] void usage(const char* msg)
{
  if (msg)
    std::fprintf(stderr, "pcl_features: %s\n", msg);
  std::fprintf(stderr,
               "usage: pcl_features CLOUD.pcd --feature pfh|fpfh|fpfh-omp [--k N | --radius R]\n"
               "                    [--every S] [--threads T] [--repeat N] [-o OUT.csv] [--json]\n"
               "  CLOUD.pcd      PCD with x y z normal_x normal_y normal_z (normals used as given)\n"
               "  --feature F    pfh (PFHEstimation, 125 bins), fpfh (FPFHEstimation, 33 bins),\n"
               "                 fpfh-omp (FPFHEstimationOMP)\n"
               "  --k N          k nearest neighbors, query included (default 30)\n"
               "  --radius R     all neighbors within R (instead of --k)\n"
               "  --every S      queries are points 0, S, 2S, ... (default 1: all)\n"
               "  --threads T    threads for fpfh-omp (default 2)\n"
               "  --repeat N     timed runs of compute(), median reported (default 5)\n"
               "  -o OUT.csv     descriptors, one line per query: index,v0,v1,...\n"
               "  --json         one JSON object on stdout\n");
  std::exit(2);
}

double parse_double(const char* s, const char* what)
{
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (!s[0] || *end)
    usage((std::string("bad number for ") + what + ": " + s).c_str());
  return v;
}

long parse_int(const char* s, const char* what)
{
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (!s[0] || *end)
    usage((std::string("bad integer for ") + what + ": " + s).c_str());
  return v;
}

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void print_number(double v)
{
  if (std::isfinite(v))
    std::printf("%.17g", v);
  else
    std::printf("null");
}

struct Options {
  std::string feature;
  int k = 0;
  double radius = 0.0;
  int every = 1;
  int threads = 2;
  int repeat = 5;
};

// Set up one estimator (fresh each repetition) and time compute() alone.
template <typename Estimator, typename Descriptor>
double run_once(Estimator& est, const Cloud::Ptr& cloud, const pcl::IndicesPtr& indices,
                const Options& opt, pcl::PointCloud<Descriptor>& out)
{
  typename pcl::search::KdTree<PointT>::Ptr tree(new pcl::search::KdTree<PointT>(true));
  est.setInputCloud(cloud);
  est.setInputNormals(cloud);
  est.setSearchMethod(tree);
  if (indices)
    est.setIndices(indices);
  if (opt.radius > 0.0)
    est.setRadiusSearch(opt.radius);
  else
    est.setKSearch(opt.k);
  auto t0 = std::chrono::steady_clock::now();
  est.compute(out);
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

template <typename Descriptor>
bool write_descriptor_csv(const std::string& path, const pcl::PointCloud<Descriptor>& out,
               const std::vector<int>& query_index, int nbins)
{
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f)
    return false;
  for (size_t q = 0; q < out.size(); ++q) {
    std::fprintf(f, "%d", query_index[q]);
    for (int b = 0; b < nbins; ++b) {
      const float v = out[q].histogram[b];
      if (std::isnan(v))
        std::fputs(",nan", f);
      else
        std::fprintf(f, ",%.9g", static_cast<double>(v));
    }
    std::fputc('\n', f);
  }
  return std::fclose(f) == 0;
}

template <typename Descriptor>
void count_rows(const pcl::PointCloud<Descriptor>& out, int nbins, size_t* nan_rows,
                size_t* zero_rows)
{
  *nan_rows = *zero_rows = 0;
  for (const auto& d : out.points) {
    bool any_nan = false, all_zero = true;
    for (int b = 0; b < nbins; ++b) {
      if (std::isnan(d.histogram[b]))
        any_nan = true;
      else if (d.histogram[b] != 0.0f)
        all_zero = false;
    }
    if (any_nan)
      ++*nan_rows;
    else if (all_zero)
      ++*zero_rows;
  }
}

} // namespace

int main(int argc, char** argv)
{
  std::vector<std::string> pos;
  Options opt;
  std::string out_path;
  bool json = false, have_k = false;

  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto need = [&](const char* what) -> const char* {
      if (i + 1 >= argc)
        usage((std::string(what) + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--feature")
      opt.feature = need("--feature");
    else if (a == "--k") {
      opt.k = static_cast<int>(parse_int(need("--k"), "--k"));
      have_k = true;
    }
    else if (a == "--radius")
      opt.radius = parse_double(need("--radius"), "--radius");
    else if (a == "--every")
      opt.every = static_cast<int>(parse_int(need("--every"), "--every"));
    else if (a == "--threads")
      opt.threads = static_cast<int>(parse_int(need("--threads"), "--threads"));
    else if (a == "--repeat")
      opt.repeat = static_cast<int>(parse_int(need("--repeat"), "--repeat"));
    else if (a == "-o")
      out_path = need("-o");
    else if (a == "--json")
      json = true;
    else if (a == "-h" || a == "--help")
      usage(nullptr);
    else if (a.size() > 1 && a[0] == '-')
      usage(("unknown option " + a).c_str());
    else
      pos.push_back(a);
  }
  if (pos.size() != 1)
    usage("want one CLOUD.pcd");
  if (opt.feature != "pfh" && opt.feature != "fpfh" && opt.feature != "fpfh-omp")
    usage("--feature must be pfh, fpfh or fpfh-omp");
  if (have_k && opt.radius != 0.0)
    usage("give --k or --radius, not both");
  if (opt.radius < 0.0 || !std::isfinite(opt.radius))
    usage("--radius must be positive");
  if (opt.radius == 0.0 && !have_k)
    opt.k = 30;
  if (opt.radius == 0.0 && opt.k < 2)
    usage("--k must be >= 2");
  if (opt.every < 1 || opt.threads < 1 || opt.repeat < 1)
    usage("--every, --threads and --repeat must be >= 1");

  pcl::console::setVerbosityLevel(pcl::console::L_ERROR);
  Cloud::Ptr cloud(new Cloud);
  if (pcl::io::loadPCDFile(pos[0], *cloud) < 0 || cloud->empty()) {
    std::fprintf(stderr, "pcl_features: %s: cannot read a point cloud\n", pos[0].c_str());
    return 3;
  }
  // Descriptors need normals: refuse a cloud whose normals did not load.
  size_t zero_normals = 0, nonfinite = 0;
  for (const auto& p : cloud->points) {
    if (!std::isfinite(p.x) || !std::isfinite(p.y) || !std::isfinite(p.z) ||
        !std::isfinite(p.normal_x) || !std::isfinite(p.normal_y) || !std::isfinite(p.normal_z))
      ++nonfinite;
    else if (p.normal_x == 0.0f && p.normal_y == 0.0f && p.normal_z == 0.0f)
      ++zero_normals;
  }
  if (zero_normals == cloud->size()) {
    std::fprintf(stderr, "pcl_features: %s: no normals (normal_x/y/z) in the file\n",
                 pos[0].c_str());
    return 3;
  }
  if (nonfinite)
    cloud->is_dense = false;

  const int n = static_cast<int>(cloud->size());
  std::vector<int> query_index;
  pcl::IndicesPtr indices;
  if (opt.every > 1) {
    indices.reset(new pcl::Indices);
    for (int i = 0; i < n; i += opt.every)
      indices->push_back(i);
    query_index.assign(indices->begin(), indices->end());
  }
  else {
    query_index.resize(n);
    for (int i = 0; i < n; ++i)
      query_index[i] = i;
  }

  std::vector<double> times;
  pcl::PointCloud<pcl::PFHSignature125> pfh_out;
  pcl::PointCloud<pcl::FPFHSignature33> fpfh_out;
  const bool is_pfh = opt.feature == "pfh";
  const int nbins = is_pfh ? 125 : 33;
  int threads_used = 1;

  for (int r = 0; r < opt.repeat; ++r) {
    if (is_pfh) {
      pcl::PFHEstimation<PointT, PointT, pcl::PFHSignature125> est;
      times.push_back(run_once(est, cloud, indices, opt, pfh_out));
    }
    else if (opt.feature == "fpfh") {
      pcl::FPFHEstimation<PointT, PointT, pcl::FPFHSignature33> est;
      times.push_back(run_once(est, cloud, indices, opt, fpfh_out));
    }
    else {
      pcl::FPFHEstimationOMP<PointT, PointT, pcl::FPFHSignature33> est;
      est.setNumberOfThreads(static_cast<unsigned>(opt.threads));
      threads_used = opt.threads;
      times.push_back(run_once(est, cloud, indices, opt, fpfh_out));
    }
  }
  const size_t n_out = is_pfh ? pfh_out.size() : fpfh_out.size();
  if (n_out != query_index.size()) {
    std::fprintf(stderr, "pcl_features: got %zu descriptors for %zu queries\n", n_out,
                 query_index.size());
    return 4;
  }

  // Outside the timed region: the neighborhood sizes the estimator saw (query included).
  pcl::search::KdTree<PointT> tree(true);
  tree.setInputCloud(cloud);
  pcl::Indices nn;
  std::vector<float> d2;
  double nn_sum = 0.0;
  size_t nn_min = static_cast<size_t>(-1), nn_max = 0;
  for (int q : query_index) {
    size_t c = opt.radius > 0.0 ? static_cast<size_t>(tree.radiusSearch(q, opt.radius, nn, d2, 0))
                                : static_cast<size_t>(tree.nearestKSearch(q, opt.k, nn, d2));
    nn_sum += static_cast<double>(c);
    nn_min = std::min(nn_min, c);
    nn_max = std::max(nn_max, c);
  }
  const double nn_mean = nn_sum / static_cast<double>(query_index.size());

  size_t nan_rows = 0, zero_rows = 0;
  if (is_pfh)
    count_rows(pfh_out, nbins, &nan_rows, &zero_rows);
  else
    count_rows(fpfh_out, nbins, &nan_rows, &zero_rows);

  if (!out_path.empty()) {
    bool ok = is_pfh ? write_descriptor_csv(out_path, pfh_out, query_index, nbins)
                     : write_descriptor_csv(out_path, fpfh_out, query_index, nbins);
    if (!ok) {
      std::fprintf(stderr, "pcl_features: %s: cannot write\n", out_path.c_str());
      return 3;
    }
  }

  const double med = median(times);
  if (!json) {
    std::printf("pcl %s %s: %d points, %zu queries, ", PCL_VERSION_PRETTY, opt.feature.c_str(),
                n, query_index.size());
    if (opt.radius > 0.0)
      std::printf("radius %g", opt.radius);
    else
      std::printf("k %d", opt.k);
    std::printf(", threads %d\n", threads_used);
    std::printf("neighbors (query included): mean %.3f min %zu max %zu; nan rows %zu, zero rows "
                "%zu\n",
                nn_mean, nn_min, nn_max, nan_rows, zero_rows);
    std::printf("compute(): median %.3f ms over %d:", med, opt.repeat);
    for (double t : times)
      std::printf(" %.3f", t);
    std::printf("\n");
    return 0;
  }

  std::printf("{\"peer\":\"pcl\",\"version\":\"%s\",\"feature\":\"%s\",", PCL_VERSION_PRETTY,
              opt.feature.c_str());
  if (opt.radius > 0.0) {
    std::printf("\"radius\":");
    print_number(opt.radius);
    std::printf(",");
  }
  else
    std::printf("\"k\":%d,", opt.k);
  std::printf("\"every\":%d,\"cloud_points\":%d,\"points\":%zu,\"bins\":%d,\"threads\":%d,",
              opt.every, n, query_index.size(), nbins, threads_used);
  std::printf("\"neighbors_mean\":");
  print_number(nn_mean);
  std::printf(",\"neighbors_min\":%zu,\"neighbors_max\":%zu,", nn_min, nn_max);
  std::printf("\"nan_rows\":%zu,\"zero_rows\":%zu,\"time_ms\":", nan_rows, zero_rows);
  print_number(med);
  std::printf(",\"times_ms\":[");
  for (size_t i = 0; i < times.size(); ++i) {
    if (i)
      std::printf(",");
    print_number(times[i]);
  }
  std::printf("]}\n");
  return 0;
}
