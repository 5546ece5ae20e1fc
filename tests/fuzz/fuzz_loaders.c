/* fuzz_loaders.c — libFuzzer target over every scene loader (OBJ, MTL, PLY,
 * .scene) through rt_scene_load, the path a user's file takes.
 *
 * Input: the first byte picks the format (byte % 4: 0 .obj, 1 .ply,
 * 2 .scene, 3 .mtl, read through a fixed OBJ that names it with mtllib); the
 * rest is written to in.<ext> in a per-process directory under /tmp and
 * loaded under small RtLoadLimits, so the procedural statements are
 * fuzzed too. Next to it lie small valid files a .scene input can name
 * (m.obj with m.mtl and t.ppm, m.ply, inc.scene), so mesh, include and
 * map_kd are reached too. A load that succeeds must also yield a consistent scene
 * (indices in range): a violation aborts, so libFuzzer keeps the input as a
 * crash. tests/fuzz/README.md has the commands. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scene/scene.h"
#include "scene/load.h"

/* Fails loudly (a crash libFuzzer records) with the broken invariant. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_loaders: invariant broken after a successful load: %s\n", #cond); \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static void check_scene(const RtScene *s)
{
    FUZZ_CHECK(s->tri_count > 0);
    for (uint32_t i = 0; i < s->tri_count; i++) {
        const RtTriangle *t = &s->tris[i];
        for (int k = 0; k < 3; k++) FUZZ_CHECK(t->v[k] < s->vert_count);
        FUZZ_CHECK(t->material >= -1 && (t->material < 0 || (uint32_t)t->material < s->mat_count));
        FUZZ_CHECK(t->object < s->object_count || s->object_count == 0);
    }
    for (uint32_t i = 0; i < s->mat_count; i++) {
        const RtMaterial *m = &s->mats[i];
        FUZZ_CHECK(m->map_kd >= -1 && (m->map_kd < 0 || (uint32_t)m->map_kd < s->tex_count));
        FUZZ_CHECK(m->map_d >= -1 && (m->map_d < 0 || (uint32_t)m->map_d < s->tex_count));
    }
    for (uint32_t i = 0; i < s->object_count; i++)
        FUZZ_CHECK((uint64_t)s->objects[i].first_tri + s->objects[i].tri_count <= s->tri_count);
    for (uint32_t i = 0; i < s->tex_count; i++)
        FUZZ_CHECK(s->texs[i].w > 0 && s->texs[i].h > 0 && s->texs[i].rgba);
    FUZZ_CHECK(s->has_camera && s->light_count > 0);
    /* The tracer's arrays touch every vertex of every triangle (ASan sees
     * any index the loop above let through). */
    RtTriArrays a;
    uint32_t degenerate = 0;
    if (rt_tri_arrays_make(s, &a, &degenerate) == RT_OK) {
        FUZZ_CHECK(a.count == s->tri_count && degenerate == s->zero_area);
        rt_tri_arrays_free(&a);
    }
}

static int write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    size_t w = fwrite(data, 1, n, f);
    return fclose(f) == 0 && w == n;
}

/* The per-process directory, and the fixtures a .scene input can use. */
static char fuzz_dir[64];
static const struct {
    const char *name, *text;
    size_t len; /* 0 = strlen(text) */
} FIXTURES[] = {
    {"m.obj", "mtllib m.mtl\no tri\nv 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nusemtl red\n"
              "f 1/1 2/2 3/3\n", 0},
    {"m.mtl", "newmtl red\nKd 1 0 0\nmap_Kd t.ppm\n", 0},
    {"t.ppm", "P6\n2 2\n255\n\xff\x00\x00\x00\xff\x00\x00\x00\xff\xff\xff\xff", 23},
    {"m.ply", "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
              "property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n"
              "0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n", 0},
    {"inc.scene", "material inc kd 0 0 1\nbox material inc\n", 0},
};

static void fixture_path(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", fuzz_dir, name); }

static void remove_fixtures(void)
{
    char p[128];
    for (size_t i = 0; i < sizeof FIXTURES / sizeof FIXTURES[0]; i++) {
        fixture_path(p, sizeof p, FIXTURES[i].name);
        unlink(p);
    }
    rmdir(fuzz_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* Warnings from hostile input would drown libFuzzer's own output;
     * loaders report errors through RtError, not the log. */
    rt_log_set_level(RT_LOG_NONE);
    snprintf(fuzz_dir, sizeof fuzz_dir, "/tmp/rt_fuzz_%d", (int)getpid());
    mkdir(fuzz_dir, 0700);
    for (size_t i = 0; i < sizeof FIXTURES / sizeof FIXTURES[0]; i++) {
        char p[128];
        fixture_path(p, sizeof p, FIXTURES[i].name);
        size_t len = FIXTURES[i].len ? FIXTURES[i].len : strlen(FIXTURES[i].text);
        if (!write_file(p, FIXTURES[i].text, len)) {
            fprintf(stderr, "fuzz_loaders: cannot write %s\n", p);
            exit(1);
        }
    }
    atexit(remove_fixtures);
    return 0;
}

/* The procedural statements (runners, field, wavegrid) and morphs make
 * millions of triangles or poses on purpose; under these caps they are
 * fuzzed like any other statement, each input staying small and fast: two
 * runners (156K triangles) fit, a third is refused with the numbers. */
static const RtLoadLimits kLimits = {
    .procedural_tris = 200000,
    .morph_poses = 1u << 20,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const ext[4] = {"in.obj", "in.ply", "in.scene", "in.mtl"};
    if (size == 0) return 0;
    /* RT_FUZZ_FORMAT=obj|ply|scene|mtl pins the format whatever the first
     * byte says: an hour-long run of one loader (tests/fuzz/README.md) */
    static int pinned = -2;
    if (pinned == -2) {
        const char *f = getenv("RT_FUZZ_FORMAT");
        pinned = -1;
        for (int k = 0; f && k < 4; k++)
            if (strcmp(f, ext[k] + 3) == 0) pinned = k;
        if (f && pinned < 0) {
            fprintf(stderr, "fuzz_loaders: RT_FUZZ_FORMAT=%s: expected obj, ply, scene or mtl\n", f);
            exit(2);
        }
    }
    unsigned kind = pinned >= 0 ? (unsigned)pinned : data[0] % 4u;
    data++, size--;
    char path[128], mtl[128];
    fixture_path(path, sizeof path, kind == 3 ? "in.obj" : ext[kind]);
    fixture_path(mtl, sizeof mtl, "in.mtl");
    int ok;
    if (kind == 3) {
        /* The MTL under test, used by a textured triangle per common name. */
        static const char obj[] = "mtllib in.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 0 1\n"
                                  "usemtl m\nf 1/1 2/2 3/3\nusemtl a\nf 1/1 3/3 2/2\n";
        ok = write_file(mtl, data, size) && write_file(path, obj, sizeof obj - 1);
    } else {
        ok = write_file(path, data, size);
    }
    if (ok) {
        RtScene s;
        RtError err = {RT_OK, ""};
        if (rt_scene_load_limited(path, &kLimits, &s, &err) == RT_OK) {
            check_scene(&s);
            rt_scene_free(&s);
        } else {
            /* Every failure says something, and the scene came back empty. */
            FUZZ_CHECK(err.msg[0] != 0 && s.tri_count == 0 && s.verts == NULL);
        }
    }
    unlink(path);
    if (kind == 3) unlink(mtl);
    return 0;
}
