"""The benchmark's common measure of a registration, shared by the driver and the
Open3D peer: each source point moved by the final transform, its exact nearest
target point (float64), pairs within max_dist counted;
rmse = sqrt(mean squared distance over them), fitness = counted / source points."""

import numpy as np


def nearest_sq_dists(moved, target_pts):
    """Exact nearest-neighbor squared distances in float64: SciPy's cKDTree when it
    is installed, else Open3D's exact k-d tree (nanoflann, k = 1)."""
    try:
        from scipy.spatial import cKDTree
        d, _ = cKDTree(target_pts).query(moved, k=1)
        return d * d
    except ImportError:
        import open3d as o3d
        src = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(moved))
        tgt = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(target_pts))
        d = np.asarray(src.compute_point_cloud_distance(tgt))
        return d * d


def nn_backend():
    try:
        import scipy  # noqa: F401
        return "scipy.spatial.cKDTree %s" % scipy.__version__
    except ImportError:
        return "open3d compute_point_cloud_distance (scipy not installed)"


def common_error(src_pts, tgt_pts, T, max_dist):
    """(rmse, fitness) of transform T, the same way for every tool."""
    moved = src_pts @ T[:3, :3].T + T[:3, 3]
    d2 = nearest_sq_dists(moved, tgt_pts)
    keep = d2 <= max_dist * max_dist
    n = int(keep.sum())
    rmse = float(np.sqrt(d2[keep].mean())) if n else float("nan")
    return rmse, n / len(src_pts)
