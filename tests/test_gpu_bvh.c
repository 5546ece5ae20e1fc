/* test_gpu_bvh.c — the GPU BVH builders, LBVH (cuda/bvh/lbvh_gpu.h) and
 * H-PLOC (cuda/bvh/hploc_gpu.h), against their CPU oracles
 * (rt_lbvh_build_cpu, rt_hploc_build_cpu: the same lbvh.h / hploc.h rules
 * as loops): on
 * the default scene, the Cornell box, random soups of sizes 0, 1, 2, 3,
 * 1000 and 100000, all-degenerate triangles, many identical triangles, NaN
 * vertices mixed in and Crytek Sponza (when unpacked), with max_leaf 8
 * (the default), 1 and 16, the downloaded tree equals the oracle's byte for
 * byte (the nodes, the referenced tri_index entries, the bounds and their
 * device copy; H-PLOC also with radius 1 and threshold 3, and the node
 * count, depth and SAH compared first so a failure says how far apart the
 * trees are) and passes rt_bvh_validate; H-PLOC's depth fallback happens
 * on the device as on the CPU; builds of other sizes on one
 * builder reuse or grow its buffers and stay right, and so do the frame's
 * builds (no statistics: one graph replayed) over new vertices, other
 * parameters and sizes. H-PLOC under the spatial-split top (split_top.h)
 * equals rt_bvh_split_top_build_cpu's tree node by node from the root, at
 * every depth, under a budget that stops the splits, on soups, 0-3
 * triangles, the Cornell box (nothing pays), Sponza and chains that pass
 * the walks' depth under the top. Skips with a message
 * where no GPU is usable. */
#include "test_util.h"

#include <math.h>

#include "bvh/bvh_cpu.h"
#include "bvh/hploc_gpu.h"
#include "bvh/lbvh_gpu.h"
#include "bvh/split_top.h"
#include "gpu/gpu.h"
#include "gpu/gpu_scene.h"
#include "scene/load.h"

typedef struct GpuFixture {
    RtGpu *gpu;
    RtLbvhGpu *lbvh;
    RtHplocGpu *hploc;
    /* builds without statistics (the frame's way: the launches replayed as
     * one graph), the statistics read after them with _build_finish */
    int untimed;
} GpuFixture;

static GpuFixture g_fx;

static int gpu_ready(void)
{
    if (g_fx.lbvh) return 1;
    RtError err;
    if (rt_gpu_create(0, &g_fx.gpu, &err) != RT_OK) {
        print_message("skip: no GPU: %s\n", err.msg);
        return 0;
    }
    if (rt_lbvh_gpu_create(&g_fx.lbvh, &err) != RT_OK) {
        print_message("skip: no GPU LBVH builder: %s\n", err.msg);
        return 0;
    }
    if (rt_hploc_gpu_create(&g_fx.hploc, &err) != RT_OK) {
        print_message("skip: no GPU H-PLOC builder: %s\n", err.msg);
        return 0;
    }
    return 1;
}

/* ---- scenes ---------------------------------------------------------------- */

typedef enum {
    SC_SOUP,      /* random triangles, 2 % degenerate (zero area, NaN, a point) */
    SC_DEGENERATE,/* every triangle degenerate: zero area, a point, NaN, infinity */
    SC_IDENTICAL, /* one triangle many times (equal codes: the index tie-break), a few others */
    SC_NAN,       /* a soup with a NaN or infinite vertex in every fifth triangle */
} SceneKind;

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

static RtTriArrays make_scene(SceneKind kind, uint32_t n, uint64_t seed)
{
    RtTestRng r = {seed * 2654435761u + 1};
    RtTriArrays t;
    memset(&t, 0, sizeof t);
    t.count = n;
    t.verts = malloc((3 * (size_t)n + 1) * sizeof *t.verts);
    t.woop = malloc((3 * (size_t)n + 1) * sizeof *t.woop);
    assert_non_null(t.verts);
    assert_non_null(t.woop);
    const RtVec3 one[3] = {v3(1, 2, 3), v3(1.5f, 2, 3.25f), v3(1, 2.5f, 3)};
    for (uint32_t i = 0; i < n; i++) {
        RtVec3 a = rnd3(&r, 10.0f);
        float s = (rt_test_rand(&r) % 16 == 0) ? 4.0f : 0.6f;
        RtVec3 b = v3_add(a, v3_sub(rnd3(&r, s), v3(s / 2, s / 2, s / 2)));
        RtVec3 c = v3_add(a, v3_sub(rnd3(&r, s), v3(s / 2, s / 2, s / 2)));
        uint32_t odd = rt_test_rand(&r) % 50;
        if (kind == SC_SOUP) {
            if (odd == 0) c = b;             /* zero area */
            if (odd == 1) c = v3(NAN, 0, 0); /* non-finite */
            if (odd == 2) b = c = a;         /* a point */
        } else if (kind == SC_DEGENERATE) {
            if (i % 4 == 0) c = b;
            if (i % 4 == 1) b = c = a;
            if (i % 4 == 2) b.y = NAN;
            if (i % 4 == 3) a.z = INFINITY;
        } else if (kind == SC_IDENTICAL) {
            if (odd != 0) a = one[0], b = one[1], c = one[2];
        } else if (i % 5 == 0) {
            if (odd % 3 == 0) a.x = NAN;
            if (odd % 3 == 1) b = v3(NAN, NAN, NAN);
            if (odd % 3 == 2) c.y = -INFINITY;
        }
        set_tri(&t, i, a, b, c);
    }
    return t;
}

static void free_scene(RtTriArrays *t)
{
    free(t->verts);
    free(t->woop);
    memset(t, 0, sizeof t[0]);
}

/* ---- the comparison ----------------------------------------------------------- */

/* Non-degenerate triangles by the shared rule (kd_clip.h): the nodes and
 * references the tree must hold. */
static uint32_t valid_count(const RtTriArrays *t)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->count; i++) n += !rt_kd_tri_degenerate(t, i);
    return n;
}

