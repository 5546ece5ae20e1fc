/* test_gpu_kd.c — the GPU kd-tree builder (cuda/kd/kd_gpu.h) against the CPU
 * oracle: on generated scenes (random soup with degenerate triangles,
 * clusters, coplanar triangles, a grid mesh; sizes 0, 1 and random) the
 * downloaded tree passes rt_kd_validate (box inclusion: loose references),
 * and the closest hit of random rays traced through it on the CPU equals
 * brute force; every variant (Chang's ladder, C_e, small-node modes, leaf
 * size) is checked the same way; the SAH cost ratio to rt_kd_build_cpu is
 * printed. Skips with a message where no GPU is usable. */
#include "test_util.h"

#include <math.h>

#include "gpu/gpu.h"
#include "gpu/gpu_scene.h"
#include "kd/kd_cpu.h"
#include "kd/kd_gpu.h"
#include "app/variants.h"

typedef struct GpuFixture {
    RtGpu *gpu;
    RtKdGpu *kd;
} GpuFixture;

static GpuFixture g_fx;

static int gpu_ready(void)
{
    if (g_fx.kd) return 1;
    RtError err;
    if (rt_gpu_create(0, &g_fx.gpu, &err) != RT_OK) {
        print_message("skip: no GPU: %s\n", err.msg);
        return 0;
    }
    if (rt_kd_gpu_create(&g_fx.kd, &err) != RT_OK) {
        print_message("skip: no GPU kd builder: %s\n", err.msg);
        return 0;
    }
    return 1;
}

/* ---- scenes ---------------------------------------------------------------- */

typedef enum { SC_SOUP, SC_CLUSTER, SC_COPLANAR, SC_GRID } SceneKind;

static void set_tri(RtTriArrays *t, uint32_t i, RtVec3 a, RtVec3 b, RtVec3 c)
{
    t->verts[3 * i + 0] = f4(a.x, a.y, a.z, 0);
    t->verts[3 * i + 1] = f4(b.x, b.y, b.z, 0);
    t->verts[3 * i + 2] = f4(c.x, c.y, c.z, 0);
    if (!rt_woop_rows(a, b, c, &t->woop[3 * i])) memset(&t->woop[3 * i], 0, 3 * sizeof(RtFloat4));
}

static RtVec3 rnd3(RtTestRng *r, float s)
{
    return v3(s * rt_test_randf(r), s * rt_test_randf(r), s * rt_test_randf(r));
}

/* n triangles of the given kind (the grid rounds n down to 2 k^2). */
static RtTriArrays make_scene(SceneKind kind, uint32_t n, uint64_t seed)
{
    RtTestRng r = {seed * 2654435761u + 1};
    RtTriArrays t;
    memset(&t, 0, sizeof t);
    if (kind == SC_GRID) {
        uint32_t k = (uint32_t)sqrt(n / 2.0);
        n = 2 * k * k;
    }
    t.count = n;
    t.verts = malloc((3 * (size_t)n + 1) * sizeof *t.verts);
    t.woop = malloc((3 * (size_t)n + 1) * sizeof *t.woop);
    assert_non_null(t.verts);
    assert_non_null(t.woop);
    if (kind == SC_GRID) {
        uint32_t k = (uint32_t)sqrt(n / 2.0);
        for (uint32_t y = 0, i = 0; y < k; y++)
            for (uint32_t x = 0; x < k; x++) {
#define GRID_P(X, Y) v3((float)(X) / k, 0.1f * sinf(7.0f * (X) / k) * cosf(5.0f * (Y) / k), (float)(Y) / k)
                RtVec3 p00 = GRID_P(x, y), p10 = GRID_P(x + 1, y), p01 = GRID_P(x, y + 1), p11 = GRID_P(x + 1, y + 1);
#undef GRID_P
                set_tri(&t, i++, p00, p10, p11);
                set_tri(&t, i++, p00, p11, p01);
            }
        return t;
    }
    /* about 500 triangles per cluster: dense clumps of overlapping triangles */
    RtVec3 centers[256];
    uint32_t nc = n / 500 < 8 ? 8 : (n / 500 > 256 ? 256 : n / 500);
    for (uint32_t c = 0; c < nc; c++) centers[c] = rnd3(&r, 10.0f);
    for (uint32_t i = 0; i < n; i++) {
        RtVec3 a, b, c;
        if (kind == SC_SOUP) {
            a = rnd3(&r, 10.0f);
            float s = (rt_test_rand(&r) % 16 == 0) ? 4.0f : 0.6f; /* some long ones straddle a lot */
            b = v3_add(a, v3_sub(rnd3(&r, s), v3(s / 2, s / 2, s / 2)));
            c = v3_add(a, v3_sub(rnd3(&r, s), v3(s / 2, s / 2, s / 2)));
            uint32_t odd = rt_test_rand(&r) % 50;
            if (odd == 0) c = b;                         /* zero area */
            if (odd == 1) c = v3(NAN, 0, 0);             /* non-finite */
            if (odd == 2) b = c = a;                     /* a point */
        } else if (kind == SC_CLUSTER) {
            RtVec3 o = centers[rt_test_rand(&r) % nc];
            float s = (rt_test_rand(&r) % 4 == 0) ? 0.01f : 0.3f;
            a = v3_add(o, rnd3(&r, 0.5f));
            b = v3_add(a, rnd3(&r, s));
            c = v3_add(a, rnd3(&r, s));
        } else {
            /* coplanar: all in z = 2.5, many sharing exact coordinates */
            a = v3(floorf(rt_test_randf(&r) * 40) / 4, floorf(rt_test_randf(&r) * 40) / 4, 2.5f);
            b = v3(a.x + 0.25f + rt_test_randf(&r), a.y, 2.5f);
            c = v3(a.x, a.y + 0.25f + rt_test_randf(&r), 2.5f);
        }
        set_tri(&t, i, a, b, c);
    }
    return t;
}

