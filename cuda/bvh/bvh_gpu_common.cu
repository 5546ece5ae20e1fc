/* bvh_gpu_common.cu — what the GPU BVH builders share (bvh_gpu_common.cuh):
 * a builder's stream, events and counters, the start and end of a build,
 * lbvh.h's steps 1 and 2 as kernels (Karras 2012 §4: codes in the scene
 * box; CUB's radix sort) and the download. Every number from lbvh.h, so
 * the keys equal rt_bvh_sort_keys_cpu's. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/dispatch/dispatch_radix_sort.cuh>

#include "bvh/bvh_gpu_common.cuh"
#include "gpu/cuda_check.h"
#include "gpu/gpu.h"

/* Threads per block: a multiple of the warp size. */
static constexpr int kBlock = 256;
/* bvh_boxes's blocks per multiprocessor (its grid's bound: a block's
 * atomics serialise with every other block's in L2) */
static constexpr int kBoxBlocksPerSm = 4;

/* ==== step 2's sort ============================================================ */

/* CUB's onesweep radix sort of 32-bit pairs with another tile than its
 * sm_90 default (384 threads x 23 pairs): CUB's own policy hub for the rest,
 * the onesweep policy replaced. At the default tile a sort of a few hundred
 * thousand pairs runs fewer blocks a pass than the GPU has multiprocessors,
 * and a pass lasts as long as one tile's chain: smaller tiles spread it. */
using SortOffset = cub::detail::choose_offset_t<int>;
template <int THREADS, int ITEMS>
struct BvhSortHub {
    using Hub = cub::detail::radix::policy_hub<uint32_t, uint32_t, SortOffset>;
    struct Sizes { /* CUB's small-key sizes (keys under 4 bytes): unused here */
        static constexpr int threads = THREADS;
        static constexpr int items = ITEMS;
    };
    struct Policy900 : cub::ChainedPolicy<900, Policy900, Policy900>, Hub::template OnesweepSmallKeyTunedPolicy<Sizes> {
        using OnesweepPolicy = cub::AgentRadixSortOnesweepPolicy<THREADS, ITEMS, uint32_t, 1,
                                                                 cub::RADIX_RANK_MATCH_EARLY_COUNTS_ANY,
                                                                 cub::BLOCK_SCAN_RAKING_MEMOIZE,
                                                                 cub::RADIX_SORT_STORE_DIRECT, 8>;
    };
    using MaxPolicy = Policy900;
};

/* Pairs up to this many sort with the smaller tiles; above, CUB's default
 * tile is the faster (measured at 262K and 10M pairs: docs/bvh.md). */
static constexpr uint32_t kSmallSort = 1u << 20;

/* The (code, id) pairs keys.codes[0] / ids[0] -> codes[1] / ids[1] sorted by
 * all 32 bits of the code, stably (CUB's contract, as SortPairs); tmp NULL:
 * the storage size in bytes. */
static cudaError_t bvh_sort_pairs(void *tmp, size_t &bytes, const BvhKeysGpu *k, uint32_t n, cudaStream_t s)
{
    if (n > kSmallSort)
        return cub::DeviceRadixSort::SortPairs(tmp, bytes, k->codes[0], k->codes[1], k->ids[0], k->ids[1], (int)n, 0,
                                               32, s);
    cub::DoubleBuffer<uint32_t> keys(k->codes[0], k->codes[1]), vals(k->ids[0], k->ids[1]);
    return cub::DispatchRadixSort<cub::SortOrder::Ascending, uint32_t, uint32_t, SortOffset,
                                  cub::detail::identity_decomposer_t,
                                  BvhSortHub<256, 12>>::Dispatch(tmp, bytes, keys, vals, (SortOffset)n, 0, 32,
                                                                 false /* outputs in codes[1], ids[1] */, s);
}

/* ==== kernels: lbvh.h's steps 1 and 2 ========================================= */

/* Step 1 (Karras 2012 §4: the codes are taken in the scene's box).
 * Triangle i's box (empty when degenerate: kd_clip.h's rule), and per block
 * the scene box and the valid count, added with one atomic per value and
 * block (same-address atomics serialise in L2: kd_tri_box). A block loops
 * over tiles of kBlock triangles (the grid is bvh_boxes_grid's, a few
 * blocks per multiprocessor: fewer atomics); corners come in and boxes go
 * out through shared memory, consecutive threads moving consecutive words
 * (coalesce.cuh). An empty box is the identity of the min / max, so every
 * lane takes part. The rule is applied to the corners (rt_woop_rows,
 * rounded alike everywhere, as the Woop rows were made): cheaper than
 * reading the 48 bytes of rows that mark it. */
