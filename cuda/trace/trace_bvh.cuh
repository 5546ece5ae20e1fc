/* trace_bvh.cuh — the BVH traversal loop of the GPU tracer (bvh_layout.h),
 * shared by the kernels (trace.cu) and the host emulation (trace_emu.cu),
 * beside trace_ray.cuh's kd-tree loop. Include it after trace_ray.cuh (it
 * uses its RT_TRACE_FN, TRACE_EPS_SCALE, TRACE_MAX_VISITS and Prims).
 *
 * Aila & Laine 2009's traversal of their node layout: one 64-byte node
 * gives both children's boxes, both are slab-tested, a leaf child is
 * searched at once (its hits shorten the ray before the other child is
 * entered), the nearer interior child is taken and the farther pushed with
 * its entry distance, and a popped entry that starts beyond the best hit
 * is dropped. The stack holds RT_BVH_MAX_DEPTH entries: one per level at
 * most, and no builder goes deeper, so nothing is ever lost.
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
    RtAabb bounds;
    const RtAabb *d_bounds; /* the GPU builder's root box on the device (bounds is then unknown) */
    uint32_t node_count;    /* 0: an empty tree */
} TraceBvh;

/* Slab test of both children of node n: in[k] when the ray's [tmin, tmax]
 * meets child k's box grown by delta on every side, t[k] its entry
 * distance. The box is grown in space, not the interval in t: a ray lying
 * in a face's plane (a zero component of d, 1/d huge) is then inside that
 * slab for its whole length, as it must be (its triangles may lie in the
 * plane), where a t interval of (face - o) / d = 0 would end it at once.
 * olo = o + delta, ohi = o - delta. Empty leaves are never entered. (A
 * flag, not t = INFINITY for a miss: a ray with no hit yet has best.t =
 * INFINITY, and a miss would pass the test t <= best.t.) */
RT_TRACE_FN static void bvh_test_children(const RtBvhNode &n, RtVec3 olo, RtVec3 ohi, RtVec3 inv,
                                          float tmin, float tmax, float t[2], bool in[2])
{
    float x0 = (n.b[0].x - olo.x) * inv.x, x1 = (n.b[0].y - ohi.x) * inv.x;
    float y0 = (n.b[0].z - olo.y) * inv.y, y1 = (n.b[0].w - ohi.y) * inv.y;
    float z0 = (n.b[2].x - olo.z) * inv.z, z1 = (n.b[2].y - ohi.z) * inv.z;
    float lo = fmaxf(fmaxf(fminf(x0, x1), fminf(y0, y1)), fmaxf(fminf(z0, z1), tmin));
    float hi = fminf(fminf(fmaxf(x0, x1), fmaxf(y0, y1)), fminf(fmaxf(z0, z1), tmax));
    in[0] = lo <= hi && n.count[0] != RT_BVH_LEAF;
    t[0] = lo;
    x0 = (n.b[1].x - olo.x) * inv.x, x1 = (n.b[1].y - ohi.x) * inv.x;
    y0 = (n.b[1].z - olo.y) * inv.y, y1 = (n.b[1].w - ohi.y) * inv.y;
    z0 = (n.b[2].z - olo.z) * inv.z, z1 = (n.b[2].w - ohi.z) * inv.z;
    lo = fmaxf(fmaxf(fminf(x0, x1), fminf(y0, y1)), fmaxf(fminf(z0, z1), tmin));
    hi = fminf(fminf(fmaxf(x0, x1), fmaxf(y0, y1)), fminf(fmaxf(z0, z1), tmax));
    in[1] = lo <= hi && n.count[1] != RT_BVH_LEAF;
    t[1] = lo;
}

/* Closest (any = false) or any hit of ray (o, d) in [tmin, tmax]. steps
 * (may be NULL) += nodes visited. */
