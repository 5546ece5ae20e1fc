/* load.c — rt_scene_load: a scene file in by extension, through its loader
 * (load.h), then rt_scene_finish. The loaders call into scene.c, never the
 * other way round; a .scene's meshes go straight to rt_obj_load and
 * rt_ply_load (load_scenefile.c), not back through here. */
#include "scene/load.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Loaders append, so start from an empty scene. */
static RtStatus load(const char *path, const RtLoadLimits *lim, const char *clip, RtScene *s, RtError *err)
{
    rt_scene_init(s);
    const char *dot = strrchr(path, '.');
    RtStatus st;
    if (dot && !strcasecmp(dot, ".obj")) st = rt_obj_load(path, s, err);
    else if (dot && !strcasecmp(dot, ".ply")) st = rt_ply_load(path, s, err);
    else if (dot && !strcasecmp(dot, ".scene")) st = rt_scenefile_load(path, lim, s, err);
    else if (dot && !strcasecmp(dot, ".aff")) st = rt_aff_load(path, s, err);
    else if (rt_assimp_claims(path)) st = rt_assimp_load(path, clip, s, err);
    else
        st = rt_fail(err, RT_ERR_ARG,
                     "%s: SCENE: unknown file type (expected .obj, .ply, .scene, .aff, or a format assimp reads: "
                     ".gltf, .glb, .fbx, .dae, .3ds, .md2, .blend, .x, .stl, .lwo, ...)",
                     path);
    if (st == RT_OK && clip && !rt_assimp_claims(path))
        RT_WARN("SCENE", "%s: --clip %s ignored: only files read through assimp (glTF, FBX, ...) have clips", path,
                clip);
    if (st == RT_OK) {
        free(s->path);
        s->path = strdup(path);
        st = rt_scene_finish(s, err);
    }
    if (st != RT_OK) rt_scene_free(s);
    return st;
}

RtStatus rt_scene_load(const char *path, RtScene *s, RtError *err) { return load(path, NULL, NULL, s, err); }

RtStatus rt_scene_load_limited(const char *path, const RtLoadLimits *lim, RtScene *s, RtError *err)
{
    return load(path, lim, NULL, s, err);
}

RtStatus rt_scene_load_clip(const char *path, const char *clip, RtScene *s, RtError *err)
{
    return load(path, NULL, clip, s, err);
}
