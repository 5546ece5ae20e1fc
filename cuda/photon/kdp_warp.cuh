/* kdp_warp.cuh — kdtree_points.h's kNN walk taken by a warp's calling lanes
 * together: one walk over the union of the nodes their queries need, every
 * node's point tested by every lane against its own heap (the packet
 * traversal of ray tracers, Wald et al. 2001, applied to Brown's tree).
 *
 * Why. A lone walk per lane (kdp_knn_collect) is exact but, with k = 50
 * in a dense photon map, visits a few hundred nodes along a path of its
 * own: a warp's 32 paths diverge and run one after another. Neighbouring
 * pixels' queries need nearly the same nodes, so a walk the lanes vote on
 * loads each node once for all of them (a broadcast) and issues each step
 * once. Divergent queries (a warp across an edge, after a mirror) make the
 * union larger; it never holds more nodes than the lanes' walks together.
 *
 * Exactness. Each lane keeps the lone walk's heap and its rules: a point
 * enters when d2 <= r2 and it is better than the heap's worst (each point
 * offered to a lane once: its own range is skipped by the joint walk), a
 * subtree is walked while some lane's lower bound for it (the largest
 * squared distance to a split plane above it that it lies across) is
 * <= r2 and <= that lane's k-th distance (or its heap is not full). The
 * k nearest under (d2, point) are one set whatever order the points come
 * in, so every lane finds the set kdp_knn_collect finds (its heap order
 * may differ). */
#ifndef RT_KDP_WARP_CUH
#define RT_KDP_WARP_CUH

#include "photon/kdtree_points.h"

/* Subtrees of at most this many points are read as one run (a subtree's
 * points are one run of the sorted order) rather than walked node by node:
 * a point read costs a distance and a compare, a node step of the joint
 * walk three votes and a stack entry, and near the queries, where the
 * small subtrees are, the bounds rarely prune. */
#define KDP_WARP_RUN 16

/* A lane's state: its query, its heap and the limit a point or subtree
 * must be within to matter (r2, or the k-th distance once kn are kept). */
struct KdpWarpLane {
    const float *q;
    RtKdpHit *out;
    uint32_t count, kn;
    float r2, lim;
    int32_t plo, phi; /* the range it read alone (phase 1); empty: plo > phi */
    bool live;
};

/* Offers point `node` to the lane's heap (nodes[] read only when it
 * enters). */
__device__ __forceinline__ void kdp_warp_offer(const RtKdpTree *t, KdpWarpLane &l, uint32_t node, float d2)
{
    if (d2 <= l.lim) {
        RtKdpHit h = {d2, t->nodes[node].point};
        kdp_heap_push(l.out, &l.count, l.kn, h);
        if (l.count == l.kn) l.lim = fminf(l.r2, l.out[0].d2);
    }
}

/* Offers the run [lo, hi] of the sorted order, less the lane's own range. */
__device__ __forceinline__ void kdp_warp_read(const RtKdpTree *t, KdpWarpLane &l, int32_t lo, int32_t hi,
                                              uint32_t dim)
{
    if (!l.live) return;
    for (int32_t i = lo; i <= hi; i++)
        if (i < l.plo || i > l.phi) kdp_warp_offer(t, l, (uint32_t)i, kdp_dist2(l.q, t->coords + (size_t)i * dim, dim));
}

/* Whether the lane still needs subtree [lo, hi], none of whose points is
 * closer than squared distance `bound`: not when it read the whole range
 * alone. */
__device__ __forceinline__ bool kdp_warp_needs(const KdpWarpLane &l, float bound, int32_t lo, int32_t hi)
{
    return l.live && bound <= l.lim && !(lo >= l.plo && hi <= l.phi);
}

/* kdp_knn_collect for every lane that calls it at once (the lanes
 * __activemask() names; all of them must pass the same tree t and kn; q
 * and r2 are each lane's): the lane's kn nearest points with d2 <= r2 into
 * out as a heap, how many returned. A lane whose query has a NaN
 * coordinate finds nothing and only votes no.
 *
 * Two phases. First each lane alone descends its query's side to the
 * smallest subtree of at least kn points and reads that range (lanes in
 * one subtree read the same addresses): its heap starts full of near
 * points, so its bounds prune from the first vote. (A joint walk from
 * empty heaps filled each lane with the majority's points first, and a
 * lane whose heap holds far points needs nearly every subtree.) Then the
 * joint walk from the root, skipping each lane's own range. */
