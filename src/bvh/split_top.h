/* split_top.h — a top of spatial splits over H-PLOC (issue 21's trace).
 *
 * H-PLOC's tree needs 1.5x the node visits of an SBVH on Sponza's view;
 * docs/bvh.md ("Spatial splits where they pay") measured that nearly all
 * of the difference is the SBVH's spatial splits in its top levels: a few
 * large triangles (floors, walls) bloat the boxes of the top nodes. So the
 * tree is built in two parts:
 *
 *   1. the top: `depth` levels, top-down, over references (a triangle id
 *      and a box: the triangle's, or the part of it a spatial split left on
 *      one side). Each node of at least `min_refs` references at the
 *      current level compares two binned SAH splits, RT_SPLIT_TOP_BINS - 1
 *      planes an axis over the node's box: an object split (references by
 *      their centre's bin) and, where the object split's children overlap
 *      by more than `alpha` of the root's area, a spatial split (Stich et
 *      al. 2009: a reference clipped into each bin it spans, both sides
 *      given the clipped parts of a straddler). It is split only when the
 *      spatial split is the cheaper (object splits are H-PLOC's to make:
 *      binned ones made the Cornell box's tree worse, 4.80 -> 5.91 visits a
 *      ray), and only while the references stay within max_refs
 *      (split_top_max_refs: the GPU's arrays are sized before the build).
 *      A scene where no spatial split pays gets H-PLOC's tree, bit for bit;
 *   2. under each leaf of the top, H-PLOC over its references (hploc.h):
 *      one sort of keys whose top bits are the leaf (split_top_key), so
 *      each leaf's references are one run of the sorted keys; the radix
 *      tree and the clustering of a run see only the run (positions
 *      counted from its start: split_top_boundary), and its clustering
 *      ends in one cluster, as the root's does, and goes no higher; the
 *      top's nodes are linked above (the GPU: cuda/bvh/split_top_gpu.cu).
 *
 * Depth: where the top and a leaf's subtree together pass RT_BVH_MAX_DEPTH,
 * every leaf gets its radix tree instead (hploc.h's fallback, run by run).
 *
 * The rules below are written once for the CPU oracle (split_top_cpu.c)
 * and the GPU. A triangle may then be referenced by more than one leaf;
 * its references' boxes cover it (RtBvh.split_refs tells the validator). */
#ifndef RT_SPLIT_TOP_H
#define RT_SPLIT_TOP_H

#include "bvh/lbvh.h"
#include "kd/kd_clip.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RT_SPLIT_TOP_BINS 8
/* The top's depth bound: at most 2^depth leaves, whose index takes the top
 * bits of a sort key, and the GPU's bins of a level fit shared memory. */
#define RT_SPLIT_TOP_MAX_DEPTH 4
#define RT_SPLIT_TOP_MAX_LEAVES (1 << RT_SPLIT_TOP_MAX_DEPTH)
#define RT_SPLIT_TOP_MAX_NODES (2 * RT_SPLIT_TOP_MAX_LEAVES - 1)

typedef struct RtSplitTopParams {
    int depth;         /* levels of the top, 0..RT_SPLIT_TOP_MAX_DEPTH (0: H-PLOC alone); default 3 */
    float alpha;       /* spatial splits where the object split's children overlap by more than this
                          share of the root's area; default 1e-5 (Stich et al.) */
    uint32_t min_refs; /* a node of fewer references is a leaf of the top; default 64 */
    float extra;       /* the references spatial splits may add, a share of the triangles; default
                          1/16 (Sponza's top adds 2.3 %) */
} RtSplitTopParams;

RT_HD RtSplitTopParams rt_split_top_params_default(void)
{
    RtSplitTopParams p;
    p.depth = 3;
    p.alpha = 1e-5f;
    p.min_refs = 64u;
    p.extra = 0.0625f;
    return p;
}

/* What a build with a top reports (the CPU oracle's and the GPU's alike). */
typedef struct RtSplitTopInfo {
    uint32_t leaves;        /* the top's leaves (1: no spatial split paid: H-PLOC's own tree) */
    uint32_t refs;          /* references under the top (the valid triangles when it has one leaf) */
    uint32_t cluster_depth; /* the clustered tree's depth: the top's levels above each leaf's subtree */
    int fallback;           /* 1: it passed RT_BVH_MAX_DEPTH, every leaf got its radix tree */
} RtSplitTopInfo;

/* The most references a top over `tris` triangles may make. */
RT_HD uint32_t split_top_max_refs(uint32_t tris, float extra)
{
    const double m = (double)tris + floor((double)tris * (double)extra);
    return m < 4294967295.0 ? (uint32_t)m : 4294967295u;
}

