/* test_gpu_anim.c — the GPU animate stage (cuda/anim/anim_gpu.h) against its CPU
 * oracle rt_scene_frame_at: world vertices and normals, the tracer's
 * triangle corners and corner normals, hidden subtrees (zero Woop rows) and
 * animated lights, for sizes 0, 1 and a random hierarchy with morphs and a
 * wave, the same with skinned grids (linear blend skinning: random joints,
 * 0 to 4 weights per vertex, a morph under a skin) and the skinned models
 * of the assimp corpus; plus the stage's GPU time on a large deforming
 * grid. Skips without a GPU. */
#include "test_util.h"

#include "anim/anim_gpu.h"
#include "gpu/gpu.h"
#include "scene/load.h"
#include "scene/primitives.h"
#include "scene/scene.h"

/* nvcc contracts a*b+c into FMAs and its sinf/cosf differ in the last ulps:
 * agreement to this relative tolerance, not bit for bit (anim_eval.h). */
static const double kTolRel = 1e-5;
static const double kTolNrm = 1e-4;

static void need_gpu(void **state)
{
    if (!*state) {
        print_message("skip: no GPU: the GPU animation tests need one\n");
        skip();
    }
}

/* ---- scenes ------------------------------------------------------------------ */

/* An n x n grid of vertices in the xz-plane, spacing `step`, normal +y. */
static void add_grid(RtScene *s, uint32_t n, float step, RtVec3 origin)
{
    uint32_t v0 = s->vert_count;
    int64_t o = rt_scene_add_object(s, "grid");
    assert_true(o >= 0);
    for (uint32_t j = 0; j < n; j++)
        for (uint32_t i = 0; i < n; i++) {
            RtVertex v = {v3(origin.x + step * (float)i, origin.y, origin.z - step * (float)j), v3(0, 1, 0),
                          (float)i / (float)n, (float)j / (float)n};
            assert_true(rt_scene_add_vertex(s, v) >= 0);
        }
    for (uint32_t j = 0; j + 1 < n; j++)
        for (uint32_t i = 0; i + 1 < n; i++) {
            uint32_t a = v0 + j * n + i, b = a + 1, c = a + n + 1, d = a + n;
            RtTriangle t0 = {{a, b, c}, -1, (uint32_t)o}, t1 = {{a, c, d}, -1, (uint32_t)o};
            assert_true(rt_scene_add_triangle(s, t0) >= 0);
            assert_true(rt_scene_add_triangle(s, t1) >= 0);
        }
    s->objects[o].tri_count = s->tri_count - s->objects[o].first_tri;
}

static RtKbChannel random_channel(RtTestRng *rng, uint32_t n, float scale, float base)
{
    RtKbChannel c;
    c.count = n;
    c.keys = calloc(n, sizeof *c.keys);
    assert_non_null(c.keys);
    for (uint32_t i = 0; i < n; i++) {
        c.keys[i].t = (float)i - 1.0f;
        for (int k = 0; k < 3; k++) c.keys[i].v[k] = base + scale * (rt_test_randf(rng) - 0.5f);
        c.keys[i].v[3] = 360.0f * rt_test_randf(rng);
    }
    return c;
}

/* 40 grids of 6x6 vertices, a random 30-node hierarchy of every kind (a
 * keyframed track with a visibility channel among them), a third of the
 * grids static, two morphs (one in a node, one static) and two waves (one
 * in a node), two lights of which one follows a track. */
