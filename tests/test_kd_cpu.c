/* test_kd_cpu.c — the CPU reference kd-tree: the builder's invariants
 * (rt_kd_validate) on every kind of triangle soup, the traversal against
 * brute force (same triangle, same t, Woop and Moller-Trumbore), any-hit and
 * filters, determinism across thread counts, the SAH cost, and the
 * validator itself on broken trees (the same message on any thread count),
 * and the straddlers' split boxes against clipping each half. */
#include "soup.h"
#include "kd/kd_sah.h"
#include "scene/load.h"

#include "scene/scene.h"

/* ---- triangle soups ---------------------------------------------------- */

/* A triangle of about the given size around c. */
static void add_near(Soup *s, RtTestRng *r, RtVec3 c, float size)
{
    RtVec3 v[3];
    for (int k = 0; k < 3; k++) v[k] = v3_add(c, v3_scale(v3_sub(rnd_vec(r), v3(0.5f, 0.5f, 0.5f)), size));
    soup_add(s, v[0], v[1], v[2]);
}

static void make_uniform(Soup *s, RtTestRng *r, int n)
{
    for (int i = 0; i < n; i++) add_near(s, r, rnd_vec(r), 0.08f);
}

static void make_clustered(Soup *s, RtTestRng *r, int n)
{
    RtVec3 centre[6];
    for (int k = 0; k < 6; k++) centre[k] = rnd_vec(r);
    for (int i = 0; i < n; i++) {
        RtVec3 c = v3_add(centre[i % 6], v3_scale(v3_sub(rnd_vec(r), v3(0.5f, 0.5f, 0.5f)), 0.05f));
        add_near(s, r, c, 0.01f);
    }
}

/* Slivers across the whole scene: every split straddles them. */
static void make_long_thin(Soup *s, RtTestRng *r, int n)
{
    for (int i = 0; i < n; i++) {
        RtVec3 a = rnd_vec(r), b = rnd_vec(r);
        RtVec3 c = v3_add(a, v3_scale(rnd_dir(r), 0.002f));
        soup_add(s, a, b, c);
    }
}

/* Triangles lying in a few axis-aligned planes at exact coordinates (the
 * builder's candidate planes), plus some crossing them. */
static void make_axis_aligned(Soup *s, RtTestRng *r, int n)
{
    for (int i = 0; i < n; i++) {
        int axis = i % 3;
        float plane = (float)(rt_test_rand(r) % 5) * 0.25f;
        RtVec3 v[3];
        for (int k = 0; k < 3; k++) {
            v[k] = v3_scale(v3(floorf(rt_test_randf(r) * 8) / 8, floorf(rt_test_randf(r) * 8) / 8,
                               floorf(rt_test_randf(r) * 8) / 8), 1.0f);
            v3_set(&v[k], axis, plane);
        }
        if (i % 7 == 0) v3_set(&v[2], axis, plane + 0.125f); /* crosses the next plane */
        soup_add(s, v[0], v[1], v[2]);
    }
}

/* A grid of G x G unit squares (two triangles each) in the plane axis = at,
 * vertices at exact integer coordinates scaled by 1/G. */
static void make_grid(Soup *s, int g, int axis, float at)
{
    for (int i = 0; i < g; i++)
        for (int j = 0; j < g; j++) {
            RtVec3 p[4];
            for (int k = 0; k < 4; k++) {
                float u = (float)(i + (k & 1)) / g, v = (float)(j + (k >> 1)) / g;
                p[k] = axis == 2 ? v3(u, v, at) : axis == 1 ? v3(u, at, v) : v3(at, u, v);
            }
            soup_add(s, p[0], p[1], p[3]);
            soup_add(s, p[0], p[3], p[2]);
        }
}

/* ---- tree helpers ------------------------------------------------------ */

/* c_isect: 0 for the default. */
static RtKdStats build_costs(const RtTriArrays *t, int threads, float c_isect, RtKdTree *tree)
{
    RtKdCpuParams p = rt_kd_cpu_params_default();
    p.threads = threads;
    if (c_isect > 0) p.c_isect = c_isect;
    RtKdStats st;
    RtError err = {0};
    RtStatus s = rt_kd_build_cpu(&p, t, tree, &st, &err);
    if (s != RT_OK) fail_msg("build: %s", err.msg);
    return st;
}

static RtKdStats build(const RtTriArrays *t, int threads, RtKdTree *tree) { return build_costs(t, threads, 0, tree); }

static void expect_valid(const RtKdTree *tree, const RtTriArrays *t)
{
    RtError err = {0};
    RtStatus s = rt_kd_validate(tree, t, &err);
    if (s != RT_OK) fail_msg("validate: %s", err.msg);
}

/* Interior nodes with their cells, for rays that start on split planes. */
typedef struct Split {
    int axis;
    float pos;
    RtAabb cell;
} Split;

static int collect_splits(const RtKdTree *tree, Split *out, int max)
{
    struct {
        uint32_t n;
        RtAabb c;
    } stack[256];
    int sp = 0, m = 0;
    stack[sp].n = 0;
    stack[sp++].c = tree->bounds;
    while (sp > 0 && m < max) {
        uint32_t n = stack[--sp].n;
        RtAabb c = stack[sp].c;
        RtKdNode nd = tree->nodes[n];
        if (kd_is_leaf(nd)) continue;
        int a = kd_axis(nd);
        out[m++] = (Split){a, kd_split(nd), c};
        RtAabb l = c, r = c;
        v3_set(&l.hi, a, kd_split(nd));
        v3_set(&r.lo, a, kd_split(nd));
        if (sp + 2 <= 256) {
            stack[sp].n = kd_right(nd);
            stack[sp++].c = r;
            stack[sp].n = kd_left(nd);
            stack[sp++].c = l;
        }
    }
    return m;
}

static uint64_t g_rays; /* rays compared with brute force, all tests */

/* Which hit tests compare_ray runs; ALTERNATE (compare_rays): Woop for even
 * rays, Moller-Trumbore for odd ones. */
enum { ALTERNATE = 0, MT = 1, WOOP = 2, BOTH = 3 };

/* kd == brute force (hit, triangle, t) for Woop and/or Moller-Trumbore,
 * with or without the filter; any-hit agrees with closest-hit on occlusion.
 * Returns the number of mismatches and prints the first. */
static int compare_ray(const RtKdTree *tree, const RtTriArrays *t, RtRay ray, float tmin,
                       float tmax, int with_filter, unsigned methods)
{
    int bad = 0;
    for (int woop = 0; woop < 2; woop++) {
        if (!(methods >> woop & 1u)) continue;
        RtHit hk, hb;
        int k = with_filter ? rt_kd_closest_hit_filtered(tree, t, ray, tmin, tmax, woop, filter_odd,
                                                         NULL, &hk, NULL)
                            : rt_kd_closest_hit(tree, t, ray, tmin, tmax, woop, &hk, NULL);
        int b = rt_brute_closest_hit(t, ray, tmin, tmax, woop, with_filter ? filter_odd : NULL,
                                     NULL, &hb);
        if (k != b || (k && (hk.tri != hb.tri || hk.t != hb.t))) {
            if (bad++ < 1)
                print_message("mismatch (%s%s): o (%.9g %.9g %.9g) d (%.9g %.9g %.9g): kd %d tri %u t "
                              "%.9g, brute %d tri %u t %.9g\n",
                              woop ? "Woop" : "MT", with_filter ? ", filtered" : "", ray.o.x,
                              ray.o.y, ray.o.z, ray.d.x, ray.d.y, ray.d.z, k, hk.tri, hk.t, b,
                              hb.tri, hb.t);
        }
        if (woop) {
            int any = rt_kd_any_hit(tree, t, ray, tmin, tmax, with_filter ? filter_odd : NULL, NULL);
            if (any != b) {
                if (bad++ < 1)
                    print_message("any-hit %d but closest-hit %d (o %.9g %.9g %.9g)\n", any, b,
                                  ray.o.x, ray.o.y, ray.o.z);
            }
        }
    }
    g_rays++;
    return bad;
}