static void print_node(const char *who, const RtBvhNode *n)
{
    print_message("  %s: b %a %a %a %a | %a %a %a %a | %a %a %a %a  child %u %u  count 0x%x 0x%x\n", who,
                  n->b[0].x, n->b[0].y, n->b[0].z, n->b[0].w, n->b[1].x, n->b[1].y, n->b[1].z, n->b[1].w,
                  n->b[2].x, n->b[2].y, n->b[2].z, n->b[2].w, n->child[0], n->child[1], n->count[0],
                  n->count[1]);
}

/* Depth of node `node` below the root (-1: unreachable), for the messages. */
static int node_depth(const RtBvh *b, uint32_t node)
{
    if (node == 0) return 0;
    for (uint32_t i = 0; i < b->node_count; i++)
        for (int k = 0; k < 2; k++)
            if (!bvh_child_is_leaf(&b->nodes[i], k) && b->nodes[i].child[k] == node && i != node) {
                int d = node_depth(b, i);
                return d < 0 ? d : d + 1;
            }
    return -1;
}

/* The nodes a walk of tree b reaches from the root, marked in reached
 * (node_count entries; a node reached twice fails the test). */
static void mark_reachable(const RtBvh *b, uint8_t *reached)
{
    memset(reached, 0, b->node_count);
    if (b->node_count == 0) return;
    uint32_t *stack = malloc(((size_t)b->node_count + 1) * sizeof *stack);
    assert_non_null(stack);
    size_t sp = 0;
    stack[sp++] = 0;
    while (sp) {
        const uint32_t i = stack[--sp];
        assert_true(i < b->node_count && !reached[i]);
        reached[i] = 1;
        for (int k = 0; k < 2; k++)
            if (!bvh_child_is_leaf(&b->nodes[i], k)) stack[sp++] = b->nodes[i].child[k];
    }
    free(stack);
}

/* Leaf entries of the subtree at node i moved to the depth-first order
 * (left first, each leaf's own order kept) from old (the tree's tri_index
 * before), from *next on. */
static void relayout_node(RtBvh *h, uint32_t i, const uint32_t *old, uint32_t *next)
{
    RtBvhNode *nd = &h->nodes[i];
    for (int k = 0; k < 2; k++) {
        if (!bvh_child_is_leaf(nd, k)) {
            relayout_node(h, nd->child[k], old, next);
            continue;
        }
        const uint32_t count = bvh_child_count(nd, k);
        if (count == 0) continue;
        assert_true(nd->child[k] + (uint64_t)count <= h->index_count);
        memcpy(&h->tri_index[*next], &old[nd->child[k]], count * sizeof *old);
        nd->child[k] = *next;
        *next += count;
    }
}

/* H-PLOC's GPU tree h of n valid triangles with its leaves relaid out in
 * the CPU oracle's depth-first order (the GPU places each leaf where a
 * counter gives it room, hploc_gpu.cu): the reachable leaves then cover
 * tri_index[0, n) exactly. */
static void relayout_depth_first(RtBvh *h, uint32_t n)
{
    if (n < 2) return;
    uint32_t *old = malloc((size_t)n * sizeof *old);
    assert_non_null(old);
    memcpy(old, h->tri_index, (size_t)n * sizeof *old);
    uint32_t next = 0;
    relayout_node(h, 0, old, &next);
    free(old);
    assert_int_equal(next, n);
}

/* The downloaded device tree h (its device bounds db) equals the oracle's
 * cpu byte for byte: the nodes a walk reaches (the GPU's H-PLOC build does
 * not place the nodes inside leaves), the referenced tri_index entries, the
 * bounds; and it is valid. Prints both trees' statistics and, on a
 * difference, the first differing node (both sides, its depth) or index. */
static void expect_same_tree(const RtBvh *h, const RtBvh *cpu, RtAabb db, const RtTriArrays *t, uint32_t n,
                             float c_trav, float c_isect, const char *what)
{
    RtError err = {0};
    RtBvhStats hs, cs;
    rt_bvh_tree_stats(h, NULL, c_trav, c_isect, &hs);
    rt_bvh_tree_stats(cpu, NULL, c_trav, c_isect, &cs);
    if (h->node_count != cpu->node_count || hs.nodes != cs.nodes || hs.depth != cs.depth ||
        fabs(hs.sah_cost - cs.sah_cost) > 1e-5 * fabs(cs.sah_cost))
        print_message("%s: GPU tree %u nodes (%u reachable, %u leaves, depth %u, SAH %.6f), CPU %u nodes (%u "
                      "reachable, %u leaves, depth %u, SAH %.6f)\n",
                      what, h->node_count, hs.nodes, hs.leaves, hs.depth, hs.sah_cost, cpu->node_count, cs.nodes,
                      cs.leaves, cs.depth, cs.sah_cost);
    assert_int_equal(h->node_count, n == 0 ? 0 : (n > 1 ? n - 1 : 1));
    assert_int_equal(h->node_count, cpu->node_count);
    assert_int_equal(hs.nodes, cs.nodes);
    assert_int_equal(hs.leaves, cs.leaves);
    assert_int_equal(hs.depth, cs.depth);
    assert_true(fabs(hs.sah_cost - cs.sah_cost) <= 1e-5 * fabs(cs.sah_cost));
    assert_int_equal(h->index_count, t->count);
    assert_true(cpu->index_count >= n);
    uint8_t *reached = malloc((size_t)cpu->node_count + 1);
    assert_non_null(reached);
    mark_reachable(cpu, reached);
    for (uint32_t i = 0; i < h->node_count; i++)
        if (reached[i] && memcmp(&h->nodes[i], &cpu->nodes[i], sizeof(RtBvhNode))) {
            print_message("%s: node %u of %u differs (depth %d on the CPU)\n", what, i, h->node_count,
                          node_depth(cpu, i));
            print_node("GPU", &h->nodes[i]);
            print_node("CPU", &cpu->nodes[i]);
            free(reached);
            fail();
        }
    free(reached);
    for (uint32_t i = 0; i < n; i++)
        if (h->tri_index[i] != cpu->tri_index[i]) {
            print_message("%s: tri_index[%u] = %u on the GPU, %u on the CPU\n", what, i, h->tri_index[i],
                          cpu->tri_index[i]);
            fail();
        }
    assert_memory_equal(&h->bounds, &cpu->bounds, sizeof(RtAabb));
    assert_memory_equal(&db, &cpu->bounds, sizeof db);
    RtStatus s = rt_bvh_validate(h, t, &err);
    if (s != RT_OK) print_message("%s: invalid tree: %s\n", what, err.msg);
    assert_int_equal(s, RT_OK);
}