/* ---- boxes and bins ---------------------------------------------------------------- */

/* A box's surface area (0 for the empty box). */
RT_HD float split_top_area(RtAabb b)
{
    if (aabb_is_empty(b)) return 0.0f;
    const float dx = RT_XSUB(b.hi.x, b.lo.x), dy = RT_XSUB(b.hi.y, b.lo.y), dz = RT_XSUB(b.hi.z, b.lo.z);
    return RT_XMUL(2.0f, RT_XADD(RT_XADD(RT_XMUL(dx, dy), RT_XMUL(dy, dz)), RT_XMUL(dz, dx)));
}

/* The union with a total order on the coordinates (rt_f2ord: -0 below
 * +0), so that it does not depend on the order of its terms: the GPU
 * takes its unions with atomics in any order. */
RT_HD float split_top_min(float a, float b) { return rt_f2ord(b) < rt_f2ord(a) ? b : a; }
RT_HD float split_top_max(float a, float b) { return rt_f2ord(b) > rt_f2ord(a) ? b : a; }
RT_HD RtAabb split_top_union(RtAabb a, RtAabb b)
{
    if (aabb_is_empty(b)) return a;
    if (aabb_is_empty(a)) return b;
    a.lo = v3(split_top_min(a.lo.x, b.lo.x), split_top_min(a.lo.y, b.lo.y), split_top_min(a.lo.z, b.lo.z));
    a.hi = v3(split_top_max(a.hi.x, b.hi.x), split_top_max(a.hi.y, b.hi.y), split_top_max(a.hi.z, b.hi.z));
    return a;
}

RT_HD RtAabb split_top_meet(RtAabb a, RtAabb b)
{
    RtAabb c;
    c.lo = v3(fmaxf(a.lo.x, b.lo.x), fmaxf(a.lo.y, b.lo.y), fmaxf(a.lo.z, b.lo.z));
    c.hi = v3(fminf(a.hi.x, b.hi.x), fminf(a.hi.y, b.hi.y), fminf(a.hi.z, b.hi.z));
    if (!(c.lo.x <= c.hi.x && c.lo.y <= c.hi.y && c.lo.z <= c.hi.z)) return aabb_empty();
    return c;
}

/* b with its extent on `axis` replaced by [lo, hi]. */
RT_HD RtAabb split_top_slab(RtAabb b, int axis, float lo, float hi)
{
    if (axis == 0) b.lo.x = lo, b.hi.x = hi;
    else if (axis == 1) b.lo.y = lo, b.hi.y = hi;
    else b.lo.z = lo, b.hi.z = hi;
    return b;
}

RT_HD float split_top_centre(RtAabb b, int axis)
{
    return RT_XMUL(RT_XADD(v3_get(b.lo, axis), v3_get(b.hi, axis)), 0.5f);
}

/* A reference (triangle v[3], box `ref`) straddling plane pos of axis a
 * of a node's box: the boxes of its parts on either side, each the
 * triangle's part inside the reference's box cut to that side's slab, its
 * bounds rounded outward (kd_clip.h's perfect split: one clip of the
 * triangle to the reference's box, then the cut; empty for a side the
 * triangle misses). */
RT_HD void split_top_cut(const RtFloat4 v[3], RtAabb ref, RtAabb node, int a, float pos, RtAabb out[2])
{
    RtAabb child[2];
    child[0] = split_top_meet(ref, split_top_slab(node, a, v3_get(node.lo, a), pos));
    child[1] = split_top_meet(ref, split_top_slab(node, a, pos, v3_get(node.hi, a)));
    const int mask = rt_tri_split_boxes(v, ref, a, pos, child, out);
    for (int c = 0; c < 2; c++)
        if (!(mask >> c & 1) || aabb_is_empty(child[c])) out[c] = aabb_empty();
}

/* The bin of coordinate x in [lo, lo + RT_SPLIT_TOP_BINS / scale), clamped:
 * scale = RT_SPLIT_TOP_BINS / extent, 0 for a flat axis (every x in bin 0). */
RT_HD int split_top_bin(float x, float lo, float scale)
{
    const float f = RT_XMUL(RT_XSUB(x, lo), scale);
    if (!(f > 0.0f)) return 0;
    if (f >= (float)(RT_SPLIT_TOP_BINS - 1)) return RT_SPLIT_TOP_BINS - 1;
    return (int)f;
}
RT_HD float split_top_scale(float lo, float hi)
{
    const float e = RT_XSUB(hi, lo);
    return e > 0.0f && isfinite(e) ? RT_XDIV((float)RT_SPLIT_TOP_BINS, e) : 0.0f;
}
/* Plane k (1..RT_SPLIT_TOP_BINS - 1) of the bins over [lo, hi]: the lower
 * face of bin k. */
