/* bvh_gpu_common.cuh — what the GPU BVH builders share (lbvh_gpu.cu,
 * hploc_gpu.cu): a builder's stream, events, launch log and counters
 * (BvhGpuBase), lbvh.h's steps 1 and 2 as kernels — triangle boxes, scene
 * box and valid count, Morton codes, CUB's radix sort (bvh_keys_queue) —
 * the packed subtree records a bottom-up pass hands its parent, the node
 * store and the download. C++ (CUDA) only; bvh_gpu_common.cu holds the
 * kernels and host functions. */
#ifndef RT_BVH_GPU_COMMON_CUH
#define RT_BVH_GPU_COMMON_CUH

#include <string.h>

#include "bvh/bvh_cpu.h"
#include "gpu/coalesce.cuh"
#include "gpu/launch.h"

/* What the kernels reduce and count; reset before every build (bvh_reset). */
typedef struct BvhCounters {
    int scene[6];     /* the scene box, lo then hi, as order-preserving ints (rt_f2ord) */
    uint32_t valid;   /* n: the non-degenerate triangles */
    uint32_t fallback; /* H-PLOC: 1 when the clustered tree was too deep (hploc.h, Depth) */
    RtAabb root;      /* the root's box, the tree's d_bounds: empty unless the build writes it */
    uint32_t tree_root;     /* H-PLOC: the output tree's root, an interior id (hploc.h, Names) */
    uint32_t cluster_depth; /* H-PLOC: the clustered tree's depth once collapsed */
    uint32_t leaf_next;     /* H-PLOC: tri_index entries the leaves took so far (hploc_leaf_alloc) */
    uint32_t top_leaves;    /* H-PLOC's spatial-split top (split_top.h): its leaves (0: none built) */
    uint32_t top_refs;      /* ... and the references under it */
    uint32_t tri_valid;     /* ... and the valid triangles (valid is then the references) */
} BvhCounters;

/* The scene box bvh_boxes reduced (ordered ints back to floats). */
__device__ __forceinline__ RtAabb bvh_scene_box(const BvhCounters *ctr)
{
    RtAabb b;
    b.lo = v3(rt_ord2f(ctr->scene[0]), rt_ord2f(ctr->scene[1]), rt_ord2f(ctr->scene[2]));
    b.hi = v3(rt_ord2f(ctr->scene[3]), rt_ord2f(ctr->scene[4]), rt_ord2f(ctr->scene[5]));
    return b;
}

/* A triangle box's Morton code in the scene box (bvh_morton's; the split
 * top's keys when it has one leaf). */
__device__ __forceinline__ uint32_t bvh_morton_code(const RtAabb &box, const BvhCounters *ctr)
{
    const RtAabb scene = bvh_scene_box(ctr);
    return lbvh_morton(box, scene, lbvh_scale(scene));
}

/* Steps 1 and 2's arrays, for `cap` triangles. */
typedef struct BvhKeysGpu {
    uint32_t cap;
    RtAabb *boxes;      /* by triangle id */
    uint32_t *codes[2]; /* Morton codes: unsorted, sorted */
    uint32_t *ids[2];   /* triangle ids: 0 .. N-1, sorted */
    void *cub_tmp;
    size_t cub_bytes;
    uint32_t sized;     /* the pair count cub_bytes was asked for (UINT32_MAX: none) */
} BvhKeysGpu;

/* A builder's fixed parts: created once, used by every build. */
typedef struct BvhGpuBase {
    const char *tag;               /* "LBVH", "H-PLOC": error messages */
    cudaStream_t stream;
    int sms;                       /* the device's multiprocessors (grid sizes) */
    RtLaunchLog log;
    cudaEvent_t ev_start, ev_end;  /* the build's GPU time (stats) */
    cudaEvent_t ev_input, ev_done; /* the caller's stream -> the build -> the caller's stream */
    cudaEvent_t ev_copied;         /* the counters on the host (h_ctr) */
    RtLaunchGraph graph;           /* the build's launches, replayed while its key holds */
    uint32_t built_tris;           /* the last build's input (_finish) */
    BvhCounters *d_ctr, *h_ctr;
    BvhKeysGpu keys;
    RtFloat4 *leaf_woop;           /* the tree's leaf triangles (bvh_layout.h), 3 rows per entry */
    uint32_t leaf_cap;             /* entries leaf_woop holds */
} BvhGpuBase;


/* Aila & Laine 2009's leaf layout (bvh_layout.h, leaf_woop): entry k =
 * blockIdx.x * B + threadIdx.x of count gets triangle tri_index[k]'s Woop
 * rows, stored by the block together (coalesce.cuh: every thread of the
 * block calls it). The H-PLOC builder's bvh_leaf_woop kernel and the LBVH's
 * radix-tree kernel both copy the rows with it. */
