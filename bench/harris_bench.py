#!/usr/bin/python3
"""3-D Harris benchmark: `ptreg harris3d` (scores and keypoints of every voxel) per
window and thread count against the SciPy peer (bench/peers/harris3d_scipy.py, the
scores only, float64, one thread) on the same volumes in the same run, with a check
that both compute the same scores.

  cmake -S . -B build && cmake --build build -j2
  /usr/bin/python3 bench/harris_bench.py [--ptreg build/ptreg] [--repeat 5] [--peer-repeat 3]
      [--threads 1,2] [--windows 3,5] [--data ../shared/data] [--work DIR] [--markdown] [--json FILE]

Volumes (the first two generated into --work, a temporary folder by default, seed 7):
  engine_256x256x128_uint8.raw  a CT-like phantom the shape of the classic "engine" scan
                                (x 256, y 256, z 128): background 10, solid boxes and
                                cylinders of intensity 60..220, bored holes, a step;
                                blurred (Gaussian, sigma 0.7) plus Gaussian noise (sigma 2)
  cube_256x256x256_uint8.raw    the same kind of phantom in a 256^3 cube, another layout
  tooth_103x94x161_uint8.raw    the real tooth scan from {--data}/volumes (skipped if absent)

Times: ptreg's time_ms is the median of --repeat runs in one process (`--repeat`), from
the volume in memory to the keypoints (scores + selection); the peer's is the median of
--peer-repeat runs of the scores alone (its float conversion included). Each ptreg row
also gives the bytes it must move at least -- 1 byte read per uint8 voxel + 4 bytes of
float32 score written = 5 B/voxel -- and the implied GB/s, to set against the machine's
memory bandwidth (measured by build/bench_stream when that exists; not otherwise).
The SciPy peer on a 256^3 volume takes 10 s or more a run on a slow core, hence the
small default --peer-repeat.

Check: for each volume at W = 5 (and the tooth at W = 3, and with --border clamp at
W = 5) ptreg's scores (`--scores F.nrrd`) are compared with the peer's (float64):
max |ptreg - scipy| / max |scipy| must be at most 1e-5, or the bench exits non-zero;
also printed is the fraction of voxels whose relative difference
|a - b| / max(|b|, 1e-6 max |b|) exceeds 1e-4.
Targets: engine at W = 5 with 2 threads in at most 60 ms, and at least 20x the peer.
"""

import argparse
import datetime
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from scipy import ndimage

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEER = os.path.join(HERE, "peers", "harris3d_scipy.py")

BYTES_PER_VOXEL = 5  # at least: 1 B uint8 voxel read + 4 B float32 score written
CHECK_LIMIT = 1e-5  # max |ptreg - scipy| / max |scipy|
REL_TOL = 1e-4  # per voxel, for the reported fraction
TARGET_MS = 60.0  # engine, W = 5, 2 threads
TARGET_SPEEDUP = 20.0

BACKGROUND = 10


def run(cmd, timeout=3600):
    """Runs cmd, returns its stdout; exits with its stderr if it fails."""
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if proc.returncode:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr}")
    return proc.stdout


# ---- phantoms ---------------------------------------------------------------

def paint_box(v, value, x0, x1, y0, y1, z0, z1):
    v[z0:z1, y0:y1, x0:x1] = value


def paint_cylinder(v, value, axis, c1, c2, radius, lo, hi):
    """A solid cylinder along axis ('x', 'y' or 'z') from lo to hi; (c1, c2) is its centre
    in the two other coordinates, in x, y, z order."""
    nz, ny, nx = v.shape
    if axis == "z":
        yy, xx = np.ogrid[:ny, :nx]
        disk = (xx - c1) ** 2 + (yy - c2) ** 2 <= radius * radius
        v[lo:hi][:, disk] = value
    elif axis == "y":
        zz, xx = np.ogrid[:nz, :nx]
        disk = (xx - c1) ** 2 + (zz - c2) ** 2 <= radius * radius
        sub = v[:, lo:hi, :].transpose(1, 0, 2)  # (y, z, x) view
        sub[:, disk] = value
    else:
        zz, yy = np.ogrid[:nz, :ny]
        disk = (yy - c1) ** 2 + (zz - c2) ** 2 <= radius * radius
        sub = v[:, :, lo:hi].transpose(2, 0, 1)  # (x, z, y) view
        sub[:, disk] = value


def finish(v, rng):
    """Light blur, Gaussian noise of sigma 2, clipped to uint8."""
    f = ndimage.gaussian_filter(v.astype(np.float32), 0.7, mode="nearest")
    f += rng.normal(0.0, 2.0, size=f.shape).astype(np.float32)
    return np.clip(np.rint(f), 0, 255).astype(np.uint8)


