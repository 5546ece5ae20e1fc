/* kd_stats.c — the statistics of a kd-tree in the shared layout
 * (kd_layout.h), whichever builder made it: node, leaf and reference
 * counts, depth and the SAH cost. The CPU builder reports them, the
 * validator's callers, the GPU tests and the benchmark compute them on a
 * host copy; neither the builder nor the validator depends on the other.
 * docs/kdtree.md defines the SAH cost. */
#include "kd/kd_cpu.h"

static double area_d(RtAabb b)
{
    if (aabb_is_empty(b)) return 0.0;
    double x = (double)b.hi.x - b.lo.x, y = (double)b.hi.y - b.lo.y, z = (double)b.hi.z - b.lo.z;
    return 2.0 * (x * y + y * z + z * x);
}


/* SAH cost (docs/kdtree.md): sum over interior nodes of C_trav * SA(cell) /
 * SA(root) plus sum over leaves of C_isect * count * SA(cell) / SA(root).
 * Tolerates malformed trees (bounded walk); rt_kd_validate says what is wrong. */
void rt_kd_tree_stats(const RtKdTree *tree, float c_trav, float c_isect, RtKdStats *stats)
{
    stats->nodes = stats->leaves = stats->empty_leaves = stats->depth = 0;
    stats->references = 0;
    stats->avg_tris_per_leaf = 0.0;
    stats->sah_cost = 0.0;
    if (!tree || tree->node_count == 0 || !tree->nodes) return;
    double root = area_d(tree->bounds);
    double inv = root > 0.0 ? 1.0 / root : 0.0;
    RtKdFrame stack[RT_KD_CPU_MAX_DEPTH + 2];
    int sp = 0;
    stack[sp++] = (RtKdFrame){0, 0, tree->bounds};
    uint32_t full = 0;
    while (sp > 0 && stats->nodes < tree->node_count) {
        RtKdFrame f = stack[--sp];
        if (f.node >= tree->node_count) continue;
        RtKdNode n = tree->nodes[f.node];
        double p = inv > 0.0 ? area_d(f.cell) * inv : 1.0;
        stats->nodes++;
        if (f.depth > stats->depth) stats->depth = f.depth;
        if (kd_is_leaf(n)) {
            uint32_t c = kd_leaf_count(n);
            stats->leaves++;
            stats->references += c;
            if (c) full++;
            else stats->empty_leaves++;
            stats->sah_cost += (double)c_isect * c * p;
            continue;
        }
        stats->sah_cost += (double)c_trav * p;
        if (sp + 2 > (int)(sizeof stack / sizeof stack[0])) continue;
        RtAabb l, r;
        kd_child_cells(f.cell, n, &l, &r);
        stack[sp++] = (RtKdFrame){kd_right(n), f.depth + 1, r};
        stack[sp++] = (RtKdFrame){kd_left(n), f.depth + 1, l};
    }
    stats->avg_tris_per_leaf = full ? (double)stats->references / full : 0.0;
}
