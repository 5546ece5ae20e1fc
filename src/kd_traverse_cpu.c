/* kd_traverse_cpu.c — front-to-back kd traversal of the shared layout
 * (kd_layout.h) for the CPU renderer and the tests, and the brute-force
 * oracle it is checked against.
 *
 * Exactness: the traversal must return the brute-force closest hit (same
 * triangle, same t), ties to the lower id. A hit found in a leaf is kept
 * wherever along the ray it lies, and the search stops only when the next
 * pending node starts beyond the best hit. Node and stop decisions compare
 * computed distances, so they are widened by a small tolerance (eps below):
 * a node is skipped only when the ray misses it by more than rounding can
 * explain, and visiting one more node never changes the answer.
 */
#include "kd_cpu.h"

/* One entry per level; kd_build_cpu.c caps trees at 64 levels and
 * rt_kd_validate rejects trees deeper than this stack. */
#define KD_STACK 128
/* Distances are widened by 2^-16 of the scene's largest coordinate (about
 * 128 float ulps): the error of a plane crossing and of a Woop or
 * Moller-Trumbore t is a few ulps of the coordinates involved. */
#define KD_EPS_SCALE (1.0f / 65536.0f)

typedef struct KdEntry {
    uint32_t node;
    float t0, t1;
} KdEntry;

/* The ray's [t0, t1] inside the box, widened by eps. A ray parallel to a
 * slab is inside it or not by its origin alone, which also handles the
 * origin lying on the slab (where the slab formula would compute 0 * inf). */
static int clip_ray(RtAabb b, RtVec3 o, RtVec3 d, float eps, float *t0, float *t1)
{
    for (int a = 0; a < 3; a++) {
        float oa = v3_get(o, a), da = v3_get(d, a);
        float lo = v3_get(b.lo, a), hi = v3_get(b.hi, a);
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
        if (ta - eps > *t0) *t0 = ta - eps;
        if (tb + eps < *t1) *t1 = tb + eps;
    }
    return *t0 <= *t1;
}

/* A hit needs a finite t: with tmax = INFINITY, Woop's test takes a ray
 * parallel to a triangle's plane (dz = 0, oz != 0) for a hit at t = inf. */
static int isect_tri(const RtTriArrays *tris, uint32_t id, int use_woop, RtVec3 o, RtVec3 d,
                     float tmin, float tmax, float *t, float *u, float *v)
{
    int hit;
    if (use_woop) {
        hit = rt_isect_woop(&tris->woop[3 * (size_t)id], o, d, tmin, tmax, t, u, v);
    } else {
        const RtFloat4 *p = &tris->verts[3 * (size_t)id];
        hit = rt_isect_mt(f4_xyz(p[0]), f4_xyz(p[1]), f4_xyz(p[2]), o, d, tmin, tmax, t, u, v);
    }
    return hit && *t < INFINITY;
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
    float eps = KD_EPS_SCALE * scale / dlen;
    float t0 = tmin, t1 = tmax;
    if (!clip_ray(tree->bounds, o, d, eps, &t0, &t1)) return 0;

    KdEntry stack[KD_STACK];
    int sp = 0;
    uint32_t node = 0;
    for (;;) {
        RtKdNode n = tree->nodes[node];
        visited++;
        if (!kd_is_leaf(n)) {
            int a = kd_axis(n);
            float p = kd_split(n), oa = v3_get(o, a), da = v3_get(d, a);
            uint32_t left = kd_left(n), right = kd_right(n);
            if (da == 0.0f) {
                /* Parallel: the origin's side, or both when it lies on the plane. */
                if (oa != p) {
                    node = oa < p ? left : right;
                    continue;
                }
                if (sp < KD_STACK) stack[sp++] = (KdEntry){right, t0, t1};
                node = left;
                continue;
            }
            float ts = (p - oa) / da;
            /* first: the child the ray is in before the plane. */
            uint32_t first = da > 0.0f ? left : right, second = da > 0.0f ? right : left;
            if (ts > t1 + eps) {
                node = first;
            } else if (ts < t0 - eps) {
                node = second;
            } else if (ts <= t0) {
                /* Origin on (or just past) the plane: the side the direction
                 * points into first, then the plane itself from behind. */
                if (sp < KD_STACK) stack[sp++] = (KdEntry){first, t0, t0};
                node = second;
            } else {
                if (sp < KD_STACK) stack[sp++] = (KdEntry){second, ts, t1};
                node = first;
                t1 = ts < t1 ? ts : t1;
            }
            continue;
        }
        uint32_t count = kd_leaf_count(n);
        if (count) {
            RtKdLeaf lf = tree->leaves[kd_leaf_id(n)];
            for (uint32_t i = 0; i < lf.count; i++) {
                uint32_t id = tree->tri_index[lf.first + i];
                float t, u, v;
                if (!isect_tri(tris, id, use_woop, o, d, tmin, best.t, &t, &u, &v)) continue;
                if (t == best.t && id > best.tri) continue;
                if (filter && !filter(ctx, id, u, v)) continue;
                best = (RtHit){t, u, v, id};
                found = 1;
                if (any) goto done;
            }
        }
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

/* Shadow rays use Woop's test, the faster of the two on the CPU (Hoedt 2011
 * finds the same on the GPU without leaf skipping). */
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
        if (!isect_tri(tris, id, use_woop, ray.o, ray.d, tmin, best.t, &t, &u, &v)) continue;
        if (found && t == best.t) continue; /* ties: the lower id came first */
        if (rt_kd_tri_degenerate(tris, id)) continue;
        if (filter && !filter(ctx, id, u, v)) continue;
        best = (RtHit){t, u, v, id};
        found = 1;
    }
    if (found && hit) *hit = best;
    return found;
}