/* n rays of every kind: from outside toward the scene, from inside, from
 * split planes (some parallel to them), axis-parallel. */
static int compare_rays(const RtKdTree *tree, const RtTriArrays *t, RtTestRng *r, int n,
                        unsigned methods)
{
    enum { MAX_SPLITS = 4096 };
    Split *splits = malloc(MAX_SPLITS * sizeof *splits);
    assert_non_null(splits);
    int ns = collect_splits(tree, splits, MAX_SPLITS), bad = 0;
    RtAabb b = tree->bounds;
    RtVec3 centre = v3_scale(v3_add(b.lo, b.hi), 0.5f);
    float radius = v3_len(v3_sub(b.hi, b.lo)) + 1e-30f;
    for (int i = 0; i < n; i++) {
        RtRay ray;
        float tmin = 0.0f, tmax = INFINITY;
        switch (i % 5) {
        case 0: /* outside, aimed at a point inside */
            ray.o = v3_add(centre, v3_scale(rnd_dir(r), radius));
            ray.d = v3_sub(point_in(r, b), ray.o);
            break;
        case 1: /* inside */
            ray.o = point_in(r, b);
            ray.d = rnd_dir(r);
            break;
        case 2: /* on a split plane, sometimes parallel to it */
            if (ns == 0) {
                ray.o = point_in(r, b);
                ray.d = rnd_dir(r);
                break;
            }
            {
                const Split *s = &splits[rt_test_rand(r) % (uint32_t)ns];
                ray.o = point_in(r, s->cell);
                v3_set(&ray.o, s->axis, s->pos);
                ray.d = rnd_dir(r);
                if (i % 3 == 0) v3_set(&ray.d, s->axis, 0.0f);
            }
            break;
        case 3: { /* axis-parallel */
            int a = (int)(rt_test_rand(r) % 3);
            ray.o = point_in(r, b);
            v3_set(&ray.o, a, v3_get(b.lo, a) - 0.5f * radius);
            ray.d = v3(0, 0, 0);
            v3_set(&ray.d, a, 1.0f);
            break;
        }
        default: /* a segment (shadow-ray-like tmax) from inside */
            ray.o = point_in(r, b);
            ray.d = rnd_dir(r);
            tmax = rt_test_randf(r) * radius;
            break;
        }
        unsigned m = methods != ALTERNATE ? methods : (i & 1) ? MT : WOOP;
        bad += compare_ray(tree, t, ray, tmin, tmax, i % 4 == 0, m);
    }
    free(splits);
    return bad;
}

/* Build, validate, compare n rays; frees the tree. */
static void check_scene(const char *name, const RtTriArrays *t, int rays, uint64_t seed)
{
    RtKdTree tree = {0};
    RtKdStats st = build(t, 2, &tree);
    double t0 = rt_now_ms();
    expect_valid(&tree, t);
    double t1 = rt_now_ms();
    RtTestRng r = {seed};
    int bad = compare_rays(&tree, t, &r, rays, BOTH);
    print_message("%s: %u tris, %u nodes, %u leaves, depth %u, SAH %.2f, %d rays, %d mismatches "
                  "(build %.0f ms, validate %.0f ms, rays %.0f ms)\n",
                  name, t->count, st.nodes, st.leaves, st.depth, st.sah_cost, rays, bad,
                  st.build_ms, t1 - t0, rt_now_ms() - t1);
    rt_kd_tree_free(&tree);
    assert_int_equal(bad, 0);
}

/* ---- sizes 0, 1, 2 ----------------------------------------------------- */

static void kd_zero_triangles_build_one_empty_leaf(void **state)
{
    (void)state;
    RtTriArrays t = {0};
    RtKdTree tree = {0};
    RtKdStats st = build(&t, 2, &tree);
    assert_int_equal(tree.node_count, 1);
    assert_int_equal(tree.leaf_count, 1);
    assert_int_equal(tree.index_count, 0);
    assert_true(kd_is_leaf(tree.nodes[0]));
    assert_int_equal(kd_leaf_count(tree.nodes[0]), 0);
    assert_true(aabb_is_empty(tree.bounds));
    assert_true(aabb_is_empty(tree.leaf_boxes[0]));
    assert_int_equal(st.nodes, 1);
    assert_int_equal(st.empty_leaves, 1);
    assert_true(st.sah_cost == 0.0);
    expect_valid(&tree, &t);
    RtHit h;
    RtRay ray = {v3(0, 0, -1), v3(0, 0, 1)};
    assert_false(rt_kd_closest_hit(&tree, &t, ray, 0, INFINITY, 1, &h, NULL));
    assert_int_equal(h.tri, RT_NO_HIT);
    assert_false(rt_kd_any_hit(&tree, &t, ray, 0, INFINITY, NULL, NULL));
    assert_false(rt_brute_closest_hit(&t, ray, 0, INFINITY, 1, NULL, NULL, &h));
    rt_kd_tree_free(&tree);
}

static void kd_one_triangle(void **state)
{
    (void)state;
    Soup s = {0};
    soup_add(&s, v3(0, 0, 0), v3(1, 0, 0), v3(0, 1, 0));
    RtKdTree tree = {0};
    build(&s.t, 1, &tree);
    assert_int_equal(tree.node_count, 1);
    assert_int_equal(tree.index_count, 1);
    expect_valid(&tree, &s.t);
    for (int woop = 0; woop < 2; woop++) {
        RtHit h;
        uint32_t steps = 0;
        RtRay ray = {v3(0.25f, 0.25f, 2), v3(0, 0, -1)};
        assert_true(rt_kd_closest_hit(&tree, &s.t, ray, 0, INFINITY, woop, &h, &steps));
        assert_int_equal(h.tri, 0);
        assert_float_equal(h.t, 2.0f, 1e-6f);
        assert_int_equal(steps, 1);
        ray.o = v3(0.75f, 0.75f, 2); /* beside the hypotenuse */
        assert_false(rt_kd_closest_hit(&tree, &s.t, ray, 0, INFINITY, woop, &h, NULL));
        ray.o = v3(0.25f, 0.25f, 2); /* beyond tmax */
        assert_false(rt_kd_closest_hit(&tree, &s.t, ray, 0, 1.5f, woop, &h, NULL));
    }
    rt_kd_tree_free(&tree);
    check_scene("one triangle", &s.t, 500, 11);
    soup_free(&s);
}

static void kd_two_triangles(void **state)
{
    (void)state;
    Soup s = {0};
    soup_add(&s, v3(0, 0, 0), v3(1, 0, 0), v3(0, 1, 0));
    soup_add(&s, v3(0, 0, 1), v3(1, 0, 1), v3(0, 1, 1));
    RtKdTree tree = {0};
    build(&s.t, 1, &tree);
    expect_valid(&tree, &s.t);
    RtHit h;
    RtRay up = {v3(0.2f, 0.2f, -1), v3(0, 0, 1)}, down = {v3(0.2f, 0.2f, 2), v3(0, 0, -1)};
    assert_true(rt_kd_closest_hit(&tree, &s.t, up, 0, INFINITY, 1, &h, NULL));
    assert_int_equal(h.tri, 0);
    assert_true(rt_kd_closest_hit(&tree, &s.t, down, 0, INFINITY, 0, &h, NULL));
    assert_int_equal(h.tri, 1);
    rt_kd_tree_free(&tree);
    check_scene("two triangles", &s.t, 500, 12);
    soup_free(&s);
}

