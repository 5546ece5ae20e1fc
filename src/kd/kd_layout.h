/* kd_layout.h — THE kd-tree layout that both builders (CPU oracle, GPU
 * Zhou/Chang pipeline) write and both tracers (CPU renderer, GPU kernels) read.
 * Included by C and CUDA alike; docs/architecture.md shows the byte layout.
 *
 * Arrays (all indices are uint32_t):
 *   nodes[]        RtKdNode, 8 bytes. Root is nodes[0]. Children of an interior
 *                  node are siblings: left = nodes[c], right = nodes[c + 1]
 *                  ("sibling-adjacent", the natural output of a breadth-first
 *                  GPU build and equally easy for a depth-first CPU build).
 *   leaves[]       RtKdLeaf, 8 bytes: a range [first, first+count) in tri_index[].
 *   leaf_boxes[]   RtAabb per leaf: the leaf's cell clipped to the bounds of
 *                  its triangles (Hoedt's leaf skipping tests a ray against it).
 *   tri_index[]    triangle ids, referenced by leaves (a triangle that straddles
 *                  a split is referenced by both sides).
 * Triangle arrays (RtTriArrays, indexed by triangle id):
 *   verts[3*i+k]   vertex k of triangle i as float4 (w unused = 0).
 *   woop[3*i+k]    row k of Woop's world-to-unit-triangle transform.
 *
 * Tie rules, followed by every tracer:
 *   - A ray whose origin lies exactly on a split plane goes first to the side
 *     its direction points into (direction 0 on that axis: see next rule).
 *   - A ray parallel to the split plane (direction 0 on that axis) visits only
 *     the side that holds its origin; when the origin lies ON the plane it
 *     visits both children (the plane's own triangles may be on either side).
 *   - Triangles lying in a split plane are stored on one side, chosen by the
 *     builder; the rules above make that choice invisible to the tracer.
 *   - A hit counts when t lies in [t_min, t_max] of the current leaf's cell
 *     (closed interval), so a hit exactly on a shared face is found from the
 *     first leaf; the closest hit overall wins, ties to the lower triangle id.
 */
#ifndef RT_KD_LAYOUT_H
#define RT_KD_LAYOUT_H

#include "core/rt_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* bits[1:0] = axis (0,1,2) for interior nodes, 3 for a leaf. */
#define RT_KD_LEAF_TAG 3u
/* An interior node's bits 2 and 3 mark its left and right child as an empty
 * leaf (kd_mark_empty), so a walk skips such a child without loading it:
 * most leaves a ray meets in a SAH tree are empty (the cuts that carve off
 * empty space), and each would cost a node load, and a stack entry when it
 * is the far side. Bits 4..31 hold the left child's index. */
#define RT_KD_EMPTY_LEFT 4u
#define RT_KD_EMPTY_RIGHT 8u
#define RT_KD_CHILD_SHIFT 4
/* Largest node index (an interior node's 28 high bits) and leaf id. */
#define RT_KD_MAX_INDEX ((1u << 28) - 1u)
/* The deepest level of a tree (the root is level 0): every builder stays
 * within it (the SAH builders through rt_kd_max_depth, the Chang pipeline
 * through its depth guard), rt_kd_validate rejects deeper trees, and the
 * GPU tracer's full stack holds one entry per level of it (its local memory,
 * reserved for every resident thread, grows with it). Trees of millions of
 * triangles stay below 50 levels. */
#define RT_KD_MAX_DEPTH 64

typedef struct RtKdNode {
    uint32_t bits;  /* interior: axis | empty-child marks | (left_child << 4); leaf: 3 | (leaf_id << 2) */
    union {
        float split;       /* interior: split position on `axis` */
        uint32_t count;    /* leaf: number of triangles (copy of leaves[id].count,
                              so an empty leaf is skipped without a second load) */
    } u;
} RtKdNode;

typedef struct RtKdLeaf {
    uint32_t first; /* into tri_index[] */
    uint32_t count;
} RtKdLeaf;

