/* fuzz_gltf.c — libFuzzer target for the glTF animation-sampler reader
 * (gltf_anim.c), the project's own parser of .gltf / .glb bytes (assimp
 * reads the rest of those files and is not fuzzed here).
 *
 * Input: the first byte picks the container (even: .gltf JSON, odd: .glb);
 * the rest is written to in.gltf / in.glb in a per-process directory under
 * /tmp, beside a small valid b.bin an input's "uri" may name. Animations 0
 * and 1 are read; a read that succeeds must give consistent channels (a
 * node name, a known path and mode, keys with strictly increasing finite
 * times and finite values), and evaluating every channel at a few times must
 * stay finite; a violation aborts, which libFuzzer records as a crash.
 * Build: make fuzz (clang, with cJSON); run: tests/fuzz/README.md. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "anim/anim_keys.h"
#include "core/rt_base.h"
#include "scene/gltf_anim.h"

#define FUZZ_CHECK(cond)                                                                          \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "fuzz_gltf: invariant broken after a successful read: %s\n", #cond); \
            abort();                                                                              \
        }                                                                                         \
    } while (0)

static char dir[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    snprintf(dir, sizeof dir, "/tmp/rt_fuzz_gltf_%d", (int)getpid());
    mkdir(dir, 0700);
    char path[128];
    snprintf(path, sizeof path, "%s/b.bin", dir);
    FILE *f = fopen(path, "wb");
    if (f) {
        /* times 0, 1, 2 then three vec4 rotations and three vec3 translations */
        const float data[] = {0, 1, 2, 0, 0, 0, 1, 0, 0.7071f, 0, 0.7071f, 0, 1, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6};
        fwrite(data, sizeof data, 1, f);
        fclose(f);
    }
    rt_log_set_level(RT_LOG_ERROR);
    return 0;
}

static void check(const RtGltfAnim *a)
{
    for (uint32_t i = 0; i < a->count; i++) {
        const RtGltfChannel *c = &a->ch[i];
        FUZZ_CHECK(c->node != NULL);
        FUZZ_CHECK(c->path >= RT_GLTF_TRANSLATION && c->path <= RT_GLTF_SCALE);
        FUZZ_CHECK(c->keys.interp == RT_KEYS_STEP || c->keys.interp == RT_KEYS_LINEAR ||
                   c->keys.interp == RT_KEYS_CUBIC);
        FUZZ_CHECK(c->keys.count >= 1 && c->keys.keys != NULL);
        for (uint32_t k = 0; k < c->keys.count; k++) {
            FUZZ_CHECK(isfinite(c->keys.keys[k].t));
            if (k) FUZZ_CHECK(c->keys.keys[k - 1].t < c->keys.keys[k].t);
        }
        /* finite keys of sane size evaluate to finite values (huge finite
         * keys may overflow in the Hermite sums: garbage in, not a bug) */
        int sane = 1;
        for (uint32_t k = 0; k < c->keys.count; k++)
            for (int j = 0; j < 4; j++) {
                const RtKbKey *kk = &c->keys.keys[k];
                sane &= fabsf(kk->v[j]) < 1e15f && fabsf(kk->in[j]) < 1e15f && fabsf(kk->out[j]) < 1e15f &&
                        fabsf(kk->t) < 1e15f;
            }
        if (!sane) continue;
        const int quat = c->path == RT_GLTF_ROTATION;
        const float t0 = c->keys.keys[0].t, t1 = c->keys.keys[c->keys.count - 1].t;
        for (int s = -1; s <= 5; s++) {
            float out[4];
            rt_keys_eval(c->keys.keys, c->keys.count, c->keys.interp, quat, t0 + (t1 - t0) * (float)s / 4.0f,
                         out);
            for (int j = 0; j < (quat ? 4 : 3); j++) FUZZ_CHECK(isfinite(out[j]));
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    char path[128];
    snprintf(path, sizeof path, "%s/in.%s", dir, data[0] & 1 ? "glb" : "gltf");
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    for (uint32_t anim = 0; anim < 2; anim++) {
        RtGltfAnim a;
        RtError err = {0};
        memset(&a, 0, sizeof a);
        if (rt_gltf_anim_load(path, anim, &a, &err) == RT_OK) check(&a);
        else FUZZ_CHECK(a.count == 0 && err.msg[0] != 0);
        rt_gltf_anim_free(&a);
    }
    remove(path);
    return 0;
}
