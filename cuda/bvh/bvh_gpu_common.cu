/* bvh_gpu_common.cu — what the GPU BVH builders share (bvh_gpu_common.cuh):
 * a builder's stream, events and counters, the start and end of a build,
 * lbvh.h's steps 1 and 2 as kernels (Karras 2012 §4: codes in the scene
 * box; CUB's radix sort) and the download. Every number from lbvh.h, so
 * the keys equal rt_bvh_sort_keys_cpu's. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <cub/device/device_radix_sort.cuh>

#include "bvh/bvh_gpu_common.cuh"
#include "gpu/cuda_check.h"
#include "gpu/gpu.h"

/* Threads per block: a multiple of the warp size. */
static constexpr int kBlock = 256;

/* ==== kernels: lbvh.h's steps 1 and 2 ========================================= */

/* Step 1 (Karras 2012 §4: the codes are taken in the scene's box). Triangle
 * i's box (empty when degenerate: kd_clip.h's rule), and per block the
 * scene box and the valid count, added with one atomic per value and block
 * (same-address atomics serialise in L2: kd_tri_box). An empty box is the
 * identity of the min / max, so every lane takes part. The rule is applied
 * to the corners (rt_woop_rows, rounded alike everywhere, as the Woop rows
 * were made): cheaper than reading the 48 bytes of rows that mark it. */
__global__ void bvh_boxes_kernel(const float4 *verts, uint32_t count, RtAabb *boxes, BvhCounters *ctr)
{
    __shared__ int s_part[7][kBlock / 32];
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    RtAabb box = aabb_empty();
    if (i < count) {
        RtFloat4 v[3];
        for (int k = 0; k < 3; k++) v[k] = bvh_load_f4(verts + 3 * (size_t)i + k);
        box = lbvh_tri_box(v, NULL);
        boxes[i] = box;
    }
    int x[7] = {rt_f2ord(box.lo.x), rt_f2ord(box.lo.y), rt_f2ord(box.lo.z), rt_f2ord(box.hi.x),
                rt_f2ord(box.hi.y), rt_f2ord(box.hi.z), !aabb_is_empty(box)};
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
    RtAabb scene;
    scene.lo = v3(rt_ord2f(ctr->scene[0]), rt_ord2f(ctr->scene[1]), rt_ord2f(ctr->scene[2]));
    scene.hi = v3(rt_ord2f(ctr->scene[3]), rt_ord2f(ctr->scene[4]), rt_ord2f(ctr->scene[5]));
    codes[i] = lbvh_morton(boxes[i], scene, lbvh_scale(scene));
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
    CUDA_CHECK(err, cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
    CUDA_CHECK(err, cudaEventCreate(&b->ev_start));
    CUDA_CHECK(err, cudaEventCreate(&b->ev_end));
    CUDA_CHECK(err, cudaEventCreateWithFlags(&b->ev_input, cudaEventDisableTiming));
    CUDA_CHECK(err, cudaEventCreateWithFlags(&b->ev_done, cudaEventDisableTiming));
    CUDA_CHECK(err, cudaMalloc((void **)&b->d_ctr, sizeof(BvhCounters)));
    CUDA_CHECK(err, cudaMallocHost((void **)&b->h_init, sizeof(BvhCounters)));
    CUDA_CHECK(err, cudaMallocHost((void **)&b->h_ctr, sizeof(BvhCounters)));
    memset(b->h_init, 0, sizeof(BvhCounters));
    for (int a = 0; a < 3; a++) {
        b->h_init->scene[a] = rt_f2ord(INFINITY);
        b->h_init->scene[3 + a] = rt_f2ord(-INFINITY);
    }
    b->h_init->root = aabb_empty();
    b->log.stream = b->stream;
    return RT_OK;
}

void bvh_keys_free(BvhKeysGpu *k)
{
    void *bufs[] = {k->boxes, k->codes[0], k->codes[1], k->ids[0], k->ids[1], k->cub_tmp};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) cudaFree(bufs[i]);
    memset(k, 0, sizeof *k);
}

