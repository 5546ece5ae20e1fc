/* accum_check.h — accumulated frames through the pipeline on either
 * backend, for the tests of accumulated shading (test_lights.c,
 * test_env.c; the GPU's through gpu_check.h). */
#ifndef RT_TEST_ACCUM_CHECK_H
#define RT_TEST_ACCUM_CHECK_H

#include "test_util.h"

#include "app/pipeline.h"

/* Samples 0..n-1 of scene s (its camera, t = 0) on backend be into img,
 * from a fresh pipeline; the last frame's statistics into *fs (optional). */
static inline void accumulate(const RtScene *s, RtBackend be, const RtPipelineParams *base, uint32_t n, RtImage *img,
                       RtFrameStats *fs)
{
    RtError err = {0};
    RtPipeline *p;
    if (rt_pipeline_create(s, be, img->w, img->h, &p, &err) != RT_OK) fail_msg("%s", err.msg);
    RtFrameTarget tg = {img->w, img->h, NULL, img};
    RtPipelineParams pp = *base;
    RtFrameStats last;
    for (uint32_t k = 0; k < n; k++) {
        memset(&last, 0, sizeof last);
        pp.trace.shade.sample = k;
        if (rt_pipeline_frame(p, &pp, 0.0f, NULL, &tg, &last, &err) != RT_OK) fail_msg("%s", err.msg);
    }
    if (fs) *fs = last;
    rt_pipeline_destroy(p);
}

/* The red byte of the centre pixel of a w x w CPU frame of s (its own
 * camera, t = 0) after samples 0..n-1 with pp. */
static inline int centre_after_samples(const RtScene *s, RtPipelineParams pp, int w, uint32_t n)
{
    RtImage img;
    assert_int_equal(rt_image_alloc(&img, w, w), RT_OK);
    accumulate(s, RT_BACKEND_CPU, &pp, n, &img, NULL);
    int c = img.rgba[4 * ((w / 2) * w + w / 2)];
    rt_image_free(&img);
    return c;
}

#endif
