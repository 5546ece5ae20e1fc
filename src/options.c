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
}

void rt_options_usage(FILE *f)
{
    fprintf(f,
            "usage: rtviewer [SCENE] [options]\n"
            "  SCENE                 .obj (+.mtl), .ply or .scene file; none = built-in default scene\n"
            "  --headless            no window: render --frames frames to PNG, print timings\n"
            "  --frames N            frames to render headless (default 1)\n"
            "  -o, --output FILE     PNG to write (default rtviewer.png; several frames: FILE_0000.png, ...)\n"
            "  --size WxH            image/window size (default 1280x720)\n"
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
        }
        else if (a[0] == '-' && a[1]) return rt_fail(err, RT_ERR_ARG, "CLI: unknown option '%s' (see --help)", a);
        else if (o->scene_path) return rt_fail(err, RT_ERR_ARG, "CLI: one scene file expected, got '%s' and '%s'", o->scene_path, a);
        else o->scene_path = a;
#undef TAKES_VALUE
    }
    return st;
}
