"""README.md's Python examples run as written (issue 47: every example is tested;
the command lines are tests/cli/examples.sh's), on small files the CLI makes
under the names they use."""
import os
import re
import subprocess

import numpy as np

import ptreg
from ptreg_checks import compare

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CLI = os.environ.get("PTREG_CLI", os.path.join(ROOT, "build", "ptreg"))


def python_blocks():
    text = open(os.path.join(ROOT, "README.md")).read()
    return re.findall(r"^```python\n(.*?)^```", text, re.M | re.S)


def make_inputs(folder):
    def cli(*args):
        subprocess.run([CLI, *args], cwd=folder, check=True, capture_output=True)
    cli("synth", "--model", "model.ply", "--model-points", "4000", "-o", "scan.ply", "--points", "3000")
    cli("convert", "scan.ply", "-o", "a.pcd")
    cli("convert", "model.ply", "-o", "b.pcd")
    # three views of the aircraft for multiway (tests/cli/multiway.sh's)
    for name, view, seed in (("a.ply", "5,0,3", 3), ("b.ply", "1.5,4.8,3", 4), ("c.ply", "-4,2.9,3", 5)):
        cli("synth", "--shape", "aircraft", "-o", name, "--points", "2000", "--view", view, "--max-angle", "10",
            "--seed", str(seed))
    # a 32^3 volume with two bright boxes: corners for harris3d
    vol = np.zeros((32, 32, 32), np.uint8)
    vol[8:16, 8:16, 8:16] = 200
    vol[18:26, 10:22, 16:28] = 120
    with open(os.path.join(folder, "ct.nrrd"), "wb") as f:
        f.write(b"NRRD0004\ntype: uchar\ndimension: 3\nsizes: 32 32 32\nencoding: raw\n\n" + vol.tobytes())


def test_readme_python_examples_run(tmp_path, monkeypatch):
    blocks = python_blocks()
    assert blocks, "README.md has no Python block"
    make_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        scope = {}
        exec(compile(block, "README.md (python)", "exec"), scope)
    # what the block's tasks say they give
    assert scope["f"].shape == (len(scope["model"].points), 33)
    assert len(scope["poses"]) == 3
    compare(len(scope["keypoints"]), ">", 0, what="README's harris3d: keypoints")
