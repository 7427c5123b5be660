#!/usr/bin/python3
"""Pairs files (.ptpairs, docs/FORMATS.md "ptreg pairs file") for the batch
benchmark: rotated, noisy copies of a K-point lattice motif.

  /usr/bin/python3 bench/batch_pairs.py --pairs N --points K [--motif fcc]
      [--lattice 0.405] [--noise S] [--max-angle DEG] [--shared-target]
      [--translation T] [--seed S] [--truth TRUTH.npy] -o FILE.ptpairs

The motif is the K lattice points nearest a lattice point (which is left out),
as ptreg_motif_lattice lays them out: nearest first, a shell in z, y, x order.
Pair i's source is a noisy copy of its target moved by the inverse of a random
pose (R_i, t_i) and shuffled, so the answer taking the source onto the target
is (R_i, t_i): rotation angle uniform in [0, DEG] about a uniform axis,
translation components uniform in [-T, T]. With --shared-target every pair
registers onto the motif itself (the atom-probe case: every atom's
neighborhood against the one reference); otherwise pair i's target is the
motif in a random orientation with its own noise. --truth writes pairs x 7
float64: qw qx qy qz (w >= 0) tx ty tz of each pair's answer.

Also a module: read_pairs / write_pairs / motif / quaternion helpers are used
by bench/peers/batch_numpy.py.
"""

import argparse
import os
import sys

import numpy as np

MAGIC = b"PTPAIRS1"


# ---- the file format ----

def write_pairs(path, sources, targets):
    """sources: list of (n_i, 3) arrays; targets: list of one (shared) or as many
    as sources. Written to path atomically (temporary file + rename)."""
    if len(targets) not in (1, len(sources)):
        raise ValueError("targets: 1 or one per pair")
    s_off = np.zeros(len(sources) + 1, dtype="<u8")
    s_off[1:] = np.cumsum([len(s) for s in sources])
    t_off = np.zeros(len(targets) + 1, dtype="<u8")
    t_off[1:] = np.cumsum([len(t) for t in targets])
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(MAGIC)
        f.write(np.array([len(sources), len(targets)], dtype="<u8").tobytes())
        f.write(s_off.tobytes())
        f.write(t_off.tobytes())
        for s in sources:
            f.write(np.ascontiguousarray(s, dtype="<f4").tobytes())
        for t in targets:
            f.write(np.ascontiguousarray(t, dtype="<f4").tobytes())
    os.replace(tmp, path)


def read_pairs(path):
    """(source float32 (S, 3), source_offset (N + 1), target float32 (T', 3),
    target_offset (T + 1)); ValueError naming the file and the problem. Counts are
    checked against the file's size before anything is allocated."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24 or head[:8] != MAGIC:
            raise ValueError("%s: not a ptreg pairs file (magic %r)" % (path, head[:8]))
        n, t = (int(v) for v in np.frombuffer(head[8:24], dtype="<u8"))
        if t != 1 and t != n:
            raise ValueError("%s: %d targets for %d pairs: 1 or one per pair" % (path, t, n))
        offsets_end = 24 + 8 * (n + 1) + 8 * (t + 1)
        if n < 1 or offsets_end > size:
            raise ValueError("%s: %d pairs and %d targets need %d bytes of offsets, the file has %d"
                             % (path, n, t, offsets_end, size))
        s_off = np.frombuffer(f.read(8 * (n + 1)), dtype="<u8").astype(np.int64)
        t_off = np.frombuffer(f.read(8 * (t + 1)), dtype="<u8").astype(np.int64)
        for name, off in (("source", s_off), ("target", t_off)):
            if off[0] != 0 or np.any(np.diff(off) < 0) or off[-1] < 0 or off[-1] > size // 12:
                raise ValueError("%s: %s offsets must start at 0 and not decrease" % (path, name))
        want = offsets_end + 12 * (int(s_off[-1]) + int(t_off[-1]))
        if want != size:
            raise ValueError("%s: the offsets imply %d bytes, the file has %d" % (path, want, size))
        src = np.frombuffer(f.read(12 * int(s_off[-1])), dtype="<f4").reshape(-1, 3)
        tgt = np.frombuffer(f.read(12 * int(t_off[-1])), dtype="<f4").reshape(-1, 3)
    if np.any(np.diff(s_off) == 0) or np.any(np.diff(t_off) == 0):
        raise ValueError("%s: a pair with no source or no target points" % path)
    if not (np.isfinite(src).all() and np.isfinite(tgt).all()):
        raise ValueError("%s: a point that is not finite" % path)
    return src, s_off, tgt, t_off


# ---- motifs ----

def lattice_points(motif, a, cells=4):
    """Lattice points near the origin (the origin left out), nm, the crystal axes
    of ptreg_motif_lattice."""
    r = np.arange(-cells, cells + 1)
    ijk = np.stack(np.meshgrid(r, r, r, indexing="ij"), -1).reshape(-1, 3).astype(float)
    if motif == "hcp":
        c = np.sqrt(8.0 / 3.0)
        A = np.array([[1.0, 0.5, 0.0], [0.0, np.sqrt(3.0) / 2, 0.0], [0.0, 0.0, c]]) * a
        basis = [np.zeros(3), A @ np.array([1 / 3, 1 / 3, 0.5])]
        pts = np.concatenate([ijk @ A.T + b for b in basis])
    else:
        basis = {"fcc": [(0, 0, 0), (0, .5, .5), (.5, 0, .5), (.5, .5, 0)],
                 "bcc": [(0, 0, 0), (.5, .5, .5)], "sc": [(0, 0, 0)]}[motif]
        pts = np.concatenate([(ijk + np.array(b)) * a for b in basis])
    return pts[np.any(np.abs(pts) > 1e-12 * a, axis=1)]


def motif_points(motif, a, k):
    """The k lattice points nearest the origin: nearest first, a shell in z, y, x
    order (distances within 1e-9 relative are one shell)."""
    pts = lattice_points(motif, a)
    d2 = (pts ** 2).sum(1)
    shell = np.round(d2 / (a * a) * 1e6).astype(np.int64)  # shells by distance, exact enough
    order = np.lexsort((pts[:, 0], pts[:, 1], pts[:, 2], shell))
    return pts[order[:k]]


# ---- rotations ----

def quat_to_matrix(q):
    """(..., 4) unit quaternions w x y z -> (..., 3, 3)."""
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


def matrix_to_quat(R):
    """(..., 3, 3) rotations -> (..., 4) quaternions with w >= 0 (via the
    largest eigenvector of Bar-Itzhack's matrix: robust for any angle)."""
    R = np.asarray(R, dtype=np.float64)
    m00, m01, m02 = R[..., 0, 0], R[..., 0, 1], R[..., 0, 2]
    m10, m11, m12 = R[..., 1, 0], R[..., 1, 1], R[..., 1, 2]
    m20, m21, m22 = R[..., 2, 0], R[..., 2, 1], R[..., 2, 2]
    K = np.stack([
        np.stack([m00 + m11 + m22, m21 - m12, m02 - m20, m10 - m01], -1),
        np.stack([m21 - m12, m00 - m11 - m22, m01 + m10, m02 + m20], -1),
        np.stack([m02 - m20, m01 + m10, m11 - m00 - m22, m12 + m21], -1),
        np.stack([m10 - m01, m02 + m20, m12 + m21, m22 - m00 - m11], -1)], -2) / 3.0
    _, v = np.linalg.eigh(K)
    q = v[..., :, 3]
    return q * np.where(q[..., :1] < 0, -1.0, 1.0)


def random_rotations(rng, n, max_angle_deg):
    """n rotations: angle uniform in [0, max], axis uniform on the sphere."""
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    half = np.radians(rng.uniform(0, max_angle_deg, n)) / 2
    q = np.concatenate([np.cos(half)[:, None], np.sin(half)[:, None] * axis], 1)
    return quat_to_matrix(q)


def angle_deg(Ra, Rb):
    """The angle of Ra^T Rb, degrees, batched."""
    c = (np.einsum("...ij,...ij->...", Ra, Rb) - 1) / 2
    return np.degrees(np.arccos(np.clip(c, -1, 1)))


def cubic_group():
    """The 24 proper rotations of the cube (signed permutation matrices)."""
    out = []
    for perm in ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)):
        for signs in np.ndindex(2, 2, 2):
            M = np.zeros((3, 3))
            for r, c in enumerate(perm):
                M[r, c] = -1.0 if signs[r] else 1.0
            if np.linalg.det(M) > 0:
                out.append(M)
    return np.array(out)


