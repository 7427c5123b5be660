#!/usr/bin/env python3
"""ptreg odometry on each GPU against the CPU path on the same machine, in one run.

  python3 bench/gpu/odometry_gpu.py --ptreg BUILD/ptreg --devices cuda:0 --work DIR --out OUTDIR \
      [--frames 300] [--beams 64] [--threads N]

A generated drive (ptreg synth --lidar-sequence: a street with turns and hills, 64 beams at
0.2 degrees, KITTI's layout with its poses.txt), registered by odometry with its ICP steps on
each device in turn (the map stays on the host, copied up once a registration), the frames
read from files. Reported per device: the per-frame latency's p50, p99 and max (points in
memory to pose), the KITTI translation and rotation errors against the truth (ptreg eval),
and the largest difference from the CPU's poses. Standard library only. Writes
OUTDIR/odometry_gpu.json and OUTDIR/odometry_gpu.md.
"""

import argparse
import json
import os
import subprocess
import sys


def run(cmd, timeout=900):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-600:]))
    return p.stdout


def prepare(args):
    seq = os.path.join(args.work, "seq%d_b%d" % (args.frames, args.beams))
    if not os.path.isfile(os.path.join(seq, "poses.txt")):
        run([args.ptreg, "synth", "--lidar-sequence", str(args.frames), "--beams", str(args.beams), "--frames-dir",
             seq])
    return seq


def odometry(args, seq, device):
    poses = os.path.join(args.work, "poses_%s.txt" % device.replace(":", "_"))
    out = run([args.ptreg, "odometry", "--frames", os.path.join(seq, "velodyne"), "--poses", "kitti", "-o", poses,
               "--device", device, "--threads", str(args.threads), "--json"])
    js = json.loads(out)
    kitti = json.loads(run([args.ptreg, "eval", poses, os.path.join(seq, "poses.txt"), "--align", "none",
                            "--json"])).get("kitti", {})
    return js, kitti


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptreg", required=True)
    ap.add_argument("--devices", default="", help="GPU devices, comma-separated (the CPU always runs)")
    ap.add_argument("--work", default="/tmp/ptreg-odometry")
    ap.add_argument("--out", default=".")
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--beams", type=int, default=64)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    seq = prepare(args)
    devices = ["cpu"] + [d for d in args.devices.split(",") if d]
    runs = {}
    for d in devices:
        try:
            runs[d] = odometry(args, seq, d)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
            print("%s: %s" % (d, e), file=sys.stderr)
    cpu = runs.get("cpu")
    rows = []
    for d, (js, kitti) in runs.items():
        s = js["summary"]
        row = {"device": d, "ran_on": js.get("device"), "frames": s["frames"], "latency_ms": s["latency_ms"],
               "kitti": kitti}
        if cpu and d != "cpu":
            row["max_pose_diff"] = max(abs(a - b) for fa, fb in zip(cpu[0]["frames"], js["frames"])
                                       for ra, rb in zip(fa["pose"], fb["pose"]) for a, b in zip(ra, rb))
        rows.append(row)
    lines = ["| device (ran on) | frames | latency p50 / p99 / max (ms) | KITTI translation % / rotation deg/m | "
             "max \\|pose - CPU's\\| |", "|---|---|---|---|---|"]
    for row in rows:
        lat, k = row["latency_ms"], row["kitti"] or {}
        lines.append("| %s (%s) | %d | %.2f / %.2f / %.2f | %s | %s |" % (
            row["device"], row["ran_on"], row["frames"], lat["p50"], lat["p99"], lat["max"],
            "%.3f / %.5f" % (k["translation_percent"], k["rotation_deg_per_m"])
            if "translation_percent" in k else "-",
            "%.1e" % row["max_pose_diff"] if "max_pose_diff" in row else "-"))
    table = "\n".join(lines) + "\n\n%d frames, %d beams, %d CPU threads.\n" % (args.frames, args.beams, args.threads)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "odometry_gpu.json"), "w") as f:
        json.dump({"frames": args.frames, "beams": args.beams, "threads": args.threads, "rows": rows}, f, indent=1)
    with open(os.path.join(args.out, "odometry_gpu.md"), "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
