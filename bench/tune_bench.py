#!/usr/bin/python3
"""The autotuner's targets on this machine (issue 17): for each kernel (the pair engine at
N x N pairs, fp32; Harris on an N x N x N/2 uint8 volume; FPFH on N points) an exhaustive
search (every valid candidate, --reps repetitions each, the median) and, in the same run,
the budgeted search (coordinate descent from the default, at most 25% of the space;
--budgeted halving: successive halving on a 25% sample instead); reported: the exhaustive best against the built-in
default (target >= 1.15x, or the data's explanation why the default is already the
best), the halving winner's time in the exhaustive table against the exhaustive best
(target within 3%), and the five fastest candidates (the data behind either).

  cmake --build build -j2
  /usr/bin/python3 bench/tune_bench.py [--cases pair:8000,harris:256,fpfh:50000] [--reps 5]

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


def tune(ptreg, work, kernel, n, search, reps, extra=()):
    path = os.path.join(work, f"{kernel}_{search}_{n}.csv")
    env = dict(os.environ, PTREG_TUNE_CACHE=os.path.join(work, "tune.json"))
    out = subprocess.run([ptreg, "tune", "--kernel", kernel, "--size", str(n), "--search", search, "--reps",
                          str(reps), "--budget", "0", "--csv", path, "--json", *extra], capture_output=True,
                         text=True, env=env, check=True)
    rows = list(csv.DictReader(open(path)))
    return json.loads(out.stdout), rows


NOT_PARAMS = ("seconds", "rate", "error", "passed", "reps", "rounds", "winner", "default")


def params(rows):
    return [k for k in rows[0] if k not in NOT_PARAMS]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptreg", default=os.path.join(ROOT, "build", "ptreg"))
    ap.add_argument("--cases", default="pair:8000,harris:256,fpfh:50000")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--budgeted", default="coordinate", choices=("coordinate", "halving"))
    a = ap.parse_args()
    lines = ["| kernel, size | candidates (valid of all) | default ms | exhaustive best ms | best / default "
             "| best | budgeted search: measured (share) | its winner in the exhaustive table ms | vs best |",
             "|---|---|---:|---:|---:|---|---|---:|---:|"]
    with tempfile.TemporaryDirectory() as work:
        for case in a.cases.split(","):
            kernel, n = case.split(":")
            ex, ex_rows = tune(a.ptreg, work, kernel, int(n), "exhaustive", a.reps)
            hv, _ = tune(a.ptreg, work, kernel, int(n), a.budgeted, a.reps, ("--sample", "0.25"))
            names = params(ex_rows)
            table = {tuple(r[k] for k in names): float(r["seconds"]) for r in ex_rows if r["passed"] == "1"}
            best = min(table.values())
            default = ex["default"]["seconds"]
            hv_key = tuple(f"{hv['winner'][k]:g}" for k in names)
            in_table = table.get(hv_key, float("nan"))
            desc = ", ".join(f"{k} {ex['winner'][k]:g}" for k in names)
            lines.append(f"| {kernel} {n} | {ex['candidates']} ({ex['valid_points']:.0f} of "
                         f"{ex['space_points']:.0f}) | {default * 1e3:.2f} | {best * 1e3:.2f} | "
                         f"{default / best:.3f}x | {desc} | {hv['candidates']} "
                         f"({hv['candidates'] / hv['valid_points']:.0%}) | {in_table * 1e3:.2f} | "
                         f"{in_table / best - 1:+.1%} |")
            near = sorted(table.items(), key=lambda kv: kv[1])[:5]
            lines.append(f"|  | fastest ({'/'.join(names)}): " +
                         "; ".join(f"{'/'.join(k)} {v * 1e3:.2f}" for k, v in near) + " | | | | | | | |")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