static void make_random_scene(RtScene *s, uint64_t seed)
{
    RtTestRng rng = {seed};
    rt_scene_init(s);
    const uint32_t grids = 40, n = 6;
    for (uint32_t g = 0; g < grids; g++)
        add_grid(s, n, 0.2f, v3((float)(g % 8) * 1.5f, 0.0f, (float)(g / 8) * 1.5f));
    RtAnimTrack tr;
    memset(&tr, 0, sizeof tr);
    snprintf(tr.name, sizeof tr.name, "wobble");
    tr.transl = random_channel(&rng, 6, 2.0f, 0.0f);
    tr.rot = random_channel(&rng, 5, 1.0f, 0.5f);
    tr.scale = random_channel(&rng, 4, 0.5f, 1.0f);
    tr.visibility.count = 2;
    tr.visibility.keys = calloc(2, sizeof *tr.visibility.keys);
    tr.visibility.keys[0].t = 1.0f, tr.visibility.keys[0].v[0] = 0.0f;
    tr.visibility.keys[1].t = 2.0f, tr.visibility.keys[1].v[0] = 1.0f;
    int32_t track = (int32_t)rt_anim_add_track(&s->anim, &tr);
    assert_true(track >= 0);
    for (uint32_t i = 0; i < 30; i++) {
        RtAnimNode nd;
        memset(&nd, 0, sizeof nd);
        nd.parent = i ? (int32_t)(rt_test_rand(&rng) % (i + 1)) - 1 : -1;
        nd.kind = (int32_t)(rt_test_rand(&rng) % 5);
        nd.track = nd.kind == RT_NODE_TRACK ? track : -1;
        for (int k = 0; k < 8; k++) nd.p[k] = rt_test_randf(&rng) * 2.0f - 1.0f;
        nd.p[1] += 1.5f;
        rt_mat34_identity(nd.m);
        rt_mat34_scale(nd.m, v3(0.7f + 0.6f * rt_test_randf(&rng), 1.0f, 0.7f + 0.6f * rt_test_randf(&rng)));
        rt_mat34_rotate(nd.m, v3(rt_test_randf(&rng), 1, rt_test_randf(&rng)), 360.0f * rt_test_randf(&rng));
        rt_mat34_translate(nd.m, v3(rt_test_randf(&rng), rt_test_randf(&rng), rt_test_randf(&rng)));
        assert_true(rt_anim_add_node(&s->anim, &nd) >= 0);
    }
    RtError err = {0};
    for (uint32_t g = 0; g < grids; g++) {
        if (g % 3 == 2) continue; /* static */
        uint32_t node = rt_test_rand(&rng) % 30;
        assert_int_equal(rt_anim_set_vert_node(&s->anim, s->vert_count, g * n * n, n * n, node, &err), RT_OK);
    }
    /* morphs on grid 0 (in a node) and grid 2 (static): 4 keys of random poses */
    uint32_t morph_grids[2] = {0, 2};
    for (int m = 0; m < 2; m++) {
        RtAnimMorph mo;
        memset(&mo, 0, sizeof mo);
        mo.first_vert = morph_grids[m] * n * n;
        mo.vert_count = n * n;
        mo.key_count = 4;
        mo.times = malloc(4 * sizeof *mo.times);
        mo.pos = malloc(4 * n * n * sizeof *mo.pos);
        mo.nrm = malloc(4 * n * n * sizeof *mo.nrm);
        for (uint32_t k = 0; k < 4; k++) {
            mo.times[k] = 0.8f * (float)k;
            for (uint32_t j = 0; j < n * n; j++) {
                RtVec3 p = s->verts[mo.first_vert + j].p;
                mo.pos[k * n * n + j] = v3_add(p, v3(0.1f * rt_test_randf(&rng), 0.3f * rt_test_randf(&rng), 0));
                mo.nrm[k * n * n + j] = v3(rt_test_randf(&rng) - 0.5f, 1.0f, rt_test_randf(&rng) - 0.5f);
            }
        }
        assert_true(rt_anim_add_morph(&s->anim, &mo) >= 0);
    }
    /* waves on grid 3 (in a node) and grid 5 (static) */
    uint32_t wave_grids[2] = {3, 5};
    for (int w = 0; w < 2; w++) {
        RtAnimDeform d;
        memset(&d, 0, sizeof d);
        d.first_vert = wave_grids[w] * n * n;
        d.vert_count = n * n;
        d.kind = RT_DEFORM_WAVE;
        d.amplitude = 0.1f, d.wavelength = 0.7f, d.speed = 0.5f, d.dir_x = 0.6f, d.dir_z = 0.8f;
        assert_true(rt_anim_add_deform(&s->anim, &d) >= 0);
    }
    RtLight l0 = {RT_LIGHT_POINT, v3(0, 5, 0), v3(1, 1, 1)}, l1 = {RT_LIGHT_POINT, v3(3, 5, 0), v3(1, 1, 1)};
    rt_scene_add_light(s, l0);
    rt_scene_add_light(s, l1);
    s->anim.light_track = malloc(2 * sizeof *s->anim.light_track);
    s->anim.light_track_cap = 2;
    s->anim.light_track[0] = -1;
    s->anim.light_track[1] = track;
}

