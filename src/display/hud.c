/* hud.c — the on-screen display: lines of stb_easy_font text on translucent
 * panels and a frame-time graph stacked by stage, all as coloured triangles
 * in window pixels, drawn with one call. */
#include <GL/glew.h>

#include "display/hud.h"

#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "display/gl_display.h"
#include "display/hud_text.h"

/* The graph shows this many milliseconds of history ("the last seconds"). */
#define HUD_GRAPH_WINDOW_MS 5000.0
/* Frames kept for the graph: enough for HUD_GRAPH_WINDOW_MS at 200 fps. */
#define HUD_HISTORY 1024
/* Smoothing time constant of the displayed FPS and stage times: readable
 * numbers at 5 fps and at 500 fps alike. */
#define HUD_SMOOTH_MS 500.0
/* stb_easy_font's glyphs are about 7 pixels high; 12 pixels per line
 * leaves room for descenders. */
#define HUD_LINE_PX 12
#define HUD_MAX_LINES 64
/* a line before wrapping: an error message (RtError) fits whole */
#define HUD_LINE_CHARS 640

typedef struct HudVertex {
    float x, y;
    uint8_t rgba[4];
} HudVertex;

typedef struct HudSample {
    double end_ms;      /* rt_now_ms() when the frame ended */
    RtFrameTimes t;
} HudSample;

struct RtHud {
    GLuint program, vao, vbo;
    GLint screen_loc;
    HudVertex *verts;   /* this frame's triangles; grown, never shrunk */
    size_t count, cap;
    char *quads;        /* stb_easy_font output for one line */
    int quads_cap;
    int scale;          /* pixels per font pixel */
    HudSample history[HUD_HISTORY];
    int head, filled;   /* ring: next slot, samples held */
    RtFrameTimes smooth;
    int smoothed;       /* 0 until the first frame */
};

typedef struct Rgba { uint8_t c[4]; } Rgba;
static const Rgba kText = {{235, 235, 235, 255}};
static const Rgba kDim = {{150, 150, 150, 255}};
static const Rgba kNote = {{255, 220, 90, 255}};
static const Rgba kPanel = {{0, 0, 0, 150}};
/* One colour per stage (animate, build, trace, display), then "other". */
static const Rgba kStage[RT_STAGE_COUNT + 1] = {
    {{230, 200, 60, 255}}, {{240, 120, 40, 255}}, {{70, 150, 245, 255}}, {{90, 205, 110, 255}},
    {{160, 160, 160, 255}},
};
static const char *const kStageName[RT_STAGE_COUNT + 1] = {"animate", "build", "trace", "display",
                                                           "other"};

RtStatus rt_hud_create(RtHud **out, RtError *err)
{
    *out = NULL;
    RtHud *h = calloc(1, sizeof *h);
    if (!h) return rt_fail(err, RT_ERR_OOM, "HUD: out of host memory");
    RtStatus st = rt_gl_program("hud_vs", "hud_fs", &h->program, err);
    if (st != RT_OK) {
        free(h);
        return st;
    }
    h->screen_loc = glGetUniformLocation(h->program, "screen");
    glGenVertexArrays(1, &h->vao);
    glGenBuffers(1, &h->vbo);
    glBindVertexArray(h->vao);
    glBindBuffer(GL_ARRAY_BUFFER, h->vbo);
    glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, sizeof(HudVertex), (const void *)offsetof(HudVertex, x));
    glVertexAttribPointer(1, 4, GL_UNSIGNED_BYTE, GL_TRUE, sizeof(HudVertex),
                          (const void *)offsetof(HudVertex, rgba));
    glEnableVertexAttribArray(0);
    glEnableVertexAttribArray(1);
    glBindVertexArray(0);
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    if ((st = GL_CHECK(err, "creating the HUD's vertex array")) != RT_OK) {
        rt_hud_destroy(h);
        return st;
    }
    *out = h;
    return RT_OK;
}

