#!/usr/bin/python3
"""A roofline for ptreg's hot CPU kernels: each kernel timed alone
(bench/roofline_kernels.c), its work per unit (flops, bytes, random lines: the
MODELS table below, counted from the kernel's code), this machine's measured
limits (bench/peak_flops.c, bench/stream_bw.c, bench/latency_probe.c), and the
fraction of the governing bound each kernel reaches on 1 and 2 threads.

  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j2
  /usr/bin/python3 bench/roofline.py [--build build] [--rounds 3] [--reps 5]
      [--kernels a,b] [--baseline OTHER_BUILD] [--markdown] [--json FILE] [--svg FILE] [--quick]

Bounds (per kernel, the time its work needs at the machine's limit; the
governing one is the largest):
  compute  flops / peak of the code's form: fp32 or fp64 vectors (AVX-512 or
           AVX2: peak_flops.c's FMA rate; fp64 vectors half the fp32 rate), or
           scalar code (one lane: the fp32 peak / its lanes). An FMA is 2 flops.
  memory   compulsory bytes / stream_bw.c's bandwidth (1 byte read + 4 written
           per element, far past the caches) at that thread count.
  random   lines fetched at random / latency_probe.c's random-access rate (8
           chains in flight) for the kernel's working set.
The fraction is bound / measured; every kernel also gets the fraction of the
machine's fp32 vector peak (what vectorising scalar code could reach).
Medians of --rounds interleaved runs (1 thread, 2 threads, 1, 2, ...), each a
median of --reps calls in one process (roofline_kernels --reps).
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

from machine import cpu_name

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Work per unit, counted from the kernels' code (flops: FMA = 2; the
# counts are derived in docs/ROOFLINE.md). flops: [(form, flops)], form the
# compute peak that governs that part: "fp32-vector", "fp64-vector" or
# "scalar"; the parts' times add. bytes: compulsory memory traffic per unit
# (0: the kernel's data stays in cache). lines/ws_kib: random cache lines
# per unit and the working set they come from. A number may be a function
# of the kernel's params (from roofline_kernels).
# A k-d tree query's work, with or without a hint: one leaf scan, the
# descent's lines and the leaf's first.
KD_TREE_WORK = {
    "flops": [("fp32-vector", lambda p: 8 * leaf_occupancy(p["model"], p["leaf_size"]))], "bytes": 0,
    "lines": lambda p: tree_depth(p["model"], p["leaf_size"]) + 1,
    "ws_kib": lambda p: p["model"] * 12 / 1024,
    "why": "the bound counts one leaf scan and the descent's lines; queries near a cell's wall scan more leaves, "
           "and each level of the descent is a branch the predictor cannot know (about 15 cycles each when it "
           "misses)",
}

MODELS = {
    "emicp_pairs": {
        "what": "EM-ICP E-step pair sums, fp32 (src/pair/pair_kernels_isa.c sweep_tile)",
        "flops": [("fp32-vector", 31)], "bytes": 0,
        "why": "19 vector instructions per 16 pairs, 8 of them not FMAs (3 sub, 2 mul, VREDUCEPS, "
               "VSCALEFPS, add); counted as 31 flops a pair (the exp before change 121) to compare across changes",
        "move": "the scale folded into the coordinates (one mul fewer: +10% in an experiment), unscaled "
                "columns kept for the weighted sums"},
    "lddmm_eval": {
        "what": "LDDMM objective + gradient: flow and adjoint pair passes (src/pair/lddmm_kernels_isa.c)",
        "flops": [("fp32-vector", 65)], "bytes": 0,
        "why": "24 and 48 vector instructions per 16 flow and adjoint terms (counted as 44 and 86 flops, the "
               "yardstick before change 122), a third of them not FMAs (subtractions, the 2^t's reduce and scale); "
               "float64 sums per tile and the Euler steps' barriers add the rest",
        "move": "fewer dot products in the adjoint (ai.pj + aj.pi as one 6-term dot, db.d once); two row "
                "vectors per column in the flow pass did nothing (measured, change 122)"},
    "harris3d": {
        "what": "3-D Harris scores, W = 5: gradients, six products, separable Gaussian, score "
                "(src/feat/harris3d_kernels_isa.c)",
        "flops": [("fp32-vector", 158)], "bytes": 5,
        "why": "the x, y and z passes store and reload the six channels' rows and planes between them, and "
               "the y and z passes are at the arithmetic the same bits allow (7 operations per channel and "
               "pass: symmetric taps added before the multiply, no FMA)",
        "move": "the products formed in the x pass's registers (about 4%), aligned centre loads in the "
                "product loop (about 2%); FMAs or another summation order would change the bits"},
    "kdtree_nn": {
        **KD_TREE_WORK,
        "what": "exact 1-NN by the k-d tree, ICP's late iterations, no hint (src/nn/kdtree.c, nn_kernels_isa.c)",
        "move": "a hint (kdtree_nn_hint) bounds the search to about one leaf; beyond that, sorting queries so that "
                "neighbours share leaves still in L1"},
    "kdtree_nn_hint": {
        **KD_TREE_WORK,
        "what": "the same searches bounded first by the previous iteration's answer, as ICP runs them "
                "(src/nn/kdtree.c, nn_kernels_isa.c)",
        "move": "little left in the tree's layout: the hint's leaf is already scanned first and smaller leaves "
                "were slower (leaf size 256 → 16: 1.0 → 1.8x the time hinted, 1.6x unhinted); queries sorted "
                "so that consecutive ones share their leaf"},
    "delaunay_walk": {
        "what": "exact 1-NN by a Delaunay-graph walk from the previous answer (src/nn/delaunay.c)",
        "flops": [("scalar", lambda p: 8 * (1 + p["steps_per_query"]) * p["mean_degree"])], "bytes": 0,
        "lines": lambda p: (1 + p["steps_per_query"]) * (1 + p["mean_degree"] * 12 / 64),
        "ws_kib": lambda p: p["model"] * (12 + 4 * p["mean_degree"]) / 1024,
        "why": "each step gathers its neighbours' coordinates one by one (scalar), and the next step "
               "depends on this one's answer",
        "move": "coordinates stored in each point's adjacency order (one line per step), or vector gathers "
                "of 16 neighbours at once; on this machine the hinted k-d tree (kdtree_nn_hint) answers sooner"},
    "plane_gn": {
        "what": "point-to-plane Gauss-Newton: linearise and sum H, g (src/reg/icp/icp_gn.c), one thread",
        "flops": [("scalar", 89)], "bytes": 0, "one_thread": True,
        "why": "scalar double, one pair at a time in pair order (the sum's order fixes the bits); "
               "4 pairs per vector would approach the fp64 vector peak",
        "move": "four pairs per vector (double lanes, the sums in pair-order blocks: other bits, documented)"},
    "gicp_gn": {
        "what": "GICP Gauss-Newton: W = (C_q + C_p)^-1, J^T W J (src/reg/icp/icp_gn.c), one thread",
        "flops": [("scalar", 257)], "bytes": 0, "one_thread": True,
        "why": "scalar double with 9 divisions and a square root per pair (each ~4x an FMA's issue cost)",
        "move": "the cofactor inverse and J^T W J four pairs per vector; the divisions by one reciprocal"},
    "normals": {
        "what": "normals, k = 30: k-NN by the neighbourhood engine's groups, covariance and eigenvector "
                "(src/nn/hoods.c, knn_kernels_isa.c kd_group_knn; src/feat/normals.c)",
        "flops": [("fp32-vector", lambda p: group_scan_flops(p)), ("scalar", 18 + 300 / 30.0)], "bytes": 0,
        "lines": lambda p: group_gather_lines(p),
        "ws_kib": lambda p: p["points"] * (12 + 16 + 4) / 1024,
        "why": "per query: the group's guess, the chunk bounds, then ranking the ~33 keys left (a few hundred "
               "vector compares) and the scalar double PCA (its sums in list order, a latency chain); "
               "the lines counted are the group's gathered chunks' (the PCA's neighbour coordinates, read "
               "right after the search by the same block, hit in cache)",
        "move": "the tree's build (select_kth, 7% of the run); PCA's sums for several points side by side "
                "(one neighbour a vector measured no faster: the chain's latency, not its width, bounds it)"},
    "fpfh": {
        "what": "FPFH, k = 30: neighbour lists (the engine's groups), SPFH pair features, weighted sums "
                "(src/feat/pfh.c)",
        "flops": [("fp32-vector", lambda p: group_scan_flops(p) + 95 + 66)], "bytes": 0,
        "lines": lambda p: group_gather_lines(p) + 33 * 4 / 64,
        "ws_kib": lambda p: p["points"] * (12 + 12 + 16 + 4 + 33 * 4) / 1024,
        "why": "the pair features' bins and the gathers of neighbours' coordinates, normals and SPFH rows; "
               "the lines counted are the search's and each neighbour's SPFH row (33 floats, read in the "
               "points' index order: at random)",
        "move": "the SPFH pass and the sums by the engine's blocks in the tree's order (rows of nearby points "
                "then share lines); radius lists by groups need the single search's order kept (FPFH's sums "
                "are in list order)"},
    "voxel": {
        "what": "voxel-grid downsampling: a table of voxel sums (src/core/voxel.c)",
        "flops": [("scalar", 30)], "bytes": 12,
        "lines": 2, "ws_kib": lambda p: p["voxels"] * (40 + 2 * 8 * 2) / 1024,
        "why": "each point's voxel is a random place in the table and the sums: two dependent cache misses",
        "move": "longer prefetch distance, or a first pass that orders points by coarse cell (a scan's points already"
                " are)"},
    "batch_lanes": {
        "what": "batched EM-ICP, one pair per lane, 64 x 64 points (src/reg/batch/batch_kernels_isa.c)",
        "flops": [("fp32-vector", 31)], "bytes": 0,
        "why": "the E-step is the pair engine's per lane; Horn's Jacobi in double and the masked lanes "
               "of stopped pairs add the rest",
        "move": "the exp with fewer instructions (the pair engine's); Horn's Jacobi in float for the lanes' first "
                "sweeps"},
}


# The neighbourhood engine on the roofline's cloud at k = 30 (bench/NOTES.md, change 137):
# a group query scans 10.6 chunks (16 points each); a group of 16 queries gathers 76.5.
GROUP_SCANNED_CHUNKS = 10.6
GROUP_GATHERED_CHUNKS = 76.5


def group_scan_flops(p):
    """A group query's distances to its scanned chunks (8 flops a point), shared by the k neighbours."""
    return 8 * 16 * GROUP_SCANNED_CHUNKS / p["k"]


