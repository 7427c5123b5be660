#!/usr/bin/env python3
"""Writes the binary fixtures of tests/data/io (good/ and bad/). The text
fixtures are written by hand; these are generated so their bytes are exact
and reviewable here. Run from anywhere: python3 tests/data/io/make_fixtures.py

LZF streams are built by hand from the format's two kinds of chunk: a literal
run (control byte len-1 < 32, then len bytes) and a back reference (control
byte with a length in its top 3 bits and the high offset bits in the low 5,
then the low offset byte), so no compressor is needed."""
import math
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
GOOD = os.path.join(HERE, "good")
BAD = os.path.join(HERE, "bad")


def write(folder, name, data):
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def lzf_literals(raw):
    out = bytearray()
    for i in range(0, len(raw), 32):
        chunk = raw[i:i + 32]
        out.append(len(chunk) - 1)
        out += chunk
    return bytes(out)


def ply_header(fmt, elements):
    """elements: [(name, count, [property lines])]"""
    lines = ["ply", "format %s 1.0" % fmt, "comment ptreg test fixture"]
    for name, count, props in elements:
        lines.append("element %s %d" % (name, count))
        lines += ["property " + p for p in props]
    lines.append("end_header")
    return ("\n".join(lines) + "\n").encode()


POINTS = [(1.5, -2.25, 3.0), (0.1, 0.2, 0.3), (-1e-3, 4e5, 7.0)]
NORMALS = [(0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, -1.0, 0.0)]


def good_fixtures():
    # Big-endian binary PLY with normals and an extra uchar property.
    body = b"".join(struct.pack(">fffBfff", *p, 7, *n) for p, n in zip(POINTS, NORMALS))
    write(GOOD, "be_normals.ply",
          ply_header("binary_big_endian", [("vertex", 3, [
              "float x", "float y", "float z", "uchar quality", "float nx", "float ny",
              "float nz"])]) + body)

    # Every scalar type, in both name families; x y z are double, float32, int.
    types = [("char", "b"), ("uchar", "B"), ("short", "h"), ("ushort", "H"), ("int", "i"),
             ("uint", "I"), ("float", "f"), ("double", "d"), ("int8", "b"), ("uint8", "B"),
             ("int16", "h"), ("uint16", "H"), ("int32", "i"), ("uint32", "I"),
             ("float32", "f"), ("float64", "d")]
    props = ["%s p_%s" % (t, t) for t, _ in types] + ["double x", "float32 y", "int z"]
    fmt = "<" + "".join(c for _, c in types) + "dfi"
    vals = [-5, 250, -300, 60000, -70000, 4000000000, 0.5, 0.25, -5, 250, -300, 60000, -70000,
            4000000000, 0.5, 0.25]
    body = b"".join(struct.pack(fmt, *vals, x, y, z)
                    for x, y, z in [(1.0, 2.0, 3), (-0.125, 1e-3, -7), (1e10, -2.5, 2**31 - 1)])
    write(GOOD, "all_types.ply",
          ply_header("binary_little_endian", [("vertex", 3, props)]) + body)

    # Faces before and after the vertices; a list property inside the vertex.
    faces = struct.pack("<B3i", 3, 0, 1, 2) + struct.pack("<B4i", 4, 0, 1, 2, 0)
    verts = b"".join(struct.pack("<fffB", *p, k) + struct.pack("<%dH" % k, *range(k))
                     for k, p in zip((0, 2, 5), POINTS))
    after = struct.pack("<ifB", 1, 0.5, 2) + struct.pack("<2d", 1.0, 2.0)
    write(GOOD, "lists_binary.ply",
          ply_header("binary_little_endian", [
              ("face", 2, ["list uchar int vertex_indices"]),
              ("edge", 0, ["int a", "int b"]),
              ("vertex", 3, ["float x", "float y", "float z", "list uchar ushort tags"]),
              ("material", 1, ["int id", "float shine", "list uchar double weights"]),
          ]) + faces + verts + after)

    # PCD binary_compressed, fields stored one after the other (x, then y,
    # then z, then an rgb float), as a literal-only LZF stream.
    xs = struct.pack("<3f", *(p[0] for p in POINTS))
    ys = struct.pack("<3f", *(p[1] for p in POINTS))
    zs = struct.pack("<3f", *(p[2] for p in POINTS))
    rgb = struct.pack("<3I", 0xff0000, 0x00ff00, 0x0000ff)
    raw = zs + rgb + xs + ys
    comp = lzf_literals(raw)
    write(GOOD, "compressed.pcd",
          pcd_header(["z", "rgb", "x", "y"], [4, 4, 4, 4], "FUFF", [1] * 4, 3, 1,
                     "binary_compressed") + struct.pack("<II", len(comp), len(raw)) + comp)

    # Organised binary PCD (3 x 2) with NaN points, doubles and a padding field.
    nan = float("nan")
    pts = [(1.0, 2.0, 3.0), (nan, nan, nan), (4.0, 5.0, 6.0), (nan, 0.0, 0.0),
           (7.0, 8.0, 9.0), (0.0, 0.0, math.inf)]
    body = b"".join(struct.pack("<d4sdd", x, b"\0\0\0\0", y, z) for x, y, z in pts)
    write(GOOD, "organised.pcd",
          pcd_header(["x", "_", "y", "z"], [8, 1, 8, 8], "FUFF", [1, 4, 1, 1], 3, 2,
                     "binary") + body)


