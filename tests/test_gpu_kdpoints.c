/* test_gpu_kdpoints.c — the GPU balanced point k-d tree (cuda/photon/
 * kdp_gpu.h, seed 004) against the CPU oracle rt_kdp_build_cpu: for n = 0,
 * 1, 2, 3, short runs, 1000 and 100003 random points and k = 1, 3, 4, 8,
 * all points equal, a small integer grid (mostly duplicates), NaN and
 * infinite points, -0 and +0, the downloaded tree's nodes and coordinates
 * equal the oracle's byte for byte, its counts equal the oracle's and it
 * passes rt_kdp_validate — built three ways (the default level switch, a
 * warp per range on every level, chunks over many warps on every level),
 * so every partition kernel is checked on every size. kNN (k = 1, 8, 50,
 * 64; plain and within r) and radius queries on the GPU equal the brute
 * force exactly (same points, same order, ties by index) for thousands of
 * queries at random, on points, on mixes of points' coordinates and far
 * outside; radius truncation is reported. One builder reused over sizes
 * keeps its buffers. A benchmark prints (never asserts) per-stage times of
 * the seed's 16,777,216 random 4-D tuples and 1M / 4M 3-D points, each
 * validated, and kNN (k = 50) throughput. The 2-GPU builder (devices = 2,
 * seed 004's swap and merge) builds the oracle's tree too, on odd sizes,
 * duplicates on both sides of the GPUs' boundary and unbalanced halves,
 * and its benchmark sets 1 GPU against 2 per stage. Skips with a message
 * where no GPU (or no second one) is usable. */
#include "test_util.h"

#include <math.h>

#include "core/parallel.h"
#include "gpu/gpu.h"
#include "gpu/gpu_scene.h"
#include "photon/kdp_gpu.h"

/* The builders: the default level switch, and each partition forced. */
enum { B_AUTO, B_NARROW, B_WIDE, B_COUNT };
static const char *const kBuilderName[B_COUNT] = {"auto", "warp per range", "chunks over warps"};

typedef struct GpuFixture {
    RtGpu *gpu;
    RtKdpGpu *b[B_COUNT];
    RtKdpGpu *two[B_COUNT]; /* devices = 2, the same three switches */
    int two_state;          /* 0: not tried, 1: ready, -1: fewer than 2 GPUs */
} GpuFixture;

static GpuFixture g_fx;

static int gpu_ready(void)
{
    if (g_fx.b[B_WIDE]) return 1;
    RtError err = {0};
    if (!g_fx.gpu && rt_gpu_create(0, &g_fx.gpu, &err) != RT_OK) {
        print_message("skip: no GPU: %s\n", err.msg);
        return 0;
    }
    const uint32_t forced[B_COUNT] = {0, 1, UINT32_MAX};
    for (int i = 0; i < B_COUNT; i++) {
        RtKdpGpuParams p = rt_kdp_gpu_params_default();
        p.warp_ranges_min = forced[i];
        if (rt_kdp_gpu_create(&g_fx.b[i], &p, &err) != RT_OK) {
            print_message("skip: no GPU k-d tree builder: %s\n", err.msg);
            return 0;
        }
    }
    print_message("GPU: %s\n", rt_gpu_info(g_fx.gpu)->name);
    return 1;
}

/* ---- points ------------------------------------------------------------------ */

enum { PT_RANDOM, PT_GRID, PT_SAME, PT_ZEROS, PT_BAD };

/* n points of dim coordinates, malloc'd: PT_RANDOM in [-1, 1); PT_GRID on
 * the integers 0..3 (4^k cells: ties everywhere, mostly duplicates);
 * PT_SAME all one point, every third coordinate a -0 where others have
 * +0; PT_ZEROS coordinates from {-0, +0, 1, -1}; PT_BAD random with a NaN
 * or an infinity in every seventh point. */
static float *points(uint32_t n, uint32_t dim, int kind, uint64_t seed)
{
    RtTestRng r = {seed * 0x9e3779b97f4a7c15ull + 7};
    float *p = malloc(((size_t)n * dim + 1) * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < (size_t)n * dim; i++) {
        const uint32_t x = rt_test_rand(&r);
        switch (kind) {
        case PT_GRID: p[i] = (float)(x % 4); break;
        case PT_SAME: p[i] = (i / dim) % 3 == 1 && i % dim == 0 ? -0.0f : (i % dim == 0 ? 0.0f : 0.25f * (float)(i % dim)); break;
        case PT_ZEROS: p[i] = x % 4 == 0 ? -0.0f : x % 4 == 1 ? 0.0f : x % 4 == 2 ? 1.0f : -1.0f; break;
        default: p[i] = rt_test_randf(&r) * 2.0f - 1.0f;
        }
    }
    if (kind == PT_BAD)
        for (uint32_t i = 0; i < n; i += 7) p[(size_t)i * dim + i % dim] = i % 2 ? NAN : (i % 3 ? INFINITY : -INFINITY);
    return p;
}

static float *upload(const float *h, size_t floats)
{
    RtError err = {0};
    float *d = NULL;
    assert_int_equal(rt_gpu_malloc((void **)&d, floats ? floats * sizeof *d : 16, &err), RT_OK);
    assert_int_equal(rt_gpu_memcpy(d, h, floats * sizeof *d, RT_COPY_TO_DEVICE, &err), RT_OK);
    return d;
}

/* ---- the tree comparison ------------------------------------------------------ */

static void print_node(const char *who, const RtKdpTree *t, uint32_t i)
{
    char buf[256];
    size_t o = (size_t)snprintf(buf, sizeof buf, "  %s node %u: point %u children %d %d coords", who, i,
                                t->nodes[i].point, (int)t->nodes[i].child[0], (int)t->nodes[i].child[1]);
    for (uint32_t c = 0; c < t->dim && o < sizeof buf; c++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, " %a", (double)t->coords[(size_t)i * t->dim + c]);
    print_message("%s\n", buf);
}

