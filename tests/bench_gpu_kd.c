/* bench_gpu_kd.c — Chang et al.'s ladder (Original, [A], [A]-[B], [A]-[C],
 * [A]-[D], All) on a real scene and a generated 1M+ triangle mesh: median GPU
 * and wall build time over >= 20 builds after warm-up, kernel launches and
 * host round trips per build, tree statistics and the SAH cost against the
 * CPU oracle. Prints Markdown rows for docs/benchmarks.md.
 *   build/tests/bench_gpu_kd [scene.obj ...]   (default: $RT_TEST_EXT/sponza/sponza.obj)
 * Env: RT_BENCH_RUNS (25), RT_BENCH_MESH (1048576 triangles, 0 = none),
 * RT_BENCH_CPU=0 (no CPU oracle), RT_BENCH_VALIDATE=0 (no validation),
 * RT_BENCH_VARIANTS=5,9 (those rows only), RT_BENCH_LEVELS=1 (the large
 * stage level by level), RT_BENCH_BPS=0 (no blocks-per-SM sweep),
 * RT_BENCH_CHUNK=n (large_chunk for every row). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "scene/load.h"
#include "kd/kd_cpu.h"
#include "kd/kd_gpu.h"
#include "app/variants.h"
#include "scene/scene.h"

static int cmp_f(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp_f);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A wavy k x k grid (2 k^2 triangles) with a few spikes: a big, mostly
 * uniform mesh. */
static void make_mesh(uint32_t want, RtTriArrays *t)
{
    uint32_t k = (uint32_t)sqrt(want / 2.0);
    uint32_t n = 2 * k * k;
    t->count = n;
    t->verts = malloc(3 * (size_t)n * sizeof *t->verts);
    t->woop = malloc(3 * (size_t)n * sizeof *t->woop);
    for (uint32_t y = 0, i = 0; y < k; y++)
        for (uint32_t x = 0; x < k; x++) {
#define P(X, Y) v3((float)(X) / k, 0.05f * sinf(40.0f * (X) / k) * cosf(30.0f * (Y) / k), (float)(Y) / k)
            RtVec3 q[4] = {P(x, y), P(x + 1, y), P(x + 1, y + 1), P(x, y + 1)};
#undef P
            int tri[2][3] = {{0, 1, 2}, {0, 2, 3}};
            for (int s = 0; s < 2; s++, i++) {
                for (int c = 0; c < 3; c++) {
                    RtVec3 p = q[tri[s][c]];
                    t->verts[3 * i + c] = f4(p.x, p.y, p.z, 0);
                }
                if (!rt_woop_rows(q[tri[s][0]], q[tri[s][1]], q[tri[s][2]], &t->woop[3 * i]))
                    memset(&t->woop[3 * i], 0, 3 * sizeof(RtFloat4));
            }
        }
}

/* Is v in the comma-separated list? */
static int bench_listed(const char *list, int v)
{
    for (const char *q = list; *q;) {
        char *end;
        long x = strtol(q, &end, 10);
        if (end == q) return 0;
        if (x == v) return 1;
        q = *end == ',' ? end + 1 : end;
    }
    return 0;
}

/* The persistent large stage level by level (one build; box inclusion or
 * clipping): active nodes, chunks of 256 refs, GPU us per level. */
static void bench_levels(RtKdGpu *kd, const RtFloat4 *dv, const RtFloat4 *dw, uint32_t n, int assoc, int ways,
                         const char *what)
{
    RtKdGpuParams p = rt_kd_gpu_params_default();
    p.assoc = assoc;
    p.large_ways = ways;
    RtKdTree dt;
    RtKdGpuStats st;
    RtError err;
    for (int i = 0; i < 3; i++)
        if (rt_kd_gpu_build(kd, &p, dv, dw, n, &dt, &st, &err) != RT_OK) return;
    printf("\nLarge stage level by level (%s, one build: large %.3f ms, %u levels):\n\n", what, st.large_ms,
           st.large_levels);
    printf("| level | nodes | chunks | us |\n|---|---|---|---|\n");
    for (uint32_t l = 0; l < st.large_levels && l < RT_KD_GPU_PROFILE_LEVELS; l++)
        printf("| %u | %u | %u | %.1f |\n", l, st.level_nodes[l], st.level_chunks[l], st.level_us[l]);
}

