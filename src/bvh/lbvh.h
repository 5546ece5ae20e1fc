/* lbvh.h — Karras 2012, "Maximizing parallelism in the construction of
 * BVHs, octrees, and k-d trees" (seed 002's LBVH), with the arithmetic
 * written once for the CPU oracle (bvh_build_cpu.c) and the GPU builder
 * (cuda/bvh/lbvh_gpu.cu): the same inputs give both sides the same tree,
 * bit for bit (tests/test_gpu_bvh.c compares them).
 *
 * The steps, each a kernel on the GPU and a loop on the CPU:
 *   1. a box per triangle (empty for a degenerate one) and the scene box;
 *   2. a 30-bit Morton code of each box's centre in the scene box
 *      (RT_LBVH_INVALID for a degenerate triangle, which sorts last and
 *      is left out); sort (code, triangle id) pairs, ids ascending within a
 *      code, so the order is unique;
 *   3. the radix tree: internal node i of the n - 1 finds its key range and
 *      split by the delta-prefix rule (Karras Fig. 4; equal codes are told
 *      apart by their sorted index, the "augmented" key of §4);
 *   4. bottom-up, the second child to arrive finishes its parent (an atomic
 *      flag per node): the box, and the SAH decision to collapse a subtree
 *      of at most max_leaf triangles into one leaf (its key range is one
 *      contiguous run of the sorted ids, so the leaf needs no copy).
 * Karras internal node i is output node i (bvh_layout.h): the root is 0;
 * nodes inside a collapsed subtree stay in the array, unreachable. */
#ifndef RT_LBVH_H
#define RT_LBVH_H

#include "bvh/bvh_layout.h"
#include "kd/kd_clip.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sort key of a degenerate triangle: above every 30-bit code. */
#define RT_LBVH_INVALID 0xffffffffu

typedef struct RtLbvhParams {
    float c_trav;  /* SAH cost of an interior node; default 1.0 (the kd-tree's, kd_cpu.h) */
    float c_isect; /* SAH cost per triangle; default 1.5 (the kd-tree's own are kd_sah.h's) */
    int max_leaf;  /* largest collapsed leaf, 1..RT_BVH_MAX_LEAF; default 8; 1 = Karras's
                      one triangle per leaf */
} RtLbvhParams;

/* ---- step 1: boxes ---------------------------------------------------------- */

/* min/max with a fixed tie rule: fminf(-0, +0) may give either zero, and
 * the host's and the device's differ, so the two trees would differ in a
 * sign bit. No NaN reaches these (a degenerate triangle's box is empty). */
RT_HD float lbvh_min(float a, float b) { return b < a ? b : a; }
RT_HD float lbvh_max(float a, float b) { return b > a ? b : a; }
RT_HD RtAabb lbvh_union(RtAabb a, RtAabb b)
{
    a.lo = v3(lbvh_min(a.lo.x, b.lo.x), lbvh_min(a.lo.y, b.lo.y), lbvh_min(a.lo.z, b.lo.z));
    a.hi = v3(lbvh_max(a.hi.x, b.hi.x), lbvh_max(a.hi.y, b.hi.y), lbvh_max(a.hi.z, b.hi.z));
    return a;
}

/* Triangle i's box, empty for a degenerate one (rt_kd_tri_degenerate_v). */
RT_HD RtAabb lbvh_tri_box(const RtFloat4 v[3], const RtFloat4 w[3])
{
    if (rt_kd_tri_degenerate_v(v, w)) return aabb_empty();
    RtAabb b = aabb_empty();
    for (int k = 0; k < 3; k++) {
        RtAabb p = {f4_xyz(v[k]), f4_xyz(v[k])};
        b = lbvh_union(b, p);
    }
    return b;
}

/* Surface area of a box that is not empty, rounded alike on both sides
 * (no test: PLOC's clusters are never empty, and its search computes this
 * most often of all). */
RT_HD float lbvh_area_nonempty(RtAabb b)
{
    float dx = RT_XSUB(b.hi.x, b.lo.x), dy = RT_XSUB(b.hi.y, b.lo.y), dz = RT_XSUB(b.hi.z, b.lo.z);
    float s = RT_XADD(RT_XADD(RT_XMUL(dx, dy), RT_XMUL(dy, dz)), RT_XMUL(dz, dx));
    return RT_XMUL(2.0f, s);
}

/* Surface area (0 for an empty box). */
RT_HD float lbvh_area(RtAabb b) { return aabb_is_empty(b) ? 0.0f : lbvh_area_nonempty(b); }

/* ---- step 2: Morton codes ---------------------------------------------------- */

