/* test_assimp.c — the assimp loader (load_assimp.c) through rt_scene_load,
 * the path a user's file takes:
 *   - the corpus: every file of an assimp format in Debian's
 *     assimp-testmodels (/usr/share/assimp/models, or $RT_ASSIMP_MODELS:
 *     glTF 2.0, FBX, Collada, MD2, 3DS, X, STL, Blender, LWO, ...) loads (triangles, finite corners, indices in range)
 *     or fails cleanly (non-OK, an empty scene, a message naming the file),
 *     each in a forked child under alarm() so a crash or hang names the
 *     file; a table per folder; the files built to break importers
 *     (MissingBin, RecursiveNodes, AllIndicesOutOfRange) must fail;
 *   - a glTF box, an FBX box and an MD2 rendered on the CPU are not empty;
 *   - node TRS animation, morph weights and a two-joint skin of small glTF
 *     files written here, against hand-computed positions at several times;
 *     STEP, CUBICSPLINE and LINEAR samplers read from the file itself
 *     (gltf_anim.c; buffer as data: URI, .bin file, GLB), and files it
 *     refuses (out-of-range accessor, wrong cubic count, truncated GLB);
 *     --clip by name, by index and unknown; MD2 frames, a Collada node
 *     animation and the skinned glTF / FBX models of the corpus move;
 *   - built without assimp, the formats are refused saying why.
 * Skips, saying so, when the package is absent (make deps-test installs it). */
#include "load_child.h"
#include "test_util.h"

#include "anim/anim_eval.h"
#include "app/headless.h"
#include "kd/kd_cpu.h"
#include "render/render_cpu.h"
#include "scene/gltf_anim.h"
#include "scene/load.h"
#include "scene/scene.h"

#include <dirent.h>
#include <ftw.h>
#include <strings.h>
#include <time.h>

/* Seconds one load may take before it counts as a hang: the slowest file
 * (2CylinderEngine.glb) loads in well under a second; a hang never ends. */
#define LOAD_HANG_SECONDS 30
#define CORPUS_FILES_MAX 1024
/* Every folder of the corpus is loaded (its .obj and .ply files are
 * test_corpus.c's: they go to the project's own loaders). */
#define FOLDERS_MAX 128
/* Files written to break an importer: a clean error, never a scene. */
static const char *const kMustFail[] = {"/MissingBin/", "/RecursiveNodes/", "AllIndicesOutOfRange",
                                        "/invalid/OutOfMemory.off"};

static const float kTol = 1e-4f;

/* Fails unless |got - want| <= tol (1 + |want|), naming the quantity. */
static void expect_near(double got, double want, double tol, const char *what, int line)
{
    if (!(fabs(got - want) <= tol * (1.0 + fabs(want))))
        fail_msg("%s = %.9g, expected %.9g (test_assimp.c:%d)", what, got, want, line);
}
#define assert_near(a, b, tol) expect_near((a), (b), (tol), #a, __LINE__)

/* $RT_ASSIMP_MODELS (a copy of the corpus, e.g. the GPU machine's kit),
 * else $RT_CORPUS_DIR (test_corpus.c's name for the same folder), else the
 * package's. */
static const char *corpus_dir(void)
{
    const char *dir = getenv("RT_CORPUS_DIR");
    return getenv(RT_ASSIMP_MODELS_VAR) || !dir || !dir[0] ? rt_assimp_models_dir() : dir;
}

/* The corpus file rel, or NULL (and a skip message) when absent. */
static const char *corpus_file(const char *rel, char *buf)
{
    snprintf(buf, 1024, "%s/%s", corpus_dir(), rel);
    struct stat st;
    if (stat(buf, &st) != 0) {
        print_message("skip: %s not found (Debian package assimp-testmodels)\n", buf);
        return NULL;
    }
    return buf;
}

static int have_assimp(void)
{
    if (RT_HAVE_ASSIMP) return 1;
    print_message("skip: this build has no assimp (RT_HAVE_ASSIMP=0; libassimp-dev)\n");
    return 0;
}

/* ---- the corpus ------------------------------------------------------------- */

typedef struct Corpus {
    char *path[CORPUS_FILES_MAX];
    int n, too_many;
} Corpus;

static Corpus *g_corpus; /* nftw's callback takes no context pointer */