/* Skins grids 0, 1, 6, 7 and 8 of make_random_scene (grid 0 also morphs,
 * grid 8 is static otherwise) over 8 joints on random nodes with random
 * inverse bind matrices: per vertex 0 to 4 joints (none: the vertex
 * follows its node), random positive weights that the evaluation
 * renormalises. */
static void add_random_skin(RtScene *s, uint64_t seed)
{
    RtTestRng rng = {seed};
    const uint32_t n = 6, joints = 8;
    for (uint32_t j = 0; j < joints; j++) {
        RtAnimJoint jt;
        jt.node = rt_test_rand(&rng) % s->anim.node_count;
        rt_mat34_identity(jt.inv_bind);
        rt_mat34_scale(jt.inv_bind, v3(0.8f + 0.4f * rt_test_randf(&rng), 1.0f, 0.8f + 0.4f * rt_test_randf(&rng)));
        rt_mat34_rotate(jt.inv_bind, v3(rt_test_randf(&rng), 1, rt_test_randf(&rng)), 360.0f * rt_test_randf(&rng));
        rt_mat34_translate(jt.inv_bind, v3(rt_test_randf(&rng) - 0.5f, rt_test_randf(&rng) - 0.5f, 0));
        assert_true(rt_anim_add_joint(&s->anim, &jt) >= 0);
    }
    const uint32_t grids[5] = {0, 1, 6, 7, 8};
    RtAnimSkinVert sv[36];
    RtError err = {0};
    for (int g = 0; g < 5; g++) {
        memset(sv, 0, sizeof sv);
        for (uint32_t i = 0; i < n * n; i++) {
            uint32_t used = rt_test_rand(&rng) % (RT_SKIN_WEIGHTS + 1);
            for (uint32_t k = 0; k < used; k++) {
                sv[i].joint[k] = rt_test_rand(&rng) % joints;
                sv[i].weight[k] = 0.05f + rt_test_randf(&rng);
            }
        }
        assert_int_equal(rt_anim_set_vert_skin(&s->anim, s->vert_count, grids[g] * n * n, n * n, sv, &err), RT_OK);
    }
}

/* ---- comparison ------------------------------------------------------------- */

/* Each component within tol of the vector's own scale (1 + its largest
 * component): the float error of a transformed or skinned position comes
 * from sums of terms as large as the vector, so a small coordinate of a far
 * vertex (y = -1.26 at x = 408) carries the error of the large ones. */
static int v3_near(RtVec3 a, RtVec3 b, double tol)
{
    double scale = 1.0 + fmax(fabs(b.x), fmax(fabs(b.y), fabs(b.z)));
    return fabs(a.x - b.x) <= tol * scale && fabs(a.y - b.y) <= tol * scale && fabs(a.z - b.z) <= tol * scale;
}

