"""Small inputs shared by tests/cli/hostile.sh and the failure sweeps
(tests/alloc/sweep.sh, tests/cuda_standin/sweep.sh), written into the folder
given: landmark rings (an ellipse and a circle of 16, a circle of 15), a 24^3
uint8 box phantom whose 8 corners harris3d finds, and a pairs file of two
12-point sources on one shared target."""
import math
import struct
import sys

w = sys.argv[1]


def ring(name, n, rx, ry):
    with open(f"{w}/{name}", "w") as f:
        f.write("x,y,z\n" + "".join("%.9g,%.9g,0\n" % (rx * math.cos(2 * math.pi * i / n),
                                                        ry * math.sin(2 * math.pi * i / n)) for i in range(n)))


ring("ellipse16.csv", 16, 1.5, 0.6)
ring("circle16.csv", 16, 1, 1)
ring("circle15.csv", 15, 1, 1)
nx = 24
vox = bytearray(b"\x0a" * nx ** 3)
for z in range(6, 17):
    for y in range(5, 18):
        for x in range(7, 19):
            vox[x + nx * (y + nx * z)] = 200
open(f"{w}/box_24x24x24_uint8.raw", "wb").write(vox)

# a pairs file (docs/FORMATS.md): two sources of 12 points, one shared target
a = [(math.cos(i), math.sin(1.3 * i), 0.1 * i) for i in range(12)]
b = [(x + 0.01, y, z) for x, y, z in a]
with open(f"{w}/two.ptpairs", "wb") as f:
    f.write(b"PTPAIRS1" + struct.pack("<QQ", 2, 1) + struct.pack("<3Q", 0, 12, 24) + struct.pack("<2Q", 0, 12))
    f.write(struct.pack("<%df" % (3 * 36), *[c for p in a + b + a for c in p]))
