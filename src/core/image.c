/* image.c — RGBA8 images, PNG in/out through stb. */
#include "core/image.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
#include <stb_image.h>

RtStatus rt_image_alloc(RtImage *img, int w, int h)
{
    img->w = img->h = 0;
    img->rgba = NULL;
    if (w <= 0 || h <= 0 || w > 32768 || h > 32768) return RT_ERR_ARG;
    img->rgba = calloc((size_t)w * h, 4);
    if (!img->rgba) return RT_ERR_OOM;
    img->w = w;
    img->h = h;
    return RT_OK;
}

void rt_image_free(RtImage *img)
{
    free(img->rgba);
    img->rgba = NULL;
    img->w = img->h = 0;
}

RtStatus rt_image_write_png(const RtImage *img, const char *path, RtError *err)
{
    if (!stbi_write_png(path, img->w, img->h, 4, img->rgba, img->w * 4))
        return rt_fail(err, RT_ERR_IO, "%s: PNG: cannot write (%s)", path,
                       errno ? strerror(errno) : "stb_image_write failed");
    return RT_OK;
}

RtStatus rt_image_read_png(RtImage *img, const char *path, RtError *err)
{
    int w, h, n;
    uint8_t *px = stbi_load(path, &w, &h, &n, 4);
    if (!px) return rt_fail(err, RT_ERR_IO, "%s: PNG: cannot read (%s)", path, stbi_failure_reason());
    RtStatus st = rt_image_alloc(img, w, h);
    if (st == RT_OK) memcpy(img->rgba, px, (size_t)w * h * 4);
    stbi_image_free(px);
    return st;
}
