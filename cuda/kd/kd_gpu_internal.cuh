/* kd_gpu_internal.cuh — what the GPU kd-tree stages share: the device-side
 * work lists, the per-build counters, the buffer set passed to every kernel,
 * block-level primitives (reductions and scans in both of Chang's flavours)
 * and the stage entry points the driver (kd_gpu.cu) calls. */
#ifndef RT_KD_GPU_INTERNAL_CUH
#define RT_KD_GPU_INTERNAL_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "kd/kd_clip.h"
#include "kd/kd_gpu.h"
#include "gpu/launch.h"

/* Threads of a large-stage block. Zhou et al. give each block a chunk of
 * 256 refs; 128-thread blocks (8 resident per multiprocessor, 64 registers
 * each) keep twice the chunks in flight, which the deep levels' chains of
 * L2 round trips need (Sponza's large stage 0.67 -> 0.61 ms, the 1M grid
 * 1.72 -> 1.60, H100, docs/kd_gpu.md). A chunk may hold several rounds of
 * KD_CHUNK refs (KdConf.chunk_refs). */
#define KD_CHUNK 128
/* the persistent large stage's resident blocks per multiprocessor (the
 * register file at 64 registers a thread), 3/4 of it with 4 ways */
#define KD_LARGE_BLOCKS (1024 / KD_CHUNK)
/* the most refs of a chunk (RtKdGpuParams.large_chunk) */
#define KD_CHUNK_REFS_MAX (16 * KD_CHUNK)
/* auto chunks (large_chunk = 0) hold at most this many rounds of KD_CHUNK */
#define KD_CHUNK_AUTO_ROUNDS 8
#define KD_MAX_LEVELS 128
/* The small stage addresses a small root's triangles with 64-bit masks. */
#define KD_SMALL_MAX 64

/* The fused small stage takes its roots most refs first: every small root
 * is listed in one of these buckets by its ref count (kd_root_bucket). A
 * root's subtree grows with its refs, so the big ones start early and the
 * stage does not end on a few warps finishing them. */
#define KD_ROOT_BUCKETS 8

/* Which buffer overflowed (KdCounters.overflow): the driver grows it and rebuilds. */
enum {
    KD_OVF_NODES = 1u << 0,
    KD_OVF_LEAVES = 1u << 1,
    KD_OVF_INDEX = 1u << 2,
    KD_OVF_REFS = 1u << 3,
    KD_OVF_ACTIVE = 1u << 4,
    KD_OVF_CHUNKS = 1u << 5,
    KD_OVF_SROOTS = 1u << 6,
    KD_OVF_SREFS = 1u << 7,
    KD_OVF_SNODES = 1u << 8,
};

/* Children of one large-stage split: 2 (Zhou's binary split) or 4 (ours:
 * both halves split again at their own medians in the same pass). */
#define KD_WAYS_MAX 4

/* An active node of the large-node stage. */
/* The large stage's per-level arrays (refs, their boxes, active nodes,
 * chunks) rotate over KdBufs.lists lists: level L reads kd_list(b, L) and
 * writes kd_list(b, L + 1). Three for the dataflow schedule, which lets
 * level L + 1 start while level L still runs (a node's chunks start as soon
 * as the node is routed): level L + 1 writes the list level L - 1 read,
 * which is complete by then (kd_large_dataflow.cu). Two where a barrier or
 * a launch separates the levels: level L + 1 writes what level L - 1 read,
 * and nothing reads it past the barrier. The third list is a quarter of a
 * 12M-triangle build's memory (28 bytes a reference). */
#define KD_LISTS 3
/* large_dataflow = 2 (auto) takes the dataflow schedule below this many
 * triangles. With chunks of 128 refs it lost on a 1M-triangle mesh (+7 %);
 * with chunks that the auto size scales with the mesh (KdConf.chunk_refs)
 * it wins there (1M -7 %, 2M -4 %), ties at 4M and loses at 10M (+3 %)
 * against a grid barrier per level (H100, docs/benchmarks.md) */