static int collect(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    if (type != FTW_F || !rt_assimp_claims(path)) return 0;
    if (g_corpus->n == CORPUS_FILES_MAX) {
        g_corpus->too_many++;
        return 0;
    }
    g_corpus->path[g_corpus->n++] = strdup(path);
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

enum { LOADED = RT_CHILD_LOADED, REFUSED = RT_CHILD_REFUSED, CRASHED = RT_CHILD_BROKEN, VERDICTS };
static const char *const kVerdict[VERDICTS] = {"loaded", "clean error", "crash/hang/broken"};

static void assimp_corpus_loads_or_fails_cleanly(void **state)
{
    (void)state;
    if (!have_assimp()) skip();
    const char *dir = corpus_dir();
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        print_message("skip: %s not found (Debian package assimp-testmodels; make deps-test installs it)\n", dir);
        skip();
    }
    rt_log_set_level(RT_LOG_NONE); /* the verdicts say what matters */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* the folders, sorted */
    char *names[FOLDERS_MAX];
    int folders = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) && folders < FOLDERS_MAX;)
        if (e->d_name[0] != '.') names[folders++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)folders, sizeof names[0], by_name);
    int count[FOLDERS_MAX][VERDICTS], files = 0, bad = 0;
    memset(count, 0, sizeof count);
    char why[RT_CHILD_WHY_MAX], folder[1024];
    for (int f = 0; f < folders; f++) {
        snprintf(folder, sizeof folder, "%s/%s", dir, names[f]);
        if (stat(folder, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        Corpus *c = calloc(1, sizeof *c);
        assert_non_null(c);
        g_corpus = c;
        assert_int_equal(nftw(folder, collect, 16, FTW_PHYS), 0);
        qsort(c->path, (size_t)c->n, sizeof c->path[0], by_name);
        for (int i = 0; i < c->n; i++) {
            int v = (int)rt_test_load_in_child(c->path[i], LOAD_HANG_SECONDS, why);
            int must_fail = 0;
            for (size_t k = 0; k < sizeof kMustFail / sizeof kMustFail[0]; k++)
                must_fail |= strstr(c->path[i], kMustFail[k]) != NULL;
            if (must_fail && v == LOADED) {
                snprintf(why, sizeof why, "a file built to break importers loaded");
                v = CRASHED;
            }
            count[f][v]++;
            print_message("assimp: %-12s %s: %s\n", kVerdict[v], c->path[i] + strlen(dir) + 1, why);
            bad += v == CRASHED;
            free(c->path[i]);
        }
        files += c->n;
        if (c->too_many) print_message("assimp: %s: more than %d files, the rest left out\n", folder, CORPUS_FILES_MAX);
        free(c);
        g_corpus = NULL;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    print_message("assimp: %-8s %6s %6s %12s %6s\n", "folder", "files", "loaded", "clean error", "crash");
    for (int f = 0; f < folders; f++) {
        if (count[f][0] + count[f][1] + count[f][2])
            print_message("assimp: %-8s %6d %6d %12d %6d\n", names[f], count[f][0] + count[f][1] + count[f][2],
                          count[f][LOADED], count[f][REFUSED], count[f][CRASHED]);
        free(names[f]);
    }
    print_message("assimp: %d files in %.1f s\n", files,
                  (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    rt_log_set_level(RT_LOG_INFO);
    if (!files) {
        print_message("skip: no assimp file under %s\n", dir);
        skip();
    }
    if (bad) fail_msg("%d files crashed, hung, loaded a broken scene or refused without naming the file (above)", bad);
}

/* ---- rendering ---------------------------------------------------------------- */

/* Loads path and renders it on the CPU at 64 x 48 with its own (or the
 * framed) camera: some pixels hit, and not all pixels are one colour. */
static void expect_renders(const char *path)
{
    RtScene s;
    RtError err = {0};
    RtStatus st = rt_scene_load(path, &s, &err);
    if (st != RT_OK) fail_msg("%s: %s", path, err.msg);
    RtTriArrays tris;
    RtKdTree tree;
    memset(&tris, 0, sizeof tris);
    memset(&tree, 0, sizeof tree);
    assert_int_equal(rt_tri_arrays_make(&s, &tris, NULL), RT_OK);
    RtKdCpuParams kp = rt_kd_cpu_params_default();
    assert_int_equal(rt_kd_build_cpu(&kp, &tris, &tree, NULL, &err), RT_OK);
    RtRenderParams p = rt_render_params_default();
    RtImage img;
    const int w = 64, h = 48;
    assert_int_equal(rt_image_alloc(&img, w, h), RT_OK);
    uint32_t *ids = malloc((size_t)w * h * sizeof *ids);
    assert_non_null(ids);
    st = rt_render_cpu(&s, &tris, RT_ACCEL_OF_KD(&tree), NULL, &s.camera, &p, &img, ids, NULL, &err);
    if (st != RT_OK) fail_msg("%s: render: %s", path, err.msg);
    int hits = 0, differ = 0;
    for (int i = 0; i < w * h; i++) {
        hits += ids[i] != RT_NO_HIT;
        differ += memcmp(&img.rgba[4 * i], img.rgba, 3) != 0;
    }
    print_message("render %s: %d of %d pixels hit\n", path, hits, w * h);
    assert_true(hits > w * h / 50);
    assert_true(differ > 0);
    free(ids);
    rt_image_free(&img);
    rt_kd_tree_free(&tree);
    rt_tri_arrays_free(&tris);
    rt_scene_free(&s);
}

static void assimp_gltf_fbx_md2_render_on_the_cpu(void **state)
{
    (void)state;
    if (!have_assimp()) skip();
    const char *rel[] = {"glTF2/BoxTextured-glTF/BoxTextured.gltf", "FBX/box.fbx", "MD2/faerie.md2"};
    char buf[1024];
    int done = 0;
    for (int i = 0; i < 3; i++)
        if (corpus_file(rel[i], buf)) expect_renders(buf), done++;
    if (!done) skip();
}

/* A textured glTF: its base colour texture (a PNG beside it) is loaded,
 * and the embedded variant decodes the same image from the file. */
static void assimp_gltf_textures_from_file_and_embedded(void **state)
{
    (void)state;
    if (!have_assimp()) skip();
    const char *rel[] = {"glTF2/BoxTextured-glTF/BoxTextured.gltf", "glTF2/BoxTextured-glTF-Binary/BoxTextured.glb"};
    char buf[1024];
    int w[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        if (!corpus_file(rel[i], buf)) skip();
        RtScene s;
        RtError err = {0};
        RtStatus st = rt_scene_load(buf, &s, &err);
        if (st != RT_OK) fail_msg("%s: %s", buf, err.msg);
        int32_t tex = -1;
        for (uint32_t m = 0; m < s.mat_count; m++)
            if (s.mats[m].map_kd >= 0) tex = s.mats[m].map_kd;
        assert_true(tex >= 0);
        w[i] = s.texs[tex].w;
        rt_scene_free(&s);
    }
    assert_int_equal(w[0], w[1]);
}

/* ---- animation: glTF files written here ------------------------------------- */

static void base64(const uint8_t *in, size_t n, char *out)
{
    static const char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
        out[o++] = k[v >> 18 & 63];
        out[o++] = k[v >> 12 & 63];
        out[o++] = i + 1 < n ? k[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? k[v & 63] : '=';
    }
    out[o] = 0;
}

/* A growing little-endian buffer of floats and shorts. */
typedef struct Buf {
    uint8_t b[1024];
    size_t n;
} Buf;
static size_t put_f(Buf *b, const float *v, int n)
{
    size_t at = b->n;
    memcpy(b->b + b->n, v, (size_t)n * 4);
    b->n += (size_t)n * 4;
    return at;
}

/* Where write_gltf puts its buffer (the tests of gltf_anim.c's buffer
 * sources set it, and set it back to BUFFER_URI). */
static enum { BUFFER_URI, BUFFER_FILE, BUFFER_GLB } g_buffer_as = BUFFER_URI;
static char g_bin_path[1024]; /* BUFFER_FILE: the last .bin written */

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* json and b's bytes as a GLB (header, JSON chunk padded with spaces, BIN
 * chunk padded with zeros; glTF 2.0 "GLB File Format Specification"). */
static void write_glb(const char *json, const Buf *b, char *out)
{
    size_t jn = (strlen(json) + 3) & ~(size_t)3, bn = (b->n + 3) & ~(size_t)3, total = 12 + 8 + jn + 8 + bn;
    uint8_t *g = calloc(1, total);
    assert_non_null(g);
    put_u32(g, 0x46546C67u), put_u32(g + 4, 2), put_u32(g + 8, (uint32_t)total);
    put_u32(g + 12, (uint32_t)jn), put_u32(g + 16, 0x4E4F534Au);
    memset(g + 20, ' ', jn);
    memcpy(g + 20, json, strlen(json));
    put_u32(g + 20 + jn, (uint32_t)bn), put_u32(g + 24 + jn, 0x004E4942u);
    memcpy(g + 28 + jn, b->b, b->n);
    rt_test_write_tmp(".glb", g, total, out);
    free(g);
}

/* The glTF of one triangle (0,0,0) (1,0,0) (0,1,0) in node "tri", with
 * `extra` placed into the mesh and `anim` as the file's animations; the
 * buffer holds positions at 0, indices at 36 and the caller's data after
 * 44. Returns the written file's path in out. */
static const char *write_gltf(const Buf *b, const char *mesh_extra, const char *accessors_extra,
                              const char *views_extra, const char *anim, char *out);

/* write_gltf with more vertex attributes (attrs: ",\"JOINTS_0\":2") and
 * its own scene, nodes and skins (nodes: "\"scenes\":[...],\"nodes\":[...]
 * ,\"skins\":[...]"; NULL: the one node "tri"). */
static const char *write_gltf_nodes(const Buf *b, const char *attrs, const char *nodes, const char *mesh_extra,
                                    const char *accessors_extra, const char *views_extra, const char *anim, char *out)
{
    char b64[2048], uri[2200], *json = malloc(16384);
    assert_non_null(json);
    base64(b->b, b->n, b64);
    /* the buffer: a data: URI, a .bin file beside the .gltf or the GLB's BIN chunk */
    if (g_buffer_as == BUFFER_FILE) {
        rt_test_write_tmp(".bin", b->b, b->n, g_bin_path);
        snprintf(uri, sizeof uri, ",\"uri\":\"%s\"", strrchr(g_bin_path, '/') + 1);
    } else {
        snprintf(uri, sizeof uri, g_buffer_as == BUFFER_GLB ? "" : ",\"uri\":\"data:application/octet-stream;base64,%s\"",
                 b64);
    }
    snprintf(json, 16384,
             "{\"asset\":{\"version\":\"2.0\"},\"scene\":0,%s,"
             "\"meshes\":[{\"name\":\"trimesh\",\"primitives\":[{\"attributes\":{\"POSITION\":0%s},\"indices\":1%s}]%s}],"
             "\"buffers\":[{\"byteLength\":%zu%s}],"
             "\"bufferViews\":[{\"buffer\":0,\"byteOffset\":0,\"byteLength\":36},"
             "{\"buffer\":0,\"byteOffset\":36,\"byteLength\":6}%s],"
             "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":3,\"type\":\"VEC3\","
             "\"min\":[0,0,0],\"max\":[1,1,0]},"
             "{\"bufferView\":1,\"componentType\":5123,\"count\":3,\"type\":\"SCALAR\"}%s]%s}",
             nodes ? nodes : "\"scenes\":[{\"nodes\":[0]}],\"nodes\":[{\"name\":\"tri\",\"mesh\":0}]", attrs,
             mesh_extra, strstr(mesh_extra, "targets") ? ",\"weights\":[0]" : "", b->n, uri, views_extra,
             accessors_extra, anim);
    if (g_buffer_as == BUFFER_GLB) write_glb(json, b, out);
    else RT_TEST_TMP_TEXT(".gltf", json, out);
    free(json);
    return out;
}

static const char *write_gltf(const Buf *b, const char *mesh_extra, const char *accessors_extra,
                              const char *views_extra, const char *anim, char *out)
{
    return write_gltf_nodes(b, "", NULL, mesh_extra, accessors_extra, views_extra, anim, out);
}

static void triangle_buffer(Buf *b)
{
    memset(b, 0, sizeof *b);
    const float pos[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    put_f(b, pos, 9);
    const uint16_t idx[4] = {0, 1, 2, 0};
    memcpy(b->b + b->n, idx, 8);
    b->n += 8;
}

/* The index of the vertex at p in the loaded scene (node space). */
static uint32_t vertex_at(const RtScene *s, RtVec3 p)
{
    for (uint32_t i = 0; i < s->vert_count; i++)
        if (v3_len(v3_sub(s->verts[i].p, p)) < 1e-6f) return i;
    fail_msg("no vertex at (%g, %g, %g)", p.x, p.y, p.z);
    return 0;
}

/* Translation keys at uneven times 0, 0.25, 1 (x = 0, 1, 4) and rotation
 * keys 0 and 1 s (0 and 90 degrees about z), linear: the vertex (1,0,0)
 * is T(t) R(t) (1,0,0) with x(t) piecewise linear and R the slerp. */
static void assimp_gltf_node_trs_animation_matches_hand_computed(void **state)
{
    (void)state;
    if (!have_assimp()) skip();
    Buf b;
    triangle_buffer(&b);
    const float times[3] = {0.0f, 0.25f, 1.0f}, tr[9] = {0, 0, 0, 1, 0, 0, 4, 0, 0};
    const float rtimes[2] = {0.0f, 1.0f}, rot[8] = {0, 0, 0, 1, 0, 0, 0.70710678f, 0.70710678f};
    size_t o_t = put_f(&b, times, 3), o_tr = put_f(&b, tr, 9), o_rt = put_f(&b, rtimes, 2), o_r = put_f(&b, rot, 8);
    char views[512], accs[1024], anim[1024], path[1024];
    snprintf(views, sizeof views,
             ",{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":12},{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":36},"
             "{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":8},{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":32}",
             o_t, o_tr, o_rt, o_r);
    snprintf(accs, sizeof accs,
             ",{\"bufferView\":2,\"componentType\":5126,\"count\":3,\"type\":\"SCALAR\",\"min\":[0],\"max\":[1]},"
             "{\"bufferView\":3,\"componentType\":5126,\"count\":3,\"type\":\"VEC3\"},"
             "{\"bufferView\":4,\"componentType\":5126,\"count\":2,\"type\":\"SCALAR\",\"min\":[0],\"max\":[1]},"
             "{\"bufferView\":5,\"componentType\":5126,\"count\":2,\"type\":\"VEC4\"}");
    snprintf(anim, sizeof anim,
             ",\"animations\":[{\"name\":\"move\",\"samplers\":[{\"input\":2,\"output\":3},{\"input\":4,\"output\":5}],"
             "\"channels\":[{\"sampler\":0,\"target\":{\"node\":0,\"path\":\"translation\"}},"
             "{\"sampler\":1,\"target\":{\"node\":0,\"path\":\"rotation\"}}]}]");
    write_gltf(&b, "", accs, views, anim, path);
    RtScene s;
    RtError err = {0};
    RtStatus st = rt_scene_load(path, &s, &err);
    if (st != RT_OK) fail_msg("%s: %s", path, err.msg);
    assert_true(rt_anim_is_dynamic(&s.anim));
    float t0, t1;
    rt_scene_time_range(&s, &t0, &t1);
    assert_near(t0, 0.0, kTol);
    assert_near(t1, 1.0, kTol);
    uint32_t vi = vertex_at(&s, v3(1, 0, 0));
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    const float at[4] = {0.0f, 0.125f, 0.625f, 1.0f};
    for (int k = 0; k < 4; k++) {
        float t = at[k];
        assert_int_equal(rt_scene_frame_at(&s, t, &f, &err), RT_OK);
        float x = t <= 0.25f ? 4.0f * t : 1.0f + 3.0f * (t - 0.25f) / 0.75f;
        float ang = 0.5f * 3.14159265f * t;
        RtVec3 p = f.view.verts[vi].p;
        assert_near(p.x, x + cosf(ang), kTol);
        assert_near(p.y, sinf(ang), kTol);
        assert_near(p.z, 0.0, kTol);
    }
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
    unlink(path);
}

/* ---- animation: the file's own interpolation (gltf_anim.c) ------------------ */

static int have_cjson(void)
{
    if (RT_HAVE_CJSON) return 1;
    print_message("skip: this build has no cJSON (RT_HAVE_CJSON=0; libcjson-dev): glTF samplers play linear\n");
    return 0;
}

/* Two clips of node "tri" over 6 accessors after the triangle's:
 *   "step":  translation STEP, keys 0, 0.5, 1 s at x = 0, 2, 5 (step_n of
 *            them read), and rotation LINEAR 0 -> 90 degrees about z, 0 -> 1 s;
 *   "cubic": translation CUBICSPLINE, keys 0 and 2 s, (in, value, out) =
 *            ((9,9,9), (0,0,0), (1,0,0.5)) and ((3,-1,0), (1,1,0), (-9,-9,-9))
 *            (cubic_n output elements read; 6 is right). */
static const char *write_interp_gltf(uint32_t step_n, uint32_t cubic_n, float step_t1, char *path)
{
    Buf b;
    triangle_buffer(&b);
    const float st_t[3] = {0.0f, step_t1, 1.0f}, st_v[9] = {0, 0, 0, 2, 0, 0, 5, 0, 0};
    const float r_t[2] = {0.0f, 1.0f}, r_v[8] = {0, 0, 0, 1, 0, 0, 0.70710678f, 0.70710678f};
    const float c_t[2] = {0.0f, 2.0f}, c_v[18] = {9, 9, 9, 0, 0, 0, 1, 0, 0.5f, 3, -1, 0, 1, 1, 0, -9, -9, -9};
    size_t o[6] = {put_f(&b, st_t, 3), put_f(&b, st_v, 9), put_f(&b, r_t, 2),
                   put_f(&b, r_v, 8),  put_f(&b, c_t, 2),  put_f(&b, c_v, 18)};
    const size_t len[6] = {12, 36, 8, 32, 8, 72};
    char views[1024], accs[1024], anim[1024];
    size_t n = 0;
    for (int i = 0; i < 6; i++)
        n += (size_t)snprintf(views + n, sizeof views - n, ",{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":%zu}",
                              o[i], len[i]);
    snprintf(accs, sizeof accs,
             ",{\"bufferView\":2,\"componentType\":5126,\"count\":3,\"type\":\"SCALAR\"},"
             "{\"bufferView\":3,\"componentType\":5126,\"count\":%u,\"type\":\"VEC3\"},"
             "{\"bufferView\":4,\"componentType\":5126,\"count\":2,\"type\":\"SCALAR\"},"
             "{\"bufferView\":5,\"componentType\":5126,\"count\":2,\"type\":\"VEC4\"},"
             "{\"bufferView\":6,\"componentType\":5126,\"count\":2,\"type\":\"SCALAR\"},"
             "{\"bufferView\":7,\"componentType\":5126,\"count\":%u,\"type\":\"VEC3\"}",
             step_n, cubic_n);
    snprintf(anim, sizeof anim,
             ",\"animations\":[{\"name\":\"step\",\"samplers\":[{\"input\":2,\"output\":3,\"interpolation\":\"STEP\"},"
             "{\"input\":4,\"output\":5}],\"channels\":[{\"sampler\":0,\"target\":{\"node\":0,\"path\":\"translation\"}},"
             "{\"sampler\":1,\"target\":{\"node\":0,\"path\":\"rotation\"}}]},"
             "{\"name\":\"cubic\",\"samplers\":[{\"input\":6,\"output\":7,\"interpolation\":\"CUBICSPLINE\"}],"
             "\"channels\":[{\"sampler\":0,\"target\":{\"node\":0,\"path\":\"translation\"}}]}]");
    return write_gltf(&b, "", accs, views, anim, path);
}

/* The world position of the triangle's vertex (1,0,0) at each time of at[]
 * against want[] (x, y, z), clip `clip` of path. */
static void expect_vertex_path(const char *path, const char *clip, const float *at, const float (*want)[3], int n)
{
    RtScene s;
    RtError err = {0};
    if (rt_scene_load_clip(path, clip, &s, &err) != RT_OK) fail_msg("%s: %s", path, err.msg);
    uint32_t vi = vertex_at(&s, v3(1, 0, 0));
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    for (int k = 0; k < n; k++) {
        assert_int_equal(rt_scene_frame_at(&s, at[k], &f, &err), RT_OK);
        RtVec3 p = f.view.verts[vi].p;
        print_message("%s clip %s t=%g: (%g, %g, %g)\n", path, clip, at[k], p.x, p.y, p.z);
        assert_near(p.x, want[k][0], kTol);
        assert_near(p.y, want[k][1], kTol);
        assert_near(p.z, want[k][2], kTol);
    }
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
}

/* STEP holds the last key at or before t; CUBICSPLINE is glTF's Hermite
 * with the tangents times the key interval (2 s): at s = 0.5,
 * p = 0.5 v0 + 2 (0.125) b0 + 0.5 v1 + 2 (-0.125) a1 = (0, 0.75, 0.125),
 * where assimp's linear keys would give (0.5, 0.5, 0). The buffer as a
 * data: URI, a .bin file and a GLB's BIN chunk. */
static void assimp_gltf_step_cubic_linear_keys_match_hand_computed(void **state)
{
    (void)state;
    if (!have_assimp() || !have_cjson()) skip();
    enum { NS = 8, NC = 6 };
    const float st[NS] = {0.0f, 0.25f, 0.49f, 0.5f, 0.75f, 0.99f, 1.0f, 1.5f};
    float sw[NS][3];
    for (int k = 0; k < NS; k++) {
        float x = st[k] < 0.5f ? 0.0f : st[k] < 1.0f ? 2.0f : 5.0f, a = 0.5f * 3.14159265f * fminf(st[k], 1.0f);
        sw[k][0] = x + cosf(a), sw[k][1] = sinf(a), sw[k][2] = 0.0f;
    }
    /* by hand: s = t / 2, p(s) as in anim_keys.h's comment; vertex = (1,0,0) + p */
    const float ct[NC] = {0.0f, 0.5f, 1.0f, 2.0f, 3.0f, -1.0f};
    const float cw[NC][3] = {{1, 0, 0}, {1.15625f, 0.25f, 0.140625f}, {1, 0.75f, 0.125f},
                             {2, 1, 0}, {2, 1, 0},                    {1, 0, 0}};
    const int modes[3] = {BUFFER_URI, BUFFER_FILE, BUFFER_GLB};
    for (int m = 0; m < 3; m++) {
        char path[1024];
        g_buffer_as = modes[m];
        write_interp_gltf(3, 6, 0.5f, path);
        g_buffer_as = BUFFER_URI;
        expect_vertex_path(path, "step", st, sw, NS);
        expect_vertex_path(path, "1", ct, cw, NC);
        RtGltfAnim ga;
        RtError err = {0};
        if (rt_gltf_anim_load(path, 1, &ga, &err) != RT_OK) fail_msg("%s", err.msg);
        assert_int_equal(ga.count, 1);
        assert_int_equal(ga.anim_count, 2);
        assert_int_equal(ga.ch[0].keys.interp, RT_KEYS_CUBIC);
        assert_string_equal(ga.ch[0].node, "tri");
        rt_gltf_anim_free(&ga);
        unlink(path);
        if (modes[m] == BUFFER_FILE) unlink(g_bin_path);
    }
}

/* The fixture test_gpu_anim plays on the GPU (tests/data/keys_skin.gltf):
 * its clips carry the modes it is meant to test, its skin loads with both
 * joints, and STEP holds root's translation until the next key. */
static void assimp_keys_skin_fixture_has_step_and_cubic(void **state)
{
    (void)state;
    if (!have_assimp() || !have_cjson()) skip();
    char path[1024];
    rt_test_src_path("tests/data/keys_skin.gltf", path);
    const int want[2][3] = {{RT_KEYS_STEP, RT_KEYS_LINEAR, -1}, {RT_KEYS_CUBIC, RT_KEYS_CUBIC, RT_KEYS_CUBIC}};
    for (uint32_t a = 0; a < 2; a++) {
        RtGltfAnim ga;
        RtError err = {0};
        if (rt_gltf_anim_load(path, a, &ga, &err) != RT_OK) fail_msg("%s", err.msg);
        assert_int_equal(ga.count, a ? 3 : 2);
        for (uint32_t c = 0; c < ga.count; c++) assert_int_equal(ga.ch[c].keys.interp, want[a][c]);
        rt_gltf_anim_free(&ga);
    }
    RtScene s;
    RtError err = {0};
    if (rt_scene_load_clip(path, "step", &s, &err) != RT_OK) fail_msg("%s", err.msg);
    assert_int_equal(s.anim.joint_count, 2);
    uint32_t vi = vertex_at(&s, v3(0, 0, 0));
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    const float at[3] = {0.2f, 0.6f, 1.2f}, x[3] = {0.0f, 0.5f, 1.5f};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(rt_scene_frame_at(&s, at[k], &f, &err), RT_OK);
        assert_near(f.view.verts[vi].p.x, x[k], kTol);
    }
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
}

/* A file gltf_anim.c refuses: its error names the file and the fault; with
 * whole, the scene still loads on assimp's keys (with a warning) or fails
 * cleanly. */
static void expect_gltf_refused(const char *path, uint32_t anim, const char *why, int whole)
{
    RtGltfAnim ga;
    RtError err = {0};
    assert_int_not_equal(rt_gltf_anim_load(path, anim, &ga, &err), RT_OK);
    assert_int_equal(ga.count, 0);
    assert_null(ga.ch);
    print_message("refused: %s\n", err.msg);
    rt_test_assert_contains(err.msg, path);
    rt_test_assert_contains(err.msg, why);
    if (!whole) return;
    RtScene s;
    RtStatus st = rt_scene_load_clip(path, anim ? "1" : "0", &s, &err);
    if (st == RT_OK) rt_scene_free(&s);
    else rt_test_assert_contains(err.msg, path);
    print_message("  whole load: %s\n", st == RT_OK ? "assimp's keys" : err.msg);
}

static void assimp_gltf_bad_samplers_fail_cleanly(void **state)
{
    (void)state;
    if (!have_assimp() || !have_cjson()) skip();
    char path[1024];
    /* 4 translation keys in a 36-byte view; not loaded whole: assimp 5.2
     * refuses it too, leaking 12 bytes as it throws (LeakSanitizer, SAN=1) */
    expect_gltf_refused(write_interp_gltf(4, 6, 0.5f, path), 0, "run past bufferViews[3]", 0);
    unlink(path);
    expect_gltf_refused(write_interp_gltf(3, 5, 0.5f, path), 1, "expected 3 x 2", 1);
    unlink(path);
    expect_gltf_refused(write_interp_gltf(3, 6, 0.0f, path), 0, "times must increase strictly", 1);
    unlink(path);
    expect_gltf_refused(write_interp_gltf(3, 6, 0.5f, path), 2, "no such animation", 1);
    unlink(path);
    /* a GLB cut short: its header's length, then its JSON chunk's */
    g_buffer_as = BUFFER_GLB;
    write_interp_gltf(3, 6, 0.5f, path);
    g_buffer_as = BUFFER_URI;
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    const off_t cut[3] = {sb.st_size - 40, 30, 10};
    const char *why[3] = {"GLB: truncated", "GLB: truncated", "GLB: truncated header"};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(truncate(path, cut[k]), 0);
        expect_gltf_refused(path, 0, why[k], 1);
    }
    unlink(path);
    /* size 0 and a directory */
    RT_TEST_TMP_TEXT(".glb", "", path);
    expect_gltf_refused(path, 0, "parse", 1);
    unlink(path);
}

/* One morph target moving every vertex by +1 in z, its weight keyed 0 at
 * 0 s and 1 at 2 s: z = t / 2 in between. */
static void assimp_gltf_morph_weights_match_hand_computed(void **state)
{
    (void)state;
    if (!have_assimp()) skip();
    Buf b;
    triangle_buffer(&b);
    const float delta[9] = {0, 0, 1, 0, 0, 1, 0, 0, 1}, times[2] = {0.0f, 2.0f}, wts[2] = {0.0f, 1.0f};
    size_t o_d = put_f(&b, delta, 9), o_t = put_f(&b, times, 2), o_w = put_f(&b, wts, 2);
    char views[512], accs[1024], anim[1024], path[1024];
    snprintf(views, sizeof views,
             ",{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":36},{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":8},"
             "{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":8}",
             o_d, o_t, o_w);
    snprintf(accs, sizeof accs,
             ",{\"bufferView\":2,\"componentType\":5126,\"count\":3,\"type\":\"VEC3\",\"min\":[0,0,1],\"max\":[0,0,1]},"
             "{\"bufferView\":3,\"componentType\":5126,\"count\":2,\"type\":\"SCALAR\",\"min\":[0],\"max\":[2]},"
             "{\"bufferView\":4,\"componentType\":5126,\"count\":2,\"type\":\"SCALAR\"}");
    snprintf(anim, sizeof anim,
             ",\"animations\":[{\"samplers\":[{\"input\":3,\"output\":4}],"
             "\"channels\":[{\"sampler\":0,\"target\":{\"node\":0,\"path\":\"weights\"}}]}]");
    write_gltf(&b, ",\"targets\":[{\"POSITION\":2}]", accs, views, anim, path);
    RtScene s;
    RtError err = {0};
    RtStatus st = rt_scene_load(path, &s, &err);
    if (st != RT_OK) fail_msg("%s: %s", path, err.msg);
    assert_int_equal(s.anim.morph_count, 1);
    uint32_t vi = vertex_at(&s, v3(0, 1, 0));
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    const float at[4] = {0.0f, 0.5f, 1.3f, 2.0f};
    for (int k = 0; k < 4; k++) {
        assert_int_equal(rt_scene_frame_at(&s, at[k], &f, &err), RT_OK);
        RtVec3 p = f.view.verts[vi].p;
        assert_near(p.x, 0.0, kTol);
        assert_near(p.y, 1.0, kTol);
        assert_near(p.z, at[k] / 2.0f, kTol);
    }
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
    unlink(path);
}

