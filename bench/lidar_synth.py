#!/usr/bin/python3
"""Synthetic airborne LiDAR: a terrain with buildings and trees in UTM-like coordinates,
written in pieces as LAS 1.2 (point format 1) and as binary PLY with double x y z.

  /usr/bin/python3 bench/lidar_synth.py --n 1e6 [--seed 1] [--workdir /tmp/ptreg-scale]

makes, in WORKDIR/n<N>-s<SEED>/ (reused when scene.json says the same N, seed and
generator version and the files have the sizes it gives):

  target.las, target.ply   N points, the first scan of the scene
  source.las, source.ply   N/10 points of a second scan (other samples of the same
                           surfaces) over the centred square of a tenth of the area,
                           moved by a small rigid motion M about that square's centre
  truth.txt                M^-1, the 4x4 (world coordinates) taking source onto target
  scene.json               the parameters, bounds, class counts, file sizes

The scene (seeded, the same for both scans): a square of side sqrt(N / 15) m (15
points per m^2) with its south-west corner at easting 499873.25, northing 4499861.5;
ground z = 200 m + six plane waves (wavelengths 60 m to 3 km, 69 m of amplitude in
all); on a 60 m grid, in 35 % of the cells, a building (footprint 10-35 m a side, any
heading, flat or gabled roof 5-30 m above the highest ground under it, walls hit near
their edges); on a 10 m grid, in 30 % of the cells away from buildings, a tree (an
ellipsoidal crown of radius 1.5-4 m, top 6-22 m above the ground, 75 % of the pulses
in its crown stopped there, the others reaching the ground: a second return). Points
are drawn uniformly in x, y, in bands of 5 million points (the last one shorter)
sorted into scan order (rows 1 m apart, alternating direction), z noise 2 cm (5 cm in
crowns). Classes: 2 ground, 6 building, 5 vegetation; intensity by class; GPS time
at 200 kHz.

LAS: ASPRS LAS 1.2, point data format 1 (28 bytes), scale 0.001, offset the scene's
lower bounds rounded down to whole metres (the square's corner; for z the terrain's
lowest possible value), one VLR (GeoKeyDirectoryTag, EPSG 32633), min/max of the
stored coordinates, legacy counts by return. The PLY holds exactly the LAS's values
(X * scale + offset in double), so both files describe the same cloud.

Memory: one band at a time (about 1.5 GB for 5 million points), whatever N is.
"""

import argparse
import json
import math
import os
import struct

import numpy as np

VERSION = 1                      # bump when any output changes
CHUNK = 5_000_000                # points per band
DENSITY = 15.0                   # points per m^2
EAST0, NORTH0 = 499_873.25, 4_499_861.5
Z0 = 200.0
SCALE = 0.001
WAVES = [(3000.0, 40.0), (1400.0, 15.0), (700.0, 8.0), (300.0, 4.0), (120.0, 1.5), (60.0, 0.5)]
BCELL, BPROB = 60.0, 0.35        # buildings: grid cell, share of cells with one
TCELL, TPROB = 10.0, 0.30        # trees
ROW = 1.0                        # scan rows (m)
PULSE_HZ = 200_000.0
GPS0 = 345_600.0                 # GPS week seconds of the first pulse
CLASS_GROUND, CLASS_VEG, CLASS_BUILDING = 2, 5, 6

LAS_POINT = np.dtype([("X", "<i4"), ("Y", "<i4"), ("Z", "<i4"), ("intensity", "<u2"), ("bits", "u1"),
                      ("cls", "u1"), ("angle", "i1"), ("user", "u1"), ("source", "<u2"), ("gps", "<f8")])
LAS_HEADER = "<4sHH16sBB32s32sHHHIIBHI5I3d3d6d"   # the 227-byte LAS 1.2 public header block
assert LAS_POINT.itemsize == 28 and struct.calcsize(LAS_HEADER) == 227


