#!/usr/bin/env python3
"""What `ptreg track -` costs while it waits: the same frames streamed on
stdin twice, back to back and then paced at --rate Hz (a sensor's 10 Hz),
and the process's CPU time (user + system, from wait4) of each. Waiting
must cost nothing: a worker thread that spins between frames shows as
paced CPU time above the back-to-back run's. Prints both and their ratio
(the issue 52 target: at most 1.2).

Plain Python. Example:
    python3 bench/track_idle.py --ptreg build/ptreg --frames 100
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cli"))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))  # ptreg_checks, which track_compare imports
import track_stream  # noqa: E402


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")


def stream(ptreg, model, frames, rate, extra):
    """Runs `ptreg track MODEL -` fed the frames, paced at rate (0: at once);
    its CPU seconds (user + system) and wall seconds."""
    p = subprocess.Popen([ptreg, "track", model, "-", "-o", os.devnull, "--quiet"] + extra, stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t0 = time.monotonic()
    for k, (count, xyz) in enumerate(frames):
        if rate > 0:
            delay = t0 + k / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        p.stdin.write(track_stream.frame_bytes(count, xyz, k / (rate if rate > 0 else 10.0)))
        p.stdin.flush()
    p.stdin.close()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode()
    if p.returncode != 0:
        sys.exit(f"ptreg track failed ({p.returncode}): {err}")
    return usage.ru_utime + usage.ru_stime, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptreg", default=os.path.join(HERE, "..", "build", "ptreg"))
    ap.add_argument("--frames", type=int, default=100)
    ap.add_argument("--rate", type=float, default=10.0)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("track_args", nargs="*", help="more options for ptreg track (after --)")
    a = ap.parse_args()
    extra = list(a.track_args) + (["--threads", str(a.threads)] if a.threads else [])
    with tempfile.TemporaryDirectory() as work:
        model, truth, fdir = (os.path.join(work, x) for x in ("model.ply", "truth.txt", "frames"))
        run([a.ptreg, "synth", "--sequence", str(a.frames), "--model", model, "--frames-dir", fdir,
             "--truth-trajectory-out", truth, "--points", "20000"])
        init = os.path.join(work, "init.txt")
        import track  # noqa: E402  (bench/track.py: the first true pose as --init)
        track.first_pose_matrix(truth, init)
        extra += ["--init", init]
        names = sorted(os.listdir(fdir))
        frames = [track_stream.read_ply_xyz(os.path.join(fdir, n)) for n in names]
        at_once_cpu, at_once_wall = stream(a.ptreg, model, frames, 0.0, extra)
        paced_cpu, paced_wall = stream(a.ptreg, model, frames, a.rate, extra)
    ratio = paced_cpu / at_once_cpu
    print(f"{len(frames)} frames: back to back {at_once_cpu:.2f} s CPU in {at_once_wall:.2f} s; "
          f"at {a.rate:g} Hz {paced_cpu:.2f} s CPU in {paced_wall:.2f} s; ratio {ratio:.2f} (target <= 1.2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