void rt_hud_destroy(RtHud *h)
{
    if (!h) return;
    glDeleteBuffers(1, &h->vbo);
    glDeleteVertexArrays(1, &h->vao);
    glDeleteProgram(h->program);
    free(h->verts);
    free(h->quads);
    free(h);
}

void rt_hud_record(RtHud *h, double now_ms, const RtFrameTimes *t)
{
    h->history[h->head] = (HudSample){now_ms, *t};
    h->head = (h->head + 1) % HUD_HISTORY;
    if (h->filled < HUD_HISTORY) h->filled++;
    /* exponential smoothing with a time constant, not a frame count */
    double a = h->smoothed ? 1.0 - exp(-t->frame_ms / HUD_SMOOTH_MS) : 1.0;
    h->smooth.frame_ms += a * (t->frame_ms - h->smooth.frame_ms);
    for (int s = 0; s < RT_STAGE_COUNT; s++) h->smooth.stage_ms[s] += a * (t->stage_ms[s] - h->smooth.stage_ms[s]);
    h->smoothed = 1;
}

/* ---- geometry ------------------------------------------------------------ */

static int grow(RtHud *h, size_t more)
{
    if (h->count + more <= h->cap) return 1;
    size_t cap = h->cap ? h->cap : 4096;
    while (cap < h->count + more) cap *= 2;
    HudVertex *v = realloc(h->verts, cap * sizeof *v);
    if (!v) return 0;
    h->verts = v;
    h->cap = cap;
    return 1;
}

/* Two triangles for the quad with corners q[0..3] in order. */
static void quad(RtHud *h, const float q[4][2], Rgba c)
{
    if (!grow(h, 6)) return; /* out of memory: the HUD loses a quad, the frame goes on */
    static const int order[6] = {0, 1, 2, 0, 2, 3};
    for (int i = 0; i < 6; i++) {
        HudVertex *v = &h->verts[h->count++];
        v->x = q[order[i]][0];
        v->y = q[order[i]][1];
        memcpy(v->rgba, c.c, 4);
    }
}

static void rect(RtHud *h, float x, float y, float w, float hgt, Rgba c)
{
    const float q[4][2] = {{x, y}, {x + w, y}, {x + w, y + hgt}, {x, y + hgt}};
    quad(h, q, c);
}

/* Text with its top-left corner at (x, y); returns its width in pixels. */
static float text(RtHud *h, float x, float y, Rgba c, const char *s)
{
    char line[HUD_LINE_CHARS];
    snprintf(line, sizeof line, "%s", s);
    /* stb_easy_font needs about 270 bytes per character */
    int need = (int)strlen(line) * 300 + 64;
    if (need > h->quads_cap) {
        char *q = realloc(h->quads, (size_t)need);
        if (!q) return 0;
        h->quads = q;
        h->quads_cap = need;
    }
    int n = stb_easy_font_print(0, 0, line, NULL, h->quads, h->quads_cap);
    float s_ = (float)h->scale;
    for (int i = 0; i < n; i++) {
        const float *v = (const float *)(h->quads + (size_t)i * 4 * 16); /* x,y,z + 4 bytes of colour */
        float q[4][2];
        for (int k = 0; k < 4; k++) {
            q[k][0] = x + v[k * 4 + 0] * s_;
            q[k][1] = y + v[k * 4 + 1] * s_;
        }
        quad(h, q, c);
    }
    return (float)stb_easy_font_width(line) * s_;
}

static float text_width(const RtHud *h, const char *s)
{
    char line[HUD_LINE_CHARS];
    snprintf(line, sizeof line, "%s", s);
    return (float)stb_easy_font_width(line) * (float)h->scale;
}

/* ---- content -------------------------------------------------------------- */

typedef struct Lines {
    char text[HUD_MAX_LINES][HUD_LINE_CHARS];
    Rgba color[HUD_MAX_LINES];
    int n;
} Lines;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void add(Lines *l, Rgba c, const char *fmt, ...)
{
    if (l->n == HUD_MAX_LINES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->text[l->n], HUD_LINE_CHARS, fmt, ap);
    va_end(ap);
    /* keep the tab that splits the columns; the rest must be printable */
    char *tab = strchr(l->text[l->n], '\t');
    if (tab) *tab = ' ';
    rt_hud_text_sanitize(l->text[l->n]);
    if (tab) *tab = '\t';
    l->color[l->n++] = c;
}

