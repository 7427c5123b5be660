#!/usr/bin/python3
"""The NumPy peer of ptreg's EM-ICP: the same iteration written the straightforward
NumPy way (the weight matrix built block by block of rows, so memory stays bounded,
reductions by NumPy), then the weighted Horn solution. Used by bench/emicp_bench.py.

  /usr/bin/python3 bench/peers/emicp_numpy.py SOURCE.xyz TARGET.xyz --sigma2 S --d02 D
      [--iterations K] [--factor F] [--dtype float32|float64] [--repeat R]

Prints one JSON object: the median time of R runs of K iterations, the rate in
Gpts/s (n*m*K / time / 1e9) and the final transform (row-major 4x4).
"""

import argparse
import json
import time

import numpy as np

ROW_BLOCK = 512  # rows of the weight matrix held at once: ROW_BLOCK x m


def horn_weighted(p, q, w):
    """Rotation and translation minimising sum w |R p + t - q|^2 (Horn's quaternion)."""
    wsum = w.sum()
    cp = (w[:, None] * p).sum(0) / wsum
    cq = (w[:, None] * q).sum(0) / wsum
    s = ((p - cp) * w[:, None]).T @ (q - cq)
    sxx, sxy, sxz, syx, syy, syz, szx, szy, szz = s.ravel()
    n = np.array([
        [sxx + syy + szz, syz - szy, szx - sxz, sxy - syx],
        [syz - szy, sxx - syy - szz, sxy + syx, szx + sxz],
        [szx - sxz, sxy + syx, -sxx + syy - szz, syz + szy],
        [sxy - syx, szx + sxz, syz + szy, -sxx - syy + szz]])
    vals, vecs = np.linalg.eigh(n)
    qw, qx, qy, qz = vecs[:, -1]
    r = np.array([
        [qw * qw + qx * qx - qy * qy - qz * qz, 2 * (qx * qy - qw * qz), 2 * (qx * qz + qw * qy)],
        [2 * (qx * qy + qw * qz), qw * qw - qx * qx + qy * qy - qz * qz, 2 * (qy * qz - qw * qx)],
        [2 * (qx * qz - qw * qy), 2 * (qy * qz + qw * qx), qw * qw - qx * qx - qy * qy + qz * qz]])
    return r, cq - r @ cp


def iteration(y, x, r, t, sigma2, d02, dtype):
    """One E-step (A = exp(-d^2/sigma^2), rows normalised with the outlier term,
    A <- sqrt(A / C)) and the weighted Horn M-step."""
    moved = (y @ r.T + t).astype(dtype)
    xd = x.astype(dtype)
    m = len(x)
    lam = np.empty(len(y))
    xprime = np.empty((len(y), 3))
    outlier = np.exp(-d02 / sigma2)
    for i0 in range(0, len(y), ROW_BLOCK):
        block = moved[i0:i0 + ROW_BLOCK]
        d2 = ((block[:, None, :] - xd[None, :, :]) ** 2).sum(-1)
        a = np.exp(-d2 / dtype(sigma2))
        c = a.sum(1, dtype=np.float64) + outlier
        small = c < 1e-6
        a = np.sqrt(a / c[:, None].astype(dtype))
        a[small] = 1.0 / m
        lam[i0:i0 + ROW_BLOCK] = a.sum(1, dtype=np.float64)
        xprime[i0:i0 + ROW_BLOCK] = (a @ xd) / lam[i0:i0 + ROW_BLOCK, None]
    return horn_weighted(y, xprime, lam)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source")
    ap.add_argument("target")
    ap.add_argument("--sigma2", type=float, required=True)
    ap.add_argument("--d02", type=float, required=True)
    ap.add_argument("--factor", type=float, default=0.9)
    ap.add_argument("--iterations", type=int, default=1)
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    y = np.loadtxt(a.source, dtype=np.float64, usecols=(0, 1, 2))
    x = np.loadtxt(a.target, dtype=np.float64, usecols=(0, 1, 2))
    dtype = np.float32 if a.dtype == "float32" else np.float64
    times = []
    for _ in range(a.repeat):
        r, t = np.eye(3), np.zeros(3)
        sigma2 = a.sigma2
        t0 = time.perf_counter()
        for _ in range(a.iterations):
            r, t = iteration(y, x, r, t, sigma2, a.d02, dtype)
            sigma2 *= a.factor
        times.append(time.perf_counter() - t0)
    med = float(np.median(times))
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = r, t
    print(json.dumps({"time_ms": med * 1e3, "times_ms": [s * 1e3 for s in times],
                      "gpts": len(y) * len(x) * a.iterations / med / 1e9, "dtype": a.dtype,
                      "transformation": T.tolist()}))


if __name__ == "__main__":
    main()
