/* split_top_gpu.cuh — split_top.h's top on the GPU, for the H-PLOC builder
 * (hploc_gpu.cu), which queues it between the triangle boxes and the sort:
 *
 *   per level d < depth (split_top_gpu.cu):
 *     top_bin     the level's nodes' object and spatial bins (a straddler's
 *                 box cut to each bin it spans), per block in shared
 *                 memory, warp-aggregated, then added to the level's bins;
 *                 its last block decides: each node's groups of bins swept
 *                 by 8 lanes each (split_top_sweep's choice), then
 *                 split_top_combine a thread per node, one thread takes
 *                 them in order within the reference budget; the bins
 *                 zeroed for the next level;
 *     top_count   per tile of references, per node: left and right outputs
 *                 (a straddler's clipped parts kept for top_write);
 *                 its last block scans the tiles' counts per node: the
 *                 nodes' output ranges, their children, the next level's
 *                 order;
 *     top_write   each reference (or a straddler's two clipped parts) at its
 *                 place, order kept (a block scan within the tile); the
 *                 children's boxes;
 *   top_morton  the sort keys: split_top_key in each leaf's box, or, when
 *               the top has one leaf, the triangles' own Morton codes; its
 *               first block finishes the top: the leaves, their runs of
 *               references, the key's leaf bits.
 *
 * Every kernel reads the top's state on the device, so the host queues the
 * same launches whatever the scene: a level that splits nothing stops the
 * rest (their kernels return at once) and a top of one leaf is H-PLOC's own
 * input, bit for bit. The references a top may make are sized on the host
 * (split_top_max_refs): the sort covers that many keys, the unused ones
 * sorting last. */
#ifndef RT_SPLIT_TOP_GPU_CUH
#define RT_SPLIT_TOP_GPU_CUH

#include "bvh/bvh_gpu_common.cuh"
#include "bvh/split_top.h"

/* Nodes a level splits at most: the leaves before the top's last level. */
static constexpr int kTopLevelNodes = RT_SPLIT_TOP_MAX_LEAVES / 2;
/* Words a node's bins take: 2 kinds (object, spatial) x 3 axes x bins x 8
 * words (the box's six, enter, leave). */
static constexpr int kTopBinWords = 2 * 3 * RT_SPLIT_TOP_BINS * 8;

/* A node of the top. Its box is kept in words an atomicMax can grow
 * (split_top_enc_lo / _hi; all zero: empty). */
struct SplitTopNodeDev {
    uint32_t box[6];
    uint32_t first, count; /* its references at the current level */
    int depth;
    int child[2];          /* -1: a leaf of the top */
};

/* A level's partition, per slot of the top's order at the level's start:
 * the decision's snapshot and splits, the scan's output places. The count
 * and write kernels copy it to shared memory. */
struct SplitTopLevel {
    uint32_t first[kTopLevelNodes], count[kTopLevelNodes];
    RtAabb box[kTopLevelNodes];
    int axis[kTopLevelNodes], k[kTopLevelNodes]; /* axis -1: not split */
    float pos[kTopLevelNodes];                   /* plane k's place (split_top_pos) */
    int child[kTopLevelNodes][2];
    uint32_t base[kTopLevelNodes], nl[kTopLevelNodes];
    int slots;
    uint32_t n; /* references in the level's input */
    int in;     /* the input array: -1 the triangles, else a ref buffer (the scan sets the output, cur) */
};

/* The top's state, one per builder on the device. */
struct SplitTopDev {
    SplitTopNodeDev node[RT_SPLIT_TOP_MAX_NODES];
    int nodes, leaves;
    int order[RT_SPLIT_TOP_MAX_LEAVES]; /* the current leaves, left to right */
    uint32_t refs;                      /* references at the current level (level 0: the triangles) */
    int cur;                            /* the current level's array: -1 the triangles, else ref buffer */
    int stop;                           /* a level split nothing: the top is finished */
    uint32_t ticket;                    /* blocks done in a launch (last_block; zero between launches) */
    float root_area;
    SplitTopLevel lvl;                  /* the level's partition (decide_level, scan_level) */
    /* the finished top (top_morton's first block) */
    int split; /* more than one leaf */
    int bits;  /* split_top_leaf_bits */
    uint32_t leaf_first[RT_SPLIT_TOP_MAX_LEAVES], leaf_count[RT_SPLIT_TOP_MAX_LEAVES];
    RtAabb leaf_box[RT_SPLIT_TOP_MAX_LEAVES];
    int leaf_depth[RT_SPLIT_TOP_MAX_LEAVES];
    uint32_t leaf_root[RT_SPLIT_TOP_MAX_LEAVES]; /* H-PLOC's cluster at each leaf's run's root */
};

