/* bench.c — the headless benchmark (bench.h). One loop over the animation:
 * validation frame first (the tree must be right before it is timed), then
 * the warm-up frames, then the measured ones; every measured quantity is a
 * column of one table, so the stdout table, the JSON, the CSV and the
 * medians are written from the same rows. */
#include "app/bench.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app/headless.h"
#include "gpu/gpu.h"

/* ---- the columns ----------------------------------------------------------
 * NAN = not measured on this path (e.g. launches on the CPU): JSON null, an
 * empty CSV field. Trace per ray type: the tracer shades all ray types in
 * one kernel, so they are timed as three extra passes over the frame's tree
 * with the same camera: primary only (no shadows, no bounces), + shadow
 * rays, full; shadow ms = pass 2 - pass 1, reflection ms = pass 3 - pass 2
 * (secondary rays and their shading). Diffuse rays are not part of the
 * frame: one cosine-weighted ray per primary hit (render/sample.h, a fixed
 * seed), cast alone through the frame's tree (rt_pipeline_cast_diffuse) --
 * the incoherent rays, where traversal designs differ most. */
typedef enum BenchCol {
    BC_T = 0,
    BC_STRUCTURE,
    BC_ANIMATE, BC_BUILD, BC_BUILD_LARGE, BC_BUILD_SMALL, BC_LAUNCHES, BC_ROUND_TRIPS,
    BC_TRACE, BC_PASS_PRIMARY, BC_PASS_SHADOW, BC_PASS_FULL, BC_TRACE_SHADOW, BC_TRACE_REFLECTION,
    BC_TRACE_DIFFUSE, BC_PHOTON_TRACE, BC_PHOTON_MAPS, BC_READBACK, BC_FRAME,
    BC_PRIMARY_RAYS, BC_SHADOW_RAYS, BC_REFLECTION_RAYS, BC_MRAYS, BC_DIFFUSE_RAYS, BC_DIFFUSE_MRAYS,
    BC_NODES, BC_LEAVES, BC_DEPTH, BC_REFS, BC_SAH, BC_GPU_MEM,
    BC_COUNT
} BenchCol;

typedef struct BenchColumn {
    const char *key;   /* JSON key and CSV header */
    int decimals;
    const char *what;  /* the --help of the numbers (docs/benchmarks.md repeats it) */
} BenchColumn;

