"""Builds ptreg's Python package against an installed or built libptreg.

Where the library is: PTREG_INCLUDE_DIR and PTREG_LIBRARY_DIR when set; else
pkg-config's ptreg (an installed library, `make install`); else this source
tree's include/ and build/ (`make build` first). The extension records the
library's folder as its run path, so `import ptreg` needs no
LD_LIBRARY_PATH.

    pip install --no-build-isolation python/     # offline, with Debian's setuptools
"""
import os
import re
import shutil
import subprocess

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.dirname(HERE)


def pkg_config(flag):
    if not shutil.which("pkg-config"):
        return []
    run = subprocess.run(["pkg-config", flag, "ptreg"], capture_output=True, text=True)
    return [w[2:] for w in run.stdout.split()] if run.returncode == 0 else []


def library_dirs():
    """(include folders, library folders)."""
    inc, lib = os.environ.get("PTREG_INCLUDE_DIR"), os.environ.get("PTREG_LIBRARY_DIR")
    if inc and lib:
        return [inc], [lib]
    if pkg_config("--libs-only-L") or pkg_config("--cflags-only-I"):
        return pkg_config("--cflags-only-I"), pkg_config("--libs-only-L")
    return [os.path.join(TREE, "include")], [os.path.join(TREE, os.environ.get("BUILD", "build"))]


def version(include):
    for folder in include + ["/usr/include", "/usr/local/include"]:
        header = os.path.join(folder, "ptreg", "core.h")
        if os.path.exists(header):
            m = re.search(r'#define PTREG_VERSION_STRING "([^"]+)"', open(header).read())
            if m:
                return m.group(1)
    raise SystemExit("ptreg's headers were not found: set PTREG_INCLUDE_DIR and PTREG_LIBRARY_DIR")


# the extension's files (python/ptreg/_core.c and its topics, py_*.c)
SOURCES = sorted("ptreg/" + n for n in os.listdir(os.path.join(HERE, "ptreg")) if n.endswith(".c"))
HEADERS = sorted("ptreg/" + n for n in os.listdir(os.path.join(HERE, "ptreg")) if n.endswith(".h"))
include, libs = library_dirs()
setup(
    name="ptreg",
    version=version(include),
    description="Accelerated point-set registration and 3-D features (ICP, GICP, EM-ICP, LDDMM, Harris, FPFH)",
    license="See the ptreg source tree",
    packages=["ptreg"],
    package_data={"ptreg": ["py.typed"]},
    python_requires=">=3.9",
    install_requires=["numpy"],
    ext_modules=[Extension("ptreg._core", SOURCES, depends=HEADERS, include_dirs=include, library_dirs=libs,
                           runtime_library_dirs=libs, libraries=["ptreg"],
                           extra_compile_args=["-std=c11", "-Wall", "-Wextra", "-Werror"])],
)
