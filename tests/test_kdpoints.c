/* test_kdpoints.c — the balanced point k-d tree's CPU oracle
 * (photon/kdtree_points.h, Brown 2015 as seed 004 builds it): every tree
 * passes rt_kdp_validate (sizes 0, 1, 2, 3 and random; k = 1..4; clustered,
 * grid, duplicated, all-equal points; NaN and infinite points rejected),
 * kNN and radius queries equal the brute force exactly (same indices, same
 * order, ties by index) for random queries, queries on points and far
 * outside, the tree is the same on any thread count, and the validator
 * names a broken tree. A timing line for 1M 3-D points (not asserted). */
#include "test_util.h"

#include "photon/kdtree_points.h"

#include <math.h>

enum { RANDOM, CLUSTERED, GRID, DUPLICATED };

/* n points of dimension dim, of the given kind, malloc'd. */
static float *make_points(RtTestRng *r, uint32_t n, uint32_t dim, int kind)
{
    float *p = malloc(((size_t)n * dim + 1) * sizeof *p);
    assert_non_null(p);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t c = 0; c < dim; c++) {
            float *x = &p[(size_t)i * dim + c];
            if (kind == RANDOM) *x = rt_test_randf(r) * 2.0f - 1.0f;
            else if (kind == CLUSTERED) *x = (float)(i % 3) + rt_test_randf(r) * 0.01f;
            else if (kind == GRID) *x = (float)(rt_test_rand(r) % 4); /* many equal coordinates */
            else *x = i >= 2 && rt_test_rand(r) % 2 ? p[(size_t)(rt_test_rand(r) % i) * dim + c] : rt_test_randf(r);
        }
    if (kind == DUPLICATED) /* whole tuples repeated */
        for (uint32_t i = 1; i < n; i += 3)
            memcpy(&p[(size_t)i * dim], &p[(size_t)(rt_test_rand(r) % i) * dim], dim * sizeof *p);
    return p;
}

static RtKdpStats build(const float *p, uint32_t n, uint32_t dim, RtKdpTree *t)
{
    RtKdpStats st;
    RtError err = {0};
    if (rt_kdp_build_cpu(p, n, dim, t, &st, &err) != RT_OK) fail_msg("build: %s", err.msg);
    if (rt_kdp_validate(t, p, n, &err) != RT_OK) fail_msg("validate (n %u, k %u): %s", n, dim, err.msg);
    return st;
}

/* The unique finite points by brute force: how many. */
static uint32_t brute_unique(const float *p, uint32_t n, uint32_t dim)
{
    uint32_t u = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!kdp_finite(p + (size_t)i * dim, dim)) continue;
        uint32_t j = 0;
        for (; j < i; j++)
            if (kdp_finite(p + (size_t)j * dim, dim) &&
                kdp_super_cmp(p + (size_t)i * dim, p + (size_t)j * dim, 0, dim) == 0)
                break;
        u += j == i;
    }
    return u;
}

static int hit_cmp(const void *a, const void *b)
{
    RtKdpHit x = *(const RtKdpHit *)a, y = *(const RtKdpHit *)b;
    return kdp_hit_less(x, y) ? -1 : kdp_hit_less(y, x) ? 1 : 0;
}

/* Every tree point's hit, sorted by (d2, point): the brute force. */
static uint32_t brute_sorted(const RtKdpTree *t, const float *q, RtKdpHit *all)
{
    for (uint32_t i = 0; i < t->count; i++)
        all[i] = (RtKdpHit){kdp_dist2(q, t->coords + (size_t)i * t->dim, t->dim), t->nodes[i].point};
    qsort(all, t->count, sizeof *all, hit_cmp);
    return t->count;
}

static void expect_hits(const RtKdpHit *got, uint32_t ngot, const RtKdpHit *want, uint32_t nwant, const char *what)
{
    if (ngot != nwant) fail_msg("%s: %u hits, brute force %u", what, ngot, nwant);
    for (uint32_t i = 0; i < ngot; i++)
        if (got[i].point != want[i].point || got[i].d2 != want[i].d2)
            fail_msg("%s: hit %u is point %u (d2 %g); brute force point %u (d2 %g)", what, i, got[i].point,
                     (double)got[i].d2, want[i].point, (double)want[i].d2);
}

/* kNN (several k) and radius queries at random places, on points and far
 * away equal the brute force. */
