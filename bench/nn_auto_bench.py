#!/usr/bin/python3
"""`ptreg icp --nn auto` after `ptreg index --tune` against each single method (issue 17's
target: auto never slower than the best single method by more than 5%), on the blob
("synth"), aircraft (40k/30k) and bunny cases of bench/icp_bench.py: 30 iterations, tol
0, 2 threads; every round runs each method once (`--repeat 3`), the order rotated each
round; medians of all timings.

  /usr/bin/python3 bench/nn_auto_bench.py [PTREG] [ROUNDS]     # build/ptreg, 5
"""
import json, os, subprocess, sys, tempfile
import numpy as np
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import icp_bench as B

ptreg = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(HERE), "build", "ptreg")
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
work = tempfile.mkdtemp(prefix="ptreg-nn-auto-")
class A: pass
args = A(); args.ptreg = ptreg
methods = ["auto", "kdtree", "delaunay-pnnopt", "delaunay-pnn"]
rows = []
for key in ["synth", "aircraft", "bunny"]:
    case, why = B.CASES[key](args, work)
    if case is None:
        print(key, why); continue
    tgt = B.load_points(case["target"])
    max_dist = float(np.linalg.norm(tgt.max(0) - tgt.min(0)))
    init = os.path.join(work, "init_%s.txt" % key); B.write_matrix(init, case["init"])
    pti = os.path.join(work, key + ".pti")
    t = json.loads(subprocess.run([ptreg, "index", case["target"], "-o", pti, "--tune", "--threads", "2", "--json"],
                                  capture_output=True, text=True, check=True).stdout)["tune"]
    times = {m: [] for m in methods}; ran = {}
    for r in range(rounds):
        order = methods[r % len(methods):] + methods[:r % len(methods)]
        for m in order:
            d = json.loads(subprocess.run([ptreg, "icp", case["source"], "--target-index", pti, "--nn", m,
                "--max-iter", "30", "--tol", "0", "--max-dist", repr(max_dist), "--init", init,
                "--threads", "2", "--repeat", "3", "--json"], capture_output=True, text=True, check=True).stdout)
            times[m] += d.get("times_ms", [d["time_ms"]]); ran[m] = (d["nn"], d["nn_auto"])
    med = {m: float(np.median(v)) for m, v in times.items()}
    best = min(med[m] for m in methods[1:])
    rows.append((case["name"], t, med, ran, best))
    print(case["name"], "tune:", t["choice"], {k: round(v["median_ms"], 1) for k, v in t["methods"].items()},
          "| icp medians:", {m: round(v, 1) for m, v in med.items()}, "auto ran", ran["auto"],
          "auto/best %.3f" % (med["auto"] / best), flush=True)
print()
print("| case | tune chose (tune medians, ms) | auto ran | auto | kdtree | delaunay-pnnopt | delaunay-pnn | auto / best single |")
print("|---|---|---|---:|---:|---:|---:|---:|")
for name, t, med, ran, best in rows:
    tm = ", ".join("%s %.1f%s" % (k, v["median_ms"], "" if v["runs"] else "*") for k, v in t["methods"].items())
    print("| %s | %s (%s) | %s | %.1f | %.1f | %.1f | %.1f | %.3f |" % (name, t["choice"], tm, ran["auto"][0],
          med["auto"], med["kdtree"], med["delaunay-pnnopt"], med["delaunay-pnn"], med["auto"] / best))
