/* trace_ray.cuh — the traversal loop of the GPU tracer, shared by the
 * kernels (trace.cu) and the host emulation (trace_emu.cu), which runs the
 * very same loop on the CPU, warps included, so that the packet variants
 * can be checked against the brute force without a GPU.
 *
 * Include it after defining RT_TRACE_FN as the functions' qualifiers
 * (`__device__` in trace.cu, `__host__` in trace_emu.cu). The loop reaches
 * the scene and the warp only through its Prims parameter:
 *   bool any(bool x), unsigned ballot(bool x)   warp votes (packets only)
 *   int lane()                                  the lane's index in its warp
 *   int isect(int kIsect, id, o, d, tmin, tmax, &t, &u, &v)
 *   bool alpha(id, u, v)                        map_d cut-outs
 *   uint32_t index(const uint32_t *p)           a leaf's triangle id
 *   RtKdNode node(p), RtKdLeaf leaf(p), RtAabb box(p)   tree loads
 * so a variant is a template parameter, never a copied loop.
 *
 * Two traversal loops behind one entry, trace_ray<kTrav, kIsect, kPacket>:
 * the full stack (trace_ray_stack, kTrav = RT_TRAV_STACK, the default) and
 * the loop of the variants of Hoedt 2011 ch. 4, as parameters:
 *   kd-restart (Foley & Sugerman 2005; Hoedt Alg. 20) or a circular short
 *   stack that restarts from the root on underflow (Horn et al. 2007; Hoedt
 *   Alg. 21); leaf skipping (Hoedt 4.2.4, a run-time flag); Woop or
 *   Moller-Trumbore (Hoedt 4.3); and Horn et al.'s packet traversal, where a
 *   warp walks the tree together with one shared stack while every ray keeps
 *   its own interval. The 4x8 warp tiles (Hoedt Alg. 22) are only a thread
 *   -> pixel map, applied by the kernels.
 *
 * Exactness of the short-stack loop (tests/test_gpu_trace.c checks it
 * against the CPU brute force):
 * every ray keeps `t_done`, the distance up to which all leaves on its path
 * have been searched; a hit counts only inside the current leaf's
 * [t_lo, t_hi] (widened by eps, as kd_traverse_cpu.c widens its node
 * decisions, so rounding in a plane crossing never loses a hit), the closest
 * wins, ties go to the lower triangle id, and a ray is finished once its
 * best hit lies before t_done or t_done reaches the scene's exit. Restarts
 * resume from t_done, so short-stack overflow and kd-restart cost only
 * repeated descents, never a missed leaf. */
#ifndef RT_TRACE_RAY_CUH
#define RT_TRACE_RAY_CUH

#ifndef RT_TRACE_FN
#error "define RT_TRACE_FN (__device__ or __host__) before including trace_ray.cuh"
#endif

#include <float.h>

#include "kd/kd_layout.h"
#include "trace/trace.h"

/* Widening of node and hit-interval decisions: 2^-16 of the scene's largest
 * coordinate, the value of kd_traverse_cpu.c (a plane crossing or a Woop/MT
 * t is off by a few ulps of the coordinates involved). */
#define TRACE_EPS_SCALE (1.0f / 65536.0f)
/* A safety net against a traversal that never ends (a corrupt tree):
 * node visits per ray. Far above any real count (a 300K-triangle tree
 * needs < 1,000). */
#define TRACE_MAX_VISITS (1u << 18)

/* The tree as the kernels read it (by value). */
typedef struct TraceTree {
    const RtKdNode *nodes;
    const RtKdLeaf *leaves;
    const RtAabb *boxes;
    const uint32_t *index;
    RtAabb bounds;
    const RtAabb *d_bounds; /* the GPU builder's root cell on the device (bounds is then unknown) */
    uint32_t node_count;
} TraceTree;

/* The run-time part of the variant (the rest are template parameters). */
typedef struct TraceCfg {
    int leaf_skip;
    int stack_size;
    int textures;
} TraceCfg;

/* The ray's [t0, t1] inside box b widened by eps (kd_traverse_cpu.c's
 * clip_ray). Each slab is entered at its near face (the low one where 1/d
 * is positive) and left at its far one, so a ray parallel to a slab
 * (1/d = +-inf) gets -inf and +inf inside it, an empty interval outside,
 * and NaN at a face it lies in, which fmaxf / fminf pass over (inside, as
 * clip_ray has it): the rare parallel ray takes no branch of its own. */