/* The device BVH's checks before the download: the arrays' lengths, the
 * bounds on the device; then the download and its device bounds. */
static RtAabb expect_device_bvh(const RtBvh *dev, const RtTriArrays *t)
{
    RtError err = {0};
    assert_int_equal(dev->node_count, t->count > 1 ? t->count - 1 : 1);
    assert_int_equal(dev->index_count, t->count);
    assert_non_null(dev->d_bounds);
    RtAabb db;
    assert_int_equal(rt_gpu_memcpy(&db, dev->d_bounds, sizeof db, RT_COPY_TO_HOST, &err), RT_OK);
    return db;
}

/* The device leaf triangles (leaf_woop) against the layout's rule: entry k
 * holds the Woop rows of tri_index[k] (h: the downloaded tree), for every
 * entry of tri_index; none without Woop rows (dw NULL). */
static void expect_leaf_rows(const RtBvh *dev, const RtBvh *h, const RtTriArrays *t, const RtFloat4 *dw,
                             const char *what)
{
    if (!dw) {
        assert_null(dev->leaf_woop);
        return;
    }
    assert_non_null(dev->leaf_woop);
    assert_true(dev->leaf_woop_cap >= h->index_count);
    const size_t bytes = (size_t)h->index_count * 3 * sizeof(RtFloat4);
    RtFloat4 *rows = malloc(bytes ? bytes : 1);
    assert_non_null(rows);
    RtError err = {0};
    assert_int_equal(rt_gpu_memcpy(rows, dev->leaf_woop, bytes, RT_COPY_TO_HOST, &err), RT_OK);
    for (uint32_t k = 0; k < h->index_count; k++)
        if (memcmp(&rows[3 * (size_t)k], bvh_leaf_woop_src(h->tri_index, t->woop, k), 3 * sizeof(RtFloat4))) {
            print_message("%s: leaf_woop entry %u is not triangle %u's rows\n", what, k, h->tri_index[k]);
            fail();
        }
    free(rows);
}

/* The GPU LBVH of t (device arrays dv, dw) downloaded and compared with the
 * oracle's byte for byte; returns the device BVH (the builder's arrays). */
static RtBvh gpu_equals_cpu(const RtLbvhParams *p, const RtTriArrays *t, const RtFloat4 *dv, const RtFloat4 *dw,
                            const char *what)
{
    RtError err = {0};
    RtBvh cpu, dev, h;
    memset(&cpu, 0, sizeof cpu);
    RtStatus s = rt_lbvh_build_cpu(p, t, &cpu, NULL, &err);
    if (s != RT_OK) print_message("%s: CPU build failed: %s\n", what, err.msg);
    assert_int_equal(s, RT_OK);
    RtLbvhGpuStats st;
    s = rt_lbvh_gpu_build(g_fx.lbvh, p, dv, dw, t->count, &dev, g_fx.untimed ? NULL : &st, &err);
    if (s == RT_OK && g_fx.untimed) s = rt_lbvh_gpu_build_finish(g_fx.lbvh, &st, &err);
    if (s != RT_OK) print_message("%s: GPU build failed: %s\n", what, err.msg);
    assert_int_equal(s, RT_OK);
    /* the counters' reset, boxes, codes, the sort (counted once), the climb;
     * without triangles the reset and the climb (the root) */
    assert_int_equal(st.launches, t->count ? 5 : 2);
    const uint32_t n = valid_count(t);
    RtAabb db = expect_device_bvh(&dev, t);
    assert_int_equal(st.triangles, t->count);
    assert_int_equal(st.valid, n);
    assert_int_equal(rt_lbvh_gpu_download(g_fx.lbvh, &dev, &h, &err), RT_OK);
    assert_null(h.d_bounds);
    expect_same_tree(&h, &cpu, db, t, n, p->c_trav, p->c_isect, what);
    expect_leaf_rows(&dev, &h, t, dw, what);
    print_message("%-30s lbvh  leaf %-2d n=%-7u valid %-7u nodes %-7u GPU %.3f ms (codes %.3f sort %.3f climb %.3f), "
                  "%u launches\n",
                  what, p->max_leaf, t->count, n, h.node_count, st.ms, st.morton_ms, st.sort_ms, st.climb_ms,
                  st.launches);
    rt_bvh_free(&cpu);
    rt_bvh_free(&h);
    return dev;
}

/* The GPU H-PLOC tree of t against rt_hploc_build_cpu's: the same node
 * count, SAH cost (1e-5) and depth, and — the design's claim, hploc.h —
 * the same bytes once its leaves are relaid out depth first; the clustered
 * depth and the fallback agree. */
