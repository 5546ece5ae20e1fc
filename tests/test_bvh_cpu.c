/* test_bvh_cpu.c — the CPU side of the BVH family: the LBVH's and H-PLOC's
 * trees (the "hploc:" rows run the same tests with H-PLOC) pass
 * rt_bvh_validate on every kind of triangle soup (sizes 0, 1, 2, 3 and
 * random; degenerate, coincident, flat, huge), the traversal's hits equal
 * the brute force's bit for bit (t, triangle, u, v; Woop and
 * Moller-Trumbore; filtered; any-hit), lbvh.h's node ranges equal a
 * top-down split, the tree is the same on any thread count, the SAH cost
 * and the statistics add up, and the validator names what is wrong with a
 * broken tree without ever crashing. H-PLOC's own: its SAH cost is no
 * higher than the LBVH's, every radius and threshold gives a valid tree,
 * and a chain deeper than the tracers' stacks falls back to the radix
 * tree. */
#include "soup.h"
#include "scene/load.h"

#include "bvh/bvh_cpu.h"
#include "bvh/split_top.h"
#include "scene/scene.h"

/* ---- triangle soups ------------------------------------------------------ */

/* n triangles of about `size` around random points of the unit cube, a
 * quarter of them in clusters. */
static void add_random(Soup *s, RtTestRng *r, uint32_t n, float size)
{
    RtVec3 cluster = rnd_vec(r);
    for (uint32_t i = 0; i < n; i++) {
        RtVec3 c = i % 4 == 3 ? v3_add(cluster, v3_scale(rnd_vec(r), 0.05f)) : rnd_vec(r);
        RtVec3 v[3];
        for (int k = 0; k < 3; k++)
            v[k] = v3_add(c, v3_scale(v3_sub(rnd_vec(r), v3(0.5f, 0.5f, 0.5f)), size));
        soup_add(s, v[0], v[1], v[2]);
    }
}

/* A copy of the soup's triangles scaled by `scale` and moved by `offset`. */
static void add_scaled(Soup *s, const Soup *from, float scale, float offset)
{
    for (uint32_t i = 0; i < from->t.count; i++) {
        RtVec3 v[3];
        for (int k = 0; k < 3; k++)
            v[k] = v3_add(v3_scale(f4_xyz(from->t.verts[3 * i + k]), scale),
                          v3(offset, offset, offset));
        soup_add(s, v[0], v[1], v[2]);
    }
}

static uint32_t count_degenerate(const RtTriArrays *t)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->count; i++) n += (uint32_t)rt_kd_tri_degenerate(t, i);
    return n;
}

/* ---- building and checking --------------------------------------------------- */

/* The builder the tests run: 0 the LBVH, 1 H-PLOC (main's "hploc:" rows
 * run the same tests again with it). */
static int g_hploc;

static int use_hploc(void **state)
{
    (void)state;
    g_hploc = 1;
    return 0;
}

static int use_lbvh(void **state)
{
    (void)state;
    g_hploc = 0;
    return 0;
}

static RtBvhStats build(const RtTriArrays *t, int max_leaf, RtBvh *bvh)
{
    RtBvhStats st;
    RtError err = {0};
    RtStatus s;
    if (g_hploc) {
        RtHplocParams p = rt_hploc_params_default();
        p.max_leaf = max_leaf;
        s = rt_hploc_build_cpu(&p, t, bvh, &st, NULL, &err);
    } else {
        RtLbvhParams p = rt_lbvh_params_default();
        p.max_leaf = max_leaf;
        s = rt_lbvh_build_cpu(&p, t, bvh, &st, &err);
    }
    if (s != RT_OK) fail_msg("build: %s", err.msg);
    return st;
}

static void expect_valid(const RtBvh *bvh, const RtTriArrays *t)
{
    RtError err = {0};
    if (rt_bvh_validate(bvh, t, &err) != RT_OK) fail_msg("validate: %s", err.msg);
}

/* The statistics agree with the triangles: every non-degenerate triangle
 * once, leaves no larger than max_leaf. */
static void expect_stats(const RtBvhStats *st, const RtTriArrays *t, int max_leaf)
{
    uint32_t degenerate = count_degenerate(t);
    assert_int_equal(st->triangles, t->count);
    assert_int_equal(st->degenerate, degenerate);
    assert_int_equal(st->references, t->count - degenerate);
    assert_true(st->max_leaf <= (uint32_t)max_leaf);
    assert_true(st->depth <= RT_BVH_MAX_DEPTH);
    if (st->references) assert_true(st->sah_cost > 0.0 && st->nodes >= 1 && st->leaves >= 1);
}

enum { MT = 1, WOOP = 2, BOTH = 3 };

/* The BVH's closest hit equals the brute force's (hit, triangle, t, u, v)
 * and its any-hit says hit when the brute force does, for the methods
 * asked, with or without the filter. Returns the mismatches, printing the
 * first; *hits (may be NULL) counts the rays the brute force hits. */
static int compare_ray(const RtBvh *bvh, const RtTriArrays *t, RtRay ray, float tmin, float tmax,
                       int filtered, unsigned methods, int *hits)
{
    int bad = 0, hit = 0;
    RtHitFilter f = filtered ? filter_odd : NULL;
    for (int woop = 0; woop < 2; woop++) {
        if (!(methods >> woop & 1u)) continue;
        RtHit hv, hb;
        int v = rt_bvh_closest_hit(bvh, t, ray, tmin, tmax, woop, f, NULL, &hv, NULL);
        int b = rt_brute_closest_hit(t, ray, tmin, tmax, woop, f, NULL, &hb);
        int any = rt_bvh_any_hit(bvh, t, ray, tmin, tmax, woop, f, NULL);
        hit |= b;
        if (v != b || any != b || hv.tri != hb.tri || hv.t != hb.t || hv.u != hb.u ||
            hv.v != hb.v) {
            if (bad++ == 0)
                print_message("mismatch (%s%s): o (%.9g %.9g %.9g) d (%.9g %.9g %.9g) [%g, %g]: "
                              "bvh %d tri %u t %.9g u %.9g v %.9g (any %d), brute %d tri %u t %.9g "
                              "u %.9g v %.9g\n",
                              woop ? "Woop" : "MT", filtered ? ", filtered" : "", ray.o.x, ray.o.y,
                              ray.o.z, ray.d.x, ray.d.y, ray.d.z, tmin, tmax, v, hv.tri, hv.t, hv.u,
                              hv.v, any, b, hb.tri, hb.t, hb.u, hb.v);
        }
    }
    if (hits) *hits += hit;
    return bad;
}

/* The boxes of the reachable children, for rays along their faces. */
static uint32_t child_boxes(const RtBvh *bvh, RtAabb *out, uint32_t max)
{
    uint32_t stack[2 * RT_BVH_MAX_DEPTH + 2], m = 0;
    int sp = 0;
    if (bvh->node_count) stack[sp++] = 0;
    while (sp > 0 && m < max) {
        const RtBvhNode *n = &bvh->nodes[stack[--sp]];
        for (int k = 0; k < 2 && m < max; k++) {
            if (bvh_child_is_leaf(n, k) && bvh_child_count(n, k) == 0) continue;
            out[m++] = bvh_child_box(n, k);
            if (!bvh_child_is_leaf(n, k)) stack[sp++] = n->child[k];
        }
    }
    return m;
}

/* A point of a random non-degenerate triangle: a vertex, an edge's middle,
 * or inside (where neighbours tie). */
static RtVec3 point_on_tri(RtTestRng *r, const RtTriArrays *t)
{
    for (int tries = 0; tries < 64; tries++) {
        uint32_t id = rt_test_rand(r) % t->count;
        if (rt_kd_tri_degenerate(t, id)) continue;
        RtVec3 v[3];
        for (int k = 0; k < 3; k++) v[k] = f4_xyz(t->verts[3 * (size_t)id + k]);
        switch (rt_test_rand(r) % 3) {
        case 0:
            return v[rt_test_rand(r) % 3];
        case 1:
            return v3_scale(v3_add(v[0], v[1]), 0.5f);
        default: {
            float a = rt_test_randf(r), b = rt_test_randf(r) * (1.0f - a);
            return v3_add(v[0],
                          v3_add(v3_scale(v3_sub(v[1], v[0]), a), v3_scale(v3_sub(v[2], v[0]), b)));
        }
        }
    }
    return f4_xyz(t->verts[0]);
}

/* n rays of every kind: from outside at the scene, from inside, at
 * triangles' vertices and edges, along child box faces (parallel to
 * them), axis-parallel, and segments. */
static int compare_rays(const RtBvh *bvh, const RtTriArrays *t, RtTestRng *r, int n,
                        unsigned methods, int *hits)
{
    enum { MAX_BOXES = 4096 };
    RtAabb *boxes = malloc(MAX_BOXES * sizeof *boxes);
    assert_non_null(boxes);
    uint32_t nb = child_boxes(bvh, boxes, MAX_BOXES);
    RtAabb b = bvh->bounds;
    if (aabb_is_empty(b)) b = (RtAabb){{0, 0, 0}, {1, 1, 1}};
    RtVec3 centre = v3_scale(v3_add(b.lo, b.hi), 0.5f);
    float radius = v3_len(v3_sub(b.hi, b.lo)) + 1e-30f;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        RtRay ray;
        float tmax = INFINITY;
        switch (i % 6) {
        case 0: /* outside, aimed at a point inside */
            ray.o = v3_add(centre, v3_scale(rnd_dir(r), radius));
            ray.d = v3_sub(point_in(r, b), ray.o);
            break;
        case 1: /* inside */
            ray.o = point_in(r, b);
            ray.d = rnd_dir(r);
            break;
        case 2: /* at a vertex, an edge, a triangle's inside */
            ray.o = v3_add(centre, v3_scale(rnd_dir(r), radius));
            ray.d = t->count ? v3_sub(point_on_tri(r, t), ray.o) : rnd_dir(r);
            break;
        case 3: /* on a child box's face, parallel to it */
            if (nb) {
                RtAabb c = boxes[rt_test_rand(r) % nb];
                int a = (int)(rt_test_rand(r) % 3);
                ray.o = point_in(r, c);
                v3_set(&ray.o, a, rt_test_rand(r) & 1 ? v3_get(c.hi, a) : v3_get(c.lo, a));
                ray.d = rnd_dir(r);
                v3_set(&ray.d, a, 0.0f);
                if (v3_len(ray.d) == 0.0f) v3_set(&ray.d, (a + 1) % 3, 1.0f);
            } else {
                ray.o = point_in(r, b);
                ray.d = rnd_dir(r);
            }
            break;
        case 4: { /* axis-parallel */
            int a = (int)(rt_test_rand(r) % 3);
            ray.o = point_in(r, b);
            v3_set(&ray.o, a, v3_get(b.lo, a) - 0.5f * radius);
            ray.d = v3(0, 0, 0);
            v3_set(&ray.d, a, 1.0f);
            break;
        }
        default: /* a segment (a shadow ray's tmax) from inside */
            ray.o = point_in(r, b);
            ray.d = rnd_dir(r);
            tmax = rt_test_randf(r) * radius;
            break;
        }
        unsigned m = methods == BOTH ? BOTH : (i & 1) ? MT : WOOP;
        bad += compare_ray(bvh, t, ray, 0.0f, tmax, i % 4 == 0, m, hits);
    }
    free(boxes);
    return bad;
}