def group_gather_lines(p):
    """The lines a group fetches: its gathered chunks (4 lines of coordinates, 1 of indices
    each), shared by its 16 queries and their k neighbours; the scans then hit in L1."""
    return 5 * GROUP_GATHERED_CHUNKS / (16 * p["k"])


def leaf_occupancy(points, leaf_size):
    leaves = 1
    while points / leaves > leaf_size:
        leaves *= 2
    return points / leaves


def tree_depth(points, leaf_size):
    depth, leaves = 0, 1
    while points / leaves > leaf_size:
        leaves *= 2
        depth += 1
    return depth


def value(model, key, params, default=0.0):
    v = model.get(key, default)
    return float(v(params)) if callable(v) else float(v)


def flops(model, params):
    return sum(float(f(params)) if callable(f) else float(f) for _, f in model["flops"])


def peak_of(limits, form):
    return {"fp32-vector": limits["fp32_vector"], "fp64-vector": limits["fp64_vector"],
            "scalar": limits["scalar"]}[form]


def build_tools(work):
    tools = {}
    for name, flags in (("peak_flops", ["-O3"]), ("stream_bw", ["-O3", "-fopenmp"]), ("latency_probe", ["-O2"])):
        exe = os.path.join(work, name)
        subprocess.run(["cc"] + flags + [os.path.join(HERE, name + ".c"), "-o", exe], check=True)
        tools[name] = exe
    return tools