static void free_scene(RtTriArrays *t)
{
    free(t->verts);
    free(t->woop);
    memset(t, 0, sizeof *t);
}

/* ---- checks ---------------------------------------------------------------- */

static RtAabb scene_box(const RtTriArrays *t)
{
    RtAabb b = aabb_empty();
    for (uint32_t i = 0; i < 3 * t->count; i++) {
        RtVec3 p = f4_xyz(t->verts[i]);
        if (isfinite(p.x) && isfinite(p.y) && isfinite(p.z)) b = aabb_grow(b, p);
    }
    if (aabb_is_empty(b)) b.lo = v3(0, 0, 0), b.hi = v3(1, 1, 1);
    return b;
}

/* rays: half from random points towards random triangles' centroids (mostly
 * hits), half in random directions; some axis-parallel. Returns mismatches. */
static uint32_t compare_rays(const RtKdTree *tree, const RtTriArrays *t, uint32_t rays, uint64_t seed)
{
    RtTestRng r = {seed * 97 + 13};
    RtAabb b = scene_box(t);
    RtVec3 ext = v3_sub(b.hi, b.lo);
    uint32_t bad = 0;
    for (uint32_t i = 0; i < rays; i++) {
        RtVec3 o = v3(b.lo.x - 0.2f * ext.x + 1.4f * ext.x * rt_test_randf(&r),
                      b.lo.y - 0.2f * ext.y + 1.4f * ext.y * rt_test_randf(&r),
                      b.lo.z - 0.2f * ext.z + 1.4f * ext.z * rt_test_randf(&r));
        RtVec3 d;
        if ((i & 1) && t->count) {
            uint32_t k = rt_test_rand(&r) % t->count;
            RtVec3 c = v3_scale(v3_add(v3_add(f4_xyz(t->verts[3 * k]), f4_xyz(t->verts[3 * k + 1])),
                                       f4_xyz(t->verts[3 * k + 2])), 1.0f / 3.0f);
            d = v3_sub(c, o);
            if (!isfinite(d.x + d.y + d.z)) d = v3(0, 0, 1);
        } else {
            d = v3(rt_test_randf(&r) - 0.5f, rt_test_randf(&r) - 0.5f, rt_test_randf(&r) - 0.5f);
            if (i % 16 == 2) d.x = 0;
            if (i % 16 == 4) d.y = d.z = 0;
        }
        if (d.x == 0 && d.y == 0 && d.z == 0) d = v3(1, 0, 0);
        RtRay ray = {o, d};
        RtHit hk, hb;
        int ak = rt_kd_closest_hit(tree, t, ray, 0.0f, INFINITY, 1, &hk, NULL);
        int ab = rt_brute_closest_hit(t, ray, 0.0f, INFINITY, 1, NULL, NULL, &hb);
        int same = ak == ab && (!ak || hk.tri == hb.tri || fabsf(hk.t - hb.t) <= 1e-6f * fmaxf(1.0f, hb.t));
        if (!same) {
            if (bad < 3)
                print_message("ray %u: kd %d (tri %u t %g) vs brute %d (tri %u t %g)\n", i, ak,
                              ak ? hk.tri : 0, ak ? hk.t : 0.0, ab, ab ? hb.tri : 0, ab ? hb.t : 0.0);
            bad++;
        }
    }
    return bad;
}

/* Device copies of t's corners and Woop rows (free both with rt_kd_gpu_free). */
static void upload_scene(const RtTriArrays *t, RtFloat4 **dv, RtFloat4 **dw)
{
    RtError err = {0};
    *dv = *dw = NULL;
    assert_int_equal(rt_kd_gpu_upload_f4(t->verts, 3 * (size_t)t->count, dv, &err), RT_OK);
    assert_int_equal(rt_kd_gpu_upload_f4(t->woop, 3 * (size_t)t->count, dw, &err), RT_OK);
}

/* Builds on the GPU, downloads, validates, compares rays; returns the tree's
 * SAH cost (rt_kd_tree_stats with the builder's costs). */