/* Build (max_leaf), validate, check the statistics, compare n rays. */
static RtBvhStats check_scene(const char *name, const RtTriArrays *t, int max_leaf, int rays,
                              unsigned methods, uint64_t seed)
{
    RtBvh bvh = {0};
    RtBvhStats st = build(t, max_leaf, &bvh);
    double t0 = rt_now_ms();
    expect_valid(&bvh, t);
    double t1 = rt_now_ms();
    expect_stats(&st, t, max_leaf);
    RtTestRng r = {seed};
    int hits = 0, bad = compare_rays(&bvh, t, &r, rays, methods, &hits);
    print_message("%s (max_leaf %d): %u tris (%u degenerate), %u nodes, %u leaves, depth %u, "
                  "SAH %.2f, %d rays (%d hits), %d mismatches (build %.1f ms, validate %.1f ms, "
                  "rays %.0f ms)\n",
                  name, max_leaf, t->count, st.degenerate, st.nodes, st.leaves, st.depth,
                  st.sah_cost, rays, hits, bad, st.build_ms, t1 - t0, rt_now_ms() - t1);
    rt_bvh_free(&bvh);
    assert_int_equal(bad, 0);
    return st;
}

/* ---- parameters, sizes 0 to 3 ------------------------------------------------ */

static void bvh_params_defaults_and_bad_values(void **state)
{
    (void)state;
    RtError err = {0};
    RtLbvhParams p = rt_lbvh_params_default();
    assert_true(p.c_trav == 1.0f && p.c_isect == 1.5f && p.max_leaf == 8);
    assert_int_equal(rt_lbvh_params_check(&p, &err), RT_OK);
    const struct {
        float c_trav, c_isect;
        int max_leaf;
        const char *names;
    } bad[] = {{-1.0f, 1.5f, 8, "c_trav"},  {NAN, 1.5f, 8, "c_trav"},
               {1.0f, 0.0f, 8, "c_isect"},  {1.0f, INFINITY, 8, "c_isect"},
               {1.0f, 1.5f, 0, "max_leaf"}, {1.0f, 1.5f, (int)RT_BVH_MAX_LEAF + 1, "max_leaf"}};
    Soup s = {0};
    soup_add(&s, v3(0, 0, 0), v3(1, 0, 0), v3(0, 1, 0));
    RtBvh bvh = {0};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        p = (RtLbvhParams){bad[i].c_trav, bad[i].c_isect, bad[i].max_leaf};
        assert_int_equal(rt_lbvh_params_check(&p, &err), RT_ERR_ARG);
        rt_test_assert_contains(err.msg, bad[i].names);
        rt_test_assert_contains(err.msg, "BVH:");
        assert_int_equal(rt_lbvh_build_cpu(&p, &s.t, &bvh, NULL, &err), RT_ERR_ARG);
    }
    /* NULL parameters: the defaults; NULL statistics are fine. */
    assert_int_equal(rt_lbvh_build_cpu(NULL, &s.t, &bvh, NULL, &err), RT_OK);
    expect_valid(&bvh, &s.t);
    rt_bvh_free(&bvh);
    soup_free(&s);
}

static void bvh_zero_triangles_build_an_empty_tree(void **state)
{
    (void)state;
    RtTriArrays none = {0};
    RtBvh bvh = {0};
    RtBvhStats st = build(&none, 8, &bvh);
    assert_int_equal(bvh.node_count, 0);
    assert_int_equal(bvh.index_count, 0);
    assert_true(aabb_is_empty(bvh.bounds));
    assert_int_equal(st.nodes, 0);
    assert_int_equal(st.leaves, 0);
    assert_true(st.sah_cost == 0.0);
    expect_valid(&bvh, &none);
    RtRay ray = {v3(0, 0, -1), v3(0, 0, 1)};
    RtHit h;
    uint32_t steps = 0;
    assert_false(rt_bvh_closest_hit(&bvh, &none, ray, 0, INFINITY, 1, NULL, NULL, &h, &steps));
    assert_int_equal(h.tri, RT_NO_HIT);
    assert_int_equal(steps, 0);
    assert_false(rt_bvh_any_hit(&bvh, &none, ray, 0, INFINITY, 1, NULL, NULL));
    rt_bvh_free(&bvh);
}

static void bvh_one_triangle_is_a_root_with_an_empty_leaf(void **state)
{
    (void)state;
    Soup s = {0};
    soup_add(&s, v3(0, 0, 0), v3(1, 0, 0), v3(0, 1, 0));
    RtBvh bvh = {0};
    RtBvhStats st = build(&s.t, 8, &bvh);
    assert_int_equal(bvh.node_count, 1);
    assert_int_equal(bvh.index_count, 1);
    const RtBvhNode *root = &bvh.nodes[0];
    assert_true(bvh_child_is_leaf(root, 0) && bvh_child_count(root, 0) == 1 && root->child[0] == 0);
    assert_true(bvh_child_is_leaf(root, 1) && bvh_child_count(root, 1) == 0);
    assert_true(bvh_is_never_box(bvh_child_box(root, 1))); /* no walk's slab test passes it */
    assert_true(bvh.bounds.lo.x == 0 && bvh.bounds.hi.x == 1 && bvh.bounds.hi.y == 1 &&
                bvh.bounds.hi.z == 0);
    assert_int_equal(st.nodes, 1);
    assert_int_equal(st.leaves, 1);
    assert_int_equal(st.depth, 1);
    expect_valid(&bvh, &s.t);
    for (int woop = 0; woop < 2; woop++) {
        RtHit h;
        uint32_t steps = 5; /* steps add up */
        RtRay ray = {v3(0.25f, 0.25f, 2), v3(0, 0, -1)};
        assert_true(rt_bvh_closest_hit(&bvh, &s.t, ray, 0, INFINITY, woop, NULL, NULL, &h, &steps));
        assert_int_equal(h.tri, 0);
        assert_float_equal(h.t, 2.0f, 1e-6f);
        assert_int_equal(steps, 6);
        ray.o = v3(0.75f, 0.75f, 2); /* beside the hypotenuse */
        assert_false(rt_bvh_closest_hit(&bvh, &s.t, ray, 0, INFINITY, woop, NULL, NULL, &h, NULL));
        ray.o = v3(0.25f, 0.25f, 2); /* beyond tmax */
        assert_false(rt_bvh_closest_hit(&bvh, &s.t, ray, 0, 1.5f, woop, NULL, NULL, &h, NULL));
        assert_false(rt_bvh_any_hit(&bvh, &s.t, ray, 0, 1.5f, woop, NULL, NULL));
        /* non-finite rays hit nothing */
        RtRay nan_o = {v3(NAN, 0.25f, 2), v3(0, 0, -1)},
              inf_d = {v3(0.25f, 0.25f, 2), v3(0, 0, -INFINITY)};
        RtRay zero_d = {v3(0.25f, 0.25f, 2), v3(0, 0, 0)};
        assert_false(
            rt_bvh_closest_hit(&bvh, &s.t, nan_o, 0, INFINITY, woop, NULL, NULL, &h, NULL));
        assert_false(
            rt_bvh_closest_hit(&bvh, &s.t, inf_d, 0, INFINITY, woop, NULL, NULL, &h, NULL));
        assert_false(rt_bvh_any_hit(&bvh, &s.t, zero_d, 0, INFINITY, woop, NULL, NULL));
    }
    rt_bvh_free(&bvh);
    check_scene("one triangle", &s.t, 8, 600, BOTH, 11);
    soup_free(&s);
}

static void bvh_two_and_three_triangles_match_brute_force(void **state)
{
    (void)state;
    Soup s = {0};
    soup_add(&s, v3(0, 0, 0), v3(1, 0, 0), v3(0, 1, 0));
    soup_add(&s, v3(0, 0, 1), v3(1, 0, 1), v3(0, 1, 1));
    RtBvh bvh = {0};
    build(&s.t, 1, &bvh);
    assert_int_equal(bvh.node_count, 1);
    assert_true(bvh_child_is_leaf(&bvh.nodes[0], 0) && bvh_child_is_leaf(&bvh.nodes[0], 1));
    RtHit h;
    RtRay up = {v3(0.2f, 0.2f, -1), v3(0, 0, 1)}, down = {v3(0.2f, 0.2f, 2), v3(0, 0, -1)};
    assert_true(rt_bvh_closest_hit(&bvh, &s.t, up, 0, INFINITY, 1, NULL, NULL, &h, NULL));
    assert_int_equal(h.tri, 0);
    assert_true(rt_bvh_closest_hit(&bvh, &s.t, down, 0, INFINITY, 0, NULL, NULL, &h, NULL));
    assert_int_equal(h.tri, 1);
    rt_bvh_free(&bvh);
    for (int max_leaf = 1; max_leaf <= 8; max_leaf += 7)
        check_scene("two triangles", &s.t, max_leaf, 600, BOTH, 12);
    soup_add(&s, v3(2, 0, 0), v3(3, 0, 0), v3(2, 1, 0.5f));
    for (int max_leaf = 1; max_leaf <= 8; max_leaf += 7)
        check_scene("three triangles", &s.t, max_leaf, 600, BOTH, 13);
    soup_free(&s);
}

/* ---- soups against brute force -------------------------------------------------- */

static void bvh_random_soups_match_brute_force(void **state)
{
    (void)state;
    const uint32_t sizes[] = {100, 10000};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        Soup s = {0};
        RtTestRng r = {21 + i};
        add_random(&s, &r, sizes[i], sizes[i] > 1000 ? 0.04f : 0.15f);
        char name[64];
        snprintf(name, sizeof name, "random %u", sizes[i]);
        check_scene(name, &s.t, 8, sizes[i] > 1000 ? 3000 : 6000, sizes[i] > 1000 ? 0 : BOTH,
                    22 + i);
        soup_free(&s);
    }
}

/* Tests run from the repository root (tests/run.sh); a binary started
 * elsewhere still finds the scenes when __FILE__ is absolute. */
static const char *src_path(const char *rel, char *buf)
{
    const char *me = __FILE__, *tail = strstr(me, "tests/test_bvh_cpu.c");
    snprintf(buf, 1024, "%.*s%s", tail ? (int)(tail - me) : 0, me, rel);
    return buf;
}

static void check_scene_of(const char *name, RtScene *scene, int rays, uint64_t seed)
{
    RtTriArrays t;
    uint32_t degenerate = 0;
    assert_int_equal(rt_tri_arrays_make(scene, &t, &degenerate), RT_OK);
    RtBvhStats st = check_scene(name, &t, 8, rays, BOTH, seed);
    assert_int_equal(st.degenerate, degenerate);
    rt_tri_arrays_free(&t);
    rt_scene_free(scene);
}

static void bvh_default_scene_matches_brute_force(void **state)
{
    (void)state;
    RtScene scene;
    RtError err = {0};
    if (rt_scene_make_default(&scene, &err) != RT_OK) fail_msg("default scene: %s", err.msg);
    check_scene_of("default scene", &scene, 2000, 31);
}

static void bvh_cornell_box_matches_brute_force(void **state)
{
    (void)state;
    char path[1024];
    RtScene scene;
    RtError err = {0};
    if (rt_scene_load(src_path("scenes/cornell.scene", path), &scene, &err) != RT_OK)
        fail_msg("load %s: %s", path, err.msg);
    check_scene_of("Cornell box", &scene, 4000, 32);
}

/* ---- awkward soups ------------------------------------------------------------------ */