#define KD_DATAFLOW_AUTO_TRIS (1u << 22)
/* A chunk descriptor not yet published by the routing (its .x) */
#define KD_CHUNK_FREE 0xffffffffu

struct KdLargeNode {
    RtAabb cell;               /* the node's cell (loose box) */
    uint32_t node;             /* its slot in the output nodes[] */
    uint32_t first, count;     /* its refs in the level's ref list */
    uint32_t depth;
    uint32_t chunk_first, chunk_count;
    int box[6];                /* tight box, order-preserving ints (atomic min/max) */
    int axis;                  /* split axis; -1: the node stops here (goes to the small stage whole) */
    float split;
    int ways;                  /* children: 2, or 4 (half h split again at axis2[h] = split2[h]) */
    int axis2[2];
    float split2[2];
    uint32_t kids;             /* output slot of child 0; child k is kids + k */
    uint32_t kid_base[KD_WAYS_MAX];   /* each child's region (count refs reserved) in the next ref list */
    uint32_t kid_cursor[KD_WAYS_MAX]; /* Impl. II: per-block atomicAdd cursor = the child's count at the end */
    int kid_box[KD_WAYS_MAX][6];      /* [C] fused: each child's tight box, 6 atomics per chunk in the sort */
    uint32_t done;             /* persistent stage: chunks sorted; the last one routes the node */
};

/* Child k's cell (a stopped node: its own cell); W: the most children a
 * node of the caller's launch has (2: nd->ways is not read). */
template <int W>
__device__ __forceinline__ RtAabb kd_kid_cell(const KdLargeNode *nd, int k)
{
    RtAabb cell = nd->cell;
    if (nd->axis < 0) return cell;
    const bool four = W == 4 && nd->ways == 4;
    const int h = four ? k >> 1 : k;
    if (h == 0) v3_set(&cell.hi, nd->axis, nd->split);
    else v3_set(&cell.lo, nd->axis, nd->split);
    if (four) {
        if (k & 1) v3_set(&cell.lo, nd->axis2[h], nd->split2[h]);
        else v3_set(&cell.hi, nd->axis2[h], nd->split2[h]);
    }
    return cell;
}

/* A small root (a node handed from the large stage to the small stage). */
struct KdSmallRoot {
    RtAabb cell;
    uint32_t node, first, count, depth; /* first: into small_idx[] */
};

/* An active node of the small-node stage: a subset of its root's triangles. */
struct KdSmallNode {
    RtAabb cell;
    unsigned long long mask;
    uint32_t root, node, depth, pad;
};

/* Per-build counters, zeroed by one memset at the start of a build. */
struct KdCounters {
    /* leaves (high 32 bits) and tri_index entries (low): one 64-bit atomic
     * allocates a leaf with its index range (the small stage writes ~10^6
     * leaves a frame: the counters' contention is what costs) */
    unsigned long long leaf_index;
    uint32_t nodes;
    uint32_t valid;
    uint32_t small_roots, small_refs;
    uint32_t overflow;
    uint32_t depth;
    int bounds[6];
    uint32_t level_active[KD_MAX_LEVELS + 1];
    uint32_t level_chunks[KD_MAX_LEVELS + 1];
    uint32_t level_refs[KD_MAX_LEVELS + 1];
    uint32_t small_active[KD_MAX_LEVELS + 1];
    /* Overflow seen by the large-stage work before level L started (the
     * persistent kernel stops at the first level whose word is set: a value
     * no block writes during that level, so every block decides alike). */
    uint32_t level_ovf[KD_MAX_LEVELS + 1];
    uint32_t prep_next, fused_next;   /* work queues of the small stage (roots taken) */
    uint32_t level_next[KD_MAX_LEVELS + 1]; /* persistent large stage: chunks claimed */
    /* persistent large stage (dataflow): chunks of the level not yet done
     * (sorted and routed), plus 1 until the level before is complete (from
     * level 1 on: the host's initial counters); the block that takes it to
     * 0 completes the level */
    uint32_t level_pending[KD_MAX_LEVELS + 1];
    uint32_t level_complete[KD_MAX_LEVELS + 1]; /* persistent large stage: level done, and so its
                                                   next level's chunk count final */
    uint32_t bucket_count[KD_ROOT_BUCKETS]; /* small roots per bucket (root_bucket) */
    /* persistent large stage: %globaltimer (ns) when level L started (the
     * level after the last one: when the stage ended), for the profile */
    unsigned long long level_ns[KD_MAX_LEVELS + 1];
    uint32_t bar_count, bar_gen;      /* kd_grid_sync */
};