static double build_and_check(const RtKdGpuParams *p, const RtTriArrays *t, uint32_t rays,
                              uint64_t seed, const char *what)
{
    RtError err = {0};
    RtFloat4 *dv, *dw;
    upload_scene(t, &dv, &dw);
    RtKdTree dtree, h;
    RtKdGpuStats st;
    RtStatus s = rt_kd_gpu_build(g_fx.kd, p, dv, dw, t->count, &dtree, &st, &err);
    if (s != RT_OK) print_message("%s: build failed: %s\n", what, err.msg);
    assert_int_equal(s, RT_OK);
    assert_int_equal(rt_kd_gpu_download(&dtree, &h, &err), RT_OK);
    /* the exact builder with exact clipping lists no triangle outside its
     * leaf's cell; the others' boxes may reach where their triangles do not */
    const int strict = p->builder == RT_KD_GPU_BUILDER_EXACT && p->exact_clip;
    s = rt_kd_validate_flags(&h, t, strict ? 0u : RT_KD_VALIDATE_LOOSE_REFS, &err);
    if (s != RT_OK) print_message("%s: invalid tree: %s\n", what, err.msg);
    assert_int_equal(s, RT_OK);
    assert_int_equal(rt_kd_marks_missing(&h), 0); /* the builder's last launch marks every empty child */
    uint32_t bad = compare_rays(&h, t, rays, seed);
    if (bad) print_message("%s: %u of %u rays differ from brute force\n", what, bad, rays);
    assert_int_equal(bad, 0);
    RtKdStats ks;
    rt_kd_tree_stats(&h, p->c_trav, p->c_isect, &ks);
    print_message("%-34s n=%-7u nodes %-7u leaves %-7u refs %-8u depth %-3u SAH %-8.2f "
                  "launches %-4u trips %-3u levels %u+%u rebuilds %u\n",
                  what, t->count, ks.nodes, ks.leaves, (unsigned)ks.references, ks.depth, ks.sah_cost,
                  st.launches, st.round_trips, st.large_levels, st.small_levels, st.rebuilds);
    rt_kd_tree_free(&h);
    rt_kd_gpu_free(dv);
    rt_kd_gpu_free(dw);
    return ks.sah_cost;
}

static double cpu_sah(const RtTriArrays *t)
{
    RtKdCpuParams cp = rt_kd_cpu_params_default();
    RtKdTree tree;
    memset(&tree, 0, sizeof tree);
    RtKdStats ks;
    RtError err;
    assert_int_equal(rt_kd_build_cpu(&cp, t, &tree, &ks, &err), RT_OK);
    rt_kd_tree_stats(&tree, cp.c_trav, cp.c_isect, &ks);
    rt_kd_tree_free(&tree);
    return ks.sah_cost;
}

/* RT_KD_QUICK=1 (compute-sanitizer runs): small scenes only. */
static int quick(void)
{
    const char *q = getenv("RT_KD_QUICK");
    return q && atoi(q);
}

/* A generated scene through build_and_check (for the small cases). */
static void check_made(const RtKdGpuParams *p, SceneKind kind, uint32_t n, uint64_t seed, uint32_t rays,
                       const char *what)
{
    RtTriArrays t = make_scene(kind, n, seed);
    build_and_check(p, &t, rays, seed, what);
    free_scene(&t);
}

/* ---- tests ----------------------------------------------------------------- */

static void gpu_kd_empty_and_single(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtKdGpuParams p = rt_kd_gpu_params_default();
    check_made(&p, SC_SOUP, 0, 1, 1000, "empty scene");
    check_made(&p, SC_CLUSTER, 1, 2, 1000, "one triangle");
    check_made(&p, SC_COPLANAR, 64, 3, 1000, "64 coplanar (exactly the threshold)");
}

static void gpu_kd_scenes_match_brute_force(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtKdGpuParams p = rt_kd_gpu_params_default();
    p.assoc = RT_KD_GPU_BOX_INCLUSION; /* beside the default, clipping */
    static const struct { SceneKind k; uint32_t n; const char *name; } sc[] = {
        {SC_SOUP, 3000, "soup 3000 (with degenerate)"},
        {SC_CLUSTER, 4000, "clusters 4000"},
        {SC_COPLANAR, 2500, "coplanar 2500"},
        {SC_GRID, 5000, "grid mesh"},
    };
    RtTestRng r = {12345};
    for (int i = 0; i < 4; i++) {
        RtTriArrays t = make_scene(sc[i].k, sc[i].n, 10 + i);
        double gs = build_and_check(&p, &t, quick() ? 2000 : 26000, 20 + i, sc[i].name);
        RtKdGpuParams pc = p;
        pc.assoc = RT_KD_GPU_CLIP;
        double gc = build_and_check(&pc, &t, quick() ? 1000 : 6000, 30 + i, "  ... with clipping");
        double cs = cpu_sah(&t);
        print_message("  SAH GPU/CPU oracle = %.2f / %.2f = %.3f (clipping: %.3f)\n", gs, cs,
                      cs > 0 ? gs / cs : 0.0, cs > 0 ? gc / cs : 0.0);
        free_scene(&t);
    }
    /* random sizes */
    for (int i = 0; i < 3; i++) {
        uint32_t n = 1 + rt_test_rand(&r) % 1500;
        RtTriArrays t = make_scene((SceneKind)(i % 3), n, 40 + i);
        char name[64];
        snprintf(name, sizeof name, "random size %u (kind %d)", n, i % 3);
        build_and_check(&p, &t, 4000, 50 + i, name);
        free_scene(&t);
    }
}

static void gpu_kd_large_mesh_valid(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    if (quick()) {
        print_message("skip: RT_KD_QUICK set\n");
        skip();
    }
    RtKdGpuParams p = rt_kd_gpu_params_default();
    p.assoc = RT_KD_GPU_BOX_INCLUSION;
    RtTriArrays t = make_scene(SC_GRID, 200000, 7);
    RtKdGpuParams pc = p;
    pc.assoc = RT_KD_GPU_CLIP;
    double gs = build_and_check(&p, &t, 1500, 7, "grid mesh 200K");
    double gc = build_and_check(&pc, &t, 1500, 7, "  ... with clipping");
    double cs = cpu_sah(&t);
    print_message("  SAH GPU/CPU oracle = %.2f / %.2f = %.3f (clipping %.3f)\n", gs, cs, gs / cs, gc / cs);
    free_scene(&t);
    t = make_scene(SC_CLUSTER, 60000, 8);
    gs = build_and_check(&p, &t, 1500, 8, "clusters 60K");
    gc = build_and_check(&pc, &t, 1500, 8, "  ... with clipping");
    cs = cpu_sah(&t);
    print_message("  SAH GPU/CPU oracle = %.2f / %.2f = %.3f (clipping %.3f)\n", gs, cs, gs / cs, gc / cs);
    free_scene(&t);
}