static RtBvh hploc_gpu_equals_cpu(const RtHplocParams *p, const RtTriArrays *t, const RtFloat4 *dv,
                                  const RtFloat4 *dw, const char *what)
{
    RtError err = {0};
    RtBvh cpu, dev, h;
    memset(&cpu, 0, sizeof cpu);
    RtHplocInfo info;
    RtStatus s = rt_hploc_build_cpu(p, t, &cpu, NULL, &info, &err);
    if (s != RT_OK) print_message("%s: CPU build failed: %s\n", what, err.msg);
    assert_int_equal(s, RT_OK);
    RtHplocGpuStats st;
    s = rt_hploc_gpu_build(g_fx.hploc, p, dv, dw, t->count, &dev, g_fx.untimed ? NULL : &st, &err);
    if (s == RT_OK && g_fx.untimed) s = rt_hploc_gpu_build_finish(g_fx.hploc, &st, &err);
    if (s != RT_OK) print_message("%s: GPU build failed: %s\n", what, err.msg);
    assert_int_equal(s, RT_OK);
    /* the counters' reset, boxes, codes, the sort (counted once), clustering,
     * fallback, the leaves' places, their triangles, and the leaf triangles'
     * rows when there are Woop rows; without triangles the reset and the
     * triangles' kernel (the root) */
    assert_int_equal(st.launches, t->count ? 8 + (dw != NULL) : 2);
    const uint32_t n = valid_count(t);
    print_message("%-30s H-PLOC r %-2d t %-2d leaf %-2d n=%-7u valid %-7u (GPU %u) GPU %.3f ms (codes %.3f sort "
                  "%.3f cluster %.3f fallback %.3f output %.3f), %u launches; clustered depth GPU %u CPU %u, "
                  "fallback GPU %d CPU %d\n",
                  what, p->radius, p->threshold, p->max_leaf, t->count, n, st.valid, st.ms, st.morton_ms,
                  st.sort_ms, st.cluster_ms, st.fallback_ms, st.output_ms, st.launches, st.cluster_depth,
                  info.cluster_depth, st.fallback, info.fallback);
    RtAabb db = expect_device_bvh(&dev, t);
    assert_int_equal(st.triangles, t->count);
    assert_int_equal(st.valid, n);
    assert_int_equal(st.cluster_depth, info.cluster_depth);
    assert_int_equal(st.fallback, info.fallback);
    assert_int_equal(rt_hploc_gpu_download(g_fx.hploc, &dev, &h, &err), RT_OK);
    assert_null(h.d_bounds);
    expect_leaf_rows(&dev, &h, t, dw, what);
    relayout_depth_first(&h, n);
    expect_same_tree(&h, &cpu, db, t, n, p->c_trav, p->c_isect, what);
    rt_bvh_free(&cpu);
    rt_bvh_free(&h);
    return dev;
}

/* t's vertices and Woop rows on the device (rt_gpu_free both). */
static void upload(const RtTriArrays *t, RtFloat4 **dv, RtFloat4 **dw)
{
    RtError err = {0};
    const size_t bytes = 3 * (size_t)t->count * sizeof(RtFloat4);
    *dv = *dw = NULL;
    assert_int_equal(rt_gpu_malloc((void **)dv, bytes ? bytes : 16, &err), RT_OK);
    assert_int_equal(rt_gpu_malloc((void **)dw, bytes ? bytes : 16, &err), RT_OK);
    assert_int_equal(rt_gpu_memcpy(*dv, t->verts, bytes, RT_COPY_TO_DEVICE, &err), RT_OK);
    assert_int_equal(rt_gpu_memcpy(*dw, t->woop, bytes, RT_COPY_TO_DEVICE, &err), RT_OK);
}

/* Uploads t and compares with max_leaf 8 (the default), 1 and 16. */
static void check_scene(const RtTriArrays *t, const char *what)
{
    RtFloat4 *dv, *dw;
    upload(t, &dv, &dw);
    static const int leaf[3] = {0, 1, 16};
    for (int k = 0; k < 3; k++) {
        RtLbvhParams p = rt_lbvh_params_default();
        RtHplocParams hp = rt_hploc_params_default();
        if (leaf[k]) p.max_leaf = hp.max_leaf = leaf[k];
        gpu_equals_cpu(&p, t, dv, dw, what);
        hploc_gpu_equals_cpu(&hp, t, dv, dw, what);
    }
    /* H-PLOC's other parameters: the smallest radius and threshold */
    RtHplocParams hp = rt_hploc_params_default();
    hp.radius = 1;
    hploc_gpu_equals_cpu(&hp, t, dv, dw, what);
    hp = rt_hploc_params_default();
    hp.threshold = 3;
    hploc_gpu_equals_cpu(&hp, t, dv, dw, what);
    rt_gpu_free(dv);
    rt_gpu_free(dw);
}

/* ---- tests ----------------------------------------------------------------- */

static void gpu_bvh_soups_of_every_size_match_cpu(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    static const uint32_t sizes[] = {0, 1, 2, 3, 1000, 100000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        RtTriArrays t = make_scene(SC_SOUP, sizes[i], 10 + i);
        char name[64];
        snprintf(name, sizeof name, "soup %u", sizes[i]);
        check_scene(&t, name);
        free_scene(&t);
    }
    /* a random size */
    RtTestRng r = {777};
    uint32_t n = 4 + rt_test_rand(&r) % 5000;
    RtTriArrays t = make_scene(SC_SOUP, n, 20);
    check_scene(&t, "soup of a random size");
    free_scene(&t);
}

static void gpu_bvh_degenerate_identical_and_nan_match_cpu(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    static const struct { SceneKind k; uint32_t n; const char *name; } sc[] = {
        {SC_DEGENERATE, 1, "one degenerate"},
        {SC_DEGENERATE, 1000, "all degenerate"},
        {SC_IDENTICAL, 3000, "3000 nearly all identical"},
        {SC_IDENTICAL, 2, "two identical"},
        {SC_NAN, 5000, "NaN vertices mixed in"},
    };
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
        RtTriArrays t = make_scene(sc[i].k, sc[i].n, 30 + i);
        check_scene(&t, sc[i].name);
        free_scene(&t);
    }
}

