/* options.c — command-line parsing. */
#include "app/options.h"
#include "core/image.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const RtKeyHelp rt_viewer_keys[] = {
    {"W A S D", "fly forward, left, back, right (orbit: W/S zoom, A/D circle)"},
    {"Q E", "fly down, up (orbit: circle down, up)"},
    {"right mouse drag", "look around (orbit: turn the scene)"},
    {"Shift", "move 4x faster"},
    {"mouse wheel", "movement speed x1.25 / x0.8"},
    {"O", "orbit around the scene centre on/off"},
    {"R", "reset to the scene's camera"},
    {"C", "print the camera as a --camera string"},
    {"P", "animation pause / play"},
    {"N", "step one frame (1/30 s) and pause"},
    {"[ ]", "animation slower / faster (x0.5 / x2)"},
    {", .", "exposure -/+ half a stop (before tone mapping, key Z)"},
    {"J", "next animation clip of the file (Shift+J: previous; glTF, FBX, ... with several)"},
    {"G", "backend: GPU (build + trace on the device) / CPU reference"},
    {"V", "vsync on/off"},
    {"H", "HUD on/off"},
    {"F1", "this key list on/off"},
    {"F12", "screenshot (HUD included) to rtviewer_<time>.png"},
    {"Esc", "quit"},
    {NULL, NULL},
};

void rt_options_default(RtOptions *o)
{
    memset(o, 0, sizeof *o);
    o->frames = 1;
    o->width = 1280;
    o->height = 720;
    o->out_png = "rtviewer.png";
    o->pipe = rt_pipeline_params_default();
    o->log_level = RT_LOG_INFO;
    o->vsync = 1;
    o->interop = 1;
    o->speed = 1.0f;
    o->warmup = 3;
    o->spp = 1;
    o->max_spp = 65536;
}