static void panel_size(const RtHud *h, const Lines *l, float *w, float *hgt, float *col);

/* out = in with every line broken to fit max_px (hud_text.h); a line's
 * second column (after a tab) wraps within its column, its continuations
 * start with a tab. */
static void wrap_lines(const RtHud *h, const Lines *in, float max_px, Lines *out)
{
    float col, w, hgt;
    panel_size(h, in, &w, &hgt, &col);
    out->n = 0;
    RtHudSpan span[HUD_MAX_LINES];
    char first[HUD_LINE_CHARS];
    for (int i = 0; i < in->n && out->n < HUD_MAX_LINES; i++) {
        const char *tab = strchr(in->text[i], '\t');
        const char *body = tab ? tab + 1 : in->text[i];
        snprintf(first, sizeof first, "%.*s", tab ? (int)(tab - in->text[i]) : 0, in->text[i]);
        int n = rt_hud_wrap(body, max_px - (tab ? col : 0.0f), h->scale, span, HUD_MAX_LINES);
        if (n > HUD_MAX_LINES) n = HUD_MAX_LINES;
        for (int k = 0; k < n && out->n < HUD_MAX_LINES; k++) {
            if (tab) add(out, in->color[i], "%s\t%.*s", k ? "" : first, span[k].len, body + span[k].start);
            else add(out, in->color[i], "%.*s", span[k].len, body + span[k].start);
        }
    }
}

/* The size of the panel that panel() would draw for l. */
static void panel_size(const RtHud *h, const Lines *l, float *w, float *hgt, float *col)
{
    float pad = 4.0f * (float)h->scale, lh = (float)(HUD_LINE_PX * h->scale), c = 0, rest = 0;
    char first[HUD_LINE_CHARS];
    for (int i = 0; i < l->n; i++) {
        const char *tab = strchr(l->text[i], '\t');
        if (!tab) continue;
        snprintf(first, sizeof first, "%.*s", (int)(tab - l->text[i]), l->text[i]);
        c = fmaxf(c, text_width(h, first) + 8.0f * (float)h->scale);
    }
    for (int i = 0; i < l->n; i++) {
        const char *tab = strchr(l->text[i], '\t');
        rest = fmaxf(rest, tab ? c + text_width(h, tab + 1) : text_width(h, l->text[i]));
    }
    *w = rest + 2 * pad;
    *hgt = (float)l->n * lh + 2 * pad;
    *col = c;
}

/* Draws the lines on one translucent panel with its top left at (x, y). A
 * tab splits a line into two columns (stb_easy_font is proportional, so
 * spaces cannot align them). */
static void panel(RtHud *h, const Lines *l, float x, float y)
{
    float pad = 4.0f * (float)h->scale, lh = (float)(HUD_LINE_PX * h->scale), w, ph, col;
    panel_size(h, l, &w, &ph, &col);
    rect(h, x, y, w, ph, kPanel);
    char first[HUD_LINE_CHARS];
    for (int i = 0; i < l->n; i++) {
        float ly = y + pad + (float)i * lh;
        const char *tab = strchr(l->text[i], '\t');
        if (!tab) {
            text(h, x + pad, ly, l->color[i], l->text[i]);
            continue;
        }
        snprintf(first, sizeof first, "%.*s", (int)(tab - l->text[i]), l->text[i]);
        text(h, x + pad, ly, l->color[i], first);
        text(h, x + pad + col, ly, l->color[i], tab + 1);
    }
}

static const char *ms(char *buf, double v)
{
    snprintf(buf, 16, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v);
    return buf;
}

