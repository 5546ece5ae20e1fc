/* lbvh_gpu.cu — the GPU LBVH builder (lbvh_gpu.h): Karras 2012, "Maximizing
 * parallelism in the construction of BVHs, octrees, and k-d trees" (seed
 * 002), every number from lbvh.h so the tree is rt_lbvh_build_cpu's bit
 * for bit. The host driver, rt_lbvh_gpu_build, queues on the builder's
 * stream:
 *
 *   1. a box per triangle, the scene box, the valid count    (lbvh_boxes)
 *   2. a Morton code per triangle, ids 0 .. N-1               (lbvh_morton)
 *   3. sort the (code, id) pairs                               (CUB radix sort)
 *   4. the radix tree: ranges, splits, parents (Fig. 4)        (lbvh_tree)
 *   5. bottom-up: boxes, SAH leaf collapse, output nodes       (lbvh_bottom_up)
 *
 * The valid count n (non-degenerate triangles, whose codes sort first)
 * stays on the device: steps 4 and 5 run a thread per triangle and read n
 * there, so the host queues the whole build without waiting; only stats
 * and rt_lbvh_gpu_download read it back. Buffers are allocated at the first
 * build and grown only when the triangle count grows. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <cub/device/device_radix_sort.cuh>

#include "bvh/lbvh_gpu.h"
#include "gpu/cuda_check.h"
#include "gpu/launch.h"

/* Threads per block of every kernel: a multiple of the warp size. */
static constexpr int kBlock = 256;

/* What the kernels reduce and count; reset before every build (h_init). */
typedef struct LbvhCounters {
    int scene[6];   /* the scene box, lo then hi, as order-preserving ints (lbvh_f2i) */
    uint32_t valid; /* n: the non-degenerate triangles */
    uint32_t pad;
    RtAabb root;    /* the root's box, the tree's d_bounds: empty unless step 5 writes it */
} LbvhCounters;

struct RtLbvhGpu {
    cudaStream_t stream;
    RtLaunchLog log;
    cudaEvent_t ev_start, ev_end;  /* the build's GPU time (stats) */
    cudaEvent_t ev_input, ev_done; /* the caller's stream -> the build -> the caller's stream */
    uint32_t built_tris;           /* the last build's input (rt_lbvh_gpu_build_finish) */
    LbvhCounters *d_ctr, *h_init, *h_ctr;
    /* per-build arrays, for `cap` triangles */
    uint32_t cap;
    RtAabb *boxes;           /* by triangle id */
    uint32_t *codes[2];      /* Morton codes: unsorted, sorted */
    uint32_t *ids[2];        /* triangle ids: 0 .. N-1, sorted (= tri_index) */
    uint2 *splits;           /* internal node: (split, 1 left child is a leaf | 2 right child is) */
    uint32_t *parent_node;   /* internal node -> its parent */
    uint32_t *parent_leaf;   /* sorted position -> its parent */
    uint32_t *flags;         /* internal node: children finished (0, 1; the second finishes it) */
    uint4 *subs;             /* internal node: its RtLbvhSub, 3 uint4 (lbvh_sub_store) */
    RtBvhNode *nodes;
    void *cub_tmp;
    size_t cub_bytes;
};

/* ---- helpers ---------------------------------------------------------------- */

/* Floats ordered as ints, for atomicMin / atomicMax on the scene box
 * (kd_gpu_internal.cuh's kd_f2i): exact, so the reduction's order does not
 * matter and the box equals the CPU's union of the triangle boxes. */
__host__ __device__ __forceinline__ int lbvh_f2i(float f)
{
    int i;
    memcpy(&i, &f, sizeof i);
    return i >= 0 ? i : i ^ 0x7fffffff;
}
__device__ __forceinline__ float lbvh_i2f(int i) { return __int_as_float(i >= 0 ? i : i ^ 0x7fffffff); }

__device__ __forceinline__ RtFloat4 lbvh_load_f4(const float4 *p)
{
    const float4 f = *p;
    return f4(f.x, f.y, f.z, f.w);
}