/* Everything a kernel may touch, by value (device pointers + capacities). */
struct KdBufs {
    const float4 *verts;
    const float4 *woop;
    uint32_t tri_count;
    float4 *tri_lo, *tri_hi;           /* per-triangle AABB */
    int lists;                         /* 2 or 3 (KD_LISTS): the large stage's lists in use */
    uint32_t *refs[KD_LISTS];          /* large stage ref lists (level L: kd_list(b, L)) */
    /* clipping: each ref's (clipped) box, parallel to refs, in 24 bytes:
     * (lo.x, lo.y, lo.z, hi.x) and (hi.y, hi.z) (kd_ref_box_*) */
    float4 *ref_a[KD_LISTS];
    float2 *ref_b[KD_LISTS];
    uint32_t ref_cap;
    KdLargeNode *active[KD_LISTS];
    uint32_t active_cap;
    uint2 *chunks[KD_LISTS];           /* (active node, start within the node); KD_CHUNK_FREE: not yet written */
    uint32_t chunk_cap;
    RtAabb *chunk_box;                 /* [C] off: per-chunk boxes for the segmented reduction */
    uint32_t *flags;                   /* Impl. I: 2 flags per ref (+1), scanned in place into scan */
    uint32_t *scan;
    KdSmallRoot *sroots;
    uint32_t sroot_cap;
    uint32_t *root_bucket;             /* KD_ROOT_BUCKETS lists of sroot_cap small-root slots (kd_root_bucket) */
    uint32_t *small_idx;               /* refs of the small roots */
    RtAabb *small_box;                 /* their (clipped) boxes, inside the root cell */
    float *cand_split;                 /* 6 candidates per small ref */
    ulonglong2 *cand_mask;             /* (left, right) masks over the root's refs */
    uint32_t sref_cap;
    KdSmallNode *snodes[2];
    uint32_t snode_cap;
    RtKdNode *nodes;
    RtKdLeaf *leaves;
    RtAabb *leaf_boxes;
    uint32_t *tri_index;
    uint32_t node_cap, leaf_cap, index_cap;
    RtAabb *tree_bounds;               /* the root cell, for the tracer (RtKdTree.d_bounds) */
    KdCounters *ctr;
};

__host__ __device__ __forceinline__ int kd_list(const KdBufs &b, int level)
{
    return level % b.lists;
}

/* A clipped ref's box in the ref lists' 24 bytes (was two float4, 32 bytes:
 * the large stage streams every ref's box once in and once out per level,
 * most of its traffic on large scenes). CG: read through L2 (__ldcg), for
 * lists other blocks wrote in this launch. */
__device__ __forceinline__ void kd_ref_box_store(const KdBufs &b, int list, uint32_t at, const RtAabb &box)
{
    b.ref_a[list][at] = make_float4(box.lo.x, box.lo.y, box.lo.z, box.hi.x);
    b.ref_b[list][at] = make_float2(box.hi.y, box.hi.z);
}

template <bool CG>
__device__ __forceinline__ RtAabb kd_ref_box_load(const KdBufs &b, int list, uint32_t at)
{
    const float4 a = CG ? __ldcg(&b.ref_a[list][at]) : b.ref_a[list][at];
    const float2 h = CG ? __ldcg(&b.ref_b[list][at]) : b.ref_b[list][at];
    RtAabb r;
    r.lo = v3(a.x, a.y, a.z);
    r.hi = v3(a.w, h.x, h.y);
    return r;
}

