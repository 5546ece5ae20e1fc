/* test_gpu_trace.c — the GPU tracer (cuda/trace.cu) against the CPU oracle:
 * for several scenes and every traversal / intersection / ray-map / packet
 * variant, the GPU's closest hit (triangle id and t) equals the CPU brute
 * force for >= 99.99 % of primary and secondary rays (differences are
 * printed and classified), any-hit shadow queries agree likewise, and full
 * images match the CPU renderer within the stated tolerance. Skips with a
 * message when no GPU is usable.
 *
 * RT_GPU_BENCH=1 adds the benchmark of docs/benchmarks.md (Mrays/s per ray
 * type at 1920x1080 on the default scene and Sponza, every variant). */
#include "test_util.h"

#include "gpu.h"
#include "kd_cpu.h"
#include "render_cpu.h"
#include "trace.h"

/* Acceptance thresholds (issue 5). */
#define MATCH_MIN 0.9999   /* hits agreeing with the brute force (shared-edge ties included) */
#define STRICT_MIN 0.999   /* hits with the very same triangle and t */
/* Packets (RT_PACKET_WARP) have a known gap (docs/trace_gpu.md): a ray the
 * packet takes against its own order sits the subtree out, and when that
 * subtree is the split plane seen from behind (a flat cell at the ray's
 * entry), no restart brings it back. Held to this until it is closed. */
#define PACKET_MATCH_MIN 0.998
#define PIXEL_MIN 0.99     /* pixels within PIXEL_TOL of the CPU render */
#define PIXEL_TOL 2        /* of 255, per channel */
/* t agrees when within T_REL_TOL of t plus T_EPS_TOL of the ray epsilon
 * (1e-4 of the scene's diagonal): the device contracts a*b+c into FMAs and
 * the host does not, so t differs in its last bits, by an amount that
 * follows the coordinates' magnitude (Woop's translation row), not t. */
#define T_REL_TOL 1e-5f
#define T_EPS_TOL 0.1f

/* ---- fixtures -------------------------------------------------------------- */

typedef struct Fixture {
    const char *name;
    RtScene s;
    RtTriArrays tris;
    RtKdTree tree;    /* host, CPU oracle */
    RtKdTree dtree;   /* the same, in device memory */
    RtGpuScene *gs;
} Fixture;

static void fixture_finish(Fixture *f)
{
    RtError err = {0};
    /* the builder reuses a tree's arrays: start from an empty one */
    memset(&f->tree, 0, sizeof f->tree);
    memset(&f->dtree, 0, sizeof f->dtree);
    f->gs = NULL;
    RtStatus st = rt_scene_finish(&f->s, &err);
    if (st != RT_OK) print_message("%s\n", err.msg);
    assert_int_equal(st, RT_OK);
    assert_int_equal(rt_tri_arrays_make(&f->s, &f->tris, NULL), RT_OK);
    RtKdCpuParams kp = rt_kd_cpu_params_default();
    st = rt_kd_build_cpu(&kp, &f->tris, &f->tree, NULL, &err);
    if (st != RT_OK) print_message("%s\n", err.msg);
    assert_int_equal(st, RT_OK);
    st = rt_gpu_scene_create(&f->s, &f->gs, &err);
    if (st != RT_OK) print_message("%s\n", err.msg);
    assert_int_equal(st, RT_OK);
    memset(&f->dtree, 0, sizeof f->dtree);
    st = rt_kd_tree_upload(&f->tree, &f->dtree, &err);
    if (st != RT_OK) print_message("%s\n", err.msg);
    assert_int_equal(st, RT_OK);
}

static void fixture_free(Fixture *f)
{
    rt_kd_tree_free_device(&f->dtree);
    rt_gpu_scene_destroy(f->gs);
    rt_kd_tree_free(&f->tree);
    rt_tri_arrays_free(&f->tris);
    rt_scene_free(&f->s);
}

static void add_tri(RtScene *s, RtVec3 a, RtVec3 b, RtVec3 c, int32_t mat)
{
    RtVec3 n = v3_norm(v3_cross(v3_sub(b, a), v3_sub(c, a)));
    uint32_t base = s->vert_count;
    RtVertex v[3] = {{a, n, 0, 0}, {b, n, 1, 0}, {c, n, 0, 1}};
    for (int k = 0; k < 3; k++) assert_true(rt_scene_add_vertex(s, v[k]) >= 0);
    RtTriangle t = {{base, base + 1, base + 2}, mat, 0};
    assert_true(rt_scene_add_triangle(s, t) >= 0);
}

/* n random triangles of size ~0.6 in a 10^3 box, some a mirror. */
static void soup_fixture(Fixture *f, uint32_t n, uint64_t seed)
{
    RtTestRng rng = {seed};
    f->name = "soup";
    rt_scene_init(&f->s);
    RtMaterial m = rt_material_default();
    m.reflect = 0.5f;
    int32_t mirror = (int32_t)rt_scene_add_material(&f->s, &m);
    assert_true(rt_scene_add_object(&f->s, "soup") >= 0);
    for (uint32_t i = 0; i < n; i++) {
        RtVec3 c = v3(10 * rt_test_randf(&rng), 10 * rt_test_randf(&rng), 10 * rt_test_randf(&rng));
        RtVec3 p[3];
        for (int k = 0; k < 3; k++)
            p[k] = v3_add(c, v3(1.2f * rt_test_randf(&rng) - 0.6f, 1.2f * rt_test_randf(&rng) - 0.6f,
                                1.2f * rt_test_randf(&rng) - 0.6f));
        add_tri(&f->s, p[0], p[1], p[2], i % 7 == 0 ? mirror : -1);
    }
    fixture_finish(f);
}

