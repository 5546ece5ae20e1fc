/* trace_bvh.cuh — the BVH traversal loop of the GPU tracer (bvh_layout.h),
 * shared by the kernels (trace.cu) and the host emulation (trace_emu.cu),
 * beside trace_ray.cuh's kd-tree loop. Include it after trace_ray.cuh (it
 * uses its RT_TRACE_FN, TRACE_EPS_SCALE, TRACE_MAX_VISITS, take_hit and Prims).
 *
 * Aila & Laine 2009's traversal of their node layout: one 64-byte node
 * gives both children's boxes, both are slab-tested, the nearer child is
 * taken and the farther pushed with its entry distance, and a popped entry
 * that starts beyond the best hit is dropped. A leaf's triangles are read
 * from the tree's own copy of their Woop rows (leaf_woop), one after the
 * other, their ids only on a hit; a tree built without the copy (it pays
 * only where rays far outnumber triangles: RtBvhLeafRows) reads each
 * triangle's id, then the scene's rows, as Moller-Trumbore reads its
 * vertices. The stack holds RT_BVH_MAX_DEPTH entries:
 * one per level at most, and no builder goes deeper, so nothing is ever
 * lost.
 *
 * Exactness: every box is grown by delta (the kd tracer's widening, 2^-16
 * of the largest coordinate; in t at least its eps), a child is entered
 * while its entry is at most the best hit's t, and hits follow the layout's
 * tie rule (closest, then the lower triangle id), so the hits equal the brute force's and the
 * kd tracer's (tests/test_trace_emu.c, tests/test_gpu_trace.c). */
#ifndef RT_TRACE_BVH_CUH
#define RT_TRACE_BVH_CUH

#include "bvh/bvh_layout.h"

/* The BVH as the kernels read it (by value). */
typedef struct TraceBvh {
    const RtBvhNode *nodes;
    const uint32_t *index;
    const RtFloat4 *leaf_woop; /* the leaf triangles' Woop rows, in index order (NULL: by id) */
    RtAabb bounds;
    const RtAabb *d_bounds; /* the GPU builder's root box on the device (bounds is then unknown) */
    uint32_t node_count;    /* 0: an empty tree */
} TraceBvh;

/* A stack entry or the walk's position: an interior node's index (below
 * 2^27), or a leaf: its count (1..RT_BVH_MAX_LEAF = 16) in bits 27..31 and
 * its first tri_index entry below, so the walk can hold a leaf until its
 * turn without the node that named it. Made from the node's fields in one
 * instruction: count[k] shifted up by 27 drops RT_BVH_LEAF and leaves the
 * leaf's count (an interior child's count is 0), so an entry is a leaf
 * exactly when it is at least 2^27. An empty leaf's entry would read as
 * an interior node, but an empty leaf is never entered. Trees of more
 * entries than the 27 bits reach are refused on the host (bvh_layout.h's
 * RT_BVH_MAX_INDEX). */
#define RT_BVH_ENTRY_FIRST_BITS 27
#define RT_BVH_ENTRY_LEAF_MIN (1u << RT_BVH_ENTRY_FIRST_BITS)
#if RT_BVH_ENTRY_LEAF_MIN != RT_BVH_MAX_INDEX
#error "RT_BVH_MAX_INDEX must be what a walk entry's first field holds"
#endif
#if RT_BVH_MAX_LEAF >= 32
#error "a walk entry's count field holds up to 31 triangles"
#endif
RT_TRACE_FN static uint32_t bvh_entry(uint32_t child, uint32_t count)
{
    /* a sum, not an or (the fields do not overlap): one LEA, where the or
     * took a shift and a LOP3 */
    return (count << RT_BVH_ENTRY_FIRST_BITS) + child;
}

/* Slab test of both children of node n: in0/in1 when the ray's [tmin, tmax]
 * meets the child's box grown by delta on every side, t0/t1 its entry
 * distance. The box is grown in space, not the interval in t: a ray lying
 * in a face's plane (a zero component of d, 1/d huge) is then inside that
 * slab for its whole length, as it must be (its triangles may lie in the
 * plane), where a t interval of (face - o) / d = 0 would end it at once.
 * Each distance is one fma, face * inv - (o -+ delta) * inv (lo_inv, hi_inv
 * precomputed): its rounding is that of face * inv, far inside the delta
 * the box was grown by. An empty leaf's box is a point at +inf on every
 * axis (bvh_set_empty_child), which no test passes: the walk's interval
 * is finite (clipped to the scene's box), and each axis's two distances
 * are both +inf or both -inf. (A flag, not
 * t = INFINITY for a miss: a ray with no hit yet has best.t = INFINITY, and
 * a miss would pass the test t <= best.t.) Scalars, not arrays: an array
 * indexed at run time would live in local memory. */