/* The parameters as the kernels see them. */
struct KdConf {
    float empty_cut;
    float c_trav, c_isect;
    uint32_t small_threshold;
    int max_depth;
    int small_mode;
    int clip;                          /* RT_KD_GPU_CLIP */
    int small_exact;                   /* small roots' triangles clipped exactly to the root cell */
    int split_at_route;                /* persistent [C]: children split where they are routed */
    int ways;                          /* children per large split: 2, or 4 (split_at_route only) */
    int dataflow;                      /* persistent large stage without barriers between levels
                                          (split_at_route only) */
    int sms;                           /* multiprocessors (grids of the persistent kernels) */
    uint32_t chunk_refs;               /* refs per large-stage chunk: KD_CHUNK, or a multiple of it
                                          that a block sorts in rounds (split_at_route only) */
};

/* Bucket 0: 57-64 refs, ..., 7: 1-8 refs, or a root that is a leaf at once
 * (over 64 refs): the order the small stage takes them in. */
__device__ __forceinline__ uint32_t kd_root_bucket(uint32_t n)
{
    return n >= 1 && n <= KD_SMALL_MAX ? (uint32_t)(KD_SMALL_MAX - n) / (KD_SMALL_MAX / KD_ROOT_BUCKETS)
                                       : KD_ROOT_BUCKETS - 1;
}

/* Lists small root `slot` (n refs) in its bucket. */
__device__ __forceinline__ void kd_root_list(const KdBufs &b, uint32_t slot, uint32_t n)
{
    const uint32_t k = kd_root_bucket(n);
    b.root_bucket[k * (size_t)b.sroot_cap + atomicAdd(&b.ctr->bucket_count[k], 1u)] = slot;
}

/* Min (or max) of x over a full warp, every lane gets it (x: rt_f2ord's ints). */
__device__ __forceinline__ int kd_warp_reduce_minmax(int x, bool is_max)
{
#if __CUDA_ARCH__ >= 800
    return is_max ? __reduce_max_sync(0xffffffffu, x) : __reduce_min_sync(0xffffffffu, x);
#else
    for (int o = 16; o > 0; o >>= 1) {
        const int y = __shfl_xor_sync(0xffffffffu, x, o);
        x = is_max ? max(x, y) : min(x, y);
    }
    return x;
#endif
}
__device__ __forceinline__ RtAabb kd_box_decode(const int b[6])
{
    RtAabb r;
    r.lo = v3(rt_ord2f(b[0]), rt_ord2f(b[1]), rt_ord2f(b[2]));
    r.hi = v3(rt_ord2f(b[3]), rt_ord2f(b[4]), rt_ord2f(b[5]));
    return r;
}

__device__ __forceinline__ RtAabb kd_box_clip(RtAabb a, RtAabb cell)
{
    a.lo = v3_max(a.lo, cell.lo);
    a.hi = v3_min(a.hi, cell.hi);
    return a;
}

/* Bounds of the part of triangle tri inside the closed box cell
 * (Sutherland-Hodgman in double, rounded outward to float, clamped to the
 * cell: kd_clip.h, the CPU oracle's arithmetic), or an empty box when the
 * triangle misses the cell. */
__device__ inline RtAabb kd_tri_clip(const KdBufs &b, uint32_t tri, RtAabb cell)
{
    double buf[2][RT_KD_CLIP_TRI_MAX][3];
    for (int k = 0; k < 3; k++) {
        float4 v = b.verts[3 * (size_t)tri + k];
        buf[0][k][0] = v.x;
        buf[0][k][1] = v.y;
        buf[0][k][2] = v.z;
    }
    int cur;
    const int n = rt_kd_clip_tri(buf, cell, &cur);
    if (n == 0) return aabb_empty();
    return rt_kd_clip_bounds(buf[cur], n, cell);
}