/* Two joints: "root" at the origin (identity inverse bind) and its child
 * "arm" at (1,0,0) (inverse bind T(-1,0,0)), the arm's rotation keyed 0 at
 * 0 s and 90 degrees about z at 1 s. Vertex (1,0,0) follows the arm alone
 * (it sits on the arm's pivot: it stays), (0,1,0) is weighted 0.5 / 0.5:
 * with a = 90 t degrees, arm * (0,1,0) = (1,0,0) + R(a) (-1,1,0), so
 * p(t) = 0.5 (0,1,0) + 0.5 (1 - cos a - sin a, cos a - sin a, 0).
 * The mesh node's own translation (5,0,0) must not apply (glTF: a skinned
 * mesh is placed by its joints only). */
static void assimp_gltf_skin_matches_hand_computed(void **state)
{
    (void)state;
    if (!have_assimp()) skip();
    Buf b;
    triangle_buffer(&b);
    const uint8_t joints[12] = {0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0};
    size_t o_j = b.n;
    memcpy(b.b + b.n, joints, sizeof joints);
    b.n += sizeof joints;
    const float weights[12] = {1, 0, 0, 0, 1, 0, 0, 0, 0.5f, 0.5f, 0, 0};
    const float ibm[32] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, /* column-major */
                           1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, -1, 0, 0, 1};
    const float times[2] = {0.0f, 1.0f}, rot[8] = {0, 0, 0, 1, 0, 0, 0.70710678f, 0.70710678f};
    size_t o_w = put_f(&b, weights, 12), o_m = put_f(&b, ibm, 32), o_t = put_f(&b, times, 2), o_r = put_f(&b, rot, 8);
    char views[512], accs[1024], anim[512], path[1024];
    snprintf(views, sizeof views,
             ",{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":12},{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":48},"
             "{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":128},{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":8},"
             "{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":32}",
             o_j, o_w, o_m, o_t, o_r);
    snprintf(accs, sizeof accs,
             ",{\"bufferView\":2,\"componentType\":5121,\"count\":3,\"type\":\"VEC4\"},"
             "{\"bufferView\":3,\"componentType\":5126,\"count\":3,\"type\":\"VEC4\"},"
             "{\"bufferView\":4,\"componentType\":5126,\"count\":2,\"type\":\"MAT4\"},"
             "{\"bufferView\":5,\"componentType\":5126,\"count\":2,\"type\":\"SCALAR\",\"min\":[0],\"max\":[1]},"
             "{\"bufferView\":6,\"componentType\":5126,\"count\":2,\"type\":\"VEC4\"}");
    snprintf(anim, sizeof anim,
             ",\"animations\":[{\"name\":\"bend\",\"samplers\":[{\"input\":5,\"output\":6}],"
             "\"channels\":[{\"sampler\":0,\"target\":{\"node\":2,\"path\":\"rotation\"}}]}]");
    write_gltf_nodes(&b, ",\"JOINTS_0\":2,\"WEIGHTS_0\":3",
                     "\"scenes\":[{\"nodes\":[0,1]}],\"nodes\":[{\"name\":\"tri\",\"mesh\":0,\"skin\":0,"
                     "\"translation\":[5,0,0]},{\"name\":\"root\",\"children\":[2]},{\"name\":\"arm\","
                     "\"translation\":[1,0,0]}],\"skins\":[{\"inverseBindMatrices\":4,\"joints\":[1,2]}]",
                     "", accs, views, anim, path);
    RtScene s;
    RtError err = {0};
    RtStatus st = rt_scene_load(path, &s, &err);
    if (st != RT_OK) fail_msg("%s: %s", path, err.msg);
    assert_int_equal(s.anim.joint_count, 2);
    uint32_t v1 = vertex_at(&s, v3(1, 0, 0)), v2 = vertex_at(&s, v3(0, 1, 0));
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    const float at[3] = {0.0f, 0.5f, 1.0f};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(rt_scene_frame_at(&s, at[k], &f, &err), RT_OK);
        double a = 0.5 * 3.14159265358979 * at[k];
        RtVec3 p = f.view.verts[v2].p, q = f.view.verts[v1].p;
        assert_near(p.x, 0.5 * (1.0 - cos(a) - sin(a)), kTol);
        assert_near(p.y, 0.5 + 0.5 * (cos(a) - sin(a)), kTol);
        assert_near(p.z, 0.0, kTol);
        assert_near(q.x, 1.0, kTol);
        assert_near(q.y, 0.0, kTol);
    }
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
    unlink(path);
}