static void stats_lines(const RtHud *h, const RtHudInfo *in, Lines *l)
{
    const RtFrameTimes *t = &h->smooth;
    char a[16], b[16], c[16], d[16];
    add(l, kText, "%s  %dx%d  %s", in->scene, in->width, in->height, in->backend);
    add(l, kText, "%.1f fps  %s ms/frame  %.2f Mrays/s  vsync %s  samples %u",
        t->frame_ms > 0 ? 1000.0 / t->frame_ms : 0.0, ms(a, t->frame_ms),
        in->trace_ms > 0 ? (double)in->rays / (in->trace_ms * 1e3) : 0.0, in->vsync ? "on" : "off", in->samples);
    add(l, kText, "animate %s  build %s  trace %s  display %s ms", ms(a, t->stage_ms[RT_STAGE_ANIMATE]),
        ms(b, t->stage_ms[RT_STAGE_BUILD]), ms(c, t->stage_ms[RT_STAGE_TRACE]),
        ms(d, t->stage_ms[RT_STAGE_DISPLAY]));
    if (in->rates) {
        char r[3][16];
        for (int k = 0; k < 3; k++) {
            if (isnan(in->rates->mrays[k])) snprintf(r[k], sizeof r[k], "-");
            else snprintf(r[k], sizeof r[k], "%.0f", in->rates->mrays[k]);
        }
        add(l, kText, "Mrays/s by type: primary %s  shadow %s  reflection %s", r[0], r[1], r[2]);
    } else if (in->rates_note) {
        add(l, kDim, "Mrays/s by type: %s", in->rates_note);
    }
    if (in->gpu_stages) add(l, kDim, "GPU stage times: n/a (%s)", in->gpu_stages);
    if (in->anim) add(l, kText, "animation: %s", in->anim);
    if (in->kd_gpu) {
        const RtKdGpuStats *g = in->kd_gpu;
        add(l, kText, "build: large %s  small %s ms  %u launches  %u round trips", ms(a, g->large_ms),
            ms(b, g->small_ms), g->launches, g->round_trips);
        add(l, kText, "tris %u  nodes %u  leaves %u  refs %u  levels %u+%u", g->triangles, g->nodes,
            g->leaves, g->references, g->large_levels, g->small_levels);
    } else if (in->kd) {
        char structure[48], sah[24] = "n/a (GPU)";
        rt_variant_format(in->params, RT_VAR_STRUCTURE, structure, sizeof structure);
        if (!isnan(in->kd->sah_cost)) snprintf(sah, sizeof sah, "%.2f", in->kd->sah_cost);
        add(l, kText, "%s: tris %u  nodes %u  leaves %u  refs %llu  SAH %s", structure, in->triangles,
            in->kd->nodes, in->kd->leaves, (unsigned long long)in->kd->references, sah);
    } else {
        add(l, kText, "tris %u  no tree (--brute)", in->triangles);
    }

    if (in->structure_note) add(l, kText, "%s", in->structure_note);
    if (in->photons) {
        const RtPhotonStats *p = in->photons;
        add(l, kText, "photons %u: trace %s  maps %s ms  caustic %u  global %u", p->emitted, ms(a, p->trace_ms),
            ms(b, p->build_ms), p->stored[RT_PHOTON_CAUSTIC], p->stored[RT_PHOTON_GLOBAL]);
    }

    /* the available variant groups by name, wrapped */
    char line[HUD_LINE_CHARS] = "";
    for (int i = 0; i < RT_VAR_COUNT; i++) {
        const RtVariant *v = &rt_variants[i];
        if (!v->hotkey || rt_variant_unavailable((RtVariantId)i) || (!in->gpu_variants && v->gpu_only)) continue;
        char item[64], value[48];
        rt_variant_format(in->params, (RtVariantId)i, value, sizeof value);
        snprintf(item, sizeof item, "%c:%s %s", v->hotkey, v->name, value);
        if (line[0] && strlen(line) + strlen(item) > 44) {
            add(l, kText, "%s", line);
            line[0] = 0;
        }
        snprintf(line + strlen(line), sizeof line - strlen(line), "%s%s", line[0] ? "  " : "", item);
    }
    if (line[0]) add(l, kText, "%s", line);
    if (!in->gpu_variants)
        add(l, kDim, "GPU variants (1-0, K, Y): act on the GPU backend only (G switches)");
    add(l, kText, "camera: %s, speed %.3g/s", in->orbit ? "orbit" : "fly", in->speed);
    add(l, kText, "display: %s", in->display);
    add(l, kDim, "GL: %s", in->gl_renderer);
    if (in->message) add(l, kNote, "%s", in->message);
    add(l, kDim, "F1 keys  H hide HUD");
}