def make_pairs(n_pairs, k, motif="fcc", a=0.405, noise=0.0, max_angle=30.0, shared=False,
               translation=0.0, seed=1):
    """(sources list, targets list, truth R (N, 3, 3), truth t (N, 3), the targets'
    rotations A (N, 3, 3): target i is A_i motif (+ noise), the identity when shared)."""
    rng = np.random.default_rng(seed)
    m = motif_points(motif, a, k)
    R = random_rotations(rng, n_pairs, max_angle)
    t = rng.uniform(-translation, translation, (n_pairs, 3)) if translation > 0 else np.zeros((n_pairs, 3))
    if shared:
        targets = [m.astype(np.float32)]
        tgt = np.broadcast_to(m, (n_pairs, k, 3))
        A = np.broadcast_to(np.eye(3), (n_pairs, 3, 3))
    else:
        A = random_rotations(rng, n_pairs, 180.0)
        tgt = np.einsum("pij,kj->pki", A, m) + rng.normal(scale=noise, size=(n_pairs, k, 3))
        targets = list(tgt.astype(np.float32))
    copy = tgt + rng.normal(scale=noise, size=(n_pairs, k, 3))
    # source = R^T (copy - t): then R source + t = copy ~ target
    src = np.einsum("pji,pkj->pki", R, copy - t[:, None, :])
    perm = np.argsort(rng.random((n_pairs, k)), axis=1)
    src = np.take_along_axis(src, perm[:, :, None], axis=1)
    return list(src.astype(np.float32)), targets, R, t, A


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, required=True)
    ap.add_argument("--points", type=int, default=12, help="motif points K (default 12)")
    ap.add_argument("--motif", default="fcc", choices=["fcc", "bcc", "hcp", "sc"])
    ap.add_argument("--lattice", type=float, default=0.405, help="lattice constant, nm (default 0.405)")
    ap.add_argument("--noise", type=float, default=0.0, help="Gaussian sigma per coordinate, nm (default 0)")
    ap.add_argument("--max-angle", type=float, default=30.0, help="largest rotation, degrees (default 30)")
    ap.add_argument("--shared-target", action="store_true", help="one target (the motif) for every pair")
    ap.add_argument("--translation", type=float, default=0.0, help="translation components in [-T, T]")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--truth", help="write the answers: pairs x 7 float64, qw qx qy qz tx ty tz")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    if a.pairs < 1 or not 1 <= a.points <= 256:
        sys.exit("batch_pairs: --pairs >= 1 and --points 1..256")
    src, tgt, R, t, _ = make_pairs(a.pairs, a.points, a.motif, a.lattice, a.noise, a.max_angle, a.shared_target,
                                a.translation, a.seed)
    write_pairs(a.output, src, tgt)
    if a.truth:
        np.save(a.truth, np.concatenate([matrix_to_quat(R), t], 1))


if __name__ == "__main__":
    main()