/* 10 bits of v spread to every third bit (Karras's expandBits). */
RT_HD uint32_t lbvh_expand_bits(uint32_t v)
{
    v &= 0x3ffu;
    v = (v * 0x00010001u) & 0xff0000ffu;
    v = (v * 0x00000101u) & 0x0f00f00fu;
    v = (v * 0x00000011u) & 0xc30c30c3u;
    v = (v * 0x00000005u) & 0x49249249u;
    return v;
}

/* Per axis, the factor that maps the scene box onto [0, 1024); 0 for a
 * flat axis (every centre quantises to 0 there). */
RT_HD RtVec3 lbvh_scale(RtAabb scene)
{
    float s[3];
    for (int a = 0; a < 3; a++) {
        float e = RT_XSUB(v3_get(scene.hi, a), v3_get(scene.lo, a));
        s[a] = e > 0.0f && isfinite(e) ? RT_XDIV(1024.0f, e) : 0.0f;
    }
    return v3(s[0], s[1], s[2]);
}

RT_HD uint32_t lbvh_quantise(float c, float lo, float scale)
{
    float x = RT_XMUL(RT_XSUB(c, lo), scale);
    if (!(x > 0.0f)) return 0u;     /* below, or NaN from an infinite scale */
    if (x >= 1023.0f) return 1023u;
    return (uint32_t)x;
}

/* The 30-bit code of box b's centre (x in the highest bit of each triple);
 * RT_LBVH_INVALID for an empty box. */
RT_HD uint32_t lbvh_morton(RtAabb b, RtAabb scene, RtVec3 scale)
{
    if (aabb_is_empty(b)) return RT_LBVH_INVALID;
    uint32_t q[3];
    for (int a = 0; a < 3; a++) {
        float c = RT_XMUL(RT_XADD(v3_get(b.lo, a), v3_get(b.hi, a)), 0.5f);
        q[a] = lbvh_quantise(c, v3_get(scene.lo, a), v3_get(scale, a));
    }
    return (lbvh_expand_bits(q[0]) << 2) | (lbvh_expand_bits(q[1]) << 1) | lbvh_expand_bits(q[2]);
}

/* ---- step 3: the radix tree ------------------------------------------------------ */

RT_HD int lbvh_clz(uint32_t x)
{
#ifdef __CUDA_ARCH__
    return __clz((int)x);
#else
    return x ? __builtin_clz(x) : 32;
#endif
}

/* delta(i, j): the common prefix of sorted keys i and j, the index
 * breaking ties (32 + prefix of i ^ j); -1 when j is outside [0, n). */
RT_HD int lbvh_delta(const uint32_t *codes, uint32_t n, int64_t i, int64_t j)
{
    if (j < 0 || j >= (int64_t)n) return -1;
    uint32_t a = codes[i], b = codes[j];
    if (a != b) return lbvh_clz(a ^ b);
    return 32 + lbvh_clz((uint32_t)i ^ (uint32_t)j);
}

/* Internal node i (0 <= i < n - 1, n >= 2): its key range [*first, *last]
 * and its split: the left child covers [first, split], the right
 * [split + 1, last]; a child of one key is a leaf (Karras Fig. 4). */
RT_HD void lbvh_node_range(const uint32_t *codes, uint32_t n, uint32_t i, uint32_t *first,
                           uint32_t *last, uint32_t *split)
{
    int64_t ii = i;
    int d = lbvh_delta(codes, n, ii, ii + 1) > lbvh_delta(codes, n, ii, ii - 1) ? 1 : -1;
    int dmin = lbvh_delta(codes, n, ii, ii - d);
    int64_t lmax = 2;
    while (lbvh_delta(codes, n, ii, ii + lmax * d) > dmin) lmax *= 2;
    int64_t l = 0;
    for (int64_t t = lmax / 2; t >= 1; t /= 2)
        if (lbvh_delta(codes, n, ii, ii + (l + t) * d) > dmin) l += t;
    int64_t j = ii + l * d;
    int dnode = lbvh_delta(codes, n, ii, j);
    int64_t s = 0, t = l;
    do {
        t = (t + 1) / 2;
        if (lbvh_delta(codes, n, ii, ii + (s + t) * d) > dnode) s += t;
    } while (t > 1);
    int64_t gamma = ii + s * d + (d < 0 ? -1 : 0);
    *first = (uint32_t)(d > 0 ? ii : j);
    *last = (uint32_t)(d > 0 ? j : ii);
    *split = (uint32_t)gamma;
}

/* The same radix tree bottom-up (Apetrei 2014, "Fast and simple
 * agglomerative LBVH construction"): a node knows only its key range, and
 * its parent is on the side whose boundary keys share the longer prefix;
 * the GPU builder climbs it this way (no per-node search), H-PLOC's
 * clustering too (hploc.h). */

/* Sorted keys i and i + 1 (0 <= i < n - 1) compared as augmented keys
 * (code, position), exclusive-or: the larger, the higher their first
 * differing bit (Apetrei compares these, not their leading zeros; the
 * order is lbvh_delta's). */