/* Kolodzey's exact SAH builder (RT_KD_GPU_BUILDER_EXACT): valid trees
 * (strictly, with exact clipping), hits equal to brute force, on the bad
 * cases and every scene kind, and an SAH cost close to the CPU oracle's
 * (the same rules, kd_sah.h; the benchmark reports the ratios). */
static void gpu_kd_exact_builder(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtKdGpuParams p = rt_kd_gpu_params_default();
    p.builder = RT_KD_GPU_BUILDER_EXACT;
    check_made(&p, SC_SOUP, 0, 1, 500, "exact: empty scene");
    check_made(&p, SC_CLUSTER, 1, 2, 500, "exact: one triangle");
    check_made(&p, SC_CLUSTER, 2, 3, 500, "exact: two triangles");
    /* 300 copies of one triangle: one key per event, no cut between them */
    RtTriArrays t = make_scene(SC_CLUSTER, 300, 4);
    for (uint32_t i = 1; i < t.count; i++) {
        memcpy(&t.verts[3 * i], &t.verts[0], 3 * sizeof(RtFloat4));
        memcpy(&t.woop[3 * i], &t.woop[0], 3 * sizeof(RtFloat4));
    }
    build_and_check(&p, &t, 500, 4, "exact: 300 identical triangles");
    free_scene(&t);
    const struct { SceneKind k; uint32_t n; const char *name; } sc[] = {
        {SC_SOUP, 3000, "exact: soup 3000 (with degenerate)"},
        {SC_CLUSTER, 4000, "exact: clusters 4000"},
        {SC_COPLANAR, 2500, "exact: coplanar 2500"},
        {SC_GRID, 5000, "exact: grid mesh"},
        {SC_GRID, quick() ? 20000 : 200000, "exact: grid mesh (large)"},
        {SC_CLUSTER, quick() ? 6000 : 60000, "exact: clusters (large)"},
    };
    for (int i = 0; i < 6; i++) {
        t = make_scene(sc[i].k, sc[i].n, 60 + i);
        const double g = build_and_check(&p, &t, quick() ? 1000 : 6000, 70 + i, sc[i].name);
        const double c = cpu_sah(&t);
        print_message("  SAH exact GPU / CPU oracle = %.3f / %.3f = %.4f\n", g, c, c > 0 ? g / c : 1.0);
        /* the oracle's rules on the oracle's (perfect-split) boxes: the same
         * cost up to ties between equally good planes (0.999 - 1.0005 on an
         * H200) */
        assert_true(g <= 1.01 * c + 1e-9);
        if (i < 4) {
            RtKdGpuParams q = p;
            q.exact_clip = 0;
            build_and_check(&q, &t, 2000, 80 + i, "  ... split-axis clipping only");
            q = p;
            q.exact_leaf = 63;
            build_and_check(&q, &t, 2000, 90 + i, "  ... leaves below 64 (Kolodzey)");
            q = p;
            q.max_depth = 3;
            build_and_check(&q, &t, 2000, 100 + i, "  ... depth limit 3");
        }
        free_scene(&t);
    }
}

/* Two device trees the same, array by array. */
static void assert_same_tree(const RtKdTree *a, const RtKdTree *b, const char *what)
{
    RtError err = {0};
    RtKdTree ha, hb;
    assert_int_equal(rt_kd_gpu_download(a, &ha, &err), RT_OK);
    assert_int_equal(rt_kd_gpu_download(b, &hb, &err), RT_OK);
    const int same = rt_kd_tree_same(&ha, &hb);
    if (!same)
        print_message("%s: trees differ (nodes %u / %u, leaves %u / %u, refs %u / %u)\n", what, ha.node_count,
                      hb.node_count, ha.leaf_count, hb.leaf_count, ha.index_count, hb.index_count);
    assert_true(same);
    rt_kd_tree_free(&ha);
    rt_kd_tree_free(&hb);
}

/* One frame of the exact builder with p on `graph` (its levels as one
 * graph once it has a schedule) and timed on `timed` (always host-driven),
 * the two trees equal; da and the stats are the caller's to look at. */
static void exact_both(RtKdGpu *graph, RtKdGpu *timed, const RtKdGpuParams *p, const RtFloat4 *dv, uint32_t n,
                       const char *what, RtKdTree *da, RtKdGpuStats *sa, RtKdGpuStats *sb)
{
    RtError err = {0};
    RtKdGpuParams pt = *p;
    pt.timed = 1;
    RtKdTree db;
    assert_int_equal(rt_kd_gpu_build(graph, p, dv, NULL, n, da, sa, &err), RT_OK);
    assert_int_equal(rt_kd_gpu_build(timed, &pt, dv, NULL, n, &db, sb, &err), RT_OK);
    assert_same_tree(da, &db, what);
}

/* The exact builder's frames: after a host-driven build its levels run as
 * one graph over capacities from that build (replayed while the scene's
 * count and the rules hold); a frame that outgrows them is built again
 * host-driven, and one with a tight segment too long for the graph's sort
 * stays host-driven. Each tree equals the host-driven (timed) build's of
 * the same vertices, byte for byte. */
