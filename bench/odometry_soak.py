#!/usr/bin/python3
"""LiDAR odometry's soak: a long generated drive streamed into `ptreg odometry -` (the
PTF1 stream, no files), its resident memory sampled as it goes. The local map's bound
(voxels beyond --max-range dropped, at most 20 points a voxel) should make the RSS flat
once the map is full; the latency percentiles come from a fixed histogram (0.2% buckets),
so nothing else grows with the run.

  /usr/bin/python3 bench/odometry_soak.py [--frames 30000] [--beams 16] [--azimuth-step 0.4]
      [--speed 3] [--ptreg build/ptreg] [--every 2]

Prints the RSS (MiB) at each tenth of the run and the growth from the first tenth to the
end, per 1,000 frames.
"""
import argparse
import subprocess
import sys
import time


def rss_mib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frames", type=int, default=30000)
    ap.add_argument("--beams", type=int, default=16)
    ap.add_argument("--azimuth-step", default="0.4")
    ap.add_argument("--speed", default="3")
    ap.add_argument("--ptreg", default="build/ptreg")
    ap.add_argument("--every", type=float, default=2.0)
    args = ap.parse_args()
    synth = subprocess.Popen([args.ptreg, "synth", "--lidar-sequence", str(args.frames), "--beams", str(args.beams),
                              "--azimuth-step", args.azimuth_step, "--speed", args.speed, "--frames-dir", "-"],
                             stdout=subprocess.PIPE)
    # no --json: it keeps every frame's record for the output
    odo = subprocess.Popen([args.ptreg, "odometry", "-", "-o", "/dev/null"], stdin=synth.stdout,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    synth.stdout.close()
    start, samples = time.time(), []
    while odo.poll() is None:
        r = rss_mib(odo.pid)
        if r is not None:
            samples.append((time.time() - start, r))
        time.sleep(args.every)
    out, err = odo.communicate()
    if odo.returncode != 0 or synth.wait() != 0:
        sys.exit(f"the run failed: {err[-500:]}")
    wall = time.time() - start
    print(out.strip())
    print(f"wall {wall:.0f} s")
    if len(samples) >= 10:
        marks = [samples[min(len(samples) - 1, k * len(samples) // 10)] for k in range(10)] + [samples[-1]]
        print("RSS MiB at each tenth: " + ", ".join(f"{r:.1f}" for _, r in marks))
        first, last = marks[1][1], marks[-1][1]
        frames_between = args.frames * (marks[-1][0] - marks[1][0]) / max(1e-9, marks[-1][0])
        print(f"from the first tenth to the end: {last - first:+.2f} MiB over {frames_between:.0f} frames "
              f"({(last - first) / max(1.0, frames_between / 1000):+.3f} MiB per 1,000 frames)")


if __name__ == "__main__":
    main()
