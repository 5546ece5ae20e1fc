#!/usr/bin/env python3
"""Writes sky.hdr beside itself: a 256 x 128 equirectangular HDR sky for
rtviewer's environment-map scenes (row 0 straight up, column 0 looking
along -z): a blue zenith over a warm horizon, a ground of dull earth, and the glow around a sun 25 degrees above
the horizon toward +x -z (the disc itself is left out: a tiny bright disc
found by one cosine-weighted ray per sample is a firefly; scenes light the
sun with a directional light of the same direction). Radiance RGBE, run-length
encoding off (every reader takes flat scanlines)."""
import math, os, struct

W, H = 256, 128
sun_dir = (math.cos(math.radians(25)) * math.sin(math.radians(40)), math.sin(math.radians(25)),
           -math.cos(math.radians(25)) * math.cos(math.radians(40)))

def radiance(d):
    x, y, z = d
    if y < 0:
        g = 0.25 + 0.1 * math.exp(8 * y)
        return (g * 0.8, g * 0.7, g * 0.55)
    t = math.sqrt(y)
    zen, hor = (0.25, 0.45, 1.1), (1.3, 1.1, 0.9)
    c = [hor[i] * (1 - t) + zen[i] * t for i in range(3)]
    cosang = x * sun_dir[0] + y * sun_dir[1] + z * sun_dir[2]
    if cosang > 0.9:
        glow = (cosang - 0.9) / 0.1
        c = [c[0] + 3 * glow ** 4, c[1] + 2.6 * glow ** 4, c[2] + 2 * glow ** 4]
    return tuple(c)

def rgbe(c):
    m = max(c)
    if m < 1e-32:
        return bytes((0, 0, 0, 0))
    e = math.frexp(m)[1]
    s = 256.0 / (2.0 ** e)
    return bytes((int(c[0] * s), int(c[1] * s), int(c[2] * s), e + 128))

out = bytearray(b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y %d +X %d\n" % (H, W))
for row in range(H):
    lat = (row + 0.5) / H * math.pi
    for col in range(W):
        lon = (col + 0.5) / W * 2 * math.pi
        d = (math.sin(lat) * math.sin(lon), math.cos(lat), -math.sin(lat) * math.cos(lon))
        out += rgbe(radiance(d))
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "sky.hdr"), "wb") as f:
    f.write(out)
