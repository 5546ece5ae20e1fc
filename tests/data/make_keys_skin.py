#!/usr/bin/env python3
"""Writes keys_skin.gltf: a skinned strip whose joints move with STEP,
LINEAR and CUBICSPLINE samplers, for test_gpu_anim (GPU skinning of the
file's own interpolation vs the CPU oracle) and test_assimp (the loader
reads the modes). Run it from anywhere; it writes beside itself.

The strip: 6 vertices along x at 0, 1, 2 (y = 0 and 1), 4 triangles.
Joint 0 "root" at the origin, joint 1 "tip" its child at x = 1; the
vertices at x = 0 follow root, x = 2 tip, x = 1 both half and half.
Clips:
  "step":  root translation STEP (0, 0.5, 1 s), tip rotation LINEAR
           (0 -> 90 degrees about z over 1 s);
  "cubic": root translation, tip rotation and root scale CUBICSPLINE
           (0, 0.8, 2 s; tangents nonzero, rotation tangents not unit)."""
import base64, json, math, os, struct

def f32(*v): return struct.pack("<%df" % len(v), *v)

buf = bytearray()
views, accs = [], []

def add(data, comp, count, typ, **extra):
    while len(buf) % 4: buf.append(0)
    views.append({"buffer": 0, "byteOffset": len(buf), "byteLength": len(data)})
    buf.extend(data)
    a = {"bufferView": len(views) - 1, "componentType": comp, "count": count, "type": typ}
    a.update(extra)
    accs.append(a)
    return len(accs) - 1

xs = [0, 1, 2]
pos = [c for x in xs for y in (0, 1) for c in (x, y, 0)]
a_pos = add(f32(*pos), 5126, 6, "VEC3", min=[0, 0, 0], max=[2, 1, 0])
idx = [0, 2, 1, 1, 2, 3, 2, 4, 3, 3, 4, 5]
a_idx = add(struct.pack("<12H", *idx), 5123, 12, "SCALAR")
joints = [j for x in xs for _ in (0, 1) for j in (0, 1, 0, 0)]
a_j = add(struct.pack("<24B", *joints), 5121, 6, "VEC4")
w = {0: (1, 0), 1: (0.5, 0.5), 2: (0, 1)}
weights = [c for x in xs for _ in (0, 1) for c in (w[x][0], w[x][1], 0, 0)]
a_w = add(f32(*weights), 5126, 6, "VEC4")
ibm = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1,
       1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, -1, 0, 0, 1]  # column-major
a_ibm = add(f32(*ibm), 5126, 2, "MAT4")

def q(axis_z_deg):
    h = math.radians(axis_z_deg) / 2
    return (0, 0, math.sin(h), math.cos(h))

t3 = add(f32(0, 0.5, 1), 5126, 3, "SCALAR", min=[0], max=[1])
step_tr = add(f32(0, 0, 0, 0.5, 0.25, 0, 1.5, -0.5, 0.25), 5126, 3, "VEC3")
t2 = add(f32(0, 1), 5126, 2, "SCALAR", min=[0], max=[1])
lin_rot = add(f32(*q(0), *q(90)), 5126, 2, "VEC4")
tc = add(f32(0, 0.8, 2), 5126, 3, "SCALAR", min=[0], max=[2])
# CUBICSPLINE outputs: (in-tangent, value, out-tangent) per key
cub_tr = add(f32(9, 9, 9, 0, 0, 0, 1, 0, 0.5,
                 -0.5, 1, 0, 0.6, 0.4, 0, 0.3, 0.2, -1,
                 2, -1, 0, 1, 1, 0.25, -9, -9, -9), 5126, 9, "VEC3")
cub_rot = add(f32(5, 5, 5, 5, *q(0), 0, 0, 0.9, 0.1,
                  0, 0, -0.4, 0.3, *q(60), 0, 0, 0.7, 0,
                  0, 0, 0.2, -0.2, *q(150), 7, 7, 7, 7), 5126, 9, "VEC4")
cub_sc = add(f32(3, 3, 3, 1, 1, 1, 0.5, 0, 0,
                 0, 0.5, 0, 1.4, 1.2, 1, 0.2, -0.3, 0,
                 0.1, 0.1, 0, 0.8, 1, 1, 4, 4, 4), 5126, 9, "VEC3")

doc = {
    "asset": {"version": "2.0", "generator": "tests/data/make_keys_skin.py"},
    "scene": 0,
    "scenes": [{"nodes": [0, 1]}],
    "nodes": [{"name": "strip", "mesh": 0, "skin": 0},
              {"name": "root", "children": [2]},
              {"name": "tip", "translation": [1, 0, 0]}],
    "skins": [{"joints": [1, 2], "inverseBindMatrices": a_ibm, "skeleton": 1}],
    "meshes": [{"name": "strip", "primitives": [{"attributes": {"POSITION": a_pos, "JOINTS_0": a_j,
                                                                "WEIGHTS_0": a_w}, "indices": a_idx}]}],
    "animations": [
        {"name": "step",
         "samplers": [{"input": t3, "output": step_tr, "interpolation": "STEP"},
                      {"input": t2, "output": lin_rot, "interpolation": "LINEAR"}],
         "channels": [{"sampler": 0, "target": {"node": 1, "path": "translation"}},
                      {"sampler": 1, "target": {"node": 2, "path": "rotation"}}]},
        {"name": "cubic",
         "samplers": [{"input": tc, "output": cub_tr, "interpolation": "CUBICSPLINE"},
                      {"input": tc, "output": cub_rot, "interpolation": "CUBICSPLINE"},
                      {"input": tc, "output": cub_sc, "interpolation": "CUBICSPLINE"}],
         "channels": [{"sampler": 0, "target": {"node": 1, "path": "translation"}},
                      {"sampler": 1, "target": {"node": 2, "path": "rotation"}},
                      {"sampler": 2, "target": {"node": 1, "path": "scale"}}]}],
    "buffers": [{"byteLength": len(buf),
                 "uri": "data:application/octet-stream;base64," + base64.b64encode(bytes(buf)).decode()}],
    "bufferViews": views,
    "accessors": accs,
}
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keys_skin.gltf")
with open(out, "w") as fh:
    json.dump(doc, fh, indent=1)
    fh.write("\n")