class Scene:
    """The surfaces both scans sample; depends on the side (so on N) and the seed only."""

    def __init__(self, n, seed):
        self.n, self.seed = n, seed
        self.side = L = math.sqrt(n / DENSITY)
        rng = np.random.default_rng([seed, 1000])
        ang = rng.uniform(0, 2 * math.pi, len(WAVES))
        self.wk = np.array([[math.cos(a) * 2 * math.pi / lam, math.sin(a) * 2 * math.pi / lam]
                            for a, (lam, _) in zip(ang, WAVES)])
        self.wa = np.array([a for _, a in WAVES])
        self.wp = rng.uniform(0, 2 * math.pi, len(WAVES))
        self.zlow = Z0 - self.wa.sum()
        self.zhigh = Z0 + self.wa.sum() + 30.0 + 0.5 * 17.5 + 22.0   # roof + gable, or a tree

        # buildings, one per cell at most, inside its cell with 2 m to spare
        self.nb = nb = max(1, math.ceil(L / BCELL))
        k = nb * nb
        self.b_has = rng.random(k) < BPROB
        self.b_hw = rng.uniform(5.0, 17.5, k)
        self.b_hh = rng.uniform(5.0, 17.5, k)
        heading = rng.uniform(0, math.pi, k)
        self.b_c, self.b_s = np.cos(heading), np.sin(heading)
        reach = np.hypot(self.b_hw, self.b_hh)
        room = np.maximum(BCELL / 2 - 2.0 - reach, 0.0)
        ci, cj = np.arange(k) % nb, np.arange(k) // nb
        self.b_cx = (ci + 0.5) * BCELL + rng.uniform(-1, 1, k) * room
        self.b_cy = (cj + 0.5) * BCELL + rng.uniform(-1, 1, k) * room
        self.b_height = rng.uniform(5.0, 30.0, k)
        self.b_gable = rng.random(k) < 0.5
        self.b_pitch = rng.uniform(0.3, 0.6, k)
        self.b_reach = reach
        base = self.ground(self.b_cx, self.b_cy)
        for su, sv in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            u, v = su * self.b_hw, sv * self.b_hh
            base = np.maximum(base, self.ground(self.b_cx + u * self.b_c - v * self.b_s,
                                                self.b_cy + u * self.b_s + v * self.b_c))
        self.b_base = base
        self.b_has &= (self.b_cx + reach < L) & (self.b_cy + reach < L)   # whole buildings only

        # trees, one per cell at most, crown inside its cell
        self.nt = nt = max(1, math.ceil(L / TCELL))
        k = nt * nt
        self.t_has = rng.random(k) < TPROB
        self.t_r = rng.uniform(1.5, 4.0, k)
        room = TCELL / 2 - 0.2 - self.t_r
        ci, cj = np.arange(k) % nt, np.arange(k) // nt
        self.t_cx = (ci + 0.5) * TCELL + rng.uniform(-1, 1, k) * room
        self.t_cy = (cj + 0.5) * TCELL + rng.uniform(-1, 1, k) * room
        top = rng.uniform(6.0, 22.0, k)
        self.t_rv = np.minimum(1.3 * self.t_r, 0.45 * top)
        self.t_cz = self.ground(self.t_cx, self.t_cy) + top - self.t_rv
        bk = self.bcell(self.t_cx, self.t_cy)
        near = np.hypot(self.t_cx - self.b_cx[bk], self.t_cy - self.b_cy[bk]) < self.b_reach[bk] + self.t_r + 1.0
        self.t_has &= ~(self.b_has[bk] & near)

    def ground(self, x, y):
        z = np.full(np.shape(x), Z0)
        for (kx, ky), a, p in zip(self.wk, self.wa, self.wp):
            z += a * np.sin(kx * x + ky * y + p)
        return z

    def bcell(self, x, y):
        i = np.clip((x / BCELL).astype(np.int64), 0, self.nb - 1)
        j = np.clip((y / BCELL).astype(np.int64), 0, self.nb - 1)
        return j * self.nb + i

    def tcell(self, x, y):
        i = np.clip((x / TCELL).astype(np.int64), 0, self.nt - 1)
        j = np.clip((y / TCELL).astype(np.int64), 0, self.nt - 1)
        return j * self.nt + i

    def sample(self, rng, m, x0, x1, y0, y1):
        """m returns in the rectangle [x0, x1) x [y0, y1) (local metres), in scan order:
        x, y, z (local), class, return number, number of returns, intensity, scan direction."""
        x = rng.uniform(x0, x1, m)
        y = rng.uniform(y0, y1, m)
        row = np.floor((y - y0) / ROW)
        odd = row % 2 == 1
        order = np.argsort(row * 2 * (x1 - x0) + np.where(odd, x1 - x, x - x0), kind="stable")
        x, y, odd = x[order], y[order], odd[order]
        del row, order
        z = self.ground(x, y)
        cls = np.full(m, CLASS_GROUND, np.uint8)
        rnum = np.ones(m, np.uint8)
        nret = np.ones(m, np.uint8)

        bk = self.bcell(x, y)
        dx, dy = x - self.b_cx[bk], y - self.b_cy[bk]
        u = np.abs(dx * self.b_c[bk] + dy * self.b_s[bk])
        v = np.abs(-dx * self.b_s[bk] + dy * self.b_c[bk])
        hw, hh = self.b_hw[bk], self.b_hh[bk]
        inb = self.b_has[bk] & (u < hw) & (v < hh)
        roof = self.b_base[bk] + self.b_height[bk] + np.where(self.b_gable[bk], self.b_pitch[bk] * (hh - v), 0.0)
        wall = inb & (np.minimum(hw - u, hh - v) < 0.25) & (rng.random(m) < 0.6)
        zb = np.where(wall, z + rng.random(m) * (roof - z), roof)
        z = np.where(inb, zb, z)
        cls[inb] = CLASS_BUILDING
        del dx, dy, u, v, hw, hh, roof, zb, bk

        tk = self.tcell(x, y)
        r, rv = self.t_r[tk], self.t_rv[tk]
        q = 1.0 - ((x - self.t_cx[tk]) ** 2 + (y - self.t_cy[tk]) ** 2) / (r * r)
        under = self.t_has[tk] & (q > 0) & ~inb
        hit = under & (rng.random(m) < 0.75)
        h = rv * np.sqrt(np.maximum(q, 0.0))
        zc = self.t_cz[tk]
        zv = np.maximum(zc + h - rng.exponential(0.7, m), zc - h)
        z = np.where(hit, zv, z)
        cls[hit] = CLASS_VEG
        nret[under] = 2
        rnum[under & ~hit] = 2
        del tk, r, rv, q, h, zc, zv

        z += rng.normal(0.0, 1.0, m) * np.where(hit, 0.05, 0.02)
        inten = np.where(cls == CLASS_GROUND, rng.normal(600, 80, m),
                         np.where(cls == CLASS_BUILDING, np.where(wall, 900.0, 1200.0) + rng.normal(0, 150, m),
                                  rng.normal(250, 60, m)))
        inten = np.clip(inten, 0, 65535).astype(np.uint16)
        return x, y, z, cls, rnum, nret, inten, odd


