#!/usr/bin/python3
"""Multiway registration: `ptreg multiway` against Open3D's multiway pipeline on the
same multi-scan sets, in one run, interleaved, the same voxel, the same threads.

Run with Debian's /usr/bin/python3 (it sees numpy and python3-open3d):

  /usr/bin/python3 bench/multiway.py [--ptreg build/ptreg] [--rounds 3] [--threads 2]
                                     [--sets bunny2,bunny-pieces,aircraft-views,blob-views]
                                     [--work /tmp/ptreg-multiway] [--seed 1]
                                     [--markdown] [--json FILE]

The ptreg program: --ptreg, else env PTREG_CLI, else build/ptreg under the repository.

Sets (made into --work, each N scan files and a truth poses file `truth.txt`: per scan
`# pose I: LABEL` and the 4x4 taking the scan into a common frame, ptreg's poses file):

  bunny2          the two real Stanford scans ../shared/data/bunny/bun000.ply and
                  bun045.ply as they are (skipped, with a message, when absent); truth
                  from bun.conf, `bmesh FILE tx ty tz qx qy qz qw` meaning
                  x_world = R(q)^T x_scan + t (the transpose; ../shared/data/README.md).
                  Metres.
  bunny-pieces    each of those two scans moved into the world frame and cut by world x
                  into 3 pieces covering 0-45 %, 30-75 % and 60-100 % of that scan's x
                  extent (consecutive pieces share 15 % of it), each piece then moved by
                  its own random rigid motion (rotation uniform in [0, 180] degrees about
                  a uniform random axis, translation uniform in [0, 0.1] m along a random
                  direction; --seed): 6 real-data scans with exact truth (the inverse of
                  the motion), binary PLY x y z float32. Order: bun000's pieces 0 1 2,
                  then bun045's 2 1 0, so that consecutive scans overlap (Open3D's
                  pipeline takes consecutive scans as odometry, certain edges). Metres.
  aircraft-views  8 scans made by `ptreg synth --shape aircraft --points 20000 --noise
  blob-views      0.002 --max-angle 180 --max-translation 0.5 --seed k`, k = 0..7, from
                  views on a circle at 30 degrees elevation (z up), radius 5, every 45
                  degrees, consecutive views neighbours; the truth (synth's --truth) takes
                  scan k onto the model frame, the common frame. Model units: errors also
                  as a fraction of the model's bounding-box diagonal (synth --model).

Methods, each on --threads threads (default 2), --rounds interleaved runs (default 3;
per round and set: ptreg, then Open3D, each a fresh process):

  ptreg   `ptreg multiway SCANS... --truth truth.txt --json --threads T`, its defaults
          (voxel = first scan's bounding-box diagonal / 80, every pair, RANSAC, ICP,
          pose graph with line process, one joint refinement), plus -o and
          --pose-graph-out in the first round (checked: both written, -o's poses equal
          to the JSON's). Time: the JSON's time_ms (clouds in memory to poses).
  Open3D  0.16, the multiway-registration tutorial's pose graph with the global-
          registration tutorial's pairwise RANSAC (www.open3d.org/docs, "Multiway
          registration", "Global registration"), with ptreg's voxel V for the set (the
          JSON's `voxel`, so both see the same scale): per scan voxel_down_sample(V),
          estimate_normals(KDTreeSearchParamHybrid(2V, 30)), compute_fpfh_feature(
          KDTreeSearchParamHybrid(5V, 100)); for every pair i < j (source i, target j)
          registration_ransac_based_on_feature_matching(mutual_filter=True, 1.5V,
          TransformationEstimationPointToPoint(False), ransac_n=3, checkers
          [EdgeLength(0.9), Distance(1.5V)], RANSACConvergenceCriteria(100000, 0.999)),
          then registration_icp point-to-plane on the downsampled clouds from RANSAC's
          result (1.5V, default ICPConvergenceCriteria: 30 iterations), information
          get_information_matrix_from_point_clouds(down_i, down_j, 1.5V, T_icp); pose
          graph as the tutorial: odometry edges (j = i + 1) certain, the node poses
          chained from them, every other pair an uncertain edge; global_optimization(
          GlobalOptimizationLevenbergMarquardt(), GlobalOptimizationConvergenceCriteria(),
          GlobalOptimizationOption(max_correspondence_distance=1.5V,
          edge_prune_threshold=0.25, reference_node=0)). o3d.utility.random.seed(1);
          OMP_NUM_THREADS = --threads. Time: perf_counter from the clouds in memory
          (read before) to the optimized poses.
  Both also get the process's wall time (reading the files and, for Open3D, starting
  Python and importing open3d included) as a second column.

Errors (the same for both, and the same definition as ptreg's --truth report, checked
against it): with truth T_i (scan i into the common frame) and a method's pose P_i
(scan i into scan 0's frame), A = T_0^-1 T_i, E = A^-1 P_i; rotation error = the angle
of E (degrees, atan2 of its skew and symmetric parts), translation error = |E's
translation| (scan units; mm where they are metres; per cent of the model's diagonal for
the synthetic sets). Scan 0 is the anchor; the counts are over the N - 1 others: within
0.5 deg and 1 mm, within 1 deg and 2 mm (synthetic sets: 0.5 % and 1 % of the diagonal
instead of 1 mm and 2 mm), lost (rotation error > 5 degrees, or ptreg's placed = false).
Errors are the first round's; "lost" gives every round's count when they differ.
The ratio is Open3D / ptreg of the median in-memory times. Under the table, per set and
method: each scan's errors, and the pair edges kept by the pose graph, how many of them
are more than 5 degrees from the truth (T_target^-1 T_source) and how many right ones
were dropped: what explains a lost scan (Open3D's odometry edges are certain, so a
wrong one between consecutive scans is never pruned; the line process drops the right
loop closures that contradict it instead).

Timings need a quiet machine: with other jobs on the two cores both tools slowed
down several times over, ptreg more than Open3D. --work is reused between runs (files
rewritten each run); give each concurrent run its own.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BUNNY = os.path.join(ROOT, "..", "shared", "data", "bunny")
ALL_SETS = ["bunny2", "bunny-pieces", "aircraft-views", "blob-views"]


# ---------------------------------------------------------------- Open3D peer

def open3d_peer(args):
    """Runs in its own process (OMP_NUM_THREADS is set before Open3D loads)."""
    import numpy as np
    import open3d as o3d

    reg = o3d.pipelines.registration
    o3d.utility.set_verbosity_level(o3d.utility.VerbosityLevel.Error)
    clouds = [o3d.io.read_point_cloud(p) for p in args.scans]
    o3d.utility.random.seed(1)
    v = args.voxel
    t0 = time.perf_counter()
    down, feats = [], []
    for c in clouds:
        d = c.voxel_down_sample(v)
        d.estimate_normals(o3d.geometry.KDTreeSearchParamHybrid(radius=2 * v, max_nn=30))
        feats.append(reg.compute_fpfh_feature(d, o3d.geometry.KDTreeSearchParamHybrid(radius=5 * v, max_nn=100)))
        down.append(d)
    checkers = [reg.CorrespondenceCheckerBasedOnEdgeLength(0.9), reg.CorrespondenceCheckerBasedOnDistance(1.5 * v)]
    graph = reg.PoseGraph()
    odometry = np.identity(4)
    graph.nodes.append(reg.PoseGraphNode(odometry))
    edges = []
    n = len(clouds)
    for i in range(n):
        for j in range(i + 1, n):
            ransac = reg.registration_ransac_based_on_feature_matching(
                down[i], down[j], feats[i], feats[j], True, 1.5 * v,
                reg.TransformationEstimationPointToPoint(False), 3, checkers,
                reg.RANSACConvergenceCriteria(100000, 0.999))
            icp = reg.registration_icp(down[i], down[j], 1.5 * v, ransac.transformation,
                                       reg.TransformationEstimationPointToPlane())
            info = reg.get_information_matrix_from_point_clouds(down[i], down[j], 1.5 * v, icp.transformation)
            odo = j == i + 1
            if odo:
                odometry = np.dot(icp.transformation, odometry)
                graph.nodes.append(reg.PoseGraphNode(np.linalg.inv(odometry)))
            graph.edges.append(reg.PoseGraphEdge(i, j, icp.transformation, info, uncertain=not odo))
            edges.append({"source": i, "target": j, "uncertain": not odo, "ransac_fitness": ransac.fitness,
                          "fitness": icp.fitness, "rmse": icp.inlier_rmse,
                          "transformation": np.asarray(icp.transformation).tolist()})
    reg.global_optimization(graph, reg.GlobalOptimizationLevenbergMarquardt(),
                            reg.GlobalOptimizationConvergenceCriteria(),
                            reg.GlobalOptimizationOption(max_correspondence_distance=1.5 * v,
                                                         edge_prune_threshold=0.25, reference_node=0))
    ms = (time.perf_counter() - t0) * 1e3
    kept = {(e.source_node_id, e.target_node_id) for e in graph.edges}
    for e in edges:
        e["kept"] = (e["source"], e["target"]) in kept
    print(json.dumps({"time_ms": ms, "voxel": v, "points": [len(d.points) for d in down],
                      "poses": [np.asarray(nd.pose).tolist() for nd in graph.nodes], "edges": edges}))


# ---------------------------------------------------------------- geometry

def rot_from_quat(qx, qy, qz, qw):
    import numpy as np

    q = np.array([qw, qx, qy, qz], dtype=float)
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def rigid_inv(T):
    import numpy as np

    T = np.asarray(T, dtype=float)
    R = T[:3, :3]
    out = np.identity(4)
    out[:3, :3] = R.T
    out[:3, 3] = -R.T @ T[:3, 3]
    return out


def pose_error(truth0, truth_i, pose_i):
    """Scan i's error against the truth, both relative to scan 0: the angle of
    E = (T0^-1 Ti)^-1 P_i in degrees (atan2 of skew and symmetric parts: well
    conditioned near 0) and |translation of E|."""
    import numpy as np

    A = rigid_inv(truth0) @ np.asarray(truth_i, dtype=float)
    E = rigid_inv(A) @ np.asarray(pose_i, dtype=float)
    D = E[:3, :3]
    skew = np.array([D[2, 1] - D[1, 2], D[0, 2] - D[2, 0], D[1, 0] - D[0, 1]]) / 2
    angle = float(np.degrees(np.arctan2(np.linalg.norm(skew), (np.trace(D) - 1) / 2)))
    return angle, float(np.linalg.norm(E[:3, 3]))


def write_poses(path, poses, labels):
    with open(path, "w") as f:
        for k, (T, label) in enumerate(zip(poses, labels)):
            f.write(f"# pose {k}: {label}\n")
            for row in T:
                f.write(" ".join(repr(float(x)) for x in row) + "\n")


def read_poses(path):
    import numpy as np

    vals = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                vals += [float(x) for x in line.split()]
    a = np.array(vals).reshape(-1, 4, 4)
    return list(a)


def write_ply(path, pts):
    import numpy as np

    pts = np.ascontiguousarray(pts, dtype="<f4")
    with open(path, "wb") as f:
        f.write(("ply\nformat binary_little_endian 1.0\ncomment ptreg bench/multiway.py\n"
                 f"element vertex {len(pts)}\nproperty float x\nproperty float y\nproperty float z\n"
                 "end_header\n").encode())
        f.write(pts.tobytes())


def read_points(path):
    import numpy as np
    import open3d as o3d

    return np.asarray(o3d.io.read_point_cloud(path).points)


def diagonal(pts):
    import numpy as np

    return float(np.linalg.norm(pts.max(0) - pts.min(0)))


# ---------------------------------------------------------------- data sets

def bunny_truth():
    """bun000 and bun045's poses in the common frame, from bun.conf."""
    import numpy as np

    truth = {}
    with open(os.path.join(BUNNY, "bun.conf")) as f:
        for line in f:
            w = line.split()
            if len(w) == 9 and w[0] == "bmesh":
                tx, ty, tz, qx, qy, qz, qw = map(float, w[2:])
                T = np.identity(4)
                T[:3, :3] = rot_from_quat(qx, qy, qz, qw).T
                T[:3, 3] = [tx, ty, tz]
                truth[w[1]] = T
    return truth


