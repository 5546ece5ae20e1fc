/* options.c — command-line parsing. */
#include "options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Ray/triangle test, Hoedt 2011 compares both on the GPU. */
const RtNamedValue rt_isect_variants[] = {
    {"woop", 1, "Woop 2004: ray in each triangle's unit-triangle space (precomputed rows)"},
    {"mt", 0, "Moller-Trumbore 1997: on the raw vertices"},
    {NULL, 0, NULL},
};

static const RtNamedValue on_off[] = {
    {"on", 1, "enabled"},
    {"off", 0, "disabled"},
    {NULL, 0, NULL},
};
static const RtNamedValue off_on[] = {
    {"off", 0, "disabled"},
    {"on", 1, "enabled"},
    {NULL, 0, NULL},
};
/* The viewer cycles 0..3; --bounces accepts more. */
static const RtNamedValue bounce_values[] = {
    {"0", 0, "no mirror reflections"},
    {"1", 1, "one mirror bounce"},
    {"2", 2, "two mirror bounces"},
    {"3", 3, "three mirror bounces"},
    {NULL, 0, NULL},
};
/* Value names of the GPU groups the issue text fixes; the numeric groups
 * (empty-space threshold, leaf size, stack size) get theirs with the GPU
 * builder and tracer. */
static const RtNamedValue sort_values[] = {
    {"scan", 0, "Zhou et al. 2008: segmented scans sort triangles into children"},
    {"atomics", 1, "Chang et al.: per-block atomics replace the segmented scans"},
    {NULL, 0, NULL},
};
static const RtNamedValue box_values[] = {
    {"inclusion", 0, "children get the triangle's bounding box (Zhou et al.)"},
    {"clipping", 1, "triangles are clipped to the child's cell"},
    {NULL, 0, NULL},
};
static const RtNamedValue small_node_values[] = {
    {"none", 0, "large-node splitting down to the leaves"},
    {"sah", 1, "exact SAH for small nodes"},
    {"ssah", 2, "simplified SAH for small nodes"},
    {NULL, 0, NULL},
};
static const RtNamedValue traversal_values[] = {
    {"restart", 0, "kd-restart (Foley and Sugerman 2005): no stack"},
    {"shortstack", 1, "short stack (Horn et al. 2007)"},
    {NULL, 0, NULL},
};
static const RtNamedValue packet_values[] = {
    {"rays", 0, "one ray per thread"},
    {"packets", 1, "warp-wide packets"},
    {NULL, 0, NULL},
};

#define RT_NO_GPU_BUILD "the window does not drive the GPU kd-tree builder yet (issue 4)"
#define RT_NO_GPU_TRACE "the window does not drive the GPU tracer yet (issue 5)"
const RtVariantGroup rt_variant_groups[RT_VAR_COUNT] = {
    [RT_VAR_ISECT] = {"intersection", 'I', "--isect", rt_isect_variants, NULL},
    [RT_VAR_SHADOWS] = {"shadows", 'L', "--no-shadows", on_off, NULL},
    [RT_VAR_BOUNCES] = {"reflections", 'B', "--bounces", bounce_values, NULL},
    [RT_VAR_TEXTURES] = {"textures", 'T', "--no-textures", on_off, NULL},
    [RT_VAR_HEATMAP] = {"heatmap", 'M', "--heatmap", off_on, NULL},
    [RT_VAR_SORT] = {"triangle sorting", '1', NULL, sort_values, RT_NO_GPU_BUILD},
    [RT_VAR_INTRINSICS] = {"intrinsics", '2', NULL, on_off, RT_NO_GPU_BUILD},
    [RT_VAR_EMPTY_SPACE] = {"empty-space threshold", '3', NULL, NULL, RT_NO_GPU_BUILD},
    [RT_VAR_BOX] = {"box", '4', NULL, box_values, RT_NO_GPU_BUILD},
    [RT_VAR_SMALL_NODE] = {"small-node mode", '5', NULL, small_node_values, RT_NO_GPU_BUILD},
    [RT_VAR_LEAF_SIZE] = {"leaf size", '6', NULL, NULL, RT_NO_GPU_BUILD},
    [RT_VAR_TRAVERSAL] = {"traversal", '7', NULL, traversal_values, RT_NO_GPU_TRACE},
    [RT_VAR_STACK_SIZE] = {"stack size", '8', NULL, NULL, RT_NO_GPU_TRACE},
    [RT_VAR_PACKETS] = {"packets", '9', NULL, packet_values, RT_NO_GPU_TRACE},
    [RT_VAR_LEAF_SKIP] = {"leaf skipping", '0', NULL, off_on, RT_NO_GPU_TRACE},
};

