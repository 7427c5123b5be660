#!/usr/bin/python3
"""Rigid ICP benchmark: ptreg against Open3D and PCL, in one run, on the same data
and settings, and the ratio of their times.

Run with Debian's /usr/bin/python3 (it sees python3-open3d):

  cmake -S . -B build && cmake --build build -j2                      # ptreg
  cmake -S bench/peers -B build-peers -DCMAKE_BUILD_TYPE=Release      # PCL peer
  cmake --build build-peers -j2
  /usr/bin/python3 bench/icp_bench.py [--repeat 5] [--markdown] [--json FILE]

Every tool runs the same point-to-point ICP: 30 iterations, no early stop, nearest
neighbors exact, no pair rejected except beyond the common max_dist (by default the
target's bounding-box diagonal: fitness 1 from the near-aligned starts used here, and
neither peer's search cost depends on it; see bench/peers/open3d_icp.py). ptreg and
Open3D run on 2 threads; PCL's ICP is single-threaded and says so. Each time is from
both clouds in memory to the result, the search structure's build included; the
median of R repetitions is reported. RMSE and fitness are recomputed here for every
tool from its final transform, the same way: each source point moved by the
transform, its exact nearest target point, pairs within max_dist counted;
rmse = sqrt(mean squared distance), fitness = counted / source points.

Cases:
  synth     ptreg's own blob: a 40k-point model and a 30k-point scan of it, known pose
            (a smooth, lumpy shape: ICP converges slowly, pairs change every iteration)
  aircraft  the same sizes on ptreg's aircraft shape (the refuelling study's kind of
            model: ICP converges within the 30 iterations)
  bunny     Stanford bun045 onto bun000 (~40k each), from the true pose perturbed by
            3 degrees and 5 mm; truth from bun.conf

With --index-methods M1,M2,... ptreg also builds each case's model index once
(`ptreg index`, its build time reported apart) and registers on it with each
nearest-neighbor method (`ptreg icp --target-index --nn M`): rows "ptreg M
(index)", their time without the index build, plus the Delaunay walks' statistics
(mean steps per pass, longest walk, k-d tree fallbacks, histogram).
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from icp_measure import common_error, nn_backend

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.normpath(os.path.join(ROOT, "..", "shared", "data"))

ITERATIONS = 30
THREADS = 2
TOOLS = ("ptreg", "open3d", "pcl")
RUN_TIMEOUT_S = 900


# ---------------------------------------------------------------------------
# Data


def ptreg_synth_command(ptreg, shape, model, sensed, truth):
    """The one place that says how ptreg makes the synthetic pairs (see
    `ptreg synth --help`). The truth file takes sensed onto model."""
    return [ptreg, "synth", "--shape", shape,
            "--model", model, "--model-points", "40000",
            "-o", sensed, "--points", "30000",
            "--truth-out", truth, "--seed", "1", "--max-angle", "10", "--noise", "0.002"]


def read_matrix(path):
    vals = np.loadtxt(path, dtype=np.float64).ravel()
    if vals.size != 16:
        raise ValueError("%s: want 16 numbers (4x4 row-major), got %d" % (path, vals.size))
    return vals.reshape(4, 4)


def write_matrix(path, T):
    with open(path, "w") as f:
        for row in T:
            f.write(" ".join("%.17g" % v for v in row) + "\n")


def quat_to_rot(qx, qy, qz, qw):
    n = np.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    x, y, z, w = qx / n, qy / n, qz / n, qw / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def bun_conf_poses(path):
    """bun.conf: `bmesh FILE tx ty tz qx qy qz qw`, applied as
    x_world = R(q)^T x_scan + t (the transpose; see shared/data/README.md)."""
    poses = {}
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) == 9 and w[0] == "bmesh":
                t = np.array([float(v) for v in w[2:5]])
                q = [float(v) for v in w[5:9]]
                T = np.eye(4)
                T[:3, :3] = quat_to_rot(*q).T
                T[:3, 3] = t
                poses[w[1]] = T
    return poses


def axis_angle(axis, deg):
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.linalg.norm(a)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    th = np.radians(deg)
    return np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K


def load_points(path):
    import open3d as o3d
    pcd = o3d.io.read_point_cloud(path)
    pcd.remove_non_finite_points()
    pts = np.asarray(pcd.points, dtype=np.float64)
    if len(pts) == 0:
        raise ValueError("%s: no points read" % path)
    return pts


def prepare_synth(args, work, shape):
    ptreg = args.ptreg
    if not is_executable(ptreg):
        return None, "ptreg not found at %s (it makes the synthetic data)" % ptreg
    d = os.path.join(work, "synth" if shape == "blob" else shape)
    os.makedirs(d, exist_ok=True)
    model = os.path.join(d, "model.ply")
    sensed = os.path.join(d, "sensed.ply")
    truth = os.path.join(d, "truth.txt")
    cmd = ptreg_synth_command(ptreg, shape, model, sensed, truth)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if p.returncode != 0:
        return None, "`%s` failed (%d): %s" % (" ".join(cmd), p.returncode,
                                               p.stderr.strip()[-500:])
    key = "synth" if shape == "blob" else shape
    return {"name": "%s 40k/30k" % key, "key": key, "source": sensed, "target": model,
            "truth": read_matrix(truth), "init": np.eye(4),
            "made_by": " ".join(cmd)}, None


def prepare_bunny(args, work):
    d = os.path.join(DATA, "bunny")
    src, tgt, conf = (os.path.join(d, f) for f in ("bun045.ply", "bun000.ply", "bun.conf"))
    for f in (src, tgt, conf):
        if not os.path.exists(f):
            return None, "%s is missing (the shared data folder is not here)" % f
    poses = bun_conf_poses(conf)
    truth = np.linalg.inv(poses["bun000.ply"]) @ poses["bun045.ply"]
    # A small fixed error on top of the truth: 3 degrees about (1,2,3), 5 mm along x.
    P = np.eye(4)
    P[:3, :3] = axis_angle([1.0, 2.0, 3.0], 3.0)
    P[:3, 3] = [0.005, 0.0, 0.0]
    return {"name": "bunny 045->000", "key": "bunny", "source": src, "target": tgt,
            "truth": truth, "init": P @ truth,
            "made_by": "bun.conf truth, perturbed 3 deg about (1,2,3) and 5 mm along x"}, None


CASES = {"synth": lambda args, work: prepare_synth(args, work, "blob"),
         "aircraft": lambda args, work: prepare_synth(args, work, "aircraft"),
         "bunny": prepare_bunny}


# ---------------------------------------------------------------------------
# Measures


def pose_error(T, truth):
    dR = T[:3, :3] @ truth[:3, :3].T
    c = np.clip((np.trace(dR) - 1.0) / 2.0, -1.0, 1.0)
    return float(np.degrees(np.arccos(c))), float(np.linalg.norm(T[:3, 3] - truth[:3, 3]))


# ---------------------------------------------------------------------------
# Tools


def is_executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def run_json(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env)
    if p.returncode != 0:
        raise RuntimeError("`%s` exited %d: %s" % (" ".join(cmd), p.returncode,
                                                   p.stderr.strip()[-800:]))
    if not p.stdout.strip():
        raise RuntimeError("`%s` printed nothing on stdout" % " ".join(cmd))
    return json.loads(p.stdout)


def tool_available(tool, args):
    """None when the tool can run, else why not."""
    if tool == "ptreg":
        return None if is_executable(args.ptreg) else \
            "not built (%s missing; cmake -S . -B build && cmake --build build)" % args.ptreg
    if tool == "pcl":
        return None if is_executable(args.pcl) else \
            ("not built (%s missing; cmake -S bench/peers -B build-peers "
             "-DCMAKE_BUILD_TYPE=Release && cmake --build build-peers)" % args.pcl)
    if tool == "open3d":
        p = subprocess.run([args.open3d_python, "-c", "import open3d"],
                           capture_output=True, text=True)
        return None if p.returncode == 0 else \
            "open3d not importable by %s: %s" % (args.open3d_python,
                                                 p.stderr.strip().splitlines()[-1:])
    return "unknown tool"


def run_ptreg(case, init_path, max_dist, args):
    """ptreg repeats in one process, as the peers do (--repeat); its
    time_ms is the median of the runs, which must all give the same bits."""
    cmd = [args.ptreg, "icp", case["source"], case["target"],
           "--max-iter", str(ITERATIONS), "--tol", "0", "--max-dist", repr(max_dist),
           "--init", init_path, "--threads", str(THREADS), "--repeat", str(args.repeat), "--json"]
    out = run_json(cmd)
    out.update({"peer": "ptreg", "threads": out.get("threads", THREADS),
                "times_ms": out.get("times_ms", [out["time_ms"]]), "command": cmd})
    return out


def run_open3d(case, init_path, max_dist, args):
    cmd = [args.open3d_python, os.path.join(HERE, "peers", "open3d_icp.py"),
           case["source"], case["target"], "--max-iter", str(ITERATIONS),
           "--max-dist", repr(max_dist), "--init", init_path,
           "--repeat", str(args.repeat), "--threads", str(THREADS), "--json"]
    out = run_json(cmd)
    out["command"] = cmd
    return out


def run_pcl(case, init_path, max_dist, args):
    cmd = [args.pcl, case["source"], case["target"], "--max-iter", str(ITERATIONS),
           "--max-dist", repr(max_dist), "--init", init_path,
           "--repeat", str(args.repeat), "--json"]
    out = run_json(cmd)
    out["command"] = cmd
    return out


RUNNERS = {"ptreg": run_ptreg, "open3d": run_open3d, "pcl": run_pcl}

INDEX_METHODS = ("kdtree", "delaunay-zero", "delaunay-kdann", "delaunay-pnn", "delaunay-pnnopt")


def build_index(case, key, work, args):
    """The model's index, built once per case by `ptreg index`."""
    path = os.path.join(work, "%s.pti" % key)
    cmd = [args.ptreg, "index", case["target"], "-o", path, "--threads", str(THREADS), "--json"]
    out = run_json(cmd)
    out["command"] = cmd
    return path, out