def engine_phantom(rng):
    v = np.full((128, 256, 256), BACKGROUND, dtype=np.float32)  # (z, y, x)
    paint_box(v, 120, 40, 216, 60, 196, 20, 100)  # the crankcase
    paint_box(v, 160, 150, 216, 60, 128, 100, 112)  # a step on top of it
    paint_cylinder(v, 200, "z", 90, 128, 30, 10, 116)  # a cylinder through it
    paint_cylinder(v, BACKGROUND, "z", 90, 128, 12, 10, 116)  # bored
    paint_cylinder(v, 180, "x", 128, 60, 18, 150, 244)  # a shaft sticking out at +x
    paint_cylinder(v, BACKGROUND, "x", 128, 60, 7, 150, 244)  # bored
    paint_box(v, 220, 14, 50, 20, 60, 30, 70)  # a dense bracket
    paint_box(v, 60, 180, 240, 204, 244, 10, 50)  # a light cover
    return finish(v, rng)


def cube_phantom(rng):
    v = np.full((256, 256, 256), BACKGROUND, dtype=np.float32)
    paint_box(v, 110, 48, 208, 48, 208, 40, 150)  # a block
    paint_box(v, 150, 48, 128, 48, 208, 150, 190)  # a step on half of its top
    paint_cylinder(v, 210, "y", 170, 100, 28, 20, 236)  # a cylinder along y
    paint_cylinder(v, BACKGROUND, "y", 170, 100, 10, 20, 236)  # bored
    paint_cylinder(v, 190, "z", 90, 90, 22, 150, 240)  # a post standing on the block
    paint_cylinder(v, 70, "x", 200, 210, 16, 10, 246)  # a light rod along x
    paint_box(v, 220, 200, 240, 16, 56, 16, 56)  # a dense corner block
    paint_box(v, 60, 16, 60, 190, 240, 200, 244)  # a light slab
    return finish(v, rng)


def make_volumes(a, work):
    rng = np.random.default_rng(7)
    vols = []
    for name, fn in (("engine_256x256x128_uint8.raw", engine_phantom), ("cube_256x256x256_uint8.raw", cube_phantom)):
        path = os.path.join(work, name)
        fn(rng).tofile(path)
        vols.append(("engine" if name.startswith("engine") else "cube", path))
    tooth = os.path.join(a.data, "volumes", "tooth_103x94x161_uint8.raw")
    if os.path.exists(tooth):
        vols.append(("tooth", tooth))
    else:
        print(f"skipping the tooth: {tooth} not found", file=sys.stderr)
    return vols


def dims_of(path):
    part = os.path.basename(path).rsplit("_", 2)[1]
    return [int(s) for s in part.split("x")]


# ---- runs -------------------------------------------------------------------

def ptreg_case(a, path, window, threads, repeat, extra=()):
    out = run([a.ptreg, "harris3d", path, "--json", "--window", str(window), "--threads", str(threads),
               "--repeat", str(repeat)] + list(extra))
    return json.loads(out)


def peer_case(a, path, window, repeat, extra=()):
    out = run([sys.executable, PEER, path, "--window", str(window), "--repeat", str(repeat), "--json"] + list(extra))
    return json.loads(out)


def read_nrrd_scores(path):
    raw = open(path, "rb").read()
    head, data = raw.split(b"\n\n", 1)
    fields = {}
    for line in head.decode().splitlines()[1:]:
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            fields[k.strip()] = v.strip()
    if fields.get("type") != "float" or fields.get("encoding") != "raw" or fields.get("endian", "little") != "little":
        sys.exit(f"{path}: expected a raw little-endian float NRRD, got {fields}")
    nx, ny, nz = (int(s) for s in fields["sizes"].split())
    return np.frombuffer(data, dtype="<f4", count=nx * ny * nz).reshape(nz, ny, nx)


def compare(a_scores, b_scores):
    """ptreg's scores a against the peer's b."""
    a64, b64 = a_scores.astype(np.float64), b_scores.astype(np.float64)
    diff = np.abs(a64 - b64)
    scale = float(np.abs(b64).max())
    rel = diff / np.maximum(np.abs(b64), 1e-6 * scale if scale > 0 else 1e-300)
    worst = np.unravel_index(int(np.argmax(diff)), diff.shape)
    return {"max_abs_diff": float(diff.max()), "max_abs_score": scale,
            "max_diff_rel_to_max": float(diff.max()) / scale if scale > 0 else float(diff.max()),
            "frac_rel_gt_1e-4": float(np.mean(rel > REL_TOL)), "max_rel": float(rel.max()),
            "worst_voxel_xyz": [int(worst[2]), int(worst[1]), int(worst[0])]}


