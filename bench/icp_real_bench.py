#!/usr/bin/python3
"""Registration of real scans: ptreg's point-to-plane against Open3D's on the
shared LiDAR pair, and ptreg's raw point-to-point run against an earlier
ptreg build, in one run, interleaved, medians of the rounds.

Run with Debian's /usr/bin/python3 (it sees python3-open3d):

  /usr/bin/python3 bench/icp_real_bench.py [--ptreg build/ptreg] [--before OLD/ptreg]
                                           [--rounds 5] [--threads 2] [--json FILE]

Cases (../shared/data/lidar: two consecutive outdoor scans, ~69k points each,
about 5,000 of them invalid returns at the origin; the truth in
T_target_source.txt):

  plane   point-to-plane from the identity, pairs within 0.5 m, 30 iterations
          (no early stop), the target's normals estimated from its 10 nearest
          points inside the time (Open3D: EstimateNormals(KNN 10), then
          registration_icp with TransformationEstimationPointToPlane and the
          relative criteria at 0 so all 30 run).
  raw     point-to-point from the identity, pairs within 1 m, 30 iterations,
          no early stop: ptreg against --before (an earlier build: the issue's
          "today"), and Open3D's point-to-point for reference.

Each time is from both clouds in memory to the result. The pose error against
the truth is reported for every run.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "lidar")


def open3d_peer(args):
    """Runs in its own process: OMP_NUM_THREADS must be set before Open3D loads."""
    import time

    import numpy as np
    import open3d as o3d

    reg = o3d.pipelines.registration
    src = o3d.io.read_point_cloud(os.path.join(DATA, "source.ply"))
    tgt = o3d.io.read_point_cloud(os.path.join(DATA, "target.ply"))
    criteria = reg.ICPConvergenceCriteria(relative_fitness=0.0, relative_rmse=0.0, max_iteration=30)
    t0 = time.perf_counter()
    if args.method == "plane":
        tgt.estimate_normals(o3d.geometry.KDTreeSearchParamKNN(10))
        est = reg.TransformationEstimationPointToPlane()
    else:
        est = reg.TransformationEstimationPointToPoint()
    r = reg.registration_icp(src, tgt, args.max_dist, np.eye(4), est, criteria)
    ms = (time.perf_counter() - t0) * 1e3
    print(json.dumps({"time_ms": ms, "transformation": np.asarray(r.transformation).tolist(),
                      "fitness": r.fitness}))


def pose_error(truth, T):
    import numpy as np

    A, B = np.asarray(truth), np.asarray(T)
    D = np.linalg.inv(A) @ B
    angle = float(np.degrees(np.arccos(np.clip((np.trace(D[:3, :3]) - 1) / 2, -1, 1))))
    return angle, float(np.linalg.norm(A[:3, 3] - B[:3, 3]))


def run_ptreg(binary, method, max_dist, threads):
    cmd = [binary, "icp", os.path.join(DATA, "source.ply"), os.path.join(DATA, "target.ply"), "--max-dist",
           str(max_dist), "--max-iter", "30", "--tol", "0", "--threads", str(threads), "--json"]
    if method == "plane":
        cmd += ["--method", "plane"]
    j = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return {"time_ms": j["time_ms"], "transformation": j["transformation"], "fitness": j["fitness"]}


def run_open3d(method, max_dist, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    cmd = [sys.executable, os.path.abspath(__file__), "--peer-open3d", method, "--max-dist", str(max_dist)]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptreg", default="build/ptreg")
    ap.add_argument("--before", help="an earlier ptreg build for the raw point-to-point case")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json")
    ap.add_argument("--peer-open3d", dest="method", help=argparse.SUPPRESS)
    ap.add_argument("--max-dist", type=float, default=0.5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.method:
        return open3d_peer(args)
    import numpy as np

    truth = np.loadtxt(os.path.join(DATA, "T_target_source.txt"))
    runs = {"ptreg plane": lambda: run_ptreg(args.ptreg, "plane", 0.5, args.threads),
            "Open3D plane": lambda: run_open3d("plane", 0.5, args.threads),
            "ptreg point raw": lambda: run_ptreg(args.ptreg, "point", 1.0, args.threads),
            "Open3D point raw": lambda: run_open3d("point", 1.0, args.threads)}
    if args.before:
        runs["ptreg before, point raw"] = lambda: run_ptreg(args.before, "point", 1.0, args.threads)
    times = {k: [] for k in runs}
    last = {}
    for r in range(args.rounds):
        order = list(runs)[r % len(runs):] + list(runs)[:r % len(runs)]
        for name in order:
            res = runs[name]()
            times[name].append(res["time_ms"])
            last[name] = res
    rows = []
    for name in runs:
        angle, trans = pose_error(truth, last[name]["transformation"])
        rows.append({"run": name, "median_ms": statistics.median(times[name]), "times_ms": times[name],
                     "rotation_error_deg": angle, "translation_error_m": trans,
                     "fitness": last[name]["fitness"]})
    med = {r["run"]: r["median_ms"] for r in rows}
    print(f"LiDAR pair, {args.threads} threads, {args.rounds} interleaved rounds, medians:")
    print("| run | ms | rotation error (deg) | translation error (m) | fitness |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['run']} | {r['median_ms']:.1f} | {r['rotation_error_deg']:.3f} | "
              f"{r['translation_error_m']:.4f} | {r['fitness']:.4f} |")
    ratios = {"Open3D plane / ptreg plane": med["Open3D plane"] / med["ptreg plane"],
              "Open3D point raw / ptreg point raw": med["Open3D point raw"] / med["ptreg point raw"]}
    if args.before:
        ratios["ptreg before / ptreg now, point raw"] = med["ptreg before, point raw"] / med["ptreg point raw"]
    for k, v in ratios.items():
        print(f"{k}: {v:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "ratios": ratios, "threads": args.threads, "rounds": args.rounds}, f, indent=1)


if __name__ == "__main__":
    main()
