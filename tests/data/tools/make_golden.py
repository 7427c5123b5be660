#!/usr/bin/python3
"""Open3D's answers for tests/test_tools.c, tests/cli/tools.sh and
python/tests/test_tools.py, so that make check needs no Open3D.

Remake them with Debian's Python, which has open3d (0.16.1 made these):
    cd tests/data/tools && /usr/bin/python3 make_golden.py

The inputs are float32 values written with 9 digits, so ptreg's float
reading and Open3D's double reading of the same numbers agree exactly.
"""
import numpy as np
import open3d as o3d

rng = np.random.default_rng(47)

# a noisy patch of a sphere with scattered outliers: source.xyz
n_surface, n_out = 600, 30
u = rng.uniform(0, np.pi / 2, n_surface)
v = rng.uniform(0, np.pi / 2, n_surface)
surface = np.c_[np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v)]
surface += rng.normal(0, 0.005, surface.shape)
outliers = rng.uniform(-0.5, 1.5, (n_out, 3))
source = np.vstack([surface, outliers])[rng.permutation(n_surface + n_out)].astype(np.float32)

# the target: the source moved by a known pose, noisier, a part cut away
angle = np.deg2rad(12.0)
axis = np.array([1.0, 2.0, 3.0]) / np.sqrt(14.0)
K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
R = np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K
truth = np.eye(4)
truth[:3, :3], truth[:3, 3] = R, [0.1, -0.05, 0.2]
moved = (source.astype(np.float64) @ R.T + truth[:3, 3])[:500]
target = (moved + rng.normal(0, 0.002, moved.shape)).astype(np.float32)

# a pose near the truth, as a registration would give it
near = truth.copy()
near[:3, 3] += [0.003, -0.002, 0.001]


def write_points(name, pts):
    np.savetxt(name, pts, fmt="%.9g")


def cloud(pts):
    c = o3d.geometry.PointCloud()
    c.points = o3d.utility.Vector3dVector(pts.astype(np.float64))
    return c


def write_indices(name, ind):
    np.savetxt(name, np.asarray(ind, dtype=np.int64), fmt="%d")


write_points("source.xyz", source)
write_points("target.xyz", target)
np.savetxt("truth.txt", truth, fmt="%.17g")
np.savetxt("near.txt", near, fmt="%.17g")

src = cloud(source)
_, ind = src.remove_statistical_outlier(nb_neighbors=20, std_ratio=2.0)
write_indices("statistical_20_2.txt", ind)
_, ind = src.remove_statistical_outlier(nb_neighbors=6, std_ratio=0.5)
write_indices("statistical_6_0.5.txt", ind)
_, ind = src.remove_radius_outlier(nb_points=8, radius=0.08)
write_indices("radius_0.08_8.txt", ind)
write_indices("uniform_7.txt", np.arange(len(source))[::7])
assert np.allclose(np.asarray(src.uniform_down_sample(7).points), source[::7])

reg = o3d.pipelines.registration
r = reg.evaluate_registration(src, cloud(target), 0.02, near)
corr = np.asarray(r.correspondence_set)
corr = corr[np.argsort(corr[:, 0])]
with open("evaluate_near_0.02.txt", "w") as f:
    f.write("%.17g %.17g %d\n" % (r.fitness, r.inlier_rmse, len(corr)))
np.savetxt("evaluate_near_0.02_pairs.txt", corr, fmt="%d")

# correspondences: the first 500 source points with their targets, every
# 10th pair's target replaced by a wrong one (RANSAC's outliers)
pairs = np.c_[np.arange(500), np.arange(500)]
pairs[::10, 1] = rng.permutation(500)[:50]
np.savetxt("pairs.txt", pairs, fmt="%d")
clean = pairs[pairs[:, 0] == pairs[:, 1]]
np.savetxt("pairs_clean.txt", clean, fmt="%d")
est = reg.TransformationEstimationPointToPoint()
T = est.compute_transformation(src, cloud(target), o3d.utility.Vector2iVector(clean))
np.savetxt("horn_clean.txt", T, fmt="%.17g")
