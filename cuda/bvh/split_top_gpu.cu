/* split_top_gpu.cu — split_top.h's top on the GPU (split_top_gpu.cuh lists
 * the launches). Every rule is split_top.h's, as the CPU oracle
 * (split_top_cpu.c) applies it, so the references, their order and the
 * keys are the oracle's: bins are unions (min and max round nothing) and
 * counts, the choice is split_top_choose's functions in the oracle's node
 * order, and the partition keeps the references' order (scans). */
#include <stdlib.h>
#include <string.h>

#include <cub/block/block_scan.cuh>

#include "bvh/split_top_gpu.cuh"
#include "gpu/cuda_check.h"

static constexpr int kTopBlock = 256;
/* References a block of the count and write kernels takes: a tile. */
static constexpr int kTopItems = 4;
static constexpr uint32_t kTile = kTopBlock * kTopItems;
/* top_bin's blocks, one a multiprocessor (each adds its bins to the
 * level's once: fewer blocks, fewer global atomics). */
static constexpr int kBinBlock = 1024;
static constexpr uint32_t kBinBlocksPerSm = 1;
/* top_count's and top_write's grid: blocks a multiprocessor at most. */
static constexpr uint32_t kTileBlocksPerSm = 4;
static constexpr unsigned kFull = 0xffffffffu;
static constexpr uint32_t kNoWord = 0xffffffffu;

/* ---- shared helpers ------------------------------------------------------------------ */

__device__ __forceinline__ void box_words(const RtAabb &b, uint32_t w[6])
{
    w[0] = split_top_enc_lo(b.lo.x), w[1] = split_top_enc_lo(b.lo.y), w[2] = split_top_enc_lo(b.lo.z);
    w[3] = split_top_enc_hi(b.hi.x), w[4] = split_top_enc_hi(b.hi.y), w[5] = split_top_enc_hi(b.hi.z);
}

/* The lanes with the same `key` (kNoWord: none) grow the six box words
 * at dst by their words w, and with `count` add their number to dst[6]
 * and dst[7] (a bin's entries and exits): reduced over the group, one
 * lane's atomics. Whole warp. */
__device__ __forceinline__ void group_words_max(uint32_t *dst, uint32_t key, const uint32_t w[6], bool count)
{
    const uint32_t m = __match_any_sync(kFull, key);
    if (key == kNoWord) return; /* the whole group */
    uint32_t v[6];
#pragma unroll
    for (int k = 0; k < 6; k++) v[k] = __reduce_max_sync(m, w[k]);
    if ((threadIdx.x & 31u) != (uint32_t)(__ffs((int)m) - 1)) return;
#pragma unroll
    for (int k = 0; k < 6; k++) atomicMax(dst + k, v[k]);
    if (count) {
        const uint32_t n = (uint32_t)__popc((int)m);
        atomicAdd(dst + 6, n), atomicAdd(dst + 7, n);
    }
}

/* A reference's or a tile's (left, right) outputs in one 64-bit word,
 * left above: one block scan of the words sums both sides. */
__device__ __forceinline__ unsigned long long lr_pack(uint32_t left, uint32_t right)
{
    return (unsigned long long)left << 32 | right;
}
__device__ __forceinline__ uint32_t lr_left(unsigned long long v) { return (uint32_t)(v >> 32); }
__device__ __forceinline__ uint32_t lr_right(unsigned long long v) { return (uint32_t)v; }

/* The current level's references: the triangles at level 0, else a
 * buffer (which: `which`, -1 the triangles). */
__device__ __forceinline__ void level_ref(const SplitTopArrays &t, const RtAabb *tri_boxes, int which, uint32_t i,
                                          uint32_t *tri, RtAabb *box)
{
    if (which < 0) *tri = i, *box = tri_boxes[i];
    else *tri = split_top_ref_tri(t, (uint32_t)which)[i], *box = split_top_ref_box(t, (uint32_t)which)[i];
}

/* Which of `ranges` ranges [first[s], first[s] + count[s]) holds i (-1:
 * none): a level's slot of a reference, a top leaf's run of a key. */
__device__ __forceinline__ int range_of(const uint32_t *first, const uint32_t *count, int ranges, uint32_t i)
{
    int r = -1;
    for (int s = 0; s < ranges; s++)
        if (i - first[s] < count[s]) r = s;
    return r;
}

/* The level's partition copied to shared memory by a block (its first
 * threads; the caller synchronises). */
__device__ __forceinline__ void level_load(SplitTopLevel *dst, const SplitTopLevel &src)
{
    static_assert(sizeof(SplitTopLevel) % 4 == 0 && sizeof(SplitTopLevel) / 4 <= kTopBlock, "a word a thread");
    if (threadIdx.x < sizeof(SplitTopLevel) / 4)
        reinterpret_cast<uint32_t *>(dst)[threadIdx.x] = reinterpret_cast<const uint32_t *>(&src)[threadIdx.x];
}

/* A straddler's two parts (split_top_cut), out of line: few references
 * straddle the chosen plane, and the clipping's buffers stay out of the
 * callers' registers. */