/* An N x N heightfield with shared vertices at integer x, z: many rays
 * cross shared edges and split planes at vertex coordinates. */
static void grid_fixture(Fixture *f, int n)
{
    f->name = "grid";
    rt_scene_init(&f->s);
    assert_true(rt_scene_add_object(&f->s, "grid") >= 0);
    for (int z = 0; z <= n; z++)
        for (int x = 0; x <= n; x++) {
            RtVertex v = {v3((float)x, 0.4f * sinf(0.7f * x) * cosf(0.5f * z), (float)z),
                          v3(0, 0, 0), (float)x / n, (float)z / n};
            assert_true(rt_scene_add_vertex(&f->s, v) >= 0);
        }
    for (int z = 0; z < n; z++)
        for (int x = 0; x < n; x++) {
            uint32_t a = (uint32_t)(z * (n + 1) + x), b = a + 1, c = a + (uint32_t)n + 1, d = c + 1;
            RtTriangle t0 = {{a, c, b}, -1, 0}, t1 = {{b, c, d}, -1, 0};
            assert_true(rt_scene_add_triangle(&f->s, t0) >= 0);
            assert_true(rt_scene_add_triangle(&f->s, t1) >= 0);
        }
    f->s.has_camera = 1;
    RtCamera cam = {v3(-3.0f, 0.6f * n, -2.0f), v3(0.5f * n, 0.0f, 0.5f * n), v3(0, 1, 0), 50.0f};
    f->s.camera = cam;
    fixture_finish(f);
}

static void default_fixture(Fixture *f)
{
    RtError err = {0};
    f->name = "default";
    assert_int_equal(rt_scene_make_default(&f->s, &err), RT_OK);
    /* make_default has finished the scene; finishing again is harmless */
    fixture_finish(f);
}

/* scenes/cornell.scene, found next to this file; 0 when absent. */
static int cornell_fixture(Fixture *f)
{
    char path[1024];
    const char *me = __FILE__, *tail = strstr(me, "tests/test_gpu_trace.c");
    snprintf(path, sizeof path, "%.*sscenes/cornell.scene", tail ? (int)(tail - me) : 0, me);
    RtError err = {0};
    f->name = "cornell";
    if (rt_scene_load(path, &f->s, &err) != RT_OK) {
        print_message("skip: %s\n", err.msg);
        return 0;
    }
    fixture_finish(f);
    return 1;
}

static void need_gpu(void **state)
{
    if (!*state) {
        print_message("skip: no GPU: the GPU tracer tests need one\n");
        skip();
    }
}

/* ---- rays -------------------------------------------------------------------- */

typedef struct RaySet {
    RtGpuRay *rays;
    uint32_t n, cap;
} RaySet;

static void rays_push(RaySet *r, RtVec3 o, RtVec3 d, float tmin, float tmax)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 1024;
        r->rays = realloc(r->rays, r->cap * sizeof *r->rays);
        assert_non_null(r->rays);
    }
    RtGpuRay g = {o, tmin, d, tmax};
    r->rays[r->n++] = g;
}

static void camera_rays(RaySet *r, const RtCamera *cam, int w, int h)
{
    RtCameraBasis b = rt_camera_basis(*cam, w, h);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            rays_push(r, b.o, rt_camera_dir(&b, (float)x + 0.5f, (float)y + 0.5f), 0.0f, INFINITY);
}

static RtHit brute(const Fixture *f, const RtGpuRay *g, int woop)
{
    RtRay ray = {g->o, g->d};
    RtHit h;
    h.tri = RT_NO_HIT;
    if (!rt_brute_closest_hit(&f->tris, ray, g->tmin, g->tmax, woop, NULL, NULL, &h))
        h.tri = RT_NO_HIT;
    return h;
}

/* Shadow rays to every light and one mirror ray from each primary hit, as
 * render_cpu.c starts them (P + eps Ng, on the viewer's side). */
static void secondary_rays(const Fixture *f, const RaySet *prim, const RtHit *hits, float eps,
                           RaySet *shadow, RaySet *refl)
{
    for (uint32_t i = 0; i < prim->n; i++) {
        if (hits[i].tri == RT_NO_HIT) continue;
        const RtFloat4 *v = &f->tris.verts[3 * (size_t)hits[i].tri];
        RtVec3 a = f4_xyz(v[0]), b = f4_xyz(v[1]), c = f4_xyz(v[2]);
        float u = hits[i].u, w = hits[i].v;
        RtVec3 p = v3_add(v3_add(v3_scale(a, 1 - u - w), v3_scale(b, u)), v3_scale(c, w));
        RtVec3 ng = v3_norm(v3_cross(v3_sub(b, a), v3_sub(c, a)));
        RtVec3 d = prim->rays[i].d;
        if (v3_dot(ng, d) > 0) ng = v3_scale(ng, -1);
        RtVec3 o = v3_add(p, v3_scale(ng, eps));
        for (uint32_t l = 0; l < f->s.light_count; l++) {
            const RtLight *lt = &f->s.lights[l];
            if (lt->type == RT_LIGHT_DIRECTIONAL) {
                rays_push(shadow, o, v3_norm(lt->v), 0.0f, INFINITY);
            } else {
                RtVec3 dl = v3_sub(lt->v, p);
                float dist = v3_len(dl);
                if (dist > eps) rays_push(shadow, o, v3_scale(dl, 1 / dist), 0.0f, dist - eps);
            }
        }
        rays_push(refl, o, v3_norm(v3_sub(d, v3_scale(ng, 2 * v3_dot(d, ng)))), 0.0f, INFINITY);
    }
}

