#!/usr/bin/python3
"""LDDMM landmark-shooting benchmark: the optic-nerve-head study's configuration
(sigma 1.5, T = 40 time points, 400 L-BFGS iterations, lambda 500000, gamma 1,
float32 pairs, `ptreg lddmm --preset mtl`) on N = 1847 landmarks, and the cost of one
Euler step for N = 500 ... 8000, which must grow as N^2; pair terms per second against
this CPU's FLOP limit (bench/peak_flops.c).

  cmake -S . -B build && cmake --build build -j2
  /usr/bin/python3 bench/lddmm_bench.py [--n 1847] [--sizes 500,1000,2000,4000,8000]
      [--threads 2] [--repeat 3] [--markdown]

Data: `ptreg synth --shape blob --model-points N --seed 5` samples N points uniformly
over a smooth closed surface (radius about 1), scaled by 10 so that sigma = 1.5 is a
local kernel (about 15% of the shape). The target is the template moved by a smooth
deformation, x + A (sin(0.3 y + 0.2 z), sin(0.25 z + 0.1 x), sin(0.2 x + 0.3 y)) with
A = 1 (two thirds of sigma). The full run is timed by ptreg itself (`time_ms`: from the
landmarks in memory to the result, L-BFGS included). One Euler step is a shooting with
zero momenta and no iteration (`--max-iter 0 --init zero`): 39 flow passes, each N^2
pair terms; its time is the median of --repeat runs divided by 39.

The study took 35 +- 5 min on a CPU and 32 s on a GTX 980 Ti GPU; the target here is
<= 180 s on 2 cores.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

from machine import cpu_name

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TARGET_S = 180.0
SCALE = 10.0
AMPLITUDE = 1.0
# Vector instructions per 16 pair terms of the AVX-512 kernels
# (src/pair/lddmm_kernels_isa.c), counting an FMA as 2 flops:
#   flow:    d 3 sub, d^2 1 mul + 2 fma, scale 1 mul, exp 10 (5 fma), v 3 fma,
#            p.p 1 mul + 2 fma, e*c 1 mul, f 3 fma              -> 27 instr, 44 flops
#   adjoint: d, d^2, scale, exp as above (16 instr), db 3 sub, db.d 1 mul + 2 fma,
#            t 1 mul, p.p 3, ec 1, a_i.p_j + a_j.p_i 6 + 1 add, u 1 mul,
#            A P Q1 Q2 3 fma each, Q3 1 mul + 3 fma                -> 51 instr, 86 flops
# Since bench/NOTES.md change 122 the exp is the pair engine's 2^t (VREDUCEPS, 5 fma,
# VSCALEFPS: 7 instructions, was 10): 24 and 48 instructions; the flop counts
# stay the yardstick the earlier results were measured against.
FLOW_FLOPS, ADJOINT_FLOPS = 44, 86


def run(cmd, timeout=7200):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr}")
    return proc.stdout


def make_pair(ptreg, work, n):
    model = os.path.join(work, f"model{n}.xyz")
    run([ptreg, "synth", "--shape", "blob", "--model", model, "--model-points", str(n), "--seed", "5",
         "--points", "100"])
    pts = []
    with open(model) as f:
        for line in f:
            v = line.split()
            if len(v) >= 3:
                pts.append(tuple(SCALE * float(x) for x in v[:3]))
    tmpl, tgt = os.path.join(work, f"template{n}.csv"), os.path.join(work, f"target{n}.csv")
    with open(tmpl, "w") as a, open(tgt, "w") as b:
        for x, y, z in pts:
            a.write(f"{x:.9g},{y:.9g},{z:.9g}\n")
            d = (math.sin(0.3 * y + 0.2 * z), math.sin(0.25 * z + 0.1 * x), math.sin(0.2 * x + 0.3 * y))
            b.write(f"{x + AMPLITUDE * d[0]:.9g},{y + AMPLITUDE * d[1]:.9g},{z + AMPLITUDE * d[2]:.9g}\n")
    return tmpl, tgt, len(pts)


def lddmm(ptreg, tmpl, tgt, threads, extra=()):
    return json.loads(run([ptreg, "lddmm", tmpl, tgt, "--preset", "mtl", "--threads", str(threads), "--json"]
                          + list(extra)))


def peak_gflops(work):
    exe = os.path.join(work, "peak_flops")
    run(["cc", "-O3", os.path.join(HERE, "peak_flops.c"), "-o", exe])
    return json.loads(run([exe]))


def step_costs(a, ptreg, work):
    rows = []
    for n in [int(s) for s in a.sizes.split(",")]:
        tmpl, tgt, n = make_pair(ptreg, work, n)
        times = [lddmm(ptreg, tmpl, tgt, a.threads, ["--max-iter", "0", "--init", "zero"])["time_ms"]
                 for _ in range(a.repeat)]
        ms = sorted(times)[len(times) // 2] / 39.0
        rows.append({"n": n, "ms_per_step": ms, "ns_per_pair": ms * 1e6 / (n * n)})
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ptreg", default=os.path.join(ROOT, "build", "ptreg"))
    p.add_argument("--n", type=int, default=1847)
    p.add_argument("--sizes", default="500,1000,2000,4000,8000")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--markdown", action="store_true")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        peak = peak_gflops(work)
        tmpl, tgt, n = make_pair(a.ptreg, work, a.n)
        full = lddmm(a.ptreg, tmpl, tgt, a.threads)
        steps = step_costs(a, a.ptreg, work)
    report(a, full, steps, peak, n)


def report(a, r, steps, peak, n):
    md = a.markdown
    gf = peak.get("fp32_gflops_avx512_per_core") or peak.get("fp32_gflops_avx2_per_core") or 0
    secs = r["time_ms"] / 1000.0
    fold = r["avg_distance_before"] / r["avg_distance_after"] if r["avg_distance_after"] else float("inf")
    print(f"{cpu_name()}, {os.cpu_count()} CPUs, ptreg isa {r['isa']}, {a.threads} threads")
    print(f"fp32 peak (bench/peak_flops.c): {gf:.1f} GFLOP/s per core\n")
    head = ["N", "time s", "target s", "iterations", "evaluations", "avg dist before", "after", "fold",
            "max dist before", "after", "objective", "pair terms/s", "stop"]
    vals = [n, f"{secs:.1f}", f"{TARGET_S:.0f}", r["iterations"], r["evaluations"],
            f"{r['avg_distance_before']:.4g}", f"{r['avg_distance_after']:.3g}", f"{fold:.0f}",
            f"{r['max_distance_before']:.4g}", f"{r['max_distance_after']:.3g}", f"{r['objective']:.6g}",
            f"{r['pair_terms_per_s']:.3g}", r["stop_reason"]]
    table([head, vals], md)
    # each evaluation: 39 flow and 39 adjoint passes, so half the terms are each kind
    flops = r["pair_terms_per_s"] * (FLOW_FLOPS + ADJOINT_FLOPS) / 2
    print(f"\nfull run: {flops / 1e9:.1f} GFLOP/s of kernel arithmetic = "
          f"{100 * flops / (gf * 1e9 * a.threads):.0f}% of {a.threads} x {gf:.1f} GFLOP/s "
          f"({'reached' if secs <= TARGET_S else 'NOT reached'}: {secs:.1f} s vs {TARGET_S:.0f} s)\n")
    rows = [["N", "ms per Euler step", "ns per pair term", "vs N^2 (first row = 1)"]]
    base = steps[0]["ns_per_pair"]
    for s in steps:
        rows.append([s["n"], f"{s['ms_per_step']:.3f}", f"{s['ns_per_pair']:.3f}", f"{s['ns_per_pair'] / base:.2f}"])
    table(rows, md)


def table(rows, md):
    if md:
        print("| " + " | ".join(str(c) for c in rows[0]) + " |")
        print("|" + "---|" * len(rows[0]))
        for r in rows[1:]:
            print("| " + " | ".join(str(c) for c in r) + " |")
        return
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(str(c).rjust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
