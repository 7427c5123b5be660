#!/usr/bin/python3
"""The SciPy peer of `ptreg harris3d`: every voxel's 3-D Harris score written the
straightforward scipy.ndimage way (whole-volume arrays, one correlate1d pass per axis).
Used by bench/harris_bench.py.

  /usr/bin/python3 bench/peers/harris3d_scipy.py VOLUME.raw [--window W] [--sigma S] [--k K]
      [--border skip|clamp] [--repeat N] [--dtype float32|float64] [--scores-out F.npy] [--json]

VOLUME is a headerless raw file named NAME_XxYxZ_TYPE.raw (x fastest, little endian;
TYPE uint8, int8, uint16, int16, uint32, int32, float32, float64 or u8, i16, f32 ...).

The definition is ptreg's (docs/ALGORITHMS.md, "3-D Harris"): the intensity I as float;
gradients by central differences gx = I[x+1] - I[x-1] (no factor 1/2; the same in y, z);
the six products gx^2, gy^2, gz^2, gx gy, gx gz, gy gz, each smoothed by a separable
Gaussian window of exactly W taps per axis (r = (W - 1) / 2, w[t] = exp(-t^2 / (2 sigma^2)),
t = -r..r, normalised to sum 1, default sigma = (W - 1) / 4); score = det(M) - k trace(M)^3
(default k = 0.01). Outside the volume the edge voxels repeat (mode='nearest') for both the
differences and the smoothing; with --border skip (the default) every voxel within r + 1
of a face then scores 0 (its window would reach gradients from outside, so the mode
used there does not matter). With --border clamp the volume itself is extended by
repeating its edge voxels (np.pad mode='edge', r + 1 voxels) and the gradients outside
are those of the extended volume -- 0 across a face -- not the edge's gradients repeated.

Only the computation is timed (time.perf_counter, the volume already in memory, its
conversion to float included); the median of --repeat runs is reported. SciPy's ndimage
filters run on one thread. Prints one JSON object: time_ms, times_ms, voxels_per_s,
max_score, dtype, dims.
"""

import argparse
import json
import os
import re
import sys
import time

import numpy as np
import scipy
from scipy import ndimage

TYPES = {"uint8": "u1", "u8": "u1", "int8": "i1", "i8": "i1", "uint16": "<u2", "u16": "<u2",
         "int16": "<i2", "i16": "<i2", "uint32": "<u4", "u32": "<u4", "int32": "<i4", "i32": "<i4",
         "float32": "<f4", "float": "<f4", "f32": "<f4", "float64": "<f8", "double": "<f8", "f64": "<f8"}


def load_raw(path):
    """The volume as an array of shape (Z, Y, X), from a name like NAME_XxYxZ_TYPE.raw."""
    m = re.search(r"_(\d+)x(\d+)x(\d+)_([A-Za-z0-9]+)\.raw$", os.path.basename(path))
    if not m:
        sys.exit(f"{path}: the name is not NAME_XxYxZ_TYPE.raw")
    nx, ny, nz = (int(m.group(i)) for i in (1, 2, 3))
    t = m.group(4).lower()
    if t not in TYPES:
        sys.exit(f"{path}: unknown voxel type '{t}'")
    data = np.fromfile(path, dtype=np.dtype(TYPES[t]))
    if data.size != nx * ny * nz:
        sys.exit(f"{path}: {data.size} voxels, expected {nx} x {ny} x {nz}")
    return data.reshape(nz, ny, nx)


def gaussian_taps(window, sigma):
    r = (window - 1) // 2
    t = np.arange(-r, r + 1, dtype=np.float64)
    w = np.exp(-t * t / (2.0 * sigma * sigma))
    return w / w.sum()


def harris_scores(vol, window, sigma, k, border, dtype):
    """det(M) - k trace(M)^3 at every voxel; vol has shape (Z, Y, X)."""
    r = (window - 1) // 2
    f = vol.astype(dtype)
    if border == "clamp":
        # The volume itself is extended by repeating its edge voxels, and the
        # gradients outside come from that extension: across a face they are 0,
        # along it they continue. (Edge-extending the gradient products instead,
        # mode='nearest' in the smoothing, would repeat the edge's gradient
        # outward: a different, wrong answer within r of every face.) r + 1
        # voxels of padding cover the window's reach plus the difference.
        f = np.pad(f, r + 1, mode="edge")
    taps = gaussian_taps(window, sigma).astype(dtype)
    diff = np.array([-1.0, 0.0, 1.0], dtype=dtype)  # correlate: out[i] = in[i + 1] - in[i - 1]
    # axis 2 is x, 1 is y, 0 is z
    gx = ndimage.correlate1d(f, diff, axis=2, mode="nearest")
    gy = ndimage.correlate1d(f, diff, axis=1, mode="nearest")
    gz = ndimage.correlate1d(f, diff, axis=0, mode="nearest")
    del f

    def smooth(a):
        for axis in (2, 1, 0):
            a = ndimage.correlate1d(a, taps, axis=axis, mode="nearest")
        return a

    xx, yy, zz = smooth(gx * gx), smooth(gy * gy), smooth(gz * gz)
    xy, xz, yz = smooth(gx * gy), smooth(gx * gz), smooth(gy * gz)
    del gx, gy, gz
    det = xx * (yy * zz - yz * yz) - xy * (xy * zz - xz * yz) + xz * (xy * yz - yy * xz)
    tr = xx + yy + zz
    score = det - k * tr * tr * tr
    if border == "clamp":
        score = score[r + 1:-(r + 1), r + 1:-(r + 1), r + 1:-(r + 1)]
    else:
        b = r + 1
        for axis in range(3):
            n = score.shape[axis]
            lo = [slice(None)] * 3
            hi = [slice(None)] * 3
            lo[axis] = slice(0, min(b, n))
            hi[axis] = slice(max(n - b, 0), n)
            score[tuple(lo)] = 0
            score[tuple(hi)] = 0
    return score


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("volume")
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--sigma", type=float, default=0.0, help="default (W - 1) / 4")
    ap.add_argument("--k", type=float, default=0.01)
    ap.add_argument("--border", choices=("skip", "clamp"), default="skip")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float64")
    ap.add_argument("--scores-out", default=None, help="save the scores (in --dtype, shape Z, Y, X) as .npy")
    ap.add_argument("--json", action="store_true", help="print JSON (the only output format; kept for symmetry)")
    a = ap.parse_args()
    if a.window < 3 or a.window % 2 == 0:
        sys.exit("--window must be odd and at least 3")
    sigma = a.sigma if a.sigma > 0 else (a.window - 1) / 4.0
    vol = load_raw(a.volume)
    times, score = [], None
    for _ in range(max(1, a.repeat)):
        score = None  # the previous run's arrays are freed before the next is timed
        t0 = time.perf_counter()
        score = harris_scores(vol, a.window, sigma, a.k, a.border, np.dtype(a.dtype))
        times.append((time.perf_counter() - t0) * 1e3)
    med = float(np.median(times))
    if a.scores_out:
        np.save(a.scores_out, score)
    nz, ny, nx = vol.shape
    print(json.dumps({"tool": "scipy", "volume": a.volume, "dims": [nx, ny, nz], "window": a.window, "sigma": sigma,
                      "k": a.k, "border": a.border, "dtype": a.dtype, "time_ms": med, "times_ms": times,
                      "voxels_per_s": vol.size / (med * 1e-3), "max_score": float(score.max()),
                      "scipy": scipy.__version__, "numpy": np.__version__}))


if __name__ == "__main__":
    main()