static void gpu_bvh_default_scene_matches_cpu(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtError err = {0};
    RtScene s;
    memset(&s, 0, sizeof s);
    assert_int_equal(rt_scene_make_default(&s, &err), RT_OK);
    RtTriArrays t;
    assert_int_equal(rt_tri_arrays_make(&s, &t, NULL), RT_OK);
    check_scene(&t, "default scene");
    /* the pipeline's own device arrays (Woop rows made on the device) */
    RtGpuScene *gs = NULL;
    assert_int_equal(rt_gpu_scene_create(&s, &gs, &err), RT_OK);
    RtTriArrays dt = rt_gpu_scene_tris(gs);
    assert_int_equal(dt.count, t.count);
    RtLbvhParams p = rt_lbvh_params_default();
    gpu_equals_cpu(&p, &t, dt.verts, dt.woop, "default scene, GPU scene arrays");
    RtHplocParams hp = rt_hploc_params_default();
    hploc_gpu_equals_cpu(&hp, &t, dt.verts, dt.woop, "default scene, GPU scene arrays");
    rt_gpu_scene_destroy(gs);
    rt_tri_arrays_free(&t);
    rt_scene_free(&s);
}

static void gpu_bvh_cornell_matches_cpu(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    char path[1024];
    const char *me = __FILE__, *tail = strstr(me, "tests/test_gpu_bvh.c");
    snprintf(path, sizeof path, "%.*sscenes/cornell.scene", tail ? (int)(tail - me) : 0, me);
    RtError err = {0};
    RtScene s;
    memset(&s, 0, sizeof s);
    if (rt_scene_load(path, &s, &err) != RT_OK) {
        print_message("skip: %s\n", err.msg);
        skip();
    }
    RtTriArrays t;
    assert_int_equal(rt_tri_arrays_make(&s, &t, NULL), RT_OK);
    check_scene(&t, "cornell");
    rt_tri_arrays_free(&t);
    rt_scene_free(&s);
}

/* Crytek Sponza (../shared/assets; skipped when absent): a real scene's
 * flat, axis-aligned walls and floors, many triangles sharing a code. */
static void gpu_bvh_sponza_matches_cpu(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    char buf[1024];
    if (!rt_test_asset("sponza/sponza.obj", buf)) skip();
    RtError err = {0};
    RtScene s;
    memset(&s, 0, sizeof s);
    assert_int_equal(rt_scene_load(buf, &s, &err), RT_OK);
    RtTriArrays t;
    assert_int_equal(rt_tri_arrays_make(&s, &t, NULL), RT_OK);
    check_scene(&t, "sponza");
    rt_tri_arrays_free(&t);
    rt_scene_free(&s);
}

/* One builder, sizes up and down: a smaller build keeps the arrays (no
 * reallocation), a larger one grows them, every tree still the oracle's. */
static void gpu_bvh_rebuilds_reuse_and_grow_buffers(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtLbvhGpu *own = NULL, *shared = g_fx.lbvh;
    RtError err = {0};
    assert_int_equal(rt_lbvh_gpu_create(&own, &err), RT_OK);
    g_fx.lbvh = own; /* a fresh builder: its first build allocates */
    RtTriArrays a = make_scene(SC_SOUP, 2000, 40), b = make_scene(SC_SOUP, 20000, 41);
    RtLbvhParams p = rt_lbvh_params_default();
    const RtTriArrays *seq[4] = {&a, &b, &a, &b};
    RtBvh dev[4];
    for (int k = 0; k < 4; k++) {
        const RtTriArrays *t = seq[k];
        RtFloat4 *dv, *dw;
        upload(t, &dv, &dw);
        char name[64];
        snprintf(name, sizeof name, "rebuild %d: %u triangles", k, t->count);
        dev[k] = gpu_equals_cpu(&p, t, dv, dw, name);
        rt_gpu_free(dv);
        rt_gpu_free(dw);
    }
    assert_true(dev[1].index_cap >= b.count && dev[1].node_cap >= b.count - 1);
    /* shrinking keeps the grown arrays; the same size again reuses them */
    assert_ptr_equal(dev[2].nodes, dev[1].nodes);
    assert_ptr_equal(dev[2].tri_index, dev[1].tri_index);
    assert_ptr_equal(dev[3].nodes, dev[1].nodes);
    assert_int_equal(dev[2].index_cap, dev[1].index_cap);
    rt_lbvh_gpu_destroy(own);
    g_fx.lbvh = shared;
    free_scene(&a);
    free_scene(&b);
}

/* The frame's builds (no statistics asked: each builder's launches replayed
 * as one graph while sizes, arrays and parameters stay): a first build
 * captures, the next ones over new vertices in the same arrays replay, a
 * change of parameters or size captures anew; every tree equals the
 * oracle's, for both builders. */
static void gpu_bvh_frame_builds_replay_right(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtTriArrays a[3] = {make_scene(SC_SOUP, 20000, 70), make_scene(SC_SOUP, 20000, 71),
                        make_scene(SC_NAN, 20000, 72)};
    RtTriArrays small = make_scene(SC_SOUP, 3000, 73);
    RtFloat4 *dv, *dw, *sv, *sw;
    upload(&a[0], &dv, &dw);
    upload(&small, &sv, &sw);
    const size_t bytes = 3 * (size_t)a[0].count * sizeof(RtFloat4);
    RtError err = {0};
    g_fx.untimed = 1;
    for (int round = 0; round < 2; round++) {
        RtLbvhParams p = rt_lbvh_params_default();
        RtHplocParams hp = rt_hploc_params_default();
        if (round) p.max_leaf = hp.max_leaf = 1, hp.radius = 2;
        for (int k = 0; k < 3; k++) {
            char name[64];
            snprintf(name, sizeof name, "frame build %d.%d", round, k);
            assert_int_equal(rt_gpu_memcpy(dv, a[k].verts, bytes, RT_COPY_TO_DEVICE, &err), RT_OK);
            assert_int_equal(rt_gpu_memcpy(dw, a[k].woop, bytes, RT_COPY_TO_DEVICE, &err), RT_OK);
            gpu_equals_cpu(&p, &a[k], dv, dw, name);
            hploc_gpu_equals_cpu(&hp, &a[k], dv, dw, name);
        }
        gpu_equals_cpu(&p, &small, sv, sw, "frame build, fewer triangles");
        hploc_gpu_equals_cpu(&hp, &small, sv, NULL, "frame build, fewer triangles, no Woop rows");
    }
    g_fx.untimed = 0;
    rt_gpu_free(dv);
    rt_gpu_free(dw);
    rt_gpu_free(sv);
    rt_gpu_free(sw);
    for (int k = 0; k < 3; k++) free_scene(&a[k]);
    free_scene(&small);
}

