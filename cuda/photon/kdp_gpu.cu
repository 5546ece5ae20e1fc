/* kdp_gpu.cu — the balanced point k-d tree on the GPU (kdp_gpu.h): Brown
 * 2015, "Building a Balanced k-d Tree in O(kn log n) Time", as seed 004
 * (Robinson's KdTreeGPU) builds it on the GPU, into the layout of
 * photon/kdtree_points.h, so the tree equals rt_kdp_build_cpu's byte for
 * byte. The host driver, rt_kdp_gpu_build, queues on the caller's stream:
 *
 *   1. reject: a state per point (kept / rejected), NaN and infinite
 *      points counted                                         (kdp_classify)
 *   2. presort: k reference arrays, array p by the super key from p, ties
 *      by input index. A CUB radix sort of 64-bit keys (coordinates p and
 *      p + 1), stable from index order, is the whole order unless two
 *      such pairs are equal (kdp_ties tells, one flag per array; never
 *      needed for k <= 2); only then array p is sorted again, least
 *      significant coordinate pair first, stable passes (the seed's merge
 *      sort compares the next coordinates when primary values tie; radix
 *      passes give the same order). Rejected points get the largest key
 *      and sort last.                           (kdp_keys, CUB, kdp_ties)
 *      -- host wait 1: the tie flags --
 *   3. duplicates: array 0 holds equal tuples together, lowest index
 *      first; the others are marked (kdp_mark_duplicates)
 *      -- host wait 2: the unique count u, which sizes the levels --
 *      then every array is compacted to the kept references by warp
 *      compaction, two passes (kdp_wide_count, CUB scan, kdp_wide_scatter)
 *   4. build, breadth first, a level at a time (seed 004, "Building the
 *      KD Tree"): each range's median in the split coordinate's array
 *      becomes its node (kdp_nodes); the other k - 1 arrays are
 *      partitioned around it, keeping their order, by warp compaction:
 *        - few, long ranges: each cut into chunks of RT_KDP_GPU_CHUNK
 *          spread over many warps, two passes (kdp_wide_count, scan,
 *          kdp_wide_scatter) — the seed's first partitioner;
 *        - many ranges: a warp per range, or 16, 8 or 4 lanes of one when
 *          the ranges are that short, one pass (kdp_narrow<W>) — its
 *          second and third;
 *        - ranges of at most 3 points: their nodes straight from the
 *          split array, a thread per range (kdp_nodes, leaves) — its
 *          terminating partitioner.
 *
 * A range at a level is found from its number alone (kdp_level_range:
 * the number's bits are the path from the root, the seed's "partition
 * address"), so no level stores ranges. Node numbers are median
 * positions (kdtree_points.h), so the breadth-first order writes the
 * depth-first oracle's tree. */
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_check.h"
#include "gpu/gpu.h"
#include "gpu/launch.h"
#include "photon/kdp_gpu.h"

/* Threads per block of every kernel: a multiple of the warp size, so no
 * warp is partial and every ballot sees 32 lanes. */
static constexpr uint32_t kBlock = 256;
/* Ballots per chunk of the wide kernels. */
static constexpr uint32_t kIters = RT_KDP_GPU_CHUNK / 32;
static_assert(RT_KDP_GPU_CHUNK % 32 == 0, "a chunk is whole ballots");
/* The sort key of a rejected point: above every finite pair's (a finite
 * float's key bits are at most 0xff7fffff). */
static constexpr uint64_t kKeyRejected = ~0ull;
/* Ranges of at most this many points are finished from the split array
 * alone (their children are single points): seed 004's terminating
 * partitioner, "1, 2 or 3 elements". */
static constexpr uint32_t kLeafMax = 3;

/* A point's state (per input index). */
enum : uint8_t { KDP_KEEP = 0, KDP_REJECTED = 1, KDP_DUPLICATE = 2 };

/* What the kernels count; zeroed before every build, read at the waits. */
struct KdpCounters {
    uint32_t rejected, duplicates;
    uint32_t ties[RT_KDP_MAX_DIM]; /* array p's primary coordinates tie somewhere */
};

/* The reference arrays one launch compacts, by blockIdx.y. */
struct KdpSlots {
    const uint32_t *in[RT_KDP_MAX_DIM];
    uint32_t *out[RT_KDP_MAX_DIM];
};

/* One compaction launch: the duplicate removal (SPLIT false: one range of
 * n references, kept ones to the left) or a level's partition (SPLIT true:
 * the level's ranges, less than the median to the left, greater to the
 * right of its position). */
struct KdpJob {
    const float *pts;
    uint32_t dim;
    uint32_t n;                /* SPLIT: the tree's points u; else the arrays' length */
    uint32_t level, axis;      /* SPLIT: the level and its split coordinate */
    uint32_t ranges;           /* SPLIT: 2^level; else 1 */
    uint32_t cpr;              /* wide kernels: chunks per range */
    const uint32_t *split_ref; /* SPLIT: array `axis`, sorted within each range */
    const uint8_t *state;      /* !SPLIT: KDP_KEEP marks the kept references */
    KdpSlots slots;
};

