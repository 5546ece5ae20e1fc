/* kd_traverse_cpu.c — front-to-back kd traversal of the shared layout
 * (kd_layout.h) for the CPU renderer and the tests, and the brute-force
 * oracle it is checked against.
 *
 * Exactness: the traversal returns the brute-force closest hit (same
 * triangle, same t, ties to the lower id). Two things make it so:
 *   - Every node is entered with the ray's interval inside its cell grown by
 *     delta on every side (delta: the tolerance below). A hit test's point
 *     can miss its triangle by a few ulps (Woop's u, v far from the origin),
 *     and a plane crossing is rounded; a node is skipped only when the ray
 *     misses it by more than that. Visiting one node more never changes the
 *     answer.
 *   - A hit found in a leaf is kept wherever along the ray it lies (not only
 *     inside the leaf's own interval), and a pending node is skipped only
 *     when it starts beyond the best hit. So the rule of kd_layout.h, "a hit
 *     counts in [t_min, t_max] of the leaf's cell", holds with the cell grown
 *     by delta, and a hit on a shared face is found from either side.
 */
#include "kd/kd_cpu.h"

/* One entry per level; kd_build_cpu.c caps trees at 64 levels and
 * rt_kd_validate rejects trees deeper than this stack. */
#define KD_STACK 128
/* delta = 2^-16 of the largest coordinate in play (the scene's or the
 * origin's): 128 float ulps, above the few-ulp error of a plane crossing or
 * of a Woop or Moller-Trumbore hit point. rt_kd_validate's tolerance and the
 * builder's minimum gap are of the same order. */
#define KD_DELTA_SCALE (1.0f / 65536.0f)

typedef struct KdEntry {
    uint32_t node;
    float t0, t1;
} KdEntry;

/* The ray's [t0, t1] inside the box grown by delta. A ray parallel to a slab
 * is inside it or not by its origin alone, which also covers an origin on
 * the slab (where the slab formula would compute 0 * inf). */
static int clip_ray(RtAabb b, RtVec3 o, RtVec3 d, float delta, float *t0, float *t1)
{
    for (int a = 0; a < 3; a++) {
        float oa = v3_get(o, a), da = v3_get(d, a);
        float lo = v3_get(b.lo, a) - delta, hi = v3_get(b.hi, a) + delta;
        if (da == 0.0f) {
            if (oa < lo || oa > hi) return 0;
            continue;
        }
        float ta = (lo - oa) / da, tb = (hi - oa) / da;
        if (ta > tb) {
            float t = ta;
            ta = tb;
            tb = t;
        }
        if (ta > *t0) *t0 = ta;
        if (tb < *t1) *t1 = tb;
    }
    return *t0 <= *t1;
}

static float max_abs3(RtVec3 a) { return fmaxf(fmaxf(fabsf(a.x), fabsf(a.y)), fabsf(a.z)); }