static const BenchColumn kCols[BC_COUNT] = {
    [BC_T] = {"t", 4, "animation time of the frame (s)"},
    [BC_STRUCTURE] = {"structure", 0, "the structure the frame built and traced: 0 kd, 1 lbvh, 2 bvh (--structure auto picks per frame)"},
    [BC_ANIMATE] = {"animate_ms", 4, "animate stage as the GPU pipeline reports it / rt_scene_frame_at + flattening, wall (CPU)"},
    [BC_BUILD] = {"build_ms", 4, "the structure's build: events around the whole build (GPU) / wall (CPU)"},
    [BC_BUILD_LARGE] = {"build_large_ms", 4, "large-node stage (GPU events)"},
    [BC_BUILD_SMALL] = {"build_small_ms", 4, "small-node stage (GPU events)"},
    [BC_LAUNCHES] = {"launches", 0, "kernel launches of the build"},
    [BC_ROUND_TRIPS] = {"round_trips", 0, "device-to-host copies the build waited for"},
    [BC_TRACE] = {"trace_ms", 4, "the frame's trace, all ray types in one kernel (GPU events / wall)"},
    [BC_PASS_PRIMARY] = {"trace_primary_ms", 4, "pass 1: primary rays only (shadows 0, bounces 0)"},
    [BC_PASS_SHADOW] = {"trace_primary_shadow_ms", 4, "pass 2: primary + shadow rays (bounces 0)"},
    [BC_PASS_FULL] = {"trace_full_ms", 4, "pass 3: everything"},
    [BC_TRACE_SHADOW] = {"trace_shadow_ms", 4, "shadow rays, derived: pass 2 - pass 1 (>= 0)"},
    [BC_TRACE_REFLECTION] = {"trace_reflection_ms", 4, "reflection/refraction rays, derived: pass 3 - pass 2 (>= 0)"},
    [BC_TRACE_DIFFUSE] = {"trace_diffuse_ms", 4, "diffuse rays (one cosine-weighted per primary hit, fixed seed) cast alone, closest hit, no shading: kernel events (GPU) / wall (CPU)"},
    [BC_PHOTON_TRACE] = {"photon_trace_ms", 4, "photon mapping (--photons N): the photons' emission and trace (GPU events / wall; NaN: off)"},
    [BC_PHOTON_MAPS] = {"photon_maps_ms", 4, "photon mapping: compaction and both balanced trees (the gather is in trace_ms; NaN: off)"},
    [BC_READBACK] = {"readback_ms", 4, "device image -> host (0: the benchmark traces into a device buffer)"},
    [BC_FRAME] = {"frame_ms", 4, "the whole frame: animate + build + trace (wall)"},
    [BC_PRIMARY_RAYS] = {"primary_rays", 0, "primary rays of the frame"},
    [BC_SHADOW_RAYS] = {"shadow_rays", 0, "shadow rays of the frame"},
    [BC_REFLECTION_RAYS] = {"reflection_rays", 0, "reflection + refraction rays of the frame"},
    [BC_MRAYS] = {"mrays_per_s", 3, "all rays of the frame / trace_ms"},
    [BC_DIFFUSE_RAYS] = {"diffuse_rays", 0, "diffuse rays cast: one per primary hit"},
    [BC_DIFFUSE_MRAYS] = {"diffuse_mrays_per_s", 3, "diffuse_rays / trace_diffuse_ms"},
    [BC_NODES] = {"nodes", 0, "tree nodes (a BVH: interior nodes)"},
    [BC_LEAVES] = {"leaves", 0, "tree leaves"},
    [BC_DEPTH] = {"depth", 0, "tree depth (rt_kd_tree_stats on the host copy; GPU: validated frame, every frame with --stats)"},
    [BC_REFS] = {"references", 0, "triangle references in leaves"},
    [BC_SAH] = {"sah_cost", 3, "SAH cost (rt_kd_tree_stats, the builder's C_trav and C_i; GPU: as depth)"},
    [BC_GPU_MEM] = {"gpu_mem_mb", 1, "device memory in use after the frame (cudaMemGetInfo, MiB)"},
};

typedef struct BenchRow {
    double v[BC_COUNT];
} BenchRow;

typedef struct Bench {
    const RtOptions *o;
    RtScene scene;
    RtPipeline *pipe;
    int gpu;                /* the pipeline runs on the GPU */
    char cpu_reason[RT_ERROR_MAX];
    uint8_t *d_rgba;        /* GPU: the frames' and the passes' device image (nothing read back) */
    RtImage img;
    int frames, warmup;
    BenchRow *rows;
    double peak_mem_mb, mem_total_mb;
    /* the validated frame */
    int validated;
    double validate_ms;
    float validate_t;
    const char *validate_check;
    uint64_t loose_refs; /* its references whose triangle misses the leaf's cell (GPU kd-trees) */
    RtKdStats tree;
    FILE *json, *csv;
} Bench;

/* ---- numbers --------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of the measured values of column c (NAN when none was); the
 * upper one of an even count, as headless mode prints. */
static double column_median(const BenchRow *rows, int n, BenchCol c)
{
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v) return NAN;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(rows[i].v[c])) v[k++] = rows[i].v[c];
    double m = NAN;
    if (k > 0) {
        qsort(v, (size_t)k, sizeof *v, cmp_double);
        m = v[k / 2];
    }
    free(v);
    return m;
}

static void put_number(FILE *f, double v, int decimals, const char *nan_text)
{
    if (!isfinite(v)) fputs(nan_text, f);
    else fprintf(f, "%.*f", decimals, v);
}

static void put_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

/* "Intel(R) Xeon(R) ..." from /proc/cpuinfo, for the CPU path's report. */
static void cpu_name(char *buf, size_t n)
{
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            colon += 1 + (colon[1] == ' ');
            colon[strcspn(colon, "\n")] = 0;
            snprintf(buf, n, "%s", colon);
            break;
        }
    }
    fclose(f);
}

/* The GPU's name and the driver: the NVIDIA kernel module's version (what
 * nvidia-smi calls the driver) with the CUDA driver API and runtime
 * versions. */