/* Builds the n points with builder b on the GPU and the CPU: same counts,
 * same nodes and coordinates byte for byte, valid. On a difference prints
 * both trees' counts and the first differing node from both sides. */
static void expect_same_tree_on(RtKdpGpu *builder, const char *bname, const float *p, uint32_t n, uint32_t dim,
                                const char *what)
{
    RtError err = {0};
    RtKdpTree cpu, dev, h;
    RtKdpStats cs, gs;
    if (rt_kdp_build_cpu(p, n, dim, &cpu, &cs, &err) != RT_OK) fail_msg("%s: CPU build: %s", what, err.msg);
    float *d = upload(p, (size_t)n * dim);
    if (rt_kdp_gpu_build(builder, d, n, dim, NULL, &dev, &gs, &err) != RT_OK)
        fail_msg("%s (%s): GPU build: %s", what, bname, err.msg);
    if (rt_kdp_gpu_download(&dev, &h, &err) != RT_OK) fail_msg("%s: download: %s", what, err.msg);
    rt_gpu_free(d);
    if (h.count != cpu.count || h.root != cpu.root || h.depth != cpu.depth || h.dim != cpu.dim ||
        gs.rejected != cs.rejected || gs.duplicates != cs.duplicates)
        fail_msg("%s (%s, n %u, k %u): GPU count %u root %u depth %u rejected %u duplicates %u; CPU %u %u %u %u %u",
                 what, bname, n, dim, h.count, h.root, h.depth, gs.rejected, gs.duplicates, cpu.count,
                 cpu.root, cpu.depth, cs.rejected, cs.duplicates);
    for (uint32_t i = 0; i < cpu.count; i++) {
        if (!memcmp(&h.nodes[i], &cpu.nodes[i], sizeof cpu.nodes[i]) &&
            !memcmp(h.coords + (size_t)i * dim, cpu.coords + (size_t)i * dim, dim * sizeof(float)))
            continue;
        print_message("%s (%s, n %u, k %u, resorted %u): first difference at node %u of %u\n", what,
                      bname, n, dim, gs.resorted, i, cpu.count);
        print_node("GPU", &h, i);
        print_node("CPU", &cpu, i);
        fail_msg("%s: the GPU tree differs from the CPU's at node %u", what, i);
    }
    if (rt_kdp_validate(&h, p, n, &err) != RT_OK)
        fail_msg("%s (%s, n %u, k %u): GPU tree invalid: %s", what, bname, n, dim, err.msg);
    rt_kdp_free(&h);
    rt_kdp_free(&cpu);
}

static void expect_same_tree(int b, const float *p, uint32_t n, uint32_t dim, const char *what)
{
    expect_same_tree_on(g_fx.b[b], kBuilderName[b], p, n, dim, what);
}

/* Every builder on one set. */
static void expect_same_tree_all(const float *p, uint32_t n, uint32_t dim, const char *what)
{
    for (int b = 0; b < B_COUNT; b++) expect_same_tree(b, p, n, dim, what);
}

/* ---- tests: the tree ----------------------------------------------------------- */

static const uint32_t kDims[] = {1, 3, 4, 8};

/* Random points of every size and every k in kDims (seed mul * size's
 * position + k's position + add) through check. */
static void random_sweep(const uint32_t *sizes, size_t count, uint64_t mul, uint64_t add, const char *prefix,
                         void (*check)(const float *, uint32_t, uint32_t, const char *))
{
    for (size_t d = 0; d < 4; d++)
        for (size_t s = 0; s < count; s++) {
            float *p = points(sizes[s], kDims[d], PT_RANDOM, mul * s + d + add);
            char what[64];
            snprintf(what, sizeof what, "%s%u random %u-D points", prefix, sizes[s], kDims[d]);
            check(p, sizes[s], kDims[d], what);
            free(p);
        }
}

static void gpu_kdp_small_sizes_match_cpu(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    static const uint32_t sizes[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 257};
    random_sweep(sizes, sizeof sizes / sizeof *sizes, 100, 0, "", expect_same_tree_all);
}

static void gpu_kdp_random_1000_and_100003_match_cpu(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    static const uint32_t sizes[] = {1000, 4099, 100003};
    random_sweep(sizes, 3, 7, 1, "", expect_same_tree_all);
}

static void gpu_kdp_all_points_equal_one_node(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    for (size_t d = 0; d < 4; d++) {
        const uint32_t n = 5000, dim = kDims[d];
        float *p = points(n, dim, PT_SAME, d);
        expect_same_tree_all(p, n, dim, "5000 equal points (-0 and +0)");
        RtKdpTree dev, h;
        RtKdpStats st;
        RtError err = {0};
        float *dp = upload(p, (size_t)n * dim);
        assert_int_equal(rt_kdp_gpu_build(g_fx.b[B_AUTO], dp, n, dim, NULL, &dev, &st, &err), RT_OK);
        assert_int_equal(rt_kdp_gpu_download(&dev, &h, &err), RT_OK);
        assert_int_equal(h.count, 1);
        assert_int_equal(st.duplicates, n - 1);
        assert_int_equal(h.nodes[h.root].point, 0); /* the lowest index is kept */
        assert_true(kdp_is_leaf(h.nodes[h.root]));
        rt_kdp_free(&h);
        rt_gpu_free(dp);
        free(p);
    }
}

static void gpu_kdp_grid_duplicates_and_signed_zeros_match_cpu(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    for (size_t d = 0; d < 4; d++) {
        const uint32_t dim = kDims[d];
        float *p = points(20000, dim, PT_GRID, 40 + d);
        expect_same_tree_all(p, 20000, dim, "20000 points on a 4^k integer grid");
        free(p);
        p = points(3000, dim, PT_ZEROS, 50 + d);
        expect_same_tree_all(p, 3000, dim, "3000 points of -0, +0, 1, -1");
        free(p);
    }
    /* a grid with random points mixed in: ties in some coordinates only */
    float *p = points(60000, 3, PT_GRID, 60);
    RtTestRng r = {61};
    for (uint32_t i = 0; i < 60000 * 3; i += 5) p[i] += rt_test_randf(&r);
    expect_same_tree_all(p, 60000, 3, "60000 grid-ish 3-D points");
    free(p);
}