RT_TRACE_FN static bool clip_box(RtAabb b, RtVec3 o, RtVec3 inv, float eps, float *t0, float *t1)
{
    float tn[3], tf[3];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int a = 0; a < 3; a++) {
        const float oa = v3_get(o, a), ia = v3_get(inv, a);
        const bool up = ia >= 0.0f;
        tn[a] = (v3_get(up ? b.lo : b.hi, a) - oa) * ia;
        tf[a] = (v3_get(up ? b.hi : b.lo, a) - oa) * ia;
    }
    /* fmaxf / fminf return the other operand of a NaN, and NaN - eps
     * leaves t0 as it is */
    *t0 = fmaxf(*t0, fmaxf(fmaxf(tn[0], tn[1]), tn[2]) - eps);
    *t1 = fminf(*t1, fminf(fminf(tf[0], tf[1]), tf[2]) + eps);
    return *t0 <= *t1;
}

/* Thread -> pixel: row-major, or Hoedt's Alg. 22 (a warp = a 4x8 tile;
 * tiles are laid out row-major over the image, partial tiles at the right
 * and bottom edges keep their threads idle). */
#define TILE_W 4
#define TILE_H 8
/* Lane `lane` of the 4x8 tile in tile column col, tile row row. */
RT_TRACE_FN static void tile_pixel(uint32_t col, uint32_t row, uint32_t lane, int *px, int *py)
{
    *px = (int)(col * TILE_W + lane % TILE_W);
    *py = (int)(row * TILE_H + lane / TILE_W);
}
RT_TRACE_FN static bool pixel_of(int ray_map, uint32_t tid, int w, int h, int *px, int *py)
{
    if (ray_map == RT_RAYMAP_TILES) {
        uint32_t tiles_x = ((uint32_t)w + TILE_W - 1) / TILE_W;
        uint32_t pid = tid / (TILE_W * TILE_H);
        tile_pixel(pid % tiles_x, pid / tiles_x, tid % (TILE_W * TILE_H), px, py);
    } else {
        *px = (int)(tid % (uint32_t)w);
        *py = (int)(tid / (uint32_t)w);
    }
    return *px < w && *py < h;
}

static uint32_t thread_count(int ray_map, int w, int h)
{
    if (ray_map == RT_RAYMAP_TILES)
        return (uint32_t)((w + TILE_W - 1) / TILE_W) * (uint32_t)((h + TILE_H - 1) / TILE_H) *
               TILE_W * TILE_H;
    return (uint32_t)w * (uint32_t)h;
}

/* ---- the traversal loop ------------------------------------------------- */

RT_TRACE_FN static int popcount(unsigned x)
{
#ifdef __CUDA_ARCH__
    return __popc(x);
#else
    return __builtin_popcount(x);
#endif
}

RT_TRACE_FN static int lowest_lane(unsigned x)
{
#ifdef __CUDA_ARCH__
    return __ffs(x) - 1;
#else
    return __builtin_ctz(x);
#endif
}

/* Warp-wide "any" in packet mode, the lane's own value otherwise. */
template <bool kPacket, class Prims>
RT_TRACE_FN static bool warp_any(const Prims &pr, bool x)
{
    return kPacket ? pr.any(x) : x;
}

/* A triangle's hit (id at t, u, v) offered to the best so far, in the
 * layouts' tie rule (the closer, then the lower triangle id) and through
 * the cut-out test: true when it became the best. Every walk's leaf loop
 * (this file's and trace_bvh.cuh's) takes its hits here. */
template <class Prims>
RT_TRACE_FN static bool take_hit(const Prims &pr, RtHit &best, uint32_t id, float t, float u, float v)
{
    if (t == best.t && id > best.tri) return false;
    if (!pr.alpha(id, u, v)) return false;
    best.t = t;
    best.u = u;
    best.v = v;
    best.tri = id;
    return true;
}

/* A float's bits and back: stack entries that hold a node index beside
 * distances (memcpy: the host emulation compiles this too). */
RT_TRACE_FN static uint32_t trace_f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
RT_TRACE_FN static float trace_u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* 1/x and 1/sqrt(x), the GPU's approximate instructions (within 1 and 2
 * ulps; 1/+-0 = +-inf), exactly rounded on the host. The reciprocal
 * flushes subnormals (1/x of |x| < 2^-126 is +-inf, 1/x of |x| > 2^126 is
 * +-0, on the host too): a direction that small along an axis is parallel
 * to it for the walks, and the full-range instruction cost the setup of
 * every ray three scalings (18 instructions, a tenth of the setup of a ray
 * that misses the scene box). */
RT_TRACE_FN static float trace_rcp(float x)
{
#ifdef __CUDA_ARCH__
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
#else
    if (fabsf(x) < FLT_MIN) return copysignf(INFINITY, x);
    const float r = 1.0f / x;
    return fabsf(r) < FLT_MIN ? copysignf(0.0f, r) : r;
#endif
}
/* 1/d per axis: +-inf along an axis the ray is parallel to */
RT_TRACE_FN static RtVec3 trace_inv(RtVec3 d) { return v3(trace_rcp(d.x), trace_rcp(d.y), trace_rcp(d.z)); }
RT_TRACE_FN static float trace_rsqrt(float x)
{
#ifdef __CUDA_ARCH__
    return rsqrtf(x);
#else
    return 1.0f / sqrtf(x);
#endif
}