static void gpu_identity(char *name, size_t nn, char *driver, size_t dn)
{
    RtGpu *g = NULL;
    RtError e;
    snprintf(name, nn, "(unknown GPU)");
    snprintf(driver, dn, "(unknown)");
    if (rt_gpu_create(0, &g, &e) != RT_OK) return;
    const RtGpuInfo *i = rt_gpu_info(g);
    char module[64] = "";
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (f) {
        /* "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...":
         * the wording varies between the open and the proprietary module, so
         * take the first word made of digits and dots with a dot in it */
        char line[512];
        if (fgets(line, sizeof line, f))
            for (char *save = NULL, *w = strtok_r(line, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save))
                if (strspn(w, "0123456789.") == strlen(w) && strchr(w, '.') && isdigit((unsigned char)w[0])) {
                    snprintf(module, sizeof module, "%s", w);
                    break;
                }
        fclose(f);
    }
    snprintf(name, nn, "%s", i->name);
    snprintf(driver, dn, "%s%sCUDA %d.%d, runtime %d.%d", module, module[0] ? ", " : "", i->driver_version / 1000,
             (i->driver_version % 1000) / 10, i->runtime_version / 1000, (i->runtime_version % 1000) / 10);
    rt_gpu_destroy(g);
}

/* ---- one frame ------------------------------------------------------------- */

static void sample_gpu_mem(Bench *b, BenchRow *r)
{
    size_t used = 0, total = 0;
    RtError e;
    if (rt_gpu_mem_used(&used, &total, &e) != RT_OK) return;
    r->v[BC_GPU_MEM] = used / 1048576.0;
    if (r->v[BC_GPU_MEM] > b->peak_mem_mb) b->peak_mem_mb = r->v[BC_GPU_MEM];
    b->mem_total_mb = total / 1048576.0;
}

/* The diffuse rays' seed: fixed, so every frame, run and variant casts the
 * same rays from the same primary hits. */
#define BENCH_DIFFUSE_SEED 1u

