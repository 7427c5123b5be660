"""The package tests' set-up: the suite's numeric checks (tests/ptreg_checks.py,
the same module the CLI tests use) importable as ptreg_checks."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
