#!/usr/bin/python3
"""Coherent Point Drift: `ptreg cpd` against pycpd (pure NumPy) on the same clouds in
one run, interleaved, medians of --repeats runs, ratios, peak RSS of each process, and
the relative RMS difference of the two moved sources.

  cmake -S . -B build && cmake --build build -j2
  /usr/bin/python3 bench/cpd_bench.py [--n 5000] [--repeats 3] [--cases deformable,rigid,affine]
      [--ptreg build/ptreg] [--pycpd /work/pycpd-src] [--pycpd-blas DIR] [--precision fp64]
      [--ptreg-format ply|npy] [--markdown] [--json FILE]
  /usr/bin/python3 bench/cpd_bench.py --scale-only 100000     # ptreg alone, deformable N x N

pycpd (siavashk/pycpd, the package folder under --pycpd; used as a peer, not in this
tree) runs in a child /usr/bin/python3, as ptreg does in a child: both are timed the
same way, the process's wall time (parent's clock), its user + system CPU time and
peak RSS (/usr/bin/time %U %S %M), and each reports its own registration time (ptreg's JSON `time_ms`; pycpd's
register() call, after the clouds are in memory as float64). The ratios are pycpd's
time over ptreg's. The clouds are float32; pycpd reads them from .npy (as float64),
ptreg from binary PLY files of the same float32 coordinates (--ptreg-format npy: the
.npy files themselves, for a ptreg that reads and writes them).

Debian's NumPy links the reference BLAS (netlib, one thread, ~3.6 GFLOP/s here), on
which pycpd's deformable step (a dense M x M x M product diag(P1) G and an M x M solve
per iteration) takes over a minute per iteration at M = 5,000. --pycpd-blas DIR puts DIR
first on the child's LD_LIBRARY_PATH, e.g. OpenBLAS unpacked without installing it
(the system's BLAS stays as it is):

  apt-get download libopenblas0-pthread && dpkg -x libopenblas0-pthread_*.deb ob
  ... --pycpd-blas ob/usr/lib/x86_64-linux-gnu/openblas-pthread

The BLAS the child loaded is printed (from its /proc/self/maps).

Data: the Stanford bunny scan bun000.ply (../shared/data/bunny, metres, 40,256 points;
a smooth synthetic surface of the same size where absent). The source is N points
drawn without replacement (with replacement plus 0.3 mm jitter when N exceeds the
scan), each target an independent draw of 0.97 N points moved by the case's transform
with 0.5 mm noise, plus 3% uniform outliers (tests/data/cpd/make_golden.py's cases):
rigid 25 deg about (1, 2, 3) and a translation; affine a 20 deg rotation times a mild
shear; deformable a smooth bend after 10 deg. Settings: w 0.05, tol 0 (pycpd:
tolerance=0, every iteration runs), --max-iter 50 (pycpd: max_iterations=50), sigma2
from the data (pycpd's default, which ptreg's must match); deformable: lambda 2 (pycpd's
alpha), beta = the source's RMS radius to 2 digits (pycpd does not normalise: its
default beta = 2 m would be flat over the bunny).

--scale-only N runs ptreg alone on an N x N deformable case (pycpd would need ~8 N^2
bytes per M x N matrix, ~80 GB each at N = 100,000), --repeats times, and reports the
wall time, `time_ms` and peak RSS.
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

from machine import cpu_name

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUNNY = os.path.join(ROOT, "..", "shared", "data", "bunny", "bun000.ply")
SEED = 20240918
W = 0.05
LAMBDA = 2.0
MAX_ITER = 50
NOISE = 0.0005
OUTLIERS = 0.03
CASES = ("rigid", "similarity", "affine", "deformable")

# The pycpd child: argv = pycpd_folder case source target out beta w max_iter lambda; prints one JSON line.
PYCPD_CHILD = r"""
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
import pycpd
case, src, tgt, out, beta, w, max_iter, lam = sys.argv[2:10]
Y = np.load(src).astype(np.float64)
X = np.load(tgt).astype(np.float64)
t0 = time.perf_counter()
common = dict(X=X, Y=Y, w=float(w), max_iterations=int(max_iter), tolerance=0)
if case in ("rigid", "similarity"):
    reg = pycpd.RigidRegistration(scale=(case == "similarity"), **common)