static void kd_degenerate_triangles_stay_out(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {5};
    make_uniform(&s, &r, 300);
    soup_add(&s, v3(0.5f, 0.5f, 0.5f), v3(0.5f, 0.5f, 0.5f), v3(0.6f, 0.5f, 0.5f)); /* zero area */
    soup_add(&s, v3(0, 0, 0), v3(1, 1, 1), v3(2, 2, 2));                              /* collinear */
    soup_add(&s, v3(NAN, 0, 0), v3(1, 0, 0), v3(0, 1, 0));
    soup_add(&s, v3(0, 0, 0), v3(INFINITY, 0, 0), v3(0, 1, 0));
    soup_add(&s, v3(0, 0, 0), v3(1e30f, 0, 0), v3(0, 1e30f, 0)); /* its area overflows */
    RtKdTree tree = {0};
    RtKdStats st = build(&s.t, 2, &tree);
    assert_int_equal(st.degenerate, 5);
    assert_int_equal(st.triangles, s.t.count);
    for (uint32_t i = 0; i < tree.index_count; i++)
        assert_false(rt_kd_tri_degenerate(&s.t, tree.tri_index[i]));
    assert_true(isfinite(tree.bounds.hi.x) && tree.bounds.hi.x < 2.0f);
    rt_kd_tree_free(&tree);
    check_scene("degenerate", &s.t, 2000, 13);
    /* All degenerate: an empty tree. */
    Soup d = {0};
    soup_add(&d, v3(0, 0, 0), v3(0, 0, 0), v3(0, 0, 0));
    build(&d.t, 1, &tree);
    assert_int_equal(tree.node_count, 1);
    assert_true(aabb_is_empty(tree.bounds));
    expect_valid(&tree, &d.t);
    rt_kd_tree_free(&tree);
    soup_free(&d);
    soup_free(&s);
}

/* ---- random soups against brute force ------------------------------------ */

static void kd_uniform_soup_matches_brute_force(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {21};
    make_uniform(&s, &r, 2500);
    check_scene("uniform", &s.t, 16000, 22);
    soup_free(&s);
}

static void kd_clustered_soup_matches_brute_force(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {31};
    make_clustered(&s, &r, 2500);
    check_scene("clustered", &s.t, 14000, 32);
    soup_free(&s);
}

static void kd_long_thin_triangles_match_brute_force(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {41};
    make_long_thin(&s, &r, 800);
    make_uniform(&s, &r, 800);
    check_scene("long thin", &s.t, 10000, 42);
    soup_free(&s);
}

static void kd_axis_aligned_triangles_in_candidate_planes(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {51};
    make_axis_aligned(&s, &r, 2500);
    check_scene("axis-aligned", &s.t, 12000, 52);
    soup_free(&s);
}

static void kd_all_triangles_coplanar(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {61};
    for (int i = 0; i < 2000; i++) {
        RtVec3 c = v3(rt_test_randf(&r), rt_test_randf(&r) * 0.3f, 0.5f), v[3];
        for (int k = 0; k < 3; k++)
            v[k] = v3_add(c, v3((rt_test_randf(&r) - 0.5f) * 0.06f, (rt_test_randf(&r) - 0.5f) * 0.06f, 0));
        soup_add(&s, v[0], v[1], v[2]);
    }
    RtKdTree tree = {0};
    build(&s.t, 2, &tree);
    assert_true(tree.bounds.lo.z == 0.5f && tree.bounds.hi.z == 0.5f); /* a flat root cell */
    rt_kd_tree_free(&tree);
    check_scene("coplanar", &s.t, 8000, 62);
    soup_free(&s);
}

static void kd_duplicates_and_shared_boxes(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {71};
    for (int i = 0; i < 400; i++) soup_add(&s, v3(0.2f, 0.2f, 0.2f), v3(0.8f, 0.3f, 0.5f), v3(0.4f, 0.9f, 0.7f));
    for (int i = 0; i < 300; i++) { /* pairs and triples with one bounding box */
        RtVec3 lo = rnd_vec(&r), hi = v3_add(lo, v3(0.05f, 0.05f, 0.05f));
        soup_add(&s, lo, hi, v3(hi.x, lo.y, lo.z));
        soup_add(&s, lo, hi, v3(lo.x, hi.y, hi.z));
        soup_add(&s, v3(lo.x, hi.y, lo.z), v3(hi.x, lo.y, hi.z), v3(lo.x, lo.y, hi.z));
    }
    make_uniform(&s, &r, 500);
    check_scene("duplicates", &s.t, 8000, 72);
    soup_free(&s);
}

/* Shared edges and vertices on split planes, rays exactly through them. */
static void kd_grid_mesh_edge_and_vertex_hits(void **state)
{
    (void)state;
    Soup s = {0};
    const int g = 16;
    make_grid(&s, g, 2, 0.0f);
    make_grid(&s, g, 2, 0.5f);
    make_grid(&s, g, 0, 0.25f);
    make_grid(&s, g, 1, 1.0f);
    RtKdTree tree = {0};
    build(&s.t, 2, &tree);
    expect_valid(&tree, &s.t);
    RtTestRng r = {81};
    int bad = 0, n = 0;
    for (int i = 0; i <= g; i++)
        for (int j = 0; j <= g; j++) {
            /* Exactly at a vertex, the middle of an edge, a diagonal point. */
            RtVec3 targets[3] = {v3((float)i / g, (float)j / g, 0.0f),
                                 v3((i + 0.5f) / g, (float)j / g, 0.0f),
                                 v3((i + 0.5f) / g, (i + 0.5f) / g, 0.0f)};
            for (int k = 0; k < 3; k++) {
                RtRay down = {v3(targets[k].x, targets[k].y, 2.0f), v3(0, 0, -1)};
                bad += compare_ray(&tree, &s.t, down, 0, INFINITY, k == 2, BOTH);
                RtVec3 o = v3_add(targets[k], v3_scale(rnd_dir(&r), 2.0f));
                RtRay slanted = {o, v3_sub(targets[k], o)};
                bad += compare_ray(&tree, &s.t, slanted, 0, INFINITY, 0, BOTH);
                RtRay along = {v3(-1.0f, targets[k].y, 0.0f), v3(1, 0, 0)}; /* in the grid's plane */
                bad += compare_ray(&tree, &s.t, along, 0, INFINITY, 0, BOTH);
                n += 3;
            }
        }
    bad += compare_rays(&tree, &s.t, &r, 12000, BOTH);
    print_message("grid: %u tris, %d exact-edge rays + 12000 random, %d mismatches\n", s.t.count,
                  n, bad);
    rt_kd_tree_free(&tree);
    assert_int_equal(bad, 0);
    soup_free(&s);
}

static void kd_huge_and_tiny_coordinates(void **state)
{
    (void)state;
    /* Woop's determinant |n|^2 limits the sizes: edges of 1e-7 and 1e8. */
    const float scales[3] = {1e-6f, 1e9f, 1.0f};
    const float offsets[3] = {0.0f, 0.0f, 1e5f};
    for (int k = 0; k < 3; k++) {
        Soup s = {0};
        RtTestRng r = {91 + (uint64_t)k};
        Soup u = {0};
        make_uniform(&u, &r, 1500);
        for (uint32_t i = 0; i < u.t.count; i++) {
            RtVec3 v[3];
            for (int j = 0; j < 3; j++)
                v[j] = v3_add(v3_scale(f4_xyz(u.t.verts[3 * i + j]), scales[k]),
                              v3(offsets[k], offsets[k], offsets[k]));
            soup_add(&s, v[0], v[1], v[2]);
        }
        char name[64];
        snprintf(name, sizeof name, "scale %g offset %g", scales[k], offsets[k]);
        check_scene(name, &s.t, 5000, 95 + (uint64_t)k);
        soup_free(&u);
        soup_free(&s);
    }
}

/* ---- filters, any-hit ----------------------------------------------------- */

