"""ptreg's filters, evaluate and register_correspondences (issue 47, item 8):
Open3D's own answers for the same input (tests/data/tools, made there by
make_golden.py; and, where open3d imports, computed here again), the CLI's
answers on the same files, seeded draws, far coordinates and the errors."""

import os
import subprocess

import numpy as np
import pytest
from ptreg_checks import compare, near, worst_abs_diff

import ptreg

CLI = os.environ.get("PTREG_CLI", os.path.join(os.path.dirname(__file__), "..", "..", "build", "ptreg"))
GOLD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "tools")


def gold(name, **kw):
    return np.loadtxt(os.path.join(GOLD, name), **kw)


@pytest.fixture(scope="module")
def clouds():
    source = np.ascontiguousarray(gold("source.xyz"), dtype=np.float32)
    target = np.ascontiguousarray(gold("target.xyz"), dtype=np.float32)
    return source, target


def test_statistical_is_open3ds(clouds):
    source, _ = clouds
    for k, ratio, name in ((20, 2.0, "statistical_20_2.txt"), (6, 0.5, "statistical_6_0.5.txt")):
        kept, ind = ptreg.remove_statistical_outliers(source, k=k, std_ratio=ratio)
        assert np.array_equal(ind, gold(name, dtype=np.int64))
        assert np.array_equal(kept.points, source[ind])


def test_radius_and_uniform_are_open3ds(clouds):
    source, _ = clouds
    kept, ind = ptreg.remove_radius_outliers(source, radius=0.08, min_neighbors=8)
    assert np.array_equal(ind, gold("radius_0.08_8.txt", dtype=np.int64))
    assert len(kept.points) == len(ind)
    u = ptreg.uniform_downsample(source, 7)
    assert np.array_equal(u.points, source[gold("uniform_7.txt", dtype=np.int64)])


def test_filters_keep_normals_and_dtype(clouds):
    source, _ = clouds
    normals = np.tile(np.float32([0, 0, 1]), (len(source), 1))
    normals[:, 0] = np.arange(len(source), dtype=np.float32)
    kept, ind = ptreg.remove_statistical_outliers(ptreg.Cloud(source, normals))
    assert np.array_equal(kept.normals[:, 0], ind.astype(np.float32))
    kept64, ind64 = ptreg.remove_statistical_outliers(source.astype(np.float64))
    assert kept64.points.dtype == np.float64 and np.array_equal(ind64, ind)


def test_random_downsample_seeded(clouds):
    source, _ = clouds
    a = ptreg.random_downsample(source, 0.1, seed=5)
    b = ptreg.random_downsample(source, 0.1, seed=5)
    c = ptreg.random_downsample(source, 0.1, seed=6)
    assert len(a.points) == 63  # Open3D's floor(0.1 x 630)
    assert np.array_equal(a.points, b.points) and not np.array_equal(a.points, c.points)
    assert len(ptreg.random_downsample(source, count=100).points) == 100


def test_random_downsample_is_the_clis(clouds, tmp_path):
    subprocess.run([CLI, "filter", os.path.join(GOLD, "source.xyz"), "--random", "0.25", "--seed", "9",
                    "-o", tmp_path / "r.xyz", "--indices", tmp_path / "r.txt"], check=True, capture_output=True)
    source, _ = clouds
    a = ptreg.random_downsample(source, 0.25, seed=9)
    assert np.array_equal(a.points, source[np.loadtxt(tmp_path / "r.txt", dtype=np.int64)])


def test_evaluate_is_open3ds(clouds):
    source, target = clouds
    fitness, rmse, count = np.loadtxt(os.path.join(GOLD, "evaluate_near_0.02.txt"))
    r = ptreg.evaluate(source, target, 0.02, transform=gold("near.txt"))
    assert r.correspondences == int(count)
    near(r.fitness, fitness, 1e-15, "fitness")
    near(r.inlier_rmse, rmse, 1e-14, "inlier_rmse")  # reached 1e-17
    assert np.array_equal(r.correspondence_set, gold("evaluate_near_0.02_pairs.txt", dtype=np.int64))


def test_evaluate_far_from_zero(clouds):
    """UTM-sized coordinates in float64: the same pairs as near zero."""
    source, target = clouds
    shift = np.array([500000.0, 4500000.0, 100.0])
    T = gold("near.txt")
    # the pose about the shifted frame: x' = x + s, so T' = Tr(s) T Tr(-s)
    Tf = T.copy()
    Tf[:3, 3] = T[:3, 3] + shift - T[:3, :3] @ shift
    r0 = ptreg.evaluate(source, target, 0.02, transform=T)
    r1 = ptreg.evaluate(source.astype(np.float64) + shift, target.astype(np.float64) + shift, 0.02, transform=Tf)
    assert r1.correspondences == r0.correspondences
    near(r1.inlier_rmse, r0.inlier_rmse, 1e-6, "far inlier_rmse")  # float32 of the local offsets


