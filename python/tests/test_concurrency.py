"""ptreg's Python package under concurrent callers (issue 33): threads of one
process calling side by side on shared and private inputs get the same bits
as the same calls made alone, and processes sharing one tuner cache and one
kernel cache lose no entry, leave no temporary and leave caches a later run
reads. PTREG_CLI names the ptreg program (tests/cli/python.sh sets it)."""

import concurrent.futures
import json
import os
import random
import re
import struct
import subprocess
import sys

import numpy as np
import pytest

import ptreg

CLI = os.environ.get("PTREG_CLI", os.path.join(os.path.dirname(__file__), "..", "..", "build", "ptreg"))

WORKERS = 8
CALLS = WORKERS * 20
NN_METHODS = ("brute", "kdtree", "delaunay-zero", "delaunay-kdann", "delaunay-pnn", "delaunay-pnnopt")


def cli(*args):
    run = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout


def opencl_device():
    """The first OpenCL device, or None."""
    return next((d["device"] for d in ptreg.devices() if d["device"].startswith("opencl")), None)


# ---- results compared bit for bit ---------------------------------------------

def is_unsteady(key):
    """A result's clock readings and rates, which differ from run to run, and
    the thread count a call ran with (a variant's "threads"), which callers
    changing the count decide; the answers themselves are the same bits."""
    return key.endswith("_ms") or key in ("gpts", "pairs_per_s", "threads")


def difference(a, b, where="result"):
    """Where a and b first differ in their bits (None: nowhere), unsteady keys aside."""
    if isinstance(a, dict) or isinstance(b, dict):
        if not (isinstance(a, dict) and isinstance(b, dict)):
            return f"{where}: {type(a).__name__} against {type(b).__name__}"
        keys_a = {k for k in a if not is_unsteady(k)}
        keys_b = {k for k in b if not is_unsteady(k)}
        if keys_a != keys_b:
            return f"{where}: keys {sorted(keys_a ^ keys_b)} in one only"
        return next((d for k in sorted(keys_a) if (d := difference(a[k], b[k], f"{where}[{k!r}]"))), None)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"{where}: {a.dtype}{a.shape} against {b.dtype}{b.shape}"
        # the bytes, not ==: NaN rows (points without neighbours) are results too
        if a.tobytes() != b.tobytes():
            return f"{where}: {int(np.count_nonzero(a.view(np.uint8) != b.view(np.uint8)))} bytes differ"
        return None
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        if len(a) != len(b):
            return f"{where}: {len(a)} items against {len(b)}"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := difference(x, y, f"{where}[{i}]"))), None)
    if isinstance(a, float) and isinstance(b, float):
        return None if struct.pack("<d", a) == struct.pack("<d", b) else f"{where}: {a!r} against {b!r}"
    return None if type(a) is type(b) and a == b else f"{where}: {a!r} against {b!r}"


def test_difference_sees_one_bit():
    """The comparison the threads' test rests on: one flipped bit, a NaN's
    place, -0.0 or a key in one only is a difference; a timing is not."""
    x = np.linspace(0, 1, 7, dtype=np.float32)
    y = x.copy()
    y.view(np.uint32)[3] ^= 1
    assert difference(x, y) and difference(0.0, -0.0) and difference({"a": 1}, {"a": 1, "b": 2})
    assert difference(np.float32([np.nan, 1]), np.float32([1, np.nan]))
    assert difference({"fitness": 0.5, "time_ms": 1.0}, {"fitness": 0.5, "time_ms": 2.0}) is None
    assert difference(np.float32([np.nan]), np.float32([np.nan])) is None