def run_ptreg_indexed(case, index_path, method, init_path, max_dist, args):
    cmd = [args.ptreg, "icp", case["source"], "--target-index", index_path, "--nn", method,
           "--max-iter", str(ITERATIONS), "--tol", "0", "--max-dist", repr(max_dist),
           "--init", init_path, "--threads", str(THREADS), "--repeat", str(args.repeat), "--json"]
    out = run_json(cmd)
    if out.get("nn") != method:
        raise RuntimeError("asked for %s, ran %s: %s" % (method, out.get("nn"), out.get("nn_note")))
    out.update({"peer": "ptreg", "times_ms": out.get("times_ms", [out["time_ms"]]), "command": cmd})
    return out


def walk_summary(raw):
    """Per-pass mean steps and the histogram summed over the passes."""
    walks = raw.get("walk") or []
    if not walks:
        return None
    hist = np.sum([w["histogram"] for w in walks], axis=0).astype(int).tolist()
    queries = sum(w["queries"] for w in walks)
    return {"mean_steps_per_pass": [w["mean_steps"] for w in walks],
            "mean_steps": sum(w["mean_steps"] * w["queries"] for w in walks) / queries,
            "max_steps": max(w["max_steps"] for w in walks),
            "fallbacks": sum(w["fallbacks"] for w in walks), "queries": queries,
            "kept": sum(w.get("kept", 0) for w in walks),
            "kept_per_pass": [w.get("kept", 0) / w["queries"] for w in walks],
            "histogram": hist}


