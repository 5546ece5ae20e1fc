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

/* Loads OBJ(+MTL), PLY, .scene or AFF by extension (case-insensitive) and
 * finishes the scene (rt_scene_finish). On error returns non-OK, err->msg is
 * "file:line: TAG: what was expected", and *s is left empty (freed). An
 * empty scene is RT_ERR_EMPTY with a clear message. */
RtStatus rt_scene_load(const char *path, RtScene *s, RtError *err);

RtStatus rt_obj_load(const char *path, RtScene *s, RtError *err);       /* OBJ + MTL (load_obj.c) */
RtStatus rt_ply_load(const char *path, RtScene *s, RtError *err);       /* PLY (load_ply.c) */
RtStatus rt_scenefile_load(const char *path, RtScene *s, RtError *err); /* .scene (load_scenefile.c) */
RtStatus rt_aff_load(const char *path, RtScene *s, RtError *err);       /* BART AFF (load_aff.c) */

#ifdef __cplusplus
}
#endif
#endif