/* A finished subtree as its parent reads it: the bits of RtLbvhSub in three
 * uint4, read through L2 (__ldcg) since another block may have written them
 * in this launch (L1 is not coherent between multiprocessors). */
__device__ __forceinline__ void lbvh_sub_store(uint4 *subs, uint32_t node, const RtLbvhSub &s)
{
    uint4 *d = subs + 3 * (size_t)node;
    d[0] = make_uint4(__float_as_uint(s.box.lo.x), __float_as_uint(s.box.lo.y), __float_as_uint(s.box.lo.z),
                      __float_as_uint(s.box.hi.x));
    d[1] = make_uint4(__float_as_uint(s.box.hi.y), __float_as_uint(s.box.hi.z), __float_as_uint(s.cost), s.first);
    d[2] = make_uint4(s.count, s.node, (uint32_t)s.as_leaf, 0u);
}
__device__ __forceinline__ RtLbvhSub lbvh_sub_load(const uint4 *subs, uint32_t node)
{
    const uint4 a = __ldcg(subs + 3 * (size_t)node), b = __ldcg(subs + 3 * (size_t)node + 1),
                c = __ldcg(subs + 3 * (size_t)node + 2);
    RtLbvhSub s;
    s.box.lo = v3(__uint_as_float(a.x), __uint_as_float(a.y), __uint_as_float(a.z));
    s.box.hi = v3(__uint_as_float(a.w), __uint_as_float(b.x), __uint_as_float(b.y));
    s.cost = __uint_as_float(b.z);
    s.first = b.w;
    s.count = c.x;
    s.node = c.y;
    s.as_leaf = (int)c.z;
    return s;
}

/* One 64-byte node in four 16-byte stores. */
__device__ __forceinline__ void lbvh_node_store(RtBvhNode *dst, const RtBvhNode &n)
{
    float4 *d = reinterpret_cast<float4 *>(dst);
    for (int k = 0; k < 3; k++) d[k] = make_float4(n.b[k].x, n.b[k].y, n.b[k].z, n.b[k].w);
    reinterpret_cast<uint4 *>(dst)[3] = make_uint4(n.child[0], n.child[1], n.count[0], n.count[1]);
}

/* ==== kernels: Karras 2012, a kernel per step ================================ */

/* Step 1 (Karras 2012 §4: the codes are taken in the scene's box). Triangle
 * i's box (empty when degenerate: kd_clip.h's rule), and per block the
 * scene box and the valid count, added with one atomic per
 * value and block (same-address atomics serialise in L2: kd_tri_box). An
 * empty box is the identity of the min / max, so every lane takes part. */
__global__ void lbvh_boxes_kernel(const float4 *verts, const float4 *woop, uint32_t count, RtAabb *boxes,
                                  LbvhCounters *ctr)
{
    __shared__ int s_part[7][kBlock / 32];
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    RtAabb box = aabb_empty();
    if (i < count) {
        RtFloat4 v[3], w[3];
        for (int k = 0; k < 3; k++) {
            v[k] = lbvh_load_f4(verts + 3 * (size_t)i + k);
            if (woop) w[k] = lbvh_load_f4(woop + 3 * (size_t)i + k);
        }
        box = lbvh_tri_box(v, woop ? w : NULL);
        boxes[i] = box;
    }
    int x[7] = {lbvh_f2i(box.lo.x), lbvh_f2i(box.lo.y), lbvh_f2i(box.lo.z), lbvh_f2i(box.hi.x),
                lbvh_f2i(box.hi.y), lbvh_f2i(box.hi.z), !aabb_is_empty(box)};
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
 * codes are told apart by their sorted index later (lbvh_delta). */
__global__ void lbvh_morton_kernel(const RtAabb *boxes, uint32_t count, const LbvhCounters *ctr, uint32_t *codes,
                                   uint32_t *ids)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    RtAabb scene;
    scene.lo = v3(lbvh_i2f(ctr->scene[0]), lbvh_i2f(ctr->scene[1]), lbvh_i2f(ctr->scene[2]));
    scene.hi = v3(lbvh_i2f(ctr->scene[3]), lbvh_i2f(ctr->scene[4]), lbvh_i2f(ctr->scene[5]));
    codes[i] = lbvh_morton(boxes[i], scene, lbvh_scale(scene));
    ids[i] = i;
}