/* any = 1 returns at the first accepted hit (shadow rays). */
static int traverse(const RtKdTree *tree, const RtTriArrays *tris, RtRay ray, float tmin,
                    float tmax, int use_woop, RtHitFilter filter, const void *ctx, int any,
                    RtHit *hit, uint32_t *steps)
{
    RtHit best = {tmax, 0.0f, 0.0f, RT_NO_HIT};
    uint32_t visited = 0;
    int found = 0;
    if (hit) *hit = best;
    if (steps) *steps = 0;
    if (!tree || tree->node_count == 0 || aabb_is_empty(tree->bounds) || !(tmin <= tmax))
        return 0;
    RtVec3 o = ray.o, d = ray.d;
    float dlen = v3_len(d);
    if (!(dlen > 0.0f) || !isfinite(dlen) || !isfinite(o.x + o.y + o.z)) return 0;
    float scale = fmaxf(max_abs3(o), fmaxf(max_abs3(tree->bounds.lo), max_abs3(tree->bounds.hi)));
    const float delta = KD_DELTA_SCALE * scale;
    const float eps = delta / dlen; /* delta along the ray, for the stop test */
    float t0 = tmin, t1 = tmax;
    if (!clip_ray(tree->bounds, o, d, delta, &t0, &t1)) return 0;

    /* Per axis: origin, direction, 1/direction, delta in t. A NaN plane
     * crossing (origin on the plane of a ray with a denormal direction,
     * 0 * inf) fails every comparison below, which visits both children. */
    float oo[3] = {o.x, o.y, o.z}, dd[3] = {d.x, d.y, d.z}, inv[3], de[3];
    for (int a = 0; a < 3; a++) {
        inv[a] = 1.0f / dd[a];
        de[a] = delta * fabsf(inv[a]);
    }

    KdEntry stack[KD_STACK];
    int sp = 0;
    uint32_t node = 0;
    for (;;) {
        RtKdNode n = tree->nodes[node];
        visited++;
        if (!kd_is_leaf(n)) {
            const int a = kd_axis(n);
            const float p = kd_split(n), oa = oo[a], da = dd[a];
            const uint32_t left = kd_left(n), right = kd_right(n);
            if (da == 0.0f) {
                /* Parallel: the origin's side, both within delta of the plane. */
                if (oa < p - delta) node = left;
                else if (oa > p + delta) node = right;
                else {
                    if (sp < KD_STACK) stack[sp++] = (KdEntry){right, t0, t1};
                    node = left;
                }
                continue;
            }
            /* first: the child the ray is in before the plane; each child's
             * interval reaches delta beyond the plane. */
            const float ts = (p - oa) * inv[a];
            const uint32_t first = da > 0.0f ? left : right, second = da > 0.0f ? right : left;
            const float first_t1 = ts + de[a] < t1 ? ts + de[a] : t1;
            const float second_t0 = ts - de[a] > t0 ? ts - de[a] : t0;
            const int go_first = t0 <= first_t1, go_second = second_t0 <= t1;
            if (go_first && go_second) {
                if (ts <= t0) {
                    /* Origin on (or past) the plane: the side the direction
                     * points into first, then the plane's other side. */
                    if (sp < KD_STACK) stack[sp++] = (KdEntry){first, t0, first_t1};
                    node = second;
                    t0 = second_t0;
                } else {
                    if (sp < KD_STACK) stack[sp++] = (KdEntry){second, second_t0, t1};
                    node = first;
                    t1 = first_t1;
                }
            } else if (go_first) {
                node = first;
                t1 = first_t1;
            } else if (go_second) {
                node = second;
                t0 = second_t0;
            } else {
                goto pop; /* rounding emptied both: nothing here */
            }
            continue;
        }
        uint32_t count = kd_leaf_count(n);
        if (count) {
            RtKdLeaf lf = tree->leaves[kd_leaf_id(n)];
            for (uint32_t i = 0; i < lf.count; i++) {
                if (!rt_hit_closer(tris, tree->tri_index[lf.first + i], use_woop, o, d, tmin,
                                   filter, ctx, &best))
                    continue;
                found = 1;
                if (any) goto done;
            }
        }
    pop:
        /* The next pending node that starts before the best hit. Not simply
         * the top: the plane side behind an origin on the plane waits with
         * [t0, t0] below nodes that start later, so skip, do not stop. */
        for (;;) {
            if (sp == 0) goto done;
            KdEntry e = stack[--sp];
            if (found && e.t0 > best.t + eps) continue;
            node = e.node;
            t0 = e.t0;
            t1 = e.t1;
            break;
        }
    }
done:
    if (steps) *steps = visited;
    if (found && hit) *hit = best;
    return found;
}

int rt_kd_closest_hit(const RtKdTree *tree, const RtTriArrays *tris, RtRay ray, float tmin,
                      float tmax, int use_woop, RtHit *hit, uint32_t *steps)
{
    return traverse(tree, tris, ray, tmin, tmax, use_woop, NULL, NULL, 0, hit, steps);
}

int rt_kd_closest_hit_filtered(const RtKdTree *tree, const RtTriArrays *tris, RtRay ray,
                               float tmin, float tmax, int use_woop, RtHitFilter filter,
                               const void *ctx, RtHit *hit, uint32_t *steps)
{
    return traverse(tree, tris, ray, tmin, tmax, use_woop, filter, ctx, 0, hit, steps);
}

/* Shadow rays use Woop's test when the rows are there (Hoedt 2011: it beats
 * Moller-Trumbore unless leaf boxes are tested first). */
int rt_kd_any_hit(const RtKdTree *tree, const RtTriArrays *tris, RtRay ray, float tmin,
                  float tmax, RtHitFilter filter, const void *ctx)
{
    return traverse(tree, tris, ray, tmin, tmax, tris->woop != NULL, filter, ctx, 1, NULL, NULL);
}

int rt_brute_closest_hit(const RtTriArrays *tris, RtRay ray, float tmin, float tmax,
                         int use_woop, RtHitFilter filter, const void *ctx, RtHit *hit)
{
    RtHit best = {tmax, 0.0f, 0.0f, RT_NO_HIT};
    int found = 0;
    if (hit) *hit = best;
    if (!(tmin <= tmax)) return 0;
    for (uint32_t id = 0; id < tris->count; id++) {
        float t, u, v;
        if (!rt_isect_tri(tris, id, use_woop, ray.o, ray.d, tmin, best.t, &t, &u, &v)) continue;
        if (found && t == best.t) continue; /* ties: the lower id came first */
        if (rt_kd_tri_degenerate(tris, id)) continue;
        if (filter && !filter(ctx, id, u, v)) continue;
        best = (RtHit){t, u, v, id};
        found = 1;
    }
    if (found && hit) *hit = best;
    return found;
}
