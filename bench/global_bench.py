#!/usr/bin/python3
"""Global registration: ptreg register against Open3D's RANSAC pipeline on the same
poses, in one run, with the same scales.

Run with Debian's /usr/bin/python3 (it sees python3-open3d):

  /usr/bin/python3 bench/global_bench.py [--ptreg build/ptreg] [--poses 50] [--rounds 2]
                                         [--threads 2] [--json FILE]

cloud_bin_0 (../shared/data/features, with its normals) is turned by --poses rotations
uniform over SO(3) and shifted by about a metre (fixed seed), and registered onto
cloud_bin_1 (the data's truth between them: the identity, good to about a degree).
A pose is recovered when the result is within 3 degrees and 10 cm of the truth.

Both tools run the pipeline of Open3D's global-registration tutorial with ptreg's
default voxel (the target's bounding-box diagonal / 80): voxel-grid centroids,
normals from hybrid (2 voxels, 30) neighborhoods, FPFH from hybrid (5 voxels, 100)
ones, mutual feature matches, RANSAC (3 at a time; edge-length 0.9 and distance 1.5
voxels checkers; inliers within 1.5 voxels; 100000 hypotheses or 0.999 confidence) or
Fast Global Registration (Open3D's default options: tuple test 0.95, 1000 tuples, 64
iterations, mu from 1 to 0.025 by 1.4), then point-to-plane ICP on all points (0.4 voxels, 30 iterations). Each time is from
both clouds in memory to the result, every stage included, in a warm process: Open3D
registers every pose in one Python process, ptreg each pose with --repeat 3 (the median
of three runs in one process). --rounds passes over all poses alternate between the
tools; medians over every run.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

FEATURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "features")


def open3d_peer(args):
    """Runs in its own process (OMP_NUM_THREADS set before Open3D loads): every pose once."""
    import time

    import numpy as np
    import open3d as o3d

    reg = o3d.pipelines.registration
    target = o3d.io.read_point_cloud(os.path.join(FEATURES, "cloud_bin_1.pcd"))
    v = args.voxel
    out = []
    for path in args.sources:
        source = o3d.io.read_point_cloud(path)
        t0 = time.perf_counter()
        down = []
        feats = []
        for cloud in (source, target):
            d = cloud.voxel_down_sample(v)
            d.estimate_normals(o3d.geometry.KDTreeSearchParamHybrid(radius=2 * v, max_nn=30))
            feats.append(reg.compute_fpfh_feature(d, o3d.geometry.KDTreeSearchParamHybrid(radius=5 * v, max_nn=100)))
            down.append(d)
        if args.fgr:
            ransac = reg.registration_fgr_based_on_feature_matching(down[0], down[1], feats[0], feats[1],
                                                                    reg.FastGlobalRegistrationOption())
        else:
            checkers = [reg.CorrespondenceCheckerBasedOnEdgeLength(0.9),
                        reg.CorrespondenceCheckerBasedOnDistance(1.5 * v)]
            ransac = reg.registration_ransac_based_on_feature_matching(
                down[0], down[1], feats[0], feats[1], True, 1.5 * v, reg.TransformationEstimationPointToPoint(False),
                3, checkers, reg.RANSACConvergenceCriteria(100000, 0.999))
        if not target.has_normals():
            target.estimate_normals(o3d.geometry.KDTreeSearchParamKNN(10))
        fine = reg.registration_icp(source, target, 0.4 * v, ransac.transformation,
                                    reg.TransformationEstimationPointToPlane(),
                                    reg.ICPConvergenceCriteria(max_iteration=30))
        ms = (time.perf_counter() - t0) * 1e3
        out.append({"time_ms": ms, "transformation": np.asarray(fine.transformation).tolist()})
    print(json.dumps(out))


def pose_error(truth, T):
    import numpy as np

    A, B = np.asarray(truth), np.asarray(T)
    D = A[:3, :3].T @ B[:3, :3]
    skew = np.array([D[2, 1] - D[1, 2], D[0, 2] - D[2, 0], D[1, 0] - D[0, 1]]) / 2
    angle = float(np.degrees(np.arctan2(np.linalg.norm(skew), (np.trace(D) - 1) / 2)))
    return angle, float(np.linalg.norm(A[:3, 3] - B[:3, 3]))


def make_poses(count, work):
    """The moved sources and, per pose, the truth (the inverse of the motion)."""
    import numpy as np
    import open3d as o3d

    rng = np.random.default_rng(7)
    cloud = o3d.io.read_point_cloud(os.path.join(FEATURES, "cloud_bin_0.pcd"))
    poses = []
    for k in range(count):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        w, x, y, z = q
        R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                      [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                      [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        M = np.eye(4)
        M[:3, :3] = R
        M[:3, 3] = rng.normal(size=3)
        moved = o3d.geometry.PointCloud(cloud)
        moved.transform(M)
        path = os.path.join(work, f"source_{k:03d}.pcd")
        o3d.io.write_point_cloud(path, moved)
        poses.append({"source": path, "truth": np.linalg.inv(M)})
    return poses


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptreg", default="build/ptreg")
    ap.add_argument("--poses", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json")
    ap.add_argument("--peer-open3d", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--fgr", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--voxel", type=float, help=argparse.SUPPRESS)
    ap.add_argument("sources", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer_open3d:
        return open3d_peer(args)
    work = tempfile.mkdtemp(prefix="ptreg-global-")
    poses = make_poses(args.poses, work)
    target = os.path.join(FEATURES, "cloud_bin_1.pcd")

    def run_ptreg(pose, method):
        out = subprocess.run([args.ptreg, "register", pose["source"], target, "--json", "--repeat", "3", "--threads",
                              str(args.threads), "--global", method], check=True, capture_output=True,
                             text=True).stdout
        return json.loads(out)

    def run_open3d(method):
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
        extra = ["--fgr"] if method == "fgr" else []
        peer = subprocess.run([sys.executable, os.path.abspath(__file__), "--peer-open3d", "--voxel", str(voxel)] +
                              extra + [p["source"] for p in poses], check=True, capture_output=True, text=True, env=env)
        return json.loads(peer.stdout)

    voxel = run_ptreg(poses[0], "ransac")["voxel"]
    results = {"ptreg RANSAC": [], "Open3D RANSAC": [], "ptreg FGR": [], "Open3D FGR": []}
    for _ in range(args.rounds):
        results["ptreg RANSAC"].append([run_ptreg(p, "ransac") for p in poses])
        results["Open3D RANSAC"].append(run_open3d("ransac"))
        results["ptreg FGR"].append([run_ptreg(p, "fgr") for p in poses])
        results["Open3D FGR"].append(run_open3d("fgr"))
    rows = {}
    for tool, rounds in results.items():
        times = [r["time_ms"] for run in rounds for r in run]
        ok = sum(1 for k, p in enumerate(poses)
                 if (lambda e: e[0] < 3.0 and e[1] < 0.1)(pose_error(p["truth"], rounds[-1][k]["transformation"])))
        rows[tool] = {"median_ms": statistics.median(times), "recovered": ok, "poses": len(poses)}
    print(f"cloud_bin_0 onto cloud_bin_1 from {len(poses)} poses uniform over SO(3), voxel {voxel:.4f}, "
          f"{args.threads} threads, {args.rounds} rounds:")
    print("| tool | recovered (3 deg, 10 cm) | median ms per registration |")
    print("|---|---:|---:|")
    for tool, r in rows.items():
        print(f"| {tool} | {r['recovered']} / {r['poses']} | {r['median_ms']:.1f} |")
    ratio = {m: rows["Open3D " + m]["median_ms"] / rows["ptreg " + m]["median_ms"] for m in ("RANSAC", "FGR")}
    for m, v in ratio.items():
        print(f"Open3D / ptreg, {m}: {v:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "ratio": ratio, "voxel": voxel}, f, indent=1)


if __name__ == "__main__":
    main()
