#!/usr/bin/env python3
"""`ptreg eval` held to its NumPy reference (eval_reference.py) and to hand values.

    /usr/bin/python3 tests/cli/eval_cases.py PTREG WORKDIR
    /usr/bin/python3 tests/cli/eval_cases.py --reference-only [PTREG] WORKDIR

(a) writes trajectory pairs into WORKDIR with a fixed seed: TUM and KITTI
    files with gaps, unequal lengths, a clock offset, timestamps jittered near
    the association tolerance, a sim3-scaled estimate, a 3 km KITTI-style drive
    with turns and hills, a drive too short for any KITTI segment, a TUM
    estimate against a KITTI reference, and two- and three-pose pairs;
(b) runs `PTREG eval EST REF OPTIONS --json` and the reference on each case
    under several option sets and compares every number the reference gives
    (|a - b| <= 1e-9 |b|, or 1e-9 where |b| < 1); where the reference refuses the input,
    ptreg must exit non-zero;
(c) checks two hand-made KITTI cases whose metrics are known in closed form
    (a 1% scale error along a straight 2 km drive; an extra yaw per frame)
    against those values: ptreg's output and the reference's both.

Thresholds: no association difference lies within 4 us of a --max-diff used
and no path length within 1e-5 m of a delta or KITTI length, so rounding
cannot flip those. Some ties are exact in decimal on purpose and are decided
by the double arithmetic the definitions spell out: RPE in seconds on a 30 Hz
grid (15 frames = 0.5 s), an estimate midway between two references under
--max-diff 0.06, integer KITTI line times and the hand cases' integer path
lengths. A C side computing |(t_est + offset) - t_ref|, t_j - t_i >= D and
d_k > d_first + L in doubles, in those forms, decides them the same way.

--reference-only skips every ptreg run (for use before ptreg has `eval`): the
files are written, the reference runs on every case and is checked against
the hand values. Exit 0 when all agree, 1 on any mismatch.
"""
import json
import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import eval_reference as ref  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ptreg_checks import CheckFailed, finite, near  # noqa: E402

RTOL = 1e-9
SEED = 20240607


# ---------------------------------------------------------------- geometry helpers

def rotvec(v):
    """Rotation matrix of an axis-angle vector (Rodrigues)."""
    v = np.asarray(v, dtype=float)
    a = np.linalg.norm(v)
    if a < 1e-300:
        return np.eye(3)
    k = v / a
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(a) * K + (1 - math.cos(a)) * K @ K


def rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def ry(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def orthonormal(R):
    # long products of rotations drift off SO(3); keep the files clean rotations
    U, _, Vt = np.linalg.svd(R)
    return U @ Vt


def rot_to_quat(R):
    """(qx, qy, qz, qw) of a rotation, Shepperd's method."""
    tr = np.trace(R)
    if tr > 0:
        s = 2.0 * math.sqrt(tr + 1.0)
        return ((R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s)
    i = int(np.argmax(np.diag(R)))
    j, k = (i + 1) % 3, (i + 2) % 3
    s = 2.0 * math.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
    q = [0.0, 0.0, 0.0]
    q[i] = 0.25 * s
    q[j] = (R[j, i] + R[i, j]) / s
    q[k] = (R[k, i] + R[i, k]) / s
    return (q[0], q[1], q[2], (R[k, j] - R[j, k]) / s)


def pose(R, t):
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = t
    return T


def in_other_frame(poses, R0, t0, scale=1.0):
    """The same motion seen from another world frame (and scale, for sim3)."""
    return [pose(R0 @ P[:3, :3], scale * (R0 @ P[:3, 3]) + t0) for P in poses]


def noisy(poses, rng, sig_t, sig_r):
    return [pose(P[:3, :3] @ rotvec(rng.normal(scale=sig_r, size=3)),
                 P[:3, 3] + rng.normal(scale=sig_t, size=3)) for P in poses]


# ---------------------------------------------------------------- file writers

def us_to_str(us):
    """A timestamp in integer microseconds as exact decimal text (TUM's 6 decimals)."""
    sign = "-" if us < 0 else ""
    us = abs(us)
    return "%s%d.%06d" % (sign, us // 1000000, us % 1000000)


def write_tum(path, times_us, poses, rng=None, odd=False):
    """TUM file; odd=True adds comments, blank lines and unnormalized or sign-flipped quaternions."""
    with open(path, "w") as f:
        f.write("# timestamp tx ty tz qx qy qz qw\n")
        for k, (t, P) in enumerate(zip(times_us, poses)):
            q = np.array(rot_to_quat(P[:3, :3]))
            if odd and k % 7 == 3:
                q = q * rng.choice([-1.0, 1.7, -0.45])
            if odd and k % 50 == 25:
                f.write("\n# a comment in the middle\n\n")
            f.write("%s %s\n" % (us_to_str(int(t)), " ".join("%.17g" % x for x in (*P[:3, 3], *q))))


def write_kitti(path, poses):
    with open(path, "w") as f:
        for P in poses:
            f.write(" ".join("%.17g" % x for x in P[:3, :4].reshape(-1)) + "\n")


# ---------------------------------------------------------------- trajectories

def handheld(times_s, big=1.0):
    """Smooth 3D handheld-camera motion (positions in metres, times in seconds)."""
    out = []
    for t in times_s:
        p = big * np.array([1.5 * math.sin(0.4 * t) + 0.3 * math.sin(1.3 * t),
                            1.0 * math.cos(0.3 * t) + 0.2 * math.sin(1.7 * t),
                            0.4 * math.sin(0.5 * t) + 1.2])
        R = rotvec([0.3 * math.sin(0.7 * t), 0.5 * math.sin(0.35 * t) + 0.1, 0.4 * math.cos(0.25 * t)])
        out.append(pose(R, p))
    return out


def drive(n, rng):
    """A KITTI-style car drive from the identity: ~1 m steps, turns and hills."""
    poses = []
    p = np.zeros(3)
    yaw = 0.0
    turn_left = 0   # frames left in the current turn
    turn_rate = 0.0
    for k in range(n):
        pitch = 0.04 * math.sin(2 * math.pi * k / 700) + 0.02 * math.sin(2 * math.pi * k / 230)
        roll = 0.01 * math.sin(2 * math.pi * k / 310)
        R = rz(yaw) @ ry(-pitch) @ rx(roll)
        poses.append(pose(R, p))
        step = 1.0 + 0.15 * math.sin(2 * math.pi * k / 400) + rng.uniform(-0.05, 0.05)
        p = p + R @ np.array([step, 0.0, 0.0])
        if turn_left == 0 and rng.uniform() < 1 / 250:
            turn_left = int(rng.integers(20, 40))
            turn_rate = rng.choice([-1.0, 1.0]) * (math.pi / 2) / turn_left
        if turn_left:
            yaw += turn_rate
            turn_left -= 1
        else:
            yaw += 0.002 * math.sin(2 * math.pi * k / 900)
    return poses


def odometry(Q, rng, scale=1.004, sig_r=3e-4, yaw_bias=5e-5, sig_t=0.005):
    """A drifting visual-odometry estimate of Q: noisy relative motions integrated."""
    P = [np.eye(4)]
    for k in range(len(Q) - 1):
        rel = np.linalg.inv(Q[k]) @ Q[k + 1]
        R = rel[:3, :3] @ rotvec(rng.normal(scale=sig_r, size=3) + np.array([0.0, 0.0, yaw_bias]))
        t = scale * rel[:3, 3] + rng.normal(scale=sig_t, size=3)
        nxt = P[-1] @ pose(R, t)
        nxt[:3, :3] = orthonormal(nxt[:3, :3])
        P.append(nxt)
    return P


def random_frame(rng, spread=3.0):
    return rotvec(rng.normal(size=3)), rng.normal(scale=spread, size=3)


# ---------------------------------------------------------------- the cases

T0_US = 1305031102175304   # a TUM-like epoch timestamp, in microseconds


def make_cases(w):
    """[(name, est path, ref path, [option lists])], files written into w."""
    rng = np.random.default_rng(SEED)
    cases = []

    def at(name):
        return os.path.join(w, name)

    # plain TUM pair: jitter well inside the tolerance, comments, odd quaternions
    n = 400
    tr = [T0_US + round(k * 1e6 / 30) for k in range(n)]
    Q = handheld([(t - T0_US) / 1e6 for t in tr])
    # jitter in steps of 10 us so that none lies within 5 us of --max-diff 0.002005 in decimal
    te = [t + 10 * int(rng.integers(-300, 301)) for t in tr]
    R0, t0 = random_frame(rng)
    E = in_other_frame(noisy(Q, rng, 0.01, 0.008), R0, t0)
    write_tum(at("basic_ref.txt"), tr, Q, rng, odd=True)
    write_tum(at("basic_est.txt"), te, E, rng, odd=True)
    cases.append(("basic", at("basic_est.txt"), at("basic_ref.txt"), [
        [], ["--align", "none"], ["--align", "sim3"], ["--delta", "5"],
        ["--delta", "0.5", "--delta-unit", "s"], ["--delta", "0.25", "--delta-unit", "m"],
        ["--associate", "index"], ["--max-diff", "0.002005"], ["--delta", "1000"],
        ["--delta", "100", "--delta-unit", "s"], ["--kitti-lengths", "1,2,5"],
        ["--align", "sim3", "--delta", "3", "--kitti-lengths", "0.5,3"],
    ]))

    # gaps: a fifth of the estimate's frames dropped at random, and a 60-frame hole
    n = 600
    tr = [T0_US + round(k * 1e6 / 30) for k in range(n)]
    Q = handheld([(t - T0_US) / 1e6 for t in tr])
    keep = [k for k in range(n) if rng.uniform() > 0.2 and not 200 <= k < 260]
    R0, t0 = random_frame(rng)
    E = in_other_frame(noisy([Q[k] for k in keep], rng, 0.02, 0.01), R0, t0)
    write_tum(at("gaps_ref.txt"), tr, Q)
    write_tum(at("gaps_est.txt"), [tr[k] + int(rng.integers(-2000, 2001)) for k in keep], E)
    cases.append(("gaps", at("gaps_est.txt"), at("gaps_ref.txt"), [
        [], ["--delta", "10"], ["--delta", "1", "--delta-unit", "s"],
        ["--delta", "0.5", "--delta-unit", "m"], ["--associate", "index"], ["--align", "sim3"],
    ]))

    # unequal lengths: the estimate starts 2 s earlier and ends 3 s later, on
    # another phase of the 30 Hz grid; and one that covers only a middle third
    n = 300
    tr = [T0_US + round(k * 1e6 / 30) for k in range(n)]
    Q = handheld([(t - T0_US) / 1e6 for t in tr])
    te = [T0_US - 2000000 + 4000 + round(k * 1e6 / 30) for k in range(n + 150)]
    R0, t0 = random_frame(rng)
    E = in_other_frame(noisy(handheld([(t - T0_US) / 1e6 for t in te]), rng, 0.01, 0.005), R0, t0)
    write_tum(at("long_est.txt"), te, E)
    write_tum(at("long_ref.txt"), tr, Q)
    write_tum(at("short_est.txt"), te[150:250], E[150:250])
    cases.append(("longer_estimate", at("long_est.txt"), at("long_ref.txt"), [
        [], ["--associate", "index"], ["--align", "sim3"], ["--delta", "2", "--delta-unit", "s"],
    ]))
    cases.append(("shorter_estimate", at("short_est.txt"), at("long_ref.txt"), [
        [], ["--associate", "index"], ["--delta", "20"],
    ]))

    # clock offset: the estimate's clock reads 12.3456 s at the reference's T0
    # (so its times are small numbers), 20 Hz against the reference's 30 Hz
    n = 450
    tr = [T0_US + round(k * 1e6 / 30) for k in range(n)]
    Q = handheld([(t - T0_US) / 1e6 for t in tr])
    start_us = T0_US - 12345600   # the estimate's zero, on the reference clock
    te_ref = [T0_US + 50000 + k * 50000 + int(rng.integers(-2000, 2001)) for k in range(280)]
    R0, t0 = random_frame(rng)
    E = in_other_frame(noisy(handheld([(t - T0_US) / 1e6 for t in te_ref]), rng, 0.01, 0.005), R0, t0)
    write_tum(at("offset_ref.txt"), tr, Q)
    write_tum(at("offset_est.txt"), [t - start_us for t in te_ref], E)
    off = us_to_str(start_us)
    cases.append(("offset", at("offset_est.txt"), at("offset_ref.txt"), [
        ["--offset", off], ["--offset", off, "--max-diff", "0.01"],
        ["--offset", off, "--delta", "0.5", "--delta-unit", "s"],
        ["--offset", us_to_str(start_us + 500000)],
        [],   # no pair within 0.02 s without the offset: both must refuse
    ]))

    # timestamps jittered near the tolerance: reference at 10 Hz; per reference
    # frame an estimate 19.8 or 20.2 ms (or closer) away, rivals for some frames
    # and midpoints that only a wide --max-diff reaches (from two references:
    # a tie in decimal that the double differences decide). No difference lies
    # within 50 us of a --max-diff used, so float rounding (~0.2 us at epoch
    # times) cannot move a pair across the tolerance.
    n = 200
    tr = [T0_US + 1000000 + k * 100000 for k in range(n)]
    Q = handheld([(t - T0_US) / 1e6 for t in tr])
    te = []
    for t in tr:
        te.append(t + int(rng.choice([19800, -19800, 20200, -20200, 15000, -15000, 500, -500])))
        if rng.uniform() < 0.3:
            te.append(t + int(rng.choice([-10100, 9900, 19500, -19600])))
        if rng.uniform() < 0.3:
            te.append(t + 50000)
    te.sort()
    R0, t0 = random_frame(rng)
    E = in_other_frame(noisy(handheld([(t - T0_US) / 1e6 for t in te]), rng, 0.01, 0.005), R0, t0)
    write_tum(at("jitter_ref.txt"), tr, Q)
    write_tum(at("jitter_est.txt"), te, E)
    cases.append(("jitter", at("jitter_est.txt"), at("jitter_ref.txt"), [
        [], ["--max-diff", "0.0199"], ["--max-diff", "0.0201"], ["--max-diff", "0.06"],
        ["--max-diff", "0.06", "--delta", "2", "--delta-unit", "s"], ["--max-diff", "0.0199", "--offset", "-0.00037"],
    ]))

    # monocular-like estimate: scaled by 0.37 in another frame
    n = 500
    tr = [T0_US + round(k * 1e6 / 30) for k in range(n)]
    Q = handheld([(t - T0_US) / 1e6 for t in tr], big=4.0)
    R0, t0 = random_frame(rng)
    E = in_other_frame(noisy(Q, rng, 0.02, 0.006), R0, t0, scale=0.37)
    write_tum(at("sim3_ref.txt"), tr, Q)
    write_tum(at("sim3_est.txt"), [t + int(rng.integers(-1000, 1001)) for t in tr], E)
    cases.append(("sim3", at("sim3_est.txt"), at("sim3_ref.txt"), [
        ["--align", "sim3"], [], ["--align", "none"],
        ["--align", "sim3", "--delta", "2", "--delta-unit", "m"],
        ["--align", "sim3", "--kitti-lengths", "2,4,8"],
    ]))

    # a 3 km KITTI-style drive and a drifting odometry estimate
    Q = drive(3200, rng)
    E = odometry(Q, rng)
    write_kitti(at("drive_ref.txt"), Q)
    write_kitti(at("drive_est.txt"), E)
    cases.append(("kitti_drive", at("drive_est.txt"), at("drive_ref.txt"), [
        [], ["--align", "none"], ["--align", "sim3"], ["--delta", "100", "--delta-unit", "m"],
        ["--delta", "10"], ["--kitti-lengths", "50,150,1000,5000"], ["--associate", "time"],
        ["--associate", "time", "--offset", "3"], ["--delta", "5", "--delta-unit", "s"],
    ]))

    # too short for any KITTI segment of the default lengths
    Q = drive(60, rng)
    E = odometry(Q, rng, scale=1.02, sig_r=1e-3)
    write_kitti(at("kshort_ref.txt"), Q)
    write_kitti(at("kshort_est.txt"), E)
    cases.append(("kitti_short", at("kshort_est.txt"), at("kshort_ref.txt"), [
        [], ["--kitti-lengths", "10,20,100"], ["--align", "none", "--kitti-lengths", "5"],
    ]))

    # a TUM estimate (1 Hz clock) against a KITTI reference (time = line index)
    write_tum(at("mixed_est.txt"), [k * 1000000 + int(rng.integers(-1000, 1001)) for k in range(len(E))],
              noisy(E, rng, 0.0, 0.0))
    cases.append(("mixed", at("mixed_est.txt"), at("kshort_ref.txt"), [
        [], ["--associate", "time"], ["--associate", "time", "--offset", "2"],
    ]))

    # the fewest poses: two (only --align none) and three (se3, sim3)
    tr = [T0_US + k * 100000 for k in range(3)]
    Q = handheld([k * 0.7 for k in range(3)])
    R0, t0 = random_frame(rng)
    E = in_other_frame(noisy(Q, rng, 0.01, 0.01), R0, t0)
    write_tum(at("two_ref.txt"), tr[:2], Q[:2])
    write_tum(at("two_est.txt"), tr[:2], E[:2])
    write_tum(at("three_ref.txt"), tr, Q)
    write_tum(at("three_est.txt"), tr, E)
    cases.append(("two_poses", at("two_est.txt"), at("two_ref.txt"), [
        ["--align", "none"], ["--align", "none", "--delta", "2"], [],   # se3 needs three: refused
    ]))
    cases.append(("three_poses", at("three_est.txt"), at("three_ref.txt"), [
        [], ["--align", "sim3"], ["--delta", "2"], ["--delta", "0.15", "--delta-unit", "s"],
    ]))
    return cases


# ---------------------------------------------------------------- hand-made KITTI cases

HAND_N = 2001        # poses 0..2000 along x, 1 m apart: d_k = k exactly
HAND_YAW = 1e-4      # extra yaw per frame, radians
HAND_LENGTHS = [100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 700.0, 800.0]


def straight(n):
    return [pose(np.eye(3), [float(k), 0.0, 0.0]) for k in range(n)]


def make_hand_cases(w):
    Q = straight(HAND_N)
    write_kitti(os.path.join(w, "hand_ref.txt"), Q)
    write_kitti(os.path.join(w, "hand_scale_est.txt"),
                [pose(np.eye(3), [1.01 * k, 0.0, 0.0]) for k in range(HAND_N)])
    write_kitti(os.path.join(w, "hand_yaw_est.txt"),
                [pose(rz(k * HAND_YAW), [float(k), 0.0, 0.0]) for k in range(HAND_N)])


def hand_segments(L):
    """Segments of length L: with d_k = k and the strict '>', last = first + L + 1,
    so first runs over 0, 10, ... while first + L + 1 <= N - 1."""
    return (HAND_N - 2 - int(L)) // 10 + 1


def hand_kitti(per_segment_t, per_segment_r):
    """KITTI block from the per-segment t_err/L and r_err/L of each length:
    per_segment_x(L) -> (sum over that length's segments, count)."""
    out = {"lengths": []}
    tot_t = tot_r = 0.0
    tot_n = 0
    for L in HAND_LENGTHS:
        st, n = per_segment_t(L)
        sr, _ = per_segment_r(L)
        out["lengths"].append({"length": L, "segments": n, "translation_percent": 100.0 * st / n,
                               "rotation_deg_per_m": math.degrees(sr / n)})
        tot_t += st
        tot_r += sr
        tot_n += n
    out["segments"] = tot_n
    out["translation_percent"] = 100.0 * tot_t / tot_n
    out["rotation_deg_per_m"] = math.degrees(tot_r / tot_n)
    return out


def hand_scale_values():
    """Estimate x scaled by 1.01, rotations identity, --align none.
    Segment: t_err = 0.01 (L + 1) (it spans L + 1 metres), r_err = 0.
    ATE: e_k = 0.01 k. RPE (1 frame): 0.01 m each, 0 degrees."""
    m = HAND_N - 1   # k = 0..m
    mean_k2 = m * (2 * m + 1) / 6.0   # sum k^2 / (m + 1)
    kitti = hand_kitti(lambda L: (hand_segments(L) * 0.01 * (L + 1) / L, hand_segments(L)),
                       lambda L: (0.0, hand_segments(L)))
    zero = {"rmse": 0.0, "mean": 0.0, "median": 0.0, "std": 0.0, "min": 0.0, "max": 0.0}
    ate_t = {"rmse": 0.01 * math.sqrt(mean_k2), "mean": 0.01 * m / 2, "median": 0.01 * m / 2,
             "std": 0.01 * math.sqrt(mean_k2 - (m / 2) ** 2), "min": 0.0, "max": 0.01 * m}
    rpe_t = {"rmse": 0.01, "mean": 0.01, "median": 0.01, "std": 0.0, "min": 0.01, "max": 0.01}
    return {"kitti": kitti, "ate": {"translation": ate_t, "rotation_deg": zero},
            "rpe": {"pairs": m, "translation": rpe_t, "rotation_deg": zero}}


def sum_sin(M, b):
    """sum_{i=0}^{M-1} sin(i b), in closed form."""
    return math.sin(M * b / 2) * math.sin((M - 1) * b / 2) / math.sin(b / 2)


def hand_yaw_values():
    """Estimate positions equal the reference's, its rotation Rz(k a), --align none.
    Segment from f, L: relative rotation Rz((L + 1) a), so r_err = (L + 1) a;
    the estimate's relative translation is (L + 1) Rz(-f a) e_x against the
    reference's (L + 1) e_x, so t_err = (L + 1) 2 sin(f a / 2), f = 10 i.
    ATE: rotation k a, translation 0. RPE (1 frame): rotation a, translation 2 sin(i a / 2)."""
    a = HAND_YAW
    m = HAND_N - 1
    mean_k2 = m * (2 * m + 1) / 6.0

    def seg_t(L):
        n = hand_segments(L)
        return (L + 1) / L * 2 * sum_sin(n, 10 * a / 2), n

    kitti = hand_kitti(seg_t, lambda L: (hand_segments(L) * (L + 1) * a / L, hand_segments(L)))
    zero = {"rmse": 0.0, "mean": 0.0, "median": 0.0, "std": 0.0, "min": 0.0, "max": 0.0}
    deg = math.degrees
    ate_r = {"rmse": deg(a * math.sqrt(mean_k2)), "mean": deg(a * m / 2), "median": deg(a * m / 2),
             "std": deg(a * math.sqrt(mean_k2 - (m / 2) ** 2)), "min": 0.0, "max": deg(a * m)}
    rpe_r = {"rmse": deg(a), "mean": deg(a), "median": deg(a), "std": 0.0, "min": deg(a), "max": deg(a)}
    rpe_t = {"mean": 2 * sum_sin(m, a / 2) / m, "min": 0.0, "max": 2 * math.sin((m - 1) * a / 2)}
    return {"kitti": kitti, "ate": {"translation": zero, "rotation_deg": ate_r},
            "rpe": {"pairs": m, "translation": rpe_t, "rotation_deg": rpe_r}}


# ---------------------------------------------------------------- comparing

class Tally:
    def __init__(self):
        self.numbers = 0
        self.mismatches = []

    def bad(self, where, msg):
        self.mismatches.append("%s: %s" % (where, msg))


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def compare(got, want, path, tally, where):
    """Every key, list element and number of `want` in `got`; extra keys of `got` allowed."""
    label = "%s %s" % (where, path or "<top>")
    if isinstance(want, dict):
        if not isinstance(got, dict):
            tally.bad(label, "expected an object, got %r" % (got,))
            return
        for k, v in want.items():
            if k not in got:
                tally.bad(label, "key %r missing" % k)
            else:
                compare(got[k], v, "%s.%s" % (path, k) if path else k, tally, where)
    elif isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            tally.bad(label, "expected a list of %d, got %r" % (len(want), got if not isinstance(got, list)
                                                                    else "a list of %d" % len(got)))
            return
        for i, (g, v) in enumerate(zip(got, want)):
            compare(g, v, "%s[%d]" % (path, i), tally, where)
    elif want is None or isinstance(want, (str, bool)):
        if got != want or type(got) is not type(want):
            tally.bad(label, "expected %r, got %r" % (want, got))
    elif is_number(want):
        tally.numbers += 1
        try:
            b = finite(want, "the reference's value")
            near(got, b, RTOL * (abs(b) if abs(b) > 1.0 else 1.0), "value")
        except CheckFailed as err:
            tally.bad(label, str(err))
    else:
        tally.bad(label, "unexpected reference value %r" % (want,))


def run_reference(est, refp, opts):
    """(json dict, None) or (None, error message)."""
    args = [est, refp] + list(opts)
    e, r, kw = ref.options_from_args(args)
    try:
        return ref.evaluate(e, r, **kw), None
    except ref.EvalError as err:
        return None, str(err)


def run_ptreg(ptreg, est, refp, opts):
    """(rc, parsed json or None, stderr)."""
    cmd = [ptreg, "eval", est, refp] + list(opts) + ["--json"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return -1, None, "timed out"
    out = None
    if p.returncode == 0:
        try:
            out = json.loads(p.stdout)
        except ValueError as err:
            return p.returncode, None, "not JSON (%s): %s" % (err, p.stdout[:200])
    return p.returncode, out, p.stderr.strip()[-300:]


# ---------------------------------------------------------------- main

def main(argv):
    ref_only = "--reference-only" in argv
    pos = [a for a in argv if a != "--reference-only"]
    if len(pos) != 2 and not (ref_only and len(pos) == 1):
        print(__doc__, file=sys.stderr)
        return 2
    ptreg = None if ref_only else pos[0]
    w = pos[-1]
    os.makedirs(w, exist_ok=True)

    tally = Tally()
    runs = refused = 0
    cases = make_cases(w)
    for name, est, refp, option_sets in cases:
        for opts in option_sets:
            where = "[%s %s]" % (name, " ".join(opts) or "(defaults)")
            want, err = run_reference(est, refp, opts)
            runs += 1
            if want is None:
                refused += 1
            if ptreg is None:
                continue
            rc, got, stderr = run_ptreg(ptreg, est, refp, opts)
            if want is None:
                if rc == 0:
                    tally.bad(where, "ptreg exit 0 where the reference refuses (%s)" % err)
            elif rc != 0 or got is None:
                tally.bad(where, "ptreg exit %d: %s" % (rc, stderr))
            else:
                compare(got, want, "", tally, where)

    # hand-made cases: the reference and ptreg, each against the closed forms
    make_hand_cases(w)
    hand = [("hand_scale", os.path.join(w, "hand_scale_est.txt"), hand_scale_values()),
            ("hand_yaw", os.path.join(w, "hand_yaw_est.txt"), hand_yaw_values())]
    refp = os.path.join(w, "hand_ref.txt")
    opts = ["--align", "none"]
    for name, est, want in hand:
        got, err = run_reference(est, refp, opts)
        runs += 1
        if got is None:
            tally.bad("[%s reference]" % name, "refused: %s" % err)
        else:
            compare(got, want, "", tally, "[%s reference vs hand]" % name)
        if ptreg is not None:
            rc, got, stderr = run_ptreg(ptreg, est, refp, opts)
            if rc != 0 or got is None:
                tally.bad("[%s ptreg]" % name, "exit %d: %s" % (rc, stderr))
            else:
                compare(got, want, "", tally, "[%s ptreg vs hand]" % name)
            # and the generic comparison on the same files
            want_ref, _ = run_reference(est, refp, opts)
            if got is not None and want_ref is not None:
                compare(got, want_ref, "", tally, "[%s ptreg vs reference]" % name)

    for m in tally.mismatches:
        print(m)
    what = "reference only" if ptreg is None else "ptreg eval vs reference and hand values"
    print("eval_cases (%s): %d cases, %d runs (%d refused), %d numbers compared, %d mismatches"
          % (what, len(cases) + len(hand), runs, refused, tally.numbers, len(tally.mismatches)))
    return 1 if tally.mismatches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
