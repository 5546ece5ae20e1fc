/* headless.h — rendering without a window: the per-frame pipeline (load ->
 * animate -> build -> trace) run N times over the scene's animation, each
 * frame written as a PNG and timed. Tests, the benchmark (bench.h) and the
 * GPU machine use it. */
#ifndef RT_HEADLESS_H
#define RT_HEADLESS_H

#include "app/options.h"

/* Loads the scene named by o (or the default one) with its finishing touches;
 * the caller frees it. */
RtStatus rt_app_load_scene(const RtOptions *o, RtScene *scene, RtError *err);

/* The moment of frame f of `frames`: --time T when given, else evenly over
 * rt_scene_time_range, first and last frame on its ends (t0 for a single
 * frame or a static scene). */
float rt_app_frame_time(const RtOptions *o, const RtScene *scene, int f, int frames);

/* The camera of the moment: --camera when given, else the scene's, moved by
 * its camera track (AFF) when it has one. view: the scene at t
 * (RtSceneFrame.view), or NULL to evaluate the camera alone (nodes and
 * camera, no vertices: cheap, for the GPU path that animates on the GPU). */
RtStatus rt_app_frame_camera(const RtOptions *o, const RtScene *scene, const RtScene *view, float t,
                             RtCamera *cam, RtError *err);

/* The CPU path's animate and build stages of one frame. Arrays are kept
 * between frames and reused (rt_cpu_frame_free at the end). */
typedef struct RtCpuFrame {
    RtSceneFrame frame;   /* the scene at t: frame.view is what to render */
    RtTriArrays tris;     /* frame.view flattened */
    RtKdTree tree;        /* built over tris (empty with --brute-force) */
    RtKdStats ks;
    uint32_t degenerate;
    double animate_ms;    /* rt_scene_frame_at + flattening (wall) */
    double build_ms;      /* rt_kd_build_cpu (wall) */
} RtCpuFrame;
RtStatus rt_cpu_frame_prepare(const RtOptions *o, const RtScene *scene, float t, RtCpuFrame *cf,
                              RtError *err);
void rt_cpu_frame_free(RtCpuFrame *cf);

/* Renders o->frames frames into o->out_png (numbered when more than one)
 * and prints one timing line per frame to stdout. */
RtStatus rt_headless_run(const RtOptions *o, RtError *err);

#endif
