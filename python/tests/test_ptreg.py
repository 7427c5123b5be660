"""ptreg's Python package against the library: every call compared with the
CLI on the same files (the same bits: both are the same library), known poses
recovered, the errors, zero-copy input, the GIL released, the binding's
overhead. PTREG_CLI names the ptreg program (tests/cli/python.sh sets it)."""

import html
import json
import os
import pickle
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from ptreg_checks import compare, worst, worst_abs_diff

import ptreg

CLI = os.environ.get("PTREG_CLI", os.path.join(os.path.dirname(__file__), "..", "..", "build", "ptreg"))


def cli(*args):
    run = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout


def cli_json(*args):
    return json.loads(cli(*args, "--json"))


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    """The built-in aircraft: a 20k-point model with normals, a 15k-point scan
    of it in a known pose (5 degrees), the truth."""
    d = tmp_path_factory.mktemp("scene")
    cli("synth", "--shape", "aircraft", "--model", d / "model.ply", "--model-points", 20000, "-o", d / "scan.ply",
        "--points", 15000, "--max-angle", 5, "--noise", 0.001, "--truth-out", d / "truth.txt", "--seed", 3)
    return d


def rotation(axis, angle_deg):
    """Rodrigues: cos t I + sin t [k]x + (1 - cos t) k k^T."""
    k = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    t = np.radians(angle_deg)
    return np.cos(t) * np.eye(3) + np.sin(t) * np.cross(k, np.eye(3)).T + (1 - np.cos(t)) * np.outer(k, k)


def rotation_error_deg(a, b):
    r = a[:3, :3].T @ b[:3, :3]
    return np.degrees(np.arccos(np.clip((np.trace(r) - 1) / 2, -1, 1)))


# ---- the package ---------------------------------------------------------------

def test_version_and_devices():
    assert ptreg.__version__ == ptreg.version() == cli("--version").split()[1]
    devs = ptreg.devices()
    assert any(d["device"] == "cpu" for d in devs)
    assert all({"device", "name", "is_gpu", "memory_bytes"} <= set(d) for d in devs)


def test_threads():
    before = ptreg.get_num_threads()
    ptreg.set_num_threads(1)
    assert ptreg.get_num_threads() == 1
    ptreg.set_num_threads(0)
    assert ptreg.get_num_threads() == before
    with pytest.raises(ValueError):
        ptreg.set_num_threads(-1)


def test_every_public_name_documented():
    for name in ptreg.__all__:
        obj = getattr(ptreg, name)
        assert obj.__doc__ and obj.__doc__.strip(), name


# ---- files ---------------------------------------------------------------------

def test_cloud_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    pts = rng.normal(size=(500, 3)).astype(np.float32)
    nrm = rng.normal(size=(500, 3)).astype(np.float32)
    for name, ascii_ in (("c.ply", False), ("c.pcd", True), ("c.xyz", False)):
        ptreg.write_cloud(tmp_path / name, pts, nrm, ascii=ascii_)
        back = ptreg.read_cloud(tmp_path / name)
        assert back.points.dtype == np.float32 and back.points.shape == (500, 3)
        np.testing.assert_allclose(back.points, pts, rtol=1e-6 if name.endswith("xyz") else 0)
        np.testing.assert_allclose(back.normals, nrm, rtol=1e-6 if name.endswith("xyz") else 0)
    points, normals, dropped, origin, colors = ptreg.read_cloud(tmp_path / "c.ply")  # a tuple too
    assert dropped == 0 and normals is not None and origin == (0.0, 0.0, 0.0) and colors is None


def test_colors_kept_through_every_format(tmp_path):
    rng = np.random.default_rng(2)
    pts = rng.normal(size=(300, 3)).astype(np.float32)
    rgb = rng.integers(0, 256, size=(300, 3)).astype(np.uint8)
    rgb[0] = (255, 255, 255)  # PCD's packed float of opaque white is a NaN
    for name, ascii_ in (("c.ply", False), ("a.ply", True), ("c.pcd", False), ("a.pcd", True), ("c.txt", False),
                         ("c.las", False)):
        ptreg.write_cloud(tmp_path / name, pts, colors=rgb, ascii=ascii_)
        back = ptreg.read_cloud(tmp_path / name)
        assert back.colors is not None and back.colors.dtype == np.uint8, name
        assert (back.colors == rgb).all(), name
        ptreg.write_cloud(tmp_path / ("again_" + name), back)  # a Cloud's own colours go back out
        assert (ptreg.read_cloud(tmp_path / ("again_" + name)).colors == rgb).all(), name
    with pytest.raises(ptreg.Error):
        ptreg.write_cloud(tmp_path / "bad.ply", pts, colors=rgb[:10])
    for name in ("x.obj", "x.npy", "noextension"):  # never written in a format the name does not say
        with pytest.raises(ptreg.Error, match="not written|no cloud format"):
            ptreg.write_cloud(tmp_path / name, pts)
        assert not (tmp_path / name).exists()


def test_far_cloud_reads_as_world_float64(tmp_path):
    # a UTM-placed double PLY: float32 would round the northings to half a metre
    rng = np.random.default_rng(3)
    w = np.round(rng.uniform(0, 300, size=(1000, 3)) + [500000.123, 4500000.456, 250.0], 3)
    with open(tmp_path / "utm.ply", "wb") as f:
        f.write(b"ply\nformat binary_little_endian 1.0\nelement vertex 1000\n")
        f.write(b"property double x\nproperty double y\nproperty double z\nend_header\n")
        f.write(w.astype("<f8").tobytes())
    back = ptreg.read_cloud(tmp_path / "utm.ply")
    assert back.points.dtype == np.float64
    assert np.abs(back.points - w).max() < 1e-4