template <int kIsect, class Prims>
RT_TRACE_FN static RtHit trace_bvh(const Prims &pr, const TraceBvh &bv, RtVec3 o, RtVec3 d,
                                   float tmin, float tmax, bool live, bool any, uint32_t *steps)
{
    RtHit best;
    best.t = tmax;
    best.u = best.v = 0.0f;
    best.tri = RT_NO_HIT;
    const RtAabb bounds = bv.d_bounds ? *bv.d_bounds : bv.bounds;
    float dlen = v3_len(d);
    if (!live || !(dlen > 0.0f) || !isfinite(dlen) || !isfinite(o.x + o.y + o.z) ||
        !(tmin <= tmax) || bv.node_count == 0 || aabb_is_empty(bounds))
        return best;
    float scale = fmaxf(fmaxf(fmaxf(fabsf(o.x), fabsf(o.y)), fabsf(o.z)),
                        fmaxf(fmaxf(fmaxf(fabsf(bounds.lo.x), fabsf(bounds.lo.y)),
                                    fabsf(bounds.lo.z)),
                              fmaxf(fmaxf(fabsf(bounds.hi.x), fabsf(bounds.hi.y)),
                                    fabsf(bounds.hi.z))));
    const float delta = TRACE_EPS_SCALE * scale, eps = delta / dlen;
    const RtVec3 olo = v3(o.x + delta, o.y + delta, o.z + delta), ohi = v3(o.x - delta, o.y - delta, o.z - delta);
    /* A zero direction component would make 0 * inf = NaN; a tiny one keeps
     * the slab test's signs (with the grown boxes, never a 0 numerator). */
    const float tiny = 1e-30f;
    const RtVec3 inv = v3(1.0f / (fabsf(d.x) > tiny ? d.x : copysignf(tiny, d.x)),
                          1.0f / (fabsf(d.y) > tiny ? d.y : copysignf(tiny, d.y)),
                          1.0f / (fabsf(d.z) > tiny ? d.z : copysignf(tiny, d.z)));
    /* the scene box first: most rays that miss everything stop here */
    float r0 = tmin, r1 = tmax;
    if (!clip_box(bounds, o, d, inv, eps, &r0, &r1)) return best;

    uint32_t stk_node[RT_BVH_MAX_DEPTH];
    float stk_t[RT_BVH_MAX_DEPTH];
    int sp = 0;
    uint32_t node = 0, visits = 0;
    for (;;) {
        const RtBvhNode n = pr.bvh_node(&bv.nodes[node]);
        visits++;
        float t[2];
        bool in[2];
        bvh_test_children(n, olo, ohi, inv, r0, fminf(best.t, r1), t, in);
        /* leaf children now: their hits shorten the ray for the rest.
         * Unrolled, and children picked by selects below, never by a
         * computed index: an indexed n.child[k] would put the node in
         * local memory (16 stores per visit). */
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
        for (int k = 0; k < 2; k++) {
            if (!(n.count[k] & RT_BVH_LEAF) || !in[k]) continue;
            in[k] = false;
            if (!(t[k] <= best.t)) continue;
            uint32_t first = n.child[k], count = n.count[k] & ~RT_BVH_LEAF;
            for (uint32_t i = 0; i < count; i++) {
                uint32_t id = pr.index(&bv.index[first + i]);
                float ht, hu, hv;
                /* at most the largest float: Woop's test of a ray parallel to
                 * the triangle's plane gives an infinite t (isect.h) */
                if (!pr.isect(kIsect, id, o, d, tmin, fminf(best.t, FLT_MAX), &ht, &hu, &hv)) continue;
                if (ht == best.t && id > best.tri) continue;
                if (!pr.alpha(id, hu, hv)) continue;
                best.t = ht;
                best.u = hu;
                best.v = hv;
                best.tri = id;
                if (any) break;
            }
            if (any && best.tri != RT_NO_HIT) break;
        }
        if (any && best.tri != RT_NO_HIT) break;
        /* interior children: the nearer now, the farther on the stack */
        bool in0 = in[0] && t[0] <= best.t, in1 = in[1] && t[1] <= best.t;
        if (in0 && in1) {
            const bool near1 = t[1] < t[0];
            if (sp < RT_BVH_MAX_DEPTH) {
                stk_node[sp] = near1 ? n.child[0] : n.child[1];
                stk_t[sp] = near1 ? t[0] : t[1];
                sp++;
            }
            node = near1 ? n.child[1] : n.child[0];
        } else if (in0 || in1) {
            node = in0 ? n.child[0] : n.child[1];
        } else {
            /* pop, dropping entries that start beyond the best hit */
            bool found = false;
            while (sp > 0) {
                sp--;
                if (stk_t[sp] <= best.t) {
                    node = stk_node[sp];
                    found = true;
                    break;
                }
            }
            if (!found) break;
        }
        if (visits > TRACE_MAX_VISITS) break;
    }
    if (steps) *steps += visits;
    return best;
}

#endif
