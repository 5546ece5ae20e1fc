/* gpu_check.h — shared by the GPU-vs-CPU image tests (test_gpu_photon.c,
 * test_gpu_shading.c): a skip without a GPU and the image comparison
 * (accumulated frames: accum_check.h). */
#ifndef RT_TEST_GPU_CHECK_H
#define RT_TEST_GPU_CHECK_H

#include "accum_check.h"

#include "core/image.h"
#include "gpu/gpu.h"

/* Skips the test (with the reason, once) where no GPU can be opened. */
static inline void need_gpu(void)
{
    static int have = -1;
    if (have < 0) {
        RtGpu *gpu = NULL;
        RtError err = {0};
        have = rt_gpu_create(0, &gpu, &err) == RT_OK;
        if (!have) print_message("skip: no GPU: %s\n", err.msg);
        rt_gpu_destroy(gpu);
    }
    if (!have) skip();
}

/* Mean absolute difference over all RGB bytes of a and b, and the share of
 * pixels whose largest channel difference exceeds tol. */
static inline void image_diff(const RtImage *a, const RtImage *b, int tol, double *mean, double *over)
{
    double sum = 0.0;
    size_t n = (size_t)a->w * a->h, bad = 0;
    for (size_t i = 0; i < n; i++) {
        int worst = 0;
        for (int c = 0; c < 3; c++) {
            int d = abs((int)a->rgba[4 * i + c] - (int)b->rgba[4 * i + c]);
            sum += d;
            if (d > worst) worst = d;
        }
        bad += worst > tol;
    }
    *mean = sum / (3.0 * n);
    *over = (double)bad / n;
}

#endif
