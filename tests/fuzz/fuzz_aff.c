/* fuzz_aff.c — libFuzzer target for the BART AFF loader (load_aff.c) and
 * the keyframe splines it feeds (kbspline.c), through rt_scene_load.
 *
 * The input is written to aff/in.aff in a per-process directory under /tmp
 * laid out as BART's scenes are (aff/ and TextureFiles/); beside it lie
 * small valid files an input can include (mesh.aff: a textured mesh with
 * normals; mat.aff: only an fm; anim.aff: an x node with its k block) and
 * the texture t.ppm, so include, texture and track resolution are reached.
 * A load that succeeds must yield a consistent scene and animation (every
 * index in range, node parents earlier, morph ranges inside the vertices),
 * and evaluating it at a few times must stay finite for finite keys; a
 * violation aborts, which libFuzzer records as a crash. Build and run:
 * tests/fuzz/README.md. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scene/scene.h"
#include "scene/load.h"

#define FUZZ_CHECK(cond)                                                                         \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, "fuzz_aff: invariant broken after a successful load: %s\n", #cond); \
            abort();                                                                             \
        }                                                                                        \
    } while (0)

static void check_anim(const RtScene *s)
{
    const RtAnim *a = &s->anim;
    for (uint32_t i = 0; i < a->node_count; i++) {
        const RtAnimNode *n = &a->nodes[i];
        FUZZ_CHECK(n->parent >= -1 && n->parent < (int32_t)i);
        FUZZ_CHECK(n->track >= -1 && n->track < (int32_t)a->track_count);
    }
    for (uint32_t i = 0; a->vert_node && i < a->vert_node_cap; i++)
        FUZZ_CHECK(a->vert_node[i] == RT_ANIM_STATIC || a->vert_node[i] < a->node_count);
    for (uint32_t i = 0; i < a->morph_count; i++) {
        const RtAnimMorph *m = &a->morphs[i];
        FUZZ_CHECK((uint64_t)m->first_vert + m->vert_count <= s->vert_count && m->key_count > 0);
        for (uint32_t k = 1; k < m->key_count; k++) FUZZ_CHECK(m->times[k - 1] <= m->times[k]);
    }
    for (uint32_t i = 0; i < a->track_count; i++) {
        const RtAnimTrack *t = &a->tracks[i];
        FUZZ_CHECK(t->transl.count == 0 || t->transl.count >= 4);
        FUZZ_CHECK(t->rot.count == 0 || t->rot.count >= 4);
        FUZZ_CHECK(t->scale.count == 0 || t->scale.count >= 4);
        /* finite keys, finite times: the splines never divide by zero */
        float m[12];
        for (int k = 0; k < 3; k++) {
            rt_anim_track_matrix(t, (float)k - 0.5f, m);
            (void)m;
        }
    }
    FUZZ_CHECK(a->camera_track >= -1 && a->camera_track < (int32_t)a->track_count);
    for (uint32_t i = 0; a->light_track && i < s->light_count; i++)
        FUZZ_CHECK(a->light_track[i] >= -1 && a->light_track[i] < (int32_t)a->track_count);
}

static void check_scene(const RtScene *s)
{
    FUZZ_CHECK(s->tri_count > 0);
    for (uint32_t i = 0; i < s->tri_count; i++) {
        const RtTriangle *t = &s->tris[i];
        for (int k = 0; k < 3; k++) FUZZ_CHECK(t->v[k] < s->vert_count);
        FUZZ_CHECK(t->material >= -1 && (t->material < 0 || (uint32_t)t->material < s->mat_count));
        FUZZ_CHECK(t->object < s->object_count);
    }
    for (uint32_t i = 0; i < s->mat_count; i++) {
        const RtMaterial *m = &s->mats[i];
        FUZZ_CHECK(m->map_kd >= -1 && (m->map_kd < 0 || (uint32_t)m->map_kd < s->tex_count));
    }
    for (uint32_t i = 0; i < s->object_count; i++)
        FUZZ_CHECK((uint64_t)s->objects[i].first_tri + s->objects[i].tri_count <= s->tri_count);
    check_anim(s);
    /* one moment of the animation, as the viewer takes it */
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    RtError err;
    if (rt_scene_frame_at(s, 0.25f, &f, &err) == RT_OK) FUZZ_CHECK(f.view.vert_count == s->vert_count);
    rt_scene_frame_free(&f);
}

static int write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    size_t w = fwrite(data, 1, n, f);
    return fclose(f) == 0 && w == n;
}

static char fuzz_dir[64];
static const struct {
    const char *name, *text;
    size_t len; /* 0 = strlen(text) */
} FIXTURES[] = {
    {"aff/mesh.aff", "m vertices 3 0 0 0 1 0 0 0 1 0 normals 1 0 0 1 texturecoords 3 t.ppm 0 0 1 0 0 1\n"
                     "triangles 1 0 1 2 0 0 0 0 1 2\n", 0},
    {"aff/mat.aff", "fm 0 0 0  1 0 0  0.5 0.5 0.5  10 0 1\n", 0},
    {"aff/anim.aff", "x spin { xs 1 1 1 0 1 0 30 1 0 0 { i 0 mesh.aff } }\n"
                     "k spin { rot 4 0 0 1 0 0 0 0 0 1 0 1 0 90 0 0 0 2 0 1 0 180 0 0 0 3 0 1 0 270 0 0 0 }\n", 0},
    {"TextureFiles/t.ppm", "P6\n2 2\n255\n\xff\x00\x00\x00\xff\x00\x00\x00\xff\xff\xff\xff", 23},
};

static void fixture_path(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", fuzz_dir, name); }

static void remove_fixtures(void)
{
    char p[128];
    for (size_t i = 0; i < sizeof FIXTURES / sizeof FIXTURES[0]; i++) {
        fixture_path(p, sizeof p, FIXTURES[i].name);
        unlink(p);
    }
    fixture_path(p, sizeof p, "aff");
    rmdir(p);
    fixture_path(p, sizeof p, "TextureFiles");
    rmdir(p);
    rmdir(fuzz_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    rt_log_set_level(RT_LOG_NONE);
    snprintf(fuzz_dir, sizeof fuzz_dir, "/tmp/rt_fuzz_aff_%d", (int)getpid());
    char p[128];
    mkdir(fuzz_dir, 0700);
    fixture_path(p, sizeof p, "aff");
    mkdir(p, 0700);
    fixture_path(p, sizeof p, "TextureFiles");
    mkdir(p, 0700);
    for (size_t i = 0; i < sizeof FIXTURES / sizeof FIXTURES[0]; i++) {
        fixture_path(p, sizeof p, FIXTURES[i].name);
        size_t len = FIXTURES[i].len ? FIXTURES[i].len : strlen(FIXTURES[i].text);
        if (!write_file(p, FIXTURES[i].text, len)) {
            fprintf(stderr, "fuzz_aff: cannot write %s\n", p);
            exit(1);
        }
    }
    atexit(remove_fixtures);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[128];
    fixture_path(path, sizeof path, "aff/in.aff");
    if (write_file(path, data, size)) {
        RtScene s;
        RtError err = {RT_OK, ""};
        if (rt_scene_load(path, &s, &err) == RT_OK) {
            check_scene(&s);
            rt_scene_free(&s);
        } else {
            FUZZ_CHECK(err.msg[0] != 0 && s.tri_count == 0 && s.verts == NULL);
        }
    }
    unlink(path);
    return 0;
}