RT_TRACE_FN static void bvh_test_children(const RtBvhNode &n, RtVec3 lo_inv, RtVec3 hi_inv, RtVec3 inv,
                                          float tmin, float tmax, float &t0, float &t1, bool &in0, bool &in1)
{
    float x0 = fmaf(n.b[0].x, inv.x, -lo_inv.x), x1 = fmaf(n.b[0].y, inv.x, -hi_inv.x);
    float y0 = fmaf(n.b[0].z, inv.y, -lo_inv.y), y1 = fmaf(n.b[0].w, inv.y, -hi_inv.y);
    float z0 = fmaf(n.b[2].x, inv.z, -lo_inv.z), z1 = fmaf(n.b[2].y, inv.z, -hi_inv.z);
    float lo = fmaxf(fmaxf(fminf(x0, x1), fminf(y0, y1)), fmaxf(fminf(z0, z1), tmin));
    float hi = fminf(fminf(fmaxf(x0, x1), fmaxf(y0, y1)), fminf(fmaxf(z0, z1), tmax));
    in0 = lo <= hi;
    t0 = lo;
    x0 = fmaf(n.b[1].x, inv.x, -lo_inv.x), x1 = fmaf(n.b[1].y, inv.x, -hi_inv.x);
    y0 = fmaf(n.b[1].z, inv.y, -lo_inv.y), y1 = fmaf(n.b[1].w, inv.y, -hi_inv.y);
    z0 = fmaf(n.b[2].z, inv.z, -lo_inv.z), z1 = fmaf(n.b[2].w, inv.z, -hi_inv.z);
    lo = fmaxf(fmaxf(fminf(x0, x1), fminf(y0, y1)), fmaxf(fminf(z0, z1), tmin));
    hi = fminf(fminf(fmaxf(x0, x1), fmaxf(y0, y1)), fminf(fmaxf(z0, z1), tmax));
    in1 = lo <= hi;
    t1 = lo;
}

/* The walk's position beside the entries: nothing is left (a leaf entry of
 * 31 triangles, more than any leaf holds). */
#define RT_BVH_POS_DONE 0xffffffffu

/* The top stack entry that starts no later than the best hit (t), dropping
 * the ones beyond it; RT_BVH_POS_DONE when none is left. */
RT_TRACE_FN static uint32_t bvh_pop(const uint32_t (*stk)[2], int &sp, float t)
{
    while (sp > 0) {
        sp--;
        if (trace_u2f(stk[sp][1]) <= t) return stk[sp][0];
    }
    return RT_BVH_POS_DONE;
}

/* Closest (any = false) or any hit of ray (o, d) in [tmin, tmax]. steps
 * (may be NULL) += nodes visited.
 *
 * One position per round, an interior node or a leaf entry (the if-if order
 * of tinybvh's Aila-Laine kernel): on the H200 this beat Aila & Laine's
 * while-while order, which walks interior nodes until the lane holds a leaf
 * (Sponza, H-PLOC tree: 3,053 against 3,006 Mrays/s primary), and their
 * speculative variant, which postpones the first leaf until every lane
 * holds one (2,557: the warp votes and the extra position cost more than
 * the convergence won). The nearer child goes first; the farther is
 * stacked with its entry distance, and a popped entry that starts beyond
 * the best hit is dropped. Children are picked by selects, never by a
 * computed index into the node (that would put the 64-byte node in local
 * memory at every visit). Woop's test reads a leaf's rows from leaf_woop
 * when the tree has them (no dependent load of the id first; Sponza 3,006
 * against 2,908), else by id as Moller-Trumbore reads the vertices. */
