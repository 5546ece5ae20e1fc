/* trace_emu.cu — the GPU tracer's traversal loop (trace_ray.cuh) run on the
 * CPU, for tests without a GPU and for finding out why a variant misses a
 * hit: the same template, instantiated for the host, over a host tree.
 *
 * Packets need a warp: 32 lanes that meet at every vote. Each lane runs
 * trace_ray on its own stack (started with makecontext), and a vote hands
 * control to the next lane, round the ring; the last lane to arrive
 * computes the result and restarts the first. The order is fixed, so a run
 * is deterministic, and a lane that leaves the loop while others still vote
 * (a non-uniform vote, which would deadlock or corrupt a real warp) is
 * reported as an error. Host code only: no GPU, no CUDA runtime call.
 *
 * The switches between running lanes use _setjmp/_longjmp, not
 * swapcontext: a packet ray votes thousands of times, and swapcontext's
 * signal-mask system call made a warp 8x slower. Fortified longjmp
 * refuses to jump to another stack, so the Makefile builds this file with
 * -U_FORTIFY_SOURCE (an #undef here comes too late: nvcc includes
 * cuda_runtime.h, and with it the C library's headers, first). */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <thread>
#include <vector>

#include "trace/trace.h"
#define RT_TRACE_FN __host__
#include "trace/trace_ray.cuh"
#include "trace/trace_bvh.cuh"

enum { kLanes = 32, kLaneStack = 256 * 1024 };

/* One emulated warp: the lanes' contexts and the vote being collected. */
struct EmuWarp {
    ucontext_t lane_ctx[kLanes]; /* a lane's start */
    jmp_buf main_jb, lane_jb[kLanes]; /* where a lane (or the caller) waits */
    bool started[kLanes];
    char *stacks;
    int cur;                 /* the lane running */
    unsigned pending, result; /* votes of the current round; the last round's ballot */
    bool done[kLanes];
    bool broken;             /* a lane left while others voted */
    /* the work of this warp */
    const struct EmuJob *job;
    uint32_t first_tid;
};

/* One cast: what every lane reads. */
struct EmuJob {
    const RtTriArrays *tris;
    int kind;      /* RtAccelKind: which of tree, bvh is walked */
    TraceTree tree;
    TraceBvh bvh;
    TraceCfg cfg;
    const RtGpuRay *rays;
    RtHit *hits;
    uint32_t *steps;
    uint32_t n;
    int width, height, ray_map, any;
};

/* Suspends lane me and runs lane next (from its start, the first time). */
static void emu_switch(EmuWarp *w, int me, int next)
{
    if (_setjmp(w->lane_jb[me])) return; /* resumed */
    if (!w->started[next]) {
        w->started[next] = true;
        setcontext(&w->lane_ctx[next]);
    }
    _longjmp(w->lane_jb[next], 1);
}

/* The vote: lane cur adds its bit and passes control on; the last lane of
 * the ring computes the result and wakes the first. Every lane returns the
 * result of the round it voted in (only the last lane writes it, after all
 * others have read the previous one). */
static unsigned emu_ballot(EmuWarp *w, bool x)
{
    int me = w->cur;
    if (x) w->pending |= 1u << me;
    int next = me + 1 == kLanes ? 0 : me + 1;
    if (me + 1 == kLanes) {
        w->result = w->pending;
        w->pending = 0;
    }
    if (w->done[next]) { /* that lane has left trace_ray: the vote is not warp-uniform */
        w->broken = true;
        _longjmp(w->main_jb, 1); /* this lane is abandoned */
    }
    w->cur = next;
    emu_switch(w, me, next);
    return w->result;
}

/* What trace_ray reads on the host: the triangle arrays, the emulated warp. */
struct HostPrims {
    const RtTriArrays *tris;
    EmuWarp *warp; /* NULL without packets */
    bool any(bool x) const { return emu_ballot(warp, x) != 0; }
    unsigned ballot(bool x) const { return emu_ballot(warp, x); }
    int lane() const { return warp->cur; }
    int isect(int kIsect, uint32_t id, RtVec3 o, RtVec3 d, float tmin, float tmax, float *t,
              float *u, float *v) const
    {
        const RtFloat4 *p = &tris->verts[3 * (size_t)id];
        if (kIsect == RT_ISECT_WOOP)
            return rt_isect_woop_finite(&tris->woop[3 * (size_t)id], o, d, tmin, tmax, t, u, v);
        return rt_isect_mt(f4_xyz(p[0]), f4_xyz(p[1]), f4_xyz(p[2]), o, d, tmin, tmax, t, u, v);
    }
    bool alpha(uint32_t, float, float) const { return true; } /* no textures on the host */
    void woop_rows(const RtFloat4 *p, RtFloat4 rows[3]) const
    {
        for (int k = 0; k < 3; k++) rows[k] = p[k];
    }
    uint32_t index(const uint32_t *p) const { return *p; }
    RtKdNode node(const RtKdNode *p) const { return *p; }
    RtKdLeaf leaf(const RtKdLeaf *p) const { return *p; }
    RtAabb box(const RtAabb *p) const { return *p; }
    RtBvhNode bvh_node(const RtBvhNode *p) const { return *p; }
};