static void bvh_all_triangles_at_one_point_build_an_empty_tree(void **state)
{
    (void)state;
    Soup s = {0};
    for (int i = 0; i < 50; i++)
        soup_add(&s, v3(0.5f, 0.5f, 0.5f), v3(0.5f, 0.5f, 0.5f), v3(0.5f, 0.5f, 0.5f));
    RtBvh bvh = {0};
    RtBvhStats st = build(&s.t, 8, &bvh);
    assert_int_equal(bvh.node_count, 0);
    assert_int_equal(bvh.index_count, 50); /* the degenerate ids, sorted, unreferenced */
    for (uint32_t i = 0; i < 50; i++) assert_int_equal(bvh.tri_index[i], i);
    assert_true(aabb_is_empty(bvh.bounds));
    assert_int_equal(st.degenerate, 50);
    assert_int_equal(st.references, 0);
    expect_valid(&bvh, &s.t);
    RtRay ray = {v3(0.5f, 0.5f, -1), v3(0, 0, 1)};
    RtHit h;
    assert_false(rt_bvh_closest_hit(&bvh, &s.t, ray, 0, INFINITY, 1, NULL, NULL, &h, NULL));
    assert_false(rt_brute_closest_hit(&s.t, ray, 0, INFINITY, 1, NULL, NULL, &h));
    /* A builder that sizes its arrays by the input count (the GPU's) may
     * leave a root of two empty leaves instead: as valid, as empty. */
    RtBvhNode root;
    memset(&root, 0, sizeof root);
    bvh_set_empty_child(&root, 0);
    bvh_set_empty_child(&root, 1);
    RtBvh sized = {&root, bvh.tri_index, 1, 50, 1, 50, aabb_empty(), NULL};
    expect_valid(&sized, &s.t);
    /* an empty leaf with any other box would be entered by the GPU walk,
     * which tests no counts: the validator refuses it */
    RtError err = {0};
    bvh_set_child(&root, 1, aabb_empty(), 1, 0, 0);
    assert_int_equal(rt_bvh_validate(&sized, &s.t, &err), RT_ERR_PARSE);
    assert_non_null(strstr(err.msg, "empty leaf's box"));
    bvh_set_empty_child(&root, 1);
    uint32_t steps = 0;
    assert_false(rt_bvh_closest_hit(&sized, &s.t, ray, 0, INFINITY, 0, NULL, NULL, &h, &steps));
    assert_false(rt_bvh_any_hit(&sized, &s.t, ray, 0, INFINITY, 1, NULL, NULL));
    rt_bvh_free(&bvh);
    soup_free(&s);
}

/* Hundreds of copies of one triangle: one Morton code, told apart by the
 * index (Karras's augmented keys); the hit goes to the lowest id. */
static void bvh_identical_triangles_share_one_morton_code(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {41};
    add_random(&s, &r, 200, 0.1f);
    for (int i = 0; i < 600; i++)
        soup_add(&s, v3(0.2f, 0.3f, 0.4f), v3(0.7f, 0.35f, 0.5f), v3(0.4f, 0.8f, 0.6f));
    check_scene("identical", &s.t, 8, 4000, BOTH, 42);
    RtBvh bvh = {0};
    build(&s.t, 1, &bvh);
    expect_valid(&bvh, &s.t);
    RtRay ray = {v3(0.45f, 0.45f, -1), v3(0, 0, 1)};
    RtHit h, hb;
    assert_true(rt_bvh_closest_hit(&bvh, &s.t, ray, 0, INFINITY, 1, NULL, NULL, &h, NULL));
    assert_true(rt_brute_closest_hit(&s.t, ray, 0, INFINITY, 1, NULL, NULL, &hb));
    assert_int_equal(h.tri, hb.tri);
    assert_true(h.tri <= 200); /* the first copy, unless a random one is in front */
    rt_bvh_free(&bvh);
    for (int max_leaf = 1; max_leaf <= 16; max_leaf *= 4)
        check_scene("identical", &s.t, max_leaf, 1500, BOTH, 43);
    soup_free(&s);
}

/* Triangles scaled about one centre: one box centre, one Morton code, boxes
 * from tiny to the whole scene nested in each other. */
static void bvh_same_centroid_different_sizes(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {51};
    const RtVec3 c = v3(0.5f, 0.5f, 0.5f);
    for (int i = 0; i < 400; i++) {
        float size = ldexpf(1.0f, -(int)(rt_test_rand(&r) % 12));
        RtVec3 d = rnd_dir(&r), e = rnd_dir(&r);
        /* symmetric about c, so its box's centre is c */
        soup_add(&s, v3_add(c, v3_scale(d, size)), v3_sub(c, v3_scale(d, size)),
                 v3_add(c, v3_scale(e, size)));
    }
    add_random(&s, &r, 200, 0.1f);
    check_scene("same centre", &s.t, 8, 4000, BOTH, 52);
    check_scene("same centre", &s.t, 1, 1500, BOTH, 53);
    soup_free(&s);
}

static void bvh_non_finite_vertices_are_left_out(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {61};
    for (int i = 0; i < 100; i++) {
        add_random(&s, &r, 5, 0.1f);
        RtVec3 v[3] = {rnd_vec(&r), rnd_vec(&r), rnd_vec(&r)};
        const float bad[3] = {NAN, INFINITY, -INFINITY};
        v3_set(&v[i % 3], (i / 3) % 3, bad[(i / 9) % 3]);
        soup_add(&s, v[0], v[1], v[2]);
    }
    soup_add(&s, v3(0, 0, 0), v3(1e30f, 0, 0), v3(0, 1e30f, 0)); /* its area overflows */
    soup_add(&s, v3(0, 0, 0), v3(1, 1, 1), v3(2, 2, 2));         /* collinear */
    RtBvhStats st = check_scene("non-finite", &s.t, 8, 4000, BOTH, 62);
    assert_int_equal(st.degenerate, 102);
    RtBvh bvh = {0};
    build(&s.t, 8, &bvh);
    assert_true(isfinite(bvh.bounds.hi.x) && bvh.bounds.hi.x < 2.0f);
    for (uint32_t k = 0; k < bvh.index_count; k++) /* the valid ids first, then the left out */
        assert_int_equal(rt_kd_tri_degenerate(&s.t, bvh.tri_index[k]), k >= s.t.count - 102);
    rt_bvh_free(&bvh);
    soup_free(&s);
}

static void bvh_huge_and_tiny_coordinates(void **state)
{
    (void)state;
    /* Woop's determinant |n|^2 limits the sizes: edges of 1e-7 to 1e8. */
    const float scales[3] = {1e9f, 1.0f, 1e-6f}, offsets[3] = {0.0f, 1e5f, 0.0f};
    Soup unit = {0};
    RtTestRng r = {71};
    add_random(&unit, &r, 1500, 0.08f);
    for (int k = 0; k < 3; k++) {
        Soup s = {0};
        add_scaled(&s, &unit, scales[k], offsets[k]);
        char name[64];
        snprintf(name, sizeof name, "scale %g offset %g", scales[k], offsets[k]);
        check_scene(name, &s.t, 8, 2000, BOTH, 72 + (uint64_t)k);
        soup_free(&s);
    }
    soup_free(&unit);
}

/* Everything in z = 0: a flat scene box, z quantises to 0 for every code. */
static void bvh_flat_scene_matches_brute_force(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {81};
    for (int i = 0; i < 1500; i++) {
        RtVec3 c = v3(rt_test_randf(&r), rt_test_randf(&r), 0), v[3];
        for (int k = 0; k < 3; k++)
            v[k] = v3_add(
                c, v3((rt_test_randf(&r) - 0.5f) * 0.06f, (rt_test_randf(&r) - 0.5f) * 0.06f, 0));
        soup_add(&s, v[0], v[1], v[2]);
    }
    RtBvh bvh = {0};
    build(&s.t, 8, &bvh);
    assert_true(bvh.bounds.lo.z == 0.0f && bvh.bounds.hi.z == 0.0f);
    RtTestRng q = {82};
    int bad = 0;
    for (int i = 0; i < 1000; i++) { /* in the plane: Woop and Moller-Trumbore both miss */
        RtRay along = {v3(rt_test_randf(&q), rt_test_randf(&q), 0), rnd_dir(&q)};
        along.d.z = 0.0f;
        bad += compare_ray(&bvh, &s.t, along, 0, INFINITY, 0, BOTH, NULL);
    }
    assert_int_equal(bad, 0);
    rt_bvh_free(&bvh);
    check_scene("flat", &s.t, 8, 4000, BOTH, 83);
    soup_free(&s);
}

static void bvh_max_leaf_1_8_16_are_valid_and_exact(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {91};
    add_random(&s, &r, 3000, 0.05f);
    /* Collapsed subtrees leave unreachable nodes; so may arrays longer
     * than the tree (sized by the input count): garbage there is no fault. */
    RtBvh bvh = {0};
    build(&s.t, 8, &bvh);
    uint32_t n = bvh.node_count;
    assert_true(rt_reserve_array((void **)&bvh.nodes, &bvh.node_cap, n + 100, sizeof *bvh.nodes));
    memset(&bvh.nodes[n], 0xa5, 100 * sizeof *bvh.nodes);
    bvh.node_count = n + 100;
    expect_valid(&bvh, &s.t);
    rt_bvh_free(&bvh);
    const int sizes[3] = {1, 8, 16};
    for (int i = 0; i < 3; i++) {
        RtBvhStats st = check_scene("soup", &s.t, sizes[i], 2000, 0, 92);
        if (sizes[i] == 1) { /* Karras's tree as it is: n - 1 nodes, n leaves of one */
            assert_int_equal(st.nodes, s.t.count - 1);
            assert_int_equal(st.leaves, s.t.count);
            assert_int_equal(st.max_leaf, 1);
        } else {
            assert_true(st.nodes < s.t.count - 1 && st.max_leaf > 1);
        }
    }
    soup_free(&s);
}

/* ---- filters ---------------------------------------------------------------------------- */

/* Four unit squares at z = 0, 1, 2, 3 under a ray up from z = -1 that
 * crosses triangles 0, 2, 4, 6 at t = 1, 2, 3, 4: a filter that cuts the
 * nearest away leaves the search to go on behind them. */
static void bvh_filter_rejects_and_search_goes_on(void **state)
{
    (void)state;
    Soup s = {0};
    for (float z = 0.0f; z < 4.0f; z += 1.0f) {
        RtVec3 p[4] = {v3(0, 0, z), v3(1, 0, z), v3(1, 1, z), v3(0, 1, z)};
        soup_add(&s, p[0], p[1], p[2]);
        soup_add(&s, p[0], p[2], p[3]);
    }
    RtBvh bvh = {0};
    build(&s.t, 1, &bvh);
    const RtRay ray = {v3(0.7f, 0.2f, -1), v3(0, 0, 1)};
    /* reject_below's bound, tmax: the hit expected (RT_NO_HIT: none) */
    const struct {
        uint32_t below;
        float tmax;
        uint32_t tri;
    } cases[] = {{0, INFINITY, 0},
                 {1, INFINITY, 2},
                 {5, INFINITY, 6},
                 {5, 3.5f, RT_NO_HIT},
                 {7, INFINITY, RT_NO_HIT}};
    for (int woop = 0; woop < 2; woop++)
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            RtHit h;
            int hit = rt_bvh_closest_hit(&bvh, &s.t, ray, 0, cases[i].tmax, woop, reject_below,
                                         &cases[i].below, &h, NULL);
            assert_int_equal(h.tri, cases[i].tri);
            assert_int_equal(hit, cases[i].tri != RT_NO_HIT);
            if (hit) assert_float_equal(h.t, 1.0f + (float)(h.tri / 2), 1e-6f);
            assert_int_equal(rt_bvh_any_hit(&bvh, &s.t, ray, 0, cases[i].tmax, woop, reject_below,
                                            &cases[i].below),
                             hit);
            /* a filter that rejects everything finds nothing, but is asked */
            int calls = 0;
            assert_false(rt_bvh_closest_hit(&bvh, &s.t, ray, 0, INFINITY, woop, reject_all, &calls,
                                            &h, NULL));
            assert_false(rt_bvh_any_hit(&bvh, &s.t, ray, 0, INFINITY, woop, reject_all, &calls));
            assert_int_equal(calls, 8); /* each crossed triangle, once per search */
        }
    rt_bvh_free(&bvh);
    soup_free(&s);
}