static RtStatus bench_frame(Bench *b, float t, int validate, BenchRow *r, RtError *err)
{
    const RtOptions *o = b->o;
    RtFrameTarget target = {b->img.w, b->img.h, b->d_rgba, b->d_rgba ? NULL : &b->img};
    RtFrameStats fs;
    RtStatus st = rt_pipeline_frame(b->pipe, &o->pipe, t, rt_app_camera(o), &target, &fs, err);
    if (st != RT_OK) return st;
    r->v[BC_STRUCTURE] = fs.structure;
    r->v[BC_ANIMATE] = fs.animate_ms;
    r->v[BC_BUILD] = fs.build_ms;
    r->v[BC_BUILD_LARGE] = fs.build_large_ms;
    r->v[BC_BUILD_SMALL] = fs.build_small_ms;
    if (b->gpu) {
        r->v[BC_LAUNCHES] = fs.launches;
        r->v[BC_ROUND_TRIPS] = fs.round_trips;
        r->v[BC_READBACK] = fs.readback_ms;
    }
    r->v[BC_TRACE] = fs.trace_ms;
    r->v[BC_PHOTON_TRACE] = fs.has_photons ? fs.photons.trace_ms : NAN;
    r->v[BC_PHOTON_MAPS] = fs.has_photons ? fs.photons.build_ms : NAN;
    r->v[BC_FRAME] = fs.frame_ms;
    r->v[BC_PRIMARY_RAYS] = (double)fs.primary_rays;
    r->v[BC_SHADOW_RAYS] = (double)fs.shadow_rays;
    r->v[BC_REFLECTION_RAYS] = (double)fs.reflection_rays;
    if (b->gpu) sample_gpu_mem(b, r);

    /* the frame's tree on the host: depth and SAH cost, and the validator.
     * Copying a million-node GPU tree and walking it costs the host ~100 ms,
     * so past the validated frame only with --stats (outside the timings). */
    if (fs.has_tree) {
        r->v[BC_NODES] = fs.tree.nodes;
        r->v[BC_LEAVES] = fs.tree.leaves;
        r->v[BC_REFS] = (double)fs.tree.references;
        if ((validate || o->stats || !b->gpu) && (st = rt_pipeline_tree_stats(b->pipe, &o->pipe, &fs, err)) != RT_OK)
            return st;
        if (fs.tree_full) {
            r->v[BC_DEPTH] = fs.tree.depth;
            r->v[BC_SAH] = fs.tree.sah_cost;
        }
        if (validate) {
            b->tree = fs.tree;
            double v0 = rt_now_ms();
            RtError verr = {0};
            st = rt_pipeline_validate(b->pipe, &b->validate_check, &b->loose_refs, &verr);
            b->validate_ms = rt_now_ms() - v0;
            if (st != RT_OK)
                return rt_fail(err, st, "BENCH: the kd-tree of the first frame (t = %.3f) is invalid, nothing timed: %s",
                               t, verr.msg);
            b->validated = 1;
            b->validate_t = t;
            printf("bench: first frame's tree validated (%s, %.0f ms): %u nodes, %u leaves, depth %u, %llu references "
                   "(%llu loose: the box meets the leaf's cell, the triangle misses it), SAH cost %.3f\n",
                   b->validate_check, b->validate_ms, b->tree.nodes, b->tree.leaves, b->tree.depth,
                   (unsigned long long)b->tree.references, (unsigned long long)b->loose_refs, b->tree.sah_cost);
        }
    }

    /* trace per ray type: the three passes over the same tree and camera,
     * twice (1 2 3 3 2 1, so no pass always runs first on cold caches), the
     * faster run of each kept: the differences between passes are then
     * differences of like measurements */
    RtRayRates rates;
    if ((st = rt_pipeline_ray_rates(b->pipe, &o->pipe, rt_app_camera(o), &target, 2, &rates, err)) != RT_OK)
        return st;
    r->v[BC_PASS_PRIMARY] = rates.pass_ms[0];
    r->v[BC_PASS_SHADOW] = rates.pass_ms[1];
    r->v[BC_PASS_FULL] = rates.pass_ms[2];
    r->v[BC_TRACE_SHADOW] = rates.type_ms[1];
    r->v[BC_TRACE_REFLECTION] = rates.type_ms[2];

    /* diffuse rays: their own cast over the same tree and camera, run
     * twice like the passes, the faster kept */
    for (int k = 0; k < 2; k++) {
        RtDiffuseCast dc;
        memset(&dc, 0, sizeof dc);
        if ((st = rt_pipeline_cast_diffuse(b->pipe, &o->pipe, rt_app_camera(o), b->img.w, b->img.h,
                                           BENCH_DIFFUSE_SEED, &dc, err)) != RT_OK)
            return st;
        if (k == 0 || dc.ms < r->v[BC_TRACE_DIFFUSE]) r->v[BC_TRACE_DIFFUSE] = dc.ms;
        r->v[BC_DIFFUSE_RAYS] = (double)dc.rays;
    }
    return RT_OK;
}

static void finish_row(BenchRow *r, float t)
{
    r->v[BC_T] = t;
    double rays = r->v[BC_PRIMARY_RAYS] + r->v[BC_SHADOW_RAYS] + r->v[BC_REFLECTION_RAYS];
    r->v[BC_MRAYS] = r->v[BC_TRACE] > 0 ? rays / (r->v[BC_TRACE] * 1e3) : NAN;
    r->v[BC_DIFFUSE_MRAYS] =
        r->v[BC_TRACE_DIFFUSE] > 0 ? r->v[BC_DIFFUSE_RAYS] / (r->v[BC_TRACE_DIFFUSE] * 1e3) : NAN;
}

/* ---- output ---------------------------------------------------------------- */

/* The stdout table: the columns a reader compares at a glance. */
static const BenchCol kTableCols[] = {BC_T, BC_ANIMATE, BC_BUILD, BC_LAUNCHES, BC_ROUND_TRIPS, BC_TRACE,
                                      BC_PASS_PRIMARY, BC_TRACE_SHADOW, BC_TRACE_REFLECTION, BC_TRACE_DIFFUSE,
                                      BC_MRAYS, BC_DIFFUSE_MRAYS, BC_FRAME, BC_NODES, BC_DEPTH, BC_SAH};
static const char *const kTableHeads[] = {"t", "animate", "build", "launch", "trips", "trace", "primary",
                                          "shadow", "reflect", "diffuse", "Mrays/s", "diff Mr/s", "frame",
                                          "nodes", "depth", "SAH"};
