#!/usr/bin/python3
"""Coherent Point Drift's accuracy on a known deformation: the Stanford bunny scan
bun000.ply (all 40,256 points by default) bent by a smooth field d, with noise and 5%
uniform outliers in the target, registered by `ptreg cpd --transform deformable`. The
target is "RMS error to the truth <= 10% of the field's RMS":

    error = sqrt(mean_i |moved_i - (y_i + d(y_i))|^2)   over the source points y_i
    field = sqrt(mean_i |d(y_i)|^2)                       ratio = error / field <= 0.10

  cmake -S . -B build && cmake --build build -j2
  /usr/bin/python3 bench/cpd_accuracy.py            # the target's run: 40,256 points, about 7 min on 2 cores
  /usr/bin/python3 bench/cpd_accuracy.py --points 10000 --lambda 2400      # a quicker look (~30 s)
  /usr/bin/python3 bench/cpd_accuracy.py [--beta 0.1] [--lambda 9600] [--w 0.05] [--max-iter 200]
      [--tol 1e-5] [--low-rank 100] [--points N] [--seed 1] [--amplitude 0.07] [--noise 0.003]
      [--outliers 0.05] [--ptreg build/ptreg] [--ptreg-arg ARG ...] [--keep DIR] [--markdown]
      [--json FILE]

Data (seeded by --seed; the same for every ptreg): the source is the scan's points (metres,
size s = the bounding box's largest side, 0.156 m), or --points of them drawn without
replacement. The field, with u = (y - y_min) / H the height in [0, 1] (H the scan's
height) and (a, c) = ((x - x_c) / H, (z - z_c) / H) about the box's centre, is a beam's
bend forward (x) growing with the height, the sections turning with it, a twist about
the vertical axis and a low ripple:

    d = A * (u^2 - 0.5 u c,  -2 u a,  0.5 u a + 0.3 sin(pi u) sin(2 pi a))

with A chosen so that the field's RMS over the whole scan is --amplitude * s (default 7%,
about 11 mm; the tip moves about 3 cm). The target is y + d(y) plus Gaussian noise of
sd --noise * s on every coordinate (default 0.3%, 0.47 mm), plus --outliers * N points
(5%) uniform in the bounding box of those, shuffled. The clouds are binary little-endian
PLY (float32); the error is measured against the float32 source moved by d in float64.

ptreg runs as `ptreg cpd SOURCE TARGET --transform deformable --beta B --lambda L --w W
--max-iter N --low-rank K [--tol T] -o MOVED.ply --json` (printed as run). Reported: the
error, the field's RMS, their ratio and the verdict, the median and 95th percentile of
the per-point error, ptreg's time_ms, iterations, sigma2 and cg_iterations, the process's
wall time and peak RSS (wait4's ru_maxrss of that child alone) and the CPU. The script
exits 1 when the ratio is not <= 0.10 (a NaN or a missing point never passes) or ptreg
fails.

Settings. ptreg's --beta and --lambda are pycpd's, in the clouds' units and without
normalisation, so neither is scale-free: the M-step solves (G + lambda sigma^2 P1^-1) W =
..., sigma^2 is in m^2 (here it ends near 2e-7, the noise's variance) and G's leading
eigenvalues grow with N, so the field's stiffness goes as lambda / (N s^2). The paper's
lambda = 2 on unit-variance clouds is lambda = 2 / 0.056^2 ~ 600 here (0.056 m: the scan's
RMS radius), which suits N = 5,000; lambda must grow in proportion to N: the defaults
(beta 0.1 m, lambda 9600) are for the full scan, 2400 for --points 10000. A narrow beta
(0.02-0.05 m) or a lambda of a few lets the bunny's parts slide and fold: the error then
exceeds the field (ratio > 1). --low-rank 100 (the paper's fast variant) is the default:
with beta 0.1 m G's spectrum falls fast, and at 10,000 points it gave the same error as G
itself in under a quarter of the time; --low-rank 0 solves with G itself (conjugate
gradients, each step N^2 pairs: many minutes at 40k on 2 cores).
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cpd_bench import read_points  # noqa: E402
from machine import cpu_name  # noqa: E402

BUNNY = os.path.join(ROOT, "..", "shared", "data", "bunny", "bun000.ply")
TARGET_RATIO = 0.10


def read_bunny(path):
    """x y z of bun000.ply's vertices (ascii PLY; a range_grid element follows them)."""
    with open(path) as f:
        n = None
        for line in f:
            if line.startswith("element vertex"):
                n = int(line.split()[2])
            if line.strip() == "end_header":
                break
        if n is None:
            sys.exit(f"{path}: no vertex element")
        return np.loadtxt(f, max_rows=n, usecols=(0, 1, 2), dtype=np.float64)


