#!/usr/bin/python3
"""Benchmark and reference peer: Open3D 0.16 FPFH descriptors. Run with Debian's
/usr/bin/python3 (python3-open3d).

  open3d_fpfh.py CLOUD.pcd [--k N | --radius R] [--every S] [--repeat N]
                 [--threads T] [-o OUT.csv] [--json]

The cloud is read with o3d.io.read_point_cloud; its normals are the file's
normal_x/normal_y/normal_z fields (nothing is re-estimated). The loaded normals are
checked against the PCD's own fields, parsed here (ASCII or binary PCD): if Open3D
did not load them, or loaded something else, the parsed ones are used instead and
"normals_source" says so.

The descriptor is o3d.pipelines.registration.compute_fpfh_feature(cloud, param) with
KDTreeSearchParamKNN(k), KDTreeSearchParamRadius(R) or (--radius R --max-nn N)
KDTreeSearchParamHybrid(R, N) on the whole cloud; Open3D has
no query subset, so it always computes all points, and --every S only selects which
rows (points 0, S, 2S, ...) are written. The timing (median of --repeat calls)
therefore always covers the whole cloud, k-d tree build included (Open3D builds it
inside the call).

Open3D runs the SPFH and FPFH loops under OpenMP; OMP_NUM_THREADS is set from
--threads (default 2) before Open3D or anything else that loads libgomp is imported.
The JSON reports that value and the measured CPU time / wall time of the calls.

-o OUT.csv writes one line per selected point: "index,v0,...,v32" (%.9g of the
float64 values Open3D returns, which is more digits than PCL's float32 output).
"""

import os
import sys


def _early_threads(argv):
    """--threads must act before libgomp reads its environment at load time."""
    threads = 2
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            threads = argv[i + 1]
        elif a.startswith("--threads="):
            threads = a.split("=", 1)[1]
    try:
        threads = int(threads)
    except ValueError:
        sys.stderr.write("open3d_fpfh: bad --threads %r\n" % (threads,))
        sys.exit(2)
    if threads < 1:
        sys.stderr.write("open3d_fpfh: --threads must be >= 1\n")
        sys.exit(2)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    return threads


THREADS = _early_threads(sys.argv[1:])

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

try:
    import open3d as o3d  # noqa: E402
except ImportError as e:  # pragma: no cover - reported by the driver
    sys.stderr.write("open3d_fpfh: cannot import open3d (%s); run with /usr/bin/python3\n" % e)
    sys.exit(4)


def parse_pcd(path):
    """The PCD's x y z normal_x normal_y normal_z as float64 arrays (n x 3 each), or
    None where the file has no normals. Handles DATA ascii and binary (not
    binary_compressed)."""
    with open(path, "rb") as f:
        header = {}
        while True:
            line = f.readline()
            if not line:
                raise ValueError("no DATA line")
            text = line.decode("ascii", "replace").strip()
            if not text or text.startswith("#"):
                continue
            key, _, rest = text.partition(" ")
            header[key.upper()] = rest.split()
            if key.upper() == "DATA":
                break
        body = f.read()
    fields = header["FIELDS"]
    sizes = [int(s) for s in header["SIZE"]]
    types = header["TYPE"]
    counts = [int(c) for c in header.get("COUNT", ["1"] * len(fields))]
    npts = int(header["POINTS"][0])
    kind = header["DATA"][0].lower()
    codes = {("F", 4): "<f4", ("F", 8): "<f8", ("U", 1): "<u1", ("U", 2): "<u2",
             ("U", 4): "<u4", ("I", 1): "<i1", ("I", 2): "<i2", ("I", 4): "<i4",
             ("U", 8): "<u8", ("I", 8): "<i8"}
    dtype = np.dtype([(name, codes[(t, s)], (c,)) if c > 1 else (name, codes[(t, s)])
                      for name, t, s, c in zip(fields, types, sizes, counts)])
    if kind == "binary":
        data = np.frombuffer(body, dtype=dtype, count=npts)
        col = {name: np.asarray(data[name], dtype=np.float64) for name in fields}
    elif kind == "ascii":
        rows = np.loadtxt(body.decode("ascii").splitlines(), dtype=np.float64, ndmin=2)
        col = {}
        at = 0
        for name, c in zip(fields, counts):
            col[name] = rows[:, at] if c == 1 else rows[:, at:at + c]
            at += c
    else:
        raise ValueError("DATA %s not handled" % kind)
    xyz = np.stack([col["x"], col["y"], col["z"]], axis=1)
    if all(k in col for k in ("normal_x", "normal_y", "normal_z")):
        nrm = np.stack([col["normal_x"], col["normal_y"], col["normal_z"]], axis=1)
    else:
        nrm = None
    return xyz, nrm


def load(path):
    pcd = o3d.io.read_point_cloud(path)
    if pcd.is_empty():
        sys.stderr.write("open3d_fpfh: %s: cannot read a point cloud\n" % path)
        sys.exit(3)
    source = "open3d"
    if path.lower().endswith(".pcd"):
        try:
            xyz, nrm = parse_pcd(path)
        except (OSError, ValueError, KeyError) as e:
            sys.stderr.write("open3d_fpfh: %s: own PCD parse failed (%s); trusting Open3D\n"
                             % (path, e))
            xyz = nrm = None
        if nrm is not None:
            pts = np.asarray(pcd.points)
            same_pts = pts.shape == xyz.shape and np.array_equal(pts, xyz)
            ok = (pcd.has_normals() and same_pts
                  and np.array_equal(np.asarray(pcd.normals), nrm))
            if not ok:
                sys.stderr.write("open3d_fpfh: %s: Open3D's normals differ from the file's "
                                 "normal_x/y/z; using the parsed ones\n" % path)
                pcd = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(xyz))
                pcd.normals = o3d.utility.Vector3dVector(nrm)
                source = "parsed"
    if not pcd.has_normals():
        sys.stderr.write("open3d_fpfh: %s: no normals in the file\n" % path)
        sys.exit(3)
    return pcd, source


