#!/usr/bin/python3
"""LiDAR odometry: `ptreg odometry` against KISS-ICP on the same generated drive, in one
run, interleaved: the KITTI metric and ATE of each (`ptreg eval` against the drive's
truth), per-frame latency p50 and p99 (medians over --repeats runs), the ratios, and the
peak RSS of each process.

  cmake -S . -B build && cmake --build build -j2
  /usr/bin/python3 bench/odometry_bench.py [--frames 1000] [--repeats 3] [--seed 1]
      [--ptreg build/ptreg] [--kiss /work/kiss/bin/kiss_icp_run] [--work /work/odo-bench]
      [--threads 2] [--markdown]

The drive is `ptreg synth --lidar-sequence N` (64 beams, 0.2 degree steps, KITTI's
layout), made once into --work. KISS-ICP (PRBonn/kiss-icp, built beside the project by
bench/kiss_icp_bench.sh's recipe; its C++ pipeline, its default KITTI configuration,
deskew off as KITTI's motion-corrected scans need) reads the same .bin files. Each side
reports its own per-frame latency: points in memory to pose (ptreg's JSON latency_ms,
KISS-ICP's RegisterFrame), the file read left out of both. The ratios are KISS-ICP's over
ptreg's; above 1 ptreg is faster (latency) or more accurate (error).
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import cpu_name  # noqa: E402


def timed(cmd, env=None):
    """Runs cmd under /usr/bin/time: (stdout, peak RSS in MiB, wall s)."""
    start = time.time()
    run = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], capture_output=True, text=True, env=env)
    if run.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {run.returncode}: {run.stderr[-500:]}")
    rss = int(run.stderr.strip().splitlines()[-1]) / 1024.0
    return run.stdout, rss, time.time() - start


def percentile(values, p):
    """Nearest rank, as ptreg's summary."""
    v = sorted(values)
    return v[max(0, -(-len(v) * p // 100) - 1)]


def median(values):
    v = sorted(values)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])


def run_ptreg(args, frames_dir, poses):
    out, rss, _ = timed([args.ptreg, "odometry", "--frames", frames_dir, "-o", poses, "--poses", "kitti", "--json",
                         "--threads", str(args.threads)])
    lat = [f["latency_ms"] for f in json.loads(out)["frames"]]
    return lat, rss


def run_kiss(args, frames, poses, times):
    env = dict(os.environ, KISS_THREADS=str(args.threads))
    _, rss, _ = timed([args.kiss, "--out", poses, "--times", times, *frames], env=env)
    lat = [float(x) for x in open(times).read().split()]
    return lat, rss


def evaluate(args, poses, truth):
    run = subprocess.run([args.ptreg, "eval", poses, truth, "--align", "none", "--json"], capture_output=True,
                         text=True)
    if run.returncode != 0:
        return None
    d = json.loads(run.stdout)
    k = d.get("kitti") or {}
    return dict(t=k.get("translation_percent"), r=k.get("rotation_deg_per_m"),
                ate=d["ate"]["translation"]["rmse"], ate_max=d["ate"]["translation"]["max"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frames", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ptreg", default="build/ptreg")
    ap.add_argument("--kiss", default=os.environ.get("KISS_ICP_RUN", "/work/kiss/bin/kiss_icp_run"))
    ap.add_argument("--work", default="/work/odo-bench")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    if not os.access(args.kiss, os.X_OK):
        sys.exit(f"{args.kiss}: no KISS-ICP driver (bench/kiss_icp_bench.sh says how to build it)")
    os.makedirs(args.work, exist_ok=True)
    seq = os.path.join(args.work, f"seq{args.frames}_s{args.seed}")
    if not os.path.isfile(os.path.join(seq, "poses.txt")):
        _, _, wall = timed([args.ptreg, "synth", "--lidar-sequence", str(args.frames), "--frames-dir", seq,
                            "--seed", str(args.seed)])
        print(f"made {args.frames} frames in {wall:.1f} s")
    vel = os.path.join(seq, "velodyne")
    frames = sorted(os.path.join(vel, n) for n in os.listdir(vel) if n.endswith(".bin"))
    truth = os.path.join(seq, "poses.txt")
    lat = {"ptreg": [], "kiss": []}
    rss = {"ptreg": [], "kiss": []}
    for r in range(args.repeats):  # interleaved: the machine's load falls on both alike
        for side in (("ptreg", "kiss") if r % 2 == 0 else ("kiss", "ptreg")):
            poses = os.path.join(args.work, f"{side}_poses.txt")
            if side == "ptreg":
                l, m = run_ptreg(args, vel, poses)
            else:
                l, m = run_kiss(args, frames, poses, os.path.join(args.work, "kiss_times.txt"))
            lat[side].append((percentile(l, 50), percentile(l, 99)))
            rss[side].append(m)
    acc = {s: evaluate(args, os.path.join(args.work, f"{s}_poses.txt"), truth) for s in ("ptreg", "kiss")}
    rows = []
    for side, name in (("ptreg", "ptreg odometry"), ("kiss", "KISS-ICP")):
        p50 = median([x[0] for x in lat[side]])
        p99 = median([x[1] for x in lat[side]])
        a = acc[side] or {}
        rows.append((name, a.get("t"), a.get("r"), a.get("ate"), p50, p99, max(rss[side])))
    print(f"# {args.frames} frames, seed {args.seed}, {args.threads} threads, {args.repeats} interleaved runs; "
          f"CPU: {cpu_name()}")
    head = ("peer", "KITTI t %", "KITTI r deg/m", "ATE rmse m", "p50 ms", "p99 ms", "peak RSS MiB")
    fmt = "| {} | {} | {} | {} | {} | {} | {} |" if args.markdown else "{:16} {:>10} {:>14} {:>11} {:>8} {:>8} {:>13}"
    print(fmt.format(*head))
    if args.markdown:
        print("|" + "---|" * len(head))
    show = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
    for name, t, r, ate, p50, p99, m in rows:
        print(fmt.format(name, show(t, ".3f"), show(r, ".5f"), show(ate, ".3f"), show(p50, ".2f"), show(p99, ".2f"),
                         show(m, ".0f")))
    p, k = rows[0], rows[1]
    print(f"KISS-ICP / ptreg: p50 {k[4] / p[4]:.2f}x, p99 {k[5] / p[5]:.2f}x; "
          f"KITTI translation error {k[1] / p[1]:.2f}x, rotation {k[2] / p[2]:.2f}x" if p[1] and p[2] else "")


if __name__ == "__main__":
    main()
