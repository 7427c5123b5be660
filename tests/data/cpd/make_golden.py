#!/usr/bin/python3
"""Golden data for `ptreg cpd`: pycpd's answers on seeded bunny pairs.

Remake the files (pycpd's package folder under /work/pycpd-src, NumPy only):

    PYTHONPATH=/work/pycpd-src /usr/bin/python3 tests/data/cpd/make_golden.py tests/data/cpd

Made with pycpd at commit e5ca02d2501fb4b633c1664de939c336ffa2349e (siavashk/pycpd,
2022-12-15; pure NumPy, run here as a peer only, none of its code is in this tree);
each JSON records a SHA-256 of the pycpd sources that made it (`pycpd_sources_sha256`).

Data (seed 20240917): the source is 2,000 points drawn without replacement from the
Stanford bunny scan bun000.ply (../shared/data/bunny, metres, about 0.16 m across,
RMS radius 0.056 m); where that file is absent, a smooth closed synthetic surface of
the same size stands in (the JSON's `shape` says which). Each case's target is an
independent draw of 1,940 points from the same surface, moved by the case's
transform, with Gaussian noise of 0.5 mm per axis, plus 60 outliers (3%) uniform in
the moved surface's bounding box grown by 10% on each side, the rows shuffled:

    rigid       25 deg about (1, 2, 3)/|.|, t = (0.03, -0.02, 0.04)
    similarity  the same rotation, scale 1.2, t = (0.03, -0.02, 0.04)
    affine      A_true = R(20 deg about (-2, 1, 3)) U, U upper triangular: diagonal
                (1.08, 0.94, 1), shears xy 0.15, xz -0.10, yz 0.08; t = (0.02, 0.01, -0.03)
    deformable  a bend y += 0.012 sin(2 pi x / 0.3), z += 0.008 sin(2 pi (y - 0.1) / 0.25)
                (x, y in metres), after 10 deg about (0, 1, 1)/|.|, t = (0.01, 0.005, -0.01)

Files, all 2,000 x 3: `source.npy` (float32, the source of every case),
`<case>_target.npy` (float32; rigid_fullfit uses rigid's), `<case>_pycpd.npy`
(float64: pycpd's TY, the moved source) and `<case>.json` (what was passed and what
came back, below).

pycpd is given the float32 files as float64 (`.astype(np.float64)`): X = target,
Y = source, w = 0.05, tolerance = 0 (its loop `while iteration < max_iterations and
diff > tolerance` then runs every iteration unless diff is exactly 0: `iterations`
says how many ran), sigma2 = None (its default from the data, initialize_sigma2: the
mean of |x_n - y_m|^2 over all pairs, divided by D; recorded as `sigma2_init`),
max_iterations 50 (rigid, similarity, affine, rigid_fullfit) or 30 (deformable):

    rigid       RigidRegistration(scale=False)      our --transform rigid
    similarity  RigidRegistration(scale=True)       our --transform similarity
    affine      AffineRegistration()                our --transform affine
    deformable  DeformableRegistration(alpha=2, beta=0.056)
                                                    our --transform deformable --lambda 2 --beta 0.056

rigid_fullfit is the rigid case again (its target, `--transform rigid`) with one
change, a subclass overriding pycpd's update_variance: the new sigma2 is the whole fit
sum P |x - T(y)|^2 / (Np D) = (xPx - 2 tr(A R) + YPY) / (Np D), where pycpd keeps
(xPx - s tr(A R)) / (Np D) with s = 1 (exact only at the optimal scale, i.e. for
similarity). On these data the two differ by a factor 1.9 in the final sigma2 and by
1.1e-4 in relative RMS of TY; ptreg's rigid step uses the whole fit (src/reg/cpd/cpd.c).

deformable_50it is the deformable case run for 50 iterations: its late iterations (sigma2
falling from 2.8e-6 to 2.2e-6, lambda sigma2 ~ 5e-6 against a kernel matrix G with
1,756 of its 2,000 eigenvalues below 1e-10) are where a solver's accuracy shows. pycpd
itself repeats there: with OpenBLAS instead of the reference BLAS its TY moves by
6.7e-10 (relative RMS) and its sigma2 by 1.1e-9.

pycpd does not normalise the clouds, so its default beta = 2 (metres) would make
the kernel flat over the bunny: beta is set to the source's RMS radius, rounded
(`beta` in the JSON), lambda (pycpd's alpha) stays 2.

The JSON holds, in the column-vector convention T(y) = s R y + t: `s`, `R` (pycpd's R
transposed, pycpd moves rows as s Y R + t) and `t` for rigid and similarity; `A`
(pycpd's B transposed: T(y) = A y + t) and `t` for affine; `sigma2_init`,
`sigma2` (the final one), `iterations`, `sigma2_history` (sigma2 after each
iteration), `q_history` (pycpd's objective, not deformable) and, for information,
`rms_to_truth_before` / `rms_to_truth` (RMS of |TY - T_true(Y)| over the source, before
and after) and `surface_distance` (each point's distance to the whole scan moved by the
truth: a deformable match may slide along the surface).

pycpd works in the data's units: its outlier term (2 pi sigma2)^(D/2) w/(1-w) M/N
shrinks with sigma2 (about 1e-9 at the end in metres), so late in the run w = 0.05 hardly
discounts the outliers, and in the deformable case they pull the few nearest source
points (the ear tips, the base) off the surface: its median distance to the surface
ends at 0.6 mm, the noise, while about 5% of the points stay more than 5 mm off
(without the outliers: 1 mm RMS). That is pycpd's answer, and the one to match.
"""
import argparse
import hashlib
import inspect
import json
import math
import os
import sys

