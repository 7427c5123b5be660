#!/usr/bin/python3
"""Benchmark peer: Open3D 0.16 point-to-point ICP, timed the way bench/icp_bench.py
times every tool. Run with Debian's /usr/bin/python3 (python3-open3d).

  open3d_icp.py SOURCE TARGET [--max-iter N] [--max-dist D] [--init FILE]
                [--repeat R] [--tol-transform E] [--threads T] [--json]

What was checked in Open3D 0.16's sources (cpp/open3d/pipelines/registration/
Registration.cpp and cpp/open3d/geometry/KDTreeFlann.cpp):

Early stop. RegistrationICP() builds a KDTreeFlann of the target, moves a copy of
the source by init, finds correspondences, then loops `for i < max_iteration`:
estimate the update from the current correspondences, apply it, find the
correspondences again, and break when
    |fitness_prev - fitness| < relative_fitness  AND  |rmse_prev - rmse| < relative_rmse.
Both tests are strict `<` on absolute values, so relative_fitness = relative_rmse = 0
can never break: exactly max_iteration updates run (max_iteration + 1 correspondence
searches, the last one giving the returned fitness / inlier_rmse). The iteration count
is also measured, in one extra untimed run with the debug log on, by counting the
"ICP Iteration #" lines (RegistrationResult in 0.16 carries no iteration count).

max_correspondence_distance and cost. Each correspondence is
KDTreeFlann::SearchHybrid(point, radius=max_dist, max_nn=1), which in 0.16 is a
nanoflann knnSearch for the single nearest neighbor followed by a cut of the
results at distance^2 < radius^2 (std::lower_bound). The radius never enters the
tree traversal, so the search costs the same for any max_dist: a huge radius neither
slows Open3D down nor changes which neighbor is found; it only decides whether that
neighbor is kept (strictly closer than max_dist; the benchmark's common measure
counts <=, which differs only on exact ties). (Older FLANN-based Open3D releases used
a radius search capped at max_nn neighbors instead; not the case here.) Measured
with this build: one correspondence pass (evaluate_registration, bun045 at a fixed
pose against bun000, 40k points) costs the same within noise for max_dist from 1 mm
to 1e10. A whole ICP run with a tight max_dist can take a different time only because
it converges to a different pose (queries nearer the surface end their descent
sooner), not because of the radius. max_dist must be > 0 (Open3D rejects <= 0).
PCL's nearestKSearch(k=1) followed by a d^2 > D^2 test is
likewise independent of D. So the benchmark can use one max_dist for all tools that is
large enough that no pair is rejected (fitness = 1 from a near-aligned start) without
handicapping anyone; bench/icp_bench.py uses the target's bounding-box diagonal unless
told otherwise. (Without rejection a partial-overlap pair such as bun045/bun000
converges to a pose biased by the non-overlapping part; that bias is the same for
every tool, since all minimise the same sum.)

Threads: the correspondence search runs under `#pragma omp parallel`; the
point-to-point estimation (Eigen Umeyama) is serial. OMP_NUM_THREADS is set from
--threads before Open3D (or anything that loads libgomp) is imported.
"""

import os
import sys


def _early_threads(argv):
    """--threads must act before libgomp reads its environment at load time."""
    threads = 2
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            threads = argv[i + 1]
        elif a.startswith("--threads="):
            threads = a.split("=", 1)[1]
    try:
        threads = int(threads)
    except ValueError:
        sys.stderr.write("open3d_icp: bad --threads %r\n" % (threads,))
        sys.exit(2)
    if threads < 1:
        sys.stderr.write("open3d_icp: --threads must be >= 1\n")
        sys.exit(2)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    return threads


THREADS = _early_threads(sys.argv[1:])

import argparse  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from icp_measure import common_error  # noqa: E402  (bench/icp_measure.py)

try:
    import open3d as o3d  # noqa: E402
except ImportError as e:  # pragma: no cover - reported by the driver
    sys.stderr.write("open3d_icp: cannot import open3d (%s); run with /usr/bin/python3\n" % e)
    sys.exit(4)

reg = o3d.pipelines.registration


def load(path):
    pcd = o3d.io.read_point_cloud(path)
    if pcd.is_empty():
        sys.stderr.write("open3d_icp: %s: cannot read a point cloud\n" % path)
        sys.exit(3)
    pcd.remove_non_finite_points()
    return pcd


def read_matrix(path):
    try:
        vals = np.loadtxt(path, dtype=np.float64).ravel()
    except (OSError, ValueError) as e:
        sys.stderr.write("open3d_icp: %s: %s\n" % (path, e))
        sys.exit(3)
    if vals.size != 16:
        sys.stderr.write("open3d_icp: %s: want 16 numbers (4x4 row-major), got %d\n"
                         % (path, vals.size))
        sys.exit(3)
    return vals.reshape(4, 4)