__device__ __noinline__ void clip_sides(const float4 *verts, uint32_t tri, RtAabb r, RtAabb nb, int a, float pos,
                                        RtAabb *lb, RtAabb *rb)
{
    RtFloat4 v[3];
    for (int k = 0; k < 3; k++) {
        const float4 f = verts[3 * (size_t)tri + k];
        v[k] = f4(f.x, f.y, f.z, f.w);
    }
    RtAabb part[2];
    split_top_cut(v, r, nb, a, pos, part);
    *lb = part[0], *rb = part[1];
}

/* A reference's outputs at this level: bit 0 left (or kept, its node not
 * split), bit 1 right, with their boxes (a straddler's clipped parts).
 * Clip: clip a straddler and keep its parts at parts[2 i] (top_count),
 * else read them there (top_write, whose registers then stay few: the
 * clip's call holds a kernel at some 100). */
template <bool Clip>
__device__ __forceinline__ uint32_t ref_sides(const SplitTopArrays &t, const SplitTopLevel &L, const float4 *verts,
                                              int slot, uint32_t i, uint32_t tri, const RtAabb &r, RtAabb *lb,
                                              RtAabb *rb)
{
    if (slot < 0 || aabb_is_empty(r)) return 0u;
    const int a = L.axis[slot];
    *lb = *rb = r;
    if (a < 0) return 1u;
    const float pos = L.pos[slot];
    const int side = split_top_side_at(r, a, pos);
    if (side != 2) return side == 0 ? 1u : 2u;
    if (Clip) {
        clip_sides(verts, tri, r, L.box[slot], a, pos, lb, rb);
        t.parts[2 * (size_t)i] = *lb, t.parts[2 * (size_t)i + 1] = *rb;
    } else {
        *lb = t.parts[2 * (size_t)i], *rb = t.parts[2 * (size_t)i + 1];
    }
    return (aabb_is_empty(*lb) ? 0u : 1u) | (aabb_is_empty(*rb) ? 0u : 2u);
}

/* ---- the levels ---------------------------------------------------------------------- */

/* The block that takes a launch's last ticket (true) once every other
 * block's global atomics and stores are done: it then reads what they
 * wrote (bypassing L1) and resets the ticket for the next launch. Whole
 * block. */
__device__ __forceinline__ bool last_block(uint32_t *ticket)
{
    __shared__ int s_last;
    __threadfence(); /* this thread's atomics before the ticket */
    __syncthreads();
    if (threadIdx.x == 0) s_last = atomicAdd(ticket, 1u) == gridDim.x - 1u;
    __syncthreads();
    if (!s_last) return false;
    __threadfence();
    if (threadIdx.x == 0) *ticket = 0u;
    return true;
}

/* An 8-lane group's sweep of one group of a node's bins (lane b holds bin
 * b; g: the group, split_top_sweep_one's numbering): split_top_sweep's
 * choice, the same plane to the bit — the lanes' unions and sums are its
 * (split_top_union takes its terms in any order), each lane k > 0 costs
 * plane k with split_top_cost, the cheapest wins and ties keep the lower
 * plane, as the sweep's strict comparison does. live false: no plane
 * (cost INFINITY). True on the lane that holds the group's result (*c and,
 * for an object split, its sides). Whole warp. */
__device__ __forceinline__ bool sweep_lanes(RtAabb box, uint32_t enter, uint32_t leave, int b, uint32_t count,
                                            bool live, int g, SplitTopChoice *c, RtAabb side[2])
{
    /* left: the union of bins 0..b and their entries; right: bins b..7, their leaves */
    RtAabb left = box, right = box;
    uint32_t nl = enter, nr = leave;
    for (int o = 1; o < 8; o <<= 1) {
        RtAabb lu, ru;
        float *lf = &lu.lo.x, *rf = &ru.lo.x;
        const float *lsrc = &left.lo.x, *rsrc = &right.lo.x;
        for (int k = 0; k < 6; k++) {
            lf[k] = __shfl_up_sync(kFull, lsrc[k], o, 8);
            rf[k] = __shfl_down_sync(kFull, rsrc[k], o, 8);
        }
        const uint32_t nlu = __shfl_up_sync(kFull, nl, o, 8), nru = __shfl_down_sync(kFull, nr, o, 8);
        if (b >= o) left = split_top_union(lu, left), nl += nlu;
        if (b + o < 8) right = split_top_union(right, ru), nr += nru;
    }
    /* plane b (b >= 1): bins below it on the left (lane b - 1's left) */
    RtAabb pl;
    float *pf = &pl.lo.x;
    const float *lsrc = &left.lo.x;
    for (int k = 0; k < 6; k++) pf[k] = __shfl_up_sync(kFull, lsrc[k], 1, 8);
    const uint32_t pnl = __shfl_up_sync(kFull, nl, 1, 8);
    float cost = INFINITY;
    int k = 8;
    if (live && b >= 1 && pnl && nr) {
        const float x = split_top_cost(split_top_area(pl), pnl, split_top_area(right), nr);
        if (x < INFINITY) cost = x, k = b;
    }
    for (int o = 1; o < 8; o <<= 1) {
        const float oc = __shfl_xor_sync(kFull, cost, o, 8);
        const int ok = __shfl_xor_sync(kFull, k, o, 8);
        if (oc < cost || (oc == cost && ok < k)) cost = oc, k = ok;
    }
    c->spatial = g >= 3, c->axis = g % 3, c->k = 0, c->cost = INFINITY, c->added = 0;
    side[0] = side[1] = aabb_empty();
    if (k == 8) return b == 0;
    if (b != k) return false;
    c->k = k, c->cost = cost;
    c->added = pnl + nr > count ? pnl + nr - count : 0u;
    side[0] = pl, side[1] = right;
    return true;
}

