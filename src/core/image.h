/* image.h — RGBA8 images and PNG output (stb_image_write). */
#ifndef RT_IMAGE_H
#define RT_IMAGE_H

#include "core/rt_base.h"

typedef struct RtImage {
    int w, h;
    uint8_t *rgba; /* w*h*4, row 0 = top, sRGB-encoded */
} RtImage;

RtStatus rt_image_alloc(RtImage *img, int w, int h);
void rt_image_free(RtImage *img);
RtStatus rt_image_write_png(const RtImage *img, const char *path, RtError *err);
/* Reads a PNG (for reference-image tests). */
RtStatus rt_image_read_png(RtImage *img, const char *path, RtError *err);

#endif