/* No hit yet: the best so far is at the ray's end. */
RT_TRACE_FN static RtHit no_hit(float tmax)
{
    RtHit h;
    h.t = tmax;
    h.u = h.v = 0.0f;
    h.tri = RT_NO_HIT;
    return h;
}

/* Both trees' walks (kd: kd_ray_start, BVH: trace_bvh): whether ray (o, d)
 * in [tmin, tmax] can meet a tree of node_count nodes in bounds (a finite
 * origin, a direction of finite non-zero length, a non-empty tree), and its
 * widening: delta = TRACE_EPS_SCALE of the largest coordinate of the origin
 * and the box, in space, and eps = delta / |d| in t. eps is a tolerance and
 * 1/d's rounding (an ulp of t) lies far below it, so the hardware's
 * approximate square root and reciprocal serve (the rounded ones cost a
 * rare-case branch each, a tenth of the setup of a ray that misses the
 * scene box). */
RT_TRACE_FN static bool trace_ray_tolerance(RtAabb bounds, uint32_t node_count, RtVec3 o, RtVec3 d, float tmin,
                                            float tmax, float *delta, float *eps)
{
    const float dd = v3_dot(d, d);
    const float scale = fmaxf(fmaxf(fmaxf(fabsf(o.x), fabsf(o.y)), fabsf(o.z)),
                              fmaxf(fmaxf(fmaxf(fabsf(bounds.lo.x), fabsf(bounds.lo.y)), fabsf(bounds.lo.z)),
                                    fmaxf(fmaxf(fabsf(bounds.hi.x), fabsf(bounds.hi.y)), fabsf(bounds.hi.z))));
    *delta = TRACE_EPS_SCALE * scale;
    *eps = *delta * trace_rsqrt(dd);
    return dd > 0.0f && isfinite(dd) && isfinite(o.x + o.y + o.z) && tmin <= tmax && node_count != 0 &&
           !aabb_is_empty(bounds);
}

/* The ray's start in the tree, both kd loops': whether it is live (a valid
 * ray that meets the scene's box), its widening eps
 * (trace_ray_tolerance), 1/d and its interval [r0, r1] in the box. */
RT_TRACE_FN static bool kd_ray_start(const TraceTree &tr, RtVec3 o, RtVec3 d, float tmin, float tmax, bool live,
                                     float *eps, RtVec3 *inv, float *r0, float *r1)
{
    const RtAabb bounds = tr.d_bounds ? *tr.d_bounds : tr.bounds;
    float delta;
    live = trace_ray_tolerance(bounds, tr.node_count, o, d, tmin, tmax, &delta, eps) && live;
    *r0 = tmin;
    *r1 = tmax;
    /* Plane crossings multiply by 1/d: a division per node visit was the
     * loop's most expensive instruction. 1/0 is +-inf (a ray parallel to
     * an axis), which the walk tests for. */
    *inv = trace_inv(d);
    return live && clip_box(bounds, o, *inv, *eps, r0, r1);
}

/* Which children of an interior node (split p on an axis where the ray has
 * origin oa and 1/d ia) a ray in [lo, hi] needs, its interval
 * in each, and the one it visits first: the tie rules of kd_layout.h, with
 * every decision widened by eps as kd_traverse_cpu.c's. */
typedef struct KdChildren {
    bool need_l, need_r, pref_l;
    float lo_l, hi_l, lo_r, hi_r;
} KdChildren;

RT_TRACE_FN static KdChildren kd_children(float p, float oa, float ia, float lo, float hi, float eps)
{
    KdChildren c;
    c.need_l = c.need_r = false;
    c.pref_l = true;
    c.lo_l = c.lo_r = INFINITY;
    c.hi_l = c.hi_r = -INFINITY;
    if (!(fabsf(ia) < INFINITY)) {
        /* parallel (1/d of 0, or of a subnormal d flushed, is infinite):
         * the origin's side, both when it lies on the plane */
        c.need_l = oa <= p;
        c.need_r = oa >= p;
        c.lo_l = c.lo_r = lo;
        c.hi_l = c.hi_r = hi;
    } else {
        float ts = (p - oa) * ia;
        bool first_l = ia > 0.0f;
        float lo_f = INFINITY, hi_f = -INFINITY, lo_s = INFINITY, hi_s = -INFINITY;
        bool pref_first = true;
        if (ts > hi + eps) {
            lo_f = lo; hi_f = hi;
        } else if (ts < lo - eps) {
            lo_s = lo; hi_s = hi;
        } else if (ts <= lo) {
            /* The ray is at the plane on entry (its origin, or a
             * restart at this plane): the far side first, then
             * the plane itself from the near side ([lo, lo]: a
             * flat cell holding triangles in the plane), as
             * kd_traverse_cpu.c does. */
            lo_f = lo; hi_f = lo;
            lo_s = lo; hi_s = hi;
            pref_first = false;
        } else {
            lo_f = lo; hi_f = fminf(ts, hi);
            lo_s = ts; hi_s = hi;
        }
        c.lo_l = first_l ? lo_f : lo_s;
        c.hi_l = first_l ? hi_f : hi_s;
        c.lo_r = first_l ? lo_s : lo_f;
        c.hi_r = first_l ? hi_s : hi_f;
        c.need_l = c.lo_l <= c.hi_l;
        c.need_r = c.lo_r <= c.hi_r;
        c.pref_l = pref_first == first_l;
    }
    if (!c.need_l) c.pref_l = false;
    if (!c.need_r) c.pref_l = true;
    return c;
}

