/* image.c — RGBA8 images, PNG in/out through stb. */
#include "core/image.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

RtImageFormat rt_image_format_of(const char *path)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash) || dot == path || (slash && dot == slash + 1)) return RT_IMAGE_NONE;
    static const struct { const char *ext; RtImageFormat f; } known[] = {
        {".png", RT_IMAGE_PNG}, {".jpg", RT_IMAGE_JPEG}, {".jpeg", RT_IMAGE_JPEG},
        {".bmp", RT_IMAGE_BMP}, {".tga", RT_IMAGE_TGA}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcasecmp(dot, known[i].ext)) return known[i].f;
    return RT_IMAGE_UNKNOWN;
}

RtStatus rt_image_write(const RtImage *img, const char *path, RtError *err)
{
    int ok;
    errno = 0;
    switch (rt_image_format_of(path)) {
    case RT_IMAGE_NONE:
    case RT_IMAGE_PNG: return rt_image_write_png(img, path, err);
    case RT_IMAGE_JPEG: ok = stbi_write_jpg(path, img->w, img->h, 4, img->rgba, RT_IMAGE_JPEG_QUALITY); break;
    case RT_IMAGE_BMP: ok = stbi_write_bmp(path, img->w, img->h, 4, img->rgba); break;
    case RT_IMAGE_TGA: ok = stbi_write_tga(path, img->w, img->h, 4, img->rgba); break;
    default:
        return rt_fail(err, RT_ERR_ARG, "%s: IMG: unknown image extension; expected .png, .jpg, .jpeg, .bmp or .tga",
                       path);
    }
    if (!ok)
        return rt_fail(err, RT_ERR_IO, "%s: IMG: cannot write (%s)", path, errno ? strerror(errno) : "stb_image_write failed");
    return RT_OK;
}

RtStatus rt_image_read_png(RtImage *img, const char *path, RtError *err)
{
    int w, h, n;
    RtStatus chk = rt_check_regular_file(path, "PNG", err);
    if (chk != RT_OK) return chk;
    uint8_t *px = stbi_load(path, &w, &h, &n, 4);
    if (!px) return rt_fail(err, RT_ERR_IO, "%s: PNG: cannot read (%s)", path, stbi_failure_reason());
    RtStatus st = rt_image_alloc(img, w, h);
    if (st == RT_OK) memcpy(img->rgba, px, (size_t)w * h * 4);
    stbi_image_free(px);
    return st;
}