/* Bounds of the parts of triangle tri on each side of the plane x_axis =
 * split (out[0]: at or below it, out[1]: at or above), rounded outward: the
 * kept corners and the edges' crossings (double, registers only). The
 * large stage intersects it with the ref's box (tight in the parent's cell)
 * and the child's cell: that contains the exact box of the triangle's part
 * in the child (so no ref is ever lost) and equals it unless two of the
 * cell's planes cut the triangle near a corner; the small stage tightens
 * its roots' boxes exactly (kd_tri_clip). Sutherland-Hodgman over six
 * planes per straddler and level, in the persistent kernel, measured 2.6x
 * the box-inclusion large stage on Sponza (H100). */
__device__ __forceinline__ void kd_tri_clip_plane(const KdBufs &b, uint32_t tri, int axis, float split,
                                                  RtAabb out[2])
{
    /* both sides at once: the edges' crossings belong to both (one pass,
     * half the double-precision work of two one-sided clips) */
    double v[3][3], d[3];
    for (int k = 0; k < 3; k++) {
        float4 f = b.verts[3 * (size_t)tri + k];
        v[k][0] = f.x;
        v[k][1] = f.y;
        v[k][2] = f.z;
        d[k] = (axis == 0 ? v[k][0] : (axis == 1 ? v[k][1] : v[k][2])) - (double)split;
    }
    double lo[2][3], hi[2][3];
#pragma unroll
    for (int q = 0; q < 3; q++) lo[0][q] = lo[1][q] = INFINITY, hi[0][q] = hi[1][q] = -INFINITY;
#pragma unroll
    for (int k = 0; k < 3; k++) {
#pragma unroll
        for (int side = 0; side < 2; side++)
            if (side ? d[k] >= 0.0 : d[k] <= 0.0)
#pragma unroll
                for (int q = 0; q < 3; q++) {
                    lo[side][q] = fmin(lo[side][q], v[k][q]);
                    hi[side][q] = fmax(hi[side][q], v[k][q]);
                }
        const int j = k == 2 ? 0 : k + 1;
        if ((d[k] < 0.0 && d[j] > 0.0) || (d[k] > 0.0 && d[j] < 0.0)) {
            const double t = d[k] / (d[k] - d[j]);
#pragma unroll
            for (int q = 0; q < 3; q++) {
                const double x = q == axis ? (double)split : v[k][q] + t * (v[j][q] - v[k][q]);
#pragma unroll
                for (int side = 0; side < 2; side++) {
                    lo[side][q] = fmin(lo[side][q], x);
                    hi[side][q] = fmax(hi[side][q], x);
                }
            }
        }
    }
#pragma unroll
    for (int side = 0; side < 2; side++) {
        out[side].lo = v3(__double2float_rd(lo[side][0]), __double2float_rd(lo[side][1]), __double2float_rd(lo[side][2]));
        out[side].hi = v3(__double2float_ru(hi[side][0]), __double2float_ru(hi[side][1]), __double2float_ru(hi[side][2]));
    }
}

/* Bounded allocation from a device counter: returns the first slot, or
 * UINT32_MAX (and flags the overflow) when [first, first + n) passes cap. */
__device__ __forceinline__ uint32_t kd_alloc(uint32_t *counter, uint32_t n, uint32_t cap,
                                             uint32_t *overflow, uint32_t bit, uint32_t *level_ovf = NULL)
{
    uint32_t first = atomicAdd(counter, n);
    if ((uint64_t)first + n > cap) {
        atomicOr(overflow, bit);
        if (level_ovf) atomicOr(level_ovf, bit);
        return UINT32_MAX;
    }
    return first;
}

/* `leaves` leaves and n tri_index entries from the packed counter (one
 * 64-bit atomic); false (and the overflow flagged) when either passes its
 * capacity. */
