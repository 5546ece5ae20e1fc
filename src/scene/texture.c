/* texture.c — image textures through stb_image. This is the one translation
 * unit that compiles stb_image's implementation (image.c only adds the
 * writer). */
#include "scene/texture.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define STB_IMAGE_IMPLEMENTATION
/* 16K x 16K RGBA8 is 1 GiB, already more than any scene here needs; larger
 * headers are rejected before stb allocates anything. */
#define STBI_MAX_DIMENSIONS (1 << 14)
#include <stb_image.h>

/* The largest image file read: an uncompressed 16K x 16K RGB PPM is 768 MiB;
 * also keeps the length within stb's int. */
#define TEX_MAX_FILE_BYTES ((size_t)1 << 30)

/* The index of the texture named key, or -1. */
static int32_t find_texture(const RtScene *s, const char *key)
{
    for (uint32_t i = 0; i < s->tex_count; i++)
        if (s->texs[i].path && !strcmp(s->texs[i].path, key)) return (int32_t)i;
    return -1;
}

RtStatus rt_texture_load(RtScene *s, const char *path, int32_t *index, RtError *err)
{
    /* The resolved path is both the identity used to share a texture and
     * what RtTexture.path reports ("as resolved on disk"). */
    char resolved[PATH_MAX];
    const char *key = realpath(path, resolved) ? resolved : path;
    if ((*index = find_texture(s, key)) >= 0) return RT_OK;

    char *data;
    size_t size;
    RtStatus st = rt_read_file(path, "TEX", TEX_MAX_FILE_BYTES, &data, &size, err);
    if (st != RT_OK) return st;
    st = rt_texture_load_memory(s, key, data, size, index, err);
    free(data);
    return st;
}

RtStatus rt_texture_load_memory(RtScene *s, const char *key, const void *data, size_t size, int32_t *index,
                                RtError *err)
{
    if ((*index = find_texture(s, key)) >= 0) return RT_OK;
    if (size > TEX_MAX_FILE_BYTES)
        return rt_fail(err, RT_ERR_IO, "%s: TEX: %zu bytes, larger than the %zu-byte limit", key, size,
                       (size_t)TEX_MAX_FILE_BYTES);
    int w = 0, h = 0, n = 0;
    uint8_t *px = stbi_load_from_memory((const stbi_uc *)data, (int)size, &w, &h, &n, 4);
    if (!px)
        return rt_fail(err, RT_ERR_IO, "%s: TEX: cannot decode (%s; expected PNG, JPG, TGA, BMP or PPM)",
                       key, stbi_failure_reason());
    if (w <= 0 || h <= 0) {
        stbi_image_free(px);
        return rt_fail(err, RT_ERR_IO, "%s: TEX: image has no pixels", key);
    }
    /* stb allocates with malloc (STBI_MALLOC default), so RtTexture.rgba
     * can be released with free() by rt_scene_free. */
    return rt_texture_add_rgba(s, key, w, h, px, index, err);
}

RtStatus rt_texture_add_rgba(RtScene *s, const char *key, int w, int h, uint8_t *rgba, int32_t *index,
                             RtError *err)
{
    RtTexture t = {strdup(key), w, h, rgba};
    int64_t i = t.path ? rt_scene_add_texture(s, t) : -1;
    if (i < 0) {
        free(t.path);
        goto oom;
    }
    *index = (int32_t)i;
    return RT_OK;
oom:
    free(rgba);
    return rt_fail(err, RT_ERR_OOM, "%s: TEX: out of memory", key);
}

void rt_texture_truncate(RtScene *s, uint32_t count)
{
    while (s->tex_count > count) {
        RtTexture *t = &s->texs[--s->tex_count];
        free(t->path);
        free(t->rgba);
        memset(t, 0, sizeof *t);
    }
}
