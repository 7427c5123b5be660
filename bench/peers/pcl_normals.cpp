// Reference peer: PCL 1.13 NormalEstimation (normals by PCA of a neighborhood).
//
//   pcl_normals CLOUD.pcd [--k N | --radius R] [--every S] -o OUT.csv
//
// Reads the cloud's x y z only (any normals in the file are ignored) and runs
// pcl::NormalEstimation<PointXYZ, Normal> with pcl::search::KdTree (FLANN): setKSearch(k)
// (the k nearest, the point itself among them) or setRadiusSearch(R), viewpoint 0,0,0 (PCL's
// default). Writes one line per point 0, S, 2S, ...: "index,nx,ny,nz,curvature" (%.9g;
// "nan" when PCL gives none).

#include <pcl/console/print.h>
#include <pcl/features/normal_3d.h>
#include <pcl/io/pcd_io.h>
#include <pcl/point_types.h>
#include <pcl/search/kdtree.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

[[noreturn]] void usage(const char* msg)
{
  if (msg)
    std::fprintf(stderr, "pcl_normals: %s\n", msg);
  std::fprintf(stderr, "usage: pcl_normals CLOUD.pcd [--k N | --radius R] [--every S] -o OUT.csv\n");
  std::exit(2);
}

void put_float(FILE* f, float v)
{
  if (std::isnan(v))
    std::fputs(",nan", f);
  else
    std::fprintf(f, ",%.9g", static_cast<double>(v));
}

} // namespace

int main(int argc, char** argv)
{
  std::string cloud_path, out_path;
  int k = 30, every = 1;
  double radius = 0.0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto need = [&]() -> const char* {
      if (i + 1 >= argc)
        usage((a + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--k")
      k = std::atoi(need());
    else if (a == "--radius")
      radius = std::atof(need());
    else if (a == "--every")
      every = std::atoi(need());
    else if (a == "-o")
      out_path = need();
    else if (a[0] == '-')
      usage(("unknown option " + a).c_str());
    else
      cloud_path = a;
  }
  if (cloud_path.empty() || out_path.empty() || k < 3 || every < 1 || radius < 0.0)
    usage(nullptr);
  pcl::console::setVerbosityLevel(pcl::console::L_ERROR);
  pcl::PointCloud<pcl::PointXYZ>::Ptr cloud(new pcl::PointCloud<pcl::PointXYZ>);
  if (pcl::io::loadPCDFile(cloud_path, *cloud) < 0 || cloud->empty()) {
    std::fprintf(stderr, "pcl_normals: %s: cannot read a point cloud\n", cloud_path.c_str());
    return 3;
  }
  pcl::NormalEstimation<pcl::PointXYZ, pcl::Normal> ne;
  ne.setInputCloud(cloud);
  ne.setSearchMethod(pcl::search::KdTree<pcl::PointXYZ>::Ptr(new pcl::search::KdTree<pcl::PointXYZ>));
  if (radius > 0.0)
    ne.setRadiusSearch(radius);
  else
    ne.setKSearch(k);
  ne.setViewPoint(0.0f, 0.0f, 0.0f);
  pcl::PointCloud<pcl::Normal> normals;
  ne.compute(normals);
  FILE* f = std::fopen(out_path.c_str(), "w");
  if (!f)
    return 4;
  for (size_t i = 0; i < normals.size(); i += static_cast<size_t>(every)) {
    std::fprintf(f, "%zu", i);
    put_float(f, normals[i].normal_x);
    put_float(f, normals[i].normal_y);
    put_float(f, normals[i].normal_z);
    put_float(f, normals[i].curvature);
    std::fputc('\n', f);
  }
  return std::fclose(f) == 0 ? 0 : 4;
}