static void gpu_kdp_nan_and_inf_points_rejected(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    for (size_t d = 0; d < 4; d++) {
        float *p = points(5000, kDims[d], PT_BAD, 70 + d);
        expect_same_tree_all(p, 5000, kDims[d], "5000 points, NaN or inf in every 7th");
        for (uint32_t i = 0; i < 5000 * kDims[d]; i++) p[i] = i % 2 ? NAN : INFINITY;
        expect_same_tree_all(p, 5000, kDims[d], "5000 non-finite points (empty tree)");
        free(p);
    }
}

/* One builder, sizes up and down: the arrays grow once and are reused. */
static void gpu_kdp_rebuilds_reuse_buffers(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtKdpGpu *own = NULL, *shared = g_fx.b[B_AUTO];
    RtError err = {0};
    assert_int_equal(rt_kdp_gpu_create(&own, NULL, &err), RT_OK);
    g_fx.b[B_AUTO] = own;
    static const uint32_t sizes[] = {3000, 30000, 3000, 30000, 29999};
    const RtKdpNode *nodes[5];
    for (int i = 0; i < 5; i++) {
        float *p = points(sizes[i], 3, PT_RANDOM, 80 + i);
        expect_same_tree(B_AUTO, p, sizes[i], 3, "rebuild");
        float *d = upload(p, (size_t)sizes[i] * 3);
        RtKdpTree dev;
        assert_int_equal(rt_kdp_gpu_build(own, d, sizes[i], 3, NULL, &dev, NULL, &err), RT_OK);
        nodes[i] = dev.nodes;
        rt_gpu_free(d);
        free(p);
    }
    assert_ptr_equal(nodes[2], nodes[1]);
    assert_ptr_equal(nodes[3], nodes[1]);
    assert_ptr_equal(nodes[4], nodes[1]);
    rt_kdp_gpu_destroy(own);
    g_fx.b[B_AUTO] = shared;
}

static void gpu_kdp_bad_arguments_refused(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtError err = {0};
    RtKdpTree t;
    float *d = upload((const float[8]){0}, 8);
    assert_int_equal(rt_kdp_gpu_build(g_fx.b[B_AUTO], d, 1, 0, NULL, &t, NULL, &err), RT_ERR_ARG);
    rt_test_assert_contains(err.msg, "KDP:");
    assert_int_equal(rt_kdp_gpu_build(g_fx.b[B_AUTO], d, 1, 9, NULL, &t, NULL, &err), RT_ERR_ARG);
    assert_int_equal(rt_kdp_gpu_build(g_fx.b[B_AUTO], NULL, 5, 3, NULL, &t, NULL, &err), RT_ERR_ARG);
    assert_int_equal(rt_kdp_gpu_build(g_fx.b[B_AUTO], d, 1, 8, NULL, &t, NULL, &err), RT_OK);
    assert_int_equal(t.count, 1);
    RtKdpHit *hits = NULL;
    uint32_t *counts = NULL;
    assert_int_equal(rt_gpu_malloc((void **)&hits, 64 * sizeof *hits, &err), RT_OK);
    assert_int_equal(rt_gpu_malloc((void **)&counts, sizeof *counts, &err), RT_OK);
    assert_int_equal(rt_kdp_gpu_knn(g_fx.b[B_AUTO], &t, d, 1, 0, INFINITY, RT_KDP_WALK_LANE, hits, counts, NULL, &err),
                     RT_ERR_ARG);
    assert_int_equal(rt_kdp_gpu_knn(g_fx.b[B_AUTO], &t, d, 1, 65, INFINITY, RT_KDP_WALK_WARP, hits, counts, NULL, &err),
                     RT_ERR_ARG);
    assert_int_equal(rt_kdp_gpu_knn(g_fx.b[B_AUTO], &t, d, 1, 8, INFINITY, (RtKdpWalk)2, hits, counts, NULL, &err),
                     RT_ERR_ARG);
    rt_test_assert_contains(err.msg, "walk");
    assert_int_equal(rt_kdp_gpu_radius(g_fx.b[B_AUTO], &t, d, 1, 1.0f, 0, hits, counts, NULL, &err), RT_ERR_ARG);
    uint32_t c = 0;
    assert_int_equal(rt_kdp_gpu_knn(g_fx.b[B_AUTO], &t, d, 1, 64, INFINITY, RT_KDP_WALK_WARP, hits, counts, NULL, &err),
                     RT_OK);
    assert_int_equal(rt_gpu_memcpy(&c, counts, sizeof c, RT_COPY_TO_HOST, &err), RT_OK);
    assert_int_equal(c, 1);
    rt_gpu_free(hits);
    rt_gpu_free(counts);
    rt_gpu_free(d);
}

/* ---- tests: two GPUs (devices = 2) ---------------------------------------------- */

/* The three 2-GPU builders, or 0 with a message (fewer than 2 GPUs: the
 * create must say so with RT_ERR_NO_DEVICE, not crash). */
static int two_ready(void)
{
    if (!gpu_ready()) return 0;
    if (g_fx.two_state) return g_fx.two_state > 0;
    const uint32_t forced[B_COUNT] = {0, 1, UINT32_MAX};
    RtError err = {0};
    g_fx.two_state = 1;
    for (int i = 0; i < B_COUNT && g_fx.two_state > 0; i++) {
        RtKdpGpuParams p = rt_kdp_gpu_params_default();
        p.warp_ranges_min = forced[i];
        p.devices = 2;
        RtStatus st = rt_kdp_gpu_create(&g_fx.two[i], &p, &err);
        if (st == RT_OK) continue;
        assert_int_equal(st, RT_ERR_NO_DEVICE);
        assert_null(g_fx.two[i]);
        rt_test_assert_contains(err.msg, "KDP:");
        print_message("skip: no second GPU: %s\n", err.msg);
        g_fx.two_state = -1;
    }
    return g_fx.two_state > 0;
}

