/* accum_check.h — shared by the CPU tests of accumulated shading
 * (test_lights.c, test_env.c): a scene's centre pixel after n samples. */
#ifndef RT_TEST_ACCUM_CHECK_H
#define RT_TEST_ACCUM_CHECK_H

#include "test_util.h"

#include "app/pipeline.h"

/* The red byte of the centre pixel of a w x w CPU frame of s (its own
 * camera, t = 0) after samples 0..n-1 with pp. */
static int centre_after_samples(const RtScene *s, RtPipelineParams pp, int w, uint32_t n)
{
    RtError err = {0};
    RtPipeline *p;
    if (rt_pipeline_create(s, RT_BACKEND_CPU, w, w, &p, &err) != RT_OK) fail_msg("%s", err.msg);
    RtImage img;
    assert_int_equal(rt_image_alloc(&img, w, w), RT_OK);
    RtFrameTarget tg = {w, w, NULL, &img};
    RtFrameStats fs;
    for (uint32_t k = 0; k < n; k++) {
        pp.trace.shade.sample = k;
        if (rt_pipeline_frame(p, &pp, 0.0f, NULL, &tg, &fs, &err) != RT_OK) fail_msg("%s", err.msg);
    }
    int c = img.rgba[4 * ((w / 2) * w + w / 2)];
    rt_pipeline_destroy(p);
    rt_image_free(&img);
    return c;
}

#endif
