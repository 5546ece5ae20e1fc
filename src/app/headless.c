/* headless.c — the headless per-frame loop: frames advance through the
 * scene's animation (load -> animate -> build -> trace), on the GPU when
 * one is usable, else on the CPU reference path. */
#include "app/headless.h"

#include "scene/envmap.h"
#include "scene/load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scene/runners.h"

RtStatus rt_app_load_scene(const RtOptions *o, RtScene *scene, RtError *err)
{
    double t0 = rt_now_ms();
    RtStatus st = o->scene_path ? rt_scene_load_clip(o->scene_path, o->clip, scene, err)
                                : rt_scene_make_default(scene, err);
    if (st != RT_OK) return st;
    /* --runners N: Chang et al.'s "scene with i runners" for build time vs
     * triangle count; the runners size their paths to the loaded scene */
    if (o->runners > 0 && (st = rt_scene_add_runners(scene, o->runners, err)) != RT_OK) {
        rt_scene_free(scene);
        return st;
    }
    if (o->env_path && (st = rt_envmap_load(scene, o->env_path, 1.0f, 0.0f, err)) != RT_OK) {
        rt_scene_free(scene);
        return st;
    }
    RT_INFO("SCENE", "%s: %u triangles, %u vertices, %u materials, %u textures, %u lights%s (%.0f ms)",
            scene->path, scene->tri_count, scene->vert_count, scene->mat_count, scene->tex_count,
            scene->light_count, rt_anim_is_dynamic(&scene->anim) ? ", animated" : "", rt_now_ms() - t0);
    return RT_OK;
}

RtStatus rt_app_load_next_clip(const RtOptions *o, const RtScene *cur, int dir, RtScene *out, char *clip_buf,
                               size_t n, RtError *err)
{
    const RtAnim *a = &cur->anim;
    if (!o->scene_path || a->clip_count < 2)
        return rt_fail(err, RT_ERR_UNSUPPORTED, "APP: %s has %s", o->scene_path ? o->scene_path : "the default scene",
                       a->clip_count ? "one animation clip only" : "no animation clips");
    int64_t k = (a->clip < 0 ? 0 : a->clip) + (dir < 0 ? -1 : 1);
    k = (k + a->clip_count) % a->clip_count;
    snprintf(clip_buf, n, "%lld", (long long)k);
    RtOptions next = *o;
    next.clip = clip_buf;
    return rt_app_load_scene(&next, out, err);
}

float rt_app_frame_time(const RtOptions *o, const RtScene *scene, int f, int frames)
{
    if (o->has_time) return o->time;
    float t0, t1;
    rt_scene_time_range(scene, &t0, &t1);
    return t0 + (float)f * (t1 - t0) / (float)(frames > 1 ? frames - 1 : 1);
}

const RtCamera *rt_app_camera(const RtOptions *o) { return o->has_camera ? &o->camera : NULL; }