static void expect_same_tree_two(const float *p, uint32_t n, uint32_t dim, const char *what)
{
    static const char *const names[B_COUNT] = {"2 GPUs, auto", "2 GPUs, warp per range", "2 GPUs, chunks over warps"};
    for (int b = 0; b < B_COUNT; b++) expect_same_tree_on(g_fx.two[b], names[b], p, n, dim, what);
}

static void gpu_kdp_devices_argument_checked(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtKdpGpu *g = NULL;
    RtError err = {0};
    RtKdpGpuParams p = rt_kdp_gpu_params_default();
    p.devices = 3;
    assert_int_equal(rt_kdp_gpu_create(&g, &p, &err), RT_ERR_ARG);
    assert_null(g);
    rt_test_assert_contains(err.msg, "KDP:");
    two_ready(); /* with one GPU: RT_ERR_NO_DEVICE, checked there */
}

static void gpu_kdp_two_gpus_match_cpu(void **state)
{
    (void)state;
    if (!two_ready()) skip();
    static const uint32_t sizes[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 31, 33, 64, 65, 100, 257, 1000, 4099, 100003};
    random_sweep(sizes, sizeof sizes / sizeof *sizes, 300, 0, "2 GPUs: ", expect_same_tree_two);
}

/* Duplicates across the halves each GPU presorts (point i + n/2 repeats
 * point i), duplicates piled at the low end of the order (GPU 0 keeps
 * fewer than the root's left side: references move from GPU 1) and
 * rejected points at the high end (GPU 1 short: they move from GPU 0),
 * grids, all equal, all rejected. */
static void gpu_kdp_two_gpus_duplicates_and_unbalanced_halves(void **state)
{
    (void)state;
    if (!two_ready()) skip();
    static const uint32_t sizes[] = {2, 3, 9, 1001, 4098, 20001};
    static const uint32_t dims[] = {3, 4};
    for (size_t d = 0; d < 2; d++) {
        const uint32_t dim = dims[d];
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            const uint32_t n = sizes[s], h = n / 2;
            char what[96];
            float *p = points(n, dim, PT_RANDOM, 500 + 10 * s + d);
            for (uint32_t i = 0; i < h; i++) memcpy(p + (size_t)(i + h) * dim, p + (size_t)i * dim, dim * sizeof *p);
            snprintf(what, sizeof what, "2 GPUs: %u %u-D points, the upper half repeating the lower", n, dim);
            expect_same_tree_two(p, n, dim, what);
            for (uint32_t i = 0; i < n; i += 2)
                for (uint32_t c = 0; c < dim; c++) p[(size_t)i * dim + c] = -2.0f;
            snprintf(what, sizeof what, "2 GPUs: %u %u-D points, every other one the lowest point", n, dim);
            expect_same_tree_two(p, n, dim, what);
            free(p);
            p = points(n, dim, PT_RANDOM, 600 + 10 * s + d);
            for (uint32_t i = 0; i < n; i++)
                if (i % 5 < 3) p[(size_t)i * dim + i % dim] = i % 2 ? NAN : INFINITY;
            snprintf(what, sizeof what, "2 GPUs: %u %u-D points, 3 in 5 rejected", n, dim);
            expect_same_tree_two(p, n, dim, what);
            free(p);
        }
        float *p = points(20000, dim, PT_GRID, 700 + d);
        expect_same_tree_two(p, 20000, dim, "2 GPUs: 20000 points on a 4^k integer grid");
        free(p);
        p = points(3000, dim, PT_ZEROS, 710 + d);
        expect_same_tree_two(p, 3000, dim, "2 GPUs: 3000 points of -0, +0, 1, -1");
        free(p);
        p = points(5000, dim, PT_SAME, 720 + d);
        expect_same_tree_two(p, 5000, dim, "2 GPUs: 5000 equal points (-0 and +0)");
        for (uint32_t i = 0; i < 5000 * dim; i++) p[i] = i % 2 ? NAN : INFINITY;
        expect_same_tree_two(p, 5000, dim, "2 GPUs: 5000 non-finite points (empty tree)");
        free(p);
        p = points(5000, dim, PT_BAD, 730 + d);
        expect_same_tree_two(p, 5000, dim, "2 GPUs: 5000 points, NaN or inf in every 7th");
        free(p);
    }
    /* one 2-GPU builder over sizes up and down */
    static const uint32_t again[] = {30000, 3000, 30001};
    for (int i = 0; i < 3; i++) {
        float *p = points(again[i], 3, PT_RANDOM, 740 + i);
        expect_same_tree_on(g_fx.two[B_AUTO], "2 GPUs, rebuilt", p, again[i], 3, "2 GPUs: rebuild");
        free(p);
    }
}

/* ---- tests: queries ------------------------------------------------------------- */

/* The brute force: the `keep` smallest hits by (d2, point) over every tree
 * point, sorted, into best; returns how many. */
static uint32_t brute_best(const RtKdpTree *t, const float *q, uint32_t keep, RtKdpHit *best)
{
    uint32_t count = 0;
    for (uint32_t i = 0; i < t->count; i++) {
        RtKdpHit h = {kdp_dist2(q, t->coords + (size_t)i * t->dim, t->dim), t->nodes[i].point};
        if (count == keep && !kdp_hit_less(h, best[keep - 1])) continue;
        uint32_t j = count < keep ? count++ : keep - 1;
        for (; j > 0 && kdp_hit_less(h, best[j - 1]); j--) best[j] = best[j - 1];
        best[j] = h;
    }
    return count;
}

/* Every tree point within r2 (unsorted count only). */
static uint32_t brute_within(const RtKdpTree *t, const float *q, float r2)
{
    uint32_t c = 0;
    for (uint32_t i = 0; i < t->count; i++) c += kdp_dist2(q, t->coords + (size_t)i * t->dim, t->dim) <= r2;
    return c;
}