struct RtKdpGpu {
    uint32_t warp_ranges_min; /* RtKdpGpuParams, resolved */
    RtLaunchLog log;
    cudaEvent_t ev[4];        /* start, presorted, deduplicated, built */
    KdpCounters *d_ctr, *h_ctr;
    /* buffers, grown to the largest build so far (bytes in cap_*) */
    uint8_t *state;
    uint64_t *keys[2];        /* the radix sort's keys, double buffered */
    uint32_t *ref_pool;       /* 2 * dim arrays of n */
    uint32_t *refs[2][RT_KDP_MAX_DIM]; /* [0]: the arrays, [1]: their other buffer */
    RtKdpNode *nodes;
    float *coords;
    uint64_t *chunk_count, *chunk_scan; /* per chunk: left | right << 32, and its exclusive scan */
    uint2 *masks;             /* per chunk and ballot: (left, right) lanes */
    void *cub_tmp;
    size_t cap_state, cap_keys, cap_refs, cap_nodes, cap_coords, cap_chunks, cap_masks, cap_cub;
};

/* ==== device helpers ========================================================== */

/* Float bits in an order equal to the floats' (radix sort keys); -0 is
 * made +0 first, as the super key compares them equal. */
__device__ __forceinline__ uint32_t kdp_key_bits(float f)
{
    uint32_t u = __float_as_uint(f == 0.0f ? 0.0f : f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* The range a compaction job's number i stands for. */
template <bool SPLIT>
__device__ __forceinline__ void kdp_job_range(const KdpJob &j, uint32_t i, uint32_t *lo, uint32_t *size)
{
    if (SPLIT) {
        kdp_level_range(j.n, j.level, i, lo, size);
    } else {
        *lo = 0;
        *size = j.n;
    }
}

/* The range's median point (SPLIT), copied to registers: every lane
 * compares against it. */
template <bool SPLIT>
__device__ __forceinline__ void kdp_job_median(const KdpJob &j, uint32_t lo, uint32_t size, float *med)
{
    if (!SPLIT || size == 0) return;
    const uint32_t m = j.split_ref[lo + (size - 1) / 2];
    for (uint32_t c = 0; c < j.dim; c++) med[c] = j.pts[(size_t)m * j.dim + c];
}

/* Where reference r goes: 0 left (below the median's super key from the
 * split coordinate / kept), 1 right (above), 2 nowhere (the median itself,
 * which is its node now; a dropped duplicate or rejected point). */
template <bool SPLIT>
__device__ __forceinline__ int kdp_job_side(const KdpJob &j, uint32_t r, const float *med)
{
    if (SPLIT) {
        const int c = kdp_super_cmp(j.pts + (size_t)r * j.dim, med, j.axis, j.dim);
        return c < 0 ? 0 : c > 0 ? 1 : 2;
    }
    return j.state[r] == KDP_KEEP ? 0 : 2;
}

/* First position of the right part of range [lo, lo + size): after the
 * median (SPLIT); nothing goes right otherwise. */
__device__ __forceinline__ uint32_t kdp_right_start(uint32_t lo, uint32_t size)
{
    return size ? lo + (size - 1) / 2 + 1 : lo;
}

/* Node m = median of [lo, lo + size) with its point, its children by the
 * numbering rule, its coordinates copied. */
__device__ __forceinline__ void kdp_put_node(RtKdpNode *nodes, float *coords, const float *pts, uint32_t dim,
                                             uint32_t lo, uint32_t size, uint32_t point)
{
    const uint32_t hi = lo + size - 1, m = kdp_median(lo, hi);
    RtKdpNode nd;
    nd.point = point;
    nd.child[0] = m > lo ? kdp_median(lo, m - 1) : RT_KDP_NONE;
    nd.child[1] = m < hi ? kdp_median(m + 1, hi) : RT_KDP_NONE;
    nodes[m] = nd;
    for (uint32_t c = 0; c < dim; c++) coords[(size_t)m * dim + c] = pts[(size_t)point * dim + c];
}

/* ==== 1. reject =============================================================== */

/* A thread per point: its state, and the rejected ones counted with one
 * atomic per warp (ballot + popc). */
__global__ void kdp_classify_kernel(const float *pts, uint32_t n, uint32_t dim, uint8_t *state, KdpCounters *ctr)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const bool bad = i < n && !kdp_finite(pts + i * dim, dim);
    if (i < n) state[i] = bad ? KDP_REJECTED : KDP_KEEP;
    const uint32_t b = __ballot_sync(~0u, bad);
    if ((threadIdx.x & 31) == 0 && b) atomicAdd(&ctr->rejected, (uint32_t)__popc(b));
}

/* ==== 2. presort ================================================================ */

/* The keys of one radix pass: coordinates c and c2 of the point each
 * reference names, c in the high half (c2 >= dim: none, a zero low half);
 * rejected points get kKeyRejected, so they sort last. ref NULL: the
 * references are the identity, written to ref_out (a pass from index
 * order: stable passes then break ties by index). */
__global__ void kdp_keys_kernel(const float *pts, uint32_t n, uint32_t dim, uint32_t c, uint32_t c2,
                                const uint8_t *state, const uint32_t *ref, uint32_t *ref_out, uint64_t *keys)
{
    const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    uint32_t r = (uint32_t)j;
    if (ref) r = ref[j];
    else ref_out[j] = r;
    const float *x = pts + (size_t)r * dim;
    keys[j] = state[r] == KDP_REJECTED ? kKeyRejected
                                       : (uint64_t)kdp_key_bits(x[c]) << 32 | (c2 < dim ? kdp_key_bits(x[c2]) : 0u);
}

/* Sets *flag when two neighbouring finite keys are equal: the first pass
 * alone is then not the super-key order. */
__global__ void kdp_ties_kernel(const uint64_t *keys, uint32_t n, uint32_t *flag)
{
    const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j == 0 || j >= n) return;
    if (keys[j] != kKeyRejected && keys[j] == keys[j - 1]) *flag = 1; /* same value from any thread */
}

