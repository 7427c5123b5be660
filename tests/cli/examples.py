#!/usr/bin/env python3
"""Every example of the documentation, run and checked (issue 47).

The examples are the command lines in README.md's and docs/*.md's code blocks
(not the C or Python ones: README's Python block runs in python/tests/test_readme.py),
the man page's EXAMPLES and the description of every `ptreg help CMD`.
EXAMPLES below says, for each, how it runs: in one temporary folder, in the
table's order (so that a synth line makes the files the next lines name), with
`ptreg` on PATH, after its set-up (data from the shared folder linked under
the names the example uses), and what it must give: exit 0, the outputs it
names in their format, and the pose against the truth where there is one.
An example that cannot run here says why (LISTED). An example found in the
documents but in neither table fails the test, as does a table entry that no
document holds any more: a new example cannot slip by untested.

    examples.py list                         the examples found, one a line
    examples.py coverage PTREG               only whether each is in the table (and each entry documented)
    examples.py run PTREG DATA WORK          run them; exit 1 on a failure,
                                             77 when a data example was skipped

Sizes: the lines run as written where they are quick; where one would take
minutes on a 2-core machine (synth --sequence 300 and its track, tune --size
20000, pfh on 30,000 points) a smaller run of the same command is made, and
PTREG_EXAMPLES_FULL=1 runs the line as written.
"""
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

from ptreg_checks import CheckFailed, compare, field, finite

PTREG = "ptreg"  # the binary under test (run_all)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# a command line: ptreg first, or after a pipe, mpirun's options or python -m
INVOKE = re.compile(r"(^(\S*/)?|\|\s*|^mpirun\s.*?|-m\s+)ptreg\s+[a-z]")


def normal(line):
    """The command of a documentation line: the trailing comment and extra blanks gone."""
    line = re.split(r"\s+#\s", " " + line.strip())[0]
    return " ".join(line.split())


def from_markdown(path):
    """(place, command) of each command line in the file's code blocks but C, Python and JSON."""
    found, lang, inside = [], "", False
    with open(path) as f:
        for i, line in enumerate(f, 1):
            m = re.match(r"\s*```(\w*)", line)
            if m:
                inside, lang = not inside, m.group(1)
                continue
            if inside and lang not in ("c", "python", "json") and INVOKE.search(line.strip()):
                found.append((f"{os.path.relpath(path, ROOT)}:{i}", normal(line)))
    return found


def from_man(path):
    """(place, command) of each line of the man page's EXAMPLES (roff's \\- unescaped)."""
    found, inside = [], False
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if line.startswith(".SH"):
                inside = line.strip() == ".SH EXAMPLES"
            elif inside and not line.startswith(".") and INVOKE.search(line.replace("\\-", "-").strip()):
                found.append((f"{os.path.relpath(path, ROOT)}:{i}", normal(line.replace("\\-", "-"))))
    return found


def from_help(ptreg):
    """(place, command) of each example in the commands' help: the description's command lines."""
    listing = subprocess.run([ptreg, "--help"], capture_output=True, text=True, check=True).stdout
    commands = [c for c in re.findall(r"^  ([a-z0-9]+) ", listing.split("commands:")[1], re.M)
                if c not in ("help", "version")]
    found = []
    for cmd in commands:
        text = subprocess.run([ptreg, "help", cmd], capture_output=True, text=True, check=True).stdout
        # after the usage lines and the summary, before the options
        description = text.split("\n\noptions:")[0].split("\n\n", 2)[2:]
        for line in "\n".join(description).splitlines():
            if INVOKE.search(line.strip()):
                found.append((f"ptreg help {cmd}", normal(line)))
    return found


def all_examples(ptreg):
    docs = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    found = []
    for path in docs:
        found += from_markdown(path)
    return found + from_man(os.path.join(ROOT, "docs", "ptreg.1")) + from_help(ptreg)


# ---- checks: each raises CheckFailed with the reason -------------------------------------------------------------

def rotation_deg(a, b):
    r = np.asarray(a)[:3, :3] @ np.asarray(b)[:3, :3].T
    return math.degrees(math.acos(max(-1.0, min(1.0, (np.trace(r) - 1.0) / 2.0))))  # nan-ok: a clamp; NaN stays


def read_matrix(path):
    rows = [line.split() for line in open(path) if line.strip() and not line.startswith("#")]
    m = np.array([[finite(v, path) for v in row] for row in rows[:4]])
    if m.shape != (4, 4):
        raise CheckFailed(f"{path}: not a 4 x 4 transform")
    return m


def result_pose(out):
    """The transform an icp/emicp/register run printed: its JSON's, or the human lines after 'transformation'."""
    text = out.strip()
    if text.startswith("{"):
        return np.array([[finite(v, "transformation") for v in row] for row in json.loads(text)["transformation"]])
    lines = out.split("transformation (SOURCE -> TARGET):", 1)
    if len(lines) < 2:
        raise CheckFailed("no transformation printed")
    rows = [[finite(v, "transformation") for v in line.split()] for line in lines[1].strip().splitlines()[:4]]
    return np.array(rows)