/* The level's decisions, by top_bin's last block: each node's six groups
 * of bins swept by 8 lanes each (sweep_lanes) and combined by a thread a
 * node (split_top_combine), then one thread takes them in the
 * top's order while the references stay within max_refs, and keeps the
 * level's snapshot; the bins zeroed for the next level and build. Level
 * 0 first sets the top up (the scene's node). Whole block. */
__device__ __noinline__ void decide_level(const SplitTopArrays &t, BvhCounters *ctr, uint32_t tri_count, int d,
                             const RtSplitTopParams &p, uint32_t max_refs)
{
    __shared__ SplitTopChoice group[kTopLevelNodes][6];
    __shared__ RtAabb side[kTopLevelNodes][3][2];
    __shared__ SplitTopChoice choice[kTopLevelNodes];
    __shared__ int chosen[kTopLevelNodes];
    SplitTopDev *top = t.top;
    if (d == 0 && threadIdx.x == 0) {
        const RtAabb b = bvh_scene_box(ctr);
        SplitTopNodeDev &root = top->node[0];
        box_words(b, root.box);
        if (aabb_is_empty(b))
            for (int k = 0; k < 6; k++) root.box[k] = 0u;
        root.first = 0, root.count = ctr->valid, root.depth = 0, root.child[0] = root.child[1] = -1;
        top->nodes = top->leaves = 1;
        top->order[0] = 0;
        top->refs = tri_count;
        top->cur = -1;
        top->stop = ctr->valid < 2u;
        top->root_area = split_top_area(b);
        top->split = 0, top->bits = 0;
    }
    __syncthreads();
    const int stop = top->stop, slots = top->leaves;
    /* a group of 8 lanes a group of bins (a lane a bin), the groups in
     * rounds over the block */
    static_assert(RT_SPLIT_TOP_BINS == 8, "a lane a bin, 8 lanes a group");
    const int groups = stop ? 0 : slots * 6;
    for (int base = 0; base < groups * 8; base += kBinBlock) {
        const int gi = (base + (int)threadIdx.x) / 8, b = (int)threadIdx.x % 8;
        const int s = gi / 6, g = gi % 6;
        bool live = gi < groups;
        RtAabb nbox = aabb_empty();
        uint32_t count = 0;
        if (live) {
            const SplitTopNodeDev &nd = top->node[top->order[s]];
            nbox = split_top_dec_box(nd.box), count = nd.count;
            live = nd.depth == d && nd.count >= p.min_refs &&
                   split_top_scale(v3_get(nbox.lo, g % 3), v3_get(nbox.hi, g % 3)) != 0.0f;
        }
        RtAabb box = aabb_empty();
        uint32_t enter = 0, leave = 0;
        if (live) {
            const uint32_t *w = t.bins + s * kTopBinWords + (g * RT_SPLIT_TOP_BINS + b) * 8;
            uint32_t x[8];
            for (int k = 0; k < 8; k++) x[k] = __ldcg(w + k);
            box = split_top_dec_box(x), enter = x[6], leave = x[7];
        }
        SplitTopChoice c;
        RtAabb sd[2];
        const bool mine = sweep_lanes(box, enter, leave, b, count, live, g, &c, sd);
        if (gi < groups && mine) {
            group[s][g] = c;
            if (g < 3) side[s][g][0] = sd[0], side[s][g][1] = sd[1];
        }
    }
    __syncthreads();
    for (int w = threadIdx.x; w < slots * kTopBinWords; w += kBinBlock) t.bins[w] = 0u;
    if (stop) return;
    /* a thread a slot: its choice and its part of the level's record */
    if (threadIdx.x < (uint32_t)slots) {
        const int s = (int)threadIdx.x;
        const SplitTopNodeDev &nd = top->node[top->order[s]];
        SplitTopChoice c;
        chosen[s] = nd.depth == d && nd.count >= p.min_refs &&
                    split_top_combine(group[s], side[s], p.alpha, top->root_area, &c);
        choice[s] = c;
        const RtAabb box = split_top_dec_box(nd.box);
        top->lvl.first[s] = d == 0 ? 0u : nd.first;
        top->lvl.count[s] = d == 0 ? tri_count : nd.count;
        top->lvl.box[s] = box;
        top->lvl.axis[s] = -1;
        if (chosen[s]) top->lvl.k[s] = c.k, top->lvl.pos[s] = split_top_pos(box, c.axis, c.k);
    }
    __syncthreads();
    if (threadIdx.x != 0) return;
    /* one thread: the splits taken in the top's order while the
     * references stay within max_refs */
    uint32_t total = d == 0 ? ctr->valid : top->refs;
    int any = 0;
    top->lvl.slots = slots;
    for (int s = 0; s < slots; s++)
        if (chosen[s] && choice[s].added <= max_refs - total) {
            top->lvl.axis[s] = choice[s].axis;
            total += choice[s].added;
            any = 1;
        }
    if (!any) top->stop = 1;
}