def test_transform_and_volume_round_trip(tmp_path):
    T = np.eye(4)
    T[:3, 3] = [1.5, -2, 0.25]
    ptreg.write_transform(tmp_path / "T.txt", T)
    np.testing.assert_array_equal(ptreg.read_transform(tmp_path / "T.txt"), T)
    vol = np.arange(4 * 5 * 6, dtype=np.uint16).reshape(6, 5, 4)  # [z, y, x]
    ptreg.write_volume(tmp_path / "v.nrrd", vol, spacing=(0.5, 1, 2), origin=(1, 2, 3))
    back = ptreg.read_volume(tmp_path / "v.nrrd")
    np.testing.assert_array_equal(back.data, vol)
    assert back.spacing == (0.5, 1.0, 2.0) and back.origin == (1.0, 2.0, 3.0)
    ptreg.write_volume(tmp_path / "v.nii", vol, spacing=(0.5, 1, 2), origin=(1, 2, 3))
    nii = ptreg.read_volume(tmp_path / "v.nii")
    np.testing.assert_array_equal(nii.data, vol)
    assert nii.spacing == (0.5, 1.0, 2.0) and nii.origin == (1.0, 2.0, 3.0)
    assert open(tmp_path / "v.nii", "rb").read()[344:348] == b"n+1\0"
    for name in ("v.png", "v.nii.gz", "v.nhdr"):  # never NRRD under another name
        with pytest.raises(ptreg.ArgumentError, match="nrrd or .nii"):
            ptreg.write_volume(tmp_path / name, vol)
        assert not (tmp_path / name).exists()
    ptreg.write_transform(tmp_path / "T.json", T)
    assert json.load(open(tmp_path / "T.json"))["transformation"] == T.tolist()
    np.testing.assert_array_equal(ptreg.read_transform(tmp_path / "T.json"), T)
    vol.tofile(tmp_path / "raw_4x5x6_u16.raw")
    np.testing.assert_array_equal(ptreg.read_volume(tmp_path / "raw_4x5x6_u16.raw").data, vol)
    np.testing.assert_array_equal(ptreg.read_volume(tmp_path / "raw_4x5x6_u16.raw", dims=(4, 5, 6),
                                                    dtype="u16").data, vol)


def test_errors(tmp_path):
    with pytest.raises(ptreg.FileError) as e:
        ptreg.read_cloud(tmp_path / "missing.ply")
    assert "missing.ply" in str(e.value) and isinstance(e.value, OSError) and e.value.status == "i/o error"
    bad = tmp_path / "bad.ply"
    bad.write_bytes(b"ply\nformat ascii 1.0\nelement vertex 1000000000\nproperty float x\nend_header\n1 2 3\n")
    with pytest.raises(ptreg.FormatError) as e:
        ptreg.read_cloud(bad)
    assert "bad.ply" in str(e.value)
    pts = np.random.default_rng(0).random((10, 3), dtype=np.float32)
    with pytest.raises(ValueError, match="method"):
        ptreg.icp(pts, pts, method="nope")
    with pytest.raises(TypeError, match="unexpected keyword"):
        ptreg._core.icp(pts, pts, None, None, bogus=1)
    with pytest.raises(ValueError, match="kernel_scale"):
        ptreg.icp(pts, pts, kernel="huber")
    with pytest.raises(ptreg.ArgumentError, match="max_iter") as e:
        ptreg.icp(pts, pts, max_iter=-5)
    assert isinstance(e.value, ValueError)
    with pytest.raises(ptreg.ArgumentError, match="NaN"):  # NaN is not "unset" (<= 0 is)
        ptreg.emicp(pts, pts, sigma2=float("nan"))
    with pytest.raises(ValueError, match=r"\(N, 3\)"):
        ptreg.icp(np.zeros((10, 2)), pts)
    with pytest.raises(ValueError, match="device"):
        ptreg.icp(pts, pts, device="tpu")


def test_clouds_without_a_shape_raise():
    """Fewer than 3 points, or one point repeated, have no pose, normal or
    descriptor: every registration and estimator raises (the library's check,
    the same the CLI makes) rather than returning an arbitrary answer."""
    good = np.random.default_rng(1).random((50, 3), dtype=np.float32)
    up = np.tile(np.float32([0, 0, 1]), (50, 1))
    calls = {
        "ICP: the source": lambda c: ptreg.icp(c, good),
        "ICP: the target": lambda c: ptreg.icp(good, c, method="plane"),
        "register: the source": lambda c: ptreg.register(c, good),
        "EM-ICP: the target": lambda c: ptreg.emicp(good, c),
        "normals: the cloud": lambda c: ptreg.normals(c, k=3),
        "features: the cloud": lambda c: ptreg.fpfh(c, up[:len(c)], k=3),
    }
    for what, call in calls.items():
        with pytest.raises(ptreg.ArgumentError, match=f"{what}: 2 points: at least 3 are needed"):
            call(good[:2])
        with pytest.raises(ptreg.ArgumentError, match=f"{what}: all 20 points are the same point"):
            call(np.tile(good[:1], (20, 1)))
    with pytest.raises(ptreg.ArgumentError, match="features: the cloud: 1 point: at least 3"):
        ptreg.pfh(good[:1], up[:1], k=3)


# ---- input handling ------------------------------------------------------------

def test_zero_copy_and_conversion(scene):
    model = ptreg.read_cloud(scene / "model.ply").points
    assert ptreg._points(model) is model  # C-contiguous float32: passed as it is
    as64 = model.astype(np.float64)  # Open3D's np.asarray(pcd.points)
    assert ptreg._points(as64) is not as64
    strided = np.asfortranarray(model)
    scan = ptreg.read_cloud(scene / "scan.ply").points
    a = ptreg.icp(scan, model, max_iter=10)
    b = ptreg.icp(scan.astype(np.float64), strided, max_iter=10)
    np.testing.assert_array_equal(a.transformation, b.transformation)


# ---- registration -------------------------------------------------------------