/* Evaluates s at t on both paths and compares everything the tracer reads. */
static void compare_at(const RtScene *s, RtGpuAnim *ga, RtGpuScene *gs, float t, uint32_t *hidden_tris)
{
    RtError err = {0};
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    assert_int_equal(rt_scene_frame_at(s, t, &f, &err), RT_OK);
    double ms = -1.0;
    if (rt_gpu_anim_eval(ga, s, t, gs, &ms, &err) != RT_OK) fail_msg("%s", err.msg);
    assert_true(ms >= 0.0);
    uint32_t nv = s->vert_count, nt = s->tri_count;
    RtVertex *gv = malloc((nv + 1) * sizeof *gv);
    RtFloat4 *gp = malloc((3 * (size_t)nt + 1) * sizeof *gp), *gn = malloc((3 * (size_t)nt + 1) * sizeof *gn);
    RtFloat4 *gw = malloc((3 * (size_t)nt + 1) * sizeof *gw);
    assert_true(gv && gp && gn && gw);
    assert_int_equal(rt_gpu_anim_download_verts(ga, gv, nv, &err), RT_OK);
    RtTriArrays ta = rt_gpu_scene_tris(gs);
    assert_int_equal(rt_gpu_memcpy(gp, ta.verts, 3 * (size_t)nt * sizeof *gp, RT_COPY_TO_HOST, &err), RT_OK);
    assert_int_equal(rt_gpu_memcpy(gw, ta.woop, 3 * (size_t)nt * sizeof *gw, RT_COPY_TO_HOST, &err), RT_OK);
    assert_int_equal(rt_gpu_memcpy(gn, rt_gpu_scene_normals(gs), 3 * (size_t)nt * sizeof *gn, RT_COPY_TO_HOST, &err),
                     RT_OK);
    uint32_t bad = 0;
    for (uint32_t i = 0; i < nv; i++) {
        const RtVertex *c = &f.view.verts[i];
        if (!v3_near(gv[i].p, c->p, kTolRel) || !v3_near(gv[i].n, c->n, kTolNrm)) {
            if (bad++ < 5)
                print_message("t=%g vertex %u: GPU p (%.7g %.7g %.7g) n (%.5g %.5g %.5g), CPU p (%.7g %.7g %.7g) n "
                              "(%.5g %.5g %.5g)\n", t, i, gv[i].p.x, gv[i].p.y, gv[i].p.z, gv[i].n.x, gv[i].n.y,
                              gv[i].n.z, c->p.x, c->p.y, c->p.z, c->n.x, c->n.y, c->n.z);
        }
        if (gv[i].u != c->u || gv[i].v != c->v) bad++;
    }
    uint32_t zero_rows = 0, cpu_degenerate = 0;
    for (uint32_t i = 0; i < nt; i++) {
        RtVec3 q[3];
        for (int k = 0; k < 3; k++) {
            const RtVertex *c = &f.view.verts[s->tris[i].v[k]];
            q[k] = c->p;
            if (!v3_near(f4_xyz(gp[3 * i + k]), c->p, kTolRel) || !v3_near(f4_xyz(gn[3 * i + k]), c->n, kTolNrm))
                bad++;
        }
        RtFloat4 rows[3];
        cpu_degenerate += !rt_woop_rows(q[0], q[1], q[2], rows);
        zero_rows += gw[3 * i].x == 0 && gw[3 * i].y == 0 && gw[3 * i].z == 0 && gw[3 * i].w == 0 &&
                     gw[3 * i + 2].x == 0 && gw[3 * i + 2].y == 0 && gw[3 * i + 2].z == 0;
    }
    assert_int_equal(bad, 0);
    assert_int_equal(zero_rows, cpu_degenerate);
    if (hidden_tris) *hidden_tris = zero_rows;
    free(gv), free(gp), free(gn), free(gw);
    rt_scene_frame_free(&f);
}

typedef struct Gpu {
    RtGpuScene *gs;
    RtGpuAnim *ga;
} Gpu;

static void gpu_up(const RtScene *s, Gpu *g)
{
    RtError err = {0};
    if (rt_gpu_scene_create(s, &g->gs, &err) != RT_OK) fail_msg("%s", err.msg);
    if (rt_gpu_anim_create(s, &g->ga, &err) != RT_OK) fail_msg("%s", err.msg);
}

static void gpu_down(Gpu *g)
{
    rt_gpu_anim_destroy(g->ga);
    rt_gpu_scene_destroy(g->gs);
}

/* ---- tests ------------------------------------------------------------------- */

static void gpu_anim_empty_and_one_triangle_scenes(void **state)
{
    need_gpu(state);
    RtScene s;
    rt_scene_init(&s);
    Gpu g;
    gpu_up(&s, &g); /* 0 vertices, 0 triangles: nothing to launch */
    compare_at(&s, g.ga, g.gs, 1.0f, NULL);
    gpu_down(&g);
    rt_scene_free(&s);

    rt_scene_init(&s);
    RtVertex v[3] = {{v3(0, 0, 0), v3(0, 0, 1), 0, 0}, {v3(1, 0, 0), v3(0, 0, 1), 1, 0}, {v3(0, 1, 0), v3(0, 0, 1), 0, 1}};
    for (int k = 0; k < 3; k++) rt_scene_add_vertex(&s, v[k]);
    RtTriangle t = {{0, 1, 2}, -1, 0};
    rt_scene_add_triangle(&s, t);
    rt_scene_add_object(&s, "tri");
    gpu_up(&s, &g); /* static: the base vertices come back */
    compare_at(&s, g.ga, g.gs, 0.0f, NULL);
    gpu_down(&g);
    RtAnimNode n;
    memset(&n, 0, sizeof n);
    n.parent = -1, n.kind = RT_NODE_SPIN, n.track = -1;
    n.p[2] = 1.0f, n.p[3] = 45.0f;
    rt_mat34_identity(n.m);
    rt_anim_add_node(&s.anim, &n);
    RtError err = {0};
    assert_int_equal(rt_anim_set_vert_node(&s.anim, 3, 0, 3, 0, &err), RT_OK);
    gpu_up(&s, &g); /* one spinning node */
    for (int i = 0; i < 4; i++) compare_at(&s, g.ga, g.gs, 0.7f * (float)i, NULL);
    gpu_down(&g);
    rt_scene_free(&s);
}

