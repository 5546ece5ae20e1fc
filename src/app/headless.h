/* headless.h — rendering without a window: the frame pipeline (pipeline.h)
 * run N times over the scene's animation, each frame written as a PNG and
 * timed; and the pieces every front end shares (loading the scene,
 * choosing the backend, frame times). */
#ifndef RT_HEADLESS_H
#define RT_HEADLESS_H

#include "app/options.h"

/* Loads the scene named by o (or the default one) with its finishing touches;
 * the caller frees it. */
RtStatus rt_app_load_scene(const RtOptions *o, RtScene *scene, RtError *err);

/* The clip key: loads o's scene file again into *out, playing the clip
 * after (dir > 0) or before (dir < 0) the one cur plays, wrapping over the
 * file's clips; clip_buf (n bytes) receives its index as --clip takes it,
 * for the caller to point o->clip at once it keeps *out. RT_ERR_UNSUPPORTED
 * (nothing loaded) when cur's file has fewer than two clips. */
RtStatus rt_app_load_next_clip(const RtOptions *o, const RtScene *cur, int dir, RtScene *out, char *clip_buf,
                               size_t n, RtError *err);

/* The moment of frame f of `frames`: --time T when given, else evenly over
 * rt_scene_time_range, first and last frame on its ends (t0 for a single
 * frame or a static scene). */
float rt_app_frame_time(const RtOptions *o, const RtScene *scene, int f, int frames);

/* Opens the frame pipeline for o: the GPU unless --cpu or none is usable
 * (then the CPU, and *why says why: "--cpu" or the GPU's error). */
RtStatus rt_app_open_pipeline(const RtOptions *o, const RtScene *scene, RtPipeline **out, char *why, size_t n,
                              RtError *err);

/* The camera the frame pipeline takes: --camera when given, else NULL (the
 * scene's own camera at each frame's time). */
const RtCamera *rt_app_camera(const RtOptions *o);

/* Renders o->frames frames into o->out_png (numbered when more than one)
 * and prints one timing line per frame to stdout. */
RtStatus rt_headless_run(const RtOptions *o, RtError *err);

#endif