void rt_options_usage(FILE *f)
{
    fprintf(f,
            "usage: rtviewer [SCENE] [options]\n"
            "  SCENE                 .obj (+.mtl), .ply, .scene, BART .aff, or through assimp glTF/.glb, FBX,\n"
            "                        Collada, 3DS, MD2, .blend, .x, STL, ... ; none = built-in default scene\n"
            "  Without --headless rtviewer opens a window (needs a display with OpenGL 3.3).\n"
            "  --headless            no window: render --frames frames to PNG, print timings\n"
            "  --frames N            frames to render headless (default 1); in the window: close after\n"
            "                        N frames and print how long they took (scripted runs, soaks)\n"
            "  -o, --output FILE     image to write: .png, .jpg, .bmp or .tga (default rtviewer.png;\n"
            "                        several frames: FILE_0000.png, ...)\n"
            "  --size WxH            image size (default 1280x720) or initial window size (default 640x360)\n"
            "  --screenshot-dir DIR  where F12 writes screenshots (default: the current directory)\n"
            "  --no-vsync            window: start with vsync off (V toggles it)\n"
            "  --no-interop          window: copy frames through host memory, not CUDA-GL interop\n"
            "  --camera P,L,U,FOV    px,py,pz,lx,ly,lz,ux,uy,uz,fov: position, look-at, up, vertical fov (deg)\n"
            "  --cpu                 use the CPU backend (the reference renderer)\n"
            "  --threads N           CPU threads (default: all cores)\n"
            "  --bounces N           mirror reflection bounces (default 1)\n"
            "  --env FILE.hdr        an environment map (equirectangular HDR) seen past the scene and\n"
            "                        lighting it (.scene: environment PATH [intensity X] [rotate DEG])\n"
            "  --spp N               headless: N jittered samples per pixel, accumulated (default 1;\n"
            "                        the window accumulates by itself while the view rests, up to\n"
            "                        --max-spp N samples, default 65536; 1: one centred sample a frame)\n"
            "  --photons N           photon mapping with N photons per frame: caustics and indirect\n"
            "                        light (default 0, off; --trace photonk=K photons per estimate)\n"
            "  --no-shadows          no shadow rays\n"
            "  --no-textures         ignore map_Kd / map_d\n"
            "  --isect NAME          ray/triangle test: woop (default) or mt\n"
            "  --heatmap             colour = kd-tree traversal steps per pixel\n"
            "  --ao                  ambient occlusion (--trace aodist=F: reach, fraction of the diagonal)\n"
            "  --brute               test every triangle (no tree; slow, for checking)\n"
            "  --stats               print kd-tree statistics per frame\n"
            "  --structure NAME      acceleration structure: kd (default), lbvh, bvh (H-PLOC) or auto\n"
            "  --build K=V[,K=V...]  builder variant (keys below)\n"
            "  --trace K=V[,K=V...]  tracer and shading variant (keys below)\n"
            "  --time T              the animation at time T seconds (headless: every frame; window: start)\n"
            "  --speed X             animation speed (default 1); --paused: window starts paused\n"
            "  --clip NAME|N         the animation clip to play, by name or index from 0, of a file with several\n"
            "                        (glTF, FBX, ...; default: the first with channels; a wrong one lists them)\n"
            "  --runners N           add N walking figures (~78K triangles each) to the scene\n"
            "  --bench [SCENE]       headless benchmark of SCENE (or the positional one; none or 'default' =\n"
            "                        built-in): --frames N (measured),\n"
            "                        --warmup N (default 3), --json FILE, --csv FILE; --cpu for the CPU path\n"
            "  --gpu-info            print the GPU rtviewer would use, and exit\n"
            "  -q, --quiet / -v, --verbose   less / more logging\n"
            "  -h, --help            this text\n");
    fprintf(f, "window keys:\n");
    for (const RtKeyHelp *k = rt_viewer_keys; k->key; k++) fprintf(f, "  %-20s  %s\n", k->key, k->what);
    fprintf(f, "--build keys (value (default): meaning; [GPU]: the GPU builder only):\n");
    rt_variants_usage(f, RT_SCOPE_BUILD);
    fprintf(f, "--trace keys:\n");
    rt_variants_usage(f, RT_SCOPE_TRACE);
    fprintf(f, "variant keys in the window (each cycles its values; Shift+key goes back):\n");
    for (int i = 0; i < RT_VAR_COUNT; i++) {
        const RtVariant *v = &rt_variants[i];
        if (!v->hotkey) continue;
        char vals[128] = "";
        for (const RtVariantValue *t = v->values; t && t->name; t++) {
            strncat(vals, vals[0] ? "/" : "", sizeof vals - strlen(vals) - 1);
            strncat(vals, t->name, sizeof vals - strlen(vals) - 1);
        }
        const char *why = rt_variant_unavailable((RtVariantId)i);
        fprintf(f, "  %c                     %s %s%s%s\n", v->hotkey, v->name, vals, why ? ": unavailable, " : "",
                why ? why : "");
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
    /* The up vector fixes the image's roll: zero, or along the view, it
     * fixes nothing (sin of the angle below ~0.06 degrees). */
    if (v3_len(r.up) == 0.0f)
        return rt_fail(err, RT_ERR_ARG, "CLI: --camera: the up vector (values 7-9) is zero; expected a direction, e.g. 0,1,0");
    if (v3_len(v3_cross(v3_norm(v3_sub(r.look, r.pos)), v3_norm(r.up))) < 1e-3f)
        return rt_fail(err, RT_ERR_ARG,
                       "CLI: --camera: the up vector (values 7-9) is parallel to the view direction; expected one "
                       "across it");
    *c = r;
    return RT_OK;
}

void rt_camera_format(const RtCamera *c, char *buf, size_t n)
{
    snprintf(buf, n, "%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g", c->pos.x, c->pos.y, c->pos.z,
             c->look.x, c->look.y, c->look.z, c->up.x, c->up.y, c->up.z, c->fov_y);
}

static RtStatus parse_float(const char *opt, const char *s, float lo, float hi, float *out, RtError *err)
{
    char *end;
    errno = 0;
    float v = s ? strtof(s, &end) : 0.0f;
    if (!s || errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
        return rt_fail(err, RT_ERR_ARG, "CLI: %s expects a number in %g..%g, got '%s'", opt, lo, hi,
                       s ? s : "(nothing)");
    *out = v;
    return RT_OK;
}

/* A shading flag (--no-shadows, --isect mt, ...): the registry's row. */
static RtStatus set_variant(RtOptions *o, const char *opt, RtVariantId id, const char *text, RtError *err)
{
    return rt_variant_parse(&o->pipe, id, text, opt, err);
}

RtStatus rt_options_parse(int argc, char **argv, RtOptions *o, RtError *err)
{
    RtStatus st = RT_OK;
    for (int i = 1; i < argc && st == RT_OK; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
/* A value never starts with "--": "--frames --cpu" is a missing value. */
#define TAKES_VALUE()                                                                     \
    do {                                                                                  \
        if (!next || !strncmp(next, "--", 2))                                             \
            return rt_fail(err, RT_ERR_ARG, "CLI: %s expects a value%s%s%s", a,           \
                           next ? ", got the option '" : "", next ? next : "", next ? "'" : ""); \
        i++;                                                                              \
    } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) o->help = 1;
        else if (!strcmp(a, "--headless")) o->headless = 1;
        else if (!strcmp(a, "--cpu")) o->cpu = 1;
        else if (!strcmp(a, "--stats")) o->stats = 1;
        else if (!strcmp(a, "--gpu-info")) o->gpu_info = 1;
        else if (!strcmp(a, "--no-shadows")) st = set_variant(o, a, RT_VAR_SHADOWS, "off", err);
        else if (!strcmp(a, "--no-textures")) st = set_variant(o, a, RT_VAR_TEXTURES, "off", err);
        else if (!strcmp(a, "--heatmap")) st = set_variant(o, a, RT_VAR_HEATMAP, "on", err);
        else if (!strcmp(a, "--ao")) st = set_variant(o, a, RT_VAR_AO, "on", err);
        else if (!strcmp(a, "--brute")) o->pipe.brute_force = 1;
        else if (!strcmp(a, "--no-vsync")) o->vsync = 0;
        else if (!strcmp(a, "--no-interop")) o->interop = 0;
        else if (!strcmp(a, "--screenshot-dir")) { TAKES_VALUE(); o->screenshot_dir = next; }
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) o->log_level = RT_LOG_WARN;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) o->log_level = RT_LOG_DEBUG;
        else if (!strcmp(a, "--paused")) o->paused = 1;
        else if (!strcmp(a, "--build")) { TAKES_VALUE(); st = rt_variant_parse_list(&o->pipe, RT_SCOPE_BUILD, next, err); }
        else if (!strcmp(a, "--trace")) { TAKES_VALUE(); st = rt_variant_parse_list(&o->pipe, RT_SCOPE_TRACE, next, err); }
        else if (!strcmp(a, "--structure")) { TAKES_VALUE(); st = set_variant(o, a, RT_VAR_STRUCTURE, next, err); }
        else if (!strcmp(a, "--time")) { TAKES_VALUE(); st = parse_float(a, next, -1e6f, 1e6f, &o->time, err); o->has_time = 1; }
        else if (!strcmp(a, "--clip")) { TAKES_VALUE(); o->clip = next; }
        else if (!strcmp(a, "--speed")) { TAKES_VALUE(); st = parse_float(a, next, 0.0f, 1000.0f, &o->speed, err); }
        else if (!strcmp(a, "--runners")) { TAKES_VALUE(); st = parse_int(a, next, 0, 1000, &o->runners, err); }
        else if (!strcmp(a, "--warmup")) { TAKES_VALUE(); st = parse_int(a, next, 0, 100000, &o->warmup, err); }
        else if (!strcmp(a, "--spp")) { TAKES_VALUE(); st = parse_int(a, next, 1, 65536, &o->spp, err); }
        else if (!strcmp(a, "--max-spp")) { TAKES_VALUE(); st = parse_int(a, next, 1, 65536, &o->max_spp, err); }
        else if (!strcmp(a, "--env")) { TAKES_VALUE(); o->env_path = next; }
        else if (!strcmp(a, "--json")) { TAKES_VALUE(); o->json_path = next; }
        else if (!strcmp(a, "--csv")) { TAKES_VALUE(); o->csv_path = next; }
        else if (!strcmp(a, "--bench")) {
            /* A flag; the scene is the positional SCENE, in any order, or the
             * word after --bench when it is not an option ("default": the
             * built-in scene). */
            o->bench = 1;
            o->headless = 1;
            if (next && next[0] != '-') {
                i++;
                if (!strcmp(next, "default")) o->bench_default = 1;
                else if (o->scene_path) return rt_fail(err, RT_ERR_ARG, "CLI: one scene file expected, got '%s' and '%s' (--bench)", o->scene_path, next);
                else o->scene_path = next;
            }
        }
        else if (!strcmp(a, "--frames")) { TAKES_VALUE(); st = parse_int(a, next, 1, 1000000, &o->frames, err); o->frames_given = 1; }
        else if (!strcmp(a, "--threads")) {
            TAKES_VALUE();
            st = parse_int(a, next, 1, 1024, &o->pipe.threads, err);
        }
        else if (!strcmp(a, "--bounces")) { TAKES_VALUE(); st = set_variant(o, a, RT_VAR_BOUNCES, next, err); }
        else if (!strcmp(a, "--photons")) { TAKES_VALUE(); st = set_variant(o, a, RT_VAR_PHOTONS, next, err); }
        else if (!strcmp(a, "--isect")) { TAKES_VALUE(); st = set_variant(o, a, RT_VAR_ISECT, next, err); }
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            TAKES_VALUE();
            /* headless writes PNG (src/app/headless.c): another extension
             * would be PNG bytes under a misleading name */
            RtImageFormat fmt = rt_image_format_of(next);
            if (fmt == RT_IMAGE_UNKNOWN)
                return rt_fail(err, RT_ERR_ARG, "CLI: %s %s: unknown image type; expected a file name ending in .png, .jpg, .jpeg, .bmp or .tga", a, next);
            o->out_png = next;
        }
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
        else if (o->scene_path || o->bench_default) return rt_fail(err, RT_ERR_ARG, "CLI: one scene file expected, got '%s' and '%s'", o->scene_path ? o->scene_path : "default", a);
        else o->scene_path = a;
#undef TAKES_VALUE
    }
    return st;
}