/* GPU hits of a ray set (closest or any). */
static void gpu_cast(const Fixture *f, const RtTraceParams *p, const RaySet *r, int any,
                     RtHit *out)
{
    RtError err = {0};
    void *d_rays, *d_hits;
    assert_int_equal(rt_gpu_malloc(&d_rays, r->n * sizeof(RtGpuRay), &err), RT_OK);
    assert_int_equal(rt_gpu_malloc(&d_hits, r->n * sizeof(RtHit), &err), RT_OK);
    assert_int_equal(rt_gpu_memcpy(d_rays, r->rays, r->n * sizeof(RtGpuRay), RT_COPY_TO_DEVICE, &err),
                     RT_OK);
    RtStatus st = rt_trace_gpu_rays(f->gs, &f->dtree, p, d_rays, d_hits, NULL, r->n, 97, any,
                                    NULL, &err);
    if (st != RT_OK) print_message("%s\n", err.msg);
    assert_int_equal(st, RT_OK);
    assert_int_equal(rt_gpu_memcpy(out, d_hits, r->n * sizeof(RtHit), RT_COPY_TO_HOST, &err), RT_OK);
    rt_gpu_free(d_rays);
    rt_gpu_free(d_hits);
}

typedef struct Tally {
    uint64_t rays, equal;
    uint64_t t_off, tie, miss, other; /* kinds of difference */
} Tally;

static float t_tol(float t, float eps) { return T_REL_TOL * fabsf(t) + T_EPS_TOL * eps; }

/* Compares GPU hits with the brute force; prints the first few differences. */
static void compare_hits(const char *what, const RaySet *r, const RtHit *ref, const RtHit *got,
                         int any, float eps, Tally *tl)
{
    int shown = 0;
    for (uint32_t i = 0; i < r->n; i++) {
        tl->rays++;
        int ok;
        const char *kind = NULL;
        if (any) {
            ok = (ref[i].tri == RT_NO_HIT) == (got[i].tri == RT_NO_HIT);
            if (!ok) tl->miss++, kind = "occlusion differs";
        } else if (ref[i].tri == got[i].tri) {
            ok = ref[i].tri == RT_NO_HIT || fabsf(ref[i].t - got[i].t) <= t_tol(ref[i].t, eps);
            if (!ok) tl->t_off++, kind = "same triangle, t differs";
        } else {
            ok = 0;
            if (ref[i].tri == RT_NO_HIT || got[i].tri == RT_NO_HIT)
                tl->miss++, kind = "hit vs miss (grazing)";
            else if (fabsf(ref[i].t - got[i].t) <= t_tol(ref[i].t, eps))
                tl->tie++, kind = "equal t, other triangle (shared edge)";
            else
                tl->other++, kind = "different triangle";
        }
        if (ok) {
            tl->equal++;
        } else if (shown++ < 2) {
            const RtGpuRay *g = &r->rays[i];
            print_message("    %s ray %u o=(%.9g %.9g %.9g) d=(%.9g %.9g %.9g): cpu %d t=%.9g, "
                          "gpu %d t=%.9g: %s\n", what, i, g->o.x, g->o.y, g->o.z, g->d.x, g->d.y,
                          g->d.z, (int)ref[i].tri, ref[i].t, (int)got[i].tri, got[i].t, kind);
        }
    }
}

static const char *variant_name(const RtTraceParams *p, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s/%s/%s/%s/stack%d", rt_trace_traversals[p->traversal].name,
             rt_trace_isects[p->isect].name, p->leaf_skip ? "skip" : "noskip",
             rt_trace_raymaps[p->ray_map].name, rt_trace_packets[p->packet].name, p->stack_size);
    return buf;
}

/* Every variant: 2 traversals x 2 tests x leaf skip x 2 ray maps x 2
 * packet modes, plus a 1-entry short stack (restarts all the time). */
static int variant(int i, RtTraceParams *p)
{
    *p = rt_trace_params_default();
    if (i >= 34) return 0;
    if (i >= 32) {
        p->traversal = RT_TRAV_SHORT_STACK;
        p->stack_size = 1;
        p->packet = i - 32;
        return 1;
    }
    p->traversal = i & 1;
    p->isect = (i >> 1) & 1;
    p->leaf_skip = (i >> 2) & 1;
    p->ray_map = (i >> 3) & 1;
    p->packet = (i >> 4) & 1;
    return 1;
}

/* The whole check for one fixture: primary rays from the scene's camera
 * (plus extra rays), then shadow and mirror rays from the CPU's hits. */
