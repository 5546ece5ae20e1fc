#!/usr/bin/env python3
"""wavegrid_obj.py N OUT.obj: the grid of `wavegrid N` (rt_scene_make_wave:
2 g^2 triangles, g = round(sqrt(N / 2)), 20 x 20 units centred on the origin,
y = 0, the same vertices and triangles) as an OBJ, without its travelling waves, for the peers that read only
OBJ files (../shared/peers/bvhpeer) to build the same triangles as
scenes/grid10m.scene. N = 10000000: 9,999,392 triangles, 368 MB."""
import math
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: wavegrid_obj.py TRIANGLES OUT.obj")
    n = int(sys.argv[1])
    g = int(math.floor(math.sqrt(n / 2) + 0.5))  # lround
    if g < 1:
        sys.exit("wavegrid_obj.py: %d triangles: at least 2" % n)
    s, w = 20.0 / g, g + 1
    with open(sys.argv[2], "w") as f:
        for j in range(w):
            z = -10.0 + j * s
            f.write("".join("v %.6f 0 %.6f\n" % (-10.0 + i * s, z) for i in range(w)))
        for j in range(g):
            # cell corners a, b = a + 1, c = a + w, d = c + 1; triangles (a, c, b), (b, c, d)
            f.write("".join("f %d %d %d\nf %d %d %d\n" % (a, a + w, a + 1, a + 1, a + w, a + w + 1)
                            for a in range(j * w + 1, j * w + 1 + g)))
    print("wavegrid_obj.py: %d x %d grid, %d triangles" % (g, g, 2 * g * g))


if __name__ == "__main__":
    main()
