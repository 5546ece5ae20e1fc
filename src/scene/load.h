/* load.h — the file loaders of stage 1 (load), one per format. Each appends
 * what its file holds to s through scene.h's growth functions, so a .scene
 * can compose meshes; on error it returns non-OK with err->msg
 * "file:line: TAG: what was expected" and rolls s back to what it held
 * before the call. rt_scene_load (load.c) picks one by extension and
 * finishes the scene; users and most tests go through it. The include graph: load_*.c and load.c -> load.h -> scene.h;
 * scene.c knows no loader. docs/formats.md describes the formats. */
#ifndef RT_SCENE_LOAD_H
#define RT_SCENE_LOAD_H

#include "scene/scene.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads OBJ(+MTL), PLY, .scene, AFF or (through assimp) glTF, FBX,
 * Collada, MD2, ... by extension (case-insensitive) and
 * finishes the scene (rt_scene_finish). On error returns non-OK, err->msg is
 * "file:line: TAG: what was expected", and *s is left empty (freed). An
 * empty scene is RT_ERR_EMPTY with a clear message. */
RtStatus rt_scene_load(const char *path, RtScene *s, RtError *err);

/* What one load may make beyond the bytes of its files: a .scene's
 * procedural statements turn a short line into millions of triangles, and a
 * morph stores a pose per key. rt_scene_load uses the defaults; a fuzzer
 * passes small ones, so it covers these statements without measuring the
 * allocator. Whatever the limits, the generators refuse what host memory
 * cannot hold (rt_scene_check_host_memory). */
typedef struct RtLoadLimits {
    /* Triangles the runners, field and wavegrid statements of one load may
     * add, included files counted: 32M (about 10 GB of host memory for a
     * frame), so each statement can reach its own cap (128 runners = 10.0M,
     * field 40000 = 10.8M, wavegrid 25.2M) in one file. */
    uint64_t procedural_tris;
    /* Vertex poses one morph may store: 64M (~1.5 GB). */
    uint64_t morph_poses;
} RtLoadLimits;
RtLoadLimits rt_load_limits_default(void);
/* rt_scene_load under lim (NULL: the defaults). */
RtStatus rt_scene_load_limited(const char *path, const RtLoadLimits *lim, RtScene *s, RtError *err);
/* rt_scene_load playing the animation clip `clip` of a file with several
 * (assimp formats, --clip): a clip's name, else its index ("0", "1", ...);
 * NULL = the first clip with channels. A clip the file does not have is
 * RT_ERR_ARG with a message listing the file's clips. Formats without
 * clips ignore it (a warning). */
RtStatus rt_scene_load_clip(const char *path, const char *clip, RtScene *s, RtError *err);

RtStatus rt_obj_load(const char *path, RtScene *s, RtError *err);       /* OBJ + MTL (load_obj.c) */
RtStatus rt_ply_load(const char *path, RtScene *s, RtError *err);       /* PLY (load_ply.c) */
RtStatus rt_scenefile_load(const char *path, const RtLoadLimits *lim, RtScene *s,
                           RtError *err);                                /* .scene (load_scenefile.c); lim NULL: defaults */
RtStatus rt_aff_load(const char *path, RtScene *s, RtError *err);       /* BART AFF (load_aff.c) */
/* glTF, FBX, Collada, MD2, ... through assimp (load_assimp.c): the
 * extensions rt_assimp_claims accepts. Built without assimp
 * (RT_HAVE_ASSIMP=0) it refuses them: RT_ERR_UNSUPPORTED, saying so. */
RtStatus rt_assimp_load(const char *path, const char *clip, RtScene *s, RtError *err); /* clip: as rt_scene_load_clip */
int rt_assimp_claims(const char *path); /* 1: path's extension is an assimp format */
/* Where the assimp-testmodels corpus is: $RT_ASSIMP_MODELS, else Debian's
 * /usr/share/assimp/models. A .scene path written $RT_ASSIMP_MODELS/... starts
 * there (scenes/skinned_crowd.scene), and the tests that read the corpus
 * look there, so a machine without the package can point them at a copy. */
#define RT_ASSIMP_MODELS_VAR "RT_ASSIMP_MODELS"
#define RT_ASSIMP_MODELS_DEFAULT "/usr/share/assimp/models"
const char *rt_assimp_models_dir(void);

#ifdef __cplusplus
}
#endif
#endif