const RtKeyHelp rt_viewer_keys[] = {
    {"W A S D", "fly forward, left, back, right (orbit: W/S zoom, A/D circle)"},
    {"Q E", "fly down, up (orbit: circle down, up)"},
    {"right mouse drag", "look around (orbit: turn the scene)"},
    {"Shift", "move 4x faster"},
    {"mouse wheel", "movement speed x1.25 / x0.8"},
    {"O", "orbit around the scene centre on/off"},
    {"R", "reset to the scene's camera"},
    {"C", "print the camera as a --camera string"},
    {"P N [ ]", "animation pause, step, slower, faster (n/a yet)"},
    {"V", "vsync on/off"},
    {"H", "HUD on/off"},
    {"F1", "this key list on/off"},
    {"F12", "screenshot (HUD included) to rtviewer_<time>.png"},
    {"Esc", "quit"},
    {NULL, NULL},
};

static int *variant_field(RtOptions *o, RtVariantGroupId g)
{
    switch (g) {
    case RT_VAR_ISECT: return &o->render.use_woop;
    case RT_VAR_SHADOWS: return &o->render.shadows;
    case RT_VAR_BOUNCES: return &o->render.max_bounces;
    case RT_VAR_TEXTURES: return &o->render.textures;
    case RT_VAR_HEATMAP: return &o->render.heatmap;
    default: return NULL; /* the GPU groups: no field until their stage lands */
    }
}

int rt_variant_get(const RtOptions *o, RtVariantGroupId g)
{
    const int *f = variant_field((RtOptions *)o, g);
    return f ? *f : 0;
}

const char *rt_variant_value_name(RtVariantGroupId g, int value)
{
    if ((unsigned)g >= RT_VAR_COUNT || !rt_variant_groups[g].values) return NULL;
    for (const RtNamedValue *t = rt_variant_groups[g].values; t->name; t++)
        if (t->value == value) return t->name;
    return NULL;
}

RtStatus rt_variant_cycle(RtOptions *o, RtVariantGroupId g, int dir)
{
    int *f = (unsigned)g < RT_VAR_COUNT ? variant_field(o, g) : NULL;
    const RtNamedValue *t = f ? rt_variant_groups[g].values : NULL;
    if (!t || rt_variant_groups[g].unavailable) return RT_ERR_UNSUPPORTED;
    int n = 0, cur = -1;
    for (; t[n].name; n++)
        if (t[n].value == *f) cur = n;
    /* a value outside the table (--bounces 7) continues from the table's start */
    int next = cur < 0 ? (dir > 0 ? 0 : n - 1) : (cur + (dir > 0 ? 1 : n - 1)) % n;
    *f = t[next].value;
    return RT_OK;
}

void rt_options_default(RtOptions *o)
{
    memset(o, 0, sizeof *o);
    o->frames = 1;
    o->width = 1280;
    o->height = 720;
    o->out_png = "rtviewer.png";
    o->render = rt_render_params_default();
    o->kd = rt_kd_cpu_params_default();
    o->log_level = RT_LOG_INFO;
    o->vsync = 1;
    o->interop = 1;
}