static void gpu_kd_exact_frames(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtError err = {0};
    RtKdGpu *kd = NULL, *ref = NULL;
    assert_int_equal(rt_kd_gpu_create(&kd, &err), RT_OK);
    assert_int_equal(rt_kd_gpu_create(&ref, &err), RT_OK);
    const uint32_t n = quick() ? 4000 : 30000;
    RtTriArrays base = make_scene(SC_CLUSTER, n, 120), soup = make_scene(SC_SOUP, n, 121);
    RtTriArrays t = make_scene(SC_CLUSTER, n, 120);
    RtFloat4 *dv, *dw;
    upload_scene(&t, &dv, &dw);
    for (int clip = 1; clip >= 0; clip--) {
        RtKdGpuParams p = rt_kd_gpu_params_default();
        p.builder = RT_KD_GPU_BUILDER_EXACT;
        p.exact_clip = clip;
        /* frames: the clusters turning (0-3), the soup (4-5, the same
         * vertices: outgrows the capacities, then fits its own), the
         * clusters again (6) */
        int graphs = 0;
        for (int f = 0; f < 7; f++) {
            const RtTriArrays *src = f == 4 || f == 5 ? &soup : &base;
            const float ang = 0.15f * (float)(f == 5 ? 4 : f), c = cosf(ang), sn = sinf(ang);
            for (uint32_t i = 0; i < n; i++) {
                RtVec3 w[3];
                for (int k = 0; k < 3; k++) {
                    const RtFloat4 v = src->verts[3 * i + k];
                    w[k] = v3(c * v.x + sn * v.z, v.y * (1.0f + 0.02f * (float)f), -sn * v.x + c * v.z);
                }
                set_tri(&t, i, w[0], w[1], w[2]); /* (the Woop rows too: the rays' oracle reads them) */
            }
            assert_int_equal(rt_gpu_memcpy(dv, t.verts, 3 * (size_t)n * sizeof *t.verts, RT_COPY_TO_DEVICE, &err),
                             RT_OK);
            RtKdTree da;
            RtKdGpuStats sa, sb;
            char what[64];
            snprintf(what, sizeof what, "exact frames (clip %d) %d", clip, f);
            exact_both(kd, ref, &p, dv, n, what, &da, &sa, &sb);
            print_message("exact frames (clip %d) %d: round trips %u (host-driven %u), launches %u / %u, levels %u, "
                          "nodes %u, refs %u, GPU %.3f / %.3f ms\n",
                          clip, f, sa.round_trips, sb.round_trips, sa.launches, sb.launches, sa.large_levels, sa.nodes,
                          sa.references, sa.gpu_ms, sb.gpu_ms);
            assert_true(sb.round_trips == sb.large_levels + 2);
            if (f == 0) assert_int_equal(sa.round_trips, sb.round_trips);    /* no schedule yet */
            /* the graph (one wait), or its capacities outgrown and the
             * levels host-driven after it */
            assert_true(f == 0 || sa.round_trips == 1 || sa.round_trips == 1 + sb.round_trips);
            if (f >= 1 && f <= 3) graphs += sa.round_trips == 1;
            /* frame 5 repeats frame 4, whose host-driven build set the
             * schedule: as deep as its sure levels, the graph skips the
             * margin's levels, whose kernels are then not counted (beyond
             * the host-driven build's launches: the condition's kernel and
             * the children's lists of the last sure level) */
            if (f == 5) assert_true(sa.launches <= sb.launches + 12);
            if (f == 3) assert_true(graphs >= 1);                            /* turning a little fits */
            if (f == 4) assert_int_equal(sa.round_trips, 1 + sb.round_trips); /* the soup outgrows the clusters' */
            if (f == 4) assert_int_equal(sa.rebuilds, 1);
            if (f == 5) assert_int_equal(sa.round_trips, 1);                 /* the same frame again fits */
            if (f == 3) {
                RtKdTree h;
                assert_int_equal(rt_kd_gpu_download(&da, &h, &err), RT_OK);
                assert_int_equal(rt_kd_validate_flags(&h, &t, clip ? 0u : RT_KD_VALIDATE_LOOSE_REFS, &err), RT_OK);
                assert_int_equal(compare_rays(&h, &t, quick() ? 300 : 2000, 122), 0);
                rt_kd_tree_free(&h);
            }
        }
    }
    /* large triangles that every split crosses: a tight segment longer than
     * the graph's sort takes; the frame after the host-driven one finds it,
     * and the next stays host-driven; each tree equal to the timed build's */
    {
        RtKdGpuParams p = rt_kd_gpu_params_default();
        p.builder = RT_KD_GPU_BUILDER_EXACT;
        /* clusters that split well, and 6000 triangles across the whole
         * scene that every split clips */
        RtTriArrays big = make_scene(SC_CLUSTER, 20000, 123);
        RtTestRng r = {124};
        for (uint32_t i = 0; i < 6000; i++)
            set_tri(&big, i, rnd3(&r, 2.0f), v3_add(v3(8, 8, 8), rnd3(&r, 2.0f)),
                    v3_add(v3(0, 8, 8), rnd3(&r, 2.0f)));
        RtFloat4 *bv, *bw;
        upload_scene(&big, &bv, &bw);
        for (int f = 0; f < 3; f++) {
            RtKdTree da;
            RtKdGpuStats sa, sb;
            exact_both(kd, ref, &p, bv, big.count, "exact frames, large triangles", &da, &sa, &sb);
            print_message("exact frames, large triangles %d: round trips %u (host-driven %u), levels %u, refs %u\n", f,
                          sa.round_trips, sb.round_trips, sa.large_levels, sa.references);
            if (f == 1) assert_int_equal(sa.round_trips, 1 + sb.round_trips); /* the graph stopped, then the host */
            if (f == 2) assert_int_equal(sa.round_trips, sb.round_trips);
        }
        rt_kd_gpu_free(bv);
        rt_kd_gpu_free(bw);
        free_scene(&big);
    }
    /* a tree that grows deeper than the schedule's levels: the graph's
     * margin levels (a conditional node) build its new levels. Frames that
     * move ever more of the triangles into one small cluster (its subtree
     * about half a level deeper each frame), so that some frame is a level
     * or two deeper than the last host-driven build and fits its
     * capacities */
    {
        RtKdGpuParams p = rt_kd_gpu_params_default();
        p.builder = RT_KD_GPU_BUILDER_EXACT;
        const uint32_t m = 4096;
        RtKdGpu *fresh = NULL; /* (no schedule yet: frame 0 is host-driven) */
        assert_int_equal(rt_kd_gpu_create(&fresh, &err), RT_OK);
        RtTriArrays cur = make_scene(SC_CLUSTER, m, 130);
        RtFloat4 *mv, *mw;
        upload_scene(&cur, &mv, &mw);
        uint32_t sched_levels = 0;
        int margin_frames = 0;
        for (int f = 0; f < 12; f++) {
            const uint32_t dense = (uint32_t)(64.0 * pow(1.41421356, f)); /* in the cluster */
            for (uint32_t i = 0; i < m; i++) {
                RtTestRng r = {1000 + i}; /* (each triangle the same shape every frame) */
                const int in = i < dense;
                const RtVec3 c = rnd3(&r, in ? 1.0f : 60.0f);
                const float e = in ? 0.02f : 0.6f;
                set_tri(&cur, i, v3_add(c, rnd3(&r, e)), v3_add(c, rnd3(&r, e)), v3_add(c, rnd3(&r, e)));
            }
            assert_int_equal(rt_gpu_memcpy(mv, cur.verts, 3 * (size_t)m * sizeof *cur.verts, RT_COPY_TO_DEVICE, &err),
                             RT_OK);
            RtKdTree da;
            RtKdGpuStats sa, sb;
            exact_both(fresh, ref, &p, mv, m, "exact frames, deeper", &da, &sa, &sb);
            const int graph = sa.round_trips == 1;
            print_message("exact frames, deeper %d: round trips %u, levels %u (the schedule's %u)%s\n", f,
                          sa.round_trips, sa.large_levels, sched_levels,
                          graph && sa.large_levels > sched_levels ? ": margin levels" : "");
            if (graph && sa.large_levels > sched_levels) margin_frames++;
            if (!graph) sched_levels = sa.large_levels; /* host-driven: the schedule anew */
        }
        assert_true(margin_frames >= 1);
        rt_kd_gpu_destroy(fresh);
        rt_kd_gpu_free(mv);
        rt_kd_gpu_free(mw);
        free_scene(&cur);
    }
    rt_kd_gpu_destroy(kd);
    rt_kd_gpu_destroy(ref);
    rt_kd_gpu_free(dv);
    rt_kd_gpu_free(dw);
    free_scene(&t);
    free_scene(&base);
    free_scene(&soup);
}

