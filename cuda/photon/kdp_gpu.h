/* kdp_gpu.h — the balanced point k-d tree built on the GPU (issue 23):
 * Brown 2015's O(kn log n) algorithm as seed 004 (Robinson's KdTreeGPU)
 * runs it — presort k reference arrays by super key, remove duplicates by
 * warp compaction, then breadth first, level by level: the median of each
 * range in the split coordinate's array becomes the node, the other arrays
 * are partitioned around it by warp compaction (__ballot_sync/__popc),
 * with kernels chosen by the level's range size. The tree is the layout of
 * photon/kdtree_points.h and equals rt_kdp_build_cpu's byte for byte
 * (tests/test_gpu_kdpoints.c). Batch kNN and radius queries run
 * kdp_knn_search / kdp_radius_search in a kernel. docs/photon.md.
 *
 * Plain C, opaque handle, never exits. The workspace's device buffers are
 * allocated at the first build and grown only when a build needs more, so
 * a photon map rebuilt every frame allocates nothing once sizes settle. */
#ifndef RT_KDP_GPU_H
#define RT_KDP_GPU_H

#include "photon/kdtree_points.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RtKdpGpu RtKdpGpu;

typedef struct RtKdpGpuParams {
    /* A level whose ranges times partitioned arrays reach this number gives
     * each range a warp (or 4, 8 or 16 lanes of one when the ranges are
     * that short); below it, each range is cut into chunks of
     * RT_KDP_GPU_CHUNK references spread over many warps (seed 004: "the
     * first partitioner handles the upper levels of the tree, where the
     * number of arrays to partition is less than the number of running
     * warps"). 0: the device's resident warps (SMs x max threads per SM /
     * 32). 1 forces a warp per range on every level, UINT32_MAX chunks on
     * every level (the tests run both). */
    uint32_t warp_ranges_min;
    /* GPUs the build runs on: 1 (0 means 1), or 2: seed 004's two-GPU
     * variant, the current device and the next one (its "Multiple GPU
     * Extensions": each GPU presorts half the points, Tanasic et al.'s
     * swap and merge gives GPU 0 the lower and GPU 1 the upper half of the
     * order, and after the root each GPU builds one subtree; the seed
     * reports 1.9x over one GPU). The tree is the same, gathered on the
     * current device; create fails with RT_ERR_NO_DEVICE where fewer than
     * 2 devices are present. */
    uint32_t devices;
} RtKdpGpuParams;

/* References one warp handles per chunk of the many-warps partition and of
 * the duplicate removal: 8 ballots of 32. */
#define RT_KDP_GPU_CHUNK 256u

static inline RtKdpGpuParams rt_kdp_gpu_params_default(void)
{
    RtKdpGpuParams p;
    p.warp_ranges_min = 0;
    p.devices = 1;
    return p;
}

/* A workspace on the current device (devices = 2: and on the next one,
 * with peer access between the two where they allow it); params NULL =
 * the defaults. RT_ERR_NO_DEVICE without a CUDA device, without a second
 * one for devices = 2, or without CUDA in this build; RT_ERR_ARG for
 * devices above 2. */
RtStatus rt_kdp_gpu_create(RtKdpGpu **out, const RtKdpGpuParams *params, RtError *err);
void rt_kdp_gpu_destroy(RtKdpGpu *g);

/* Builds the tree of the n points d_pts[i * dim .. i * dim + dim) (DEVICE
 * memory, 1 <= dim <= RT_KDP_MAX_DIM) on `stream` (a cudaStream_t; NULL:
 * the default stream). *tree gets the host-side dim, count, root and depth
 * and DEVICE pointers nodes and coords owned by g, valid until g's next
 * build or destroy: a kernel may take the RtKdpTree by value and call
 * kdp_knn_search. The build waits for the stream twice (the presort's tie
 * flags, then the unique count, which sizes the levels); the tree is
 * complete when the function returns only in stream order (later work on
 * `stream` sees it). st (may be NULL): input, rejected, duplicates,
 * resorted and the stage times (CUDA events): sort_ms (reject + presort),
 * dedup_ms, build_ms (medians and partitions). Errors: RT_ERR_ARG (dim,
 * d_pts NULL with n > 0, n = UINT32_MAX), RT_ERR_OOM, RT_ERR_CUDA. */
RtStatus rt_kdp_gpu_build(RtKdpGpu *g, const float *d_pts, uint32_t n, uint32_t dim, void *stream,
                          RtKdpTree *tree, RtKdpStats *st, RtError *err);

/* How a kNN batch walks the tree; both give the same neighbours. */
typedef enum RtKdpWalk {
    RT_KDP_WALK_LANE = 0, /* a walk per query (kdp_knn_search): for queries in any order */
    RT_KDP_WALK_WARP = 1  /* each warp's 32 queries walk together (kdp_warp.cuh): for queries
                           * ordered so that neighbours in the array are near in space */
} RtKdpWalk;

/* For each of the nq queries d_queries[i * dim ..] (device), the kn <= 64
 * nearest points with d2 <= r2 (r2 = INFINITY: plain kNN), sorted by (d2,
 * point): d_hits[i * kn ..] (device, nq * kn), d_counts[i] how many
 * (fewer when the tree or the radius holds fewer). tree: as the build
 * returned it (device pointers). Queued on stream; returns at once.
 * RT_ERR_ARG: kn outside 1..64, walk not one of RtKdpWalk. */
RtStatus rt_kdp_gpu_knn(RtKdpGpu *g, const RtKdpTree *tree, const float *d_queries, uint32_t nq, uint32_t kn,
                        float r2, RtKdpWalk walk, RtKdpHit *d_hits, uint32_t *d_counts, void *stream, RtError *err);

/* For each query, every point with d2 <= r2, at most max_hits of them,
 * sorted by (d2, point), into d_hits[i * max_hits ..]; d_counts[i] is how
 * many there are in all: above max_hits, the query was truncated and
 * d_hits holds the first max_hits the walk found (sorted), not the
 * nearest. Queued on stream; returns at once. */
RtStatus rt_kdp_gpu_radius(RtKdpGpu *g, const RtKdpTree *tree, const float *d_queries, uint32_t nq, float r2,
                           uint32_t max_hits, RtKdpHit *d_hits, uint32_t *d_counts, void *stream, RtError *err);

/* Copies a device tree (as the build returned it) into host arrays (free
 * with rt_kdp_free); waits for the device. */
RtStatus rt_kdp_gpu_download(const RtKdpTree *dev, RtKdpTree *host, RtError *err);

#ifdef __cplusplus
}
#endif
#endif
