/* headless.c — the headless per-frame loop: frames advance through the
 * scene's animation (load -> animate -> build -> trace), on the GPU when
 * one is usable, else on the CPU reference path. */
#include "app/headless.h"

#include <stdlib.h>
#include <string.h>

#include "app/gpu_pipeline.h"
#include "scene/runners.h"

RtStatus rt_app_load_scene(const RtOptions *o, RtScene *scene, RtError *err)
{
    double t0 = rt_now_ms();
    RtStatus st = o->scene_path ? rt_scene_load(o->scene_path, scene, err)
                                : rt_scene_make_default(scene, err);
    if (st != RT_OK) return st;
    /* --runners N: Chang et al.'s "scene with i runners" for build time vs
     * triangle count; the runners size their paths to the loaded scene */
    if (o->runners > 0 && (st = rt_scene_add_runners(scene, o->runners, err)) != RT_OK) {
        rt_scene_free(scene);
        return st;
    }
    RT_INFO("SCENE", "%s: %u triangles, %u vertices, %u materials, %u textures, %u lights%s (%.0f ms)",
            scene->path, scene->tri_count, scene->vert_count, scene->mat_count, scene->tex_count,
            scene->light_count, rt_anim_is_dynamic(&scene->anim) ? ", animated" : "", rt_now_ms() - t0);
    return RT_OK;
}

float rt_app_frame_time(const RtOptions *o, const RtScene *scene, int f, int frames)
{
    if (o->has_time) return o->time;
    float t0, t1;
    rt_scene_time_range(scene, &t0, &t1);
    return t0 + (float)f * (t1 - t0) / (float)(frames > 1 ? frames - 1 : 1);
}

RtStatus rt_app_frame_camera(const RtOptions *o, const RtScene *scene, const RtScene *view, float t,
                             RtCamera *cam, RtError *err)
{
    if (o->has_camera) {
        *cam = o->camera;
        return RT_OK;
    }
    if (view || scene->anim.camera_track < 0) {
        *cam = view ? view->camera : scene->camera;
        return RT_OK;
    }
    /* The camera track alone: the same evaluation over a copy that has no
     * vertices, triangles or per-vertex motion, so nothing per vertex runs. */
    RtScene bare = *scene;
    bare.vert_count = 0;
    bare.tri_count = 0;
    bare.anim.vert_node = NULL;
    bare.anim.morph_count = 0;
    bare.anim.deform_count = 0;
    RtSceneFrame fr;
    memset(&fr, 0, sizeof fr);
    RtStatus st = rt_scene_frame_at(&bare, t, &fr, err);
    if (st == RT_OK) *cam = fr.view.camera;
    rt_scene_frame_free(&fr);
    return st;
}

RtStatus rt_cpu_frame_prepare(const RtOptions *o, const RtScene *scene, float t, RtCpuFrame *cf,
                              RtError *err)
{
    /* animate: the scene's vertices, lights and camera at t, flattened for
     * the builder and the renderer (arrays reused from the last frame) */
    double t0 = rt_now_ms();
    RtStatus st = rt_scene_frame_at(scene, t, &cf->frame, err);
    if (st != RT_OK) return st;
    if ((st = rt_tri_arrays_update(&cf->frame.view, &cf->tris, &cf->degenerate)) != RT_OK)
        return rt_fail(err, st, "APP: out of memory flattening %u triangles", scene->tri_count);
    double t1 = rt_now_ms();
    cf->animate_ms = t1 - t0;
    /* build: the CPU oracle's SAH tree, reusing the last frame's arrays */
    memset(&cf->ks, 0, sizeof cf->ks);
    if (!o->render.brute_force && (st = rt_kd_build_cpu(&o->kd, &cf->tris, &cf->tree, &cf->ks, err)) != RT_OK)
        return st;
    cf->build_ms = rt_now_ms() - t1;
    return RT_OK;
}

void rt_cpu_frame_free(RtCpuFrame *cf)
{
    rt_scene_frame_free(&cf->frame);
    rt_tri_arrays_free(&cf->tris);
    rt_kd_tree_free(&cf->tree);
    memset(cf, 0, sizeof *cf);
}

