#!/usr/bin/env python3
"""Plain NumPy reference of `ptreg eval` (trajectory evaluation).

It follows the definitions the C code implements, step by step and with no
shortcut of its own, so that tests/cli/eval_cases.py can hold every number of
`ptreg eval --json` to it:

  * TUM files (timestamp tx ty tz qx qy qz qw) and KITTI files (a 3x4 [R|t]
    per line, time = pose line index); the first pose line decides which.
  * association by time (TUM's associate.py: greedy on |t_est + offset - t_ref|
    within max_diff) or by index;
  * Umeyama alignment (none, se3 or sim3) of the estimate's positions onto the
    reference's;
  * ATE and RPE (Sturm et al. 2012) and the KITTI odometry metric (Geiger et
    al. 2012, the devkit's evaluate_odometry.cpp).

As a module:  evaluate(est_path, ref_path, align=..., ...) -> dict (the JSON).
As a script:  /usr/bin/python3 tests/cli/eval_reference.py EST REF [--align none|se3|sim3]
                  [--associate time|index] [--max-diff S] [--offset S] [--delta D]
                  [--delta-unit frames|m|s] [--kitti-lengths L1,L2,...]
prints the JSON to stdout, or a message to stderr and exits 1 on an error.

Scalar arithmetic that decides a threshold (path lengths, time differences) is
written out operation by operation in the order the definitions give, so that
a C implementation doing the same IEEE double operations makes the same
decisions even at exact ties.
"""
import argparse
import json
import math
import sys

import numpy as np

DEFAULT_MAX_DIFF = 0.02
DEFAULT_KITTI_LENGTHS = (100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 700.0, 800.0)


class EvalError(ValueError):
    """An input or option that `ptreg eval` must refuse (exit non-zero)."""


# ---------------------------------------------------------------- reading

def quat_to_rot(qx, qy, qz, qw):
    n = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    if not n > 0 or not math.isfinite(n):
        raise EvalError("quaternion of zero or non-finite norm")
    x, y, z, w = qx / n, qy / n, qz / n, qw / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def read_trajectory(path):
    """(format, times, poses[n,4,4]); KITTI times are the pose line indices."""
    fmt, times, poses = None, [], []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            try:
                v = [float(x) for x in s.split()]
            except ValueError:
                raise EvalError("%s:%d: not a number" % (path, lineno))
            if not all(math.isfinite(x) for x in v):
                raise EvalError("%s:%d: non-finite number" % (path, lineno))
            if fmt is None:
                if len(v) == 8:
                    fmt = "tum"
                elif len(v) == 12:
                    fmt = "kitti"
                else:
                    raise EvalError("%s:%d: %d numbers, neither TUM (8) nor KITTI (12)"
                                    % (path, lineno, len(v)))
            want = 8 if fmt == "tum" else 12
            if len(v) != want:
                raise EvalError("%s:%d: %d numbers in a %s file" % (path, lineno, len(v), fmt))
            T = np.eye(4)
            if fmt == "tum":
                times.append(v[0])
                T[:3, 3] = v[1:4]
                T[:3, :3] = quat_to_rot(*v[4:8])
            else:
                times.append(float(len(poses)))
                T[:3, :4] = np.array(v).reshape(3, 4)
            poses.append(T)
    if not poses:
        raise EvalError("%s: no pose" % path)
    return fmt, np.array(times), np.array(poses)


# ---------------------------------------------------------------- association

def associate_time(t_est, t_ref, max_diff, offset):
    """TUM associate.py: greedy by (|a_i - t_ref_j|, i, j), then ordered by i."""
    cand = []
    t_ref = np.asarray(t_ref, dtype=float)
    for i in range(len(t_est)):
        a = float(t_est[i]) + offset
        diff = np.abs(a - t_ref)   # elementwise, the same IEEE operations as a scalar loop
        for j in np.nonzero(diff <= max_diff)[0]:
            cand.append((float(diff[j]), i, int(j)))
    cand.sort()
    used_i, used_j, pairs = set(), set(), []
    for d, i, j in cand:
        if i not in used_i and j not in used_j:
            used_i.add(i)
            used_j.add(j)
            pairs.append((i, j))
    pairs.sort()
    return pairs


# ---------------------------------------------------------------- geometry

def norm3(v):
    # written out so the sum order is the obvious one a C loop uses
    return math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


def inv_rigid(T):
    """Inverse of a 4x4 [R|t] (R need not be exactly orthonormal: sim3-free use only)."""
    Ti = np.eye(4)
    Ti[:3, :3] = T[:3, :3].T
    Ti[:3, 3] = -T[:3, :3].T @ T[:3, 3]
    return Ti


def angle_atan2(M):
    """Rotation angle of a 3x3 rotation in radians, the well-conditioned atan2 form."""
    s = 0.5 * math.sqrt((M[2, 1] - M[1, 2]) ** 2 + (M[0, 2] - M[2, 0]) ** 2 + (M[1, 0] - M[0, 1]) ** 2)
    c = 0.5 * (M[0, 0] + M[1, 1] + M[2, 2] - 1.0)
    return math.atan2(s, c)


