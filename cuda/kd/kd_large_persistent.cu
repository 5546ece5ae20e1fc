/* kd_large_persistent.cu — Implementation II of the large-node stage
 * (Chang, Seo and Ihm: [A] triangle sorting by per-block atomics, so no
 * level needs a size from the host): every level of Zhou et al. 2008's
 * large stage in ONE cooperative launch, the loop bounds read from device
 * counters, levels separated by grid-wide barriers; the last block to sort
 * a node's chunks routes the node (and, with [C], splits its children,
 * whose boxes the sort accumulated with atomics). With [A] and [C] the
 * dataflow schedule (kd_large_dataflow.cu) may take the launch instead.
 * The steps are kd_large_internal.cuh. */
#include "kd/kd_large_internal.cuh"

/* A barrier over the whole (co-resident, cooperative) grid. Blocks that
 * arrive early wait with __nanosleep: cooperative_groups' grid.sync spins
 * on an acquire load that invalidates the SM's L1 at every turn (4.8M turns
 * per Sponza build, 10 % of the stage's instructions, H100 ncu), under the
 * feet of the blocks still sorting on that SM. The closing fence is the
 * acquire for every thread of the block (they read only after the
 * __syncthreads that follows it). */
__device__ __forceinline__ void kd_grid_sync(KdCounters *ctr)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile uint32_t *gen = &ctr->bar_gen;
        const uint32_t g = *gen;
        rt_fence_release(); /* this block's writes before its arrival */
        if (atomicAdd(&ctr->bar_count, 1u) == gridDim.x - 1) {
            atomicExch(&ctr->bar_count, 0u);
            rt_fence_release();
            atomicAdd(&ctr->bar_gen, 1u);
        } else {
            unsigned ns = 32;
            while (*gen == g) {
                __nanosleep(ns);
                ns = ns < 256 ? 2 * ns : ns;
            }
        }
        rt_fence_acquire(); /* the other blocks' writes before their arrivals */
    }
    __syncthreads();
}

/* Every level of the large stage in one cooperative launch. Level L:
 *   [C] off: chunk boxes | barrier | per node: segmented reduction + split | barrier
 *   sort every chunk; the node's last chunk routes it (with [C]: splits the
 *   children on the spot, their boxes accumulated by the sort) | barrier
 * The bounds (active nodes, chunks) and the stop decision are read after a
 * barrier from words no block writes during the level, so every block takes
 * the same decision (a block leaving early would hang the barrier). */
/* 64 registers a thread, so the register file holds 1024 threads (256-
 * thread blocks: 80 registers and 3 blocks measured 12 % slower on Sponza
 * and 17 % on a 1M-triangle mesh despite the spills, 48 registers and 5
 * blocks 10 % slower). 4 ways carry twice the per-ref state: 3/4 of the
 * blocks with 80 registers measured 4-7 % faster there (H100). */