static void check_fixture(Fixture *f, const RaySet *extra)
{
    RaySet prim = {0}, shadow = {0}, refl = {0};
    camera_rays(&prim, &f->s.camera, 120, 90);
    for (uint32_t i = 0; extra && i < extra->n; i++)
        rays_push(&prim, extra->rays[i].o, extra->rays[i].d, extra->rays[i].tmin, extra->rays[i].tmax);
    float eps = rt_gpu_scene_epsilon(f->gs);
    RtHit *ref[2], *refs[2], *refr[2];
    RtHit *got;
    /* secondary rays come from the Woop primary hits (the renderer's default) */
    ref[1] = malloc(prim.n * sizeof(RtHit));
    assert_non_null(ref[1]);
    for (uint32_t i = 0; i < prim.n; i++) ref[1][i] = brute(f, &prim.rays[i], 1);
    secondary_rays(f, &prim, ref[1], eps, &shadow, &refl);
    uint32_t most = prim.n > shadow.n ? prim.n : shadow.n;
    most = most > refl.n ? most : refl.n;
    got = malloc((most + 1) * sizeof(RtHit));
    assert_non_null(got);
    for (int w = 0; w < 2; w++) {
        if (w == 0) {
            ref[0] = malloc(prim.n * sizeof(RtHit));
            assert_non_null(ref[0]);
            for (uint32_t i = 0; i < prim.n; i++) ref[0][i] = brute(f, &prim.rays[i], 0);
        }
        refs[w] = malloc((shadow.n + 1) * sizeof(RtHit));
        refr[w] = malloc((refl.n + 1) * sizeof(RtHit));
        assert_non_null(refs[w]);
        assert_non_null(refr[w]);
        for (uint32_t i = 0; i < shadow.n; i++) refs[w][i] = brute(f, &shadow.rays[i], w);
        for (uint32_t i = 0; i < refl.n; i++) refr[w][i] = brute(f, &refl.rays[i], w);
    }
    print_message("  %s: %u triangles, %u primary, %u shadow, %u reflection rays, eps %g\n",
                  f->name, f->s.tri_count, prim.n, shadow.n, refl.n, eps);
    RtTraceParams p;
    double worst = 1.0, worst_strict = 1.0;
    int packet_bad = 0;
    for (int v = 0; variant(v, &p); v++) {
        char name[96];
        variant_name(&p, name, sizeof name);
        int w = p.isect == RT_ISECT_WOOP;
        Tally tl;
        memset(&tl, 0, sizeof tl);
        gpu_cast(f, &p, &prim, 0, got);
        compare_hits("primary", &prim, ref[w], got, 0, eps, &tl);
        gpu_cast(f, &p, &shadow, 0, got);
        compare_hits("shadow", &shadow, refs[w], got, 0, eps, &tl);
        gpu_cast(f, &p, &shadow, 1, got);
        compare_hits("shadow-any", &shadow, refs[w], got, 1, eps, &tl);
        gpu_cast(f, &p, &refl, 0, got);
        compare_hits("reflection", &refl, refr[w], got, 0, eps, &tl);
        /* Agreement: the same triangle and t, or a tie at a shared edge
         * (both triangles at the same t; which one wins depends on the
         * last bit of t, and the device's FMAs move it). Strict equality
         * is printed and held to STRICT_MIN. */
        double frac = (double)(tl.equal + tl.tie) / (double)(tl.rays ? tl.rays : 1);
        double strict = (double)tl.equal / (double)(tl.rays ? tl.rays : 1);
        if (!p.packet) worst_strict = strict < worst_strict ? strict : worst_strict;
        if (tl.equal != tl.rays || v == 0)
            print_message("  %s %-40s %llu/%llu equal (%.5f%%); differences: t %llu, shared edge "
                          "%llu, hit/miss %llu, other %llu\n", f->name, name,
                          (unsigned long long)tl.equal, (unsigned long long)tl.rays, 100.0 * frac,
                          (unsigned long long)tl.t_off, (unsigned long long)tl.tie,
                          (unsigned long long)tl.miss, (unsigned long long)tl.other);
        if (p.packet) {
            if (frac < PACKET_MATCH_MIN) packet_bad++;
            if (frac < MATCH_MIN)
                print_message("  %s %s: KNOWN GAP (packets), %.5f%% agree\n", f->name, name,
                              100 * frac);
            continue;
        }
        worst = frac < worst ? frac : worst;
    }
    print_message("  %s: worst variant without packets %.5f%% agree (need %.2f%%), %.5f%% "
                  "strictly equal (need %.2f%%)\n", f->name, 100 * worst, 100 * MATCH_MIN, 100 * worst_strict,
                  100 * STRICT_MIN);
    for (int w = 0; w < 2; w++) {
        free(ref[w]);
        free(refs[w]);
        free(refr[w]);
    }
    free(got);
    free(prim.rays);
    free(shadow.rays);
    free(refl.rays);
    assert_true(worst >= MATCH_MIN);
    assert_true(worst_strict >= STRICT_MIN);
    assert_int_equal(packet_bad, 0);
}

/* ---- hit tests ------------------------------------------------------------- */

static void gpu_trace_soup_hits_match_brute_force(void **state)
{
    need_gpu(state);
    Fixture f;
    soup_fixture(&f, 1500, 0x5eed);
    /* plus random rays from everywhere, inside and outside the box */
    RaySet extra = {0};
    RtTestRng rng = {77};
    for (int i = 0; i < 4000; i++) {
        RtVec3 o = v3(14 * rt_test_randf(&rng) - 2, 14 * rt_test_randf(&rng) - 2,
                      14 * rt_test_randf(&rng) - 2);
        RtVec3 d = v3_norm(v3(rt_test_randf(&rng) - 0.5f, rt_test_randf(&rng) - 0.5f,
                              rt_test_randf(&rng) - 0.5f));
        rays_push(&extra, o, d, 0.0f, INFINITY);
    }
    check_fixture(&f, &extra);
    free(extra.rays);
    fixture_free(&f);
}

static void gpu_trace_grid_hits_match_brute_force(void **state)
{
    need_gpu(state);
    Fixture f;
    grid_fixture(&f, 32);
    check_fixture(&f, NULL);
    fixture_free(&f);
}

/* Axis-parallel rays straight down the grid's vertex lines: the origin
 * lies on split planes the ray is parallel to (kd_layout.h's tie rules),
 * and most hits are on shared edges. Reported, held to 99 %. */
