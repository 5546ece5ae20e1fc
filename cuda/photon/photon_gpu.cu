/* photon_gpu.cu — the photon stage of a GPU frame (photon_gpu.h):
 *   1. trace: rt_trace_gpu_photons fills the slots (trace.cu's photon_kernel);
 *   2. compact: per map, a flag per slot, an exclusive scan (CUB), a
 *      scatter of positions and records in slot order, the same order as
 *      photon_maps.c's loop;
 *   3. build: Brown's balanced tree of each map's positions on the GPU
 *      (kdp_gpu.h), the CPU oracle's very tree.
 * All on the scene's stream; the one host wait reads the maps' sizes,
 * which the tree builder needs to plan its levels. */
#include <cub/cub.cuh>
#include <string.h>

#include "gpu/cuda_check.h"
#include "gpu/gpu.h"
#include "gpu/gpu_scene_dev.h"
#include "photon/kdp_gpu.h"
#include "photon/photon_gpu.h"
#include "photon/photon_maps.h"

static const int kBlock = 256;

struct RtPhotonGpu {
    RtPhotonSlots slots;              /* device arrays */
    size_t slot_cap;                  /* slots allocated */
    uint32_t *flags[RT_PHOTON_MAPS];  /* slot_cap + 1 each: 1 where the slot is in the map */
    uint32_t *offs[RT_PHOTON_MAPS];   /* their exclusive scans (entry slot_cap: the map's size) */
    void *cub_tmp;
    size_t cub_bytes;
    float *pts[RT_PHOTON_MAPS];       /* compacted positions */
    RtPhoton *rec[RT_PHOTON_MAPS];    /* compacted records */
    uint32_t map_cap[RT_PHOTON_MAPS];
    RtKdpGpu *kdp[RT_PHOTON_MAPS];
    uint32_t *h_sizes;                /* pinned: the two map sizes */
    cudaEvent_t ev[2];
    int ev_made;
};

/* ---- kernels ---------------------------------------------------------------- */

/* flags[k][i] = slot i belongs to map k; entry n stays 0 so that the scan's
 * last element is the map's size. */
__global__ void photon_flags(const uint8_t *kind, size_t n, uint32_t *f0, uint32_t *f1)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i > n) return;
    uint8_t k = i < n ? kind[i] : RT_PHOTON_NONE;
    f0[i] = k == 1u + RT_PHOTON_CAUSTIC;
    f1[i] = k == 1u + RT_PHOTON_GLOBAL;
}

/* Slot i of map k goes to place offs[k][i]: slot order kept. */
__global__ void photon_scatter(RtPhotonSlots sl, size_t n, const uint32_t *o0, const uint32_t *o1, float *p0,
                               float *p1, RtPhoton *r0, RtPhoton *r1)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || sl.kind[i] == RT_PHOTON_NONE) return;
    bool caustic = sl.kind[i] == 1u + RT_PHOTON_CAUSTIC;
    uint32_t at = caustic ? o0[i] : o1[i];
    float *p = caustic ? p0 : p1;
    p[3 * (size_t)at] = sl.pos[3 * i];
    p[3 * (size_t)at + 1] = sl.pos[3 * i + 1];
    p[3 * (size_t)at + 2] = sl.pos[3 * i + 2];
    (caustic ? r0 : r1)[at] = sl.rec[i];
}

/* ---- buffers ---------------------------------------------------------------- */

static void free_slots(RtPhotonGpu *g)
{
    rt_gpu_free(g->slots.kind);
    rt_gpu_free(g->slots.pos);
    rt_gpu_free(g->slots.rec);
    for (int k = 0; k < RT_PHOTON_MAPS; k++) {
        rt_gpu_free(g->flags[k]);
        rt_gpu_free(g->offs[k]);
        g->flags[k] = g->offs[k] = NULL;
    }
    rt_gpu_free(g->cub_tmp);
    g->cub_tmp = NULL;
    g->cub_bytes = 0;
    memset(&g->slots, 0, sizeof g->slots);
    g->slot_cap = 0;
}

