// Benchmark peer: PCL 1.13 ICP, timed the way bench/icp_bench.py times every tool.
//   --method point (default): pcl::IterativeClosestPoint, its default SVD estimation.
//   --method plane: pcl::IterativeClosestPointWithNormals on PointNormal clouds (its
//     TransformationEstimationPointToPlaneLLS, linearised point-to-plane), the target's
//     normals from pcl::NormalEstimation over its K nearest points (--normal-k, serial)
//     inside the time. The source is copied into a PointNormal cloud (normals unused)
//     inside the time too (a millisecond or so).
//   --method gicp: pcl::GeneralizedIterativeClosestPoint, setCorrespondenceRandomness(K):
//     both clouds' covariances from K neighbors, computed inside align() (PCL's
//     regularisation: eigenvalues 1, 1, gicp_epsilon 1e-3); its inner BFGS
//     (setMaximumOptimizerIterations, default 20, and its gradient tolerances) as PCL
//     sets them by default. --gicp-grad-tol G sets both gradient tolerances
//     (setTranslationGradientTolerance, setRotationGradientTolerance; PCL's default
//     1e-2). They are absolute, so in metres they suit a LiDAR scan but stop the BFGS
//     almost at once on a 15 cm object: on the bunny case of icp_real_bench.py PCL's
//     GICP moves from 8.0 to 7.9 degrees in 30 iterations with 1e-2, and reaches
//     0.08 degrees (then a fixed point after 10) with 1e-6.
//   --voxel V: both clouds replaced by pcl::VoxelGrid centroids (leaf V, grid anchored
//     at multiples of V) inside the time; 0 (default) = none. The common error and the
//     fitness below are then measured on the downsampled clouds.
//
//   pcl_icp SOURCE TARGET [--method point|plane|gicp] [--normal-k K] [--voxel V]
//           [--gicp-grad-tol G] [--max-iter N] [--max-dist D] [--init FILE]
//           [--repeat R] [--tol-transform E] [--json]
//
// Early stops, point and plane (both run IterativeClosestPoint::computeTransformation).
// Early stops. PCL 1.13's DefaultConvergenceCriteria::hasConverged() (read in
// pcl/registration/impl/default_convergence_criteria.hpp) ends the loop on the first of:
//   1. iterations_ >= max_iterations_                      (the one we want)
//   2. cos(angle of the last increment) >= rotation_threshold_ AND
//      |translation of the last increment|^2 <= translation_threshold_
//   3. |MSE_cur - MSE_prev| <  mse_threshold_absolute_      (default 1e-12, never set by ICP)
//   4. |MSE_cur - MSE_prev| / MSE_prev < mse_threshold_relative_
// each of 2-4 only once iterations_similar_transforms_ >= max_iterations_similar_transforms_
// (default 0, so at once). IterativeClosestPoint::computeTransformation() overwrites, on
// every align(): max iterations, relative MSE <- euclidean_fitness_epsilon_ (default
// -DBL_MAX, off), translation threshold <- transformation_epsilon_ (default 0),
// rotation threshold <- transformation_rotation_epsilon_ if > 0 else 1 - transformation_epsilon_.
// It also breaks out when fewer than 3 correspondences remain (not an issue here).
// So, to run exactly N iterations we set transformation epsilon -1 (translation^2 <= -1
// never holds), rotation epsilon 2 (a cosine >= 2 never holds), Euclidean fitness epsilon
// -1 (a ratio < -1 never holds; NaN compares false) and, on the criteria object itself
// (ICP does not overwrite it), absolute MSE -1. The iteration count actually run is read
// from nr_iterations_ through a subclass and reported, so a stray early stop would show.
// With --tol-transform E we keep PCL's own criteria and only set transformation epsilon E
// (PCL's regression test: bun0 onto bun4, 50 iterations, 1e-8, max distance 0.05).
//
// Note on what the timing contains: Registration::initCompute() builds a k-d tree of the
// target, then ICP::computeTransformation() hands the target to its correspondence
// estimator again, which marks it dirty and builds its own tree once more. That is what
// a PCL user gets from setInputTarget + align, so it stays in the timed region; the cost
// of one tree build is measured separately and reported as "kdtree_build_ms".
//
// Early stops, gicp. GeneralizedIterativeClosestPoint::computeTransformation() (read in
// pcl/registration/impl/gicp.hpp) has its own loop and never consults the convergence
// criteria object nor the Euclidean fitness epsilon. It stops on the first of:
//   1. nr_iterations_ >= max_iterations_                   (the one we want)
//   2. delta < 1, delta = the largest |change of a matrix entry| in one iteration, the
//      rotation entries divided by rotation_epsilon_ (GICP's setRotationEpsilon,
//      default 2e-3), the translation entries by transformation_epsilon_ (default 5e-4)
//   3. the BFGS step throwing (fewer than 4 pairs, or the solver reporting failure).
// A negative epsilon would make every ratio negative, delta 0 and stop after one
// iteration; so we set both epsilons to 0: each ratio is then +inf, any change of the
// transform gives delta = +inf, and only an iteration that leaves the transform exactly
// unchanged (a fixed point: later iterations would repeat it) stops early. 3 cannot be
// turned off; the iteration count is reported, so any early stop shows.
// With --tol-transform E, gicp keeps PCL's rotation epsilon and sets transformation E.
//
// PCL's ICP is single-threaded (correspondence search, normals, SVD, GICP's covariances
// and BFGS alike); "threads": 1.

