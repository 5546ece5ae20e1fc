/* bvh_layout.h — THE BVH layout that the BVH builders (the CPU oracle's
 * LBVH, cuda/bvh's GPU LBVH) write and every BVH tracer (the CPU
 * traversal, the GPU kernels, their host emulation) reads. Included by C
 * and CUDA alike; docs/bvh.md shows the byte layout and the algorithms.
 *
 * A binary BVH in the layout of Aila & Laine 2009 ("Understanding the
 * efficiency of ray traversal on GPUs"): a node holds the boxes of BOTH
 * its children, so a traversal step is one 64-byte node load and two slab
 * tests, and the parent's box is never loaded.
 *
 * Arrays (all indices are uint32_t):
 *   nodes[]      RtBvhNode, 64 bytes. The root is nodes[0] and is never a
 *                leaf itself (a scene of one triangle has a root whose
 *                second child is an empty leaf). Builders may leave nodes
 *                that no path reaches (the LBVH's collapsed subtrees);
 *                node_count is the array's length, not the reachable count.
 *   tri_index[]  triangle ids; a leaf is a range [first, first + count) of
 *                it. Every non-degenerate triangle (kd_clip.h's
 *                rt_kd_tri_degenerate) is referenced exactly once; a
 *                degenerate one never.
 *   leaf_woop[]  the Woop rows (RtTriArrays.woop) of tri_index[k]'s
 *                triangle at 3k .. 3k + 2: a leaf's triangles lie one after
 *                the other, as Aila & Laine store them, so the walk tests a
 *                triangle without first loading its id (bvh_leaf_woop_copy
 *                fills it after a build given the Woop rows; the id is read
 *                on a hit only). Optional: without it the walk reads the id,
 *                then the scene's rows (RtBvhLeafRows says when it pays).
 * Triangle arrays: RtTriArrays (kd_layout.h), indexed by triangle id.
 *
 * Tie rules, followed by every BVH tracer: a child is entered when the ray's
 * interval meets its box (closed, widened by the tracer's eps as the kd
 * tracers widen theirs); the closest hit wins, ties to the lower triangle
 * id, so a BVH and a kd-tree over the same triangles give the same hits. */
#ifndef RT_BVH_LAYOUT_H
#define RT_BVH_LAYOUT_H

#include "kd/kd_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* count[k]'s top bit: child k is a leaf. */
#define RT_BVH_LEAF 0x80000000u
/* Most triangles in one leaf (the builders' collapse never goes beyond;
 * the tracers' leaf loop may rely on it). */
#define RT_BVH_MAX_LEAF 16u
/* Deepest path any builder makes: the LBVH's 30-bit Morton codes plus
 * 32 bits of index tie-break (Karras 2012) bound it by 62 + 1; the
 * tracers' stacks hold this many entries, so a walk never overflows. */
#define RT_BVH_MAX_DEPTH 64
/* Most tri_index entries a tree may have: the GPU walk packs a leaf's first
 * entry into 27 bits beside its count (trace_bvh.cuh); the tracers refuse a
 * larger tree with an error. */
#define RT_BVH_MAX_INDEX (1u << 27)

typedef struct RtBvhNode {
    /* children's boxes as Aila & Laine lay them out: three float4 loads
     *   b[0] = (l.lo.x, l.hi.x, l.lo.y, l.hi.y)
     *   b[1] = (r.lo.x, r.hi.x, r.lo.y, r.hi.y)
     *   b[2] = (l.lo.z, l.hi.z, r.lo.z, r.hi.z) */
    RtFloat4 b[3];
    /* child k: interior (count[k] == 0): node index child[k];
     * leaf (count[k] & RT_BVH_LEAF): tri_index[child[k] ..] of
     * count[k] & ~RT_BVH_LEAF triangles (0: an empty leaf, never entered:
     * its box is bvh_set_empty_child's) */
    uint32_t child[2];
    uint32_t count[2];
} RtBvhNode;

#ifdef __cplusplus
static_assert(sizeof(RtBvhNode) == 64, "RtBvhNode must stay 64 bytes (four float4 loads)");
#else
_Static_assert(sizeof(RtBvhNode) == 64, "RtBvhNode must stay 64 bytes (four float4 loads)");
#endif

RT_HD RtAabb bvh_child_box(const RtBvhNode *n, int k)
{
    RtAabb b;
    const RtFloat4 xy = n->b[k];
    b.lo = v3(xy.x, xy.z, k ? n->b[2].z : n->b[2].x);
    b.hi = v3(xy.y, xy.w, k ? n->b[2].w : n->b[2].y);
    return b;
}
RT_HD int bvh_child_is_leaf(const RtBvhNode *n, int k) { return (n->count[k] & RT_BVH_LEAF) != 0; }
RT_HD uint32_t bvh_child_count(const RtBvhNode *n, int k) { return n->count[k] & ~RT_BVH_LEAF; }

/* Sets child k: box, and either an interior node (leaf = 0, index = node)
 * or a leaf (index = first entry of tri_index, count triangles). */
RT_HD void bvh_set_child(RtBvhNode *n, int k, RtAabb box, int leaf, uint32_t index, uint32_t count)
{
    n->b[k] = f4(box.lo.x, box.hi.x, box.lo.y, box.hi.y);
    if (k) {
        n->b[2].z = box.lo.z;
        n->b[2].w = box.hi.z;
    } else {
        n->b[2].x = box.lo.z;
        n->b[2].y = box.hi.z;
    }
    n->child[k] = index;
    n->count[k] = leaf ? (RT_BVH_LEAF | count) : 0u;
}