def check_case(a, work, name, path, window, border, peer_file=None):
    """Compares the scores; peer_file: the peer's scores saved by a timed run (None: run it now)."""
    tag = f"{name}_w{window}_{border}"
    nrrd = os.path.join(work, tag + ".nrrd")
    ptreg_case(a, path, window, max(a.thread_list), 1, ["--border", border, "--scores", nrrd])
    if peer_file is None:
        peer_file = os.path.join(work, tag + ".npy")
        peer_case(a, path, window, 1, ["--border", border, "--scores-out", peer_file])
    res = compare(read_nrrd_scores(nrrd), np.load(peer_file))
    res.update({"volume": name, "window": window, "border": border, "pass": res["max_diff_rel_to_max"] <= CHECK_LIMIT})
    os.remove(nrrd)
    os.remove(peer_file)
    print(json.dumps(res), flush=True)
    return res


def stream_bandwidth(work):
    """The streaming bandwidth of 1 byte read + 4 written per voxel (bench/stream_bw.c,
    built here with cc -O3 -fopenmp when build/bench_stream is absent)."""
    exe = os.path.join(ROOT, "build", "bench_stream")
    if not os.access(exe, os.X_OK):
        exe = os.path.join(work, "stream_bw")
        try:
            subprocess.run(["cc", "-O3", "-fopenmp", os.path.join(HERE, "stream_bw.c"), "-o", exe], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        except (OSError, subprocess.SubprocessError):
            return None
    try:
        return subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=300).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"build/bench_stream failed: {e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptreg", default=os.path.join(ROOT, "build", "ptreg"))
    ap.add_argument("--data", default=os.path.join(os.path.dirname(ROOT), "shared", "data"))
    ap.add_argument("--work", default=None, help="folder for the generated volumes, kept (default: a temporary one, removed)")
    ap.add_argument("--windows", default="3,5")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeat", type=int, default=5, help="ptreg runs per case (median reported)")
    ap.add_argument("--peer-repeat", type=int, default=3, help="SciPy peer runs per case (median reported)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", default=None, help="write every row, check and target to FILE")
    a = ap.parse_args()
    a.thread_list = [int(t) for t in a.threads.split(",")]
    windows = [int(w) for w in a.windows.split(",")]
    if not os.access(a.ptreg, os.X_OK):
        sys.exit(f"{a.ptreg}: not an executable; build first (cmake -S . -B build && cmake --build build -j2)")
    work = a.work or tempfile.mkdtemp(prefix="harris_bench_")
    os.makedirs(work, exist_ok=True)
    try:
        bench(a, work, windows)
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


def bench(a, work, windows):
    vols = make_volumes(a, work)

    rows, checks = [], []
    for name, path in vols:
        nvox = int(np.prod(dims_of(path)))
        for w in windows:
            for t in a.thread_list:
                r = ptreg_case(a, path, w, t, a.repeat)
                rows.append({"volume": name, "dims": r["dims"], "window": w, "tool": "ptreg", "threads": r["threads"],
                             "time_ms": r["time_ms"], "times_ms": r.get("times_ms", [r["time_ms"]]),
                             "scores_ms": r["scores_ms"], "keypoints_ms": r["keypoints_ms"],
                             "voxels_per_s": r["voxels_per_s"], "keypoints": r["keypoints"],
                             "local_maxima": r["local_maxima"], "max_score": r["max_score"], "isa": r["isa"]})
                print(json.dumps({k: rows[-1][k] for k in ("volume", "window", "tool", "threads", "time_ms",
                                                           "voxels_per_s", "keypoints", "isa")}), flush=True)
            check_here = w == 5 or (name == "tooth" and w == 3)
            peer_file = os.path.join(work, f"{name}_w{w}_skip.npy") if check_here else None
            p = peer_case(a, path, w, a.peer_repeat, ["--scores-out", peer_file] if peer_file else [])
            rows.append({"volume": name, "dims": p["dims"], "window": w, "tool": "scipy", "threads": 1,
                         "time_ms": p["time_ms"], "times_ms": p["times_ms"], "voxels_per_s": nvox / (p["time_ms"] * 1e-3),
                         "keypoints": None, "max_score": p["max_score"], "dtype": p["dtype"]})
            print(json.dumps({k: rows[-1][k] for k in ("volume", "window", "tool", "time_ms", "voxels_per_s",
                                                       "max_score")}), flush=True)
            if check_here:
                checks.append(check_case(a, work, name, path, w, "skip", peer_file))
        if name == "tooth" and 5 in windows:
            checks.append(check_case(a, work, name, path, 5, "clamp"))
    report(rows, checks, a, stream_bandwidth(work))
    failed = [c for c in checks if not c["pass"]]
    sys.stdout.flush()
    if failed:
        for c in failed:
            print(f"CHECK FAILED: {c['volume']} W={c['window']} border {c['border']}: max |ptreg - scipy| / max|score| "
                  f"= {c['max_diff_rel_to_max']:.3g} > {CHECK_LIMIT:g} (worst voxel x,y,z {c['worst_voxel_xyz']})",
                  file=sys.stderr)
        sys.exit(1)


