#!/usr/bin/env python3
"""What the Python binding adds to the library's time: ptreg.icp on a 30k-point
scan of the built-in aircraft (from `ptreg synth`) onto its 20k-point model, the
call's wall time against the time_ms the library reports for the same call
(clouds in memory to result), float32 input (read in place) and float64 input
(Open3D's np.asarray(pcd.points): converted first), medians of --runs calls.

    scripts/install-python.sh --build build build/python-site
    PYTHONPATH=build/python-site /usr/bin/python3 bench/python_overhead.py --ptreg build/ptreg
"""
import argparse
import os
import subprocess
import tempfile
import time

import numpy as np

import ptreg


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptreg", default="build/ptreg", help="the CLI, to make the data")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--iterations", type=int, default=30)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ptreg-pyo-")
    subprocess.run([args.ptreg, "synth", "--shape", "aircraft", "--model", os.path.join(work, "m.ply"),
                    "--model-points", "20000", "-o", os.path.join(work, "s.ply"), "--points", "15000",
                    "--max-angle", "5", "--seed", "3"], check=True, capture_output=True)
    model = ptreg.read_cloud(os.path.join(work, "m.ply")).points
    scan = np.ascontiguousarray(np.concatenate([ptreg.read_cloud(os.path.join(work, "s.ply")).points] * 2)[:30000])
    print(f"ptreg {ptreg.__version__}, {ptreg.get_num_threads()} threads, {len(scan)} onto {len(model)} points, "
          f"{args.iterations} iterations, {args.runs} calls each, medians:")
    print("| input | library time_ms | call wall ms | added |")
    print("|---|---:|---:|---:|")
    for label, source in (("float32 (in place)", scan), ("float64 (converted)", scan.astype(np.float64))):
        lib, wall = [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            r = ptreg.icp(source, model, max_iter=args.iterations, tol=0)
            wall.append((time.perf_counter() - t0) * 1e3)
            lib.append(r.time_ms)
        added = np.median([(w - l) / l for w, l in zip(wall, lib)])
        print(f"| {label} | {np.median(lib):.2f} | {np.median(wall):.2f} | {100 * added:.2f}% |")


if __name__ == "__main__":
    main()