/* Child k as an empty leaf (a one-triangle tree's second child, both
 * children of an empty tree's root): count 0 and a box that is one point,
 * +inf on every axis. Every slab test of the GPU walk fails on that box
 * (an axis's entry and exit are both +inf or both -inf, and the walk's
 * interval, clipped to the scene's finite box, is finite), so the walk
 * never tests the count of the child it enters. bvh_is_never_box says it
 * is this box (the validator's check). */
RT_HD void bvh_set_empty_child(RtBvhNode *n, int k)
{
    RtAabb never;
    never.lo = never.hi = v3(INFINITY, INFINITY, INFINITY);
    bvh_set_child(n, k, never, 1, 0u, 0u);
}
RT_HD int bvh_is_never_box(RtAabb b)
{
    return b.lo.x == INFINITY && b.lo.y == INFINITY && b.lo.z == INFINITY && b.hi.x == INFINITY &&
           b.hi.y == INFINITY && b.hi.z == INFINITY;
}

/* A BVH in host or device memory (the pointers say which; the struct is
 * the same). Capacities let a builder reuse the arrays frame after frame. */
typedef struct RtBvh {
    RtBvhNode *nodes;
    uint32_t *tri_index;
    uint32_t node_count, index_count; /* host-known counts (0 before a GPU build is read back) */
    uint32_t node_cap, index_cap;
    RtAabb bounds;          /* the root's box: bounds of all non-degenerate triangles */
    const RtAabb *d_bounds; /* device copy of `bounds` (GPU builder; NULL otherwise): the tracer
                               reads it, so a frame need not wait for the build's sizes */
    RtFloat4 *leaf_woop;    /* 3 * index_count rows in tri_index order (above); NULL when the
                               build was given no Woop rows: the walk then reads each leaf
                               triangle's id and the scene's rows */
    uint32_t leaf_woop_cap; /* in entries of tri_index (3 rows each) */
    uint32_t split_refs;    /* nonzero: spatial splits (split_top.h) made references to parts of
                               triangles: a triangle may be listed by several leaves, each leaf's
                               box bounds the part it holds, and together they cover it */
} RtBvh;

/* When a frame's BVH build makes leaf_woop (the pipeline's `leafrows`):
 * the copy costs a pass over the triangles (48 bytes each), and saves the
 * walk one dependent load per triangle test, so it pays where the frame's
 * rays far outnumber the triangles. auto: when the frame's pixels are at
 * least RT_BVH_LEAF_ROWS_PIXELS times the triangles. The copy costs about
 * 35 ps a triangle and saves about 4 ps a ray (of some 130: a primary ray
 * through Sponza); a frame casts about three rays a pixel (primary, shadow,
 * reflection), so the copy pays above some 3 pixels a triangle (docs/bvh.md
 * has the measurements). */
typedef enum RtBvhLeafRows {
    RT_BVH_LEAF_ROWS_AUTO = 0,
    RT_BVH_LEAF_ROWS_ON,
    RT_BVH_LEAF_ROWS_OFF
} RtBvhLeafRows;
#define RT_BVH_LEAF_ROWS_PIXELS 3.0

/* Whether a build for a frame of `pixels` over `triangles` makes leaf_woop. */
RT_HD int rt_bvh_leaf_rows_pay(int mode, double pixels, double triangles)
{
    if (mode == RT_BVH_LEAF_ROWS_ON) return 1;
    if (mode == RT_BVH_LEAF_ROWS_OFF) return 0;
    return pixels >= RT_BVH_LEAF_ROWS_PIXELS * triangles;
}

/* Entry k of leaf_woop: the rows of triangle tri_index[k] (every builder,
 * CPU and GPU, calls this after its tree is done when given Woop rows). */
RT_HD const RtFloat4 *bvh_leaf_woop_src(const uint32_t *tri_index, const RtFloat4 *woop, uint32_t k)
{
    return &woop[3 * (size_t)tri_index[k]];
}
RT_HD void bvh_leaf_woop_copy(const uint32_t *tri_index, const RtFloat4 *woop, uint32_t k, RtFloat4 *leaf_woop)
{
    const RtFloat4 *src = bvh_leaf_woop_src(tri_index, woop, k);
    RtFloat4 *dst = &leaf_woop[3 * (size_t)k];
    dst[0] = src[0];
    dst[1] = src[1];
    dst[2] = src[2];
}

/* What every BVH builder reports (the HUD, --stats, benchmarks). SAH cost
 * with the builder's C_trav and C_i (its leaf collapse's: 1 and 1.5 by
 * default; the kd-tree's are kd_sah.h's, so compare costs within a
 * structure, and frame times across them): cost = sum over reachable interior nodes of
 * C_trav * A(node) / A(root) + sum over leaves of C_i * count * A(leaf) /
 * A(root), A = surface area (the root counts as interior). */
typedef struct RtBvhStats {
    uint32_t nodes;           /* reachable interior nodes (the root included) */
    uint32_t leaves;          /* reachable non-empty leaves */
    uint32_t depth;           /* deepest leaf, the root at depth 0 */
    uint32_t max_leaf;        /* most triangles in a leaf */
    uint64_t references;      /* sum of leaf counts (a BVH: the non-degenerate triangles) */
    uint32_t triangles;       /* input triangles */
    uint32_t degenerate;      /* left out (kd_clip.h's rule) */
    double avg_tris_per_leaf;
    double sah_cost;
    double build_ms;
} RtBvhStats;

#ifdef __cplusplus
}
#endif
#endif