def write_ply(path, points):
    """Binary little-endian PLY, float x y z."""
    p = np.ascontiguousarray(points, dtype="<f4")
    with open(path, "wb") as f:
        f.write(f"ply\nformat binary_little_endian 1.0\nelement vertex {len(p)}\nproperty float x\n"
                f"property float y\nproperty float z\nend_header\n".encode())
        f.write(p.tobytes())


class Field:
    """The bend: fixed by the whole scan (its box and its RMS), so --points does not change it."""

    def __init__(self, scan, amplitude):
        lo, hi = scan.min(axis=0), scan.max(axis=0)
        self.size = float(np.max(hi - lo))
        self.y0, self.h = float(lo[1]), float(hi[1] - lo[1])
        self.xc, self.zc = float(0.5 * (lo[0] + hi[0])), float(0.5 * (lo[2] + hi[2]))
        self.scale = 1.0
        self.scale = amplitude * self.size / rms(self(scan))

    def __call__(self, p):
        u = (p[:, 1] - self.y0) / self.h
        a = (p[:, 0] - self.xc) / self.h
        c = (p[:, 2] - self.zc) / self.h
        d = np.stack([u * u - 0.5 * u * c,
                      -2.0 * u * a,
                      0.5 * u * a + 0.3 * np.sin(math.pi * u) * np.sin(2.0 * math.pi * a)], axis=1)
        return self.scale * d


def rms(v):
    """sqrt(mean |v_i|^2) over rows; NaN for no rows or non-finite values (never a pass)."""
    if len(v) == 0:
        return float("nan")
    return float(np.sqrt(np.mean(np.sum(np.asarray(v, dtype=np.float64) ** 2, axis=1))))


def make_data(a, work):
    scan = read_bunny(a.bunny)
    field = Field(scan, a.amplitude)
    rng = np.random.default_rng(a.seed)
    n = len(scan) if not a.points or a.points >= len(scan) else a.points
    idx = np.sort(rng.choice(len(scan), n, replace=False)) if n < len(scan) else np.arange(n)
    source = scan[idx].astype(np.float32)
    y = source.astype(np.float64)
    truth = y + field(y)
    inliers = truth + rng.normal(0.0, a.noise * field.size, truth.shape)
    n_out = int(round(a.outliers * n))
    lo, hi = inliers.min(axis=0), inliers.max(axis=0)
    target = np.concatenate([inliers, rng.uniform(lo, hi, (n_out, 3))])
    target = target[rng.permutation(len(target))]
    paths = {k: os.path.join(work, k + ".ply") for k in ("source", "target", "truth", "moved")}
    write_ply(paths["source"], source)
    write_ply(paths["target"], target)
    if a.keep:
        write_ply(paths["truth"], truth)
    return y, truth, field, n_out, paths


