/* launch.h — every kernel launch of rtviewer goes through rt_launch: it names
 * the kernel, counts it and (when the log asks for it) times it with a pair
 * of CUDA events, so the benchmark and the HUD report launches per frame and
 * GPU time per kernel without ad-hoc instrumentation in the stages.
 * C++ (CUDA) only: included by the .cu files. */
#ifndef RT_LAUNCH_H
#define RT_LAUNCH_H

#include <cuda_runtime.h>
#include <string.h>

#include "gpu/cuda_check.h"

/* One named kernel's totals since the last rt_launch_log_reset. */
typedef struct RtLaunchEntry {
    const char *name; /* a string literal: compared by pointer, then by text */
    uint32_t count;
    float ms;         /* summed GPU time (only with RtLaunchLog.timed) */
} RtLaunchEntry;

enum { RT_LAUNCH_MAX_NAMES = 48, RT_LAUNCH_MAX_TIMED = 1024 };

/* Per-frame launch log. Zero it (= {}) and set `timed` before use; call
 * rt_launch_log_destroy to free the events. Not thread-safe: one per stream. */
typedef struct RtLaunchLog {
    int timed;                 /* 1: an event pair around every launch (costs ~2 us each) */
    cudaStream_t stream;
    uint32_t launches;         /* all launches since the reset */
    RtLaunchEntry entries[RT_LAUNCH_MAX_NAMES];
    int entry_count;
    /* pending timings: event pairs recorded, read by rt_launch_log_resolve */
    cudaEvent_t ev[2 * RT_LAUNCH_MAX_TIMED];
    int ev_created;
    int pending_entry[RT_LAUNCH_MAX_TIMED];
    int pending;
} RtLaunchLog;

static inline void rt_launch_log_reset(RtLaunchLog *log)
{
    log->launches = 0;
    log->entry_count = 0;
    log->pending = 0;
}

static inline int rt_launch_entry(RtLaunchLog *log, const char *name)
{
    for (int i = 0; i < log->entry_count; i++)
        if (log->entries[i].name == name || !strcmp(log->entries[i].name, name)) return i;
    if (log->entry_count == RT_LAUNCH_MAX_NAMES) return RT_LAUNCH_MAX_NAMES - 1; /* lump the rest */
    RtLaunchEntry *e = &log->entries[log->entry_count];
    e->name = name;
    e->count = 0;
    e->ms = 0.0f;
    return log->entry_count++;
}

/* The bookkeeping around one launch: the entry, and the start event when timed. */
static inline RtStatus rt_launch_begin(RtLaunchLog *log, const char *name, int *entry, int *slot,
                                       RtError *err)
{
    *entry = rt_launch_entry(log, name);
    *slot = -1;
    if (log->timed && log->pending < RT_LAUNCH_MAX_TIMED) {
        *slot = log->pending;
        if (2 * *slot + 1 >= log->ev_created) {
            CUDA_CHECK(err, cudaEventCreate(&log->ev[log->ev_created]));
            CUDA_CHECK(err, cudaEventCreate(&log->ev[log->ev_created + 1]));
            log->ev_created += 2;
        }
        CUDA_CHECK(err, cudaEventRecord(log->ev[2 * *slot], log->stream));
    }
    return RT_OK;
}

static inline RtStatus rt_launch_end(RtLaunchLog *log, int entry, int slot, RtError *err)
{
    if (slot >= 0) {
        CUDA_CHECK(err, cudaEventRecord(log->ev[2 * slot + 1], log->stream));
        log->pending_entry[slot] = entry;
        log->pending++;
    }
    log->entries[entry].count++;
    log->launches++;
    return RT_OK;
}

/* Launches kernel<<<grid, block, smem, log->stream>>>(args...). An empty grid
 * launches nothing and counts nothing. Returns RT_ERR_CUDA (naming the
 * kernel) when the launch fails. */
template <typename... KArgs, typename... Args>
static RtStatus rt_launch(RtLaunchLog *log, const char *name, dim3 grid, dim3 block, size_t smem,
                          void (*kernel)(KArgs...), RtError *err, Args... args)
{
    if (grid.x == 0 || grid.y == 0 || grid.z == 0) return RT_OK;
    int entry, slot;
    RtStatus st = rt_launch_begin(log, name, &entry, &slot, err);
    if (st != RT_OK) return st;
    kernel<<<grid, block, smem, log->stream>>>(args...);
    CUDA_CHECK_LAUNCH(err, name);
    return rt_launch_end(log, entry, slot, err);
}