# ---- threads ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Small clouds (a 4000-point model with normals, a 3000-point scan of it
    5 degrees off), a volume, LDDMM landmarks, EM-ICP motifs, and a
    ModelIndex of the model (with its Delaunay graph) that every thread uses."""
    d = tmp_path_factory.mktemp("threads")
    cli("synth", "--shape", "aircraft", "--model", d / "model.ply", "--model-points", 4000, "-o", d / "scan.ply",
        "--points", 3000, "--max-angle", 5, "--noise", 0.001, "--truth-out", d / "truth.txt", "--seed", 7)
    model, scan = ptreg.read_cloud(d / "model.ply"), ptreg.read_cloud(d / "scan.ply")
    rng = np.random.default_rng(11)
    volume = np.zeros((24, 28, 32), dtype=np.uint8)  # [z, y, x]
    volume[5:19, 6:22, 7:25] = 200
    volume[9:14, 10:15, 11:16] = 90
    q0 = rng.uniform(-1, 1, size=(40, 3))
    motif = rng.normal(size=(12, 3))
    motif -= motif.mean(axis=0)
    return {
        "model": model.points, "model_normals": model.normals, "scan": scan.points,
        "truth": np.loadtxt(d / "truth.txt"), "volume": volume, "q0": q0,
        "q1": q0 + 0.2 * np.sin(q0[:, [1, 2, 0]]), "motif": motif,
        "motifs": [motif + rng.normal(scale=0.02, size=motif.shape) for _ in range(40)],
        "index": ptreg.ModelIndex(model.points),
    }


def private(inp, as_float64):
    """The inputs copied for one call (the index stays shared: it is meant to
    be); float32 clouds as float64 when asked, so that conversions run side by
    side too."""
    out = {}
    for k, v in inp.items():
        if isinstance(v, np.ndarray):
            out[k] = v.astype(np.float64) if as_float64 and v.dtype == np.float32 else v.copy()
        elif k == "motifs":
            out[k] = [m.copy() for m in v]
        else:
            out[k] = v
    return out


def snapshot(inp):
    """The bytes of every input array, the motifs' too."""
    arrays = [(k, v) for k, v in inp.items() if isinstance(v, np.ndarray)]
    return {k: v.tobytes() for k, v in arrays + [(f"motifs[{j}]", m) for j, m in enumerate(inp["motifs"])]}


