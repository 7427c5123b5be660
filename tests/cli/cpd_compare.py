#!/usr/bin/python3
"""`ptreg cpd`'s moved source held to pycpd's (tests/data/cpd, make_golden.py there).

    /usr/bin/python3 tests/cli/cpd_compare.py GOLDEN_DIR CASE MOVED --max-rel 1e-6
        [--json OURS.json] [--max-sigma2-rel R] [--max-transform-diff D]

CASE is rigid, similarity, affine, deformable, deformable_50it (the same, 50 iterations)
or rigid_fullfit (pycpd's rigid with the whole fit as its sigma2, as ptreg's rigid step
has it; make_golden.py says more): GOLDEN_DIR/CASE_pycpd.npy is pycpd's TY and
GOLDEN_DIR/CASE.json its record. MOVED is our moved source (`ptreg cpd SOURCE TARGET
... -o MOVED`): .npy (float32 or float64, N x 3 or more columns, the first three
taken), ascii or binary little-endian .ply, or text (.xyz, .txt, .csv: the first three
numbers of each line). Prints

    relative RMS = sqrt(mean_m |ours_m - pycpd_m|^2) / sqrt(mean_m |pycpd_m - mean(pycpd)|^2)

and exits 1 unless it is <= --max-rel (a NaN anywhere in MOVED fails: the comparison
is made through tests/ptreg_checks.py, and every coordinate must be finite).

With --json (our `ptreg cpd --json` document), also prints our and pycpd's final
sigma2 (key `sigma2`) and iteration count (key `iterations`) and, for rigid, similarity
and affine, the largest entry of our 4 x 4 `transformation`'s top three rows minus
pycpd's [s R | t] or [A | t] (a moved source written as float32 coordinates alone puts
the relative RMS near 5e-8; the matrix shows the agreement beyond that). A different
iteration count fails, and so does a sigma2 relative difference beyond --max-sigma2-rel
or a matrix difference beyond --max-transform-diff when they are given. Exit 0 when
every check holds, 1 otherwise, 2 on a usage error.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ptreg_checks import CheckFailed, compare, field, finite, load_json  # noqa: E402

CASES = ("rigid", "similarity", "affine", "deformable", "rigid_fullfit", "deformable_50it")
PLY_TYPES = {"char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1", "short": "i2", "int16": "i2",
             "ushort": "u2", "uint16": "u2", "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
             "float": "f4", "float32": "f4", "double": "f8", "float64": "f8"}


def read_ply(path):
    """x y z of the vertex element (ascii or binary little-endian; vertex the first element)."""
    with open(path, "rb") as f:
        if f.readline().strip() != b"ply":
            raise CheckFailed(f"{path}: not a PLY file")
        fmt, n, props, first, element = None, None, [], None, None
        while True:
            line = f.readline()
            if not line:
                raise CheckFailed(f"{path}: no end_header")
            w = line.decode("ascii", "replace").split()
            if not w:
                continue
            if w[0] == "format":
                fmt = w[1]
            elif w[0] == "element":
                element = w[1]
                first = element if first is None else first
                if element == "vertex":
                    n = int(w[2])
            elif w[0] == "property" and element == "vertex":
                if w[1] == "list":
                    raise CheckFailed(f"{path}: a list property in the vertex element")
                props.append((w[2], w[1]))
            elif w[0] == "end_header":
                break
        if first != "vertex" or n is None:
            raise CheckFailed(f"{path}: the vertex element must come first")
        names = [p[0] for p in props]
        if not all(c in names for c in "xyz"):
            raise CheckFailed(f"{path}: the vertices have no x, y, z")
        if fmt == "ascii":
            rows = [f.readline().split() for _ in range(n)]
            table = np.array([[float(v) for v in r[:len(names)]] for r in rows], dtype=np.float64)
            return table[:, [names.index(c) for c in "xyz"]]
        if fmt != "binary_little_endian":
            raise CheckFailed(f"{path}: PLY format {fmt} not read here")
        dt = np.dtype([(name, "<" + PLY_TYPES[t]) for name, t in props])
        rec = np.frombuffer(f.read(dt.itemsize * n), dtype=dt, count=n)
        return np.stack([rec[c].astype(np.float64) for c in "xyz"], axis=1)


def read_text(path):
    rows = []
    with open(path) as f:
        for line in f:
            w = line.replace(",", " ").split()
            if not w or w[0].startswith("#"):
                continue
            try:
                rows.append([float(v) for v in w[:3]])
            except ValueError:
                if rows:
                    raise CheckFailed(f"{path}: not numbers: {line.strip()!r}") from None
                continue  # a header line
    return np.array(rows, dtype=np.float64)


def read_points(path):
    ext = os.path.splitext(path)[1].lower()
    if ext == ".npy":
        p = np.load(path)
    elif ext == ".ply":
        p = read_ply(path)
    else:
        p = read_text(path)
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] < 3:
        raise CheckFailed(f"{path}: shape {p.shape}, want (N, 3)")
    return p[:, :3]


def relative_rms(ours, ref):
    """sqrt(mean |ours - ref|^2) / sqrt(mean |ref - mean(ref)|^2); NaN in ours stays NaN."""
    num = np.sqrt(np.mean(np.sum((ours - ref) ** 2, axis=1)))
    den = np.sqrt(np.mean(np.sum((ref - ref.mean(axis=0)) ** 2, axis=1)))
    return float(num / den), float(num), float(den)


def transform_difference(golden, doc, case):
    """Largest |entry| of ours minus pycpd's 3 x 4 [s R | t] (rigid, similarity) or [A | t]
    (affine); ours is the JSON's 4 x 4 `transformation`, every entry finite."""
    ours = np.array([[finite(v, f"{case}: our transformation") for v in row]
                     for row in field(doc, "transformation")], dtype=np.float64)
    if ours.shape != (4, 4):
        raise CheckFailed(f"{case}: our transformation is {ours.shape}, want 4 x 4")
    lin = np.array(golden["A"]) if case == "affine" else finite(golden["s"], "pycpd's s") * np.array(golden["R"])
    ref = np.concatenate([lin, np.array(golden["t"]).reshape(3, 1)], axis=1)
    return float(np.abs(ours[:3] - ref).max())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("golden", help="the golden folder (tests/data/cpd)")
    ap.add_argument("case", choices=CASES)
    ap.add_argument("moved", help="our moved source (.npy, .ply, .xyz)")
    ap.add_argument("--max-rel", required=True, type=float, help="bound on the relative RMS difference")
    ap.add_argument("--json", help="our `ptreg cpd --json` document: sigma2 and iterations compared")
    ap.add_argument("--max-sigma2-rel", type=float, help="bound on |sigma2 - pycpd's| / pycpd's (with --json)")
    ap.add_argument("--max-transform-diff", type=float,
                    help="bound on the largest difference of our JSON's transformation from pycpd's (with --json)")
    a = ap.parse_args(argv)
    bad = 0
    try:
        golden = load_json(os.path.join(a.golden, f"{a.case}.json"))
        ref = read_points(os.path.join(a.golden, f"{a.case}_pycpd.npy"))
        ours = read_points(a.moved)
    except (CheckFailed, OSError, ValueError) as e:
        print(f"FAIL: {a.case}: {e}")
        return 1
    if ours.shape != ref.shape:
        print(f"FAIL: {a.case}: {a.moved} has {ours.shape[0]} points, pycpd {ref.shape[0]}")
        return 1
    nonfinite = int(np.count_nonzero(~np.isfinite(ours)))
    rel, num, den = relative_rms(ours, ref)
    print(f"{a.case}: relative RMS difference to pycpd {rel:.3e} (RMS {num:.3e} over RMS radius {den:.4g}; "
          f"bound {a.max_rel:g}){f', {nonfinite} coordinates not finite' if nonfinite else ''}")
    try:
        if nonfinite:
            raise CheckFailed(f"{a.case}: {nonfinite} coordinates of {a.moved} are not finite")
        compare(rel, "<=", a.max_rel, f"{a.case}: relative RMS difference")
    except CheckFailed as e:
        print(f"FAIL: {e}")
        bad += 1
    if a.json:
        try:
            doc = load_json(a.json)
            gs, gi = finite(golden["sigma2"], "pycpd's sigma2"), int(golden["iterations"])
            s2 = finite(field(doc, "sigma2"), f"{a.case}: our sigma2")
            it = finite(field(doc, "iterations"), f"{a.case}: our iterations")
            s2_rel = abs(s2 - gs) / gs
            print(f"{a.case}: sigma2 {s2:.9g} (pycpd {gs:.9g}, relative difference {s2_rel:.3e}); "
                  f"iterations {it:g} (pycpd {gi})")
        except CheckFailed as e:
            print(f"FAIL: {e}")
            return 1
        try:
            compare(it, "==", gi, f"{a.case}: iterations")
        except CheckFailed as e:
            print(f"FAIL: {e}")
            bad += 1
        if not a.case.startswith("deformable"):
            try:
                dT = transform_difference(golden, doc, a.case)
                print(f"{a.case}: transform (s R | t or A | t) largest difference to pycpd's {dT:.3e}"
                      + (f" (bound {a.max_transform_diff:g})" if a.max_transform_diff is not None else ""))
                if a.max_transform_diff is not None:
                    compare(dT, "<=", a.max_transform_diff, f"{a.case}: transform difference")
            except CheckFailed as e:
                print(f"FAIL: {e}")
                bad += 1
        if a.max_sigma2_rel is not None:
            try:
                compare(s2_rel, "<=", a.max_sigma2_rel, f"{a.case}: sigma2's relative difference")
            except CheckFailed as e:
                print(f"FAIL: {e}")
                bad += 1
    print(f"{a.case}: {'ok' if not bad else 'FAILED'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