def make_bunny2(work):
    names = ["bun000.ply", "bun045.ply"]
    if not all(os.path.exists(os.path.join(BUNNY, n)) for n in names + ["bun.conf"]):
        return None, f"{BUNNY} has no bun000.ply, bun045.ply and bun.conf"
    d = os.path.join(work, "bunny2")
    os.makedirs(d, exist_ok=True)
    truth = bunny_truth()
    scans = [os.path.abspath(os.path.join(BUNNY, n)) for n in names]
    write_poses(os.path.join(d, "truth.txt"), [truth[n] for n in names], names)
    return {"name": "bunny2", "scans": scans, "truth": os.path.join(d, "truth.txt"), "metres": True,
            "diag": diagonal(read_points(scans[0]))}, None


def random_motion(rng, max_angle_deg, max_t):
    import numpy as np

    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    ang = math.radians(rng.uniform(0, max_angle_deg))
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    R = np.identity(3) + math.sin(ang) * K + (1 - math.cos(ang)) * K @ K  # Rodrigues
    t = rng.normal(size=3)
    t *= rng.uniform(0, max_t) / np.linalg.norm(t)
    M = np.identity(4)
    M[:3, :3], M[:3, 3] = R, t
    return M


def make_bunny_pieces(work, seed):
    import numpy as np

    names = ["bun000.ply", "bun045.ply"]
    if not all(os.path.exists(os.path.join(BUNNY, n)) for n in names + ["bun.conf"]):
        return None, f"{BUNNY} has no bun000.ply, bun045.ply and bun.conf"
    d = os.path.join(work, "bunny-pieces")
    os.makedirs(d, exist_ok=True)
    truth = bunny_truth()
    rng = np.random.default_rng(seed)
    ranges = [(0.0, 0.45), (0.30, 0.75), (0.60, 1.0)]
    pieces = {}
    for name in names:
        p = read_points(os.path.join(BUNNY, name))
        T = truth[name]
        world = p @ T[:3, :3].T + T[:3, 3]
        x0, x1 = world[:, 0].min(), world[:, 0].max()
        for k, (a, b) in enumerate(ranges):
            lo, hi = x0 + a * (x1 - x0), x0 + b * (x1 - x0)
            pieces[(name, k)] = world[(world[:, 0] >= lo) & (world[:, 0] <= hi)]
    order = [("bun000.ply", 0), ("bun000.ply", 1), ("bun000.ply", 2),
             ("bun045.ply", 2), ("bun045.ply", 1), ("bun045.ply", 0)]
    scans, poses, labels = [], [], []
    for idx, key in enumerate(order):
        M = random_motion(rng, 180.0, 0.1)
        moved = pieces[key] @ M[:3, :3].T + M[:3, 3]
        path = os.path.join(d, f"scan_{idx}.ply")
        write_ply(path, moved)
        scans.append(path)
        poses.append(rigid_inv(M))
        a, b = ranges[key[1]]
        labels.append(f"{key[0]} world x {a:.0%}-{b:.0%} ({len(moved)} points)")
    write_poses(os.path.join(d, "truth.txt"), poses, labels)
    return {"name": "bunny-pieces", "scans": scans, "truth": os.path.join(d, "truth.txt"), "metres": True,
            "diag": diagonal(read_points(scans[0]))}, None