/* Leaf node n's triangles against the ray in [lo, hi]: only hits inside
 * [lo - eps, hi + eps] count (the layout's closed interval, widened), the
 * closest wins through take_hit; with leaf skipping the leaf's box is tested
 * first. Returns whether an any-hit ray is done. */
template <int kIsect, class Prims>
RT_TRACE_FN static bool kd_search_leaf(const Prims &pr, const TraceTree &tr, const TraceCfg &cfg, RtKdNode n,
                                       RtVec3 o, RtVec3 d, RtVec3 inv, float tmin, float lo, float hi, float eps,
                                       bool any, RtHit &best)
{
    const uint32_t leaf = kd_leaf_id(n);
    /* the leaf's record is read with its box, so that its wait overlaps the
     * box test rather than following it */
    const RtKdLeaf lf = pr.leaf(&tr.leaves[leaf]);
    float b0 = lo - eps, b1 = hi + eps;
    if (cfg.leaf_skip && !clip_box(pr.box(&tr.boxes[leaf]), o, inv, eps, &b0, &b1)) return false;
    /* each triangle's id read while the one before it is tested: its rows
     * then wait for one load, not two in a row */
    uint32_t next = lf.count ? pr.index(&tr.index[lf.first]) : 0u;
    for (uint32_t i = 0; i < lf.count; i++) {
        const uint32_t id = next;
        if (i + 1 < lf.count) next = pr.index(&tr.index[lf.first + i + 1]);
        float t, u, v;
        float tcap = fminf(best.t, hi + eps);
        if (!pr.isect(kIsect, id, o, d, tmin, tcap, &t, &u, &v)) continue;
        if (t < lo - eps) continue;
        if (take_hit(pr, best, id, t, u, v) && any) return true;
    }
    return false;
}

/* The full stack's depth: one entry per level of the current path at most,
 * and no tree goes deeper than the layout's RT_KD_MAX_DEPTH (kd_layout.h;
 * rt_kd_validate checks it). */
#define TRACE_FULL_STACK RT_KD_MAX_DEPTH

/* Closest (any = false) or any hit of ray (o, d) in [tmin, tmax] with a
 * full stack (RT_TRAV_STACK): the classic front-to-back walk (Wald's, as
 * on the CPU: kd_traverse_cpu.c), one entry pushed per node where the ray
 * needs both children, never dropped, so no restart and none of the short
 * stack's bookkeeping (t_done, entry levels, starving rounds). Exactness is
 * by construction: a pending entry is skipped only when it starts beyond
 * the best hit (+ eps), so every leaf that could hold a hit no farther than
 * the best is searched, in whatever order (a popped entry need not start
 * after the ones below it: the plane's flat cell is pushed with the ray's
 * own entry point). In packet mode the warp walks one node at a time with
 * one stack of node indices; every ray keeps its own intervals, the warp
 * goes where most of its rays would go first, and an entry is pushed when
 * any ray needs it. Nothing is ever dropped, so a packet ray searched out
 * of order loses no hit either. */
