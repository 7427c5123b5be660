#!/usr/bin/env python3
"""Writes frames as ptreg track's stdin stream (docs/FORMATS.md, "PTF1"):
per frame "PTF1", a little-endian uint64 point count, a little-endian double
timestamp, then the points as little-endian float32 x, y, z. The frames are
binary little-endian PLY files with float x, y, z first (ptreg synth's).
Usage: track_stream.py [--rate HZ] [--repeat N] [--truncate] FRAME.ply... > stream
--repeat plays the frames forward, then backward, N times in all (a
continuous motion); --truncate cuts the last frame short."""
import struct
import sys


def read_ply_xyz(path):
    with open(path, "rb") as f:
        data = f.read()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    header = data[:end].decode("ascii").splitlines()
    if "format binary_little_endian 1.0" not in header:
        sys.exit(f"{path}: not a binary little-endian PLY")
    count, props = 0, []
    for line in header:
        w = line.split()
        if w[:2] == ["element", "vertex"]:
            count = int(w[2])
        elif w[:1] == ["property"] and len(w) == 3:
            props.append(w[1])
    if props[:3] != ["float"] * 3 or any(p != "float" for p in props):
        sys.exit(f"{path}: only float properties are read here")
    stride = 4 * len(props)
    body = data[end:end + count * stride]
    if stride == 12:
        return count, body
    return count, b"".join(body[i * stride:i * stride + 12] for i in range(count))


def frame_bytes(count, xyz, t):
    return b"PTF1" + struct.pack("<Qd", count, t) + xyz


def main():
    args = sys.argv[1:]
    rate, repeat, truncate = 10.0, 1, False
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt == "--rate":
            rate = float(args.pop(0))
        elif opt == "--repeat":
            repeat = int(args.pop(0))
        elif opt == "--truncate":
            truncate = True
        else:
            sys.exit(f"unknown option {opt}")
    frames = [read_ply_xyz(p) for p in args]
    out = sys.stdout.buffer
    order = []
    for r in range(repeat):
        order += range(len(frames)) if r % 2 == 0 else range(len(frames) - 1, -1, -1)
    for k, i in enumerate(order):
        count, xyz = frames[i]
        b = frame_bytes(count, xyz, k / rate)
        if truncate and k == len(order) - 1:
            b = b[:len(b) - 7]
        out.write(b)
    out.flush()


if __name__ == "__main__":
    main()
