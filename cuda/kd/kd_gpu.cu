/* kd_gpu.cu — the per-frame driver of the GPU kd-tree build:
 *
 *   triangle boxes, valid refs, bounds, root          (kd_large_init)
 *   while large nodes remain:                         (kd_large_persistent: one launch;
 *       node boxes, empty-space cuts + median split,   Impl. I: kd_large_level per level)
 *       triangle sorting, routing of the children
 *   small roots: SAH splits or leaves                 (kd_small_fused: one launch, a warp
 *                                                      per root, candidates in shared memory;
 *                                                      Zhou's schedule: kd_small_prepare, then
 *                                                      kd_small_level per level)
 *   read the counters back once                       (sizes, overflow)
 *
 * Buffers are sized from estimates, then to what the builds need (with
 * slack; kd_fit_caps): every device-side allocation is bounded, an overflow
 * sets a bit in the counters, and the driver grows the buffers named by the
 * bits and builds again (never a silent corruption).
 * With Implementation II and the fused small stage the loop bounds stay on
 * the device: the host waits once per build, for the final counters. The
 * level-by-level schedules (Impl. I, Zhou's small stage) read the counters
 * back once per level; stats.round_trips counts every wait.
 *
 * The tree leaves the builder in the shared layout of kd_layout.h: nodes
 * (sibling-adjacent children), leaves, leaf boxes and tri_index, each
 * filled by bounded atomic allocation, hence dense (no compaction pass: the
 * allocation counters are the array sizes). The end of this file copies
 * trees and triangles between host and device (rt_kd_gpu_download, ...). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kd/kd_cpu.h"
#include "kd/kd_exact.cuh"
#include "kd/kd_gpu_internal.cuh"
#include "gpu/gpu.h"

/* A device array, sized by kd_reserve. */
typedef struct KdArr {
    void *p;
    size_t bytes;
} KdArr;

enum {
    A_TRI_LO, A_TRI_HI, A_REFS0, A_REFS1, A_REFS2, A_ACT0, A_ACT1, A_ACT2, A_CH0, A_CH1, A_CH2, A_CHBOX, A_FLAGS, A_SCAN,
    A_SROOTS, A_SIDX, A_SBOX, A_CSPLIT, A_CMASK, A_SN0, A_SN1, A_NODES, A_LEAVES, A_LBOX, A_TIDX,
    A_CUB, A_RLO0, A_RHI0, A_RLO1, A_RHI1, A_RLO2, A_RHI2, A_TBOUNDS, A_RBUCKET,
    A_COUNT
};

struct RtKdGpu {
    cudaStream_t stream;
    RtLaunchLog log;
    KdArr arr[A_COUNT];
    KdCounters *d_ctr, *h_ctr, *h_init;
    cudaEvent_t ev[3]; /* the build's start, the large stage's end, the small stage's end */
    cudaEvent_t ev_input, ev_done; /* the caller's stream -> the build -> the caller's stream */
    /* the build in flight (rt_kd_gpu_build_async .. rt_kd_gpu_build_finish) */
    int pending;
    RtKdGpuParams p;
    KdConf c;
    KdBufs b;
    const RtFloat4 *verts, *woop;
    uint32_t tri_count;
    double t0;
    int fresh; /* h_ctr already holds the final counters (a host-driven schedule) */
    RtKdGpuStats st;
    /* capacities in elements: estimated from the triangle count, grown
     * when a build overflows them, fitted to what finished builds needed */
    uint32_t ref_cap, active_cap, chunk_cap, sroot_cap, sref_cap, snode_cap;
    uint32_t node_cap, leaf_cap, index_cap;
    uint32_t caps_tris; /* the triangle count the capacities were estimated for (+1; 0: none yet) */
    int sms; /* multiprocessors: grids of the persistent and queue-driven kernels */
    /* the exact SAH builder (RT_KD_GPU_BUILDER_EXACT), made at its first use;
     * g->p.builder says which one the build in flight is */
    KdExact *exact;
    RtKdTree exact_tree;
};

/* Exactly `bytes`: grown, or given back when the capacities were fitted
 * down to a smaller tree or a variant no longer uses the array. Never frame
 * after frame: the capacities move only by kd_grow_caps and kd_fit_caps,
 * whose bands keep them still while a scene moves. */
static RtStatus kd_reserve(KdArr *a, size_t bytes, RtError *err)
{
    if (bytes == 0) bytes = 16;
    if (a->bytes == bytes) return RT_OK;
    if (a->p) cudaFree(a->p);
    a->p = NULL;
    a->bytes = 0;
    RtStatus st = rt_gpu_alloc(&a->p, bytes, "the kd-tree builder's arrays", err);
    if (st != RT_OK) return st;
    a->bytes = bytes;
    return RT_OK;
}