static void gpu_trace_axis_rays_on_split_planes(void **state)
{
    need_gpu(state);
    Fixture f;
    grid_fixture(&f, 16);
    RaySet r = {0};
    RtTestRng rng = {3};
    for (int i = 0; i < 2000; i++) {
        float x = (float)(rt_test_rand(&rng) % 17), z = 16 * rt_test_randf(&rng);
        if (i & 1) {
            float t = x;
            x = z;
            z = t;
        }
        rays_push(&r, v3(x, 5.0f, z), v3(0, -1, 0), 0.0f, INFINITY);
    }
    RtHit *ref[2] = {malloc(r.n * sizeof(RtHit)), malloc(r.n * sizeof(RtHit))};
    RtHit *got = malloc(r.n * sizeof *got);
    assert_non_null(ref[0]);
    assert_non_null(ref[1]);
    assert_non_null(got);
    for (int w = 0; w < 2; w++)
        for (uint32_t i = 0; i < r.n; i++) ref[w][i] = brute(&f, &r.rays[i], w);
    float eps = rt_gpu_scene_epsilon(f.gs);
    RtTraceParams p;
    int bad = 0;
    for (int v = 0; variant(v, &p); v++) {
        Tally tl;
        memset(&tl, 0, sizeof tl);
        gpu_cast(&f, &p, &r, 0, got);
        compare_hits("axis", &r, ref[p.isect == RT_ISECT_WOOP], got, 0, eps, &tl);
        char name[96];
        if (tl.equal != tl.rays || v == 0)
            print_message("  axis %-40s %llu/%llu equal; shared edge %llu, hit/miss %llu, other "
                          "%llu\n", variant_name(&p, name, sizeof name),
                          (unsigned long long)tl.equal, (unsigned long long)tl.rays,
                          (unsigned long long)tl.tie, (unsigned long long)tl.miss,
                          (unsigned long long)tl.other);
        /* a shared-edge tie (same t, the other triangle) is the expected
         * difference here; a miss or a farther hit is not -- except without
         * a per-ray stack: a ray lying IN a split plane needs both children
         * over the same t interval. kd-restart cannot come back for the
         * second, and a warp packet's shared stack follows the packet's
         * choice, so such a ray sees only one side's triangle of the edge it
         * runs along, which Woop's rounding may place just outside (u =
         * -1 ulp). Every ray here is such a ray; on the H100, restart + Woop
         * misses 83 of 2000, packets 129-134; a one-entry short stack, which
         * restarts whenever a second entry is pending, 174 in the host
         * emulation; a per-ray short stack of 2+ entries none.
         * docs/trace_gpu.md, "Known limit". */
        int stackless = p.traversal == RT_TRAV_RESTART || p.packet || p.stack_size < 2;
        double need = stackless ? 0.85 : 0.99;
        if ((double)(tl.equal + tl.tie) < need * (double)tl.rays) bad++;
    }
    free(ref[0]);
    free(ref[1]);
    free(got);
    free(r.rays);
    fixture_free(&f);
    assert_int_equal(bad, 0);
}

static void gpu_trace_default_scene_hits_match_brute_force(void **state)
{
    need_gpu(state);
    Fixture f;
    default_fixture(&f);
    check_fixture(&f, NULL);
    fixture_free(&f);
}

static void gpu_trace_cornell_hits_match_brute_force(void **state)
{
    need_gpu(state);
    Fixture f;
    memset(&f, 0, sizeof f);
    if (!cornell_fixture(&f)) skip();
    check_fixture(&f, NULL);
    fixture_free(&f);
}

/* One triangle (size 1), and a ray set of size 0 and 1. */
static void gpu_trace_one_triangle_and_empty_batches(void **state)
{
    need_gpu(state);
    Fixture f;
    f.name = "one";
    rt_scene_init(&f.s);
    assert_true(rt_scene_add_object(&f.s, "one") >= 0);
    add_tri(&f.s, v3(0, 0, 0), v3(1, 0, 0), v3(0, 1, 0), -1);
    fixture_finish(&f);
    RtError err = {0};
    RtTraceParams p = rt_trace_params_default();
    assert_int_equal(rt_trace_gpu_rays(f.gs, &f.dtree, &p, NULL, NULL, NULL, 0, 1, 0, NULL, &err),
                     RT_OK);
    RaySet r = {0};
    rays_push(&r, v3(0.25f, 0.25f, 1), v3(0, 0, -1), 0.0f, INFINITY);  /* hit at t = 1 */
    rays_push(&r, v3(0.75f, 0.75f, 1), v3(0, 0, -1), 0.0f, INFINITY);  /* miss */
    rays_push(&r, v3(0.25f, 0.25f, 1), v3(0, 0, -1), 0.0f, 0.5f);      /* hit beyond tmax */
    RtHit got[3];
    for (int v = 0; variant(v, &p); v++) {
        gpu_cast(&f, &p, &r, 0, got);
        assert_int_equal(got[0].tri, 0);
        assert_true(fabsf(got[0].t - 1.0f) < 1e-6f);
        assert_int_equal(got[1].tri, RT_NO_HIT);
        assert_int_equal(got[2].tri, RT_NO_HIT);
    }
    free(r.rays);
    fixture_free(&f);
}

static void gpu_trace_rejects_bad_params(void **state)
{
    need_gpu(state);
    Fixture f;
    soup_fixture(&f, 10, 1);
    RtError err = {0};
    RtTraceParams p = rt_trace_params_default();
    p.stack_size = 0;
    void *img;
    assert_int_equal(rt_gpu_malloc(&img, 16, &err), RT_OK);
    assert_int_equal(rt_trace_gpu(f.gs, &f.dtree, &f.s.camera, &p, img, 2, 2, NULL, NULL, &err),
                     RT_ERR_ARG);
    assert_non_null(strstr(err.msg, "stack_size"));
    p = rt_trace_params_default();
    p.traversal = 7;
    assert_int_equal(rt_trace_gpu(f.gs, &f.dtree, &f.s.camera, &p, img, 2, 2, NULL, NULL, &err),
                     RT_ERR_ARG);
    assert_int_equal(rt_trace_variant_find(rt_trace_traversals, 2, "shortstack"),
                     RT_TRAV_SHORT_STACK);
    assert_int_equal(rt_trace_variant_find(rt_trace_isects, 2, "nope"), -1);
    rt_gpu_free(img);
    fixture_free(&f);
}