def umeyama(p, q, with_scale):
    """R, t, s minimizing sum ||q_k - (s R p_k + t)||^2 (Umeyama 1991)."""
    n = len(p)
    mu_p = p.mean(axis=0)
    mu_q = q.mean(axis=0)
    dp = p - mu_p
    dq = q - mu_q
    sigma2 = np.sum(dp * dp) / n
    C = dq.T @ dp / n
    U, D, Vt = np.linalg.svd(C)
    S = np.eye(3)
    if np.linalg.det(U) * np.linalg.det(Vt) < 0:
        S[2, 2] = -1.0
    R = U @ S @ Vt
    if with_scale:
        if not sigma2 > 0:
            raise EvalError("sim3 alignment of an estimate whose positions are all equal")
        s = float(np.trace(np.diag(D) @ S) / sigma2)
    else:
        s = 1.0
    t = mu_q - s * R @ mu_p
    return R, t, s


def stats(x):
    x = np.asarray(x, dtype=float)
    return {
        "rmse": float(np.sqrt(np.mean(x * x))),
        "mean": float(np.mean(x)),
        "median": float(np.median(x)),
        "std": float(np.std(x)),
        "min": float(np.min(x)),
        "max": float(np.max(x)),
    }


def path_lengths(Q):
    """Cumulative reference path length (the devkit's trajectoryDistances)."""
    d = [0.0]
    for k in range(1, len(Q)):
        d.append(d[-1] + norm3(Q[k, :3, 3] - Q[k - 1, :3, 3]))
    return d


# ---------------------------------------------------------------- metrics

def rpe_pairs(delta, unit, tq, d):
    n = len(tq)
    pairs = []
    if unit == "frames":
        for i in range(n - delta):
            pairs.append((i, i + delta))
        return pairs
    x = np.asarray(tq if unit == "s" else d, dtype=float)
    for i in range(n):
        # the difference form (not x_j >= x_i + D) is the definition; x need
        # not increase (time association may pair est i with an earlier ref)
        hit = np.nonzero(x[i + 1:] - x[i] >= delta)[0]
        if len(hit):
            pairs.append((i, i + 1 + int(hit[0])))
    return pairs


def rpe(A, Q, pairs):
    te, re = [], []
    for i, j in pairs:
        E = inv_rigid(inv_rigid(Q[i]) @ Q[j]) @ (inv_rigid(A[i]) @ A[j])
        te.append(norm3(E[:3, 3]))
        re.append(math.degrees(angle_atan2(E[:3, :3])))
    return te, re


def kitti(A, Q, lengths):
    """Segment errors as the odometry devkit's calcSequenceErrors, step 10 frames."""
    d = np.array(path_lengths(Q))
    n = len(Q)
    per = {L: [] for L in lengths}   # (t_err/L, r_err/L) per length
    for first in range(0, n, 10):
        for L in lengths:
            # the devkit's strict "dist[i] > dist[first] + len", in that form
            hit = np.nonzero(d[first:] > d[first] + L)[0]
            if not len(hit):
                continue
            last = first + int(hit[0])
            E = inv_rigid(inv_rigid(A[first]) @ A[last]) @ (inv_rigid(Q[first]) @ Q[last])
            t_err = norm3(E[:3, 3])
            c = 0.5 * (E[0, 0] + E[1, 1] + E[2, 2] - 1.0)
            c = 1.0 if c > 1.0 else (-1.0 if c < -1.0 else c)   # the devkit's clamp
            r_err = math.acos(c)
            per[L].append((t_err / L, r_err / L))
    every = [e for L in lengths for e in per[L]]
    if not every:
        return None
    out = {
        "segments": len(every),
        "translation_percent": 100.0 * float(np.mean([e[0] for e in every])),
        "rotation_deg_per_m": (180.0 / math.pi) * float(np.mean([e[1] for e in every])),
        "lengths": [],
    }
    for L in lengths:
        if per[L]:
            out["lengths"].append({
                "length": L,
                "segments": len(per[L]),
                "translation_percent": 100.0 * float(np.mean([e[0] for e in per[L]])),
                "rotation_deg_per_m": (180.0 / math.pi) * float(np.mean([e[1] for e in per[L]])),
            })
    return out


# ---------------------------------------------------------------- the whole