def pose_near(truth, rot_deg, trans, pose=None):
    """The pose printed (or pose(work)) within rot_deg degrees and trans of the 4 x 4 in file truth
    (a function of the folder for a truth computed from data)."""
    def check(work, out):
        t = truth(work) if callable(truth) else read_matrix(os.path.join(work, truth))
        p = pose(work) if pose else result_pose(out)
        compare(rotation_deg(p, t), "<", rot_deg, what="rotation error vs the truth (deg)")
        compare(float(np.linalg.norm(p[:3, 3] - t[:3, 3])), "<", trans, what="translation error vs the truth")
    return check


MAGIC = {
    "ply": b"ply\n", "npy": b"\x93NUMPY", "nrrd": b"NRRD", "vtk": b"# vtk DataFile", "svg": b"<", "html": b"<!DOCTYPE html",
}


def outputs(*names):
    """Each file there, non-empty, in the format its extension names."""
    def check(work, out):
        for name in names:
            path = os.path.join(work, name)
            if not os.path.isfile(path) or os.path.getsize(path) == 0:
                raise CheckFailed(f"{name}: not written, or empty")
            head = open(path, "rb").read(4096)
            ext = name.rsplit(".", 1)[-1]
            if ext == "pcd":
                ok = b"VERSION" in head and b"DATA " in head
            elif ext == "svg":
                ok = b"<svg" in head
            elif ext in ("csv", "txt"):  # numbers, after comments and a header of names
                lines = [line for line in head.splitlines()[:-1] if not line.startswith(b"#")]
                if lines and re.fullmatch(rb"[A-Za-z_][A-Za-z0-9_]*([, \t]+[A-Za-z_][A-Za-z0-9_]*)*", lines[0]):
                    lines = lines[1:]
                ok = bool(lines) and all(re.fullmatch(rb"[-+0-9.eE, \t]*", line) for line in lines)
            else:
                ok = head.startswith(MAGIC.get(ext, b""))
            if not ok:
                raise CheckFailed(f"{name}: not a .{ext} file (it begins {head[:24]!r})")
    return check


def json_has(key, op, bound):
    def check(work, out):
        compare(field(json.loads(out), key), op, bound, what=key)
    return check


def converged(work, out):
    if json.loads(out).get("converged") is not True:
        raise CheckFailed("converged: not true")


def says(pattern):
    def check(work, out):
        if not re.search(pattern, out, re.M):
            raise CheckFailed(f"stdout lacks /{pattern}/")
    return check


def tum_near(traj, truth, rot_deg, trans):
    """A trajectory within the bounds of the truth, every frame (tests/cli/track_compare.py)."""
    def check(work, out):
        run = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "cli", "track_compare.py"),
                              os.path.join(work, traj), os.path.join(work, truth), "--max-rot", str(rot_deg),
                              "--max-trans", str(trans)], capture_output=True, text=True)
        if run.returncode != 0:
            raise CheckFailed(f"{traj} against {truth}: {run.stdout.strip().splitlines()[-1] if run.stdout else ''} "
                              f"{run.stderr.strip()[-300:]}")
    return check


def demo_truth(work):
    """emicp/Qnew5032 = A P + b, index-matched: Kabsch on the pairs (docs of the shared data)."""
    p = np.loadtxt(os.path.join(work, "P5032.txt"))
    q = np.loadtxt(os.path.join(work, "Qnew5032.txt"))
    pc, qc = p - p.mean(0), q - q.mean(0)
    u, _, vt = np.linalg.svd(qc.T @ pc)
    d = np.diag([1, 1, np.sign(np.linalg.det(u @ vt))])
    t = np.eye(4)
    t[:3, :3] = u @ d @ vt
    t[:3, 3] = q.mean(0) - t[:3, :3] @ p.mean(0)
    return np.linalg.inv(t)  # Qnew onto P


def scan_poses(work):
    """scan_k in scan_0's frame from synth's truths (each scan onto the model)."""
    t = [read_matrix(os.path.join(work, f"scan_truth_{k}.txt")) for k in range(len(VIEWS))]
    return [np.linalg.inv(t[0]) @ tk for tk in t]


def multiway_poses(work, out):
    rows = [line.split() for line in open(os.path.join(work, "poses.txt")) if line.strip() and not line.startswith("#")]
    poses = [np.array([[finite(v, "poses.txt") for v in r] for r in rows[4 * k:4 * k + 4]]) for k in range(len(VIEWS))]
    for k, (p, t) in enumerate(zip(poses, scan_poses(work))):
        # the aircraft from multiway.sh's five sides (with three, one came back mirrored): 0.10 to 0.21 deg
        compare(rotation_deg(p, t), "<", 1.0, what=f"multiway: scan {k}'s rotation error (deg)")
        compare(float(np.linalg.norm(p[:3, 3] - t[:3, 3])), "<", 0.05, what=f"multiway: scan {k}'s translation error")


