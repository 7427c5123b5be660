#!/usr/bin/env python3
"""How well ptreg batch recovers grain orientations of a synthetic atom-probe
polycrystal (ptreg synth --shape apt-polycrystal): the median misorientation
between each atom's orientation and its grain's true one, and the fraction
within 10 degrees, over a grid of noise and detection efficiency.

    /usr/bin/python3 bench/apt_accuracy.py --ptreg build/ptreg [--noise 0.02,0.05]
        [--efficiency 0.4,0.6,1] [--box 12] [--grains 8] [-- extra ptreg batch options]

Prints one line per case and, with --markdown, a table for bench/RESULTS.md."""
import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def cubic_group():
    """The 24 proper rotations of the cube as unit quaternions (w, x, y, z)."""
    q = []
    for p in itertools.permutations(range(3)):
        for s in itertools.product([1, -1], repeat=3):
            R = np.zeros((3, 3))
            for i in range(3):
                R[i, p[i]] = s[i]
            if np.linalg.det(R) > 0:
                q.append(quat_of(R))
    return np.array(q)


def quat_of(R):
    w = np.sqrt(max(0.0, 1 + np.trace(R))) / 2
    if w > 1e-6:
        return np.array([w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w)])
    i = int(np.argmax(np.diag(R)))
    j, k = (i + 1) % 3, (i + 2) % 3
    v = np.zeros(4)
    v[1 + i] = np.sqrt(max(0.0, 1 + R[i, i] - R[j, j] - R[k, k])) / 2
    v[1 + j] = (R[j, i] + R[i, j]) / (4 * v[1 + i])
    v[1 + k] = (R[k, i] + R[i, k]) / (4 * v[1 + i])
    v[0] = (R[k, j] - R[j, k]) / (4 * v[1 + i])
    return v


def qmul(a, b):
    w1, x1, y1, z1 = np.moveaxis(a, -1, 0)
    w2, x2, y2, z2 = np.moveaxis(b, -1, 0)
    return np.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2], axis=-1)


def misorientation_deg(a, b, group):
    """Smallest angle between rows of a and b up to the group (g a b^-1)."""
    binv = b * np.array([1, -1, -1, -1])
    d = qmul(a, binv)                                   # n x 4
    w = np.abs(qmul(group[:, None, :], d[None])[..., 0])  # 24 x n
    return np.degrees(2 * np.arccos(np.clip(w.max(axis=0), -1, 1)))


def run_case(ptreg, work, noise, eff, args, extra):
    pos, truth, out = (os.path.join(work, f) for f in ('a.pos', 't.npy', 'o.npy'))
    subprocess.run([ptreg, 'synth', '--shape', 'apt-polycrystal', '-o', pos, '--truth-out', truth, '--noise', str(noise),
                    '--efficiency', str(eff), '--box', str(args.box), '--grains', str(args.grains),
                    '--seed', str(args.seed)], check=True, stdout=subprocess.DEVNULL)
    res = subprocess.run([ptreg, 'batch', pos, '-o', out, '--json'] + extra, check=True, capture_output=True,
                         text=True)
    summary = json.loads(res.stdout)
    o, t = np.load(out), np.load(truth)
    ok = np.isfinite(o[:, 0])
    mis = np.full(len(o), 180.0)
    mis[ok] = misorientation_deg(o[ok, :4].astype(float), t[ok, 1:5].astype(float), cubic_group())
    return {'noise': noise, 'efficiency': eff, 'atoms': len(o), 'median_deg': float(np.median(mis)),
            'within10': float(np.mean(mis < 10)), 'p90_deg': float(np.percentile(mis, 90)),
            'register_ms': summary['register_ms'], 'total_ms': summary['total_ms'],
            'starts': summary.get('starts', 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--ptreg', default='build/ptreg')
    ap.add_argument('--noise', default='0.02,0.05')
    ap.add_argument('--efficiency', default='0.6')
    ap.add_argument('--box', type=float, default=12)
    ap.add_argument('--grains', type=int, default=8)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--markdown', action='store_true')
    ap.add_argument('extra', nargs='*', help='options passed on to ptreg batch (after --)')
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for noise in map(float, args.noise.split(',')):
            for eff in map(float, args.efficiency.split(',')):
                r = run_case(args.ptreg, work, noise, eff, args, args.extra)
                rows.append(r)
                print(json.dumps(r), flush=True)
    if args.markdown:
        print('\n| noise (nm) | efficiency | atoms | median misorientation (deg) | within 10 deg | 90th pct (deg) |'
              ' registration (ms) |')
        print('|---|---|---|---|---|---|---|')
        for r in rows:
            print(f"| {r['noise']} | {r['efficiency']} | {r['atoms']} | {r['median_deg']:.2f} | "
                  f"{100 * r['within10']:.1f}% | {r['p90_deg']:.1f} | {r['register_ms']:.0f} |")


if __name__ == '__main__':
    sys.exit(main())
