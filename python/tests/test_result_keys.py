"""One declaration per result (issue 49): a result struct's fields reach
``ptreg CMD --json`` and Python's result through one table
(include/ptreg/results.h), so for every command that has both, the CLI's
JSON keys and Python's result keys are the same set, nested records
(ICP's ``walk``) too. What only one side has is named here: the CLI's
keys about the run rather than the result (its inputs, options and
version), and Python's arrays and the older names it keeps.
PTREG_CLI names the ptreg program (tests/cli/python.sh sets it)."""

import json
import math
import os
import subprocess

import numpy as np
import pytest

import ptreg

CLI = os.environ.get("PTREG_CLI", os.path.join(os.path.dirname(__file__), "..", "..", "build", "ptreg"))

#: every command's JSON: what was run, on what, where, and the device work it asked for
RUN = {"command", "source", "target", "threads", "version", "times_ms", "distance_to_target",
       "rotation_error_deg", "translation_error", "device_launches", "device_bytes_to", "device_bytes_from",
       "device_allocs", "device_graphs", "device_per_iteration"}

#: per command: (the CLI's other keys that are no result field, Python's keys the CLI has not)
ONLY = {
    "icp": ({"method", "kernel", "kernel_scale", "optimizer", "lm_lambda", "target_normals", "source_normals",
             "source_points", "target_points", "dropped_nonfinite", "voxel", "source_points_used",
             "target_points_used", "downsample_ms", "nn_auto", "index", "index_build_ms", "device_name",
             "model_upload_ms", "kernel_compile_ms", "device_bytes"}, set()),
    "emicp": ({"source_points", "target_points", "dropped_nonfinite"}, set()),
    # the CLI's pairing distance and cloud size; Python's pairs
    "evaluate": ({"max_dist", "source_points"}, {"correspondence_set"}),
    # source_down, target_down and inliers: Python's names before the table's
    "register": (set(), {"source_down", "target_down", "inliers", "global_transformation"}),
    # the CLI's device and isa are worked out from the options, not the result struct
    "lddmm": ({"template", "sigma", "time_points", "lambda", "gamma", "integrator", "precision",
               "pair_terms_per_s", "isa", "device"}, {"p0", "q1", "q0", "options", "hamiltonian"}),
    "harris3d": ({"volume", "dims", "type", "spacing", "window", "k", "border", "threshold_mode", "voxels_per_s",
                  "device"}, set()),
    # the per-scan poses: the CLI's "scans" records (file, points, pose), Python's poses and placed arrays
    "multiway": ({"anchor", "scans"}, {"poses", "placed"}),
    # per device: the CLI's probe (Python's list is not probed); is_gpu: Python's name before "gpu"
    "devices": ({"fma_contracts", "bit_exact", "open_error"}, {"is_gpu"}),
    # the index's file and measured method (its tuning, not its info); delaunay_note: the CLI's only
    # when there is no graph; duplicates and has_delaunay: Python's names before the table's
    "index": ({"file", "nn_measured"}, {"duplicates", "has_delaunay", "delaunay_note"}),
    # a frame: the CLI's TUM pose (null when unreadable) and errors against --truth; Python's 4 x 4 matrices
    "track": ({"pose", "unreadable", "rotation_error_deg", "translation_error"}, {"transformation", "predicted"}),
    # the CLI's summary of the pairs (counts per stop reason, means) and its timings; Python's per-pair arrays
    # (stop_reasons: the CLI's counts, Python's names) and time_ms, Python's name before the table's register_ms
    "batch": ({"mode", "input", "pairs", "points", "engine", "translation", "stop_reasons", "iterations_mean",
               "iterations_max", "rms_mean", "read_ms", "total_ms", "device", "ranks", "output"},
              {"transformations", "iterations", "stop_reasons", "time_ms"}),
}