/* ---- the arithmetic and the determinism -------------------------------------------------- */

/* Karras's node i by a top-down split, independent of lbvh_node_range's
 * searches: a range of sorted augmented keys (code, index) splits where
 * its highest differing bit changes; the left child is internal node
 * split, the right split + 1, a child of one key a leaf. Checks every node
 * it reaches and counts them. */
static uint32_t top_down(const uint32_t *codes, uint32_t n, uint32_t first, uint32_t last,
                         uint32_t node, uint32_t *seen)
{
    uint64_t kf = (uint64_t)codes[first] << 32 | first, kl = (uint64_t)codes[last] << 32 | last;
    int prefix = __builtin_clzll(kf ^ kl);
    uint32_t split = first;
    while (split + 1 < last &&
           __builtin_clzll(kf ^ ((uint64_t)codes[split + 1] << 32 | (split + 1))) > prefix)
        split++;
    uint32_t f, l, s;
    lbvh_node_range(codes, n, node, &f, &l, &s);
    if (f != first || l != last || s != split)
        fail_msg("n %u node %u: range [%u, %u] split %u, top-down [%u, %u] split %u", n, node, f, l,
                 s, first, last, split);
    assert_false(seen[node]++);
    uint32_t count = 1;
    if (split > first) count += top_down(codes, n, first, split, split, seen);
    if (split + 1 < last) count += top_down(codes, n, split + 1, last, split + 1, seen);
    return count;
}

static void lbvh_node_ranges_match_a_top_down_split(void **state)
{
    (void)state;
    RtTestRng r = {101};
    const uint32_t sizes[] = {2, 3, 4, 5, 17, 100, 1000, 4097};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (int spread = 0; spread < 3; spread++) {
            /* codes from one value (all equal) to the full 30 bits, sorted */
            const uint32_t n = sizes[i], range = spread == 0 ? 1 : spread == 1 ? 8 : 1u << 30;
            uint32_t *codes = malloc(n * sizeof *codes), *seen = calloc(n, sizeof *seen);
            for (uint32_t k = 0; k < n; k++) codes[k] = rt_test_rand(&r) % range;
            for (uint32_t k = 1; k < n; k++) /* insertion sort: the sizes are small */
                for (uint32_t j = k; j > 0 && codes[j - 1] > codes[j]; j--) {
                    uint32_t t = codes[j];
                    codes[j] = codes[j - 1];
                    codes[j - 1] = t;
                }
            assert_int_equal(top_down(codes, n, 0, n - 1, 0, seen), n - 1);
            free(codes);
            free(seen);
        }
}

/* Both builders' leaf_woop: entry k holds the Woop rows of tri_index[k]'s
 * triangle (what the GPU walk tests), for 0, 1 and random triangles; a
 * rebuild over triangles without Woop rows drops the old copy. */
static void bvh_leaf_woop_rows_follow_tri_index(void **state)
{
    (void)state;
    RtTestRng r = {77};
    const uint32_t sizes[] = {0, 1, 2, 1000};
    for (int builder = 0; builder < 2; builder++)
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            Soup s = {0};
            add_random(&s, &r, sizes[i], 0.2f);
            RtBvh bvh;
            memset(&bvh, 0, sizeof bvh);
            RtError err = {0};
            assert_int_equal(builder ? rt_hploc_build_cpu(NULL, &s.t, &bvh, NULL, NULL, &err)
                                     : rt_lbvh_build_cpu(NULL, &s.t, &bvh, NULL, &err),
                             RT_OK);
            assert_int_equal(bvh.index_count, sizes[i]);
            if (sizes[i]) assert_non_null(bvh.leaf_woop);
            for (uint32_t k = 0; k < bvh.index_count; k++)
                assert_memory_equal(&bvh.leaf_woop[3 * (size_t)k], &s.t.woop[3 * (size_t)bvh.tri_index[k]],
                                    3 * sizeof *bvh.leaf_woop);
            RtTriArrays no_rows = s.t;
            no_rows.woop = NULL;
            assert_int_equal(builder ? rt_hploc_build_cpu(NULL, &no_rows, &bvh, NULL, NULL, &err)
                                     : rt_lbvh_build_cpu(NULL, &no_rows, &bvh, NULL, &err),
                             RT_OK);
            assert_null(bvh.leaf_woop);
            rt_bvh_free(&bvh);
            soup_free(&s);
        }
}

static int same_bvh(const RtBvh *a, const RtBvh *b)
{
    return a->node_count == b->node_count && a->index_count == b->index_count &&
           !memcmp(a->nodes, b->nodes, a->node_count * sizeof *a->nodes) &&
           !memcmp(a->tri_index, b->tri_index, a->index_count * sizeof *a->tri_index) &&
           !memcmp(&a->bounds, &b->bounds, sizeof a->bounds);
}

/* Build on `threads` threads (RT_THREADS, read by rt_thread_count). */
static RtBvhStats build_on(const RtTriArrays *t, int threads, RtBvh *bvh)
{
    char n[16];
    snprintf(n, sizeof n, "%d", threads);
    setenv("RT_THREADS", n, 1);
    RtBvhStats st = build(t, 8, bvh);
    unsetenv("RT_THREADS");
    return st;
}

static void bvh_same_tree_on_any_thread_count(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {111};
    /* more triangles than one chunk of each step (the radix sort's: 64K) */
    add_random(&s, &r, 150000, 0.01f);
    for (int i = 0; i < 2000; i++)
        soup_add(&s, v3(0.1f, 0.1f, 0.1f), v3(0.2f, 0.1f, 0.1f), v3(0.1f, 0.2f, 0.1f));
    RtBvh b1 = {0}, b2 = {0}, b3 = {0};
    build_on(&s.t, 1, &b1);
    build_on(&s.t, 2, &b2);
    build_on(&s.t, 3, &b3);
    assert_true(same_bvh(&b1, &b2));
    assert_true(same_bvh(&b1, &b3));
    expect_valid(&b2, &s.t);
    /* rebuilding into a used BVH reuses its arrays and gives the same tree */
    RtBvhNode *nodes = b3.nodes;
    build_on(&s.t, 2, &b3);
    assert_true(b3.nodes == nodes);
    assert_true(same_bvh(&b1, &b3));
    /* and a smaller scene into it, then the first again */
    Soup small = {0};
    add_random(&small, &r, 300, 0.1f);
    build_on(&small.t, 2, &b3);
    expect_valid(&b3, &small.t);
    build_on(&s.t, 2, &b3);
    assert_true(same_bvh(&b1, &b3));
    rt_bvh_free(&b1);
    rt_bvh_free(&b2);
    rt_bvh_free(&b3);
    soup_free(&small);
    soup_free(&s);
}

/* ---- SAH cost, statistics -------------------------------------------------------------- */

static void bvh_sah_max_leaf_8_no_worse_than_1(void **state)
{
    (void)state;
    RtScene scene;
    RtError err = {0};
    if (rt_scene_make_default(&scene, &err) != RT_OK) fail_msg("default scene: %s", err.msg);
    RtTriArrays t;
    assert_int_equal(rt_tri_arrays_make(&scene, &t, NULL), RT_OK);
    Soup s = {0};
    RtTestRng r = {121};
    add_random(&s, &r, 5000, 0.03f);
    const RtTriArrays *scenes[2] = {&t, &s.t};
    for (int i = 0; i < 2; i++) {
        RtBvh bvh = {0};
        RtBvhStats one = build(scenes[i], 1, &bvh), eight = build(scenes[i], 8, &bvh);
        print_message("SAH %s: max_leaf 1 %.3f (%u nodes), 8 %.3f (%u nodes, %.2f tris/leaf)\n",
                      i ? "soup" : "default scene", one.sah_cost, one.nodes, eight.sah_cost,
                      eight.nodes, eight.avg_tris_per_leaf);
        /* a subtree is collapsed only where that costs no more */
        assert_true(eight.sah_cost <= one.sah_cost * (1.0 + 1e-6));
        assert_true(eight.references == one.references &&
                    one.references == scenes[i]->count - count_degenerate(scenes[i]));
        rt_bvh_free(&bvh);
    }
    soup_free(&s);
    rt_tri_arrays_free(&t);
    rt_scene_free(&scene);
}

/* Root [0,2]x[0,1]x[0,1] (area 10): a leaf of two triangles in [0,1]^3
 * (area 6) and one of a triangle in the face x = 2 (area 2):
 * 1 * 10/10 + 1.5 * 2 * 6/10 + 1.5 * 1 * 2/10 = 3.1. */
static void bvh_stats_of_a_hand_made_tree(void **state)
{
    (void)state;
    Soup s = {0};
    soup_add(&s, v3(0, 0, 0), v3(1, 0, 0), v3(0, 1, 1));
    soup_add(&s, v3(0, 1, 0), v3(1, 1, 1), v3(0, 0, 1));
    soup_add(&s, v3(2, 0, 0), v3(2, 1, 0), v3(2, 1, 1));
    RtBvhNode node;
    memset(&node, 0, sizeof node);
    bvh_set_child(&node, 0, (RtAabb){{0, 0, 0}, {1, 1, 1}}, 1, 0, 2);
    bvh_set_child(&node, 1, (RtAabb){{2, 0, 0}, {2, 1, 1}}, 1, 2, 1);
    uint32_t idx[3] = {0, 1, 2};
    RtBvh t = {&node, idx, 1, 3, 1, 3, {{0, 0, 0}, {2, 1, 1}}, NULL};
    expect_valid(&t, &s.t);
    RtBvhStats st;
    rt_bvh_tree_stats(&t, &s.t, 1.0f, 1.5f, &st);
    assert_int_equal(st.nodes, 1);
    assert_int_equal(st.leaves, 2);
    assert_int_equal(st.depth, 1);
    assert_int_equal(st.max_leaf, 2);
    assert_int_equal(st.references, 3);
    assert_int_equal(st.triangles, 3);
    assert_int_equal(st.degenerate, 0);
    assert_float_equal(st.avg_tris_per_leaf, 1.5, 1e-9);
    assert_float_equal(st.sah_cost, 1.0 + 1.5 * 2 * 0.6 + 1.5 * 1 * 0.2, 1e-9);
    soup_free(&s);
}

/* When a build copies the leaf triangles' rows (the pipeline's leafrows):
 * on and off as asked, auto from RT_BVH_LEAF_ROWS_PIXELS pixels a
 * triangle on: Sponza at 1080p yes, the 10M grid at 720p no. */