import numpy as np

SEED = 20240917
N_SOURCE = 2000
N_TARGET = 2000
OUTLIER_FRACTION = 0.03
NOISE = 0.0005
W = 0.05
MAX_ITER = {"rigid": 50, "similarity": 50, "affine": 50, "deformable": 30, "rigid_fullfit": 50, "deformable_50it": 50}
LAMBDA_DEFORMABLE = 2.0
CASES = ("rigid", "similarity", "affine", "deformable")
# rigid_fullfit: the rigid case (its target) with pycpd's sigma2 update replaced, below;
# deformable_50it: the deformable case run for 50 iterations
EXTRA = {"rigid_fullfit": "rigid", "deformable_50it": "deformable"}

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
BUNNY = os.path.join(ROOT, "..", "shared", "data", "bunny", "bun000.ply")


def read_ascii_ply_xyz(path):
    """x y z of the vertices of an ascii PLY (the bunny scans: other elements follow)."""
    with open(path) as f:
        n = None
        props = []
        in_vertex = False
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "format" and w[1] != "ascii":
                raise ValueError(f"{path}: not an ascii PLY")
            if w[0] == "element":
                in_vertex = w[1] == "vertex"
                if in_vertex:
                    n = int(w[2])
            elif w[0] == "property" and in_vertex:
                props.append(w[-1])
            elif w[0] == "end_header":
                break
        cols = [props.index(c) for c in ("x", "y", "z")]
        pts = np.loadtxt(f, max_rows=n, usecols=cols, dtype=np.float64)
    if pts.shape != (n, 3):
        raise ValueError(f"{path}: read {pts.shape}, want ({n}, 3)")
    return pts


def synthetic_surface(n, rng):
    """A smooth closed bumpy surface about the bunny's size (stand-in when the scan is absent)."""
    u = rng.uniform(-1.0, 1.0, n)
    phi = rng.uniform(0.0, 2.0 * math.pi, n)
    th = np.arccos(u)
    r = 0.06 * (1.0 + 0.25 * np.sin(3 * th) * np.cos(2 * phi) + 0.1 * np.cos(5 * phi))
    p = np.stack([r * np.sin(th) * np.cos(phi), r * np.sin(th) * np.sin(phi), 0.8 * r * np.cos(th)], axis=1)
    return p + np.array([-0.024, 0.097, 0.036])


def rotation(axis, degrees):
    """Rotation matrix (column vectors) of an axis and an angle (Rodrigues)."""
    k = np.asarray(axis, dtype=np.float64)
    k = k / np.linalg.norm(k)
    a = math.radians(degrees)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(a) * K + (1 - math.cos(a)) * K @ K


def truth(case):
    """The case's transform as a function of an (n, 3) array, and its parameters."""
    if case in ("rigid", "similarity"):
        R = rotation((1, 2, 3), 25.0)
        s = 1.2 if case == "similarity" else 1.0
        t = np.array([0.03, -0.02, 0.04])
        return (lambda p: s * p @ R.T + t), {"s": s, "R": R.tolist(), "t": t.tolist(),
                                            "rotation": "25 deg about (1, 2, 3)"}
    if case == "affine":
        shear = np.array([[1.08, 0.15, -0.10], [0.0, 0.94, 0.08], [0.0, 0.0, 1.0]])
        A = rotation((-2, 1, 3), 20.0) @ shear
        t = np.array([0.02, 0.01, -0.03])
        return (lambda p: p @ A.T + t), {"A": A.tolist(), "t": t.tolist(),
                                        "rotation": "20 deg about (-2, 1, 3), times the shear"}
    R = rotation((0, 1, 1), 10.0)
    t = np.array([0.01, 0.005, -0.01])

    def bend(p):
        q = p.copy()
        q[:, 1] += 0.012 * np.sin(2 * math.pi * p[:, 0] / 0.3)
        q[:, 2] += 0.008 * np.sin(2 * math.pi * (p[:, 1] - 0.1) / 0.25)
        return q @ R.T + t

    return bend, {"R": R.tolist(), "t": t.tolist(), "rotation": "10 deg about (0, 1, 1)",
                  "bend": "y += 0.012 sin(2 pi x / 0.3), z += 0.008 sin(2 pi (y - 0.1) / 0.25), then R, t"}