static int bench_scene(RtKdGpu *kd, const char *name, const RtTriArrays *t, int runs, const char *gpu_name)
{
    RtError err;
    RtFloat4 *dv, *dw;
    if (rt_kd_gpu_upload_f4(t->verts, 3 * (size_t)t->count, &dv, &err) != RT_OK ||
        rt_kd_gpu_upload_f4(t->woop, 3 * (size_t)t->count, &dw, &err) != RT_OK) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return 1;
    }
    double t0 = rt_now_ms();
    RtKdCpuParams cp = rt_kd_cpu_params_default();
    RtKdTree ct;
    memset(&ct, 0, sizeof ct);
    RtKdStats cs;
    double cpu_sah = 0;
    fprintf(stderr, "bench: %s: CPU oracle build\n", name);
    const char *want_cpu = getenv("RT_BENCH_CPU");
    if ((!want_cpu || atoi(want_cpu)) && rt_kd_build_cpu(&cp, t, &ct, &cs, &err) == RT_OK) {
        rt_kd_tree_stats(&ct, cp.c_trav, cp.c_isect, &cs);
        cpu_sah = cs.sah_cost;
        rt_kd_tree_free(&ct);
    }
    printf("\n### %s: %u triangles on %s (CPU oracle SAH %.2f, built in %.0f ms)\n\n", name, t->count,
           gpu_name, cpu_sah, rt_now_ms() - t0);
    printf("| variant | GPU ms (median) | large ms | small ms | wall ms (median) | launches | round trips | nodes | leaves | refs | depth | SAH | SAH / CPU |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    const char *only = getenv("RT_BENCH_VARIANTS"); /* e.g. "5,9": those rows only */
    for (int v = 0; v < 21; v++) {
        if (only && !bench_listed(only, v)) continue;
        RtKdGpuParams p = rt_kd_gpu_params_default();
        const char *vname;
        if (v < 6) {
            rt_kd_gpu_params_ladder(&p, v);
            vname = rt_variant_value_name(RT_VAR_LADDER, v);
        } else if (v == 6) {
            p.small_mode = RT_KD_GPU_SMALL_NONE;
            vname = "All, no small stage";
        } else if (v == 7) {
            p.small_mode = RT_KD_GPU_SMALL_SSAH;
            vname = "All, simplified SAH";
        } else if (v == 8) {
            p.small_fused = 0;
            vname = "All, level-by-level small stage";
        } else if (v == 9) {
            p.assoc = RT_KD_GPU_BOX_INCLUSION;
            vname = "All, box inclusion";
        } else if (v == 10) {
            p.assoc = RT_KD_GPU_BOX_INCLUSION;
            p.small_mode = RT_KD_GPU_SMALL_NONE;
            vname = "All, box inclusion, no small stage";
        } else if (v == 11) {
            p.large_ways = 4;
            vname = "All, 4 ways";
        } else if (v == 12) {
            p.large_ways = 4;
            p.assoc = RT_KD_GPU_BOX_INCLUSION;
            vname = "All, 4 ways, box inclusion";
        } else if (v == 13) {
            p.large_ways = 4;
            p.assoc = RT_KD_GPU_BOX_INCLUSION;
            p.small_mode = RT_KD_GPU_SMALL_NONE;
            vname = "All, 4 ways, box inclusion, no small stage";
        } else if (v == 14) {
            p.small_exact_clip = 1;
            vname = "All, exact clips of small roots";
        } else if (v == 15) {
            p.assoc = RT_KD_GPU_BOX_INCLUSION;
            p.small_exact_clip = 1;
            vname = "All, box inclusion, exact clips of small roots";
        } else if (v == 16) {
            p.large_dataflow = 0;
            vname = "All, a grid barrier per large level";
        } else if (v == 17) {
            p.large_dataflow = 1;
            vname = "All, large stage as a dataflow";
        } else if (v == 18) {
            p.builder = RT_KD_GPU_BUILDER_EXACT;
            vname = "exact SAH (Kolodzey), exact clips";
        } else if (v == 19) {
            p.builder = RT_KD_GPU_BUILDER_EXACT;
            p.exact_clip = 0;
            vname = "exact SAH, split-axis clipping only";
        } else {
            p.builder = RT_KD_GPU_BUILDER_EXACT;
            p.exact_leaf = 63;
            vname = "exact SAH, leaves below 64 (the thesis's)";
        }
        if (getenv("RT_BENCH_CHUNK")) p.large_chunk = (uint32_t)atoi(getenv("RT_BENCH_CHUNK"));
        RtKdTree dt;
        RtKdGpuStats st;
        double *gms = malloc(runs * sizeof *gms), *wms = malloc(runs * sizeof *wms);
        double *lms = malloc(runs * sizeof *lms), *sms = malloc(runs * sizeof *sms);
        fprintf(stderr, "bench: %s: %s\n", name, vname);
        for (int i = 0; i < 3 + runs; i++) {
            if (rt_kd_gpu_build(kd, &p, dv, dw, t->count, &dt, &st, &err) != RT_OK) {
                fprintf(stderr, "bench: %s\n", err.msg);
                return 1;
            }
            if (i >= 3) {
                gms[i - 3] = st.gpu_ms;
                wms[i - 3] = st.build_ms;
                lms[i - 3] = st.large_ms;
                sms[i - 3] = st.small_ms;
            }
        }
        RtKdTree h;
        RtKdStats ks;
        if (rt_kd_gpu_download(&dt, &h, &err) != RT_OK) {
            fprintf(stderr, "bench: %s\n", err.msg);
            return 1;
        }
        rt_kd_tree_stats(&h, p.c_trav, p.c_isect, &ks);
        /* validating a big tree takes seconds: once, for the fastest variant */
        const char *want_val = getenv("RT_BENCH_VALIDATE");
        const int strict = p.builder == RT_KD_GPU_BUILDER_EXACT && p.exact_clip;
        uint64_t loose = 0; /* references whose triangle misses the leaf's cell (rt_kd_validate_count) */
        RtStatus vs = (v == 5 || v == 9 || v == 11 || v == 12 || v == 14 || v == 15 || v >= 18) &&
                              (!want_val || atoi(want_val))
                          ? rt_kd_validate_count(&h, t, strict ? 0u : RT_KD_VALIDATE_LOOSE_REFS, &loose, &err)
                          : RT_OK;
        rt_kd_tree_free(&h);
        printf("| %s | %.3f | %.3f | %.3f | %.3f | %u | %u | %u | %u | %llu | %u | %.2f | %.3f |%s\n", vname,
               median(gms, runs), median(lms, runs), median(sms, runs), median(wms, runs), st.launches, st.round_trips, ks.nodes, ks.leaves,
               (unsigned long long)ks.references, ks.depth, ks.sah_cost,
               cpu_sah > 0 ? ks.sah_cost / cpu_sah : 0.0, vs == RT_OK ? "" : " INVALID");
        if (vs != RT_OK) fprintf(stderr, "bench: %s: %s\n", vname, err.msg);
        if (loose)
            fprintf(stderr, "bench: %s: %llu of %llu references are loose (the box meets the leaf's cell, the triangle misses it)\n",
                    vname, (unsigned long long)loose, (unsigned long long)ks.references);
        free(gms);
        free(wms);
        free(lms);
        free(sms);
    }
    if (getenv("RT_BENCH_LEVELS") && atoi(getenv("RT_BENCH_LEVELS"))) {
        bench_levels(kd, dv, dw, t->count, RT_KD_GPU_CLIP, 2, "clipping");
        bench_levels(kd, dv, dw, t->count, RT_KD_GPU_BOX_INCLUSION, 2, "box inclusion");
        bench_levels(kd, dv, dw, t->count, RT_KD_GPU_CLIP, 4, "clipping, 4 ways");
    }
    /* the persistent large stage's resident blocks per multiprocessor */
    const int sweep = !getenv("RT_BENCH_BPS") || atoi(getenv("RT_BENCH_BPS"));
    if (sweep) printf("\nAll, persistent large stage by resident blocks per SM (median GPU ms: build / large stage):");
    for (int bps = 1; sweep && bps <= 16; bps *= 2) {
        RtKdGpuParams p = rt_kd_gpu_params_default();
        p.large_blocks_per_sm = bps;
        RtKdTree dt;
        RtKdGpuStats st;
        double *gms = malloc(runs * sizeof *gms), *lms = malloc(runs * sizeof *lms);
        for (int i = 0; i < 3 + runs; i++) {
            if (rt_kd_gpu_build(kd, &p, dv, dw, t->count, &dt, &st, &err) != RT_OK) {
                fprintf(stderr, "bench: %s\n", err.msg);
                return 1;
            }
            if (i >= 3) {
                gms[i - 3] = st.gpu_ms;
                lms[i - 3] = st.large_ms;
            }
        }
        printf(" %d: %.3f / %.3f;", bps, median(gms, runs), median(lms, runs));
        free(gms);
        free(lms);
    }
    if (sweep) printf("\n");
    /* per-kernel times of the fastest variant (events around every launch) */
    RtKdGpuParams p = rt_kd_gpu_params_default();
    p.timed = 1;
    RtKdTree dt;
    RtKdGpuStats st;
    if (rt_kd_gpu_build(kd, &p, dv, dw, t->count, &dt, &st, &err) == RT_OK) {
        printf("\nPer kernel (All, one timed build; stages: large %.3f ms, small %.3f ms; %u+%u levels):\n\n",
               st.large_ms, st.small_ms, st.large_levels, st.small_levels);
        printf("| kernel | launches | GPU ms |\n|---|---|---|\n");
        for (int i = 0; i < st.kernel_count; i++)
            printf("| %s | %u | %.3f |\n", st.kernels[i].name, st.kernels[i].launches, st.kernels[i].ms);
    }
    p.builder = RT_KD_GPU_BUILDER_EXACT;
    if (rt_kd_gpu_build(kd, &p, dv, dw, t->count, &dt, &st, &err) == RT_OK) {
        printf("\nPer kernel (exact SAH, one timed build: %.3f ms, %u levels, %u round trips):\n\n", st.gpu_ms,
               st.large_levels, st.round_trips);
        printf("| kernel | launches | GPU ms |\n|---|---|---|\n");
        for (int i = 0; i < st.kernel_count; i++)
            printf("| %s | %u | %.3f |\n", st.kernels[i].name, st.kernels[i].launches, st.kernels[i].ms);
    }
    rt_kd_gpu_free(dv);
    rt_kd_gpu_free(dw);
    return 0;
}