/* Launches kernel<<<grid, block, smem, stream>>>(args...) as a programmatic
 * dependent of the kernel before it in the stream: it may be scheduled
 * while that one's last blocks run, so its launch overlaps their end. The
 * kernel must call rt_wait_previous() before it reads anything the kernel
 * before it wrote (or that the host queued before it). Counted and timed
 * as rt_launch (a timed log's events between two kernels leave no overlap). */
template <typename... KArgs, typename... Args>
static RtStatus rt_launch_dependent(RtLaunchLog *log, cudaStream_t stream, const char *name, dim3 grid, dim3 block,
                                    size_t smem, void (*kernel)(KArgs...), RtError *err, Args... args)
{
    if (grid.x == 0 || grid.y == 0 || grid.z == 0) return RT_OK;
    int entry, slot;
    RtStatus st = rt_launch_begin(log, name, &entry, &slot, err);
    if (st != RT_OK) return st;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = smem, cfg.stream = stream;
    cfg.attrs = &attr, cfg.numAttrs = 1;
    const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, args...);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return rt_fail(err, RT_ERR_CUDA, "CUDA: launch of %s (%u blocks): %s", name, grid.x, cudaGetErrorString(e));
    }
    return rt_launch_end(log, entry, slot, err);
}

/* First thing in a kernel launched by rt_launch_dependent: waits for the
 * kernel before it (and its memory); launched plainly, returns at once. */
static __device__ __forceinline__ void rt_wait_previous() { cudaGridDependencySynchronize(); }

/* The same for a cooperative kernel (grid-wide barriers: every block must be
 * resident, so grid is at most the occupancy times the multiprocessors).
 * The arguments must have exactly the kernel's parameter types. */
template <typename... KArgs>
static RtStatus rt_launch_coop(RtLaunchLog *log, const char *name, dim3 grid, dim3 block, size_t smem,
                               void (*kernel)(KArgs...), RtError *err, KArgs... args)
{
    if (grid.x == 0 || grid.y == 0 || grid.z == 0) return RT_OK;
    int entry, slot;
    RtStatus st = rt_launch_begin(log, name, &entry, &slot, err);
    if (st != RT_OK) return st;
    void *argv[] = {(void *)&args..., NULL};
    cudaError_t e = cudaLaunchCooperativeKernel((const void *)kernel, grid, block, argv, smem, log->stream);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return rt_fail(err, RT_ERR_CUDA, "CUDA: cooperative launch of %s (%u blocks): %s", name, grid.x,
                       cudaGetErrorString(e));
    }
    return rt_launch_end(log, entry, slot, err);
}

/* Adds the recorded timings into the entries (synchronises on the events). */
static inline RtStatus rt_launch_log_resolve(RtLaunchLog *log, RtError *err)
{
    for (int i = 0; i < log->pending; i++) {
        float ms = 0.0f;
        CUDA_CHECK(err, cudaEventSynchronize(log->ev[2 * i + 1]));
        CUDA_CHECK(err, cudaEventElapsedTime(&ms, log->ev[2 * i], log->ev[2 * i + 1]));
        log->entries[log->pending_entry[i]].ms += ms;
    }
    log->pending = 0;
    return RT_OK;
}

/* What a stretch of queued launches added to a log (a graph's capture, a
 * conditional part of it): the launches and each kernel's count, so a
 * replay can count them again (sign 1) or a part that did not run take
 * them off (sign -1). */
typedef struct RtLaunchCounts {
    uint32_t launches;
    int entry_count;
    RtLaunchEntry entries[RT_LAUNCH_MAX_NAMES];
} RtLaunchCounts;

/* The log's counts now, for rt_launch_counts_since. */
static inline void rt_launch_counts_take(const RtLaunchLog *log, RtLaunchCounts *c)
{
    c->launches = log->launches;
    c->entry_count = log->entry_count;
    memcpy(c->entries, log->entries, sizeof c->entries);
}