def rotation(axis, deg):
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    t = math.radians(deg)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.identity(3) + math.sin(t) * K + (1 - math.cos(t)) * K @ K


def source_motion(scene):
    """The source's rigid motion M (world coordinates), about the crop's centre: a
    rotation mostly about z that moves the crop's corners by 2 m (at most 3 degrees),
    then a translation of (1.2, -0.9, 0.35) m."""
    half = scene.side / math.sqrt(10) / 2
    deg = min(3.0, math.degrees(2.0 / (half * math.sqrt(2))))
    R = rotation((0.15, -0.10, 1.0), deg)
    c = np.array([EAST0 + scene.side / 2, NORTH0 + scene.side / 2, Z0])
    M = np.identity(4)
    M[:3, :3] = R
    M[:3, 3] = c - R @ c + np.array([1.2, -0.9, 0.35])
    return M, deg


def bands(count, lo, hi):
    """(points, y0, y1) per band of CHUNK points over [lo, hi), the points spread by area."""
    k = max(1, math.ceil(count / CHUNK))
    edges = np.linspace(lo, hi, k + 1)
    base = [CHUNK] * (k - 1) + [count - CHUNK * (k - 1)]
    return [(m, edges[i], edges[i + 1]) for i, m in enumerate(base)]


def las_header(n, offset, lo, hi, by_return, vlr_bytes):
    return struct.pack(
        LAS_HEADER, b"LASF", 0, 0, b"\0" * 16, 1, 2,
        b"ptreg synthetic airborne scan".ljust(32, b"\0"), b"ptreg bench/lidar_synth.py".ljust(32, b"\0"),
        1, 2024, 227, 227 + vlr_bytes, 1 if vlr_bytes else 0, 1, LAS_POINT.itemsize, n, *by_return,
        SCALE, SCALE, SCALE, *offset, hi[0], lo[0], hi[1], lo[1], hi[2], lo[2])