template <int kIsect, bool kPacket, class Prims>
RT_TRACE_FN static RtHit trace_ray_stack(const Prims &pr, const TraceTree &tr, const TraceCfg &cfg, RtVec3 o,
                                         RtVec3 d, float tmin, float tmax, bool live, bool any, uint32_t *steps)
{
    RtHit best = no_hit(tmax);
    float eps, r0, r1;
    RtVec3 inv;
    live = kd_ray_start(tr, o, d, tmin, tmax, live, &eps, &inv, &r0, &r1);
    if (!warp_any<kPacket>(pr, live)) return best;

    /* An entry: its interval, the least start of the entries below it, and
     * its node (bits), one 16-byte store and load. m_top is the least start
     * of all entries: once it lies beyond the best hit, none is needed and
     * the walk ends without reading them (entries are not sorted by start:
     * the flat cell [lo, lo] and the plane's other side are pushed below
     * entries that start later). */
    float4 stk[TRACE_FULL_STACK];
    int sp = 0;
    float m_top = INFINITY;
    uint32_t node = 0, visits = 0;
    float lo = live ? r0 : INFINITY, hi = live ? r1 : -INFINITY;
    bool done = !live; /* an any-hit ray that has its hit */
    for (;;) {
        /* --- descend to a leaf, or to a node no ray of the warp is in ---
         * Each node is loaded where the step before it ends (here, the
         * first), so the descent keeps a loop head of its own: loaded at
         * the top of the descent, the compiler made one loop of the
         * descent and the walk, which waits for the whole warp after every
         * step (the lanes descending wait for those searching a leaf), and
         * the walk was 15-40 % slower (docs/trace_gpu.md). */
        RtKdNode n = pr.node(&tr.nodes[node]);
        visits++;
        bool at_leaf;
        for (;;) {
            at_leaf = kd_is_leaf(n);
            /* the visit bound with the leaf test, one branch a step (as a
             * check of its own before each load it cost a branch more) */
            if (at_leaf | (visits > TRACE_MAX_VISITS)) break;
            const int a = kd_axis(n);
            const float ia = v3_get(inv, a);
            const uint32_t left = kd_left(n);
            uint32_t go, other;
            bool push;
            float lo_o, hi_o;
            if (!kPacket) {
                /* A lone ray (parallel ones too) crossing the plane at ts:
                 * kd_children's four cases without their branches. It
                 * starts every child at its own lo (a ray whose plane lies
                 * behind it enters the far side at lo; the far side first
                 * when it is at the plane on entry, ts <= lo, with the flat
                 * cell [lo, lo] on the near side pushed), so lo changes on
                 * the way down only where an empty child hands the walk to
                 * the other side (below), and the interval was checked
                 * against the best hit when it was popped. The other side
                 * is pushed when the plane lies inside [lo - eps, hi]. A
                 * ray parallel to the plane (1/d = +-inf) has ts = +-inf,
                 * which keeps it on its origin's side and pushes nothing,
                 * or NaN when it lies in the plane: every test below is
                 * written so that NaN takes both sides over [lo, hi], as
                 * kd_children's parallel case does (no branch per step for
                 * these rare rays). */
                const float ts = (kd_split(n) - v3_get(o, a)) * ia;
                const bool go_near = ts > lo;
                const uint32_t off = go_near == (ia > 0.0f) ? 0u : 1u; /* the near side is left when d points up */
                go = left + off;
                other = left + 1u - off;
                push = !(ts < lo - eps) && !(ts > hi);
                lo_o = go_near ? ts : lo;
                hi_o = ts <= lo ? lo : hi;
                hi = go_near ? fminf(ts, hi) : hi;
            } else if (kPacket && !pr.any(!(fabsf(ia) < INFINITY))) {
                /* A packet whose rays all cross the plane: the same two
                 * intervals per ray (near [lo, ts] clamped to [lo, hi], the
                 * flat cell [lo, lo] when at the plane on entry; far
                 * [max(ts, lo), hi]), three votes, and each ray's intervals
                 * taken straight for the side the packet goes to and the
                 * one it pushes: kd_children's decisions (a lone needed side
                 * is also the preferred one) at half the work. */
                const float ts = (kd_split(n) - v3_get(o, a)) * ia;
                const bool act = !done && lo <= hi && lo <= best.t + eps;
                const bool near_l = ia > 0.0f; /* the near side is left when d points up */
                const uint32_t empty = kd_empty_children(n); /* an empty child is needed by none */
                const bool e_n = empty & (near_l ? RT_KD_EMPTY_LEFT : RT_KD_EMPTY_RIGHT);
                const bool e_f = empty & (near_l ? RT_KD_EMPTY_RIGHT : RT_KD_EMPTY_LEFT);
                const bool need_n = act && !e_n && ts >= lo - eps, need_f = act && !e_f && ts <= hi;
                const unsigned bl = pr.ballot(near_l ? need_n : need_f), br = pr.ballot(near_l ? need_f : need_n);
                if (!(bl | br)) break;
                const unsigned bp = pr.ballot((need_n || need_f) && (ts > lo) == near_l);
                const bool go_l = bl && (!br || 2 * popcount(bp) >= popcount(bl | br));
                go = go_l ? left : left + 1u;
                other = go_l ? left + 1u : left;
                push = (go_l ? br : bl) != 0u;
                const bool g_near = go_l == near_l; /* the packet goes to this ray's near side */
                const float hi_n = fmaxf(lo, fminf(ts, hi)), lo_f = fmaxf(ts, lo);
                const bool need_go = g_near ? need_n : need_f, need_ot = g_near ? need_f : need_n;
                lo_o = need_ot ? (g_near ? lo_f : lo) : INFINITY;
                hi_o = need_ot ? (g_near ? hi : hi_n) : -INFINITY;
                const float lo_g = g_near ? lo : lo_f, hi_g = g_near ? hi_n : hi;
                lo = need_go ? lo_g : INFINITY;
                hi = need_go ? hi_g : -INFINITY;
            } else {
                /* packets with a ray parallel to the plane (or nearly: 1/d
                 * overflows) */
                const bool active = !done && lo <= hi && lo <= best.t + eps;
                KdChildren c = {false, false, true, INFINITY, -INFINITY, INFINITY, -INFINITY};
                if (active) c = kd_children(kd_split(n), v3_get(o, a), ia, lo, hi, eps);
                if (kPacket) { /* an empty child is needed by none */
                    c.need_l = c.need_l && !(kd_empty_children(n) & RT_KD_EMPTY_LEFT);
                    c.need_r = c.need_r && !(kd_empty_children(n) & RT_KD_EMPTY_RIGHT);
                }
                const bool any_l = warp_any<kPacket>(pr, c.need_l), any_r = warp_any<kPacket>(pr, c.need_r);
                if (!any_l && !any_r) break;
                bool go_l = c.pref_l;
                if (kPacket) {
                    /* where most of the active rays would go first */
                    unsigned voters = pr.ballot(c.need_l || c.need_r);
                    unsigned for_l = pr.ballot((c.need_l || c.need_r) && c.pref_l);
                    go_l = any_l && (!any_r || 2 * popcount(for_l) >= popcount(voters));
                }
                go = go_l ? left : left + 1u;
                other = go_l ? left + 1u : left;
                push = warp_any<kPacket>(pr, go_l ? c.need_r : c.need_l);
                lo_o = go_l ? c.lo_r : c.lo_l; /* INFINITY for a ray that does not need it */
                hi_o = go_l ? c.hi_r : c.hi_l;
                lo = go_l ? c.lo_l : c.lo_r;
                hi = go_l ? c.hi_l : c.hi_r;
            }
            if (!kPacket) {
                /* An empty child (kd_layout.h's marks) is skipped unread:
                 * never pushed, and when it is the side taken, the other
                 * side is taken instead (if the ray needs it and it starts
                 * no later than the best hit), else the walk pops. Both
                 * marks are tested at once first: tested one by one, their
                 * instructions cost the walk more than the visits they save
                 * where empty leaves are few (docs/trace_gpu.md). e: bit 0
                 * the left child's mark, bit 1 the right's. */
                const uint32_t e = kd_empty_children(n) / RT_KD_EMPTY_LEFT, m_go = go == left ? 1u : 2u;
                if (e) {
                    push = push && !(e & (m_go ^ 3u));
                    if (e & m_go) {
                        if (!push || lo_o > best.t + eps) break;
                        go = other;
                        lo = lo_o;
                        hi = hi_o;
                        push = false;
                    }
                }
            }
            if (push && sp < TRACE_FULL_STACK) {
                stk[sp] = make_float4(lo_o, hi_o, m_top, trace_u2f(other));
                m_top = fminf(m_top, lo_o);
                sp++;
            }
            node = go;
            n = pr.node(&tr.nodes[node]);
            visits++;
        }
        if (at_leaf && !done && kd_leaf_count(n) && lo <= hi && lo <= best.t + eps &&
            kd_search_leaf<kIsect>(pr, tr, cfg, n, o, d, inv, tmin, lo, hi, eps, any, best))
            done = true;
        if (visits > TRACE_MAX_VISITS) done = true;
        /* --- the top entry some ray still needs; none: the walk is over --- */
        bool popped = false;
        while (sp > 0 && warp_any<kPacket>(pr, !done && m_top <= best.t + eps)) {
            sp--;
            const float4 e = stk[sp];
            m_top = e.z;
            const bool want = !done && e.x <= e.y && e.x <= best.t + eps;
            if (warp_any<kPacket>(pr, want)) {
                node = trace_f2u(e.w);
                lo = want ? e.x : INFINITY;
                hi = want ? e.y : -INFINITY;
                popped = true;
                break;
            }
        }
        if (!popped) break;
    }
    if (steps) *steps += visits;
    return best;
}