static void check_queries(RtTestRng *r, const RtKdpTree *t, const float *p, uint32_t n, int queries)
{
    RtKdpHit *all = malloc(((size_t)t->count + 1) * sizeof *all), knn[RT_KDP_MAX_KNN];
    assert_non_null(all);
    static const uint32_t ks[] = {1, 2, 5, 16, 64};
    for (int qi = 0; qi < queries; qi++) {
        float q[RT_KDP_MAX_DIM];
        int where = qi % 4;
        for (uint32_t c = 0; c < t->dim; c++) {
            if (where == 0 || n == 0) q[c] = rt_test_randf(r) * 3.0f - 1.5f;
            else if (where == 1) q[c] = p[(size_t)(rt_test_rand(r) % n) * t->dim + c]; /* mixes coordinates */
            else if (where == 2) q[c] = (rt_test_rand(r) % 2 ? 1e6f : -1e6f) * rt_test_randf(r);
            else q[c] = 0.0f;
        }
        if (where == 3 && n > 0) memcpy(q, p + (size_t)(rt_test_rand(r) % n) * t->dim, t->dim * sizeof *q);
        if (!kdp_finite(q, t->dim)) continue; /* a rejected point */
        uint32_t m = brute_sorted(t, q, all);
        uint32_t kn = ks[qi % 5];
        expect_hits(knn, rt_kdp_knn(t, q, kn, knn), all, m < kn ? m : kn, "knn");
        /* radius: the d2 of some brute-force rank, so the boundary is hit exactly */
        float r2 = m ? all[rt_test_rand(r) % m].d2 : 1.0f;
        if (qi % 7 == 0) r2 = rt_test_randf(r) * 0.1f;
        uint32_t want = 0;
        while (want < m && all[want].d2 <= r2) want++;
        RtKdpHit *hits;
        uint32_t nh;
        RtError err = {0};
        assert_int_equal(rt_kdp_radius(t, q, r2, &hits, &nh, &err), RT_OK);
        expect_hits(hits, nh, all, want, "radius");
        free(hits);
    }
    free(all);
}

static void check_set(uint32_t n, uint32_t dim, int kind, uint64_t seed, int queries)
{
    RtTestRng r = {seed};
    float *p = make_points(&r, n, dim, kind);
    RtKdpTree t;
    RtKdpStats st = build(p, n, dim, &t);
    uint32_t u = brute_unique(p, n, dim);
    assert_int_equal(t.count, u);
    assert_int_equal(st.duplicates, n - st.rejected - u);
    check_queries(&r, &t, p, n, queries);
    rt_kdp_free(&t);
    free(p);
}

/* ---- tests -------------------------------------------------------------------- */

static void kdp_zero_and_one_point(void **state)
{
    (void)state;
    float one[3] = {1, 2, 3};
    RtKdpTree t;
    build(NULL, 0, 3, &t);
    assert_int_equal(t.count, 0);
    assert_int_equal(t.root, RT_KDP_NONE);
    assert_int_equal(t.depth, 0);
    RtKdpHit h[4];
    assert_int_equal(rt_kdp_knn(&t, one, 4, h), 0);
    rt_kdp_free(&t);
    build(one, 1, 3, &t);
    assert_int_equal(t.count, 1);
    assert_int_equal(t.depth, 1);
    assert_true(kdp_is_leaf(t.nodes[t.root]));
    assert_int_equal(rt_kdp_knn(&t, one, 4, h), 1);
    assert_int_equal(h[0].point, 0);
    assert_true(h[0].d2 == 0.0f);
    rt_kdp_free(&t);
}

static void kdp_two_and_three_points_every_k(void **state)
{
    (void)state;
    for (uint32_t dim = 1; dim <= 4; dim++)
        for (uint32_t n = 2; n <= 3; n++)
            for (uint64_t s = 1; s <= 20; s++) check_set(n, dim, s % 2 ? RANDOM : GRID, s * 77 + n, 8);
}

static void kdp_random_sets_k1_to_4_match_brute_force(void **state)
{
    (void)state;
    static const uint32_t sizes[] = {4, 7, 31, 32, 33, 100, 1000, 5000};
    for (uint32_t dim = 1; dim <= 4; dim++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) check_set(sizes[s], dim, RANDOM, 1000 * dim + s, 40);
}

static void kdp_clustered_and_grid_points_need_super_keys(void **state)
{
    (void)state;
    for (uint32_t dim = 1; dim <= 4; dim++) {
        check_set(2000, dim, CLUSTERED, 31 + dim, 40);
        check_set(3000, dim, GRID, 57 + dim, 40); /* 4^k cells: mostly duplicates */
    }
}