# multiway's scans: tests/cli/multiway.sh's views around the aircraft
VIEWS = ["5,0,3", "1.5,4.8,3", "-4,2.9,3", "-4,-2.9,3", "1.5,-4.8,3"]


def bunny_guess(work):
    """bun045 onto bun000: bun.conf's pose (x_world = R(q)^T x_scan + t; bun000's is the identity), and a guess
    3 degrees off it."""
    for line in open(os.path.join(os.environ["DATA"], "bunny", "bun.conf")):
        f = line.split()
        if len(f) == 9 and f[0] == "bmesh" and f[1] == "bun045.ply":
            t, (x, y, z, w) = [float(v) for v in f[2:5]], [float(v) for v in f[5:9]]
    r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    truth = np.eye(4)
    truth[:3, :3], truth[:3, 3] = r.T, t
    a = math.radians(3.0)
    turn = np.eye(4)
    turn[:3, :3] = [[math.cos(a), 0, math.sin(a)], [0, 1, 0], [-math.sin(a), 0, math.cos(a)]]
    np.savetxt(os.path.join(work, "bunny_truth.txt"), truth)
    np.savetxt(os.path.join(work, "guess.txt"), truth @ turn)


def all_of(*checks):
    def check(work, out):
        for c in checks:
            c(work, out)
    return check


def track_error_under(bound_deg):
    """track --truth's own summary: the largest rotation error, in degrees."""
    def check(work, out):
        compare(field(json.loads(out), "summary.error.rotation_deg_max"), "<", bound_deg,
                "track --truth: summary.error.rotation_deg_max")
    return check


