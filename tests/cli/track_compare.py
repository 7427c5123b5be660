#!/usr/bin/env python3
"""Compares a TUM trajectory with the truth, frame by frame (matched by
timestamp; no alignment: both are in the model's frame; a frame in --skip may
have no pose). Prints one line per
frame with --verbose, then: frames, ATE RMSE, max translation error, median
and max rotation error (degrees). With --max-trans/--max-rot, exits 1 when a
frame (outside --skip's frames, "a,b,c") is beyond them, or is not finite:
a NaN pose is never within a bound (ptreg_checks: every value finite)."""
import argparse
import math
import sys

from ptreg_checks import CheckFailed, finite


def read_tum(path):
    rows = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                v = [finite(x, f"{path}: {line!r}") for x in line.split()]
            except CheckFailed as e:
                sys.exit(str(e))
            if len(v) != 8:
                sys.exit(f"{path}: a line of {len(v)} numbers, not 8")
            rows[round(v[0], 6)] = v[1:]
    return rows


def rot_error_deg(qa, qb):
    dot = abs(sum(a * b for a, b in zip(qa, qb)))
    na = math.sqrt(sum(a * a for a in qa))
    nb = math.sqrt(sum(b * b for b in qb))
    c = dot / (na * nb) if na * nb > 0 else math.nan  # no rotation at all
    # rounding can put c a hair above 1; a NaN must stay NaN, which
    # a clamp with min() would turn a NaN into 1.0, a perfect pose
    return math.degrees(2.0 * math.acos(c if not c > 1.0 else 1.0))


def compare(traj, truth, skip=()):
    est, ref = read_tum(traj), read_tum(truth)
    out = []
    for i, t in enumerate(sorted(ref)):
        if t not in est:
            if i in skip:  # a skipped frame may have no pose (an unreadable one has no line)
                continue
            sys.exit(f"{traj}: no pose at {t}")
        e, r = est[t], ref[t]
        trans = math.sqrt(sum((a - b) ** 2 for a, b in zip(e[:3], r[:3])))
        out.append((i, t, trans, rot_error_deg(e[3:], r[3:]), i in skip))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trajectory")
    ap.add_argument("truth")
    ap.add_argument("--max-trans", type=float)
    ap.add_argument("--max-rot", type=float)
    ap.add_argument("--skip", default="")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    skip = {int(x) for x in a.skip.split(",") if x}
    rows = compare(a.trajectory, a.truth, skip)
    bad = 0
    for i, t, tr, ro, skipped in rows:
        over = not skipped and ((a.max_trans is not None and not tr <= a.max_trans) or
                                (a.max_rot is not None and not ro <= a.max_rot))
        bad += over
        if a.verbose or over:
            print(f"frame {i} t {t:.6f}: translation error {tr:.3g}, rotation error {ro:.3g} deg"
                  + (" BEYOND" if over else "") + (" (skipped)" if skipped else ""))
    kept = [r for r in rows if not r[4]]
    # the summary, printed only (nan-ok)
    ate = math.sqrt(sum(r[2] ** 2 for r in kept) / max(1, len(kept)))  # nan-ok
    rots = sorted(r[3] for r in kept)
    med = rots[len(rots) // 2] if rots else 0.0
    print(f"frames {len(rows)} ate_rmse {ate:.6g} max_trans {max((r[2] for r in kept), default=0):.6g} "  # nan-ok
          f"median_rot_deg {med:.6g} max_rot_deg {max(rots, default=0):.6g}")  # nan-ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