/* A glTF with two clips moving node "tri": "slide" (x 0 -> 2 in 1 s) and
 * "lift" (y 0 -> 3 in 1 s), picked by name, by index, by default (the
 * first), and a clip the file lacks (an error listing both). */
/* A triangle with two clips: 'slide' moves it by (2, 0, 0) and 'lift' by
 * (0, 3, 0) over 0..1 s (so by half that at t = 0.5). */
static const char *write_two_clip_gltf(char *path)
{
    Buf b;
    triangle_buffer(&b);
    const float times[2] = {0.0f, 1.0f}, slide[6] = {0, 0, 0, 2, 0, 0}, lift[6] = {0, 0, 0, 0, 3, 0};
    size_t o_t = put_f(&b, times, 2), o_s = put_f(&b, slide, 6), o_l = put_f(&b, lift, 6);
    char views[512], accs[1024], anim[1024];
    snprintf(views, sizeof views,
             ",{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":8},{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":24},"
             "{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":24}",
             o_t, o_s, o_l);
    snprintf(accs, sizeof accs,
             ",{\"bufferView\":2,\"componentType\":5126,\"count\":2,\"type\":\"SCALAR\",\"min\":[0],\"max\":[1]},"
             "{\"bufferView\":3,\"componentType\":5126,\"count\":2,\"type\":\"VEC3\"},"
             "{\"bufferView\":4,\"componentType\":5126,\"count\":2,\"type\":\"VEC3\"}");
    snprintf(anim, sizeof anim,
             ",\"animations\":[{\"name\":\"slide\",\"samplers\":[{\"input\":2,\"output\":3}],"
             "\"channels\":[{\"sampler\":0,\"target\":{\"node\":0,\"path\":\"translation\"}}]},"
             "{\"name\":\"lift\",\"samplers\":[{\"input\":2,\"output\":4}],"
             "\"channels\":[{\"sampler\":0,\"target\":{\"node\":0,\"path\":\"translation\"}}]}]");
    return write_gltf(&b, "", accs, views, anim, path);
}

