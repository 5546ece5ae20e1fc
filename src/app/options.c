/* options.c — command-line parsing. */
#include "app/options.h"

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
/* GPU builder groups (cuda/kd/kd_gpu.h, docs/kd_gpu.md). */
static const RtNamedValue ladder_values[] = {
    {"Original", 0, "Zhou et al. 2008 as Chang et al. started: scans, segmented reductions"},
    {"[A]", 1, "+ triangle sorting by per-block atomics (Impl. II)"},
    {"[A]-[B]", 2, "+ intra-block scans by ballot/popc/shfl"},
    {"[A]-[C]", 3, "+ node boxes by 6 atomics per chunk"},
    {"[A]-[D]", 4, "+ intra-block reductions by warp shuffles"},
    {"All", 5, "+ small-stage bit counting by __popc (Chang et al.'s fastest)"},
    {NULL, 0, NULL},
};
/* SAH cost presets: C_trav / C_i (the CPU oracle's default first). */
static const struct { float c_trav, c_isect; } kCostPresets[] = {{1.0f, 1.5f}, {1.0f, 1.0f}, {2.0f, 1.0f}, {1.0f, 4.0f}};
static const RtNamedValue cost_values[] = {
    {"1/1.5", 0, "C_trav 1, C_i 1.5 (the CPU oracle's default)"},
    {"1/1", 1, "C_trav 1, C_i 1"},
    {"2/1", 2, "C_trav 2, C_i 1 (traversal dear: bigger leaves)"},
    {"1/4", 3, "C_trav 1, C_i 4 (intersection dear: smaller leaves)"},
    {NULL, 0, NULL},
};
static const RtNamedValue ce_values[] = {
    {"15%", 15, "cut empty space above 15 % of the node's extent"},
    {"25%", 25, "Zhou et al.'s C_e (default)"},
    {"35%", 35, "Hoedt's recommendation"},
    {NULL, 0, NULL},
};
static const RtNamedValue box_values[] = {
    {"inclusion", RT_KD_GPU_BOX_INCLUSION, "a straddling triangle's AABB decides (fast, loose refs)"},
    {"clipping", RT_KD_GPU_CLIP, "straddling triangles are clipped to each child's cell (tight; default)"},
    {NULL, 0, NULL},
};
static const RtNamedValue small_node_values[] = {
    {"none", RT_KD_GPU_SMALL_NONE, "leaves straight from the large-node stage"},
    {"sah", RT_KD_GPU_SMALL_SAH, "exact SAH for small nodes (Zhou et al.)"},
    {"ssah", RT_KD_GPU_SMALL_SSAH, "Hoedt's simplified SAH for small nodes"},
    {NULL, 0, NULL},
};
static const RtNamedValue leaf_values[] = {
    {"32", 32, "a node of at most 32 triangles is small (32-bit masks)"},
    {"64", 64, "a node of at most 64 triangles is small (64-bit masks, default)"},
    {NULL, 0, NULL},
};
static const RtNamedValue ways_values[] = {
    {"2", 2, "large stage: Zhou et al.'s binary split per level (default)"},
    {"4", 4, "large stage: both halves split again in the same level (half the levels; needs [A] and [C])"},
    {NULL, 0, NULL},
};
/* GPU tracer groups (cuda/trace/trace.h, docs/trace_gpu.md). */
static const RtNamedValue traversal_values[] = {
    {"restart", RT_TRAV_RESTART, "kd-restart (Foley and Sugerman 2005): no stack"},
    {"shortstack", RT_TRAV_SHORT_STACK, "short stack (Horn et al. 2007), restart on underflow"},
    {NULL, 0, NULL},
};
static const RtNamedValue stack_values[] = {
    {"1", 1, "one entry"}, {"2", 2, "two entries"}, {"4", 4, "four entries (Hoedt, Horn et al.)"},
    {"8", 8, "eight entries"}, {"16", 16, "sixteen entries (the most)"}, {NULL, 0, NULL},
};
static const RtNamedValue packet_values[] = {
    {"off", RT_PACKET_OFF, "every ray traverses on its own"},
    {"warp", RT_PACKET_WARP, "a warp traverses as one packet with one shared short stack"},
    {NULL, 0, NULL},
};
static const RtNamedValue raymap_values[] = {
    {"rows", RT_RAYMAP_ROWS, "a warp traces 32 consecutive pixels of a row"},
    {"tiles", RT_RAYMAP_TILES, "a warp traces a 4x8 pixel tile (Hoedt's packets)"},
    {NULL, 0, NULL},
};