static RtStatus reserve_slots(RtPhotonGpu *g, uint32_t count, uint32_t depth, RtError *err)
{
    size_t n = (size_t)count * depth;
    if (n > g->slot_cap) {
        free_slots(g);
        RtStatus st = rt_gpu_alloc((void **)&g->slots.kind, n, "photon slots", err);
        if (st == RT_OK) st = rt_gpu_alloc((void **)&g->slots.pos, 3 * n * sizeof(float), "photon slots", err);
        if (st == RT_OK) st = rt_gpu_alloc((void **)&g->slots.rec, n * sizeof(RtPhoton), "photon slots", err);
        for (int k = 0; k < RT_PHOTON_MAPS && st == RT_OK; k++) {
            st = rt_gpu_alloc((void **)&g->flags[k], (n + 1) * sizeof(uint32_t), "photon flags", err);
            if (st == RT_OK) st = rt_gpu_alloc((void **)&g->offs[k], (n + 1) * sizeof(uint32_t), "photon flags", err);
        }
        size_t bytes = 0;
        if (st == RT_OK)
            CUDA_CHECK(err, cub::DeviceScan::ExclusiveSum(NULL, bytes, g->flags[0], g->offs[0], (int64_t)(n + 1)));
        if (st == RT_OK) st = rt_gpu_alloc(&g->cub_tmp, bytes, "photon scan", err);
        if (st != RT_OK) {
            free_slots(g);
            return st;
        }
        g->cub_bytes = bytes;
        g->slot_cap = n;
    }
    g->slots.count = count;
    g->slots.max_depth = depth;
    return RT_OK;
}

static RtStatus reserve_map(RtPhotonGpu *g, int k, uint32_t n, RtError *err)
{
    if (n <= g->map_cap[k] && g->pts[k]) return RT_OK;
    rt_gpu_free(g->pts[k]);
    rt_gpu_free(g->rec[k]);
    g->pts[k] = NULL;
    g->rec[k] = NULL;
    g->map_cap[k] = 0;
    RtStatus st = rt_gpu_alloc((void **)&g->pts[k], 3 * (size_t)(n ? n : 1) * sizeof(float), "photon map", err);
    if (st == RT_OK) st = rt_gpu_alloc((void **)&g->rec[k], (size_t)(n ? n : 1) * sizeof(RtPhoton), "photon map", err);
    if (st == RT_OK) g->map_cap[k] = n;
    return st;
}

/* ---- the API ------------------------------------------------------------------ */

extern "C" RtStatus rt_photon_gpu_create(RtPhotonGpu **out, RtError *err)
{
    *out = NULL;
    RtPhotonGpu *g = (RtPhotonGpu *)calloc(1, sizeof *g);
    if (!g) return rt_fail(err, RT_ERR_OOM, "PHOTON: out of host memory");
    RtStatus st = RT_OK;
    for (int k = 0; k < RT_PHOTON_MAPS && st == RT_OK; k++) st = rt_kdp_gpu_create(&g->kdp[k], NULL, err);
    if (st == RT_OK) {
        cudaError_t e = cudaMallocHost((void **)&g->h_sizes, RT_PHOTON_MAPS * sizeof(uint32_t));
        if (e == cudaSuccess) e = cudaEventCreate(&g->ev[0]);
        if (e == cudaSuccess) e = cudaEventCreate(&g->ev[1]);
        if (e != cudaSuccess) st = rt_fail(err, RT_ERR_CUDA, "PHOTON: %s", cudaGetErrorString(e));
        else g->ev_made = 1;
    }
    if (st != RT_OK) {
        rt_photon_gpu_destroy(g);
        return st;
    }
    *out = g;
    return RT_OK;
}

extern "C" void rt_photon_gpu_destroy(RtPhotonGpu *g)
{
    if (!g) return;
    free_slots(g);
    for (int k = 0; k < RT_PHOTON_MAPS; k++) {
        rt_gpu_free(g->pts[k]);
        rt_gpu_free(g->rec[k]);
        rt_kdp_gpu_destroy(g->kdp[k]);
    }
    if (g->h_sizes) cudaFreeHost(g->h_sizes);
    if (g->ev_made) {
        cudaEventDestroy(g->ev[0]);
        cudaEventDestroy(g->ev[1]);
    }
    free(g);
}