#include <pcl/common/io.h>
#include <pcl/common/transforms.h>
#include <pcl/features/normal_3d.h>
#include <pcl/filters/filter.h>
#include <pcl/filters/voxel_grid.h>
#include <pcl/io/pcd_io.h>
#include <pcl/io/ply_io.h>
#include <pcl/kdtree/kdtree_flann.h>
#include <pcl/pcl_config.h>
#include <pcl/point_types.h>
#include <pcl/registration/gicp.h>
#include <pcl/registration/icp.h>
#include <pcl/search/kdtree.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

using Cloud = pcl::PointCloud<pcl::PointXYZ>;
using NCloud = pcl::PointCloud<pcl::PointNormal>;

namespace {

// ICP that tells how many iterations it really ran.
class CountingICP : public pcl::IterativeClosestPoint<pcl::PointXYZ, pcl::PointXYZ> {
public:
  int iterations() const { return nr_iterations_; }
};

class CountingICPN
    : public pcl::IterativeClosestPointWithNormals<pcl::PointNormal, pcl::PointNormal> {
public:
  int iterations() const { return nr_iterations_; }
};

class CountingGICP
    : public pcl::GeneralizedIterativeClosestPoint<pcl::PointXYZ, pcl::PointXYZ> {
public:
  int iterations() const { return nr_iterations_; }
};

// Point and plane: ICP's DefaultConvergenceCriteria, disabled as described above.
template <class ICP>
void set_icp_stops(ICP& icp, bool use_tol, double tol_transform)
{
  if (use_tol) {
    icp.setTransformationEpsilon(tol_transform);
  }
  else {
    icp.setTransformationEpsilon(-1.0);
    icp.setTransformationRotationEpsilon(2.0);
    icp.setEuclideanFitnessEpsilon(-1.0);
    icp.getConvergeCriteria()->setAbsoluteMSE(-1.0);
    icp.getConvergeCriteria()->setMaximumIterationsSimilarTransforms(0);
  }
}

Cloud::Ptr voxel_down(const Cloud::Ptr& in, double leaf)
{
  Cloud::Ptr out(new Cloud);
  pcl::VoxelGrid<pcl::PointXYZ> grid;
  const float l = static_cast<float>(leaf);
  grid.setLeafSize(l, l, l);
  grid.setInputCloud(in);
  grid.filter(*out);
  return out;
}

const char* state_name(int s)
{
  using C = pcl::registration::DefaultConvergenceCriteria<float>;
  switch (s) {
  case C::CONVERGENCE_CRITERIA_NOT_CONVERGED: return "not_converged";
  case C::CONVERGENCE_CRITERIA_ITERATIONS: return "max_iterations";
  case C::CONVERGENCE_CRITERIA_TRANSFORM: return "transform_epsilon";
  case C::CONVERGENCE_CRITERIA_ABS_MSE: return "absolute_mse";
  case C::CONVERGENCE_CRITERIA_REL_MSE: return "relative_mse";
  case C::CONVERGENCE_CRITERIA_NO_CORRESPONDENCES: return "no_correspondences";
  case C::CONVERGENCE_CRITERIA_FAILURE_AFTER_MAX_ITERATIONS: return "failure_after_max_iterations";
  default: return "unknown";
  }
}

[[noreturn]] void usage(const char* msg)
{
  if (msg)
    std::fprintf(stderr, "pcl_icp: %s\n", msg);
  std::fprintf(stderr,
               "usage: pcl_icp SOURCE TARGET [--method point|plane|gicp] [--normal-k K]\n"
               "               [--voxel V] [--max-iter N] [--max-dist D] [--init FILE]\n"
               "               [--repeat R] [--tol-transform E] [--json]\n"
               "  SOURCE, TARGET  .ply or .pcd (x y z used)\n"
               "  --method M      point (default): point-to-point; plane: point-to-plane,\n"
               "                  target normals from K nearest points; gicp: Generalized-ICP,\n"
               "                  covariances from K nearest points\n"
               "  --normal-k K    neighbors for plane's normals and gicp's covariances (10)\n"
               "  --voxel V       voxel-grid centroids of both clouds first (0: none)\n"
               "  --gicp-grad-tol G  gicp's BFGS gradient tolerances (default PCL's, 1e-2)\n"
               "  --max-iter N    ICP iterations (default 30); exactly N unless --tol-transform\n"
               "  --max-dist D    max correspondence distance (default 1e10: no limit)\n"
               "  --init FILE     4x4 row-major initial transform (16 numbers)\n"
               "  --repeat R      timed repetitions (default 5), median reported\n"
               "  --tol-transform E  keep PCL's convergence criteria, transformation epsilon E\n"
               "  --json          one JSON object on stdout\n");
  std::exit(2);
}

bool ends_with(const std::string& s, const std::string& suf)
{
  if (s.size() < suf.size())
    return false;
  return std::equal(suf.rbegin(), suf.rend(), s.rbegin(),
                    [](char a, char b) { return std::tolower(a) == std::tolower(b); });
}

Cloud::Ptr load(const std::string& path)
{
  Cloud::Ptr raw(new Cloud);
  int rc;
  if (ends_with(path, ".ply"))
    rc = pcl::io::loadPLYFile(path, *raw);
  else if (ends_with(path, ".pcd"))
    rc = pcl::io::loadPCDFile(path, *raw);
  else {
    std::fprintf(stderr, "pcl_icp: %s: unknown extension (want .ply or .pcd)\n", path.c_str());
    std::exit(3);
  }
  if (rc < 0 || raw->empty()) {
    std::fprintf(stderr, "pcl_icp: %s: cannot read a point cloud\n", path.c_str());
    std::exit(3);
  }
  // PCL's PLY reader turns a range_grid element (the Stanford scans have one) into an
  // organized cloud padded with NaN points; the search and the SVD want finite points.
  Cloud::Ptr cloud(new Cloud);
  pcl::Indices kept;
  raw->is_dense = false;
  pcl::removeNaNFromPointCloud(*raw, *cloud, kept);
  return cloud;
}

Eigen::Matrix4d read_matrix(const std::string& path)
{
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "pcl_icp: %s: cannot open\n", path.c_str());
    std::exit(3);
  }
  Eigen::Matrix4d m;
  for (int i = 0; i < 16; ++i) {
    double v;
    if (!(in >> v)) {
      std::fprintf(stderr, "pcl_icp: %s: want 16 numbers (4x4 row-major), got %d\n",
                   path.c_str(), i);
      std::exit(3);
    }
    m(i / 4, i % 4) = v;
  }
  return m;
}

