"""Inputs of the ptreg batch CLI tests (tests/cli/batch*.sh), written into
the folder given: pairs files (one pair, ragged pairs, pairs sharing one
target, a truncated file and one whose header claims too much), a perfect
fcc crystal as a .pos with a seventh of its sites Mg and one atom NaN, its
range file, and a cloud whose density makes MPI halos widen."""
import struct
import sys

import numpy as np

w = sys.argv[1]


def write_pairs(path, sources, targets):
    so = np.concatenate([[0], np.cumsum([len(s) for s in sources])]).astype('<u8')
    to = np.concatenate([[0], np.cumsum([len(t) for t in targets])]).astype('<u8')
    with open(path, 'wb') as f:
        f.write(b'PTPAIRS1' + struct.pack('<QQ', len(sources), len(targets)) + so.tobytes() + to.tobytes())
        f.write(np.concatenate(sources).astype('<f4').tobytes() + np.concatenate(targets).astype('<f4').tobytes())


def rot(axis, angle):
    a = axis / np.linalg.norm(axis)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


# ---- pairs ----
rng = np.random.default_rng(1)
tgt = rng.normal(size=(30, 3)).astype(np.float32)
src = ((tgt - 0.1) @ rot(np.array([1., 2, 3]), 0.3)).astype(np.float32)
write_pairs(w + '/one.ptpairs', [src], [tgt])
np.savetxt(w + '/one_src.xyz', src, fmt='%.9g'); np.savetxt(w + '/one_tgt.xyz', tgt, fmt='%.9g')
S, T = [], []
for i in range(53):
    t = rng.normal(size=(int(rng.integers(3, 40)), 3)).astype(np.float32)
    n = int(rng.integers(3, 40))
    S.append((t[np.arange(n) % len(t)] @ rot(rng.normal(size=3), rng.uniform(-0.5, 0.5))
              + rng.normal(scale=0.01, size=(n, 3))).astype(np.float32))
    T.append(t)
write_pairs(w + '/ragged.ptpairs', S, T)
motif = rng.normal(size=(12, 3)).astype(np.float32)
write_pairs(w + '/shared.ptpairs', [(motif @ rot(rng.normal(size=3), 0.4)).astype(np.float32) for _ in range(40)],
            [motif])
data = open(w + '/ragged.ptpairs', 'rb').read()
open(w + '/truncated.ptpairs', 'wb').write(data[:-5])
open(w + '/huge.ptpairs', 'wb').write(b'PTPAIRS1' + struct.pack('<QQ', 1 << 60, 1) + data[24:200])

# ---- atoms ----
a = 0.405
cells = np.array([(i, j, k) for i in range(6) for j in range(6) for k in range(6)], float)
basis = np.array([[0, 0, 0], [.5, .5, 0], [.5, 0, .5], [0, .5, .5]])
xyz = ((cells[:, None] + basis[None]).reshape(-1, 3) * a).astype('>f4')
mq = np.where(np.arange(len(xyz)) % 7 == 3, 24.3, 27.0).astype('>f4')  # Mg on a seventh of the sites
xyz[5] = np.nan
rec = np.concatenate([xyz, mq[:, None]], axis=1).astype('>f4')
open(w + '/crystal.pos', 'wb').write(rec.tobytes())
open(w + '/bad.pos', 'wb').write(rec.tobytes()[:-3])
open(w + '/ranges.rrng', 'w').write("[Ions]\nNumber=2\nIon1=Al\nIon2=Mg\n[Ranges]\nNumber=2\n"
    "Range1=26.5 27.5 Vol:0.01661 Al:1 Color:FF0000\nRange2=23.8 24.8 Vol:0.02325 Mg:1 Color:00FF00\n")

# ---- a dense slab at each end and a few atoms between: a rank boundary in
# the sparse middle needs a halo many times the first guess ----
rng = np.random.default_rng(3)
ends = np.concatenate([rng.random((1500, 3)) * [3, 3, 1], rng.random((1500, 3)) * [3, 3, 1] + [0, 0, 99]])
pts = np.concatenate([ends, rng.random((21, 3)) * [3, 3, 98] + [0, 0, 1]])
rng.shuffle(pts)
np.savetxt(w + '/sparse_middle.xyz', pts, fmt='%.6f')
