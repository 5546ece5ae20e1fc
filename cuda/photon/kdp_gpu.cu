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
 * depth-first oracle's tree.
 *
 * Two GPUs (RtKdpGpuParams.devices = 2; seed 004, "Multiple GPU
 * Extensions"), build_two: each GPU presorts array 0 of half the points;
 * Tanasic et al.'s swap and merge (a pivot by binary search, the pieces
 * traded with peer copies, a merge on each GPU) leaves GPU 0 the lower
 * and GPU 1 the upper half of the global order; duplicates are marked
 * across the boundary and removed; the references move so that GPU 0
 * holds the root and its left subtree, GPU 1 the right one; each GPU
 * then sorts its own arrays 1..k-1 (the seed's refactoring: this replaces
 * the root's partition) and builds its subtree with the one-GPU levels;
 * GPU 1's nodes are copied next to GPU 0's. */
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
#include "photon/kdp_warp.cuh"

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
    uint32_t kept;     /* references left after the duplicate removal */
    uint32_t pivot;    /* 2 GPUs: the references the swap trades each way */
    uint32_t prev_ref; /* 2 GPUs, GPU 1: GPU 0's last reference of array 0 */
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
    int device;               /* the CUDA device of this workspace's buffers */
    RtKdpGpu *peer;           /* devices = 2: the second GPU's workspace */
    int peer_access;          /* the two GPUs read each other's memory directly */
    RtLaunchLog log;
    cudaStream_t own_stream;  /* the second GPU's stream (the first uses the caller's) */
    cudaEvent_t mark;         /* orders one GPU's stream after the other's */
    /* one GPU: start, presorted, deduplicated, built; two: start, merged,
     * deduplicated, subtree arrays sorted, built */
    cudaEvent_t ev[5];
    KdpCounters *d_ctr, *h_ctr;
    float *pts;               /* the second GPU: its copy of the points */
    size_t cap_pts;
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
 * numbering rule, its coordinates copied. base: the number of the
 * subtree's first position (2 GPUs: GPU 1 builds the right subtree from
 * its position 0 and its nodes are copied to base), added to the
 * children's numbers. */
__device__ __forceinline__ void kdp_put_node(RtKdpNode *nodes, float *coords, const float *pts, uint32_t dim,
                                             uint32_t lo, uint32_t size, uint32_t point, uint32_t base)
{
    const uint32_t hi = lo + size - 1, m = kdp_median(lo, hi);
    RtKdpNode nd;
    nd.point = point;
    nd.child[0] = m > lo ? base + kdp_median(lo, m - 1) : RT_KDP_NONE;
    nd.child[1] = m < hi ? base + kdp_median(m + 1, hi) : RT_KDP_NONE;
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
 * references are first, first + 1, ... (a pass from index order: stable
 * passes then break ties by index); ref_out gets the references unless it
 * is ref. */
__global__ void kdp_keys_kernel(const float *pts, uint32_t n, uint32_t dim, uint32_t c, uint32_t c2,
                                const uint8_t *state, const uint32_t *ref, uint32_t first, uint32_t *ref_out,
                                uint64_t *keys)
{
    const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    const uint32_t r = ref ? ref[j] : first + (uint32_t)j;
    if (ref_out != ref) ref_out[j] = r;
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
 * first). prev (NULL: none): the reference before position 0, on the
 * other GPU (2 GPUs: GPU 1's first point may repeat GPU 0's last). Only
 * thread j writes state[ref[j]]: no race. Counts the duplicates and the
 * references kept. */
__global__ void kdp_mark_duplicates_kernel(const float *pts, uint32_t n, uint32_t dim, const uint32_t *ref0,
                                           const uint32_t *prev, uint8_t *state, KdpCounters *ctr)
{
    const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    bool dup = false, kept = false;
    if (j < n) {
        const uint32_t r = ref0[j];
        const bool finite = state[r] != KDP_REJECTED;
        if (finite && (j > 0 || prev))
            dup = kdp_super_cmp(pts + (size_t)r * dim, pts + (size_t)(j > 0 ? ref0[j - 1] : *prev) * dim, 0, dim) == 0;
        if (dup) state[r] = KDP_DUPLICATE;
        kept = finite && !dup;
    }
    const uint32_t b = __ballot_sync(~0u, dup), k = __ballot_sync(~0u, kept);
    if ((threadIdx.x & 31) == 0 && b) atomicAdd(&ctr->duplicates, (uint32_t)__popc(b));
    if ((threadIdx.x & 31) == 0 && k) atomicAdd(&ctr->kept, (uint32_t)__popc(k));
}

/* ==== 2 GPUs: swap and merge (seed 004, "Two GPU Sort") ========================== */

/* The presort's order of references a and b in array p: finite points by
 * the super key from p, then rejected ones; ties by index. A strict total
 * order, the one the radix passes produce. */
__device__ __forceinline__ bool kdp_ref_less(const float *pts, uint32_t dim, uint32_t p, uint32_t a, uint32_t b)
{
    const float *x = pts + (size_t)a * dim, *y = pts + (size_t)b * dim;
    const bool fx = kdp_finite(x, dim), fy = kdp_finite(y, dim);
    if (fx != fy) return fx;
    const int c = fx ? kdp_super_cmp(x, y, p, dim) : 0;
    return c != 0 ? c < 0 : a < b;
}

/* Tanasic et al.'s pivot: a (na, GPU 0) and b (nb, GPU 1) sorted; the x
 * largest of a and the x smallest of b trade places, so that GPU 0 then
 * holds the na smallest of all. x is the least with x = min(na, nb) or
 * a[na - 1 - x] < b[x] (the seed: "can be found with a binary search and
 * hence only requires a single thread"). */
__global__ void kdp_pivot_kernel(const float *pts, uint32_t dim, uint32_t p, const uint32_t *a, uint32_t na,
                                 const uint32_t *b, uint32_t nb, uint32_t *x)
{
    uint32_t lo = 0, hi = na < nb ? na : nb;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (kdp_ref_less(pts, dim, p, b[mid], a[na - 1 - mid])) lo = mid + 1;
        else hi = mid;
    }
    *x = lo;
}