__device__ inline uint32_t kdp_knn_collect_warp(const RtKdpTree *t, const float *q, uint32_t kn, float r2,
                                                RtKdpHit *out)
{
    const unsigned mask = __activemask();
    struct { int32_t lo, hi; uint32_t axis; float bound; } stack[RT_KDP_STACK];
    const uint32_t dim = t->dim;
    KdpWarpLane l;
    l.q = q;
    l.out = out;
    l.count = 0;
    l.kn = kn > RT_KDP_MAX_KNN ? RT_KDP_MAX_KNN : kn;
    l.r2 = r2;
    l.lim = r2;
    l.plo = 0;
    l.phi = -1;
    l.live = t->root != RT_KDP_NONE && l.kn > 0 && kdp_finite(q, dim) && r2 >= 0.0f;
    if (!__any_sync(mask, l.live)) return 0;
    if (l.live) {
        int32_t lo = 0, hi = (int32_t)t->count - 1;
        for (uint32_t a = 0;; a = a + 1 == dim ? 0 : a + 1) {
            const uint32_t node = kdp_median((uint32_t)lo, (uint32_t)hi);
            int32_t nlo, nhi;
            kdp_child_range(lo, hi, node, RT_XSUB(q[a], t->coords[(size_t)node * dim + a]) < 0.0f, &nlo, &nhi);
            if (nhi - nlo + 1 < (int32_t)l.kn) break;
            lo = nlo;
            hi = nhi;
        }
        kdp_warp_read(t, l, lo, hi, dim);
        l.plo = lo;
        l.phi = hi;
    }
    int sp = 0;
    stack[sp].lo = 0;
    stack[sp].hi = (int32_t)t->count - 1;
    stack[sp].axis = 0;
    stack[sp++].bound = 0.0f;
    while (sp > 0) {
        sp--;
        int32_t lo = stack[sp].lo, hi = stack[sp].hi;
        uint32_t a = stack[sp].axis;
        float bound = stack[sp].bound; /* the lane's, for [lo, hi] */
        if (!__any_sync(mask, kdp_warp_needs(l, bound, lo, hi))) continue;
        while (lo <= hi) {
            if (hi - lo < KDP_WARP_RUN) {
                kdp_warp_read(t, l, lo, hi, dim);
                break;
            }
            const uint32_t node = kdp_median((uint32_t)lo, (uint32_t)hi);
            const float *c = t->coords + (size_t)node * dim;
            if (l.live && ((int32_t)node < l.plo || (int32_t)node > l.phi)) kdp_warp_offer(t, l, node, kdp_dist2(q, c, dim));
            const float diff = RT_XSUB(q[a], c[a]), own = RT_XMUL(diff, diff);
            /* the side most lanes would take first (a lone lane goes left
             * when diff < 0, right otherwise; ties between the sides go
             * right as a lane on the plane does) */
            const bool left = diff < 0.0f;
            const int nl = __popc(__ballot_sync(mask, l.live && left)), nr = __popc(__ballot_sync(mask, l.live && !left));
            const bool go_left = nl > nr;
            /* a lane's bounds for the children: its bound for this
             * subtree, raised to the plane's distance for the side it is
             * not on (a lane the joint walk takes far from its query
             * must not need every subtree on its side of each plane) */
            const float across = fmaxf(bound, own);
            const float far_bound = left == go_left ? across : bound;
            int32_t far_lo, far_hi;
            kdp_child_range(lo, hi, node, !go_left, &far_lo, &far_hi);
            kdp_child_range(lo, hi, node, go_left, &lo, &hi);
            bound = left == go_left ? bound : across;
            a = a + 1 == dim ? 0 : a + 1;
            if (far_lo <= far_hi && sp < RT_KDP_STACK && __any_sync(mask, kdp_warp_needs(l, far_bound, far_lo, far_hi))) {
                stack[sp].lo = far_lo;
                stack[sp].hi = far_hi;
                stack[sp].axis = a;
                stack[sp++].bound = far_bound;
            }
            if (lo <= hi && !__any_sync(mask, kdp_warp_needs(l, bound, lo, hi))) break;
        }
    }
    return l.count;
}

#endif
