/* kd_large_dataflow.cu — the large-node stage as a dataflow (ours, the
 * default below 2^22 triangles; RtKdGpuParams.large_dataflow): Zhou et al.
 * 2008's large-stage steps with Chang, Seo and Ihm's [A] and [C] in one
 * cooperative launch like Implementation II (kd_large_persistent.cu), but
 * without a grid barrier between levels: a node's chunks are published as
 * its parent is routed and any block may take them at once. The steps are
 * kd_large_internal.cuh. */
#include "kd/kd_large_internal.cuh"

/* Thread 0, after a chunk of `lev` and, when it was the node's last, the
 * routing: one chunk of the level less pending. The block that takes a
 * level's count to 0 completes it (its chunks are sorted and its nodes
 * routed, so the next level's chunk count is final) and takes the next
 * level's "level before" token, which may complete that one too. Counts on
 * one word per level need no fence between them; a routing block fences
 * first, so the chunks it added to the next level count before its own is
 * done. */
__device__ void kd_chunk_done(const KdBufs &b, int lev, bool routed)
{
    volatile KdCounters *vc = b.ctr;
    if (routed) rt_fence_release();
    uint32_t left = atomicSub(&b.ctr->level_pending[lev], 1u) - 1u;
    while (left == 0 && lev + 1 < KD_MAX_LEVELS) {
        /* both halves: release what the level's blocks did before the flag,
         * acquire for the next level's counters read below */
        rt_fence_acq_rel();
        vc->level_complete[lev] = 1u;
        vc->level_ns[lev + 1] = kd_globaltimer();
        lev++;
        if (vc->level_chunks[lev] == 0) return; /* the stage ends here (final: the level before is complete) */
        left = atomicSub(&b.ctr->level_pending[lev], 1u) - 1u;
    }
}

/* The large stage as a dataflow (ours, `large_dataflow`, needs [A] and
 * [C]): no barrier between levels. A node's chunks are published by the
 * routing of its parent (descriptor after the node, kd_route_node) and any
 * block may take them at once, while the parent's level still runs: the
 * level-synchronous schedule spent 66 % of its warp samples at barriers
 * (H100 ncu), and every level cost ~10 us however few chunks it had.
 * Thread 0 of a block claims chunks from per-level queues, lowest level
 * first; a claim past the level's current chunk count waits until more
 * chunks are routed or the count is final (the level before complete),
 * when the claim lapses and the block moves one level on. A block moves to
 * level L + 1 only when level L - 1 is complete, so the list level L + 1
 * writes (level L - 1's, kd_list) is free: three lists, not two. The stage
 * ends at the first level with no chunks; an overflow stops every block
 * (no barrier to keep). */