#ifdef __cplusplus
static_assert(sizeof(RtKdNode) == 8, "RtKdNode must stay 8 bytes (one 64-bit load)");
static_assert(sizeof(RtKdLeaf) == 8, "RtKdLeaf must stay 8 bytes");
static_assert(sizeof(RtFloat4) == 16, "RtFloat4 must match float4");
static_assert(RT_KD_EMPTY_RIGHT == 2 * RT_KD_EMPTY_LEFT, "the marks are two adjacent bits, left first");
#else
_Static_assert(sizeof(RtKdNode) == 8, "RtKdNode must stay 8 bytes (one 64-bit load)");
_Static_assert(sizeof(RtKdLeaf) == 8, "RtKdLeaf must stay 8 bytes");
_Static_assert(sizeof(RtFloat4) == 16, "RtFloat4 must match float4");
_Static_assert(RT_KD_EMPTY_RIGHT == 2 * RT_KD_EMPTY_LEFT, "the marks are two adjacent bits, left first");
#endif

RT_HD int kd_is_leaf(RtKdNode n) { return (n.bits & 3u) == RT_KD_LEAF_TAG; }
RT_HD int kd_axis(RtKdNode n) { return (int)(n.bits & 3u); }
RT_HD float kd_split(RtKdNode n) { return n.u.split; }
RT_HD uint32_t kd_left(RtKdNode n) { return n.bits >> RT_KD_CHILD_SHIFT; }
RT_HD uint32_t kd_right(RtKdNode n) { return (n.bits >> RT_KD_CHILD_SHIFT) + 1u; }
/* Interior node n's empty-child marks: RT_KD_EMPTY_LEFT | RT_KD_EMPTY_RIGHT. */
RT_HD uint32_t kd_empty_children(RtKdNode n) { return n.bits & (RT_KD_EMPTY_LEFT | RT_KD_EMPTY_RIGHT); }
RT_HD uint32_t kd_leaf_id(RtKdNode n) { return n.bits >> 2; }
RT_HD uint32_t kd_leaf_count(RtKdNode n) { return n.u.count; }

RT_HD RtKdNode kd_make_interior(int axis, float split, uint32_t left_child)
{
    RtKdNode n;
    n.bits = (uint32_t)axis | (left_child << RT_KD_CHILD_SHIFT);
    n.u.split = split;
    return n;
}
/* The marks an interior node carries for its children l and r (every
 * builder applies them once the children are written: rt_kd_mark_empty on
 * the host, the GPU builders' last launch). rt_kd_validate rejects a mark on
 * a child that is not an empty leaf (the walk would miss its triangles); a
 * mark left out only costs the walk a visit. */
RT_HD uint32_t kd_empty_marks(RtKdNode l, RtKdNode r)
{
    return (kd_is_leaf(l) && kd_leaf_count(l) == 0u ? RT_KD_EMPTY_LEFT : 0u) |
           (kd_is_leaf(r) && kd_leaf_count(r) == 0u ? RT_KD_EMPTY_RIGHT : 0u);
}
/* Node i of nodes[0, count) with exactly the marks its children call for
 * (a leaf, or a node whose children lie past count, as it is): the one
 * step of rt_kd_mark_empty, the GPU builders' kd_mark_empty launch and
 * rt_kd_marks_missing. */
RT_HD RtKdNode kd_with_marks(const RtKdNode *nodes, uint32_t count, uint32_t i)
{
    RtKdNode n = nodes[i];
    if (kd_is_leaf(n) || kd_right(n) >= count) return n;
    n.bits = (n.bits & ~(RT_KD_EMPTY_LEFT | RT_KD_EMPTY_RIGHT)) |
             kd_empty_marks(nodes[kd_left(n)], nodes[kd_right(n)]);
    return n;
}
RT_HD RtKdNode kd_make_leaf(uint32_t leaf_id, uint32_t count)
{
    RtKdNode n;
    n.bits = RT_KD_LEAF_TAG | (leaf_id << 2);
    n.u.count = count;
    return n;
}
/* The cells of interior node n's children: its cell cut at the split plane. */
RT_HD void kd_child_cells(RtAabb cell, RtKdNode n, RtAabb *l, RtAabb *r)
{
    *l = *r = cell;
    v3_set(&l->hi, kd_axis(n), kd_split(n));
    v3_set(&r->lo, kd_axis(n), kd_split(n));
}