template <int B>
__device__ __forceinline__ void bvh_leaf_rows_store(const uint32_t *tri_index, const float4 *woop, uint32_t count,
                                                    RtFloat4 *leaf_woop, RtFloat4 (&sh)[3 * B])
{
    const uint32_t k = blockIdx.x * B + threadIdx.x;
    RtFloat4 rows[3] = {};
    if (k < count) {
        const RtFloat4 *src = bvh_leaf_woop_src(tri_index, (const RtFloat4 *)woop, k);
        rows[0] = src[0], rows[1] = src[1], rows[2] = src[2];
    }
    rt_store3<B>(leaf_woop, count, sh, rows);
}

__device__ __forceinline__ RtFloat4 bvh_load_f4(const float4 *p)
{
    const float4 f = *p;
    return f4(f.x, f.y, f.z, f.w);
}

/* A finished subtree as its parent reads it: the bits of RtLbvhSub in three
 * uint4, read through L2 (__ldcg) since another block may have written them
 * in this launch (L1 is not coherent between multiprocessors). */
__device__ __forceinline__ void bvh_sub_store(uint4 *subs, uint32_t node, const RtLbvhSub &s)
{
    uint4 *d = subs + 3 * (size_t)node;
    d[0] = make_uint4(__float_as_uint(s.box.lo.x), __float_as_uint(s.box.lo.y), __float_as_uint(s.box.lo.z),
                      __float_as_uint(s.box.hi.x));
    d[1] = make_uint4(__float_as_uint(s.box.hi.y), __float_as_uint(s.box.hi.z), __float_as_uint(s.cost), s.first);
    d[2] = make_uint4(s.count, s.node, (uint32_t)s.as_leaf, s.height);
}
__device__ __forceinline__ RtLbvhSub bvh_sub_load(const uint4 *subs, uint32_t node)
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
    s.height = c.w;
    return s;
}

/* One 64-byte node in four 16-byte stores. */
__device__ __forceinline__ void bvh_node_store(RtBvhNode *dst, const RtBvhNode &n)
{
    float4 *d = reinterpret_cast<float4 *>(dst);
    for (int k = 0; k < 3; k++) d[k] = make_float4(n.b[k].x, n.b[k].y, n.b[k].z, n.b[k].w);
    reinterpret_cast<uint4 *>(dst)[3] = make_uint4(n.child[0], n.child[1], n.count[0], n.count[1]);
}

/* The root of a tree without interior nodes (n < 2): the one triangle and
 * an empty leaf, or two empty leaves, so a walk of any build finds what it
 * holds. One thread. */
__device__ __forceinline__ void bvh_small_root(uint32_t n, const RtAabb *boxes, const uint32_t *tri_index,
                                               BvhCounters *ctr, RtBvhNode *nodes)
{
    RtBvhNode root;
    if (n == 1) {
        lbvh_single_root(boxes[tri_index[0]], &root);
        ctr->root = boxes[tri_index[0]];
    } else { /* the root box stays the reset's empty one */
        bvh_set_empty_child(&root, 0);
        bvh_set_empty_child(&root, 1);
    }
    bvh_node_store(&nodes[0], root);
}

/* ---- host side (bvh_gpu_common.cu) ------------------------------------------ */

/* A grid of `blocks` blocks, at most per_sm a multiprocessor: for kernels
 * whose threads loop over their work (a grid-stride loop), so that a launch
 * with little to do costs little. */
static inline dim3 bvh_capped_grid(const BvhGpuBase *b, uint32_t blocks, uint32_t per_sm)
{
    const uint32_t most = (uint32_t)b->sms * per_sm;
    return dim3(blocks < most ? blocks : most);
}

/* The stream, events, launch log and counters; RT_ERR_NO_DEVICE without a
 * CUDA device. */
RtStatus bvh_base_create(BvhGpuBase *b, const char *tag, RtError *err);
void bvh_base_destroy(BvhGpuBase *b);
/* cudaMalloc naming what failed; not sticky. */
RtStatus bvh_gpu_alloc(const BvhGpuBase *b, void **p, size_t bytes, const char *what, uint32_t tris, RtError *err);
/* A table of device arrays to allocate: each one's pointer, size and name. */
typedef struct BvhAlloc {
    void **p;
    size_t bytes;
    const char *what;
} BvhAlloc;
/* Allocates every array of the table for a build over `tris` triangles;
 * on a failure the caller frees those it got (NULL-initialised). */
