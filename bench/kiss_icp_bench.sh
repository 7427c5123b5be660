#!/usr/bin/env bash
# kiss_icp_bench.sh - run the KISS-ICP peer (PRBonn/kiss-icp C++ pipeline, default KITTI
# config, deskew off, no KITTI vertical-angle correction) over a directory of KITTI velodyne
# .bin frames, in sorted name order, and write its poses and per-frame RegisterFrame times.
#
# Usage: bench/kiss_icp_bench.sh FRAMES_DIR OUT_DIR
#   writes OUT_DIR/kiss_poses.txt (KITTI 3x4 row-major, sensor-to-world, world = frame 0)
#   and    OUT_DIR/kiss_times.txt (ms per frame, steady_clock around RegisterFrame only);
#   frames / p50 / p99 ms go to stderr.
# Env: KISS_ICP_RUN  driver binary (default /work/kiss/bin/kiss_icp_run)
#      KISS_THREADS  TBB thread cap (default: all cores)
#      KISS_ARGS     extra driver options, e.g. "--max-range 80 --kitti-correct 1"
# Tested with KISS-ICP 4bd9a1054931bd037ef5e690122832faab621113, Sophus 1.24.6
# (d0b7315a0d90fc6143defa54596a3a95d9fa10ec), Debian robin-map-dev 1.2.1.
set -euo pipefail

if [ $# -ne 2 ]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
FRAMES_DIR=$1
OUT_DIR=$2
RUN=${KISS_ICP_RUN:-/work/kiss/bin/kiss_icp_run}

if [ ! -x "$RUN" ]; then
  cat >&2 <<MSG
kiss_icp_bench: driver not found at $RUN (set KISS_ICP_RUN or build it).
To build (Debian 12): apt-get install -y g++ cmake make libeigen3-dev libtbb-dev robin-map-dev
fetch the git mirrors github:PRBonn/kiss-icp, github:strasdat/Sophus (and optionally
github:Tessil/robin-map) under /work/.mirror, then run /work/kiss/build.sh
(see /work/kiss/README.md); it produces /work/kiss/bin/kiss_icp_run.
MSG
  exit 1
fi

mapfile -t FRAMES < <(find "$FRAMES_DIR" -maxdepth 1 -name '*.bin' | LC_ALL=C sort)
if [ ${#FRAMES[@]} -eq 0 ]; then
  echo "kiss_icp_bench: no .bin frames in $FRAMES_DIR" >&2
  exit 1
fi
mkdir -p "$OUT_DIR"
# shellcheck disable=SC2086
"$RUN" --out "$OUT_DIR/kiss_poses.txt" --times "$OUT_DIR/kiss_times.txt" \
  ${KISS_ARGS:-} "${FRAMES[@]}"