static void bvh_leaf_rows_pay_where_rays_outnumber_triangles(void **state)
{
    (void)state;
    const double hd = 1920.0 * 1080.0, p720 = 1280.0 * 720.0;
    assert_true(rt_bvh_leaf_rows_pay(RT_BVH_LEAF_ROWS_ON, 1.0, 1e7));
    assert_false(rt_bvh_leaf_rows_pay(RT_BVH_LEAF_ROWS_OFF, hd, 1.0));
    assert_true(rt_bvh_leaf_rows_pay(RT_BVH_LEAF_ROWS_AUTO, hd, 262205.0));
    assert_false(rt_bvh_leaf_rows_pay(RT_BVH_LEAF_ROWS_AUTO, p720, 1e7));
    const double tris = 1000.0;
    assert_true(rt_bvh_leaf_rows_pay(RT_BVH_LEAF_ROWS_AUTO, RT_BVH_LEAF_ROWS_PIXELS * tris, tris));
    assert_false(rt_bvh_leaf_rows_pay(RT_BVH_LEAF_ROWS_AUTO, RT_BVH_LEAF_ROWS_PIXELS * tris - 1.0, tris));
    assert_true(rt_bvh_leaf_rows_pay(RT_BVH_LEAF_ROWS_AUTO, 1.0, 0.0)); /* no triangles: nothing to copy anyway */
}

/* ---- the validator on broken trees --------------------------------------------------------- */

static void expect_invalid(const RtBvh *b, const RtTriArrays *t, const char *names)
{
    RtError err = {0};
    RtStatus st = rt_bvh_validate(b, t, &err);
    if (st == RT_OK) fail_msg("validate accepted a tree that should fail with \"%s\"", names);
    assert_int_equal(st, RT_ERR_PARSE);
    rt_test_assert_contains(err.msg, "BVH: ");
    rt_test_assert_contains(err.msg, names);
}

/* A reachable node whose child k is a leaf of at least `min` triangles. */
static uint32_t find_leaf(const RtBvh *b, uint32_t min, int *k)
{
    uint32_t stack[2 * RT_BVH_MAX_DEPTH + 2];
    int sp = 0;
    stack[sp++] = 0;
    while (sp > 0) {
        uint32_t i = stack[--sp];
        for (*k = 0; *k < 2; (*k)++) {
            if (!bvh_child_is_leaf(&b->nodes[i], *k))
                stack[sp++] = b->nodes[i].child[*k];
            else if (bvh_child_count(&b->nodes[i], *k) >= min)
                return i;
        }
    }
    fail_msg("no leaf of %u triangles", min);
    return 0;
}

static void bvh_validate_rejects_broken_trees(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {131};
    add_random(&s, &r, 400, 0.1f);
    RtBvh tree = {0};
    build(&s.t, 8, &tree);
    expect_valid(&tree, &s.t);
    RtBvh b = tree; /* a copy to break one way at a time */
    b.nodes = malloc(tree.node_count * sizeof *b.nodes);
    b.tri_index = malloc(tree.index_count * sizeof *b.tri_index);
#define RESET()                                                                                    \
    do {                                                                                           \
        memcpy(b.nodes, tree.nodes, tree.node_count * sizeof *b.nodes);                            \
        memcpy(b.tri_index, tree.tri_index, tree.index_count * sizeof *b.tri_index);               \
        b.bounds = tree.bounds;                                                                    \
    } while (0)
    char want[256];
    int k;
    const uint32_t inner =
        tree.nodes[0].child[0]; /* 400 triangles: the root's children are interior */
    assert_false(bvh_child_is_leaf(&tree.nodes[0], 0));
    RESET();
    b.nodes[0].child[0] = tree.node_count + 5;
    snprintf(want, sizeof want, "node 0 child 0: node %u out of range", tree.node_count + 5);
    expect_invalid(&b, &s.t, want);
    /* a leaf forgets its last triangle */
    RESET();
    uint32_t leaf = find_leaf(&tree, 2, &k), c = bvh_child_count(&tree.nodes[leaf], k);
    b.nodes[leaf].count[k] = RT_BVH_LEAF | (c - 1);
    snprintf(want, sizeof want, "triangle %u is not degenerate but no leaf lists it",
             tree.tri_index[tree.nodes[leaf].child[k] + c - 1]);
    expect_invalid(&b, &s.t, want);
    /* a child box reaches out of its parent's */
    RESET();
    RtAabb box = bvh_child_box(&b.nodes[inner], 1);
    box.hi.y += 2.0f;
    bvh_set_child(&b.nodes[inner], 1, box, bvh_child_is_leaf(&b.nodes[inner], 1),
                  b.nodes[inner].child[1], bvh_child_count(&b.nodes[inner], 1));
    snprintf(want, sizeof want, "node %u child 1: box", inner);
    expect_invalid(&b, &s.t, want);
    /* the root's children outside the bounds */
    RESET();
    b.bounds.lo.x += 0.25f;
    expect_invalid(&b, &s.t, "not inside the node's box");
    /* a leaf's box that misses one of its triangles */
    RESET();
    leaf = find_leaf(&tree, 1, &k);
    box = bvh_child_box(&b.nodes[leaf], k);
    box.hi = box.lo;
    bvh_set_child(&b.nodes[leaf], k, box, 1, b.nodes[leaf].child[k],
                  bvh_child_count(&b.nodes[leaf], k));
    expect_invalid(&b, &s.t, "not inside the leaf's box");
    /* a cycle: an inner node's child is the root */
    RESET();
    b.nodes[inner].child[0] = 0;
    b.nodes[inner].count[0] = 0;
    expect_invalid(&b, &s.t, "node 0 is reached twice");
    /* two parents share a child */
    RESET();
    b.nodes[0].child[1] = b.nodes[0].child[0];
    b.nodes[0].count[1] = 0;
    b.nodes[0].b[1] = b.nodes[0].b[0];
    b.nodes[0].b[2].z = b.nodes[0].b[2].x;
    b.nodes[0].b[2].w = b.nodes[0].b[2].y;
    snprintf(want, sizeof want, "node %u is reached twice", inner);
    expect_invalid(&b, &s.t, want);
    /* leaves too large, past the end of tri_index */
    RESET();
    leaf = find_leaf(&tree, 1, &k);
    b.nodes[leaf].count[k] = RT_BVH_LEAF | (RT_BVH_MAX_LEAF + 1);
    expect_invalid(&b, &s.t, "a leaf of 17 triangles");
    RESET();
    b.nodes[leaf].child[k] = tree.index_count - 1;
    b.nodes[leaf].count[k] = RT_BVH_LEAF | 3u;
    expect_invalid(&b, &s.t, "past the end of tri_index");
    /* ids out of range, listed twice, degenerate */
    RESET();
    leaf = find_leaf(&tree, 2, &k);
    uint32_t first = tree.nodes[leaf].child[k];
    b.tri_index[first] = s.t.count + 7;
    snprintf(want, sizeof want, "node %u child %d: tri_index[%u] = %u, out of range", leaf, k,
             first, s.t.count + 7);
    expect_invalid(&b, &s.t, want);
    RESET();
    uint32_t lo = tree.tri_index[first] < tree.tri_index[first + 1] ? first : first + 1;
    b.tri_index[lo ^ first ^ (first + 1)] = tree.tri_index[lo]; /* the higher id is lost */
    snprintf(want, sizeof want,
             "triangle %u is referenced more than once (node %u child %d and node %u child %d)",
             tree.tri_index[lo], leaf, k, leaf, k);
    expect_invalid(&b, &s.t, want);
    RESET();
    Soup d = {0};
    add_scaled(&d, &s, 1.0f, 0.0f);
    uint32_t id = tree.tri_index[first];
    d.t.verts[3 * id + 1] = d.t.verts[3 * id];
    memset(&d.t.woop[3 * id], 0, 3 * sizeof *d.t.woop);
    snprintf(want, sizeof want, "lists degenerate triangle %u", id);
    expect_invalid(&b, &d.t, want);
    soup_free(&d);
    /* the bounds, and an empty tree over real triangles */
    RESET();
    b.bounds.hi.z = NAN;
    expect_invalid(&b, &s.t, "bounds are not finite");
    RESET();
    b.node_count = 0;
    expect_invalid(&b, &s.t, "no nodes, but the bounds are not empty");
    b.bounds = aabb_empty();
    expect_invalid(&b, &s.t, "triangle 0 is not degenerate but no leaf lists it");
    b.node_count = tree.node_count;
    free(b.nodes);
    free(b.tri_index);
    rt_bvh_free(&tree);
    soup_free(&s);
#undef RESET
}

/* A chain of nodes, each with one triangle beside it: deeper than the
 * tracers' stacks hold. */
static void bvh_validate_rejects_trees_deeper_than_the_stacks(void **state)
{
    (void)state;
    enum { DEPTH = RT_BVH_MAX_DEPTH + 2 };
    Soup s = {0};
    for (int i = 0; i <= DEPTH; i++)
        soup_add(&s, v3((float)i, 0, 0), v3(i + 0.5f, 0, 0), v3((float)i, 1, 0));
    RtBvhNode nodes[DEPTH];
    uint32_t idx[DEPTH + 1];
    RtAabb all = {{0, 0, 0}, {DEPTH + 0.5f, 1, 0}};
    for (uint32_t i = 0; i < DEPTH; i++) {
        RtAabb mine = {{(float)i, 0, 0}, {i + 0.5f, 1, 0}}, rest = {{i + 1.0f, 0, 0}, all.hi};
        memset(&nodes[i], 0, sizeof nodes[i]);
        bvh_set_child(&nodes[i], 0, mine, 1, i, 1);
        if (i + 1 < DEPTH)
            bvh_set_child(&nodes[i], 1, rest, 0, i + 1, 0);
        else
            bvh_set_child(&nodes[i], 1, rest, 1, i + 1, 1);
        idx[i] = i;
    }
    idx[DEPTH] = DEPTH;
    RtBvh t = {nodes, idx, DEPTH, DEPTH + 1, DEPTH, DEPTH + 1, all, NULL};
    expect_invalid(&t, &s.t, "deeper than 64");
    /* the tracer stops safely: a ray along the chain from its deep end
     * enters every box, the interior child first, and fills its stack */
    RtRay along = {v3(DEPTH + 1.0f, 0.2f, 0), v3(-1, 0, 0)},
          down = {v3(DEPTH + 0.1f, 0.2f, 1), v3(0, 0, -1)};
    RtHit h;
    assert_false(rt_bvh_closest_hit(&t, &s.t, along, 0, INFINITY, 1, NULL, NULL, &h, NULL));
    assert_true(rt_bvh_closest_hit(&t, &s.t, down, 0, INFINITY, 1, NULL, NULL, &h, NULL));
    assert_int_equal(h.tri, DEPTH);
    /* cut to 64 levels, the chain is valid, and exact */
    t.node_count = RT_BVH_MAX_DEPTH;
    bvh_set_child(&nodes[RT_BVH_MAX_DEPTH - 1], 1, (RtAabb){{RT_BVH_MAX_DEPTH, 0, 0}, all.hi}, 1,
                  RT_BVH_MAX_DEPTH, DEPTH + 1 - RT_BVH_MAX_DEPTH);
    expect_valid(&t, &s.t);
    RtTestRng r = {141};
    assert_int_equal(compare_rays(&t, &s.t, &r, 600, BOTH, NULL), 0);
    soup_free(&s);
}

/* Random words written over nodes and indices: the validator and the
 * tracer return (no crash, no endless loop), and a tree the validator
 * still accepts traces exactly. */