/* A block's share of the level's references added to the bins of their
 * nodes (top_bin). Whole block. */
__device__ void bin_refs(const SplitTopArrays &t, const RtAabb *tri_boxes, uint32_t tri_count, int d, uint32_t *sh,
                         const uint32_t *s_first, const uint32_t *s_count, const RtAabb *s_box,
                         const float (*s_scale)[3], const float (*s_face)[3][RT_SPLIT_TOP_BINS + 1],
                         const int *s_active, int slots)
{
    const SplitTopDev *top = t.top;
    for (int w = threadIdx.x; w < slots * kTopBinWords; w += kBinBlock) sh[w] = 0u;
    __syncthreads();
    const uint32_t n = d == 0 ? tri_count : top->refs;
    const int which = d == 0 ? -1 : top->cur;
    /* A warp takes 32 references at a time. Per axis, the lanes of one
     * node and object bin (by centre) add to it together: their box words
     * reduced over the group (__reduce_max_sync: every word grows by max,
     * zero its identity) and their count, by one lane; so do the lanes
     * whose box lies in one spatial bin (most: neighbours mostly share
     * their bins). A box across several spatial bins adds its part in
     * each, its entry and its exit, alone. */
    const uint32_t lane = threadIdx.x & 31u;
    const uint32_t stride = gridDim.x * kBinBlock;
    for (uint32_t base = blockIdx.x * kBinBlock + (threadIdx.x & ~31u); base < n; base += stride) {
        const uint32_t i = base + lane;
        int slot = -1;
        RtAabb r = aabb_empty();
        if (i < n) {
            uint32_t tri;
            level_ref(t, tri_boxes, which, i, &tri, &r);
            slot = range_of(s_first, s_count, slots, i);
            if (slot >= 0 && (!s_active[slot] || aabb_is_empty(r))) slot = -1;
        }
        uint32_t rw[6];
        box_words(r, rw);
#pragma unroll 1
        for (int a = 0; a < 3; a++) {
            int c = 0, b0 = 0, b1 = 0;
            uint32_t *obj = sh, *spa = sh;
            if (slot >= 0) {
                const float lo = v3_get(s_box[slot].lo, a), scale = s_scale[slot][a];
                c = split_top_bin(split_top_centre(r, a), lo, scale);
                b0 = split_top_bin(v3_get(r.lo, a), lo, scale), b1 = split_top_bin(v3_get(r.hi, a), lo, scale);
                obj = sh + (uint32_t)slot * kTopBinWords + (uint32_t)(a * RT_SPLIT_TOP_BINS) * 8u;
                spa = obj + 3u * RT_SPLIT_TOP_BINS * 8u;
            }
            group_words_max(obj + 8 * c, slot < 0 ? kNoWord : (uint32_t)(slot * RT_SPLIT_TOP_BINS + c), rw, true);
            group_words_max(spa + 8 * b0,
                            slot < 0 || b0 != b1 ? kNoWord : (uint32_t)(slot * RT_SPLIT_TOP_BINS + b0), rw, true);
            if (slot < 0 || b0 == b1) continue;
            atomicAdd(spa + 8 * b0 + 6, 1u), atomicAdd(spa + 8 * b1 + 7, 1u);
            for (int b = b0; b <= b1; b++) {
                const float *face = s_face[slot][a];
                const RtAabb part = split_top_bin_part_at(r, s_box[slot], a, face[b], face[b + 1]);
                if (aabb_is_empty(part)) continue; /* a box ending on the bin's face */
                uint32_t pw[6];
                box_words(part, pw);
                for (int k = 0; k < 6; k++) atomicMax(spa + 8 * b + k, pw[k]);
            }
        }
    }
    __syncthreads();
    for (int w = threadIdx.x; w < slots * kTopBinWords; w += kBinBlock) {
        const uint32_t v = sh[w];
        if (!v || !s_active[w / kTopBinWords]) continue;
        if (w % 8 < 6) atomicMax(t.bins + w, v);
        else atomicAdd(t.bins + w, v);
    }
}

/* The bins of the level's nodes that may split (split_top_gpu.cuh), then,
 * by the last block, the level's decisions (decide_level). Level 0's one
 * node is the scene: its box and valid count from bvh_boxes, its
 * references the triangles (the degenerate ones' boxes are empty: left
 * out). */