static void kd_filter_rejects_and_search_goes_on(void **state)
{
    (void)state;
    Soup s = {0};
    /* A stack of parallel squares: the filter removes the nearest. */
    for (int z = 0; z < 4; z++) {
        soup_add(&s, v3(0, 0, (float)z), v3(1, 0, (float)z), v3(1, 1, (float)z));
        soup_add(&s, v3(0, 0, (float)z), v3(1, 1, (float)z), v3(0, 1, (float)z));
    }
    RtKdTree tree = {0};
    build(&s.t, 1, &tree);
    RtRay ray = {v3(0.7f, 0.2f, -1), v3(0, 0, 1)};
    RtHit h;
    for (int woop = 0; woop < 2; woop++) {
        assert_true(rt_kd_closest_hit(&tree, &s.t, ray, 0, INFINITY, woop, &h, NULL));
        assert_int_equal(h.tri, 0);
        uint32_t below = 2; /* cut out the nearest square: the next one is hit */
        assert_true(rt_kd_closest_hit_filtered(&tree, &s.t, ray, 0, INFINITY, woop, reject_below,
                                               &below, &h, NULL));
        assert_int_equal(h.tri, 2);
        assert_float_equal(h.t, 2.0f, 1e-6f);
        below = 8;
        assert_false(rt_kd_closest_hit_filtered(&tree, &s.t, ray, 0, INFINITY, woop, reject_below,
                                                &below, &h, NULL));
    }
    uint32_t below = 6;
    assert_true(rt_kd_any_hit(&tree, &s.t, ray, 0, INFINITY, reject_below, &below));
    assert_false(rt_kd_any_hit(&tree, &s.t, ray, 0, 3.5f, reject_below, &below));
    /* A filter that rejects everything finds nothing, but was asked. */
    int calls = 0;
    assert_false(rt_kd_closest_hit_filtered(&tree, &s.t, ray, 0, INFINITY, 1, reject_all, &calls,
                                            &h, NULL));
    assert_true(calls >= 4);
    calls = 0;
    assert_false(rt_kd_any_hit(&tree, &s.t, ray, 0, INFINITY, reject_all, &calls));
    assert_true(calls >= 4);
    rt_kd_tree_free(&tree);
    soup_free(&s);
}

/* ---- determinism, SAH ---------------------------------------------------- */

static void kd_same_tree_with_1_2_and_3_threads(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {101};
    make_uniform(&s, &r, 12000);
    make_clustered(&s, &r, 6000);
    make_axis_aligned(&s, &r, 3000);
    make_long_thin(&s, &r, 500);
    RtKdTree t1 = {0}, t2 = {0}, t3 = {0};
    build(&s.t, 1, &t1);
    build(&s.t, 2, &t2);
    build(&s.t, 3, &t3);
    assert_true(rt_kd_tree_same(&t1, &t2));
    assert_true(rt_kd_tree_same(&t1, &t3));
    expect_valid(&t2, &s.t);
    /* Rebuilding into a used tree reuses its arrays and gives the same tree. */
    build(&s.t, 2, &t3);
    assert_true(rt_kd_tree_same(&t1, &t3));
    rt_kd_tree_free(&t1);
    rt_kd_tree_free(&t2);
    rt_kd_tree_free(&t3);
    soup_free(&s);
}

static void kd_sah_cost_below_single_leaf(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {111};
    make_uniform(&s, &r, 2000);
    RtKdTree tree = {0};
    RtKdStats st = build(&s.t, 2, &tree);
    /* One leaf holding everything, in the shared layout. */
    RtKdNode node = kd_make_leaf(0, s.t.count);
    RtKdLeaf leaf = {0, s.t.count};
    uint32_t *idx = malloc(s.t.count * sizeof *idx);
    for (uint32_t i = 0; i < s.t.count; i++) idx[i] = i;
    RtKdTree one = {&node, &leaf, &tree.bounds, idx, 1, 1, s.t.count, 1, 1, s.t.count, tree.bounds};
    expect_valid(&one, &s.t);
    RtKdStats so;
    rt_kd_tree_stats(&one, RT_KD_C_TRAV, RT_KD_C_ISECT, &so);
    assert_float_equal(so.sah_cost, (double)RT_KD_C_ISECT * s.t.count, 1e-9 * s.t.count);
    print_message("SAH: tree %.2f vs one leaf %.2f (%u nodes, avg %.2f tris/leaf, build %.1f ms)\n",
                  st.sah_cost, so.sah_cost, st.nodes, st.avg_tris_per_leaf, st.build_ms);
    assert_true(st.sah_cost < so.sah_cost / 10);
    assert_int_equal(st.references, tree.index_count);
    free(idx);
    rt_kd_tree_free(&tree);
    soup_free(&s);
}

/* The SAH cost of a hand-made tree: root [0,2]x[0,1]x[0,1] (area 10) split
 * at x = 1 into two unit cubes (area 6), two triangles left, one right:
 * 1 * 10/10 + 1.5 * 2 * 6/10 + 1.5 * 1 * 6/10 = 3.7. */
static void kd_stats_of_a_hand_made_tree(void **state)
{
    (void)state;
    Soup s = {0};
    soup_add(&s, v3(0, 0, 0), v3(1, 0, 0), v3(0, 1, 1));
    soup_add(&s, v3(0, 1, 0), v3(1, 1, 1), v3(0, 0, 1));
    soup_add(&s, v3(2, 0, 0), v3(2, 1, 0), v3(2, 1, 1)); /* in the right cell's far face */
    RtKdNode nodes[3] = {kd_make_interior(0, 1.0f, 1), kd_make_leaf(0, 2), kd_make_leaf(1, 1)};
    RtKdLeaf leaves[2] = {{0, 2}, {2, 1}};
    RtAabb boxes[2] = {{{0, 0, 0}, {1, 1, 1}}, {{2, 0, 0}, {2, 1, 1}}};
    uint32_t idx[3] = {0, 1, 2};
    RtAabb bounds = {{0, 0, 0}, {2, 1, 1}};
    RtKdTree t = {nodes, leaves, boxes, idx, 3, 2, 3, 3, 2, 3, bounds};
    expect_valid(&t, &s.t);
    RtKdStats st;
    rt_kd_tree_stats(&t, 1.0f, 1.5f, &st);
    assert_int_equal(st.nodes, 3);
    assert_int_equal(st.leaves, 2);
    assert_int_equal(st.empty_leaves, 0);
    assert_int_equal(st.depth, 1);
    assert_int_equal(st.references, 3);
    assert_float_equal(st.avg_tris_per_leaf, 1.5, 1e-9);
    assert_float_equal(st.sah_cost, 1.0 + 1.5 * 2 * 0.6 + 1.5 * 1 * 0.6, 1e-9);
    soup_free(&s);
}

/* ---- the validator on broken trees ---------------------------------------- */

static void expect_invalid(const RtKdTree *t, const RtTriArrays *tris, const char *what)
{
    RtError err = {0};
    RtStatus s = rt_kd_validate(t, tris, &err);
    if (s == RT_OK) fail_msg("validate accepted a tree with %s", what);
    assert_int_equal(s, RT_ERR_PARSE);
    assert_non_null(strstr(err.msg, "KD:"));
}