static void assimp_clip_by_name_index_and_unknown(void **state)
{
    (void)state;
    if (!have_assimp()) skip();
    char path[1024];
    write_two_clip_gltf(path);
    const char *clip[4] = {"lift", "0", NULL, "1"};
    const RtVec3 want[4] = {v3(0, 1.5f, 0), v3(1, 0, 0), v3(1, 0, 0), v3(0, 1.5f, 0)};
    for (int k = 0; k < 4; k++) {
        RtScene s;
        RtError err = {0};
        RtStatus st = rt_scene_load_clip(path, clip[k], &s, &err);
        if (st != RT_OK) fail_msg("--clip %s: %s", clip[k] ? clip[k] : "(none)", err.msg);
        uint32_t vi = vertex_at(&s, v3(0, 0, 0));
        RtSceneFrame f;
        memset(&f, 0, sizeof f);
        assert_int_equal(rt_scene_frame_at(&s, 0.5f, &f, &err), RT_OK);
        assert_near(f.view.verts[vi].p.x, want[k].x, kTol);
        assert_near(f.view.verts[vi].p.y, want[k].y, kTol);
        rt_scene_frame_free(&f);
        rt_scene_free(&s);
    }
    const char *bad[2] = {"nope", "2"};
    for (int k = 0; k < 2; k++) {
        RtScene s;
        RtError err = {0};
        assert_int_equal(rt_scene_load_clip(path, bad[k], &s, &err), RT_ERR_ARG);
        assert_null(s.verts);
        rt_test_assert_contains(err.msg, path);
        rt_test_assert_contains(err.msg, bad[k]);
        rt_test_assert_contains(err.msg, "0 'slide'");
        rt_test_assert_contains(err.msg, "1 'lift'");
    }
    unlink(path);
}