#if RT_HAVE_CUDA
#define RT_NO_GPU NULL
#else
#define RT_NO_GPU "this build has no CUDA (the GPU builder and tracer are not compiled in)"
#endif
const RtVariantGroup rt_variant_groups[RT_VAR_COUNT] = {
    [RT_VAR_ISECT] = {"intersection", 'I', "--isect", rt_isect_variants, NULL},
    [RT_VAR_SHADOWS] = {"shadows", 'L', "--no-shadows", on_off, NULL},
    [RT_VAR_BOUNCES] = {"reflections", 'B', "--bounces", bounce_values, NULL},
    [RT_VAR_TEXTURES] = {"textures", 'T', "--no-textures", on_off, NULL},
    [RT_VAR_HEATMAP] = {"heatmap", 'M', "--heatmap", off_on, NULL},
    [RT_VAR_LADDER] = {"Chang's ladder", '1', "--build ladder=", ladder_values, RT_NO_GPU},
    [RT_VAR_SAH_COSTS] = {"C_trav/C_i", '2', "--build ctrav=,ci=", cost_values, RT_NO_GPU},
    [RT_VAR_EMPTY_SPACE] = {"C_e", '3', "--build ce=", ce_values, RT_NO_GPU},
    [RT_VAR_BOX] = {"box", '4', "--build box=", box_values, RT_NO_GPU},
    [RT_VAR_SMALL_NODE] = {"small nodes", '5', "--build small=", small_node_values, RT_NO_GPU},
    [RT_VAR_LEAF_SIZE] = {"small threshold", '6', "--build leaf=", leaf_values, RT_NO_GPU},
    [RT_VAR_LARGE_WAYS] = {"large split", 'K', "--build ways=", ways_values, RT_NO_GPU},
    [RT_VAR_TRAVERSAL] = {"traversal", '7', "--trace traversal=", traversal_values, RT_NO_GPU},
    [RT_VAR_STACK_SIZE] = {"stack", '8', "--trace stack=", stack_values, RT_NO_GPU},
    [RT_VAR_PACKETS] = {"packets", '9', "--trace packet=", packet_values, RT_NO_GPU},
    [RT_VAR_LEAF_SKIP] = {"leaf skipping", '0', "--trace skip=", off_on, RT_NO_GPU},
    [RT_VAR_RAY_MAP] = {"ray map", 'Y', "--trace map=", raymap_values, RT_NO_GPU},
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
    {"P", "animation pause / play"},
    {"N", "step one frame (1/30 s) and pause"},
    {"[ ]", "animation slower / faster (x0.5 / x2)"},
    {"G", "backend: GPU (build + trace on the device) / CPU reference"},
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
    case RT_VAR_LADDER: return &o->kd_ladder;
    case RT_VAR_SAH_COSTS: return &o->kd_costs;
    case RT_VAR_EMPTY_SPACE: return &o->kd_ce;
    case RT_VAR_BOX: return &o->kd_box;
    case RT_VAR_SMALL_NODE: return &o->kd_small;
    case RT_VAR_LEAF_SIZE: return &o->kd_leaf;
    case RT_VAR_LARGE_WAYS: return &o->kd_ways;
    case RT_VAR_TRAVERSAL: return &o->trace.traversal;
    case RT_VAR_STACK_SIZE: return &o->trace.stack_size;
    case RT_VAR_PACKETS: return &o->trace.packet;
    case RT_VAR_LEAF_SKIP: return &o->trace.leaf_skip;
    case RT_VAR_RAY_MAP: return &o->trace.ray_map;
    default: return NULL;
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
    o->build = rt_kd_gpu_params_default();
    o->trace = rt_trace_params_default();
    o->kd_ladder = 5;
    o->kd_costs = 0;
    o->kd_ce = 25;
    o->kd_box = o->build.assoc;
    o->kd_small = o->build.small_mode;
    o->kd_leaf = (int)o->build.small_threshold;
    o->kd_ways = o->build.large_ways;
    o->speed = 1.0f;
    o->warmup = 3;
}