static void kd_validate_rejects_broken_trees(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {121};
    make_uniform(&s, &r, 400);
    RtKdTree tree = {0};
    build(&s.t, 1, &tree);
    expect_valid(&tree, &s.t);
    /* A copy to break, one way at a time. */
    RtKdTree b = tree;
    b.nodes = malloc(tree.node_count * sizeof *b.nodes);
    b.leaves = malloc(tree.leaf_count * sizeof *b.leaves);
    b.tri_index = malloc(tree.index_count * sizeof *b.tri_index);
    /* A leaf whose last triangle's centroid lies well inside its box (so
     * inside its cell): dropping that reference must be caught. */
    uint32_t full = 0;
    for (uint32_t i = 0; i < tree.node_count && !full; i++) {
        RtKdNode n = tree.nodes[i];
        if (!kd_is_leaf(n) || kd_leaf_count(n) < 2) continue;
        RtKdLeaf lf = tree.leaves[kd_leaf_id(n)];
        RtAabb bx = tree.leaf_boxes[kd_leaf_id(n)];
        uint32_t t = tree.tri_index[lf.first + lf.count - 1];
        RtVec3 c = v3_scale(v3_add(v3_add(f4_xyz(s.t.verts[3 * t]), f4_xyz(s.t.verts[3 * t + 1])),
                                   f4_xyz(s.t.verts[3 * t + 2])), 1.0f / 3);
        int inside = 1;
        for (int a = 0; a < 3; a++)
            inside &= v3_get(c, a) > v3_get(bx.lo, a) + 1e-3f && v3_get(c, a) < v3_get(bx.hi, a) - 1e-3f;
        if (inside) full = i;
    }
    assert_true(full > 0);
#define RESET()                                                                                  \
    do {                                                                                         \
        memcpy(b.nodes, tree.nodes, tree.node_count * sizeof *b.nodes);                          \
        memcpy(b.leaves, tree.leaves, tree.leaf_count * sizeof *b.leaves);                       \
        memcpy(b.tri_index, tree.tri_index, tree.index_count * sizeof *b.tri_index);             \
    } while (0)
    RESET();
    expect_valid(&b, &s.t);
    /* A leaf forgets a triangle. */
    uint32_t lid = kd_leaf_id(b.nodes[full]);
    b.leaves[lid].count--;
    b.nodes[full] = kd_make_leaf(lid, b.leaves[lid].count);
    expect_invalid(&b, &s.t, "a missing reference");
    RESET();
    b.leaves[lid].count--; /* the node's copy of the count disagrees */
    expect_invalid(&b, &s.t, "a count mismatch");
    RESET();
    b.tri_index[b.leaves[lid].first] = s.t.count + 5;
    expect_invalid(&b, &s.t, "a triangle id out of range");
    RESET();
    b.nodes[0] = kd_make_interior(kd_axis(b.nodes[0]), kd_split(b.nodes[0]), tree.node_count - 1);
    expect_invalid(&b, &s.t, "children out of range");
    RESET();
    b.nodes[0] = kd_make_interior(kd_axis(b.nodes[0]), 7.0f, kd_left(b.nodes[0]));
    expect_invalid(&b, &s.t, "a split outside its cell");
    RESET();
    uint32_t l = kd_left(b.nodes[0]);
    if (!kd_is_leaf(b.nodes[l])) {
        b.nodes[l] = kd_make_interior(kd_axis(b.nodes[l]), kd_split(b.nodes[l]), 0);
        expect_invalid(&b, &s.t, "a cycle");
    }
    RESET();
    /* A child marked empty that is not: the GPU walk would skip its triangles. */
    assert_int_equal(rt_kd_marks_missing(&b), 0);
    uint32_t marked = 0, open_child = 0;
    for (uint32_t i = 0; i < b.node_count && (!marked || !open_child); i++) {
        if (kd_is_leaf(b.nodes[i])) continue;
        if (kd_empty_children(b.nodes[i])) marked = i;
        else if (!open_child) open_child = i + 1; /* + 1: node 0 counts too */
    }
    assert_true(marked && open_child); /* a SAH tree of a soup has both */
    b.nodes[open_child - 1].bits |= RT_KD_EMPTY_RIGHT;
    expect_invalid(&b, &s.t, "a non-empty child marked empty");
    RESET();
    b.nodes[marked].bits &= ~(RT_KD_EMPTY_LEFT | RT_KD_EMPTY_RIGHT);
    expect_valid(&b, &s.t); /* a mark left out costs a visit, nothing else */
    assert_int_equal(rt_kd_marks_missing(&b), 1);
    RESET();
    b.tri_index[b.leaves[lid].first] = 0; /* probably far from this leaf */
    {
        RtError err = {0};
        (void)rt_kd_validate(&b, &s.t, &err); /* must not crash either way */
    }
    free(b.nodes);
    free(b.leaves);
    free(b.tri_index);
    rt_kd_tree_free(&tree);
    soup_free(&s);
#undef RESET
}

/* A reference to a triangle whose bounding box, but not the triangle, meets
 * the leaf's cell: an error unless RT_KD_VALIDATE_LOOSE_REFS. */
static void kd_validate_loose_references(void **state)
{
    (void)state;
    Soup s = {0};
    soup_add(&s, v3(0, 0, 0), v3(1, 0, 0), v3(1, 1, 0)); /* below the diagonal x = y */
    /* y < 0.6 | y > 0.6 split at x = 0.4: cell [0,0.4]x[0.6,1] misses it. */
    RtKdNode nodes[5] = {kd_make_interior(1, 0.6f, 1), kd_make_leaf(0, 1), kd_make_interior(0, 0.4f, 3),
                         kd_make_leaf(1, 1), kd_make_leaf(2, 1)};
    RtKdLeaf leaves[3] = {{0, 1}, {0, 1}, {0, 1}};
    RtAabb boxes[3] = {{{0, 0, 0}, {1, 0.6f, 0}}, {{0.4f, 0.6f, 0}, {0.4f, 0.6f, 0}},
                       {{0.6f, 0.6f, 0}, {1, 1, 0}}};
    uint32_t idx[1] = {0};
    RtAabb bounds = {{0, 0, 0}, {1, 1, 0}};
    RtKdTree t = {nodes, leaves, boxes, idx, 5, 3, 1, 5, 3, 1, bounds};
    RtError err = {0};
    assert_int_equal(rt_kd_validate(&t, &s.t, &err), RT_ERR_PARSE);
    assert_non_null(strstr(err.msg, "does not overlap"));
    assert_int_equal(rt_kd_validate_flags(&t, &s.t, RT_KD_VALIDATE_LOOSE_REFS, &err), RT_OK);
    /* ... and counted: one of the three references is loose */
    uint64_t loose = 7;
    assert_int_equal(rt_kd_validate_count(&t, &s.t, RT_KD_VALIDATE_LOOSE_REFS, &loose, &err), RT_OK);
    assert_int_equal(loose, 1);
    /* the oracle's own tree of the triangle has none */
    RtKdTree own = {0};
    RtKdCpuParams kp = rt_kd_cpu_params_default();
    assert_int_equal(rt_kd_build_cpu(&kp, &s.t, &own, NULL, &err), RT_OK);
    assert_int_equal(rt_kd_validate_count(&own, &s.t, RT_KD_VALIDATE_LOOSE_REFS, &loose, &err), RT_OK);
    assert_int_equal(loose, 0);
    rt_kd_tree_free(&own);
    /* Dropping the right-hand leaf's reference loses part of the triangle. */
    nodes[4] = kd_make_leaf(2, 0);
    leaves[2].count = 0;
    assert_int_equal(rt_kd_validate_flags(&t, &s.t, RT_KD_VALIDATE_LOOSE_REFS, &err), RT_ERR_PARSE);
    soup_free(&s);
}

/* ---- the validator's threads ------------------------------------------------ */

/* rt_kd_validate on `threads` threads (RT_THREADS, read by rt_thread_count). */
static RtStatus validate_on(const RtKdTree *t, const RtTriArrays *tris, int threads, RtError *err)
{
    char n[16];
    snprintf(n, sizeof n, "%d", threads);
    setenv("RT_THREADS", n, 1);
    RtStatus s = rt_kd_validate(t, tris, err);
    unsetenv("RT_THREADS");
    return s;
}

/* The same verdict and the same message on 1, 2, 3 and 16 threads; the
 * message holds `names` (NULL: the tree is valid). */