/* The clip key (rt_app_load_next_clip): from the default clip the next is
 * 1 'lift', then it wraps to 0; Shift goes back; the scene says which clip
 * of how many it plays; a file with one clip refuses. */
static void assimp_clip_key_cycles_the_files_clips(void **state)
{
    (void)state;
    if (!have_assimp()) skip();
    char path[1024], buf[16];
    write_two_clip_gltf(path);
    RtOptions o;
    rt_options_default(&o);
    o.scene_path = path;
    RtScene s;
    RtError err = {0};
    assert_int_equal(rt_app_load_scene(&o, &s, &err), RT_OK);
    assert_int_equal(s.anim.clip_count, 2);
    assert_int_equal(s.anim.clip, 0);
    assert_string_equal(s.anim.clip_name, "slide");
    const int dir[3] = {1, 1, -1}, want[3] = {1, 0, 1};
    const char *name[2] = {"slide", "lift"};
    for (int k = 0; k < 3; k++) {
        RtScene next;
        assert_int_equal(rt_app_load_next_clip(&o, &s, dir[k], &next, buf, sizeof buf, &err), RT_OK);
        assert_int_equal(next.anim.clip, want[k]);
        assert_int_equal(next.anim.clip_count, 2);
        assert_string_equal(next.anim.clip_name, name[want[k]]);
        RtSceneFrame f;
        memset(&f, 0, sizeof f);
        assert_int_equal(rt_scene_frame_at(&next, 0.5f, &f, &err), RT_OK);
        uint32_t vi = vertex_at(&next, v3(0, 0, 0));
        assert_near(f.view.verts[vi].p.x, want[k] ? 0.0 : 1.0, kTol);
        assert_near(f.view.verts[vi].p.y, want[k] ? 1.5 : 0.0, kTol);
        rt_scene_frame_free(&f);
        rt_scene_free(&s);
        s = next;
        o.clip = buf; /* as the viewer keeps it */
    }
    rt_scene_free(&s);
    unlink(path);
    /* one clip (simple_skin), and a file without any (an OBJ-free glTF box) */
    char cp[1024];
    if (!corpus_file("glTF2/simple_skin/simple_skin.gltf", cp)) return;
    rt_options_default(&o);
    o.scene_path = cp;
    assert_int_equal(rt_app_load_scene(&o, &s, &err), RT_OK);
    assert_int_equal(s.anim.clip_count, 1);
    RtScene next;
    assert_int_equal(rt_app_load_next_clip(&o, &s, 1, &next, buf, sizeof buf, &err), RT_ERR_UNSUPPORTED);
    rt_test_assert_contains(err.msg, "one animation clip only");
    rt_scene_free(&s);
}