/* Step 4 (Karras 2012 §3, Fig. 4): internal node i of the n - 1 finds its key range
 * and split on its own (lbvh_node_range), so every node is built at once;
 * it records the split and itself as its children's parent, and clears its
 * flag for step 5. Threads from n - 1 on (n read here: degenerate
 * triangles' codes sort last) have no node. */
__global__ void lbvh_tree_kernel(const uint32_t *codes, const LbvhCounters *ctr, uint2 *splits,
                                 uint32_t *parent_node, uint32_t *parent_leaf, uint32_t *flags)
{
    const uint32_t n = ctr->valid, i = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < 2 || i >= n - 1) return;
    uint32_t first, last, split;
    lbvh_node_range(codes, n, i, &first, &last, &split);
    /* a child of one key is a leaf: left [first, split], right [split + 1, last] */
    const uint32_t left_leaf = first == split, right_leaf = split + 1 == last;
    (left_leaf ? parent_leaf : parent_node)[split] = i;
    (right_leaf ? parent_leaf : parent_node)[split + 1] = i;
    splits[i] = make_uint2(split, left_leaf | right_leaf << 1);
    flags[i] = 0;
}

/* Step 5 (Karras 2012 §4, bounding boxes): a thread per leaf climbs towards the root; at each
 * node an atomic flag stops the first child's thread and lets the second
 * through, which then has both children finished and writes the node
 * (lbvh_finish_node: both child boxes, the SAH leaf collapse). Memory
 * order: a thread stores its node's RtLbvhSub and fences before the
 * parent's atomic (release); the thread that sees the flag set fences
 * after it (acquire) and reads the sibling's through L2. Without internal
 * nodes (n < 2) thread 0 writes the root: the one triangle and an empty
 * leaf, or two empty leaves, so a walk of any build finds what it holds. */
__global__ void lbvh_bottom_up_kernel(const uint32_t *tri_index, const RtAabb *boxes, LbvhCounters *ctr,
                                      const uint2 *splits, const uint32_t *parent_node, const uint32_t *parent_leaf,
                                      uint32_t *flags, uint4 *subs, RtBvhNode *nodes, RtLbvhParams p)
{
    const uint32_t n = ctr->valid, pos = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < 2) {
        if (pos != 0) return;
        RtBvhNode root;
        if (n == 1) {
            lbvh_single_root(boxes[tri_index[0]], &root);
            ctr->root = boxes[tri_index[0]];
        } else { /* the root box stays the reset's empty one */
            bvh_set_child(&root, 0, aabb_empty(), 1, 0u, 0u);
            bvh_set_child(&root, 1, aabb_empty(), 1, 0u, 0u);
        }
        lbvh_node_store(&nodes[0], root);
        return;
    }
    if (pos >= n) return;
    RtLbvhSub own = lbvh_leaf_sub(boxes[tri_index[pos]], pos, &p);
    uint32_t node = parent_leaf[pos];
    for (;;) {
        if (atomicAdd(&flags[node], 1u) == 0) return; /* the sibling's thread finishes node */
        __threadfence();
        const uint2 sp = splits[node];
        const bool own_left = own.first <= sp.x; /* the left child covers [first, split] */
        const uint32_t sib = own_left ? sp.x + 1 : sp.x;
        const bool sib_leaf = (sp.y >> (own_left ? 1 : 0)) & 1u;
        const RtLbvhSub other = sib_leaf ? lbvh_leaf_sub(boxes[tri_index[sib]], sib, &p) : lbvh_sub_load(subs, sib);
        RtBvhNode out;
        own = own_left ? lbvh_finish_node(node, own, other, &p, &out) : lbvh_finish_node(node, other, own, &p, &out);
        lbvh_node_store(&nodes[node], out);
        if (node == 0) {
            ctr->root = own.box;
            return;
        }
        lbvh_sub_store(subs, node, own);
        __threadfence(); /* the sub reaches L2 before the parent's flag says it is there */
        node = parent_node[node];
    }
}