def report(rows, checks, a, stream):
    def peer_of(r):
        return next((p for p in rows if p["tool"] == "scipy" and p["volume"] == r["volume"] and
                     p["window"] == r["window"]), None)

    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), cpu)
    except OSError:
        pass
    isa = next((r["isa"] for r in rows if r["tool"] == "ptreg"), "?")
    cmd = " ".join(shlex.quote(x) for x in ["/usr/bin/python3", "bench/harris_bench.py"] + sys.argv[1:])
    lines = [f"CPU: {cpu}, nproc {os.cpu_count()}; ptreg ISA {isa}; {datetime.date.today().isoformat()}; "
             f"command: `{cmd}`",
             f"ptreg: median of {a.repeat} runs, scores + keypoints; SciPy peer: float64 scores only, one thread, "
             f"median of {a.peer_repeat} runs. Min. traffic {BYTES_PER_VOXEL} B/voxel (1 B read + 4 B score written).",
             "",
             "| volume | W | tool / threads | time ms | Mvoxels/s | vs SciPy | keypoints | implied GB/s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        d = "x".join(str(int(x)) for x in r["dims"])
        if r["tool"] == "ptreg":
            p = peer_of(r)
            speed = f"{p['time_ms'] / r['time_ms']:.0f}x" if p else "-"
            gbs = f"{r['voxels_per_s'] * BYTES_PER_VOXEL / 1e9:.2f}"
            lines.append(f"| {r['volume']} {d} | {r['window']} | ptreg / {r['threads']} | {r['time_ms']:.2f} | "
                         f"{r['voxels_per_s'] / 1e6:.0f} | {speed} | {r['keypoints']} | {gbs} |")
        else:
            lines.append(f"| {r['volume']} {d} | {r['window']} | SciPy {r['dtype']} / 1 | {r['time_ms']:.0f} | "
                         f"{r['voxels_per_s'] / 1e6:.2f} | 1x | - | - |")
    lines += ["", "| check | max abs diff | max abs score | diff / max score | voxels rel. diff > 1e-4 | result |",
              "|---|---|---|---|---|---|"]
    for c in checks:
        lines.append(f"| {c['volume']} W={c['window']} border {c['border']} | {c['max_abs_diff']:.4g} | "
                     f"{c['max_abs_score']:.4g} | {c['max_diff_rel_to_max']:.3g} | {100 * c['frac_rel_gt_1e-4']:.4f}% | "
                     f"{'PASS' if c['pass'] else 'FAIL'} (limit {CHECK_LIMIT:g}) |")
    lines.append("")
    targets = []
    eng = [r for r in rows if r["tool"] == "ptreg" and r["volume"] == "engine" and r["window"] == 5]
    two = next((r for r in eng if r["threads"] == 2), None)
    if two:
        p = peer_of(two)
        ok_t = two["time_ms"] <= TARGET_MS
        targets.append({"target": f"engine W=5 2 threads <= {TARGET_MS:g} ms", "value": two["time_ms"], "pass": ok_t})
        lines.append(f"{'PASS' if ok_t else 'FAIL'}: engine W=5, 2 threads: {two['time_ms']:.2f} ms "
                     f"(target <= {TARGET_MS:g} ms)")
        if p:
            sp = p["time_ms"] / two["time_ms"]
            ok_s = sp >= TARGET_SPEEDUP
            targets.append({"target": f"engine W=5 2 threads >= {TARGET_SPEEDUP:g}x SciPy", "value": sp, "pass": ok_s})
            lines.append(f"{'PASS' if ok_s else 'FAIL'}: engine W=5, 2 threads vs SciPy: {sp:.0f}x "
                         f"(target >= {TARGET_SPEEDUP:g}x)")
    else:
        lines.append("targets not checked: no 2-thread run of the engine at W=5 (--threads, --windows)")
    lines.append("Memory bandwidth: " + (stream.replace("\n", "; ") if stream else
                 "not measured (no build/bench_stream); compare the implied GB/s column with this machine's "
                 "streaming bandwidth"))
    text = "\n".join(lines)
    if not a.markdown:
        text = "\n".join(l.replace("|", " ") for l in lines if not l.startswith("|---"))
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cpu": cpu, "nproc": os.cpu_count(), "command": cmd, "rows": rows, "checks": checks,
                       "targets": targets, "bandwidth": stream}, f, indent=1)


if __name__ == "__main__":
    main()