template <bool BALLOT, bool SHFL, bool ATOMIC, int W>
__global__ void __launch_bounds__(KD_CHUNK, W == 4 ? 3 * KD_LARGE_BLOCKS / 4 : KD_LARGE_BLOCKS) kd_large_persistent_kernel(KdBufs b, KdConf c)
{
    __shared__ KdLargeShared<W> s;
    uint32_t *sh = s.sh, *off = s.off, *s_next = s.work;
    float *shf = s.shf;
    KdLargeNode *s_route = s.route;
    volatile KdCounters *vc = b.ctr;
    for (int level = 0; level + 1 < KD_MAX_LEVELS; level++) {
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            unsigned long long t;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
            b.ctr->level_ns[level] = t;
        }
        if (vc->level_ovf[level]) return; /* an overflow before this level: the build is redone */
        uint32_t active = min(vc->level_active[level], b.active_cap);
        uint32_t chunks = min(vc->level_chunks[level], b.chunk_cap);
        if (active == 0) return;
        if (!ATOMIC) {
            for (uint32_t ch = blockIdx.x; ch < chunks; ch += gridDim.x) {
                kd_bbox_chunk<SHFL, false>(b, c, level, ch, shf);
                __syncthreads();
            }
            kd_grid_sync(b.ctr);
            for (uint32_t n = blockIdx.x; n < active; n += gridDim.x) {
                kd_segreduce_node<SHFL>(b, level, n, shf);
                if (threadIdx.x == 0) kd_split_node<2>(b, c, &b.active[kd_list(b, level)][n], level, &b.ctr->level_ovf[level + 1]);
                __syncthreads();
            }
            kd_grid_sync(b.ctr);
        }
        /* the first round's chunks by block index, later ones from a queue:
         * a block that routes a node (a chain of allocations) or sorts
         * straddlers takes fewer; the next index is fetched while this
         * chunk is sorted (two slots: thread 0 may run a chunk ahead) */
        uint32_t ch = blockIdx.x;
        for (int it = 0; ch < chunks; it++) {
            if (threadIdx.x == 0)
                s_next[it & 1] = chunks > gridDim.x ? gridDim.x + atomicAdd(&b.ctr->level_next[level], 1u) : UINT32_MAX;
            bool last = kd_sort_chunk<BALLOT, SHFL, ATOMIC, W>(b, c, level, b.chunks[kd_list(b, level)][ch], sh, shf, off);
            /* the node's children are routed by a warp each, at once:
             * each child's chain of allocations (and, with [C], its
             * split) is the critical path of the level */
            if (last)
                for (int k = (int)(threadIdx.x >> 5); k < W; k += KD_CHUNK / 32)
                    kd_route_node<false, ATOMIC, W>(b, c, &b.active[kd_list(b, level)][b.chunks[kd_list(b, level)][ch].x],
                                                    level, 0, threadIdx.x & 31, &s_route[threadIdx.x >> 5], k);
            __syncthreads();
            ch = s_next[it & 1];
        }
        kd_grid_sync(b.ctr);
    }
}

template <bool BALLOT, bool SHFL, bool ATOMIC>
static RtStatus kd_persistent_launch(RtLaunchLog *log, const KdBufs &b, const KdConf &c, int want, RtError *err)
{
    /* 4 ways only where children are split as they are routed ([C]: their
     * boxes come from the sort); kd_conf sets c.ways accordingly */
    void (*k)(KdBufs, KdConf) = ATOMIC && c.ways == 4 ? kd_large_persistent_kernel<BALLOT, SHFL, ATOMIC, ATOMIC ? 4 : 2>
                                                      : kd_large_persistent_kernel<BALLOT, SHFL, ATOMIC, 2>;
    return kd_large_coop_launch(log, k, b, c, want, err);
}

RtStatus kd_large_persistent(RtLaunchLog *log, const KdBufs &b, const KdConf &c, const RtKdGpuParams &p,
                             RtError *err)
{
    /* kd_conf: the dataflow needs [C] (nodes split as they are routed) */
    if (c.dataflow) return kd_large_dataflow_stage(log, b, c, p, err);
    const int v = (p.chang_b ? 4 : 0) | (p.chang_d ? 2 : 0) | (p.chang_c ? 1 : 0);
    switch (v) {
    case 0: return kd_persistent_launch<false, false, false>(log, b, c, p.large_blocks_per_sm, err);
    case 1: return kd_persistent_launch<false, false, true>(log, b, c, p.large_blocks_per_sm, err);
    case 2: return kd_persistent_launch<false, true, false>(log, b, c, p.large_blocks_per_sm, err);
    case 3: return kd_persistent_launch<false, true, true>(log, b, c, p.large_blocks_per_sm, err);
    case 4: return kd_persistent_launch<true, false, false>(log, b, c, p.large_blocks_per_sm, err);
    case 5: return kd_persistent_launch<true, false, true>(log, b, c, p.large_blocks_per_sm, err);
    case 6: return kd_persistent_launch<true, true, false>(log, b, c, p.large_blocks_per_sm, err);
    default: return kd_persistent_launch<true, true, true>(log, b, c, p.large_blocks_per_sm, err);
    }
}
