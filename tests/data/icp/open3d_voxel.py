#!/usr/bin/env python3
"""Open3D's VoxelDownSample of PCL's bun0 (voxel 0.01), the golden result
test_voxel.c compares ptreg_voxel_downsample with. Remake with Debian's
Open3D:

    /usr/bin/python3 tests/data/icp/open3d_voxel.py ../shared/data > tests/data/icp/open3d_voxel_bun0_0.01.csv

One centroid per row (x,y,z), sorted, since Open3D's order is a hash map's."""
import sys

import numpy as np
import open3d as o3d

data = sys.argv[1] if len(sys.argv) > 1 else "../shared/data"
cloud = o3d.io.read_point_cloud(f"{data}/pcl/bun0.pcd")
points = np.asarray(cloud.voxel_down_sample(0.01).points)
for p in sorted(map(tuple, points)):
    print(",".join(repr(float(v)) for v in p))