/* ---- images ------------------------------------------------------------------ */

/* GPU render vs rt_render_cpu with the same conventions; returns the
 * fraction of pixels within PIXEL_TOL in every channel. */
static double compare_render(Fixture *f, const RtTraceParams *tp, int w, int h, double *id_match)
{
    RtError err = {0};
    RtImage cpu, gpu;
    assert_int_equal(rt_image_alloc(&cpu, w, h), RT_OK);
    assert_int_equal(rt_image_alloc(&gpu, w, h), RT_OK);
    uint32_t *ids_c = malloc((size_t)w * h * 4), *ids_g = malloc((size_t)w * h * 4);
    assert_non_null(ids_c);
    assert_non_null(ids_g);
    RtRenderParams rp = rt_render_params_default();
    rp.max_bounces = tp->max_bounces;
    rp.use_woop = tp->isect == RT_ISECT_WOOP;
    RtRenderStats cs;
    assert_int_equal(rt_render_cpu(&f->s, &f->tris, &f->tree, &f->s.camera, &rp, &cpu, ids_c, &cs,
                                   &err), RT_OK);
    void *d_img, *d_ids;
    assert_int_equal(rt_gpu_malloc(&d_img, (size_t)w * h * 4, &err), RT_OK);
    assert_int_equal(rt_gpu_malloc(&d_ids, (size_t)w * h * 4, &err), RT_OK);
    RtTraceStats gst;
    RtStatus st = rt_trace_gpu(f->gs, &f->dtree, &f->s.camera, tp, d_img, w, h, d_ids, &gst, &err);
    if (st != RT_OK) print_message("%s\n", err.msg);
    assert_int_equal(st, RT_OK);
    assert_int_equal(rt_gpu_memcpy(gpu.rgba, d_img, (size_t)w * h * 4, RT_COPY_TO_HOST, &err), RT_OK);
    assert_int_equal(rt_gpu_memcpy(ids_g, d_ids, (size_t)w * h * 4, RT_COPY_TO_HOST, &err), RT_OK);
    size_t n = (size_t)w * h, close = 0, same_id = 0;
    double sum = 0;
    int worst = 0;
    for (size_t i = 0; i < n; i++) {
        int ok = 1;
        for (int k = 0; k < 4; k++) {
            int d = abs((int)cpu.rgba[4 * i + k] - (int)gpu.rgba[4 * i + k]);
            sum += d;
            if (d > worst) worst = d;
            if (d > PIXEL_TOL) ok = 0;
        }
        close += ok;
        same_id += ids_c[i] == ids_g[i];
    }
    double frac = (double)close / n;
    *id_match = (double)same_id / n;
    print_message("  %s %dx%d: %.3f%% of pixels within %d/255, mean |diff| %.3f, worst %d, ids "
                  "%.3f%% equal; rays cpu %llu/%llu/%llu gpu %llu/%llu/%llu (primary/shadow/"
                  "reflection), gpu %.3f ms\n", f->name, w, h, 100 * frac, PIXEL_TOL, sum / (4.0 * n),
                  worst, 100 * *id_match, (unsigned long long)cs.primary_rays,
                  (unsigned long long)cs.shadow_rays, (unsigned long long)cs.reflection_rays,
                  (unsigned long long)gst.primary_rays, (unsigned long long)gst.shadow_rays,
                  (unsigned long long)gst.reflection_rays, gst.ms);
    assert_int_equal(gst.primary_rays, (uint64_t)n);
    if (frac < PIXEL_MIN) {
        char path[128];
        snprintf(path, sizeof path, "/tmp/rt_test_gpu_trace_%s_gpu.png", f->name);
        rt_image_write_png(&gpu, path, &err);
        snprintf(path, sizeof path, "/tmp/rt_test_gpu_trace_%s_cpu.png", f->name);
        rt_image_write_png(&cpu, path, &err);
    }
    rt_gpu_free(d_img);
    rt_gpu_free(d_ids);
    free(ids_c);
    free(ids_g);
    rt_image_free(&cpu);
    rt_image_free(&gpu);
    return frac;
}

/* Returns 1 when both variants' images match the CPU render. */
static int check_images(Fixture *f)
{
    RtTraceParams p = rt_trace_params_default();
    double ids, ids2;
    double a = compare_render(f, &p, 320, 240, &ids);
    /* another corner of the variant space (packets: see PACKET_MATCH_MIN) */
    p.traversal = RT_TRAV_RESTART;
    p.isect = RT_ISECT_MT;
    p.ray_map = RT_RAYMAP_ROWS;
    double b = compare_render(f, &p, 320, 240, &ids2);
    return a >= PIXEL_MIN && b >= PIXEL_MIN && ids >= 0.999 && ids2 >= 0.999;
}

static void gpu_trace_default_scene_image_matches_cpu(void **state)
{
    need_gpu(state);
    Fixture f;
    default_fixture(&f);
    int ok = check_images(&f);
    fixture_free(&f);
    assert_true(ok);
}

static void gpu_trace_cornell_image_matches_cpu(void **state)
{
    need_gpu(state);
    Fixture f;
    memset(&f, 0, sizeof f);
    if (!cornell_fixture(&f)) skip();
    int ok = check_images(&f);
    fixture_free(&f);
    assert_true(ok);
}