__device__ __forceinline__ bool kd_alloc_leaves(const KdBufs &b, uint32_t leaves, uint32_t n, uint32_t *leaf,
                                                uint32_t *base, uint32_t *level_ovf = NULL)
{
    unsigned long long old = atomicAdd(&b.ctr->leaf_index, ((unsigned long long)leaves << 32) | n);
    *leaf = (uint32_t)(old >> 32);
    *base = (uint32_t)old;
    uint32_t bits = 0;
    if ((uint64_t)*leaf + leaves > b.leaf_cap) bits |= KD_OVF_LEAVES;
    if ((uint64_t)*base + n > b.index_cap) bits |= KD_OVF_INDEX;
    if (!bits) return true;
    atomicOr(&b.ctr->overflow, bits);
    if (level_ovf) atomicOr(level_ovf, bits);
    return false;
}

/* A leaf and its n tri_index entries. */
__device__ __forceinline__ bool kd_alloc_leaf(const KdBufs &b, uint32_t n, uint32_t *leaf, uint32_t *base,
                                              uint32_t *level_ovf = NULL)
{
    return kd_alloc_leaves(b, 1, n, leaf, base, level_ovf);
}

/* Triangle association against a split (Chang's rule, box inclusion): left
 * when the box starts below the plane, right when it ends above it or starts
 * on it (planar triangles in the plane go right). */
__device__ __forceinline__ void kd_classify(float lo, float hi, float split, uint32_t *l,
                                            uint32_t *r)
{
    *l = lo < split;
    *r = *l ? (split < hi) : 1u;
}

/* ---- block primitives, in Chang's two flavours --------------------------- */

/* Sum over a block of blockDim.x (a multiple of 32, <= 1024) threads; the
 * result is valid in every thread. SHFL ([D]): warp shuffles then one shared
 * slot per warp; otherwise a shared-memory tree (Hoedt's Reduce3). */
template <bool SHFL, typename T, typename Op>
__device__ __forceinline__ T kd_block_reduce(T v, Op op, T *sh /* >= blockDim.x */)
{
    if (SHFL) {
        for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
        __syncthreads(); /* sh may be in use by a previous call */
        if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
        __syncthreads();
        int warps = blockDim.x >> 5;
        v = sh[0];
        for (int w = 1; w < warps; w++) v = op(v, sh[w]);
        return v;
    }
    __syncthreads();
    sh[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x >> 1; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] = op(sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }
    v = sh[0];
    __syncthreads();
    return v;
}

struct KdMin { __device__ float operator()(float a, float b) const { return fminf(a, b); } };
struct KdMax { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };
struct KdAdd { __device__ uint32_t operator()(uint32_t a, uint32_t b) const { return a + b; } };

/* Exclusive scans of N 0/1 flags over a block of KD_CHUNK threads; also
 * the block totals. BALLOT ([B]): Chang's ballot/popc per warp and a
 * shuffle scan over the 8 warp totals; otherwise a Hillis-Steele scan in
 * shared memory (the "original" intra-block scan). */