/* ==== 3. duplicates ============================================================= */

/* A thread per position of array 0 (fully sorted, rejected last): a point
 * equal to its predecessor is a duplicate (the lowest index of a run comes
 * first). Only thread j writes state[ref[j]]: no race. */
__global__ void kdp_mark_duplicates_kernel(const float *pts, uint32_t n, uint32_t dim, const uint32_t *ref0,
                                           uint8_t *state, KdpCounters *ctr)
{
    const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    bool dup = false;
    if (j > 0 && j < n) {
        const uint32_t r = ref0[j];
        dup = state[r] != KDP_REJECTED &&
              kdp_super_cmp(pts + (size_t)r * dim, pts + (size_t)ref0[j - 1] * dim, 0, dim) == 0;
        if (dup) state[r] = KDP_DUPLICATE;
    }
    const uint32_t b = __ballot_sync(~0u, dup);
    if ((threadIdx.x & 31) == 0 && b) atomicAdd(&ctr->duplicates, (uint32_t)__popc(b));
}

/* ==== the warp compaction (seed 004, "Remove Duplicates" and "Partitioning") ==== */

/* Wide, pass 1 (Billeter et al.'s count pass): a warp per chunk of
 * RT_KDP_GPU_CHUNK references of a range (warp w: range w / cpr, chunk w %
 * cpr; array slot blockIdx.y) decides each reference's side once and keeps
 * the two ballots, so pass 2 needs no second comparison (the seed writes a
 * temporary copy for the same reason), and counts both sides. */
template <bool SPLIT>
__global__ void kdp_wide_count_kernel(KdpJob j, uint64_t *counts, uint2 *masks)
{
    const uint32_t lane = threadIdx.x & 31, slot = blockIdx.y;
    const size_t w = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (w >= (size_t)j.ranges * j.cpr) return; /* the whole warp: w is the same on its lanes */
    const uint32_t i = (uint32_t)(w / j.cpr);
    const size_t first = (size_t)(w % j.cpr) * RT_KDP_GPU_CHUNK;
    uint32_t lo, size;
    kdp_job_range<SPLIT>(j, i, &lo, &size);
    float med[RT_KDP_MAX_DIM];
    kdp_job_median<SPLIT>(j, lo, size, med);
    const size_t chunk = (size_t)slot * j.ranges * j.cpr + w;
    const uint32_t *in = j.slots.in[slot];
    uint32_t nl = 0, nr = 0;
    for (uint32_t t = 0; t < kIters; t++) {
        const size_t k = first + t * 32 + lane; /* position in the range */
        const int side = k < size ? kdp_job_side<SPLIT>(j, in[lo + k], med) : 2;
        const uint32_t l = __ballot_sync(~0u, side == 0), r = __ballot_sync(~0u, side == 1);
        if (lane == 0) masks[chunk * kIters + t] = make_uint2(l, r);
        nl += __popc(l);
        nr += __popc(r);
    }
    if (lane == 0) counts[chunk] = nl | (uint64_t)nr << 32;
}

/* Wide, pass 2: the chunk's place in its range's left and right parts is
 * the scan of the counts before it in the range (an exclusive scan over
 * all chunks, less the range's first chunk's: the 64-bit difference is
 * exact, both halves below 2^32); each lane's place within the warp's
 * output is the popc of the ballot's lanes below it. */
template <bool SPLIT>
__global__ void kdp_wide_scatter_kernel(KdpJob j, const uint64_t *scan, const uint2 *masks)
{
    const uint32_t lane = threadIdx.x & 31, slot = blockIdx.y;
    const size_t w = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (w >= (size_t)j.ranges * j.cpr) return;
    const uint32_t i = (uint32_t)(w / j.cpr);
    const size_t first = (size_t)(w % j.cpr) * RT_KDP_GPU_CHUNK;
    uint32_t lo, size;
    kdp_job_range<SPLIT>(j, i, &lo, &size);
    const size_t chunk = (size_t)slot * j.ranges * j.cpr + w, range0 = (size_t)slot * j.ranges * j.cpr + (size_t)i * j.cpr;
    const uint64_t before = scan[chunk] - scan[range0];
    uint32_t nl = lo + (uint32_t)before, nr = kdp_right_start(lo, size) + (uint32_t)(before >> 32);
    const uint32_t below = (1u << lane) - 1u;
    const uint32_t *in = j.slots.in[slot];
    uint32_t *out = j.slots.out[slot];
    for (uint32_t t = 0; t < kIters; t++) {
        const size_t k = first + t * 32 + lane;
        const uint2 m = masks[chunk * kIters + t];
        if (k < size) {
            if ((m.x >> lane) & 1u) out[nl + __popc(m.x & below)] = in[lo + k];
            else if ((m.y >> lane) & 1u) out[nr + __popc(m.y & below)] = in[lo + k];
        }
        nl += __popc(m.x);
        nr += __popc(m.y);
    }
}

/* Narrow: W lanes (32, 16, 8 or 4) per range of a level, one pass: the
 * group walks its range W references at a time, and each ballot's bits of
 * the group (masked out of the warp's) give the lanes' places and advance
 * the group's two output positions (seed 004: the second partitioner, and
 * the third, which "subdivided the warp by 2, 4, or 8 through appropriate
 * offsetting of the thread id and masking of the compare results"). Every
 * lane runs `iters` = ceil(longest range / W) steps, so the ballots are
 * warp-uniform; ranges past the level's and short ones simply have no
 * references left. */