@pytest.mark.parametrize("method", ["point", "plane", "symmetric", "gicp"])
def test_icp_equals_cli(scene, method, tmp_path):
    """The binding passes every option through: the CLI's transform, bit for
    bit (its -t file holds 17 digits; its JSON 15)."""
    scan, model = ptreg.read_cloud(scene / "scan.ply"), ptreg.read_cloud(scene / "model.ply")
    # with --normal-k the CLI estimates both clouds' normals, as the call does
    r = ptreg.icp(scan.points, model.points, method=method, max_dist=0.1, max_iter=40, normal_k=12)
    ref = cli_json("icp", scene / "scan.ply", scene / "model.ply", "--method", method, "--max-dist", 0.1,
                   "--max-iter", 40, "--normal-k", 12, "--truth", scene / "truth.txt", "-t", tmp_path / "T.txt")
    np.testing.assert_array_equal(r.transformation, ptreg.read_transform(tmp_path / "T.txt"))
    assert r.iterations == ref["iterations"] and r.pairs == ref["pairs"]
    assert r.fitness == pytest.approx(ref["fitness"], rel=1e-14) and r.rmse == pytest.approx(ref["rmse"], rel=1e-14)
    assert ref["rotation_error_deg"] < 0.5
    assert r.stop_reason == ref["stop_reason"] and r.mse.shape == (r.iterations + 1,)


def test_icp_kernel_lm_init_and_index(scene, tmp_path):
    scan, model = ptreg.read_cloud(scene / "scan.ply"), ptreg.read_cloud(scene / "model.ply")
    truth = ptreg.read_transform(scene / "truth.txt")
    r = ptreg.icp(scan.points, model.points, method="plane", kernel="huber", kernel_scale=0.01, lm=1e-3,
                  target_normals=model.normals, init=np.eye(4))
    assert rotation_error_deg(r.transformation, truth) < 0.5
    index = ptreg.ModelIndex(model.points)
    assert index.info.has_delaunay and index.points.shape == model.points.shape
    index.save(tmp_path / "m.pti")
    loaded = ptreg.ModelIndex.load(tmp_path / "m.pti")
    plain = ptreg.icp(scan.points, model.points, nn="kdtree")
    for idx in (index, loaded):
        for nn in ("kdtree", "delaunay-pnnopt"):
            np.testing.assert_array_equal(ptreg.icp(scan.points, idx, nn=nn).transformation, plain.transformation)
    (tmp_path / "junk.pti").write_bytes(b"not an index")
    with pytest.raises(ptreg.FormatError):
        ptreg.ModelIndex.load(tmp_path / "junk.pti")


def test_register_recovers_a_rotation(scene):
    model = ptreg.read_cloud(scene / "model.ply").points
    R = rotation([0.3, -0.8, 0.5], 137.0)  # far from the identity: no initial guess helps
    moved = model @ R.T + np.array([0.3, -0.2, 0.1])
    r = ptreg.register(moved, model)
    T = r.transformation
    assert rotation_error_deg(T, np.block([[R.T, (-R.T @ [0.3, -0.2, 0.1])[:, None]], [np.zeros((1, 3)), 1]])) < 1
    assert r.fitness > 0.9 and r.matches > 0 and r.time_ms > 0


def test_register_on_a_device_is_the_cpus(scene):
    """RANSAC scored on an OpenCL device (POCL in CI) and the refinement there: the
    CPU's winner and, within 1e-6, its refined transform."""
    opencl = next((d["device"] for d in ptreg.devices() if d["device"].startswith("opencl")), None)
    if opencl is None:
        pytest.skip("no OpenCL device")
    model = ptreg.read_cloud(scene / "model.ply").points
    moved = model @ rotation([0.3, -0.8, 0.5], 137.0).T + np.array([0.3, -0.2, 0.1])
    cpu, dev = ptreg.register(moved, model, device="cpu"), ptreg.register(moved, model, device=opencl)
    assert dev.device == opencl and cpu.device == "cpu"
    assert dev.inliers == cpu.inliers and dev.matches == cpu.matches
    assert np.array_equal(dev.global_transformation, cpu.global_transformation)
    assert np.abs(dev.transformation - cpu.transformation).max() <= 1e-6


def test_multiway_places_views_of_the_model(scene):
    """Four parts of the model moved anywhere come back into the first's frame,
    as the CLI puts them (the same bits), and a pair list restricts the graph."""
    model = ptreg.read_cloud(scene / "model.ply").points
    centre = model.mean(axis=0)
    axes = ([1, 0, 0], [0, 1, 0], [-1, 0, 0], [0, -1, 0])
    truth, scans = [], []
    for i, a in enumerate(axes):
        part = model[(model - centre) @ np.array(a, dtype=np.float64) > -0.15 * np.ptp(model[:, 0])]
        R = rotation([0.2 + i, 1.0, -0.5 * i], 40.0 * i)
        t = np.array([0.1 * i, -0.05, 0.02 * i])
        scans.append((part @ R.T + t).astype(np.float32))
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = R.T, -R.T @ t
        truth.append(T)
    r = ptreg.multiway(scans)
    assert r.poses.shape == (4, 4, 4) and all(r.placed) and len(r.edges) == 6
    for i in range(4):
        expected = np.linalg.inv(truth[0]) @ truth[i]
        assert rotation_error_deg(r.poses[i], expected) < 0.5
        assert np.abs(r.poses[i][:3, 3] - expected[:3, 3]).max() < 0.01
    assert np.array_equal(ptreg.multiway(scans).poses, r.poses)
    chain = ptreg.multiway(scans, pairs=[[0, 1], [1, 2], [2, 3]])
    assert len(chain.edges) == 3 and all(chain.placed)
    with pytest.raises(ptreg.ArgumentError):
        ptreg.multiway(scans, pairs=[[0, 7]])
    with pytest.raises(ValueError):
        ptreg.multiway(scans, normals=[None])