static void bvh_corrupt_trees_never_crash(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {151};
    add_random(&s, &r, 300, 0.1f);
    RtBvh tree = {0};
    build(&s.t, 4, &tree);
    RtBvh b = tree;
    b.nodes = malloc(tree.node_count * sizeof *b.nodes);
    b.tri_index = malloc(tree.index_count * sizeof *b.tri_index);
    int accepted = 0;
    const int rounds = 600;
    for (int round = 0; round < rounds; round++) {
        memcpy(b.nodes, tree.nodes, tree.node_count * sizeof *b.nodes);
        memcpy(b.tri_index, tree.tri_index, tree.index_count * sizeof *b.tri_index);
        for (int hits = 0; hits < 1 + round % 3; hits++) {
            uint32_t *words = (uint32_t *)b.nodes, w = rt_test_rand(&r);
            uint32_t v =
                round % 5 == 0 ? rt_test_rand(&r) % (tree.node_count + 3) : rt_test_rand(&r) ^ w;
            if (round % 7 == 0)
                b.tri_index[rt_test_rand(&r) % tree.index_count] = v % (s.t.count + 2);
            else
                words[w % (tree.node_count * (sizeof *b.nodes / 4))] = v;
        }
        RtError err = {0};
        int ok = rt_bvh_validate(&b, &s.t, &err) == RT_OK;
        RtTestRng q = {152 + (uint64_t)round};
        if (ok) {
            accepted++;
            assert_int_equal(compare_rays(&b, &s.t, &q, 40, BOTH, NULL), 0);
        } else {
            for (int i = 0; i < 40; i++) {
                RtRay ray = {v3_sub(point_in(&q, tree.bounds), v3_scale(rnd_dir(&q), 2.0f)),
                             rnd_dir(&q)};
                RtHit h;
                (void)rt_bvh_closest_hit(&b, &s.t, ray, 0, INFINITY, i & 1, NULL, NULL, &h, NULL);
                (void)rt_bvh_any_hit(&b, &s.t, ray, 0, INFINITY, i & 1, NULL, NULL);
            }
        }
        RtBvhStats st;
        rt_bvh_tree_stats(&b, &s.t, 1.0f, 1.5f, &st);
    }
    print_message("corrupt trees: %d of %d still valid (and exact)\n", accepted, rounds);
    free(b.nodes);
    free(b.tri_index);
    rt_bvh_free(&tree);
    soup_free(&s);
}

/* ---- a real scene --------------------------------------------------------------------------- */

/* Sponza: the builder's time, the validator, and random rays against the
 * kd traversal (the brute force over 262K triangles is too slow here). */
static void bvh_sponza_matches_kd_traversal(void **state)
{
    (void)state;
    char buf[1024];
    const char *path = rt_test_asset("sponza/sponza.obj", buf);
    if (!path) skip();
    RtScene scene;
    RtError err = {0};
    if (rt_scene_load(path, &scene, &err) != RT_OK) fail_msg("load %s: %s", path, err.msg);
    RtTriArrays t;
    assert_int_equal(rt_tri_arrays_make(&scene, &t, NULL), RT_OK);
    RtBvh bvh = {0};
    RtBvhStats st1 = build_on(&t, 1, &bvh), st = build(&t, 8, &bvh);
    double t0 = rt_now_ms();
    expect_valid(&bvh, &t);
    double t1 = rt_now_ms();
    expect_stats(&st, &t, 8);
    RtKdTree kd = {0};
    RtKdCpuParams kp = rt_kd_cpu_params_default();
    if (rt_kd_build_cpu(&kp, &t, &kd, NULL, &err) != RT_OK) fail_msg("kd build: %s", err.msg);
    double t2 = rt_now_ms();
    RtTestRng r = {161};
    RtAabb b = bvh.bounds;
    int bad = 0, rays = 20000;
    uint32_t steps = 0;
    for (int i = 0; i < rays; i++) {
        RtRay ray = {point_in(&r, b), rnd_dir(&r)};
        int woop = i & 1;
        RtHit hv, hk;
        int v = rt_bvh_closest_hit(&bvh, &t, ray, 0, INFINITY, woop, NULL, NULL, &hv, &steps);
        int k = rt_kd_closest_hit(&kd, &t, ray, 0, INFINITY, woop, &hk, NULL);
        int any = rt_bvh_any_hit(&bvh, &t, ray, 0, INFINITY, woop, NULL, NULL);
        if (v != k || any != k || hv.tri != hk.tri || hv.t != hk.t || hv.u != hk.u ||
            hv.v != hk.v) {
            if (bad++ == 0)
                print_message(
                    "mismatch: o (%.9g %.9g %.9g) d (%.9g %.9g %.9g): bvh %d tri %u t %.9g, "
                    "kd %d tri %u t %.9g\n",
                    ray.o.x, ray.o.y, ray.o.z, ray.d.x, ray.d.y, ray.d.z, v, hv.tri, hv.t, k,
                    hk.tri, hk.t);
        }
    }
    print_message("sponza: %u tris (%u degenerate): %u nodes, %u leaves, depth %u, %.2f tris/leaf, "
                  "SAH %.2f; build %.0f ms (1 thread), %.0f ms (%d); validate %.0f ms; %d rays "
                  "against kd, %d mismatches, %.1f nodes/ray (%.0f ms)\n",
                  st.triangles, st.degenerate, st.nodes, st.leaves, st.depth, st.avg_tris_per_leaf,
                  st.sah_cost, st1.build_ms, st.build_ms, rt_thread_count(), t1 - t0, rays, bad,
                  (double)steps / rays, rt_now_ms() - t2);
    assert_int_equal(bad, 0);
    rt_kd_tree_free(&kd);
    rt_bvh_free(&bvh);
    rt_tri_arrays_free(&t);
    rt_scene_free(&scene);
}

/* ---- H-PLOC's own --------------------------------------------------------------------------- */

static void hploc_params_defaults_and_bad_values(void **state)
{
    (void)state;
    RtError err = {0};
    RtHplocParams p = rt_hploc_params_default();
    assert_true(p.radius == 8 && p.threshold == 16 && p.max_leaf == 8 && p.c_trav == 1.0f &&
                p.c_isect == 1.5f);
    assert_int_equal(rt_hploc_params_check(&p, &err), RT_OK);
    const struct {
        int radius, threshold, max_leaf;
        float c_isect;
        const char *names;
    } bad[] = {{0, 16, 8, 1.5f, "radius"},    {RT_HPLOC_MAX_RADIUS + 1, 16, 8, 1.5f, "radius"},
               {8, 0, 8, 1.5f, "threshold"},  {8, RT_HPLOC_MAX_THRESHOLD + 1, 8, 1.5f, "threshold"},
               {8, 16, 0, 1.5f, "max_leaf"}, {8, 16, 8, NAN, "c_isect"}};
    Soup s = {0};
    soup_add(&s, v3(0, 0, 0), v3(1, 0, 0), v3(0, 1, 0));
    RtBvh bvh = {0};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        p = rt_hploc_params_default();
        p.radius = bad[i].radius;
        p.threshold = bad[i].threshold;
        p.max_leaf = bad[i].max_leaf;
        p.c_isect = bad[i].c_isect;
        assert_int_equal(rt_hploc_params_check(&p, &err), RT_ERR_ARG);
        rt_test_assert_contains(err.msg, bad[i].names);
        rt_test_assert_contains(err.msg, "BVH:");
        assert_int_equal(rt_hploc_build_cpu(&p, &s.t, &bvh, NULL, NULL, &err), RT_ERR_ARG);
    }
    assert_int_equal(rt_hploc_build_cpu(NULL, &s.t, &bvh, NULL, NULL, &err), RT_OK);
    expect_valid(&bvh, &s.t);
    rt_bvh_free(&bvh);
    soup_free(&s);
}

/* Both builders over one scene: H-PLOC's SAH cost, printed beside the
 * LBVH's, is at most `slack` (relative) higher; same references. */
static void expect_sah_no_worse(const char *name, const RtTriArrays *t, double slack)
{
    RtBvh a = {0}, b = {0};
    RtBvhStats ls, hs;
    RtHplocInfo info;
    RtError err = {0};
    RtLbvhParams lp = rt_lbvh_params_default();
    RtHplocParams hp = rt_hploc_params_default();
    assert_int_equal(rt_lbvh_build_cpu(&lp, t, &a, &ls, &err), RT_OK);
    assert_int_equal(rt_hploc_build_cpu(&hp, t, &b, &hs, &info, &err), RT_OK);
    expect_valid(&b, t);
    print_message("SAH %-14s %7u tris: lbvh %8.2f (%6u nodes, depth %2u, %5.1f ms), H-PLOC %8.2f (%6u nodes, "
                  "depth %2u, %5.1f ms)%s\n",
                  name, t->count, ls.sah_cost, ls.nodes, ls.depth, ls.build_ms, hs.sah_cost, hs.nodes, hs.depth,
                  hs.build_ms, info.fallback ? " (fell back to the radix tree)" : "");
    assert_true(hs.references == ls.references);
    assert_true(hs.sah_cost <= ls.sah_cost * (1.0 + slack));
    rt_bvh_free(&a);
    rt_bvh_free(&b);
}

/* The scenes (the default, the Cornell box, Sponza when unpacked) and a
 * soup of mixed sizes: no worse. A soup of 100000 uniform tiny triangles is
 * where Morton order is at its best and greedy clustering near the root
 * costs a little: within 5 % (measured 1.3 % worse; docs/bvh.md). */
static void hploc_sah_no_worse_than_lbvh(void **state)
{
    (void)state;
    RtScene scene;
    RtError err = {0};
    RtTriArrays t;
    if (rt_scene_make_default(&scene, &err) != RT_OK) fail_msg("default scene: %s", err.msg);
    assert_int_equal(rt_tri_arrays_make(&scene, &t, NULL), RT_OK);
    expect_sah_no_worse("default scene", &t, 1e-6);
    rt_tri_arrays_free(&t);
    rt_scene_free(&scene);
    char path[1024];
    if (rt_scene_load(src_path("scenes/cornell.scene", path), &scene, &err) != RT_OK)
        fail_msg("load %s: %s", path, err.msg);
    assert_int_equal(rt_tri_arrays_make(&scene, &t, NULL), RT_OK);
    expect_sah_no_worse("Cornell box", &t, 1e-6);
    rt_tri_arrays_free(&t);
    rt_scene_free(&scene);
    const uint32_t sizes[] = {1000, 100000};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        Soup s = {0};
        RtTestRng r = {171 + i};
        add_random(&s, &r, sizes[i], sizes[i] > 1000 ? 0.01f : 0.05f);
        expect_sah_no_worse(sizes[i] > 1000 ? "soup 100000" : "soup 1000", &s.t, sizes[i] > 1000 ? 0.05 : 1e-6);
        soup_free(&s);
    }
    char buf[1024];
    const char *sponza = rt_test_asset("sponza/sponza.obj", buf);
    if (sponza && rt_scene_load(sponza, &scene, &err) == RT_OK) {
        assert_int_equal(rt_tri_arrays_make(&scene, &t, NULL), RT_OK);
        expect_sah_no_worse("sponza", &t, 1e-6);
        rt_tri_arrays_free(&t);
        rt_scene_free(&scene);
    }
}

/* Every radius and threshold the parameters allow, on a soup with
 * coincident codes and degenerate triangles: valid trees, every threshold's
 * root reached with one cluster. */