RT_HD float split_top_plane(float lo, float hi, int k)
{
    return RT_XADD(lo, RT_XMUL(RT_XSUB(hi, lo), RT_XDIV((float)k, (float)RT_SPLIT_TOP_BINS)));
}

/* Face b (0..RT_SPLIT_TOP_BINS) of the bins over [lo, hi]: lo, the planes,
 * hi. A straddling reference's part in spatial bin b of axis `axis` over
 * the node's box: its box cut to the bin's slab. Not the clipped triangle's
 * box (Stich et al. clip it): the bins only choose the plane, the chosen
 * plane's straddlers are clipped exactly (split_top_cut), and clipping
 * a straddler into every bin it spans cost the GPU's binning most of its
 * time. */
RT_HD float split_top_bin_face(float lo, float hi, int b)
{
    return b == 0 ? lo : b == RT_SPLIT_TOP_BINS ? hi : split_top_plane(lo, hi, b);
}
/* The part in the slab [s0, s1] of the node's axis (the bin's faces,
 * split_top_bin_face(b) and (b + 1): the GPU keeps them per node). */
RT_HD RtAabb split_top_bin_part_at(RtAabb ref, RtAabb node, int axis, float s0, float s1)
{
    return split_top_meet(ref, split_top_slab(node, axis, s0, s1));
}
RT_HD RtAabb split_top_bin_part(RtAabb ref, RtAabb node, int axis, int b)
{
    const float lo = v3_get(node.lo, axis), hi = v3_get(node.hi, axis);
    return split_top_bin_part_at(ref, node, axis, split_top_bin_face(lo, hi, b), split_top_bin_face(lo, hi, b + 1));
}

/* The SAH cost of a split, relative to a leaf's per-reference cost: both
 * sides' areas times their references (the node's own area and C_trav are
 * the same for every candidate of a node, so they are left out). */
RT_HD float split_top_cost(float left_area, uint32_t left_refs, float right_area, uint32_t right_refs)
{
    return RT_XADD(RT_XMUL(left_area, (float)left_refs), RT_XMUL(right_area, (float)right_refs));
}

/* One axis's bins of a node: the union of the (clipped) reference boxes in
 * each bin, the references whose box starts there (enter) and ends there
 * (leave); an object split's bins count each reference once in both. */
typedef struct SplitTopBins {
    RtAabb box[RT_SPLIT_TOP_BINS];
    uint32_t enter[RT_SPLIT_TOP_BINS], leave[RT_SPLIT_TOP_BINS];
} SplitTopBins;

/* A node's split: spatial or object, the axis, the plane k (its lower
 * bins left), the cost; added: the references it makes beyond the node's
 * (a straddler on both sides; its parts may yet turn out empty). */
typedef struct SplitTopChoice {
    int spatial, axis, k;
    float cost;
    uint32_t added;
} SplitTopChoice;

/* The planes of one axis's bins: the cheapest kept in *best when cheaper
 * (ties keep the earlier: lower plane), its sides' boxes in side (may be
 * NULL). */
RT_HD void split_top_sweep(const SplitTopBins *b, int spatial, int axis, uint32_t count, SplitTopChoice *best,
                           RtAabb side[2])
{
    enum { B = RT_SPLIT_TOP_BINS };
    RtAabb right[B];
    uint32_t nr[B];
    right[B - 1] = b->box[B - 1], nr[B - 1] = b->leave[B - 1];
    for (int i = B - 2; i >= 0; i--)
        right[i] = split_top_union(right[i + 1], b->box[i]), nr[i] = nr[i + 1] + b->leave[i];
    RtAabb left = aabb_empty();
    uint32_t nl = 0;
    for (int k = 1; k < B; k++) {
        left = split_top_union(left, b->box[k - 1]), nl += b->enter[k - 1];
        if (!nl || !nr[k]) continue;
        const float c = split_top_cost(split_top_area(left), nl, split_top_area(right[k]), nr[k]);
        if (!(c < best->cost)) continue;
        best->spatial = spatial, best->axis = axis, best->k = k, best->cost = c;
        best->added = nl + nr[k] > count ? nl + nr[k] - count : 0u;
        if (side) side[0] = left, side[1] = right[k];
    }
}

/* One group of a node's bins on its own (group g: object bins of axis g,
 * g < 3, else spatial bins of axis g - 3): its cheapest plane (cost
 * INFINITY: none, or a flat axis) and, for an object split, its sides.
 * The GPU sweeps a group with 8 lanes to the same choice (split_top_gpu.cu,
 * sweep_lanes). */