def make_target(surface, move, rng):
    n_out = int(round(OUTLIER_FRACTION * N_TARGET))
    n_in = N_TARGET - n_out
    p = move(surface[rng.choice(len(surface), n_in, replace=False)])
    p = p + rng.normal(0.0, NOISE, p.shape)
    lo, hi = p.min(axis=0), p.max(axis=0)  # nan-ok: generated data, finite
    pad = 0.1 * (hi - lo)
    out = rng.uniform(lo - pad, hi + pad, (n_out, 3))
    both = np.concatenate([p, out])
    return both[rng.permutation(N_TARGET)]


def nearest_distances(points, cloud):
    """Distance from each point to its nearest in cloud (brute force, in blocks)."""
    out = np.empty(len(points))
    for i in range(0, len(points), 256):
        d2 = np.sum((points[i:i + 256, None, :] - cloud[None, :, :]) ** 2, axis=2)
        out[i:i + 256] = np.sqrt(d2.min(axis=1))
    return out


def pycpd_sources_sha256(pycpd):
    h = hashlib.sha256()
    folder = os.path.dirname(inspect.getfile(pycpd))
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            with open(os.path.join(folder, name), "rb") as f:
                h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()


def run_pycpd(pycpd, case, X, Y, beta):
    """pycpd on target X and source Y (float64); returns TY and the record."""
    common = dict(X=X, Y=Y, w=W, max_iterations=MAX_ITER[case], tolerance=0)
    if case == "rigid_fullfit":
        class RigidFullFit(pycpd.RigidRegistration):
            """pycpd's rigid step with sigma2 = sum P |x - T(y)|^2 / (Np D), the whole fit
            (xPx - 2 tr(A R) + YPY at s = 1) in place of its xPx - s tr(A R)."""

            def update_variance(self):
                super().update_variance()  # its q and diff, then the sigma2 replaced
                fit = self.Pt1 @ np.sum(self.X_hat ** 2, axis=1) - 2 * self.s * np.trace(self.A @ self.R) \
                    + self.s ** 2 * self.YPY
                self.sigma2 = fit / (self.Np * self.D)
                if self.sigma2 <= 0:
                    self.sigma2 = self.tolerance / 10

        reg = RigidFullFit(scale=False, **common)
        call = f"RigidRegistration(X=target, Y=source, scale=False, w={W}, max_iterations={MAX_ITER[case]}, " \
               "tolerance=0), its update_variance's sigma2 replaced by (xPx - 2 tr(A R) + YPY) / (Np D)"
    elif case in ("rigid", "similarity"):
        reg = pycpd.RigidRegistration(scale=(case == "similarity"), **common)
        call = f"RigidRegistration(X=target, Y=source, scale={case == 'similarity'}, w={W}, " \
               f"max_iterations={MAX_ITER[case]}, tolerance=0)"
    elif case == "affine":
        reg = pycpd.AffineRegistration(**common)
        call = f"AffineRegistration(X=target, Y=source, w={W}, max_iterations={MAX_ITER[case]}, tolerance=0)"
    else:  # deformable, deformable_50it
        reg = pycpd.DeformableRegistration(alpha=LAMBDA_DEFORMABLE, beta=beta, **common)
        call = f"DeformableRegistration(X=target, Y=source, alpha={LAMBDA_DEFORMABLE}, beta={beta!r}, w={W}, " \
               f"max_iterations={MAX_ITER[case]}, tolerance=0)"
    sigma2_init = float(reg.sigma2)
    history, q_history = [], []

    def callback(**kw):
        history.append(float(reg.sigma2))
        q_history.append(float(reg.q))

    TY, params = reg.register(callback)
    rec = {"pycpd_call": call, "sigma2_init": sigma2_init, "sigma2": float(reg.sigma2),
           "iterations": int(reg.iteration), "sigma2_history": history}
    if not case.startswith("deformable"):
        rec["q_history"] = q_history  # pycpd's objective (deformable: its q is inf, not kept)
    if case in ("rigid", "similarity", "rigid_fullfit"):
        s, R, t = params
        rec.update(s=float(s), R=np.asarray(R).T.tolist(), t=np.ravel(t).tolist())
    elif case == "affine":
        B, t = params
        rec.update(A=np.asarray(B).T.tolist(), t=np.ravel(t).tolist())
    return np.asarray(TY, dtype=np.float64), rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="folder for the files (tests/data/cpd)")
    ap.add_argument("--cases", default=",".join(CASES + tuple(EXTRA)))
    a = ap.parse_args()
    import pycpd  # noqa: E402 (PYTHONPATH names it)

    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(SEED)
    if os.path.exists(BUNNY):
        surface, shape = read_ascii_ply_xyz(BUNNY), "Stanford bunny, bun000.ply (shared/data/bunny)"
    else:
        surface, shape = synthetic_surface(40000, rng), "synthetic bumpy closed surface (bunny scan absent)"
    source = surface[rng.choice(len(surface), N_SOURCE, replace=False)].astype(np.float32)
    np.save(os.path.join(a.out, "source.npy"), source)
    Y = source.astype(np.float64)
    rms_radius = float(np.sqrt(np.mean(np.sum((Y - Y.mean(axis=0)) ** 2, axis=1))))
    beta = float(f"{rms_radius:.2g}")
    digest = pycpd_sources_sha256(pycpd)
    for case in CASES + tuple(EXTRA):
        # every case draws from its own generator, so that one case can be remade alone
        data = EXTRA.get(case, case)
        crng = np.random.default_rng([SEED, CASES.index(data)])
        move, true_params = truth(data)
        target = make_target(surface, move, crng).astype(np.float32)
        if case not in a.cases.split(","):
            continue
        np.save(os.path.join(a.out, f"{data}_target.npy"), target)
        X = target.astype(np.float64)
        TY, rec = run_pycpd(pycpd, case, X, Y, beta)
        np.save(os.path.join(a.out, f"{case}_pycpd.npy"), TY)
        moved_truth = move(Y)
        rms = lambda d: float(np.sqrt(np.mean(np.sum(d ** 2, axis=1))))  # noqa: E731
        moved_surface = move(surface)
        d0, d1 = nearest_distances(Y, moved_surface), nearest_distances(TY, moved_surface)
        doc = {
            "case": case,
            "transform": data,
            "source": "source.npy",
            "target": f"{data}_target.npy",
            "pycpd_output": f"{case}_pycpd.npy",
            "w": W,
            "max_iter": MAX_ITER[case],
            "tol": 0.0,
            "sigma2_passed": None,
            **({"beta": beta, "lambda": LAMBDA_DEFORMABLE, "beta_from": "source RMS radius "
                f"{rms_radius:.6g} m, 2 significant digits"} if data == "deformable" else {}),
            **rec,
            "rms_to_truth_before": rms(Y - moved_truth),
            "rms_to_truth": rms(TY - moved_truth),
            "surface_distance": {
                "what": "distance of each source point to the nearest point of the whole scan moved by the truth "
                        "(no noise): a deformable match may slide along the surface, which rms_to_truth counts",
                "rms_before": float(np.sqrt(np.mean(d0 ** 2))), "rms_after": float(np.sqrt(np.mean(d1 ** 2))),
                "median_after": float(np.median(d1)), "p95_after": float(np.percentile(d1, 95)),
                "over_5mm_after": int(np.count_nonzero(d1 > 0.005))},
            "truth": true_params,
            "shape": shape,
            "seed": SEED,
            "points": {"source": N_SOURCE, "target": N_TARGET,
                       "target_outliers": int(round(OUTLIER_FRACTION * N_TARGET)), "noise_sigma": NOISE},
            "pycpd_sources_sha256": digest,
            "numpy": np.__version__,
            "remake": "PYTHONPATH=/work/pycpd-src /usr/bin/python3 tests/data/cpd/make_golden.py tests/data/cpd",
        }
        with open(os.path.join(a.out, f"{case}.json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print(f"{case}: {rec['iterations']} iterations, sigma2 {rec['sigma2_init']:.6g} -> {rec['sigma2']:.6g}, "
              f"RMS to truth {doc['rms_to_truth_before']:.4g} -> {doc['rms_to_truth']:.4g} m, to the moved surface "
              f"{doc['surface_distance']['rms_before']:.4g} -> {doc['surface_distance']['rms_after']:.4g} m "
              f"(median {doc['surface_distance']['median_after']:.3g})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