/* ==== host side ============================================================== */

extern "C" RtStatus rt_lbvh_gpu_create(RtLbvhGpu **out, RtError *err)
{
    *out = NULL;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        cudaGetLastError();
        return rt_fail(err, RT_ERR_NO_DEVICE, "LBVH: no CUDA device for the GPU LBVH builder");
    }
    RtLbvhGpu *b = (RtLbvhGpu *)calloc(1, sizeof *b);
    if (!b) return rt_fail(err, RT_ERR_OOM, "LBVH: out of host memory");
    *out = b;
    CUDA_CHECK(err, cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
    CUDA_CHECK(err, cudaEventCreate(&b->ev_start));
    CUDA_CHECK(err, cudaEventCreate(&b->ev_end));
    CUDA_CHECK(err, cudaEventCreateWithFlags(&b->ev_input, cudaEventDisableTiming));
    CUDA_CHECK(err, cudaEventCreateWithFlags(&b->ev_done, cudaEventDisableTiming));
    CUDA_CHECK(err, cudaMalloc((void **)&b->d_ctr, sizeof(LbvhCounters)));
    CUDA_CHECK(err, cudaMallocHost((void **)&b->h_init, sizeof(LbvhCounters)));
    CUDA_CHECK(err, cudaMallocHost((void **)&b->h_ctr, sizeof(LbvhCounters)));
    memset(b->h_init, 0, sizeof(LbvhCounters));
    for (int a = 0; a < 3; a++) {
        b->h_init->scene[a] = lbvh_f2i(INFINITY);
        b->h_init->scene[3 + a] = lbvh_f2i(-INFINITY);
    }
    b->h_init->root = aabb_empty();
    b->log.stream = b->stream;
    return RT_OK;
}

static void lbvh_free_buffers(RtLbvhGpu *b)
{
    void *bufs[] = {b->boxes, b->codes[0], b->codes[1], b->ids[0], b->ids[1], b->splits,
                    b->parent_node, b->parent_leaf, b->flags, b->subs, b->nodes, b->cub_tmp};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) cudaFree(bufs[i]);
    b->boxes = NULL, b->codes[0] = b->codes[1] = NULL, b->ids[0] = b->ids[1] = NULL, b->splits = NULL;
    b->parent_node = b->parent_leaf = b->flags = NULL, b->subs = NULL, b->nodes = NULL, b->cub_tmp = NULL;
    b->cap = 0;
    b->cub_bytes = 0;
}

extern "C" void rt_lbvh_gpu_destroy(RtLbvhGpu *b)
{
    if (!b) return;
    lbvh_free_buffers(b);
    if (b->d_ctr) cudaFree(b->d_ctr);
    if (b->h_init) cudaFreeHost(b->h_init);
    if (b->h_ctr) cudaFreeHost(b->h_ctr);
    cudaEvent_t ev[] = {b->ev_start, b->ev_end, b->ev_input, b->ev_done};
    for (int i = 0; i < 4; i++)
        if (ev[i]) cudaEventDestroy(ev[i]);
    rt_launch_log_destroy(&b->log);
    if (b->stream) cudaStreamDestroy(b->stream);
    free(b);
}

static RtStatus lbvh_malloc(void **p, size_t bytes, const char *what, uint32_t tris, RtError *err)
{
    cudaError_t e = cudaMalloc(p, bytes);
    if (e == cudaSuccess) return RT_OK;
    cudaGetLastError(); /* not sticky: leave no error behind for the next launch check */
    *p = NULL;
    return rt_fail(err, e == cudaErrorMemoryAllocation ? RT_ERR_OOM : RT_ERR_CUDA,
                   "LBVH: cannot allocate %s for %u triangles (%zu bytes of device memory): %s", what, tris,
                   bytes, cudaGetErrorString(e));
}

/* The arrays for n triangles (kept when they hold as many already: a scene
 * keeps its count frame after frame, so this allocates at the first build)
 * and CUB's temporary storage for sorting n pairs. */