def calls(device):
    """Every kind of call: name -> function of the inputs. Each is small
    (milliseconds to a tenth of a second) so that 160 fit the time."""
    c = {}
    for method in ("point", "plane", "symmetric", "gicp"):
        c[f"icp {method}"] = lambda i, m=method: ptreg.icp(i["scan"], i["model"], method=m, max_dist=0.1,
                                                           max_iter=20)
    c["icp plane, huber, given normals, init"] = lambda i: ptreg.icp(
        i["scan"], i["model"], method="plane", kernel="huber", kernel_scale=0.01, lm=1e-3,
        target_normals=i["model_normals"], init=i["truth"], max_iter=20)
    for nn in NN_METHODS:
        c[f"icp nn={nn}"] = lambda i, nn=nn: ptreg.icp(i["scan"], i["model"], nn=nn, max_dist=0.1, max_iter=15)
        c[f"icp onto the shared index, nn={nn}"] = lambda i, nn=nn: ptreg.icp(i["scan"], i["index"], nn=nn,
                                                                               max_dist=0.1, max_iter=15)
    c["icp gicp onto the shared index"] = lambda i: ptreg.icp(i["scan"], i["index"], method="gicp", max_iter=15)
    c["the shared index's nearest"] = lambda i: i["index"].nearest(i["scan"])
    for precision in ("fp32", "fp16", "fp64"):
        c[f"emicp {precision}"] = lambda i, p=precision: ptreg.emicp(i["scan"][::6], i["model"][::8], precision=p,
                                                                     max_iter=30)
    c["batch"] = lambda i: ptreg.batch(i["motifs"], i["motif"], max_iter=30)
    c["batch, own targets"] = lambda i: ptreg.batch(i["motifs"], targets=[i["motif"]] * len(i["motifs"]),
                                                    translation=False, max_iter=30)
    c["normals"] = lambda i: ptreg.normals(i["model"], k=15, curvature=True)
    c["normals tangent_plane"] = lambda i: ptreg.normals(i["scan"], k=12, orientation="tangent_plane")
    c["fpfh"] = lambda i: ptreg.fpfh(i["model"], i["model_normals"], k=20)
    c["fpfh radius open3d"] = lambda i: ptreg.fpfh(i["model"], i["model_normals"], radius=0.05,
                                                   convention="open3d")
    c["pfh"] = lambda i: ptreg.pfh(i["model"][:1500], i["model_normals"][:1500], k=10)
    c["voxel_downsample"] = lambda i: ptreg.voxel_downsample(i["model"], 0.04, normals=i["model_normals"])
    c["harris3d"] = lambda i: ptreg.harris3d(i["volume"], relative=0.05, scores=True)
    c["lddmm"] = lambda i: ptreg.lddmm(i["q0"], i["q1"], sigma=0.8, steps=10, max_iter=100)
    c["warp"] = lambda i: ptreg.warp(i["q0"], np.sin(i["q0"]) * 0.1, i["q1"], sigma=0.8, steps=10)
    c["register ransac"] = lambda i: ptreg.register(i["scan"], i["model"], seed=1)
    c["register fgr"] = lambda i: ptreg.register(i["scan"], i["model"], global_="fgr", method="point", seed=2)
    c["multiway"] = lambda i: ptreg.multiway([i["model"][:2500:2], i["model"][1500::2], i["scan"][::2]], seed=3)
    c["track"] = lambda i: list(ptreg.track(i["model"], [i["scan"][::2], i["scan"][1::2]], init=i["truth"],
                                            nn="kdtree", max_iter=15))
    if device:
        c[f"icp on {device}"] = lambda i: ptreg.icp(i["scan"], i["model"], max_dist=0.1, max_iter=15, device=device)
        c[f"emicp on {device}"] = lambda i: ptreg.emicp(i["scan"][::6], i["model"][::8], max_iter=20, device=device)
        c[f"fpfh on {device}"] = lambda i: ptreg.fpfh(i["model"], i["model_normals"], k=20, device=device)
        c[f"harris3d on {device}"] = lambda i: ptreg.harris3d(i["volume"], relative=0.05, device=device)
    return c


@pytest.fixture
def library_threads():
    """2 library threads inside each call (the machine's cores): the calls'
    own workers run side by side with the other callers'. Restored after."""
    before = ptreg.get_num_threads()
    ptreg.set_num_threads(2)
    yield
    ptreg.set_num_threads(before)