/* Closest (any = false) or any hit of ray (o, d) in [tmin, tmax]. In packet
 * mode every lane of the warp must call this together (a lane without a ray
 * passes live = false). steps (may be NULL) += nodes visited. */
template <int kTrav, int kIsect, bool kPacket, class Prims>
RT_TRACE_FN static RtHit trace_ray(const Prims &pr, const TraceTree &tr, const TraceCfg &cfg,
                                   RtVec3 o, RtVec3 d, float tmin, float tmax, bool live,
                                   bool any, uint32_t *steps)
{
    if (kTrav == RT_TRAV_STACK) return trace_ray_stack<kIsect, kPacket>(pr, tr, cfg, o, d, tmin, tmax, live, any, steps);
    RtHit best = no_hit(tmax);

    /* --- clip to the scene's box; eps as kd_traverse_cpu.c --- */
    float eps, r0, r1;
    RtVec3 inv;
    live = kd_ray_start(tr, o, d, tmin, tmax, live, &eps, &inv, &r0, &r1);
    bool finished = !live;
    if (!warp_any<kPacket>(pr, !finished)) return best;

    float t_done = r0;  /* every leaf on the path before t_done has been searched */
    uint32_t visits = 0;
    /* the circular short stack: node indices are the same in every lane of
     * a packet (pushed together), intervals are per ray */
    uint32_t stk_node[RT_TRACE_STACK_MAX];
    float stk_lo[RT_TRACE_STACK_MAX], stk_hi[RT_TRACE_STACK_MAX];
    uint8_t stk_lvl[RT_TRACE_STACK_MAX]; /* what dropping the entry costs, below */
    int stk_top = 0, stk_count = 0;
    const int stk_size = cfg.stack_size;
    /* Packets: a round runs from one restart to the next. A ray whose
     * t_done did not move in a round it took part in is starving (the
     * shared stack kept dropping its entries for other rays'), and the
     * next round is the lowest such ray's alone, the others paused (their
     * stack is empty at a restart, so they lose nothing): a lone ray walks
     * in its own order and always moves on. (Letting all starving rays
     * share that round cut the emulated node visits but was slower on the
     * GPU: docs/trace_gpu.md.) */
    float t_round = r0;
    bool paused = false, solo = false;

    /* current node and this ray's interval in it (lo > hi: not in it) */
    uint32_t node = 0;
    float lo = finished ? INFINITY : r0, hi = finished ? -INFINITY : r1;

    for (;;) {
        /* --- descend to a leaf --- */
        bool at_leaf = true;
        for (;;) {
            RtKdNode n = pr.node(&tr.nodes[node]);
            visits++;
            if (kd_is_leaf(n)) break;
            bool active = !finished && lo <= hi && lo <= best.t + eps;
            int a = kd_axis(n);
            float p = kd_split(n), oa = v3_get(o, a);
            uint32_t left = kd_left(n);
            /* which children this ray needs, with its interval in each,
             * and the one it would visit first (the tie rules of kd_layout.h) */
            KdChildren c = {false, false, true, INFINITY, -INFINITY, INFINITY, -INFINITY};
            if (active) c = kd_children(p, oa, v3_get(inv, a), lo, hi, eps);
            const bool need_l = c.need_l, need_r = c.need_r, pref_l = c.pref_l;
            const float lo_l = c.lo_l, hi_l = c.hi_l, lo_r = c.lo_r, hi_r = c.hi_r;
            bool any_l = warp_any<kPacket>(pr, need_l), any_r = warp_any<kPacket>(pr, need_r);
            if (!any_l && !any_r) {
                at_leaf = false; /* nobody is in this node: next pending one */
                break;
            }
            bool go_l;
            if (kPacket) {
                /* the packet goes where most of its active rays would go first */
                unsigned voters = pr.ballot(need_l || need_r);
                unsigned for_l = pr.ballot((need_l || need_r) && pref_l);
                go_l = any_l && (!any_r || 2 * popcount(for_l) >= popcount(voters));
            } else {
                go_l = any_l && (!any_r || pref_l);
            }
            uint32_t other = go_l ? left + 1u : left;
            bool need_go = go_l ? need_l : need_r, need_other = go_l ? need_r : need_l;
            float lo_go = go_l ? lo_l : lo_r, hi_go = go_l ? hi_l : hi_r;
            float lo_ot = go_l ? lo_r : lo_l, hi_ot = go_l ? hi_r : hi_l;
            /* A packet never takes a ray to its far child before its near
             * one: the ray sits out (its near child is pushed below, the far
             * one comes back through a restart from t_done). Otherwise the
             * rays in the minority at every level could all be out of order,
             * and no ray's t_done would move: a livelock. A child that does
             * not start after the other (the plane seen from behind, a ray
             * lying in the plane: equal starts) cannot come back through a
             * restart, so the ray searches it now, out of order. */
            if (kPacket && need_other && need_go && pref_l != go_l && lo_go > lo_ot)
                need_go = false;
            /* What the entry for `other` is worth to this ray, by what is
             * lost if the stack drops it:
             *   2  the ray takes a child that starts no later than `other`
             *      and goes beyond its start (the plane seen from behind,
             *      a ray lying in the plane): once t_done passes `other`,
             *      no restart reaches it again ("pinned"); so is any
             *      sibling that starts before t_done (in a flat cell or
             *      a subtree the ray searches out of order), and a flat
             *      cell ([x, x], triangles in a split plane): a leaf that
             *      starts at x takes t_done past it;
             *   1  `other` is where the ray goes on (it skips `go`, or `go`
             *      is the flat cell at its start): a restart recovers it,
             *      but if it is dropped again and again the ray never
             *      moves (a packet livelock);
             *   0  a later sibling a restart from t_done recovers.
             * The entry's level is the highest of the warp's. The short
             * stack pushes every pending sibling, kd-restart those of
             * level 1 and 2. When the circular stack is full, the oldest
             * entry is overwritten only by one of at least its level;
             * otherwise the new one is dropped. */
            int level, stk_level;
            if (kPacket) {
                level = !need_other           ? 0
                        : lo_ot < t_done      ? 2 /* inside a subtree searched out of order */
                        : hi_ot <= lo_ot      ? 2 /* a flat cell: see below */
                        : !need_go            ? 1
                        : lo_ot > lo_go       ? 0
                        : hi_go > lo_ot       ? 2 : 1;
                stk_level = warp_any<kPacket>(pr, level == 2)   ? 2
                            : warp_any<kPacket>(pr, level == 1) ? 1 : 0;
            } else {
                /* a lone ray pops in t order: only the pinned case and a flat
                 * cell [x, x] (an older entry starting at x would take t_done
                 * past it) are lost if dropped */
                level = stk_level = need_other && (lo_ot <= lo_go || hi_ot <= lo_ot) ? 2 : 0;
            }
            bool stack_it = warp_any<kPacket>(
                pr, kTrav == RT_TRAV_SHORT_STACK ? need_other : level > 0);
            int slot = stk_top + 1 == stk_size ? 0 : stk_top + 1;
            if (stack_it && !(stk_count == stk_size && stk_lvl[slot] > stk_level)) {
                /* Overwriting a pinned entry loses its rays' interval: in a
                 * shared round they go back to its start (everything after
                 * is searched again, by a lone walk if need be). A lone ray
                 * (or one without packets) keeps going, as it must not
                 * loop: a one-entry stack cannot hold both sides of a ray
                 * in two split planes. */
                if (kPacket && !solo && stk_count == stk_size && stk_lvl[slot] == 2 &&
                    stk_lo[slot] <= stk_hi[slot])
                    t_done = fminf(t_done, stk_lo[slot]);
                stk_top = slot;
                stk_node[slot] = other;
                stk_lvl[slot] = (uint8_t)stk_level;
                stk_lo[slot] = need_other ? lo_ot : INFINITY;
                stk_hi[slot] = need_other ? hi_ot : -INFINITY;
                if (stk_count < stk_size) stk_count++;
            }
            node = go_l ? left : left + 1u;
            lo = need_go ? lo_go : INFINITY;
            hi = need_go ? hi_go : -INFINITY;
            if (visits > TRACE_MAX_VISITS) {
                at_leaf = false;
                break;
            }
        }

        /* --- search the leaf: only hits inside [lo - eps, hi + eps] count --- */
        if (at_leaf) {
            bool active = !finished && lo <= hi && lo <= best.t + eps;
            RtKdNode n = pr.node(&tr.nodes[node]);
            uint32_t count = kd_leaf_count(n);
            if (active && count && kd_search_leaf<kIsect>(pr, tr, cfg, n, o, d, inv, tmin, lo, hi, eps, any, best))
                finished = true;
            if (active && lo <= t_done) t_done = fmaxf(t_done, hi);
            if (any && best.tri != RT_NO_HIT) finished = true;
        }
        if (visits > TRACE_MAX_VISITS) finished = true;
        if (!warp_any<kPacket>(pr, !finished)) break;

        /* --- next: pop the short stack, or restart from the root at t_done --- */
        bool popped = false;
        while (stk_count > 0) {
            node = stk_node[stk_top];
            lo = stk_lo[stk_top];
            hi = stk_hi[stk_top];
            stk_top = stk_top == 0 ? stk_size - 1 : stk_top - 1;
            stk_count--;
            if (finished || lo > best.t + eps) {
                lo = INFINITY;
                hi = -INFINITY;
            }
            if (warp_any<kPacket>(pr, lo <= hi)) {
                popped = true;
                break;
            }
        }
        if (!popped) {
            /* Nothing pending (entries beyond the best hit were dropped):
             * done when the hit lies before t_done (by more than eps, so a
             * triangle of the next leaf at the very same t still gets its
             * say in the lower-id tie rule) or the ray left the scene. Checked only here, so the pending entries of a ray
             * lying in a split plane (both sides, same interval) are
             * searched too. */
            if ((best.tri != RT_NO_HIT && best.t + eps <= t_done) || t_done >= r1) finished = true;
            if (!warp_any<kPacket>(pr, !finished)) break;
            if (kPacket) {
                bool starving = !finished && !paused && !(t_done > t_round);
                unsigned hungry = pr.ballot(starving);
                solo = hungry != 0;
                paused = solo && pr.lane() != lowest_lane(hungry);
                t_round = t_done;
            }
            bool go_on = !finished && !paused;
            node = 0;
            lo = go_on ? t_done : INFINITY;
            hi = go_on ? r1 : -INFINITY;
        }
    }
    if (steps) *steps += visits;
    return best;
}

#endif