void rt_options_usage(FILE *f)
{
    fprintf(f,
            "usage: rtviewer [SCENE] [options]\n"
            "  SCENE                 .obj (+.mtl), .ply or .scene file; none = built-in default scene\n"
            "  Without --headless rtviewer opens a window (needs a display with OpenGL 3.3).\n"
            "  --headless            no window: render --frames frames to PNG, print timings\n"
            "  --frames N            frames to render headless (default 1)\n"
            "  -o, --output FILE     PNG to write (default rtviewer.png; several frames: FILE_0000.png, ...)\n"
            "  --size WxH            image size (default 1280x720) or initial window size (default 640x360)\n"
            "  --screenshot-dir DIR  where F12 writes screenshots (default: the current directory)\n"
            "  --no-vsync            window: start with vsync off (V toggles it)\n"
            "  --no-interop          window: copy frames through host memory, not CUDA-GL interop\n"
            "  --camera P,L,U,FOV    px,py,pz,lx,ly,lz,ux,uy,uz,fov: position, look-at, up, vertical fov (deg)\n"
            "  --cpu                 use the CPU backend (the reference renderer)\n"
            "  --threads N           CPU threads (default: all cores)\n"
            "  --bounces N           mirror reflection bounces (default 1)\n"
            "  --no-shadows          no shadow rays\n"
            "  --no-textures         ignore map_Kd / map_d\n"
            "  --isect NAME          ray/triangle test: woop (default) or mt\n"
            "  --heatmap             colour = kd-tree traversal steps per pixel\n"
            "  --brute               test every triangle (no tree; slow, for checking)\n"
            "  --stats               print kd-tree statistics per frame\n"
            "  --gpu-info            print the GPU rtviewer would use, and exit\n"
            "  -q, --quiet / -v, --verbose   less / more logging\n"
            "  -h, --help            this text\n");
    fprintf(f, "window keys:\n");
    for (const RtKeyHelp *k = rt_viewer_keys; k->key; k++) fprintf(f, "  %-20s  %s\n", k->key, k->what);
    fprintf(f, "variant keys (each cycles its values; Shift+key goes back):\n");
    for (int g = 0; g < RT_VAR_COUNT; g++) {
        const RtVariantGroup *v = &rt_variant_groups[g];
        char vals[128] = "";
        for (const RtNamedValue *t = v->values; t && t->name; t++) {
            strncat(vals, vals[0] ? "/" : "", sizeof vals - strlen(vals) - 1);
            strncat(vals, t->name, sizeof vals - strlen(vals) - 1);
        }
        fprintf(f, "  %c                     %s%s%s%s%s\n", v->key, v->name, vals[0] ? " " : "", vals,
                v->unavailable ? ": unavailable, " : "", v->unavailable ? v->unavailable : "");
    }
}

static RtStatus parse_int(const char *opt, const char *s, int lo, int hi, int *out, RtError *err)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < lo || v > hi)
        return rt_fail(err, RT_ERR_ARG, "CLI: %s expects an integer in %d..%d, got '%s'", opt, lo, hi,
                       s ? s : "(nothing)");
    *out = (int)v;
    return RT_OK;
}

RtStatus rt_camera_parse(const char *s, RtCamera *c, RtError *err)
{
    float v[10];
    const char *p = s;
    for (int i = 0; i < 10; i++) {
        char *end;
        errno = 0;
        v[i] = strtof(p, &end);
        if (end == p || errno || !isfinite(v[i]))
            return rt_fail(err, RT_ERR_ARG, "CLI: --camera expects 10 finite numbers px,py,pz,lx,ly,lz,ux,uy,uz,fov; value %d of '%s' is not one", i + 1, s);
        p = end;
        if (i < 9) {
            if (*p != ',') return rt_fail(err, RT_ERR_ARG, "CLI: --camera expects ',' after value %d in '%s'", i + 1, s);
            p++;
        }
    }
    if (*p) return rt_fail(err, RT_ERR_ARG, "CLI: --camera: unexpected '%s' after 10 values", p);
    RtCamera r = {v3(v[0], v[1], v[2]), v3(v[3], v[4], v[5]), v3(v[6], v[7], v[8]), v[9]};
    if (!(r.fov_y > 0.0f && r.fov_y < 180.0f))
        return rt_fail(err, RT_ERR_ARG, "CLI: --camera: fov must be in (0, 180) degrees, got %g", r.fov_y);
    if (v3_len(v3_sub(r.look, r.pos)) == 0.0f)
        return rt_fail(err, RT_ERR_ARG, "CLI: --camera: look-at point equals the position");
    *c = r;
    return RT_OK;
}