/* Merges the sorted runs in[0, a) and in[a, n) into out, a thread per
 * reference: its place is its place in its own run plus the number of the
 * other run's references below it, a binary search (Satish, Harris and
 * Garland's low-level merge, which the seed uses inside its Merge Path
 * blocks). The order is strict, so no two places collide. */
__global__ void kdp_merge_kernel(const float *pts, uint32_t dim, uint32_t p, const uint32_t *in, uint32_t a,
                                 uint32_t n, uint32_t *out)
{
    const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    const uint32_t r = in[j];
    const bool first = j < a;
    const uint32_t *other = first ? in + a : in;
    uint32_t lo = 0, hi = first ? n - a : a;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (kdp_ref_less(pts, dim, p, other[mid], r)) lo = mid + 1;
        else hi = mid;
    }
    out[(first ? j : j - a) + lo] = r;
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
 * the median position of the split array (children numbered from base). leaves: the level's ranges hold
 * at most kLeafMax points, so the children are single points, the split
 * array's neighbours of the median, and the subtree is done. */
__global__ void kdp_nodes_kernel(const float *pts, uint32_t dim, uint32_t n, uint32_t level, uint32_t ranges,
                                 const uint32_t *split_ref, int leaves, uint32_t base, RtKdpNode *nodes,
                                 float *coords)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= ranges) return;
    uint32_t lo, size;
    kdp_level_range(n, level, (uint32_t)i, &lo, &size);
    if (size == 0) return;
    const uint32_t m = lo + (size - 1) / 2;
    kdp_put_node(nodes, coords, pts, dim, lo, size, split_ref[m], base);
    if (!leaves) return;
    if (m > lo) kdp_put_node(nodes, coords, pts, dim, lo, m - lo, split_ref[lo], base);
    if (m + 1 < lo + size) kdp_put_node(nodes, coords, pts, dim, m + 1, lo + size - m - 1, split_ref[m + 1], base);
}

/* ==== queries =================================================================== */

/* kWarp: the warp's queries walk together (kdp_warp.cuh). */
template <bool kWarp>
__global__ void kdp_knn_kernel(RtKdpTree t, const float *queries, uint32_t nq, uint32_t kn, float r2, RtKdpHit *hits,
                               uint32_t *counts)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nq) return;
    float q[RT_KDP_MAX_DIM];
    for (uint32_t c = 0; c < t.dim; c++) q[c] = queries[i * t.dim + c];
    RtKdpHit best[RT_KDP_MAX_KNN]; /* the sorted list, in registers / local memory */
    const uint32_t count = kWarp ? kdp_knn_collect_warp(&t, q, kn, r2, best) : kdp_knn_collect(&t, q, kn, r2, best);
    kdp_heap_sort(best, count); /* kdp_knn_search's order */
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

/* The per-point and per-reference buffers: states for n_state points (by
 * input index), dim reference arrays of n and their second buffers, the
 * radix sort's keys and temporary storage for n. */