/* F1: the keys, and the variant groups with their values. */
static void help_lines(const RtHudInfo *in, Lines *keys, Lines *vars)
{
    add(keys, kNote, "rtviewer keys (F1 closes)");
    for (const RtKeyHelp *k = rt_viewer_keys; k->key; k++) add(keys, kText, "%s\t%s", k->key, k->what);
    add(vars, kNote, "variants: a key cycles, Shift+key goes back");
    const char *unavailable = NULL;
    for (int i = 0; i < RT_VAR_COUNT; i++) {
        const RtVariant *v = &rt_variants[i];
        if (!v->hotkey) continue;
        char vals[96] = "";
        for (const RtVariantValue *t = v->values; t && t->name; t++)
            snprintf(vals + strlen(vals), sizeof vals - strlen(vals), "%s%s", vals[0] ? "/" : "", t->name);
        const char *why = rt_variant_unavailable((RtVariantId)i);
        if (why) {
            unavailable = why;
            add(vars, kDim, "%c\t%s%s%s%s: unavailable", v->hotkey, v->name, vals[0] ? " (" : "", vals,
                vals[0] ? ")" : "");
            continue;
        }
        char value[48];
        rt_variant_format(in->params, (RtVariantId)i, value, sizeof value);
        add(vars, kText, "%c\t%s: %s  (%s)", v->hotkey, v->name, value, vals);
    }
    if (unavailable)
        add(vars, kDim, "1-0, K, Y: %s", unavailable);
    else if (!in->gpu_variants)
        add(vars, kDim, "1-6, K: GPU builder, 7-0 and Y: GPU tracer; G switches to the GPU backend");
}

/* The last HUD_GRAPH_WINDOW_MS of frames, newest at the right, each bar as
 * wide as its frame took and stacked by stage; "other" is the rest of the
 * loop (events, HUD, swap, vsync). */
static void graph(RtHud *h, float x, float y, float w, float hgt)
{
    if (!h->filled) return;
    const HudSample *newest = &h->history[(h->head + HUD_HISTORY - 1) % HUD_HISTORY];
    double now = newest->end_ms, top = 0;
    for (int i = 0; i < h->filled; i++) {
        const HudSample *s = &h->history[(h->head + HUD_HISTORY - 1 - i) % HUD_HISTORY];
        if (now - s->end_ms > HUD_GRAPH_WINDOW_MS) break;
        if (s->t.frame_ms > top) top = s->t.frame_ms;
    }
    /* a round scale so the eye can read bar heights */
    static const double kScales[] = {5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000};
    double scale = kScales[sizeof kScales / sizeof kScales[0] - 1];
    for (size_t i = 0; i < sizeof kScales / sizeof kScales[0]; i++)
        if (top <= kScales[i]) {
            scale = kScales[i];
            break;
        }
    float lh = (float)(HUD_LINE_PX * h->scale), pad = 4.0f * (float)h->scale;
    rect(h, x, y, w, hgt + lh + 2 * pad, kPanel);
    float gx = x + pad, gw = w - 2 * pad, gy = y + pad, base = gy + hgt;
    for (int i = 0; i < h->filled; i++) {
        const HudSample *s = &h->history[(h->head + HUD_HISTORY - 1 - i) % HUD_HISTORY];
        double age = now - s->end_ms;
        if (age > HUD_GRAPH_WINDOW_MS) break;
        float x1 = gx + gw - (float)(age / HUD_GRAPH_WINDOW_MS) * gw;
        float x0 = x1 - (float)(s->t.frame_ms / HUD_GRAPH_WINDOW_MS) * gw;
        if (x0 < gx) x0 = gx;
        if (x1 - x0 < 1.0f) x0 = x1 - 1.0f; /* every frame stays visible */
        double stacked = 0, other = s->t.frame_ms;
        for (int st = 0; st <= RT_STAGE_COUNT; st++) {
            double v = st < RT_STAGE_COUNT ? s->t.stage_ms[st] : (other > 0 ? other : 0);
            if (st < RT_STAGE_COUNT) other -= v;
            float y0 = base - (float)(fmin(stacked + v, scale) / scale) * hgt;
            float y1 = base - (float)(fmin(stacked, scale) / scale) * hgt;
            if (y1 > y0) rect(h, x0, y0, x1 - x0, y1 - y0, kStage[st]);
            stacked += v;
        }
    }
    /* legend with the scale */
    float lx = gx, ly = base + pad;
    for (int st = 0; st <= RT_STAGE_COUNT; st++) lx += text(h, lx, ly, kStage[st], kStageName[st]) + 6.0f * (float)h->scale;
    char label[48];
    snprintf(label, sizeof label, "top %g ms, last %.0f s", scale, HUD_GRAPH_WINDOW_MS / 1000.0);
    text(h, lx, ly, kDim, label);
}

