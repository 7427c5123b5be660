#!/usr/bin/python3
"""The autotuner's targets on this machine (issue 17): for the pair engine at each
--sizes N (N x N pairs, fp32), an exhaustive search (every valid candidate, --reps
repetitions each, the median) and, in the same run, successive halving on a 25% sample;
reported: the exhaustive best against the built-in default (target >= 1.15x, or the
data's explanation why the default is already the best) and the halving winner's time
in the exhaustive table against the exhaustive best (target within 3%).

  cmake --build build -j2
  /usr/bin/python3 bench/tune_bench.py [--sizes 8000] [--reps 5] [--markdown]

The searches use a private cache (PTREG_TUNE_CACHE under a temporary folder), so the
user's is untouched. Standard library only.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tune(ptreg, work, n, search, reps, extra=()):
    path = os.path.join(work, f"{search}_{n}.csv")
    env = dict(os.environ, PTREG_TUNE_CACHE=os.path.join(work, "tune.json"))
    out = subprocess.run([ptreg, "tune", "--size", str(n), "--search", search, "--reps", str(reps), "--budget", "0",
                          "--csv", path, "--json", *extra], capture_output=True, text=True, env=env, check=True)
    rows = list(csv.DictReader(open(path)))
    return json.loads(out.stdout), rows


def key(row):
    return tuple(row[k] for k in ("threads", "col_tile", "row_block", "row_vectors", "tiles_outside"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptreg", default=os.path.join(ROOT, "build", "ptreg"))
    ap.add_argument("--sizes", default="8000")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    lines = ["| N x N | candidates (valid of all) | default ms | exhaustive best ms | best / default | best "
             "| halving: measured (share) | its winner in the exhaustive table ms | vs best |",
             "|---|---|---:|---:|---:|---|---|---:|---:|"]
    with tempfile.TemporaryDirectory() as work:
        for n in [int(s) for s in a.sizes.split(",")]:
            ex, ex_rows = tune(a.ptreg, work, n, "exhaustive", a.reps)
            hv, _ = tune(a.ptreg, work, n, "halving", a.reps, ("--sample", "0.25"))
            table = {key(r): float(r["seconds"]) for r in ex_rows if r["passed"] == "1"}
            best = min(table.values())
            default = ex["default"]["seconds"]
            w = hv["winner"]
            hv_key = tuple(f"{w[k]:g}" for k in ("threads", "col_tile", "row_block", "row_vectors", "tiles_outside"))
            in_table = table.get(hv_key, float("nan"))
            b = ex["winner"]
            desc = ", ".join(f"{k} {b[k]:g}" for k in ("threads", "col_tile", "row_block", "row_vectors",
                                                       "tiles_outside"))
            lines.append(f"| {n} | {ex['candidates']} ({ex['valid_points']:.0f} of {ex['space_points']:.0f}) | "
                         f"{default * 1e3:.2f} | {best * 1e3:.2f} | {default / best:.3f}x | {desc} | "
                         f"{hv['candidates']} ({hv['candidates'] / hv['valid_points']:.0%}) | "
                         f"{in_table * 1e3:.2f} | {in_table / best - 1:+.1%} |")
            # how far the default's neighbours are from it: the data behind "already the best"
            near = sorted(table.items(), key=lambda kv: kv[1])[:5]
            lines.append("|  | fastest five: " + "; ".join(f"{'/'.join(k)} {v * 1e3:.2f}" for k, v in near) +
                         " | | | | | | | |")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