template <int W>
__global__ void kdp_narrow_kernel(KdpJob j, uint32_t iters)
{
    static_assert(W == 4 || W == 8 || W == 16 || W == 32, "a group divides the warp");
    const uint32_t lane = threadIdx.x & 31, sub = lane % W, slot = blockIdx.y;
    const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / W;
    uint32_t lo = 0, size = 0;
    if (i < j.ranges) kdp_level_range(j.n, j.level, (uint32_t)i, &lo, &size);
    float med[RT_KDP_MAX_DIM];
    kdp_job_median<true>(j, lo, size, med);
    const uint32_t group = W == 32 ? ~0u : ((1u << (W % 32)) - 1u) << (lane - sub);
    const uint32_t below = ((1u << lane) - 1u) & group;
    const uint32_t *in = j.slots.in[slot];
    uint32_t *out = j.slots.out[slot];
    uint32_t nl = lo, nr = kdp_right_start(lo, size);
    for (uint32_t t = 0; t < iters; t++) {
        const uint32_t k = t * W + sub;
        uint32_t r = 0;
        int side = 2;
        if (k < size) {
            r = in[lo + k];
            side = kdp_job_side<true>(j, r, med);
        }
        const uint32_t l = __ballot_sync(~0u, side == 0), g = __ballot_sync(~0u, side == 1);
        if (side == 0) out[nl + __popc(l & below)] = r;
        else if (side == 1) out[nr + __popc(g & below)] = r;
        nl += __popc(l & group);
        nr += __popc(g & group);
    }
}

/* ==== 4. nodes ================================================================== */

/* A thread per range of the level: the node of its median, the point at
 * the median position of the split array. leaves: the level's ranges hold
 * at most kLeafMax points, so the children are single points, the split
 * array's neighbours of the median, and the subtree is done. */
__global__ void kdp_nodes_kernel(const float *pts, uint32_t dim, uint32_t n, uint32_t level, uint32_t ranges,
                                 const uint32_t *split_ref, int leaves, RtKdpNode *nodes, float *coords)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= ranges) return;
    uint32_t lo, size;
    kdp_level_range(n, level, (uint32_t)i, &lo, &size);
    if (size == 0) return;
    const uint32_t m = lo + (size - 1) / 2;
    kdp_put_node(nodes, coords, pts, dim, lo, size, split_ref[m]);
    if (!leaves) return;
    if (m > lo) kdp_put_node(nodes, coords, pts, dim, lo, m - lo, split_ref[lo]);
    if (m + 1 < lo + size) kdp_put_node(nodes, coords, pts, dim, m + 1, lo + size - m - 1, split_ref[m + 1]);
}

/* ==== queries =================================================================== */

__global__ void kdp_knn_kernel(RtKdpTree t, const float *queries, uint32_t nq, uint32_t kn, float r2, RtKdpHit *hits,
                               uint32_t *counts)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nq) return;
    float q[RT_KDP_MAX_DIM];
    for (uint32_t c = 0; c < t.dim; c++) q[c] = queries[i * t.dim + c];
    RtKdpHit best[RT_KDP_MAX_KNN]; /* the sorted list, in registers / local memory */
    const uint32_t count = kdp_knn_search(&t, q, kn, r2, best);
    for (uint32_t h = 0; h < count; h++) hits[i * kn + h] = best[h];
    counts[i] = count;
}

__global__ void kdp_radius_kernel(RtKdpTree t, const float *queries, uint32_t nq, float r2, uint32_t max_hits,
                                  RtKdpHit *hits, uint32_t *counts)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nq) return;
    float q[RT_KDP_MAX_DIM];
    for (uint32_t c = 0; c < t.dim; c++) q[c] = queries[i * t.dim + c];
    RtKdpHit *out = hits + i * max_hits;
    const uint32_t count = kdp_radius_search(&t, q, r2, out, max_hits);
    kdp_sort_hits(out, count < max_hits ? count : max_hits);
    counts[i] = count;
}

/* ==== host side ================================================================= */

static uint32_t blocks_for(size_t threads) { return (uint32_t)((threads + kBlock - 1) / kBlock); }

/* Grows buffer *p to at least `bytes` (its capacity in *cap); never shrinks. */
static RtStatus kdp_reserve(void **p, size_t *cap, size_t bytes, const char *what, uint32_t n, RtError *err)
{
    if (bytes <= *cap) return RT_OK;
    if (*p) cudaFree(*p);
    *p = NULL;
    *cap = 0;
    char buf[160];
    snprintf(buf, sizeof buf, "KDP: the k-d tree builder's %s for %u points", what, n);
    RtStatus st = rt_gpu_alloc(p, bytes, buf, err);
    if (st == RT_OK) *cap = bytes;
    return st;
}

/* The chunks a level of the wide partition needs (0: it runs narrow or is
 * the last), for the buffers. */
static size_t level_chunks(const RtKdpGpu *g, uint32_t u, uint32_t dim, uint32_t level)
{
    const uint32_t s = u >> level, ranges = 1u << level;
    if (s <= kLeafMax || dim == 1 || (uint64_t)ranges * (dim - 1) >= g->warp_ranges_min) return 0;
    return (size_t)(dim - 1) * ranges * ((s + RT_KDP_GPU_CHUNK - 1) / RT_KDP_GPU_CHUNK);
}