static void kdp_duplicates_removed_lowest_index_kept(void **state)
{
    (void)state;
    for (uint32_t dim = 1; dim <= 4; dim++) check_set(2500, dim, DUPLICATED, 91 + dim, 40);
    /* all points identical: one point, index 0 */
    float *p = malloc(1000 * 3 * sizeof *p);
    for (int i = 0; i < 3000; i++) p[i] = i % 3 == 1 ? -0.0f : 0.5f; /* -0 equals +0 */
    p[4] = 0.0f;
    RtKdpTree t;
    RtKdpStats st = build(p, 1000, 3, &t);
    assert_int_equal(t.count, 1);
    assert_int_equal(st.duplicates, 999);
    assert_int_equal(t.nodes[t.root].point, 0);
    rt_kdp_free(&t);
    free(p);
}

static void kdp_nan_and_inf_points_rejected(void **state)
{
    (void)state;
    RtTestRng r = {5};
    float *p = make_points(&r, 500, 3, RANDOM);
    for (uint32_t i = 0; i < 500; i += 7) p[i * 3 + i % 3] = i % 2 ? NAN : (i % 3 ? INFINITY : -INFINITY);
    RtKdpTree t;
    RtKdpStats st = build(p, 500, 3, &t);
    assert_int_equal(st.rejected, 72);
    assert_int_equal(t.count, 500 - 72);
    for (uint32_t i = 0; i < t.count; i++) assert_true(kdp_finite(t.coords + i * 3, 3));
    check_queries(&r, &t, p, 500, 40);
    float nanq[3] = {NAN, 0, 0};
    RtKdpHit h[8];
    assert_int_equal(rt_kdp_knn(&t, nanq, 8, h), 0);
    rt_kdp_free(&t);
    /* only NaN: an empty tree */
    for (int i = 0; i < 1500; i++) p[i] = NAN;
    st = build(p, 500, 3, &t);
    assert_int_equal(st.rejected, 500);
    assert_int_equal(t.count, 0);
    rt_kdp_free(&t);
    free(p);
}

static void kdp_bad_dimension_is_refused(void **state)
{
    (void)state;
    float p[9] = {0};
    RtKdpTree t;
    RtError err = {0};
    assert_int_equal(rt_kdp_build_cpu(p, 1, 0, &t, NULL, &err), RT_ERR_ARG);
    rt_test_assert_contains(err.msg, "expected 1..8");
    assert_int_equal(rt_kdp_build_cpu(p, 1, 9, &t, NULL, &err), RT_ERR_ARG);
    assert_int_equal(rt_kdp_build_cpu(p, 1, 8, &t, NULL, &err), RT_OK);
    assert_int_equal(rt_kdp_validate(&t, p, 1, &err), RT_OK);
    rt_kdp_free(&t);
}

static void kdp_k8_and_balanced_depth(void **state)
{
    (void)state;
    check_set(777, 8, RANDOM, 3, 20);
    for (uint32_t n = 0; n <= 70; n++) {
        RtTestRng r = {n + 1};
        float *p = make_points(&r, n, 3, RANDOM);
        RtKdpTree t;
        build(p, n, 3, &t);
        assert_int_equal(t.depth, (uint32_t)ceil(log2((double)n + 1.0)));
        rt_kdp_free(&t);
        free(p);
    }
}

static void kdp_same_tree_on_any_thread_count(void **state)
{
    (void)state;
    RtTestRng r = {11};
    const uint32_t n = 200000;
    float *p = make_points(&r, n, 3, GRID);
    for (uint32_t i = 0; i < n * 3; i++) p[i] += rt_test_randf(&r) * (i % 5 ? 0.0f : 1.0f);
    RtKdpTree a, b;
    setenv("RT_THREADS", "1", 1);
    build(p, n, 3, &a);
    setenv("RT_THREADS", "4", 1);
    build(p, n, 3, &b);
    unsetenv("RT_THREADS");
    assert_int_equal(a.count, b.count);
    assert_memory_equal(a.nodes, b.nodes, (size_t)a.count * sizeof *a.nodes);
    check_queries(&r, &a, p, n, 20);
    rt_kdp_free(&a);
    rt_kdp_free(&b);
    free(p);
}

