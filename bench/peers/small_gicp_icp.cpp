// Benchmark peer: small_gicp (github.com/koide3/small_gicp, MIT) registering SOURCE
// onto TARGET, for bench/icp_real_bench.py. Only small_gicp's public API is called;
// none of its source is copied here. Built out of tree by bench/peers/small_gicp.sh.
//
//   small_gicp_icp SOURCE.ply TARGET.ply [--method gicp|plane|point] [--downsample V]
//                  [--max-dist D] [--max-iter N] [--init FILE] [--threads N]
//                  [--num-neighbors K] [--optimizer lm|gn] [--repeat R] [--json]
//
// The pipeline is the one in small_gicp's README ("Registration with the template
// interface") and in its align() helper: PointCloud from the points, voxel-grid
// downsampling (voxelgrid_sampling_omp: the centroid of each voxel; skipped with
// --downsample 0), k-d trees of both clouds (KdTreeBuilderOMP), covariances of the K
// nearest points regularised to eigenvalues (1e-3, 1, 1) (estimate_covariances_omp;
// normals for plane), then Registration<GICPFactor, ParallelReductionOMP> with a
// DistanceRejector at D. align() itself is not called because it always downsamples
// (the bunny case registers every point), hard-wires 10 neighbors, runs the voxel
// grid on its default 4 threads whatever num_threads says, and builds its trees on one
// thread; here every stage gets --threads.
//
// No early stop: small_gicp declares convergence when the update's rotation norm is
// <= rotation_eps and its translation norm <= translation_eps; both are set to -1 so
// the test never holds and all --max-iter iterations run. The default optimizer
// (align()'s and the README's) is Levenberg-Marquardt: each iteration linearises once
// (nearest neighbors searched again) and evaluates the error of each trial step on the
// same correspondences; it still ends early if 10 trial dampings in a row fail to lower
// the error (nothing left to gain), which "iterations" in the output shows.
// --optimizer gn takes one damped Gauss-Newton step per iteration instead (small_gicp's
// GaussNewtonOptimizer, lambda 1e-6), always --max-iter of them.
//
// Timing: from both clouds in memory (float xyz as read) to the result, everything
// above included; the median of --repeat runs is reported. Not timed: reading the
// files and the fitness below (the fraction of the registered, i.e. downsampled,
// source points whose nearest registered target point lies within D under the final
// transform, as Open3D and ptreg report it).
//
// Input: PLY (ascii or binary_little_endian; the vertex element's float/double x y z,
// other properties and elements such as the bunny's range_grid skipped) or PCD (ascii
// or binary, fields x y z of type F). Points with a non-finite coordinate are dropped.

#include <small_gicp/ann/kdtree_omp.hpp>
#include <small_gicp/factors/gicp_factor.hpp>
#include <small_gicp/factors/icp_factor.hpp>
#include <small_gicp/factors/plane_icp_factor.hpp>
#include <small_gicp/points/point_cloud.hpp>
#include <small_gicp/registration/reduction_omp.hpp>
#include <small_gicp/registration/registration.hpp>
#include <small_gicp/util/downsampling_omp.hpp>
#include <small_gicp/util/normal_estimation_omp.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace small_gicp;
using Points = std::vector<Eigen::Vector3f>;

namespace {

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "small_gicp_icp: %s\n", msg.c_str());
  std::exit(2);
}

size_t type_size(const std::string& t) {
  if (t == "char" || t == "uchar" || t == "int8" || t == "uint8") return 1;
  if (t == "short" || t == "ushort" || t == "int16" || t == "uint16") return 2;
  if (t == "int" || t == "uint" || t == "float" || t == "int32" || t == "uint32" || t == "float32") return 4;
  if (t == "double" || t == "float64") return 8;
  fail("PLY: unknown property type " + t);
}

double binary_value(const char* p, const std::string& t) {
  switch (type_size(t)) {
    case 1: return (t == "char" || t == "int8") ? double(*reinterpret_cast<const int8_t*>(p)) : double(*reinterpret_cast<const uint8_t*>(p));
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return (t == "short" || t == "int16") ? double(int16_t(v)) : double(v);
    }
    case 4: {
      if (t == "float" || t == "float32") {
        float f;
        std::memcpy(&f, p, 4);
        return f;
      }
      uint32_t v;
      std::memcpy(&v, p, 4);
      return (t == "int" || t == "int32") ? double(int32_t(v)) : double(v);
    }
    default: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
  }
}

struct PlyProperty {
  std::string name, type, count_type;  // count_type set: a list property
};
struct PlyElement {
  std::string name;
  size_t count = 0;
  std::vector<PlyProperty> props;
};