def count_iterations(source, target, max_dist, init, criteria):
    """Run once more, untimed, with Open3D's debug log captured at the file
    descriptor level, and count the iterations it says it ran."""
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            with o3d.utility.VerbosityContextManager(o3d.utility.VerbosityLevel.Debug):
                reg.registration_icp(source, target, max_dist, init,
                                     reg.TransformationEstimationPointToPoint(), criteria)
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode("utf-8", "replace")
    n = text.count("ICP Iteration #")
    return n if n > 0 else None


def main():
    ap = argparse.ArgumentParser(description="Open3D point-to-point ICP benchmark peer")
    ap.add_argument("source")
    ap.add_argument("target")
    ap.add_argument("--max-iter", type=int, default=30)
    ap.add_argument("--max-dist", type=float, default=1e10,
                    help="max correspondence distance (default 1e10: no limit)")
    ap.add_argument("--init", help="4x4 row-major initial transform (16 numbers)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tol-transform", type=float, default=None,
                    help="use Open3D's own stop: relative_fitness = relative_rmse = E")
    ap.add_argument("--threads", type=int, default=2,
                    help="OpenMP threads (default 2), set before open3d is imported")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.max_iter < 1 or args.repeat < 1 or not args.max_dist > 0:
        ap.error("--max-iter, --repeat and --max-dist must be positive")

    o3d.utility.set_verbosity_level(o3d.utility.VerbosityLevel.Error)
    source = load(args.source)
    target = load(args.target)
    init = read_matrix(args.init) if args.init else np.eye(4)

    if args.tol_transform is None:
        criteria = reg.ICPConvergenceCriteria(relative_fitness=0.0, relative_rmse=0.0,
                                              max_iteration=args.max_iter)
    else:
        criteria = reg.ICPConvergenceCriteria(relative_fitness=args.tol_transform,
                                              relative_rmse=args.tol_transform,
                                              max_iteration=args.max_iter)
    estimation = reg.TransformationEstimationPointToPoint()

    times = []
    cpu = []
    result = None
    for _ in range(args.repeat):
        c0 = time.process_time()
        t0 = time.perf_counter()
        result = reg.registration_icp(source, target, args.max_dist, init, estimation, criteria)
        t1 = time.perf_counter()
        c1 = time.process_time()
        times.append((t1 - t0) * 1e3)
        cpu.append((c1 - c0) / max(t1 - t0, 1e-12))

    T = np.asarray(result.transformation, dtype=np.float64)
    src_pts = np.asarray(source.points)
    tgt_pts = np.asarray(target.points)
    rmse, fitness = common_error(src_pts, tgt_pts, T, args.max_dist)
    iterations = count_iterations(source, target, args.max_dist, init, criteria)
    med = float(np.median(times))
    stop = "max_iterations" if iterations == args.max_iter else "relative_change"

    out = {
        "peer": "open3d",
        "version": o3d.__version__,
        "threads": THREADS,
        "cpu_per_wall": float(np.median(cpu)),
        "source_points": len(src_pts),
        "target_points": len(tgt_pts),
        "max_dist": args.max_dist,
        "max_iter": args.max_iter,
        "early_stop": args.tol_transform is not None,
        "transformation": T.tolist(),
        "rmse": rmse if np.isfinite(rmse) else None,
        "fitness": fitness,
        "o3d_inlier_rmse": float(result.inlier_rmse),
        "o3d_fitness": float(result.fitness),
        "iterations": iterations,
        "converged": args.tol_transform is not None and iterations is not None
        and iterations < args.max_iter,
        "stop_reason": stop,
        "time_ms": med,
        "times_ms": times,
    }
    if args.json:
        print(json.dumps(out))
        return 0
    print("open3d %s: %d -> %d points, %s iterations, %d threads (cpu/wall %.2f)"
          % (out["version"], out["source_points"], out["target_points"], iterations,
             THREADS, out["cpu_per_wall"]))
    print("transformation:")
    for row in T:
        print("  " + " ".join("%12.7f" % v for v in row))
    print("rmse %.9g  fitness %.6f  (open3d: inlier_rmse %.9g fitness %.6f; max_dist %g)"
          % (rmse, fitness, out["o3d_inlier_rmse"], out["o3d_fitness"], args.max_dist))
    print("time: median %.3f ms over %d: %s"
          % (med, args.repeat, " ".join("%.3f" % t for t in times)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