elif case == "affine":
    reg = pycpd.AffineRegistration(**common)
else:
    reg = pycpd.DeformableRegistration(alpha=float(lam), beta=float(beta), **common)
sigma2_init = float(reg.sigma2)
TY, _ = reg.register()
ms = (time.perf_counter() - t0) * 1e3
np.save(out, TY)
libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if "blas" in l or "lapack" in l})
print(json.dumps({"time_ms": ms, "iterations": int(reg.iteration), "sigma2": float(reg.sigma2),
                  "sigma2_init": sigma2_init, "blas": libs}))
"""


def read_bunny():
    """x y z of bun000.ply's vertices (ascii; a range_grid element follows them)."""
    with open(BUNNY) as f:
        n = None
        for line in f:
            if line.startswith("element vertex"):
                n = int(line.split()[2])
            if line.strip() == "end_header":
                break
        return np.loadtxt(f, max_rows=n, usecols=(0, 1, 2), dtype=np.float64)


def synthetic_surface(n, rng):
    u, phi = rng.uniform(-1.0, 1.0, n), rng.uniform(0.0, 2.0 * math.pi, n)
    th = np.arccos(u)
    r = 0.06 * (1.0 + 0.25 * np.sin(3 * th) * np.cos(2 * phi) + 0.1 * np.cos(5 * phi))
    return np.stack([r * np.sin(th) * np.cos(phi), r * np.sin(th) * np.sin(phi), 0.8 * r * np.cos(th)], axis=1)


def rotation(axis, degrees):
    k = np.asarray(axis, dtype=np.float64)
    k = k / np.linalg.norm(k)
    a = math.radians(degrees)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(a) * K + (1 - math.cos(a)) * K @ K


def move(case, p):
    if case in ("rigid", "similarity"):
        s = 1.2 if case == "similarity" else 1.0
        return s * p @ rotation((1, 2, 3), 25.0).T + np.array([0.03, -0.02, 0.04])
    if case == "affine":
        shear = np.array([[1.08, 0.15, -0.10], [0.0, 0.94, 0.08], [0.0, 0.0, 1.0]])
        return p @ (rotation((-2, 1, 3), 20.0) @ shear).T + np.array([0.02, 0.01, -0.03])
    q = p.copy()
    q[:, 1] += 0.012 * np.sin(2 * math.pi * p[:, 0] / 0.3)
    q[:, 2] += 0.008 * np.sin(2 * math.pi * (p[:, 1] - 0.1) / 0.25)
    return q @ rotation((0, 1, 1), 10.0).T + np.array([0.01, 0.005, -0.01])


def draw(surface, n, rng):
    if n <= len(surface):
        return surface[rng.choice(len(surface), n, replace=False)]
    return surface[rng.choice(len(surface), n, replace=True)] + rng.normal(0.0, 0.0003, (n, 3))


def make_data(work, n, cases):
    """source.npy and CASE_target.npy (float32) in work; returns their paths and beta."""
    rng = np.random.default_rng(SEED)
    surface = read_bunny() if os.path.exists(BUNNY) else synthetic_surface(40000, rng)
    src = os.path.join(work, f"source{n}.npy")
    source = draw(surface, n, rng).astype(np.float32)
    np.save(src, source)
    write_ply(src[:-4] + ".ply", source)
    y = source.astype(np.float64)
    beta = float(f"{np.sqrt(np.mean(np.sum((y - y.mean(axis=0)) ** 2, axis=1))):.2g}")
    targets = {}
    for i, case in enumerate(CASES):
        crng = np.random.default_rng([SEED, n, i])
        n_out = int(round(OUTLIERS * n))
        p = move(case, draw(surface, n - n_out, crng))
        p = p + crng.normal(0.0, NOISE, p.shape)
        lo, hi = p.min(axis=0), p.max(axis=0)
        pad = 0.1 * (hi - lo)
        both = np.concatenate([p, crng.uniform(lo - pad, hi + pad, (n_out, 3))])
        targets[case] = os.path.join(work, f"{case}_target{n}.npy")
        if case in cases:
            tgt = both[crng.permutation(n)].astype(np.float32)
            np.save(targets[case], tgt)
            write_ply(targets[case][:-4] + ".ply", tgt)
    return src, targets, beta, "bunny bun000.ply" if os.path.exists(BUNNY) else "synthetic surface"