void append_point(Points& out, double x, double y, double z) {
  if (std::isfinite(x) && std::isfinite(y) && std::isfinite(z)) out.emplace_back(float(x), float(y), float(z));
}

Points read_ply(std::ifstream& in, const std::string& path) {
  std::string line, format;
  std::vector<PlyElement> elements;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::istringstream ls(line);
    std::string word;
    ls >> word;
    if (word == "format") {
      ls >> format;
    } else if (word == "element") {
      elements.emplace_back();
      ls >> elements.back().name >> elements.back().count;
    } else if (word == "property") {
      if (elements.empty()) fail(path + ": property before any element");
      PlyProperty p;
      ls >> p.type;
      if (p.type == "list") ls >> p.count_type >> p.type;
      ls >> p.name;
      elements.back().props.push_back(p);
    } else if (word == "end_header") {
      break;
    }
  }
  if (format != "ascii" && format != "binary_little_endian") fail(path + ": PLY format '" + format + "' not supported");
  const bool ascii = format == "ascii";
  Points out;
  for (const auto& e : elements) {
    const bool vertex = e.name == "vertex";
    int ix = -1, iy = -1, iz = -1;
    for (size_t k = 0; k < e.props.size(); k++) {
      if (!e.props[k].count_type.empty()) continue;
      if (e.props[k].name == "x") ix = int(k);
      if (e.props[k].name == "y") iy = int(k);
      if (e.props[k].name == "z") iz = int(k);
    }
    if (vertex && (ix < 0 || iy < 0 || iz < 0)) fail(path + ": the vertex element has no x, y, z");
    if (vertex) out.reserve(e.count);
    std::vector<double> v(e.props.size());
    std::vector<char> buf;
    for (size_t i = 0; i < e.count; i++) {
      if (ascii) {
        if (!std::getline(in, line)) fail(path + ": truncated");
        if (!vertex) continue;  // one record per line: skipped whole
        std::istringstream ls(line);
        for (size_t k = 0; k < e.props.size(); k++) {
          if (!e.props[k].count_type.empty()) break;  // x y z come before any list here
          ls >> v[k];
        }
      } else {
        for (size_t k = 0; k < e.props.size(); k++) {
          const auto& p = e.props[k];
          size_t n = 1;
          if (!p.count_type.empty()) {
            buf.resize(type_size(p.count_type));
            in.read(buf.data(), buf.size());
            n = size_t(binary_value(buf.data(), p.count_type));
          }
          buf.resize(n * type_size(p.type));
          in.read(buf.data(), buf.size());
          if (p.count_type.empty()) v[k] = binary_value(buf.data(), p.type);
        }
        if (!in) fail(path + ": truncated");
      }
      if (vertex) append_point(out, v[ix], v[iy], v[iz]);
    }
    if (vertex) break;
  }
  return out;
}

Points read_pcd(std::ifstream& in, const std::string& path) {
  std::string line, data;
  std::vector<std::string> fields, types;
  std::vector<size_t> sizes, counts;
  size_t points = 0;
  while (data.empty() && std::getline(in, line)) {
    std::istringstream ls(line);
    std::string word, s;
    ls >> word;
    if (word == "FIELDS") while (ls >> s) fields.push_back(s);
    else if (word == "SIZE") while (ls >> s) sizes.push_back(std::stoul(s));
    else if (word == "TYPE") while (ls >> s) types.push_back(s);
    else if (word == "COUNT") while (ls >> s) counts.push_back(std::stoul(s));
    else if (word == "POINTS") ls >> points;
    else if (word == "DATA") ls >> data;
  }
  if (counts.empty()) counts.assign(fields.size(), 1);
  if (sizes.size() != fields.size() || types.size() != fields.size() || counts.size() != fields.size())
    fail(path + ": inconsistent PCD header");
  // Column (ascii) and byte offset (binary) of x, y, z.
  int col[3] = {-1, -1, -1};
  size_t off[3] = {0, 0, 0}, column = 0, offset = 0;
  for (size_t k = 0; k < fields.size(); k++) {
    for (int a = 0; a < 3; a++) {
      if (fields[k] == std::string(1, char('x' + a))) {
        if (types[k] != "F" || sizes[k] != 4) fail(path + ": x y z must be float32");
        col[a] = int(column);
        off[a] = offset;
      }
    }
    column += counts[k];
    offset += counts[k] * sizes[k];
  }
  if (col[0] < 0 || col[1] < 0 || col[2] < 0) fail(path + ": no x, y, z fields");
  Points out;
  out.reserve(points);
  if (data == "ascii") {
    std::vector<double> v(column);
    for (size_t i = 0; i < points && std::getline(in, line); i++) {
      std::istringstream ls(line);
      for (size_t c = 0; c < column; c++) {
        std::string s;
        ls >> s;
        v[c] = std::strtod(s.c_str(), nullptr);  // "nan" too
      }
      append_point(out, v[col[0]], v[col[1]], v[col[2]]);
    }
  } else if (data == "binary") {
    std::vector<char> rec(offset);
    for (size_t i = 0; i < points; i++) {
      if (!in.read(rec.data(), rec.size())) fail(path + ": truncated");
      float f[3];
      for (int a = 0; a < 3; a++) std::memcpy(&f[a], rec.data() + off[a], 4);
      append_point(out, f[0], f[1], f[2]);
    }
  } else {
    fail(path + ": PCD DATA " + data + " not supported");
  }
  return out;
}