static void expect_hits(const RtKdpHit *got, uint32_t ngot, const RtKdpHit *want, uint32_t nwant, uint32_t qi,
                        const float *q, uint32_t dim, const char *what)
{
    if (ngot == nwant && !memcmp(got, want, ngot * sizeof *got)) return;
    print_message("%s: query %u at (%g, %g, %g, ...) of %u coordinates: GPU %u hits, brute force %u\n", what, qi,
                  (double)q[0], dim > 1 ? (double)q[1] : 0.0, dim > 2 ? (double)q[2] : 0.0, dim, ngot, nwant);
    for (uint32_t i = 0; i < ngot || i < nwant; i++)
        if (i >= ngot || i >= nwant || got[i].point != want[i].point || got[i].d2 != want[i].d2) {
            print_message("  first difference at hit %u: GPU point %d d2 %a, brute force point %d d2 %a\n", i,
                          i < ngot ? (int)got[i].point : -1, i < ngot ? (double)got[i].d2 : 0.0,
                          i < nwant ? (int)want[i].point : -1, i < nwant ? (double)want[i].d2 : 0.0);
            break;
        }
    fail_msg("%s: query %u differs from the brute force", what, qi);
}

/* nq queries around the points: at random (a wider box), on points, on
 * mixes of points' coordinates, far outside (1e6), at 0. */
static float *queries(const float *p, uint32_t n, uint32_t dim, uint32_t nq, uint64_t seed)
{
    RtTestRng r = {seed};
    float *q = malloc(((size_t)nq * dim + 1) * sizeof *q);
    assert_non_null(q);
    for (uint32_t i = 0; i < nq; i++) {
        const uint32_t on = n ? rt_test_rand(&r) % n : 0;
        for (uint32_t c = 0; c < dim; c++) {
            float *x = &q[(size_t)i * dim + c];
            switch (i % 5) {
            case 0: *x = rt_test_randf(&r) * 3.0f - 1.5f; break;
            case 1: *x = n ? p[(size_t)on * dim + c] : 0.0f; break;
            case 2: *x = n ? p[(size_t)(rt_test_rand(&r) % n) * dim + c] : 0.0f; break;
            case 3: *x = (rt_test_rand(&r) % 2 ? 1e6f : -1e6f) * (0.5f + rt_test_randf(&r)); break;
            default: *x = 0.0f;
            }
        }
    }
    return q;
}

/* nq queries in groups of 32 (a warp's) near one point each, as a
 * frame's neighbouring pixels ask: offsets up to `spread` per coordinate;
 * one lane of every third group NaN, every fifth group spread 10x wider
 * (a warp across an edge). */
static float *coherent_queries(const float *p, uint32_t n, uint32_t dim, uint32_t nq, float spread, uint64_t seed)
{
    RtTestRng r = {seed};
    float *q = malloc(((size_t)nq * dim + 1) * sizeof *q);
    assert_non_null(q);
    for (uint32_t g = 0; g * 32 < nq; g++) {
        const uint32_t on = n ? rt_test_rand(&r) % n : 0;
        const float s = g % 5 == 4 ? spread * 10.0f : spread;
        for (uint32_t i = g * 32; i < nq && i < g * 32 + 32; i++)
            for (uint32_t c = 0; c < dim; c++) {
                float base = n ? p[(size_t)on * dim + c] : 0.0f;
                q[(size_t)i * dim + c] = g % 3 == 1 && i % 32 == 13 && c == 0 ? NAN
                                                                             : base + (rt_test_randf(&r) * 2.0f - 1.0f) * s;
            }
    }
    return q;
}

/* kNN with kn, plain (r2 = INFINITY) or within the radius of the
 * brute-force rank kn / 2 of query 0, by both walks, against the brute
 * force (a query with a NaN coordinate finds nothing). */
static void check_knn(const RtKdpTree *dev, const RtKdpTree *h, const float *q, const float *dq, uint32_t nq,
                      uint32_t kn, int within, const char *what)
{
    RtError err = {0};
    const uint32_t dim = h->dim;
    RtKdpHit *dh = NULL, *got[2], best[RT_KDP_MAX_KNN];
    uint32_t *dc = NULL, *counts[2];
    assert_int_equal(rt_gpu_malloc((void **)&dh, (size_t)nq * kn * sizeof *dh, &err), RT_OK);
    assert_int_equal(rt_gpu_malloc((void **)&dc, nq * sizeof *dc, &err), RT_OK);
    /* within: one radius for all queries, from query 0's brute-force rank
     * kn / 2 (so some queries hold fewer than kn points within it) */
    float r2 = INFINITY;
    if (within && h->count) {
        uint32_t m = brute_best(h, q, kn, best);
        r2 = best[(m - 1) / 2].d2;
    }
    for (int w = 0; w < 2; w++) {
        got[w] = malloc((size_t)nq * kn * sizeof *got[w]);
        counts[w] = malloc(nq * sizeof *counts[w]);
        assert_non_null(got[w]);
        assert_non_null(counts[w]);
        if (rt_kdp_gpu_knn(g_fx.b[B_AUTO], dev, dq, nq, kn, r2, w ? RT_KDP_WALK_WARP : RT_KDP_WALK_LANE, dh, dc, NULL,
                           &err) != RT_OK)
            fail_msg("%s", err.msg);
        assert_int_equal(rt_gpu_memcpy(got[w], dh, (size_t)nq * kn * sizeof *got[w], RT_COPY_TO_HOST, &err), RT_OK);
        assert_int_equal(rt_gpu_memcpy(counts[w], dc, nq * sizeof *counts[w], RT_COPY_TO_HOST, &err), RT_OK);
    }
    char name[2][112];
    for (int w = 0; w < 2; w++)
        snprintf(name[w], sizeof name[w], "%s: kNN k = %u%s, %s walk", what, kn, within ? " within r" : "",
                 w ? "warp" : "lane");
    for (uint32_t i = 0; i < nq; i++) {
        const float *qi = q + (size_t)i * dim;
        uint32_t m = kdp_finite(qi, dim) ? brute_best(h, qi, kn, best) : 0;
        while (m > 0 && !(best[m - 1].d2 <= r2)) m--;
        for (int w = 0; w < 2; w++) expect_hits(got[w] + (size_t)i * kn, counts[w][i], best, m, i, qi, dim, name[w]);
    }
    rt_gpu_free(dh);
    rt_gpu_free(dc);
    for (int w = 0; w < 2; w++) {
        free(got[w]);
        free(counts[w]);
    }
}