/* The textured scene: map_Kd (sRGB, bilinear, wrap) and map_d cutouts. */
static void gpu_trace_textured_image_matches_cpu(void **state)
{
    need_gpu(state);
    char path[1024];
    const char *me = __FILE__, *tail = strstr(me, "tests/test_gpu_trace.c");
    snprintf(path, sizeof path, "%.*sscenes/textured/textured.obj", tail ? (int)(tail - me) : 0, me);
    Fixture f;
    RtError err = {0};
    f.name = "textured";
    if (rt_scene_load(path, &f.s, &err) != RT_OK) {
        print_message("skip: %s\n", err.msg);
        skip();
    }
    RtCamera cam = {v3(0.4f, 1.5f, 4.5f), v3(0.0f, 0.7f, -0.5f), v3(0, 1, 0), 55.0f};
    f.s.camera = cam; /* test_render.c's textured_camera */
    f.s.has_camera = 1;
    fixture_finish(&f);
    RtTraceParams p = rt_trace_params_default();
    double ids;
    double frac = compare_render(&f, &p, 320, 240, &ids);
    /* heatmap mode: the same pixels, coloured by kd nodes visited */
    p.heatmap = 1;
    double ids_heat;
    double heat_frac = compare_render(&f, &p, 320, 240, &ids_heat);
    fixture_free(&f);
    assert_true(frac >= PIXEL_MIN);
    assert_true(ids >= 0.999);
    assert_true(ids_heat >= 0.999);
    assert_true(heat_frac < PIXEL_MIN); /* a heatmap is not the shaded image */
}

/* ---- benchmark (RT_GPU_BENCH=1) ------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median GPU ms of `runs` casts after 2 warm-up casts. */
static double bench_cast(Fixture *f, const RtTraceParams *p, void *d_rays, void *d_hits, uint32_t n,
                         int width, int any)
{
    enum { RUNS = 7 };
    double ms[RUNS];
    RtError err = {0};
    for (int i = 0; i < 2 + RUNS; i++) {
        double t = 0;
        assert_int_equal(rt_trace_gpu_rays(f->gs, &f->dtree, p, d_rays, d_hits, NULL, n, width, any,
                                           &t, &err), RT_OK);
        if (i >= 2) ms[i - 2] = t;
    }
    qsort(ms, RUNS, sizeof ms[0], cmp_double);
    return ms[RUNS / 2];
}

static void bench_scene(Fixture *f, const RtCamera *cam, const char *gpu_name)
{
    const int w = 1920, h = 1080;
    RtError err = {0};
    RaySet prim = {0}, shadow = {0}, refl = {0};
    camera_rays(&prim, cam, w, h);
    uint32_t n = prim.n;
    void *d_rays, *d_hits, *d_img;
    size_t cap = (size_t)n * (f->s.light_count + 1);
    assert_int_equal(rt_gpu_malloc(&d_rays, cap * sizeof(RtGpuRay), &err), RT_OK);
    assert_int_equal(rt_gpu_malloc(&d_hits, cap * sizeof(RtHit), &err), RT_OK);
    assert_int_equal(rt_gpu_malloc(&d_img, (size_t)w * h * 4, &err), RT_OK);
    RtHit *hits = malloc(n * sizeof *hits);
    assert_non_null(hits);
    /* secondary rays start at the default variant's primary hits */
    RtTraceParams p = rt_trace_params_default();
    assert_int_equal(rt_gpu_memcpy(d_rays, prim.rays, n * sizeof(RtGpuRay), RT_COPY_TO_DEVICE, &err), RT_OK);
    assert_int_equal(rt_trace_gpu_rays(f->gs, &f->dtree, &p, d_rays, d_hits, NULL, n, w, 0, NULL,
                                       &err), RT_OK);
    assert_int_equal(rt_gpu_memcpy(hits, d_hits, n * sizeof *hits, RT_COPY_TO_HOST, &err), RT_OK);
    /* shadow rays per light in pixel order (one light after the other) */
    RaySet sh_one = {0};
    for (uint32_t l = 0; l < f->s.light_count; l++) {
        RtScene only = f->s;
        only.lights = &f->s.lights[l];
        only.light_count = 1;
        Fixture g = *f;
        g.s = only;
        RaySet dummy = {0};
        sh_one.n = 0;
        secondary_rays(&g, &prim, hits, rt_gpu_scene_epsilon(f->gs), &sh_one, l == 0 ? &refl : &dummy);
        for (uint32_t i = 0; i < sh_one.n; i++)
            rays_push(&shadow, sh_one.rays[i].o, sh_one.rays[i].d, sh_one.rays[i].tmin, sh_one.rays[i].tmax);
        free(dummy.rays);
    }
    free(sh_one.rays);
    uint32_t hit_count = 0;
    for (uint32_t i = 0; i < n; i++) hit_count += hits[i].tri != RT_NO_HIT;
    print_message("BENCH %s on %s: %u triangles, kd nodes %u, 1920x1080: %u primary hits, %u shadow "
                  "rays, %u reflection rays\n", f->name, gpu_name, f->s.tri_count, f->tree.node_count,
                  hit_count, shadow.n, refl.n);
    print_message("BENCH | traversal | isect | leaf skip | ray map | packet | primary Mrays/s | "
                  "shadow (any hit) Mrays/s | reflection Mrays/s | full frame ms |\n");
    RtTraceParams v;
    for (int i = 0; variant(i, &v); i++) {
        if (i >= 32) continue;
        double mp, ms_sh, mr;
        assert_int_equal(rt_gpu_memcpy(d_rays, prim.rays, n * sizeof(RtGpuRay), RT_COPY_TO_DEVICE, &err), RT_OK);
        mp = bench_cast(f, &v, d_rays, d_hits, n, w, 0);
        assert_int_equal(rt_gpu_memcpy(d_rays, shadow.rays, shadow.n * sizeof(RtGpuRay),
                                       RT_COPY_TO_DEVICE, &err), RT_OK);
        ms_sh = bench_cast(f, &v, d_rays, d_hits, shadow.n, w, 1);
        /* reflection rays are stored compacted (hits only), width w as well */
        assert_int_equal(rt_gpu_memcpy(d_rays, refl.rays, refl.n * sizeof(RtGpuRay),
                                       RT_COPY_TO_DEVICE, &err), RT_OK);
        mr = bench_cast(f, &v, d_rays, d_hits, refl.n, w, 0);
        /* full frame: primary + shadows + 1 bounce, shaded into RGBA8 */
        double frame[5];
        for (int k = 0; k < 7; k++) {
            RtTraceStats st;
            assert_int_equal(rt_trace_gpu(f->gs, &f->dtree, cam, &v, d_img, w, h, NULL, &st, &err), RT_OK);
            if (k >= 2) frame[k - 2] = st.ms;
        }
        qsort(frame, 5, sizeof frame[0], cmp_double);
        print_message("BENCH | %s | %s | %s | %s | %s | %.0f | %.0f | %.0f | %.3f |\n",
                      rt_trace_traversals[v.traversal].name, rt_trace_isects[v.isect].name,
                      v.leaf_skip ? "yes" : "no", v.ray_map ? "4x8" : "rows",
                      rt_trace_packets[v.packet].name, n / (mp * 1e3), shadow.n / (ms_sh * 1e3),
                      refl.n / (mr * 1e3), frame[2]);
    }
    free(hits);
    free(prim.rays);
    free(shadow.rays);
    free(refl.rays);
    rt_gpu_free(d_rays);
    rt_gpu_free(d_hits);
    rt_gpu_free(d_img);
}