Points load_points(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open " + path);
  std::string magic;
  std::getline(in, magic);
  if (magic.rfind("ply", 0) == 0) return read_ply(in, path);
  in.clear();
  in.seekg(0);
  return read_pcd(in, path);
}

Eigen::Isometry3d load_init(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot open " + path);
  Eigen::Matrix4d m;
  for (int i = 0; i < 16; i++)
    if (!(in >> m(i / 4, i % 4))) fail(path + ": expected 16 numbers (a 4x4 matrix, row-major)");
  Eigen::Isometry3d T;
  T.matrix() = m;
  return T;
}

struct Options {
  std::string source, target, init, method = "gicp", optimizer = "lm";
  double downsample = 0.0, max_dist = 1.0;
  int max_iter = 30, threads = 2, num_neighbors = 10, repeat = 1;
  bool json = false;
};

struct Outcome {
  RegistrationResult result;
  PointCloud::Ptr source, target;
  std::shared_ptr<KdTree<PointCloud>> target_tree;
};

template <typename Factor, typename Optimizer>
RegistrationResult register_with(const Options& o, const PointCloud& target, const PointCloud& source, const KdTree<PointCloud>& tree,
                                 const Eigen::Isometry3d& init) {
  Registration<Factor, ParallelReductionOMP, NullFactor, DistanceRejector, Optimizer> reg;
  reg.reduction.num_threads = o.threads;
  reg.rejector.max_dist_sq = o.max_dist * o.max_dist;
  reg.criteria.rotation_eps = -1.0;  // never converged: all max_iter iterations run
  reg.criteria.translation_eps = -1.0;
  reg.optimizer.max_iterations = o.max_iter;
  return reg.align(target, source, tree, init);
}

template <typename Factor>
RegistrationResult register_factor(const Options& o, const PointCloud& target, const PointCloud& source, const KdTree<PointCloud>& tree,
                                   const Eigen::Isometry3d& init) {
  if (o.optimizer == "gn") return register_with<Factor, GaussNewtonOptimizer>(o, target, source, tree, init);
  return register_with<Factor, LevenbergMarquardtOptimizer>(o, target, source, tree, init);
}

Outcome run_once(const Options& o, const Points& src_pts, const Points& tgt_pts, const Eigen::Isometry3d& init) {
  Outcome r;
  r.source = std::make_shared<PointCloud>(src_pts);
  r.target = std::make_shared<PointCloud>(tgt_pts);
  if (o.downsample > 0.0) {
    r.source = voxelgrid_sampling_omp(*r.source, o.downsample, o.threads);
    r.target = voxelgrid_sampling_omp(*r.target, o.downsample, o.threads);
  }
  r.target_tree = std::make_shared<KdTree<PointCloud>>(r.target, KdTreeBuilderOMP(o.threads));
  if (o.method == "gicp") {
    auto source_tree = std::make_shared<KdTree<PointCloud>>(r.source, KdTreeBuilderOMP(o.threads));
    estimate_covariances_omp(*r.target, *r.target_tree, o.num_neighbors, o.threads);
    estimate_covariances_omp(*r.source, *source_tree, o.num_neighbors, o.threads);
    r.result = register_factor<GICPFactor>(o, *r.target, *r.source, *r.target_tree, init);
  } else if (o.method == "plane") {
    estimate_normals_omp(*r.target, *r.target_tree, o.num_neighbors, o.threads);
    r.result = register_factor<PointToPlaneICPFactor>(o, *r.target, *r.source, *r.target_tree, init);
  } else {
    r.result = register_factor<ICPFactor>(o, *r.target, *r.source, *r.target_tree, init);
  }
  return r;
}