/* The per-point and per-reference buffers for n points of dim, and the
 * radix sort's temporary storage. */
static RtStatus reserve_points(RtKdpGpu *g, uint32_t n, uint32_t dim, RtError *err)
{
    RtStatus st;
    if ((st = kdp_reserve((void **)&g->state, &g->cap_state, n, "point states", n, err)) != RT_OK) return st;
    const size_t words = (size_t)n * sizeof(uint32_t);
    if ((st = kdp_reserve((void **)&g->keys[0], &g->cap_keys, 2 * (size_t)n * sizeof(uint64_t), "sort keys", n,
                          err)) != RT_OK)
        return st;
    g->keys[1] = g->keys[0] + n;
    if ((st = kdp_reserve((void **)&g->ref_pool, &g->cap_refs, 2 * dim * words, "reference arrays", n, err)) != RT_OK)
        return st;
    for (uint32_t b = 0; b < 2; b++)
        for (uint32_t p = 0; p < dim; p++) g->refs[b][p] = g->ref_pool + ((size_t)b * dim + p) * n;
    size_t bytes = 0;
    cub::DoubleBuffer<uint64_t> k(g->keys[0], g->keys[1]);
    cub::DoubleBuffer<uint32_t> v(g->refs[0][0], g->refs[1][0]);
    CUDA_CHECK(err, cub::DeviceRadixSort::SortPairs(NULL, bytes, k, v, (int)n, 0, 64));
    return kdp_reserve(&g->cub_tmp, &g->cap_cub, bytes, "radix sort storage", n, err);
}

/* The tree's arrays for u points and the compaction's chunk buffers (the
 * duplicate removal over n, every wide level over u) with the scan's
 * temporary storage. */
static RtStatus reserve_tree(RtKdpGpu *g, uint32_t n, uint32_t u, uint32_t dim, RtError *err)
{
    RtStatus st;
    if ((st = kdp_reserve((void **)&g->nodes, &g->cap_nodes, (size_t)u * sizeof(RtKdpNode), "nodes", u, err)) != RT_OK)
        return st;
    if ((st = kdp_reserve((void **)&g->coords, &g->cap_coords, (size_t)u * dim * sizeof(float), "node coordinates", u,
                          err)) != RT_OK)
        return st;
    size_t chunks = (size_t)dim * ((n + RT_KDP_GPU_CHUNK - 1) / RT_KDP_GPU_CHUNK);
    for (uint32_t level = 0; level < 32 && (u >> level) > 0; level++) {
        const size_t c = level_chunks(g, u, dim, level);
        if (c > chunks) chunks = c;
    }
    if ((st = kdp_reserve((void **)&g->chunk_count, &g->cap_chunks, 2 * chunks * sizeof(uint64_t), "chunk counts", n,
                          err)) != RT_OK)
        return st;
    g->chunk_scan = g->chunk_count + g->cap_chunks / (2 * sizeof(uint64_t));
    if ((st = kdp_reserve((void **)&g->masks, &g->cap_masks, chunks * kIters * sizeof(uint2), "ballot masks", n,
                          err)) != RT_OK)
        return st;
    size_t bytes = 0;
    CUDA_CHECK(err, cub::DeviceScan::ExclusiveSum(NULL, bytes, g->chunk_count, g->chunk_scan, chunks));
    return kdp_reserve(&g->cub_tmp, &g->cap_cub, bytes, "scan storage", n, err);
}

/* One stable radix pass of array p on the super key's digits i and i + 1
 * (coordinates p + i and p + i + 1 mod dim; none past the last digit),
 * from index order when identity; the sorted keys are returned for the
 * tie check. */
static RtStatus sort_pass(RtKdpGpu *g, const float *d_pts, uint32_t n, uint32_t dim, uint32_t p, uint32_t i,
                          bool identity, const uint64_t **sorted_keys, RtError *err)
{
    const uint32_t c = (p + i) % dim, c2 = i + 1 < dim ? (p + i + 1) % dim : dim;
    RtStatus st = rt_launch(&g->log, "kdp_keys", dim3(blocks_for(n)), dim3(kBlock), 0, kdp_keys_kernel, err, d_pts, n,
                            dim, c, c2, (const uint8_t *)g->state,
                            identity ? (const uint32_t *)NULL : g->refs[0][p], g->refs[0][p], g->keys[0]);
    if (st != RT_OK) return st;
    cub::DoubleBuffer<uint64_t> k(g->keys[0], g->keys[1]);
    cub::DoubleBuffer<uint32_t> v(g->refs[0][p], g->refs[1][p]);
    size_t bytes = g->cap_cub;
    CUDA_CHECK(err, cub::DeviceRadixSort::SortPairs(g->cub_tmp, bytes, k, v, (int)n, 0, 64, g->log.stream));
    if (v.Current() != g->refs[0][p]) { /* the result is in the other buffer: swap the roles */
        g->refs[1][p] = g->refs[0][p];
        g->refs[0][p] = v.Current();
    }
    *sorted_keys = k.Current();
    return RT_OK;
}

/* Waits for the stream and reads the counters. */
static RtStatus read_counters(RtKdpGpu *g, RtError *err)
{
    CUDA_CHECK(err, cudaMemcpyAsync(g->h_ctr, g->d_ctr, sizeof *g->h_ctr, cudaMemcpyDeviceToHost, g->log.stream));
    CUDA_CHECK(err, cudaStreamSynchronize(g->log.stream));
    return RT_OK;
}

