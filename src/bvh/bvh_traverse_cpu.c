/* bvh_traverse_cpu.c — a stack walk of the shared BVH layout
 * (bvh_layout.h) for the CPU renderer and the tests: each node's two child
 * boxes are slab-tested, the nearer child is entered first, the farther
 * waits on the stack (Aila & Laine 2009's while-while loop, serial).
 *
 * Exactness: the walk returns the brute-force closest hit (same triangle,
 * same t, u, v; ties to the lower id), as kd_traverse_cpu.c does and for
 * the same reasons:
 *   - A child is entered when the ray's [tmin, tmax] meets its box grown by
 *     delta on every side (delta: the kd tracer's tolerance below). A hit
 *     test's point can miss its triangle by a few ulps, and the slab test
 *     rounds; a child is skipped only when the ray misses it by more than
 *     that. Entering one box more never changes the answer.
 *   - A hit is kept wherever along the ray it lies, and a child or a
 *     pending entry is skipped only when it starts beyond the best hit (by
 *     more than delta along the ray), so a triangle at the best hit's t
 *     with a lower id is still tested.
 * The leaf step is the kd tracer's (rt_hit_closer, kd_cpu.h), the hit
 * tests the brute force's (rt_isect_tri, isect.h).
 */
#include "bvh/bvh_cpu.h"

/* delta = 2^-16 of the largest coordinate in play (the scene's or the
 * origin's): 128 float ulps, above the few-ulp error of a slab crossing or
 * of a Woop or Moller-Trumbore hit point; kd_traverse_cpu.c's KD_DELTA_SCALE,
 * so both tracers enter what they enter for the same reasons. */
#define BVH_DELTA_SCALE (1.0f / 65536.0f)

/* A child waiting to be entered: an interior node (count 0) or a leaf
 * (count & RT_BVH_LEAF), as its parent holds it, and where the ray enters
 * its box. */
typedef struct BvhEntry {
    uint32_t index, count;
    float t0;
} BvhEntry;

static float max_abs3(RtVec3 a) { return fmaxf(fmaxf(fabsf(a.x), fabsf(a.y)), fabsf(a.z)); }

/* Does the ray in [tmin, tmax] meet child k's box grown by delta? Its entry
 * in *t0. rt_ray_aabb's slabs take a ray parallel to one (1/d infinite) as
 * inside it or not by its origin alone. */
static int meets(const RtBvhNode *n, int k, RtVec3 o, RtVec3 inv, RtVec3 grow, float tmin,
                 float tmax, float *t0)
{
    RtAabb b = bvh_child_box(n, k);
    b.lo = v3_sub(b.lo, grow);
    b.hi = v3_add(b.hi, grow);
    float t1;
    return rt_ray_aabb(b, o, inv, tmin, tmax, t0, &t1);
}

/* any = 1 returns at the first accepted hit (shadow rays). A tree that
 * rt_bvh_validate rejects (an index out of range, a cycle, deeper than the
 * stack) ends the walk with the hits found so far: never a crash or an
 * endless loop. */
static int traverse(const RtBvh *bvh, const RtTriArrays *tris, RtRay ray, float tmin, float tmax,
                    int use_woop, RtHitFilter filter, const void *ctx, int any, RtHit *hit,
                    uint32_t *steps)
{
    RtHit best = {tmax, 0.0f, 0.0f, RT_NO_HIT};
    uint32_t visited = 0;
    int found = 0;
    if (hit) *hit = best;
    if (!bvh || bvh->node_count == 0 || !bvh->nodes || aabb_is_empty(bvh->bounds) ||
        !(tmin <= tmax))
        return 0;
    const RtVec3 o = ray.o, d = ray.d;
    const float dlen = v3_len(d);
    if (!(dlen > 0.0f) || !isfinite(dlen) || !isfinite(o.x + o.y + o.z)) return 0;
    const float scale =
        fmaxf(max_abs3(o), fmaxf(max_abs3(bvh->bounds.lo), max_abs3(bvh->bounds.hi)));
    const float delta = BVH_DELTA_SCALE * scale;
    const float eps = delta / dlen; /* delta along the ray, for the stop test */
    const RtVec3 inv = v3(1.0f / d.x, 1.0f / d.y, 1.0f / d.z), grow = v3(delta, delta, delta);

    /* One pending sibling per level: a valid tree (depth <= RT_BVH_MAX_DEPTH)
     * never fills it. */
    BvhEntry stack[RT_BVH_MAX_DEPTH];
    int sp = 0;
    BvhEntry cur = {0, 0, tmin};
    for (;;) {
        if (!(cur.count & RT_BVH_LEAF)) {
            /* Each interior node is visited once at most: more is a cycle. */
            if (cur.count || cur.index >= bvh->node_count || visited >= bvh->node_count) goto done;
            const RtBvhNode *n = &bvh->nodes[cur.index];
            visited++;
            BvhEntry kid[2];
            int m = 0;
            for (int k = 0; k < 2; k++) {
                float t0;
                if (bvh_child_is_leaf(n, k) && bvh_child_count(n, k) == 0) continue;
                if (!meets(n, k, o, inv, grow, tmin, tmax, &t0)) continue;
                if (found && t0 > best.t + eps) continue;
                kid[m++] = (BvhEntry){n->child[k], n->count[k], t0};
            }
            if (m == 0) goto pop;
            if (m == 2) {
                /* the nearer first; at equal entries, the left */
                const int near = kid[1].t0 < kid[0].t0;
                if (sp == RT_BVH_MAX_DEPTH) goto done;
                stack[sp++] = kid[!near];
                cur = kid[near];
            } else {
                cur = kid[0];
            }
            continue;
        }
        /* a leaf: its range, and its ids, checked against a corrupt tree */
        uint32_t first = cur.index, end = cur.index + (cur.count & ~RT_BVH_LEAF);
        for (uint32_t i = first; i < end && end <= bvh->index_count && end >= first; i++) {
            const uint32_t id = bvh->tri_index[i];
            if (id >= tris->count ||
                !rt_hit_closer(tris, id, use_woop, o, d, tmin, filter, ctx, &best))
                continue;
            found = 1;
            if (any) goto done;
        }
    pop:
        /* The next pending child that starts before the best hit. */
        for (;;) {
            if (sp == 0) goto done;
            cur = stack[--sp];
            if (!found || cur.t0 <= best.t + eps) break;
        }
    }
done:
    if (steps) *steps += visited;
    if (found && hit) *hit = best;
    return found;
}

int rt_bvh_closest_hit(const RtBvh *bvh, const RtTriArrays *tris, RtRay ray, float tmin, float tmax,
                       int use_woop, RtHitFilter filter, const void *ctx, RtHit *hit,
                       uint32_t *steps)
{
    return traverse(bvh, tris, ray, tmin, tmax, use_woop, filter, ctx, 0, hit, steps);
}

int rt_bvh_any_hit(const RtBvh *bvh, const RtTriArrays *tris, RtRay ray, float tmin, float tmax,
                   int use_woop, RtHitFilter filter, const void *ctx)
{
    return traverse(bvh, tris, ray, tmin, tmax, use_woop, filter, ctx, 1, NULL, NULL);
}
