/* parallel.c — the shared task runner (parallel.h). */
#include "core/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/rt_base.h"

typedef struct RtRun {
    RtTaskFn fn;
    void *ctx;
    size_t tasks;
    atomic_size_t next;
} RtRun;

typedef struct RtWorker {
    RtRun *run;
    int index;
    pthread_t thread;
    int started;
} RtWorker;

static void *work(void *arg)
{
    RtWorker *w = arg;
    RtRun *r = w->run;
    for (size_t t; (t = atomic_fetch_add(&r->next, 1)) < r->tasks;) r->fn(r->ctx, w->index, t);
    return NULL;
}

int rt_parallel_workers(int threads, size_t tasks)
{
    int n = threads > 0 ? threads : rt_thread_count();
    if ((size_t)n > tasks) n = (int)tasks;
    return n > 0 ? n : 1;
}

void rt_parallel_for(int workers, size_t tasks, RtTaskFn fn, void *ctx)
{
    if (tasks == 0) return;
    RtRun run = {fn, ctx, tasks, 0};
    atomic_init(&run.next, 0);
    RtWorker self = {&run, 0, 0, 0};
    /* without memory for the others, the calling thread does it all */
    RtWorker *ws = workers > 1 ? calloc((size_t)workers - 1, sizeof *ws) : NULL;
    for (int i = 0; ws && i < workers - 1; i++) {
        ws[i].run = &run;
        ws[i].index = i + 1;
        ws[i].started = pthread_create(&ws[i].thread, NULL, work, &ws[i]) == 0;
    }
    work(&self);
    for (int i = 0; ws && i < workers - 1; i++)
        if (ws[i].started) pthread_join(ws[i].thread, NULL);
    free(ws);
}