static void kdp_validate_names_broken_trees(void **state)
{
    (void)state;
    RtTestRng r = {21};
    float *p = make_points(&r, 100, 3, RANDOM);
    RtKdpTree t;
    build(p, 100, 3, &t);
    RtError err = {0};
    uint32_t root = t.root, l = t.nodes[root].child[0], rr = t.nodes[root].child[1];
    /* swap the root's children's points: both now on the wrong side */
    RtKdpNode save_l = t.nodes[l], save_r = t.nodes[rr];
    float cl[3], cr[3];
    memcpy(cl, t.coords + l * 3, sizeof cl);
    memcpy(cr, t.coords + rr * 3, sizeof cr);
    t.nodes[l].point = save_r.point;
    t.nodes[rr].point = save_l.point;
    memcpy(t.coords + l * 3, cr, sizeof cr);
    memcpy(t.coords + rr * 3, cl, sizeof cl);
    assert_int_equal(rt_kdp_validate(&t, p, 100, &err), RT_ERR_PARSE);
    rt_test_assert_contains(err.msg, "is in the left subtree of node");
    t.nodes[l] = save_l;
    t.nodes[rr] = save_r;
    memcpy(t.coords + l * 3, cl, sizeof cl);
    memcpy(t.coords + rr * 3, cr, sizeof cr);
    assert_int_equal(rt_kdp_validate(&t, p, 100, &err), RT_OK);
    /* a coordinate changed */
    t.coords[l * 3] += 1.0f;
    assert_int_equal(rt_kdp_validate(&t, p, 100, &err), RT_ERR_PARSE);
    rt_test_assert_contains(err.msg, "holds");
    t.coords[l * 3] -= 1.0f;
    /* a point missing: a subtree cut off */
    t.nodes[l].child[0] = RT_KDP_NONE;
    assert_int_equal(rt_kdp_validate(&t, p, 100, &err), RT_ERR_PARSE);
    rt_test_assert_contains(err.msg, "needs one");
    t.nodes[l] = save_l;
    /* a cycle */
    t.nodes[l].child[0] = root;
    assert_int_equal(rt_kdp_validate(&t, p, 100, &err), RT_ERR_PARSE);
    t.nodes[l] = save_l;
    /* a point the tree does not know about */
    RtKdpTree less;
    build(p, 99, 3, &less);
    assert_int_equal(rt_kdp_validate(&less, p, 100, &err), RT_ERR_PARSE);
    rt_test_assert_contains(err.msg, "point 99 (");
    rt_test_assert_contains(err.msg, "missing from the tree");
    rt_kdp_free(&less);
    /* the wrong depth */
    t.depth++;
    assert_int_equal(rt_kdp_validate(&t, p, 100, &err), RT_ERR_PARSE);
    rt_test_assert_contains(err.msg, "ceil(log2");
    rt_kdp_free(&t);
    free(p);
}

/* Not an assertion: the oracle's time for 1M photons (seed 004's CPU
 * figure: 16.7M 4-D tuples in 11.9 s on 8 threads). */
static void kdp_timing_1m_3d_points(void **state)
{
    (void)state;
    RtTestRng r = {2024};
    const uint32_t n = 1u << 20;
    float *p = make_points(&r, n, 3, RANDOM);
    RtKdpTree t;
    RtKdpStats st;
    RtError err = {0};
    double t0 = rt_now_ms();
    assert_int_equal(rt_kdp_build_cpu(p, n, 3, &t, &st, &err), RT_OK);
    double t1 = rt_now_ms();
    assert_int_equal(rt_kdp_validate(&t, p, n, &err), RT_OK);
    double t2 = rt_now_ms();
    RtKdpHit h[RT_KDP_MAX_KNN];
    for (int i = 0; i < 10000; i++) {
        float q[3] = {rt_test_randf(&r) * 2 - 1, rt_test_randf(&r) * 2 - 1, rt_test_randf(&r) * 2 - 1};
        assert_int_equal(rt_kdp_knn(&t, q, 50, h), 50);
    }
    double t3 = rt_now_ms();
    print_message("timing: %u 3-D points, %d threads: build %.0f ms (sort %.0f, duplicates %.0f (%u), "
                  "partition %.0f), validate %.0f ms, 10k kNN (k = 50) %.0f ms\n",
                  n, rt_thread_count(), t1 - t0, st.sort_ms, st.dedup_ms, st.duplicates, st.build_ms, t2 - t1,
                  t3 - t2);
    rt_kdp_free(&t);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kdp_zero_and_one_point),
        cmocka_unit_test(kdp_two_and_three_points_every_k),
        cmocka_unit_test(kdp_random_sets_k1_to_4_match_brute_force),
        cmocka_unit_test(kdp_clustered_and_grid_points_need_super_keys),
        cmocka_unit_test(kdp_duplicates_removed_lowest_index_kept),
        cmocka_unit_test(kdp_nan_and_inf_points_rejected),
        cmocka_unit_test(kdp_bad_dimension_is_refused),
        cmocka_unit_test(kdp_k8_and_balanced_depth),
        cmocka_unit_test(kdp_same_tree_on_any_thread_count),
        cmocka_unit_test(kdp_validate_names_broken_trees),
        cmocka_unit_test(kdp_timing_1m_3d_points),
    };
    return cmocka_run_group_tests_name("kdpoints", tests, NULL, NULL);
}