RtStatus bvh_gpu_alloc_all(const BvhGpuBase *b, const BvhAlloc *want, size_t count, uint32_t tris, RtError *err);
/* Steps 1 and 2's arrays for n triangles (kept when large enough) and
 * CUB's temporary storage. */
RtStatus bvh_keys_reserve(BvhGpuBase *b, uint32_t n, RtError *err);
void bvh_keys_free(BvhKeysGpu *k);
/* The start of a build: the argument check, the log reset (timed: an event
 * pair around every launch) and the stream ordered after the caller's
 * (legacy default) stream. The builder then reserves its arrays and runs
 * its launches with bvh_build_run. */
RtStatus bvh_build_begin(BvhGpuBase *b, uint32_t tri_count, int timed, RtError *err);
/* Steps 1 and 2 (lbvh.h): boxes, scene box and valid count (kernel
 * bvh_boxes), Morton codes (bvh_morton), the stable sort (bvh_sort):
 * keys.ids[1] = the sorted ids, keys.codes[1] their codes. free_slots
 * (NULL: none): n - 1 words the Morton kernel sets to all ones, H-PLOC's
 * split slots, a memset launch less. */
RtStatus bvh_keys_queue(BvhGpuBase *b, const float4 *verts, uint32_t n, uint32_t *free_slots, RtError *err);
/* bvh_keys_queue's parts for a builder that makes its own codes in between
 * (H-PLOC's spatial-split top): step 1 over n triangles; the sort of
 * `count` pairs from keys.codes[0] / ids[0] (the arrays reserved for at
 * least count). */
RtStatus bvh_boxes_queue(BvhGpuBase *b, const float4 *verts, uint32_t n, RtError *err);
RtStatus bvh_sort_queue(BvhGpuBase *b, uint32_t count, RtError *err);
/* The leaf-triangle array (leaf_woop) for cap triangles, kept while it
 * holds tri_count. */
RtStatus bvh_leaf_woop_reserve(BvhGpuBase *b, uint32_t cap, uint32_t tri_count, RtError *err);
/* The leaf triangles copied in tri_index order from woop (kernel
 * bvh_leaf_woop; nothing when woop is NULL), for a builder whose own
 * kernels do not copy them. */
RtStatus bvh_leaf_woop_queue(BvhGpuBase *b, const uint32_t *tri_index, uint32_t tri_count, const float4 *woop,
                             RtError *err);
/* What every build's launches take, for the key of its graph: the input,
 * the base's arrays (they move when they grow) and CUB's storage size. */
typedef struct BvhLaunchKey {
    const float4 *verts, *woop;
    uint32_t tri_count;
    const void *arrays[8];
    size_t cub_bytes;
} BvhLaunchKey;
/* *key for a build over tri_count triangles (verts, woop: the build's
 * input), padding zeroed so the key compares as bytes. */
void bvh_launch_key(const BvhGpuBase *b, const RtFloat4 *verts, const RtFloat4 *woop, uint32_t tri_count,
                    BvhLaunchKey *key);
/* The build's launches between the start and end events: the counters'
 * reset (bvh_reset), then queue(ctx), which launches the builder's kernels
 * through the log; as one graph (launch.h: rt_launch_graph_run) captured
 * again whenever key (every size, pointer and parameter the launches take)
 * changes. */
RtStatus bvh_build_run(BvhGpuBase *b, const void *key, size_t key_bytes, RtStatus (*queue)(void *ctx, RtError *err),
                       void *ctx, RtError *err);
/* The end of a build: the caller's stream ordered after it, the counters
 * copied back behind it (read by bvh_build_finish, no wait here); d_bvh
 * describes the device arrays (node_count = index_count - 1 at least 1, as
 * the LBVH documents; has_woop: the leaf triangles were made). */
RtStatus bvh_build_end(BvhGpuBase *b, RtBvhNode *nodes, uint32_t *tri_index, uint32_t cap, uint32_t tri_count,
                       int has_woop, RtBvh *d_bvh, RtError *err);
/* Waits for the last build: its GPU time (*ms), launches and valid count;
 * the log's per-kernel times are resolved when it was timed. */
RtStatus bvh_build_finish(BvhGpuBase *b, double *ms, RtError *err);
/* The log's time of the kernels of that name (0 unless timed). */
double bvh_entry_ms(RtLaunchLog *log, const char *name);
/* The device BVH to host arrays, as rt_lbvh_gpu_download documents. */
RtStatus bvh_download(const BvhGpuBase *b, const RtBvh *d_bvh, RtBvh *h, RtError *err);

#endif
