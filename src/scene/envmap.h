/* envmap.h — an HDR environment map (issue 26): an equirectangular image
 * (.hdr and the other formats stb_image reads as float) lighting the scene
 * from infinitely far away and seen where rays leave it. Loaded by .scene's
 * `environment` statement and by --env; shaded by shade.h's
 * rt_shade_env_radiance on both backends. */
#ifndef RT_ENVMAP_H
#define RT_ENVMAP_H

#include "scene/scene.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads path into s->env (replacing one there): linear RGB floats,
 * intensity and rotation about +y as given. RT_ERR_IO names the file and
 * stb_image's reason; RT_ERR_ARG a non-finite intensity or rotation. */
RtStatus rt_envmap_load(RtScene *s, const char *path, float intensity, float rotate_deg, RtError *err);

#ifdef __cplusplus
}
#endif
#endif