/* cast_kernel's body for thread tid (trace.cu), on the host. */
template <int kTrav, int kIsect, bool kPacket>
static void emu_thread(const EmuJob *job, EmuWarp *w, uint32_t tid)
{
    int px, py;
    bool valid = pixel_of(job->ray_map, tid, job->width, job->height, &px, &py);
    uint32_t i = (uint32_t)py * (uint32_t)job->width + (uint32_t)px;
    valid = valid && i < job->n;
    RtGpuRay r;
    memset(&r, 0, sizeof r);
    if (valid) r = job->rays[i];
    uint32_t steps = 0;
    HostPrims pr = {job->tris, w};
    RtHit h = job->kind == RT_ACCEL_BVH
                  ? trace_bvh<kIsect>(pr, job->bvh, r.o, r.d, r.tmin, r.tmax, valid, job->any != 0, &steps)
                  : trace_ray<kTrav, kIsect, kPacket>(pr, job->tree, job->cfg, r.o, r.d, r.tmin, r.tmax,
                                                      valid, job->any != 0, &steps);
    if (!valid) return;
    job->hits[i] = h;
    if (job->steps) job->steps[i] = steps;
}

/* A lane's entry point (makecontext passes ints: the warp's address in two). */
template <int kTrav, int kIsect>
static void emu_lane(unsigned hi, unsigned lo)
{
    EmuWarp *w = (EmuWarp *)(((uintptr_t)hi << 32) | (uintptr_t)lo);
    int me = w->cur;
    emu_thread<kTrav, kIsect, true>(w->job, w, w->first_tid + (uint32_t)me);
    w->done[me] = true;
    /* leave in ring order: the next lane is still inside its last vote */
    if (me + 1 < kLanes && w->started[me + 1] && !w->done[me + 1]) {
        w->cur = me + 1;
        emu_switch(w, me, me + 1); /* never resumed */
    }
    if (me + 1 < kLanes) w->broken = true;
    _longjmp(w->main_jb, 1);
}

/* Runs the threads of one warp in lock step; false when a vote was not
 * warp-uniform. */
template <int kTrav, int kIsect>
static bool emu_warp(EmuWarp *w, uint32_t first_tid)
{
    w->first_tid = first_tid;
    w->cur = 0;
    w->pending = w->result = 0;
    w->broken = false;
    memset(w->done, 0, sizeof w->done);
    memset(w->started, 0, sizeof w->started);
    uintptr_t a = (uintptr_t)w;
    for (int l = 0; l < kLanes; l++) {
        getcontext(&w->lane_ctx[l]);
        w->lane_ctx[l].uc_stack.ss_sp = w->stacks + (size_t)l * kLaneStack;
        w->lane_ctx[l].uc_stack.ss_size = kLaneStack;
        w->lane_ctx[l].uc_link = NULL; /* lanes leave by _longjmp, never by returning */
        makecontext(&w->lane_ctx[l], (void (*)(void))emu_lane<kTrav, kIsect>, 2,
                    (unsigned)(a >> 32), (unsigned)(a & 0xffffffffu));
    }
    if (!_setjmp(w->main_jb)) {
        w->started[0] = true;
        setcontext(&w->lane_ctx[0]);
    }
    for (int l = 0; l < kLanes; l++)
        if (!w->done[l]) w->broken = true;
    return !w->broken;
}

/* The warps first, first + step, ... of a cast, on one host thread. */
template <int kTrav, int kIsect, bool kPacket>
static void emu_worker(const EmuJob *job, uint32_t warps, uint32_t first, uint32_t step,
                       char *stacks, int *bad_warp)
{
    if (!kPacket) {
        for (uint32_t wi = first; wi < warps; wi += step)
            for (uint32_t l = 0; l < kLanes; l++)
                emu_thread<kTrav, kIsect, false>(job, NULL, wi * kLanes + l);
        return;
    }
    EmuWarp w;
    memset(&w, 0, sizeof w);
    w.stacks = stacks;
    w.job = job;
    for (uint32_t wi = first; wi < warps; wi += step)
        if (!emu_warp<kTrav, kIsect>(&w, wi * kLanes)) {
            *bad_warp = (int)wi;
            return;
        }
}

