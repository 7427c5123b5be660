#!/usr/bin/python3
"""Multiway registration: ptreg multiway against Open3D's multiway pipeline on the
same scan sets, side by side, in one run.

Run with Debian's /usr/bin/python3 (it sees python3-open3d and numpy):

  /usr/bin/python3 bench/multiway.py [--ptreg build/ptreg] [--runs 3] [--threads 2]
                                     [--sets bunny2,bunny-pieces,aircraft-views,blob-views]
                                     [--work DIR] [--markdown] [--json FILE]

The sets (made into --work, default /tmp/ptreg-multiway; each is scans and a truth file
of 4x4 poses, ptreg's poses-file layout, taking each scan into a common frame):
- bunny2: the two Stanford range scans of ../shared/data/bunny, truth from bun.conf
  (x_world = R(q)^T x_scan + t), metres;
- bunny-pieces: each of those scans cut into three overlapping slabs along the world's x
  (0-45%, 30-75%, 60-100% of the extent), each slab moved by its own random rigid motion
  (seeded: any rotation, up to 0.1 m): six real scans with an exact truth, metres;
- aircraft-views, blob-views: eight scans of ptreg's built-in shapes (ptreg synth) from
  views every 45 degrees around them at 30 degrees of elevation, each turned anywhere
  (--max-angle 180, --max-translation 0.5), 20,000 points, noise 0.002; model units.

Both tools run with ptreg's voxel (the first scan's bounding-box diagonal / 80; ptreg
reports it) on --threads threads (OMP_NUM_THREADS for Open3D). Open3D's pipeline is its
multiway tutorial with global registration per pair, as the issue measured it: each scan
voxel-downsampled, normals (hybrid 2V, 30), FPFH (hybrid 5V, 100); for every pair i < j,
RANSAC over mutual feature matches (1.5V, point-to-point, ransac_n 3, edge-length 0.9
and distance 1.5V checkers, 100000 iterations / 0.999 confidence, random seed 1), then
point-to-plane ICP on the downsampled scans from RANSAC's result (1.5V) and the
information matrix; consecutive scans are odometry (certain), the other pairs loop
closures; global_optimization by Levenberg-Marquardt with the line process
(max_correspondence_distance 1.5V, edge_prune_threshold 0.25, reference node 0).

Each scan's error: the rotation angle and the translation of A^-1 B, A the truth relative
to scan 0 (truth_0^-1 truth_i), B the pose the tool gives scan i in scan 0's frame. A scan
is lost beyond 5 degrees, or where ptreg says it placed no kept edge on it. Translations
are in mm for the bunny sets; for the model-unit sets in "mm-eq", the translation as the
same share of the first scan's diagonal as a millimetre is of the bunny's 0.2 m, so that
the issue's 1 mm and 2 mm mean the same accuracy. Times: from the
scans in memory to the poses (ptreg's time_ms; Open3D timed around its pipeline in
Python), the median of --runs runs, the tools interleaved; the ratio is Open3D's over
ptreg's.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BUNNY = os.path.join(ROOT, "..", "shared", "data", "bunny")
SETS = ("bunny2", "bunny-pieces", "aircraft-views", "blob-views")


# ---- the sets ---------------------------------------------------------------------

def quat_matrix(x, y, z, w):
    import numpy as np
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def bunny_truth():
    import numpy as np
    poses = {}
    for line in open(os.path.join(BUNNY, "bun.conf")):
        f = line.split()
        if len(f) == 9 and f[0] == "bmesh":
            T = np.eye(4)
            T[:3, :3] = quat_matrix(*map(float, f[5:9])).T
            T[:3, 3] = list(map(float, f[2:5]))
            poses[f[1]] = T
    return poses


def write_poses(path, poses, labels):
    with open(path, "w") as f:
        for i, (T, label) in enumerate(zip(poses, labels)):
            f.write(f"# pose {i}: {label}\n")
            for r in range(4):
                f.write(" ".join(repr(float(v)) for v in T[r]) + "\n")


def read_poses(path):
    import numpy as np
    rows = [list(map(float, l.split())) for l in open(path) if l.strip() and not l.startswith("#")]
    return [np.array(rows[4 * i:4 * i + 4]) for i in range(len(rows) // 4)]


def write_ply(path, xyz):
    import numpy as np
    xyz = np.ascontiguousarray(xyz, dtype="<f4")
    with open(path, "wb") as f:
        f.write(f"ply\nformat binary_little_endian 1.0\nelement vertex {len(xyz)}\n"
                "property float x\nproperty float y\nproperty float z\nend_header\n".encode())
        f.write(xyz.tobytes())


def random_motion(rng):
    import numpy as np
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    T = np.eye(4)
    T[:3, :3] = quat_matrix(*q)
    T[:3, 3] = rng.uniform(-0.1, 0.1, size=3)
    return T


def make_bunny(work, pieces):
    import numpy as np
    import open3d as o3d
    if not os.path.exists(os.path.join(BUNNY, "bun.conf")):
        return None
    truth = bunny_truth()
    names = ["bun000.ply", "bun045.ply"]
    d = os.path.join(work, "bunny-pieces" if pieces else "bunny2")
    os.makedirs(d, exist_ok=True)
    if not pieces:
        scans = [os.path.join(BUNNY, n) for n in names]
        write_poses(os.path.join(d, "truth.txt"), [truth[n] for n in names], names)
        return scans, os.path.join(d, "truth.txt")
    rng = np.random.default_rng(7)
    scans, poses, labels = [], [], []
    for n in names:
        xyz = np.asarray(o3d.io.read_point_cloud(os.path.join(BUNNY, n)).points)
        world = xyz @ truth[n][:3, :3].T + truth[n][:3, 3]
        lo, hi = world[:, 0].min(), world[:, 0].max()
        for k, (a, b) in enumerate(((0.0, 0.45), (0.30, 0.75), (0.60, 1.0))):
            keep = (world[:, 0] >= lo + a * (hi - lo)) & (world[:, 0] <= lo + b * (hi - lo))
            M = random_motion(rng)
            path = os.path.join(d, f"{n[:-4]}_{k}.ply")
            write_ply(path, xyz[keep] @ M[:3, :3].T + M[:3, 3])
            scans.append(path)
            poses.append(truth[n] @ np.linalg.inv(M))
            labels.append(os.path.basename(path))
    write_poses(os.path.join(d, "truth.txt"), poses, labels)
    return scans, os.path.join(d, "truth.txt")


def make_views(work, ptreg, shape):
    import math
    d = os.path.join(work, f"{shape}-views")
    os.makedirs(d, exist_ok=True)
    scans, poses, labels = [], [], []
    for k in range(8):
        a = math.radians(45 * k)
        view = f"{5 * math.cos(a) * math.cos(math.radians(30)):.6f},{5 * math.sin(a) * math.cos(math.radians(30)):.6f}," \
               f"{5 * math.sin(math.radians(30)):.6f}"
        scan, truth = os.path.join(d, f"view{k}.ply"), os.path.join(d, f"truth{k}.txt")
        subprocess.run([ptreg, "synth", "--shape", shape, "-o", scan, "--truth", truth, "--view", view, "--points",
                        "20000", "--noise", "0.002", "--max-angle", "180", "--max-translation", "0.5", "--seed",
                        str(k + 1)], check=True, capture_output=True)
        scans.append(scan)
        poses.append(read_poses(truth)[0])
        labels.append(f"view{k}.ply")
    write_poses(os.path.join(d, "truth.txt"), poses, labels)
    return scans, os.path.join(d, "truth.txt")


# ---- the tools ------------------------------------------------------------------

def errors(truth, poses):
    """Per scan: (rotation error in degrees, translation error) relative to scan 0."""
    import numpy as np
    out = []
    for T, P in zip(truth, poses):
        A = np.linalg.inv(truth[0]) @ T
        D = np.linalg.inv(A) @ P
        c = min(1.0, max(-1.0, (np.trace(D[:3, :3]) - 1) / 2))
        out.append((float(np.degrees(np.arccos(c))), float(np.linalg.norm(D[:3, 3]))))
    return out


def run_ptreg(args, scans, truth_path):
    out = subprocess.run([args.ptreg, "multiway", *scans, "--truth", truth_path, "--json", "--threads",
                          str(args.threads)], check=True, capture_output=True, text=True).stdout
    j = json.loads(out)
    import numpy as np
    poses = [np.array(s["pose"]).reshape(4, 4) for s in j["scans"]]
    return {"time_ms": j["time_ms"], "poses": poses, "placed": [s["placed"] for s in j["scans"]],
            "voxel": j["voxel"], "kept": j["edges_kept"], "pairs": len(j["edges"])}


def open3d_worker(scan_paths, voxel):
    """In its own process (OMP_NUM_THREADS set before Open3D loads): the pipeline once."""
    import time

    import numpy as np
    import open3d as o3d

    reg = o3d.pipelines.registration
    o3d.utility.random.seed(1)
    o3d.utility.set_verbosity_level(o3d.utility.VerbosityLevel.Error)
    clouds = [o3d.io.read_point_cloud(p) for p in scan_paths]
    v = voxel
    t0 = time.perf_counter()
    down, feats = [], []
    for c in clouds:
        d = c.voxel_down_sample(v)
        d.estimate_normals(o3d.geometry.KDTreeSearchParamHybrid(radius=2 * v, max_nn=30))
        feats.append(reg.compute_fpfh_feature(d, o3d.geometry.KDTreeSearchParamHybrid(radius=5 * v, max_nn=100)))
        down.append(d)
    n = len(down)
    graph = reg.PoseGraph()
    odometry = np.eye(4)
    graph.nodes.append(reg.PoseGraphNode(odometry))
    dist = 1.5 * v
    for i in range(n):
        for j in range(i + 1, n):
            ransac = reg.registration_ransac_based_on_feature_matching(
                down[i], down[j], feats[i], feats[j], True, dist, reg.TransformationEstimationPointToPoint(False), 3,
                [reg.CorrespondenceCheckerBasedOnEdgeLength(0.9), reg.CorrespondenceCheckerBasedOnDistance(dist)],
                reg.RANSACConvergenceCriteria(100000, 0.999))
            icp = reg.registration_icp(down[i], down[j], dist, ransac.transformation,
                                       reg.TransformationEstimationPointToPlane())
            info = reg.get_information_matrix_from_point_clouds(down[i], down[j], dist, icp.transformation)
            if j == i + 1:
                odometry = icp.transformation @ odometry
                graph.nodes.append(reg.PoseGraphNode(np.linalg.inv(odometry)))
                graph.edges.append(reg.PoseGraphEdge(i, j, icp.transformation, info, uncertain=False))
            else:
                graph.edges.append(reg.PoseGraphEdge(i, j, icp.transformation, info, uncertain=True))
    reg.global_optimization(graph, reg.GlobalOptimizationLevenbergMarquardt(),
                            reg.GlobalOptimizationConvergenceCriteria(),
                            reg.GlobalOptimizationOption(max_correspondence_distance=dist, edge_prune_threshold=0.25,
                                                         reference_node=0))
    ms = (time.perf_counter() - t0) * 1e3
    ref = np.linalg.inv(np.asarray(graph.nodes[0].pose))
    poses = [(ref @ np.asarray(node.pose)).tolist() for node in graph.nodes]
    print(json.dumps({"time_ms": ms, "poses": poses}))


def run_open3d(args, scans, voxel):
    import numpy as np
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--open3d-worker", str(voxel), *scans], env=env,
                         check=True, capture_output=True, text=True).stdout
    j = json.loads(out.strip().splitlines()[-1])
    return {"time_ms": j["time_ms"], "poses": [np.array(p) for p in j["poses"]], "placed": None}


# ---- the table ------------------------------------------------------------------

def diagonal(path):
    import numpy as np
    import open3d as o3d
    xyz = np.asarray(o3d.io.read_point_cloud(path).points)
    return float(np.linalg.norm(xyz.max(axis=0) - xyz.min(axis=0)))


def summary(name, truth, runs, scale):
    """scale: the translations' factor to the table's unit (mm, or % of the diagonal),
    in which 1 and 2 are the issue's 1 mm and 2 mm."""
    r = runs[0]
    errs = errors(truth, r["poses"])
    lost = [i for i, (a, _) in enumerate(errs) if a > 5.0 or (r["placed"] is not None and not r["placed"][i])]
    within = lambda deg, tr: sum(a <= deg and t * scale <= tr for a, t in errs)  # noqa: E731
    return {"tool": name, "time_ms": statistics.median(x["time_ms"] for x in runs),
            "max_rot_deg": max(a for a, _ in errs[1:]), "max_trans": max(t for _, t in errs[1:]) * scale,
            "within_05_1": within(0.5, 1.0), "within_1_2": within(1.0, 2.0), "lost": lost, "scans": len(errs),
            "errors": errs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptreg", default=os.environ.get("PTREG_CLI", os.path.join(ROOT, "build", "ptreg")))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--work", default="/tmp/ptreg-multiway")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--open3d-worker", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.open3d_worker:
        open3d_worker(args.open3d_worker[1:], float(args.open3d_worker[0]))
        return
    os.makedirs(args.work, exist_ok=True)
    rows = []
    for name in args.sets.split(","):
        made = (make_bunny(args.work, name == "bunny-pieces") if name.startswith("bunny")
                else make_views(args.work, args.ptreg, name.split("-")[0]))
        if made is None:
            print(f"{name}: skipped (../shared/data/bunny is absent)")
            continue
        scans, truth_path = made
        truth = read_poses(truth_path)
        ours, theirs = [], []
        for _ in range(args.runs):
            ours.append(run_ptreg(args, scans, truth_path))
            theirs.append(run_open3d(args, scans, ours[0]["voxel"]))
        # metres: mm; model units: the bunny's proportion (1 mm of its 0.2 m) of the diagonal
        scale = 1000.0 if name.startswith("bunny") else 200.0 / diagonal(scans[0])
        a, b = summary("ptreg", truth, ours, scale), summary("open3d", truth, theirs, scale)
        rows.append((name, len(scans), ours[0]["voxel"], a, b))
    unit = lambda name: "mm" if name.startswith("bunny") else "mm-eq"  # noqa: E731
    if args.markdown:
        print("| set | scans | tool | time (ms) | Open3D / ptreg | worst rotation (deg) | worst translation | "
              "within 0.5 deg, 1 mm | within 1 deg, 2 mm | lost |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    for name, n, voxel, a, b in rows:
        for r in (a, b):
            ratio = b["time_ms"] / a["time_ms"] if r is a else 1.0
            if args.markdown:
                print(f"| {name} | {n} | {r['tool']} | {r['time_ms']:.0f} | {ratio:.1f}x | {r['max_rot_deg']:.3f} | "
                      f"{r['max_trans']:.4g} {unit(name)} | {r['within_05_1']}/{n} | {r['within_1_2']}/{n} | "
                      f"{len(r['lost'])} |")
            else:
                print(f"{name:15s} {r['tool']:7s} {r['time_ms']:9.1f} ms  x{ratio:5.1f}  rot {r['max_rot_deg']:8.3f} deg"
                      f"  trans {r['max_trans']:10.4g} {unit(name)}  0.5deg/1mm {r['within_05_1']}/{n}"
                      f"  1deg/2mm {r['within_1_2']}/{n}  lost {r['lost']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"set": name, "scans": n, "voxel": voxel, "ptreg": a, "open3d": b}
                       for name, n, voxel, a, b in rows], f, indent=1)


if __name__ == "__main__":
    main()