/* A .scene places a skinned model (through $RT_ASSIMP_MODELS) three times:
 * each copy is skinned by joints of its own, so at every time copy k is
 * copy 0 moved by its placement; `animate` on such a copy is refused; and
 * scenes/skinned_crowd.scene, the skinning benchmark, has its million
 * triangles, every vertex skinned. */
static void assimp_scene_copies_of_a_skinned_model_each_skin(void **state)
{
    (void)state;
    if (!have_assimp()) skip();
    char cp[1024];
    if (!corpus_file("glTF2/simple_skin/simple_skin.gltf", cp)) skip();
    const char *text = "mesh $RT_ASSIMP_MODELS/glTF2/simple_skin/simple_skin.gltf name a\n"
                       "mesh $RT_ASSIMP_MODELS/glTF2/simple_skin/simple_skin.gltf name b translate 5 0 0\n"
                       "mesh $RT_ASSIMP_MODELS/glTF2/simple_skin/simple_skin.gltf name c translate 0 0 -7\n";
    char path[1024];
    RT_TEST_TMP_TEXT(".scene", text, path);
    RtScene s;
    RtError err = {0};
    if (rt_scene_load(path, &s, &err) != RT_OK) fail_msg("%s", err.msg);
    uint32_t nv = s.vert_count / 3;
    assert_int_equal(s.vert_count, 3 * nv);
    assert_int_equal(s.anim.joint_count, 3 * 2);
    const RtVec3 off[3] = {v3(0, 0, 0), v3(5, 0, 0), v3(0, 0, -7)};
    float t0, t1;
    rt_scene_time_range(&s, &t0, &t1);
    assert_true(t1 > t0);
    int moved = 0;
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    for (int k = 0; k <= 4; k++) {
        float t = t0 + 0.25f * (float)k * (t1 - t0);
        assert_int_equal(rt_scene_frame_at(&s, t, &f, &err), RT_OK);
        for (uint32_t i = 0; i < nv; i++)
            for (int c = 1; c < 3; c++) {
                RtVec3 want = v3_add(f.view.verts[i].p, off[c]), got = f.view.verts[(uint32_t)c * nv + i].p;
                assert_near(got.x, want.x, kTol);
                assert_near(got.y, want.y, kTol);
                assert_near(got.z, want.z, kTol);
            }
        moved |= k && v3_len(v3_sub(f.view.verts[nv - 1].p, s.verts[nv - 1].p)) > 1e-3f;
    }
    assert_true(moved);
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
    unlink(path);

    RT_TEST_TMP_TEXT(".scene",
                     "mesh $RT_ASSIMP_MODELS/glTF2/simple_skin/simple_skin.gltf name a\nanimate a spin speed 90\n", path);
    assert_int_not_equal(rt_scene_load(path, &s, &err), RT_OK);
    rt_test_assert_contains(err.msg, "'a' animates itself");
    unlink(path);

    char crowd[1024];
    if (!corpus_file("FBX/animation_with_skeleton.fbx", cp)) return;
    if (rt_scene_load(rt_test_src_path("scenes/skinned_crowd.scene", crowd), &s, &err) != RT_OK) fail_msg("%s", err.msg);
    assert_true(s.tri_count >= 1000000u);
    assert_int_equal(s.anim.joint_count, 480 * 13);
    for (uint32_t i = 0; i < s.vert_count; i += 997) {
        const RtAnimSkinVert *sv = rt_anim_skin_of(s.anim.skin, s.anim.skin_cap, i);
        assert_non_null(sv);
        assert_true(sv->weight[0] + sv->weight[1] + sv->weight[2] + sv->weight[3] > 0.0f);
    }
    rt_scene_free(&s);
}

