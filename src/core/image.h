/* image.h — RGBA8 images and PNG/JPEG/BMP/TGA output (stb_image_write). */
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

/* Output formats by file-name extension (case-insensitive). */
typedef enum {
    RT_IMAGE_NONE = 0,    /* no extension */
    RT_IMAGE_UNKNOWN,     /* an extension none of the below */
    RT_IMAGE_PNG, RT_IMAGE_JPEG, RT_IMAGE_BMP, RT_IMAGE_TGA
} RtImageFormat;
RtImageFormat rt_image_format_of(const char *path);
/* Writes img in the format its extension names (.png, .jpg/.jpeg at
 * quality RT_IMAGE_JPEG_QUALITY, .bmp, .tga; none = PNG); another extension
 * is RT_ERR_ARG naming the ones it knows, and nothing is written. */
RtStatus rt_image_write(const RtImage *img, const char *path, RtError *err);
#define RT_IMAGE_JPEG_QUALITY 95 /* stb_image_write's 1..100; 95 keeps HUD text legible */
/* Reads a PNG (for reference-image tests). */
RtStatus rt_image_read_png(RtImage *img, const char *path, RtError *err);

#endif