int main(int argc, char **argv)
{
    RtError err;
    RtGpu *gpu;
    RtKdGpu *kd;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (rt_gpu_create(0, &gpu, &err) != RT_OK || rt_kd_gpu_create(&kd, &err) != RT_OK) {
        printf("bench: skip: no GPU: %s\n", err.msg);
        return 0;
    }
    const char *gname = rt_gpu_info(gpu)->name;
    int runs = getenv("RT_BENCH_RUNS") ? atoi(getenv("RT_BENCH_RUNS")) : 25;
    if (runs < 1) runs = 1;
    char def[1024];
    const char *ext = getenv("RT_TEST_EXT");
    snprintf(def, sizeof def, "%s/sponza/sponza.obj", ext ? ext : "build/ext");
    int rc = 0;
    for (int i = 1; i < (argc > 1 ? argc : 2); i++) {
        const char *path = argc > 1 ? argv[i] : def;
        RtScene s;
        if (rt_scene_load(path, &s, &err) != RT_OK) {
            printf("bench: skip %s: %s\n", path, err.msg);
            continue;
        }
        RtTriArrays t;
        if (rt_tri_arrays_make(&s, &t, NULL) == RT_OK) {
            const char *base = strrchr(path, '/');
            rc |= bench_scene(kd, base ? base + 1 : path, &t, runs, gname);
            rt_tri_arrays_free(&t);
        }
        rt_scene_free(&s);
    }
    long mesh = getenv("RT_BENCH_MESH") ? atol(getenv("RT_BENCH_MESH")) : 1048576;
    if (mesh > 0) {
        RtTriArrays t;
        make_mesh((uint32_t)mesh, &t);
        rc |= bench_scene(kd, "generated wavy grid mesh", &t, runs, gname);
        rt_tri_arrays_free(&t);
    }
    rt_kd_gpu_destroy(kd);
    rt_gpu_destroy(gpu);
    return rc;
}
