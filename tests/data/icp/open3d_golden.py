#!/usr/bin/env python3
"""Open3D's point-to-plane ICP on PCL's bunny pair (bun0 onto bun4), the
golden results tests/test_icp_plane.c compares ptreg with. Remake with
Debian's Open3D:

    /usr/bin/python3 tests/data/icp/open3d_golden.py ../shared/data > tests/data/icp/open3d_plane.csv

Each row: a case name, then the 4x4 result row-major, fitness and
inlier_rmse (of the pairs' distances, for every method). The target's normals: Open3D's EstimateNormals over the 10
nearest points (PCL's test uses k = 10); the correspondences: nearest
points within max distance 1.0 (every pair); 200 iterations (the reweighted
kernels settle slowly), the relative
criteria 1e-10 (so every iteration runs). The kernels' scales are ones
where reweighted Gauss-Newton settles on this small pair: at smaller ones
(Cauchy 0.002 in both programs, Tukey 0.05 in Open3D) it cycles between
nearby poses, and no two programs can be expected to stop at the same point
of a cycle."""
import sys

import numpy as np
import open3d as o3d

reg = o3d.pipelines.registration
data = sys.argv[1] if len(sys.argv) > 1 else "../shared/data"
src = o3d.io.read_point_cloud(f"{data}/pcl/bun0.pcd")
tgt = o3d.io.read_point_cloud(f"{data}/pcl/bun4.pcd")
tgt.estimate_normals(o3d.geometry.KDTreeSearchParamKNN(10))
criteria = reg.ICPConvergenceCriteria(relative_fitness=1e-10, relative_rmse=1e-10, max_iteration=200)
cases = [("plane", reg.TransformationEstimationPointToPlane(), 1.0),
         ("plane_huber_0.002", reg.TransformationEstimationPointToPlane(reg.HuberLoss(0.002)), 1.0),
         ("plane_tukey_0.1", reg.TransformationEstimationPointToPlane(reg.TukeyLoss(0.1)), 1.0),
         ("plane_cauchy_0.01", reg.TransformationEstimationPointToPlane(reg.CauchyLoss(0.01)), 1.0),
         ("plane_gm_0.0001", reg.TransformationEstimationPointToPlane(reg.GMLoss(0.0001)), 1.0),
         ("plane_maxdist_0.01", reg.TransformationEstimationPointToPlane(), 0.01)]
for name, estimation, max_dist in cases:
    r = reg.registration_icp(src, tgt, max_dist, np.eye(4), estimation, criteria)
    values = list(np.asarray(r.transformation).ravel()) + [r.fitness, r.inlier_rmse]
    print(",".join([name] + [repr(float(v)) for v in values]))
# Generalized-ICP: both clouds' normals from their 10 nearest points (bun0's
# own normals replaced), Open3D's plane-regularised covariances (eps 1e-3)
src.estimate_normals(o3d.geometry.KDTreeSearchParamKNN(10))
r = reg.registration_generalized_icp(src, tgt, 1.0, np.eye(4), reg.TransformationEstimationForGeneralizedICP(1e-3),
                                     criteria)
values = list(np.asarray(r.transformation).ravel()) + [r.fitness, r.inlier_rmse]
print(",".join(["gicp"] + [repr(float(v)) for v in values]))