def neighbor_counts(pcd, param, rows):
    """Neighborhood sizes (query included) Open3D's own k-d tree gives the rows."""
    tree = o3d.geometry.KDTreeFlann(pcd)
    pts = np.asarray(pcd.points)
    counts = []
    for i in rows:
        if isinstance(param, o3d.geometry.KDTreeSearchParamHybrid):
            c, _, _ = tree.search_hybrid_vector_3d(pts[i], param.radius, param.max_nn)
        elif isinstance(param, o3d.geometry.KDTreeSearchParamRadius):
            c, _, _ = tree.search_radius_vector_3d(pts[i], param.radius)
        else:
            c, _, _ = tree.search_knn_vector_3d(pts[i], param.knn)
        counts.append(c)
    return np.asarray(counts, dtype=np.float64)


def fmt(v):
    return "nan" if math.isnan(v) else "%.9g" % v


def main():
    ap = argparse.ArgumentParser(description="Open3D FPFH benchmark/reference peer")
    ap.add_argument("cloud")
    grp = ap.add_mutually_exclusive_group()
    grp.add_argument("--k", type=int, help="k nearest neighbors, query included (default 30)")
    grp.add_argument("--radius", type=float, help="all neighbors within R")
    ap.add_argument("--max-nn", type=int, help="with --radius: KDTreeSearchParamHybrid(R, max_nn), the N nearest "
                    "within R")
    ap.add_argument("--every", type=int, default=1, help="rows written: points 0, S, 2S, ...")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2,
                    help="OpenMP threads (default 2), set before open3d is imported")
    ap.add_argument("-o", dest="out", help="CSV: index,v0,...,v32 per selected point")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.radius is None and args.k is None:
        args.k = 30
    if args.k is not None and args.k < 2:
        ap.error("--k must be >= 2")
    if args.radius is not None and not args.radius > 0:
        ap.error("--radius must be positive")
    if args.max_nn is not None and (args.radius is None or args.max_nn < 1):
        ap.error("--max-nn needs --radius and must be >= 1")
    if args.every < 1 or args.repeat < 1:
        ap.error("--every and --repeat must be >= 1")

    o3d.utility.set_verbosity_level(o3d.utility.VerbosityLevel.Error)
    pcd, normals_source = load(args.cloud)
    n = len(pcd.points)
    if args.max_nn is not None:
        param = o3d.geometry.KDTreeSearchParamHybrid(args.radius, args.max_nn)
    elif args.radius is not None:
        param = o3d.geometry.KDTreeSearchParamRadius(args.radius)
    else:
        param = o3d.geometry.KDTreeSearchParamKNN(args.k)

    times, cpu = [], []
    feat = None
    for _ in range(args.repeat):
        c0 = time.process_time()
        t0 = time.perf_counter()
        feat = o3d.pipelines.registration.compute_fpfh_feature(pcd, param)
        t1 = time.perf_counter()
        c1 = time.process_time()
        times.append((t1 - t0) * 1e3)
        cpu.append((c1 - c0) / max(t1 - t0, 1e-12))

    data = np.asarray(feat.data)  # 33 x n
    if data.shape != (33, n):
        sys.stderr.write("open3d_fpfh: feature shape %s, want (33, %d)\n" % (data.shape, n))
        return 4
    rows = np.arange(0, n, args.every)
    desc = data.T[rows]
    counts = neighbor_counts(pcd, param, rows)
    nan_rows = int(np.isnan(desc).any(axis=1).sum())
    zero_rows = int((~np.isnan(desc).any(axis=1) & (desc == 0).all(axis=1)).sum())

    if args.out:
        with open(args.out, "w") as f:
            for i, d in zip(rows, desc):
                f.write("%d,%s\n" % (i, ",".join(fmt(v) for v in d)))

    med = float(np.median(times))
    out = {
        "peer": "open3d",
        "version": o3d.__version__,
        "feature": "fpfh",
    }
    if args.radius is not None:
        out["radius"] = args.radius
    else:
        out["k"] = args.k
    out.update({
        "every": args.every,
        "cloud_points": n,
        "points": int(len(rows)),
        "computed_points": n,
        "bins": 33,
        "threads": THREADS,
        "cpu_per_wall": float(np.median(cpu)),
        "normals_source": normals_source,
        "neighbors_mean": float(counts.mean()),
        "neighbors_min": int(counts.min()),
        "neighbors_max": int(counts.max()),
        "nan_rows": nan_rows,
        "zero_rows": zero_rows,
        "time_ms": med,
        "times_ms": times,
    })
    if args.json:
        print(json.dumps(out))
        return 0
    print("open3d %s fpfh: %d points, %d rows written, %s, threads %d (cpu/wall %.2f), "
          "normals from %s"
          % (out["version"], n, len(rows),
             "radius %g" % args.radius if args.radius is not None else "k %d" % args.k,
             THREADS, out["cpu_per_wall"], normals_source))
    print("neighbors (query included): mean %.3f min %d max %d; nan rows %d, zero rows %d"
          % (out["neighbors_mean"], out["neighbors_min"], out["neighbors_max"],
             nan_rows, zero_rows))
    print("compute_fpfh_feature (all %d points): median %.3f ms over %d: %s"
          % (n, med, args.repeat, " ".join("%.3f" % t for t in times)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