double fitness(const Outcome& r, double max_dist) {
  size_t inside = 0;
  for (size_t i = 0; i < r.source->size(); i++) {
    const Eigen::Vector4d p = r.result.T_target_source * r.source->point(i);
    size_t k;
    double sq;
    if (r.target_tree->nearest_neighbor_search(p, &k, &sq) && sq <= max_dist * max_dist) inside++;
  }
  return r.source->size() ? double(inside) / double(r.source->size()) : 0.0;
}

void usage() {
  std::fprintf(stderr,
               "usage: small_gicp_icp SOURCE TARGET [--method gicp|plane|point] [--downsample V (0: none)] [--max-dist D]\n"
               "       [--max-iter N] [--init FILE (4x4, row-major)] [--threads N] [--num-neighbors K]\n"
               "       [--optimizer lm|gn] [--repeat R] [--json]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    try {
      if (a == "--method") o.method = value();
      else if (a == "--downsample") o.downsample = std::stod(value());
      else if (a == "--max-dist") o.max_dist = std::stod(value());
      else if (a == "--max-iter") o.max_iter = std::stoi(value());
      else if (a == "--init") o.init = value();
      else if (a == "--threads") o.threads = std::stoi(value());
      else if (a == "--num-neighbors") o.num_neighbors = std::stoi(value());
      else if (a == "--optimizer") o.optimizer = value();
      else if (a == "--repeat") o.repeat = std::stoi(value());
      else if (a == "--json") o.json = true;
      else if (a == "-h" || a == "--help") usage();
      else if (a.rfind("--", 0) == 0) fail("unknown option " + a);
      else pos.push_back(a);
    } catch (const std::logic_error&) {
      fail("bad value for " + a);
    }
  }
  if (pos.size() != 2) usage();
  if (o.method != "gicp" && o.method != "plane" && o.method != "point") fail("--method must be gicp, plane or point");
  if (o.optimizer != "lm" && o.optimizer != "gn") fail("--optimizer must be lm or gn");
  if (o.threads < 1 || o.repeat < 1 || o.max_iter < 1 || o.num_neighbors < 3 || !(o.max_dist > 0.0) || o.downsample < 0.0)
    fail("bad option value");
  o.source = pos[0];
  o.target = pos[1];

  const Points src = load_points(o.source), tgt = load_points(o.target);
  const Eigen::Isometry3d init = o.init.empty() ? Eigen::Isometry3d::Identity() : load_init(o.init);

  std::vector<double> ms;
  Outcome last;
  for (int r = 0; r < o.repeat; r++) {
    const auto t0 = std::chrono::steady_clock::now();
    last = run_once(o, src, tgt, init);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  const double fit = fitness(last, o.max_dist);
  const Eigen::Matrix4d T = last.result.T_target_source.matrix();
  // small_gicp stores the 0-based index of the last iteration run.
  const size_t iterations = last.result.iterations + 1;

  if (o.json) {
    std::printf("{\"time_ms\": %.6f, \"times_ms\": [", median);
    for (size_t i = 0; i < ms.size(); i++) std::printf("%s%.6f", i ? ", " : "", ms[i]);
    std::printf("], \"transformation\": [");
    for (int i = 0; i < 4; i++)
      std::printf("%s[%.17g, %.17g, %.17g, %.17g]", i ? ", " : "", T(i, 0), T(i, 1), T(i, 2), T(i, 3));
    std::printf("], \"fitness\": %.9g, \"iterations\": %zu, \"num_inliers\": %zu, \"error\": %.9g, "
                "\"source_points\": %zu, \"target_points\": %zu, \"threads\": %d, \"optimizer\": \"%s\"}\n",
                fit, iterations, size_t(last.result.num_inliers), last.result.error, last.source->size(), last.target->size(),
                o.threads, o.optimizer.c_str());
  } else {
    std::printf("small_gicp %s: %zu source and %zu target points registered (read: %zu, %zu)\n", o.method.c_str(), last.source->size(),
                last.target->size(), src.size(), tgt.size());
    std::printf("  %zu iterations (%s), fitness %.4f, %zu inliers, error %.6g\n", iterations, o.optimizer.c_str(), fit,
                size_t(last.result.num_inliers), last.result.error);
    std::printf("  time %.2f ms (median of %d)\n", median, o.repeat);
    for (int i = 0; i < 4; i++) std::printf("  %12.8f %12.8f %12.8f %12.8f\n", T(i, 0), T(i, 1), T(i, 2), T(i, 3));
  }
  return 0;
}