/* One compaction of the job's slots, both wide passes and the scan
 * between them (job.cpr set). */
template <bool SPLIT>
static RtStatus compact_wide(RtKdpGpu *g, const KdpJob &job, uint32_t slots, RtError *err)
{
    const size_t warps = (size_t)job.ranges * job.cpr, chunks = warps * slots;
    const dim3 grid(blocks_for(warps * 32), slots);
    RtStatus st = rt_launch(&g->log, "kdp_wide_count", grid, dim3(kBlock), 0, kdp_wide_count_kernel<SPLIT>, err, job,
                            g->chunk_count, g->masks);
    if (st != RT_OK) return st;
    size_t bytes = g->cap_cub;
    CUDA_CHECK(err, cub::DeviceScan::ExclusiveSum(g->cub_tmp, bytes, g->chunk_count, g->chunk_scan, chunks,
                                                  g->log.stream));
    return rt_launch(&g->log, "kdp_wide_scatter", grid, dim3(kBlock), 0, kdp_wide_scatter_kernel<SPLIT>, err, job,
                     (const uint64_t *)g->chunk_scan, (const uint2 *)g->masks);
}

/* The narrow partition with groups of W lanes. */
template <int W>
static RtStatus compact_narrow(RtKdpGpu *g, const KdpJob &job, uint32_t slots, uint32_t longest, RtError *err)
{
    const uint32_t iters = (longest + W - 1) / W;
    return rt_launch(&g->log, "kdp_narrow", dim3(blocks_for((size_t)job.ranges * W), slots), dim3(kBlock), 0,
                     kdp_narrow_kernel<W>, err, job, iters);
}

/* Step 4: the levels, top down. */
static RtStatus build_levels(RtKdpGpu *g, const float *d_pts, uint32_t u, uint32_t dim, RtError *err)
{
    RtStatus st = RT_OK;
    for (uint32_t level = 0; level < 32 && (u >> level) > 0; level++) {
        const uint32_t s = u >> level, ranges = 1u << level, axis = level % dim; /* s: the longest range */
        const int leaves = s <= kLeafMax;
        st = rt_launch(&g->log, "kdp_nodes", dim3(blocks_for(ranges)), dim3(kBlock), 0, kdp_nodes_kernel, err, d_pts,
                       dim, u, level, ranges, (const uint32_t *)g->refs[0][axis], leaves, g->nodes, g->coords);
        if (st != RT_OK || leaves) return st;
        if (dim == 1) continue; /* the one array is split already */
        KdpJob job;
        memset(&job, 0, sizeof job);
        job.pts = d_pts, job.dim = dim, job.n = u, job.level = level, job.axis = axis, job.ranges = ranges;
        job.split_ref = g->refs[0][axis];
        uint32_t slots = 0;
        for (uint32_t q = 0; q < dim; q++)
            if (q != axis) {
                job.slots.in[slots] = g->refs[0][q];
                job.slots.out[slots++] = g->refs[1][q];
            }
        if ((uint64_t)ranges * slots >= g->warp_ranges_min) {
            st = s <= 4    ? compact_narrow<4>(g, job, slots, s, err)
                 : s <= 8  ? compact_narrow<8>(g, job, slots, s, err)
                 : s <= 16 ? compact_narrow<16>(g, job, slots, s, err)
                           : compact_narrow<32>(g, job, slots, s, err);
        } else {
            job.cpr = (s + RT_KDP_GPU_CHUNK - 1) / RT_KDP_GPU_CHUNK;
            st = compact_wide<true>(g, job, slots, err);
        }
        if (st != RT_OK) return st;
        for (uint32_t q = 0; q < dim; q++)
            if (q != axis) {
                uint32_t *t = g->refs[0][q];
                g->refs[0][q] = g->refs[1][q];
                g->refs[1][q] = t;
            }
    }
    return st;
}

extern "C" RtStatus rt_kdp_gpu_create(RtKdpGpu **out, const RtKdpGpuParams *params, RtError *err)
{
    *out = NULL;
    int count = 0, device = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        cudaGetLastError(); /* clear the sticky "no device" error */
        return rt_fail(err, RT_ERR_NO_DEVICE, "KDP: no CUDA device for the GPU k-d tree builder");
    }
    RtKdpGpu *g = (RtKdpGpu *)calloc(1, sizeof *g);
    if (!g) return rt_fail(err, RT_ERR_OOM, "KDP: out of host memory");
    RtKdpGpuParams p = params ? *params : rt_kdp_gpu_params_default();
    RtStatus st = RT_OK;
    cudaDeviceProp prop;
    if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
        st = rt_fail(err, RT_ERR_CUDA, "KDP: cannot read the device's properties: %s",
                     cudaGetErrorString(cudaGetLastError()));
        goto fail;
    }
    /* the resident warps: more ranges than this and a warp each keeps
     * the GPU busy (seed 004: "less than the number of running warps") */
    g->warp_ranges_min = p.warp_ranges_min ? p.warp_ranges_min
                                           : (uint32_t)prop.multiProcessorCount * (prop.maxThreadsPerMultiProcessor / 32);
    for (int i = 0; i < 4 && st == RT_OK; i++)
        if (cudaEventCreate(&g->ev[i]) != cudaSuccess) st = rt_fail(err, RT_ERR_CUDA, "KDP: cudaEventCreate failed");
    if (st != RT_OK) goto fail;
    if ((st = rt_gpu_alloc((void **)&g->d_ctr, sizeof(KdpCounters), "KDP: the k-d tree builder's counters", err)) !=
        RT_OK)
        goto fail;
    if (cudaMallocHost((void **)&g->h_ctr, sizeof(KdpCounters)) != cudaSuccess) {
        cudaGetLastError();
        st = rt_fail(err, RT_ERR_OOM, "KDP: no pinned host memory for the counters");
        goto fail;
    }
    *out = g;
    return RT_OK;
