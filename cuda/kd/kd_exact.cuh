/* kd_exact.cuh — the exact per-level SAH builder (Kolodzey 2014, seed 003),
 * the second GPU kd-tree builder beside the Zhou/Chang pipeline: what
 * kd_gpu.cu's driver calls when RtKdGpuParams.builder is
 * RT_KD_GPU_BUILDER_EXACT. docs/kd_gpu.md ("The exact SAH builder")
 * describes the algorithm. */
#ifndef RT_KD_EXACT_CUH
#define RT_KD_EXACT_CUH

#include <cuda_runtime.h>

#include "kd/kd_gpu.h"
#include "gpu/launch.h"

typedef struct KdExact KdExact;

RtStatus kd_exact_create(KdExact **out, RtError *err);
void kd_exact_destroy(KdExact *x);

/* Builds the tree over n triangles on `stream` (every kernel counted in
 * log) and waits for it. The first build of a scene (and every build with a
 * timed log) reads each level's sizes back to size the next; later builds
 * with the same count and rules run all levels as one CUDA graph sized
 * from that one and wait once (one built again host-driven when it does
 * not fit: stats.rebuilds 1). *tree receives device arrays owned by x
 * (valid until its next build), the counts and the bounds; stats gets the
 * tree's sizes, the levels (large_levels), the round trips and the GPU
 * time (gpu_ms). */
RtStatus kd_exact_build(KdExact *x, const RtKdGpuParams *p, const float4 *verts, const float4 *woop, uint32_t n,
                        cudaStream_t stream, RtLaunchLog *log, RtKdTree *tree, RtKdGpuStats *stats, RtError *err);

#endif
