#!/usr/bin/env python3
"""How well ptreg batch --grains-out finds the grains of a synthetic atom-probe
polycrystal (ptreg synth --shape apt-polycrystal): the share of atoms in the
right grain, and how far from the true boundary the others are; and, on a
random texture of many grains, the boundaries' misorientations against
Mackenzie's distribution.

    /usr/bin/python3 bench/apt_grains.py --ptreg build/ptreg [--noise 0.02,0.05]
        [--efficiency 0.6] [--seeds 1,2] [--box 12] [--grains 8]
        [--mackenzie-grains 500] [--markdown] [-- extra ptreg batch options]

Right grain: each found grain stands for the true grain most of its atoms are
in; true grains that touch and are misoriented by less than the threshold
(5 degrees) are one grain, as the map defines it. Distance to the true
boundary: from an atom to the nearest atom of another true grain.

Targets (issue 51): >= 98% of atoms in the right grain; boundaries within 1 nm
of the truth; Mackenzie's distribution within the histogram's noise (the
chi-square's p-value above 0.01)."""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy.spatial import cKDTree
from scipy.stats import chi2 as chi2_dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apt_accuracy import cubic_group, misorientation_deg  # noqa: E402


def synth(ptreg, work, noise, eff, box, grains, seed):
    pos, truth = os.path.join(work, 'a.pos'), os.path.join(work, 't.npy')
    subprocess.run([ptreg, 'synth', '--shape', 'apt-polycrystal', '-o', pos, '--truth-out', truth, '--noise',
                    str(noise), '--efficiency', str(eff), '--box', str(box), '--grains', str(grains),
                    '--seed', str(seed)], check=True, stdout=subprocess.DEVNULL)
    return pos, truth


def grain_map(ptreg, pos, work, extra):
    out = os.path.join(work, 'grains')
    res = subprocess.run([ptreg, 'batch', pos, '--json', '--motif-points', '18', '--grain-radius', '1',
                          '--grains-out', out] + extra, check=True, capture_output=True, text=True)
    return json.loads(res.stdout), np.load(os.path.join(out, 'grain_map.npy')).ravel()


def read_xyz(pos):
    return np.fromfile(pos, dtype='>f4').reshape(-1, 4)[:, :3].astype(float)


def true_grains(truth, xyz, threshold):
    """Per atom its true grain, grains that touch and agree within the threshold joined."""
    tg = truth[:, 0].astype(int)
    ids = np.unique(tg)
    q = {k: truth[tg == k][0, 1:5].astype(float) for k in ids}
    parent = {k: k for k in ids}

    def root(k):
        while parent[k] != k:
            k = parent[k]
        return k
    tree = cKDTree(xyz)
    _, nb = tree.query(xyz, 2)
    touching = set(zip(tg, tg[nb[:, 1]]))
    group = cubic_group()
    for a, b in touching:
        if a < b and misorientation_deg(q[a][None], q[b][None], group)[0] < threshold:
            parent[root(b)] = root(a)
    return tg, np.array([root(k) for k in tg])


def evaluate(found, tg, joined, xyz):
    mapping = {}
    for k in np.unique(found[found >= 0]):
        ids, cnt = np.unique(joined[found == k], return_counts=True)
        mapping[k] = ids[np.argmax(cnt)]
    pred = np.array([mapping.get(k, -1) for k in found])
    wrong = pred != joined
    dist = np.full(len(found), np.inf)
    for k in np.unique(tg):
        m = tg == k
        dist[m] = cKDTree(xyz[~m]).query(xyz[m])[0]
    far = dist[wrong] if wrong.any() else np.zeros(1)
    return {'right': float(1 - wrong.mean()), 'wrong_p99_nm': float(np.percentile(far, 99)),
            'wrong_max_nm': float(far.max()), 'found': int(len(mapping)), 'true': int(len(np.unique(joined)))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--ptreg', default='build/ptreg')
    ap.add_argument('--noise', default='0.02,0.05')
    ap.add_argument('--efficiency', default='0.6')
    ap.add_argument('--seeds', default='1,2')
    ap.add_argument('--box', type=float, default=12)
    ap.add_argument('--grains', type=int, default=8)
    ap.add_argument('--threshold', type=float, default=5.0)
    ap.add_argument('--mackenzie-grains', type=int, default=500)
    ap.add_argument('--markdown', action='store_true')
    ap.add_argument('extra', nargs='*', help='options passed on to ptreg batch (after --)')
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for seed in map(int, args.seeds.split(',')):
            for noise in map(float, args.noise.split(',')):
                for eff in map(float, args.efficiency.split(',')):
                    pos, truth = synth(args.ptreg, work, noise, eff, args.box, args.grains, seed)
                    summary, found = grain_map(args.ptreg, pos, work, args.extra)
                    xyz = read_xyz(pos)
                    tg, joined = true_grains(np.load(truth), xyz, args.threshold)
                    r = evaluate(found, tg, joined, xyz)
                    r.update({'seed': seed, 'noise': noise, 'efficiency': eff, 'atoms': len(found),
                              'grain_map_ms': summary['grain_map']['time_ms']})
                    rows.append(r)
                    print(json.dumps(r), flush=True)
        mack = None
        if args.mackenzie_grains:
            # grains of about 3 nm: a box that holds them
            box = round((args.mackenzie_grains * 27.0) ** (1 / 3), 1)
            pos, _ = synth(args.ptreg, work, 0.02, 0.6, box, args.mackenzie_grains, 1)
            summary, _ = grain_map(args.ptreg, pos, work, args.extra)
            g = summary['grain_map']
            p = float(chi2_dist.sf(g['mackenzie_chi2'], g['mackenzie_dof'])) if g.get('mackenzie_dof') else math.nan
            mack = {'grains_true': args.mackenzie_grains, 'box_nm': box, 'atoms': summary['atoms'],
                    'grains': g['grains'], 'boundaries': g['boundaries'], 'chi2': g.get('mackenzie_chi2'),
                    'dof': g.get('mackenzie_dof'), 'p_value': p, 'grain_map_ms': g['time_ms']}
            print(json.dumps(mack), flush=True)
    if args.markdown:
        print('\n| seed | noise (nm) | efficiency | atoms | grains found / true | right grain | wrong atoms: '
              '99th pct / max distance to the true boundary (nm) | grain map (ms) |')
        print('|---|---|---|---|---|---|---|---|')
        for r in rows:
            print(f"| {r['seed']} | {r['noise']} | {r['efficiency']} | {r['atoms']} | {r['found']} / {r['true']} | "
                  f"{100 * r['right']:.2f}% | {r['wrong_p99_nm']:.2f} / {r['wrong_max_nm']:.2f} | "
                  f"{r['grain_map_ms']:.0f} |")
        if mack:
            print(f"\nMackenzie: {mack['grains_true']} random grains in a {mack['box_nm']} nm box "
                  f"({mack['atoms']} atoms): {mack['grains']} grains found, {mack['boundaries']} boundaries, "
                  f"chi-square {mack['chi2']:.1f} on {mack['dof']} degrees of freedom (p = {mack['p_value']:.3f})")


if __name__ == '__main__':
    sys.exit(main())