#define TABLE_COLS (sizeof kTableCols / sizeof kTableCols[0])
_Static_assert(sizeof kTableHeads / sizeof kTableHeads[0] == TABLE_COLS, "one head per table column");

static void print_table_row(const char *label, const BenchRow *r)
{
    printf("%-7s", label);
    for (size_t i = 0; i < TABLE_COLS; i++) {
        double v = r->v[kTableCols[i]];
        int d = kCols[kTableCols[i]].decimals > 2 ? 2 : kCols[kTableCols[i]].decimals;
        if (!isfinite(v)) printf(" %9s", "-");
        else printf(" %9.*f", d, v);
    }
    printf("\n");
    fflush(stdout);
}

static void print_table_head(void)
{
    printf("%-7s", "frame");
    for (size_t i = 0; i < TABLE_COLS; i++) printf(" %9s", kTableHeads[i]);
    printf("\n");
}

static void write_csv(FILE *f, const BenchRow *rows, int n)
{
    fputs("frame", f);
    for (int c = 0; c < BC_COUNT; c++) fprintf(f, ",%s", kCols[c].key);
    fputc('\n', f);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%d", i);
        for (int c = 0; c < BC_COUNT; c++) {
            fputc(',', f);
            put_number(f, rows[i].v[c], kCols[c].decimals, "");
        }
        fputc('\n', f);
    }
}

static void write_row_json(FILE *f, const BenchRow *r, int frame)
{
    fputc('{', f);
    if (frame >= 0) fprintf(f, "\"frame\": %d, ", frame);
    for (int c = 0; c < BC_COUNT; c++) {
        fprintf(f, "%s\"%s\": ", c ? ", " : "", kCols[c].key);
        put_number(f, r->v[c], kCols[c].decimals, "null");
    }
    fputc('}', f);
}