/* Warps are independent: they are spread over the host's cores. */
template <int kTrav, int kIsect, bool kPacket>
static RtStatus emu_cast(const EmuJob *job, uint32_t threads, RtError *err)
{
    uint32_t warps = threads / kLanes;
    unsigned hw = std::thread::hardware_concurrency();
    uint32_t workers = hw < 1 ? 1 : (hw > 16 ? 16 : hw);
    if (workers > warps) workers = warps ? warps : 1;
    char *stacks = kPacket ? (char *)malloc((size_t)workers * kLanes * kLaneStack) : NULL;
    if (kPacket && !stacks)
        return rt_fail(err, RT_ERR_OOM, "TRACE: emulation: out of memory for %u x %d lane stacks",
                       workers, kLanes);
    std::vector<int> bad(workers, -1);
    std::vector<std::thread> pool;
    for (uint32_t k = 1; k < workers; k++)
        pool.emplace_back(emu_worker<kTrav, kIsect, kPacket>, job, warps, k, workers,
                          stacks + (size_t)k * kLanes * kLaneStack * kPacket, &bad[k]);
    emu_worker<kTrav, kIsect, kPacket>(job, warps, 0, workers, stacks, &bad[0]);
    for (std::thread &th : pool) th.join();
    free(stacks);
    for (uint32_t k = 0; k < workers; k++)
        if (bad[k] >= 0)
            return rt_fail(err, RT_ERR_ARG, "TRACE: emulation: warp of threads %u..%u voted "
                           "non-uniformly (a lane left trace_ray while others voted)",
                           (uint32_t)bad[k] * kLanes, (uint32_t)bad[k] * kLanes + kLanes - 1);
    return RT_OK;
}

extern "C" RtStatus rt_trace_emulate_rays(const RtTriArrays *tris, const RtAccel *accel,
                                          const RtTraceParams *p, const RtGpuRay *rays,
                                          RtHit *hits, uint32_t *steps, uint32_t n, int width,
                                          int any_hit, RtError *err)
{
    RtTraceParams params = p ? *p : rt_trace_params_default();
    const RtKdTree *tree = accel && accel->kind == RT_ACCEL_KD ? accel->kd : NULL;
    const RtBvh *bvh = accel && accel->kind == RT_ACCEL_BVH ? accel->bvh : NULL;
    if (!tris || (!tree && !bvh) || (n && (!rays || !hits)) || width <= 0)
        return rt_fail(err, RT_ERR_ARG, "TRACE: emulation needs triangles, a tree, rays and hits");
    if (bvh && bvh->index_count > RT_BVH_MAX_INDEX)
        return rt_fail(err, RT_ERR_ARG, "TRACE: a BVH of %u triangle references is beyond the walk's %u",
                       bvh->index_count, RT_BVH_MAX_INDEX);
    RtStatus st = rt_trace_params_check(&params, err);
    if (st != RT_OK || n == 0) return st;
    EmuJob job;
    memset(&job, 0, sizeof job);
    job.tris = tris;
    job.kind = accel->kind;
    if (tree) {
        job.tree.nodes = tree->nodes;
        job.tree.leaves = tree->leaves;
        job.tree.boxes = tree->leaf_boxes;
        job.tree.index = tree->tri_index;
        job.tree.bounds = tree->bounds;
        job.tree.d_bounds = NULL;
        job.tree.node_count = aabb_is_empty(tree->bounds) ? 0u : tree->node_count;
    } else {
        job.bvh.nodes = bvh->nodes;
        job.bvh.index = bvh->tri_index;
        job.bvh.leaf_woop = bvh->leaf_woop;
        job.bvh.bounds = bvh->bounds;
        job.bvh.d_bounds = NULL;
        job.bvh.node_count = aabb_is_empty(bvh->bounds) ? 0u : bvh->node_count;
        params.packet = RT_PACKET_OFF; /* a BVH traces single rays (trace.h) */
    }
    job.cfg.leaf_skip = params.leaf_skip;
    job.cfg.stack_size = params.stack_size;
    job.cfg.textures = 0;
    job.rays = rays;
    job.hits = hits;
    job.steps = steps;
    job.n = n;
    job.width = width;
    job.height = (int)((n + (uint32_t)width - 1) / (uint32_t)width);
    job.ray_map = params.ray_map;
    job.any = any_hit;
    uint32_t threads = thread_count(params.ray_map, width, job.height);
    threads = (threads + kLanes - 1) / kLanes * kLanes; /* whole warps, as the kernel's blocks */
#define EMU(kT, kI, kP) emu_cast<kT, kI, kP>(&job, threads, err)
#define EMU_T(kT)                                                                                   \
    (params.isect == RT_ISECT_WOOP                                                                 \
         ? (params.packet ? EMU(kT, RT_ISECT_WOOP, true) : EMU(kT, RT_ISECT_WOOP, false))          \
         : (params.packet ? EMU(kT, RT_ISECT_MT, true) : EMU(kT, RT_ISECT_MT, false)))
    if (params.traversal == RT_TRAV_RESTART) return EMU_T(RT_TRAV_RESTART);
    if (params.traversal == RT_TRAV_SHORT_STACK) return EMU_T(RT_TRAV_SHORT_STACK);
    return EMU_T(RT_TRAV_STACK);
#undef EMU_T
#undef EMU
}