def test_track_follows_a_moving_scan(scene):
    """The scan moved a little more each frame is followed frame by frame from
    the constant-velocity prediction; an empty frame is lost, never an error."""
    model = ptreg.read_cloud(scene / "model.ply").points
    scan = ptreg.read_cloud(scene / "scan.ply").points
    truth = np.loadtxt(scene / "truth.txt")
    frames, expected = [], []
    for k in range(8):
        R = rotation([0, 0, 1], 0.5 * k)
        t = np.array([0.01 * k, 0.0, 0.0])
        frames.append((scan @ R.T + t).astype(np.float32))
        M = np.eye(4)
        M[:3, :3], M[:3, 3] = R, t
        expected.append(truth @ np.linalg.inv(M))
    frames.insert(5, np.zeros((0, 3), dtype=np.float32))
    expected.insert(5, None)
    results = list(ptreg.track(model, frames, init=truth))
    assert [r.state for r in results].count("lost") == 1 and results[5].state == "lost"
    for r, e in zip(results, expected):
        if e is not None:
            assert r.state == "tracked" and rotation_error_deg(r.transformation, e) < 0.2
            assert r.latency_ms > 0
    with pytest.raises(ValueError):
        next(ptreg.track(model, frames, rate=0))


def test_odometry_as_the_cli(tmp_path):
    """ptreg.odometry on a generated drive's .bin files gives ptreg odometry's
    poses bit for bit, Odometry's map and summary agree, an empty frame keeps
    the prediction, and KITTI pose files read and write back."""
    seq = tmp_path / "seq"
    subprocess.run([CLI, "synth", "--lidar-sequence", "12", "--beams", "16", "--azimuth-step", "0.5",
                    "--frames-dir", str(seq)], check=True, capture_output=True)
    files = sorted(str(p) for p in (seq / "velodyne").glob("*.bin"))
    subprocess.run([CLI, "odometry", *files, "-o", str(tmp_path / "cli.txt"), "--poses", "kitti"], check=True,
                   capture_output=True)
    cli_poses = ptreg.read_kitti_poses(tmp_path / "cli.txt")
    results = list(ptreg.odometry(files))
    assert len(results) == 12 and results[0].iterations == 0 and results[5].iterations > 0
    poses = np.stack([r.transformation for r in results])
    assert np.abs(poses - cli_poses).max() < 1e-8  # the file's 10 digits
    truth = ptreg.read_kitti_poses(seq / "poses.txt")
    assert np.abs(poses[:, :3, 3] - truth[:, :3, 3]).max() < 1.0
    od = ptreg.Odometry(map_whole=True)
    for f in files[:6]:
        od.push(ptreg.read_cloud(f))
    empty = od.push(np.zeros((0, 3), dtype=np.float32))
    assert empty.points == 0 and empty.iterations == 0
    s = od.summary()
    assert s.frames == 7 and s.empty == 1 and s.latency_ms["p50"] > 0 and s.map_points == len(od.map())
    assert len(od.map(whole=True)) > 0
    with pytest.raises(ptreg.ArgumentError):
        ptreg.Odometry().map(whole=True)
    with pytest.raises(ptreg.ArgumentError):
        ptreg.Odometry(min_range=50, max_range=40)
    with pytest.raises(ptreg.ArgumentError):
        ptreg.Odometry(device="opencl:99")  # a device named that is not there
    assert ptreg.Odometry(device="cpu").push(ptreg.read_cloud(files[0])).points > 0
    ptreg.write_kitti_poses(tmp_path / "back.txt", poses)
    assert np.abs(ptreg.read_kitti_poses(tmp_path / "back.txt") - poses).max() < 1e-8
    (tmp_path / "bad.txt").write_text("1 0 0 0 0 2 0 0 0 0 1 0\n")
    with pytest.raises(ptreg.Error, match="bad.txt: line 1"):
        ptreg.read_kitti_poses(tmp_path / "bad.txt")


def test_localize_as_the_cli(tmp_path):
    """ptreg.localize in a generated map (UTM-sized coordinates) gives ptreg
    localize's poses, from the cloud and from its saved tiles; Localizer's
    submap and summary agree; a bad map or init is an error."""
    origin = "500000,5400000,100"
    subprocess.run([CLI, "synth", "--lidar-sequence", "30", "--beams", "16", "--azimuth-step", "0.8", "--frames-dir",
                    str(tmp_path / "mapping"), "--lidar-map", str(tmp_path / "map.las"), "--origin", origin],
                   check=True, capture_output=True)
    (tmp_path / "drive").mkdir()
    subprocess.run([CLI, "synth", "--lidar-sequence", "12", "--beams", "16", "--azimuth-step", "0.8", "--frames-dir",
                    str(tmp_path / "drive"), "--lane", "-1.5", "--scan-seed", "7", "--origin", origin,
                    "--truth-trajectory-out", str(tmp_path / "truth.txt")], check=True, capture_output=True)
    files = sorted(str(p) for p in (tmp_path / "drive" / "velodyne").glob("*.bin"))
    truth = ptreg.read_kitti_poses(tmp_path / "truth.txt")
    subprocess.run([CLI, "localize", str(tmp_path / "map.las"), *files, "--init",
                    ",".join(repr(float(v)) for v in truth[0][:3, 3]), "-o", str(tmp_path / "cli.txt")],
                   check=True, capture_output=True)
    cli_poses = ptreg.read_kitti_poses(tmp_path / "cli.txt")
    init = np.eye(4)
    init[:3, 3] = truth[0][:3, 3]
    results = list(ptreg.localize(tmp_path / "map.las", files, init, save_tiles=tmp_path / "map.ptm"))
    poses = np.stack([r.transformation for r in results])
    assert all(r.state == "tracked" and r.fitness > 0.5 and r.tiles > 0 for r in results)
    assert np.abs(poses - cli_poses).max() < 1e-6  # TUM's quaternions: 9 digits
    assert np.abs(poses[:, :3, 3] - truth[:, :3, 3]).max() < 0.1
    loc = ptreg.Localizer(tmp_path / "map.ptm", init)
    for f in files[:4]:
        loc.push(f)
    s = loc.summary()
    assert s.frames == 4 and s.tracked == 4 and s.lost == 0 and s.map_points == len(loc.map())
    assert np.abs(loc.map().mean(axis=0)[:2] - truth[0][:2, 3]).max() < 200  # in the map's coordinates
    with pytest.raises(ptreg.ArgumentError):
        ptreg.Localizer(tmp_path / "map.ptm", init, tile=10)
    (tmp_path / "bad.ptm").write_bytes(b"PTM1 not a map")
    with pytest.raises(ptreg.Error, match="bad.ptm"):
        ptreg.Localizer(tmp_path / "bad.ptm", init)