__global__ void __launch_bounds__(kBlock) bvh_boxes_kernel(const float4 *verts, uint32_t count, RtAabb *boxes,
                                                           BvhCounters *ctr)
{
    static_assert(sizeof(RtAabb) == 6 * sizeof(float), "a box is six words");
    __shared__ RtFloat4 sh[3 * kBlock]; /* a tile's corners, then its boxes' words */
    __shared__ int s_part[7][kBlock / 32];
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int x[7] = {INT_MAX, INT_MAX, INT_MAX, INT_MIN, INT_MIN, INT_MIN, 0};
    for (uint32_t base = blockIdx.x * kBlock; base < count; base += gridDim.x * kBlock) {
        const uint32_t items = count - base < (uint32_t)kBlock ? count - base : (uint32_t)kBlock;
        RtFloat4 v[3];
        rt_load3_at<kBlock>((const RtFloat4 *)verts, count, base, sh, v);
        float *w = (float *)sh;
        if (threadIdx.x < items) {
            const RtAabb box = lbvh_tri_box(v, NULL);
            const float f[6] = {box.lo.x, box.lo.y, box.lo.z, box.hi.x, box.hi.y, box.hi.z};
            for (int k = 0; k < 6; k++) w[6 * threadIdx.x + k] = f[k];
            if (!aabb_is_empty(box)) {
                for (int k = 0; k < 3; k++) x[k] = min(x[k], rt_f2ord(f[k]));
                for (int k = 3; k < 6; k++) x[k] = max(x[k], rt_f2ord(f[k]));
                x[6]++;
            }
        }
        __syncthreads();
        for (uint32_t j = threadIdx.x; j < 6 * items; j += kBlock) ((float *)boxes)[6 * (size_t)base + j] = w[j];
        __syncthreads();
    }
    for (int k = 0; k < 7; k++) {
        const int r = k < 3 ? __reduce_min_sync(~0u, x[k]) : (k < 6 ? __reduce_max_sync(~0u, x[k])
                                                                      : __reduce_add_sync(~0u, x[k]));
        if (lane == 0) s_part[k][warp] = r;
    }
    __syncthreads();
    if (warp != 0) return;
    const bool has = lane < kBlock / 32;
    for (int k = 0; k < 7; k++) {
        const int y = has ? s_part[k][lane] : (k < 3 ? INT_MAX : (k < 6 ? INT_MIN : 0));
        x[k] = k < 3 ? __reduce_min_sync(~0u, y) : (k < 6 ? __reduce_max_sync(~0u, y) : __reduce_add_sync(~0u, y));
    }
    if (lane != 0 || x[6] == 0) return;
    for (int k = 0; k < 3; k++) atomicMin(&ctr->scene[k], x[k]);
    for (int k = 3; k < 6; k++) atomicMax(&ctr->scene[k], x[k]);
    atomicAdd(&ctr->valid, (uint32_t)x[6]);
}

/* Step 2 (Karras 2012 §4): the 30-bit Morton code of each box's centre in
 * the scene box (RT_LBVH_INVALID, above every code, for an empty box: it
 * sorts last and is left out), and the ids the sort carries along; equal
 * codes are told apart by their sorted index later (lbvh_delta).
 * free_slots (may be NULL): count - 1 words set to all ones. */
__global__ void bvh_morton_kernel(const RtAabb *boxes, uint32_t count, const BvhCounters *ctr, uint32_t *codes,
                                  uint32_t *ids, uint32_t *free_slots)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    if (free_slots && i + 1u < count) free_slots[i] = 0xffffffffu;
    codes[i] = bvh_morton_code(boxes[i], ctr);
    ids[i] = i;
}

/* Aila & Laine 2009's leaf layout: entry k's triangle rows next to entry
 * k + 1's, so the walk reads a leaf's triangles without their ids
 * (bvh_layout.h, leaf_woop). A thread per entry of tri_index, every
 * input triangle (the degenerate ones too: the array's length is known on
 * the host, the valid count only on the device). */