def json_lines(cmd, env=None):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


def machine_limits(tools, quick):
    peak = json_lines([tools["peak_flops"]])[0]
    bw = {r["threads"]: r["gb_per_s"] * 1e9 for r in json_lines([tools["stream_bw"]])}
    lat = json_lines([tools["latency_probe"]] + (["--quick"] if quick else []))
    fp32 = peak.get("fp32_gflops_avx512_per_core") or peak["fp32_gflops_avx2_per_core"]
    lanes = 16 if peak.get("fp32_gflops_avx512_per_core") else 8
    return {"fp32_vector": fp32 * 1e9, "fp64_vector": fp32 * 1e9 / 2, "scalar": fp32 * 1e9 / lanes,
            "lanes": lanes, "bandwidth": bw, "random": lat}


def random_ns(limits, ws_kib):
    rows = sorted(limits["random"], key=lambda r: r["kib"])
    for r in rows:
        if r["kib"] >= ws_kib:
            return r["random_ns_per_line"]
    return rows[-1]["random_ns_per_line"]


def bounds(limits, name, params, threads):
    """Seconds per unit each bound allows at this thread count."""
    m = MODELS[name]
    t = 1 if m.get("one_thread") else threads
    b = {"compute": sum((float(f(params)) if callable(f) else float(f)) / (peak_of(limits, form) * t)
                        for form, f in m["flops"])}
    if value(m, "bytes", params):
        bw = limits["bandwidth"].get(t) or max(limits["bandwidth"].values())
        b["memory"] = value(m, "bytes", params) / bw
    if value(m, "lines", params):
        b["random"] = value(m, "lines", params) * random_ns(limits, value(m, "ws_kib", params)) * 1e-9 / t
    b["machine_fp32"] = flops(m, params) / (limits["fp32_vector"] * t)
    return b


