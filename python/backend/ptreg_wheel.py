"""The PEP 517 backend of the repository's root: `pip install .` builds a
wheel of the Python package that carries its own libptreg and the `ptreg` CLI.

It needs nothing but the standard library, so pip's build isolation (which
hides Debian's setuptools and, offline, cannot fetch one) has nothing to
install: the root's pyproject.toml names it with `requires = []` and
`backend-path`. The steps:

1. the library and the CLI built by CMake (Release) in env PTREG_BUILD_DIR
   when set (an existing build: only what is out of date is remade), else in
   `build-python/` under the tree, kept so a second install is quick;
2. the extension (python/ptreg/_core.c and its py_*.c) compiled against that library, with
   the run path $ORIGIN: it loads the libptreg copied beside it, not one on
   the system or in LD_LIBRARY_PATH (DT_RPATH, which comes before both);
3. the wheel: python/ptreg/*.py, _core, libptreg.so.N, bin/ptreg and a
   complete RECORD, so `pip uninstall ptreg` removes every file.

python/setup.py is the other way in (scripts/install-python.sh, `make
install`): a package that links to an installed library and carries none.
"""

import base64
import csv
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

TREE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(TREE, "python", "ptreg")
SUMMARY = "Accelerated point-set registration and 3-D features (ICP, GICP, EM-ICP, LDDMM, Harris, FPFH)"
# the flags python/setup.py gives the same file
CFLAGS = ["-std=c11", "-O2", "-fPIC", "-Wall", "-Wextra", "-Werror"]


def _log(msg):
    print(f"ptreg build: {msg}", file=sys.stderr, flush=True)


def _run(cmd):
    _log(" ".join(cmd))
    subprocess.run(cmd, check=True, stdout=sys.stderr)


# ---- what the wheel is called ------------------------------------------------

def _version():
    text = open(os.path.join(TREE, "include", "ptreg", "core.h")).read()
    m = re.search(r'#define PTREG_VERSION_STRING "([^"]+)"', text)
    if not m:
        raise RuntimeError("include/ptreg/core.h has no PTREG_VERSION_STRING")
    return m.group(1)


def _tag():
    """This interpreter's tag: the extension is built for it alone."""
    py = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{py}-{py}-{platform}"


def _dist_info():
    return f"ptreg-{_version()}.dist-info"


def _metadata():
    return (f"Metadata-Version: 2.1\nName: ptreg\nVersion: {_version()}\nSummary: {SUMMARY}\n"
            "License: See the ptreg source tree\nRequires-Python: >=3.9\nRequires-Dist: numpy\n")


def _wheel_file():
    return f"Wheel-Version: 1.0\nGenerator: ptreg_wheel\nRoot-Is-Purelib: false\nTag: {_tag()}\n"


# ---- the library, the CLI, the extension -------------------------------------

def _build_dir():
    given = os.environ.get("PTREG_BUILD_DIR")
    return os.path.abspath(given) if given else os.path.join(TREE, "build-python")


def _cmake(build):
    """Configures once (Release), then remakes what is out of date."""
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        _run(["cmake", "-S", TREE, "-B", build, "-DCMAKE_BUILD_TYPE=Release"])
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
    _run(["cmake", "--build", build, "--target", "ptreg", "ptreg_cli", "-j", jobs])


def _soname(build):
    """The library's file under the name the extension will ask for: CMake's
    libptreg.so links to libptreg.so.MAJOR (the soname), which links to the file."""
    link = os.path.join(build, "libptreg.so")
    name = os.readlink(link) if os.path.islink(link) else "libptreg.so"
    return os.path.basename(name), os.path.realpath(link)


def _python_include():
    inc = sysconfig.get_paths()["include"]
    if not os.path.exists(os.path.join(inc, "Python.h")):
        raise RuntimeError(f"Python.h is not in {inc}: install python3-dev")
    return inc


def _extension(build, out_dir):
    """_core compiled against build's library, finding it beside itself."""
    out = os.path.join(out_dir, "_core" + sysconfig.get_config_var("EXT_SUFFIX"))
    cc = os.environ.get("CC", "cc").split()
    sources = sorted(os.path.join(PACKAGE, n) for n in os.listdir(PACKAGE) if n.endswith(".c"))
    _run(cc + CFLAGS + ["-shared", "-I", os.path.join(TREE, "include"), "-I", _python_include(),
                        *sources, "-L", build, "-lptreg",
                        "-Wl,--disable-new-dtags,-rpath,$ORIGIN", "-o", out])
    return out


def _cli(build):
    path = os.path.join(build, "ptreg")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{path}: the build made no ptreg CLI")
    return path


# ---- the wheel -----------------------------------------------------------------

def _package_files():
    """(name in the wheel, file on disk) of the package's Python files."""
    names = sorted(n for n in os.listdir(PACKAGE) if n.endswith(".py") or n == "py.typed")
    return [(f"ptreg/{n}", os.path.join(PACKAGE, n)) for n in names]


def _digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _add(whl, records, name, data, executable=False):
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    # pip makes a file executable when its entry says so (the CLI)
    info.external_attr = ((0o755 if executable else 0o644) | 0o100000) << 16
    whl.writestr(info, data)
    records.append((name, _digest(data), str(len(data))))


def _write_wheel(path, files):
    """files: (name in the wheel, file on disk, executable); then dist-info,
    RECORD last, listing every file (itself without a hash, as PEP 376 says)."""
    records = []
    dist = _dist_info()
    with zipfile.ZipFile(path, "w") as whl:
        for name, disk, executable in files:
            with open(disk, "rb") as f:
                _add(whl, records, name, f.read(), executable)
        _add(whl, records, f"{dist}/METADATA", _metadata().encode())
        _add(whl, records, f"{dist}/WHEEL", _wheel_file().encode())
        _add(whl, records, f"{dist}/top_level.txt", b"ptreg\n")
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(records + [(f"{dist}/RECORD", "", "")])
        whl.writestr(zipfile.ZipInfo(f"{dist}/RECORD", date_time=(2020, 1, 1, 0, 0, 0)), text.getvalue())


# ---- PEP 517 hooks -------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """The metadata without a build, so pip resolves numpy before the compile."""
    dist = os.path.join(metadata_directory, _dist_info())
    os.makedirs(dist, exist_ok=True)
    for name, text in (("METADATA", _metadata()), ("WHEEL", _wheel_file()), ("top_level.txt", "ptreg\n")):
        with open(os.path.join(dist, name), "w") as f:
            f.write(text)
    return _dist_info()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build = _build_dir()
    _cmake(build)
    soname, library = _soname(build)
    with tempfile.TemporaryDirectory(prefix="ptreg-wheel-") as work:
        files = [(n, d, False) for n, d in _package_files()]
        core = _extension(build, work)
        files += [(f"ptreg/{os.path.basename(core)}", core, False), (f"ptreg/{soname}", library, False),
                  ("ptreg/bin/ptreg", _cli(build), True)]
        name = f"ptreg-{_version()}-{_tag()}.whl"
        _write_wheel(os.path.join(wheel_directory, name), files)
    _log(f"{name}: libptreg and the CLI from {build}")
    return name


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_sdist(sdist_directory, config_settings=None):
    """The tracked files of the tree (git archive): the source is the repository."""
    name = f"ptreg-{_version()}"
    out = os.path.join(sdist_directory, f"{name}.tar.gz")
    if not shutil.which("git"):
        raise RuntimeError("an sdist is made from the git repository: git is needed")
    _run(["git", "-C", TREE, "archive", "--format=tar.gz", f"--prefix={name}/", "-o", out, "HEAD"])
    return os.path.basename(out)