def test_emicp(scene):
    scan = ptreg.read_cloud(scene / "scan.ply").points[::15]
    model = ptreg.read_cloud(scene / "model.ply").points[::20]
    r = ptreg.emicp(scan, model)
    ref = cli_json("emicp", scene / "scan.ply", scene / "model.ply", "--truth", scene / "truth.txt")
    assert r.iterations > 0 and r.precision == "fp32" and r.gpts > 0
    assert ref["rotation_error_deg"] < 2


def tuned_cache(tmp_path, monkeypatch, kernel, tune_args, **winner):
    """A tuner's cache made by `ptreg tune --kernel KERNEL` here, its winners
    then replaced by `winner` (unlike the defaults, whatever the search
    found, so that a run of the defaults cannot pass for a tuned one)."""
    cache = tmp_path / "tune.json"
    monkeypatch.setenv("PTREG_TUNE_CACHE", str(cache))
    cli("tune", "--kernel", kernel, *tune_args, "--reps", "1")
    winners = json.loads(cache.read_text())
    for kernels in winners["machines"].values():
        for entry in kernels[kernel].values():
            entry["params"].update(winner)
    cache.write_text(json.dumps(winners))


def test_emicp_runs_the_tuned_variant(scene, tmp_path, monkeypatch):
    """After `ptreg tune`, emicp runs this machine's winner from the cache (the
    library chooses it, as for the CLI); no_tune=True runs the defaults. The
    answers agree to rounding: only the column tile moves sums."""
    tuned_cache(tmp_path, monkeypatch, "pair", ["--size", "300", "--sample", "0.03"],
                col_tile=256, row_block=256, row_vectors=1, threads=1)
    scan = ptreg.read_cloud(scene / "scan.ply").points[::15]
    model = ptreg.read_cloud(scene / "model.ply").points[::20]
    tuned = ptreg.emicp(scan, model, device="cpu", max_iter=30)
    assert tuned.variant["source"] == "tuned" and tuned.variant["size_class"].startswith("1e")
    assert (tuned.variant["col_tile"], tuned.variant["row_block"], tuned.variant["row_vectors"]) == (256, 256, 1)
    plain = ptreg.emicp(scan, model, device="cpu", max_iter=30, no_tune=True)
    assert plain.variant["source"] == "default" and plain.variant["col_tile"] == 1024
    np.testing.assert_allclose(tuned.transformation, plain.transformation, atol=1e-6)
    monkeypatch.setenv("PTREG_TUNE_CACHE", "off")
    assert ptreg.emicp(scan, model, device="cpu", max_iter=30).variant["source"] == "default"


def test_harris3d_runs_the_tuned_tiling(tmp_path, monkeypatch):
    """harris3d takes `ptreg tune --kernel harris`'s tiling from the cache, and
    the keypoints do not move."""
    tuned_cache(tmp_path, monkeypatch, "harris", ["--size", "32"], tile_rows=4, threads=1)
    volume = np.zeros((20, 24, 28), dtype=np.uint8)
    volume[5:15, 6:18, 7:21] = 200
    tuned = ptreg.harris3d(volume, device="cpu")
    plain = ptreg.harris3d(volume, device="cpu", no_tune=True)
    assert tuned.variant["source"] == "tuned" and tuned.variant["tile_rows"] == 4
    assert plain.variant["source"] == "default"
    assert len(tuned.keypoints) > 0 and tuned.keypoints.tobytes() == plain.keypoints.tobytes()


def test_batch_many_pairs():
    """Rotated copies of a motif registered back, shared and per-pair targets."""
    rng = np.random.default_rng(5)
    motif = rng.normal(size=(12, 3))
    motif -= motif.mean(axis=0)
    sources, truths = [], []
    for _ in range(50):
        R = rotation(rng.normal(size=3), rng.uniform(0, 8))  # near the identity: EM-ICP's basin
        sources.append(motif @ R.T)
        truths.append(R.T)
    r = ptreg.batch(sources, motif, translation=False)
    assert r.transformations.shape == (50, 4, 4) and len(r.stop_reasons) == 50
    errors = [rotation_error_deg(np.block([[t, np.zeros((3, 1))], [np.zeros((1, 3)), 1]]), T)
              for t, T in zip(truths, r.transformations)]
    compare(worst(errors, "batch: rotation errors (deg)"), "<", 0.1, "batch: the worst rotation error (deg)")
    again = ptreg.batch(sources, targets=[motif] * 50, translation=False)
    np.testing.assert_array_equal(again.transformations, r.transformations)
    with pytest.raises(ValueError, match="either"):
        ptreg.batch(sources)


# ---- features ------------------------------------------------------------------

def test_normals_and_fpfh_equal_cli(scene, tmp_path):
    model = ptreg.read_cloud(scene / "model.ply").points
    n, curv = ptreg.normals(model, k=15, curvature=True)
    cli("normals", scene / "model.ply", "-k", 15, "-o", tmp_path / "n.ply")
    ref = ptreg.read_cloud(tmp_path / "n.ply")
    np.testing.assert_array_equal(n, ref.normals)
    assert curv.shape == (len(model),) and np.all((curv >= 0) & (curv <= 1 / 3 + 1e-6))
    f = ptreg.fpfh(model, n, radius=0.05)
    cli("fpfh", tmp_path / "n.ply", "--radius", 0.05, "-o", tmp_path / "f.npy")
    np.testing.assert_array_equal(f, np.load(tmp_path / "f.npy"))
    p = ptreg.pfh(model[:2000], n[:2000], k=10)
    assert p.shape == (2000, 125)
    down = ptreg.voxel_downsample(model, 0.05, normals=n)
    cli("convert", scene / "model.ply", "--voxel", 0.05, "-o", tmp_path / "d.ply")
    np.testing.assert_array_equal(down.points, ptreg.read_cloud(tmp_path / "d.ply").points)
    assert np.allclose(np.linalg.norm(down.normals, axis=1), 1, atol=1e-5)