static void gpu_anim_random_hierarchy_morph_wave_matches_cpu(void **state)
{
    need_gpu(state);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        RtScene s;
        make_random_scene(&s, 0x9e3779b97f4a7c15ull * seed);
        Gpu g;
        gpu_up(&s, &g);
        const float times[] = {-2.0f, 0.0f, 0.35f, 1.5f, 2.4f, 3.9f, 10.0f};
        uint32_t hidden_max = 0;
        for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
            uint32_t hidden = 0;
            compare_at(&s, g.ga, g.gs, times[i], &hidden);
            if (hidden > hidden_max) hidden_max = hidden;
        }
        print_message("seed %u: %u vertices, %u triangles, %u nodes; up to %u hidden triangles\n", (unsigned)seed,
                      s.vert_count, s.tri_count, s.anim.node_count, hidden_max);
        gpu_down(&g);
        rt_scene_free(&s);
    }
}

static void gpu_anim_skinned_random_hierarchy_matches_cpu(void **state)
{
    need_gpu(state);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        RtScene s;
        make_random_scene(&s, 0x51ed270b27f1a3c5ull * seed);
        add_random_skin(&s, seed);
        Gpu g;
        gpu_up(&s, &g);
        const float times[] = {-2.0f, 0.0f, 0.35f, 1.5f, 2.4f, 3.9f, 10.0f};
        for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) compare_at(&s, g.ga, g.gs, times[i], NULL);
        gpu_down(&g);
        rt_scene_free(&s);
    }
}

/* The skinned models of the assimp corpus (skipped where the package or
 * assimp is absent), at 5 times of their clip; the corpus may be a copy
 * named by $RT_ASSIMP_MODELS (the GPU machine's kit). */
static void gpu_anim_skinned_corpus_models_match_cpu(void **state)
{
    need_gpu(state);
    /* under $RT_ASSIMP_MODELS, default the package's (rt_assimp_models_dir) */
    const char *files[] = {"glTF2/simple_skin/simple_skin.gltf", "FBX/huesitos.fbx",
                           "FBX/animation_with_skeleton.fbx"};
    int done = 0;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        RtScene s;
        RtError err = {0};
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", rt_assimp_models_dir(), files[i]);
        if (rt_scene_load(path, &s, &err) != RT_OK) {
            print_message("skip: %s\n", err.msg);
            continue;
        }
        assert_true(s.anim.joint_count > 0);
        float t0, t1;
        rt_scene_time_range(&s, &t0, &t1);
        Gpu g;
        gpu_up(&s, &g);
        for (int k = 0; k <= 4; k++) compare_at(&s, g.ga, g.gs, t0 + 0.25f * (float)k * (t1 - t0), NULL);
        gpu_down(&g);
        rt_scene_free(&s);
        done++;
    }
    if (!done) skip();
}

/* tests/data/keys_skin.gltf (make_keys_skin.py): a skinned strip whose
 * joints move by the file's STEP, LINEAR and CUBICSPLINE samplers (read by
 * gltf_anim.c, not assimp), both clips, at key times, just before and after
 * a STEP key and between keys. Skipped without assimp or cJSON. */
static void gpu_anim_gltf_step_cubic_keys_skinned_match_cpu(void **state)
{
    need_gpu(state);
    if (!RT_HAVE_CJSON) {
        print_message("skip: this build has no cJSON (RT_HAVE_CJSON=0): glTF samplers play linear\n");
        skip();
    }
    char path[1024];
    rt_test_src_path("tests/data/keys_skin.gltf", path);
    const char *clips[] = {"step", "cubic"};
    const float times[][8] = {{0.0f, 0.25f, 0.499f, 0.5f, 0.501f, 0.75f, 1.0f, 1.7f},
                              {0.0f, 0.3f, 0.8f, 1.1f, 1.5f, 1.99f, 2.0f, -0.5f}};
    for (int c = 0; c < 2; c++) {
        RtScene s;
        RtError err = {0};
        if (rt_scene_load_clip(path, clips[c], &s, &err) != RT_OK) {
            print_message("skip: %s\n", err.msg);
            skip();
        }
        assert_int_equal(s.anim.joint_count, 2);
        Gpu g;
        gpu_up(&s, &g);
        for (int k = 0; k < 8; k++) compare_at(&s, g.ga, g.gs, times[c][k], NULL);
        gpu_down(&g);
        rt_scene_free(&s);
    }
}