def cli_json(*args):
    run = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def assert_same_keys(command, cli, py, run=RUN, least=5):
    """run: the keys of a whole command's JSON (not those of a record in it);
    least: the result keys the command has at the least"""
    cli_only, py_only = ONLY[command]
    assert py_only <= set(py), f"{command}: Python's result lacks {sorted(py_only - set(py))}"
    a, b = set(cli) - run - cli_only, set(py) - py_only
    assert a == b, f"{command}: CLI only {sorted(a - b)}, Python only {sorted(b - a)}"
    assert len(a) >= least, f"{command}: too few result keys to compare: {sorted(a)}"


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    run = subprocess.run([CLI, *map(str, ["synth", "--shape", "aircraft", "--model", d / "model.ply", "--model-points",
                                          4000, "-o", d / "scan.ply", "--points", 2000, "--max-angle", 5, "--noise",
                                          0.001, "--seed", 3])], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return d, ptreg.read_cloud(d / "scan.ply"), ptreg.read_cloud(d / "model.ply")


@pytest.mark.parametrize("nn", ["kdtree", "delaunay-pnn"])
def test_icp(scene, nn):
    d, s, t = scene
    cli = cli_json("icp", d / "scan.ply", d / "model.ply", "--nn", nn, "--json")
    py = ptreg.icp(s, t, nn=nn)
    assert_same_keys("icp", cli, py)
    # the walks (the Delaunay methods' records): present in both or in neither, each record's keys alike
    assert ("walk" in cli) == ("walk" in py) == nn.startswith("delaunay")
    if nn.startswith("delaunay"):
        assert len(cli["walk"]) == len(py["walk"]) == py["iterations"] + 1
        assert set(cli["walk"][0]) == set(py["walk"][0]) and "mean_steps" in py["walk"][0]
    # the fields Python lacked before the table (issue 49)
    assert {"nn_measured", "upload_ms"} <= set(py)


def test_emicp(scene):
    d, s, t = scene
    assert_same_keys("emicp", cli_json("emicp", d / "scan.ply", d / "model.ply", "--max-iter", 5, "--json"),
                     ptreg.emicp(s, t, max_iter=5))


def test_evaluate(scene):
    d, s, t = scene
    cli = cli_json("evaluate", d / "scan.ply", d / "model.ply", "--max-dist", 0.05, "--json")
    assert_same_keys("evaluate", cli, ptreg.evaluate(s, t, 0.05), least=3)


def test_register(scene):
    d, s, t = scene
    py = ptreg.register(s, t)
    assert_same_keys("register", cli_json("register", d / "scan.ply", d / "model.ply", "--json"), py)
    # the older names are the same values as the table's
    assert (py.source_down, py.target_down, py.inliers) == (py.source_points_down, py.target_points_down,
                                                            py.ransac_inliers)


def test_lddmm(tmp_path):
    angles = 2 * math.pi * np.arange(24) / 24
    circle = np.stack([np.cos(angles), np.sin(angles), np.zeros_like(angles)], axis=1)
    ellipse = circle * [2.0, 1.0, 1.0]
    np.savetxt(tmp_path / "e.csv", ellipse, delimiter=",")
    np.savetxt(tmp_path / "c.csv", circle, delimiter=",")
    py = ptreg.lddmm(ellipse, circle, sigma=0.3, max_iter=5)
    assert_same_keys("lddmm", cli_json("lddmm", tmp_path / "e.csv", tmp_path / "c.csv", "--sigma", 0.3,
                                       "--max-iter", 5, "--json"), py)
    assert py.hamiltonian == py.H


def test_harris3d(tmp_path):
    vol = np.full((12, 14, 16), 10, dtype=np.uint8)
    vol[3:9, 4:10, 5:11] = 200
    ptreg.write_volume(tmp_path / "box.nrrd", ptreg.Volume(vol, (1.0, 1.0, 1.0), (0.0, 0.0, 0.0)))
    assert_same_keys("harris3d", cli_json("harris3d", tmp_path / "box.nrrd", "--json"),
                     ptreg.harris3d(ptreg.read_volume(tmp_path / "box.nrrd")))


def test_multiway(tmp_path):
    paths = []
    for k, view in enumerate(["5,0,3", "1.5,4.8,3", "-4,2.9,3"]):
        paths.append(tmp_path / f"v{k}.ply")
        run = subprocess.run([CLI, "synth", "--shape", "aircraft", "-o", str(paths[-1]), "--points", "3000", "--view",
                              view, "--noise", "0.002", "--max-angle", "20", "--seed", str(k + 3)],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
    cli = cli_json("multiway", *paths, "--json")
    py = ptreg.multiway([ptreg.read_cloud(p) for p in paths])
    assert_same_keys("multiway", cli, py)
    # the edges (records of the result): each one's keys alike
    assert len(cli["edges"]) == len(py["edges"]) >= 2
    assert set(cli["edges"][0]) == set(py["edges"][0]) and "surface" in py["edges"][0]


def test_devices():
    cli = {d["device"]: d for d in cli_json("devices", "--json")["devices"]}
    py = {d["device"]: d for d in ptreg.devices()}
    assert set(cli) == set(py) and "cpu" in py
    for name in py:
        assert_same_keys("devices", cli[name], py[name], run=set())
    assert py["cpu"]["is_gpu"] == py["cpu"]["gpu"] is False


def test_index(scene):
    d, s, t = scene
    ptreg.ModelIndex(t).save(d / "model.pti")
    py = ptreg.ModelIndex.load(d / "model.pti").info
    assert_same_keys("index", cli_json("info", d / "model.pti", "--json"), py)
    assert (py.duplicates, py.has_delaunay) == (py.duplicates_merged, py.delaunay)


def test_track(scene):
    d, s, t = scene
    cli = cli_json("track", d / "model.ply", d / "scan.ply", d / "scan.ply", "--json")
    py = list(ptreg.track(t, [s, s]))
    assert len(cli["frames"]) == len(py) == 2
    for c, p in zip(cli["frames"], py):
        assert_same_keys("track", c, p, run=set())
    # the table's time and points (Python's points: new with the table)
    assert (py[1]["time"], py[1]["points"]) == (cli["frames"][1]["time"], cli["frames"][1]["points"]) == (0.1, 2000)


def test_batch(tmp_path):
    rng = np.random.default_rng(1)
    tgt = rng.normal(size=(30, 3)).astype(np.float32)
    c, si = math.cos(0.3), math.sin(0.3)
    src = ((tgt - 0.1) @ np.array([[c, -si, 0], [si, c, 0], [0, 0, 1]])).astype(np.float32)
    # a pairs file of one pair (docs/FORMATS.md, "ptreg pairs file")
    with open(tmp_path / "one.ptpairs", "wb") as f:
        f.write(b"PTPAIRS1" + np.array([1, 1, 0, 30, 0, 30], dtype="<u8").tobytes())
        f.write(src.astype("<f4").tobytes() + tgt.astype("<f4").tobytes())
    cli = cli_json("batch", "--pairs", tmp_path / "one.ptpairs", "--json")
    py = ptreg.batch([src], tgt)
    assert cli["pairs"] == 1 and cli["pair_terms"] == py["pair_terms"] > 0
    assert_same_keys("batch", cli, py)
    assert py["register_ms"] == py["time_ms"]