def evaluate(est, ref, align="se3", associate=None, max_diff=DEFAULT_MAX_DIFF, offset=0.0,
             delta=1, delta_unit="frames", kitti_lengths=DEFAULT_KITTI_LENGTHS):
    """The JSON of `ptreg eval EST REF ... --json` as a dict; EvalError where it must fail."""
    if align not in ("none", "se3", "sim3"):
        raise EvalError("unknown alignment %r" % align)
    if delta_unit not in ("frames", "m", "s"):
        raise EvalError("unknown delta unit %r" % delta_unit)
    if delta_unit == "frames":
        if float(delta) != int(delta) or int(delta) < 1:
            raise EvalError("a delta in frames must be a positive integer")
        delta = int(delta)
    elif not (delta > 0 and math.isfinite(delta)):
        raise EvalError("delta must be positive")
    if not (max_diff >= 0 and math.isfinite(max_diff)) or not math.isfinite(offset):
        raise EvalError("bad --max-diff or --offset")
    lengths = [float(L) for L in kitti_lengths]
    if not lengths or not all(L > 0 and math.isfinite(L) for L in lengths):
        raise EvalError("KITTI lengths must be positive")

    fe, te, pe = read_trajectory(est)
    fr, tr, pr = read_trajectory(ref)
    if associate is None:
        associate = "time" if fe == "tum" and fr == "tum" else "index"
    if associate == "time" and "kitti" in (fe, fr):
        raise EvalError("pairing by time needs timestamps; a KITTI file has none")
    if associate == "time":
        pairs = associate_time(te, tr, max_diff, offset)
    elif associate == "index":
        pairs = [(i, i) for i in range(min(len(pe), len(pr)))]   # nan-ok: pose counts
    else:
        raise EvalError("unknown association %r" % associate)
    need = 2 if align == "none" else 3
    if len(pairs) < need:
        raise EvalError("%d associated poses, %d needed" % (len(pairs), need))

    P = np.array([pe[i] for i, _ in pairs])
    Q = np.array([pr[j] for _, j in pairs])
    tq = [float(tr[j]) for _, j in pairs]

    if align == "none":
        R, t, s = np.eye(3), np.zeros(3), 1.0
    else:
        R, t, s = umeyama(P[:, :3, 3], Q[:, :3, 3], align == "sim3")
    A = np.array(P)
    for k in range(len(A)):
        A[k, :3, :3] = R @ P[k, :3, :3]
        A[k, :3, 3] = s * R @ P[k, :3, 3] + t

    ate_t = [norm3(Q[k, :3, 3] - A[k, :3, 3]) for k in range(len(A))]
    ate_r = [math.degrees(angle_atan2(Q[k, :3, :3].T @ A[k, :3, :3])) for k in range(len(A))]

    d = path_lengths(Q)
    rp = rpe_pairs(delta, delta_unit, tq, d)
    if rp:
        rt, rr = rpe(A, Q, rp)
        rpe_out = {"delta": delta, "unit": delta_unit, "pairs": len(rp),
                   "translation": stats(rt), "rotation_deg": stats(rr)}
    else:
        rpe_out = None

    assoc = {"method": associate, "pairs": len(pairs)}
    if associate == "time":
        assoc["max_diff"] = float(max_diff)
        assoc["offset"] = float(offset)
    return {
        "estimate": {"path": est, "poses": len(pe), "format": fe},
        "reference": {"path": ref, "poses": len(pr), "format": fr},
        "association": assoc,
        "align": align,
        "alignment": {"rotation": [float(x) for x in R.reshape(-1)],
                      "translation": [float(x) for x in t], "scale": float(s)},
        "ate": {"translation": stats(ate_t), "rotation_deg": stats(ate_r)},
        "rpe": rpe_out,
        "kitti": kitti(A, Q, lengths),
    }


def options_from_args(argv):
    """(est, ref, keyword arguments of evaluate) from a `ptreg eval` command line."""
    ap = argparse.ArgumentParser(description="reference of ptreg eval")
    ap.add_argument("est")
    ap.add_argument("ref")
    ap.add_argument("--align", default="se3", choices=["none", "se3", "sim3"])
    ap.add_argument("--associate", default=None, choices=["time", "index"])
    ap.add_argument("--max-diff", type=float, default=DEFAULT_MAX_DIFF)
    ap.add_argument("--offset", type=float, default=0.0)
    ap.add_argument("--delta", type=float, default=1.0)
    ap.add_argument("--delta-unit", default="frames", choices=["frames", "m", "s"])
    ap.add_argument("--kitti-lengths", default=None)
    ap.add_argument("--json", action="store_true", help="accepted for ptreg's sake; the output is JSON anyway")
    a = ap.parse_args(argv)
    kw = {"align": a.align, "associate": a.associate, "max_diff": a.max_diff, "offset": a.offset,
          "delta": a.delta, "delta_unit": a.delta_unit}
    if a.kitti_lengths is not None:
        kw["kitti_lengths"] = [float(x) for x in a.kitti_lengths.split(",")]
    return a.est, a.ref, kw


def main(argv):
    est, ref, kw = options_from_args(argv)
    try:
        out = evaluate(est, ref, **kw)
    except (EvalError, OSError) as e:
        print("eval_reference: %s" % e, file=sys.stderr)
        return 1
    json.dump(out, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
