/* envmap.c — loading the environment map (envmap.h). */
#include "scene/envmap.h"

#include <stdlib.h>

#include <stb_image.h>

/* Texels at most (16k x 8k: a large studio HDR), so a corrupt header cannot
 * ask for more memory than a real map would. */
#define RT_ENV_MAX_TEXELS (16384u * 8192u)

RtStatus rt_envmap_load(RtScene *s, const char *path, float intensity, float rotate_deg, RtError *err)
{
    if (!isfinite(intensity) || intensity < 0.0f || !isfinite(rotate_deg))
        return rt_fail(err, RT_ERR_ARG, "%s: ENV: expected intensity >= 0 and a finite rotation, got %g and %g", path,
                       (double)intensity, (double)rotate_deg);
    int w = 0, h = 0, n = 0;
    if (!stbi_info(path, &w, &h, &n))
        return rt_fail(err, RT_ERR_IO, "%s: ENV: cannot read the image (%s; expected .hdr, or PNG/JPG as sRGB)", path,
                       stbi_failure_reason());
    if (w <= 0 || h <= 0 || (uint64_t)w * (uint64_t)h > RT_ENV_MAX_TEXELS)
        return rt_fail(err, RT_ERR_IO, "%s: ENV: %d x %d texels, expected 1 .. %u", path, w, h, RT_ENV_MAX_TEXELS);
    /* stbi_loadf: .hdr as stored; 8-bit formats through stb's sRGB-ish
       gamma 2.2 to linear */
    float *rgb = stbi_loadf(path, &w, &h, &n, 3);
    if (!rgb) return rt_fail(err, RT_ERR_IO, "%s: ENV: cannot decode (%s)", path, stbi_failure_reason());
    for (size_t i = 0; i < (size_t)w * h * 3; i++)
        if (!isfinite(rgb[i]) || rgb[i] < 0.0f) rgb[i] = 0.0f; /* a broken texel lights nothing */
    free(s->env.rgb);
    s->env.rgb = rgb;
    s->env.w = w;
    s->env.h = h;
    s->env.intensity = intensity;
    s->env.rotate = rotate_deg * (3.14159265358979f / 180.0f);
    return RT_OK;
}