extern "C" RtStatus rt_kd_gpu_create(RtKdGpu **out, RtError *err)
{
    *out = NULL;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        cudaGetLastError();
        return rt_fail(err, RT_ERR_NO_DEVICE, "KD: no CUDA device for the GPU kd-tree builder");
    }
    RtKdGpu *b = (RtKdGpu *)calloc(1, sizeof *b);
    if (!b) return rt_fail(err, RT_ERR_OOM, "KD: out of host memory");
    *out = b;
    CUDA_CHECK(err, cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
    CUDA_CHECK(err, cudaMalloc((void **)&b->d_ctr, sizeof(KdCounters)));
    CUDA_CHECK(err, cudaMallocHost((void **)&b->h_ctr, sizeof(KdCounters)));
    CUDA_CHECK(err, cudaMallocHost((void **)&b->h_init, sizeof(KdCounters)));
    memset(b->h_init, 0, sizeof(KdCounters));
    for (int l = 1; l <= KD_MAX_LEVELS; l++) b->h_init->level_pending[l] = 1; /* the level before: not complete */
    for (int a = 0; a < 3; a++) {
        b->h_init->bounds[a] = rt_f2ord(INFINITY);
        b->h_init->bounds[3 + a] = rt_f2ord(-INFINITY);
    }
    for (int i = 0; i < 3; i++) CUDA_CHECK(err, cudaEventCreate(&b->ev[i]));
    CUDA_CHECK(err, cudaEventCreateWithFlags(&b->ev_input, cudaEventDisableTiming));
    CUDA_CHECK(err, cudaEventCreateWithFlags(&b->ev_done, cudaEventDisableTiming));
    int dev = 0, coop = 0;
    CUDA_CHECK(err, cudaGetDevice(&dev));
    CUDA_CHECK(err, cudaDeviceGetAttribute(&b->sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_CHECK(err, cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    if (!coop) return rt_fail(err, RT_ERR_UNSUPPORTED, "KD: the device cannot launch cooperative kernels");
    b->log.stream = b->stream;
    return RT_OK;
}

extern "C" void rt_kd_gpu_destroy(RtKdGpu *b)
{
    if (!b) return;
    for (int i = 0; i < A_COUNT; i++)
        if (b->arr[i].p) cudaFree(b->arr[i].p);
    if (b->d_ctr) cudaFree(b->d_ctr);
    if (b->h_ctr) cudaFreeHost(b->h_ctr);
    if (b->h_init) cudaFreeHost(b->h_init);
    for (int i = 0; i < 3; i++)
        if (b->ev[i]) cudaEventDestroy(b->ev[i]);
    if (b->ev_input) cudaEventDestroy(b->ev_input);
    if (b->ev_done) cudaEventDestroy(b->ev_done);
    kd_exact_destroy(b->exact);
    rt_launch_log_destroy(&b->log);
    if (b->stream) cudaStreamDestroy(b->stream);
    free(b);
}

/* Zhou's level-by-level small stage (a launch and a read-back per level)
 * rather than the fused one-launch stage. */
static int kd_small_levels(const RtKdGpuParams *p)
{
    return !p->small_fused && p->small_mode != RT_KD_GPU_SMALL_NONE;
}

/* Chunks the reference and active-node capacities can make: a node's
 * references cut into chunks, at most one part-filled chunk a node. */
static uint32_t kd_chunk_bound(const RtKdGpu *g)
{
    return rt_kd_gpu_cap_clamp((uint64_t)g->ref_cap / KD_CHUNK + g->active_cap + 16);
}

/* First-build capacities from the triangle count. Later builds of as many
 * triangles keep the capacities the earlier ones grew or fitted. */
static void kd_initial_caps(RtKdGpu *g, uint32_t n)
{
    if (g->caps_tris == n + 1u) return;
    g->caps_tris = n + 1u;
    /* per triangle, a little above what Sponza, the 12M city and the 10M
     * grid need with the default parameters (C_i 0.5): largest large-stage
     * level 2.4 / 2.4 / 2.7 references, small-stage references 2.2 / 2.2 /
     * 1.5, nodes 1.8 / 1.7 / 1.1, leaves half the nodes, tree references
     * 3.9 / 4.1 / 1.5; small roots and active nodes far fewer */
    size_t N = n ? n : 1;
    g->ref_cap = rt_kd_gpu_cap_clamp(3 * N + 4096);
    g->active_cap = rt_kd_gpu_cap_clamp(N / 32 + 1024);
    g->sroot_cap = rt_kd_gpu_cap_clamp(N / 8 + 1024);
    g->sref_cap = g->snode_cap = rt_kd_gpu_cap_clamp(5 * N / 2 + 4096);
    g->node_cap = rt_kd_gpu_cap_clamp(2 * N + 4096);
    g->leaf_cap = g->node_cap / 2 + 1;
    g->index_cap = rt_kd_gpu_cap_clamp(9 * N / 2 + 4096);
    g->chunk_cap = kd_chunk_bound(g);
}

/* What each buffer was asked for by the last build (KdCounters: the
 * allocation counters go on counting past a full buffer, so after an
 * overflow they hold at least the overflowing level's demand). */
typedef struct KdNeeds {
    uint64_t refs, active, chunks, sroots, srefs, snodes, nodes, leaves, index;
} KdNeeds;

static KdNeeds kd_needs(const KdCounters *h)
{
    KdNeeds n;
    memset(&n, 0, sizeof n);
    for (int l = 0; l <= KD_MAX_LEVELS; l++) {
        if (h->level_refs[l] > n.refs) n.refs = h->level_refs[l];
        if (h->level_active[l] > n.active) n.active = h->level_active[l];
        if (h->level_chunks[l] > n.chunks) n.chunks = h->level_chunks[l];
        if (h->small_active[l] > n.snodes) n.snodes = h->small_active[l];
    }
    n.sroots = h->small_roots;
    n.srefs = h->small_refs;
    n.nodes = h->nodes;
    n.leaves = h->leaf_index >> 32;
    n.index = h->leaf_index & 0xffffffffu;
    return n;
}

/* After an overflow (rt_kd_gpu_cap_grow). */
static void kd_grow(uint32_t *cap, uint64_t need)
{
    *cap = rt_kd_gpu_cap_grow(*cap, need);
}

static void kd_grow_caps(RtKdGpu *g, uint32_t ovf)
{
    const KdNeeds n = kd_needs(g->h_ctr);
    if (ovf & KD_OVF_NODES) kd_grow(&g->node_cap, n.nodes);
    if (ovf & KD_OVF_LEAVES) kd_grow(&g->leaf_cap, n.leaves);
    if (ovf & KD_OVF_INDEX) kd_grow(&g->index_cap, n.index);
    if (ovf & KD_OVF_REFS) kd_grow(&g->ref_cap, n.refs);
    if (ovf & KD_OVF_ACTIVE) kd_grow(&g->active_cap, n.active);
    if (ovf & KD_OVF_SROOTS) kd_grow(&g->sroot_cap, n.sroots);
    if (ovf & KD_OVF_SREFS) kd_grow(&g->sref_cap, n.srefs);
    if (ovf & KD_OVF_SNODES) kd_grow(&g->snode_cap, n.snodes);
    const uint32_t chunks = kd_chunk_bound(g);
    if (g->chunk_cap < chunks) g->chunk_cap = chunks;
    if (ovf & KD_OVF_CHUNKS) kd_grow(&g->chunk_cap, n.chunks);
}

/* After a finished build (rt_kd_gpu_cap_fit): the first build's estimates
 * and the overflows' growth overshoot, and at 12M triangles the excess is
 * gigabytes. */
static void kd_fit(uint32_t *cap, uint64_t need)
{
    *cap = rt_kd_gpu_cap_fit(*cap, need);
}

static void kd_fit_caps(RtKdGpu *g, const RtKdGpuParams *p)
{
    const KdNeeds n = kd_needs(g->h_ctr);
    kd_fit(&g->ref_cap, n.refs);
    kd_fit(&g->active_cap, n.active);
    kd_fit(&g->chunk_cap, n.chunks);
    kd_fit(&g->sroot_cap, n.sroots);
    kd_fit(&g->sref_cap, n.srefs);
    if (kd_small_levels(p)) kd_fit(&g->snode_cap, n.snodes); /* unused (0) by the fused small stage */
    kd_fit(&g->node_cap, n.nodes);
    kd_fit(&g->leaf_cap, n.leaves);
    kd_fit(&g->index_cap, n.index);
}

static RtStatus kd_alloc_all(RtKdGpu *g, const RtKdGpuParams *p, const KdConf *c, uint32_t n, KdBufs *b,
                             RtError *err)
{
    size_t N = n ? n : 1;
    const int levels = kd_small_levels(p);
    /* the third list only for the dataflow schedule (KD_LISTS) */
    const int lists = c->dataflow ? 3 : 2;
    const size_t third = lists == 3;
    struct { int id; size_t bytes; } want[] = {
        {A_TRI_LO, N * sizeof(float4)}, {A_TRI_HI, N * sizeof(float4)},
        {A_REFS0, g->ref_cap * sizeof(uint32_t)}, {A_REFS1, g->ref_cap * sizeof(uint32_t)},
        {A_REFS2, third * g->ref_cap * sizeof(uint32_t)},
        {A_ACT0, g->active_cap * sizeof(KdLargeNode)}, {A_ACT1, g->active_cap * sizeof(KdLargeNode)},
        {A_ACT2, third * g->active_cap * sizeof(KdLargeNode)},
        {A_CH0, g->chunk_cap * sizeof(uint2)}, {A_CH1, g->chunk_cap * sizeof(uint2)},
        {A_CH2, third * g->chunk_cap * sizeof(uint2)},
        {A_CHBOX, p->chang_c ? 0 : g->chunk_cap * sizeof(RtAabb)},
        {A_FLAGS, p->chang_a ? 0 : (2 * (size_t)g->ref_cap + 1) * sizeof(uint32_t)},
        {A_SCAN, p->chang_a ? 0 : (2 * (size_t)g->ref_cap + 1) * sizeof(uint32_t)},
        {A_CUB, p->chang_a ? 0 : kd_large_scan_bytes(2 * g->ref_cap + 1)},
        {A_RLO0, p->assoc == RT_KD_GPU_CLIP ? g->ref_cap * sizeof(float4) : 0},
        {A_RHI0, p->assoc == RT_KD_GPU_CLIP ? g->ref_cap * sizeof(float2) : 0},
        {A_RLO1, p->assoc == RT_KD_GPU_CLIP ? g->ref_cap * sizeof(float4) : 0},
        {A_RHI1, p->assoc == RT_KD_GPU_CLIP ? g->ref_cap * sizeof(float2) : 0},
        {A_RLO2, p->assoc == RT_KD_GPU_CLIP ? third * g->ref_cap * sizeof(float4) : 0},
        {A_RHI2, p->assoc == RT_KD_GPU_CLIP ? third * g->ref_cap * sizeof(float2) : 0},
        {A_SROOTS, g->sroot_cap * sizeof(KdSmallRoot)}, {A_SIDX, g->sref_cap * sizeof(uint32_t)},
        {A_RBUCKET, KD_ROOT_BUCKETS * (size_t)g->sroot_cap * sizeof(uint32_t)},
        {A_SBOX, g->sref_cap * sizeof(RtAabb)},
        /* global candidates and small-node lists: Zhou's level-by-level
         * small stage only (the fused one keeps them in shared memory) */
        {A_CSPLIT, levels ? 6 * (size_t)g->sref_cap * sizeof(float) : 0},
        {A_CMASK, levels ? 6 * (size_t)g->sref_cap * sizeof(ulonglong2) : 0},
        {A_SN0, levels ? g->snode_cap * sizeof(KdSmallNode) : 0},
        {A_SN1, levels ? g->snode_cap * sizeof(KdSmallNode) : 0},
        {A_TBOUNDS, sizeof(RtAabb)},
        {A_NODES, g->node_cap * sizeof(RtKdNode)}, {A_LEAVES, g->leaf_cap * sizeof(RtKdLeaf)},
        {A_LBOX, g->leaf_cap * sizeof(RtAabb)}, {A_TIDX, g->index_cap * sizeof(uint32_t)},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        RtStatus st = kd_reserve(&g->arr[want[i].id], want[i].bytes, err);
        if (st != RT_OK) return st;
    }
    memset(b, 0, sizeof *b);
    b->lists = lists;
    b->tri_count = n;
    b->tri_lo = (float4 *)g->arr[A_TRI_LO].p;
    b->tri_hi = (float4 *)g->arr[A_TRI_HI].p;
    b->refs[0] = (uint32_t *)g->arr[A_REFS0].p;
    b->refs[1] = (uint32_t *)g->arr[A_REFS1].p;
    b->refs[2] = (uint32_t *)g->arr[A_REFS2].p;
    b->ref_cap = g->ref_cap;
    b->ref_a[0] = (float4 *)g->arr[A_RLO0].p;
    b->ref_b[0] = (float2 *)g->arr[A_RHI0].p;
    b->ref_a[1] = (float4 *)g->arr[A_RLO1].p;
    b->ref_b[1] = (float2 *)g->arr[A_RHI1].p;
    b->ref_a[2] = (float4 *)g->arr[A_RLO2].p;
    b->ref_b[2] = (float2 *)g->arr[A_RHI2].p;
    b->active[0] = (KdLargeNode *)g->arr[A_ACT0].p;
    b->active[1] = (KdLargeNode *)g->arr[A_ACT1].p;
    b->active[2] = (KdLargeNode *)g->arr[A_ACT2].p;
    b->active_cap = g->active_cap;
    b->chunks[0] = (uint2 *)g->arr[A_CH0].p;
    b->chunks[1] = (uint2 *)g->arr[A_CH1].p;
    b->chunks[2] = (uint2 *)g->arr[A_CH2].p;
    b->chunk_cap = g->chunk_cap;
    b->chunk_box = (RtAabb *)g->arr[A_CHBOX].p;
    b->flags = (uint32_t *)g->arr[A_FLAGS].p;
    b->scan = (uint32_t *)g->arr[A_SCAN].p;
    b->sroots = (KdSmallRoot *)g->arr[A_SROOTS].p;
    b->sroot_cap = g->sroot_cap;
    b->root_bucket = (uint32_t *)g->arr[A_RBUCKET].p;
    b->small_idx = (uint32_t *)g->arr[A_SIDX].p;
    b->small_box = (RtAabb *)g->arr[A_SBOX].p;
    b->cand_split = (float *)g->arr[A_CSPLIT].p;
    b->cand_mask = (ulonglong2 *)g->arr[A_CMASK].p;
    b->sref_cap = g->sref_cap;
    b->snodes[0] = (KdSmallNode *)g->arr[A_SN0].p;
    b->snodes[1] = (KdSmallNode *)g->arr[A_SN1].p;
    b->snode_cap = levels ? g->snode_cap : 0;
    b->nodes = (RtKdNode *)g->arr[A_NODES].p;
    b->leaves = (RtKdLeaf *)g->arr[A_LEAVES].p;
    b->leaf_boxes = (RtAabb *)g->arr[A_LBOX].p;
    b->tri_index = (uint32_t *)g->arr[A_TIDX].p;
    b->node_cap = g->node_cap;
    b->leaf_cap = g->leaf_cap;
    b->index_cap = g->index_cap;
    b->tree_bounds = (RtAabb *)g->arr[A_TBOUNDS].p;
    b->ctr = g->d_ctr;
    return RT_OK;
}

/* The one host round trip per level: the counters that bound the next launches. */
static RtStatus kd_read_counters(RtKdGpu *g, uint32_t *trips, RtError *err)
{
    CUDA_CHECK(err, cudaMemcpyAsync(g->h_ctr, g->d_ctr, sizeof(KdCounters), cudaMemcpyDeviceToHost, g->stream));
    CUDA_CHECK(err, cudaStreamSynchronize(g->stream));
    (*trips)++;
    return RT_OK;
}

/* One attempt at the whole build; *overflow says whether to grow and retry. */
static RtStatus kd_build_once(RtKdGpu *g, const RtKdGpuParams *p, const KdBufs &b, const KdConf &c,
                              RtKdGpuStats *s, uint32_t *overflow, RtError *err)
{
    RtLaunchLog *log = &g->log;
    RtStatus st;
    *overflow = 0;
    CUDA_CHECK(err, cudaEventRecord(g->ev[0], g->stream));
    CUDA_CHECK(err, cudaMemcpyAsync(g->d_ctr, g->h_init, sizeof(KdCounters), cudaMemcpyHostToDevice, g->stream));

    /* ---- large-node stage -------------------------------------------- */
    if ((st = kd_large_init(log, b, c, err)) != RT_OK) return st;
    int level = 0;
    if (p->chang_a) {
        /* Implementation II: every level in one launch, bounds on the device */
        if ((st = kd_large_persistent(log, b, c, *p, err)) != RT_OK) return st;
        level = -1; /* counted from the final counters */
    } else {
        /* Implementation I: CUB's scan takes its size on the host: one read-back per level */
        for (;;) {
            if ((st = kd_read_counters(g, &s->round_trips, err)) != RT_OK) return st;
            if ((*overflow = g->h_ctr->overflow) != 0) return RT_OK;
            uint32_t active = g->h_ctr->level_active[level];
            if (active == 0) break;
            if (level + 1 >= KD_MAX_LEVELS)
                return rt_fail(err, RT_ERR_UNSUPPORTED, "KD: large-node stage deeper than %d levels", KD_MAX_LEVELS);
            st = kd_large_level(log, b, c, *p, level, active, g->h_ctr->level_chunks[level],
                                g->h_ctr->level_refs[level], g->arr[A_CUB].p, g->arr[A_CUB].bytes, err);
            if (st != RT_OK) return st;
            level++;
        }
    }
    CUDA_CHECK(err, cudaEventRecord(g->ev[1], g->stream));

    /* ---- small-node stage -------------------------------------------- */
    int slevel = 0, fresh = 0; /* fresh: h_ctr already holds the final counters */
    if (!kd_small_levels(p)) {
        /* one launch: a warp per small root, candidates in shared memory */
        if ((st = kd_small_fused(log, b, c, p->chang_e, err)) != RT_OK) return st;
        slevel = p->small_mode != RT_KD_GPU_SMALL_NONE;
    } else {
        if ((st = kd_small_prepare(log, b, c, err)) != RT_OK) return st;
        /* Zhou's schedule: one launch and one read-back per level */
        for (;;) {
            if ((st = kd_read_counters(g, &s->round_trips, err)) != RT_OK) return st;
            fresh = 1;
            if ((*overflow = g->h_ctr->overflow) != 0) return RT_OK;
            uint32_t active = g->h_ctr->small_active[slevel];
            if (active == 0) break;
            if (slevel + 1 >= KD_MAX_LEVELS)
                return rt_fail(err, RT_ERR_UNSUPPORTED, "KD: small-node stage deeper than %d levels", KD_MAX_LEVELS);
            if ((st = kd_small_level(log, b, c, p->chang_e, slevel, active, err)) != RT_OK) return st;
            fresh = 0;
            slevel++;
        }
    }
    s->small_levels = (uint32_t)slevel;
    if ((st = kd_mark_empty_queue(log, b.nodes, &b.ctr->nodes, b.node_cap, err)) != RT_OK) return st;
    /* the output arrays are dense already (bounded atomic allocation):
     * nothing to compact, the small stage's end is the build's */
    CUDA_CHECK(err, cudaEventRecord(g->ev[2], g->stream));
    /* the sizes and the overflow bits travel to the host behind the build;
     * nobody waits for them here (kd_build_counters does, later) */
    g->fresh = fresh;
    s->large_levels = level < 0 ? 0 : (uint32_t)level;
    if (!fresh)
        CUDA_CHECK(err, cudaMemcpyAsync(g->h_ctr, g->d_ctr, sizeof(KdCounters), cudaMemcpyDeviceToHost, g->stream));
    CUDA_CHECK(err, cudaEventRecord(g->ev_done, g->stream));
    return RT_OK;
}

/* The final counters of the build in flight on the host (waits for them). */
static RtStatus kd_build_counters(RtKdGpu *g, RtKdGpuStats *s, uint32_t *overflow, RtError *err)
{
    CUDA_CHECK(err, cudaEventSynchronize(g->ev_done));
    *overflow = g->h_ctr->overflow;
    if (!s->large_levels)
        for (; s->large_levels < KD_MAX_LEVELS && g->h_ctr->level_active[s->large_levels]; s->large_levels++) {}
    const KdCounters *h = g->h_ctr;
    for (int l = 0; l < RT_KD_GPU_PROFILE_LEVELS; l++) {
        const bool run = l < (int)s->large_levels;
        s->level_nodes[l] = run ? h->level_active[l] : 0;
        s->level_chunks[l] = run ? h->level_chunks[l] : 0;
        s->level_us[l] = run && h->level_ns[l] && h->level_ns[l + 1] > h->level_ns[l]
                             ? (float)((h->level_ns[l + 1] - h->level_ns[l]) * 1e-3)
                             : 0.0f;
    }
    return RT_OK;
}

/* Checks the parameters and turns them into the kernels' configuration. */
static RtStatus kd_conf(const RtKdGpu *g, const RtKdGpuParams &p, uint32_t tri_count, KdConf *c, RtError *err)
{
    if (p.small_threshold < 1 || p.small_threshold > KD_SMALL_MAX)
        return rt_fail(err, RT_ERR_ARG, "KD: small threshold %u: expected 1..%d", p.small_threshold, KD_SMALL_MAX);
    if (!(p.empty_cut > 0.0f && p.empty_cut < 1.0f))
        return rt_fail(err, RT_ERR_ARG, "KD: empty-space cut %g: expected a fraction in (0, 1)", p.empty_cut);
    if (!(p.c_isect > 0.0f && p.c_trav >= 0.0f) || !isfinite(p.c_isect) || !isfinite(p.c_trav))
        return rt_fail(err, RT_ERR_ARG, "KD: SAH costs C_trav %g, C_i %g: expected C_trav >= 0 and C_i > 0",
                       p.c_trav, p.c_isect);
    if ((uint64_t)tri_count * 6 > RT_KD_MAX_INDEX)
        return rt_fail(err, RT_ERR_UNSUPPORTED, "KD: %u triangles: more than the layout's 28-bit indices allow", tri_count);
    c->empty_cut = p.empty_cut;
    c->c_trav = p.c_trav;
    c->c_isect = p.c_isect;
    c->small_threshold = p.small_threshold;
    c->small_mode = (int)p.small_mode;
    c->clip = p.assoc == RT_KD_GPU_CLIP;
    if (p.small_exact_clip < 0 || p.small_exact_clip > 1)
        return rt_fail(err, RT_ERR_ARG, "KD: small-stage exact clip %d: expected 0 or 1", p.small_exact_clip);
    c->small_exact = p.small_exact_clip;
    c->split_at_route = p.chang_a && p.chang_c; /* the persistent stage with [C] */
    if (p.small_fused < 0 || p.small_fused > 1)
        return rt_fail(err, RT_ERR_ARG, "KD: small-stage schedule %d: expected 0 (a launch per level) or 1 (one launch)",
                       p.small_fused);
    if (p.large_ways != 0 && p.large_ways != 2 && p.large_ways != 4)
        return rt_fail(err, RT_ERR_ARG, "KD: %d children per large split: expected 2 or 4", p.large_ways);
    /* 4 ways need the children's boxes from the sort, i.e. [A] and [C] */
    c->ways = p.large_ways == 4 && c->split_at_route ? 4 : 2;
    if (p.large_dataflow < 0 || p.large_dataflow > 2)
        return rt_fail(err, RT_ERR_ARG,
                       "KD: large-stage schedule %d: expected 0 (a barrier per level), 1 (dataflow) or 2 (auto)",
                       p.large_dataflow);
    /* dataflow needs the nodes split as they are routed ([A] + [C]); auto:
     * below KD_DATAFLOW_AUTO_TRIS triangles, where the levels' barriers cost
     * more than its per-chunk publishing (docs/kd_gpu.md) */
    c->dataflow = c->split_at_route &&
                  (p.large_dataflow == 1 || (p.large_dataflow == 2 && tri_count < KD_DATAFLOW_AUTO_TRIS));
    c->sms = g->sms;
    if (p.large_chunk % KD_CHUNK || p.large_chunk > KD_CHUNK_REFS_MAX)
        return rt_fail(err, RT_ERR_ARG, "KD: large-stage chunk of %u refs: expected 0 (auto) or a multiple of %d up to %d",
                       p.large_chunk, KD_CHUNK, KD_CHUNK_REFS_MAX);
    /* Longer chunks only where a chunk's block sorts them in rounds and adds
     * the children's boxes by atomics ([A] + [C]). Auto: one chunk per
     * resident block at the root's level; a chunk's chain of L2 round trips
     * (claim, node, sort, cursors, routing) is paid once per chunk, a round
     * of KD_CHUNK refs more costs only its loads and one cursor atomic. */
    uint32_t chunk = p.large_chunk;
    if (!chunk) {
        const uint64_t blocks = (uint64_t)KD_LARGE_BLOCKS * (uint64_t)(g->sms > 0 ? g->sms : 1);
        const uint64_t rounds = ((uint64_t)tri_count + KD_CHUNK * blocks - 1) / (KD_CHUNK * blocks);
        chunk = (uint32_t)(rounds < 1 ? 1 : (rounds > KD_CHUNK_AUTO_ROUNDS ? KD_CHUNK_AUTO_ROUNDS : rounds)) * KD_CHUNK;
    }
    c->chunk_refs = c->split_at_route ? chunk : KD_CHUNK;

    int md = p.max_depth > 0 ? p.max_depth : (int)(16.0 + 1.3 * log2((double)(tri_count ? tri_count : 1)));
    c->max_depth = md > RT_KD_MAX_DEPTH ? RT_KD_MAX_DEPTH : (md < 2 ? 2 : md);
    return RT_OK;
}

/* One attempt: buffers at the current capacities, then every stage queued. */
static RtStatus kd_attempt(RtKdGpu *g, RtKdGpuStats *s, uint32_t *overflow, RtError *err)
{
    RtStatus st = kd_alloc_all(g, &g->p, &g->c, g->tri_count, &g->b, err);
    if (st != RT_OK) return st;
    g->b.verts = (const float4 *)g->verts;
    g->b.woop = (const float4 *)g->woop;
    return kd_build_once(g, &g->p, g->b, g->c, s, overflow, err);
}

extern "C" RtStatus rt_kd_gpu_build_async(RtKdGpu *g, const RtKdGpuParams *pp, const RtFloat4 *d_verts,
                                          const RtFloat4 *d_woop, uint32_t tri_count, RtKdTree *d_tree,
                                          RtError *err)
{
    if (!g || !d_tree || (tri_count && !d_verts))
        return rt_fail(err, RT_ERR_ARG, "KD: rt_kd_gpu_build needs a builder, vertices and a tree");
    if (g->pending) return rt_fail(err, RT_ERR_ARG, "KD: a build is in flight: rt_kd_gpu_build_finish it first");
    RtKdGpuParams p = pp ? *pp : rt_kd_gpu_params_default();
    const bool exact = p.builder == RT_KD_GPU_BUILDER_EXACT;
    if (!exact && p.builder != RT_KD_GPU_BUILDER_CHANG)
        return rt_fail(err, RT_ERR_ARG, "KD: builder %d: expected 0 (Chang) or 1 (exact)", (int)p.builder);
    RtStatus st;
    if (exact ? (!g->exact && (st = kd_exact_create(&g->exact, err)) != RT_OK)
              : (st = kd_conf(g, p, tri_count, &g->c, err)) != RT_OK)
        return st;
    RtKdGpuStats *s = &g->st;
    memset(s, 0, sizeof *s);
    g->t0 = rt_now_ms();
    g->p = p;
    g->verts = d_verts;
    g->woop = d_woop;
    g->tri_count = tri_count;
    rt_launch_log_reset(&g->log);
    g->log.timed = p.timed;
    if (!exact) kd_initial_caps(g, tri_count);
    /* the build reads what the caller's (legacy default) stream wrote */
    CUDA_CHECK(err, cudaEventRecord(g->ev_input, cudaStreamLegacy));
    CUDA_CHECK(err, cudaStreamWaitEvent(g->stream, g->ev_input, 0));
    if (exact) {
        /* Kolodzey's builder waits for its levels' totals, so it is done
         * when it returns: rt_kd_gpu_build_finish only hands over its tree
         * and statistics */
        if ((st = kd_exact_build(g->exact, &p, (const float4 *)d_verts, (const float4 *)d_woop, tri_count, g->stream,
                                 &g->log, &g->exact_tree, s, err)) != RT_OK)
            return st;
        CUDA_CHECK(err, cudaEventRecord(g->ev_done, g->stream));
        *d_tree = g->exact_tree;
        g->fresh = 1; /* nothing left to wait for */
    } else {
        uint32_t ovf = 0;
        for (int attempt = 0;; attempt++) {
            /* a host-driven schedule (Impl. I, Zhou's small levels) sees an
             * overflow at once; a device-driven one in rt_kd_gpu_build_finish */
            if ((st = kd_attempt(g, s, &ovf, err)) != RT_OK) return st;
            if (!ovf) break;
            if (attempt == 12)
                return rt_fail(err, RT_ERR_OOM, "KD: GPU build still overflows (bits 0x%x) after growing 12 times", ovf);
            kd_grow_caps(g, ovf);
            s->rebuilds++;
        }
        memset(d_tree, 0, sizeof *d_tree);
        d_tree->nodes = g->b.nodes;
        d_tree->leaves = g->b.leaves;
        d_tree->leaf_boxes = g->b.leaf_boxes;
        d_tree->tri_index = g->b.tri_index;
        d_tree->node_cap = g->b.node_cap;
        d_tree->leaf_cap = g->b.leaf_cap;
        d_tree->index_cap = g->b.index_cap;
        d_tree->bounds = aabb_empty(); /* known on the device only, until finished */
        d_tree->d_bounds = g->b.tree_bounds;
    }
    /* ... and the caller's later work (the tracer) waits for the build */
    CUDA_CHECK(err, cudaStreamWaitEvent(cudaStreamLegacy, g->ev_done, 0));
    g->pending = 1;
    return RT_OK;
}

/* The launch log's totals into the statistics. */
static void kd_stats_kernels(const RtKdGpu *g, RtKdGpuStats *s)
{
    s->launches = g->log.launches;
    const int cap = (int)(sizeof s->kernels / sizeof s->kernels[0]);
    s->kernel_count = g->log.entry_count < cap ? g->log.entry_count : cap;
    for (int i = 0; i < s->kernel_count; i++) {
        s->kernels[i].name = g->log.entries[i].name;
        s->kernels[i].launches = g->log.entries[i].count;
        s->kernels[i].ms = g->log.entries[i].ms;
    }
}

extern "C" RtStatus rt_kd_gpu_build_finish(RtKdGpu *g, RtKdTree *d_tree, RtKdGpuStats *stats, int *rebuilt,
                                           RtError *err)
{
    if (rebuilt) *rebuilt = 0;
    if (!g || !g->pending) return rt_fail(err, RT_ERR_ARG, "KD: no GPU build in flight to finish");
    g->pending = 0;
    RtKdGpuStats *s = &g->st;
    RtStatus st;
    if (g->p.builder == RT_KD_GPU_BUILDER_EXACT) {
        *d_tree = g->exact_tree;
        if ((st = rt_launch_log_resolve(&g->log, err)) != RT_OK) return st;
        kd_stats_kernels(g, s);
        if (stats) *stats = *s;
        return RT_OK;
    }
    uint32_t ovf = 0;
    st = kd_build_counters(g, s, &ovf, err);
    if (st != RT_OK) return st;
    for (int attempt = 0; ovf; attempt++) {
        /* the device-driven build overflowed: grow and build again, now
         * waiting for each attempt (the caller redoes what used the tree) */
        if (attempt == 12)
            return rt_fail(err, RT_ERR_OOM, "KD: GPU build still overflows (bits 0x%x) after growing 12 times", ovf);
        kd_grow_caps(g, ovf);
        s->rebuilds++;
        if (rebuilt) *rebuilt = 1;
        rt_launch_log_reset(&g->log);
        if ((st = kd_attempt(g, s, &ovf, err)) != RT_OK) return st;
        if (!ovf && (st = kd_build_counters(g, s, &ovf, err)) != RT_OK) return st;
        s->round_trips++;
    }
    const KdCounters *h = g->h_ctr;
    const KdBufs &b = g->b;
    memset(d_tree, 0, sizeof *d_tree);
    d_tree->nodes = b.nodes;
    d_tree->leaves = b.leaves;
    d_tree->leaf_boxes = b.leaf_boxes;
    d_tree->tri_index = b.tri_index;
    d_tree->node_count = h->nodes;
    d_tree->leaf_count = (uint32_t)(h->leaf_index >> 32);
    d_tree->index_count = (uint32_t)h->leaf_index;
    d_tree->node_cap = b.node_cap;
    d_tree->leaf_cap = b.leaf_cap;
    d_tree->index_cap = b.index_cap;
    d_tree->d_bounds = b.tree_bounds;
    if (h->valid) {
        d_tree->bounds.lo = v3(rt_ord2f(h->bounds[0]), rt_ord2f(h->bounds[1]), rt_ord2f(h->bounds[2]));
        d_tree->bounds.hi = v3(rt_ord2f(h->bounds[3]), rt_ord2f(h->bounds[4]), rt_ord2f(h->bounds[5]));
    } else {
        d_tree->bounds = aabb_empty();
    }

    /* ---- statistics -------------------------------------------------- */
    s->build_ms = rt_now_ms() - g->t0;
    cudaEventElapsedTime(&s->gpu_ms, g->ev[0], g->ev[2]);
    cudaEventElapsedTime(&s->large_ms, g->ev[0], g->ev[1]);
    cudaEventElapsedTime(&s->small_ms, g->ev[1], g->ev[2]);
    if ((st = rt_launch_log_resolve(&g->log, err)) != RT_OK) return st;
    s->nodes = h->nodes;
    s->leaves = d_tree->leaf_count;
    s->references = d_tree->index_count;
    s->triangles = g->tri_count;
    s->valid_triangles = h->valid;
    kd_stats_kernels(g, s);
    s->device_bytes = 0;
    for (int i = 0; i < A_COUNT; i++) s->device_bytes += g->arr[i].bytes;
    if (stats) *stats = *s;
    /* the next build allocates what this one needed (this tree's arrays
     * stay as they are until then) */
    kd_fit_caps(g, &g->p);
    return RT_OK;
}

extern "C" RtStatus rt_kd_gpu_build(RtKdGpu *g, const RtKdGpuParams *p, const RtFloat4 *d_verts,
                                    const RtFloat4 *d_woop, uint32_t tri_count, RtKdTree *d_tree,
                                    RtKdGpuStats *stats, RtError *err)
{
    RtStatus st = rt_kd_gpu_build_async(g, p, d_verts, d_woop, tri_count, d_tree, err);
    if (st != RT_OK) return st;
    /* the synchronous build waits for its counters here: a round trip */
    if (!g->fresh) g->st.round_trips++;
    return rt_kd_gpu_build_finish(g, d_tree, stats, NULL, err);
}

/* ==== host <-> device copies, for the tests, the oracle comparisons and tools ==== */

static RtStatus kd_copy_down(void **dst, const void *src, size_t bytes, RtError *err)
{
    *dst = malloc(bytes ? bytes : 1);
    if (!*dst) return rt_fail(err, RT_ERR_OOM, "KD: out of host memory downloading the tree");
    if (bytes) CUDA_CHECK(err, cudaMemcpy(*dst, src, bytes, cudaMemcpyDeviceToHost));
    return RT_OK;
}

extern "C" RtStatus rt_kd_gpu_download(const RtKdTree *d_tree, RtKdTree *h, RtError *err)
{
    memset(h, 0, sizeof *h);
    RtStatus st;
    if ((st = kd_copy_down((void **)&h->nodes, d_tree->nodes, d_tree->node_count * sizeof(RtKdNode), err)) != RT_OK ||
        (st = kd_copy_down((void **)&h->leaves, d_tree->leaves, d_tree->leaf_count * sizeof(RtKdLeaf), err)) != RT_OK ||
        (st = kd_copy_down((void **)&h->leaf_boxes, d_tree->leaf_boxes, d_tree->leaf_count * sizeof(RtAabb), err)) != RT_OK ||
        (st = kd_copy_down((void **)&h->tri_index, d_tree->tri_index, d_tree->index_count * sizeof(uint32_t), err)) != RT_OK) {
        rt_kd_tree_free(h);
        return st;
    }
    h->node_count = h->node_cap = d_tree->node_count;
    h->leaf_count = h->leaf_cap = d_tree->leaf_count;
    h->index_count = h->index_cap = d_tree->index_count;
    h->bounds = d_tree->bounds;
    h->d_bounds = NULL;
    return RT_OK;
}

extern "C" RtStatus rt_kd_gpu_upload_f4(const RtFloat4 *host, size_t n, RtFloat4 **d_out, RtError *err)
{
    *d_out = NULL;
    RtStatus st = rt_gpu_alloc((void **)d_out, (n ? n : 1) * sizeof(RtFloat4), "a device copy", err);
    if (st != RT_OK) return st;
    if (n) CUDA_CHECK(err, cudaMemcpy(*d_out, host, n * sizeof(RtFloat4), cudaMemcpyHostToDevice));
    return RT_OK;
}

extern "C" void rt_kd_gpu_free(void *d_ptr)
{
    if (d_ptr) cudaFree(d_ptr);
}
