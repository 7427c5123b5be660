"""The orientation-map step of bench/gpu/run.sh: the GPU's and the CPU's runs of
`ptreg batch ATOMS --device D --json` side by side (wall, registration, atoms a
second, launches and bytes), and how many atoms agree within 0.01 degrees (the
parity suite's measure), when numpy is there.
    python3 bench/gpu/apt_summary.py SCRATCH GPU_BACKEND"""
import json
import os
import sys

scratch, gpu = sys.argv[1], sys.argv[2]


def load(name):
    try:
        return json.load(open(os.path.join(scratch, "apt_%s.json" % name)))
    except (OSError, ValueError):
        return None


runs = [(name, load(name)) for name in (gpu, "cpu")]
print("| device | atoms | wall ms | registration ms | atoms/s | launches | bytes to / from |")
print("|---|---:|---:|---:|---:|---:|---|")
for name, j in runs:
    if not j:
        print("| %s | (no result) | | | | | |" % name)
        continue
    wall = j.get("total_ms", 0.0)
    print("| %s | %d | %.0f | %.0f | %.0f | %s | %s / %s |" % (
        j.get("device", name), j.get("atoms", 0), wall, j.get("register_ms", 0.0),
        j.get("atoms", 0) / (wall / 1e3) if wall else 0.0, j.get("device_launches", "-"),
        j.get("device_bytes_to", "-"), j.get("device_bytes_from", "-")))
if all(j for _, j in runs):
    print()
    print("GPU/CPU wall: %.3f" % (runs[0][1]["total_ms"] / runs[1][1]["total_ms"]))
try:
    import numpy as np
    a = np.load(os.path.join(scratch, "apt_%s.npy" % gpu)).astype(float)
    b = np.load(os.path.join(scratch, "apt_cpu.npy")).astype(float)
    chord = np.minimum(np.linalg.norm(a[:, :4] - b[:, :4], axis=1), np.linalg.norm(a[:, :4] + b[:, :4], axis=1))
    angle = 4 * np.degrees(np.arcsin(np.minimum(chord / 2, 1)))
    both_nan = np.isnan(a[:, 0]) & np.isnan(b[:, 0])
    close = int(((angle <= 0.01) | both_nan).sum())
    print()
    print("atoms within 0.01 deg of the CPU's: %d of %d (%.2f%%)" % (close, len(a), 100.0 * close / len(a)))
except (ImportError, OSError, ValueError) as e:
    print()
    print("(agreement not measured: %s)" % e)