template <bool BALLOT, bool SHFL, int W>
__device__ void kd_large_dataflow(const KdBufs &b, const KdConf &c, KdLargeShared<W> &s)
{
    uint32_t *s_work = s.work;
    volatile KdCounters *vc = b.ctr;
    int level = 0;               /* thread 0: the level it takes chunks from */
    uint32_t claim = UINT32_MAX; /* thread 0: a claim in it, not yet a chunk */
    if (blockIdx.x == 0 && threadIdx.x == 0) vc->level_ns[0] = kd_globaltimer();
    for (;;) {
        if (threadIdx.x == 0) {
            uint32_t got = KD_CHUNK_FREE;
            while (!vc->overflow && level + 1 < KD_MAX_LEVELS) {
                /* the claim before the reads: its round trip overlaps theirs
                 * (a claim the stage's end leaves unused is harmless) */
                if (claim == UINT32_MAX) claim = atomicAdd(&b.ctr->level_next[level], 1u);
                const bool final = level == 0 || vc->level_complete[level - 1];
                const uint32_t have = min(vc->level_chunks[level], b.chunk_cap);
                if (final && have == 0) break; /* the stage is done */
                if (claim < have) {
                    got = claim;
                    claim = UINT32_MAX;
                    break;
                }
                if (final) { /* every chunk of the level is taken */
                    claim = UINT32_MAX;
                    level++;
                    continue;
                }
                __nanosleep(128);
            }
            if (got != KD_CHUNK_FREE) { /* allocated; wait until it is written */
                /* one 8-byte word: the routing's make_uint2 store */
                volatile unsigned long long *d = (volatile unsigned long long *)&b.chunks[kd_list(b, level)][got];
                unsigned long long dv;
                while ((uint32_t)(dv = *d) == KD_CHUNK_FREE && !vc->overflow) __nanosleep(32);
                rt_fence_acquire(); /* acquire for the block (it reads after the barrier) */
                if (vc->overflow) got = KD_CHUNK_FREE;
                /* the descriptor to the block through shared memory: one
                 * L2 round trip less on the chunk's chain */
                s_work[2] = (uint32_t)dv;
                s_work[3] = (uint32_t)(dv >> 32);
            }
            s_work[0] = got;
            s_work[1] = (uint32_t)level;
        }
        __syncthreads();
        const uint32_t ch = s_work[0];
        const int lev = (int)s_work[1];
        if (ch == KD_CHUNK_FREE) return;
        const uint2 dsc = make_uint2(s_work[2], s_work[3]);
        const uint32_t ni = dsc.x;
        const bool last = kd_sort_chunk<BALLOT, SHFL, true, W>(b, c, lev, dsc, s.sh, s.shf, s.off);
        if (last) /* a warp per child (a block of fewer warps takes turns) */
            for (int k = (int)(threadIdx.x >> 5); k < W; k += KD_CHUNK / 32)
                kd_route_node<false, true, W>(b, c, &b.active[kd_list(b, lev)][ni], lev, 0, threadIdx.x & 31,
                                              &s.route[threadIdx.x >> 5], k);
        __syncthreads();
        if (threadIdx.x == 0) {
            /* unpublished again, for the level that reuses the list */
            b.chunks[kd_list(b, lev)][ch] = make_uint2(KD_CHUNK_FREE, KD_CHUNK_FREE);
            /* the next claim in flight with the chunk's count: one round
             * trip for both (taken when the block looks for work anyway,
             * unlike a claim taken while a chunk sorts, which measured
             * slower: docs/kd_gpu.md) */
            if (claim == UINT32_MAX) claim = atomicAdd(&b.ctr->level_next[level], 1u);
            kd_chunk_done(b, lev, last);
        }
    }
}

/* The dataflow schedule in its own kernel: the level loop's registers and
 * spills stay out of it (same launch bounds). */
template <bool BALLOT, bool SHFL, int W>
__global__ void __launch_bounds__(KD_CHUNK, W == 4 ? 3 * KD_LARGE_BLOCKS / 4 : KD_LARGE_BLOCKS) kd_large_dataflow_kernel(KdBufs b, KdConf c)
{
    __shared__ KdLargeShared<W> s;
    kd_large_dataflow<BALLOT, SHFL, W>(b, c, s);
}

template <bool BALLOT, bool SHFL>
static RtStatus kd_dataflow_launch(RtLaunchLog *log, const KdBufs &b, const KdConf &c, int want, RtError *err)
{
    return kd_large_coop_launch(log, c.ways == 4 ? kd_large_dataflow_kernel<BALLOT, SHFL, 4> : kd_large_dataflow_kernel<BALLOT, SHFL, 2>,
                                b, c, want, err);
}

RtStatus kd_large_dataflow_stage(RtLaunchLog *log, const KdBufs &b, const KdConf &c, const RtKdGpuParams &p,
                                 RtError *err)
{
    const int want = p.large_blocks_per_sm;
    if (p.chang_b) return p.chang_d ? kd_dataflow_launch<true, true>(log, b, c, want, err)
                                    : kd_dataflow_launch<true, false>(log, b, c, want, err);
    return p.chang_d ? kd_dataflow_launch<false, true>(log, b, c, want, err)
                     : kd_dataflow_launch<false, false>(log, b, c, want, err);
}