static void write_json(FILE *f, const Bench *b, const BenchRow *median, const char *gpu, const char *driver)
{
    const RtOptions *o = b->o;
    float t0, t1;
    rt_scene_time_range(&b->scene, &t0, &t1);
    char cpu[256];
    cpu_name(cpu, sizeof cpu);
    fputs("{\n  \"scene\": ", f);
    put_json_string(f, b->scene.path);
    fprintf(f, ",\n  \"triangles\": %u,\n  \"vertices\": %u,\n  \"animated\": %s,\n", b->scene.tri_count,
            b->scene.vert_count, rt_anim_is_dynamic(&b->scene.anim) ? "true" : "false");
    fprintf(f, "  \"time_range\": [%.6g, %.6g],\n", t0, t1);
    fprintf(f, "  \"backend\": \"%s\",\n  \"gpu\": ", b->gpu ? "gpu" : "cpu");
    if (gpu) put_json_string(f, gpu);
    else fputs("null", f);
    fputs(",\n  \"driver\": ", f);
    if (driver) put_json_string(f, driver);
    else fputs("null", f);
    fputs(",\n  \"cpu\": ", f);
    put_json_string(f, cpu);
    fprintf(f, ",\n  \"host_threads\": %d,\n", rt_thread_count());
    if (!b->gpu) {
        fputs("  \"cpu_reason\": ", f);
        put_json_string(f, b->cpu_reason);
        fputs(",\n", f);
    }
    fprintf(f, "  \"width\": %d,\n  \"height\": %d,\n  \"warmup\": %d,\n  \"frames_measured\": %d,\n", b->img.w,
            b->img.h, b->warmup, b->frames);
    /* parameters: every row of the registry by scope, as names where the
     * row has them; then the CPU oracle's builder, for reference */
    fputs("  \"params\": {\n", f);
    for (int scope = RT_SCOPE_BUILD; scope <= RT_SCOPE_TRACE; scope++) {
        fprintf(f, "    \"%s\": {", scope == RT_SCOPE_BUILD ? "build" : "trace");
        int first = 1;
        for (int i = 0; i < RT_VAR_COUNT; i++) {
            if (rt_variants[i].scope != (RtVariantScope)scope) continue;
            char value[64];
            rt_variant_format(&o->pipe, (RtVariantId)i, value, sizeof value);
            fprintf(f, "%s\"%s\": ", first ? "" : ", ", rt_variants[i].key);
            put_json_string(f, value);
            first = 0;
        }
        fputs("},\n", f);
    }
    const RtKdCpuParams *kc = &o->pipe.kd_cpu;
    fprintf(f, "    \"cpu_build\": {\"c_trav\": %.3g, \"c_isect\": %.3g, \"empty_bonus\": %.3g, \"max_depth\": %d, "
               "\"max_leaf\": %d, \"brute_force\": %d}\n  },\n",
            kc->c_trav, kc->c_isect, kc->empty_bonus, kc->max_depth, kc->max_leaf, o->pipe.brute_force);
    fprintf(f, "  \"validation\": {\"ok\": %s, \"t\": %.6g, \"ms\": %.1f, \"check\": \"%s\", \"loose_refs\": %llu},\n",
            b->validated ? "true" : "false", b->validate_t, b->validate_ms,
            !b->validated ? "none (brute force: no tree)" : b->validate_check, (unsigned long long)b->loose_refs);
    const RtKdStats *ks = &b->tree;
    fprintf(f, "  \"tree\": {\"nodes\": %u, \"leaves\": %u, \"empty_leaves\": %u, \"depth\": %u, \"references\": %llu, "
               "\"avg_tris_per_leaf\": %.3f, \"sah_cost\": %.4f, \"triangles\": %u, \"degenerate\": %u},\n",
            ks->nodes, ks->leaves, ks->empty_leaves, ks->depth, (unsigned long long)ks->references,
            ks->avg_tris_per_leaf, ks->sah_cost, ks->triangles, ks->degenerate);
    fputs("  \"peak_gpu_mem_mb\": ", f);
    put_number(f, b->gpu ? b->peak_mem_mb : NAN, 1, "null");
    fputs(",\n  \"gpu_mem_total_mb\": ", f);
    put_number(f, b->gpu ? b->mem_total_mb : NAN, 1, "null");
    fputs(",\n  \"columns\": {", f);
    for (int c = 0; c < BC_COUNT; c++) {
        fprintf(f, "%s\n    \"%s\": ", c ? "," : "", kCols[c].key);
        put_json_string(f, kCols[c].what);
    }
    fputs("\n  },\n  \"frames\": [", f);
    for (int i = 0; i < b->frames; i++) {
        fputs(i ? ",\n    " : "\n    ", f);
        write_row_json(f, &b->rows[i], i);
    }
    fputs("\n  ],\n  \"medians\": ", f);
    write_row_json(f, median, -1);
    fputs("\n}\n", f);
}

static RtStatus open_output(const char *path, FILE **f, const char *what, RtError *err)
{
    *f = NULL;
    if (!path) return RT_OK;
    *f = fopen(path, "w");
    if (!*f) return rt_fail(err, RT_ERR_IO, "%s: BENCH: cannot write the %s output: %s", path, what, strerror(errno));
    return RT_OK;
}

static RtStatus close_output(FILE *f, const char *path, RtError *err)
{
    if (!f) return RT_OK;
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return rt_fail(err, RT_ERR_IO, "%s: BENCH: write failed: %s", path, strerror(errno));
    return RT_OK;
}

/* ---- the run --------------------------------------------------------------- */

static RtStatus bench_open(Bench *b, RtError *err)
{
    const RtOptions *o = b->o;
    RtStatus st = rt_app_load_scene(o, &b->scene, err);
    if (st != RT_OK) return st;
    if ((st = rt_app_open_pipeline(o, &b->scene, &b->pipe, b->cpu_reason, sizeof b->cpu_reason, err)) != RT_OK)
        return st;
    b->gpu = rt_pipeline_backend(b->pipe) == RT_BACKEND_GPU;
    if (rt_image_alloc(&b->img, o->width, o->height) != RT_OK)
        return rt_fail(err, RT_ERR_OOM, "BENCH: out of memory for a %dx%d image", o->width, o->height);
    if (b->gpu && (st = rt_gpu_malloc((void **)&b->d_rgba, (size_t)o->width * o->height * 4, err)) != RT_OK)
        return st;
    b->rows = calloc((size_t)b->frames, sizeof *b->rows);
    if (!b->rows) return rt_fail(err, RT_ERR_OOM, "BENCH: out of memory");
    return RT_OK;
}