def run_kernels(build, threads, kernels, reps, quick):
    cmd = [os.path.join(build, "bench", "roofline_kernels"), "--reps", str(reps)]
    if kernels:
        cmd += ["--kernels", kernels]
    if quick:
        cmd.append("--quick")
    env = dict(os.environ, PTREG_NUM_THREADS=str(threads))
    return json_lines(cmd, env)


def measure(a):
    """{build: {kernel: {threads: [rows]}}} over interleaved rounds: each round
    runs every thread count, and under each the builds one after the other."""
    builds = [a.build] + ([a.baseline] if a.baseline else [])
    runs = {b: {} for b in builds}
    for _ in range(a.rounds):
        for t in a.threads:
            for b in builds:
                for r in run_kernels(b, t, a.kernels, a.reps, a.quick):
                    runs[b].setdefault(r["kernel"], {}).setdefault(t, []).append(r)
    return runs


def add_baseline(rows, base_rows):
    """Each row's per-thread figures gain the baseline build's ns per unit."""
    base = {r["kernel"]: r for r in base_rows}
    for r in rows:
        for t, p in r["per_threads"].items():
            b = base.get(r["kernel"], {}).get("per_threads", {}).get(t)
            if b:
                p["baseline_ns_per_unit"] = b["ns_per_unit"]
                p["speedup"] = b["ns_per_unit"] / p["ns_per_unit"]


def summarise(runs, limits, threads):
    rows = []
    for name, by_threads in runs.items():
        row = {"kernel": name, "what": MODELS[name]["what"],
               "form": "+".join(form for form, _ in MODELS[name]["flops"]),
               "one_thread": bool(MODELS[name].get("one_thread")), "why": MODELS[name]["why"],
               "move": MODELS[name]["move"], "per_threads": {}}
        for t in threads:
            rs = by_threads.get(t)
            if not rs:
                continue
            params = rs[0]["params"]
            per_unit = statistics.median(r["seconds"] for r in rs) / rs[0]["units"]
            b = bounds(limits, name, params, t)
            gov = max((k for k in b if k != "machine_fp32"), key=lambda k: b[k])
            row["unit"], row["params"] = rs[0]["unit"], params
            row["flops"] = flops(MODELS[name], params)
            row["per_threads"][t] = {"ns_per_unit": per_unit * 1e9, "bound": gov, "bound_ns": b[gov] * 1e9,
                                     "fraction": b[gov] / per_unit, "machine_fraction": b["machine_fp32"] / per_unit,
                                     "gflops": row["flops"] / per_unit / 1e9, "rounds": len(rs)}
        rows.append(row)
    return rows