/* A node on a walk's stack, with its depth and cell (kd_child_cells). */
typedef struct RtKdFrame {
    uint32_t node, depth;
    RtAabb cell;
} RtKdFrame;

/* A tree in host or device memory (the pointers say which; the struct is the
 * same). Capacities let a builder reuse the arrays frame after frame. */
typedef struct RtKdTree {
    RtKdNode *nodes;
    RtKdLeaf *leaves;
    RtAabb *leaf_boxes;
    uint32_t *tri_index;
    uint32_t node_count, leaf_count, index_count;
    uint32_t node_cap, leaf_cap, index_cap;
    RtAabb bounds;   /* root cell: bounds of all (non-degenerate) triangles */
    const RtAabb *d_bounds; /* device copy of `bounds` (GPU builder; NULL otherwise): the
                               tracer reads it, so a frame need not wait for the build's sizes */
} RtKdTree;

/* The triangle arrays a tree indexes (after animation). */
typedef struct RtTriArrays {
    RtFloat4 *verts; /* 3 per triangle */
    RtFloat4 *woop;  /* 3 per triangle, see rt_woop_rows */
    uint32_t count;
} RtTriArrays;

/* Statistics every builder reports (the HUD, --stats and benchmarks print them). */
typedef struct RtKdStats {
    uint32_t nodes, leaves, empty_leaves, depth;
    uint64_t references;         /* sum of leaf counts */
    uint32_t triangles;          /* input triangles */
    uint32_t degenerate;         /* zero-area / non-finite, kept out of the tree */
    double avg_tris_per_leaf;    /* over non-empty leaves */
    double sah_cost;             /* rt_kd_sah_cost with the builder's C_trav, C_i */
    double build_ms;
} RtKdStats;

/* Woop 2004: the affine map M^-1 (p - v0) that takes triangle (v0,v1,v2) to
 * the unit triangle (0,0,0),(1,0,0),(0,1,0), with the (unnormalised) normal
 * mapped to +z. Rows as float4 (xyz = row of M^-1, w = -row . v0). Returns 0
 * for a degenerate triangle (zero area or non-finite), which is never put in
 * a tree. */
RT_HD int rt_woop_rows(RtVec3 v0, RtVec3 v1, RtVec3 v2, RtFloat4 rows[3])
{
    /* rounded alike on both sides (rt_base.h's RT_X*) */
    RtVec3 e1 = v3x_sub(v1, v0), e2 = v3x_sub(v2, v0), n = v3x_cross(e1, e2);
    /* M = [e1 e2 n] (columns); det = n . (e1 x e2) = |n|^2 */
    float det = v3x_dot(n, n);
    if (!(det > 0.0f) || !isfinite(det)) return 0;
    float inv = RT_XDIV(1.0f, det);
    /* rows of M^-1 for M = [e1 e2 n] with n = e1 x e2 */
    RtVec3 r0 = v3x_scale(v3x_cross(e2, n), inv);
    RtVec3 r1 = v3x_scale(v3x_cross(n, e1), inv);
    RtVec3 r2 = v3x_scale(n, inv);
    rows[0] = f4(r0.x, r0.y, r0.z, -v3x_dot(r0, v0));
    rows[1] = f4(r1.x, r1.y, r1.z, -v3x_dot(r1, v0));
    rows[2] = f4(r2.x, r2.y, r2.z, -v3x_dot(r2, v0));
    return isfinite(rows[0].w) && isfinite(rows[1].w) && isfinite(rows[2].w);
}

#ifdef __cplusplus
}
#endif
#endif