def make_views(work, ptreg, shape):
    name = f"{shape}-views"
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    scans, poses, labels = [], [], []
    model = os.path.join(d, "model.ply")
    for k in range(8):
        phi = math.radians(45 * k)
        el = math.radians(30)
        view = (5 * math.cos(el) * math.cos(phi), 5 * math.cos(el) * math.sin(phi), 5 * math.sin(el))
        vs = ",".join(f"{c:.6f}" for c in view)
        scan, tr = os.path.join(d, f"scan_{k}.ply"), os.path.join(d, f"truth_{k}.txt")
        cmd = [ptreg, "synth", "--shape", shape, "-o", scan, "--truth-out", tr, "--view", vs, "--points", "20000",
               "--noise", "0.002", "--max-angle", "180", "--max-translation", "0.5", "--seed", str(k)]
        if k == 0:
            cmd += ["--model", model]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            return None, f"ptreg synth failed: {r.stderr.strip()}"
        scans.append(scan)
        poses.append(read_poses(tr)[0])
        labels.append(f"{shape} view ({vs}) seed {k}")
    write_poses(os.path.join(d, "truth.txt"), poses, labels)
    return {"name": name, "scans": scans, "truth": os.path.join(d, "truth.txt"), "metres": False,
            "diag": diagonal(read_points(model))}, None