/* Radius queries, r2 from query 0's brute-force rank `rank`, room for
 * max_hits: untruncated results equal the brute force; truncated ones
 * count every point within r and hold max_hits of them, distinct (strictly
 * increasing by (d2, point)). */
static void check_radius(const RtKdpTree *dev, const RtKdpTree *h, const float *q, const float *dq, uint32_t nq,
                         uint32_t rank, uint32_t max_hits, const char *what)
{
    RtError err = {0};
    const uint32_t dim = h->dim;
    RtKdpHit *dh = NULL, *got = malloc((size_t)nq * max_hits * sizeof *got), best[RT_KDP_MAX_KNN];
    RtKdpHit *want = malloc(((size_t)h->count + 1) * sizeof *want);
    uint32_t *dc = NULL, *counts = malloc(nq * sizeof *counts);
    assert_non_null(got);
    assert_non_null(counts);
    assert_non_null(want);
    assert_int_equal(rt_gpu_malloc((void **)&dh, (size_t)nq * max_hits * sizeof *dh, &err), RT_OK);
    assert_int_equal(rt_gpu_malloc((void **)&dc, nq * sizeof *dc, &err), RT_OK);
    float r2 = 0.01f;
    if (h->count) {
        uint32_t m = brute_best(h, q, rank + 1, best);
        r2 = best[m - 1].d2;
    }
    if (rt_kdp_gpu_radius(g_fx.b[B_AUTO], dev, dq, nq, r2, max_hits, dh, dc, NULL, &err) != RT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(rt_gpu_memcpy(got, dh, (size_t)nq * max_hits * sizeof *got, RT_COPY_TO_HOST, &err), RT_OK);
    assert_int_equal(rt_gpu_memcpy(counts, dc, nq * sizeof *counts, RT_COPY_TO_HOST, &err), RT_OK);
    char name[96];
    snprintf(name, sizeof name, "%s: radius (r2 %g, room for %u)", what, (double)r2, max_hits);
    uint32_t truncated = 0;
    for (uint32_t i = 0; i < nq; i++) {
        const float *qi = q + (size_t)i * dim;
        const RtKdpHit *g = got + (size_t)i * max_hits;
        uint32_t all = brute_within(h, qi, r2);
        if (all <= max_hits) {
            uint32_t m = all ? brute_best(h, qi, all, want) : 0;
            expect_hits(g, counts[i], want, m, i, qi, dim, name);
            continue;
        }
        truncated++;
        if (counts[i] != all) fail_msg("%s: query %u counts %u points within r; brute force %u", name, i, counts[i], all);
        for (uint32_t k = 0; k < max_hits; k++) {
            if (!(g[k].d2 <= r2) || (k > 0 && !kdp_hit_less(g[k - 1], g[k])))
                fail_msg("%s: truncated query %u: hit %u (point %u, d2 %g) out of radius or order", name, i, k,
                         g[k].point, (double)g[k].d2);
        }
    }
    print_message("%s: %u of %u queries truncated\n", name, truncated, nq);
    rt_gpu_free(dh);
    rt_gpu_free(dc);
    free(got);
    free(counts);
    free(want);
}

/* A GPU tree of the points and its host copy, for the queries. */
static void build_for_queries(const float *p, uint32_t n, uint32_t dim, float **dp, RtKdpTree *dev, RtKdpTree *h)
{
    RtError err = {0};
    *dp = upload(p, (size_t)n * dim);
    if (rt_kdp_gpu_build(g_fx.b[B_AUTO], *dp, n, dim, NULL, dev, NULL, &err) != RT_OK) fail_msg("%s", err.msg);
    assert_int_equal(rt_kdp_gpu_download(dev, h, &err), RT_OK);
}

static void gpu_kdp_knn_and_radius_match_brute_force(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    struct { uint32_t n, dim; int kind; } sets[] = {
        {20000, 3, PT_RANDOM}, {5000, 4, PT_RANDOM}, {3000, 1, PT_RANDOM}, {2000, 8, PT_RANDOM},
        {6000, 3, PT_GRID},    {40, 3, PT_RANDOM},   {0, 3, PT_RANDOM},
    };
    static const uint32_t ks[] = {1, 8, 50, 64};
    const uint32_t nq = 3000;
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
        const uint32_t n = sets[s].n, dim = sets[s].dim;
        float *p = points(n, dim, sets[s].kind, 90 + s), *dp;
        RtKdpTree dev, h;
        build_for_queries(p, n, dim, &dp, &dev, &h);
        float *q = queries(p, n, dim, nq, 95 + s), *dq = upload(q, (size_t)nq * dim);
        char what[64];
        snprintf(what, sizeof what, "%u %s %u-D points", n, sets[s].kind == PT_GRID ? "grid" : "random", dim);
        for (size_t k = 0; k < 4; k++) {
            check_knn(&dev, &h, q, dq, nq, ks[k], 0, what);
            check_knn(&dev, &h, q, dq, nq, ks[k], 1, what);
        }
        /* warps of nearby queries: the warp walk's own case */
        float *cq = coherent_queries(p, n, dim, nq, 0.01f, 97 + s), *dcq = upload(cq, (size_t)nq * dim);
        char cwhat[112];
        snprintf(cwhat, sizeof cwhat, "%s, coherent queries", what);
        for (size_t k = 1; k < 3; k++) {
            check_knn(&dev, &h, cq, dcq, nq, ks[k], 0, cwhat);
            check_knn(&dev, &h, cq, dcq, nq, ks[k], 1, cwhat);
        }
        rt_gpu_free(dcq);
        free(cq);
        check_radius(&dev, &h, q, dq, nq, 30, 2048, what);
        check_radius(&dev, &h, q, dq, nq, 63, 16, what); /* truncated near query 0 */
        rt_gpu_free(dq);
        rt_gpu_free(dp);
        rt_kdp_free(&h);
        free(q);
        free(p);
    }
    /* a NaN query finds nothing */
    float p[6] = {0, 0, 0, 1, 1, 1}, nanq[3] = {NAN, 0, 0}, *dp;
    RtKdpTree dev, h;
    build_for_queries(p, 2, 3, &dp, &dev, &h);
    float *dq = upload(nanq, 3);
    RtKdpHit *dh;
    uint32_t *dc, c = 7;
    RtError err = {0};
    assert_int_equal(rt_gpu_malloc((void **)&dh, 8 * sizeof *dh, &err), RT_OK);
    assert_int_equal(rt_gpu_malloc((void **)&dc, sizeof *dc, &err), RT_OK);
    for (int w = 0; w < 2; w++) {
        c = 7;
        assert_int_equal(rt_kdp_gpu_knn(g_fx.b[B_AUTO], &dev, dq, 1, 8, INFINITY, (RtKdpWalk)w, dh, dc, NULL, &err),
                         RT_OK);
        assert_int_equal(rt_gpu_memcpy(&c, dc, sizeof c, RT_COPY_TO_HOST, &err), RT_OK);
        assert_int_equal(c, 0);
    }
    rt_gpu_free(dh);
    rt_gpu_free(dc);
    rt_gpu_free(dq);
    rt_gpu_free(dp);
    rt_kdp_free(&h);
}