static void expect_same_on_any_thread_count(const RtKdTree *t, const RtTriArrays *tris,
                                            const char *names)
{
    static const int threads[] = {1, 2, 3, 16};
    RtError first = {0};
    RtStatus s1 = validate_on(t, tris, 1, &first);
    if (!names && s1 != RT_OK) fail_msg("validate (1 thread): %s", first.msg);
    if (names) {
        assert_int_equal(s1, RT_ERR_PARSE);
        if (!strstr(first.msg, names)) fail_msg("expected \"%s\" in \"%s\"", names, first.msg);
    }
    for (size_t i = 1; i < sizeof threads / sizeof *threads; i++) {
        RtError err = {0};
        RtStatus s = validate_on(t, tris, threads[i], &err);
        assert_int_equal(s, s1);
        if (s != RT_OK && strcmp(err.msg, first.msg))
            fail_msg("%d threads: \"%s\", 1 thread: \"%s\"", threads[i], err.msg, first.msg);
    }
}

/* The leaf nodes in the validator's walk order: depth first, left first. */
static uint32_t leaves_in_walk_order(const RtKdTree *t, uint32_t *out)
{
    uint32_t stack[RT_KD_CPU_MAX_DEPTH + 3], n = 0;
    int sp = 0;
    stack[sp++] = 0;
    while (sp > 0) {
        uint32_t node = stack[--sp];
        if (kd_is_leaf(t->nodes[node])) {
            out[n++] = node;
            continue;
        }
        stack[sp++] = kd_right(t->nodes[node]);
        stack[sp++] = kd_left(t->nodes[node]);
    }
    return n;
}

/* The first leaf node at or after walk position i whose last triangle's
 * centroid lies well inside its box (so inside its cell): dropping that
 * reference is a coverage fault. */
static uint32_t droppable_after(const RtKdTree *t, const RtTriArrays *tris, const uint32_t *walk,
                                uint32_t n, uint32_t i)
{
    for (; i < n; i++) {
        RtKdNode nd = t->nodes[walk[i]];
        if (kd_leaf_count(nd) < 2) continue;
        RtKdLeaf lf = t->leaves[kd_leaf_id(nd)];
        RtAabb bx = t->leaf_boxes[kd_leaf_id(nd)];
        uint32_t tri = t->tri_index[lf.first + lf.count - 1];
        RtVec3 c = v3_scale(v3_add(v3_add(f4_xyz(tris->verts[3 * tri]), f4_xyz(tris->verts[3 * tri + 1])),
                                   f4_xyz(tris->verts[3 * tri + 2])), 1.0f / 3);
        int inside = 1;
        for (int a = 0; a < 3; a++)
            inside &= v3_get(c, a) > v3_get(bx.lo, a) + 1e-3f && v3_get(c, a) < v3_get(bx.hi, a) - 1e-3f;
        if (inside) return walk[i];
    }
    fail_msg("no leaf to drop a triangle from after walk position %u", i);
    return 0;
}

/* The leaf of node forgets its last triangle; returns that triangle. */
static uint32_t drop_last(RtKdTree *t, uint32_t node)
{
    uint32_t id = kd_leaf_id(t->nodes[node]);
    t->leaves[id].count--;
    t->nodes[node] = kd_make_leaf(id, t->leaves[id].count);
    return t->tri_index[t->leaves[id].first + t->leaves[id].count];
}

static void undrop_last(RtKdTree *t, uint32_t node)
{
    uint32_t id = kd_leaf_id(t->nodes[node]);
    t->leaves[id].count++;
    t->nodes[node] = kd_make_leaf(id, t->leaves[id].count);
}

static void kd_validate_same_message_on_any_thread_count(void **state)
{
    (void)state;
    char want[256];
    /* Sizes 0 and 1: valid; then the one triangle left out of its leaf. */
    RtTriArrays none = {0};
    RtKdTree tree = {0};
    build(&none, 1, &tree);
    expect_same_on_any_thread_count(&tree, &none, NULL);
    Soup one = {0};
    soup_add(&one, v3(0, 0, 0), v3(1, 0, 0), v3(0, 1, 0));
    build(&one.t, 1, &tree);
    expect_same_on_any_thread_count(&tree, &one.t, NULL);
    assert_true(kd_is_leaf(tree.nodes[0]) && kd_leaf_count(tree.nodes[0]) == 1);
    drop_last(&tree, 0);
    /* Flat, so in the faces of its (flat) cell: the samples find it. */
    expect_same_on_any_thread_count(&tree, &one.t, "KD: triangle 0: its point (0 0 0) is in no leaf");
    soup_free(&one);

    /* Random: more leaves than one batch of the walk (64K), faults in
     * several places at once; the message names the first in the serial
     * order: the first leaf in walk order, the lowest triangle. */
    Soup s = {0};
    RtTestRng r = {161};
    make_uniform(&s, &r, 12000);
    make_clustered(&s, &r, 6000);
    make_long_thin(&s, &r, 300);
    build_costs(&s.t, 2, 4.0f, &tree); /* dear triangle tests: small leaves, many of them */
    expect_same_on_any_thread_count(&tree, &s.t, NULL);
    uint32_t *walk = malloc(tree.node_count * sizeof *walk);
    uint32_t n = leaves_in_walk_order(&tree, walk);
    assert_true(n > 65536 + 1000);
    /* Two leaves list a triangle id out of range: within one batch, and
     * across batches. */
    const uint32_t pairs[2][2] = {{n / 4, n / 2}, {n / 3, n - 1}};
    for (int p = 0; p < 2; p++) {
        uint32_t node[2], id[2], keep[2];
        for (int k = 0; k < 2; k++) {
            uint32_t i = pairs[p][k];
            while (kd_leaf_count(tree.nodes[walk[i]]) == 0) i--;
            node[k] = walk[i];
            id[k] = kd_leaf_id(tree.nodes[node[k]]);
            keep[k] = tree.tri_index[tree.leaves[id[k]].first];
        }
        /* The later leaf's fault first: no help from the order of writing. */
        for (int k = 1; k >= 0; k--) tree.tri_index[tree.leaves[id[k]].first] = s.t.count + 7 + k;
        snprintf(want, sizeof want, "KD: leaf %u: triangle %u out of range", id[0], s.t.count + 7);
        expect_same_on_any_thread_count(&tree, &s.t, want);
        for (int k = 1; k >= 0; k--) tree.tri_index[tree.leaves[id[k]].first] = keep[k];
    }
    /* Faults everywhere past an eighth of the walk: every worker finds
     * some at once, the first in walk order is named. */
    uint32_t first = 0, count = 0;
    for (uint32_t i = n / 8; i < n; i += 61) {
        RtKdLeaf *lf = &tree.leaves[kd_leaf_id(tree.nodes[walk[i]])];
        if (lf->count == 0) continue;
        if (count++ == 0) first = kd_leaf_id(tree.nodes[walk[i]]);
        tree.tri_index[lf->first] += s.t.count; /* out of range, undone below */
    }
    snprintf(want, sizeof want, "KD: leaf %u: triangle", first);
    expect_same_on_any_thread_count(&tree, &s.t, want);
    for (uint32_t i = n / 8; i < n; i += 61) {
        RtKdLeaf *lf = &tree.leaves[kd_leaf_id(tree.nodes[walk[i]])];
        if (lf->count) tree.tri_index[lf->first] -= s.t.count;
    }
    /* Two leaves forget a triangle each: the lower triangle is named. */
    uint32_t a = droppable_after(&tree, &s.t, walk, n, n / 5);
    uint32_t b = droppable_after(&tree, &s.t, walk, n, 4 * n / 5);
    uint32_t ta = drop_last(&tree, a), tb = drop_last(&tree, b);
    assert_true(ta != tb);
    uint32_t low = ta < tb ? ta : tb, low_node = ta < tb ? a : b;
    snprintf(want, sizeof want, "KD: triangle %u reaches into leaf %u's cell", low,
             kd_leaf_id(tree.nodes[low_node]));
    expect_same_on_any_thread_count(&tree, &s.t, want);
    undrop_last(&tree, a);
    undrop_last(&tree, b);
    expect_same_on_any_thread_count(&tree, &s.t, NULL);
    free(walk);
    rt_kd_tree_free(&tree);
    soup_free(&s);
}

/* ---- overlap and clipping ------------------------------------------------- */