static void gpu_trace_benchmark(void **state)
{
    need_gpu(state);
    const char *b = getenv("RT_GPU_BENCH");
    if (!b || atoi(b) != 1) {
        print_message("skip: benchmark runs with RT_GPU_BENCH=1\n");
        skip();
    }
    const char *gpu_name = rt_gpu_info((RtGpu *)*state)->name;
    Fixture f;
    default_fixture(&f);
    bench_scene(&f, &f.s.camera, gpu_name);
    fixture_free(&f);
    /* the real scenes (each skipped with a message when its asset is absent):
     * Sponza inside the atrium (docs/renderer.md's camera), the BART kitchen
     * from its own camera at t = 0, the bunny from the framed default view */
    static const struct { const char *asset, *name; int own_camera; RtCamera cam; } scenes[] = {
        {"sponza/sponza.obj", "sponza", 0, {{110, 20, -4}, {-50, 40, 0}, {0, 1, 0}, 60.0f}},
        {"bart/kitchen/aff/kitchen.aff", "kitchen", 1, {{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, 60.0f}},
        {"models/bunny.obj", "bunny", 1, {{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, 60.0f}},
    };
    for (size_t k = 0; k < sizeof scenes / sizeof scenes[0]; k++) {
        char buf[1024];
        if (!rt_test_asset(scenes[k].asset, buf)) continue;
        RtError err = {0};
        memset(&f, 0, sizeof f);
        f.name = scenes[k].name;
        double t0 = rt_now_ms();
        assert_int_equal(rt_scene_load(buf, &f.s, &err), RT_OK);
        fixture_finish(&f);
        print_message("BENCH %s loaded + CPU kd-tree in %.0f ms\n", f.name, rt_now_ms() - t0);
        RtCamera cam = scenes[k].own_camera ? f.s.camera : scenes[k].cam;
        bench_scene(&f, &cam, gpu_name);
        fixture_free(&f);
    }
}

/* ---- main ------------------------------------------------------------------------ */

static int gpu_setup(void **state)
{
    RtGpu *gpu = NULL;
    RtError err = {0};
    if (rt_gpu_create(0, &gpu, &err) != RT_OK) {
        print_message("skip: no GPU: %s\n", err.msg);
        gpu = NULL;
    } else {
        print_message("GPU: %s\n", rt_gpu_info(gpu)->name);
    }
    *state = gpu;
    return 0;
}

static int gpu_teardown(void **state)
{
    rt_gpu_destroy((RtGpu *)*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_trace_one_triangle_and_empty_batches),
        cmocka_unit_test(gpu_trace_rejects_bad_params),
        cmocka_unit_test(gpu_trace_soup_hits_match_brute_force),
        cmocka_unit_test(gpu_trace_grid_hits_match_brute_force),
        cmocka_unit_test(gpu_trace_axis_rays_on_split_planes),
        cmocka_unit_test(gpu_trace_default_scene_hits_match_brute_force),
        cmocka_unit_test(gpu_trace_cornell_hits_match_brute_force),
        cmocka_unit_test(gpu_trace_default_scene_image_matches_cpu),
        cmocka_unit_test(gpu_trace_cornell_image_matches_cpu),
        cmocka_unit_test(gpu_trace_textured_image_matches_cpu),
        cmocka_unit_test(gpu_trace_benchmark),
    };
    /* RT_GPU_QUICK=1: a subset that still runs every kernel and variant,
     * for slow runs such as compute-sanitizer (docs/trace_gpu.md). */
    const struct CMUnitTest quick[] = {
        cmocka_unit_test(gpu_trace_one_triangle_and_empty_batches),
        cmocka_unit_test(gpu_trace_soup_hits_match_brute_force),
        cmocka_unit_test(gpu_trace_textured_image_matches_cpu),
        cmocka_unit_test(gpu_trace_default_scene_image_matches_cpu),
    };
    const char *q = getenv("RT_GPU_QUICK");
    if (q && atoi(q) == 1)
        return cmocka_run_group_tests_name("gpu_trace_quick", quick, gpu_setup, gpu_teardown);
    return cmocka_run_group_tests_name("gpu_trace", tests, gpu_setup, gpu_teardown);
}
