#!/usr/bin/python3
"""Clouds of 10^6 to 10^8 points from LiDAR-like files (issue 30): how ptreg's reading,
voxel downsampling, k-d tree and ICP scale with N, against Open3D 0.16 on the same
files, in one run, interleaved; peak memory; coordinates in UTM kept to the millimetre.

Run with Debian's /usr/bin/python3 (it sees numpy and python3-open3d):

  /usr/bin/python3 bench/scale.py [--sizes 1e6,1e7] [--rounds 3] [--steps read,voxel,tree,icp]
                                  [--workdir /tmp/ptreg-scale] [--ptreg build/ptreg] [--threads 2]
                                  [--skip-open3d] [--skip-checks] [--markdown] [--json FILE]
                                  [--voxel 1] [--max-dist 3] [--device cpu] [--seed 1]
                                  [--timeout 3600] [--mem-limit-gib G]

The ptreg program: --ptreg, else env PTREG_CLI, else build/ptreg under the repository.

Data (bench/lidar_synth.py, seeded, made once into --workdir and reused): per size N an
airborne-style scene (terrain, buildings, trees; 15 points per m^2, so a square of
side sqrt(N / 15) m at easting ~500 km, northing ~4500 km, z 130-300 m) written as
LAS 1.2 (point format 1, scale 0.001) and as binary PLY with double x y z holding the
same values; and a second scan of the scene's centred tenth (N/10 points, other
samples), moved by a known small rigid motion (its corners by 2 m, at most 3 degrees,
then 1.5 m of translation), as the ICP source. 10^8 points take 2.8 GB (LAS) + 2.4 GB
(PLY) + a tenth of that for the source, and about 5 minutes to make (10^7: 30 s); the
generator holds 5 million points at a time (0.8 GB).

Steps (--steps; per round, size and step: ptreg, then Open3D, each a fresh process,
--threads for both: ptreg's --threads and PTREG_NUM_THREADS, Open3D's OMP_NUM_THREADS):

  read   ptreg: `ptreg info FILE --json` (reads every point: bounds and centroid), the
         process's wall time. Open3D: o3d.io.read_point_cloud(PLY), in-process time.
  voxel  ptreg: `ptreg convert FILE --voxel V -o OUT.ply`, wall time (file to file; the
         input is read in pieces). Open3D: read_point_cloud + voxel_down_sample(V) +
         write_point_cloud, in-process (file to file; the voxel step alone is listed
         under the table). V (--voxel, default 1 m) leaves about N/10 points here.
  tree   ptreg: `ptreg index FILE -o T.pti --no-delaunay --json --device cpu`, its
         kdtree_ms (the build alone, in-process); where this ptreg's index refuses a cloud
         far from zero (its file keeps no origin), `ptreg icp SOURCE TARGET --max-iter 0
         --nn kdtree --json`'s build_ms instead. Open3D: KDTreeFlann(cloud), in-process.
  icp    point-to-point, 30 iterations (no early stop), max correspondence distance
         --max-dist (default 3 m), from the identity, source N/10 onto target N.
         ptreg: `ptreg icp SOURCE TARGET --method point --max-iter 30 --tol 0 --max-dist D
         --nn kdtree --device cpu --json`, its time_ms (clouds in memory to result, the
         k-d tree's build included). Open3D: registration_icp(source, target, D, I,
         TransformationEstimationPointToPoint(), ICPConvergenceCriteria(0, 0, 30)),
         in-process (it builds its KDTreeFlann inside). Errors against the truth: the
         rotation's angle and the largest distance between where the result and the truth
         put the source's bounding-box corners.

Both tools read the same double PLY. When this ptreg reads LAS, read, voxel and icp are
also run by ptreg on the LAS files (rows "ptreg LAS"); when it does not, the script says
"ptreg: LAS not supported by this build" and goes on with PLY.

Per size and step: the median time of --rounds (default 3), ns per point (time / N, the
target's N for every step), that ns/point over the smallest size's (issue 30's target:
<= 1.5x at 10^8 against 10^6), the highest peak RSS over the rounds (GNU time's %M,
/usr/bin/time: the process's ru_maxrss; Open3D's includes Python and Open3D's own, given
as "import" in the notes), Open3D / ptreg. A run killed by --timeout (default 3600 s)
or by the memory cap (--mem-limit-gib, default 90 % of MemAvailable at the start: the
process's VmRSS, polled every 50 ms), or one that crashes or raises, is reported as
"failed: WHY" and not run again at that size.

Checks (unless --skip-checks):
  memory     at the largest size: the peak RSS of `ptreg convert big.las --voxel V -o
             small.ply` (issue 30: <= 1 GiB at 10^8; the PLY's when LAS is not read), and
             of the ICP of N/10 onto N against 1.6 x (float32 bytes of both clouds + the
             tree), the tree taken as the .pti's size less its 12 N bytes of points (where
             index refuses the cloud: that of the smallest size's target moved to zero,
             per point, times N).
  precision  at the smallest size, every point compared in float64 with the values
             written (issue 30: <= 1 mm): `ptreg info`'s bounds; `ptreg convert` PLY ->
             PLY, LAS -> PLY, PLY -> LAS, LAS -> LAS (those this build can do); `ptreg icp
             SOURCE TARGET --max-iter 0 -o OUT.ply` (the source written back through the
             registration's frame).

Files are read once before the rounds, so every run finds them in the page cache.
Timings need a quiet machine; each process's own timing is preferred where it has one
(tree, icp), the wall time of the ptreg process otherwise (read, voxel: ptreg prints no
timing for info and convert), which includes starting it: the floor printed under the
table is that of `ptreg info` on a 100-point file (20 ms alone, 30-70 ms on a busy VM).
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, HERE)
import lidar_synth  # noqa: E402

ALL_STEPS = ["read", "voxel", "tree", "icp"]
GIB = 1024 ** 3
TIME = "/usr/bin/time"          # GNU time: the peak RSS of each command


# ---------------------------------------------------------------- Open3D peer

def rss_self():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def open3d_peer(args):
    """One step in its own process, so that its peak RSS is its own."""
    import numpy as np
    import open3d as o3d

    o3d.utility.set_verbosity_level(o3d.utility.VerbosityLevel.Error)
    out = {"rss_import": rss_self()}
    clk = time.perf_counter
    t0 = clk()
    clouds = [o3d.io.read_point_cloud(p) for p in args.files]
    t1 = clk()
    out["read_s"] = t1 - t0
    out["points"] = [len(c.points) for c in clouds]
    if any(n == 0 for n in out["points"]):
        raise SystemExit("Open3D read no points")
    step = args.peer_open3d
    if step == "read":
        out["time_s"] = out["read_s"]
    elif step == "voxel":
        down = clouds[0].voxel_down_sample(args.voxel)
        t2 = clk()
        if not o3d.io.write_point_cloud(args.out, down):
            raise SystemExit(f"Open3D could not write {args.out}")
        t3 = clk()
        out.update(voxel_s=t2 - t1, write_s=t3 - t2, time_s=t3 - t0, out_points=len(down.points))
    elif step == "tree":
        tree = o3d.geometry.KDTreeFlann(clouds[0])
        out["time_s"] = clk() - t1
        out["found"] = tree.search_knn_vector_3d(clouds[0].points[0], 1)[0]
    elif step == "icp":
        reg = o3d.pipelines.registration
        r = reg.registration_icp(clouds[0], clouds[1], args.max_dist, np.identity(4),
                                 reg.TransformationEstimationPointToPoint(),
                                 reg.ICPConvergenceCriteria(relative_fitness=0.0, relative_rmse=0.0,
                                                            max_iteration=30))
        out.update(time_s=clk() - t1, transformation=np.asarray(r.transformation).tolist(), fitness=r.fitness,
                   rmse=r.inlier_rmse)
    print(json.dumps(out))


# ---------------------------------------------------------------- processes

def vmrss(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 8 * GIB


def tree_rss(pid):
    """VmRSS of pid and its descendants, bytes."""
    total = 0
    todo = [pid]
    while todo:
        q = todo.pop()
        total += vmrss(q) or 0
        try:
            with open(f"/proc/{q}/task/{q}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return total


def run_child(cmd, env, timeout, mem_limit):
    """Runs cmd under GNU time in a session of its own; returns wall seconds, peak RSS
    (bytes: time's %M, the command's ru_maxrss; os.wait4's would not do, since a child
    forked or vforked from this Python starts with this process's high-water mark),
    exit code (negative: the signal), stdout, stderr and why it was killed (None unless
    it was). A watcher thread polls the session's VmRSS and the clock and kills the
    session past --mem-limit-gib or --timeout; time is waited for without reaping first
    (waitid WNOWAIT), so its process group cannot be reused while the watcher runs."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        lock = threading.Lock()
        state = {"exited": False, "killed": None}
        t0 = time.perf_counter()
        p = subprocess.Popen([TIME, "-f", "%M", "-o", tf.name] + cmd, stdout=out, stderr=err, env=env,
                             start_new_session=True)

        def watch():
            while True:
                time.sleep(0.05)
                with lock:
                    if state["exited"]:
                        return
                    why = None
                    if timeout and time.perf_counter() - t0 > timeout:
                        why = f"timeout after {timeout:g} s"
                    elif mem_limit:
                        rss = tree_rss(p.pid)
                        if rss > mem_limit:
                            why = f"RSS over the cap of {mem_limit / GIB:.1f} GiB (killed)"
                    if why:
                        state["killed"] = why
                        os.killpg(p.pid, 9)
                        return

        th = threading.Thread(target=watch, daemon=True)
        th.start()
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
        wall = time.perf_counter() - t0
        with lock:
            state["exited"] = True
        p.wait()
        th.join()
        lines = tf.read().split()
        rc = p.returncode
        text = " ".join(lines)
        if "signal" in text:
            rc = -int(lines[lines.index("signal") + 1])
        out.seek(0)
        err.seek(0)
        return {"wall_s": wall, "rss": int(lines[-1]) * 1024 if lines and lines[-1].isdigit() else 0, "rc": rc,
                "stdout": out.read().decode(errors="replace"), "stderr": err.read().decode(errors="replace"),
                "killed": state["killed"]}


def why_failed(r):
    if r["killed"]:
        return r["killed"]
    if r["rc"] < 0:
        sig = -r["rc"]
        name = {9: "SIGKILL (out of memory?)", 11: "SIGSEGV", 6: "SIGABRT", 7: "SIGBUS"}.get(sig, f"signal {sig}")
        return f"killed by {name}"
    last = [ln for ln in r["stderr"].strip().splitlines() if ln.strip()]
    return f"exit {r['rc']}" + (f": {last[-1][:160]}" if last else "")


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    return json.loads(text)


# ---------------------------------------------------------------- files

def ply_points(path):
    """A binary little-endian PLY's vertices as a read-only memmap (x, y, z fields)."""
    import numpy as np

    types = {"char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1", "short": "<i2", "int16": "<i2",
             "ushort": "<u2", "uint16": "<u2", "int": "<i4", "int32": "<i4", "uint": "<u4", "uint32": "<u4",
             "float": "<f4", "float32": "<f4", "double": "<f8", "float64": "<f8"}
    with open(path, "rb") as f:
        head = b""
        while not head.endswith(b"end_header\n"):
            line = f.readline()
            if not line:
                raise ValueError(f"{path}: no end_header")
            head += line
    lines = head.decode("ascii", "replace").splitlines()
    if "format binary_little_endian 1.0" not in lines:
        raise ValueError(f"{path}: not binary little-endian")
    count, fields, first = None, [], True
    for ln in lines:
        w = ln.split()
        if w[:1] == ["element"]:
            if count is not None:
                break
            if w[1] != "vertex" or not first:
                raise ValueError(f"{path}: vertex is not the first element")
            count = int(w[2])
        elif w[:1] == ["property"] and count is not None:
            if w[1] == "list":
                raise ValueError(f"{path}: list property in vertex")
            fields.append((w[2], types[w[1]]))
    return np.memmap(path, dtype=np.dtype(fields), mode="r", offset=len(head), shape=(count,))


def ply_count(path):
    with open(path, "rb") as f:
        for _ in range(50):
            w = f.readline().split()
            if w[:2] == [b"element", b"vertex"]:
                return int(w[2])
    return None


def las_points(path):
    """A LAS file's scaled coordinates, lazily: (count, function(a, b) -> float64 (b-a) x 3)."""
    import struct

    import numpy as np

    with open(path, "rb") as f:
        head = f.read(375)
    if head[:4] != b"LASF":
        raise ValueError(f"{path}: not LAS")
    minor = head[25]
    offset_points, = struct.unpack_from("<I", head, 96)
    reclen, = struct.unpack_from("<H", head, 105)
    count, = struct.unpack_from("<I", head, 107)
    if minor >= 4 and count == 0:
        count, = struct.unpack_from("<Q", head, 247)
    scale = np.array(struct.unpack_from("<3d", head, 131))
    off = np.array(struct.unpack_from("<3d", head, 155))
    raw = np.memmap(path, dtype=np.uint8, mode="r", offset=offset_points, shape=(count, reclen))

    def get(a, b):
        q = np.ascontiguousarray(raw[a:b, :12]).view("<i4").reshape(-1, 3)
        return q * scale + off

    return count, get


def xyz_reader(path):
    import numpy as np

    if path.endswith(".las"):
        return las_points(path)
    pts = ply_points(path)

    def get(a, b):
        s = pts[a:b]
        return np.stack([s["x"], s["y"], s["z"]], axis=1).astype(np.float64)

    return len(pts), get


def max_error(path, want_path, step=5_000_000):
    """The largest coordinate difference (m) between two clouds point by point."""
    n, got = xyz_reader(path)
    m, want = xyz_reader(want_path)
    if n != m:
        return None, f"{n} points, not {m}"
    worst = 0.0
    for a in range(0, n, step):
        b = min(n, a + step)
        worst = max(worst, float(abs(got(a, b) - want(a, b)).max()))
    return worst, f"{n} points"


def warm(paths):
    buf = bytearray(16 << 20)
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while f.readinto(buf):
                pass


# ---------------------------------------------------------------- geometry

def icp_errors(T, truth, lo, hi):
    """Rotation angle (deg) of T against the truth, and the largest distance (m) between
    where T and the truth put the corners of the box [lo, hi]."""
    import numpy as np

    T, truth = np.asarray(T, float), np.asarray(truth, float)
    D = truth[:3, :3].T @ T[:3, :3]
    skew = np.array([D[2, 1] - D[1, 2], D[0, 2] - D[2, 0], D[1, 0] - D[0, 1]]) / 2
    deg = math.degrees(math.atan2(np.linalg.norm(skew), (np.trace(D) - 1) / 2))
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    c = corners.mean(0)          # subtract the centre first: the translations are ~1e6 m
    a = (corners - c) @ T[:3, :3].T + (T[:3, :3] @ c + T[:3, 3])
    b = (corners - c) @ truth[:3, :3].T + (truth[:3, :3] @ c + truth[:3, 3])
    return deg, float(np.linalg.norm(a - b, axis=1).max())


# ---------------------------------------------------------------- runs

class Bench:
    def __init__(self, args):
        self.a = args
        self.env_ptreg = dict(os.environ, PTREG_NUM_THREADS=str(args.threads))
        self.env_o3d = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
        self.failed = {}         # (tool, step, n) -> reason: not run again
        self.runs = {}           # (tool, step, n) -> [result dicts]
        self.out = os.path.join(args.workdir, "out")
        os.makedirs(self.out, exist_ok=True)

    def record(self, key, res):
        self.runs.setdefault(key, []).append(res)
        if "failed" in res:
            self.failed[key] = res["failed"]

    def ptreg(self, key, cmd, parse):
        if key in self.failed:
            return
        r = run_child([self.a.ptreg] + cmd, self.env_ptreg, self.a.timeout, self.mem_limit)
        res = {"wall_s": r["wall_s"], "rss": r["rss"], "cmd": "ptreg " + " ".join(cmd)}
        if r["rc"] != 0 or r["killed"]:
            res["failed"] = why_failed(r)
        else:
            try:
                res.update(parse(r))
            except (ValueError, KeyError) as e:
                res["failed"] = f"unreadable output: {e}"
        self.record(key, res)

    def open3d(self, key, files, extra=()):
        if key in self.failed:
            return
        cmd = [sys.executable, os.path.abspath(__file__), "--peer-open3d", key[1], "--voxel", repr(self.a.voxel),
               "--max-dist", repr(self.a.max_dist)] + list(extra) + ["--files"] + files
        r = run_child(cmd, self.env_o3d, self.a.timeout, self.mem_limit)
        res = {"wall_s": r["wall_s"], "rss": r["rss"]}
        if r["rc"] != 0 or r["killed"]:
            res["failed"] = why_failed(r)
        else:
            try:
                res.update(last_json(r["stdout"]))
            except ValueError as e:
                res["failed"] = f"unreadable output: {e}"
        self.record(key, res)

    def step(self, step, n, scene):
        a, p = self.a, scene["paths"]
        fmts = [("ply", p["target_ply"], p["source_ply"])]
        if self.las_read:
            fmts.append(("las", p["target_las"], p["source_las"]))
        for fmt, tgt, src in fmts:
            tool = "ptreg" if fmt == "ply" else "ptreg LAS"
            if step == "read":
                def parse(r):
                    j = json.loads(r["stdout"])
                    if j["points"] != n:
                        raise ValueError(f"{j['points']} points, not {n}")
                    return {"time_s": r["wall_s"]}
                self.ptreg((tool, step, n), ["info", tgt, "--json"], parse)
            elif step == "voxel":
                out = os.path.join(self.out, f"voxel-{fmt}.ply")

                def parse(r, out=out):
                    return {"time_s": r["wall_s"], "out_points": ply_count(out)}
                self.ptreg((tool, step, n), ["convert", tgt, "--voxel", repr(a.voxel), "-o", out], parse)
            elif step == "tree" and fmt == "ply" and self.tree_by_index:
                pti = os.path.join(self.out, "tree.pti")

                def parse(r, pti=pti):
                    j = json.loads(r["stdout"])
                    os.remove(pti)
                    return {"time_s": j["kdtree_ms"] / 1e3, "file_bytes": j["file_bytes"]}
                self.ptreg((tool, step, n), ["index", tgt, "-o", pti, "--no-delaunay", "--json", "--quiet",
                                             "--threads", str(a.threads), "--device", a.device], parse)
            elif step == "tree" and fmt == "ply":
                def parse(r):
                    return {"time_s": json.loads(r["stdout"])["build_ms"] / 1e3}
                self.ptreg((tool, step, n), ["icp", src, tgt, "--max-iter", "0", "--nn", "kdtree", "--json", "--quiet",
                                             "--threads", str(a.threads), "--device", a.device], parse)
            elif step == "icp":
                def parse(r):
                    j = json.loads(r["stdout"])
                    return {"time_s": j["time_ms"] / 1e3, "build_s": j.get("build_ms", 0) / 1e3,
                            "transformation": j["transformation"], "rmse": j["rmse"], "fitness": j["fitness"],
                            "iterations": j["iterations"]}
                self.ptreg((tool, step, n), ["icp", src, tgt, "--method", "point", "--max-iter", "30", "--tol", "0",
                                             "--max-dist", repr(a.max_dist), "--nn", "kdtree", "--json", "--quiet",
                                             "--threads", str(a.threads), "--device", a.device], parse)
        if a.skip_open3d:
            return
        key = ("Open3D", step, n)
        if step == "icp":
            self.open3d(key, [p["source_ply"], p["target_ply"]])
        elif step == "voxel":
            self.open3d(key, [p["target_ply"]], ["--out", os.path.join(self.out, "voxel-open3d.ply")])
        else:
            self.open3d(key, [p["target_ply"]])


def probe(ptreg, cmd):
    r = subprocess.run([ptreg] + cmd, capture_output=True, text=True)
    return r.returncode == 0, (r.stderr.strip().splitlines() or [""])[-1]


def precision_checks(b, scene):
    """Every point of ptreg's outputs against the values written, in float64."""
    import numpy as np

    p, d = scene["paths"], os.path.join(b.a.workdir, "out")
    lines = []

    def ok(err):
        return "ok" if err is not None and err <= 1e-3 else "FAIL"

    t = scene["target"]
    for label, path in [("PLY", p["target_ply"])] + ([("LAS", p["target_las"])] if b.las_read else []):
        r = subprocess.run([b.a.ptreg, "info", path, "--json"], capture_output=True, text=True)
        if r.returncode != 0:
            lines.append(f"`ptreg info` ({label}): failed: {r.stderr.strip()[-160:]}")
            continue
        j = json.loads(r.stdout)
        err = max(float(np.abs(np.array(j[k]) - t[k]).max()) for k in ("min", "max"))
        lines.append(f"`ptreg info` ({label}) bounds: max error {err * 1e3:.4f} mm, {ok(err)}")
    cases = [("PLY -> PLY", p["target_ply"], "rt-ply.ply")]
    if b.las_read:
        cases.append(("LAS -> PLY", p["target_las"], "rt-las.ply"))
    if b.las_write:
        cases.append(("PLY -> LAS", p["target_ply"], "rt-ply.las"))
        if b.las_read:
            cases.append(("LAS -> LAS", p["target_las"], "rt-las.las"))
    for label, src, name in cases:
        out = os.path.join(d, name)
        r = subprocess.run([b.a.ptreg, "convert", src, "-o", out], capture_output=True, text=True)
        if r.returncode != 0:
            lines.append(f"`ptreg convert` {label}: failed: {r.stderr.strip()[-160:]}")
            continue
        err, what = max_error(out, p["target_ply"])
        lines.append(f"`ptreg convert` {label}: " + (f"max error {err * 1e3:.4f} mm over {what}, {ok(err)}"
                                                      if err is not None else f"FAIL: {what}"))
        os.remove(out)
    icps = [("PLY", p["source_ply"], p["target_ply"])]
    if b.las_read:
        icps.append(("LAS", p["source_las"], p["target_las"]))
    for label, src, tgt in icps:
        out = os.path.join(d, "icp0.ply")
        r = subprocess.run([b.a.ptreg, "icp", src, tgt, "--max-iter", "0", "-o", out, "--quiet"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            lines.append(f"`ptreg icp --max-iter 0 -o` ({label}): failed: {r.stderr.strip()[-160:]}")
            continue
        err, what = max_error(out, p["source_ply"])
        lines.append(f"`ptreg icp --max-iter 0 -o` ({label}) source written back: "
                     + (f"max error {err * 1e3:.4f} mm over {what}, {ok(err)}" if err is not None else f"FAIL: {what}"))
        os.remove(out)
    return lines


# ---------------------------------------------------------------- report

def fmt_n(n):
    e = int(round(math.log10(n)))
    return f"10^{e}" if 10 ** e == n else f"{n:.3g}"


def fmt_s(s):
    return f"{s:.3f}" if s < 10 else f"{s:.1f}"


def fmt_gib(b):
    return f"{b / GIB:.2f} GiB" if b >= GIB / 2 else f"{b / 2**20:.0f} MiB"


def summarize(runs):
    ok = [r for r in runs if "failed" not in r]
    bad = [r for r in runs if "failed" in r]
    if not ok:
        return {"failed": bad[0]["failed"] if bad else "not run"}
    s = {"time_s": statistics.median(r["time_s"] for r in ok), "rss": max(r["rss"] for r in runs),
         "runs": len(ok), "first": ok[0]}
    if bad:
        s["note"] = f"{len(bad)}/{len(runs)} failed: {bad[0]['failed']}"
    return s


def report(b, sizes, steps, scenes, checks):
    a = b.a
    md = a.markdown
    tools = ["ptreg"] + (["ptreg LAS"] if b.las_read else []) + ([] if a.skip_open3d else ["Open3D"])
    summ = {k: summarize(v) for k, v in b.runs.items()}
    smallest = min(sizes)
    title = (f"Scaling with N (issue 30): {a.threads} threads, median of {a.rounds} interleaved rounds; "
             "ns/pt = time / N (the target's N); xN0 = ns/pt over that at "
             f"{fmt_n(smallest)}; RSS = the highest peak of the process")
    print(("### " if md else "") + title)
    print()
    head = ["step", "N", "tool", "time s", "ns/pt", f"x{fmt_n(smallest)}", "peak RSS", "Open3D/ptreg", "notes"]
    rows = []
    for step in steps:
        for n in sizes:
            for tool in tools:
                s = summ.get((tool, step, n))
                if s is None:
                    continue
                if "failed" in s:
                    rows.append([step, fmt_n(n), tool, f"failed: {s['failed']}", "", "", "", "", ""])
                    continue
                base = summ.get((tool, step, smallest), {})
                nsp = s["time_s"] / n * 1e9
                xn0 = f"{nsp / (base['time_s'] / smallest * 1e9):.2f}x" if "time_s" in base else ""
                ratio = ""
                pt = summ.get(("ptreg", step, n), {})
                if tool == "Open3D" and "time_s" in pt:
                    ratio = f"{s['time_s'] / pt['time_s']:.2f}x"
                notes = []
                f = s["first"]
                if step == "voxel" and "out_points" in f:
                    notes.append(f"{f['out_points']} out")
                if step == "voxel" and tool == "Open3D":
                    notes.append(f"voxel alone {fmt_s(f['voxel_s'])} s")
                if step == "icp" and "transformation" in f:
                    sc = scenes[n]
                    deg, dist = icp_errors(f["transformation"], sc["motion"]["truth"], sc["source"]["min"],
                                           sc["source"]["max"])
                    notes.append(f"err {deg:.3f} deg / {dist:.3f} m")
                    if "build_s" in f:
                        notes.append(f"tree {fmt_s(f['build_s'])} s")
                if tool == "Open3D":
                    notes.append(f"import {fmt_gib(f['rss_import'])}")
                if "note" in s:
                    notes.append(s["note"])
                rows.append([step, fmt_n(n), tool, fmt_s(s["time_s"]), f"{nsp:.1f}", xn0, fmt_gib(s["rss"]), ratio,
                             "; ".join(notes)])
    if md:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" if k < 3 or k == len(head) - 1 else "---:" for k in range(len(head))) + "|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        w = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h) for k, h in enumerate(head)]
        print("  ".join(h.ljust(w[k]) for k, h in enumerate(head)).rstrip())
        for r in rows:
            print("  ".join(c.ljust(w[k]) for k, c in enumerate(r)).rstrip())
    print()
    mk = "- " if md else "  "
    tree = "kdtree_ms of `ptreg index`" if b.tree_by_index else \
        "build_ms of `ptreg icp --max-iter 0` (this ptreg's index refuses clouds far from zero)"
    print(f"{mk}time: read and voxel, the ptreg process's wall time (info and convert print no timing) and "
          f"Open3D's in-process file to memory / file to file; tree, {tree} and Open3D's "
          "KDTreeFlann; icp, `ptreg icp`'s time_ms and Open3D's registration_icp (both with the tree's "
          "build, without reading).")
    print(f"{mk}voxel {a.voxel:g} m, ICP max distance {a.max_dist:g} m; ICP err = rotation error and the largest "
          "distance at the source's bounding-box corners between the result and the truth; source motion "
          + ", ".join(f"{fmt_n(n)}: {scenes[n]['motion']['rotation_deg']:.2f} deg" for n in sizes)
          + " + (1.2, -0.9, 0.35) m.")
    for line in checks:
        print(mk + line)


def tree_bytes_per_point(b, scene):
    """The .pti's bytes less its points, per point, of the scene's target moved to zero
    (float32; `ptreg index` may refuse a cloud far from zero): an estimate of the tree's
    size where the tree step could not give it at the largest size."""
    import numpy as np

    pts = ply_points(scene["paths"]["target_ply"])
    n = len(pts)
    xyz = np.stack([pts["x"], pts["y"], pts["z"]], axis=1)
    xyz -= xyz.min(0)
    path, pti = os.path.join(b.out, "local.ply"), os.path.join(b.out, "local.pti")
    lidar_synth.write_ply_f32(path, xyz)
    r = subprocess.run([b.a.ptreg, "index", path, "-o", pti, "--no-delaunay", "--json", "--quiet",
                        "--device", b.a.device], capture_output=True, text=True)
    for f in (path, pti):
        if os.path.exists(f):
            os.remove(f)
    if r.returncode != 0:
        return None
    return (json.loads(r.stdout)["file_bytes"] - 12 * n) / n


def memory_checks(b, sizes, scenes):
    n = max(sizes)
    lines = []
    s = b.runs.get(("ptreg LAS" if b.las_read else "ptreg", "voxel", n))
    if s:
        ok = [r for r in s if "failed" not in r]
        src = "LAS" if b.las_read else "PLY (this build reads no LAS)"
        if ok:
            rss = max(r["rss"] for r in ok)
            verdict = (", target <= 1 GiB: " + ("ok" if rss <= GIB else "FAIL")) if n >= 10 ** 8 else \
                " (issue 30's target, <= 1 GiB, is at 10^8)"
            lines.append(f"memory: `ptreg convert` {src} --voxel at {fmt_n(n)}: peak RSS {fmt_gib(rss)}{verdict}")
        else:
            lines.append(f"memory: `ptreg convert` {src} --voxel at {fmt_n(n)}: failed: {s[0]['failed']}")
    tree = [r for r in b.runs.get(("ptreg", "tree", n), []) if "failed" not in r]
    for tool in (["ptreg LAS"] if b.las_read else []) + ["ptreg"]:
        s = [r for r in b.runs.get((tool, "icp", n), []) if "failed" not in r]
        if not s:
            continue
        rss = max(r["rss"] for r in s)
        clouds = 12 * (n + n // 10)
        how = "the .pti less its points"
        if tree and "file_bytes" in tree[0]:
            tree_b = max(0, tree[0]["file_bytes"] - 12 * n)
        else:
            per = tree_bytes_per_point(b, scenes[min(sizes)])
            tree_b = None if per is None else per * n
            how = f"estimated: {fmt_n(min(sizes))}'s .pti, moved to zero, less its points, x N"
        if tree_b is None:
            lines.append(f"memory: ICP {fmt_n(n // 10)} onto {fmt_n(n)} ({tool}): peak RSS {fmt_gib(rss)}, "
                         f"clouds {fmt_gib(clouds)} as float32 (no tree size: run the tree step too)")
        else:
            budget = 1.6 * (clouds + tree_b)
            lines.append(f"memory: ICP {fmt_n(n // 10)} onto {fmt_n(n)} ({tool}): peak RSS {fmt_gib(rss)} = "
                         f"{rss / (clouds + tree_b):.2f} x (clouds as float32 {fmt_gib(clouds)} + tree "
                         f"{fmt_gib(tree_b)}, {how}); target <= 1.6 x = {fmt_gib(budget)}: "
                         + ("ok" if rss <= budget else "FAIL"))
    return lines


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptreg", default=os.environ.get("PTREG_CLI", os.path.join(ROOT, "build", "ptreg")))
    ap.add_argument("--sizes", default="1e6,1e7", help="target points per size, e.g. 1e6,1e7,1e8")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved runs per tool, size and step (default 3)")
    ap.add_argument("--steps", default=",".join(ALL_STEPS))
    ap.add_argument("--workdir", default="/tmp/ptreg-scale", help="the clouds (kept and reused) and outputs")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="ptreg index and icp's --device (default cpu, as Open3D's)")
    ap.add_argument("--voxel", type=float, default=1.0, help="voxel side, m (default 1: about N/10 out)")
    ap.add_argument("--max-dist", type=float, default=3.0, help="ICP max correspondence distance, m (default 3)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="per process, s (default 3600)")
    ap.add_argument("--mem-limit-gib", type=float, help="kill a process past this RSS (default 90%% of MemAvailable)")
    ap.add_argument("--skip-open3d", action="store_true")
    ap.add_argument("--skip-checks", action="store_true", help="no memory and precision checks")
    ap.add_argument("--markdown", action="store_true", help="the table in markdown")
    ap.add_argument("--json", help="write every run's numbers to this file")
    ap.add_argument("--peer-open3d", choices=ALL_STEPS, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--files", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer_open3d:
        return open3d_peer(args)

    args.ptreg = os.path.abspath(args.ptreg)
    if not os.access(TIME, os.X_OK):
        raise SystemExit(f"no GNU time at {TIME} (apt-get install time): it gives each process's peak RSS")
    if not os.access(args.ptreg, os.X_OK):
        raise SystemExit(f"no ptreg at {args.ptreg} (--ptreg or env PTREG_CLI)")
    sizes = sorted({int(float(s)) for s in args.sizes.split(",") if s.strip()})
    if not sizes or sizes[0] < 1000:
        raise SystemExit("--sizes: at least 1000 points each")
    steps = [s for s in args.steps.split(",") if s]
    unknown = [s for s in steps if s not in ALL_STEPS]
    if unknown:
        raise SystemExit(f"unknown step(s) {', '.join(unknown)}: choose from {', '.join(ALL_STEPS)}")
    os.makedirs(args.workdir, exist_ok=True)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    scenes = {}
    for n in sizes:
        t0 = time.perf_counter()
        scenes[n] = lidar_synth.make_scene(n, args.seed, args.workdir, log=log)
        log(f"{fmt_n(n)}: files ready in {scenes[n]['paths']['dir']} ({time.perf_counter() - t0:.1f} s)")

    b = Bench(args)
    b.mem_limit = (args.mem_limit_gib * GIB) if args.mem_limit_gib else 0.9 * mem_available()
    small = scenes[sizes[0]]["paths"]
    b.las_read, why = probe(args.ptreg, ["info", small["source_las"], "--json"])
    if not b.las_read:
        print(f"ptreg: LAS not supported by this build ({why}); going on with PLY", file=sys.stderr)
    b.las_write, why_w = probe(args.ptreg, ["convert", small["source_ply"], "-o",
                                            os.path.join(b.out, "probe.las")])
    if not b.las_write:
        log(f"ptreg: LAS not written by this build ({why_w})")
    elif os.path.exists(os.path.join(b.out, "probe.las")):
        os.remove(os.path.join(b.out, "probe.las"))

    tiny = os.path.join(b.out, "tiny.ply")
    lidar_synth.write_tiny_ply(tiny)
    floor = run_child([args.ptreg, "info", tiny, "--json"], b.env_ptreg, 60, 0)
    b.floor = (floor["wall_s"], floor["rss"])
    pti = os.path.join(b.out, "probe.pti")
    b.tree_by_index, why_i = probe(args.ptreg, ["index", small["source_ply"], "-o", pti, "--no-delaunay", "--quiet",
                                                "--device", args.device])
    if not b.tree_by_index:
        log(f"ptreg index refuses these clouds ({why_i}): the tree step times `ptreg icp --max-iter 0`'s build_ms")
    elif os.path.exists(pti):
        os.remove(pti)
    warm([f for n in sizes for k, f in scenes[n]["paths"].items() if k not in ("dir", "truth")])
    for rnd in range(args.rounds):
        for n in sizes:
            for step in steps:
                t0 = time.perf_counter()
                b.step(step, n, scenes[n])
                log(f"round {rnd + 1}/{args.rounds} {fmt_n(n)} {step}: {time.perf_counter() - t0:.1f} s")

    checks = []
    checks.append(f"ptreg's floor (`ptreg info` on a 100-point file): {b.floor[0] * 1e3:.0f} ms, "
                  f"peak RSS {fmt_gib(b.floor[1])}")
    if not b.las_read:
        checks.append("ptreg: LAS not supported by this build: every ptreg row reads the double PLY")
    if not args.skip_checks:
        checks += memory_checks(b, sizes, scenes)
        checks += [f"precision at {fmt_n(sizes[0])}: {line}" for line in precision_checks(b, scenes[sizes[0]])]
    report(b, sizes, steps, scenes, checks)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"sizes": sizes, "steps": steps, "threads": args.threads, "rounds": args.rounds,
                       "voxel": args.voxel, "max_dist": args.max_dist, "las_read": b.las_read,
                       "las_write": b.las_write, "checks": checks,
                       "runs": [{"tool": k[0], "step": k[1], "n": k[2], "runs": v} for k, v in b.runs.items()]},
                      f, indent=1)


if __name__ == "__main__":
    main()