void rt_camera_format(const RtCamera *c, char *buf, size_t n)
{
    snprintf(buf, n, "%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g", c->pos.x, c->pos.y, c->pos.z,
             c->look.x, c->look.y, c->look.z, c->up.x, c->up.y, c->up.z, c->fov_y);
}

static RtStatus parse_named(const char *opt, const char *s, const RtNamedValue *table, int *out,
                            RtError *err)
{
    char valid[256] = "";
    for (const RtNamedValue *t = table; t->name; t++) {
        if (s && !strcmp(s, t->name)) {
            *out = t->value;
            return RT_OK;
        }
        strncat(valid, valid[0] ? ", " : "", sizeof valid - strlen(valid) - 1);
        strncat(valid, t->name, sizeof valid - strlen(valid) - 1);
    }
    return rt_fail(err, RT_ERR_ARG, "CLI: %s: unknown value '%s' (valid: %s)", opt, s ? s : "", valid);
}

RtStatus rt_options_parse(int argc, char **argv, RtOptions *o, RtError *err)
{
    RtStatus st = RT_OK;
    for (int i = 1; i < argc && st == RT_OK; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
#define TAKES_VALUE()                                                                     \
    do {                                                                                  \
        if (!next) return rt_fail(err, RT_ERR_ARG, "CLI: %s expects a value", a);         \
        i++;                                                                              \
    } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) o->help = 1;
        else if (!strcmp(a, "--headless")) o->headless = 1;
        else if (!strcmp(a, "--cpu")) o->cpu = 1;
        else if (!strcmp(a, "--stats")) o->stats = 1;
        else if (!strcmp(a, "--gpu-info")) o->gpu_info = 1;
        else if (!strcmp(a, "--no-shadows")) o->render.shadows = 0;
        else if (!strcmp(a, "--no-textures")) o->render.textures = 0;
        else if (!strcmp(a, "--heatmap")) o->render.heatmap = 1;
        else if (!strcmp(a, "--brute")) o->render.brute_force = 1;
        else if (!strcmp(a, "--no-vsync")) o->vsync = 0;
        else if (!strcmp(a, "--no-interop")) o->interop = 0;
        else if (!strcmp(a, "--screenshot-dir")) { TAKES_VALUE(); o->screenshot_dir = next; }
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) o->log_level = RT_LOG_WARN;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) o->log_level = RT_LOG_DEBUG;
        else if (!strcmp(a, "--frames")) { TAKES_VALUE(); st = parse_int(a, next, 1, 1000000, &o->frames, err); }
        else if (!strcmp(a, "--threads")) {
            TAKES_VALUE();
            st = parse_int(a, next, 1, 1024, &o->render.threads, err);
            o->kd.threads = o->render.threads;
        }
        else if (!strcmp(a, "--bounces")) { TAKES_VALUE(); st = parse_int(a, next, 0, 64, &o->render.max_bounces, err); }
        else if (!strcmp(a, "--isect")) { TAKES_VALUE(); st = parse_named(a, next, rt_isect_variants, &o->render.use_woop, err); }
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) { TAKES_VALUE(); o->out_png = next; }
        else if (!strcmp(a, "--camera")) { TAKES_VALUE(); st = rt_camera_parse(next, &o->camera, err); o->has_camera = 1; }
        else if (!strcmp(a, "--size")) {
            TAKES_VALUE();
            int w = 0, h = 0, n = 0;
            if (sscanf(next, "%dx%d%n", &w, &h, &n) != 2 || next[n] || w < 1 || h < 1 || w > 16384 || h > 16384)
                return rt_fail(err, RT_ERR_ARG, "CLI: --size expects WxH with 1..16384 each (e.g. 1280x720), got '%s'", next);
            o->width = w;
            o->height = h;
            o->size_given = 1;
        }
        else if (a[0] == '-' && a[1]) return rt_fail(err, RT_ERR_ARG, "CLI: unknown option '%s' (see --help)", a);
        else if (o->scene_path) return rt_fail(err, RT_ERR_ARG, "CLI: one scene file expected, got '%s' and '%s'", o->scene_path, a);
        else o->scene_path = a;
#undef TAKES_VALUE
    }
    return st;
}
