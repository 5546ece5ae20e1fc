/* lbvh_gpu.h — the GPU LBVH builder (stage "build", structure lbvh):
 * Karras 2012 (seed 002) as src/bvh/lbvh.h writes it, every step a kernel
 * on the builder's stream, no host round trip, replayed as one CUDA graph
 * frame after frame: boxes and scene box, Morton codes, CUB's radix sort of
 * (code, id) pairs, and the radix tree climbed from its leaves (Apetrei
 * 2014) with the boxes and the SAH leaf collapse. The tree equals
 * rt_lbvh_build_cpu's bit for bit (tests/test_gpu_bvh.c).
 *
 * Plain C, opaque handle, never exits; buffers are allocated at the first
 * build and grown only when the triangle count grows. */
#ifndef RT_LBVH_GPU_H
#define RT_LBVH_GPU_H

#include "bvh/lbvh.h"
#include "bvh/bvh_cpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RtLbvhGpu RtLbvhGpu;

typedef struct RtLbvhGpuStats {
    double ms;             /* the whole build, GPU time (events) */
    /* per step: only when the build was given stats (each launch timed), else 0 */
    double morton_ms;      /* boxes, scene box and codes */
    double sort_ms;        /* CUB radix sort */
    double climb_ms;       /* the radix tree climbed: boxes, leaf collapse, nodes */
    uint32_t launches;
    uint32_t triangles, valid; /* input triangles; non-degenerate ones (read back) */
} RtLbvhGpuStats;

/* Needs a CUDA device; RT_ERR_NO_DEVICE without one. */
RtStatus rt_lbvh_gpu_create(RtLbvhGpu **out, RtError *err);
void rt_lbvh_gpu_destroy(RtLbvhGpu *b);

/* Queues the build over tri_count triangles (d_verts, d_woop: device, 3
 * float4 per triangle; a triangle is degenerate by rt_tri_arrays_make's
 * rule, rt_woop_rows failing on its corners, which the builder applies to
 * d_verts; d_woop, NULL for none, is what the leaf triangles (leaf_woop)
 * are copied from) on the builder's stream, ordered after the
 * caller's earlier work on the default stream and before its later work
 * there, and returns at once. d_bvh then holds device pointers owned by b
 * (valid until the next build or destroy) and d_bounds, the device copy of
 * the root box; its node_count and index_count are the arrays' lengths
 * (tri_count - 1 nodes at least one, tri_count indices). stats (may be
 * NULL) waits for the build and reads its timings and counts, with each
 * step timed (CUDA events per launch); without it nothing waits and
 * rt_lbvh_gpu_build_finish reads them later. */
RtStatus rt_lbvh_gpu_build(RtLbvhGpu *b, const RtLbvhParams *p, const RtFloat4 *d_verts,
                           const RtFloat4 *d_woop, uint32_t tri_count, RtBvh *d_bvh,
                           RtLbvhGpuStats *stats, RtError *err);
/* The last build's GPU time, launches and counts, waiting for it (call it
 * after the frame's own work is queued, e.g. after the trace, as the kd
 * builder's rt_kd_gpu_build_finish). The per-step times are 0 unless the
 * build was given stats. */
RtStatus rt_lbvh_gpu_build_finish(RtLbvhGpu *b, RtLbvhGpuStats *stats, RtError *err);

/* Copies a device BVH to host arrays (free with rt_bvh_free); waits for the
 * build. The valid triangle count n (read back) decides the reachable part:
 * the copy holds the nodes rt_lbvh_build_cpu would (n - 1, 1 for n = 1, none
 * for n = 0), all index_count indices (the first n referenced) and the
 * bounds from d_bounds. */
RtStatus rt_lbvh_gpu_download(const RtLbvhGpu *b, const RtBvh *d_bvh, RtBvh *h_bvh, RtError *err);

#ifdef __cplusplus
}
#endif
#endif