def test_threads_get_the_bits_of_serial_calls(inputs, library_threads):
    """160 calls from 8 threads, every kind of call several times, half on the
    shared arrays (read by all threads at once) and half on private copies,
    while some tasks change the library's thread count (results are the same
    bits for any count). Each result must be the serial one, bit for bit, and
    the shared arrays unchanged."""
    kinds = calls(opencl_device())
    reference = {name: fn(inputs) for name, fn in kinds.items()}
    before = snapshot(inputs)

    # every kind on the shared arrays and on private copies (float32, float64), in a shuffled order
    modes = ("shared", "private", "shared", "private float64")
    tasks = [(name, modes[r % len(modes)]) for r in range(-(-CALLS // len(kinds))) for name in kinds][:CALLS]
    random.Random(33).shuffle(tasks)

    def task(k):
        name, mode = tasks[k]
        if k % 9 == 4:  # a caller changing the count while others run
            ptreg.set_num_threads(1 + k % 2)
        inp = inputs if mode == "shared" else private(inputs, as_float64=mode.endswith("float64"))
        return kinds[name](inp)

    with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
        results = list(pool.map(task, range(CALLS)))
    wrong = [f"call {k} ({tasks[k][1]}): {tasks[k][0]}: {d}"
             for k, r in enumerate(results) if (d := difference(reference[tasks[k][0]], r))]
    assert not wrong, "\n".join(wrong)
    assert snapshot(inputs) == before, "a call wrote into its input"
    assert {(name, mode) for name, mode in tasks if mode != "private float64"} == \
        {(name, mode) for name in kinds for mode in modes[:2]}


# ---- processes sharing the caches -------------------------------------------------

STRESS_THREADS = 2
STRESS_STORES = 150

# One process of the cache test: argv ROLE CLI WITH_DEVICE THREADS STORES.
# A writer ("A", "B") prints "ready", waits for "go" on stdin (the parent's
# barrier), then at once: runs `ptreg tune` (the CLI: the package's only
# writer of the tuner's cache, with `python -m ptreg tune`), stores winners of
# its own through the library's ptreg_tune_cache_store from THREADS threads
# (so many that writers overlap: an unlocked read-modify-write loses some),
# reads the cache with harris3d(tune=True), and on the CUDA device compiles a
# kernel into the kernel cache. The "reader" runs later and only reads.
# Prints one JSON line.
CHILD = r"""
import ctypes, json, subprocess, sys, threading
import numpy as np
import ptreg

role, cli, with_device = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
thread_count, store_count = int(sys.argv[4]), int(sys.argv[5])
volume = np.zeros((24, 28, 32), dtype=np.uint8)
volume[5:19, 6:22, 7:25] = 200
out = {"role": role, "errors": []}

def library():
    # the libptreg the extension loaded (none when the package links it in)
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "/libptreg.so" in line}
    return ctypes.CDLL(paths.pop()) if len(paths) == 1 else None

lib = library()
out["library"] = lib is not None
# without the library's handle the device could not be released before exit (below)
device = "cuda:0" if with_device and lib and any(d["device"] == "cuda:0" for d in ptreg.devices()) else None

def stores(t):
    space, err = ctypes.create_string_buffer(1 << 16), ctypes.create_string_buffer(4096)
    # fpfh's space from the library's kernel registry (ptreg_tune_kernel: name, then space)
    class Kernel(ctypes.Structure):
        _fields_ = [("name", ctypes.c_char_p), ("space", ctypes.CFUNCTYPE(None, ctypes.c_void_p))]
    find = lib.ptreg_tune_kernel_find
    find.restype, find.argtypes = ctypes.POINTER(Kernel), [ctypes.c_char_p]
    find(b"fpfh").contents.space(space)
    store = lib.ptreg_tune_cache_store
    store.restype = ctypes.c_int
    store.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_double),
                      ctypes.c_double, ctypes.c_double, ctypes.c_void_p]
    for i in range(store_count):
        point = (ctypes.c_double * 8)(i + 1)
        if store(space, ("concurrency test " + role).encode(), ("1e%d" % (1000 * t + i)).encode(), point,
                 float(i), float(t), err):
            out["errors"].append(err.raw[4:].split(b"\0")[0].decode())

def on_device():
    r = ptreg.harris3d(volume, relative=0.05, device=device, no_tune=True)
    out["device"] = {"device": device, "keypoints": r.keypoints.tobytes().hex(), "max_score": r.max_score}

if role == "reader":
    r = ptreg.harris3d(volume, relative=0.05, device="cpu")
    out["variant"] = r.variant
    if device:
        on_device()
else:
    print("ready", flush=True)
    sys.stdin.readline()
    kernel, size = ("harris", "16") if role == "A" else ("fpfh", "300")
    tune = subprocess.Popen([cli, "tune", "--kernel", kernel, "--size", size, "--reps", "1", "--confirm", "0",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    threads = [threading.Thread(target=stores, args=(t,)) for t in range(thread_count)] if lib else []
    if device:
        threads.append(threading.Thread(target=on_device))
    for t in threads:
        t.start()
    for _ in range(20):  # lookups while the others rewrite the file
        ptreg.harris3d(volume, relative=0.05, device="cpu")
    for t in threads:
        t.join()
    stdout, stderr = tune.communicate()
    out["tune"] = json.loads(stdout) if tune.returncode == 0 else None
    if tune.returncode:
        out["errors"].append("ptreg tune: exit %d: %s" % (tune.returncode, stderr))
if device:
    lib.ptreg_devices_release()  # the CUDA stand-in counts what is left open at exit as a violation
print(json.dumps(out))
"""


def kernel_cache_env(tmp):
    """The environment of a CUDA device for the kernel cache, or None: the
    build's CUDA driver stand-in (tests/cuda_standin: real NVRTC, kernels on
    POCL) beside the CLI, else a real CUDA device. OpenCL programs are not
    kept on disk (only CUDA's cubin and PTX are), so POCL alone is no case."""
    standin = os.path.join(os.path.dirname(os.path.abspath(CLI)), "cuda_standin")
    if all(os.path.exists(os.path.join(standin, f)) for f in ("libcuda.so.1", "libnvrtc-standin.so")):
        # as scripts/with-cuda-standin.sh, with the stand-in's records of the
        # compiled images shared too: a cached image must be one it can run
        path = os.environ.get("LD_LIBRARY_PATH")
        return {"LD_LIBRARY_PATH": standin + (os.pathsep + path if path else ""),
                "PTREG_NVRTC": os.path.join(standin, "libnvrtc-standin.so"),
                "CUDA_STANDIN_DIR": str(tmp / "standin"), "POCL_CACHE_DIR": str(tmp / "pocl")}
    if any(d["device"].startswith("cuda") and not d["standin"] for d in ptreg.devices()):
        return {}
    return None


def kernel_files(folder):
    """name -> (inode, mtime, size): a rewritten file is a new inode."""
    if not folder.is_dir():
        return {}
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.stat().st_size) for p in folder.iterdir()}


@pytest.fixture(scope="module")
def shared_caches(tmp_path_factory):
    """Two writers started together on one tuner cache and one kernel cache,
    then a reader: their reports, exit codes, stderr and the folders."""
    tmp = tmp_path_factory.mktemp("caches")
    tune_dir, kernels = tmp / "tune", tmp / "kernels"
    device_env = kernel_cache_env(tmp)
    env = dict(os.environ, PTREG_TUNE_CACHE=str(tune_dir / "tune.json"), PTREG_KERNEL_CACHE=str(kernels),
               **(device_env or {}))
    argv = [CLI, "1" if device_env is not None else "0", str(STRESS_THREADS), str(STRESS_STORES)]
    writers = [subprocess.Popen([sys.executable, "-c", CHILD, role, *argv], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
               for role in ("A", "B")]
    try:
        # the barrier: neither starts until both are ready (imports done). A
        # writer prints nothing more before "go", so readline buffers no more
        # than its line and communicate() below reads the rest from the pipe.
        ready = [w.stdout.readline() for w in writers]
        for w in writers:
            try:
                w.stdin.write("go\n")
                w.stdin.flush()
            except BrokenPipeError:  # it died before the barrier: its exit code and stderr tell why
                pass
        done = [w.communicate(timeout=300) for w in writers]
    finally:
        for w in writers:
            w.kill()
    after_writers = kernel_files(kernels)
    reader = subprocess.run([sys.executable, "-c", CHILD, "reader", *argv], capture_output=True, text=True,
                            env=env, timeout=300)
    runs = [(w.returncode, out, err) for w, (out, err) in zip(writers, done)]
    runs.append((reader.returncode, reader.stdout, reader.stderr))
    return {"ready": ready, "runs": runs, "tune_dir": tune_dir, "kernels": kernels, "device_env": device_env,
            "after_writers": after_writers, "after_reader": kernel_files(kernels)}


def reports(shared):
    """Each process's report; every process must have exited 0 with one."""
    out = []
    for rc, stdout, stderr in shared["runs"]:
        assert rc == 0, f"exit {rc}: {stderr}"
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    assert shared["ready"] == ["ready\n", "ready\n"]
    return out


def test_two_processes_share_the_tuner_cache(shared_caches):
    """Every winner each writer stored is in the cache afterwards (the
    read-modify-write is locked: none lost), the file parses, the folder holds
    the cache and its lock file only, and a later run reads the cache (no
    warning) and takes the harris winner `ptreg tune` stored."""
    a, b, reader = reports(shared_caches)
    for run in shared_caches["runs"]:
        assert "warning: the tuning cache" not in run[2], run[2]
    assert not a["errors"] and not b["errors"], a["errors"] + b["errors"]
    cache = json.loads((shared_caches["tune_dir"] / "tune.json").read_text())
    machines = cache["machines"]

    def entry(machine, kernel, size_class):
        return machines.get(machine, {}).get(kernel, {}).get(size_class)

    lost = []
    for w in (a, b):
        tuned = w["tune"]
        e = entry(tuned["machine"], tuned["kernel"], tuned["size_class"])
        params = {k: v for k, v in tuned["winner"].items() if k not in ("seconds", "rate")}
        if e is None or e["params"] != params:
            lost.append(f"{w['role']}: `ptreg tune --kernel {tuned['kernel']}`'s winner {params}: {e}")
    for w in (a, b) if a["library"] else ():
        for t in range(STRESS_THREADS):
            for i in range(STRESS_STORES):
                e = entry(f"concurrency test {w['role']}", "fpfh", f"1e{1000 * t + i}")
                if e is None or (e["params"], e["seconds"], e["default_seconds"]) != ({"threads": i + 1}, i, t):
                    lost.append(f"{w['role']} thread {t} store {i}: {e}")
    stores = 2 + (2 * STRESS_THREADS * STRESS_STORES if a["library"] else 0)
    assert not lost, f"{len(lost)} of {stores} stores lost, " + "; ".join(lost[:2] + lost[2:][-1:])
    names = sorted(p.name for p in shared_caches["tune_dir"].iterdir())
    assert names in (["tune.json"], ["tune.json", "tune.json.lock"]), names
    harris = a["tune"]
    assert reader["variant"]["source"] == "tuned", reader["variant"]
    # the winner's tiling; its thread count is not applied (the caller's count stands: tune.h)
    assert (reader["variant"]["size_class"], reader["variant"]["tile_rows"]) == \
        (harris["size_class"], harris["winner"]["tile_rows"]), reader["variant"]
    if not a["library"]:
        pytest.skip("no shared libptreg to store through: only `ptreg tune`'s two winners were checked")


def fnv1a(data):
    h = 0xcbf29ce484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def test_two_processes_share_the_kernel_cache(shared_caches):
    """Two processes compiling the same kernel at once into one kernel cache
    leave one whole file for it (header, size and checksum as
    src/device/kernel_cache.c writes them) and no temporary; a later run loads
    it (the file is not rewritten) and gets the same keypoints."""
    if shared_caches["device_env"] is None:
        pytest.skip("no CUDA device and no CUDA driver stand-in in the build: no kernel cache to share")
    runs = reports(shared_caches)
    if any("device" not in r for r in runs):
        pytest.skip("no cuda:0 in the processes (the stand-in needs POCL), or no shared libptreg to release it")
    for rc, _, stderr in shared_caches["runs"]:
        assert "VIOLATION" not in stderr, stderr
    assert runs[0]["device"] == runs[1]["device"] == runs[2]["device"]
    files = shared_caches["after_writers"]
    assert files, "nothing was written to the kernel cache"
    stray = [n for n in files if not re.fullmatch(r"[0-9a-f]{32}\.(cubin|ptx)", n)]
    assert not stray, f"left in the kernel cache: {stray}"
    for name in files:
        data = (shared_caches["kernels"] / name).read_bytes()
        magic, _, size, checksum = struct.unpack("<IIQQ", data[:24])
        assert magic == 0x4B525450 and size == len(data) - 24 and checksum == fnv1a(data[24:]), name
    assert shared_caches["after_reader"] == files  # loaded, not compiled and stored again