/* The top's arrays (NULL top: the builder has no top). */
struct SplitTopArrays {
    SplitTopDev *top;
    uint32_t *bins;         /* kTopLevelNodes x kTopBinWords */
    uint2 *tile_counts;     /* per tile of references, per slot: left, right (then their offsets) */
    uint32_t *ref_tri[2];   /* the references, two levels' buffers */
    RtAabb *ref_box[2];
    RtAabb *parts;          /* per reference of a level, 2: a straddler's clipped parts (top_count's, for
                               top_write) */
    uint32_t cap;           /* references a buffer holds (split_top_max_refs) */
};

/* Level buffer `which` (0 or 1) by a select: indexing the kernel
 * parameter's array with a value known only at run time copies the whole
 * struct to local memory in every thread (a stack frame in each kernel
 * that takes the arrays, H-PLOC's clustering included). */
__device__ __forceinline__ uint32_t *split_top_ref_tri(const SplitTopArrays &t, uint32_t which)
{
    return which ? t.ref_tri[1] : t.ref_tri[0];
}
__device__ __forceinline__ RtAabb *split_top_ref_box(const SplitTopArrays &t, uint32_t which)
{
    return which ? t.ref_box[1] : t.ref_box[0];
}

/* A box word an atomicMax grows: hi as the float's order, lo as its
 * complement; zero is below every real float's word. */
__device__ __forceinline__ uint32_t split_top_enc_hi(float f) { return (uint32_t)rt_f2ord(f) ^ 0x80000000u; }
__device__ __forceinline__ uint32_t split_top_enc_lo(float f) { return ~split_top_enc_hi(f); }
__device__ __forceinline__ float split_top_dec_hi(uint32_t u) { return rt_ord2f((int)(u ^ 0x80000000u)); }
__device__ __forceinline__ RtAabb split_top_dec_box(const uint32_t w[6])
{
    if (w[3] == 0u) return aabb_empty();
    RtAabb b;
    b.lo = v3(split_top_dec_hi(~w[0]), split_top_dec_hi(~w[1]), split_top_dec_hi(~w[2]));
    b.hi = v3(split_top_dec_hi(w[3]), split_top_dec_hi(w[4]), split_top_dec_hi(w[5]));
    return b;
}

/* Sorted key p's run of keys (its top leaf's references): [*s, *e] and
 * the leaf; the whole [0, n - 1] without a split top. */
__device__ __forceinline__ void split_top_run(const SplitTopDev *top, const uint32_t *codes, uint32_t n, uint32_t p,
                                              uint32_t *s, uint32_t *e, uint32_t *leaf)
{
    if (top && top->split) {
        const uint32_t j = codes[p] >> (32 - top->bits);
        *leaf = j;
        *s = top->leaf_first[j];
        *e = top->leaf_first[j] + top->leaf_count[j] - 1u;
    } else {
        *leaf = 0;
        *s = 0;
        *e = n - 1u;
    }
}

/* The build's reference arrays: the top's last level's when it split,
 * else the triangles' (ids are then triangle ids). */
__device__ __forceinline__ const RtAabb *split_top_boxes(const SplitTopArrays &t, const RtAabb *tri_boxes)
{
    return t.top && t.top->split ? split_top_ref_box(t, t.top->cur) : tri_boxes;
}
__device__ __forceinline__ uint32_t split_top_tri(const SplitTopArrays &t, uint32_t id)
{
    return t.top && t.top->split ? split_top_ref_tri(t, t.top->cur)[id] : id;
}

/* Host side (split_top_gpu.cu). */
/* The arrays for a top over tri_count triangles (kept while large
 * enough); *cap the references they hold. */
RtStatus split_top_reserve(const BvhGpuBase *b, SplitTopArrays *t, const RtSplitTopParams *p, uint32_t tri_count,
                           RtError *err);
void split_top_free(SplitTopArrays *t);
/* The top's launches after bvh_boxes, through top_morton (its keys in
 * keys.codes[0] / ids[0], `keys` of them: split_top_max_refs, the
 * references it may make; the split slots freed); the sort is the
 * caller's. */
RtStatus split_top_queue(BvhGpuBase *b, const SplitTopArrays *t, const RtSplitTopParams *p, const float4 *verts,
                         uint32_t tri_count, uint32_t keys, uint32_t *free_slots, RtError *err);

#endif