RT_HD SplitTopChoice split_top_sweep_one(const SplitTopBins *b, int g, RtAabb box, uint32_t count, RtAabb side[2])
{
    SplitTopChoice c;
    c.spatial = g >= 3, c.axis = g % 3, c.k = 0, c.cost = INFINITY, c.added = 0;
    side[0] = side[1] = aabb_empty();
    if (split_top_scale(v3_get(box.lo, c.axis), v3_get(box.hi, c.axis)) != 0.0f)
        split_top_sweep(b, c.spatial, c.axis, count, &c, g < 3 ? side : NULL);
    return c;
}

/* A node's split from its six groups' sweeps (split_top_sweep_one, in
 * group order; obj_side: the object groups' sides): the best spatial split
 * when it is cheaper than the best object split and wanted (the object
 * split's sides overlap by more than alpha * root_area, or there is none).
 * Ties keep the lower axis. 0: no split pays. */
RT_HD int split_top_combine(const SplitTopChoice g[6], const RtAabb obj_side[3][2], float alpha, float root_area,
                            SplitTopChoice *out)
{
    SplitTopChoice best = g[0];
    int at = 0;
    for (int a = 1; a < 3; a++)
        if (g[a].cost < best.cost) best = g[a], at = a;
    const int want = !(best.cost < INFINITY) ||
                     split_top_area(split_top_meet(obj_side[at][0], obj_side[at][1])) > RT_XMUL(alpha, root_area);
    for (int a = 3; want && a < 6; a++)
        if (g[a].cost < best.cost) best = g[a];
    *out = best;
    return best.cost < INFINITY && best.spatial;
}

/* A node of `count` references in `box`, its object bins obj[3] and
 * spatial bins spa[3] (by axis): split_top_combine over the six sweeps. */
RT_HD int split_top_choose(const SplitTopBins obj[3], const SplitTopBins spa[3], RtAabb box, uint32_t count,
                           float alpha, float root_area, SplitTopChoice *out)
{
    SplitTopChoice g[6];
    RtAabb side[3][2], none[2];
    for (int a = 0; a < 3; a++) {
        g[a] = split_top_sweep_one(&obj[a], a, box, count, side[a]);
        g[a + 3] = split_top_sweep_one(&spa[a], a + 3, box, count, none);
    }
    return split_top_combine(g, (const RtAabb(*)[2])side, alpha, root_area, out);
}

/* The place of a node's spatial split (box: the node's), once a node. */
RT_HD float split_top_pos(RtAabb box, int axis, int k)
{
    return split_top_plane(v3_get(box.lo, axis), v3_get(box.hi, axis), k);
}
/* A reference's side of the split at pos (split_top_pos) on axis: 0 left,
 * 1 right, 2 both (a straddler, clipped to each side's slab). */
RT_HD int split_top_side_at(RtAabb ref, int axis, float pos)
{
    if (v3_get(ref.hi, axis) <= pos) return 0;
    if (v3_get(ref.lo, axis) >= pos) return 1;
    return 2;
}

/* ---- the keys under the top ------------------------------------------------------ */

/* Bits a leaf index takes at the top of a key: none for one leaf (the
 * keys are then H-PLOC's own). */
RT_HD int split_top_leaf_bits(uint32_t leaves)
{
    int b = 0;
    while (b < 31 && (1u << b) < leaves) b++;
    return b;
}

/* The sort key of a reference in top leaf `leaf` (its 30-bit Morton code
 * in the leaf's box): the leaf above the code's highest bits. */
RT_HD uint32_t split_top_key(uint32_t leaf, int bits, uint32_t morton)
{
    if (bits == 0 || morton == RT_LBVH_INVALID) return morton;
    const uint32_t m = bits > 2 ? morton >> (bits - 2) : morton;
    return leaf << (32 - bits) | m;
}

/* Sorted keys i and i + 1 of a run starting at `start` (lbvh_boundary
 * with positions counted from the run's start, so the run's radix tree is
 * the one of its keys alone). */
RT_HD uint64_t split_top_boundary(const uint32_t *codes, uint32_t start, uint32_t i)
{
    return ((uint64_t)(codes[i] ^ codes[i + 1]) << 32) | (uint64_t)((i - start) ^ (i - start + 1u));
}

/* The radix node of keys [lo, hi] of the run [s, e]: 1 if its parent's left
 * child (lbvh_is_left_child within the run; the run [0, n - 1] is it). */
RT_HD int split_top_is_left(const uint32_t *codes, uint32_t s, uint32_t e, uint32_t lo, uint32_t hi)
{
    return lo == s || (hi != e && split_top_boundary(codes, s, hi) < split_top_boundary(codes, s, lo - 1));
}

#ifdef __cplusplus
}
#endif
#endif
