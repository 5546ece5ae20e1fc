/* gltf_anim.h — the node channels of one animation of a glTF 2.0 file
 * (.gltf, .glb), read from the file itself (stage 1, load).
 *
 * assimp 5.2 hands over no interpolation mode: its glTF importer keeps a
 * STEP sampler's keys, which then play linear, and of a CUBICSPLINE one only
 * the value of each (in-tangent, value, out-tangent) triple. load_assimp.c
 * therefore reads the samplers of the clip it plays here (cJSON for the
 * JSON; GLB's BIN chunk, .bin files beside the model and data: URIs for the
 * buffers) and replaces assimp's keys of the same node and path with these
 * (docs/animation.md, "Interpolation of keyframe channels").
 *
 * Built without assimp or cJSON (RT_HAVE_CJSON=0, no libcjson-dev),
 * rt_gltf_anim_load refuses with a message saying so. */
#ifndef RT_GLTF_ANIM_H
#define RT_GLTF_ANIM_H

#include "anim/anim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum RtGltfPath {
    RT_GLTF_TRANSLATION = 0,
    RT_GLTF_ROTATION,
    RT_GLTF_SCALE,
} RtGltfPath;

/* One channel: a node's translation, rotation or scale, in the file's
 * interpolation (RT_KEYS_STEP, RT_KEYS_LINEAR or RT_KEYS_CUBIC) and in
 * seconds. Rotations are quaternions (x, y, z, w), unit for STEP and
 * LINEAR; CUBIC keys carry glTF's in- and out-tangents as stored (value
 * units per second: anim_keys.h scales them by the key interval, which is
 * the spec's Hermite form, so nothing is converted). */
typedef struct RtGltfChannel {
    char *node;          /* the target node's name as assimp names it: its "name", else "nodes[N]" */
    int32_t path;        /* RtGltfPath */
    int32_t ambiguous;   /* 1: another node has that name, so a match by name is unsure */
    int32_t used;        /* for the caller: set once its keys were taken */
    RtKbChannel keys;
} RtGltfChannel;

typedef struct RtGltfAnim {
    RtGltfChannel *ch;
    uint32_t count;
    uint32_t anim_count;     /* animations in the file */
    uint32_t weight_channels;/* "weights" channels of the animation, left to assimp */
} RtGltfAnim;

/* The TRS channels of animation `anim` (0-based, the file's order) of the
 * .gltf or .glb at path into *out (owned: rt_gltf_anim_free). Everything is
 * checked (GLB chunks, buffer, view and accessor bounds, strides, types,
 * counts, finite values, strictly increasing times); on any fault it
 * returns non-OK with a message naming the file and the fault, *out empty. */
RtStatus rt_gltf_anim_load(const char *path, uint32_t anim, RtGltfAnim *out, RtError *err);
void rt_gltf_anim_free(RtGltfAnim *a);
/* 1 for a path this module reads (.gltf or .glb, any case). */
int rt_gltf_anim_claims(const char *path);

#ifdef __cplusplus
}
#endif
#endif