template <int kIsect, class Prims>
RT_TRACE_FN static RtHit trace_bvh(const Prims &pr, const TraceBvh &bv, RtVec3 o, RtVec3 d,
                                   float tmin, float tmax, bool live, bool any, uint32_t *steps)
{
    RtHit best = no_hit(tmax);
    const RtAabb bounds = bv.d_bounds ? *bv.d_bounds : bv.bounds;
    float delta, eps;
    if (!live || !trace_ray_tolerance(bounds, bv.node_count, o, d, tmin, tmax, &delta, &eps)) return best;
    /* the scene box first: most rays that miss everything stop here (1/d
     * is +-inf along an axis the ray is parallel to, as clip_box wants) */
    const RtVec3 inv_d = trace_inv(d);
    float r0 = tmin, r1 = tmax;
    if (!clip_box(bounds, o, inv_d, eps, &r0, &r1)) return best;
    /* No hit lies past the grown scene box's exit, so the best hit's t
     * starts there: the children's test then takes one far bound, not the
     * smaller of two, and r1 need not stay live through the loop (a miss
     * still returns tmax, below). */
    best.t = r1;
    /* In the node tests a zero direction component would make 0 * inf =
     * NaN; a huge finite 1/d keeps the slab test's signs (with the grown
     * boxes, never a 0 numerator). */
    const float huge = 1e30f;
    const RtVec3 inv = v3(fminf(fmaxf(inv_d.x, -huge), huge), fminf(fmaxf(inv_d.y, -huge), huge),
                          fminf(fmaxf(inv_d.z, -huge), huge));
    const RtVec3 lo_inv = v3((o.x + delta) * inv.x, (o.y + delta) * inv.y, (o.z + delta) * inv.z);
    const RtVec3 hi_inv = v3((o.x - delta) * inv.x, (o.y - delta) * inv.y, (o.z - delta) * inv.z);

    /* (entry, bits of its entry distance: trace_f2u), one 8-byte store */
    uint32_t stk[RT_BVH_MAX_DEPTH][2];
    int sp = 0;
    uint32_t pos = 0, visits = 0;
    for (;;) {
        if (pos >= RT_BVH_ENTRY_LEAF_MIN) {
            const uint32_t first = pos & (RT_BVH_ENTRY_LEAF_MIN - 1u);
            const uint32_t count = pos >> RT_BVH_ENTRY_FIRST_BITS;
            /* its hits shorten the ray for the entries still stacked */
            for (uint32_t i = 0; i < count; i++) {
                const uint32_t k = first + i;
                float ht, hu, hv;
                uint32_t id;
                /* at most the largest float: Woop's test of a ray parallel to
                 * the triangle's plane gives an infinite t (isect.h) */
                if (kIsect == RT_ISECT_WOOP && bv.leaf_woop) {
                    RtFloat4 rows[3];
                    pr.woop_rows(&bv.leaf_woop[3 * (size_t)k], rows);
                    if (!rt_isect_woop_finite(rows, o, d, tmin, fminf(best.t, FLT_MAX), &ht, &hu, &hv)) continue;
                    id = pr.index(&bv.index[k]);
                } else {
                    id = pr.index(&bv.index[k]);
                    if (!pr.isect(kIsect, id, o, d, tmin, fminf(best.t, FLT_MAX), &ht, &hu, &hv)) continue;
                }
                if (take_hit(pr, best, id, ht, hu, hv) && any) break;
            }
            if (any && best.tri != RT_NO_HIT) break;
            pos = bvh_pop(stk, sp, best.t);
        } else {
            const RtBvhNode n = pr.bvh_node(&bv.nodes[pos]);
            visits++;
            float t0, t1;
            bool in0, in1;
            bvh_test_children(n, lo_inv, hi_inv, inv, r0, best.t, t0, t1, in0, in1);
            const uint32_t e0 = bvh_entry(n.child[0], n.count[0]), e1 = bvh_entry(n.child[1], n.count[1]);
            if (in0 && in1) {
                const bool near1 = t1 < t0;
                if (sp < RT_BVH_MAX_DEPTH) {
                    stk[sp][0] = near1 ? e0 : e1;
                    stk[sp][1] = trace_f2u(near1 ? t0 : t1);
                    sp++;
                }
                pos = near1 ? e1 : e0;
            } else if (in0 || in1) {
                pos = in0 ? e0 : e1;
            } else {
                pos = bvh_pop(stk, sp, best.t);
            }
        }
        /* the visit bound with the end test, one branch a round (a check
         * of its own after each visit cost the render kernel's walks a
         * branch more a visit) */
        if ((pos == RT_BVH_POS_DONE) | (visits > TRACE_MAX_VISITS)) break;
    }
    if (best.tri == RT_NO_HIT) best.t = tmax;
    if (steps) *steps += visits;
    return best;
}

#endif
