/* headless.c — the headless per-frame loop on the CPU backend. The GPU
 * builder and tracer plug in here as their issues land. */
#include "headless.h"

#include <stdlib.h>
#include <string.h>

#include "gpu_pipeline.h"

RtStatus rt_app_load_scene(const RtOptions *o, RtScene *scene, RtError *err)
{
    double t0 = rt_now_ms();
    RtStatus st = o->scene_path ? rt_scene_load(o->scene_path, scene, err)
                                : rt_scene_make_default(scene, err);
    if (st != RT_OK) return st;
    RT_INFO("SCENE", "%s: %u triangles, %u vertices, %u materials, %u textures, %u lights (%.0f ms)",
            scene->path, scene->tri_count, scene->vert_count, scene->mat_count, scene->tex_count,
            scene->light_count, rt_now_ms() - t0);
    return RT_OK;
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

/* The GPU path (upload -> build -> trace) when a usable GPU is there and
 * --cpu was not given; NULL means the CPU reference path, and the log says
 * why. */
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
    RT_INFO("APP", "backend: GPU (%s)", rt_gpu_pipeline_device_name(gp));
    return gp;
}

RtStatus rt_headless_run(const RtOptions *o, RtError *err)
{
    RtScene scene;
    RtStatus st = rt_app_load_scene(o, &scene, err);
    if (st != RT_OK) return st;
    RtGpuPipeline *gp = open_gpu(o, &scene);
    RtKdGpuParams kgp = rt_kd_gpu_params_default();
    RtTraceParams tp = rt_trace_params_from_render(&o->render);

    RtCamera cam = o->has_camera ? o->camera : scene.camera;
    RtImage img = {0};
    RtTriArrays tris = {0};
    RtKdTree tree = {0};
    double *frame_ms = calloc((size_t)o->frames, sizeof *frame_ms);
    uint32_t *ids = NULL;
    if (!frame_ms || rt_image_alloc(&img, o->width, o->height) != RT_OK) {
        st = rt_fail(err, RT_ERR_OOM, "APP: out of memory for a %dx%d image", o->width, o->height);
        goto done;
    }
    for (int f = 0; f < o->frames && st == RT_OK; f++) {
        double t0 = rt_now_ms();
        /* animate: the scene's vertices at this frame's time (static until
         * the dynamic-scenes issue), flattened for the builder and tracer */
        uint32_t degenerate = 0;
        if ((st = rt_tri_arrays_update(&scene, &tris, &degenerate)) != RT_OK) {
            rt_fail(err, st, "APP: out of memory flattening %u triangles", scene.tri_count);
            break;
        }
        double t1 = rt_now_ms();
        RtKdStats ks = {0};
        RtRenderStats rs = {0};
        double build_ms, trace_ms;
        if (gp) {
            RtGpuFrameStats gs;
            if ((st = rt_gpu_pipeline_frame(gp, &tris, &cam, &kgp, &tp, &img, &gs, err)) != RT_OK) break;
            ks.triangles = gs.build.triangles;
            ks.degenerate = gs.build.triangles - gs.build.valid_triangles;
            ks.nodes = gs.build.nodes;
            ks.leaves = gs.build.leaves;
            ks.references = gs.build.references;
            build_ms = gs.build.gpu_ms;
            trace_ms = gs.trace.ms;
            rs.primary_rays = gs.trace.primary_rays;
            rs.shadow_rays = gs.trace.shadow_rays;
            rs.reflection_rays = gs.trace.reflection_rays;
        } else {
            /* the builder reuses the previous frame's tree arrays */
            if (!o->render.brute_force && (st = rt_kd_build_cpu(&o->kd, &tris, &tree, &ks, err)) != RT_OK) break;
            double t2 = rt_now_ms();
            build_ms = t2 - t1;
            st = rt_render_cpu(&scene, &tris, o->render.brute_force ? NULL : &tree, &cam, &o->render, &img,
                               ids, &rs, err);
            if (st != RT_OK) break;
            trace_ms = rt_now_ms() - t2;
        }
        double t3 = rt_now_ms();
        char path[4096];
        frame_path(o->out_png, f, o->frames, path, sizeof path);
        if ((st = rt_image_write_png(&img, path, err)) != RT_OK) break;
        uint64_t rays = rs.primary_rays + rs.shadow_rays + rs.reflection_rays;
        frame_ms[f] = t3 - t0;
        printf("frame %d/%d: animate %.2f ms | build %.2f ms | trace %.2f ms (%.2f Mrays/s: %llu primary, "
               "%llu shadow, %llu reflection) | total %.2f ms -> %s\n",
               f + 1, o->frames, t1 - t0, build_ms, trace_ms, rays / (trace_ms * 1e3),
               (unsigned long long)rs.primary_rays, (unsigned long long)rs.shadow_rays,
               (unsigned long long)rs.reflection_rays, t3 - t0, path);
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
    free(ids);
    rt_kd_tree_free(&tree);
    rt_tri_arrays_free(&tris);
    rt_image_free(&img);
    rt_scene_free(&scene);
    return st;
}
