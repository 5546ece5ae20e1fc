/* bench.h — the headless benchmark (`rtviewer --bench SCENE`): the
 * per-frame pipeline over the scene's animation, validated before it is
 * timed, warm-up frames excluded, per-frame and median stage times
 * (animate, build stages, trace per ray type, total), launches, host round
 * trips, tree statistics, rays/s, peak GPU memory, the GPU and its driver.
 * Output: a table on stdout, --json FILE (one object) and --csv FILE (one
 * row per measured frame). `make bench` (tests/bench/run.sh) runs it over
 * the matrix of scenes and variants; docs/benchmarks.md explains the
 * columns. */
#ifndef RT_BENCH_H
#define RT_BENCH_H

#include "app/options.h"

/* Benchmarks o->scene_path (NULL = the default scene) for o->warmup +
 * o->frames frames on the GPU (the CPU path with o->cpu or without a usable
 * GPU: then it says so). RT_ERR_IO with the path when --json / --csv cannot
 * be written (checked before anything runs); RT_ERR_PARSE when the first
 * frame's tree fails validation (nothing is timed then). */
RtStatus rt_bench_run(const RtOptions *o, RtError *err);

#endif