/* The skinned models of the corpus (a glTF and two FBX skeletons): joints
 * are made, the vertices move between two times of the clip and stay
 * finite at every sampled time. */
static void assimp_corpus_skinned_models_move_and_stay_finite(void **state)
{
    (void)state;
    if (!have_assimp()) skip();
    const char *rel[] = {"glTF2/simple_skin/simple_skin.gltf", "FBX/huesitos.fbx", "FBX/animation_with_skeleton.fbx"};
    char buf[1024];
    int done = 0;
    for (int i = 0; i < 3; i++) {
        if (!corpus_file(rel[i], buf)) continue;
        RtScene s;
        RtError err = {0};
        RtStatus st = rt_scene_load(buf, &s, &err);
        if (st != RT_OK) fail_msg("%s: %s", buf, err.msg);
        assert_true(s.anim.joint_count > 0);
        float t0, t1;
        rt_scene_time_range(&s, &t0, &t1);
        assert_true(t1 > t0);
        RtSceneFrame a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        assert_int_equal(rt_scene_frame_at(&s, t0, &a, &err), RT_OK);
        float moved = 0.0f;
        for (int k = 1; k <= 8; k++) {
            assert_int_equal(rt_scene_frame_at(&s, t0 + (float)k / 8.0f * (t1 - t0), &b, &err), RT_OK);
            for (uint32_t v = 0; v < s.vert_count; v++) {
                RtVec3 p = b.view.verts[v].p, n = b.view.verts[v].n;
                if (!(isfinite(p.x) && isfinite(p.y) && isfinite(p.z) && isfinite(n.x) && isfinite(n.y) && isfinite(n.z)))
                    fail_msg("%s: vertex %u not finite at t = %g", buf, v, t0 + (float)k / 8.0f * (t1 - t0));
                moved = fmaxf(moved, v3_len(v3_sub(a.view.verts[v].p, p)));
            }
        }
        print_message("%s: %u joints, range %.2f..%.2f s, largest move %g\n", buf, s.anim.joint_count, t0, t1, moved);
        assert_true(moved > 1e-4f);
        rt_scene_frame_free(&a);
        rt_scene_frame_free(&b);
        rt_scene_free(&s);
        done++;
    }
    if (!done) skip();
}

/* Files of the corpus that move: their vertices differ between two times
 * of their range (AnimatedMorphCube's morph, faerie's MD2 frames, a
 * Collada node animation). */
static void assimp_corpus_animations_move(void **state)
{
    (void)state;
    if (!have_assimp()) skip();
    const char *rel[] = {"glTF2/glTF-Sample-Models/AnimatedMorphCube-glTF/AnimatedMorphCube.gltf", "MD2/faerie.md2",
                         "Collada/anims_with_full_rotations_between_keys.DAE"};
    char buf[1024];
    int done = 0;
    for (int i = 0; i < 3; i++) {
        if (!corpus_file(rel[i], buf)) continue;
        RtScene s;
        RtError err = {0};
        RtStatus st = rt_scene_load(buf, &s, &err);
        if (st != RT_OK) fail_msg("%s: %s", buf, err.msg);
        float t0, t1;
        rt_scene_time_range(&s, &t0, &t1);
        assert_true(t1 > t0);
        RtSceneFrame a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        assert_int_equal(rt_scene_frame_at(&s, t0, &a, &err), RT_OK);
        assert_int_equal(rt_scene_frame_at(&s, t0 + 0.37f * (t1 - t0), &b, &err), RT_OK);
        float moved = 0.0f;
        for (uint32_t v = 0; v < s.vert_count; v++)
            moved = fmaxf(moved, v3_len(v3_sub(a.view.verts[v].p, b.view.verts[v].p)));
        print_message("%s: range %.2f..%.2f s, largest move %g\n", buf, t0, t1, moved);
        assert_true(moved > 1e-4f);
        rt_scene_frame_free(&a);
        rt_scene_frame_free(&b);
        rt_scene_free(&s);
        done++;
    }
    if (!done) skip();
}

/* ---- errors ------------------------------------------------------------------ */

/* A missing file, a file assimp cannot parse and (without assimp) any
 * assimp format: non-OK, empty, and a message naming the file. */
static void assimp_errors_name_the_file(void **state)
{
    (void)state;
    char path[1024];
    RtScene s;
    RtError err = {0};
    RtStatus st = rt_scene_load("/nonexistent/model.glb", &s, &err);
    assert_int_not_equal(st, RT_OK);
    rt_test_assert_contains(err.msg, "/nonexistent/model.glb");
    RT_TEST_TMP_TEXT(".gltf", "{ this is not json", path);
    st = rt_scene_load(path, &s, &err);
    assert_int_not_equal(st, RT_OK);
    assert_null(s.verts);
    rt_test_assert_contains(err.msg, path);
    rt_test_assert_contains(err.msg, RT_HAVE_ASSIMP ? "ASSIMP: " : "built without assimp (libassimp-dev)");
    unlink(path);
    /* the project's own formats never go to assimp */
    assert_false(rt_assimp_claims("x.obj"));
    assert_false(rt_assimp_claims("x.ply"));
    assert_false(rt_assimp_claims("x.aff"));
    assert_false(rt_assimp_claims("x.scene"));
    assert_true(rt_assimp_claims("dir.v2/X.GLB"));
    assert_false(rt_assimp_claims("dir.fbx/noext"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(assimp_errors_name_the_file),
        cmocka_unit_test(assimp_gltf_node_trs_animation_matches_hand_computed),
        cmocka_unit_test(assimp_gltf_step_cubic_linear_keys_match_hand_computed),
        cmocka_unit_test(assimp_keys_skin_fixture_has_step_and_cubic),
        cmocka_unit_test(assimp_gltf_bad_samplers_fail_cleanly),
        cmocka_unit_test(assimp_gltf_morph_weights_match_hand_computed),
        cmocka_unit_test(assimp_gltf_skin_matches_hand_computed),
        cmocka_unit_test(assimp_clip_by_name_index_and_unknown),
        cmocka_unit_test(assimp_clip_key_cycles_the_files_clips),
        cmocka_unit_test(assimp_scene_copies_of_a_skinned_model_each_skin),
        cmocka_unit_test(assimp_corpus_skinned_models_move_and_stay_finite),
        cmocka_unit_test(assimp_gltf_textures_from_file_and_embedded),
        cmocka_unit_test(assimp_gltf_fbx_md2_render_on_the_cpu),
        cmocka_unit_test(assimp_corpus_animations_move),
        cmocka_unit_test(assimp_corpus_loads_or_fails_cleanly),
    };
    return cmocka_run_group_tests_name("assimp", tests, NULL, NULL);
}
