#!/usr/bin/python3
"""LiDAR localization in a large prior map: issue 54's targets (a 10^8-point LAS in UTM
coordinates, RSS <= 2 GiB, p99 <= 30 ms per 120k-point frame on 2 cores, ATE <= 5 cm, no
frame lost).

A mapping drive (--map-frames frames of the generated street, 64 beams) is written as one
LAS in UTM (`ptreg synth --lidar-map --origin`); a second drive through the same world (1.5 m
to the right, other scans: --lane, --scan-seed) is localized in it by `ptreg localize`,
which first cuts the LAS into tiles (--save-tiles, timed apart), then runs from the tiled
map; `ptreg eval --align none` gives the ATE against the truth. Peak RSS is the localize
run's (/usr/bin/time's maximum resident set).

  /usr/bin/python3 bench/localize_bench.py [--map-frames 900] [--frames 800] [--work DIR]
      [--ptreg build/ptreg] [--keep]

The map and the drive are made once in --work (kept with --keep); the markdown table goes
to stdout.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ORIGIN = "500000,5400000,100"


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-800:]}")
    return r


def max_rss_mib(stderr):
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return int(m.group(1)) / 1024.0 if m else float("nan")


def first_pose(truth):
    """X,Y,Z,YAW of the truth's first pose (the GNSS fix a car would start from)."""
    import math
    with open(truth) as f:
        t, x, y, z, qx, qy, qz, qw = (float(v) for v in f.readline().split())
    yaw = math.degrees(math.atan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz)))
    return f"{x!r},{y!r},{z!r},{yaw!r}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--map-frames", type=int, default=900)
    ap.add_argument("--frames", type=int, default=800)
    ap.add_argument("--azimuth-step", default="0.17", help="the drive's (0.17: about 120k points a frame)")
    ap.add_argument("--work", default="/work/localize-bench")
    ap.add_argument("--ptreg", default="build/ptreg")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--repeats", type=int, default=3, help="localization runs from the .ptm, medians quoted")
    args = ap.parse_args()
    ptreg = os.path.abspath(args.ptreg)
    os.makedirs(args.work, exist_ok=True)
    w = lambda *p: os.path.join(args.work, *p)
    tag = f"{args.map_frames}"
    if not os.path.exists(w(f"map{tag}.las")):
        t0 = time.time()
        run([ptreg, "synth", "--lidar-sequence", str(args.map_frames), "--frames-dir", w("mapping"), "--lidar-map",
             w(f"map{tag}.las"), "--origin", ORIGIN])
        print(f"map: {time.time() - t0:.0f} s", file=sys.stderr)
        shutil.rmtree(w("mapping"))
    drive = f"drive{args.frames}-{args.azimuth_step}"
    if not os.path.exists(w(drive, "truth.txt")):
        os.makedirs(w(drive), exist_ok=True)
        run([ptreg, "synth", "--lidar-sequence", str(args.frames), "--frames-dir", w(drive), "--lane", "-1.5",
             "--scan-seed", "7", "--azimuth-step", args.azimuth_step, "--origin", ORIGIN,
             "--truth-trajectory-out", w(drive, "truth.txt")])
    info = run([ptreg, "info", w(f"map{tag}.las")]).stdout
    map_points = int(re.search(r"(\d+) points", info).group(1))
    init = first_pose(w(drive, "truth.txt"))
    timev = ["/usr/bin/time", "-v"]
    tiles = run(timev + [ptreg, "localize", w(f"map{tag}.las"), "--frames", w(drive, "velodyne"), "--init", init,
                         "--save-tiles", w(f"map{tag}.ptm"), "-o", "/dev/null"])
    tiling_s = float(re.search(r"tiled in ([0-9.]+) s", tiles.stderr).group(1))
    runs = []
    for _ in range(args.repeats):
        loc = run(timev + [ptreg, "localize", w(f"map{tag}.ptm"), "--frames", w(drive, "velodyne"), "--init", init,
                           "-o", w("poses.txt"), "--json"])
        runs.append((json.loads(loc.stdout), max_rss_mib(loc.stderr)))
    js, _ = runs[0]
    s = js["summary"]
    p50 = statistics.median(r[0]["summary"]["latency_ms"]["p50"] for r in runs)
    p99 = statistics.median(r[0]["summary"]["latency_ms"]["p99"] for r in runs)
    rss = statistics.median(r[1] for r in runs)
    ev = run([ptreg, "eval", w("poses.txt"), w(drive, "truth.txt"), "--align", "none", "--json"])
    ate = json.loads(ev.stdout)
    ate_rmse = ate["ate"]["translation"]["rmse"] if "ate" in ate else float("nan")
    points = [f["points"] for f in js["frames"]]
    rows = [
        ("map", f"{map_points:,} points (LAS, UTM)", ""),
        ("frames", f"{s['frames']}, {sum(points) / len(points):,.0f} points a frame", ""),
        ("tiling the LAS (once)", f"{tiling_s:.1f} s", f"that run's peak RSS {max_rss_mib(tiles.stderr):.0f} MiB"),
        ("peak RSS (from the .ptm)", f"{rss:.0f} MiB", "target <= 2048"),
        ("latency p50 / p99 ms", f"{p50:.2f} / {p99:.2f} (medians of {len(runs)} runs)", "target p99 <= 30"),
        ("ATE rmse", f"{ate_rmse * 100:.2f} cm", "target <= 5"),
        ("tracked / recovered / lost", f"{s['tracked']} / {s['recovered']} / {s['lost']}", "target: none lost"),
        ("tiles read", f"{s['tiles_read']}", ""),
    ]
    print("| | measured | |\n|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} |")
    if not args.keep:
        for p in (w("poses.txt"),):
            os.remove(p)


if __name__ == "__main__":
    main()
