#!/usr/bin/env python3
"""Rigid ICP on the GPU against ptreg's CPU path on the same machine, in one run.

  python3 bench/gpu/icp_gpu.py --ptreg BUILD/ptreg --devices cuda:0,opencl:1 \
      --work /tmp/ptreg-gpu --out OUTDIR [--data DIR] [--rounds 3] [--repeat 20]

Standard library only (the GPU machine has no network). For each case the model
index is built once (`ptreg index`, apart from every time), then each device
registers the scan 30 times over (`--repeat`, no early stop, 30 iterations) on
the index: on a GPU the model is uploaded once and every frame uploads only the
scan, so `time_ms` is the time per frame with the model resident; "from host"
adds the model's upload (the clouds in host memory, the index prebuilt). The CPU
path runs on all the machine's cores (--threads). Rounds interleave the devices;
the figure is the median over every round's runs.

Cases (the aerial-refuelling sizes, and a LiDAR-sized one):
  blob, aircraft   ptreg synth: a 40k-point model, a 30k-point scan, 10 degrees off
                   (--model-points, --scan-points: other sizes, for a dry run)
  bunny            Stanford bun045 onto bun000 (~40k each), 3 degrees and 5 mm off
                   the truth of bun.conf (needs --data: the folder holding bunny/)
  1m               ptreg synth blob: 1M-point model, 1M-point scan, 5 degrees off
                   (k-d tree only: the Delaunay graph of 1M points takes minutes)
  lidar            the real LiDAR pair (~69k points each; needs --data: the folder
                   holding lidar/), from the identity, --max-dist 1: point-to-point,
                   point-to-plane and GICP (the issue's "LiDAR pair, 30 point-to-plane
                   iterations")
  lidar-voxel      the same pair, GICP and plane on 0.25 m voxel-grid centroids:
                   the model voxelised once (ptreg icp --voxel on TARGET, saved), the
                   scan voxelised every frame (in the time: on the host for now)

A method is the nearest-neighbour search (--nn), or NN:METHOD for ICP's
--method (kdtree:plane); the LiDAR cases take their own list.

Writes OUTDIR/icp_gpu.json and OUTDIR/icp_gpu.md and prints the table last.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

# kdtree-lbkd: --nn kdtree with the device searching the left-balanced tree
# without a stack (PTREG_NN_DEVICE_KDTREE=lbkd) instead of climbing the CPU
# tree's cells from the seed (the CPU runs its one k-d tree search for both)
METHODS_40K = ["brute", "kdtree", "kdtree-lbkd", "delaunay-zero", "delaunay-kdann", "delaunay-pnn",
               "delaunay-pnnopt"]
METHODS_1M = ["kdtree", "kdtree-lbkd"]
METHODS_LIDAR = ["kdtree:point", "kdtree:plane", "kdtree:gicp"]
METHODS_LIDAR_VOXEL = ["kdtree:plane", "kdtree:gicp"]
LIDAR_VOXEL = 0.25
ITERATIONS = 30


def run(cmd, timeout=900, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-600:]))
    return p.stdout


def matmul(a, b):
    return [[sum(a[r][k] * b[k][c] for k in range(4)) for c in range(4)] for r in range(4)]


def invert_rigid(t):
    r = [[t[c][r] for c in range(3)] for r in range(3)]
    p = [-sum(r[i][k] * t[k][3] for k in range(3)) for i in range(3)]
    return [r[0] + [p[0]], r[1] + [p[1]], r[2] + [p[2]], [0.0, 0.0, 0.0, 1.0]]


def axis_angle(axis, deg, t=(0.0, 0.0, 0.0)):
    n = math.sqrt(sum(a * a for a in axis))
    x, y, z = (a / n for a in axis)
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    C = 1 - c
    return [[c + x * x * C, x * y * C - z * s, x * z * C + y * s, t[0]],
            [y * x * C + z * s, c + y * y * C, y * z * C - x * s, t[1]],
            [z * x * C - y * s, z * y * C + x * s, c + z * z * C, t[2]],
            [0.0, 0.0, 0.0, 1.0]]


def bun_pose(line):
    """bun.conf: `bmesh FILE tx ty tz qx qy qz qw`, applied as x_world = R(q)^T x + t."""
    f = line.split()
    tx, ty, tz, qx, qy, qz, qw = (float(v) for v in f[2:9])
    R = [[1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)],
         [2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)],
         [2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)]]
    Rt = [[R[c][r] for c in range(3)] for r in range(3)]
    return [Rt[0] + [tx], Rt[1] + [ty], Rt[2] + [tz], [0.0, 0.0, 0.0, 1.0]]


def write_matrix(path, m):
    with open(path, "w") as f:
        for row in m:
            f.write(" ".join("%.17g" % v for v in row) + "\n")


def prepare(args, ptreg):
    """Each case's scan, model index and initial pose."""
    os.makedirs(args.work, exist_ok=True)
    cases = []
    for name in args.cases.split(","):
        model, scan = (os.path.join(args.work, "%s_%s.ply" % (name, w)) for w in ("model", "scan"))
        init = os.path.join(args.work, "%s_init.txt" % name)
        index = os.path.join(args.work, "%s.pti" % name)
        if name in ("blob", "aircraft", "1m"):
            big = name == "1m"
            shape = "blob" if big else name
            npts = (1000000, 1000000) if big else (args.model_points, args.scan_points)
            if npts != ((1000000, 1000000) if big else (40000, 30000)):  # not the default: its own files
                model, scan = (os.path.join(args.work, "%s_%d_%d_%s.ply" % (name, npts[0], npts[1], w))
                               for w in ("model", "scan"))
                index = os.path.join(args.work, "%s_%d_%d.pti" % (name, npts[0], npts[1]))
            if not os.path.exists(scan):
                run([ptreg, "synth", "--shape", shape, "--model", model, "--model-points",
                     str(npts[0]), "-o", scan, "--points", str(npts[1]),
                     "--max-angle", "5" if big else "10", "--noise", "0.002", "--seed", "1"])
            write_matrix(init, axis_angle([0, 0, 1], 0.0))  # the scan's own pose: up to 10 degrees off
        elif name == "bunny":
            d = os.path.join(args.data or "", "bunny")
            if not args.data or not os.path.exists(os.path.join(d, "bun.conf")):
                print("bunny: no --data folder holding bunny/: left out", file=sys.stderr)
                continue
            poses = {l.split()[1]: bun_pose(l) for l in open(os.path.join(d, "bun.conf")) if l.startswith("bmesh")}
            truth = matmul(invert_rigid(poses["bun000.ply"]), poses["bun045.ply"])
            write_matrix(init, matmul(axis_angle([1, 2, 3], 3.0, (0.005, 0.0, 0.0)), truth))
            scan, model = os.path.join(d, "bun045.ply"), os.path.join(d, "bun000.ply")
        elif name in ("lidar", "lidar-voxel"):
            d = os.path.join(args.data or "", "lidar")
            if not args.data or not os.path.exists(os.path.join(d, "target.ply")):
                print("%s: no --data folder holding lidar/: left out" % name, file=sys.stderr)
                continue
            scan, model = os.path.join(d, "source.ply"), os.path.join(d, "target.ply")
            if name == "lidar-voxel":
                model = voxel_model(args, ptreg, model)
            write_matrix(init, axis_angle([0, 0, 1], 0.0))
        else:
            raise SystemExit("unknown case %s" % name)
        methods = {"1m": METHODS_1M, "lidar": METHODS_LIDAR, "lidar-voxel": METHODS_LIDAR_VOXEL}.get(
            name, args.methods.split(","))
        delaunay = any(m.startswith("delaunay") for m in methods)
        t0 = time.time()
        info = json.loads(run([ptreg, "index", model, "-o", index, "--json", "--threads", str(args.threads)]
                              + ([] if delaunay else ["--no-delaunay"])))
        cases.append({"name": name, "scan": scan, "index": index, "init": init, "methods": methods,
                      "index_s": time.time() - t0, "model_points": info.get("points")})
    return cases