void bvh_base_destroy(BvhGpuBase *b)
{
    bvh_keys_free(&b->keys);
    if (b->leaf_woop) cudaFree(b->leaf_woop);
    if (b->d_ctr) cudaFree(b->d_ctr);
    if (b->h_init) cudaFreeHost(b->h_init);
    if (b->h_ctr) cudaFreeHost(b->h_ctr);
    cudaEvent_t ev[] = {b->ev_start, b->ev_end, b->ev_input, b->ev_done};
    for (int i = 0; i < 4; i++)
        if (ev[i]) cudaEventDestroy(ev[i]);
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
    size_t bytes = 0;
    CUDA_CHECK(err, cub::DeviceRadixSort::SortPairs(NULL, bytes, k->codes[0], k->codes[1], k->ids[0], k->ids[1],
                                                    (int)(n ? n : 1), 0, 32, b->stream));
    if (bytes > k->cub_bytes) {
        if (k->cub_tmp) cudaFree(k->cub_tmp);
        k->cub_bytes = 0;
        if ((st = bvh_gpu_alloc(b, &k->cub_tmp, bytes, "the radix sort's temporary storage", n, err)) != RT_OK)
            return st;
        k->cub_bytes = bytes;
    }
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
    CUDA_CHECK(err, cudaEventRecord(b->ev_start, b->stream));
    CUDA_CHECK(err, cudaMemcpyAsync(b->d_ctr, b->h_init, sizeof(BvhCounters), cudaMemcpyHostToDevice, b->stream));
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
    CUDA_CHECK(err, cub::DeviceRadixSort::SortPairs(k->cub_tmp, bytes, k->codes[0], k->codes[1], k->ids[0],
                                                    k->ids[1], (int)n, 0, 32, b->stream));
    CUDA_CHECK_LAUNCH(err, "bvh_sort");
    return rt_launch_end(&b->log, entry, slot, err);
}

RtStatus bvh_keys_queue(BvhGpuBase *b, const float4 *verts, uint32_t n, uint32_t *free_slots, RtError *err)
{
    BvhKeysGpu *k = &b->keys;
    const dim3 block(kBlock), tris((n + kBlock - 1) / kBlock);
    RtStatus st;
    /* ---- 1. triangle boxes, scene box, valid count n ----------------------- */
    if ((st = rt_launch(&b->log, "bvh_boxes", tris, block, 0, bvh_boxes_kernel, err, verts, n, k->boxes,
                        b->d_ctr)) != RT_OK)
        return st;
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

RtStatus bvh_build_end(BvhGpuBase *b, RtBvhNode *nodes, uint32_t *tri_index, uint32_t cap, uint32_t tri_count,
                       const float4 *woop, int leaves_copied, RtBvh *d_bvh, RtError *err)
{
    /* ---- the leaf triangles, in the tree's order ------------------------------ */
    if (woop) {
        RtStatus st = bvh_leaf_woop_reserve(b, cap, tri_count, err);
        if (st != RT_OK) return st;
    }
    if (woop && tri_count && !leaves_copied) {
        RtStatus st = rt_launch(&b->log, "bvh_leaf_woop", dim3((tri_count + kBlock - 1) / kBlock), dim3(kBlock), 0,
                                bvh_leaf_woop_kernel, err, (const uint32_t *)tri_index, woop, tri_count,
                                b->leaf_woop);
        if (st != RT_OK) return st;
    }
    CUDA_CHECK(err, cudaEventRecord(b->ev_end, b->stream));
    CUDA_CHECK(err, cudaMemcpyAsync(b->h_ctr, b->d_ctr, sizeof(BvhCounters), cudaMemcpyDeviceToHost, b->stream));
    /* ... and the caller's later work (the tracer) waits for the build */
    CUDA_CHECK(err, cudaEventRecord(b->ev_done, b->stream));
    CUDA_CHECK(err, cudaStreamWaitEvent(cudaStreamLegacy, b->ev_done, 0));
    memset(d_bvh, 0, sizeof *d_bvh);
    d_bvh->nodes = nodes;
    d_bvh->tri_index = tri_index;
    d_bvh->node_count = tri_count > 1 ? tri_count - 1 : 1;
    d_bvh->index_count = tri_count;
    d_bvh->node_cap = cap > 1 ? cap - 1 : 1;
    d_bvh->index_cap = cap;
    d_bvh->bounds = aabb_empty(); /* known on the device only */
    d_bvh->d_bounds = &b->d_ctr->root;
    d_bvh->leaf_woop = woop ? b->leaf_woop : NULL;
    d_bvh->leaf_woop_cap = woop ? b->leaf_cap : 0;
    b->built_tris = tri_count;
    return RT_OK;
}

RtStatus bvh_build_finish(BvhGpuBase *b, double *ms, RtError *err)
{
    CUDA_CHECK(err, cudaEventSynchronize(b->ev_done));
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
    /* the nodes the valid triangles make, as the CPU builders count them */
    const uint32_t nodes = n == 0 ? 0u : (n > 1 ? n - 1 : 1u);
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
    h->d_bounds = NULL;
    return RT_OK;
}