def make_set(name, work, ptreg, seed):
    if name == "bunny2":
        return make_bunny2(work)
    if name == "bunny-pieces":
        return make_bunny_pieces(work, seed)
    if name in ("aircraft-views", "blob-views"):
        return make_views(work, ptreg, name.split("-")[0])
    raise SystemExit(f"unknown set {name}")


# ---------------------------------------------------------------- runners

def run_ptreg(args, s, check_dir=None):
    cmd = [args.ptreg, "multiway"] + s["scans"] + ["--truth", s["truth"], "--json", "--threads", str(args.threads)]
    if check_dir:
        cmd += ["-o", os.path.join(check_dir, "poses.txt"), "--pose-graph-out", os.path.join(check_dir, "graph.json")]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"ptreg multiway failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")
    j = json.loads(r.stdout)
    j["wall_s"] = wall
    return j


def run_open3d(args, s, voxel):
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    cmd = [sys.executable, os.path.abspath(__file__), "--peer-open3d", "--voxel", repr(voxel)] + s["scans"]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"Open3D peer failed ({r.returncode}):\n{r.stderr}")
    j = json.loads(r.stdout.strip().splitlines()[-1])
    j["wall_s"] = wall
    return j


def check_outputs(s, j, check_dir):
    """-o and --pose-graph-out were written; -o's poses are the JSON's."""
    import numpy as np

    notes = []
    p, g = os.path.join(check_dir, "poses.txt"), os.path.join(check_dir, "graph.json")
    if not (os.path.exists(p) and os.path.getsize(p) > 0):
        notes.append("-o not written")
    else:
        got = read_poses(p)
        want = [np.asarray(sc["pose"]) for sc in j["scans"]]
        if len(got) != len(want):
            notes.append(f"-o has {len(got)} poses, not {len(want)}")
        else:
            diff = max(float(np.abs(a - b).max()) for a, b in zip(got, want))
            if diff > 1e-6:
                notes.append(f"-o's poses differ from the JSON's by {diff:.2g}")
    if not (os.path.exists(g) and os.path.getsize(g) > 0):
        notes.append("--pose-graph-out not written")
    else:
        try:
            with open(g) as f:
                pg = json.load(f)
            if len(pg.get("nodes", [])) != len(s["scans"]):
                notes.append(f"--pose-graph-out has {len(pg.get('nodes', []))} nodes")
        except ValueError as e:
            notes.append(f"--pose-graph-out is not JSON: {e}")
    return notes