def markdown(rows, limits, a):
    bw = ", ".join(f"{t} thr {v / 1e9:.1f} GB/s" for t, v in sorted(limits["bandwidth"].items()))
    rnd = ", ".join(f"{r['kib']} KiB {r['latency_ns']:.0f}/{r['random_ns_per_line']:.1f}" for r in limits["random"])
    lines = [f"- machine: {cpu_name()}, nproc {os.cpu_count()}; {platform.platform()}",
             f"- fp32 vector peak {limits['fp32_vector'] / 1e9:.1f} GFLOP/s per core ({limits['lanes']} lanes; "
             f"scalar {limits['scalar'] / 1e9:.1f}); bandwidth {bw}",
             f"- random access, ns latency/throughput per line: {rnd}",
             f"- {a.rounds} interleaved rounds x {a.reps} calls, medians; command: `{' '.join(sys.argv)}`", ""]
    base = [f"{t} thr before ns/unit (x faster)" for t in a.threads] if a.baseline else []
    head = ["kernel", "unit", "flops/unit", "form", "bound"] + [f"{t} thr ns/unit" for t in a.threads] + base + \
           [f"{t} thr of bound" for t in a.threads] + [f"{t} thr of fp32 peak" for t in a.threads]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        p = r["per_threads"]
        cells = [r["kernel"], r["unit"], f"{r['flops']:.0f}", r["form"], p[min(p)]["bound"]]
        cells += [f"{p[t]['ns_per_unit']:.4g}" if t in p else "" for t in a.threads]
        if a.baseline:
            cells += [f"{p[t]['baseline_ns_per_unit']:.4g} ({p[t]['speedup']:.2f}x)" if "speedup" in p.get(t, {})
                      else "" for t in a.threads]
        cells += [fraction_cell(r, p, t) for t in a.threads]
        cells += [f"{100 * p[t]['machine_fraction']:.1f}%" if t in p else "" for t in a.threads]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for r in rows:
        p = r["per_threads"]
        low = min(v["fraction"] for v in p.values()) < 0.30
        lines.append(f"- `{r['kernel']}`: {r['what']}." +
                     (f" Below 30%: {r['why']}; what would move it: {r['move']}." if low else ""))
    return "\n".join(lines)


def fraction_cell(r, p, t):
    if t not in p:
        return ""
    cell = f"{100 * p[t]['fraction']:.0f}%"
    return cell + " (1 thr kernel)" if r["one_thread"] and t > 1 else cell


