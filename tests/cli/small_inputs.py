"""Small inputs shared by tests/cli/hostile.sh and tests/alloc/sweep.sh,
written into the folder given: landmark rings (an ellipse and a circle of 16,
a circle of 15) and a 24^3 uint8 box phantom whose 8 corners harris3d finds."""
import math
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