def help_html_claim(work, out):
    """README's list of the commands that take --html is the list of those whose help has it."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    m = re.search(r"The commands that register or compute on geometry \(([^)]*)\)\s+take `--html FILE`", readme)
    if not m:
        raise CheckFailed("README.md: the sentence listing the commands that take --html is gone")
    claimed = set(re.findall(r"`([a-z0-9]+)`", m.group(1)))
    have = set()
    listing = subprocess.run([PTREG, "--help"], capture_output=True, text=True, cwd=work).stdout
    for cmd in re.findall(r"^  ([a-z0-9]+) ", listing.split("commands:")[1], re.M):
        if cmd in ("help", "version"):
            continue
        if "--html FILE" in subprocess.run([PTREG, "help", cmd], capture_output=True, text=True).stdout:
            have.add(cmd)
    if claimed != have:
        raise CheckFailed(f"README.md says {sorted(claimed)} take --html; their help says {sorted(have)}")


# ---- the table ----------------------------------------------------------------------------------------------------
# (example as the documents write it, what to do). What to do is a dict:
#   setup: shell lines run first (DATA is the shared data folder);  run: the line run instead (a smaller one, or
#   with a file the generic name stands for), full: with PTREG_EXAMPLES_FULL=1 the example as written runs;
#   check: the outcome;  data / viewer / mpi: what it needs;  listed: why it does not run here.
# batch's orientation maps take 15 s on README's al.pos (12 nm box, 52,000 atoms) on 2 cores: a 6 nm box
SMALL_AL = "ptreg synth --shape apt-polycrystal -o al_small.pos --truth-out al_small.npy --box 6 >/dev/null"
BATCH_FULL = "ptreg batch al.pos -o map.ply --ranges al.rrng --ion Al --json"
SCAN = "ptreg synth --model model.ply -o scan.ply --truth-out truth.txt"
# cpd's and icp --scale's inputs: two aircraft scans (one bent), and a copy 1.25 times the size
CPD_SHAPES = ("ptreg synth --shape aircraft -o shape_a.ply --points 1500 --seed 3 >/dev/null && "
              "ptreg synth --shape aircraft -o shape_b.ply --points 1500 --seed 4 --max-angle 3 >/dev/null && "
              "ptreg synth --shape aircraft -o small.ply --points 1500 --seed 5 --max-angle 0 >/dev/null && "
              "ptreg convert small.ply -o small.xyz >/dev/null && "
              "/usr/bin/python3 -c 'import numpy as n; "
              "n.savetxt(\"large.xyz\", 1.25 * n.loadtxt(\"small.xyz\")[:, :3], fmt=\"%.9g\")' && "
              "ptreg convert large.xyz -o large.ply >/dev/null")
SEQ_SMALL = ("ptreg synth --sequence 30 --points 3000 --model model_seq.ply --frames-dir frames "
             "--truth-trajectory-out truth_seq.txt")
EXAMPLES = [
    (SCAN, dict(check=outputs("model.ply", "scan.ply", "truth.txt"))),
    # point-to-point on synth's default scan (30 degrees off): 0.15 deg, 0.0004 after 174 iterations; bound ~3x
    ("ptreg icp scan.ply model.ply --truth truth.txt", dict(check=pose_near("truth.txt", 0.5, 0.005))),
    ("ptreg synth --shape apt-polycrystal -o al.pos --truth-out truth.npy", dict(check=outputs("al.pos", "truth.npy"))),
    ("ptreg synth --shape apt-polycrystal -o al.pos --truth-out truth.npy --grains 12 --box 20",
     dict(run="ptreg synth --shape apt-polycrystal -o al12.pos --truth-out truth12.npy --grains 12 --box 20",
          check=outputs("al12.pos", "truth12.npy"))),
    # PCL's ICP test: its answer to 1e-3 (the data's README); ptreg reaches it to 1e-6
    ("ptreg icp bun0.pcd bun4.pcd --max-iter 50 --max-dist 0.05 -o moved.ply --json",
     dict(data=True, setup=["ln -s $DATA/pcl/bun0.pcd $DATA/pcl/bun4.pcd ."],
          check=all_of(pose_near(lambda w: np.array([[0.8806, 0.03648, -0.4724, 0.03453],
                                                     [-0.02354, 0.9992, 0.03326, -0.001519],
                                                     [0.4732, -0.01817, 0.8808, 0.04116], [0, 0, 0, 1]]), 0.1, 1e-3),
                       converged, outputs("moved.ply")))),
    ("ptreg index model.ply -o model.pti", dict(check=outputs("model.pti"))),
    ("ptreg icp scan.ply --target-index model.pti", dict(check=pose_near("truth.txt", 0.5, 0.005))),
    # the LiDAR pair (lidar/T_target_source.txt): 0.036 deg / 0.020 m, 0.23 / 0.009, 0.14 / 0.020
    ("ptreg icp src.ply tgt.ply --method plane --max-dist 0.5 --normal-k 30 --normal-radius 1",
     dict(data=True, setup=["ln -s $DATA/lidar/source.ply src.ply", "ln -s $DATA/lidar/target.ply tgt.ply",
                            "cp $DATA/lidar/T_target_source.txt lidar_truth.txt"],
          check=pose_near("lidar_truth.txt", 0.4, 0.1))),
    ("ptreg icp src.ply tgt.ply --method gicp --voxel 0.25 --max-dist 1", dict(data=True, check=pose_near(
        "lidar_truth.txt", 1.0, 0.1))),
    ("ptreg icp src.ply tgt.ply --method plane --kernel huber --kernel-scale 0.1",
     dict(data=True, check=pose_near("lidar_truth.txt", 1.0, 0.1))),
    # the indoor fragments, truth the identity (itself good to about a degree: tests/test_global.c's bounds)
    ("ptreg register frag_a.pcd frag_b.pcd -o a_on_b.pcd",
     dict(data=True, setup=["ln -s $DATA/features/cloud_bin_0.pcd frag_a.pcd",
                            "ln -s $DATA/features/cloud_bin_1.pcd frag_b.pcd", "printf '1 0 0 0\\n0 1 0 0\\n0 0 1 0\\n0 0 0 1\\n' >identity.txt"],
          check=all_of(pose_near("identity.txt", 3.0, 0.1), outputs("a_on_b.pcd")))),
    # the approach and its tracking: the README's target is every frame within 0.05 deg of the truth
    ("ptreg synth --sequence 300 --model model.ply --frames-dir frames --truth-trajectory-out truth.txt",
     dict(run=SEQ_SMALL, full="ptreg synth --sequence 300 --model model_seq.ply --frames-dir frames "
                              "--truth-trajectory-out truth_seq.txt",
          check=outputs("model_seq.ply", "frames/frame_00000.ply", "truth_seq.txt"))),
    ("ptreg track model.ply --frames frames -o trajectory.txt --json",
     dict(run="ptreg track model_seq.ply --frames frames -o trajectory.txt --json",
          check=tum_near("trajectory.txt", "truth_seq.txt", 0.05, 0.05))),
    ("ptreg track model.ply --frames frames -o trajectory.txt",
     dict(run="ptreg track model_seq.ply --frames frames -o trajectory2.txt",
          check=tum_near("trajectory2.txt", "truth_seq.txt", 0.05, 0.05))),
    ("ptreg track model.ply --frames frames -o trajectory.txt --json --truth truth.txt",
     dict(run="ptreg track model_seq.ply --frames frames -o trajectory3.txt --json --truth truth_seq.txt",
          check=all_of(tum_near("trajectory3.txt", "truth_seq.txt", 0.05, 0.05), track_error_under(0.05)))),
    # the tracker's trajectory against the truth: ATE and RPE (eval's help)
    ("ptreg eval trajectory.txt truth.txt --align none",
     dict(run="ptreg eval trajectory.txt truth_seq.txt --align none", check=says(r"^  ATE translation +rmse "))),
    ("ptreg eval trajectory.txt truth.txt --align none --delta 1 --delta-unit s --json",
     dict(run="ptreg eval trajectory.txt truth_seq.txt --align none --delta 1 --delta-unit s --json",
          check=all_of(json_has("ate.translation.rmse", "<", 0.01), json_has("rpe.pairs", ">", 0)))),
    ("ptreg multiway scan_*.ply -o poses.txt --merged all.ply",
     dict(setup=[f"ptreg synth --shape aircraft -o scan_{k}.ply --points 4000 --view {v} --noise 0.002 --max-angle 180 "
                 f"--max-translation 0.5 --truth-out scan_truth_{k}.txt --seed {k + 3} >/dev/null"
                 for k, v in enumerate(VIEWS)],
          check=all_of(multiway_poses, outputs("poses.txt", "all.ply")))),
    # LiDAR odometry on a generated drive (a short one here; bench/odometry_bench.py runs 1,000 frames)
    ("ptreg synth --lidar-sequence 1000 --frames-dir seq",
     dict(run="ptreg synth --lidar-sequence 30 --beams 32 --azimuth-step 0.4 --frames-dir seq",
          check=outputs("seq/poses.txt", "seq/velodyne/000029.bin"))),
    ("ptreg odometry --frames seq/velodyne -o poses.txt --poses kitti", dict(check=outputs("poses.txt"))),
    ("ptreg eval poses.txt seq/poses.txt --align none", dict(check=says(r"ATE translation"))),
    # localization in a prior map in UTM (short drives here; bench/localize_bench.py maps 10^8 points)
    ("ptreg synth --lidar-sequence 900 --frames-dir mapping --lidar-map map.las --origin 500000,5400000,100",
     dict(run="ptreg synth --lidar-sequence 40 --beams 16 --azimuth-step 0.8 --frames-dir mapping --lidar-map map.las "
              "--origin 500000,5400000,100", check=outputs("map.las"))),
    ("ptreg synth --lidar-sequence 300 --frames-dir drive --lane -1.5 --scan-seed 7 --origin 500000,5400000,100 "
     "--truth-trajectory-out drive_truth.txt",
     dict(run="mkdir -p drive && ptreg synth --lidar-sequence 25 --beams 16 --azimuth-step 0.8 --frames-dir drive "
              "--lane -1.5 --scan-seed 7 --origin 500000,5400000,100 --truth-trajectory-out drive_truth.txt",
          check=outputs("drive_truth.txt", "drive/velodyne/000024.bin"))),
    ("ptreg localize map.las --frames drive/velodyne --init 500030,5399998.5,100.1 --save-tiles map.ptm "
     "-o drive_poses.txt",
     dict(check=all_of(outputs("drive_poses.txt", "map.ptm"), says(r"tracked 25, recovered 0, lost 0")))),
    ("ptreg eval drive_poses.txt drive_truth.txt --align none", dict(check=says(r"ATE translation"))),
    ("producer | ptreg track model.pti - -o trajectory.txt",
     dict(listed="a producer program streaming PTF1 frames: tests/cli/track.sh runs the stream (track_stream.py)")),
    # EM-ICP on a whole-body shape: 0.24 deg, 0.025 (a one-sided scan: the translation's bias); bounds 2x
    ("ptreg synth --shape aircraft --model aircraft.ply --model-points 10000 -o aircraft_scan.ply --points 5000 "
     "--truth-out aircraft_truth.txt", dict(check=outputs("aircraft.ply", "aircraft_scan.ply", "aircraft_truth.txt"))),
    ("ptreg emicp aircraft_scan.ply aircraft.ply --truth aircraft_truth.txt", dict(check=pose_near("aircraft_truth.txt", 0.5, 0.05))),
    # Coherent Point Drift: a bent aircraft (README's lines; tests/cli/cpd.sh holds it to pycpd)
    ("ptreg cpd shape_a.ply shape_b.ply --transform deformable --beta 0.05 --w 0.05 -o a_bent.ply",
     dict(setup=[CPD_SHAPES], run="ptreg cpd shape_a.ply shape_b.ply --transform deformable --beta 0.5 --w 0.05 "
          "--max-iter 8 -o a_bent.ply --json", check=all_of(outputs("a_bent.ply"), json_has("iterations", ">", 0)))),
    ("ptreg cpd small.ply large.ply --transform similarity -t T.txt",
     dict(setup=[CPD_SHAPES], check=all_of(outputs("T.txt"), says(r"^  scale 1\.2")))),
    ("ptreg icp scaled_scan.ply model.ply --scale",
     dict(setup=[CPD_SHAPES], run="ptreg icp large.ply small.ply --scale --json",
          check=json_has("rmse", "<", 1e-4))),
    # the GPU study's demo pair, A a 91.8 degree turn: fp16 storage reaches 0.01 deg
    ("ptreg emicp Qnew5032.txt P5032.txt --preset tamaki --precision fp16 --json",
     dict(data=True, setup=["ln -s $DATA/emicp/Qnew5032.txt $DATA/emicp/P5032.txt ."],
          check=pose_near(demo_truth, 0.2, 0.002))),
    ("ptreg harris3d tooth_103x94x161_uint8.raw -o keypoints.ply",
     dict(data=True, setup=["ln -s $DATA/volumes/tooth_103x94x161_uint8.raw ."], check=outputs("keypoints.ply"))),
    ("ptreg harris3d ct.nrrd --window 3 --top 100 --scores scores.nrrd --json",
     dict(data=True, setup=["{ printf 'NRRD0004\\ntype: uchar\\ndimension: 3\\nsizes: 103 94 161\\nencoding: raw\\n\\n'; "
                            "cat $DATA/volumes/tooth_103x94x161_uint8.raw; } >ct.nrrd"],
          check=all_of(json_has("keypoints", "==", 100), outputs("scores.nrrd")))),
    ("ptreg normals scan.ply --k 20 -o scan_n.pcd", dict(check=outputs("scan_n.pcd"))),
    ("ptreg fpfh scan_n.pcd --radius 0.15 -o fpfh.pcd", dict(check=outputs("fpfh.pcd"))),
    ("ptreg fpfh scan_n.pcd --k 30 --convention open3d -o f.npy", dict(check=outputs("f.npy"))),
    ("ptreg pfh scan_n.pcd --k 30 -o pfh.csv --json",
     dict(setup=["ptreg convert scan_n.pcd --voxel 0.05 -o scan_small.pcd >/dev/null"],
          run="ptreg pfh scan_small.pcd --k 30 -o pfh.csv --json", full="ptreg pfh scan_n.pcd --k 30 -o pfh.csv --json",
          check=outputs("pfh.csv"))),
    # the 2-D shooting test: the landmarks end within 1% of where they started from the target
    ("ptreg lddmm template.vtk target.vtk --sigma 0.3 -o result.vtk",
     dict(data=True, setup=["ln -s $DATA/landmarks/shooting_test_2d_template.vtk template.vtk",
                            "ln -s $DATA/landmarks/shooting_test_2d_target.vtk target.vtk"],
          check=outputs("result.vtk"))),
    ("ptreg lddmm a.csv b.csv --preset mtl --json",
     dict(setup=["printf 'x,y,z\\n0,0,0\\n2,0,0\\n0,2,0\\n0,0,2\\n1,1,1\\n' >a.csv",
                 "printf 'x,y,z\\n0.2,0,0\\n2.1,0.1,0\\n0,2.2,0\\n0.1,0,2\\n1,1.2,1\\n' >b.csv"],
          check=json_has("avg_distance_after", "<", 0.05))),
    ("ptreg warp result.vtk mesh_vertices.ply -o warped.ply",
     dict(data=True, setup=["ptreg convert template.vtk -o mesh_vertices.ply >/dev/null"], check=outputs("warped.ply"))),
    ("ptreg batch al.pos -o map.ply --ranges al.rrng --ion Al --json",
     dict(run="ptreg batch al_small.pos -o map.ply --ranges al.rrng --ion Al --json", full=BATCH_FULL,
          setup=[SMALL_AL, "printf '[Ions]\\nNumber=2\\nIon1=Al\\nIon2=Mg\\n[Ranges]\\nNumber=2\\n"
                 "Range1=26.5 27.5 Vol:0.01661 Name:Al Color:FF0000\\nRange2=23.5 24.5 Vol:0.02325 Name:Mg "
                 "Color:00FF00\\n' >al.rrng"],
          check=all_of(json_has("selected", ">", 1000), outputs("map.ply")))),
    ("ptreg batch al.pos -o map.npy --motif-points 18 --grain-radius 1",
     dict(run="ptreg batch al_small.pos -o map.npy --motif-points 18 --grain-radius 1",
          full="ptreg batch al.pos -o map.npy --motif-points 18 --grain-radius 1", check=outputs("map.npy"))),
    ("ptreg batch al.pos -o map.ply --motif-points 18 --grain-radius 1 --json",
     dict(run="ptreg batch al_small.pos -o map18.ply --motif-points 18 --grain-radius 1 --json",
          full="ptreg batch al.pos -o map18.ply --motif-points 18 --grain-radius 1 --json", check=outputs("map18.ply"))),
    ("mpirun -n 4 ptreg batch recon.epos --ranges r.rrng --ion Al -o map.npy",
     dict(listed="4 MPI ranks on an .epos: tests/cli/batch_mpi.sh runs batch under mpirun and compares the bytes")),
    # the Stanford pair from 3 degrees off bun.conf's pose: 0.05 deg / 0.2 mm from it (bun.conf's own accuracy)
    ("ptreg icp bun045.ply bun000.ply --init guess.txt --max-dist 0.005 --json",
     dict(data=True, setup=["ln -s $DATA/bunny/bun045.ply $DATA/bunny/bun000.ply .", bunny_guess],
          check=pose_near("bunny_truth.txt", 0.5, 0.002))),
    ("ptreg icp frame.ply --target-index model.pti --device cuda --repeat 100 --json",
     dict(listed="a CUDA GPU (the device machine: bench/gpu/run.sh; here tests/cuda_standin runs that path)")),
    ("ptreg emicp Qnew5032.txt P5032.txt --preset tamaki --json", dict(data=True, check=pose_near(demo_truth, 0.2, 0.002))),
    ("ptreg harris3d tooth_103x94x161_uint8.raw --window 3 --relative 1e-4 -o keypoints.ply",
     dict(data=True, check=outputs("keypoints.ply"))),
    ("ptreg harris3d ct.nrrd --top 100 --min-distance 4 --scores scores.nrrd", dict(data=True, check=outputs("scores.nrrd"))),
    ("mpirun -n 4 ptreg batch big.epos -o map.npy",
     dict(listed="4 MPI ranks on an .epos: tests/cli/batch_mpi.sh runs batch under mpirun and compares the bytes")),
    ("ptreg batch --pairs many.ptpairs -o poses.npy",
     dict(setup=["/usr/bin/python3 $TESTS/cli/batch_data.py . >/dev/null", "cp ragged.ptpairs many.ptpairs"],
          check=outputs("poses.npy"))),
    ("ptreg convert cloud.pcd -o cloud.ply",
     dict(data=True, setup=["ln -s $DATA/pcl/milk.pcd cloud.pcd"], check=outputs("cloud.ply"))),
    ("ptreg info cloud.ply", dict(data=True, check=says(r"13704 points"))),
    ("ptreg devices", dict(check=says(r"cpu"))),
    ("ptreg tune --size 20000 --plot tune.svg",
     dict(run="ptreg tune --size 2000 --plot tune.svg", full="ptreg tune --size 20000 --plot tune.svg",
          check=outputs("tune.svg"))),
    ("ptreg icp scan.ply model.ply --html report.html", dict(viewer=True, check=outputs("report.html"))),
    ("ptreg view a.ply b.ply --transform T.txt --distance -o view.html",
     dict(viewer=True, setup=["cp scan.ply a.ply", "cp model.ply b.ply", "cp truth.txt T.txt"],
          check=outputs("view.html"))),
    ("ptreg icp scan.ply model.ply -t result.txt", dict(check=all_of(outputs("result.txt"), pose_near(
        "truth.txt", 0.5, 0.005, pose=lambda w: read_matrix(os.path.join(w, "result.txt")))))),
    ("ptreg view scan.ply model.ply --transform result.txt --distance -o view.html",
     dict(viewer=True, check=outputs("view.html"))),
    ("ptreg icp frame.ply --target-index model.pti --device cuda --repeat 100",
     dict(listed="a CUDA GPU (the device machine: bench/gpu/run.sh; here tests/cuda_standin runs that path)")),
    ("ptreg help icp", dict(check=all_of(says(r"^usage: ptreg icp"), help_html_claim))),
    # Open3D's tools (tests/cli/tools.sh checks their answers against Open3D's)
    ("ptreg evaluate scan.ply model.ply --transform truth.txt --max-dist 0.05 --correspondences pairs.txt",
     dict(check=all_of(says(r"fitness"), outputs("pairs.txt")))),
    ("ptreg correspond scan.ply model.ply --pairs pairs.txt --ransac-dist 0.02 -t T.txt",
     dict(check=pose_near("truth.txt", 0.1, 0.001, pose=lambda w: read_matrix(os.path.join(w, "T.txt"))))),
    ("ptreg correspond scan.ply model.ply --pairs pairs.txt --ransac-dist 0.05 -t T.txt",
     dict(run="ptreg correspond scan.ply model.ply --pairs pairs.txt --ransac-dist 0.05 -t T5.txt",
          check=pose_near("truth.txt", 0.1, 0.001, pose=lambda w: read_matrix(os.path.join(w, "T5.txt"))))),
    ("ptreg evaluate scan.ply model.ply --transform T.txt --max-dist 0.02 --json",
     dict(check=json_has("fitness", ">", 0.5))),
    ("ptreg filter scan.ply --statistical 2 --k 20 -o clean.ply", dict(check=outputs("clean.ply"))),
    ("ptreg filter scan.ply --statistical 2.0 --k 20 -o clean.ply", dict(check=outputs("clean.ply"))),
    ("ptreg filter scan.ply --radius 0.05 --min-neighbors 16 -o clean.ply", dict(check=outputs("clean.ply"))),
    ("ptreg filter scan.ply --random 0.1 --seed 7 -o sample.ply", dict(check=outputs("sample.ply"))),
    ("~/ptreg-env/bin/python -m ptreg icp scan.ply model.ply",
     dict(listed="a pip-installed venv: tests/cli/pip_install.sh installs one and runs `python -m ptreg`")),
    ("ptreg convert tile.las --classes 2 --voxel 0.5 -o ground.ply",
     dict(listed="a classified LAS tile (no such file in the shared data): tests/cli/data.sh reads LAS classes")),
]


def coverage(found):
    """The failures of the table against the examples found: one not in the table, or an entry no document holds."""
    table = {cmd for cmd, _ in EXAMPLES}
    failures = [f"{where}: example neither run nor listed in tests/cli/examples.py: {cmd}"
                for where, cmd in found if cmd not in table]
    documented = {cmd for _, cmd in found}
    return failures + [f"tests/cli/examples.py: no document holds the example any more: {cmd}"
                       for cmd in sorted(table - documented)]


def run_all(ptreg, data, work):
    global PTREG
    PTREG = os.path.abspath(ptreg)
    found = all_examples(ptreg)
    failures, skipped = coverage(found), False
    documented = {cmd for _, cmd in found}
    os.makedirs(os.path.join(work, "bin"), exist_ok=True)
    os.symlink(os.path.abspath(ptreg), os.path.join(work, "bin", "ptreg"))
    env = dict(os.environ, PATH=os.path.join(work, "bin") + os.pathsep + os.environ["PATH"], DATA=data or "/nonexistent",
               TESTS=os.path.join(ROOT, "tests"), PTREG_TUNE_CACHE="off")
    os.environ["DATA"] = env["DATA"]  # for the set-ups written in Python
    full = os.environ.get("PTREG_EXAMPLES_FULL", "0") != "0"
    viewer = "without the report viewer" not in subprocess.run(
        [ptreg, "normals", "/nonexistent.ply", "--html", os.path.join(work, "probe.html")], capture_output=True,
        text=True).stderr
    have_data = bool(data) and os.path.isfile(os.path.join(data, "README.md"))
    ran = listed = 0
    for cmd, how in EXAMPLES:
        if cmd not in documented:
            continue
        if "listed" in how:
            print(f"listed, not run: {cmd}: {how['listed']}")
            listed += 1
            continue
        if how.get("data") and not have_data:
            print(f"skipped (no shared data folder): {cmd}")
            skipped = True
            continue
        if how.get("viewer") and not viewer:
            print(f"skipped (ptreg built without the report viewer): {cmd}")
            continue
        line = how["full"] if full and "full" in how else how.get("run", cmd)
        start = time.time()
        try:
            for step in how.get("setup", []):
                if callable(step):
                    step(work)
                    continue
                subprocess.run(["bash", "-c", step], cwd=work, env=env, check=True, capture_output=True, text=True)
            run = subprocess.run(["bash", "-c", line], cwd=work, env=env, capture_output=True, text=True)
            if run.returncode != 0:
                raise CheckFailed(f"exit {run.returncode}: {run.stderr.strip()[-400:]}")
            how["check"](work, run.stdout)
            print(f"ok {time.time() - start:6.1f} s  {cmd}" + (f"  (ran: {line})" if line != cmd else ""))
            ran += 1
        except subprocess.CalledProcessError as e:
            failures.append(f"{cmd}: its set-up failed: {e.cmd[-1]}: {e.stderr.strip()[-300:]}")
        except (CheckFailed, OSError, ValueError, KeyError) as e:
            failures.append(f"{cmd}: {e}")
    print(f"{len(found)} examples found, {ran} ran, {listed} listed")
    for f in failures:
        print(f"FAIL: {f}", file=sys.stderr)
    if failures:
        return 1
    if ran == 0:
        print("FAIL: no example ran", file=sys.stderr)
        return 1
    return 77 if skipped else 0


def main(argv):
    if len(argv) >= 2 and argv[1] == "list":
        for where, cmd in all_examples(argv[2] if len(argv) > 2 else os.path.join(ROOT, "build", "ptreg")):
            print(f"{where}: {cmd}")
        return 0
    if len(argv) == 3 and argv[1] == "coverage":
        failures = coverage(all_examples(argv[2]))
        for f in failures:
            print(f"FAIL: {f}", file=sys.stderr)
        return 1 if failures else 0
    if len(argv) == 5 and argv[1] == "run":
        return run_all(argv[2], argv[3], argv[4])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
