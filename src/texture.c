/* texture.c — image textures through stb_image. This is the one translation
 * unit that compiles stb_image's implementation (image.c only adds the
 * writer). */
#include "texture.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define STB_IMAGE_IMPLEMENTATION
/* 16K x 16K RGBA8 is 1 GiB, already more than any scene here needs; larger
 * headers are rejected before stb allocates anything. */
#define STBI_MAX_DIMENSIONS (1 << 14)
#include <stb_image.h>

RtStatus rt_texture_load(RtScene *s, const char *path, int32_t *index, RtError *err)
{
    /* The resolved path is both the identity used to share a texture and
     * what RtTexture.path reports ("as resolved on disk"). */
    char resolved[PATH_MAX];
    const char *key = realpath(path, resolved) ? resolved : path;
    for (uint32_t i = 0; i < s->tex_count; i++)
        if (s->texs[i].path && !strcmp(s->texs[i].path, key)) {
            *index = (int32_t)i;
            return RT_OK;
        }

    struct stat st;
    if (stat(key, &st) != 0)
        return rt_fail(err, RT_ERR_IO, "%s: TEX: cannot open (no such file)", path);
    if (!S_ISREG(st.st_mode))
        return rt_fail(err, RT_ERR_IO, "%s: TEX: not a regular file", path);

    int w = 0, h = 0, n = 0;
    uint8_t *px = stbi_load(key, &w, &h, &n, 4);
    if (!px)
        return rt_fail(err, RT_ERR_IO, "%s: TEX: cannot decode (%s; expected PNG, JPG, TGA, BMP or PPM)",
                       path, stbi_failure_reason());
    if (w <= 0 || h <= 0) {
        stbi_image_free(px);
        return rt_fail(err, RT_ERR_IO, "%s: TEX: image has no pixels", path);
    }

    if (s->tex_count >= s->tex_cap) {
        if (s->tex_cap >= (1u << 20)) goto oom; /* far past any real scene */
        uint32_t ncap = s->tex_cap ? s->tex_cap * 2 : 16;
        RtTexture *t = realloc(s->texs, (size_t)ncap * sizeof *t);
        if (!t) goto oom;
        s->texs = t;
        s->tex_cap = ncap;
    }
    char *p = strdup(key);
    if (!p) goto oom;
    /* stb allocates with malloc (STBI_MALLOC default), so RtTexture.rgba
     * can be released with free() by rt_scene_free. */
    RtTexture *t = &s->texs[s->tex_count];
    t->path = p;
    t->w = w;
    t->h = h;
    t->rgba = px;
    *index = (int32_t)s->tex_count++;
    return RT_OK;
oom:
    stbi_image_free(px);
    return rt_fail(err, RT_ERR_OOM, "%s: TEX: out of memory", path);
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