static void gpu_kd_every_variant_valid(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    uint32_t n = quick() ? 600 : 3000;
    RtTriArrays sc[2] = {make_scene(SC_SOUP, n, 60), make_scene(SC_CLUSTER, 5 * n / 3, 61)};
    for (int v = 0; v < 28; v++) {
        RtKdGpuParams p = rt_kd_gpu_params_default();
        char name[96];
        if (v < 6) {
            rt_kd_gpu_params_ladder(&p, v);
            snprintf(name, sizeof name, "ladder %s", rt_variant_value_name(RT_VAR_LADDER, v));
        } else if (v < 11) {
            static const int step[5] = {0, 1, 2, 3, 4};
            /* each of Chang's steps alone */
            rt_kd_gpu_params_ladder(&p, 0);
            int *f[5] = {&p.chang_a, &p.chang_b, &p.chang_c, &p.chang_d, &p.chang_e};
            *f[step[v - 6]] = 1;
            snprintf(name, sizeof name, "only [%c]", 'A' + step[v - 6]);
        } else if (v == 11) {
            p.empty_cut = 0.15f;
            p.small_mode = RT_KD_GPU_SMALL_SSAH;
            snprintf(name, sizeof name, "C_e 15%% + simplified SAH");
        } else if (v == 12) {
            p.empty_cut = 0.35f;
            p.small_mode = RT_KD_GPU_SMALL_NONE;
            snprintf(name, sizeof name, "C_e 35%% + no small stage");
        } else if (v == 15) {
            p.assoc = RT_KD_GPU_BOX_INCLUSION;
            snprintf(name, sizeof name, "box inclusion (All)");
        } else if (v == 16) {
            rt_kd_gpu_params_ladder(&p, 0);
            p.assoc = RT_KD_GPU_BOX_INCLUSION;
            p.small_fused = 0;
            snprintf(name, sizeof name, "box inclusion (Original)");
        } else if (v == 17) {
            p.large_ways = 4;
            snprintf(name, sizeof name, "4 ways (All)");
        } else if (v == 18) {
            p.large_ways = 4;
            p.assoc = RT_KD_GPU_BOX_INCLUSION;
            snprintf(name, sizeof name, "4 ways, box inclusion");
        } else if (v == 19) {
            /* 4 ways with the shared-memory scans and reductions */
            rt_kd_gpu_params_ladder(&p, 0);
            p.chang_a = p.chang_c = 1;
            p.large_ways = 4;
            snprintf(name, sizeof name, "4 ways, [A] + [C] only");
        } else if (v == 13) {
            p.small_fused = 0;
            snprintf(name, sizeof name, "level-by-level small stage");
        } else if (v == 20) {
            p.small_exact_clip = 1;
            snprintf(name, sizeof name, "exact clips of small roots");
        } else if (v == 21) {
            p.assoc = RT_KD_GPU_BOX_INCLUSION;
            p.small_exact_clip = 1;
            snprintf(name, sizeof name, "box inclusion + exact small clips");
        } else if (v == 22) {
            p.large_dataflow = 0;
            snprintf(name, sizeof name, "a grid barrier per large level");
        } else if (v == 23) {
            p.large_dataflow = 0;
            p.large_ways = 4;
            snprintf(name, sizeof name, "4 ways, a grid barrier per level");
        } else if (v == 24) {
            p.large_dataflow = 1;
            p.large_ways = 4;
            snprintf(name, sizeof name, "4 ways, dataflow");
        } else if (v == 25) {
            /* chunks sorted in rounds of 128 refs (the auto chunk of these
             * small scenes is one round) */
            p.large_chunk = 512;
            snprintf(name, sizeof name, "chunks of 512 refs, dataflow");
        } else if (v == 26) {
            p.large_chunk = 2048;
            p.large_dataflow = 0;
            p.large_ways = 4;
            snprintf(name, sizeof name, "chunks of 2048 refs, 4 ways, a barrier per level");
        } else if (v == 27) {
            /* the rounds' child boxes by shared-memory reductions */
            rt_kd_gpu_params_ladder(&p, 3);
            p.large_chunk = 384;
            snprintf(name, sizeof name, "chunks of 384 refs, [A]-[C]");
        } else {
            p.small_threshold = 32;
            p.c_trav = 2.0f;
            p.c_isect = 1.0f;
            snprintf(name, sizeof name, "leaf 32, C_trav 2, C_i 1");
        }
        for (int s = 0; s < 2; s++) build_and_check(&p, &sc[s], quick() ? 500 : 6000, 70 + v * 2 + s, name);
    }
    free_scene(&sc[0]);
    free_scene(&sc[1]);
}