double parse_double(const char* s, const char* what)
{
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (!s[0] || *end)
    usage((std::string("bad number for ") + what + ": " + s).c_str());
  return v;
}

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The common error measure of the benchmark: every source point moved by T, its exact
// nearest target point; pairs within max_dist count.
void common_error(const Cloud& src, const Cloud::Ptr& tgt, const Eigen::Matrix4d& T,
                  double max_dist, double* rmse, double* fitness)
{
  pcl::KdTreeFLANN<pcl::PointXYZ> tree;
  tree.setInputCloud(tgt);
  const double max_d2 = max_dist * max_dist;
  const Eigen::Matrix3d R = T.topLeftCorner<3, 3>();
  const Eigen::Vector3d t = T.topRightCorner<3, 1>();
  pcl::Indices idx(1);
  std::vector<float> d2(1);
  double sum = 0.0;
  size_t count = 0;
  for (const auto& p : src.points) {
    Eigen::Vector3d q = R * Eigen::Vector3d(p.x, p.y, p.z) + t;
    pcl::PointXYZ qp(static_cast<float>(q.x()), static_cast<float>(q.y()),
                     static_cast<float>(q.z()));
    if (tree.nearestKSearch(qp, 1, idx, d2) < 1)
      continue;
    // Distance in double from the moved point, not FLANN's float sum.
    const auto& m = (*tgt)[idx[0]];
    double dd = (q - Eigen::Vector3d(m.x, m.y, m.z)).squaredNorm();
    if (dd <= max_d2) {
      sum += dd;
      ++count;
    }
  }
  *rmse = count ? std::sqrt(sum / static_cast<double>(count)) : std::nan("");
  *fitness = static_cast<double>(count) / static_cast<double>(src.size());
}