static void kd_triangle_box_overlap(void **state)
{
    (void)state;
    RtAabb unit = {{0, 0, 0}, {1, 1, 1}};
    /* Inside, crossing, touching a face, an edge, a corner. */
    assert_true(rt_tri_box_overlap(v3(0.2f, 0.2f, 0.2f), v3(0.8f, 0.2f, 0.2f), v3(0.2f, 0.8f, 0.2f), unit));
    assert_true(rt_tri_box_overlap(v3(-1, 0.5f, 0.5f), v3(2, 0.5f, 0.5f), v3(0.5f, 0.5f, 3), unit));
    assert_true(rt_tri_box_overlap(v3(1, 0.2f, 0.2f), v3(2, 0.2f, 0.2f), v3(2, 0.8f, 0.2f), unit));
    assert_true(rt_tri_box_overlap(v3(1, 1, 0.5f), v3(2, 1, 0.5f), v3(2, 2, 0.5f), unit));
    assert_true(rt_tri_box_overlap(v3(1, 1, 1), v3(2, 1, 1), v3(2, 2, 2), unit));
    /* Bounding boxes overlap, the triangles do not: beyond a corner (the
     * triangle's normal separates), beyond a face. */
    assert_false(rt_tri_box_overlap(v3(2.5f, 0, 0.5f), v3(0, 2.5f, 0.5f), v3(2.5f, 2.5f, 0.5f), unit));
    assert_false(rt_tri_box_overlap(v3(1.01f, -5, -5), v3(1.01f, 5, -5), v3(1.01f, 0, 5), unit));
    /* Flat boxes (a split plane's face) and a point box. */
    RtAabb flat = {{0, 0, 0.5f}, {1, 1, 0.5f}};
    assert_true(rt_tri_box_overlap(v3(0.5f, 0.5f, 0), v3(0.6f, 0.5f, 1), v3(0.5f, 0.6f, 1), flat));
    assert_true(rt_tri_box_overlap(v3(0.2f, 0.2f, 0.5f), v3(2, 0.2f, 0.5f), v3(0.2f, 2, 0.5f), flat));
    assert_false(rt_tri_box_overlap(v3(0.2f, 0.2f, 0.6f), v3(2, 0.2f, 0.6f), v3(0.2f, 2, 0.6f), flat));
    RtAabb point = {{0.25f, 0.25f, 0}, {0.25f, 0.25f, 0}};
    assert_true(rt_tri_box_overlap(v3(0, 0, 0), v3(1, 0, 0), v3(0, 1, 0), point));
    RtAabb off = {{0.75f, 0.75f, 0}, {0.75f, 0.75f, 0}};
    assert_false(rt_tri_box_overlap(v3(0, 0, 0), v3(1, 0, 0), v3(0, 1, 0), off));
    assert_false(rt_tri_box_overlap(v3(0, 0, 0), v3(1, 0, 0), v3(0, 1, 0), aabb_empty()));
    /* Against clipping, an independent exact test: they agree on random
     * triangles and boxes (all 13 axes get their turn). */
    RtTestRng r = {151};
    int both = 0;
    for (int i = 0; i < 20000; i++) {
        RtVec3 c = rnd_vec(&r), e = v3_scale(rnd_vec(&r), 0.4f);
        RtAabb box = {v3_sub(c, e), v3_add(c, e)};
        RtVec3 v[3];
        for (int k = 0; k < 3; k++) v[k] = v3_sub(v3_scale(rnd_vec(&r), 2.0f), v3(0.5f, 0.5f, 0.5f));
        RtAabb part;
        int sat = rt_tri_box_overlap(v[0], v[1], v[2], box);
        int clip = rt_tri_clip_box(v[0], v[1], v[2], box, &part);
        if (sat != clip) fail_msg("case %d: SAT %d, clipping %d", i, sat, clip);
        both += sat;
    }
    assert_true(both > 2000 && both < 18000);
}

static void kd_clip_box_is_the_perfect_split_box(void **state)
{
    (void)state;
    RtVec3 a = v3(0, 0, 0), b = v3(2, 0, 0), c = v3(0, 2, 0);
    RtAabb out;
    RtAabb lower = {{0, 0, -1}, {1, 1, 1}};
    assert_true(rt_tri_clip_box(a, b, c, lower, &out));
    assert_true(out.lo.x == 0 && out.hi.x == 1 && out.lo.y == 0 && out.hi.y == 1);
    assert_true(out.lo.z == 0 && out.hi.z == 0);
    /* x >= 1.5: the part is x in [1.5, 2], y in [0, 0.5]. */
    RtAabb right = {{1.5f, -1, -1}, {3, 3, 1}};
    assert_true(rt_tri_clip_box(a, b, c, right, &out));
    assert_true(out.lo.x == 1.5f && out.hi.x == 2.0f && out.lo.y == 0.0f && out.hi.y == 0.5f);
    /* Touching the hypotenuse at one point, and missing it. */
    RtAabb corner = {{1, 1, -1}, {2, 2, 1}};
    assert_true(rt_tri_clip_box(a, b, c, corner, &out));
    assert_true(out.lo.x == 1 && out.hi.x == 1 && out.lo.y == 1 && out.hi.y == 1);
    RtAabb beyond = {{1.5f, 1.5f, -1}, {2, 2, 1}};
    assert_false(rt_tri_clip_box(a, b, c, beyond, &out));
    /* Outward rounding: x + y <= 2 cut at y = 0.1 gives x up to 1.9. */
    RtAabb band = {{-1, 0.1f, -1}, {3, 0.2f, 1}};
    assert_true(rt_tri_clip_box(a, b, c, band, &out));
    assert_true((double)out.hi.x >= 2.0 - (double)0.1f);
}

/* The split boxes by definition: the triangle clipped to the cell, each
 * child's half of that polygon clipped at the plane, its bounds. */
static int split_boxes_by_halves(const RtFloat4 *v, RtAabb cell, int axis, float pos, const RtAabb child[2],
                                 RtAabb out[2])
{
    double buf[2][RT_KD_CLIP_TRI_MAX][3], half[RT_KD_CLIP_SPLIT_MAX][3];
    for (int k = 0; k < 3; k++) buf[0][k][0] = v[k].x, buf[0][k][1] = v[k].y, buf[0][k][2] = v[k].z;
    int at, mask = 0;
    const int n = rt_kd_clip_tri(buf, cell, &at);
    for (int c = 0; c < 2; c++) {
        const int m = n ? rt_kd_clip_poly(buf[at], n, half, RT_KD_CLIP_SPLIT_MAX, axis, !c, pos) : 0;
        out[c] = m ? rt_kd_clip_bounds(half, m, child[c]) : aabb_empty();
        if (m) mask |= 1 << c;
    }
    return mask;
}

/* rt_tri_split_boxes folds both halves' bounds in one walk around the
 * clipped polygon: the same boxes and masks as clipping each half, to the
 * bit (the oracle's and the GPU's trees depend on them), on random cells,
 * triangles (some flat on an axis) and planes (some through a vertex, some
 * on the cell's faces). */
