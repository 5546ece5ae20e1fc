/* bvh_stats.c — the statistics of a BVH in the shared layout
 * (bvh_layout.h), whichever builder made it: the reachable nodes and
 * leaves, depth, references and the SAH cost with the kd-tree's constants,
 * so the two structures' costs compare. The CPU builder reports them, the
 * GPU tests and the benchmark compute them on a host copy; docs/bvh.md
 * defines the SAH cost. */
#include "bvh/bvh_cpu.h"

static double area_d(RtAabb b)
{
    if (aabb_is_empty(b)) return 0.0;
    double x = (double)b.hi.x - b.lo.x, y = (double)b.hi.y - b.lo.y, z = (double)b.hi.z - b.lo.z;
    return 2.0 * (x * y + y * z + z * x);
}

typedef struct BvhFrame {
    uint32_t node, depth;
    double area; /* of the node's box (the root's: bounds) */
} BvhFrame;

/* SAH cost: C_trav * A(node) / A(root) for every reachable interior node
 * (the root included) plus C_isect * count * A(leaf) / A(root) for every
 * leaf. Tolerates malformed trees (indices checked, at most node_count
 * nodes, a bounded stack); rt_bvh_validate says what is wrong. */
void rt_bvh_tree_stats(const RtBvh *bvh, const RtTriArrays *tris, float c_trav, float c_isect,
                       RtBvhStats *stats)
{
    stats->nodes = stats->leaves = stats->depth = stats->max_leaf = 0;
    stats->references = 0;
    stats->triangles = stats->degenerate = 0;
    stats->avg_tris_per_leaf = 0.0;
    stats->sah_cost = 0.0;
    if (tris) {
        stats->triangles = tris->count;
        for (uint32_t i = 0; i < tris->count; i++)
            stats->degenerate += (uint32_t)rt_kd_tri_degenerate(tris, i);
    }
    if (!bvh || bvh->node_count == 0 || !bvh->nodes) return;
    double root = area_d(bvh->bounds);
    double inv = root > 0.0 ? 1.0 / root : 0.0;
    BvhFrame stack[2 * RT_BVH_MAX_DEPTH + 2];
    int sp = 0;
    stack[sp++] = (BvhFrame){0, 0, root};
    while (sp > 0 && stats->nodes < bvh->node_count) {
        BvhFrame f = stack[--sp];
        const RtBvhNode *n = &bvh->nodes[f.node];
        stats->nodes++;
        stats->sah_cost += (double)c_trav * (inv > 0.0 ? f.area * inv : 1.0);
        for (int k = 1; k >= 0; k--) { /* the left child on top: walked first */
            double a = area_d(bvh_child_box(n, k));
            double p = inv > 0.0 ? a * inv : 1.0;
            if (bvh_child_is_leaf(n, k)) {
                uint32_t c = bvh_child_count(n, k);
                if (c == 0) continue; /* an empty leaf: never entered */
                stats->leaves++;
                stats->references += c;
                if (c > stats->max_leaf) stats->max_leaf = c;
                if (f.depth + 1 > stats->depth) stats->depth = f.depth + 1;
                stats->sah_cost += (double)c_isect * c * p;
                continue;
            }
            uint32_t child = n->child[k];
            if (child < bvh->node_count && sp < (int)(sizeof stack / sizeof stack[0]))
                stack[sp++] = (BvhFrame){child, f.depth + 1, a};
        }
    }
    stats->avg_tris_per_leaf = stats->leaves ? (double)stats->references / stats->leaves : 0.0;
}