extern "C" RtStatus rt_photon_gpu_frame(RtPhotonGpu *g, RtGpuScene *gs, const RtAccel *accel,
                                        const RtTraceParams *tp, const RtPhotonParams *pp, RtAabb rest_bounds,
                                        RtPhotonMaps *maps, RtPhotonStats *st, RtError *err)
{
    if (!g || !gs || !pp || !maps) return rt_fail(err, RT_ERR_ARG, "PHOTON: missing stage, scene, parameters or maps");
    RtStatus s = reserve_slots(g, pp->count, pp->max_depth, err);
    if (s != RT_OK) return s;
    double trace_ms = 0.0;
    if ((s = rt_trace_gpu_photons(gs, accel, tp, pp, rest_bounds, &g->slots, &trace_ms, err)) != RT_OK) return s;
    cudaStream_t stream = rt_gpu_scene_launch_log(gs)->stream;

    /* compact, in slot order */
    CUDA_CHECK(err, cudaEventRecord(g->ev[0], stream));
    size_t n = (size_t)pp->count * pp->max_depth;
    unsigned blocks = (unsigned)((n + 1 + kBlock - 1) / kBlock);
    photon_flags<<<blocks, kBlock, 0, stream>>>(g->slots.kind, n, g->flags[0], g->flags[1]);
    CUDA_CHECK_LAUNCH(err, "photon_flags");
    for (int k = 0; k < RT_PHOTON_MAPS; k++) {
        size_t bytes = g->cub_bytes;
        CUDA_CHECK(err, cub::DeviceScan::ExclusiveSum(g->cub_tmp, bytes, g->flags[k], g->offs[k], (int64_t)(n + 1),
                                                      stream));
        CUDA_CHECK(err, cudaMemcpyAsync(&g->h_sizes[k], &g->offs[k][n], sizeof(uint32_t), cudaMemcpyDeviceToHost,
                                        stream));
    }
    CUDA_CHECK(err, cudaStreamSynchronize(stream));
    for (int k = 0; k < RT_PHOTON_MAPS; k++)
        if ((s = reserve_map(g, k, g->h_sizes[k], err)) != RT_OK) return s;
    if (n) {
        photon_scatter<<<(unsigned)((n + kBlock - 1) / kBlock), kBlock, 0, stream>>>(
            g->slots, n, g->offs[0], g->offs[1], g->pts[0], g->pts[1], g->rec[0], g->rec[1]);
        CUDA_CHECK_LAUNCH(err, "photon_scatter");
    }

    /* both trees */
    for (int k = 0; k < RT_PHOTON_MAPS; k++) {
        if ((s = rt_kdp_gpu_build(g->kdp[k], g->pts[k], g->h_sizes[k], 3, (void *)stream, &maps->map[k].tree, NULL,
                                  err)) != RT_OK)
            return s;
        maps->map[k].rec = g->rec[k];
    }
    maps->k = pp->k;
    maps->r2 = rt_photon_gather_r2(pp, rest_bounds);
    CUDA_CHECK(err, cudaEventRecord(g->ev[1], stream));
    if (st) {
        float ms = 0.0f;
        CUDA_CHECK(err, cudaEventSynchronize(g->ev[1]));
        CUDA_CHECK(err, cudaEventElapsedTime(&ms, g->ev[0], g->ev[1]));
        st->emitted = pp->count;
        st->stored[0] = g->h_sizes[0];
        st->stored[1] = g->h_sizes[1];
        st->trace_ms = trace_ms;
        st->build_ms = ms;
    }
    return RT_OK;
}

extern "C" RtStatus rt_photon_gpu_download_slots(const RtPhotonGpu *g, RtPhotonSlots *host, RtError *err)
{
    size_t n = (size_t)g->slots.count * g->slots.max_depth;
    if (host->count < g->slots.count || host->max_depth != g->slots.max_depth)
        return rt_fail(err, RT_ERR_ARG, "PHOTON: host slots for %u x %u, device holds %u x %u", host->count,
                       host->max_depth, g->slots.count, g->slots.max_depth);
    if (!n) return RT_OK;
    CUDA_CHECK(err, cudaDeviceSynchronize());
    CUDA_CHECK(err, cudaMemcpy(host->kind, g->slots.kind, n, cudaMemcpyDeviceToHost));
    CUDA_CHECK(err, cudaMemcpy(host->pos, g->slots.pos, 3 * n * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(err, cudaMemcpy(host->rec, g->slots.rec, n * sizeof(RtPhoton), cudaMemcpyDeviceToHost));
    return RT_OK;
}