fail:
    rt_kdp_gpu_destroy(g);
    return st;
}

extern "C" void rt_kdp_gpu_destroy(RtKdpGpu *g)
{
    if (!g) return;
    void *bufs[] = {g->state, g->keys[0], g->ref_pool, g->nodes, g->coords, g->chunk_count, g->masks, g->cub_tmp, g->d_ctr};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) cudaFree(bufs[i]);
    if (g->h_ctr) cudaFreeHost(g->h_ctr);
    for (int i = 0; i < 4; i++)
        if (g->ev[i]) cudaEventDestroy(g->ev[i]);
    rt_launch_log_destroy(&g->log);
    free(g);
}

extern "C" RtStatus rt_kdp_gpu_build(RtKdpGpu *g, const float *d_pts, uint32_t n, uint32_t dim, void *stream,
                                     RtKdpTree *tree, RtKdpStats *st, RtError *err)
{
    RtKdpStats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    memset(tree, 0, sizeof *tree);
    tree->root = RT_KDP_NONE;
    tree->dim = dim;
    st->input = n;
    if (dim < 1 || dim > RT_KDP_MAX_DIM)
        return rt_fail(err, RT_ERR_ARG, "KDP: %u coordinates per point; expected 1..%d", dim, RT_KDP_MAX_DIM);
    if (n > 0 && !d_pts) return rt_fail(err, RT_ERR_ARG, "KDP: %u points but no coordinates", n);
    if (n == RT_KDP_NONE) return rt_fail(err, RT_ERR_ARG, "KDP: %u points; at most %u", n, n - 1);
    if (n > (uint32_t)INT32_MAX) /* CUB's sort takes an int count */
        return rt_fail(err, RT_ERR_ARG, "KDP: %u points; the GPU builder takes at most %d", n, INT32_MAX);
    if (n == 0) return RT_OK;
    g->log.stream = (cudaStream_t)stream;
    rt_launch_log_reset(&g->log);
    const cudaStream_t s = g->log.stream;
    RtStatus rs = reserve_points(g, n, dim, err);
    if (rs != RT_OK) return rs;
    CUDA_CHECK(err, cudaMemsetAsync(g->d_ctr, 0, sizeof(KdpCounters), s));
    CUDA_CHECK(err, cudaEventRecord(g->ev[0], s));

    /* 1. reject */
    if ((rs = rt_launch(&g->log, "kdp_classify", dim3(blocks_for(n)), dim3(kBlock), 0, kdp_classify_kernel, err, d_pts,
                        n, dim, g->state, g->d_ctr)) != RT_OK)
        return rs;

    /* 2. presort: each array on the first two digits of its super key
     * (the whole key when dim <= 2), then the arrays where those tie again
     * on the whole key: stable passes over digit pairs from the least
     * significant, (dim - 2, dim - 1), (dim - 4, dim - 3), ..., to (0, 1)
     * (for odd dim the last two overlap in digit 1, which is harmless) */
    for (uint32_t p = 0; p < dim; p++) {
        const uint64_t *keys;
        if ((rs = sort_pass(g, d_pts, n, dim, p, 0, true, &keys, err)) != RT_OK) return rs;
        if (dim > 2 &&
            (rs = rt_launch(&g->log, "kdp_ties", dim3(blocks_for(n)), dim3(kBlock), 0, kdp_ties_kernel, err, keys, n,
                            &g->d_ctr->ties[p])) != RT_OK)
            return rs;
    }
    if ((rs = read_counters(g, err)) != RT_OK) return rs; /* host wait 1 */
    st->rejected = g->h_ctr->rejected;
    for (uint32_t p = 0; p < dim; p++) {
        if (!g->h_ctr->ties[p]) continue;
        st->resorted++;
        for (uint32_t i = dim - 2;; i = i >= 2 ? i - 2 : 0) {
            const uint64_t *keys;
            if ((rs = sort_pass(g, d_pts, n, dim, p, i, i == dim - 2, &keys, err)) != RT_OK) return rs;
            if (i == 0) break;
        }
    }
    CUDA_CHECK(err, cudaEventRecord(g->ev[1], s));

    /* 3. duplicates: marked in array 0, then every array compacted */
    if ((rs = rt_launch(&g->log, "kdp_mark_duplicates", dim3(blocks_for(n)), dim3(kBlock), 0,
                        kdp_mark_duplicates_kernel, err, d_pts, n, dim, (const uint32_t *)g->refs[0][0], g->state,
                        g->d_ctr)) != RT_OK)
        return rs;
    if ((rs = read_counters(g, err)) != RT_OK) return rs; /* host wait 2 */
    st->duplicates = g->h_ctr->duplicates;
    const uint32_t u = n - st->rejected - st->duplicates;
    if ((rs = reserve_tree(g, n, u, dim, err)) != RT_OK) return rs;
    if (u > 0) {
        KdpJob job;
        memset(&job, 0, sizeof job);
        job.pts = d_pts, job.dim = dim, job.n = n, job.ranges = 1, job.state = g->state;
        job.cpr = (n + RT_KDP_GPU_CHUNK - 1) / RT_KDP_GPU_CHUNK;
        for (uint32_t p = 0; p < dim; p++) {
            job.slots.in[p] = g->refs[0][p];
            job.slots.out[p] = g->refs[1][p];
        }
        if ((rs = compact_wide<false>(g, job, dim, err)) != RT_OK) return rs;
        for (uint32_t p = 0; p < dim; p++) {
            uint32_t *t = g->refs[0][p];
            g->refs[0][p] = g->refs[1][p];
            g->refs[1][p] = t;
        }
    }
    CUDA_CHECK(err, cudaEventRecord(g->ev[2], s));

    /* 4. the tree, level by level */
    if ((rs = build_levels(g, d_pts, u, dim, err)) != RT_OK) return rs;
    CUDA_CHECK(err, cudaEventRecord(g->ev[3], s));

    tree->count = u;
    tree->depth = kdp_depth(u);
    tree->root = u ? kdp_median(0, u - 1) : RT_KDP_NONE;
    tree->nodes = u ? g->nodes : NULL;
    tree->coords = u ? g->coords : NULL;
    if (st != &local) {
        float ms[3];
        CUDA_CHECK(err, cudaEventSynchronize(g->ev[3]));
        for (int i = 0; i < 3; i++) CUDA_CHECK(err, cudaEventElapsedTime(&ms[i], g->ev[i], g->ev[i + 1]));
        st->sort_ms = ms[0], st->dedup_ms = ms[1], st->build_ms = ms[2];
    }
    return RT_OK;
}