def svg(rows, limits, threads):
    """A log-log roofline: achieved GFLOP/s against flops per byte of
    compulsory traffic (kernels with none in a band at the right), the fp32
    vector and scalar roofs and the bandwidth slope, at `threads` threads."""
    import math
    W, H, L, B, R, T = 820, 460, 70, 50, 240, 20
    x0, x1, y0, y1 = -1.0, 3.0, -1.0, math.log10(limits["fp32_vector"] * threads / 1e9) + 0.5
    X = lambda ai: L + (math.log10(ai) - x0) / (x1 - x0) * (W - L - R)
    Y = lambda g: H - B - (math.log10(g) - y0) / (y1 - y0) * (H - B - T)
    bw = (limits["bandwidth"].get(threads) or max(limits["bandwidth"].values())) / 1e9
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" '
           f'font-size="11">', f'<rect width="{W}" height="{H}" fill="white"/>']
    for d in range(int(x0), int(x1) + 1):
        out.append(f'<line x1="{X(10**d):.1f}" y1="{T}" x2="{X(10**d):.1f}" y2="{H - B}" stroke="#eee"/>')
        out.append(f'<text x="{X(10**d):.1f}" y="{H - B + 15}" text-anchor="middle">{10**d:g}</text>')
    for d in range(int(y0), int(math.ceil(y1))):
        out.append(f'<line x1="{L}" y1="{Y(10**d):.1f}" x2="{W - R}" y2="{Y(10**d):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{L - 5}" y="{Y(10**d) + 4:.1f}" text-anchor="end">{10**d:g}</text>')
    for peak, label, dash in ((limits["fp32_vector"], "fp32 vector peak", ""),
                              (limits["scalar"], "scalar peak", ' stroke-dasharray="4,3"')):
        g = peak * threads / 1e9
        knee = g / bw
        out.append(f'<polyline fill="none" stroke="#333"{dash} points="{X(10**x0):.1f},{Y(bw * 10**x0):.1f} '
                   f'{X(knee):.1f},{Y(g):.1f} {X(10**x1):.1f},{Y(g):.1f}"/>')
        out.append(f'<text x="{W - R - 4}" y="{Y(g) - 4:.1f}" text-anchor="end">{label} {g:.0f} GFLOP/s</text>')
    out.append(f'<text x="{X(10**x0) + 30:.1f}" y="{Y(bw * 10**x0 * 3) - 8:.1f}">{bw:.1f} GB/s</text>')
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
               "#bcbd22", "#7f7f7f", "#000000", "#aec7e8", "#98df8a"]
    in_cache = [r["kernel"] for r in rows if not value(MODELS[r["kernel"]], "bytes", r.get("params", {}))]
    for i, r in enumerate(rows):
        p = r["per_threads"].get(threads)
        if not p:
            continue
        bytes_ = value(MODELS[r["kernel"]], "bytes", r.get("params", {}))
        # kernels without memory traffic spread over the right edge's band, so their points do not hide
        # each other
        band = in_cache.index(r["kernel"]) / max(1, len(in_cache) - 1) if not bytes_ else 0
        ai = min(r["flops"] / bytes_, 10**x1) if bytes_ else 10 ** (x1 - 0.55 + 0.5 * band)
        c = colours[i % len(colours)]
        out.append(f'<circle cx="{X(ai):.1f}" cy="{Y(max(p["gflops"], 10**y0)):.1f}" r="5" fill="{c}"/>')
        out.append(f'<text x="{W - R + 12}" y="{T + 16 * i + 10}" fill="{c}">● {r["kernel"]} '
                   f'{100 * p["fraction"]:.0f}% of {p["bound"]}</text>')
    out.append(f'<text x="{(W - R + L) / 2}" y="{H - 12}" text-anchor="middle">flops per byte of compulsory '
               f'memory traffic (right band: data in cache)</text>')
    out.append(f'<text x="16" y="{(H - B) / 2}" transform="rotate(-90 16 {(H - B) / 2})" text-anchor="middle">'
               f'GFLOP/s, {threads} thread(s)</text></svg>')
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="the CMake build folder (its bench/roofline_kernels)")
    ap.add_argument("--baseline", default=None,
                    help="another build folder (the code before a change), measured in the same rounds: "
                         "its ns per unit and the speed-up join the table")
    ap.add_argument("--work", default=None, help="folder for the probes' programs (default: a temporary one)")
    ap.add_argument("--kernels", default=None, help="comma list (default all: " + ", ".join(MODELS) + ")")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="small inputs and probes (the test's)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--svg", default=None, help="the roofline plot at the largest thread count")
    a = ap.parse_args()
    a.threads = [int(t) for t in a.threads.split(",")]
    if a.kernels:
        unknown = [k for k in a.kernels.split(",") if k not in MODELS]
        if unknown:
            sys.exit(f"roofline.py: unknown kernel(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    work = a.work or tempfile.mkdtemp(prefix="roofline_")
    os.makedirs(work, exist_ok=True)
    limits = machine_limits(build_tools(work), a.quick)
    runs = measure(a)
    rows = summarise(runs[a.build], limits, a.threads)
    if a.baseline:
        add_baseline(rows, summarise(runs[a.baseline], limits, a.threads))
    text = markdown(rows, limits, a)
    print(text if a.markdown else json.dumps({"limits": limits, "rows": rows}, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"limits": limits, "rows": rows, "command": sys.argv}, f, indent=1)
    if a.svg:
        with open(a.svg, "w") as f:
            f.write(svg(rows, limits, max(a.threads)))


if __name__ == "__main__":
    main()