__global__ void __launch_bounds__(kBinBlock, kBinBlocksPerSm) top_bin_kernel(SplitTopArrays t, const RtAabb *tri_boxes,
                                                                              BvhCounters *ctr, uint32_t tri_count,
                                                                              int d, RtSplitTopParams p,
                                                                              uint32_t max_refs)
{
    __shared__ uint32_t sh[kTopLevelNodes * kTopBinWords];
    __shared__ uint32_t s_first[kTopLevelNodes], s_count[kTopLevelNodes];
    __shared__ RtAabb s_box[kTopLevelNodes];
    __shared__ float s_scale[kTopLevelNodes][3];
    __shared__ float s_face[kTopLevelNodes][3][RT_SPLIT_TOP_BINS + 1];
    __shared__ int s_active[kTopLevelNodes], s_slots, s_any;
    const SplitTopDev *top = t.top;
    const uint32_t min_refs = p.min_refs;
    if (d > 0 && top->stop) return; /* every block: the top is finished */
    if (threadIdx.x == 0) {
        int any = 0;
        if (d == 0) {
            s_slots = 1;
            s_first[0] = 0, s_count[0] = tri_count;
            const RtAabb b = bvh_scene_box(ctr);
            s_box[0] = b;
            any = s_active[0] = ctr->valid >= 2u && ctr->valid >= min_refs;
        } else {
            s_slots = top->leaves;
            for (int s = 0; s < top->leaves; s++) {
                const SplitTopNodeDev &nd = top->node[top->order[s]];
                s_first[s] = nd.first, s_count[s] = nd.count;
                s_box[s] = split_top_dec_box(nd.box);
                s_active[s] = nd.depth == d && nd.count >= min_refs;
                any |= s_active[s];
            }
        }
        s_any = any;
        for (int s = 0; s < s_slots; s++)
            for (int a = 0; a < 3; a++)
                s_scale[s][a] = split_top_scale(v3_get(s_box[s].lo, a), v3_get(s_box[s].hi, a));
    }
    __syncthreads();
    /* the bins' faces, a thread each (split_top_plane's divisions once) */
    for (int i = threadIdx.x; i < s_slots * 3 * (RT_SPLIT_TOP_BINS + 1); i += kBinBlock) {
        const int s = i / (3 * (RT_SPLIT_TOP_BINS + 1)), a = i / (RT_SPLIT_TOP_BINS + 1) % 3,
                  b = i % (RT_SPLIT_TOP_BINS + 1);
        s_face[s][a][b] = split_top_bin_face(v3_get(s_box[s].lo, a), v3_get(s_box[s].hi, a), b);
    }
    __syncthreads();
    if (s_any)
        bin_refs(t, tri_boxes, tri_count, d, sh, s_first, s_count, s_box, s_scale, s_face, s_active, s_slots);
    /* level 0 is decided even without a node to bin: it sets the top up */
    if (last_block(&t.top->ticket)) decide_level(t, ctr, tri_count, d, p, max_refs);
}

/* One tile of top_count: each slot's left and right outputs among its
 * references (cl, cr: the block's counters). Whole block. */
__device__ void count_tile(const SplitTopArrays &t, const SplitTopLevel &L, const RtAabb *tri_boxes,
                           const float4 *verts, uint32_t n, int in, uint32_t tile, uint32_t *cl, uint32_t *cr)
{
    const uint32_t tile0 = tile * kTile;
    __syncthreads(); /* the last tile's counts are out */
    if (threadIdx.x < kTopLevelNodes) cl[threadIdx.x] = cr[threadIdx.x] = 0u;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kTopItems; j++) {
        const uint32_t i = tile0 + (uint32_t)j * kTopBlock + threadIdx.x;
        int slot = -1;
        uint32_t sides = 0;
        if (i < n) {
            uint32_t tri;
            RtAabb r, lb, rb;
            level_ref(t, tri_boxes, in, i, &tri, &r);
            slot = range_of(L.first, L.count, L.slots, i);
            sides = ref_sides<true>(t, L, verts, slot, i, tri, r, &lb, &rb);
        }
        const uint32_t m = __match_any_sync(kFull, (uint32_t)slot);
        const uint32_t nl = __reduce_add_sync(m, sides & 1u), nr = __reduce_add_sync(m, sides >> 1);
        if (slot >= 0 && (threadIdx.x & 31u) == (uint32_t)(__ffs((int)m) - 1)) {
            if (nl) atomicAdd(&cl[slot], nl);
            if (nr) atomicAdd(&cr[slot], nr);
        }
    }
    __syncthreads();
    if (threadIdx.x < (uint32_t)L.slots)
        t.tile_counts[(size_t)tile * kTopLevelNodes + threadIdx.x] = make_uint2(cl[threadIdx.x], cr[threadIdx.x]);
}

/* By top_count's last block: the tiles' counts scanned per slot (each
 * tile's offsets in place), the slots' output places, the split nodes'
 * children (their boxes left for top_write), the next level's order and
 * count, the buffers swapped. A tile's row of counts is read at once for
 * every slot, then scanned slot by slot in shared memory: one round of
 * loads per kTopBlock tiles (this block runs alone, so its latency is the
 * launch's). Whole block. */