/* *c: taken before, becomes what the log gained since (kernels with no new
 * launches left out). */
static inline void rt_launch_counts_since(const RtLaunchLog *log, RtLaunchCounts *c)
{
    const RtLaunchCounts before = *c;
    c->launches = log->launches - before.launches;
    c->entry_count = 0;
    for (int i = 0; i < log->entry_count; i++) {
        const uint32_t was = i < before.entry_count ? before.entries[i].count : 0u;
        if (log->entries[i].count == was) continue;
        c->entries[c->entry_count] = log->entries[i];
        c->entries[c->entry_count++].count -= was;
    }
}

/* Counts c into the log (sign 1) or out of it (sign -1). */
static inline void rt_launch_counts_add(RtLaunchLog *log, const RtLaunchCounts *c, int sign)
{
    log->launches += (uint32_t)sign * c->launches;
    for (int i = 0; i < c->entry_count; i++)
        log->entries[rt_launch_entry(log, c->entries[i].name)].count += (uint32_t)sign * c->entries[i].count;
}

/* A sequence of launches replayed as one CUDA graph. A per-frame build
 * queues the same launches with the same arguments frame after frame, and
 * queued one by one the GPU waits for the host between short kernels (CUB's
 * sort alone is several launches and host calls); a graph is queued with
 * one call. The key is every value the launches depend on (sizes, device
 * pointers, parameters): a different key captures anew. */
enum { RT_LAUNCH_GRAPH_KEY = 384 };
typedef struct RtLaunchGraph {
    cudaGraphExec_t exec; /* NULL: nothing captured */
    unsigned char key[RT_LAUNCH_GRAPH_KEY];
    size_t key_bytes;
    RtLaunchCounts counts; /* what the capture added to the log, added again at each replay */
} RtLaunchGraph;

static inline void rt_launch_graph_destroy(RtLaunchGraph *g)
{
    if (g->exec) cudaGraphExecDestroy(g->exec);
    memset(g, 0, sizeof *g);
}

/* queue(ctx, err) queues its launches on log->stream (through rt_launch and
 * the log). Here they run as g's graph, captured first when g holds none
 * for this key; with a timed log (an event pair around each launch) they
 * are queued one by one instead. The log counts them either way. */
static inline RtStatus rt_launch_graph_run(RtLaunchGraph *g, RtLaunchLog *log, const void *key, size_t key_bytes,
                                           RtStatus (*queue)(void *ctx, RtError *err), void *ctx, RtError *err)
{
    if (log->timed || key_bytes > RT_LAUNCH_GRAPH_KEY) return queue(ctx, err);
    if (g->exec && g->key_bytes == key_bytes && !memcmp(g->key, key, key_bytes)) {
        rt_launch_counts_add(log, &g->counts, 1);
    } else {
        rt_launch_graph_destroy(g);
        rt_launch_counts_take(log, &g->counts);
        CUDA_CHECK(err, cudaStreamBeginCapture(log->stream, cudaStreamCaptureModeThreadLocal));
        RtStatus st = queue(ctx, err);
        cudaGraph_t graph = NULL;
        cudaError_t e = cudaStreamEndCapture(log->stream, &graph);
        if (st == RT_OK && e != cudaSuccess)
            st = rt_fail(err, RT_ERR_CUDA, "CUDA: capturing a launch graph: %s", cudaGetErrorString(e));
        if (st == RT_OK && (e = cudaGraphInstantiate(&g->exec, graph, 0)) != cudaSuccess) {
            g->exec = NULL;
            st = rt_fail(err, RT_ERR_CUDA, "CUDA: instantiating a launch graph: %s", cudaGetErrorString(e));
        }
        if (graph) cudaGraphDestroy(graph);
        if (st != RT_OK) {
            cudaGetLastError();
            return st;
        }
        memcpy(g->key, key, key_bytes);
        g->key_bytes = key_bytes;
        rt_launch_counts_since(log, &g->counts);
    }
    CUDA_CHECK(err, cudaGraphLaunch(g->exec, log->stream));
    return RT_OK;
}

static inline void rt_launch_log_destroy(RtLaunchLog *log)
{
    for (int i = 0; i < log->ev_created; i++) cudaEventDestroy(log->ev[i]);
    log->ev_created = 0;
}

#endif
