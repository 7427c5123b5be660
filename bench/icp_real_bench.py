#!/usr/bin/python3
"""Registration of real scans: ptreg's point-to-plane against Open3D's on the
shared LiDAR pair, and ptreg's raw point-to-point run against an earlier
ptreg build, in one run, interleaved, medians of the rounds; with
--small-gicp, ptreg's Generalized-ICP against small_gicp's too; with --pcl,
ptreg's point-to-plane and Generalized-ICP against PCL's.

Run with Debian's /usr/bin/python3 (it sees python3-open3d):

  /usr/bin/python3 bench/icp_real_bench.py [--ptreg build/ptreg] [--before OLD/ptreg]
                                           [--small-gicp build-small-gicp/driver/small_gicp_icp]
                                           [--small-gicp-optimizer gn|lm|both]
                                           [--pcl build-peers/pcl_icp]
                                           [--rounds 5] [--threads 2] [--json FILE]

Cases (../shared/data/lidar: two consecutive outdoor scans, ~69k points each,
about 5,000 of them invalid returns at the origin; the truth in
T_target_source.txt):

  plane   point-to-plane from the identity, pairs within 0.5 m, 30 iterations
          (no early stop), the target's normals estimated from its 10 nearest
          points inside the time (Open3D: EstimateNormals(KNN 10), then
          registration_icp with TransformationEstimationPointToPlane and the
          relative criteria at 0 so all 30 run); "plane, hybrid normals" the
          same with normals from the 30 nearest within 1 m (Open3D's
          KDTreeSearchParamHybrid(1.0, 30)).
  raw     point-to-point from the identity, pairs within 1 m, 30 iterations,
          no early stop: ptreg against --before (an earlier build: the issue's
          "today"), and Open3D's point-to-point for reference.
  gicp    Generalized-ICP on 0.25 m voxel-grid centroids of both scans, pairs
          within 1 m, 30 iterations: the downsampling and both clouds' normals
          (10 nearest points) inside the time (Open3D: voxel_down_sample,
          estimate_normals, registration_generalized_icp).

and on the Stanford bunny (bun045 onto bun000, ~40k points each, truth from
bun.conf), Generalized-ICP from the truth perturbed by 8 degrees about
(1, 2, 3) and 5 mm along x, pairs within 1 cm, 30 iterations, normals from
10 nearest points inside the time.

With --small-gicp (the driver bench/peers/small_gicp.sh builds from
bench/peers/small_gicp_icp.cpp), the two GICP cases also run on small_gicp:
the same clouds, voxel size (its voxelgrid_sampling_omp, centroids), pairs
distance and start, covariances from 10 nearest points regularised like
ptreg's and Open3D's (eigenvalues 1e-3, 1, 1), the same threads, its
convergence test disabled. "small_gicp" rows take 30 Gauss-Newton steps, as
ptreg does; "small_gicp LM" rows use its default Levenberg-Marquardt
optimizer, which ends by itself once no damped step lowers the error (the
iterations it ran are printed under the table).

With --pcl (bench/peers/pcl_icp, built by bench/peers/CMakeLists.txt against
Debian's PCL 1.13), "PCL" rows run the plane and the two GICP cases on the
same clouds, pairs distance, start and 30 iterations: plane with
IterativeClosestPointWithNormals (point-to-plane LLS), the target's normals
from pcl::NormalEstimation over 10 nearest points inside the time; gicp with
GeneralizedIterativeClosestPoint, covariances from 10 neighbors
(setCorrespondenceRandomness, PCL's eigenvalues 1, 1, 1e-3) inside the time,
its inner BFGS at PCL's defaults, the grid from pcl::VoxelGrid (anchored at
the origin) inside the time. Early stops are off (the peer's header says how;
the iterations run are printed under the table). PCL's registration is
single-threaded whatever --threads says.
PCL's BFGS gradient tolerances (1e-2, absolute) end each inner solve almost
at once on the 15 cm bunny, so "PCL bunny gicp" stays near its 8 degree
start; `pcl_icp --gicp-grad-tol 1e-6` reaches 0.08 degrees there.

Each time is from both clouds in memory to the result. The pose error against
the truth is reported for every run.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data")
DATA = os.path.join(SHARED, "lidar")
BUNNY = os.path.join(SHARED, "bunny")


def open3d_peer(args):
    """Runs in its own process: OMP_NUM_THREADS must be set before Open3D loads."""
    import time

    import numpy as np
    import open3d as o3d

    reg = o3d.pipelines.registration
    src = o3d.io.read_point_cloud(args.source)
    tgt = o3d.io.read_point_cloud(args.target)
    init = np.loadtxt(args.init) if args.init else np.eye(4)
    criteria = reg.ICPConvergenceCriteria(relative_fitness=0.0, relative_rmse=0.0, max_iteration=30)
    knn = (o3d.geometry.KDTreeSearchParamHybrid(radius=args.normal_radius, max_nn=args.normal_k)
           if args.normal_radius > 0 else o3d.geometry.KDTreeSearchParamKNN(args.normal_k))
    t0 = time.perf_counter()
    if args.voxel > 0:
        src, tgt = src.voxel_down_sample(args.voxel), tgt.voxel_down_sample(args.voxel)
    if args.method == "gicp":
        src.estimate_normals(knn)
        tgt.estimate_normals(knn)
        r = reg.registration_generalized_icp(src, tgt, args.max_dist, init,
                                             reg.TransformationEstimationForGeneralizedICP(1e-3), criteria)
    else:
        if args.method == "plane":
            tgt.estimate_normals(knn)
            est = reg.TransformationEstimationPointToPlane()
        else:
            est = reg.TransformationEstimationPointToPoint()
        r = reg.registration_icp(src, tgt, args.max_dist, init, est, criteria)
    ms = (time.perf_counter() - t0) * 1e3
    print(json.dumps({"time_ms": ms, "transformation": np.asarray(r.transformation).tolist(),
                      "fitness": r.fitness}))


def pose_error(truth, T):
    """The rotation angle of R_truth^T R and the translations' distance. The
    truth's rotation is 1e-6 from orthonormal, which arccos of the trace
    turns into 0.01 deg at these small angles: the angle comes from atan2 of
    the skew and symmetric parts instead, well conditioned near 0."""
    import numpy as np

    A, B = np.asarray(truth), np.asarray(T)
    D = A[:3, :3].T @ B[:3, :3]
    skew = np.array([D[2, 1] - D[1, 2], D[0, 2] - D[2, 0], D[1, 0] - D[0, 1]]) / 2
    angle = float(np.degrees(np.arctan2(np.linalg.norm(skew), (np.trace(D) - 1) / 2)))
    return angle, float(np.linalg.norm(A[:3, 3] - B[:3, 3]))


def run_ptreg(binary, case, threads):
    cmd = [binary, "icp", case["source"], case["target"], "--max-dist", str(case["max_dist"]), "--max-iter", "30",
           "--tol", "0", "--threads", str(threads), "--json"]
    if case["method"] != "point":  # an earlier build knows no --method
        cmd += ["--method", case["method"], "--normal-k", str(case.get("normal_k", 10))]
        if case.get("normal_radius"):
            cmd += ["--normal-radius", str(case["normal_radius"])]
    if case.get("voxel"):
        cmd += ["--voxel", str(case["voxel"])]
    if case.get("init"):
        cmd += ["--init", case["init"]]
    j = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return {"time_ms": j["time_ms"] + j.get("downsample_ms", 0.0), "transformation": j["transformation"],
            "fitness": j["fitness"]}


def run_open3d(case, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    cmd = [sys.executable, os.path.abspath(__file__), "--peer-open3d", case["method"], "--max-dist",
           str(case["max_dist"]), "--source", case["source"], "--target", case["target"], "--voxel",
           str(case.get("voxel", 0.0)), "--normal-k", str(case.get("normal_k", 10)), "--normal-radius",
           str(case.get("normal_radius", 0.0))]
    if case.get("init"):
        cmd += ["--init", case["init"]]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout)


def run_small_gicp(binary, case, threads, optimizer):
    cmd = [binary, case["source"], case["target"], "--method", case["method"], "--max-dist", str(case["max_dist"]),
           "--max-iter", "30", "--num-neighbors", "10", "--threads", str(threads), "--optimizer", optimizer,
           "--downsample", str(case.get("voxel", 0.0)), "--json"]
    if case.get("init"):
        cmd += ["--init", case["init"]]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def run_pcl(binary, case):
    cmd = [binary, case["source"], case["target"], "--method", case["method"], "--max-dist", str(case["max_dist"]),
           "--max-iter", "30", "--normal-k", "10", "--voxel", str(case.get("voxel", 0.0)), "--repeat", "1",
           "--json"]
    if case.get("init"):
        cmd += ["--init", case["init"]]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def bunny_case(work):
    """bun045 onto bun000 from the truth (bun.conf: x_world = R(q)^T x_scan + t)
    moved by 8 degrees about (1, 2, 3) and 5 mm along x."""
    import numpy as np

    poses = {}
    with open(os.path.join(BUNNY, "bun.conf")) as f:
        for line in f:
            w = line.split()
            if len(w) == 9 and w[0] == "bmesh":
                x, y, z, qw = (float(v) for v in w[5:9])
                n = np.sqrt(x * x + y * y + z * z + qw * qw)
                x, y, z, qw = x / n, y / n, z / n, qw / n
                R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * qw), 2 * (x * z + y * qw)],
                              [2 * (x * y + z * qw), 1 - 2 * (x * x + z * z), 2 * (y * z - x * qw)],
                              [2 * (x * z - y * qw), 2 * (y * z + x * qw), 1 - 2 * (x * x + y * y)]])
                T = np.eye(4)
                T[:3, :3] = R.T
                T[:3, 3] = [float(v) for v in w[2:5]]
                poses[w[1]] = T
    truth = np.linalg.inv(poses["bun000.ply"]) @ poses["bun045.ply"]
    a = np.array([1.0, 2.0, 3.0]) / np.sqrt(14.0)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    th = np.radians(8.0)
    P = np.eye(4)
    P[:3, :3] = np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K
    P[:3, 3] = [0.005, 0.0, 0.0]
    init = os.path.join(work, "bunny_init.txt")
    np.savetxt(init, P @ truth)
    return truth, init


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptreg", default="build/ptreg")
    ap.add_argument("--before", help="an earlier ptreg build for the raw point-to-point case")
    ap.add_argument("--small-gicp", metavar="PATH", help="small_gicp's driver (bench/peers/small_gicp.sh builds it) "
                    "for the two GICP cases")
    ap.add_argument("--small-gicp-optimizer", choices=["gn", "lm", "both"], default="both",
                    help="gn: 30 Gauss-Newton steps (\"small_gicp\" rows), lm: its default Levenberg-Marquardt "
                    "(\"small_gicp LM\" rows), both (default)")
    ap.add_argument("--pcl", metavar="PATH", help="PCL's peer (bench/peers/pcl_icp) for the plane and the two GICP "
                    "cases (single-threaded)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json")
    ap.add_argument("--peer-open3d", dest="method", help=argparse.SUPPRESS)
    ap.add_argument("--max-dist", type=float, default=0.5, help=argparse.SUPPRESS)
    ap.add_argument("--source", help=argparse.SUPPRESS)
    ap.add_argument("--target", help=argparse.SUPPRESS)
    ap.add_argument("--init", help=argparse.SUPPRESS)
    ap.add_argument("--voxel", type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument("--normal-k", type=int, default=10, help=argparse.SUPPRESS)
    ap.add_argument("--normal-radius", type=float, default=0.0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.method:
        return open3d_peer(args)
    import tempfile

    import numpy as np

    work = tempfile.mkdtemp(prefix="ptreg-real-")
    lidar_truth = np.loadtxt(os.path.join(DATA, "T_target_source.txt"))
    bunny_truth, bunny_init = bunny_case(work)
    lidar = {"source": os.path.join(DATA, "source.ply"), "target": os.path.join(DATA, "target.ply"),
             "truth": lidar_truth}
    bunny = {"source": os.path.join(BUNNY, "bun045.ply"), "target": os.path.join(BUNNY, "bun000.ply"),
             "truth": bunny_truth, "init": bunny_init}
    cases = {"plane": dict(lidar, method="plane", max_dist=0.5),
             "plane, hybrid normals": dict(lidar, method="plane", max_dist=0.5, normal_k=30, normal_radius=1.0),
             "point raw": dict(lidar, method="point", max_dist=1.0),
             "gicp 0.25 m grid": dict(lidar, method="gicp", max_dist=1.0, voxel=0.25),
             "bunny gicp": dict(bunny, method="gicp", max_dist=0.01)}
    runs = {}
    for name, case in cases.items():
        runs["ptreg " + name] = (case, lambda c=case: run_ptreg(args.ptreg, c, args.threads))
        runs["Open3D " + name] = (case, lambda c=case: run_open3d(c, args.threads))
    if args.before:
        c = cases["point raw"]
        runs["ptreg before, point raw"] = (c, lambda: run_ptreg(args.before, c, args.threads))
    sg_cases = ["gicp 0.25 m grid", "bunny gicp"] if args.small_gicp else []
    sg_optimizers = {"gn": ["gn"], "lm": ["lm"], "both": ["gn", "lm"]}[args.small_gicp_optimizer]
    sg_label = {"gn": "small_gicp ", "lm": "small_gicp LM "}
    for name in sg_cases:
        for opt in sg_optimizers:
            runs[sg_label[opt] + name] = (cases[name], lambda c=cases[name], o=opt:
                                          run_small_gicp(args.small_gicp, c, args.threads, o))
    pcl_cases = ["plane", "gicp 0.25 m grid", "bunny gicp"] if args.pcl else []
    for name in pcl_cases:
        runs["PCL " + name] = (cases[name], lambda c=cases[name]: run_pcl(args.pcl, c))
    times = {k: [] for k in runs}
    last = {}
    for r in range(args.rounds):
        order = list(runs)[r % len(runs):] + list(runs)[:r % len(runs)]
        for name in order:
            res = runs[name][1]()
            times[name].append(res["time_ms"])
            last[name] = res
    rows = []
    for name in runs:
        angle, trans = pose_error(runs[name][0]["truth"], last[name]["transformation"])
        rows.append({"run": name, "median_ms": statistics.median(times[name]), "times_ms": times[name],
                     "rotation_error_deg": angle, "translation_error_m": trans,
                     "fitness": last[name]["fitness"], "iterations": last[name].get("iterations")})
    med = {r["run"]: r["median_ms"] for r in rows}
    print(f"{args.threads} threads, {args.rounds} interleaved rounds, medians:")
    print("| run | ms | rotation error (deg) | translation error (m) | fitness |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['run']} | {r['median_ms']:.1f} | {r['rotation_error_deg']:.3f} | "
              f"{r['translation_error_m']:.4f} | {r['fitness']:.4f} |")
    ratios = {f"Open3D / ptreg, {name}": med["Open3D " + name] / med["ptreg " + name] for name in cases}
    if args.before:
        ratios["ptreg before / ptreg now, point raw"] = med["ptreg before, point raw"] / med["ptreg point raw"]
    for name in sg_cases:
        for opt in sg_optimizers:
            ratios[f"{sg_label[opt]}/ ptreg, {name}"] = med[sg_label[opt] + name] / med["ptreg " + name]
    for name in pcl_cases:
        ratios[f"PCL (1 thread) / ptreg, {name}"] = med["PCL " + name] / med["ptreg " + name]
    for k, v in ratios.items():
        print(f"{k}: {v:.2f}x")
    for name in sg_cases:
        if "lm" in sg_optimizers:
            it = last[sg_label["lm"] + name]["iterations"]
            print(f"small_gicp LM {name}: {it} iterations" + (" (then no damped step lowered the error)" if it < 30 else ""))
    for name in pcl_cases:
        it = last["PCL " + name]["iterations"]
        print(f"PCL {name}: {it} iterations" + ("" if it == 30 else " (stopped early)"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "ratios": ratios, "threads": args.threads, "rounds": args.rounds}, f, indent=1)


if __name__ == "__main__":
    main()