static RtStatus lbvh_reserve(RtLbvhGpu *b, uint32_t n, RtError *err)
{
    RtStatus st;
    if (!b->boxes || n > b->cap) {
        lbvh_free_buffers(b);
        const size_t N = n ? n : 1, inner = N > 1 ? N - 1 : 1;
        struct { void **p; size_t bytes; const char *what; } want[] = {
            {(void **)&b->boxes, N * sizeof(RtAabb), "triangle boxes"},
            {(void **)&b->codes[0], N * sizeof(uint32_t), "Morton codes"},
            {(void **)&b->codes[1], N * sizeof(uint32_t), "sorted Morton codes"},
            {(void **)&b->ids[0], N * sizeof(uint32_t), "triangle ids"},
            {(void **)&b->ids[1], N * sizeof(uint32_t), "tri_index"},
            {(void **)&b->splits, inner * sizeof(uint2), "node splits"},
            {(void **)&b->parent_node, inner * sizeof(uint32_t), "node parents"},
            {(void **)&b->parent_leaf, N * sizeof(uint32_t), "leaf parents"},
            {(void **)&b->flags, inner * sizeof(uint32_t), "node flags"},
            {(void **)&b->subs, 3 * inner * sizeof(uint4), "finished subtrees"},
            {(void **)&b->nodes, inner * sizeof(RtBvhNode), "BVH nodes"},
        };
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
            if ((st = lbvh_malloc(want[i].p, want[i].bytes, want[i].what, n, err)) != RT_OK) {
                lbvh_free_buffers(b);
                return st;
            }
        b->cap = n;
    }
    size_t bytes = 0;
    CUDA_CHECK(err, cub::DeviceRadixSort::SortPairs(NULL, bytes, b->codes[0], b->codes[1], b->ids[0], b->ids[1],
                                                    (int)(n ? n : 1), 0, 32, b->stream));
    if (bytes > b->cub_bytes) {
        if (b->cub_tmp) cudaFree(b->cub_tmp);
        b->cub_bytes = 0;
        if ((st = lbvh_malloc(&b->cub_tmp, bytes, "the radix sort's temporary storage", n, err)) != RT_OK)
            return st;
        b->cub_bytes = bytes;
    }
    return RT_OK;
}

/* Step 3 through the launch log (named, counted, timed as one launch):
 * CUB's radix sort is stable and the ids enter ascending, so pairs of
 * equal codes keep their ids ascending, the CPU oracle's order. All 32
 * bits: RT_LBVH_INVALID must sort after every 30-bit code. */
static RtStatus lbvh_sort(RtLbvhGpu *b, uint32_t n, RtError *err)
{
    int entry, slot;
    RtStatus st = rt_launch_begin(&b->log, "lbvh_sort", &entry, &slot, err);
    if (st != RT_OK) return st;
    size_t bytes = b->cub_bytes;
    CUDA_CHECK(err, cub::DeviceRadixSort::SortPairs(b->cub_tmp, bytes, b->codes[0], b->codes[1], b->ids[0],
                                                    b->ids[1], (int)n, 0, 32, b->stream));
    CUDA_CHECK_LAUNCH(err, "lbvh_sort");
    return rt_launch_end(&b->log, entry, slot, err);
}

static double lbvh_entry_ms(RtLaunchLog *log, const char *name)
{
    return log->entries[rt_launch_entry(log, name)].ms;
}