/* ---- benchmark (prints, never asserts on time) --------------------------------- */

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median5(double *v)
{
    qsort(v, 5, sizeof *v, dbl_cmp);
    return v[2];
}

/* Random points with all of a float's precision in [-1, 1) (few ties). */
static float *bench_points(uint32_t n, uint32_t dim, uint64_t seed)
{
    RtTestRng r = {seed};
    float *p = malloc((size_t)n * dim * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < (size_t)n * dim; i++)
        p[i] = (float)((double)rt_test_rand(&r) / 2147483648.0 - 1.0); /* 32 random bits */
    return p;
}

/* Five builds: the median of each stage; validated (and compared with the
 * CPU tree when cpu), then kNN throughput (k = 50) when nq. */
static void bench_one(uint32_t n, uint32_t dim, int cpu, uint32_t nq)
{
    RtError err = {0};
    float *p = bench_points(n, dim, n + dim), *dp = upload(p, (size_t)n * dim);
    double sort[5], dedup[5], part[5], wall[5];
    RtKdpTree dev;
    RtKdpStats st;
    for (int i = 0; i < 5; i++) {
        double t0 = rt_now_ms();
        if (rt_kdp_gpu_build(g_fx.b[B_AUTO], dp, n, dim, NULL, &dev, &st, &err) != RT_OK) fail_msg("%s", err.msg);
        wall[i] = rt_now_ms() - t0;
        sort[i] = st.sort_ms, dedup[i] = st.dedup_ms, part[i] = st.build_ms;
    }
    print_message("bench: %s: %u random %u-D points: build %.2f ms (median of 5; GPU stages: sort %.2f, "
                  "duplicates %.2f, partition %.2f; wall %.2f), %u unique, %u arrays re-sorted on ties\n",
                  rt_gpu_info(g_fx.gpu)->name, n, dim, median5(sort) + median5(dedup) + median5(part), median5(sort),
                  median5(dedup), median5(part), median5(wall), dev.count, st.resorted);
    RtKdpTree h;
    assert_int_equal(rt_kdp_gpu_download(&dev, &h, &err), RT_OK);
    double t0 = rt_now_ms();
    if (rt_kdp_validate(&h, p, n, &err) != RT_OK) fail_msg("bench %u %u-D: invalid GPU tree: %s", n, dim, err.msg);
    double t1 = rt_now_ms();
    if (cpu) {
        RtKdpTree c;
        RtKdpStats cs;
        assert_int_equal(rt_kdp_build_cpu(p, n, dim, &c, &cs, &err), RT_OK);
        assert_int_equal(c.count, h.count);
        assert_memory_equal(c.nodes, h.nodes, (size_t)c.count * sizeof *c.nodes);
        assert_memory_equal(c.coords, h.coords, (size_t)c.count * dim * sizeof *c.coords);
        print_message("bench: validated (%.0f ms) and equal to the CPU tree (CPU build %.0f ms on %d threads)\n",
                      t1 - t0, cs.sort_ms + cs.dedup_ms + cs.build_ms, rt_thread_count());
        rt_kdp_free(&c);
    } else {
        print_message("bench: validated (%.0f ms)\n", t1 - t0);
    }
    if (nq) {
        /* random queries, and warps of queries near one point each (a
         * frame's pixels: 0.01 is about a third of the k = 50 radius) */
        float *qs[2] = {bench_points(nq, dim, 12345), coherent_queries(p, n, dim, nq, 0.01f, 12346)};
        RtKdpHit *dh;
        uint32_t *dc, c0 = 0;
        assert_int_equal(rt_gpu_malloc((void **)&dh, (size_t)nq * 50 * sizeof *dh, &err), RT_OK);
        assert_int_equal(rt_gpu_malloc((void **)&dc, nq * sizeof *dc, &err), RT_OK);
        for (int set = 0; set < 2; set++) {
            float *dq = upload(qs[set], (size_t)nq * dim);
            for (int w = 0; w < 2; w++) {
                double ms[5];
                for (int i = 0; i < 5; i++) {
                    double t = rt_now_ms();
                    assert_int_equal(rt_kdp_gpu_knn(g_fx.b[B_AUTO], &dev, dq, nq, 50, INFINITY, (RtKdpWalk)w, dh, dc,
                                                    NULL, &err),
                                     RT_OK);
                    assert_int_equal(rt_gpu_memcpy(&c0, dc, sizeof c0, RT_COPY_TO_HOST, &err), RT_OK); /* waits */
                    ms[i] = rt_now_ms() - t;
                }
                assert_int_equal(c0, 50);
                double m = median5(ms);
                print_message("bench: %u %s kNN queries (k = 50) on the %u-point tree, %s walk: %.2f ms (median of "
                              "5), %.1f M queries/s\n",
                              nq, set ? "coherent" : "random", n, w ? "warp" : "lane", m, nq / m / 1000.0);
            }
            rt_gpu_free(dq);
            free(qs[set]);
        }
        rt_gpu_free(dh);
        rt_gpu_free(dc);
    }
    rt_kdp_free(&h);
    rt_gpu_free(dp);
    free(p);
}