static void gpu_anim_rejects_a_changed_scene(void **state)
{
    need_gpu(state);
    RtScene s;
    make_random_scene(&s, 77);
    Gpu g;
    gpu_up(&s, &g);
    RtVertex extra = s.verts[0];
    rt_scene_add_vertex(&s, extra);
    RtError err = {0};
    assert_int_equal(rt_gpu_anim_eval(g.ga, &s, 0.0f, g.gs, NULL, &err), RT_ERR_ARG);
    rt_test_assert_contains(err.msg, "ANIM:");
    RtVertex out[4];
    assert_int_equal(rt_gpu_anim_download_verts(g.ga, out, 4, &err), RT_ERR_ARG);
    gpu_down(&g);
    rt_scene_free(&s);
}

/* GPU time of the stage on a 1024^2-vertex grid (2.1M triangles) under a
 * node and a wave, vs the CPU path (one thread) for scale. */
static void gpu_anim_benchmark(void **state)
{
    need_gpu(state);
    RtScene s;
    rt_scene_init(&s);
    const uint32_t n = 1024;
    add_grid(&s, n, 0.01f, v3(0, 0, 0));
    RtAnimNode nd;
    memset(&nd, 0, sizeof nd);
    nd.parent = -1, nd.kind = RT_NODE_SPIN, nd.track = -1;
    nd.p[1] = 1.0f, nd.p[3] = 30.0f;
    rt_mat34_identity(nd.m);
    rt_anim_add_node(&s.anim, &nd);
    RtError err = {0};
    assert_int_equal(rt_anim_set_vert_node(&s.anim, s.vert_count, 0, s.vert_count, 0, &err), RT_OK);
    RtAnimDeform d;
    memset(&d, 0, sizeof d);
    d.vert_count = s.vert_count, d.amplitude = 0.05f, d.wavelength = 1.0f, d.speed = 1.0f, d.dir_x = 1.0f;
    rt_anim_add_deform(&s.anim, &d);
    Gpu g;
    gpu_up(&s, &g);
    double gpu_ms[20], total = 0.0;
    for (int i = 0; i < 20; i++) {
        if (rt_gpu_anim_eval(g.ga, &s, 0.05f * (float)i, g.gs, &gpu_ms[i], &err) != RT_OK) fail_msg("%s", err.msg);
        if (i >= 5) total += gpu_ms[i];
    }
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    double t0 = rt_now_ms();
    for (int i = 0; i < 3; i++) assert_int_equal(rt_scene_frame_at(&s, 0.1f * (float)i, &f, &err), RT_OK);
    double cpu_ms = (rt_now_ms() - t0) / 3.0;
    print_message("benchmark: %u vertices, %u triangles (spin + wave): GPU animate %.3f ms/frame (mean of 15, "
                  "CUDA events, incl. Woop rows), CPU rt_scene_frame_at %.1f ms/frame (vertices only)\n",
                  s.vert_count, s.tri_count, total / 15.0, cpu_ms);
    compare_at(&s, g.ga, g.gs, 0.77f, NULL);
    rt_scene_frame_free(&f);
    gpu_down(&g);
    rt_scene_free(&s);
}

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
        cmocka_unit_test(gpu_anim_empty_and_one_triangle_scenes),
        cmocka_unit_test(gpu_anim_random_hierarchy_morph_wave_matches_cpu),
        cmocka_unit_test(gpu_anim_skinned_random_hierarchy_matches_cpu),
        cmocka_unit_test(gpu_anim_skinned_corpus_models_match_cpu),
        cmocka_unit_test(gpu_anim_gltf_step_cubic_keys_skinned_match_cpu),
        cmocka_unit_test(gpu_anim_rejects_a_changed_scene),
        cmocka_unit_test(gpu_anim_benchmark),
    };
    rt_log_set_level(RT_LOG_WARN);
    return cmocka_run_group_tests_name("gpu_anim", tests, gpu_setup, gpu_teardown);
}