/* hploc.h's depth fallback on the GPU: equal triangles at x = 0.9^i
 * cluster into a chain deeper than the stacks (test_bvh_cpu.c's case); the
 * GPU decides the fallback on the device as the CPU does, and outputs the
 * same radix tree. */
static void gpu_hploc_chain_falls_back_as_the_cpu(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtTriArrays t = make_scene(SC_SOUP, 600, 50);
    for (uint32_t i = 0; i < t.count; i++) {
        const float x = powf(0.9f, (float)i), w = 0.001f;
        set_tri(&t, i, v3(x, 0, 0), v3(x + w, 0, 0), v3(x, w, w));
    }
    check_scene(&t, "chain of 600 (fallback)");
    free_scene(&t);
}

/* One H-PLOC builder, sizes up and down: the arrays are reused or grown,
 * every tree still the oracle's. */
static void gpu_hploc_rebuilds_reuse_and_grow_buffers(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtHplocGpu *own = NULL, *shared = g_fx.hploc;
    RtError err = {0};
    assert_int_equal(rt_hploc_gpu_create(&own, &err), RT_OK);
    g_fx.hploc = own;
    RtTriArrays a = make_scene(SC_SOUP, 2000, 60), b = make_scene(SC_SOUP, 20000, 61);
    RtHplocParams p = rt_hploc_params_default();
    const RtTriArrays *seq[4] = {&a, &b, &a, &b};
    RtBvh dev[4];
    for (int k = 0; k < 4; k++) {
        const RtTriArrays *t = seq[k];
        RtFloat4 *dv, *dw;
        upload(t, &dv, &dw);
        char name[64];
        snprintf(name, sizeof name, "H-PLOC rebuild %d: %u triangles", k, t->count);
        dev[k] = hploc_gpu_equals_cpu(&p, t, dv, dw, name);
        rt_gpu_free(dv);
        rt_gpu_free(dw);
    }
    assert_ptr_equal(dev[2].nodes, dev[1].nodes);
    assert_ptr_equal(dev[3].tri_index, dev[1].tri_index);
    rt_hploc_gpu_destroy(own);
    g_fx.hploc = shared;
    free_scene(&a);
    free_scene(&b);
}

static void gpu_bvh_rejects_bad_params(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtError err = {0};
    RtBvh dev;
    RtLbvhParams p = rt_lbvh_params_default();
    p.max_leaf = 0;
    assert_int_equal(rt_lbvh_gpu_build(g_fx.lbvh, &p, NULL, NULL, 0, &dev, NULL, &err), RT_ERR_ARG);
    p.max_leaf = RT_BVH_MAX_LEAF + 1;
    assert_int_equal(rt_lbvh_gpu_build(g_fx.lbvh, &p, NULL, NULL, 0, &dev, NULL, &err), RT_ERR_ARG);
    p = rt_lbvh_params_default();
    assert_int_equal(rt_lbvh_gpu_build(g_fx.lbvh, &p, NULL, NULL, 5, &dev, NULL, &err), RT_ERR_ARG);
    /* NULL params: the defaults */
    assert_int_equal(rt_lbvh_gpu_build(g_fx.lbvh, NULL, NULL, NULL, 0, &dev, NULL, &err), RT_OK);
    RtHplocParams hp = rt_hploc_params_default();
    hp.radius = 0;
    assert_int_equal(rt_hploc_gpu_build(g_fx.hploc, &hp, NULL, NULL, 0, &dev, NULL, &err), RT_ERR_ARG);
    hp = rt_hploc_params_default();
    hp.threshold = RT_HPLOC_MAX_THRESHOLD + 1;
    assert_int_equal(rt_hploc_gpu_build(g_fx.hploc, &hp, NULL, NULL, 0, &dev, NULL, &err), RT_ERR_ARG);
    assert_int_equal(rt_hploc_gpu_build(g_fx.hploc, NULL, NULL, NULL, 5, &dev, NULL, &err), RT_ERR_ARG);
    /* more triangles than the tree's links hold: refused before any use of
     * the vertices (a stand-in pointer) */
    const RtFloat4 stand_in = {0};
    assert_int_equal(rt_hploc_gpu_build(g_fx.hploc, NULL, &stand_in, NULL, RT_BVH_MAX_INDEX + 1u, &dev, NULL, &err),
                     RT_ERR_ARG);
    assert_non_null(strstr(err.msg, "more than a tree holds"));
    assert_int_equal(rt_hploc_gpu_build(g_fx.hploc, NULL, NULL, NULL, 0, &dev, NULL, &err), RT_OK);
}


/* ---- H-PLOC under a spatial-split top (split_top.h) ------------------------------ */

/* The GPU tree g's subtree at node gi and the oracle c's at ci: the same
 * child boxes (bits), kinds, leaf contents in order, and below. */
