/* headless.h — rendering without a window: the per-frame pipeline (load ->
 * animate -> build -> trace) run N times, each frame written as a PNG and
 * timed. Tests, benchmarks and the GPU machine use it. */
#ifndef RT_HEADLESS_H
#define RT_HEADLESS_H

#include "options.h"

/* Loads the scene named by o (or the default one) with its finishing touches;
 * the caller frees it. */
RtStatus rt_app_load_scene(const RtOptions *o, RtScene *scene, RtError *err);

/* Renders o->frames frames into o->out_png (numbered when more than one)
 * and prints one timing line per frame to stdout. */
RtStatus rt_headless_run(const RtOptions *o, RtError *err);

#endif