def print_walks(res, markdown):
    rows = [(m, w) for m, w in res.get("walks", {}).items() if w]
    if not rows:
        return
    mk = "- " if markdown else "  "
    print("")
    print("%sindex: built in %.1f ms (k-d tree %.1f, Delaunay graph %.1f), %d duplicates merged, "
          "not in the times above" % (mk, res["index"]["build_ms"], res["index"]["kdtree_ms"],
                                      res["index"]["delaunay_ms"], res["index"]["duplicates_merged"]))
    for m, w in rows:
        per = w["mean_steps_per_pass"]
        print("%s%s walks: mean %.2f steps (first pass %.2f, second %.2f, last %.2f), longest %d, "
              "%.3f%% finished by the k-d tree, %.1f%% kept without a walk (%.1f%% in the last pass)"
              % (mk, m, w["mean_steps"], per[0], per[1] if len(per) > 1 else float("nan"), per[-1],
                 w["max_steps"], 100.0 * w["fallbacks"] / w["queries"], 100.0 * w["kept"] / w["queries"],
                 100.0 * w["kept_per_pass"][-1]))
        hist = w["histogram"]
        shown = " ".join("%d:%d" % (i, c) for i, c in enumerate(hist[:-1]) if c)
        print("%s  histogram over all passes (steps:walks): %s%s" % (
            mk, shown, (" 32+:%d" % hist[-1]) if hist[-1] else ""))


