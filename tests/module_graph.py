#!/usr/bin/env python3
"""The module graph: which object file calls which (from nm over the built
archives), and every loop in it. A loop means two modules cannot be read,
tested or replaced one without the other. Exit 1 on a loop.
Usage: tests/module_graph.py build/librt.a build/librtgpu.a"""
import subprocess, sys
from collections import defaultdict

defs, uses = {}, defaultdict(set)
for archive in sys.argv[1:]:
    out = subprocess.run(["nm", "-A", archive], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        # "build/librt.a:scene.o:0000000000000000 T rt_scene_free"
        parts = line.split()
        if len(parts) < 2:
            continue
        obj = parts[0].split(":")[1]
        kind, sym = parts[-2], parts[-1]
        if kind in "TDBR" and len(kind) == 1:
            defs[sym] = obj
        elif kind == "U":
            uses[obj].add(sym)
graph = defaultdict(set)
for obj, syms in uses.items():
    for s in syms:
        d = defs.get(s)
        if d and d != obj:
            graph[obj].add(d)

# strongly connected components (Tarjan): each of size > 1 is a loop
index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
def visit(v):
    index[v] = low[v] = counter[0]; counter[0] += 1
    stack.append(v); on.add(v)
    for w in graph[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            comps.append(sorted(comp))
sys.setrecursionlimit(10000)
for v in list(graph):
    if v not in index:
        visit(v)
for c in comps:
    edges = [f"{a} -> {b}" for a in c for b in sorted(graph[a]) if b in c]
    print("module loop: " + ", ".join(c) + " (" + "; ".join(edges) + ")")
print(f"module graph: {len(graph)} modules, {sum(len(v) for v in graph.values())} edges, {len(comps)} loops")
sys.exit(1 if comps else 0)