extern "C" RtStatus rt_lbvh_gpu_build(RtLbvhGpu *b, const RtLbvhParams *pp, const RtFloat4 *d_verts,
                                      const RtFloat4 *d_woop, uint32_t tri_count, RtBvh *d_bvh,
                                      RtLbvhGpuStats *stats, RtError *err)
{
    if (!b || !d_bvh || (tri_count && !d_verts))
        return rt_fail(err, RT_ERR_ARG, "LBVH: rt_lbvh_gpu_build needs a builder, vertices and a BVH");
    if (tri_count > INT_MAX)
        return rt_fail(err, RT_ERR_UNSUPPORTED, "LBVH: %u triangles: the radix sort takes at most %d", tri_count,
                       INT_MAX);
    const RtLbvhParams p = pp ? *pp : rt_lbvh_params_default();
    RtStatus st = rt_lbvh_params_check(&p, err);
    if (st != RT_OK) return st;
    if ((st = lbvh_reserve(b, tri_count, err)) != RT_OK) return st;
    RtLaunchLog *log = &b->log;
    rt_launch_log_reset(log);
    log->timed = stats != NULL;
    /* grids over every triangle (n is on the device); the bottom-up's
     * thread 0 always runs: it writes the root of a tree without internal nodes */
    const dim3 block(kBlock), tris((tri_count + kBlock - 1) / kBlock), leaves(tri_count ? tris.x : 1),
        inner((tri_count > 1 ? tri_count - 1 + kBlock - 1 : 0) / kBlock);
    const float4 *verts = (const float4 *)d_verts, *woop = (const float4 *)d_woop;

    /* the build reads what the caller's (legacy default) stream wrote (kd_gpu.cu's order) */
    CUDA_CHECK(err, cudaEventRecord(b->ev_input, cudaStreamLegacy));
    CUDA_CHECK(err, cudaStreamWaitEvent(b->stream, b->ev_input, 0));
    CUDA_CHECK(err, cudaEventRecord(b->ev_start, b->stream));
    CUDA_CHECK(err, cudaMemcpyAsync(b->d_ctr, b->h_init, sizeof(LbvhCounters), cudaMemcpyHostToDevice, b->stream));

    /* ---- 1. triangle boxes, scene box, valid count n ----------------------- */
    if ((st = rt_launch(log, "lbvh_boxes", tris, block, 0, lbvh_boxes_kernel, err, verts, woop, tri_count,
                        b->boxes, b->d_ctr)) != RT_OK)
        return st;

    /* ---- 2. Morton codes of the box centres in the scene box --------------- */
    if ((st = rt_launch(log, "lbvh_morton", tris, block, 0, lbvh_morton_kernel, err, b->boxes, tri_count, b->d_ctr,
                        b->codes[0], b->ids[0])) != RT_OK)
        return st;

    /* ---- 3. sort (code, id): the valid triangles first, along the curve ---- */
    if (tri_count && (st = lbvh_sort(b, tri_count, err)) != RT_OK) return st;

    /* ---- 4. radix tree: every internal node at once (n on the device) ------ */
    if ((st = rt_launch(log, "lbvh_tree", inner, block, 0, lbvh_tree_kernel, err, b->codes[1], b->d_ctr, b->splits,
                        b->parent_node, b->parent_leaf, b->flags)) != RT_OK)
        return st;

    /* ---- 5. bottom-up: boxes and leaf collapse, leaves to the root ------- */
    if ((st = rt_launch(log, "lbvh_bottom_up", leaves, block, 0, lbvh_bottom_up_kernel, err, b->ids[1], b->boxes,
                        b->d_ctr, b->splits, b->parent_node, b->parent_leaf, b->flags, b->subs, b->nodes, p)) != RT_OK)
        return st;

    CUDA_CHECK(err, cudaEventRecord(b->ev_end, b->stream));
    /* the counters come back behind the build, read by rt_lbvh_gpu_build_finish (no wait here) */
    CUDA_CHECK(err, cudaMemcpyAsync(b->h_ctr, b->d_ctr, sizeof(LbvhCounters), cudaMemcpyDeviceToHost, b->stream));
    /* ... and the caller's later work (the tracer) waits for the build */
    CUDA_CHECK(err, cudaEventRecord(b->ev_done, b->stream));
    CUDA_CHECK(err, cudaStreamWaitEvent(cudaStreamLegacy, b->ev_done, 0));

    memset(d_bvh, 0, sizeof *d_bvh);
    d_bvh->nodes = b->nodes;
    d_bvh->tri_index = b->ids[1];
    d_bvh->node_count = tri_count > 1 ? tri_count - 1 : 1;
    d_bvh->index_count = tri_count;
    d_bvh->node_cap = b->cap > 1 ? b->cap - 1 : 1;
    d_bvh->index_cap = b->cap;
    d_bvh->bounds = aabb_empty(); /* known on the device only */
    d_bvh->d_bounds = &b->d_ctr->root;
    b->built_tris = tri_count;
    return stats ? rt_lbvh_gpu_build_finish(b, stats, err) : RT_OK;
}