static void hploc_every_radius_and_threshold_is_valid(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {181};
    add_random(&s, &r, 2000, 0.05f);
    for (int i = 0; i < 300; i++) soup_add(&s, v3(0.3f, 0.3f, 0.3f), v3(0.4f, 0.3f, 0.3f), v3(0.3f, 0.4f, 0.3f));
    for (int i = 0; i < 20; i++) soup_add(&s, v3(0.1f, 0.1f, 0.1f), v3(0.1f, 0.1f, 0.1f), v3(0.2f, 0.2f, 0.2f));
    const uint32_t n = s.t.count - count_degenerate(&s.t);
    for (int radius = 1; radius <= RT_HPLOC_MAX_RADIUS; radius += radius < 4 ? 1 : 4)
        for (int threshold = 1; threshold <= RT_HPLOC_MAX_THRESHOLD; threshold += threshold < 4 ? 1 : 4) {
            RtHplocParams p = rt_hploc_params_default();
            p.radius = radius;
            p.threshold = threshold;
            p.max_leaf = 1;
            RtBvh bvh = {0};
            RtBvhStats st;
            RtError err = {0};
            assert_int_equal(rt_hploc_build_cpu(&p, &s.t, &bvh, &st, NULL, &err), RT_OK);
            expect_valid(&bvh, &s.t);
            assert_int_equal(st.nodes, n - 1); /* max_leaf 1: the binary tree itself */
            assert_int_equal(st.leaves, n);
            rt_bvh_free(&bvh);
        }
    soup_free(&s);
}

/* Equal triangles along a line at x = 0.9^i, ever closer together: the
 * closest pair is always at the tail, so each PLOC step merges one pair
 * there and every radix level adds up to `threshold` to one chain — a
 * clustered depth of 94, beyond the tracers' stacks (the tail's codes are
 * equal: the radix tree over them is balanced by index). The build
 * measures it and outputs the radix tree instead (hploc.h, Depth): the
 * LBVH's tree, within RT_BVH_MAX_DEPTH, with its SAH cost. */
static void hploc_chain_deeper_than_the_stacks_falls_back_to_the_radix_tree(void **state)
{
    (void)state;
    Soup s = {0};
    for (int i = 0; i < 600; i++) {
        const float x = powf(0.9f, (float)i), w = 0.001f;
        soup_add(&s, v3(x, 0, 0), v3(x + w, 0, 0), v3(x, w, w));
    }
    RtHplocParams p = rt_hploc_params_default();
    RtBvh bvh = {0}, lbvh = {0};
    RtBvhStats st, ls;
    RtHplocInfo info;
    RtError err = {0};
    for (int max_leaf = 1; max_leaf <= 8; max_leaf += 7) {
        p.max_leaf = max_leaf;
        RtLbvhParams lp = rt_lbvh_params_default();
        lp.max_leaf = max_leaf;
        assert_int_equal(rt_hploc_build_cpu(&p, &s.t, &bvh, &st, &info, &err), RT_OK);
        assert_int_equal(rt_lbvh_build_cpu(&lp, &s.t, &lbvh, &ls, &err), RT_OK);
        print_message("chain of %u (max_leaf %d): clustered depth %u, fallback %d; output depth %u, SAH %.3f "
                      "(LBVH: depth %u, SAH %.3f)\n",
                      s.t.count, max_leaf, info.cluster_depth, info.fallback, st.depth, st.sah_cost, ls.depth,
                      ls.sah_cost);
        assert_true(info.cluster_depth > RT_BVH_MAX_DEPTH);
        assert_true(info.fallback);
        expect_valid(&bvh, &s.t);
        assert_true(st.depth <= RT_BVH_MAX_DEPTH);
        assert_int_equal(st.depth, ls.depth);
        assert_int_equal(st.nodes, ls.nodes);
        assert_true(fabs(st.sah_cost - ls.sah_cost) <= 1e-6 * ls.sah_cost);
    }
    /* a short chain stays clustered */
    s.t.count = 100;
    assert_int_equal(rt_hploc_build_cpu(&p, &s.t, &bvh, &st, &info, &err), RT_OK);
    assert_false(info.fallback);
    assert_int_equal(st.depth, info.cluster_depth);
    expect_valid(&bvh, &s.t);
    rt_bvh_free(&bvh);
    rt_bvh_free(&lbvh);
    soup_free(&s);
}

/* An H-PLOC row: the test run again with the H-PLOC builder. */
#define HPLOC_TEST(f) {"hploc: " #f, f, use_hploc, use_lbvh, NULL}

/* ---- a top of spatial splits (split_top.h) ------------------------------------------ */

/* Small triangles in the unit cube and a few large ones across it (walls
 * and floors, what spatial splits are for). */
static void add_walls(Soup *s, RtTestRng *r, uint32_t small)
{
    add_random(s, r, small, 0.02f);
    for (int k = 0; k < 6; k++) {
        const float h = 0.1f + 0.15f * (float)k;
        soup_add(s, v3(-0.1f, h, -0.1f), v3(1.1f, h, -0.1f), v3(1.1f, h + 0.05f, 1.1f));
        soup_add(s, v3(h, -0.1f, -0.1f), v3(h + 0.02f, 1.1f, -0.1f), v3(h, 1.1f, 1.1f));
    }
}

/* Interior node visits of rays from outside the cube through random points
 * of it (closest hit). */
static uint64_t visits(const RtBvh *bvh, const RtTriArrays *t, uint64_t seed, int n)
{
    RtTestRng r = {seed};
    uint64_t steps = 0;
    for (int i = 0; i < n; i++) {
        RtRay ray;
        ray.o = v3_add(v3(0.5f, 0.5f, 0.5f), v3_scale(rnd_dir(&r), 3.0f));
        ray.d = v3_sub(rnd_vec(&r), ray.o);
        RtHit h;
        uint32_t st = 0;
        rt_bvh_closest_hit(bvh, t, ray, 0.0f, INFINITY, 1, NULL, NULL, &h, &st);
        steps += st;
    }
    return steps;
}

/* Every depth of the top gives a valid tree whose hits equal the brute
 * force's (both tests, filtered or not, segments, rays along the boxes'
 * faces), with more references than triangles once a large triangle is
 * split, and fewer node visits than H-PLOC alone; depth 0 is H-PLOC's own
 * tree. Sponza too when it is present. */
static void split_top_hits_match_brute_force(void **state)
{
    (void)state;
    Soup s = {0};
    RtTestRng r = {2026};
    add_walls(&s, &r, 20000);
    RtHplocParams hp = rt_hploc_params_default();
    RtBvh h = {0}, b = {0};
    RtBvhStats hs, st;
    RtError err = {0};
    assert_int_equal(rt_hploc_build_cpu(&hp, &s.t, &h, &hs, NULL, &err), RT_OK);
    const uint64_t v0 = visits(&h, &s.t, 7, 4000);
    for (int d = 0; d <= 4; d++) {
        RtSplitTopParams sp = rt_split_top_params_default();
        sp.depth = d;
        if (rt_bvh_split_top_build_cpu(&hp, &sp, &s.t, &b, &st, NULL, &err) != RT_OK) fail_msg("split top: %s", err.msg);
        expect_valid(&b, &s.t);
        RtTestRng rr = {99 + (uint64_t)d};
        int hits = 0, bad = compare_rays(&b, &s.t, &rr, 3000, BOTH, &hits);
        const uint64_t v = visits(&b, &s.t, 7, 4000);
        print_message("split top depth %d: %u nodes, %llu references for %u triangles, SAH %.2f (H-PLOC %.2f), "
                      "visits %llu (H-PLOC %llu), %d hits, %d mismatches\n",
                      d, st.nodes, (unsigned long long)st.references, s.t.count, st.sah_cost, hs.sah_cost,
                      (unsigned long long)v, (unsigned long long)v0, hits, bad);
        assert_int_equal(bad, 0);
        if (d == 0) {
            assert_int_equal(b.split_refs, 0);
            assert_int_equal(b.node_count, h.node_count);
            assert_memory_equal(b.nodes, h.nodes, h.node_count * sizeof *h.nodes);
        } else {
            assert_int_equal(b.split_refs, 1);
            assert_true(st.references > s.t.count);
            assert_true(v < v0);
        }
    }
    rt_bvh_free(&b);
    rt_bvh_free(&h);
    soup_free(&s);
    char buf[1024];
    const char *sponza = rt_test_asset("sponza/sponza.obj", buf);
    if (!sponza) {
        print_message("split top: sponza/sponza.obj absent, Sponza skipped\n");
        return;
    }
    RtScene scene;
    RtTriArrays t;
    if (rt_scene_load(sponza, &scene, &err) != RT_OK) fail_msg("load %s: %s", sponza, err.msg);
    assert_int_equal(rt_tri_arrays_make(&scene, &t, NULL), RT_OK);
    RtSplitTopParams sp = rt_split_top_params_default();
    if (rt_bvh_split_top_build_cpu(&hp, &sp, &t, &b, &st, NULL, &err) != RT_OK) fail_msg("split top: %s", err.msg);
    expect_valid(&b, &t);
    RtTestRng rr = {5};
    int hits = 0, bad = compare_rays(&b, &t, &rr, 1500, BOTH, &hits);
    print_message("split top, Sponza: %llu references for %u triangles, SAH %.2f, %d hits, %d mismatches\n",
                  (unsigned long long)st.references, t.count, st.sah_cost, hits, bad);
    assert_int_equal(bad, 0);
    rt_bvh_free(&b);
    rt_tri_arrays_free(&t);
    rt_scene_free(&scene);
}

/* Where no spatial split pays (small triangles only, the Cornell box), the
 * top splits nothing at any depth: the tree is H-PLOC's, node for node, and
 * lists each triangle once. */
static void split_top_without_spatial_splits_is_hploc(void **state)
{
    (void)state;
    RtError err = {0};
    RtScene scene;
    char path[1024];
    if (rt_scene_load(src_path("scenes/cornell.scene", path), &scene, &err) != RT_OK) fail_msg("load %s: %s", path, err.msg);
    Soup s = {0};
    RtTestRng r = {404};
    add_random(&s, &r, 5000, 0.01f);
    RtTriArrays c;
    assert_int_equal(rt_tri_arrays_make(&scene, &c, NULL), RT_OK);
    const RtTriArrays *sets[2] = {&s.t, &c};
    for (int k = 0; k < 2; k++) {
        RtBvh h = {0}, b = {0};
        assert_int_equal(rt_hploc_build_cpu(NULL, sets[k], &h, NULL, NULL, &err), RT_OK);
        for (int d = 1; d <= 4; d++) {
            RtSplitTopParams sp = rt_split_top_params_default();
            sp.depth = d;
            if (rt_bvh_split_top_build_cpu(NULL, &sp, sets[k], &b, NULL, NULL, &err) != RT_OK) fail_msg("split top: %s", err.msg);
            assert_int_equal(b.split_refs, 0);
            assert_int_equal(b.index_count, h.index_count);
            assert_int_equal(b.node_count, h.node_count);
            assert_memory_equal(b.nodes, h.nodes, h.node_count * sizeof *h.nodes);
            assert_memory_equal(b.tri_index, h.tri_index, h.index_count * sizeof *h.tri_index);
        }
        rt_bvh_free(&b);
        rt_bvh_free(&h);
    }
    rt_tri_arrays_free(&c);
    rt_scene_free(&scene);
    soup_free(&s);
}

/* A leaf of the top whose H-PLOC subtree is nearly as deep as the walks'
 * stacks (chains of ever smaller triangles, of many lengths, beside walls
 * that the top splits): every leaf then gets its radix tree (split_top.h,
 * Depth), valid and within the depth; some lengths must reach that case
 * and some not. */