def test_normals_must_match_the_points(tmp_path):
    """Normals given beside points need one row per point, for every call
    that takes both (one check: py_common.c's get_points_normals)."""
    pts = np.random.default_rng(5).random((50, 3), dtype=np.float32)
    for call in (lambda: ptreg.voxel_downsample(pts, 0.1, normals=pts[:49]),
                 lambda: ptreg.write_cloud(str(tmp_path / "n.ply"), pts, pts[:49])):
        with pytest.raises(ptreg.ArgumentError, match="normals: 49 rows for 50 points"):
            call()
    assert not (tmp_path / "n.ply").exists()


def test_normals_on_an_opencl_device_are_the_cpus(scene):
    """device="opencl:N": the CPU's normals and curvature bit for bit;
    tangent-plane orientation is refused there, by name."""
    device = next((d["device"] for d in ptreg.devices() if d["device"].startswith("opencl")), None)
    if device is None:
        pytest.skip("no OpenCL device")
    model = ptreg.read_cloud(scene / "model.ply").points
    n, curv = ptreg.normals(model, k=12, curvature=True, device="cpu")
    dn, dcurv = ptreg.normals(model, k=12, curvature=True, device=device)
    np.testing.assert_array_equal(dn, n)
    np.testing.assert_array_equal(dcurv, curv)
    with pytest.raises(ptreg.UnsupportedError, match="tangent-plane"):
        ptreg.normals(model, orient="tangent-plane", device=device)


def test_harris3d_finds_a_cubes_corners():
    vol = np.zeros((32, 32, 32), dtype=np.uint8)
    vol[8:24, 8:24, 8:24] = 200
    r = ptreg.harris3d(vol, window=5, relative=0.1, min_distance=3, scores=True)
    corners = {(x, y, z) for x in (8, 23) for y in (8, 23) for z in (8, 23)}
    found = {(int(k["x"]), int(k["y"]), int(k["z"])) for k in r.keypoints}
    near = sum(any(worst_abs_diff(c, f, "a corner and a keypoint") <= 2 for f in found) for c in corners)
    assert near == 8, found
    assert r.scores.shape == vol.shape and r.max_score == pytest.approx(float(r.scores.max()))
    assert np.all(np.diff(r.keypoints["score"]) <= 0)


def _bumpy(n, seed):
    rng = np.random.default_rng(seed)
    u = rng.normal(size=(n, 3))
    u /= np.linalg.norm(u, axis=1)[:, None]
    return (u * (1 + 0.25 * np.sin(3 * u[:, :1]) * np.cos(2 * u[:, 1:2]))).astype(np.float32)


def test_cpd_similarity_affine_and_the_cli():
    """ptreg.cpd's similarity finds the scale, its 4 x 4 is the CLI's, warp
    moves the source onto `moved`, and a cloud far from zero keeps its frame."""
    src = _bumpy(600, 1)
    angle = np.radians(20)
    R = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1]])
    noise = 1e-3 * np.random.default_rng(5).normal(size=src.shape)
    tgt = (1.3 * src @ R.T + [0.2, -0.1, 0.05] + noise).astype(np.float32)
    r = ptreg.cpd(src, tgt, transform="similarity", w=0.02)
    assert abs(r.scale - 1.3) < 1e-3 and r.transform == "similarity" and r.converged
    np.testing.assert_allclose(r.transformation[:3, :3], 1.3 * R, atol=1e-3)
    np.testing.assert_allclose(r.warp(src), r.moved, atol=1e-5)
    affine = ptreg.cpd(src, tgt, transform="affine", precision="fp64")
    np.testing.assert_allclose(affine.moved, tgt, atol=1e-2)
    far = ptreg.cpd(src.astype(np.float64) + 5e5, tgt.astype(np.float64) + 5e5, transform="similarity", w=0.02)
    np.testing.assert_allclose(far.moved - 5e5, r.moved, atol=1e-3)
    with pytest.raises(ptreg.ArgumentError, match="w"):
        ptreg.cpd(src, tgt, w=1.0)
    with pytest.raises(ptreg.ArgumentError, match="transform"):
        ptreg.cpd(src, tgt, transform="bent")


def test_cpd_deformable_field_and_warp(tmp_path):
    """A smooth bend comes back; the field moves other points (the source itself
    onto `moved`), and the CLI's moved source is the binding's."""
    src = _bumpy(800, 2)
    bend = np.stack([0.08 * np.sin(1.5 * src[:, 1]), 0.06 * np.cos(1.2 * src[:, 0]), 0 * src[:, 0]], 1)
    tgt = (src + bend).astype(np.float32)
    r = ptreg.cpd(src, tgt, transform="deformable", beta=0.7, lambda_=2.0, max_iter=40)
    truth_err = np.sqrt(np.mean(np.sum((r.moved - tgt) ** 2, 1)))
    assert truth_err < 0.1 * np.sqrt(np.mean(np.sum(bend ** 2, 1)))
    assert r.cg_iterations > 0 and np.allclose(r.transformation, np.eye(4))
    np.testing.assert_allclose(r.warp(src), r.moved, atol=1e-5)
    ptreg.write_cloud(tmp_path / "s.ply", src)
    ptreg.write_cloud(tmp_path / "t.ply", tgt)
    cli("cpd", tmp_path / "s.ply", tmp_path / "t.ply", "--transform", "deformable", "--beta", "0.7", "--max-iter",
        "40", "-o", tmp_path / "m.ply", "-q")
    np.testing.assert_allclose(ptreg.read_cloud(tmp_path / "m.ply").points, r.moved, atol=1e-6)
    fast = ptreg.cpd(src, tgt, transform="deformable", beta=0.7, max_iter=40, low_rank=100)
    assert fast.cg_iterations == 0