static void gpu_kd_rebuild_reuses_buffers(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    /* a small scene then a large one then a small one: the buffers grow and
     * are reused, and every tree is valid */
    RtKdGpuParams p = rt_kd_gpu_params_default();
    RtTriArrays a = make_scene(SC_SOUP, 500, 90), b = make_scene(SC_CLUSTER, 20000, 91);
    double s1 = build_and_check(&p, &a, 2000, 1, "small before");
    build_and_check(&p, &b, 2000, 2, "large in between");
    double s2 = build_and_check(&p, &a, 2000, 1, "small after");
    /* atomics reorder refs, so ties between equal-cost planes may differ */
    print_message("  SAH before/after: %.3f / %.3f\n", s1, s2);
    free_scene(&a);
    free_scene(&b);
}

/* The first build's buffers come from estimates; the next build allocates
 * what the first needed (with slack), and builds after that keep them: a
 * moving scene never reallocates frame after frame, every tree valid. */
static void gpu_kd_buffers_fit_the_tree(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtTriArrays t = make_scene(SC_GRID, quick() ? 5000 : 40000, 93);
    RtError err = {0};
    RtFloat4 *dv, *dw;
    upload_scene(&t, &dv, &dw);
    /* a fresh builder: the fixture's has seen other scenes */
    RtKdGpu *kd = NULL;
    assert_int_equal(rt_kd_gpu_create(&kd, &err), RT_OK);
    RtKdGpuParams p = rt_kd_gpu_params_default();
    uint64_t bytes[4];
    for (int k = 0; k < 4; k++) {
        RtKdTree dtree, h;
        RtKdGpuStats st;
        assert_int_equal(rt_kd_gpu_build(kd, &p, dv, dw, t.count, &dtree, &st, &err), RT_OK);
        bytes[k] = st.device_bytes;
        print_message("build %d: %.2f MiB of device arrays, %u nodes, %u references, rebuilds %u\n", k,
                      st.device_bytes / 1048576.0, st.nodes, st.references, st.rebuilds);
        assert_true(st.device_bytes > 0);
        if (k > 0) assert_int_equal(st.rebuilds, 0);
        assert_int_equal(rt_kd_gpu_download(&dtree, &h, &err), RT_OK);
        assert_int_equal(rt_kd_validate_flags(&h, &t, RT_KD_VALIDATE_LOOSE_REFS, &err), RT_OK);
        assert_int_equal(rt_kd_marks_missing(&h), 0);
        if (k == 1 || k == 3) assert_int_equal(compare_rays(&h, &t, quick() ? 300 : 2000, 94 + k), 0);
        rt_kd_tree_free(&h);
    }
    assert_true(bytes[1] <= bytes[0]); /* the estimates are for the worst case */
    assert_true(bytes[2] == bytes[1] && bytes[3] == bytes[1]);
    rt_kd_gpu_destroy(kd);
    rt_kd_gpu_free(dv);
    rt_kd_gpu_free(dw);
    free_scene(&t);
}