def ptreg_version(ptreg):
    for flag in ("--version", "version"):
        try:
            p = subprocess.run([ptreg, flag], capture_output=True, text=True, timeout=30)
        except OSError:
            return None
        if p.returncode == 0 and p.stdout.strip():
            v = p.stdout.strip().splitlines()[0].strip()
            return v[len("ptreg"):].strip() if v.lower().startswith("ptreg ") else v
    return None


def machine_info():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "kernel": platform.release(),
            "python": platform.python_version()}


# ---------------------------------------------------------------------------
# Report


def fmt(v, spec):
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "n/a"
    return format(v, spec)


COLUMNS = [
    ("tool", "tool"), ("threads", "thr"), ("iterations", "iters"),
    ("time_ms", "median ms"), ("ratio", "x ptreg"), ("rmse", "rmse"),
    ("fitness", "fitness"), ("rot_err_deg", "rot err deg"), ("trans_err", "trans err"),
    ("rmse_rel_diff_pct", "rmse vs ptreg %"), ("self_rmse", "self rmse"),
    ("self_fitness", "self fitness"),
]


def row_cells(r):
    return [
        r["tool"], str(r.get("threads", "")), str(r.get("iterations", "")),
        fmt(r.get("time_ms"), ".1f"), fmt(r.get("ratio"), ".2f"),
        fmt(r.get("rmse"), ".6g"), fmt(r.get("fitness"), ".4f"),
        fmt(r.get("rot_err_deg"), ".4f"), fmt(r.get("trans_err"), ".3g"),
        fmt(r.get("rmse_rel_diff_pct"), "+.4f"),
        fmt(r.get("self_rmse"), ".6g"), fmt(r.get("self_fitness"), ".4f"),
    ]