void print_number(double v)
{
  if (std::isfinite(v))
    std::printf("%.17g", v);
  else
    std::printf("null");
}

} // namespace

int main(int argc, char** argv)
{
  std::vector<std::string> pos;
  int max_iter = 30, repeat = 5;
  int normal_k = 10;
  double max_dist = 1e10, tol_transform = -1.0, voxel = 0.0, grad_tol = -1.0;
  bool use_tol = false, json = false;
  std::string init_path, method = "point";

  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto need = [&](const char* what) -> const char* {
      if (i + 1 >= argc)
        usage((std::string(what) + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--max-iter")
      max_iter = static_cast<int>(parse_double(need("--max-iter"), "--max-iter"));
    else if (a == "--max-dist")
      max_dist = parse_double(need("--max-dist"), "--max-dist");
    else if (a == "--init")
      init_path = need("--init");
    else if (a == "--method")
      method = need("--method");
    else if (a == "--normal-k")
      normal_k = static_cast<int>(parse_double(need("--normal-k"), "--normal-k"));
    else if (a == "--voxel")
      voxel = parse_double(need("--voxel"), "--voxel");
    else if (a == "--gicp-grad-tol") {
      grad_tol = parse_double(need("--gicp-grad-tol"), "--gicp-grad-tol");
      if (!(grad_tol > 0))
        usage("--gicp-grad-tol must be positive");
    }
    else if (a == "--repeat")
      repeat = static_cast<int>(parse_double(need("--repeat"), "--repeat"));
    else if (a == "--tol-transform") {
      tol_transform = parse_double(need("--tol-transform"), "--tol-transform");
      use_tol = true;
    }
    else if (a == "--json")
      json = true;
    else if (a == "-h" || a == "--help")
      usage(nullptr);
    else if (a.size() > 1 && a[0] == '-')
      usage(("unknown option " + a).c_str());
    else
      pos.push_back(a);
  }
  if (pos.size() != 2)
    usage("want SOURCE and TARGET");
  if (max_iter < 1 || repeat < 1 || !(max_dist > 0))
    usage("--max-iter, --repeat and --max-dist must be positive");
  if (method != "point" && method != "plane" && method != "gicp")
    usage(("unknown --method " + method).c_str());
  if (normal_k < 3 || !(voxel >= 0))
    usage("--normal-k must be at least 3, --voxel not negative");

  pcl::console::setVerbosityLevel(pcl::console::L_ERROR);
  Cloud::Ptr src = load(pos[0]);
  Cloud::Ptr tgt = load(pos[1]);
  Eigen::Matrix4d init = Eigen::Matrix4d::Identity();
  if (!init_path.empty())
    init = read_matrix(init_path);
  const Eigen::Matrix4f guess = init.cast<float>();

  std::vector<double> times;
  Eigen::Matrix4d final_T = init;
  int iterations = 0;
  bool converged = false;
  const char* stop = "unknown";
  double pcl_fitness_score = 0.0;
  Cloud out;

  // The clouds registered (the downsampled ones with --voxel), for the error below.
  Cloud::Ptr reg_src = src, reg_tgt = tgt;
  for (int r = 0; r < repeat; ++r) {
    // Made and set up before the clock starts, as the point-to-point run always was.
    CountingICP icp;
    CountingICPN icpn;
    CountingGICP gicp;
    pcl::NormalEstimation<pcl::PointXYZ, pcl::Normal> ne;
    icp.setMaximumIterations(max_iter);
    icp.setMaxCorrespondenceDistance(max_dist);
    set_icp_stops(icp, use_tol, tol_transform);
    icpn.setMaximumIterations(max_iter);
    icpn.setMaxCorrespondenceDistance(max_dist);
    set_icp_stops(icpn, use_tol, tol_transform);
    gicp.setMaximumIterations(max_iter);
    gicp.setMaxCorrespondenceDistance(max_dist);
    gicp.setCorrespondenceRandomness(normal_k);
    if (grad_tol > 0) {
      gicp.setTranslationGradientTolerance(grad_tol);
      gicp.setRotationGradientTolerance(grad_tol);
    }
    if (use_tol) {
      gicp.setTransformationEpsilon(tol_transform);
    }
    else {
      gicp.setTransformationEpsilon(0.0); // see "Early stops, gicp" above
      gicp.setRotationEpsilon(0.0);
    }
    ne.setSearchMethod(pcl::make_shared<pcl::search::KdTree<pcl::PointXYZ>>());
    ne.setKSearch(normal_k);

    auto t0 = std::chrono::steady_clock::now();
    Cloud::Ptr s = src, t = tgt;
    if (voxel > 0) {
      s = voxel_down(src, voxel);
      t = voxel_down(tgt, voxel);
    }
    if (method == "point") {
      icp.setInputSource(s);
      icp.setInputTarget(t);
      icp.align(out, guess);
    }
    else if (method == "plane") {
      pcl::PointCloud<pcl::Normal> normals;
      ne.setInputCloud(t);
      ne.compute(normals);
      NCloud::Ptr tn(new NCloud), sn(new NCloud);
      pcl::concatenateFields(*t, normals, *tn);
      pcl::copyPointCloud(*s, *sn); // normals zero: point-to-plane reads the target's
      icpn.setInputSource(sn);
      icpn.setInputTarget(tn);
      NCloud nout;
      icpn.align(nout, guess);
    }
    else {
      gicp.setInputSource(s);
      gicp.setInputTarget(t);
      gicp.align(out, guess);
    }
    auto t1 = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    reg_src = s;
    reg_tgt = t;

    const bool last = r == repeat - 1;
    if (method == "point") {
      final_T = icp.getFinalTransformation().cast<double>();
      iterations = icp.iterations();
      converged = icp.hasConverged();
      stop = state_name(icp.getConvergeCriteria()->getConvergenceState());
      if (last)
        pcl_fitness_score = icp.getFitnessScore(max_dist);
    }
    else if (method == "plane") {
      final_T = icpn.getFinalTransformation().cast<double>();
      iterations = icpn.iterations();
      converged = icpn.hasConverged();
      stop = state_name(icpn.getConvergeCriteria()->getConvergenceState());
      if (last)
        pcl_fitness_score = icpn.getFitnessScore(max_dist);
    }
    else {
      final_T = gicp.getFinalTransformation().cast<double>();
      iterations = gicp.iterations();
      converged = gicp.hasConverged();
      stop = iterations >= max_iter ? "max_iterations" : "gicp_early_stop";
      if (last)
        pcl_fitness_score = gicp.getFitnessScore(max_dist);
    }
  }

  // Outside the timed region: one target tree build on its own, and the common error.
  auto b0 = std::chrono::steady_clock::now();
  {
    pcl::KdTreeFLANN<pcl::PointXYZ> tree;
    tree.setInputCloud(reg_tgt);
  }
  auto b1 = std::chrono::steady_clock::now();
  const double build_ms = std::chrono::duration<double, std::milli>(b1 - b0).count();

  double rmse = 0.0, fitness = 0.0;
  common_error(*reg_src, reg_tgt, final_T, max_dist, &rmse, &fitness);
  const double med = median(times);

  if (!json) {
    std::printf("pcl %s %s: %zu -> %zu points, %d iterations (%s), converged %d\n",
                PCL_VERSION_PRETTY, method.c_str(), reg_src->size(), reg_tgt->size(), iterations,
                stop, converged);
    std::printf("transformation:\n");
    for (int i = 0; i < 4; ++i)
      std::printf("  %12.7f %12.7f %12.7f %12.7f\n", final_T(i, 0), final_T(i, 1),
                  final_T(i, 2), final_T(i, 3));
    std::printf("rmse %.9g  fitness %.6f  (max_dist %g)\n", rmse, fitness, max_dist);
    std::printf("time: median %.3f ms over %d:", med, repeat);
    for (double t : times)
      std::printf(" %.3f", t);
    std::printf("  (one k-d tree build %.3f ms)\n", build_ms);
    return 0;
  }

  std::printf("{\"peer\":\"pcl\",\"version\":\"%s\",\"threads\":1,", PCL_VERSION_PRETTY);
  std::printf("\"method\":\"%s\",\"normal_k\":%d,\"voxel\":", method.c_str(), normal_k);
  print_number(voxel);
  std::printf(",\"source_points\":%zu,\"target_points\":%zu,", reg_src->size(),
              reg_tgt->size());
  std::printf("\"max_dist\":");
  print_number(max_dist);
  std::printf(",\"max_iter\":%d,\"early_stop\":%s,", max_iter, use_tol ? "true" : "false");
  std::printf("\"transformation\":[");
  for (int i = 0; i < 4; ++i) {
    std::printf(i ? ",[" : "[");
    for (int j = 0; j < 4; ++j) {
      if (j)
        std::printf(",");
      print_number(final_T(i, j));
    }
    std::printf("]");
  }
  std::printf("],\"rmse\":");
  print_number(rmse);
  std::printf(",\"fitness\":");
  print_number(fitness);
  std::printf(",\"pcl_fitness_score\":");
  print_number(pcl_fitness_score);
  std::printf(",\"iterations\":%d,\"converged\":%s,\"stop_reason\":\"%s\",", iterations,
              converged ? "true" : "false", stop);
  std::printf("\"time_ms\":");
  print_number(med);
  std::printf(",\"times_ms\":[");
  for (size_t i = 0; i < times.size(); ++i) {
    if (i)
      std::printf(",");
    print_number(times[i]);
  }
  std::printf("],\"kdtree_build_ms\":");
  print_number(build_ms);
  std::printf("}\n");
  return 0;
}