/* "out.png" -> "out_0003.png" when several frames are written. */
static void frame_path(const char *base, int frame, int frames, char *buf, size_t n)
{
    if (frames == 1) {
        snprintf(buf, n, "%s", base);
        return;
    }
    const char *dot = strrchr(base, '.');
    const char *slash = strrchr(base, '/');
    if (!dot || (slash && dot < slash)) dot = base + strlen(base);
    snprintf(buf, n, "%.*s_%04d%s", (int)(dot - base), base, frame, dot);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The GPU path (animate -> build -> trace on the device) when a usable GPU
 * is there and --cpu was not given; NULL means the CPU reference path, and
 * the log says why. */
static RtGpuPipeline *open_gpu(const RtOptions *o, const RtScene *scene)
{
    if (o->cpu) {
        RT_INFO("APP", "backend: CPU (--cpu)");
        return NULL;
    }
    RtGpuPipeline *gp = NULL;
    RtError gerr = {0};
    if (rt_gpu_pipeline_create(scene, o->width, o->height, &gp, &gerr) != RT_OK) {
        RT_INFO("APP", "backend: CPU, slow (%s)", gerr.msg);
        return NULL;
    }
    char desc[512];
    rt_gpu_pipeline_describe(gp, desc, sizeof desc);
    RT_INFO("APP", "backend: GPU (%s)", desc);
    return gp;
}

RtStatus rt_headless_run(const RtOptions *o, RtError *err)
{
    RtScene scene;
    RtStatus st = rt_app_load_scene(o, &scene, err);
    if (st != RT_OK) return st;
    RtGpuPipeline *gp = open_gpu(o, &scene);
    RtTraceParams tp = rt_options_trace_gpu(o);
    RtKdGpuParams kp = rt_options_kd_gpu(o);
    float t_lo, t_hi;
    rt_scene_time_range(&scene, &t_lo, &t_hi);
    if (o->frames > 1 && !o->has_time && t_hi > t_lo)
        RT_INFO("APP", "%d frames over t = %.3f .. %.3f s", o->frames, t_lo, t_hi);

    RtImage img = {0};
    RtCpuFrame cf;
    memset(&cf, 0, sizeof cf);
    double *frame_ms = calloc((size_t)o->frames, sizeof *frame_ms);
    if (!frame_ms || rt_image_alloc(&img, o->width, o->height) != RT_OK) {
        st = rt_fail(err, RT_ERR_OOM, "APP: out of memory for a %dx%d image", o->width, o->height);
        goto done;
    }
    for (int f = 0; f < o->frames && st == RT_OK; f++) {
        float t = rt_app_frame_time(o, &scene, f, o->frames);
        double w0 = rt_now_ms();
        RtKdStats ks = {0};
        RtRenderStats rs = {0};
        double animate_ms, build_ms, trace_ms;
        char stages[160] = "";
        if (gp) {
            RtCamera cam;
            if ((st = rt_app_frame_camera(o, &scene, NULL, t, &cam, err)) != RT_OK) break;
            RtGpuFrameStats gs;
            if ((st = rt_gpu_pipeline_frame(gp, &scene, t, &cam, &kp, &tp, NULL, img.w, img.h, &img,
                                            &gs, err)) != RT_OK)
                break;
            ks.triangles = gs.build.triangles;
            ks.degenerate = gs.build.triangles - gs.build.valid_triangles;
            ks.nodes = gs.build.nodes;
            ks.leaves = gs.build.leaves;
            ks.references = gs.build.references;
            animate_ms = gs.animate_ms;
            build_ms = gs.build.gpu_ms;
            trace_ms = gs.trace.ms;
            rs.primary_rays = gs.trace.primary_rays;
            rs.shadow_rays = gs.trace.shadow_rays;
            rs.reflection_rays = gs.trace.reflection_rays;
            snprintf(stages, sizeof stages, " (large %.2f, small %.2f; %u launches, %u round trips)",
                     gs.build.large_ms, gs.build.small_ms, gs.build.launches,
                     gs.build.round_trips);
        } else {
            if ((st = rt_cpu_frame_prepare(o, &scene, t, &cf, err)) != RT_OK) break;
            RtCamera cam;
            if ((st = rt_app_frame_camera(o, &scene, &cf.frame.view, t, &cam, err)) != RT_OK) break;
            ks = cf.ks;
            animate_ms = cf.animate_ms;
            build_ms = cf.build_ms;
            double t2 = rt_now_ms();
            st = rt_render_cpu(&cf.frame.view, &cf.tris, o->render.brute_force ? NULL : &cf.tree, &cam,
                               &o->render, &img, NULL, &rs, err);
            if (st != RT_OK) break;
            trace_ms = rt_now_ms() - t2;
        }
        double w1 = rt_now_ms();
        char path[4096];
        frame_path(o->out_png, f, o->frames, path, sizeof path);
        if ((st = rt_image_write_png(&img, path, err)) != RT_OK) break;
        uint64_t rays = rs.primary_rays + rs.shadow_rays + rs.reflection_rays;
        frame_ms[f] = w1 - w0;
        printf("frame %d/%d t=%.3f: animate %.2f ms | build %.2f ms%s | trace %.2f ms (%.2f Mrays/s: %llu primary, "
               "%llu shadow, %llu reflection) | total %.2f ms -> %s\n",
               f + 1, o->frames, t, animate_ms, build_ms, stages, trace_ms,
               trace_ms > 0 ? rays / (trace_ms * 1e3) : 0.0, (unsigned long long)rs.primary_rays,
               (unsigned long long)rs.shadow_rays, (unsigned long long)rs.reflection_rays, w1 - w0, path);
        if (o->stats && gp)
            printf("  kd-tree (GPU): %u triangles (%u degenerate), %u nodes, %u leaves, %llu references\n",
                   ks.triangles, ks.degenerate, ks.nodes, ks.leaves, (unsigned long long)ks.references);
        else if (o->stats && !o->render.brute_force)
            printf("  kd-tree: %u triangles (%u degenerate), %u nodes, %u leaves (%u empty), depth %u, "
                   "%llu references, %.2f tris/leaf, SAH cost %.3f\n",
                   ks.triangles, ks.degenerate, ks.nodes, ks.leaves, ks.empty_leaves, ks.depth,
                   (unsigned long long)ks.references, ks.avg_tris_per_leaf, ks.sah_cost);
        fflush(stdout);
    }
    if (st == RT_OK && o->frames > 1) {
        qsort(frame_ms, (size_t)o->frames, sizeof *frame_ms, cmp_double);
        printf("median frame time over %d frames: %.2f ms\n", o->frames, frame_ms[o->frames / 2]);
    }
done:
    rt_gpu_pipeline_destroy(gp);
    free(frame_ms);
    rt_cpu_frame_free(&cf);
    rt_image_free(&img);
    rt_scene_free(&scene);
    return st;
}