template <bool BALLOT, int N>
__device__ __forceinline__ void kd_block_scan(const uint32_t f[N], uint32_t x[N], uint32_t t[N],
                                              uint32_t *sh /* N * KD_CHUNK */)
{
    const int nw = KD_CHUNK / 32;
    if constexpr (BALLOT) {
        const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        const unsigned lt = (1u << lane) - 1u;
#pragma unroll
        for (int k = 0; k < N; k++) {
            const unsigned m = __ballot_sync(0xffffffffu, f[k]);
            x[k] = __popc(m & lt);
            if (lane == 31) sh[k * nw + warp] = __popc(m);
        }
        __syncthreads();
        if (threadIdx.x < 32) {
#pragma unroll
            for (int k = 0; k < N; k++) {
                const uint32_t a = lane < nw ? sh[k * nw + lane] : 0;
                uint32_t ia = a;
                for (int i = 1; i < nw; i <<= 1) {
                    const uint32_t na = __shfl_up_sync(0xffffffffu, ia, i);
                    if ((int)lane >= i) ia += na;
                }
                if (lane < nw) sh[(N + k) * nw + lane] = ia - a;
                if (lane == nw - 1) sh[2 * N * nw + k] = ia;
            }
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < N; k++) {
            x[k] += sh[(N + k) * nw + warp];
            t[k] = sh[2 * N * nw + k];
        }
        __syncthreads();
    } else {
#pragma unroll
        for (int k = 0; k < N; k++) sh[k * KD_CHUNK + threadIdx.x] = f[k];
        __syncthreads();
        for (int o = 1; o < KD_CHUNK; o <<= 1) {
            uint32_t v[N];
#pragma unroll
            for (int k = 0; k < N; k++) v[k] = threadIdx.x >= (unsigned)o ? sh[k * KD_CHUNK + threadIdx.x - o] : 0;
            __syncthreads();
#pragma unroll
            for (int k = 0; k < N; k++) sh[k * KD_CHUNK + threadIdx.x] += v[k];
            __syncthreads();
        }
#pragma unroll
        for (int k = 0; k < N; k++) {
            x[k] = sh[k * KD_CHUNK + threadIdx.x] - f[k];
            t[k] = sh[k * KD_CHUNK + KD_CHUNK - 1];
        }
        __syncthreads();
    }
}

/* ---- stage entry points (kd_large*.cu, kd_small.cu) ------------------------ */

/* kd_large.cu: per-triangle AABBs, the valid (non-degenerate) refs of
 * level 0, the scene bounds, and the root: an active large node or a small
 * root. */
RtStatus kd_large_init(RtLaunchLog *log, const KdBufs &b, const KdConf &c, RtError *err);
/* kd_large_levels.cu, Implementation I: one level of the large-node stage
 * over level L's active nodes, a launch per step (the host passes the
 * level's counts). */
RtStatus kd_large_level(RtLaunchLog *log, const KdBufs &b, const KdConf &c, const RtKdGpuParams &p,
                        int level, uint32_t active, uint32_t chunks, uint32_t refs,
                        void *cub_tmp, size_t cub_tmp_bytes, RtError *err);
/* Sizes are per level: refs = extent of level L's ref list (holes included). */
/* Bytes CUB's scan needs for n flags (Implementation I). */
size_t kd_large_scan_bytes(uint32_t n);
/* kd_large_persistent.cu, Implementation II: every level of the large stage
 * in ONE cooperative launch, levels separated by grid-wide barriers (or, with
 * KdConf.dataflow, none: kd_large_dataflow.cu); the loop bounds are read on
 * the device (no host round trip). */
RtStatus kd_large_persistent(RtLaunchLog *log, const KdBufs &b, const KdConf &c, const RtKdGpuParams &p,
                             RtError *err);

/* Small-node stage: candidates and level-0 small nodes from the small roots
 * (the root count is read on the device: blocks take roots from a queue). */
RtStatus kd_small_prepare(RtLaunchLog *log, const KdBufs &b, const KdConf &c, RtError *err);
/* The whole small stage in one launch: a warp per small root, its nodes in
 * batches. */
RtStatus kd_small_fused(RtLaunchLog *log, const KdBufs &b, const KdConf &c, int popc, RtError *err);
/* One level of the small stage (popc: Chang [E]). */
RtStatus kd_small_level(RtLaunchLog *log, const KdBufs &b, const KdConf &c, int popc, int level,
                        uint32_t active, RtError *err);

/* kd_mark.cu: every interior node's empty-child marks (kd_layout.h's
 * kd_empty_marks), the last launch of both GPU builders, once every node is
 * written. The node count is read on the device from *d_count when that is
 * given (at most cap nodes are read), else it is cap. */
RtStatus kd_mark_empty_queue(RtLaunchLog *log, RtKdNode *nodes, const uint32_t *d_count, uint32_t cap,
                             RtError *err);

#endif