def run_ptreg(cmd, timeout):
    """Runs cmd; returns (stdout, wall s, peak RSS MiB of that process alone: wait4's ru_maxrss)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                sys.exit(f"timed out after {timeout:.0f} s: {' '.join(cmd)}")
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{stderr[-4000:]}")
    return stdout, wall, ru.ru_maxrss / 1024.0


def fmt(x, spec):
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--beta", type=float, default=0.1, help="ptreg's --beta, metres (default 0.1)")
    ap.add_argument("--lambda", dest="lam", type=float, default=9600.0,
                    help="ptreg's --lambda (default 9600, for all 40,256 points; scale it with --points)")
    ap.add_argument("--w", type=float, default=0.05, help="ptreg's --w (default 0.05)")
    ap.add_argument("--max-iter", type=int, default=200, help="ptreg's --max-iter (default 200)")
    ap.add_argument("--tol", type=float, default=None, help="ptreg's --tol (default: ptreg's, 1e-5)")
    ap.add_argument("--low-rank", type=int, default=100, help="ptreg's --low-rank K (default 100; 0: G itself)")
    ap.add_argument("--ptreg-arg", action="append", default=[], help="one more argument for ptreg cpd (repeatable)")
    ap.add_argument("--points", type=int, default=0, help="source points drawn from the scan (default 0: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--amplitude", type=float, default=0.07, help="the field's RMS over the scan / its size")
    ap.add_argument("--noise", type=float, default=0.003, help="the target's noise sd / the scan's size")
    ap.add_argument("--outliers", type=float, default=0.05, help="uniform outliers added, per source point")
    ap.add_argument("--bunny", default=BUNNY, help="the scan (default ../shared/data/bunny/bun000.ply)")
    ap.add_argument("--ptreg", default=os.path.join(ROOT, "build", "ptreg"))
    ap.add_argument("--keep", default=None, metavar="DIR",
                    help="write source, target, truth and moved .ply here (default: a temporary folder)")
    ap.add_argument("--timeout", type=float, default=7200.0, help="seconds for the ptreg run")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", default=None, help="write the numbers here")
    a = ap.parse_args()
    if not os.path.exists(a.bunny):
        sys.exit(f"no scan at {a.bunny} (the shared data folder, ../shared/data from the project's root)")

    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        tmp, work = None, a.keep
    else:
        tmp = tempfile.TemporaryDirectory(prefix="cpd_accuracy_")
        work = tmp.name
    try:
        y, truth, field, n_out, paths = make_data(a, work)
        cmd = [a.ptreg, "cpd", paths["source"], paths["target"], "--transform", "deformable",
               "--beta", repr(a.beta), "--lambda", repr(a.lam), "--w", repr(a.w), "--max-iter", str(a.max_iter)]
        if a.tol is not None:
            cmd += ["--tol", repr(a.tol)]
        cmd += ["--low-rank", str(a.low_rank)]
        cmd += a.ptreg_arg + ["-o", paths["moved"], "--json"]
        print("$ " + " ".join(cmd), flush=True)
        stdout, wall, rss = run_ptreg(cmd, a.timeout)
        r = json.loads(stdout)
        moved = read_points(paths["moved"])
    finally:
        if tmp is not None:
            tmp.cleanup()

    d = truth - y
    field_rms = rms(d)
    if moved.shape != truth.shape:
        print(f"moved has {moved.shape[0]} points, the source {truth.shape[0]}: no pass")
        err = np.full(len(truth), float("nan"))
    else:
        err = np.sqrt(np.sum((moved - truth) ** 2, axis=1))
    error_rms = float(np.sqrt(np.mean(err ** 2))) if len(err) else float("nan")
    ratio = error_rms / field_rms if field_rms > 0 else float("nan")
    ok = bool(np.all(np.isfinite(err))) and math.isfinite(ratio) and ratio <= TARGET_RATIO
    med = float(np.median(err)) if np.all(np.isfinite(err)) else float("nan")
    p95 = float(np.percentile(err, 95)) if np.all(np.isfinite(err)) else float("nan")

    n = len(y)
    print(f"\n{cpu_name()}, {os.cpu_count()} CPUs")
    print(f"bunny bun000: N = {n} source points, M = {n + n_out} target points ({n_out} outliers), "
          f"size {field.size * 1e3:.1f} mm; field RMS {field_rms * 1e3:.2f} mm "
          f"({100 * field_rms / field.size:.1f}% of the size, "
          f"largest {np.max(np.linalg.norm(d, axis=1)) * 1e3:.1f} mm), "
          f"noise sd {a.noise * field.size * 1e3:.2f} mm; seed {a.seed}\n")
    head = ["beta", "lambda", "w", "error RMS mm", "field RMS mm", "ratio", "median mm", "p95 mm", "target <= 0.10",
            "iterations", "sigma2", "cg its", "time_ms", "wall s", "peak RSS MiB"]
    row = [repr(a.beta), repr(a.lam), repr(a.w), fmt(error_rms * 1e3, ".3f"), fmt(field_rms * 1e3, ".3f"),
           fmt(ratio, ".4f"), fmt(med * 1e3, ".3f"), fmt(p95 * 1e3, ".3f"), "met" if ok else "NOT met",
           r.get("iterations", "-"), fmt(r.get("sigma2"), ".3g"), r.get("cg_iterations", "-"),
           fmt(r.get("time_ms"), ".0f"), fmt(wall, ".2f"), fmt(rss, ".0f")]
    table([head, row], a.markdown)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"command": cmd, "cpu": cpu_name(), "cpus": os.cpu_count(), "n": n, "m": n + n_out,
                       "size_m": field.size, "field_rms_m": field_rms, "error_rms_m": error_rms, "ratio": ratio,
                       "median_m": med, "p95_m": p95, "target_ratio": TARGET_RATIO, "met": ok, "wall_s": wall,
                       "peak_rss_mib": rss, "beta": a.beta, "lambda": a.lam, "w": a.w, "seed": a.seed,
                       "amplitude": a.amplitude, "noise": a.noise, "outliers": a.outliers, "ptreg": r}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