static RtStatus check_queries(const RtKdpTree *tree, const float *d_queries, uint32_t nq, const void *d_hits,
                              const uint32_t *d_counts, RtError *err)
{
    if (tree->dim < 1 || tree->dim > RT_KDP_MAX_DIM)
        return rt_fail(err, RT_ERR_ARG, "KDP: a tree of %u coordinates per point", tree->dim);
    if (nq > 0 && (!d_queries || !d_hits || !d_counts))
        return rt_fail(err, RT_ERR_ARG, "KDP: %u queries without query, hit or count arrays", nq);
    return RT_OK;
}

extern "C" RtStatus rt_kdp_gpu_knn(RtKdpGpu *g, const RtKdpTree *tree, const float *d_queries, uint32_t nq,
                                   uint32_t kn, float r2, RtKdpHit *d_hits, uint32_t *d_counts, void *stream,
                                   RtError *err)
{
    RtStatus st = check_queries(tree, d_queries, nq, d_hits, d_counts, err);
    if (st != RT_OK) return st;
    if (kn < 1 || kn > RT_KDP_MAX_KNN)
        return rt_fail(err, RT_ERR_ARG, "KDP: %u neighbours per query; expected 1..%d", kn, RT_KDP_MAX_KNN);
    g->log.stream = (cudaStream_t)stream;
    return rt_launch(&g->log, "kdp_knn", dim3(blocks_for(nq)), dim3(kBlock), 0, kdp_knn_kernel, err, *tree, d_queries,
                     nq, kn, r2, d_hits, d_counts);
}

extern "C" RtStatus rt_kdp_gpu_radius(RtKdpGpu *g, const RtKdpTree *tree, const float *d_queries, uint32_t nq,
                                      float r2, uint32_t max_hits, RtKdpHit *d_hits, uint32_t *d_counts, void *stream,
                                      RtError *err)
{
    RtStatus st = check_queries(tree, d_queries, nq, d_hits, d_counts, err);
    if (st != RT_OK) return st;
    if (max_hits < 1) return rt_fail(err, RT_ERR_ARG, "KDP: a radius query with room for no hit");
    g->log.stream = (cudaStream_t)stream;
    return rt_launch(&g->log, "kdp_radius", dim3(blocks_for(nq)), dim3(kBlock), 0, kdp_radius_kernel, err, *tree,
                     d_queries, nq, r2, max_hits, d_hits, d_counts);
}

extern "C" RtStatus rt_kdp_gpu_download(const RtKdpTree *dev, RtKdpTree *host, RtError *err)
{
    memset(host, 0, sizeof *host);
    host->dim = dev->dim;
    host->count = dev->count;
    host->root = dev->root;
    host->depth = dev->depth;
    if (dev->count == 0) return RT_OK;
    host->nodes = (RtKdpNode *)malloc((size_t)dev->count * sizeof(RtKdpNode));
    host->coords = (float *)malloc((size_t)dev->count * dev->dim * sizeof(float));
    if (!host->nodes || !host->coords) {
        rt_kdp_free(host);
        return rt_fail(err, RT_ERR_OOM, "KDP: out of host memory for a tree of %u points", dev->count);
    }
    cudaError_t e = cudaMemcpy(host->nodes, dev->nodes, (size_t)dev->count * sizeof(RtKdpNode), cudaMemcpyDeviceToHost);
    if (e == cudaSuccess)
        e = cudaMemcpy(host->coords, dev->coords, (size_t)dev->count * dev->dim * sizeof(float), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        rt_kdp_free(host);
        return rt_fail(err, RT_ERR_CUDA, "KDP: downloading the tree: %s", cudaGetErrorString(e));
    }
    return RT_OK;
}
