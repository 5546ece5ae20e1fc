/* kd_clip.h — the triangle arithmetic every kd-tree builder shares, written
 * once for the host (kd_build_cpu.c, kd_validate.c) and the device
 * (cuda/kd: the large stage's step 0, the small stage's exact clips):
 *   - which triangles never enter a tree (degenerate: rt_kd_tri_degenerate);
 *   - a triangle clipped to a closed box, Sutherland-Hodgman in double, and
 *     the clipped polygon's bounds rounded outward to float: the "perfect
 *     split" boxes of Wald & Havran 2006 (rt_tri_clip_box).
 * Both builders must agree on these to the bit: the GPU tree is checked
 * against the CPU oracle's (tests/test_gpu_kd.c). The rounding is the one
 * place the code differs by side: CUDA's directed-rounding conversions on
 * the device, their exact host equivalent here. */
#ifndef RT_KD_CLIP_H
#define RT_KD_CLIP_H

#include "kd/kd_layout.h"

/* A triangle clipped by the six planes of a box has at most 3 + 6 vertices;
 * one more plane (a split, kd_build_cpu.c) adds one. */
#define RT_KD_CLIP_TRI_MAX 9
#define RT_KD_CLIP_SPLIT_MAX (RT_KD_CLIP_TRI_MAX + 1)

/* ---- degeneracy ------------------------------------------------------------ */

/* 1 when a triangle never enters a tree: a non-finite vertex or Woop row, or
 * all-zero Woop rows (rt_tri_arrays_make's mark for zero area). v: its 3
 * vertices; w: its 3 Woop rows, or NULL to compute them (rt_woop_rows). The
 * builders, the brute-force oracle and the validator share this definition. */
RT_HD int rt_kd_tri_degenerate_v(const RtFloat4 v[3], const RtFloat4 *w)
{
    for (int k = 0; k < 3; k++)
        if (!isfinite(v[k].x) || !isfinite(v[k].y) || !isfinite(v[k].z)) return 1;
    if (!w) {
        RtFloat4 rows[3];
        return !rt_woop_rows(f4_xyz(v[0]), f4_xyz(v[1]), f4_xyz(v[2]), rows);
    }
    int nonzero = 0;
    for (int k = 0; k < 3; k++) {
        if (!isfinite(w[k].x) || !isfinite(w[k].y) || !isfinite(w[k].z) || !isfinite(w[k].w)) return 1;
        nonzero |= w[k].x != 0.0f || w[k].y != 0.0f || w[k].z != 0.0f || w[k].w != 0.0f;
    }
    return !nonzero;
}

/* Triangle i of host arrays. */
RT_HD int rt_kd_tri_degenerate(const RtTriArrays *tris, uint32_t i)
{
    return rt_kd_tri_degenerate_v(&tris->verts[3 * (size_t)i], tris->woop ? &tris->woop[3 * (size_t)i] : NULL);
}

/* ---- clipping ---------------------------------------------------------------- */

/* d rounded toward -inf (down) or +inf (up) to float: outward rounding keeps
 * the float box a superset of the exact one. The host version rounds to
 * nearest and steps one float when that went the wrong way (nextafterf
 * without the library call, which showed in profiles). */
RT_HD float rt_kd_round_down(double d)
{
#ifdef __CUDA_ARCH__
    return __double2float_rd(d);
#else
    float f = (float)d;
    if (!((double)f > d)) return f;
    uint32_t u = rt_float_bits(f);
    if (f == 0.0f) u = 0x80000001u; /* -denorm_min */
    else u += f > 0.0f ? -1u : 1u;
    return rt_bits_float(u);
#endif
}
RT_HD float rt_kd_round_up(double d)
{
#ifdef __CUDA_ARCH__
    return __double2float_ru(d);
#else
    return -rt_kd_round_down(-d);
#endif
}

/* Where edge P -> Q (distances dp, dq to the plane x_a = bound, of
 * opposite signs) crosses the plane, into x: the plane coordinate exactly,
 * so the polygon never leaves the closed box on an axis it has been clipped
 * against. The parameter is the same for either side's signs (negation is
 * exact). */
RT_HD void rt_kd_crossing(const double *P, const double *Q, double dp, double dq, int a, double bound, double *x)
{
    const double t = dp / (dp - dq);
    for (int k = 0; k < 3; k++) x[k] = P[k] + t * (Q[k] - P[k]);
    x[a] = bound;
}

/* Sutherland-Hodgman against one axis-aligned plane x_a = bound: polygon p
 * (n vertices) clipped to its side `side` (0: x_a >= bound, 1: x_a <= bound)
 * into q (at most cap vertices); returns q's vertex count (0: all clipped);
 * crossings by rt_kd_crossing. */