static RtStatus reserve_points(RtKdpGpu *g, uint32_t n_state, uint32_t n, uint32_t dim, RtError *err)
{
    RtStatus st;
    if ((st = kdp_reserve((void **)&g->state, &g->cap_state, n_state, "point states", n_state, err)) != RT_OK)
        return st;
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

/* The tree's arrays for `nodes` points and the compaction's chunk buffers
 * (the duplicate removal over n references, every wide level of a tree of
 * u points) with the scan's temporary storage. */
static RtStatus reserve_tree(RtKdpGpu *g, uint32_t n, uint32_t u, uint32_t nodes, uint32_t dim, RtError *err)
{
    RtStatus st;
    if ((st = kdp_reserve((void **)&g->nodes, &g->cap_nodes, (size_t)nodes * sizeof(RtKdpNode), "nodes", nodes,
                          err)) != RT_OK)
        return st;
    if ((st = kdp_reserve((void **)&g->coords, &g->cap_coords, (size_t)nodes * dim * sizeof(float),
                          "node coordinates", nodes, err)) != RT_OK)
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
 * (coordinates p + i and p + i + 1 mod dim; none past the last digit) of
 * the references in `from` (NULL: first, first + 1, ..., from index
 * order); the sorted keys are returned for the tie check. */
static RtStatus sort_pass(RtKdpGpu *g, const float *d_pts, uint32_t n, uint32_t dim, uint32_t p, uint32_t i,
                          const uint32_t *from, uint32_t first, const uint64_t **sorted_keys, RtError *err)
{
    const uint32_t c = (p + i) % dim, c2 = i + 1 < dim ? (p + i + 1) % dim : dim;
    RtStatus st = rt_launch(&g->log, "kdp_keys", dim3(blocks_for(n)), dim3(kBlock), 0, kdp_keys_kernel, err, d_pts, n,
                            dim, c, c2, (const uint8_t *)g->state, from, first, g->refs[0][p], g->keys[0]);
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

/* Step 2 for array p of n references, first part: one pass on the super
 * key's first two digits (the whole key when dim <= 2) and the tie check.
 * from NULL: the references first .. first + n - 1 from index order, so
 * tied keys stay in index order as the oracle's; else those in `from`
 * (distinct points, 2 GPUs' subtree arrays: the order is strict, so it
 * does not matter where they start). */
static RtStatus presort_start(RtKdpGpu *g, const float *d_pts, uint32_t n, uint32_t dim, uint32_t p,
                              const uint32_t *from, uint32_t first, RtError *err)
{
    const uint64_t *keys;
    if (n == 0) return RT_OK;
    RtStatus rs = sort_pass(g, d_pts, n, dim, p, 0, from, first, &keys, err);
    if (rs != RT_OK || dim <= 2) return rs;
    return rt_launch(&g->log, "kdp_ties", dim3(blocks_for(n)), dim3(kBlock), 0, kdp_ties_kernel, err, keys, n,
                     &g->d_ctr->ties[p]);
}

/* Second part, once the host has read the tie flags: where the first
 * pass tied, array p again on the whole key, stable passes over digit
 * pairs from the least significant, (dim - 2, dim - 1), (dim - 4,
 * dim - 3), ..., to (0, 1) (for odd dim the last two overlap in digit 1,
 * which is harmless); the first from index order (from_index) or from the
 * array's own order. */
static RtStatus presort_finish(RtKdpGpu *g, const float *d_pts, uint32_t n, uint32_t dim, uint32_t p,
                               bool from_index, uint32_t first, uint32_t *resorted, RtError *err)
{
    if (n == 0 || !g->h_ctr->ties[p]) return RT_OK;
    (*resorted)++;
    for (uint32_t i = dim - 2;; i = i >= 2 ? i - 2 : 0) {
        const uint64_t *keys;
        const uint32_t *from = i == dim - 2 && from_index ? (const uint32_t *)NULL : g->refs[0][p];
        RtStatus rs = sort_pass(g, d_pts, n, dim, p, i, from, first, &keys, err);
        if (rs != RT_OK) return rs;
        if (i == 0) break;
    }
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

/* Step 3's removal: arrays 0 .. arrays - 1 of n references compacted to
 * those kept (state KDP_KEEP), in order. */
static RtStatus remove_dropped(RtKdpGpu *g, const float *d_pts, uint32_t n, uint32_t dim, uint32_t arrays,
                               RtError *err)
{
    KdpJob job;
    memset(&job, 0, sizeof job);
    job.pts = d_pts, job.dim = dim, job.n = n, job.ranges = 1, job.state = g->state;
    job.cpr = (n + RT_KDP_GPU_CHUNK - 1) / RT_KDP_GPU_CHUNK;
    for (uint32_t p = 0; p < arrays; p++) {
        job.slots.in[p] = g->refs[0][p];
        job.slots.out[p] = g->refs[1][p];
    }
    RtStatus rs = compact_wide<false>(g, job, arrays, err);
    if (rs != RT_OK) return rs;
    for (uint32_t p = 0; p < arrays; p++) {
        uint32_t *t = g->refs[0][p];
        g->refs[0][p] = g->refs[1][p];
        g->refs[1][p] = t;
    }
    return RT_OK;
}

/* The narrow partition with groups of W lanes. */
template <int W>
static RtStatus compact_narrow(RtKdpGpu *g, const KdpJob &job, uint32_t slots, uint32_t longest, RtError *err)
{
    const uint32_t iters = (longest + W - 1) / W;
    return rt_launch(&g->log, "kdp_narrow", dim3(blocks_for((size_t)job.ranges * W), slots), dim3(kBlock), 0,
                     kdp_narrow_kernel<W>, err, job, iters);
}

/* Step 4: the levels of the (sub)tree of the u points in the arrays, top
 * down. depth0: the depth of its root in the whole tree (its level L
 * splits on coordinate (depth0 + L) mod dim); base: the node number of
 * its first position (kdp_put_node). One GPU: the whole tree, 0 and 0. */
static RtStatus build_levels(RtKdpGpu *g, const float *d_pts, uint32_t u, uint32_t dim, uint32_t depth0,
                             uint32_t base, RtError *err)
{
    RtStatus st = RT_OK;
    for (uint32_t level = 0; level < 32 && (u >> level) > 0; level++) {
        const uint32_t s = u >> level, ranges = 1u << level, axis = (depth0 + level) % dim; /* s: the longest range */
        const int leaves = s <= kLeafMax;
        st = rt_launch(&g->log, "kdp_nodes", dim3(blocks_for(ranges)), dim3(kBlock), 0, kdp_nodes_kernel, err, d_pts,
                       dim, u, level, ranges, (const uint32_t *)g->refs[0][axis], leaves, base, g->nodes, g->coords);
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

/* The stage times from the events (waits for the last). */
static RtStatus stage_times(RtKdpGpu *g, int events, RtKdpStats *st, RtError *err)
{
    float ms[4];
    CUDA_CHECK(err, cudaEventSynchronize(g->ev[events - 1]));
    for (int i = 0; i + 1 < events; i++) CUDA_CHECK(err, cudaEventElapsedTime(&ms[i], g->ev[i], g->ev[i + 1]));
    if (events == 4) { /* presort, duplicates, levels */
        st->sort_ms = ms[0], st->dedup_ms = ms[1], st->build_ms = ms[2];
    } else { /* 2 GPUs: presort of array 0 and the merge, duplicates, subtree presorts, levels and the gather */
        st->sort_ms = ms[0] + ms[2], st->dedup_ms = ms[1], st->build_ms = ms[3];
    }
    return RT_OK;
}

/* One GPU: steps 1 to 4 on g's stream, n >= 1. */
static RtStatus build_one(RtKdpGpu *g, const float *d_pts, uint32_t n, uint32_t dim, uint32_t *u_out,
                          RtKdpStats *st, RtError *err)
{
    const cudaStream_t s = g->log.stream;
    RtStatus rs = reserve_points(g, n, n, dim, err);
    if (rs != RT_OK) return rs;
    CUDA_CHECK(err, cudaMemsetAsync(g->d_ctr, 0, sizeof(KdpCounters), s));
    CUDA_CHECK(err, cudaEventRecord(g->ev[0], s));

    /* 1. reject */
    if ((rs = rt_launch(&g->log, "kdp_classify", dim3(blocks_for(n)), dim3(kBlock), 0, kdp_classify_kernel, err, d_pts,
                        n, dim, g->state, g->d_ctr)) != RT_OK)
        return rs;

    /* 2. presort: each array on the first two digits of its super key,
     * then the arrays where those tie again on the whole key */
    for (uint32_t p = 0; p < dim; p++)
        if ((rs = presort_start(g, d_pts, n, dim, p, NULL, 0, err)) != RT_OK) return rs;
    if ((rs = read_counters(g, err)) != RT_OK) return rs; /* host wait 1 */
    st->rejected = g->h_ctr->rejected;
    for (uint32_t p = 0; p < dim; p++)
        if ((rs = presort_finish(g, d_pts, n, dim, p, true, 0, &st->resorted, err)) != RT_OK) return rs;
    CUDA_CHECK(err, cudaEventRecord(g->ev[1], s));

    /* 3. duplicates: marked in array 0, then every array compacted */
    if ((rs = rt_launch(&g->log, "kdp_mark_duplicates", dim3(blocks_for(n)), dim3(kBlock), 0,
                        kdp_mark_duplicates_kernel, err, d_pts, n, dim, (const uint32_t *)g->refs[0][0],
                        (const uint32_t *)NULL, g->state, g->d_ctr)) != RT_OK)
        return rs;
    if ((rs = read_counters(g, err)) != RT_OK) return rs; /* host wait 2 */
    st->duplicates = g->h_ctr->duplicates;
    const uint32_t u = g->h_ctr->kept;
    if ((rs = reserve_tree(g, n, u, u, dim, err)) != RT_OK) return rs;
    if (u > 0 && (rs = remove_dropped(g, d_pts, n, dim, dim, err)) != RT_OK) return rs;
    CUDA_CHECK(err, cudaEventRecord(g->ev[2], s));

    /* 4. the tree, level by level */
    if ((rs = build_levels(g, d_pts, u, dim, 0, 0, err)) != RT_OK) return rs;
    CUDA_CHECK(err, cudaEventRecord(g->ev[3], s));
    *u_out = u;
    return RT_OK;
}

/* ---- two GPUs (seed 004, "Multiple GPU Extensions") ------------------------------ */

/* Makes w's device the current one: the 2-GPU build queues on both. */
static RtStatus use(const RtKdpGpu *w, RtError *err)
{
    CUDA_CHECK(err, cudaSetDevice(w->device));
    return RT_OK;
}

/* `later`'s stream waits for what `first`'s has queued so far (an event
 * across the devices); leaves later's device current. */
static RtStatus after(RtKdpGpu *later, RtKdpGpu *first, RtError *err)
{
    CUDA_CHECK(err, cudaSetDevice(first->device));
    CUDA_CHECK(err, cudaEventRecord(first->mark, first->log.stream));
    CUDA_CHECK(err, cudaSetDevice(later->device));
    CUDA_CHECK(err, cudaStreamWaitEvent(later->log.stream, first->mark, 0));
    return RT_OK;
}

/* `count` 32-bit words (references, coordinates, node fields) from src on
 * `from`'s device to dst on `to`'s, queued on `by`'s stream (by's device
 * current): a peer copy between the GPUs (direct with peer access, else
 * staged by the driver), a plain one on one GPU. */
static RtStatus copy_words(RtKdpGpu *by, const RtKdpGpu *to, void *dst, const RtKdpGpu *from, const void *src,
                          size_t count, RtError *err)
{
    const size_t bytes = count * sizeof(uint32_t);
    if (bytes == 0) return RT_OK;
    if (to->device == from->device)
        CUDA_CHECK(err, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, by->log.stream));
    else
        CUDA_CHECK(err, cudaMemcpyPeerAsync(dst, to->device, src, from->device, bytes, by->log.stream));
    return RT_OK;
}

/* Reads both GPUs' counters (host wait). */
static RtStatus read_both(RtKdpGpu *w[2], RtError *err)
{
    for (int d = 0; d < 2; d++) {
        RtStatus rs = use(w[d], err);
        if (rs == RT_OK) rs = read_counters(w[d], err);
        if (rs != RT_OK) return rs;
    }
    return RT_OK;
}

/* Steps 1 to 4 on GPUs w[0] (the caller's stream and points) and w[1],
 * n >= 2. The tree is gathered into w[0]'s nodes and coordinates. */
static RtStatus build_two(RtKdpGpu *w[2], const float *d_pts, uint32_t n, uint32_t dim, uint32_t *u_out,
                          RtKdpStats *st, RtError *err)
{
    RtKdpGpu *g0 = w[0], *g1 = w[1];
    /* GPU 0 starts with the lower indices, one more when n is odd: with no
     * duplicate or rejected point it then holds the root and its left
     * subtree already, and nothing moves after the merge */
    const uint32_t half[2] = {kdp_median(0, n - 1) + 1, n - (kdp_median(0, n - 1) + 1)};
    const uint32_t first[2] = {0, half[0]};
    const float *pts[2] = {d_pts, NULL};
    RtStatus rs;

    /* 1. GPU 1 gets its copy of the points (the seed swaps coordinates
     * with the references; a full copy is the speed-up it suggests, "at
     * the cost of more memory"); both classify every point, as either
     * may hold any reference after the swap (the rejected are counted
     * from GPU 0's) */
    if ((rs = use(g0, err)) != RT_OK || (rs = reserve_points(g0, n, half[0], dim, err)) != RT_OK) return rs;
    CUDA_CHECK(err, cudaMemsetAsync(g0->d_ctr, 0, sizeof(KdpCounters), g0->log.stream));
    CUDA_CHECK(err, cudaEventRecord(g0->ev[0], g0->log.stream));
    if ((rs = after(g1, g0, err)) != RT_OK || (rs = reserve_points(g1, n, half[1], dim, err)) != RT_OK ||
        (rs = kdp_reserve((void **)&g1->pts, &g1->cap_pts, (size_t)n * dim * sizeof(float), "copy of the points", n,
                          err)) != RT_OK)
        return rs;
    pts[1] = g1->pts;
    CUDA_CHECK(err, cudaMemsetAsync(g1->d_ctr, 0, sizeof(KdpCounters), g1->log.stream));
    if ((rs = copy_words(g1, g1, g1->pts, g0, d_pts, (size_t)n * dim, err)) != RT_OK) return rs;

    /* 2. each GPU presorts array 0 of its half */
    for (int d = 0; d < 2; d++) {
        if ((rs = use(w[d], err)) != RT_OK ||
            (rs = rt_launch(&w[d]->log, "kdp_classify", dim3(blocks_for(n)), dim3(kBlock), 0, kdp_classify_kernel, err,
                            pts[d], n, dim, w[d]->state, w[d]->d_ctr)) != RT_OK ||
            (rs = presort_start(w[d], pts[d], half[d], dim, 0, NULL, first[d], err)) != RT_OK)
            return rs;
    }
    if ((rs = read_both(w, err)) != RT_OK) return rs; /* host wait 1: tie flags */
    st->rejected = g0->h_ctr->rejected;
    for (int d = 0; d < 2; d++)
        if ((rs = use(w[d], err)) != RT_OK ||
            (rs = presort_finish(w[d], pts[d], half[d], dim, 0, true, first[d], &st->resorted, err)) != RT_OK)
            return rs;

    /* swap and merge (Tanasic et al.): the pivot x on GPU 0, reading
     * GPU 1's array directly where peer access is on, else a copy of it
     * (in GPU 0's sort keys, free now) */
    if ((rs = after(g0, g1, err)) != RT_OK) return rs;
    const uint32_t *b = g1->refs[0][0];
    if (!g0->peer_access) {
        if ((rs = copy_words(g0, g0, g0->keys[0], g1, b, half[1], err)) != RT_OK) return rs;
        b = (const uint32_t *)g0->keys[0];
    }
    if ((rs = rt_launch(&g0->log, "kdp_pivot", dim3(1), dim3(1), 0, kdp_pivot_kernel, err, d_pts, dim, 0u,
                        (const uint32_t *)g0->refs[0][0], half[0], b, half[1], &g0->d_ctr->pivot)) != RT_OK ||
        (rs = read_counters(g0, err)) != RT_OK) /* host wait 2: the copies' sizes */
        return rs;
    const uint32_t x = g0->h_ctr->pivot;
    /* GPU 0: a[0, na - x) and b[0, x); GPU 1: a[na - x, na) and b[x, nb),
     * each pair into the second buffer, then merged back into array 0;
     * each GPU's merge waits until the other has copied from its array */
    if ((rs = copy_words(g0, g0, g0->refs[1][0], g0, g0->refs[0][0], half[0] - x, err)) != RT_OK ||
        (rs = copy_words(g0, g0, g0->refs[1][0] + half[0] - x, g1, g1->refs[0][0], x, err)) != RT_OK ||
        (rs = use(g1, err)) != RT_OK ||
        (rs = copy_words(g1, g1, g1->refs[1][0], g0, g0->refs[0][0] + half[0] - x, x, err)) != RT_OK ||
        (rs = copy_words(g1, g1, g1->refs[1][0] + x, g1, g1->refs[0][0] + x, half[1] - x, err)) != RT_OK ||
        (rs = after(g0, g1, err)) != RT_OK || (rs = after(g1, g0, err)) != RT_OK)
        return rs;
    const uint32_t run[2] = {half[0] - x, x};
    for (int d = 0; d < 2; d++)
        if ((rs = use(w[d], err)) != RT_OK ||
            (rs = rt_launch(&w[d]->log, "kdp_merge", dim3(blocks_for(half[d])), dim3(kBlock), 0, kdp_merge_kernel,
                            err, pts[d], dim, 0u, (const uint32_t *)w[d]->refs[1][0], run[d], half[d],
                            w[d]->refs[0][0])) != RT_OK)
            return rs;
    if ((rs = after(g0, g1, err)) != RT_OK) return rs;
    CUDA_CHECK(err, cudaEventRecord(g0->ev[1], g0->log.stream));

    /* 3. duplicates, marked on both GPUs: GPU 1's first point against
     * GPU 0's last */
    if ((rs = rt_launch(&g0->log, "kdp_mark_duplicates", dim3(blocks_for(half[0])), dim3(kBlock), 0,
                        kdp_mark_duplicates_kernel, err, d_pts, half[0], dim, (const uint32_t *)g0->refs[0][0],
                        (const uint32_t *)NULL, g0->state, g0->d_ctr)) != RT_OK ||
        (rs = copy_words(g0, g1, &g1->d_ctr->prev_ref, g0, g0->refs[0][0] + half[0] - 1, 1, err)) != RT_OK ||
        (rs = after(g1, g0, err)) != RT_OK ||
        (rs = rt_launch(&g1->log, "kdp_mark_duplicates", dim3(blocks_for(half[1])), dim3(kBlock), 0,
                        kdp_mark_duplicates_kernel, err, pts[1], half[1], dim, (const uint32_t *)g1->refs[0][0],
                        (const uint32_t *)&g1->d_ctr->prev_ref, g1->state, g1->d_ctr)) != RT_OK ||
        (rs = read_both(w, err)) != RT_OK) /* host wait 3: the kept counts size the subtrees */
        return rs;
    const uint32_t kept[2] = {g0->h_ctr->kept, g1->h_ctr->kept}, u = kept[0] + kept[1];
    st->duplicates = g0->h_ctr->duplicates + g1->h_ctr->duplicates;
    *u_out = u;
    /* the root m; GPU 0 keeps [0, m] (the left subtree and the root), GPU 1
     * gets (m, u); sub[d]: each one's subtree */
    const uint32_t m = u ? kdp_median(0, u - 1) : 0, sub[2] = {m, u ? u - 1 - m : 0};
    for (int d = 0; d < 2; d++)
        if ((rs = use(w[d], err)) != RT_OK ||
            (rs = reserve_tree(w[d], half[d], sub[d], d == 0 ? u : sub[1], dim, err)) != RT_OK ||
            (kept[d] > 0 && (rs = remove_dropped(w[d], pts[d], half[d], dim, 1, err)) != RT_OK))
            return rs;
    if (u == 0) { /* every point rejected or a duplicate: no tree, the stages end here */
        if ((rs = after(g0, g1, err)) != RT_OK) return rs;
        for (int i = 2; i < 5; i++) CUDA_CHECK(err, cudaEventRecord(g0->ev[i], g0->log.stream));
        return RT_OK;
    }
    /* the references past the root move to GPU 1's front, or GPU 1's
     * first ones up to the root to GPU 0's end (only where duplicates or
     * rejected points unbalanced the halves); GPU 1's array is rebuilt in
     * its second buffer */
    if ((rs = after(g0, g1, err)) != RT_OK) return rs;
    if (kept[0] > m + 1) {
        const uint32_t k = kept[0] - (m + 1);
        if ((rs = copy_words(g0, g1, g1->refs[1][0], g0, g0->refs[0][0] + m + 1, k, err)) != RT_OK ||
            (rs = after(g1, g0, err)) != RT_OK ||
            (rs = copy_words(g1, g1, g1->refs[1][0] + k, g1, g1->refs[0][0], kept[1], err)) != RT_OK)
            return rs;
    } else {
        const uint32_t k = m + 1 - kept[0];
        if ((rs = copy_words(g0, g0, g0->refs[0][0] + kept[0], g1, g1->refs[0][0], k, err)) != RT_OK ||
            (rs = after(g1, g0, err)) != RT_OK ||
            (rs = copy_words(g1, g1, g1->refs[1][0], g1, g1->refs[0][0] + k, kept[1] - k, err)) != RT_OK)
            return rs;
    }
    uint32_t *t = g1->refs[0][0];
    g1->refs[0][0] = g1->refs[1][0];
    g1->refs[1][0] = t;
    if ((rs = after(g0, g1, err)) != RT_OK) return rs;
    CUDA_CHECK(err, cudaEventRecord(g0->ev[2], g0->log.stream));

    /* 4. the root's node on GPU 0, then each GPU sorts its subtree's other
     * arrays (the seed: "sort the less than and greater-than arrays
     * independently", in place of the root's partition) and builds its
     * subtree from depth 1 with the one-GPU levels */
    if ((rs = rt_launch(&g0->log, "kdp_nodes", dim3(1), dim3(kBlock), 0, kdp_nodes_kernel, err, d_pts, dim, u, 0u, 1u,
                        (const uint32_t *)g0->refs[0][0], 0, 0u, g0->nodes, g0->coords)) != RT_OK)
        return rs;
    for (int d = 0; d < 2; d++) {
        if ((rs = use(w[d], err)) != RT_OK) return rs;
        for (uint32_t p = 1; p < dim; p++)
            if ((rs = presort_start(w[d], pts[d], sub[d], dim, p, w[d]->refs[0][0], 0, err)) != RT_OK) return rs;
    }
    if ((rs = read_both(w, err)) != RT_OK) return rs; /* host wait 4: tie flags */
    for (int d = 0; d < 2; d++) {
        if ((rs = use(w[d], err)) != RT_OK) return rs;
        for (uint32_t p = 1; p < dim; p++)
            if ((rs = presort_finish(w[d], pts[d], sub[d], dim, p, false, 0, &st->resorted, err)) != RT_OK) return rs;
    }
    if ((rs = after(g0, g1, err)) != RT_OK) return rs;
    CUDA_CHECK(err, cudaEventRecord(g0->ev[3], g0->log.stream));
    for (int d = 0; d < 2; d++)
        if ((rs = use(w[d], err)) != RT_OK ||
            (rs = build_levels(w[d], pts[d], sub[d], dim, 1, d == 0 ? 0 : m + 1, err)) != RT_OK)
            return rs;
    /* the gather: GPU 1's nodes after the root */
    if ((rs = after(g0, g1, err)) != RT_OK ||
        (rs = copy_words(g0, g0, g0->nodes + m + 1, g1, g1->nodes, (size_t)sub[1] * (sizeof(RtKdpNode) / sizeof(uint32_t)), err)) != RT_OK ||
        (rs = copy_words(g0, g0, g0->coords + (size_t)(m + 1) * dim, g1, g1->coords, (size_t)sub[1] * dim, err)) !=
            RT_OK)
        return rs;
    CUDA_CHECK(err, cudaEventRecord(g0->ev[4], g0->log.stream));
    return RT_OK;
}

/* A workspace on `device` (made current). */
static RtStatus create_on(int device, const RtKdpGpuParams *p, RtKdpGpu **out, RtError *err)
{
    *out = NULL;
    RtKdpGpu *g = (RtKdpGpu *)calloc(1, sizeof *g);
    if (!g) return rt_fail(err, RT_ERR_OOM, "KDP: out of host memory");
    g->device = device;
    RtStatus st = RT_OK;
    cudaDeviceProp prop;
    if (cudaSetDevice(device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
        st = rt_fail(err, RT_ERR_CUDA, "KDP: cannot read device %d's properties: %s", device,
                     cudaGetErrorString(cudaGetLastError()));
        goto fail;
    }
    /* the resident warps: more ranges than this and a warp each keeps
     * the GPU busy (seed 004: "less than the number of running warps") */
    g->warp_ranges_min = p->warp_ranges_min ? p->warp_ranges_min
                                            : (uint32_t)prop.multiProcessorCount * (prop.maxThreadsPerMultiProcessor / 32);
    for (int i = 0; i < 5 && st == RT_OK; i++)
        if (cudaEventCreate(&g->ev[i]) != cudaSuccess) st = rt_fail(err, RT_ERR_CUDA, "KDP: cudaEventCreate failed");
    if (st == RT_OK && cudaEventCreateWithFlags(&g->mark, cudaEventDisableTiming) != cudaSuccess)
        st = rt_fail(err, RT_ERR_CUDA, "KDP: cudaEventCreate failed");
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

/* The second GPU of a 2-GPU workspace on the current device `device`: the
 * next device, its own stream, and peer access both ways where the pair
 * allows it (else the copies go through the host, and the pivot search
 * reads a copy). */
static RtStatus add_peer(RtKdpGpu *g, const RtKdpGpuParams *p, int count, RtError *err)
{
    const int other = (g->device + 1) % count;
    RtStatus st = create_on(other, p, &g->peer, err);
    if (st != RT_OK) return st;
    if (cudaStreamCreateWithFlags(&g->peer->own_stream, cudaStreamNonBlocking) != cudaSuccess)
        return rt_fail(err, RT_ERR_CUDA, "KDP: cannot create a stream on device %d", other);
    g->peer->log.stream = g->peer->own_stream;
    int ab = 0, ba = 0;
    cudaDeviceCanAccessPeer(&ab, g->device, other);
    cudaDeviceCanAccessPeer(&ba, other, g->device);
    if (ab && ba) {
        /* already enabled (another workspace): fine, and the error is cleared */
        cudaError_t e1 = cudaDeviceEnablePeerAccess(g->device, 0);
        cudaSetDevice(g->device);
        cudaError_t e0 = cudaDeviceEnablePeerAccess(other, 0);
        cudaGetLastError();
        g->peer_access = (e0 == cudaSuccess || e0 == cudaErrorPeerAccessAlreadyEnabled) &&
                         (e1 == cudaSuccess || e1 == cudaErrorPeerAccessAlreadyEnabled);
    }
    g->peer->peer_access = g->peer_access;
    return use(g, err);
}

extern "C" RtStatus rt_kdp_gpu_create(RtKdpGpu **out, const RtKdpGpuParams *params, RtError *err)
{
    *out = NULL;
    int count = 0, device = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        cudaGetLastError(); /* clear the sticky "no device" error */
        return rt_fail(err, RT_ERR_NO_DEVICE, "KDP: no CUDA device for the GPU k-d tree builder");
    }
    const RtKdpGpuParams p = params ? *params : rt_kdp_gpu_params_default();
    if (p.devices > 2)
        return rt_fail(err, RT_ERR_ARG, "KDP: %u devices asked for; the builder runs on 1 or 2 (seed 004's variant)",
                       p.devices);
    if (p.devices == 2 && count < 2)
        return rt_fail(err, RT_ERR_NO_DEVICE, "KDP: the 2-GPU k-d tree builder needs 2 CUDA devices; %d found", count);
    if (cudaGetDevice(&device) != cudaSuccess)
        return rt_fail(err, RT_ERR_CUDA, "KDP: no current device: %s", cudaGetErrorString(cudaGetLastError()));
    RtStatus st = create_on(device, &p, out, err);
    if (st == RT_OK && p.devices == 2 && (st = add_peer(*out, &p, count, err)) != RT_OK) {
        rt_kdp_gpu_destroy(*out);
        *out = NULL;
    }
    cudaSetDevice(device);
    return st;
}

extern "C" void rt_kdp_gpu_destroy(RtKdpGpu *g)
{
    if (!g) return;
    int current = 0;
    cudaGetDevice(&current);
    if (g->peer) rt_kdp_gpu_destroy(g->peer);
    cudaSetDevice(g->device);
    void *bufs[] = {g->state, g->keys[0], g->ref_pool, g->nodes,   g->coords,
                    g->chunk_count, g->masks, g->cub_tmp, g->d_ctr, g->pts};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) cudaFree(bufs[i]);
    if (g->h_ctr) cudaFreeHost(g->h_ctr);
    for (int i = 0; i < 5; i++)
        if (g->ev[i]) cudaEventDestroy(g->ev[i]);
    if (g->mark) cudaEventDestroy(g->mark);
    rt_launch_log_destroy(&g->log);
    if (g->own_stream) cudaStreamDestroy(g->own_stream);
    cudaSetDevice(current);
    free(g);
}

extern "C" RtStatus rt_kdp_gpu_build(RtKdpGpu *g, const float *d_pts, uint32_t n, uint32_t dim, void *stream,
                                     RtKdpTree *tree, RtKdpStats *st, RtError *err)
{
    RtKdpStats local;
    if (!st) st = &local;
    RtStatus begun = rt_kdp_build_begin(d_pts, n, dim, tree, st, err);
    if (begun != RT_OK) return begun;
    if (n > (uint32_t)INT32_MAX) /* CUB's sort takes an int count */
        return rt_fail(err, RT_ERR_ARG, "KDP: %u points; the GPU builder takes at most %d", n, INT32_MAX);
    if (n == 0) return RT_OK;
    g->log.stream = (cudaStream_t)stream;
    rt_launch_log_reset(&g->log);
    uint32_t u = 0;
    RtStatus rs;
    if (!g->peer || n < 2) { /* one point: nothing to share */
        rs = build_one(g, d_pts, n, dim, &u, st, err);
    } else {
        RtKdpGpu *w[2] = {g, g->peer};
        int current = g->device;
        cudaGetDevice(&current);
        rt_launch_log_reset(&g->peer->log);
        rs = build_two(w, d_pts, n, dim, &u, st, err);
        if (rs != RT_OK) cudaGetLastError(); /* a failed call's error is not left for the caller's next one */
        cudaSetDevice(current);
    }
    if (rs != RT_OK) return rs;
    tree->count = u;
    tree->depth = kdp_depth(u);
    tree->root = u ? kdp_median(0, u - 1) : RT_KDP_NONE;
    tree->nodes = u ? g->nodes : NULL;
    tree->coords = u ? g->coords : NULL;
    if (st != &local) return stage_times(g, g->peer && n >= 2 ? 5 : 4, st, err);
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
                                   uint32_t kn, float r2, RtKdpWalk walk, RtKdpHit *d_hits, uint32_t *d_counts,
                                   void *stream, RtError *err)
{
    RtStatus st = check_queries(tree, d_queries, nq, d_hits, d_counts, err);
    if (st != RT_OK) return st;
    if (kn < 1 || kn > RT_KDP_MAX_KNN)
        return rt_fail(err, RT_ERR_ARG, "KDP: %u neighbours per query; expected 1..%d", kn, RT_KDP_MAX_KNN);
    if (walk != RT_KDP_WALK_LANE && walk != RT_KDP_WALK_WARP)
        return rt_fail(err, RT_ERR_ARG, "KDP: kNN walk %d; expected lane (0) or warp (1)", (int)walk);
    g->log.stream = (cudaStream_t)stream;
    const bool warp = walk == RT_KDP_WALK_WARP;
    return rt_launch(&g->log, warp ? "kdp_knn_warp" : "kdp_knn", dim3(blocks_for(nq)), dim3(kBlock), 0,
                     warp ? kdp_knn_kernel<true> : kdp_knn_kernel<false>, err, *tree, d_queries, nq, kn, r2, d_hits,
                     d_counts);
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
