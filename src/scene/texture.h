/* texture.h — image textures for materials: files decoded with stb_image
 * (PNG, JPG, TGA, BMP, PPM/PGM, ...) into RGBA8, kept in RtScene.texs and
 * shared between materials that name the same file. */
#ifndef RT_TEXTURE_H
#define RT_TEXTURE_H

#include "scene/scene.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads the image at path into s->texs (row 0 = top, sRGB-encoded RGBA8) and
 * sets *index to it; a file already loaded (same resolved path) is reused.
 * A missing or undecodable file is RT_ERR_IO with err saying why, and s is
 * unchanged: loaders turn that into a warning and keep the flat colour. */
RtStatus rt_texture_load(RtScene *s, const char *path, int32_t *index, RtError *err);

/* The same for an image already in memory (a file's embedded texture):
 * data (size bytes, any format stb_image decodes) is decoded and kept under
 * the name key (e.g. "model.glb*0"), which also identifies it for sharing. */
RtStatus rt_texture_load_memory(RtScene *s, const char *key, const void *data, size_t size, int32_t *index,
                                RtError *err);
/* Appends w x h decoded RGBA8 pixels (row 0 = top, malloc'd; the scene
 * takes them, and frees them itself when it fails) named key. */
RtStatus rt_texture_add_rgba(RtScene *s, const char *key, int w, int h, uint8_t *rgba, int32_t *index,
                             RtError *err);

/* Builds t's mip levels behind level 0 (RtTexture.levels, down to 1 x 1),
 * growing t->rgba; rt_texture_add_rgba calls it for every texture a scene
 * gets. Each texel of level l + 1 is the box average of its 2 x 2 texels
 * of level l (2 x 3, 3 x 2 or 3 x 3 where an odd last row or column is
 * folded in, 1 x 2 or 2 x 1 once a side is 1): RGB averaged in linear
 * light (sRGB decoded, averaged, encoded again, so a black/white checker
 * fades to its true mid-grey, not to a darker one), alpha as stored.
 * RT_ERR_OOM leaves t as it was. */
RtStatus rt_texture_build_mips(RtTexture *t, RtError *err);

/* Frees textures [count, s->tex_count) and shrinks tex_count to count: how a
 * loader that failed half-way gives back what it added. */
void rt_texture_truncate(RtScene *s, uint32_t count);

#ifdef __cplusplus
}
#endif
#endif