def test_icp_scale():
    src = _bumpy(2000, 3)
    tgt = (1.3 * src + [0.05, 0, 0]).astype(np.float32)
    r = ptreg.icp(src, tgt, scale=True, device="cpu")
    assert abs(np.cbrt(np.linalg.det(r.transformation[:3, :3])) - 1.3) < 1e-4
    with pytest.raises(ptreg.ArgumentError, match="scale"):
        ptreg.icp(src, tgt, scale=True, method="plane")


def test_lddmm_and_warp():
    rng = np.random.default_rng(2)
    q0 = rng.uniform(-1, 1, size=(40, 3))
    target = q0 + 0.2 * np.sin(q0[:, [1, 2, 0]])
    r = ptreg.lddmm(q0, target, sigma=0.8, steps=10, max_iter=200)
    assert r.avg_distance_after < 0.2 * r.avg_distance_before
    np.testing.assert_allclose(r.warp(q0), r.q1, atol=1e-9)
    moved = ptreg.warp(q0, r.p0, q0[:5], sigma=0.8, steps=10)
    np.testing.assert_allclose(moved, r.q1[:5], atol=1e-9)
    with pytest.raises(ValueError, match="40 template"):
        ptreg.lddmm(q0, target[:30])


def test_tune_small():
    """A small exhaustive search of FPFH's threads: every candidate passes its
    check, the winner is one of them, the default among them."""
    r = ptreg.tune("fpfh", 3000, search="exhaustive", reps=1, confirm=1)
    assert r.candidates and all(c["passed"] for c in r.candidates)
    assert r.winner in [c["point"] for c in r.candidates] and r.default_seconds > 0
    assert "threads" in r.winner and r.machine.startswith("cpu")
    with pytest.raises(ValueError, match="kernel"):
        ptreg.tune("nope")


# ---- the GIL and the overhead ------------------------------------------------

def test_gil_released(scene):
    """While a registration runs in one thread, another keeps running Python."""
    scan, model = ptreg.read_cloud(scene / "scan.ply").points, ptreg.read_cloud(scene / "model.ply").points
    done = threading.Event()
    result = {}

    def work():
        result["r"] = ptreg.icp(scan, model, method="gicp", max_iter=200, tol=0)
        done.set()

    t = threading.Thread(target=work)
    start = time.perf_counter()
    t.start()
    ticks = 0
    while not done.is_set():
        ticks += 1
    t.join()
    elapsed = time.perf_counter() - start
    # with the GIL held for the call this thread would get almost no turns
    assert ticks > 1000 and elapsed > 0.01, (ticks, elapsed)
    assert result["r"].iterations == 200


def test_binding_overhead(scene):
    """The Python call adds at most 5% to the library's time at 30k points."""
    model = ptreg.read_cloud(scene / "model.ply").points
    scan = np.ascontiguousarray(np.concatenate([ptreg.read_cloud(scene / "scan.ply").points] * 2)[:30000])
    ratios = []
    for _ in range(7):
        t0 = time.perf_counter()
        r = ptreg.icp(scan, model, max_iter=30, tol=0)
        wall = (time.perf_counter() - t0) * 1e3
        ratios.append((wall - r.time_ms) / r.time_ms)
    assert np.median(ratios) < 0.05, ratios


# ---- Open3D's clouds in, Open3D's clouds out -------------------------------------

@pytest.fixture(scope="module")
def o3d():
    return pytest.importorskip("open3d")


@pytest.fixture
def spy(monkeypatch):
    """Records the arguments each named _core call receives (the arrays the C
    layer reads), then runs it."""
    calls = {}

    def wrap(name):
        real = getattr(ptreg._core, name)

        def recorded(*args, **kwargs):
            calls[name] = args
            return real(*args, **kwargs)
        monkeypatch.setattr(ptreg._core, name, recorded)
    return calls, wrap


def tensor_cloud(o3d, points, normals=None):
    cloud = o3d.t.geometry.PointCloud(o3d.core.Tensor(np.ascontiguousarray(points, dtype=np.float32)))
    if normals is not None:
        cloud.point["normals"] = o3d.core.Tensor(np.ascontiguousarray(normals, dtype=np.float32))
    return cloud


def legacy_cloud(o3d, points, normals=None):
    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(np.asarray(points, dtype=np.float64)))
    if normals is not None:
        cloud.normals = o3d.utility.Vector3dVector(np.asarray(normals, dtype=np.float64))
    return cloud


def test_tensor_clouds_are_read_in_place(scene, o3d, spy):
    """A tensor cloud's float32 positions and normals reach the C layer as the
    tensors' own memory, in icp, register, normals and fpfh."""
    calls, wrap = spy
    for name in ("icp", "register", "normals", "fpfh"):
        wrap(name)
    scan, model = ptreg.read_cloud(scene / "scan.ply"), ptreg.read_cloud(scene / "model.ply")
    src, tgt = tensor_cloud(o3d, scan.points), tensor_cloud(o3d, model.points, model.normals)
    positions = lambda c: c.point["positions"].numpy()  # noqa: E731  (a view: the tensor's buffer)
    r = ptreg.icp(src, tgt, method="plane", max_iter=10)
    s, t, sn, tn = calls["icp"][:4]
    assert np.shares_memory(s, positions(src)) and np.shares_memory(t, positions(tgt))
    assert sn is None and np.shares_memory(tn, tgt.point["normals"].numpy())
    np.testing.assert_array_equal(r.transformation, ptreg.icp(scan.points, model.points, method="plane", max_iter=10,
                                                              target_normals=model.normals).transformation)
    ptreg.register(src, tgt, no_refine=True, seed=1)
    assert np.shares_memory(calls["register"][1], positions(tgt))
    assert np.shares_memory(calls["register"][3], tgt.point["normals"].numpy())
    n = ptreg.normals(tgt, k=10)
    assert np.shares_memory(calls["normals"][0], positions(tgt))
    f = ptreg.fpfh(tgt, k=10)  # the cloud's own normals
    assert np.shares_memory(calls["fpfh"][1], tgt.point["normals"].numpy())
    np.testing.assert_array_equal(f, ptreg.fpfh(model.points, model.normals, k=10))
    assert n.shape == model.points.shape