def write_ply(path, points):
    """Binary little-endian PLY, float x y z: float32 coordinates, exact."""
    p = np.ascontiguousarray(points, dtype="<f4")
    with open(path, "wb") as f:
        f.write(f"ply\nformat binary_little_endian 1.0\nelement vertex {len(p)}\nproperty float x\n"
                f"property float y\nproperty float z\nend_header\n".encode())
        f.write(p.tobytes())


def read_points(path):
    """An .npy, or a binary little-endian PLY whose vertices come first with scalar properties."""
    if path.endswith(".npy"):
        return np.load(path).astype(np.float64)[:, :3]
    types = {"float": "f4", "float32": "f4", "double": "f8", "float64": "f8", "uchar": "u1", "uint8": "u1",
             "char": "i1", "int8": "i1", "short": "i2", "int16": "i2", "ushort": "u2", "uint16": "u2",
             "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4"}
    with open(path, "rb") as f:
        n, props, element = None, [], None
        for line in iter(f.readline, b""):
            w = line.decode("ascii", "replace").split()
            if w[:1] == ["format"] and w[1] != "binary_little_endian":
                sys.exit(f"{path}: PLY {w[1]} not read here")
            if w[:1] == ["element"]:
                element = w[1]
                n = int(w[2]) if element == "vertex" else n
            elif w[:1] == ["property"] and element == "vertex":
                props.append((w[2], "<" + types[w[1]]))
            elif w[:1] == ["end_header"]:
                break
        rec = np.frombuffer(f.read(np.dtype(props).itemsize * n), dtype=np.dtype(props), count=n)
    return np.stack([rec[c].astype(np.float64) for c in "xyz"], axis=1)


def timed(cmd, env=None, timeout=None):
    """Runs cmd under /usr/bin/time; returns (stdout, wall s, peak RSS MiB, user + system CPU s)."""
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "ptreg_bench_time maxrss_kib=%M cpu_s=%U+%S"] + cmd,
                          capture_output=True, text=True, env=env, timeout=timeout)
    wall = time.perf_counter() - t0
    if proc.returncode:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-4000:]}")
    line = [l for l in proc.stderr.splitlines() if l.startswith("ptreg_bench_time ")][-1]
    f = dict(kv.split("=") for kv in line.split()[1:])
    return proc.stdout, wall, int(f["maxrss_kib"]) / 1024.0, sum(float(x) for x in f["cpu_s"].split("+"))


def ptreg_run(a, case, src, tgt, out, beta):
    if a.ptreg_format != "npy":  # the same float32 coordinates, in a format ptreg reads and writes
        src, tgt, out = (p[:-4] + "." + a.ptreg_format for p in (src, tgt, out))
    cmd = [a.ptreg, "cpd", src, tgt, "--transform", case, "--w", repr(W), "--max-iter", str(a.max_iter),
           "--tol", "0", "-o", out, "--json"]
    if case == "deformable":
        cmd += ["--beta", repr(beta), "--lambda", repr(LAMBDA)]
    if a.precision:
        cmd += ["--precision", a.precision]
    cmd += a.ptreg_arg
    stdout, wall, rss, cpu = timed(cmd, timeout=a.timeout)
    r = json.loads(stdout)
    return {"tool": "ptreg", "case": case, "time_ms": r.get("time_ms"), "wall_s": wall, "cpu_s": cpu,
            "peak_rss_mib": rss,
            "iterations": r.get("iterations"), "sigma2": r.get("sigma2"), "out": out, "json": r}


def pycpd_run(a, case, src, tgt, out, beta):
    env = dict(os.environ)
    if a.pycpd_blas:
        env["LD_LIBRARY_PATH"] = a.pycpd_blas + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    cmd = ["/usr/bin/python3", "-c", PYCPD_CHILD, a.pycpd, case, src, tgt, out, repr(beta), repr(W),
           str(a.max_iter), repr(LAMBDA)]
    stdout, wall, rss, cpu = timed(cmd, env=env, timeout=a.timeout)
    r = json.loads(stdout.strip().splitlines()[-1])
    return {"tool": "pycpd", "case": case, "time_ms": r["time_ms"], "wall_s": wall, "cpu_s": cpu,
            "peak_rss_mib": rss,
            "iterations": r["iterations"], "sigma2": r["sigma2"], "sigma2_init": r["sigma2_init"], "out": out,
            "blas": r["blas"]}