static void kd_split_boxes_are_the_halves_boxes(void **state)
{
    (void)state;
    RtTestRng r = {977};
    int masks[4] = {0};
    for (int i = 0; i < 200000; i++) {
        const RtVec3 c = rnd_vec(&r), e = v3_add(v3_scale(rnd_vec(&r), 0.5f), v3(0.01f, 0.01f, 0.01f));
        const RtAabb cell = {v3_sub(c, e), v3_add(c, e)};
        RtVec3 p[3];
        for (int k = 0; k < 3; k++) p[k] = v3_add(v3_sub(c, v3_scale(e, 1.3f)), v3_mul(v3_scale(e, 2.6f), rnd_vec(&r)));
        const int axis = (int)(rt_test_rand(&r) % 3), how = (int)(rt_test_rand(&r) % 8);
        if (how == 0) /* flat on the split axis */
            for (int k = 1; k < 3; k++) v3_set(&p[k], axis, v3_get(p[0], axis));
        const float lo = v3_get(cell.lo, axis), hi = v3_get(cell.hi, axis);
        float pos = lo + (hi - lo) * rt_test_randf(&r);
        if (how <= 2) pos = v3_get(p[rt_test_rand(&r) % 3], axis); /* through a vertex */
        if (how == 3) pos = rt_test_rand(&r) & 1 ? lo : hi;         /* on a face */
        if (pos < lo || pos > hi) continue;
        RtFloat4 v[3];
        for (int k = 0; k < 3; k++) v[k] = f4(p[k].x, p[k].y, p[k].z, 0.0f);
        RtAabb child[2], got[2], want[2];
        kd_child_cells(cell, kd_make_interior(axis, pos, 0), &child[0], &child[1]);
        const int mg = rt_tri_split_boxes(v, cell, axis, pos, child, got);
        const int mw = split_boxes_by_halves(v, cell, axis, pos, child, want);
        if (mg != mw || memcmp(got, want, sizeof got))
            fail_msg("case %d: mask %d, by halves %d (axis %d at %.9g)", i, mg, mw, axis, (double)pos);
        masks[mw]++;
    }
    /* every outcome occurs: missed, either side alone, both */
    for (int m = 0; m < 4; m++) assert_true(masks[m] > 100);
}

/* ---- parameters ------------------------------------------------------------ */

static void kd_bad_params_are_rejected(void **state)
{
    (void)state;
    Soup s = {0};
    soup_add(&s, v3(0, 0, 0), v3(1, 0, 0), v3(0, 1, 0));
    RtKdTree tree = {0};
    RtError err = {0};
    RtKdCpuParams p = rt_kd_cpu_params_default();
    assert_true(p.c_trav == RT_KD_C_TRAV && p.c_isect == RT_KD_C_ISECT && p.empty_bonus == 0.2f && p.max_leaf == 1);
    p.c_isect = 0;
    assert_int_equal(rt_kd_build_cpu(&p, &s.t, &tree, NULL, &err), RT_ERR_ARG);
    assert_non_null(strstr(err.msg, "c_isect"));
    p = rt_kd_cpu_params_default();
    p.empty_bonus = 1.0f;
    assert_int_equal(rt_kd_build_cpu(&p, &s.t, &tree, NULL, &err), RT_ERR_ARG);
    p = rt_kd_cpu_params_default();
    p.max_leaf = 0;
    assert_int_equal(rt_kd_build_cpu(&p, &s.t, &tree, NULL, &err), RT_ERR_ARG);
    p = rt_kd_cpu_params_default();
    p.max_depth = 1000;
    assert_int_equal(rt_kd_build_cpu(&p, &s.t, &tree, NULL, &err), RT_ERR_ARG);
    /* NULL params: the defaults; max_depth and max_leaf are honoured. */
    assert_int_equal(rt_kd_build_cpu(NULL, &s.t, &tree, NULL, &err), RT_OK);
    Soup u = {0};
    RtTestRng r = {131};
    make_uniform(&u, &r, 500);
    p = rt_kd_cpu_params_default();
    p.max_depth = 3;
    p.max_leaf = 8;
    RtKdStats st;
    assert_int_equal(rt_kd_build_cpu(&p, &u.t, &tree, &st, &err), RT_OK);
    assert_true(st.depth <= 3);
    expect_valid(&tree, &u.t);
    rt_kd_tree_free(&tree);
    soup_free(&u);
    soup_free(&s);
}

/* ---- real scenes ------------------------------------------------------------ */

static void check_asset(const char *rel, int rays)
{
    char buf[1024];
    const char *path = rt_test_asset(rel, buf);
    if (!path) skip();
    RtScene scene;
    RtError err = {0};
    if (rt_scene_load(path, &scene, &err) != RT_OK) fail_msg("load %s: %s", path, err.msg);
    RtTriArrays t;
    uint32_t degenerate = 0;
    assert_int_equal(rt_tri_arrays_make(&scene, &t, &degenerate), RT_OK);
    RtKdTree tree = {0};
    RtKdStats st1 = build(&t, 1, &tree);
    RtKdStats st = build(&t, 2, &tree);
    print_message("%s: %u tris (%u degenerate): %u nodes, %u leaves (%u empty), depth %u, "
                  "%llu refs, %.2f tris/leaf, SAH %.2f, build %.0f ms (1 thread), %.0f ms (2)\n",
                  rel, st.triangles, st.degenerate, st.nodes, st.leaves, st.empty_leaves, st.depth,
                  (unsigned long long)st.references, st.avg_tris_per_leaf, st.sah_cost,
                  st1.build_ms, st.build_ms);
    assert_int_equal(st.degenerate, degenerate);
    double t0 = rt_now_ms();
    expect_valid(&tree, &t);
    double t1 = rt_now_ms();
    RtTestRng r = {141};
    /* Brute force over 262K triangles is the cost: Woop for even rays,
     * Moller-Trumbore for odd ones. */
    int bad = compare_rays(&tree, &t, &r, rays, ALTERNATE);
    print_message("%s: %d rays, %d mismatches (validate %.0f ms, rays %.0f ms)\n", rel, rays, bad,
                  t1 - t0, rt_now_ms() - t1);
    assert_int_equal(bad, 0);
    rt_kd_tree_free(&tree);
    rt_tri_arrays_free(&t);
    rt_scene_free(&scene);
}

static void kd_bunny_matches_brute_force(void **state)
{
    (void)state;
    check_asset("models/bunny.obj", 2000);
}

static void kd_sponza_stats_and_brute_force(void **state)
{
    (void)state;
    check_asset("sponza/sponza.obj", 2000);
}

int main(void)
{
    rt_log_set_level(RT_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kd_zero_triangles_build_one_empty_leaf),
        cmocka_unit_test(kd_one_triangle),
        cmocka_unit_test(kd_two_triangles),
        cmocka_unit_test(kd_degenerate_triangles_stay_out),
        cmocka_unit_test(kd_uniform_soup_matches_brute_force),
        cmocka_unit_test(kd_clustered_soup_matches_brute_force),
        cmocka_unit_test(kd_long_thin_triangles_match_brute_force),
        cmocka_unit_test(kd_axis_aligned_triangles_in_candidate_planes),
        cmocka_unit_test(kd_all_triangles_coplanar),
        cmocka_unit_test(kd_duplicates_and_shared_boxes),
        cmocka_unit_test(kd_grid_mesh_edge_and_vertex_hits),
        cmocka_unit_test(kd_huge_and_tiny_coordinates),
        cmocka_unit_test(kd_filter_rejects_and_search_goes_on),
        cmocka_unit_test(kd_same_tree_with_1_2_and_3_threads),
        cmocka_unit_test(kd_sah_cost_below_single_leaf),
        cmocka_unit_test(kd_stats_of_a_hand_made_tree),
        cmocka_unit_test(kd_validate_rejects_broken_trees),
        cmocka_unit_test(kd_validate_loose_references),
        cmocka_unit_test(kd_split_boxes_are_the_halves_boxes),
        cmocka_unit_test(kd_validate_same_message_on_any_thread_count),
        cmocka_unit_test(kd_triangle_box_overlap),
        cmocka_unit_test(kd_clip_box_is_the_perfect_split_box),
        cmocka_unit_test(kd_bad_params_are_rejected),
        cmocka_unit_test(kd_bunny_matches_brute_force),
        cmocka_unit_test(kd_sponza_stats_and_brute_force),
    };
    int failed = cmocka_run_group_tests_name("kd_cpu", tests, NULL, NULL);
    print_message("kd_cpu: %llu rays compared with brute force (synthetic scenes: Woop and "
                  "Moller-Trumbore each; real scenes: one per ray)\n",
                  (unsigned long long)g_rays);
    return failed;
}