def test_legacy_clouds_are_converted(scene, o3d):
    """Open3D's float64 clouds: the same result as their points as arrays; the
    normals used only where the method reads them."""
    scan, model = ptreg.read_cloud(scene / "scan.ply"), ptreg.read_cloud(scene / "model.ply")
    src, tgt = legacy_cloud(o3d, scan.points), legacy_cloud(o3d, model.points, model.normals)
    for method in ("point", "plane"):
        a = ptreg.icp(src, tgt, method=method, max_iter=10)
        b = ptreg.icp(scan.points, model.points, method=method, max_iter=10,
                      target_normals=model.normals if method == "plane" else None)
        np.testing.assert_array_equal(a.transformation, b.transformation)
    # estimated normals differ from the file's: a plane run that ignored the cloud's would differ
    c = ptreg.icp(scan.points, model.points, method="plane", max_iter=10)
    assert not np.array_equal(c.transformation, ptreg.icp(src, tgt, method="plane", max_iter=10).transformation)
    with pytest.raises(ValueError, match="normals"):
        ptreg.fpfh(src)  # no normals to take
    with pytest.raises(TypeError):
        ptreg._open3d_arrays(o3d.geometry.TriangleMesh())


def test_open3d_is_imported_only_when_used():
    code = ("import sys, numpy as np, ptreg\n"
            "a = np.random.default_rng(0).normal(size=(500, 3)).astype(np.float32)\n"
            "ptreg.icp(a, a + 0.01)\n"
            "assert 'open3d' not in sys.modules, 'open3d imported'\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_to_open3d(scene, o3d):
    model = ptreg.read_cloud(scene / "model.ply")
    pcd = ptreg.to_open3d(model)  # a Cloud: its normals come along
    assert isinstance(pcd, o3d.geometry.PointCloud)
    np.testing.assert_array_equal(np.asarray(pcd.points), model.points.astype(np.float64))
    np.testing.assert_array_equal(np.asarray(pcd.normals), model.normals.astype(np.float64))
    rgb = np.zeros((len(model.points), 3), dtype=np.uint8)
    rgb[:, 0] = 255
    pcd = ptreg.to_open3d(model.points, colors=rgb)
    assert not pcd.has_normals() and np.all(np.asarray(pcd.colors) == [1.0, 0.0, 0.0])
    back = ptreg.icp(pcd, model.points, max_iter=2)  # and in again
    np.testing.assert_allclose(back.transformation, np.eye(4), atol=1e-6)
    with pytest.raises(ValueError, match="rows"):
        ptreg.to_open3d(model.points, normals=model.normals[:10])


# ---- the nearest model point, the notebook's report ------------------------------

def test_model_index_nearest():
    rng = np.random.default_rng(4)
    model, queries = rng.random((3000, 3), dtype=np.float32), rng.random((500, 3), dtype=np.float32)
    idx, dist = ptreg.ModelIndex(model, delaunay=False).nearest(queries)
    d2 = ((queries[:, None, :] - model[None, :, :]) ** 2).sum(axis=2)
    np.testing.assert_array_equal(idx, d2.argmin(axis=1))
    np.testing.assert_allclose(dist, np.sqrt(d2.min(axis=1)), rtol=1e-5)


def test_repr_html(scene, monkeypatch):
    scan, model = ptreg.read_cloud(scene / "scan.ply"), ptreg.read_cloud(scene / "model.ply")
    r = ptreg.icp(scan.points, model.points, max_iter=5)
    # what the report draws is kept by reference, not copied
    assert r._report_inputs[1] is scan.points and r._report_inputs[2] is model.points
    assert ptreg.batch([model.points[:50]], model.points[:60], max_iter=2)._repr_html_() is None
    again = pickle.loads(pickle.dumps(ptreg.icp(scan.points, ptreg.ModelIndex(model.points), max_iter=2)))
    assert again.iterations == 2 and again._repr_html_() is None  # pickled without its inputs
    monkeypatch.setattr(ptreg._core, "report_available", lambda: False)
    assert r._repr_html_() is None
    monkeypatch.undo()
    if not ptreg._core.report_available():
        pytest.skip("this libptreg was built without the report's viewer")
    page = r._repr_html_()
    assert page.startswith("<iframe") and page.endswith("</iframe>")
    assert 'srcdoc="' in page and "<html" not in page.lower() and "&lt;" in page  # escaped
    for result in (r, ptreg.emicp(scan.points[:2000], model.points[:3000], max_iter=3),
                   ptreg.register(scan.points, model.points, seed=1)):
        inner = html.unescape(page if result is r else result._repr_html_())
        assert "<html" in inner.lower() and '"transformation"' in inner
        assert all(layer in inner for layer in ("target", "source before", "source after", "distance to the target"))
    assert "MSE per iteration" in html.unescape(page)  # icp's curve


# ---- python -m ptreg -------------------------------------------------------------

def test_python_m_ptreg_runs_the_cli(tmp_path):
    """The carried CLI (pip install of the root), else the one on PATH: the
    CLI's output and exit codes; with neither, exit 127 saying why."""
    import ptreg.__main__ as main

    env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(CLI)) + os.pathsep + os.environ.get("PATH", ""))
    run = subprocess.run([sys.executable, "-m", "ptreg", "--version"], capture_output=True, text=True, env=env)
    assert run.returncode == 0 and run.stdout == cli("--version")
    bad = subprocess.run([sys.executable, "-m", "ptreg", "icp", "no-such-file.ply", "x.ply"], capture_output=True,
                         text=True, env=env)
    direct = subprocess.run([CLI, "icp", "no-such-file.ply", "x.ply"], capture_output=True, text=True)
    assert bad.returncode == direct.returncode != 0 and bad.stderr == direct.stderr
    if os.access(main.CARRIED, os.X_OK):
        assert main.cli_path() == main.CARRIED
        return
    none = subprocess.run([sys.executable, "-m", "ptreg", "--version"], capture_output=True, text=True,
                          env=dict(os.environ, PATH=str(tmp_path)))
    assert none.returncode == 127 and "carries no ptreg CLI" in none.stderr