def geokey_vlr():
    """A GeoKeyDirectoryTag record (LASF_Projection 34735): ProjectedCSTypeGeoKey = 32633."""
    keys = struct.pack("<8H", 1, 1, 0, 1, 3072, 0, 1, 32633)
    head = struct.pack("<H16sHH32s", 0, b"LASF_Projection".ljust(16, b"\0"), 34735, len(keys),
                       b"GeoTIFF GeoKeyDirectoryTag".ljust(32, b"\0"))
    return head + keys


def write_scan(scene, role, n_points, box, motion, offset, las_path, ply_path, gps0):
    """Draws the scan band by band and appends each band to both files; returns the
    stored bounds, class counts and return counts."""
    vlr = geokey_vlr()
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    by_return = np.zeros(5, np.int64)
    classes = {}
    ply_head = ("ply\nformat binary_little_endian 1.0\ncomment ptreg bench/lidar_synth.py " + role + "\n"
                f"element vertex {n_points}\nproperty double x\nproperty double y\nproperty double z\n"
                "end_header\n").encode()
    off = np.asarray(offset, float)
    done = 0
    with open(las_path + ".tmp", "wb") as fl, open(ply_path + ".tmp", "wb") as fp:
        fl.write(las_header(n_points, offset, np.zeros(3), np.zeros(3), [0] * 5, len(vlr)))
        fl.write(vlr)
        fp.write(ply_head)
        x0, x1, y0, y1 = box
        for b, (m, ya, yb) in enumerate(bands(n_points, y0, y1)):
            rng = np.random.default_rng([scene.seed, 1 if role == "target" else 2, b])
            x, y, z, cls, rnum, nret, inten, odd = scene.sample(rng, m, x0, x1, ya, yb)
            angle = np.clip(np.round((x - (x0 + x1) / 2) / (x1 - x0) * 40), -20, 20).astype(np.int8)
            w = np.empty((m, 3))
            w[:, 0], w[:, 1], w[:, 2] = x + EAST0, y + NORTH0, z
            del x, y, z
            if motion is not None:
                w = w @ motion[:3, :3].T + motion[:3, 3]
            q = np.round((w - off) / SCALE)
            if q.min() < -2**31 or q.max() > 2**31 - 1:
                raise SystemExit("a coordinate does not fit LAS's int32 at scale 0.001")
            q = q.astype(np.int32)
            rec = np.zeros(m, LAS_POINT)
            rec["X"], rec["Y"], rec["Z"] = q[:, 0], q[:, 1], q[:, 2]
            rec["intensity"] = inten
            rec["bits"] = rnum | (nret << 3) | (odd.astype(np.uint8) << 6)
            rec["cls"] = cls
            rec["angle"] = angle
            rec["source"] = 1 if role == "target" else 2
            rec["gps"] = gps0 + (done + np.arange(m)) / PULSE_HZ
            fl.write(rec.tobytes())
            exact = q * SCALE + off           # the value a LAS reader computes, in double
            fp.write(exact.astype("<f8").tobytes())
            lo = np.minimum(lo, exact.min(0))
            hi = np.maximum(hi, exact.max(0))
            by_return += np.bincount(rnum, minlength=6)[1:6]
            for c, k in zip(*np.unique(cls, return_counts=True)):
                classes[int(c)] = classes.get(int(c), 0) + int(k)
            done += m
            del w, q, rec, exact
        fl.seek(0)
        fl.write(las_header(n_points, offset, lo, hi, [int(v) for v in by_return], len(vlr)))
    os.replace(las_path + ".tmp", las_path)
    os.replace(ply_path + ".tmp", ply_path)
    return {"points": n_points, "min": lo.tolist(), "max": hi.tolist(), "offset": list(offset),
            "classes": classes, "by_return": by_return.tolist(),
            "las_bytes": os.path.getsize(las_path), "ply_bytes": os.path.getsize(ply_path)}