def voxel_model(args, ptreg, model):
    """The LiDAR target's 0.25 m voxel-grid centroids (ptreg convert --voxel: the grid of icp --voxel), once."""
    out = os.path.join(args.work, "lidar_target_voxel.ply")
    if not os.path.exists(out):
        run([ptreg, "convert", model, "-o", out, "--voxel", str(LIDAR_VOXEL)])
    return out


def case_args(case):
    """The options a case adds to every registration."""
    if case["name"] == "lidar":
        return ["--max-dist", "1.0"]
    if case["name"] == "lidar-voxel":
        return ["--max-dist", "1.0", "--voxel", str(LIDAR_VOXEL)]
    return []


def register(ptreg, case, method, device, threads, repeat):
    env = None
    nn, _, icp_method = method.partition(":")
    if nn == "kdtree-lbkd":
        nn, env = "kdtree", dict(os.environ, PTREG_NN_DEVICE_KDTREE="lbkd")
    cmd = [ptreg, "icp", case["scan"], "--target-index", case["index"], "--init", case["init"], "--nn", nn,
           "--device", device, "--threads", str(threads), "--max-iter", str(ITERATIONS), "--tol", "0",
           "--repeat", str(repeat), "--json"] + (["--method", icp_method] if icp_method else []) + case_args(case)
    return json.loads(run(cmd, env=env))