__device__ __noinline__ void scan_level(const SplitTopArrays &t, int d)
{
    using Scan = cub::BlockScan<unsigned long long, kTopBlock>;
    __shared__ typename Scan::TempStorage scan;
    __shared__ unsigned long long tot[kTopLevelNodes];
    static_assert(kTopLevelNodes % 2 == 0, "a row of counts read as 16-byte words");
    SplitTopDev *top = t.top;
    const uint32_t tiles = (top->refs + kTile - 1) / kTile;
    const int slots = top->lvl.slots;
    unsigned long long run[kTopLevelNodes];
#pragma unroll
    for (int s = 0; s < kTopLevelNodes; s++) run[s] = 0ull;
    for (uint32_t c = 0; c < tiles; c += kTopBlock) {
        const uint32_t idx = c + threadIdx.x;
        uint2 *row = t.tile_counts + (size_t)idx * kTopLevelNodes;
        uint4 w[kTopLevelNodes / 2];
#pragma unroll
        for (int s = 0; s < kTopLevelNodes; s += 2) /* the other blocks' counts: not from L1 */
            w[s / 2] = idx < tiles && s < slots ? __ldcg((const uint4 *)(row + s)) : make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
        for (int s = 0; s < kTopLevelNodes; s++) {
            if (s >= slots) break;
            const uint4 p = w[s / 2];
            const unsigned long long v = s % 2 ? lr_pack(p.z, p.w) : lr_pack(p.x, p.y);
            unsigned long long ex, agg;
            Scan(scan).ExclusiveSum(v, ex, agg);
            ex += run[s];
            if (idx < tiles) row[s] = make_uint2(lr_left(ex), lr_right(ex));
            run[s] += agg;
            __syncthreads(); /* the scan's storage is free again */
        }
    }
    if (threadIdx.x == 0)
#pragma unroll
        for (int s = 0; s < kTopLevelNodes; s++) tot[s] = run[s];
    __syncthreads();
    if (threadIdx.x != 0) return;
    int next[RT_SPLIT_TOP_MAX_LEAVES], leaves = 0, nodes = top->nodes;
    uint32_t out = 0;
    for (int s = 0; s < slots; s++) {
        const int j = top->order[s];
        const uint32_t nl = lr_left(tot[s]), nr = lr_right(tot[s]);
        top->lvl.base[s] = out, top->lvl.nl[s] = nl;
        if (top->lvl.axis[s] >= 0) {
            for (int k = 0; k < 2; k++) {
                const int c = nodes++;
                SplitTopNodeDev &ch = top->node[c];
                for (int w = 0; w < 6; w++) ch.box[w] = 0u;
                ch.first = out + (k ? nl : 0u), ch.count = k ? nr : nl;
                ch.depth = d + 1, ch.child[0] = ch.child[1] = -1;
                top->node[j].child[k] = c;
                top->lvl.child[s][k] = c;
                next[leaves++] = c;
            }
            out += nl + nr;
        } else {
            top->node[j].first = out;
            top->lvl.child[s][0] = top->lvl.child[s][1] = j;
            next[leaves++] = j;
            out += nl;
        }
    }
    for (int k = 0; k < leaves; k++) top->order[k] = next[k];
    top->nodes = nodes;
    top->leaves = leaves;
    top->lvl.n = top->refs;
    top->refs = out;
    top->lvl.in = top->cur;
    top->cur = top->cur < 0 ? 0 : top->cur ^ 1;
}

/* Per tile of the level's references: each slot's left and right
 * outputs; the last block scans them (scan_level). The level's input is
 * top->cur until scan_level moves it. */
__global__ void __launch_bounds__(kTopBlock) top_count_kernel(SplitTopArrays t, const RtAabb *tri_boxes,
                                                              const float4 *verts, int d)
{
    __shared__ uint32_t cl[kTopLevelNodes], cr[kTopLevelNodes];
    __shared__ SplitTopLevel L;
    const SplitTopDev *top = t.top;
    if (top->stop) return; /* every block: the top is finished */
    const uint32_t n = top->refs;
    level_load(&L, top->lvl);
    for (uint32_t tile = blockIdx.x; tile * kTile < n; tile += gridDim.x)
        count_tile(t, L, tri_boxes, verts, n, top->cur, tile, cl, cr);
    if (last_block(&t.top->ticket)) scan_level(t, d);
}

using TopWriteScan = cub::BlockScan<unsigned long long, kTopBlock>;

/* One tile of top_write: each reference (or a straddler's parts) at its
 * place, in rounds of a reference a thread (neighbouring threads read and
 * write neighbouring entries): the round's block scan of (left, right)
 * plus the rounds' before it, counted from each slot's first reference in
 * the tile, plus the tile's offsets and the slot's place; the split
 * nodes' children's boxes grown. Whole block. */
