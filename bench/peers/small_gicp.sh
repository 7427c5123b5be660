#!/bin/sh
# Builds the small_gicp benchmark peer (bench/peers/small_gicp_icp.cpp) out of tree and
# prints the driver's path on the last line of stdout.
#
#   bench/peers/small_gicp.sh SMALL_GICP_SRC        (or SMALL_GICP_SRC=... bench/peers/small_gicp.sh)
#
# SMALL_GICP_SRC: a checkout of github.com/koide3/small_gicp (this fetches nothing).
# Needs cmake, a C++17 compiler, Eigen 3.4 and OpenMP. small_gicp is configured with
# OpenMP, without TBB, PCL, Python bindings, tests, examples or benchmarks, as a static
# helper library, and installed under the build folder; the driver is then built
# against that install with find_package(small_gicp).
#
# Environment:
#   SMALL_GICP_BUILD  build folder (default: build-small-gicp at the repository root,
#                     ignored by git through /build*/; /tmp/ptreg-small-gicp if not)
#   SMALL_GICP_NATIVE 1 (default): -march=native for small_gicp and the driver, as
#                     ptreg picks its AVX2/AVX-512 kernels at run time; 0: the
#                     compiler's default target (small_gicp's own default)
#   JOBS              parallel build jobs (default 2)
set -eu

src=${1:-${SMALL_GICP_SRC:-}}
if [ -z "$src" ] || [ ! -f "$src/include/small_gicp/registration/registration.hpp" ]; then
  echo "usage: $0 SMALL_GICP_SRC (a small_gicp source tree; or set SMALL_GICP_SRC)" >&2
  exit 2
fi
src=$(cd "$src" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

build=${SMALL_GICP_BUILD:-}
if [ -z "$build" ]; then
  build=$repo/build-small-gicp
  if ! git -C "$repo" check-ignore -q "build-small-gicp/" 2>/dev/null; then  # the slash: /build*/ names folders
    build=/tmp/ptreg-small-gicp
  fi
fi
mkdir -p "$build"
build=$(cd "$build" && pwd)
jobs=${JOBS:-2}
native=${SMALL_GICP_NATIVE:-1}
if [ "$native" = 1 ]; then march=ON; flags=-march=native; else march=OFF; flags=; fi

cmake -S "$src" -B "$build/small_gicp" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$build/install" \
  -DBUILD_HELPER=ON -DBUILD_SHARED_LIBS=OFF -DBUILD_WITH_OPENMP=ON -DBUILD_WITH_TBB=OFF -DBUILD_WITH_PCL=OFF \
  -DBUILD_WITH_FAST_GICP=OFF -DBUILD_WITH_IRIDESCENCE=OFF -DBUILD_PYTHON_BINDINGS=OFF -DBUILD_TESTS=OFF \
  -DBUILD_EXAMPLES=OFF -DBUILD_BENCHMARKS=OFF -DBUILD_WITH_MARCH_NATIVE=$march >&2
cmake --build "$build/small_gicp" -j "$jobs" >&2
cmake --install "$build/small_gicp" >&2

# The driver's project lives in the build folder: nothing of it is in the repository
# but the source file.
mkdir -p "$build/driver-src"
cat >"$build/driver-src/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(small_gicp_peer LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
find_package(small_gicp REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
add_executable(small_gicp_icp "$here/small_gicp_icp.cpp")
target_compile_options(small_gicp_icp PRIVATE -Wall -Wextra $flags)
target_link_libraries(small_gicp_icp PRIVATE small_gicp::small_gicp OpenMP::OpenMP_CXX)
EOF
cmake -S "$build/driver-src" -B "$build/driver" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$build/install" >&2
cmake --build "$build/driver" -j "$jobs" >&2

echo "$build/driver/small_gicp_icp"
