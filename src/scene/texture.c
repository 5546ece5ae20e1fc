/* texture.c — image textures through stb_image. This is the one translation
 * unit that compiles stb_image's implementation (image.c only adds the
 * writer). */
#include "scene/texture.h"

#include "render/shade.h" /* sRGB <-> linear, as the filters decode it */

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

/* ---- mip levels ----------------------------------------------------------- */

/* The source rows (or columns) [*lo, *hi) that texel i of a level n wide
 * averages, of a level above it src_n wide: 2i and 2i + 1, the last texel
 * also 2i + 2 when src_n is odd, the one texel 0 alone when src_n is 1. */
static void fold_span(int i, int n, int src_n, int *lo, int *hi)
{
    *lo = 2 * i < src_n ? 2 * i : src_n - 1;
    *hi = i == n - 1 ? src_n : 2 * i + 2;
}

/* Level dst (one level down) from level src: box average, RGB in linear
 * light (lut: byte -> linear), alpha as stored. */
static void downsample(const RtTexture *src, const RtTexture *dst, const float lut[256])
{
    for (int y = 0; y < dst->h; y++) {
        int y0, y1;
        fold_span(y, dst->h, src->h, &y0, &y1);
        for (int x = 0; x < dst->w; x++) {
            int x0, x1;
            fold_span(x, dst->w, src->w, &x0, &x1);
            float c[3] = {0.0f, 0.0f, 0.0f};
            unsigned a = 0, n = (unsigned)((x1 - x0) * (y1 - y0));
            for (int sy = y0; sy < y1; sy++)
                for (int sx = x0; sx < x1; sx++) {
                    const uint8_t *p = &src->rgba[4 * ((size_t)sy * src->w + sx)];
                    for (int k = 0; k < 3; k++) c[k] += lut[p[k]];
                    a += p[3];
                }
            uint8_t *q = &dst->rgba[4 * ((size_t)y * dst->w + x)];
            for (int k = 0; k < 3; k++) q[k] = rt_shade_linear_to_srgb8(c[k] / (float)n);
            q[3] = (uint8_t)((a + n / 2) / n);
        }
    }
}

RtStatus rt_texture_build_mips(RtTexture *t, RtError *err)
{
    RtTexture all = *t;
    all.levels = rt_texture_level_count(t->w, t->h);
    uint8_t *grown = realloc(t->rgba, rt_texture_bytes(&all));
    if (!grown) return rt_fail(err, RT_ERR_OOM, "%s: TEX: out of memory for mip levels", t->path ? t->path : "");
    all.rgba = grown;
    float lut[256];
    for (int i = 0; i < 256; i++) lut[i] = rt_shade_srgb8_to_linear((uint8_t)i);
    for (int l = 1; l < all.levels; l++) {
        RtTexture src = rt_texture_level(&all, l - 1), dst = rt_texture_level(&all, l);
        downsample(&src, &dst, lut);
    }
    *t = all;
    return RT_OK;
}

/* ---- the scene's textures ----------------------------------------------------- */

RtStatus rt_texture_add_rgba(RtScene *s, const char *key, int w, int h, uint8_t *rgba, int32_t *index,
                             RtError *err)
{
    RtTexture t = {strdup(key), w, h, rgba, 1};
    if (t.path && rt_texture_build_mips(&t, err) != RT_OK) {
        free(t.path);
        free(t.rgba);
        return RT_ERR_OOM;
    }
    int64_t i = t.path ? rt_scene_add_texture(s, t) : -1;
    if (i < 0) {
        free(t.path);
        goto oom;
    }
    *index = (int32_t)i;
    return RT_OK;
oom:
    free(t.rgba);
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