__device__ void write_tile(const SplitTopArrays &t, SplitTopDev *top, const SplitTopLevel &L, const RtAabb *tri_boxes,
                           const float4 *verts, uint32_t n, uint32_t out, uint32_t tile,
                           TopWriteScan::TempStorage &scan, unsigned long long *start, uint32_t *cbox)
{
    const uint32_t tile0 = tile * kTile;
    __syncthreads(); /* the last tile's shared words are read */
    for (int w = threadIdx.x; w < 2 * kTopLevelNodes * 8; w += kTopBlock) cbox[w] = 0u;
    unsigned long long carry = 0; /* the tile's (left, right) before this round */
#pragma unroll 1
    for (int j = 0; j < kTopItems; j++) {
        const uint32_t i = tile0 + (uint32_t)j * kTopBlock + threadIdx.x;
        uint32_t tri = 0, sides = 0;
        int slot = -1;
        RtAabb lb = aabb_empty(), rb = aabb_empty();
        if (i < n) {
            RtAabb r;
            level_ref(t, tri_boxes, L.in, i, &tri, &r);
            slot = range_of(L.first, L.count, L.slots, i);
            sides = ref_sides<false>(t, L, verts, slot, i, tri, r, &lb, &rb);
        }
        const unsigned long long f = lr_pack(sides & 1u, sides >> 1);
        unsigned long long ex, agg;
        TopWriteScan(scan).ExclusiveSum(f, ex, agg);
        ex += carry;
        carry += agg;
        if (slot >= 0 && i == max(L.first[slot], tile0)) start[slot] = ex;
        __syncthreads(); /* start is set; the scan's storage is free again */
        uint32_t key[2] = {kNoWord, kNoWord};
        if (slot >= 0 && sides) {
            const uint2 off = t.tile_counts[(size_t)tile * kTopLevelNodes + slot];
            const unsigned long long st = start[slot];
            const bool split = L.axis[slot] >= 0;
            if (sides & 1u) {
                const uint32_t pos = L.base[slot] + off.x + (lr_left(ex) - lr_left(st));
                split_top_ref_tri(t, out)[pos] = tri, split_top_ref_box(t, out)[pos] = lb;
                if (split) key[0] = (uint32_t)(2 * slot) * 8u;
            }
            if (sides & 2u) {
                const uint32_t pos = L.base[slot] + L.nl[slot] + off.y + (lr_right(ex) - lr_right(st));
                split_top_ref_tri(t, out)[pos] = tri, split_top_ref_box(t, out)[pos] = rb;
                if (split) key[1] = (uint32_t)(2 * slot + 1) * 8u;
            }
        }
        uint32_t lw[6], rw[6];
        box_words(lb, lw), box_words(rb, rw);
        group_words_max(cbox + (key[0] == kNoWord ? 0u : key[0]), key[0], lw, false);
        group_words_max(cbox + (key[1] == kNoWord ? 0u : key[1]), key[1], rw, false);
    }
    __syncthreads();
    for (int w = threadIdx.x; w < 2 * kTopLevelNodes * 8; w += kTopBlock) {
        const uint32_t v = cbox[w], s = (uint32_t)w / 16u, k = (uint32_t)w / 8u % 2u;
        if (!v || w % 8 >= 6 || s >= (uint32_t)L.slots) continue;
        atomicMax(&top->node[L.child[s][k]].box[w % 8], v);
    }
}

/* Each reference of the level at its place in the other buffer (the
 * level's input: L.in, scan_level's record), a tile at a time. */
__global__ void __launch_bounds__(kTopBlock) top_write_kernel(SplitTopArrays t, const RtAabb *tri_boxes,
                                                              const float4 *verts)
{
    __shared__ typename TopWriteScan::TempStorage scan;
    __shared__ unsigned long long start[kTopLevelNodes];
    __shared__ uint32_t cbox[2 * kTopLevelNodes * 8];
    __shared__ SplitTopLevel L;
    SplitTopDev *top = t.top;
    if (top->stop) return;
    const uint32_t n = top->lvl.n, out = (uint32_t)top->cur;
    level_load(&L, top->lvl);
    for (uint32_t tile = blockIdx.x; tile * kTile < n; tile += gridDim.x)
        write_tile(t, top, L, tri_boxes, verts, n, out, tile, scan, start, cbox);
}

/* The sort's keys, a thread each of `keys` (split_top_max_refs):
 * split_top_key of each reference in its leaf's box; without a split the
 * triangles' Morton codes in the scene box (bvh_morton's); the rest
 * RT_LBVH_INVALID, sorting last. free_slots: cap - 1 words set to all
 * ones (H-PLOC's split slots). Block 0 also finishes the top: the leaves'
 * runs, boxes and depths, the key's leaf bits; the counters get the leaves
 * and references (and the valid count the references when the top
 * split). */
__global__ void __launch_bounds__(kTopBlock) top_morton_kernel(SplitTopArrays t, const RtAabb *tri_boxes,
                                                               BvhCounters *ctr, uint32_t tri_count, uint32_t keys,
                                                               uint32_t *codes, uint32_t *ids, uint32_t *free_slots)
{
    static_assert(RT_SPLIT_TOP_MAX_LEAVES <= kTopBlock, "a thread a leaf");
    __shared__ uint32_t s_first[RT_SPLIT_TOP_MAX_LEAVES], s_count[RT_SPLIT_TOP_MAX_LEAVES];
    __shared__ RtAabb s_leaf_box[RT_SPLIT_TOP_MAX_LEAVES];
    SplitTopDev *top = t.top;
    const int leaves = top->leaves, split = leaves > 1, bits = split_top_leaf_bits((uint32_t)leaves);
    if (threadIdx.x < (uint32_t)leaves) {
        const int j = (int)threadIdx.x;
        const SplitTopNodeDev &nd = top->node[top->order[j]];
        s_first[j] = nd.first, s_count[j] = nd.count;
        s_leaf_box[j] = split_top_dec_box(nd.box);
        if (blockIdx.x == 0) {
            top->leaf_first[j] = nd.first, top->leaf_count[j] = nd.count;
            top->leaf_box[j] = s_leaf_box[j];
            top->leaf_depth[j] = nd.depth;
            top->leaf_root[j] = RT_HPLOC_NONE;
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        top->split = split, top->bits = bits;
        ctr->top_leaves = (uint32_t)leaves;
        ctr->tri_valid = ctr->valid;
        if (split) ctr->valid = top->refs;
        ctr->top_refs = ctr->valid;
    }
    __syncthreads();
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= keys) return;
    if (i + 1u < keys) free_slots[i] = 0xffffffffu;
    uint32_t code = RT_LBVH_INVALID;
    if (!split) {
        if (i < tri_count) code = bvh_morton_code(tri_boxes[i], ctr);
    } else if (i < top->refs) {
        const uint32_t leaf = (uint32_t)max(range_of(s_first, s_count, leaves, i), 0);
        const RtAabb box = s_leaf_box[leaf];
        code = split_top_key(leaf, bits, lbvh_morton(split_top_ref_box(t, top->cur)[i], box, lbvh_scale(box)));
    }
    codes[i] = code;
    ids[i] = i;
}