__global__ void __launch_bounds__(kBlock) bvh_leaf_woop_kernel(const uint32_t *tri_index, const float4 *woop,
                                                               uint32_t count, RtFloat4 *leaf_woop)
{
    __shared__ RtFloat4 sh[3 * kBlock];
    bvh_leaf_rows_store<kBlock>(tri_index, woop, count, leaf_woop, sh);
}

/* The counters' values before a build: the empty scene box, nothing
 * counted, the empty root box. One block of 32 threads. */
__global__ void bvh_reset_kernel(BvhCounters *ctr)
{
    const int t = threadIdx.x;
    if (t < 3) ctr->scene[t] = rt_f2ord(INFINITY);
    else if (t < 6) ctr->scene[t] = rt_f2ord(-INFINITY);
    else if (t == 6) {
        ctr->valid = ctr->fallback = ctr->tree_root = ctr->cluster_depth = ctr->leaf_next = 0;
        ctr->top_leaves = ctr->top_refs = ctr->tri_valid = 0;
        ctr->root = aabb_empty();
    }
}

/* ==== host side ================================================================ */

RtStatus bvh_base_create(BvhGpuBase *b, const char *tag, RtError *err)
{
    memset(b, 0, sizeof *b);
    b->tag = tag;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        cudaGetLastError();
        return rt_fail(err, RT_ERR_NO_DEVICE, "%s: no CUDA device for the GPU builder", tag);
    }
    int dev = 0;
    CUDA_CHECK(err, cudaGetDevice(&dev));
    CUDA_CHECK(err, cudaDeviceGetAttribute(&b->sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_CHECK(err, cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
    CUDA_CHECK(err, cudaEventCreate(&b->ev_start));
    CUDA_CHECK(err, cudaEventCreate(&b->ev_end));
    CUDA_CHECK(err, cudaEventCreateWithFlags(&b->ev_input, cudaEventDisableTiming));
    CUDA_CHECK(err, cudaEventCreateWithFlags(&b->ev_done, cudaEventDisableTiming));
    CUDA_CHECK(err, cudaEventCreateWithFlags(&b->ev_copied, cudaEventDisableTiming));
    CUDA_CHECK(err, cudaMalloc((void **)&b->d_ctr, sizeof(BvhCounters)));
    CUDA_CHECK(err, cudaMallocHost((void **)&b->h_ctr, sizeof(BvhCounters)));
    b->keys.sized = UINT32_MAX;
    b->log.stream = b->stream;
    return RT_OK;
}

void bvh_keys_free(BvhKeysGpu *k)
{
    void *bufs[] = {k->boxes, k->codes[0], k->codes[1], k->ids[0], k->ids[1], k->cub_tmp};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) cudaFree(bufs[i]);
    memset(k, 0, sizeof *k);
    k->sized = UINT32_MAX;
}

void bvh_base_destroy(BvhGpuBase *b)
{
    bvh_keys_free(&b->keys);
    if (b->leaf_woop) cudaFree(b->leaf_woop);
    if (b->d_ctr) cudaFree(b->d_ctr);
    if (b->h_ctr) cudaFreeHost(b->h_ctr);
    cudaEvent_t ev[] = {b->ev_start, b->ev_end, b->ev_input, b->ev_done, b->ev_copied};
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
        if (ev[i]) cudaEventDestroy(ev[i]);
    rt_launch_graph_destroy(&b->graph);
    rt_launch_log_destroy(&b->log);
    if (b->stream) cudaStreamDestroy(b->stream);
    memset(b, 0, sizeof *b);
}

RtStatus bvh_gpu_alloc(const BvhGpuBase *b, void **p, size_t bytes, const char *what, uint32_t tris, RtError *err)
{
    char buf[160];
    snprintf(buf, sizeof buf, "the %s builder's %s for %u triangles", b->tag, what, tris);
    return rt_gpu_alloc(p, bytes, buf, err);
}

RtStatus bvh_gpu_alloc_all(const BvhGpuBase *b, const BvhAlloc *want, size_t count, uint32_t tris, RtError *err)
{
    for (size_t i = 0; i < count; i++) {
        RtStatus st = bvh_gpu_alloc(b, want[i].p, want[i].bytes, want[i].what, tris, err);
        if (st != RT_OK) return st;
    }
    return RT_OK;
}

RtStatus bvh_keys_reserve(BvhGpuBase *b, uint32_t n, RtError *err)
{
    BvhKeysGpu *k = &b->keys;
    RtStatus st;
    if (!k->boxes || n > k->cap) {
        bvh_keys_free(k);
        const size_t N = n ? n : 1;
        const BvhAlloc want[] = {
            {(void **)&k->boxes, N * sizeof(RtAabb), "triangle boxes"},
            {(void **)&k->codes[0], N * sizeof(uint32_t), "Morton codes"},
            {(void **)&k->codes[1], N * sizeof(uint32_t), "sorted Morton codes"},
            {(void **)&k->ids[0], N * sizeof(uint32_t), "triangle ids"},
            {(void **)&k->ids[1], N * sizeof(uint32_t), "sorted triangle ids"},
        };
        if ((st = bvh_gpu_alloc_all(b, want, sizeof want / sizeof want[0], n, err)) != RT_OK) {
            bvh_keys_free(k);
            return st;
        }
        k->cap = n;
    }
    if (k->sized == n) return RT_OK; /* CUB's need for n pairs, known */
    size_t bytes = 0;
    CUDA_CHECK(err, bvh_sort_pairs(NULL, bytes, k, n ? n : 1, b->stream));
    if (bytes > k->cub_bytes) {
        if (k->cub_tmp) cudaFree(k->cub_tmp);
        k->cub_bytes = 0;
        if ((st = bvh_gpu_alloc(b, &k->cub_tmp, bytes, "the radix sort's temporary storage", n, err)) != RT_OK)
            return st;
        k->cub_bytes = bytes;
    }
    k->sized = n;
    return RT_OK;
}

RtStatus bvh_build_begin(BvhGpuBase *b, uint32_t tri_count, int timed, RtError *err)
{
    if (tri_count > INT_MAX)
        return rt_fail(err, RT_ERR_UNSUPPORTED, "%s: %u triangles: the radix sort takes at most %d", b->tag,
                       tri_count, INT_MAX);
    rt_launch_log_reset(&b->log);
    b->log.timed = timed;
    /* the build reads what the caller's (legacy default) stream wrote (kd_gpu.cu's order) */
    CUDA_CHECK(err, cudaEventRecord(b->ev_input, cudaStreamLegacy));
    CUDA_CHECK(err, cudaStreamWaitEvent(b->stream, b->ev_input, 0));
    return RT_OK;
}

void bvh_launch_key(const BvhGpuBase *b, const RtFloat4 *verts, const RtFloat4 *woop, uint32_t tri_count,
                    BvhLaunchKey *key)
{
    memset(key, 0, sizeof *key);
    key->verts = (const float4 *)verts;
    key->woop = (const float4 *)woop;
    key->tri_count = tri_count;
    const BvhKeysGpu *k = &b->keys;
    const void *arrays[] = {k->boxes, k->codes[0], k->codes[1], k->ids[0],
                            k->ids[1], k->cub_tmp,  b->leaf_woop, b->d_ctr};
    static_assert(sizeof arrays == sizeof key->arrays, "the key holds every array");
    memcpy(key->arrays, arrays, sizeof arrays);
    key->cub_bytes = k->cub_bytes;
}

typedef struct BvhQueue {
    BvhGpuBase *b;
    RtStatus (*queue)(void *ctx, RtError *err);
    void *ctx;
} BvhQueue;

/* The counters' reset, then the builder's launches. */
static RtStatus bvh_queue_all(void *ctx, RtError *err)
{
    const BvhQueue *q = (const BvhQueue *)ctx;
    RtStatus st = rt_launch(&q->b->log, "bvh_reset", dim3(1), dim3(32), 0, bvh_reset_kernel, err, q->b->d_ctr);
    return st != RT_OK ? st : q->queue(q->ctx, err);
}

RtStatus bvh_build_run(BvhGpuBase *b, const void *key, size_t key_bytes, RtStatus (*queue)(void *ctx, RtError *err),
                       void *ctx, RtError *err)
{
    CUDA_CHECK(err, cudaEventRecord(b->ev_start, b->stream));
    BvhQueue q = {b, queue, ctx};
    RtStatus st = rt_launch_graph_run(&b->graph, &b->log, key, key_bytes, bvh_queue_all, &q, err);
    if (st != RT_OK) return st;
    CUDA_CHECK(err, cudaEventRecord(b->ev_end, b->stream));
    return RT_OK;
}

/* Step 2's sort through the launch log (named, counted, timed as one
 * launch): CUB's radix sort is stable and the ids enter ascending, so pairs
 * of equal codes keep their ids ascending, the CPU oracle's order. All 32
 * bits: RT_LBVH_INVALID must sort after every 30-bit code. */
static RtStatus bvh_sort(BvhGpuBase *b, uint32_t n, RtError *err)
{
    BvhKeysGpu *k = &b->keys;
    int entry, slot;
    RtStatus st = rt_launch_begin(&b->log, "bvh_sort", &entry, &slot, err);
    if (st != RT_OK) return st;
    size_t bytes = k->cub_bytes;
    CUDA_CHECK(err, bvh_sort_pairs(k->cub_tmp, bytes, k, n, b->stream));
    CUDA_CHECK_LAUNCH(err, "bvh_sort");
    return rt_launch_end(&b->log, entry, slot, err);
}

RtStatus bvh_boxes_queue(BvhGpuBase *b, const float4 *verts, uint32_t n, RtError *err)
{
    /* kBoxBlocksPerSm blocks a multiprocessor at most, each looping over
     * tiles */
    const dim3 box_grid = bvh_capped_grid(b, (n + kBlock - 1) / kBlock, kBoxBlocksPerSm);
    return rt_launch(&b->log, "bvh_boxes", box_grid, dim3(kBlock), 0, bvh_boxes_kernel, err, verts, n, b->keys.boxes,
                     b->d_ctr);
}

RtStatus bvh_sort_queue(BvhGpuBase *b, uint32_t count, RtError *err) { return count ? bvh_sort(b, count, err) : RT_OK; }

RtStatus bvh_keys_queue(BvhGpuBase *b, const float4 *verts, uint32_t n, uint32_t *free_slots, RtError *err)
{
    BvhKeysGpu *k = &b->keys;
    const dim3 block(kBlock), tris((n + kBlock - 1) / kBlock);
    RtStatus st;
    /* ---- 1. triangle boxes, scene box, valid count n ----------------------- */
    if ((st = bvh_boxes_queue(b, verts, n, err)) != RT_OK) return st;
    /* ---- 2. Morton codes of the box centres in the scene box, sorted ------- */
    if ((st = rt_launch(&b->log, "bvh_morton", tris, block, 0, bvh_morton_kernel, err, k->boxes, n, b->d_ctr,
                        k->codes[0], k->ids[0], free_slots)) != RT_OK)
        return st;
    return n ? bvh_sort(b, n, err) : RT_OK;
}

RtStatus bvh_leaf_woop_reserve(BvhGpuBase *b, uint32_t cap, uint32_t tri_count, RtError *err)
{
    if (tri_count <= b->leaf_cap && b->leaf_woop) return RT_OK;
    if (b->leaf_woop) cudaFree(b->leaf_woop);
    b->leaf_woop = NULL;
    b->leaf_cap = 0;
    RtStatus st = bvh_gpu_alloc(b, (void **)&b->leaf_woop, (size_t)(cap ? cap : 1) * 3 * sizeof(RtFloat4),
                                "leaf triangles", tri_count, err);
    if (st != RT_OK) return st;
    b->leaf_cap = cap;
    return RT_OK;
}

RtStatus bvh_leaf_woop_queue(BvhGpuBase *b, const uint32_t *tri_index, uint32_t tri_count, const float4 *woop,
                             RtError *err)
{
    if (!woop || !tri_count) return RT_OK;
    return rt_launch(&b->log, "bvh_leaf_woop", dim3((tri_count + kBlock - 1) / kBlock), dim3(kBlock), 0,
                     bvh_leaf_woop_kernel, err, tri_index, woop, tri_count, b->leaf_woop);
}

RtStatus bvh_build_end(BvhGpuBase *b, RtBvhNode *nodes, uint32_t *tri_index, uint32_t cap, uint32_t tri_count,
                       int has_woop, RtBvh *d_bvh, RtError *err)
{
    /* the caller's later work (the tracer) waits for the build, not for
     * the counters' copy to the host behind it (read by bvh_build_finish) */
    CUDA_CHECK(err, cudaEventRecord(b->ev_done, b->stream));
    CUDA_CHECK(err, cudaStreamWaitEvent(cudaStreamLegacy, b->ev_done, 0));
    CUDA_CHECK(err, cudaMemcpyAsync(b->h_ctr, b->d_ctr, sizeof(BvhCounters), cudaMemcpyDeviceToHost, b->stream));
    CUDA_CHECK(err, cudaEventRecord(b->ev_copied, b->stream));
    memset(d_bvh, 0, sizeof *d_bvh);
    d_bvh->nodes = nodes;
    d_bvh->tri_index = tri_index;
    d_bvh->node_count = tri_count > 1 ? tri_count - 1 : 1;
    d_bvh->index_count = tri_count;
    d_bvh->node_cap = cap > 1 ? cap - 1 : 1;
    d_bvh->index_cap = cap;
    d_bvh->bounds = aabb_empty(); /* known on the device only */
    d_bvh->d_bounds = &b->d_ctr->root;
    d_bvh->leaf_woop = has_woop ? b->leaf_woop : NULL;
    d_bvh->leaf_woop_cap = has_woop ? b->leaf_cap : 0;
    b->built_tris = tri_count;
    return RT_OK;
}

RtStatus bvh_build_finish(BvhGpuBase *b, double *ms, RtError *err)
{
    CUDA_CHECK(err, cudaEventSynchronize(b->ev_copied));
    RtStatus st = rt_launch_log_resolve(&b->log, err);
    if (st != RT_OK) return st;
    float f = 0.0f;
    CUDA_CHECK(err, cudaEventElapsedTime(&f, b->ev_start, b->ev_end));
    *ms = f;
    return RT_OK;
}

double bvh_entry_ms(RtLaunchLog *log, const char *name) { return log->entries[rt_launch_entry(log, name)].ms; }

/* ==== device -> host copy, for the tests and the oracle comparisons ============ */

RtStatus bvh_download(const BvhGpuBase *b, const RtBvh *d_bvh, RtBvh *h, RtError *err)
{
    memset(h, 0, sizeof *h);
    if (!d_bvh || !d_bvh->d_bounds)
        return rt_fail(err, RT_ERR_ARG, "%s: the download needs the builder and a BVH it built", b->tag);
    /* on the builder's stream: after the build */
    uint32_t n = 0;
    CUDA_CHECK(err, cudaMemcpyAsync(&n, &b->d_ctr->valid, sizeof n, cudaMemcpyDeviceToHost, b->stream));
    CUDA_CHECK(err, cudaMemcpyAsync(&h->bounds, d_bvh->d_bounds, sizeof h->bounds, cudaMemcpyDeviceToHost, b->stream));
    CUDA_CHECK(err, cudaStreamSynchronize(b->stream));
    /* the nodes the valid triangles make, as the CPU builders count them;
     * under a spatial-split top (H-PLOC's) the room its build took */
    const uint32_t nodes = d_bvh->split_refs ? d_bvh->node_count : (n == 0 ? 0u : (n > 1 ? n - 1 : 1u));
    const size_t node_bytes = (size_t)nodes * sizeof(RtBvhNode),
                 index_bytes = (size_t)d_bvh->index_count * sizeof(uint32_t);
    h->nodes = (RtBvhNode *)malloc(node_bytes ? node_bytes : 1);
    h->tri_index = (uint32_t *)malloc(index_bytes ? index_bytes : 1);
    RtStatus st = RT_OK;
    if (!h->nodes || !h->tri_index) {
        st = rt_fail(err, RT_ERR_OOM, "%s: out of host memory downloading the BVH", b->tag);
    } else {
        cudaError_t e = cudaMemcpy(h->nodes, d_bvh->nodes, node_bytes, cudaMemcpyDeviceToHost);
        if (e == cudaSuccess) e = cudaMemcpy(h->tri_index, d_bvh->tri_index, index_bytes, cudaMemcpyDeviceToHost);
        if (e != cudaSuccess)
            st = rt_fail(err, RT_ERR_CUDA, "%s: copying the BVH to the host: %s", b->tag, cudaGetErrorString(e));
    }
    if (st != RT_OK) {
        free(h->nodes);
        free(h->tri_index);
        memset(h, 0, sizeof *h);
        return st;
    }
    h->node_count = h->node_cap = nodes;
    h->index_count = h->index_cap = d_bvh->index_count;
    h->split_refs = d_bvh->split_refs;
    h->d_bounds = NULL;
    return RT_OK;
}