RtKdGpuParams rt_options_kd_gpu(const RtOptions *o)
{
    RtKdGpuParams p = o->build;
    if (o->kd_ladder >= 0) rt_kd_gpu_params_ladder(&p, o->kd_ladder);
    if (o->kd_costs >= 0 && o->kd_costs < (int)(sizeof kCostPresets / sizeof kCostPresets[0])) {
        p.c_trav = kCostPresets[o->kd_costs].c_trav;
        p.c_isect = kCostPresets[o->kd_costs].c_isect;
    }
    p.empty_cut = (float)o->kd_ce / 100.0f;
    p.assoc = (RtKdGpuAssoc)o->kd_box;
    p.small_mode = (RtKdGpuSmallMode)o->kd_small;
    p.small_threshold = (uint32_t)o->kd_leaf;
    p.large_ways = o->kd_ways;
    return p;
}

RtTraceParams rt_options_trace_gpu(const RtOptions *o)
{
    RtTraceParams t = o->trace;
    t.max_bounces = o->render.max_bounces;
    t.shadows = o->render.shadows;
    t.textures = o->render.textures;
    t.heatmap = o->render.heatmap;
    t.isect = o->render.use_woop ? RT_ISECT_WOOP : RT_ISECT_MT;
    return t;
}

void rt_options_usage(FILE *f)
{
    fprintf(f,
            "usage: rtviewer [SCENE] [options]\n"
            "  SCENE                 .obj (+.mtl), .ply, .scene or BART .aff file; none = built-in default scene\n"
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
            "  --build K=V[,K=V...]  GPU builder variant: ladder=0..5|Original|All, a..e=0/1 (Chang's steps),\n"
            "                        ce=PCT, box=inclusion|clipping, small=none|sah|ssah, leaf=32|64,\n"
            "                        ctrav=F, ci=F, fused=0/1, exact=0/1, flow=0/1/2, chunk=N,\n"
            "                        timed=0/1\n"
            "  --trace K=V[,K=V...]  GPU tracer variant: traversal=restart|shortstack, stack=1..16,\n"
            "                        skip=0/1 (leaf skipping), map=rows|tiles, packet=off|warp, refraction=0/1\n"
            "  --time T              the animation at time T seconds (headless: every frame; window: start)\n"
            "  --speed X             animation speed (default 1); --paused: window starts paused\n"
            "  --runners N           add N walking figures (~78K triangles each) to the scene\n"
            "  --bench SCENE         headless benchmark of SCENE ('default' = built-in): --frames N (measured),\n"
            "                        --warmup N (default 3), --json FILE, --csv FILE; --cpu for the CPU path\n"
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

/* One key of a --build / --trace list. */
typedef struct KvKey {
    const char *key;
    const char *help;
} KvKey;

static const KvKey kBuildKeys[] = {
    {"ladder", "Chang's ladder row: 0..5 or Original, [A], [A]-[B], [A]-[C], [A]-[D], All"},
    {"a", "[A] per-block atomics sort (Impl. II): 0/1"}, {"b", "[B] ballot/popc/shfl scans: 0/1"},
    {"c", "[C] node boxes by atomics: 0/1"}, {"d", "[D] shuffle reductions: 0/1"},
    {"e", "[E] __popc bit counting: 0/1"}, {"ce", "C_e in percent, 1..99 (25)"},
    {"box", "inclusion or clipping"}, {"small", "none, sah or ssah"}, {"leaf", "32 or 64"},
    {"ways", "children per large-stage split: 2 or 4 (2)"},
    {"ctrav", "SAH traversal cost (1)"}, {"ci", "SAH intersection cost (1.5)"},
    {"fused", "small stage in one launch: 0/1 (1)"},
    {"exact", "small roots' triangles clipped exactly to the root cell (perfect splits): 0/1 (0)"},
    {"flow", "large stage: a barrier per level (0), a node's chunks start when it is routed (1), auto (2)"},
    {"chunk", "refs per large-stage chunk: 0 (auto) or a multiple of 128 up to 2048 (0)"},
    {"timed", "CUDA events per kernel: 0/1"},
    {NULL, NULL},
};
static const KvKey kTraceKeys[] = {
    {"traversal", "restart or shortstack"}, {"stack", "short-stack entries 1..16 (4)"},
    {"skip", "leaf skipping 0/1 (1)"}, {"map", "rows or tiles"}, {"packet", "off or warp"},
    {"refraction", "0/1 (1)"}, {NULL, NULL},
};

static RtStatus unknown_key(const char *opt, const char *key, const KvKey *keys, RtError *err)
{
    char valid[512] = "";
    for (const KvKey *k = keys; k->key; k++) {
        size_t n = strlen(valid);
        snprintf(valid + n, sizeof valid - n, "%s%s (%s)", n ? "; " : "", k->key, k->help);
    }
    return rt_fail(err, RT_ERR_ARG, "CLI: %s: unknown key '%s' (valid: %s)", opt, key, valid);
}

static RtStatus build_key(RtOptions *o, const char *k, const char *v, RtError *err)
{
    RtKdGpuParams *b = &o->build;
    RtStatus st = RT_OK;
    if (!strcmp(k, "ladder")) {
        if (parse_named("--build ladder", v, ladder_values, &o->kd_ladder, err) == RT_OK) return RT_OK;
        return parse_int("--build ladder", v, 0, 5, &o->kd_ladder, err);
    }
    if (strlen(k) == 1 && k[0] >= 'a' && k[0] <= 'e') {
        if (o->kd_ladder >= 0) rt_kd_gpu_params_ladder(b, o->kd_ladder);
        o->kd_ladder = -1; /* custom steps from here on */
        int *f[] = {&b->chang_a, &b->chang_b, &b->chang_c, &b->chang_d, &b->chang_e};
        return parse_int("--build a..e", v, 0, 1, f[k[0] - 'a'], err);
    }
    if (!strcmp(k, "ce")) return parse_int("--build ce", v, 1, 99, &o->kd_ce, err);
    if (!strcmp(k, "box")) return parse_named("--build box", v, box_values, &o->kd_box, err);
    if (!strcmp(k, "small")) return parse_named("--build small", v, small_node_values, &o->kd_small, err);
    if (!strcmp(k, "leaf")) return parse_named("--build leaf", v, leaf_values, &o->kd_leaf, err);
    if (!strcmp(k, "ways")) return parse_named("--build ways", v, ways_values, &o->kd_ways, err);
    if (!strcmp(k, "ctrav") || !strcmp(k, "ci")) {
        if (o->kd_costs >= 0) {
            b->c_trav = kCostPresets[o->kd_costs].c_trav;
            b->c_isect = kCostPresets[o->kd_costs].c_isect;
        }
        o->kd_costs = -1;
        return parse_float(k[1] == 't' ? "--build ctrav" : "--build ci", v, 0.001f, 1000.0f,
                           k[1] == 't' ? &b->c_trav : &b->c_isect, err);
    }
    if (!strcmp(k, "fused")) st = parse_int("--build fused", v, 0, 1, &b->small_fused, err);
    else if (!strcmp(k, "exact")) st = parse_int("--build exact", v, 0, 1, &b->small_exact_clip, err);
    else if (!strcmp(k, "flow")) st = parse_int("--build flow", v, 0, 2, &b->large_dataflow, err);
    else if (!strcmp(k, "chunk")) {
        int n = 0;
        st = parse_int("--build chunk", v, 0, 2048, &n, err);
        if (st == RT_OK && n % 128)
            return rt_fail(err, RT_ERR_ARG, "CLI: --build chunk %d: expected 0 (auto) or a multiple of 128", n);
        b->large_chunk = (uint32_t)n;
    }
    else if (!strcmp(k, "timed")) st = parse_int("--build timed", v, 0, 1, &b->timed, err);
    else return unknown_key("--build", k, kBuildKeys, err);
    return st;
}

static RtStatus trace_key(RtOptions *o, const char *k, const char *v, RtError *err)
{
    RtTraceParams *t = &o->trace;
    if (!strcmp(k, "traversal")) return parse_named("--trace traversal", v, traversal_values, &t->traversal, err);
    if (!strcmp(k, "stack")) return parse_int("--trace stack", v, 1, RT_TRACE_STACK_MAX, &t->stack_size, err);
    if (!strcmp(k, "skip")) return parse_int("--trace skip", v, 0, 1, &t->leaf_skip, err);
    if (!strcmp(k, "map")) return parse_named("--trace map", v, raymap_values, &t->ray_map, err);
    if (!strcmp(k, "packet")) return parse_named("--trace packet", v, packet_values, &t->packet, err);
    if (!strcmp(k, "refraction")) return parse_int("--trace refraction", v, 0, 1, &t->refraction, err);
    return unknown_key("--trace", k, kTraceKeys, err);
}

/* "k=v,k=v" -> one call of fn per pair. */
static RtStatus parse_kv_list(const char *opt, const char *list, RtOptions *o,
                              RtStatus (*fn)(RtOptions *, const char *, const char *, RtError *),
                              RtError *err)
{
    char buf[512];
    if (!list || !*list || strlen(list) >= sizeof buf)
        return rt_fail(err, RT_ERR_ARG, "CLI: %s expects key=value[,key=value...], got '%s'", opt,
                       list ? list : "(nothing)");
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq || eq == kv || !eq[1])
            return rt_fail(err, RT_ERR_ARG, "CLI: %s expects key=value, got '%s' in '%s'", opt, kv, list);
        *eq = 0;
        RtStatus st = fn(o, kv, eq + 1, err);
        if (st != RT_OK) return st;
    }
    return RT_OK;
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
        else if (!strcmp(a, "--paused")) o->paused = 1;
        else if (!strcmp(a, "--build")) { TAKES_VALUE(); st = parse_kv_list(a, next, o, build_key, err); }
        else if (!strcmp(a, "--trace")) { TAKES_VALUE(); st = parse_kv_list(a, next, o, trace_key, err); }
        else if (!strcmp(a, "--time")) { TAKES_VALUE(); st = parse_float(a, next, -1e6f, 1e6f, &o->time, err); o->has_time = 1; }
        else if (!strcmp(a, "--speed")) { TAKES_VALUE(); st = parse_float(a, next, 0.0f, 1000.0f, &o->speed, err); }
        else if (!strcmp(a, "--runners")) { TAKES_VALUE(); st = parse_int(a, next, 0, 1000, &o->runners, err); }
        else if (!strcmp(a, "--warmup")) { TAKES_VALUE(); st = parse_int(a, next, 0, 100000, &o->warmup, err); }
        else if (!strcmp(a, "--json")) { TAKES_VALUE(); o->json_path = next; }
        else if (!strcmp(a, "--csv")) { TAKES_VALUE(); o->csv_path = next; }
        else if (!strcmp(a, "--bench")) {
            TAKES_VALUE();
            if (o->scene_path) return rt_fail(err, RT_ERR_ARG, "CLI: one scene file expected, got '%s' and '%s' (--bench)", o->scene_path, next);
            o->bench = 1;
            o->headless = 1;
            if (strcmp(next, "default")) o->scene_path = next; /* "default": the built-in scene */
        }
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