static void split_top_too_deep_falls_back_to_radix_trees(void **state)
{
    (void)state;
    int fell_back = 0, clustered = 0;
    for (int n = 200; n <= 700; n += 10) {
        Soup s = {0};
        for (int i = 0; i < n; i++) {
            const float x = 0.5f + 0.4f * powf(0.9f, (float)i), w = 0.001f;
            soup_add(&s, v3(x, 0.52f, 0.52f), v3(x + w, 0.52f, 0.52f), v3(x, 0.52f + w, 0.52f + w));
        }
        RtTestRng r = {77};
        add_walls(&s, &r, 2000);
        RtError err = {0};
        RtBvh b = {0};
        RtBvhStats st;
        RtSplitTopInfo info;
        if (rt_bvh_split_top_build_cpu(NULL, NULL, &s.t, &b, &st, &info, &err) != RT_OK) fail_msg("split top: %s", err.msg);
        expect_valid(&b, &s.t);
        assert_true(st.depth <= RT_BVH_MAX_DEPTH);
        assert_int_equal(info.fallback, info.cluster_depth > RT_BVH_MAX_DEPTH);
        assert_true(info.leaves > 1 && b.split_refs);
        fell_back += info.fallback, clustered += !info.fallback;
        rt_bvh_free(&b);
        soup_free(&s);
    }
    print_message("chains of 200..700 beside walls: %d clustered, %d fell back to radix trees\n", clustered, fell_back);
    assert_true(fell_back > 0 && clustered > 0);
}

/* Bad parameters name themselves; 0, 1 and 2 triangles and one point make
 * valid trees. */
/* A random bin of a node's box: empty one time in five, else a box in
 * the node's box and a few references entering and leaving. */
static void random_bin(RtTestRng *r, RtAabb node, SplitTopBins *g, int b)
{
    g->box[b] = aabb_empty(), g->enter[b] = g->leave[b] = 0;
    if (rt_test_rand(r) % 5 == 0) return;
    const RtVec3 p = point_in(r, node), q = point_in(r, node);
    g->box[b].lo = v3(fminf(p.x, q.x), fminf(p.y, q.y), fminf(p.z, q.z));
    g->box[b].hi = v3(fmaxf(p.x, q.x), fmaxf(p.y, q.y), fmaxf(p.z, q.z));
    g->enter[b] = rt_test_rand(r) % 4, g->leave[b] = rt_test_rand(r) % 4;
}

/* split_top_choose (the six sweeps and their combination, which the GPU
 * runs in lanes) is the first cheapest plane in the order object axes x,
 * y, z, then spatial x, y, z, planes 1-7 each, spatial planes only when
 * wanted and only when cheaper than every object plane: checked against
 * every plane's cost on random bins, with ties (one axis's bins copied to
 * another), empty bins, flat axes and both settings of alpha. */
static void split_top_choice_is_the_first_cheapest_plane(void **state)
{
    (void)state;
    enum { B = RT_SPLIT_TOP_BINS };
    RtTestRng r = {77};
    int spatial = 0, ties = 0;
    for (int trial = 0; trial < 4000; trial++) {
        RtAabb node = {v3(0, 0, 0), v3(1, 2, 3)};
        if (trial % 7 == 3) node.hi.y = 0.0f; /* a flat axis: no plane there */
        SplitTopBins g[6];
        for (int k = 0; k < 6; k++)
            for (int b = 0; b < B; b++) random_bin(&r, node, &g[k], b);
        if (trial % 3 == 0) g[1] = g[0], g[4] = g[3]; /* equal costs on two axes: the lower axis wins */
        const uint32_t count = 20 + rt_test_rand(&r) % 20;
        const float alpha = trial % 2 ? 0.0f : 1e9f, root_area = 1.0f;
        /* every plane's cost, in the rule's order */
        int best = -1, best_obj = -1;
        float best_cost = INFINITY;
        RtAabb side[2] = {aabb_empty(), aabb_empty()};
        for (int c = 0; c < 6 * (B - 1); c++) {
            const int k = c / (B - 1), plane = c % (B - 1) + 1, axis = k % 3;
            if (k == 3 && best_obj >= 0 &&
                !(split_top_area(split_top_meet(side[0], side[1])) > RT_XMUL(alpha, root_area)))
                break; /* no spatial split wanted */
            if (split_top_scale(v3_get(node.lo, axis), v3_get(node.hi, axis)) == 0.0f) continue;
            RtAabb left = aabb_empty(), right = aabb_empty();
            uint32_t nl = 0, nr = 0;
            for (int b = 0; b < plane; b++) left = split_top_union(left, g[k].box[b]), nl += g[k].enter[b];
            for (int b = plane; b < B; b++) right = split_top_union(right, g[k].box[b]), nr += g[k].leave[b];
            if (!nl || !nr) continue;
            const float cost = split_top_cost(split_top_area(left), nl, split_top_area(right), nr);
            ties += cost == best_cost;
            if (!(cost < best_cost)) continue;
            best = c, best_cost = cost;
            if (k < 3) best_obj = c, side[0] = left, side[1] = right;
        }
        SplitTopChoice got;
        const int split = split_top_choose(g, g + 3, node, count, alpha, root_area, &got);
        const int want = best >= 0 && best / (B - 1) >= 3;
        assert_int_equal(split, want);
        spatial += want;
        if (!want) continue;
        assert_int_equal(got.spatial, 1);
        assert_int_equal(got.axis, best / (B - 1) % 3);
        assert_int_equal(got.k, best % (B - 1) + 1);
        assert_true(got.cost == best_cost);
    }
    print_message("split top choice: %d spatial splits of 4000 nodes, %d ties met\n", spatial, ties);
    assert_true(spatial > 100 && ties > 100);
}

static void split_top_params_and_small_cases(void **state)
{
    (void)state;
    RtError err = {0};
    Soup s = {0};
    RtBvh b = {0};
    soup_add(&s, v3(0, 0, 0), v3(1, 0, 0), v3(0, 1, 0));
    const RtSplitTopParams bad[] = {{-1, 1e-5f, 64, 0.0625f}, {RT_SPLIT_TOP_MAX_DEPTH + 1, 1e-5f, 64, 0.0625f}, {3, NAN, 64, 0.0625f},
                                    {3, 1e-5f, 1, 0.0625f}, {3, 1e-5f, 64, -1.0f}, {3, 1e-5f, 64, NAN}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(rt_bvh_split_top_build_cpu(NULL, &bad[i], &s.t, &b, NULL, NULL, &err), RT_ERR_ARG);
        rt_test_assert_contains(err.msg, "split top");
    }
    soup_free(&s);
    for (int n = 0; n <= 3; n++) {
        Soup z = {0};
        for (int k = 0; k < n; k++)
            soup_add(&z, v3((float)k, 0, 0), n == 3 ? v3((float)k, 0, 0) : v3((float)k + 1, 0, 0),
                     n == 3 ? v3((float)k, 0, 0) : v3((float)k, 1, 0)); /* 3: all at points */
        RtSplitTopParams sp = rt_split_top_params_default();
        sp.min_refs = 2;
        if (rt_bvh_split_top_build_cpu(NULL, &sp, &z.t, &b, NULL, NULL, &err) != RT_OK) fail_msg("n = %d: %s", n, err.msg);
        expect_valid(&b, &z.t);
        soup_free(&z);
    }
    rt_bvh_free(&b);
}

int main(void)
{
    rt_log_set_level(RT_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bvh_params_defaults_and_bad_values),
        cmocka_unit_test(bvh_zero_triangles_build_an_empty_tree),
        cmocka_unit_test(bvh_one_triangle_is_a_root_with_an_empty_leaf),
        cmocka_unit_test(bvh_two_and_three_triangles_match_brute_force),
        cmocka_unit_test(bvh_random_soups_match_brute_force),
        cmocka_unit_test(bvh_default_scene_matches_brute_force),
        cmocka_unit_test(bvh_cornell_box_matches_brute_force),
        cmocka_unit_test(bvh_all_triangles_at_one_point_build_an_empty_tree),
        cmocka_unit_test(bvh_identical_triangles_share_one_morton_code),
        cmocka_unit_test(bvh_same_centroid_different_sizes),
        cmocka_unit_test(bvh_non_finite_vertices_are_left_out),
        cmocka_unit_test(bvh_huge_and_tiny_coordinates),
        cmocka_unit_test(bvh_flat_scene_matches_brute_force),
        cmocka_unit_test(bvh_max_leaf_1_8_16_are_valid_and_exact),
        cmocka_unit_test(bvh_filter_rejects_and_search_goes_on),
        cmocka_unit_test(lbvh_node_ranges_match_a_top_down_split),
        cmocka_unit_test(bvh_leaf_woop_rows_follow_tri_index),
        cmocka_unit_test(bvh_same_tree_on_any_thread_count),
        cmocka_unit_test(bvh_sah_max_leaf_8_no_worse_than_1),
        cmocka_unit_test(bvh_stats_of_a_hand_made_tree),
        cmocka_unit_test(bvh_leaf_rows_pay_where_rays_outnumber_triangles),
        cmocka_unit_test(bvh_validate_rejects_broken_trees),
        cmocka_unit_test(bvh_validate_rejects_trees_deeper_than_the_stacks),
        cmocka_unit_test(bvh_corrupt_trees_never_crash),
        cmocka_unit_test(bvh_sponza_matches_kd_traversal),
        /* H-PLOC (hploc.h): the same behaviours, and its own */
        HPLOC_TEST(bvh_zero_triangles_build_an_empty_tree),
        HPLOC_TEST(bvh_one_triangle_is_a_root_with_an_empty_leaf),
        HPLOC_TEST(bvh_two_and_three_triangles_match_brute_force),
        HPLOC_TEST(bvh_random_soups_match_brute_force),
        HPLOC_TEST(bvh_default_scene_matches_brute_force),
        HPLOC_TEST(bvh_cornell_box_matches_brute_force),
        HPLOC_TEST(bvh_all_triangles_at_one_point_build_an_empty_tree),
        HPLOC_TEST(bvh_identical_triangles_share_one_morton_code),
        HPLOC_TEST(bvh_same_centroid_different_sizes),
        HPLOC_TEST(bvh_non_finite_vertices_are_left_out),
        HPLOC_TEST(bvh_huge_and_tiny_coordinates),
        HPLOC_TEST(bvh_flat_scene_matches_brute_force),
        HPLOC_TEST(bvh_max_leaf_1_8_16_are_valid_and_exact),
        HPLOC_TEST(bvh_filter_rejects_and_search_goes_on),
        HPLOC_TEST(bvh_same_tree_on_any_thread_count),
        HPLOC_TEST(bvh_sah_max_leaf_8_no_worse_than_1),
        HPLOC_TEST(bvh_sponza_matches_kd_traversal),
        cmocka_unit_test(hploc_params_defaults_and_bad_values),
        cmocka_unit_test(hploc_sah_no_worse_than_lbvh),
        cmocka_unit_test(hploc_every_radius_and_threshold_is_valid),
        cmocka_unit_test(hploc_chain_deeper_than_the_stacks_falls_back_to_the_radix_tree),
        cmocka_unit_test(split_top_hits_match_brute_force),
        cmocka_unit_test(split_top_without_spatial_splits_is_hploc),
        cmocka_unit_test(split_top_too_deep_falls_back_to_radix_trees),
        cmocka_unit_test(split_top_params_and_small_cases),
        cmocka_unit_test(split_top_choice_is_the_first_cheapest_plane),
    };
    return cmocka_run_group_tests_name("bvh_cpu", tests, NULL, NULL);
}