RtStatus rt_hud_draw(RtHud *h, const RtHudInfo *in, int fb_w, int fb_h, RtError *err)
{
    h->count = 0;
    h->scale = fb_h >= 1080 ? 2 : 1;
    float pad = 4.0f * (float)h->scale;
    /* the widest text a panel at x can hold inside the window */
#define HUD_TEXT_PX(x) ((float)fb_w - (x) - pad - 2.0f * pad)
    Lines *l = calloc(4, sizeof *l);
    if (!l) return rt_fail(err, RT_ERR_OOM, "HUD: out of host memory");
    if (in->show_help) {
        /* the variants go below the keys when they fit, else beside them */
        help_lines(in, &l[0], &l[1]);
        wrap_lines(h, &l[0], HUD_TEXT_PX(pad), &l[2]);
        wrap_lines(h, &l[1], HUD_TEXT_PX(pad), &l[3]);
        float w0, h0, h1, w1, col;
        panel_size(h, &l[2], &w0, &h0, &col);
        panel_size(h, &l[3], &w1, &h1, &col);
        panel(h, &l[2], pad, pad);
        if (2 * pad + h0 + pad + h1 <= (float)fb_h) {
            panel(h, &l[3], pad, 2 * pad + h0);
        } else {
            wrap_lines(h, &l[1], HUD_TEXT_PX(2 * pad + w0), &l[3]);
            panel(h, &l[3], 2 * pad + w0, pad);
        }
    } else {
        stats_lines(h, in, &l[0]);
        wrap_lines(h, &l[0], HUD_TEXT_PX(pad), &l[1]);
        panel(h, &l[1], pad, pad);
    }
#undef HUD_TEXT_PX
    free(l);
    if (!in->show_help) {
        float gh = 48.0f * (float)h->scale, lh = (float)(HUD_LINE_PX * h->scale);
        float gw = fminf((float)fb_w - 2 * pad, 360.0f * (float)h->scale);
        graph(h, pad, (float)fb_h - pad - (gh + lh + 2 * pad), gw, gh);
    }

    glViewport(0, 0, fb_w, fb_h);
    glEnable(GL_BLEND);
    glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
    glUseProgram(h->program);
    glUniform2f(h->screen_loc, (float)fb_w, (float)fb_h);
    glBindVertexArray(h->vao);
    glBindBuffer(GL_ARRAY_BUFFER, h->vbo);
    /* orphan last frame's storage instead of waiting for the GPU to finish with it */
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)(h->count * sizeof(HudVertex)), NULL, GL_STREAM_DRAW);
    glBufferSubData(GL_ARRAY_BUFFER, 0, (GLsizeiptr)(h->count * sizeof(HudVertex)), h->verts);
    glDrawArrays(GL_TRIANGLES, 0, (GLsizei)h->count);
    glBindVertexArray(0);
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    glDisable(GL_BLEND);
    return GL_CHECK(err, "drawing the HUD");
}