/* Implementation II with the fused small stage keeps every loop bound on the
 * device: the host waits once per build (the final counters), and a build is
 * a handful of launches; Implementation I still reads each level back. */
static void gpu_kd_default_build_waits_once(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtTriArrays t = make_scene(SC_CLUSTER, quick() ? 3000 : 20000, 95);
    RtError err = {0};
    RtFloat4 *dv, *dw;
    upload_scene(&t, &dv, &dw);
    RtKdTree dtree;
    RtKdGpuStats st;
    for (int steps = 1; steps <= 5; steps++) {
        RtKdGpuParams p = rt_kd_gpu_params_default();
        rt_kd_gpu_params_ladder(&p, steps);
        assert_int_equal(rt_kd_gpu_build(g_fx.kd, &p, dv, dw, t.count, &dtree, &st, &err), RT_OK);
        print_message("ladder %-8s launches %u, round trips %u, levels %u+%u, rebuilds %u\n",
                      rt_variant_value_name(RT_VAR_LADDER, steps), st.launches, st.round_trips, st.large_levels,
                      st.small_levels, st.rebuilds);
        assert_true(st.large_levels > 2);
        assert_int_equal(st.round_trips, 1 + st.rebuilds);
        assert_true(st.launches <= 5 * (1 + st.rebuilds));
    }
    RtKdGpuParams p = rt_kd_gpu_params_default();
    rt_kd_gpu_params_ladder(&p, 0);
    assert_int_equal(rt_kd_gpu_build(g_fx.kd, &p, dv, dw, t.count, &dtree, &st, &err), RT_OK);
    print_message("ladder %-8s launches %u, round trips %u, levels %u+%u\n", rt_variant_value_name(RT_VAR_LADDER, 0),
                  st.launches, st.round_trips, st.large_levels, st.small_levels);
    assert_true(st.round_trips >= st.large_levels);
    rt_kd_gpu_free(dv);
    rt_kd_gpu_free(dw);
    free_scene(&t);
}

/* The pipeline's split build: queued without a wait, the tracer's inputs
 * (arrays, device bounds) at once, the sizes after the finish; no round
 * trip inside; a second build before the finish is refused. */
static void gpu_kd_async_build_finishes_later(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtTriArrays t = make_scene(SC_CLUSTER, quick() ? 3000 : 20000, 96);
    RtError err = {0};
    RtFloat4 *dv, *dw;
    upload_scene(&t, &dv, &dw);
    RtKdGpuParams p = rt_kd_gpu_params_default();
    RtKdTree dtree, h;
    RtKdGpuStats st;
    int rebuilt = -1;
    assert_int_equal(rt_kd_gpu_build_async(g_fx.kd, &p, dv, dw, t.count, &dtree, &err), RT_OK);
    assert_non_null(dtree.d_bounds);
    assert_non_null(dtree.nodes);
    assert_int_equal(dtree.node_count, 0); /* not known on the host yet */
    assert_int_equal(rt_kd_gpu_build_async(g_fx.kd, &p, dv, dw, t.count, &dtree, &err), RT_ERR_ARG);
    assert_int_equal(rt_kd_gpu_build_finish(g_fx.kd, &dtree, &st, &rebuilt, &err), RT_OK);
    assert_int_equal(rebuilt, st.rebuilds > 0);
    assert_int_equal(st.round_trips, st.rebuilds);
    assert_true(st.nodes > 1 && dtree.node_count == st.nodes && !aabb_is_empty(dtree.bounds));
    RtAabb db;
    assert_int_equal(rt_gpu_memcpy(&db, dtree.d_bounds, sizeof db, RT_COPY_TO_HOST, &err), RT_OK);
    assert_memory_equal(&db, &dtree.bounds, sizeof db);
    assert_int_equal(rt_kd_gpu_build_finish(g_fx.kd, &dtree, &st, &rebuilt, &err), RT_ERR_ARG);
    assert_int_equal(rt_kd_gpu_download(&dtree, &h, &err), RT_OK);
    assert_null(h.d_bounds);
    assert_int_equal(rt_kd_validate_flags(&h, &t, RT_KD_VALIDATE_LOOSE_REFS, &err), RT_OK);
    assert_int_equal(compare_rays(&h, &t, quick() ? 500 : 4000, 97), 0);
    print_message("async: nodes %u, launches %u, round trips %u, rebuilds %u\n", st.nodes, st.launches,
                  st.round_trips, st.rebuilds);
    rt_kd_tree_free(&h);
    rt_kd_gpu_free(dv);
    rt_kd_gpu_free(dw);
    free_scene(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_kd_empty_and_single),
        cmocka_unit_test(gpu_kd_scenes_match_brute_force),
        cmocka_unit_test(gpu_kd_large_mesh_valid),
        cmocka_unit_test(gpu_kd_exact_builder),
        cmocka_unit_test(gpu_kd_exact_frames),
        cmocka_unit_test(gpu_kd_every_variant_valid),
        cmocka_unit_test(gpu_kd_rebuild_reuses_buffers),
        cmocka_unit_test(gpu_kd_buffers_fit_the_tree),
        cmocka_unit_test(gpu_kd_default_build_waits_once),
        cmocka_unit_test(gpu_kd_async_build_finishes_later),
    };
    int rc = cmocka_run_group_tests_name("gpu_kd", tests, NULL, NULL);
    if (g_fx.kd) rt_kd_gpu_destroy(g_fx.kd);
    if (g_fx.gpu) rt_gpu_destroy(g_fx.gpu);
    return rc;
}