def print_table(case_result, markdown):
    head = [h for _, h in COLUMNS]
    rows = [row_cells(r) for r in case_result["rows"]]
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
             for i, h in enumerate(head)]
        print("  ".join(h.ljust(w[i]) if i == 0 else h.rjust(w[i]) for i, h in enumerate(head)))
        for r in rows:
            print("  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r)))
    if markdown and case_result["skipped"]:
        print("")
    for tool, why in case_result["skipped"].items():
        print(("- " if markdown else "  ") + "%s skipped: %s" % (tool, why))


def main():
    ap = argparse.ArgumentParser(
        description="Rigid ICP benchmark: ptreg vs Open3D and PCL (30 iterations, "
                    "no early stop, 2 threads, same data and max_dist)")
    ap.add_argument("--ptreg", default=os.path.join(ROOT, "build", "ptreg"),
                    help="ptreg executable (default build/ptreg)")
    ap.add_argument("--pcl", default=os.path.join(ROOT, "build-peers", "pcl_icp"),
                    help="PCL peer executable (default build-peers/pcl_icp)")
    ap.add_argument("--open3d-python", default="/usr/bin/python3",
                    help="Python that can import open3d (default /usr/bin/python3)")
    ap.add_argument("--repeat", type=int, default=5, help="timed repetitions per tool")
    ap.add_argument("--cases", default="synth,aircraft,bunny",
                    help="comma-separated, from: " + ",".join(CASES))
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset")
    ap.add_argument("--max-dist", type=float, default=None,
                    help="common max correspondence distance (default: the target's "
                         "bounding-box diagonal, per case)")
    ap.add_argument("--markdown", action="store_true", help="tables in markdown")
    ap.add_argument("--json", metavar="FILE", help="write all raw results here")
    ap.add_argument("--index-methods", default="",
                    help="also run ptreg on a prebuilt model index with these --nn methods, "
                         "comma-separated, or 'all' (%s)" % ",".join(INDEX_METHODS))
    ap.add_argument("--work", metavar="DIR",
                    help="folder for generated data (kept); default a temporary one")
    args = ap.parse_args()

    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    if args.max_dist is not None and not args.max_dist > 0:
        ap.error("--max-dist must be > 0")
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    for c in cases:
        if c not in CASES:
            ap.error("unknown case %r (have: %s)" % (c, ", ".join(CASES)))
    for t in tools:
        if t not in TOOLS:
            ap.error("unknown tool %r (have: %s)" % (t, ", ".join(TOOLS)))
    index_methods = list(INDEX_METHODS) if args.index_methods == "all" else \
        [m.strip() for m in args.index_methods.split(",") if m.strip()]
    for m in index_methods:
        if m not in INDEX_METHODS:
            ap.error("unknown index method %r (have: %s)" % (m, ", ".join(INDEX_METHODS)))
    args.ptreg = os.path.abspath(args.ptreg)
    args.pcl = os.path.abspath(args.pcl)

    if args.work:
        work = os.path.abspath(args.work)
        os.makedirs(work, exist_ok=True)
        cleanup = False
    else:
        work = tempfile.mkdtemp(prefix="ptreg-icp-bench-")
        cleanup = True

    missing = {t: tool_available(t, args) for t in tools}
    missing = {t: why for t, why in missing.items() if why}
    machine = machine_info()
    report = {
        "command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]),
        "machine": machine,
        "settings": {"iterations": ITERATIONS, "threads": THREADS, "repeat": args.repeat,
                     "early_stop": False, "max_dist": args.max_dist or "target bbox diagonal",
                     "common_nn": nn_backend()},
        "versions": {},
        "cases": [],
    }
    if "ptreg" in tools and "ptreg" not in missing:
        report["versions"]["ptreg"] = ptreg_version(args.ptreg)

    out = sys.stdout
    print("# Rigid ICP: ptreg vs Open3D vs PCL" if args.markdown else "Rigid ICP benchmark",
          file=out)
    print("", file=out)
    mk = "- " if args.markdown else ""
    print("%smachine: %s, %s cores, Linux %s" % (mk, machine["cpu"], machine["cores"],
                                                 machine["kernel"]), file=out)
    print("%scommand: `%s`" % (mk, report["command"]) if args.markdown else
          "command: %s" % report["command"], file=out)
    print("%ssettings: %d iterations, no early stop, %d threads (PCL: 1, it is serial), "
          "median of %d runs; rmse/fitness recomputed here (%s)"
          % (mk, ITERATIONS, THREADS, args.repeat, report["settings"]["common_nn"]), file=out)
    for t, why in missing.items():
        print("%s%s unavailable: %s" % (mk, t, why), file=out)
    sys.stdout.flush()

    try:
        for key in cases:
            case, why = CASES[key](args, work)
            if case is None:
                print("\n%s%s: skipped: %s" % ("## " if args.markdown else "", key, why),
                      file=out)
                report["cases"].append({"key": key, "skipped": why})
                continue
            src_pts = load_points(case["source"])
            tgt_pts = load_points(case["target"])
            max_dist = args.max_dist or float(np.linalg.norm(tgt_pts.max(0) - tgt_pts.min(0)))
            init_path = os.path.join(work, "init_%s.txt" % key)
            write_matrix(init_path, case["init"])
            res = {"key": key, "name": case["name"], "source": case["source"],
                   "target": case["target"], "made_by": case["made_by"],
                   "source_points": len(src_pts), "target_points": len(tgt_pts),
                   "max_dist": max_dist, "truth": case["truth"].tolist(),
                   "init": case["init"].tolist(), "init_error": pose_error(case["init"],
                                                                           case["truth"]),
                   "raw": {}, "rows": [], "skipped": dict(missing)}
            runs = [(tool, lambda tool=tool: RUNNERS[tool](case, init_path, max_dist, args))
                    for tool in tools if tool not in missing]
            if index_methods and "ptreg" in tools and "ptreg" not in missing:
                index_path, res["index"] = build_index(case, key, work, args)
                res["walks"] = {}
                runs[1:1] = [("ptreg %s (index)" % m,
                              lambda m=m: run_ptreg_indexed(case, index_path, m, init_path, max_dist, args))
                             for m in index_methods]
            for tool, runner in runs:
                try:
                    raw = runner()
                except (RuntimeError, ValueError, subprocess.TimeoutExpired, OSError) as e:
                    res["skipped"][tool] = "failed: %s" % e
                    continue
                res["raw"][tool] = raw
                if "walks" in res and tool.startswith("ptreg "):
                    res["walks"][raw["nn"]] = walk_summary(raw)
                if raw.get("version"):
                    report["versions"].setdefault(tool.split()[0], raw["version"])
                T = np.asarray(raw["transformation"], dtype=np.float64)
                rmse, fitness = common_error(src_pts, tgt_pts, T, max_dist)
                rot, trans = pose_error(T, case["truth"])
                res["rows"].append({
                    "tool": tool, "threads": raw.get("threads"),
                    "iterations": raw.get("iterations"), "time_ms": raw.get("time_ms"),
                    "rmse": rmse, "fitness": fitness, "rot_err_deg": rot, "trans_err": trans,
                    "self_rmse": raw.get("rmse"), "self_fitness": raw.get("fitness"),
                    "points": (raw.get("source_points"), raw.get("target_points")),
                })
            ref = next((r for r in res["rows"] if r["tool"] == "ptreg"), None)
            for r in res["rows"]:
                if ref and ref.get("time_ms"):
                    r["ratio"] = r["time_ms"] / ref["time_ms"]
                if ref and ref["rmse"] and np.isfinite(ref["rmse"]):
                    r["rmse_rel_diff_pct"] = 100.0 * (r["rmse"] - ref["rmse"]) / ref["rmse"]
            report["cases"].append(res)

            print("", file=out)
            title = "%s: %d -> %d points, max_dist %.6g, start %.3g deg / %.3g off the truth" % (
                case["name"], len(src_pts), len(tgt_pts), max_dist,
                res["init_error"][0], res["init_error"][1])
            print(("## " + title) if args.markdown else title, file=out)
            if args.markdown:
                print("", file=out)
            print_table(res, args.markdown)
            print_walks(res, args.markdown)
            for r in res["rows"]:
                pts = r.get("points") or (None, None)
                if pts[0] is not None and (pts[0] != len(src_pts) or pts[1] != len(tgt_pts)):
                    print("%swarning: %s read %s -> %s points, the driver %d -> %d"
                          % (mk, r["tool"], pts[0], pts[1], len(src_pts), len(tgt_pts)),
                          file=out)
                if r.get("iterations") not in (None, ITERATIONS):
                    print("%swarning: %s ran %s iterations, not %d"
                          % (mk, r["tool"], r["iterations"], ITERATIONS), file=out)
            sys.stdout.flush()

        print("", file=out)
        vers = ", ".join("%s %s" % (t, v) for t, v in report["versions"].items() if v)
        print("%sversions: %s" % (mk, vers or "n/a"), file=out)
        print("%sratio = tool median / ptreg median (> 1: ptreg faster); rmse vs ptreg = "
              "relative RMSE difference (target: within 1%%)" % mk, file=out)
    finally:
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1, default=str)
        if cleanup:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