static void expect_same_subtree(const RtBvh *g, uint32_t gi, const RtBvh *c, uint32_t ci, int depth, const char *what)
{
    if (depth > RT_BVH_MAX_DEPTH + 1 || gi >= g->node_count || ci >= c->node_count) {
        print_message("%s: depth %d: GPU node %u of %u, CPU node %u of %u\n", what, depth, gi, g->node_count, ci,
                      c->node_count);
        fail();
    }
    const RtBvhNode *gn = &g->nodes[gi], *cn = &c->nodes[ci];
    for (int k = 0; k < 2; k++) {
        const RtAabb gb = bvh_child_box(gn, k), cb = bvh_child_box(cn, k);
        const int gl = bvh_child_is_leaf(gn, k), cl = bvh_child_is_leaf(cn, k);
        if (memcmp(&gb, &cb, sizeof gb) || gl != cl || (gl && bvh_child_count(gn, k) != bvh_child_count(cn, k))) {
            print_message("%s: depth %d, child %d differs (GPU node %u, CPU node %u)\n", what, depth, k, gi, ci);
            print_node("GPU", gn);
            print_node("CPU", cn);
            fail();
        }
        if (!gl) {
            expect_same_subtree(g, gn->child[k], c, cn->child[k], depth + 1, what);
            continue;
        }
        for (uint32_t i = 0; i < bvh_child_count(cn, k); i++)
            if (g->tri_index[gn->child[k] + i] != c->tri_index[cn->child[k] + i]) {
                print_message("%s: depth %d, a leaf's entry %u: triangle %u on the GPU, %u on the CPU\n", what, depth,
                              i, g->tri_index[gn->child[k] + i], c->tri_index[cn->child[k] + i]);
                fail();
            }
    }
}

/* The GPU H-PLOC under a top (sp) of t against rt_bvh_split_top_build_cpu:
 * the top's leaves, references, depth and fallback, then the trees node
 * by node from the root (the GPU places nodes and leaves elsewhere), valid
 * and with leaf rows that follow tri_index. Returns the top's leaves. */
static uint32_t split_top_gpu_equals_cpu(const RtSplitTopParams *sp, const RtTriArrays *t, const char *what)
{
    RtError err = {0};
    RtFloat4 *dv, *dw;
    upload(t, &dv, &dw);
    RtHplocParams hp = rt_hploc_params_default();
    RtBvh cpu, dev, h;
    memset(&cpu, 0, sizeof cpu);
    RtSplitTopInfo info;
    RtStatus s = rt_bvh_split_top_build_cpu(&hp, sp, t, &cpu, NULL, &info, &err);
    if (s != RT_OK) print_message("%s: CPU build failed: %s\n", what, err.msg);
    assert_int_equal(s, RT_OK);
    assert_int_equal(rt_hploc_gpu_set_top(g_fx.hploc, sp, &err), RT_OK);
    RtHplocGpuStats st;
    for (int round = 0; round < 2; round++) { /* timed, then the graph's replay */
        s = rt_hploc_gpu_build(g_fx.hploc, &hp, dv, dw, t->count, &dev, round ? NULL : &st, &err);
        if (s == RT_OK && round) s = rt_hploc_gpu_build_finish(g_fx.hploc, &st, &err);
        if (s != RT_OK) print_message("%s: GPU build failed: %s\n", what, err.msg);
        assert_int_equal(s, RT_OK);
        const uint32_t n = valid_count(t);
        print_message("%-34s split top depth %d: leaves GPU %u CPU %u, references GPU %u CPU %u (%u valid), depth GPU "
                      "%u CPU %u, fallback GPU %d CPU %d; %.3f ms (top %.3f, sort %.3f, cluster %.3f), %u launches\n",
                      what, sp->depth, st.top_leaves, info.leaves, st.top_refs, info.refs, n, st.cluster_depth,
                      info.cluster_depth, st.fallback, info.fallback, st.ms, st.top_ms, st.sort_ms, st.cluster_ms,
                      st.launches);
        if (!round) {
            static const char *const names[] = {"bvh_boxes",      "top_bin",          "top_count",       "top_write",
                                                "top_morton",     "bvh_sort",         "hploc_cluster",   "hploc_fallback",
                                                "hploc_top_link", "hploc_leaf_alloc", "hploc_leaf_place"};
            char line[512];
            int at = 0;
            for (size_t i = 0; i < sizeof names / sizeof *names; i++)
                at += snprintf(line + at, sizeof line - (size_t)at, " %s %.3f", names[i],
                               rt_hploc_gpu_kernel_ms(g_fx.hploc, names[i]));
            print_message("%-34s kernels (timed, ms):%s\n", what, line);
        }
        assert_int_equal(st.valid, n);
        assert_int_equal(st.top_leaves, info.leaves);
        assert_int_equal(st.top_refs, info.refs);
        assert_int_equal(st.cluster_depth, info.cluster_depth);
        assert_int_equal(st.fallback, info.fallback);
        assert_int_equal(dev.split_refs, 1);
        assert_int_equal(rt_hploc_gpu_download(g_fx.hploc, &dev, &h, &err), RT_OK);
        RtAabb db;
        assert_int_equal(rt_gpu_memcpy(&db, dev.d_bounds, sizeof db, RT_COPY_TO_HOST, &err), RT_OK);
        if (n >= 2) {
            expect_same_subtree(&h, 0, &cpu, 0, 1, what);
            assert_memory_equal(&db, &cpu.bounds, sizeof db);
        }
        s = rt_bvh_validate(&h, t, &err);
        if (s != RT_OK) print_message("%s: invalid tree: %s\n", what, err.msg);
        assert_int_equal(s, RT_OK);
        expect_leaf_rows(&dev, &h, t, dw, what);
        rt_bvh_free(&h);
    }
    RtSplitTopParams none = {0};
    assert_int_equal(rt_hploc_gpu_set_top(g_fx.hploc, &none, &err), RT_OK);
    rt_bvh_free(&cpu);
    rt_gpu_free(dv);
    rt_gpu_free(dw);
    return info.leaves;
}

/* Small triangles in a cube and large walls and floors across it: what
 * spatial splits are for (test_bvh_cpu.c's scene). */