def measure(args, ptreg, cases, devices):
    rows = []
    for case in cases:
        for method in case["methods"]:
            runs = {d: [] for d in devices}
            last = {}
            for _ in range(args.rounds):
                for d in devices:
                    if d == "cpu" and method == "brute" and case["name"] == "1m":
                        continue
                    repeat = args.cpu_repeat if d == "cpu" else args.repeat
                    try:
                        r = register(ptreg, case, method, d, args.threads, repeat)
                    except RuntimeError as e:
                        print("%s %s %s: %s" % (case["name"], method, d, e), file=sys.stderr)
                        last[d] = {"error": str(e)}
                        continue
                    runs[d].extend(r.get("times_ms", [r["time_ms"]]))
                    last[d] = r
            for d in devices:
                r = last.get(d, {})
                row = {"case": case["name"], "method": method, "device": d, "runs": len(runs[d])}
                if "error" in r or not runs[d]:
                    row["error"] = r.get("error", "not run")
                else:
                    row.update({"frame_ms": statistics.median(runs[d]), "min_ms": min(runs[d]),
                                "model_upload_ms": r.get("model_upload_ms", 0.0),
                                "kernel_compile_ms": r.get("kernel_compile_ms", 0.0),
                                "device_name": r.get("device_name", d), "rmse": r["rmse"],
                                "pairs": r["pairs"], "iterations": r["iterations"],
                                "transformation": r["transformation"],
                                "device_launches": r.get("device_launches"),
                                "device_bytes_to": r.get("device_bytes_to"),
                                "device_bytes_from": r.get("device_bytes_from"),
                                "device_per_iteration": r.get("device_per_iteration")})
                    row["from_host_ms"] = row["frame_ms"] + row["model_upload_ms"]
                rows.append(row)
            summarise(rows, case["name"], method)
    return rows


def summarise(rows, case, method):
    """Speed-ups against the CPU, and each device's transform against the CPU's."""
    mine = [r for r in rows if r["case"] == case and r["method"] == method and "error" not in r]
    cpu = next((r for r in mine if r["device"] == "cpu"), None)
    for r in mine:
        if cpu and r is not cpu:
            r["speedup"] = cpu["frame_ms"] / r["frame_ms"]
            r["max_dT"] = max(abs(a - b) for ra, rb in zip(r["transformation"], cpu["transformation"])
                              for a, b in zip(ra, rb))
        line = "%-8s %-16s %-10s %9.3f ms/frame" % (case, method, r["device"], r["frame_ms"])
        if "speedup" in r:
            line += "  %6.1fx cpu  |dT| %.1e" % (r["speedup"], r["max_dT"])
        print(line, flush=True)


def markdown(rows, devices, threads, cases):
    gpus = [d for d in devices if d != "cpu"]
    head = "| case | method | cpu, %d threads (ms) | " % threads + " | ".join(
        "%s: resident / from host (ms), speed-up, \\|dT\\|" % d for d in gpus) + " |"
    lines = [head, "|" + "---|" * (3 + len(gpus))]
    keys = []
    for r in rows:
        if (r["case"], r["method"]) not in keys:
            keys.append((r["case"], r["method"]))
    for case, method in keys:
        cell = {r["device"]: r for r in rows if r["case"] == case and r["method"] == method}
        cpu = cell.get("cpu", {})
        out = ["%s" % case, method, "%.2f" % cpu["frame_ms"] if "frame_ms" in cpu else cpu.get("error", "-")[:40]]
        for d in gpus:
            r = cell.get(d, {})
            if "frame_ms" in r:
                out.append("%.3f / %.3f, %s, %s" % (r["frame_ms"], r["from_host_ms"],
                                                    "%.1fx" % r["speedup"] if "speedup" in r else "-",
                                                    "%.0e" % r["max_dT"] if "max_dT" in r else "-"))
            else:
                out.append(r.get("error", "-")[:60])
        lines.append("| " + " | ".join(out) + " |")
    notes = ["", "Index builds (once per model, not in any time): " +
             ", ".join("%s %.1f s" % (c["name"], c["index_s"]) for c in cases) + "."]
    return "\n".join(lines + notes) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptreg", required=True)
    ap.add_argument("--devices", default="", help="GPU devices, comma-separated (the CPU always runs)")
    ap.add_argument("--cases", default="blob,aircraft,bunny,1m")
    ap.add_argument("--methods", default=",".join(METHODS_40K), help="for the 40k cases")
    ap.add_argument("--work", default="/tmp/ptreg-gpu")
    ap.add_argument("--out", default=".")
    ap.add_argument("--data", default=None, help="a folder holding bunny/ (Stanford scans) and lidar/")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--model-points", type=int, default=40000, help="blob and aircraft: the model's points")
    ap.add_argument("--scan-points", type=int, default=30000, help="blob and aircraft: the scan's points")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20, help="registrations per GPU run")
    ap.add_argument("--cpu-repeat", type=int, default=3, help="registrations per CPU run")
    args = ap.parse_args()
    devices = ["cpu"] + [d for d in args.devices.split(",") if d]
    cases = prepare(args, args.ptreg)
    rows = measure(args, args.ptreg, cases, devices)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "icp_gpu.json"), "w") as f:
        json.dump({"iterations": ITERATIONS, "threads": args.threads, "devices": devices, "rows": rows,
                   "cases": cases}, f, indent=1)
    table = markdown(rows, devices, args.threads, cases)
    with open(os.path.join(args.out, "icp_gpu.md"), "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