/* ---- statistics: wait for the last build ------------------------------------ */
extern "C" RtStatus rt_lbvh_gpu_build_finish(RtLbvhGpu *b, RtLbvhGpuStats *stats, RtError *err)
{
    if (!b || !stats) return rt_fail(err, RT_ERR_ARG, "LBVH: rt_lbvh_gpu_build_finish needs a builder and stats");
    RtLaunchLog *log = &b->log;
    CUDA_CHECK(err, cudaEventSynchronize(b->ev_done));
    RtStatus st = rt_launch_log_resolve(log, err);
    if (st != RT_OK) return st;
    memset(stats, 0, sizeof *stats);
    float ms = 0.0f;
    CUDA_CHECK(err, cudaEventElapsedTime(&ms, b->ev_start, b->ev_end));
    stats->ms = ms;
    if (log->timed) {
        stats->morton_ms = lbvh_entry_ms(log, "lbvh_boxes") + lbvh_entry_ms(log, "lbvh_morton");
        stats->sort_ms = lbvh_entry_ms(log, "lbvh_sort");
        stats->tree_ms = lbvh_entry_ms(log, "lbvh_tree");
        stats->bottom_up_ms = lbvh_entry_ms(log, "lbvh_bottom_up");
    }
    stats->launches = log->launches;
    stats->triangles = b->built_tris;
    stats->valid = b->h_ctr->valid;
    return RT_OK;
}

/* ==== device -> host copy, for the tests and the oracle comparisons ========== */

extern "C" RtStatus rt_lbvh_gpu_download(const RtLbvhGpu *b, const RtBvh *d_bvh, RtBvh *h, RtError *err)
{
    memset(h, 0, sizeof *h);
    if (!b || !d_bvh || !d_bvh->d_bounds)
        return rt_fail(err, RT_ERR_ARG, "LBVH: rt_lbvh_gpu_download needs the builder and a BVH it built");
    /* on the builder's stream: after the build */
    uint32_t n = 0;
    CUDA_CHECK(err, cudaMemcpyAsync(&n, &b->d_ctr->valid, sizeof n, cudaMemcpyDeviceToHost, b->stream));
    CUDA_CHECK(err, cudaMemcpyAsync(&h->bounds, d_bvh->d_bounds, sizeof h->bounds, cudaMemcpyDeviceToHost, b->stream));
    CUDA_CHECK(err, cudaStreamSynchronize(b->stream));
    /* the nodes the valid triangles make, as rt_lbvh_build_cpu counts them */
    const uint32_t nodes = n == 0 ? 0u : (n > 1 ? n - 1 : 1u);
    const size_t node_bytes = (size_t)nodes * sizeof(RtBvhNode),
                 index_bytes = (size_t)d_bvh->index_count * sizeof(uint32_t);
    h->nodes = (RtBvhNode *)malloc(node_bytes ? node_bytes : 1);
    h->tri_index = (uint32_t *)malloc(index_bytes ? index_bytes : 1);
    RtStatus st = RT_OK;
    if (!h->nodes || !h->tri_index) {
        st = rt_fail(err, RT_ERR_OOM, "LBVH: out of host memory downloading the BVH");
    } else {
        cudaError_t e = cudaMemcpy(h->nodes, d_bvh->nodes, node_bytes, cudaMemcpyDeviceToHost);
        if (e == cudaSuccess) e = cudaMemcpy(h->tri_index, d_bvh->tri_index, index_bytes, cudaMemcpyDeviceToHost);
        if (e != cudaSuccess)
            st = rt_fail(err, RT_ERR_CUDA, "LBVH: copying the BVH to the host: %s", cudaGetErrorString(e));
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