static void bench_close(Bench *b)
{
    if (b->d_rgba) rt_gpu_free(b->d_rgba);
    rt_pipeline_destroy(b->pipe);
    rt_image_free(&b->img);
    free(b->rows);
    rt_scene_free(&b->scene);
}

RtStatus rt_bench_run(const RtOptions *o, RtError *err)
{
    Bench b;
    memset(&b, 0, sizeof b);
    b.o = o;
    b.frames = o->frames > 0 ? o->frames : 1;
    b.warmup = o->warmup > 0 ? o->warmup : 0;
    /* outputs first: an unwritable path fails before minutes of work */
    RtStatus st = open_output(o->json_path, &b.json, "--json", err);
    if (st == RT_OK) st = open_output(o->csv_path, &b.csv, "--csv", err);
    if (st == RT_OK) st = bench_open(&b, err);
    if (st != RT_OK) goto done;

    char desc[512] = "", gpu[256] = "", driver[256] = "";
    if (b.gpu) {
        gpu_identity(gpu, sizeof gpu, driver, sizeof driver);
        printf("bench: %s, %u triangles, %dx%d, GPU path on %s, driver %s\n", b.scene.path, b.scene.tri_count,
               b.img.w, b.img.h, gpu, driver);
    } else {
        cpu_name(desc, sizeof desc);
        printf("bench: %s, %u triangles, %dx%d, CPU path (%s) on %s, %d threads: wall-clock times, "
               "no GPU numbers\n",
               b.scene.path, b.scene.tri_count, b.img.w, b.img.h, b.cpu_reason, desc, rt_thread_count());
    }
    float t0, t1;
    rt_scene_time_range(&b.scene, &t0, &t1);
    if (o->has_time) printf("bench: every frame at t = %.3f s\n", o->time);
    else printf("bench: %d warm-up + %d measured frames over t = %.3f .. %.3f s\n", b.warmup, b.frames, t0, t1);

    /* validation frame (k = 0), warm-up frames, then the measured ones; the
     * validation frame is the first warm-up frame when there is one */
    int validation_extra = b.warmup == 0;
    int total = b.warmup + b.frames + validation_extra;
    for (int k = 0; k < total; k++) {
        int measured = k >= b.warmup + validation_extra;
        int f = measured ? k - b.warmup - validation_extra : k % b.frames;
        float t = rt_app_frame_time(o, &b.scene, f, b.frames);
        BenchRow r;
        for (int c = 0; c < BC_COUNT; c++) r.v[c] = NAN;
        st = bench_frame(&b, t, k == 0, &r, err);
        if (st != RT_OK) goto done;
        finish_row(&r, t);
        if (!measured) continue;
        if (f == 0) print_table_head();
        b.rows[f] = r;
        char label[16];
        snprintf(label, sizeof label, "%d", f);
        print_table_row(label, &r);
    }
    BenchRow median;
    for (int c = 0; c < BC_COUNT; c++) median.v[c] = column_median(b.rows, b.frames, (BenchCol)c);
    print_table_row("median", &median);
    printf("bench: times in ms; shadow = pass(primary+shadow) - pass(primary), reflect = pass(full) - "
           "pass(primary+shadow); diffuse = one cosine-weighted ray per primary hit, cast alone (not in the "
           "frame; diff Mr/s = diffuse rays / diffuse ms)\n");
    if (b.gpu)
        printf("bench: peak GPU memory in use %.1f MiB of %.1f MiB (sampled after each frame)\n", b.peak_mem_mb,
               b.mem_total_mb);
    if (b.json) write_json(b.json, &b, &median, b.gpu ? gpu : NULL, b.gpu ? driver : NULL);
    if (b.csv) write_csv(b.csv, b.rows, b.frames);

done:
    {
        RtError cerr = {0};
        RtStatus c1 = close_output(b.json, o->json_path, &cerr);
        RtStatus c2 = close_output(b.csv, o->csv_path, &cerr);
        if (st == RT_OK && (c1 != RT_OK || c2 != RT_OK)) st = rt_fail(err, cerr.status, "%s", cerr.msg);
        /* no half-written results a script could mistake for a run */
        if (st != RT_OK && b.json) remove(o->json_path);
        if (st != RT_OK && b.csv) remove(o->csv_path);
    }
    bench_close(&b);
    return st;
}
