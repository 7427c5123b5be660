#!/usr/bin/env python3
"""ptreg register on each GPU against the CPU path on the same machine, in one run.

  python3 bench/gpu/register_gpu.py --ptreg BUILD/ptreg --devices cuda:0 --data DIR --work DIR --out OUTDIR \
      [--poses 20] [--threads N]

The Stanford bunny bun045 moved by --poses random rigid poses (any rotation, seeded:
`ptreg convert --transform`) registered onto bun000 without a guess (`ptreg register`:
voxels, normals, FPFH, mutual matches, RANSAC, point-to-plane refinement), on the CPU
(all --threads) and on each device: per pose the same RANSAC run (hypotheses, passed,
inliers: the device's counts are the CPU's) and the refined transform's largest
difference from the CPU's; the medians of the global stage's and the whole call's
times, and their ratio to the CPU's (the issue's target: register >= 20x the 16-core
CPU). Standard library only. Writes OUTDIR/register_gpu.json and OUTDIR/register_gpu.md.
"""

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys


def run(cmd, timeout=900):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-600:]))
    return p.stdout


def random_pose(rng):
    """A rotation about a uniform axis by a uniform angle, and a shift within 0.1 (the bunny is 0.15 across)."""
    z, phi, angle = rng.uniform(-1, 1), rng.uniform(0, 2 * math.pi), rng.uniform(-math.pi, math.pi)
    r = math.sqrt(1 - z * z)
    x, y = r * math.cos(phi), r * math.sin(phi)
    c, s, C = math.cos(angle), math.sin(angle), 1 - math.cos(angle)
    rot = [[c + x * x * C, x * y * C - z * s, x * z * C + y * s],
           [y * x * C + z * s, c + y * y * C, y * z * C - x * s],
           [z * x * C - y * s, z * y * C + x * s, c + z * z * C]]
    t = [rng.uniform(-0.1, 0.1) for _ in range(3)]
    return [rot[i] + [t[i]] for i in range(3)] + [[0.0, 0.0, 0.0, 1.0]]


def prepare(args):
    source, target = (os.path.join(args.data, "bunny", f) for f in ("bun045.ply", "bun000.ply"))
    rng = random.Random(7)
    scans = []
    for k in range(args.poses):
        pose, scan = (os.path.join(args.work, "pose_%02d.%s" % (k, e)) for e in ("txt", "ply"))
        with open(pose, "w") as f:
            f.write("".join("%.17g %.17g %.17g %.17g\n" % tuple(row) for row in random_pose(rng)))
        if not os.path.exists(scan):
            run([args.ptreg, "convert", source, "-o", scan, "--transform", pose])
        scans.append(scan)
    return scans, target


def register(args, scan, target, device):
    out = run([args.ptreg, "register", scan, target, "--device", device, "--threads", str(args.threads), "--json"])
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptreg", required=True)
    ap.add_argument("--devices", default="", help="GPU devices, comma-separated (the CPU always runs)")
    ap.add_argument("--data", required=True, help="a folder holding bunny/")
    ap.add_argument("--work", default="/tmp/ptreg-register")
    ap.add_argument("--out", default=".")
    ap.add_argument("--poses", type=int, default=20)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    scans, target = prepare(args)
    devices = ["cpu"] + [d for d in args.devices.split(",") if d]
    runs = {d: [] for d in devices}
    for scan in scans:  # the devices interleaved, pose by pose
        for d in devices:
            try:
                runs[d].append(register(args, scan, target, d))
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print("%s %s: %s" % (os.path.basename(scan), d, e), file=sys.stderr)
                runs[d].append(None)
    rows = []
    keys = ("ransac_hypotheses", "ransac_checked", "ransac_inliers")
    for d in devices:
        done = [(c, r) for c, r in zip(runs["cpu"], runs[d]) if c and r]
        if not done:
            rows.append({"device": d, "error": "no run finished"})
            continue
        row = {"device": d, "poses": len(done),
               "global_ms": statistics.median(r["global_ms"] for _, r in done),
               "total_ms": statistics.median(r["time_ms"] for _, r in done)}
        if d != "cpu":
            row["same_ransac"] = sum(all(c[k] == r[k] for k in keys) for c, r in done)
            row["max_dT"] = max(abs(a - b) for c, r in done for ra, rb in zip(c["transformation"], r["transformation"])
                                for a, b in zip(ra, rb))
        rows.append(row)
    cpu = rows[0]
    lines = ["| device | poses | global stage (ms, median) | whole call (ms, median) | speed-up, global / whole | "
             "same RANSAC run | max \\|T - CPU's\\| |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        if "error" in row:
            lines.append("| %s | %s |  |  |  |  |  |" % (row["device"], row["error"]))
            continue
        speed = "-" if row is cpu or "global_ms" not in cpu else "%.1fx / %.1fx" % (
            cpu["global_ms"] / row["global_ms"], cpu["total_ms"] / row["total_ms"])
        lines.append("| %s | %d | %.2f | %.2f | %s | %s | %s |" % (
            row["device"], row["poses"], row["global_ms"], row["total_ms"], speed,
            "%d of %d" % (row["same_ransac"], row["poses"]) if "same_ransac" in row else "-",
            "%.1e" % row["max_dT"] if "max_dT" in row else "-"))
    table = "\n".join(lines) + "\n\nbun045 under %d random poses onto bun000, %d CPU threads.\n" % (args.poses,
                                                                                                  args.threads)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "register_gpu.json"), "w") as f:
        json.dump({"poses": args.poses, "threads": args.threads, "rows": rows}, f, indent=1)
    with open(os.path.join(args.out, "register_gpu.md"), "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