def pcd_header(fields, sizes, types, counts, width, height, data, points=None):
    points = width * height if points is None else points
    return ("# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\n"
            "FIELDS %s\nSIZE %s\nTYPE %s\nCOUNT %s\nWIDTH %d\nHEIGHT %d\n"
            "VIEWPOINT 0 0 0 1 0 0 0\nPOINTS %d\nDATA %s\n" % (
                " ".join(fields), " ".join(map(str, sizes)), " ".join(types),
                " ".join(map(str, counts)), width, height, points, data)).encode()


def xyz_pcd(data, points=3, width=None):
    width = points if width is None else width
    return pcd_header(["x", "y", "z"], [4, 4, 4], "FFF", [1, 1, 1], width, 1, data, points)


def bad_fixtures():
    verts = b"".join(struct.pack("<3f", *p) for p in POINTS)
    hdr = ply_header("binary_little_endian", [("vertex", 3, ["float x", "float y", "float z"])])
    write(BAD, "ply_binary_truncated.ply", hdr + verts[:30])
    write(BAD, "ply_binary_short_count.ply",
          ply_header("binary_little_endian",
                     [("vertex", 10, ["float x", "float y", "float z"])]) + verts)
    write(BAD, "ply_binary_huge_count.ply",
          ply_header("binary_little_endian",
                     [("vertex", 4000000000, ["float x", "float y", "float z"])]) + verts)
    write(BAD, "ply_binary_face_short.ply",
          ply_header("binary_little_endian", [("face", 4000000000, ["int a", "int b"]),
                                              ("vertex", 3, ["float x", "float y", "float z"])])
          + verts)
    write(BAD, "ply_list_negative.ply",
          ply_header("binary_little_endian", [("face", 1, ["list int int vertex_indices"]),
                                              ("vertex", 3, ["float x", "float y", "float z"])])
          + struct.pack("<i", -1) + verts)
    write(BAD, "ply_list_huge.ply",
          ply_header("binary_little_endian", [
              ("vertex", 3, ["float x", "float y", "float z", "list uint int tags"])])
          + struct.pack("<3fI", 1, 2, 3, 4000000000) + verts)
    write(BAD, "ply_be_truncated.ply",
          ply_header("binary_big_endian", [("vertex", 2, ["double x", "double y", "double z"])])
          + struct.pack(">5d", 1, 2, 3, 4, 5))

    three = struct.pack("<9f", *[c for p in POINTS for c in p])
    write(BAD, "pcd_binary_short.pcd", xyz_pcd("binary", 5, 5) + three)
    write(BAD, "pcd_binary_huge.pcd", xyz_pcd("binary", 4000000000, 4000000000) + three)

    raw = struct.pack("<9f", *[c for k in range(3) for c in (p[k] for p in POINTS)])
    comp = lzf_literals(raw)
    block = xyz_pcd("binary_compressed")
    write(BAD, "pcd_lzf_csize_exceeds.pcd",
          block + struct.pack("<II", len(comp) + 1000, len(raw)) + comp)
    write(BAD, "pcd_lzf_header_cut.pcd", block + struct.pack("<I", len(comp)))
    write(BAD, "pcd_lzf_usize_mismatch.pcd",
          block + struct.pack("<II", len(comp), len(raw) + 4) + comp)
    longer = lzf_literals(raw + b"\0" * 8)
    write(BAD, "pcd_lzf_bigger.pcd", block + struct.pack("<II", len(longer), len(raw)) + longer)
    shorter = lzf_literals(raw[:20])
    write(BAD, "pcd_lzf_smaller.pcd",
          block + struct.pack("<II", len(shorter), len(raw)) + shorter)
    # A back reference first: it points before the start of the output.
    corrupt = bytes([0x20, 0x05]) + comp
    write(BAD, "pcd_lzf_corrupt.pcd",
          block + struct.pack("<II", len(corrupt), len(raw)) + corrupt)
    # A literal run that claims more bytes than the stream has.
    cut = bytes([31, 1, 2, 3])
    write(BAD, "pcd_lzf_cut_literal.pcd", block + struct.pack("<II", len(cut), len(raw)) + cut)
    # 1.2 MB claimed from 8 bytes of LZF data.
    write(BAD, "pcd_lzf_ratio.pcd",
          xyz_pcd("binary_compressed", 100000, 100000) + struct.pack("<II", 8, 1200000)
          + b"\0" * 8)
    write(BAD, "pcd_nan_only.pcd",
          pcd_header(["x", "y", "z"], [4, 4, 4], "FFF", [1, 1, 1], 2, 2, "binary")
          + struct.pack("<12f", *[float("nan")] * 12))

    write(BAD, "xyz_garbage.xyz", bytes([0xff, 0xfe, 0x80, 0x20, 0xc3, 0x28, 0x0a]) * 4)
    write(BAD, "xyz_nul.xyz", b"1 2 3\n4 5\x006 7\n")
    write(BAD, "ply_nul_header.ply", b"ply\nformat ascii 1.0\nele\0ment vertex 1\n"
          b"property float x\nend_header\n1\n")


if __name__ == "__main__":
    good_fixtures()
    bad_fixtures()