static void gpu_kdp_benchmark(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    bench_one(1u << 20, 3, 1, 2u << 20);
    bench_one(4u << 20, 3, 1, 0);
    bench_one(1u << 24, 4, getenv("RT_KDP_BENCH_CPU") != NULL, 0); /* the seed's 16,777,216 4-D tuples */
}

/* The seed's comparison ("2 GPUs was 1.9 times faster than running on
 * just one of the 2 GPUs"): the same points on one GPU and on two, five
 * builds each, the median of each stage (GPU 0's events; for 2 GPUs, sort
 * = presort of array 0 and the swap and merge plus the subtrees' presorts,
 * duplicates = marking, removal and the move to the root's sides, partition
 * = the subtrees' levels and the gather) and of the wall time; the two
 * trees compared byte for byte. */
static void bench_two(uint32_t n, uint32_t dim)
{
    RtError err = {0};
    float *p = bench_points(n, dim, n + dim), *dp = upload(p, (size_t)n * dim);
    RtKdpGpu *who[2] = {g_fx.b[B_AUTO], g_fx.two[B_AUTO]};
    double med[2][4];
    RtKdpTree h[2];
    for (int w = 0; w < 2; w++) {
        double v[4][5];
        RtKdpTree dev;
        RtKdpStats st;
        for (int i = 0; i < 5; i++) {
            double t0 = rt_now_ms();
            if (rt_kdp_gpu_build(who[w], dp, n, dim, NULL, &dev, &st, &err) != RT_OK) fail_msg("%s", err.msg);
            uint32_t first;
            assert_int_equal(rt_gpu_memcpy(&first, &dev.nodes[0].point, sizeof first, RT_COPY_TO_HOST, &err),
                             RT_OK); /* waits for the tree */
            v[3][i] = rt_now_ms() - t0;
            v[0][i] = st.sort_ms, v[1][i] = st.dedup_ms, v[2][i] = st.build_ms;
        }
        for (int k = 0; k < 4; k++) med[w][k] = median5(v[k]);
        assert_int_equal(rt_kdp_gpu_download(&dev, &h[w], &err), RT_OK);
    }
    assert_int_equal(h[0].count, h[1].count);
    assert_memory_equal(h[0].nodes, h[1].nodes, (size_t)h[0].count * sizeof *h[0].nodes);
    assert_memory_equal(h[0].coords, h[1].coords, (size_t)h[0].count * dim * sizeof *h[0].coords);
    static const char *const stage[4] = {"sort", "duplicates", "partition", "wall"};
    print_message("bench: %s x2: %u random %u-D points, 1 GPU vs 2 GPUs (median of 5, ms; trees equal byte for "
                  "byte):\n", rt_gpu_info(g_fx.gpu)->name, n, dim);
    const double t1 = med[0][0] + med[0][1] + med[0][2], t2 = med[1][0] + med[1][1] + med[1][2];
    for (int k = 0; k < 4; k++)
        print_message("bench:   %-10s %8.2f %8.2f  x%.2f\n", stage[k], med[0][k], med[1][k], med[0][k] / med[1][k]);
    print_message("bench:   %-10s %8.2f %8.2f  x%.2f\n", "build", t1, t2, t1 / t2);
    rt_kdp_free(&h[0]);
    rt_kdp_free(&h[1]);
    rt_gpu_free(dp);
    free(p);
}

static void gpu_kdp_two_gpus_benchmark(void **state)
{
    (void)state;
    if (!two_ready()) skip();
    bench_two(1u << 24, 4); /* the seed's 16,777,216 4-D tuples */
    bench_two(4u << 20, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_kdp_small_sizes_match_cpu),
        cmocka_unit_test(gpu_kdp_random_1000_and_100003_match_cpu),
        cmocka_unit_test(gpu_kdp_all_points_equal_one_node),
        cmocka_unit_test(gpu_kdp_grid_duplicates_and_signed_zeros_match_cpu),
        cmocka_unit_test(gpu_kdp_nan_and_inf_points_rejected),
        cmocka_unit_test(gpu_kdp_rebuilds_reuse_buffers),
        cmocka_unit_test(gpu_kdp_bad_arguments_refused),
        cmocka_unit_test(gpu_kdp_knn_and_radius_match_brute_force),
        cmocka_unit_test(gpu_kdp_devices_argument_checked),
        cmocka_unit_test(gpu_kdp_two_gpus_match_cpu),
        cmocka_unit_test(gpu_kdp_two_gpus_duplicates_and_unbalanced_halves),
        cmocka_unit_test(gpu_kdp_benchmark),
        cmocka_unit_test(gpu_kdp_two_gpus_benchmark),
    };
    int rc = cmocka_run_group_tests_name("gpu_kdpoints", tests, NULL, NULL);
    for (int i = 0; i < B_COUNT; i++) {
        rt_kdp_gpu_destroy(g_fx.b[i]);
        rt_kdp_gpu_destroy(g_fx.two[i]);
    }
    if (g_fx.gpu) rt_gpu_destroy(g_fx.gpu);
    return rc;
}