def errors(s, poses):
    truth = read_poses(s["truth"])
    return [pose_error(truth[0], truth[i], poses[i]) for i in range(len(poses))]


def edge_stats(s, edges):
    """Kept edges, kept edges more than 5 degrees from the truth (the transform taking
    scan source into scan target: T_target^-1 T_source), dropped edges within 5 degrees."""
    import numpy as np

    truth = read_poses(s["truth"])
    kept = wrong = right_pruned = 0
    for e in edges:
        if "transformation" not in e:
            continue
        want = rigid_inv(truth[e["target"]]) @ truth[e["source"]]
        ok = pose_error(np.identity(4), want, e["transformation"])[0] <= 5.0
        kept += bool(e.get("kept"))
        wrong += bool(e.get("kept")) and not ok
        right_pruned += (not e.get("kept")) and ok
    return kept, wrong, right_pruned


def summarize(s, errs, placed):
    """Counts over scans 1..N-1 (scan 0 is the anchor)."""
    unit = 1e3 if s["metres"] else 100.0 / s["diag"]  # mm, or per cent of the diagonal
    t1, t2 = (1.0, 2.0) if s["metres"] else (0.5, 1.0)
    rest = list(zip(errs, placed))[1:]
    lost = sum(1 for (a, t), ok in rest if a > 5.0 or not ok)
    return {
        "max_rot_deg": max((a for (a, t), ok in rest), default=0.0),
        "max_trans": max((t for (a, t), ok in rest), default=0.0),
        "max_trans_scaled": max((t * unit for (a, t), ok in rest), default=0.0),
        "within_1": sum(1 for (a, t), ok in rest if ok and a <= 0.5 and t * unit <= t1),
        "within_2": sum(1 for (a, t), ok in rest if ok and a <= 1.0 and t * unit <= t2),
        "lost": lost,
        "others": len(rest),
    }


