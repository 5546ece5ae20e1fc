/* parallel.h — the one way host code spreads work over threads: numbered
 * tasks taken in order from a shared counter by a handful of pthreads, the
 * calling thread among them. Per-thread state (statistics, a first error)
 * lives in the caller's array indexed by the worker number, sized with
 * rt_parallel_workers before the run. */
#ifndef RT_PARALLEL_H
#define RT_PARALLEL_H

#include <stddef.h>

/* The workers a run of `tasks` tasks uses: threads (0 = rt_thread_count()),
 * at most one per task, at least 1. */
int rt_parallel_workers(int threads, size_t tasks);

/* fn(ctx, worker, task) for every task in 0..tasks-1, on `workers` workers
 * (from rt_parallel_workers): worker 0 is the calling thread. A thread that
 * cannot be started leaves its tasks to the others, so every task runs
 * whatever the machine allows. Returns when all tasks are done. */
typedef void (*RtTaskFn)(void *ctx, int worker, size_t task);
void rt_parallel_for(int workers, size_t tasks, RtTaskFn fn, void *ctx);

/* Items 0..items-1 cut into tasks of `per` (the last may hold fewer): how
 * many tasks, and the items [*lo, *end) of task `task`. */
static inline size_t rt_parallel_chunks(size_t items, size_t per)
{
    return (items + per - 1) / per;
}
static inline void rt_parallel_chunk(size_t task, size_t per, size_t items, size_t *lo, size_t *end)
{
    *lo = task * per;
    *end = *lo + per < items ? *lo + per : items;
}

#endif