RT_HD int rt_kd_clip_poly(double (*p)[3], int n, double (*q)[3], int cap, int a, int side, double bound)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        const double *P = p[i], *Q = p[i + 1 == n ? 0 : i + 1];
        double dp = side ? bound - P[a] : P[a] - bound, dq = side ? bound - Q[a] : Q[a] - bound;
        if (dp >= 0.0 && m < cap) {
            q[m][0] = P[0], q[m][1] = P[1], q[m][2] = P[2];
            m++;
        }
        if ((dp >= 0.0) != (dq >= 0.0) && m < cap) rt_kd_crossing(P, Q, dp, dq, a, bound, q[m++]);
    }
    return m;
}

/* The triangle in buf[0][0..2] clipped to the closed box cell: the polygon
 * is left in buf[*at], its vertex count returned (0: the triangle misses the
 * cell). Only the box faces that cut the triangle's bounds clip. */
RT_HD int rt_kd_clip_tri(double buf[2][RT_KD_CLIP_TRI_MAX][3], RtAabb cell, int *at)
{
    int n = 3, cur = 0;
    double tlo[3], thi[3]; /* the triangle's bounds: a plane outside them cuts nothing */
    for (int a = 0; a < 3; a++) {
        tlo[a] = fmin(fmin(buf[0][0][a], buf[0][1][a]), buf[0][2][a]);
        thi[a] = fmax(fmax(buf[0][0][a], buf[0][1][a]), buf[0][2][a]);
    }
    for (int a = 0; a < 3 && n > 0; a++) {
        for (int side = 0; side < 2 && n > 0; side++) {
            double bound = side ? v3_get(cell.hi, a) : v3_get(cell.lo, a);
            /* every vertex of the polygon (inside the triangle) is kept and
             * no edge crosses: the clip would copy it unchanged */
            if (side ? thi[a] <= bound : tlo[a] >= bound) continue;
            n = rt_kd_clip_poly(buf[cur], n, buf[cur ^ 1], RT_KD_CLIP_TRI_MAX, a, side, bound);
            cur ^= 1;
        }
    }
    *at = cur;
    return n;
}

/* Bounds [lo, hi] rounded outward to float and clamped to cell (the box
 * they were clipped to). */
RT_HD RtAabb rt_kd_round_bounds(const double lo[3], const double hi[3], RtAabb cell)
{
    RtAabb r;
    r.lo = v3(rt_kd_round_down(lo[0]), rt_kd_round_down(lo[1]), rt_kd_round_down(lo[2]));
    r.hi = v3(rt_kd_round_up(hi[0]), rt_kd_round_up(hi[1]), rt_kd_round_up(hi[2]));
    r.lo = v3_max(r.lo, cell.lo);
    r.hi = v3_min(r.hi, cell.hi);
    return r;
}

/* Bounds of polygon p (n > 0 vertices), rounded outward to float and
 * clamped to cell (the box it was clipped to). */
RT_HD RtAabb rt_kd_clip_bounds(double (*p)[3], int n, RtAabb cell)
{
    double lo[3] = {p[0][0], p[0][1], p[0][2]}, hi[3] = {p[0][0], p[0][1], p[0][2]};
    for (int i = 1; i < n; i++)
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], p[i][k]);
            hi[k] = fmax(hi[k], p[i][k]);
        }
    return rt_kd_round_bounds(lo, hi, cell);
}

/* Point x added to the bounds of a polygon of m vertices so far, as the
 * m-th vertex; a polygon holds at most RT_KD_CLIP_SPLIT_MAX (the cap
 * rt_kd_clip_poly keeps to), so a vertex beyond it is dropped as there. */
RT_HD void rt_kd_fold_vertex(const double x[3], double lo[3], double hi[3], int *m)
{
    if (*m >= RT_KD_CLIP_SPLIT_MAX) return;
    for (int k = 0; k < 3; k++) {
        lo[k] = *m ? fmin(lo[k], x[k]) : x[k];
        hi[k] = *m ? fmax(hi[k], x[k]) : x[k];
    }
    (*m)++;
}

/* Bounds of the part of triangle (v0, v1, v2) inside the closed box: the
 * "perfect split" box of Wald & Havran 2006. Returns 0 (and the empty box)
 * when the triangle misses the box. */
RT_HD int rt_tri_clip_box(RtVec3 v0, RtVec3 v1, RtVec3 v2, RtAabb box, RtAabb *out)
{
    double buf[2][RT_KD_CLIP_TRI_MAX][3];
    const RtVec3 v[3] = {v0, v1, v2};
    for (int k = 0; k < 3; k++) {
        buf[0][k][0] = v[k].x;
        buf[0][k][1] = v[k].y;
        buf[0][k][2] = v[k].z;
    }
    int at;
    const int n = rt_kd_clip_tri(buf, box, &at);
    *out = n ? rt_kd_clip_bounds(buf[at], n, box) : aabb_empty();
    return n > 0;
}