/* ---- host side ------------------------------------------------------------------------ */

void split_top_free(SplitTopArrays *t)
{
    void *bufs[] = {t->top,       t->bins,      t->tile_counts, t->ref_tri[0],
                    t->ref_tri[1], t->ref_box[0], t->ref_box[1],  t->parts};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) cudaFree(bufs[i]);
    memset(t, 0, sizeof *t);
}

RtStatus split_top_reserve(const BvhGpuBase *b, SplitTopArrays *t, const RtSplitTopParams *p, uint32_t tri_count,
                           RtError *err)
{
    const uint32_t cap = split_top_max_refs(tri_count, p->extra);
    if (t->top && cap <= t->cap) return RT_OK;
    split_top_free(t);
    const size_t N = cap ? cap : 1, tiles = (N + kTile - 1) / kTile;
    const BvhAlloc want[] = {
        {(void **)&t->top, sizeof(SplitTopDev), "the spatial-split top"},
        {(void **)&t->bins, (size_t)kTopLevelNodes * kTopBinWords * sizeof(uint32_t), "the top's bins"},
        {(void **)&t->tile_counts, tiles * kTopLevelNodes * sizeof(uint2), "the top's tile counts"},
        {(void **)&t->ref_tri[0], N * sizeof(uint32_t), "the top's references"},
        {(void **)&t->ref_tri[1], N * sizeof(uint32_t), "the top's references"},
        {(void **)&t->ref_box[0], N * sizeof(RtAabb), "the top's reference boxes"},
        {(void **)&t->ref_box[1], N * sizeof(RtAabb), "the top's reference boxes"},
        {(void **)&t->parts, 2 * N * sizeof(RtAabb), "the top's clipped parts"},
    };
    RtStatus st = bvh_gpu_alloc_all(b, want, sizeof want / sizeof want[0], tri_count, err);
    if (st == RT_OK && cudaMemset(t->bins, 0, (size_t)kTopLevelNodes * kTopBinWords * sizeof(uint32_t)) != cudaSuccess)
        st = rt_fail(err, RT_ERR_CUDA, "H-PLOC: clearing the top's bins failed");
    if (st == RT_OK && cudaMemset(t->top, 0, sizeof(SplitTopDev)) != cudaSuccess)
        st = rt_fail(err, RT_ERR_CUDA, "H-PLOC: clearing the top failed");
    if (st != RT_OK) {
        split_top_free(t);
        return st;
    }
    t->cap = cap;
    return RT_OK;
}

RtStatus split_top_queue(BvhGpuBase *b, const SplitTopArrays *t, const RtSplitTopParams *p, const float4 *verts,
                         uint32_t tri_count, uint32_t keys, uint32_t *free_slots, RtError *err)
{
    RtLaunchLog *log = &b->log;
    BvhCounters *ctr = b->d_ctr;
    const RtAabb *boxes = b->keys.boxes;
    const dim3 block(kTopBlock);
    /* at least a block: the last blocks of top_bin and top_count decide and
     * scan every level, with no triangle too (the top is set up at level 0) */
    const dim3 bin_grid = bvh_capped_grid(b, (keys + kBinBlock - 1) / kBinBlock + (keys == 0), kBinBlocksPerSm);
    /* the count and write kernels loop over the tiles: a level that splits
     * nothing (their early return) then costs few blocks */
    const dim3 tiles(bvh_capped_grid(b, (keys + kTile - 1) / kTile + (keys == 0), kTileBlocksPerSm));
    RtStatus st;
    for (int d = 0; d < p->depth; d++) {
        if ((st = rt_launch(log, "top_bin", bin_grid, dim3(kBinBlock), 0, top_bin_kernel, err, *t, boxes, ctr,
                            tri_count, d, *p, keys)) != RT_OK ||
            (st = rt_launch(log, "top_count", tiles, block, 0, top_count_kernel, err, *t, boxes, verts, d)) != RT_OK ||
            (st = rt_launch(log, "top_write", tiles, block, 0, top_write_kernel, err, *t, boxes, verts)) != RT_OK)
            return st;
    }
    return rt_launch(log, "top_morton", dim3((keys + kTopBlock - 1) / kTopBlock + (keys == 0)), block, 0,
                     top_morton_kernel, err, *t, boxes, ctr, tri_count, keys, b->keys.codes[0], b->keys.ids[0],
                     free_slots);
}