def relative_rms(ours_path, ref_path):
    ours, ref = read_points(ours_path), read_points(ref_path)
    num = np.sqrt(np.mean(np.sum((ours - ref) ** 2, axis=1)))
    return float(num / np.sqrt(np.mean(np.sum((ref - ref.mean(axis=0)) ** 2, axis=1))))


def median(xs):
    xs = sorted(float(x) for x in xs if x is not None)
    if not xs:
        return float("nan")
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else 0.5 * (xs[m - 1] + xs[m])


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


def fmt(x, spec):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def compare_runs(a, work):
    cases = [c for c in a.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            sys.exit(f"unknown case {c!r}: rigid, similarity, affine, deformable")
    src, targets, beta, shape = make_data(work, a.n, cases)
    runs = []
    for rep in range(a.repeats):
        for case in cases:
            for tool in (("ptreg", "pycpd") if rep % 2 == 0 else ("pycpd", "ptreg")):
                if tool == "ptreg" and a.no_ptreg or tool == "pycpd" and a.no_pycpd:
                    continue
                out = os.path.join(work, f"{case}_{tool}_{rep}.npy")
                f = ptreg_run if tool == "ptreg" else pycpd_run
                r = f(a, case, src, targets[case], out, beta)
                r["repeat"] = rep
                runs.append(r)
                r["load"] = os.getloadavg()[0]
                print(json.dumps({k: r[k] for k in ("tool", "case", "repeat", "time_ms", "wall_s", "cpu_s",
                                                    "peak_rss_mib", "iterations", "sigma2", "load")}), flush=True)
    blas = next((r["blas"] for r in runs if r["tool"] == "pycpd"), None)
    print(f"\n{cpu_name()}, {os.cpu_count()} CPUs; NumPy {np.__version__}; pycpd's BLAS/LAPACK: "
          f"{', '.join(blas) if blas else '-'}")
    print(f"N = M = {a.n} ({shape}), {a.max_iter} iterations, tol 0, w {W}, deformable beta {beta} lambda {LAMBDA}; "
          f"ptreg precision {a.precision or 'default'}; medians of {a.repeats} interleaved runs\n")
    head = ["case", "ptreg ms", "pycpd ms", "ratio", "ptreg wall s", "pycpd wall s", "wall ratio",
            "ptreg CPU s", "pycpd CPU s", "CPU ratio", "ptreg RSS MiB", "pycpd RSS MiB", "iterations p/py", "sigma2 ptreg", "sigma2 pycpd", "rel. RMS diff"]
    rows, summary = [head], []
    for case in cases:
        p = [r for r in runs if r["case"] == case and r["tool"] == "ptreg"]
        q = [r for r in runs if r["case"] == case and r["tool"] == "pycpd"]
        pm, qm = median(r["time_ms"] for r in p), median(r["time_ms"] for r in q)
        pw, qw = median(r["wall_s"] for r in p), median(r["wall_s"] for r in q)
        pc, qc = median(r["cpu_s"] for r in p), median(r["cpu_s"] for r in q)
        prss = median(r["peak_rss_mib"] for r in p)
        qrss = median(r["peak_rss_mib"] for r in q)
        rel = relative_rms(p[-1]["out"], q[-1]["out"]) if p and q else float("nan")
        rows.append([case, fmt(pm, ".0f"), fmt(qm, ".0f"), fmt(qm / pm if p and q else None, ".1f"),
                     fmt(pw, ".2f"), fmt(qw, ".2f"), fmt(qw / pw if p and q else None, ".1f"),
                     fmt(pc, ".1f"), fmt(qc, ".1f"), fmt(qc / pc if p and q else None, ".1f"),
                     fmt(prss, ".0f"), fmt(qrss, ".0f"),
                     f"{p[-1]['iterations'] if p else '-'}/{q[-1]['iterations'] if q else '-'}",
                     fmt(p[-1]["sigma2"] if p else None, ".6g"), fmt(q[-1]["sigma2"] if q else None, ".6g"),
                     fmt(rel, ".2e")])
        summary.append({"case": case, "ptreg_ms": pm, "pycpd_ms": qm, "ptreg_wall_s": pw, "pycpd_wall_s": qw,
                        "ptreg_cpu_s": pc, "pycpd_cpu_s": qc,
                        "ptreg_rss_mib": prss, "pycpd_rss_mib": qrss, "relative_rms": rel})
    table(rows, a.markdown)
    loads = [r["load"] for r in runs]
    print(f"\n1-minute load average after each run: {', '.join(f'{x:.1f}' for x in loads)} "
          f"(above {os.cpu_count()}: other work shared the CPUs, the wall times are inflated; CPU seconds less so)")
    return {"n": a.n, "beta": beta, "shape": shape, "cpu": cpu_name(), "blas": blas, "summary": summary,
            "runs": [{k: v for k, v in r.items() if k != "json"} for r in runs]}


def scale_only(a, work):
    n = a.scale_only
    src, targets, beta, shape = make_data(work, n, ["deformable"])
    runs = []
    for rep in range(a.repeats):
        r = ptreg_run(a, "deformable", src, targets["deformable"], os.path.join(work, f"scale_{rep}.npy"), beta)
        r["load"] = os.getloadavg()[0]
        runs.append(r)
        print(json.dumps({k: r[k] for k in ("tool", "case", "time_ms", "wall_s", "cpu_s", "peak_rss_mib",
                                            "iterations", "sigma2", "load")}), flush=True)
    print(f"\n{cpu_name()}, {os.cpu_count()} CPUs")
    print(f"ptreg cpd deformable, N = M = {n} ({shape}), {a.max_iter} iterations, tol 0, w {W}, beta {beta}, "
          f"lambda {LAMBDA}, precision {a.precision or 'default'}; medians of {a.repeats}; pycpd not run "
          f"(its M x N matrices alone would be {8 * n * n / 1e9:.0f} GB each)\n")
    table([["N", "time_ms", "wall s", "CPU s", "peak RSS MiB", "iterations", "sigma2", "load"],
           [n, fmt(median(r["time_ms"] for r in runs), ".0f"), fmt(median(r["wall_s"] for r in runs), ".2f"),
            fmt(median(r["cpu_s"] for r in runs), ".1f"),
            fmt(median(r["peak_rss_mib"] for r in runs), ".0f"), runs[-1]["iterations"],
            fmt(runs[-1]["sigma2"], ".6g"), fmt(median(r["load"] for r in runs), ".1f")]], a.markdown)
    return {"n": n, "beta": beta, "shape": shape, "cpu": cpu_name(),
            "runs": [{k: v for k, v in r.items() if k != "json"} for r in runs]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5000, help="points in the source and in the target")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cases", default="deformable,rigid,affine")
    ap.add_argument("--max-iter", type=int, default=MAX_ITER)
    ap.add_argument("--ptreg", default=os.path.join(ROOT, "build", "ptreg"))
    ap.add_argument("--ptreg-arg", action="append", default=[], help="one more argument for ptreg cpd (repeatable)")
    ap.add_argument("--ptreg-format", default="ply", choices=("ply", "npy"),
                    help="the files ptreg reads and writes (ply: binary float32, the .npy's coordinates exactly)")
    ap.add_argument("--precision", default=None, help="ptreg's --precision (default: ptreg's own)")
    ap.add_argument("--pycpd", default="/work/pycpd-src", help="the folder holding pycpd's package")
    ap.add_argument("--pycpd-blas", default=None, help="a folder put first on pycpd's LD_LIBRARY_PATH (a BLAS)")
    ap.add_argument("--no-ptreg", action="store_true", help="pycpd alone")
    ap.add_argument("--no-pycpd", action="store_true", help="ptreg alone")
    ap.add_argument("--scale-only", type=int, default=None, metavar="N", help="ptreg alone, deformable N x N")
    ap.add_argument("--timeout", type=float, default=7200.0, help="seconds per run")
    ap.add_argument("--work", default=None, help="folder for clouds and outputs (default: a temporary one)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", default=None, help="write every run and the summary here")
    a = ap.parse_args()
    if a.work:
        os.makedirs(a.work, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cpd_bench_", dir=a.work) as work:
        res = scale_only(a, work) if a.scale_only else compare_runs(a, work)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