RtStatus rt_app_open_pipeline(const RtOptions *o, const RtScene *scene, RtPipeline **out, char *why, size_t n,
                              RtError *err)
{
    char desc[512];
    snprintf(why, n, "--cpu");
    if (!o->cpu) {
        RtError gerr = {0};
        if (rt_pipeline_create(scene, RT_BACKEND_GPU, o->width, o->height, out, &gerr) == RT_OK) {
            why[0] = 0;
            rt_pipeline_describe(*out, desc, sizeof desc);
            RT_INFO("APP", "backend: %s", desc);
            return RT_OK;
        }
        snprintf(why, n, "%s", gerr.msg);
    }
    RtStatus st = rt_pipeline_create(scene, RT_BACKEND_CPU, o->width, o->height, out, err);
    if (st == RT_OK) RT_INFO("APP", "backend: CPU%s (%s)", o->cpu ? "" : ", slow", why);
    return st;
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

/* One line per frame: the stages, the rays, the image. */
static void print_frame(const RtOptions *o, int f, const RtFrameStats *fs, const char *path)
{
    char stages[160] = "";
    if (fs->backend == RT_BACKEND_GPU)
        snprintf(stages, sizeof stages, " (large %.2f, small %.2f; %u launches, %u round trips)", fs->build_large_ms,
                 fs->build_small_ms, fs->launches, fs->round_trips);
    uint64_t rays = fs->primary_rays + fs->shadow_rays + fs->reflection_rays;
    printf("frame %d/%d t=%.3f: animate %.2f ms | build %.2f ms%s | trace %.2f ms (%.2f Mrays/s: %llu primary, "
           "%llu shadow, %llu reflection) | total %.2f ms -> %s\n",
           f + 1, o->frames, fs->t, fs->animate_ms, fs->build_ms, stages, fs->trace_ms,
           fs->trace_ms > 0 ? rays / (fs->trace_ms * 1e3) : 0.0, (unsigned long long)fs->primary_rays,
           (unsigned long long)fs->shadow_rays, (unsigned long long)fs->reflection_rays, fs->frame_ms, path);
    if (fs->has_photons)
        printf("  photons %u: trace %.2f ms, maps %.2f ms (caustic %u, global %u stored)\n", fs->photons.emitted,
               fs->photons.trace_ms, fs->photons.build_ms, fs->photons.stored[RT_PHOTON_CAUSTIC],
               fs->photons.stored[RT_PHOTON_GLOBAL]);
    if (o->stats && fs->has_tree) {
        const RtKdStats *ks = &fs->tree;
        printf("  kd-tree (%s): %u triangles (%u degenerate), %u nodes, %u leaves (%u empty), depth %u, "
               "%llu references, %.2f tris/leaf, SAH cost %.3f\n",
               fs->backend == RT_BACKEND_GPU ? "GPU" : "CPU", ks->triangles, ks->degenerate, ks->nodes, ks->leaves,
               ks->empty_leaves, ks->depth, (unsigned long long)ks->references, ks->avg_tris_per_leaf, ks->sah_cost);
        if (fs->kd_gpu)
            printf("  kd builder: %.1f MiB of device arrays (scratch and tree), %u rebuilds after an overflow\n",
                   fs->kd_gpu->device_bytes / 1048576.0, fs->kd_gpu->rebuilds);
    }
}

/* One output frame: --spp samples accumulated at the same t and view. */
static RtStatus frame_samples(RtPipeline *pipe, RtPipelineParams *pp, const RtOptions *o, float t,
                              const RtFrameTarget *target, RtFrameStats *fs, RtError *err)
{
    RtStatus st = RT_OK;
    for (int s = 0; s < o->spp && st == RT_OK; s++) {
        pp->trace.shade.sample = (uint32_t)s;
        st = rt_pipeline_frame(pipe, pp, t, rt_app_camera(o), target, fs, err);
    }
    return st;
}

RtStatus rt_headless_run(const RtOptions *o, RtError *err)
{
    RtScene scene;
    RtStatus st = rt_app_load_scene(o, &scene, err);
    if (st != RT_OK) return st;
    RtPipeline *pipe = NULL;
    char why[RT_ERROR_MAX];
    if ((st = rt_app_open_pipeline(o, &scene, &pipe, why, sizeof why, err)) != RT_OK) {
        rt_scene_free(&scene);
        return st;
    }
    float t_lo, t_hi;
    rt_scene_time_range(&scene, &t_lo, &t_hi);
    if (o->frames > 1 && !o->has_time && t_hi > t_lo)
        RT_INFO("APP", "%d frames over t = %.3f .. %.3f s", o->frames, t_lo, t_hi);

    RtImage img = {0};
    double *frame_ms = calloc((size_t)o->frames, sizeof *frame_ms);
    if (!frame_ms || rt_image_alloc(&img, o->width, o->height) != RT_OK) {
        st = rt_fail(err, RT_ERR_OOM, "APP: out of memory for a %dx%d image", o->width, o->height);
        goto done;
    }
    RtFrameTarget target = {img.w, img.h, NULL, &img};
    RtPipelineParams pp = o->pipe;
    for (int f = 0; f < o->frames && st == RT_OK; f++) {
        float t = rt_app_frame_time(o, &scene, f, o->frames);
        RtFrameStats fs;
        st = frame_samples(pipe, &pp, o, t, &target, &fs, err);
        /* the GPU ran out of memory even for the leanest structure (the
         * pipeline tried that first): the rest on the CPU */
        if (st == RT_ERR_OOM && rt_pipeline_backend(pipe) == RT_BACKEND_GPU) {
            RT_WARN("APP", "%s; going on with the CPU backend", err->msg);
            rt_pipeline_destroy(pipe);
            pipe = NULL;
            if ((st = rt_pipeline_create(&scene, RT_BACKEND_CPU, o->width, o->height, &pipe, err)) != RT_OK) break;
            st = frame_samples(pipe, &pp, o, t, &target, &fs, err);
        }
        if (st != RT_OK) break;
        /* the GPU's depth and SAH need its tree on the host: only when asked */
        if (o->stats && fs.has_tree && (st = rt_pipeline_tree_stats(pipe, &pp, &fs, err)) != RT_OK) break;
        char path[4096];
        frame_path(o->out_png, f, o->frames, path, sizeof path);
        if ((st = rt_image_write(&img, path, err)) != RT_OK) break;
        frame_ms[f] = fs.frame_ms;
        print_frame(o, f, &fs, path);
        fflush(stdout);
    }
    if (st == RT_OK && o->frames > 1) {
        qsort(frame_ms, (size_t)o->frames, sizeof *frame_ms, cmp_double);
        printf("median frame time over %d frames: %.2f ms\n", o->frames, frame_ms[o->frames / 2]);
    }
done:
    rt_pipeline_destroy(pipe);
    free(frame_ms);
    rt_image_free(&img);
    rt_scene_free(&scene);
    return st;
}