def write_ply_f32(path, xyz):
    """Binary little-endian PLY, float x y z."""
    xyz = np.ascontiguousarray(xyz, dtype="<f4")
    with open(path, "wb") as f:
        f.write(("ply\nformat binary_little_endian 1.0\n"
                 f"element vertex {len(xyz)}\nproperty float x\nproperty float y\nproperty float z\n"
                 "end_header\n").encode())
        f.write(xyz.tobytes())


def write_tiny_ply(path, n=100):
    """n points on a small grid at the scene's corner (double PLY): a process's floor."""
    g = np.arange(n, dtype=float)
    pts = np.stack([EAST0 + g % 10, NORTH0 + g // 10, np.full(n, Z0)], axis=1)
    with open(path, "wb") as f:
        f.write(("ply\nformat binary_little_endian 1.0\n"
                 f"element vertex {n}\nproperty double x\nproperty double y\nproperty double z\nend_header\n").encode())
        f.write(pts.astype("<f8").tobytes())


def make_scene(n, seed=1, workdir="/tmp/ptreg-scale", log=None):
    """Makes (or finds) the scene's files; returns scene.json's contents plus paths."""
    n = int(n)
    d = os.path.join(workdir, f"n{n}-s{seed}")
    meta_path = os.path.join(d, "scene.json")
    want = {"version": VERSION, "n": n, "seed": seed, "chunk": CHUNK}
    paths = {"target_las": os.path.join(d, "target.las"), "target_ply": os.path.join(d, "target.ply"),
             "source_las": os.path.join(d, "source.las"), "source_ply": os.path.join(d, "source.ply"),
             "truth": os.path.join(d, "truth.txt"), "dir": d}
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if all(meta.get(k) == v for k, v in want.items()) and all(
                os.path.exists(paths[f"{r}_{e}"]) and os.path.getsize(paths[f"{r}_{e}"]) == meta[r][f"{e}_bytes"]
                for r in ("target", "source") for e in ("las", "ply")):
            meta["paths"] = paths
            return meta
    os.makedirs(d, exist_ok=True)
    if os.path.exists(meta_path):
        os.remove(meta_path)
    scene = Scene(n, seed)
    L = scene.side
    if log:
        log(f"making {n} points (side {L:.1f} m) in {d}")
    meta = dict(want, side_m=L, density_per_m2=DENSITY, corner=[EAST0, NORTH0],
                buildings=int(scene.b_has.sum()), trees=int(scene.t_has.sum()))
    offset = [math.floor(EAST0), math.floor(NORTH0), math.floor(scene.zlow - 1.0)]
    meta["target"] = write_scan(scene, "target", n, (0.0, L, 0.0, L), None, offset,
                                paths["target_las"], paths["target_ply"], GPS0)
    half = L / math.sqrt(10) / 2
    crop = (L / 2 - half, L / 2 + half, L / 2 - half, L / 2 + half)
    M, deg = source_motion(scene)
    corners = np.array([[EAST0 + a, NORTH0 + b, c] for a in crop[:2] for b in crop[2:]
                        for c in (scene.zlow - 1.0, scene.zhigh + 1.0)])
    moved = corners @ M[:3, :3].T + M[:3, 3]
    soff = [math.floor(v) for v in moved.min(0)]
    meta["source"] = write_scan(scene, "source", n // 10, crop, M, soff, paths["source_las"],
                                paths["source_ply"], GPS0 + 3600.0)
    meta["source"]["crop_local"] = list(crop)
    truth = np.linalg.inv(M)
    with open(paths["truth"], "w") as f:
        f.write("".join(" ".join("%.17g" % v for v in row) + "\n" for row in truth))
    meta["motion"] = {"rotation_deg": deg, "translation_m": [1.2, -0.9, 0.35], "M": M.tolist(),
                      "truth": truth.tolist()}
    with open(meta_path + ".tmp", "w") as f:
        json.dump(meta, f, indent=1)
    os.replace(meta_path + ".tmp", meta_path)
    meta["paths"] = paths
    return meta


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", default="1e6", help="target points (source: a tenth); 1e6 style accepted")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", default="/tmp/ptreg-scale")
    a = ap.parse_args()
    meta = make_scene(int(float(a.n)), a.seed, a.workdir, log=print)
    print(json.dumps({k: meta[k] for k in ("n", "side_m", "buildings", "trees", "target", "source", "motion")},
                     indent=1))


if __name__ == "__main__":
    main()