# ---------------------------------------------------------------- main

def fmt_lost(lost_runs):
    return str(lost_runs[0]) if len(set(lost_runs)) == 1 else "/".join(map(str, lost_runs))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptreg", default=os.environ.get("PTREG_CLI", os.path.join(ROOT, "build", "ptreg")))
    ap.add_argument("--rounds", type=int, default=3, help="interleaved runs per tool and set (default 3)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sets", default=",".join(ALL_SETS))
    ap.add_argument("--work", default="/tmp/ptreg-multiway")
    ap.add_argument("--seed", type=int, default=1, help="bunny-pieces' motions")
    ap.add_argument("--no-ptreg", action="store_true",
                    help="Open3D alone (voxel: first scan's diagonal / 80, ptreg's default)")
    ap.add_argument("--markdown", action="store_true", help="the table in markdown")
    ap.add_argument("--json")
    ap.add_argument("--peer-open3d", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--voxel", type=float, help=argparse.SUPPRESS)
    ap.add_argument("scans", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer_open3d:
        return open3d_peer(args)
    args.ptreg = os.path.abspath(args.ptreg)
    if not os.access(args.ptreg, os.X_OK):
        raise SystemExit(f"no ptreg at {args.ptreg} (--ptreg or env PTREG_CLI)")
    use_ptreg = not args.no_ptreg
    if use_ptreg and subprocess.run([args.ptreg, "multiway", "--help"], capture_output=True).returncode != 0:
        print(f"{args.ptreg} has no multiway: Open3D alone", file=sys.stderr)
        use_ptreg = False
    unknown = [n for n in args.sets.split(",") if n not in ALL_SETS]
    if unknown:
        raise SystemExit(f"unknown set(s) {', '.join(unknown)}: choose from {', '.join(ALL_SETS)}")
    os.makedirs(args.work, exist_ok=True)

    sets = []
    for name in args.sets.split(","):
        s, why = make_set(name, args.work, args.ptreg, args.seed)
        if s is None:
            print(f"{name}: skipped: {why}", file=sys.stderr)
        else:
            sets.append(s)

    runs = {s["name"]: {"ptreg": [], "Open3D": []} for s in sets}
    notes = {s["name"]: [] for s in sets}
    for rnd in range(args.rounds):
        for s in sets:
            if use_ptreg:
                check_dir = os.path.join(args.work, s["name"], "out") if rnd == 0 else None
                if check_dir:
                    os.makedirs(check_dir, exist_ok=True)
                    for f in ("poses.txt", "graph.json"):
                        if os.path.exists(os.path.join(check_dir, f)):
                            os.remove(os.path.join(check_dir, f))
                j = run_ptreg(args, s, check_dir)
                if check_dir:
                    notes[s["name"]] += check_outputs(s, j, check_dir)
                runs[s["name"]]["ptreg"].append(j)
                voxel = j["voxel"]
            else:
                voxel = diagonal(read_points(s["scans"][0])) / 80
            s["voxel"] = voxel
            runs[s["name"]]["Open3D"].append(run_open3d(args, s, voxel))
            print(f"round {rnd + 1}/{args.rounds} {s['name']} done", file=sys.stderr)

    results = []
    for s in sets:
        row = {"set": s["name"], "scans": len(s["scans"]), "voxel": s["voxel"], "diag": s["diag"],
               "metres": s["metres"], "methods": {}}
        for method, rs in runs[s["name"]].items():
            if not rs:
                continue
            if method == "ptreg":
                poses = [[sc["pose"] for sc in r["scans"]] for r in rs]
                placed = [[sc["placed"] for sc in r["scans"]] for r in rs]
                # ptreg's own error report against ours
                own = [(sc.get("rotation_error_deg"), sc.get("translation_error")) for sc in rs[0]["scans"]]
            else:
                poses = [r["poses"] for r in rs]
                placed = [[True] * len(s["scans"]) for _ in rs]
                own = None
            errs = [errors(s, p) for p in poses]
            summ = [summarize(s, e, pl) for e, pl in zip(errs, placed)]
            m = dict(summ[0])
            m["lost_runs"] = [x["lost"] for x in summ]
            m["time_ms"] = statistics.median(r["time_ms"] for r in rs)
            m["wall_s"] = statistics.median(r["wall_s"] for r in rs)
            m["errors"] = errs[0]
            m["placed"] = placed[0]
            m["edges"] = rs[0].get("edges", [])
            m["edges_kept"], m["edges_wrong_kept"], m["edges_right_pruned"] = edge_stats(s, m["edges"])
            if own and all(a is not None for a, t in own):
                dev = max(max(abs(a - b[0]), abs(t - b[1])) for (a, t), b in zip(own, errs[0]))
                if dev > 1e-6:
                    notes[s["name"]].append(f"ptreg's own errors differ from the script's by {dev:.2g}")
            row["methods"][method] = m
        if "ptreg" in row["methods"]:
            row["ratio"] = row["methods"]["Open3D"]["time_ms"] / row["methods"]["ptreg"]["time_ms"]
            row["wall_ratio"] = row["methods"]["Open3D"]["wall_s"] / row["methods"]["ptreg"]["wall_s"]
        row["notes"] = notes[s["name"]]
        results.append(row)

    print_table(results, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": results, "threads": args.threads, "rounds": args.rounds}, f, indent=1)


def print_table(results, args):
    md = args.markdown
    title = (f"Multiway registration, {args.threads} threads, median of {args.rounds} interleaved runs "
             f"(ms: clouds in memory to poses; wall: the whole process)")
    print(("### " if md else "") + title)
    print()
    head = ["set", "scans", "method", "ms", "wall s", "O3D/ptreg", "max rot deg", "max trans", "<=0.5deg/1mm",
            "<=1deg/2mm", "lost"]
    rows = []
    for r in results:
        for method, m in r["methods"].items():
            if r["metres"]:
                mt = f"{m['max_trans']:.3g} m ({m['max_trans_scaled']:.2f} mm)"
            else:
                mt = f"{m['max_trans']:.3g} ({m['max_trans_scaled']:.2f}% diag)"
            ratio = f"{r['ratio']:.2f}x" if method == "Open3D" and "ratio" in r else ""
            rows.append([r["set"], str(r["scans"]), method, f"{m['time_ms']:.0f}", f"{m['wall_s']:.2f}", ratio,
                         f"{m['max_rot_deg']:.3f}", mt, f"{m['within_1']}/{m['others']}",
                         f"{m['within_2']}/{m['others']}", fmt_lost(m["lost_runs"])])
    if md:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" if k < 3 else "---:" for k in range(len(head))) + "|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        w = [max(len(h), *(len(row[k]) for row in rows)) if rows else len(h) for k, h in enumerate(head)]
        print("  ".join(h.ljust(w[k]) for k, h in enumerate(head)))
        for row in rows:
            print("  ".join(c.ljust(w[k]) for k, c in enumerate(row)))
    print()
    mk = "- " if md else "  "
    sub = "  - " if md else "    "
    for r in results:
        unit = "mm" if r["metres"] else "% diag"
        scale = 1e3 if r["metres"] else 100.0 / r["diag"]
        print(f"{mk}{r['set']}: voxel {r['voxel']:.5g}, " + ("first scan's" if r["metres"] else "model")
              + f" diagonal {r['diag']:.4g}"
              + (" (synthetic: translation thresholds 0.5 % / 1 % of the diagonal)" if not r["metres"] else ""))
        for method, m in r["methods"].items():
            per = ", ".join(f"{a:.2f}/{t * scale:.2f}" + ("" if ok else " (not placed)")
                            for (a, t), ok in list(zip(m["errors"], m["placed"]))[1:])
            print(f"{sub}{method}: per scan 1.. deg/{unit}: {per}; edges kept {m['edges_kept']}/{len(m['edges'])}, "
                  f"{m['edges_wrong_kept']} of them wrong (> 5 deg), {m['edges_right_pruned']} right ones dropped")
        for n in r["notes"]:
            print(f"{sub}note: {n}")
    if "ratio" in (results[0] if results else {}):
        print()
        print(mk + "Open3D / ptreg (ms): "
              + ", ".join(f"{r['set']} {r['ratio']:.2f}x" for r in results if "ratio" in r))
        print(mk + "Open3D / ptreg (wall): " + ", ".join(f"{r['set']} {r['wall_ratio']:.2f}x" for r in results
                                                      if "wall_ratio" in r))


if __name__ == "__main__":
    main()