static RtTriArrays walls_scene(uint32_t small, uint32_t chain, uint64_t seed)
{
    RtTriArrays t = make_scene(SC_SOUP, small + chain + 12, seed);
    RtTestRng r = {seed};
    for (uint32_t i = 0; i < small; i++) {
        const RtVec3 a = rnd3(&r, 1.0f);
        set_tri(&t, i, a, v3_add(a, rnd3(&r, 0.02f)), v3_add(a, rnd3(&r, 0.02f)));
    }
    for (uint32_t i = 0; i < chain; i++) { /* ever smaller, deeper than the stacks once clustered */
        const float x = 0.5f + 0.4f * powf(0.9f, (float)i), w = 0.001f;
        set_tri(&t, small + i, v3(x, 0.52f, 0.52f), v3(x + w, 0.52f, 0.52f), v3(x, 0.52f + w, 0.52f + w));
    }
    for (int k = 0; k < 6; k++) {
        const float h = 0.1f + 0.15f * (float)k;
        set_tri(&t, small + chain + 2 * k, v3(-0.1f, h, -0.1f), v3(1.1f, h, -0.1f), v3(1.1f, h + 0.05f, 1.1f));
        set_tri(&t, small + chain + 2 * k + 1, v3(h, -0.1f, -0.1f), v3(h + 0.02f, 1.1f, -0.1f), v3(h, 1.1f, 1.1f));
    }
    return t;
}

/* Walls across small triangles at every depth (the top splits), soups with
 * degenerate and NaN triangles, 0-3 triangles, all degenerate, the Cornell
 * box (nothing pays: H-PLOC's own tree) and Sponza when unpacked: the GPU
 * tree under the top is the oracle's. */
static void gpu_split_top_matches_cpu(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    RtTriArrays w = walls_scene(20000, 0, 11);
    for (int d = 1; d <= RT_SPLIT_TOP_MAX_DEPTH; d++) {
        RtSplitTopParams sp = rt_split_top_params_default();
        sp.depth = d;
        char name[64];
        snprintf(name, sizeof name, "walls, depth %d", d);
        assert_true(split_top_gpu_equals_cpu(&sp, &w, name) > 1);
    }
    RtSplitTopParams tight = rt_split_top_params_default(); /* the budget stops the splits */
    tight.extra = 0.0001f;
    split_top_gpu_equals_cpu(&tight, &w, "walls, 0.01 % budget");
    free_scene(&w);
    const RtSplitTopParams sp = rt_split_top_params_default();
    const SceneKind kinds[] = {SC_SOUP, SC_NAN, SC_DEGENERATE, SC_IDENTICAL};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        RtTriArrays t = make_scene(kinds[k], 30000, 7 + k);
        split_top_gpu_equals_cpu(&sp, &t, "soup");
        free_scene(&t);
    }
    for (uint32_t n = 0; n <= 3; n++) {
        RtTriArrays t = make_scene(SC_SOUP, n, 3);
        RtSplitTopParams small = sp;
        small.min_refs = 2;
        split_top_gpu_equals_cpu(&small, &t, "0-3 triangles");
        free_scene(&t);
    }
    RtError err = {0};
    RtScene sc;
    memset(&sc, 0, sizeof sc);
    char path[1024];
    assert_int_equal(rt_scene_load(rt_test_src_path("scenes/cornell.scene", path), &sc, &err), RT_OK);
    RtTriArrays c;
    assert_int_equal(rt_tri_arrays_make(&sc, &c, NULL), RT_OK);
    assert_int_equal(split_top_gpu_equals_cpu(&sp, &c, "cornell"), 1);
    rt_tri_arrays_free(&c);
    rt_scene_free(&sc);
    if (!rt_test_asset("sponza/sponza.obj", path)) {
        print_message("split top: sponza/sponza.obj absent, Sponza skipped\n");
        return;
    }
    assert_int_equal(rt_scene_load(path, &sc, &err), RT_OK);
    assert_int_equal(rt_tri_arrays_make(&sc, &c, NULL), RT_OK);
    assert_true(split_top_gpu_equals_cpu(&sp, &c, "sponza") > 1);
    rt_tri_arrays_free(&c);
    rt_scene_free(&sc);
}

/* Chains of ever smaller triangles beside the walls: some lengths pass the
 * walks' depth under the top, and then every leaf gets its radix tree on
 * the GPU as on the CPU (split_top.h, Depth). */
static void gpu_split_top_too_deep_falls_back_as_the_cpu(void **state)
{
    (void)state;
    if (!gpu_ready()) skip();
    const RtSplitTopParams sp = rt_split_top_params_default();
    for (uint32_t chain = 300; chain <= 700; chain += 400) {
        RtTriArrays t = walls_scene(2000, chain, 77);
        split_top_gpu_equals_cpu(&sp, &t, chain == 300 ? "walls and a chain of 300" : "walls and a chain of 700");
        free_scene(&t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_bvh_soups_of_every_size_match_cpu),
        cmocka_unit_test(gpu_bvh_degenerate_identical_and_nan_match_cpu),
        cmocka_unit_test(gpu_bvh_default_scene_matches_cpu),
        cmocka_unit_test(gpu_bvh_cornell_matches_cpu),
        cmocka_unit_test(gpu_bvh_sponza_matches_cpu),
        cmocka_unit_test(gpu_bvh_rebuilds_reuse_and_grow_buffers),
        cmocka_unit_test(gpu_bvh_frame_builds_replay_right),
        cmocka_unit_test(gpu_hploc_chain_falls_back_as_the_cpu),
        cmocka_unit_test(gpu_hploc_rebuilds_reuse_and_grow_buffers),
        cmocka_unit_test(gpu_bvh_rejects_bad_params),
        cmocka_unit_test(gpu_split_top_matches_cpu),
        cmocka_unit_test(gpu_split_top_too_deep_falls_back_as_the_cpu),
    };
    int rc = cmocka_run_group_tests_name("gpu_bvh", tests, NULL, NULL);
    if (g_fx.hploc) rt_hploc_gpu_destroy(g_fx.hploc);
    if (g_fx.lbvh) rt_lbvh_gpu_destroy(g_fx.lbvh);
    if (g_fx.gpu) rt_gpu_destroy(g_fx.gpu);
    return rc;
}