def test_register_correspondences(clouds):
    source, target = clouds
    clean = gold("pairs_clean.txt", dtype=np.int64)
    r = ptreg.register_correspondences(source, target, clean)
    compare(worst_abs_diff(r.transformation, gold("horn_clean.txt")), "<", 1e-12, "Horn vs Open3D's")
    pairs = gold("pairs.txt", dtype=np.int64)
    plain = ptreg.register_correspondences(source, target, pairs)
    compare(worst_abs_diff(plain.transformation, gold("horn_clean.txt")), ">", 1e-3, "50 wrong pairs pull it")
    rr = ptreg.register_correspondences(source, target, pairs, ransac_dist=0.01, seed=3)
    compare(worst_abs_diff(rr.transformation, gold("horn_clean.txt")), "<", 1e-12, "RANSAC's fit")
    assert rr.inliers == 450 and rr.ransac_hypotheses > 0
    w = (pairs[:, 0] == pairs[:, 1]).astype(np.float64)
    rw = ptreg.register_correspondences(source, target, pairs, w)
    compare(worst_abs_diff(rw.transformation, gold("horn_clean.txt")), "<", 1e-12, "weights 0 on the wrong")


def test_register_correspondences_is_the_clis(clouds, tmp_path):
    out = tmp_path / "T.txt"
    subprocess.run([CLI, "correspond", os.path.join(GOLD, "source.xyz"), os.path.join(GOLD, "target.xyz"),
                    "--pairs", os.path.join(GOLD, "pairs.txt"), "--ransac-dist", "0.01", "-t", out], check=True,
                   capture_output=True)
    source, target = clouds
    r = ptreg.register_correspondences(source, target, gold("pairs.txt", dtype=np.int64), ransac_dist=0.01)
    compare(worst_abs_diff(r.transformation, np.loadtxt(out)), "<=", 1e-15, "the CLI's pose")


def test_errors(clouds):
    source, target = clouds
    bad = [
        lambda: ptreg.remove_statistical_outliers(source, k=0),
        lambda: ptreg.remove_statistical_outliers(source, std_ratio=0.0),
        lambda: ptreg.remove_radius_outliers(source, radius=-1.0),
        lambda: ptreg.remove_radius_outliers(source, radius=0.1, min_neighbors=0),
        lambda: ptreg.random_downsample(source, 1.5),
        lambda: ptreg.random_downsample(source),
        lambda: ptreg.random_downsample(source, 0.5, count=3),
        lambda: ptreg.random_downsample(source, count=len(source) + 1),
        lambda: ptreg.uniform_downsample(source, 0),
        lambda: ptreg.evaluate(source, target, 0.0),
        lambda: ptreg.evaluate(source, target, -1.0),
        lambda: ptreg.register_correspondences(source, target, [[0, 0], [1, 1]]),
        lambda: ptreg.register_correspondences(source, target, [[0, 0], [1, 1], [2, 999]]),
        lambda: ptreg.register_correspondences(source, target, [[0, 0], [1, -1], [2, 2]]),
        lambda: ptreg.register_correspondences(source, target, [[0, 0], [1, 1], [2, 2]], [1, -1, 1]),
        lambda: ptreg.register_correspondences(source, target, [[0, 0], [1, 1], [2, 2]], [1, 1]),
        lambda: ptreg.register_correspondences(source, target, [[0, 0], [1, 1], [2, 2]], ransac_dist=0),
    ]
    for i, call in enumerate(bad):
        with pytest.raises(ptreg.ArgumentError):
            call()
        print("refused", i)


def test_open3d_live(clouds):
    """Where open3d imports (Debian's python3 in make check), its answers
    computed here again, beside the committed ones."""
    o3d = pytest.importorskip("open3d")
    source, target = clouds
    rng = np.random.default_rng(1)
    pts = np.vstack([rng.normal(0, 0.05, (400, 3)), rng.uniform(-1, 1, (20, 3))]).astype(np.float32)
    pc = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(pts.astype(np.float64)))
    for k, ratio in ((10, 1.0), (30, 2.5)):
        _, want = pc.remove_statistical_outlier(nb_neighbors=k, std_ratio=ratio)
        assert np.array_equal(ptreg.remove_statistical_outliers(pts, k=k, std_ratio=ratio)[1], want)
    for radius, nb in ((0.05, 3), (0.1, 20)):
        _, want = pc.remove_radius_outlier(nb_points=nb, radius=radius)
        assert np.array_equal(ptreg.remove_radius_outliers(pts, radius=radius, min_neighbors=nb)[1], want)
    s = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(source.astype(np.float64)))
    t = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(target.astype(np.float64)))
    T = gold("truth.txt")
    for d in (0.005, 0.05):
        want = o3d.pipelines.registration.evaluate_registration(s, t, d, T)
        got = ptreg.evaluate(source, target, d, transform=T)
        near(got.fitness, want.fitness, 1e-15, "fitness")
        near(got.inlier_rmse, want.inlier_rmse, 1e-12, "inlier_rmse")