RT_HD uint64_t lbvh_boundary(const uint32_t *codes, uint32_t i)
{
    return ((uint64_t)(codes[i] ^ codes[i + 1]) << 32) | (uint64_t)(i ^ (i + 1u));
}

/* The radix node of keys [lo, hi] (not all n): 1 if it is its parent's left
 * child (the parent's split is hi), 0 if the right (split lo - 1). */
RT_HD int lbvh_is_left_child(const uint32_t *codes, uint32_t n, uint32_t lo, uint32_t hi)
{
    return lo == 0 || (hi != n - 1 && lbvh_boundary(codes, hi) < lbvh_boundary(codes, lo - 1));
}

/* Karras's number of the internal node of keys [lo, hi] (lo < hi, as
 * lbvh_node_range numbers them): the root 0; a left child is its split's
 * node, hi; a right child the one after, lo. */
RT_HD uint32_t lbvh_node_index(uint32_t n, uint32_t lo, uint32_t hi, int left)
{
    return lo == 0 && hi == n - 1 ? 0u : (left ? hi : lo);
}

/* ---- step 4: bottom-up ------------------------------------------------------------ */

/* What the bottom-up pass knows of a finished subtree. */
typedef struct RtLbvhSub {
    RtAabb box;
    float cost;      /* SAH cost, area-weighted (not yet divided by the root's area) */
    uint32_t first;  /* its key range: sorted positions [first, first + count) */
    uint32_t count;
    uint32_t node;   /* internal: its node index; a single key: unused */
    int as_leaf;     /* 1: its parent references it as one leaf (a single key, or collapsed) */
    uint32_t height; /* interior levels below and including it once collapsed (a leaf: 0); the
                        root's is the tree's depth (bvh_layout.h's RT_BVH_MAX_DEPTH bounds it) */
} RtLbvhSub;

/* The sorted key `pos` as a subtree: one triangle in a leaf. */
RT_HD RtLbvhSub lbvh_leaf_sub(RtAabb box, uint32_t pos, const RtLbvhParams *p)
{
    RtLbvhSub s;
    s.box = box;
    s.cost = RT_XMUL(p->c_isect, lbvh_area(box));
    s.first = pos;
    s.count = 1;
    s.node = 0;
    s.as_leaf = 1;
    s.height = 0;
    return s;
}

/* Two finished subtrees as one: the box, the key range, the height and
 * the SAH leaf collapse (any BVH builder's rule: the LBVH's and H-PLOC's,
 * hploc.h). A subtree of at most max_leaf triangles becomes one leaf when
 * that costs no more than keeping it split. node is left to the caller. */
RT_HD RtLbvhSub lbvh_merge_sub(RtLbvhSub l, RtLbvhSub r, const RtLbvhParams *p)
{
    RtLbvhSub s;
    s.box = lbvh_union(l.box, r.box);
    s.first = l.first;
    s.count = l.count + r.count;
    s.node = 0;
    float a = lbvh_area(s.box);
    float split = RT_XADD(RT_XADD(RT_XMUL(p->c_trav, a), l.cost), r.cost);
    float leaf = RT_XMUL(RT_XMUL(p->c_isect, (float)s.count), a);
    s.as_leaf = s.count <= (uint32_t)p->max_leaf && leaf <= split;
    s.cost = s.as_leaf ? leaf : split;
    uint32_t hl = l.as_leaf ? 0u : l.height, hr = r.as_leaf ? 0u : r.height;
    s.height = 1u + (hl > hr ? hl : hr);
    return s;
}

/* Finishes internal node i from its two finished children: writes the
 * output node and returns node i as a subtree for its parent
 * (lbvh_merge_sub; the root is never collapsed: its parent does not
 * exist, it is the walk's start). */
RT_HD RtLbvhSub lbvh_finish_node(uint32_t i, RtLbvhSub l, RtLbvhSub r, const RtLbvhParams *p,
                                 RtBvhNode *out)
{
    bvh_set_child(out, 0, l.box, l.as_leaf, l.as_leaf ? l.first : l.node, l.as_leaf ? l.count : 0u);
    bvh_set_child(out, 1, r.box, r.as_leaf, r.as_leaf ? r.first : r.node, r.as_leaf ? r.count : 0u);
    RtLbvhSub s = lbvh_merge_sub(l, r, p);
    s.node = i;
    return s;
}

/* The root of a one-triangle tree: the triangle and an empty leaf. */
RT_HD void lbvh_single_root(RtAabb box, RtBvhNode *out)
{
    bvh_set_child(out, 0, box, 1, 0u, 1u);
    bvh_set_empty_child(out, 1);
}

#ifdef __cplusplus
}
#endif
#endif