/* The perfect-split boxes of a triangle (v: its 3 vertices) that straddles
 * a split at pos on axis: clipped to the parent cell once, then cut by the
 * plane into both children (child: their cells). A side it misses (only
 * when the straddle came from outward rounding or a loose box) gets the
 * empty box. Returns a mask: 1 the left child reached, 2 the right.
 * The two cuts are one walk around the polygon that folds each child's
 * vertices into its bounds as rt_kd_clip_poly would emit them (same
 * vertices, same order, same cap): no polygon is stored, the crossings are
 * computed once for both sides, and the boxes are those of clipping each
 * half and taking its bounds, to the bit. Child 0 keeps x_axis <= pos
 * (distance pos - x), child 1 x_axis >= pos (its negation, exact in IEEE
 * arithmetic). */
RT_HD int rt_tri_split_boxes(const RtFloat4 *v, RtAabb cell, int axis, float pos, const RtAabb child[2],
                             RtAabb out[2])
{
    double buf[2][RT_KD_CLIP_TRI_MAX][3];
    for (int k = 0; k < 3; k++) {
        buf[0][k][0] = v[k].x;
        buf[0][k][1] = v[k].y;
        buf[0][k][2] = v[k].z;
    }
    int at;
    const int n = rt_kd_clip_tri(buf, cell, &at);
    double lo[2][3], hi[2][3];
    int m[2] = {0, 0};
    const double bound = pos;
    for (int i = 0; i < n; i++) {
        const double *P = buf[at][i], *Q = buf[at][i + 1 == n ? 0 : i + 1];
        const double dp = bound - P[axis], dq = bound - Q[axis];
        const int inp[2] = {dp >= 0.0, -dp >= 0.0}, inq[2] = {dq >= 0.0, -dq >= 0.0};
        for (int c = 0; c < 2; c++)
            if (inp[c]) rt_kd_fold_vertex(P, lo[c], hi[c], &m[c]);
        if (inp[0] != inq[0] || inp[1] != inq[1]) {
            double x[3];
            rt_kd_crossing(P, Q, dp, dq, axis, bound, x);
            for (int c = 0; c < 2; c++)
                if (inp[c] != inq[c]) rt_kd_fold_vertex(x, lo[c], hi[c], &m[c]);
        }
    }
    int mask = 0;
    for (int c = 0; c < 2; c++) {
        out[c] = m[c] ? rt_kd_round_bounds(lo[c], hi[c], child[c]) : aabb_empty();
        if (m[c]) mask |= 1 << c;
    }
    return mask;
}

/* ---- events ------------------------------------------------------------------ */

/* A split candidate's position as an order-preserving integer (the SAH
 * builders' event keys sort by it): -0 becomes +0, equal positions get
 * equal keys. */
RT_HD uint32_t rt_kd_pos_key(float f)
{
    if (f == 0.0f) f = 0.0f;
    const uint32_t u = rt_float_bits(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
RT_HD float rt_kd_key_pos(uint32_t k)
{
    return rt_bits_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

/* An event of the SAH builders' sweeps (the CPU oracle, kd_build_cpu.c,
 * and the exact GPU builder, kd_exact.cu): one 64-bit key, [63:32] the
 * position's key (rt_kd_pos_key), [31:30] the type, [29:0] the triangle's
 * (or reference's) id. Sorting keys sorts by (position, type, id): at one
 * position ends come before planars before starts, as W&H's sweep needs,
 * and the id makes the order total, so every list, and therefore the
 * tree, is deterministic. */
enum { RT_KD_EV_END = 0, RT_KD_EV_PLANAR = 1, RT_KD_EV_START = 2 };
#define RT_KD_EV_ID_BITS 30
#define RT_KD_EV_ID_MASK ((1u << RT_KD_EV_ID_BITS) - 1u)
RT_HD uint64_t rt_kd_event(uint32_t key, unsigned type, uint32_t id)
{
    return ((uint64_t)key << 32) | ((uint64_t)type << RT_KD_EV_ID_BITS) | id;
}
RT_HD uint32_t rt_kd_event_key(uint64_t e) { return (uint32_t)(e >> 32); }
RT_HD unsigned rt_kd_event_type(uint64_t e) { return (unsigned)(e >> RT_KD_EV_ID_BITS) & 3u; }
RT_HD uint32_t rt_kd_event_id(uint64_t e) { return (uint32_t)e & RT_KD_EV_ID_MASK; }

#endif
