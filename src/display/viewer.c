/* viewer.c — the interactive window: one loop iteration per frame runs the
 * pipeline (animate -> build -> trace -> display) on the current camera and
 * variants, times each stage for the HUD, then handles the keys and the
 * mouse. All state lives in one RtViewer reached through GLFW's window user
 * pointer. */
#include <GL/glew.h>
#include <GLFW/glfw3.h>

#include "display/viewer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "display/gl_display.h"
#include "app/headless.h"
#include "display/hud.h"

/* Window size without --size: small enough that the CPU backend stays
 * interactive on a two-core machine. */
#define VIEW_DEFAULT_W 640
#define VIEW_DEFAULT_H 360
/* Camera feel. Speeds are in scene units per second, derived from the scene's
 * size, so a 1-unit bunny and a 30-unit Sponza fly alike. */
#define VIEW_SPEED_PER_DIAGONAL 0.2f  /* default speed: a fifth of the bounds' diagonal per second */
#define VIEW_FAST 4.0f                /* Shift */
#define VIEW_WHEEL_STEP 1.25f         /* speed factor per wheel notch */
#define VIEW_MOUSE_RAD_PER_PX 0.004f
#define VIEW_ORBIT_RAD_PER_S 1.2f     /* A/D/Q/E in orbit mode */
#define VIEW_MIN_ORBIT_FRACTION 0.01f /* closest orbit distance, of the diagonal */
/* Keeps the view direction off the up axis, where camera.h has no basis. */
#define VIEW_MAX_UP_DOT 0.995f
/* A frame slower than this (a stall, a breakpoint) moves the camera as if it
 * took this long. */
#define VIEW_MAX_DT_S 1.0
#define VIEW_MESSAGE_MS 4000.0
/* how often the HUD's rates per ray type are measured while the view changes */
#define VIEW_RATES_MS 2000.0
/* N steps the animation by one frame of a 30 Hz animation; [ ] halve and
 * double its speed within these bounds. */
#define VIEW_STEP_S (1.0 / 30.0)
#define VIEW_SPEED_MIN 1.0f / 64.0f
#define VIEW_SPEED_MAX 64.0f

enum { MOVE_FWD, MOVE_BACK, MOVE_LEFT, MOVE_RIGHT, MOVE_DOWN, MOVE_UP };

typedef struct RtViewer {
    RtOptions opt;            /* the live settings: variant keys change them */
    RtScene scene;
    RtPipeline *gpu;          /* the frame on the GPU (animate, build, trace on the device); NULL = none */
    RtPipeline *cpu;          /* the CPU reference path, opened when first used */
    int use_gpu;              /* G toggles between the GPU and the CPU reference */
    char gpu_off[RT_ERROR_MAX]; /* why there is no GPU backend */
    RtFrameStats fs;          /* the last frame */
    double anim_t, anim_t0, anim_t1; /* scene time and its range (looped) */
    int paused, dynamic;
    float anim_speed;
    int follow_scene_camera;  /* the scene animates the camera and the user has not flown yet */
    RtImage frame;
    GLFWwindow *win;
    RtGlDisplay *display;
    RtHud *hud;

    RtCamera home, cam;       /* R returns to home (the scene's or --camera) */
    RtVec3 centre;            /* orbit centre: the scene bounds' centre */
    float diagonal, speed;
    int orbit;

    unsigned held, tapped;    /* 1 << MOVE_*: keys down now / pressed since the last frame */
    int looking;              /* right button down: mouse deltas turn the camera */
    double mouse_x, mouse_y, look_dx, look_dy, wheel;

    int show_hud, show_help, vsync, want_screenshot;
    /* progressive accumulation: frames of an unchanged view add samples */
    struct {
        RtPipelineParams pp; /* the last frame's settings, sample 0 */
        RtCamera cam;
        double t;
        int w, h, gpu;
    } last_view;
    uint32_t sample;          /* the next frame's sample index (0: the view changed) */
    RtRayRates rates;         /* the HUD's trace per ray type (GPU backend), measured at rates_at */
    double rates_at;          /* rt_now_ms() of that measurement; 0: none yet */
    char clip_buf[16];        /* opt.clip after the clip key: the index played */
    char message[256];
    double message_until;
    char scene_name[128], backend[160], display_desc[RT_ERROR_MAX + 64];
} RtViewer;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void say(RtViewer *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->message, sizeof v->message, fmt, ap);
    va_end(ap);
    v->message_until = rt_now_ms() + VIEW_MESSAGE_MS;
    RT_INFO("VIEW", "%s", v->message);
}

/* ---- camera ---------------------------------------------------------------- */

/* Rodrigues: p rotated by angle a (radians) about the unit axis k. */
static RtVec3 rotate(RtVec3 p, RtVec3 k, float a)
{
    float c = cosf(a), s = sinf(a);
    return v3_add(v3_add(v3_scale(p, c), v3_scale(v3_cross(k, p), s)), v3_scale(k, v3_dot(k, p) * (1 - c)));
}

/* Turns the view direction d by yaw about up and pitch about right; a pitch
 * that would reach the up axis is dropped. */
static RtVec3 turn(RtVec3 d, RtVec3 up, RtVec3 right, float yaw, float pitch)
{
    d = rotate(d, up, yaw);
    right = rotate(right, up, yaw);
    RtVec3 p = rotate(d, right, pitch);
    return fabsf(v3_dot(v3_norm(p), up)) < VIEW_MAX_UP_DOT ? p : d;
}

static void camera_update(RtViewer *v, float dt)
{
    unsigned keys = v->held | v->tapped;
    v->tapped = 0;
    float f = (float)(!!(keys & 1u << MOVE_FWD) - !!(keys & 1u << MOVE_BACK));
    float r = (float)(!!(keys & 1u << MOVE_RIGHT) - !!(keys & 1u << MOVE_LEFT));
    float u = (float)(!!(keys & 1u << MOVE_UP) - !!(keys & 1u << MOVE_DOWN));
    int fast = glfwGetKey(v->win, GLFW_KEY_LEFT_SHIFT) == GLFW_PRESS ||
               glfwGetKey(v->win, GLFW_KEY_RIGHT_SHIFT) == GLFW_PRESS;
    float step = v->speed * dt * (fast ? VIEW_FAST : 1.0f);
    float yaw = -(float)v->look_dx * VIEW_MOUSE_RAD_PER_PX, pitch = -(float)v->look_dy * VIEW_MOUSE_RAD_PER_PX;
    v->look_dx = v->look_dy = 0;
    /* no input, no arithmetic: the camera stays bit-identical, so C prints
     * exactly the --camera it was started with */
    if (!keys && yaw == 0 && pitch == 0) return;
    v->follow_scene_camera = 0; /* the user flies from here */

    RtCamera *c = &v->cam;
    RtCameraBasis b = rt_camera_basis(*c, 1, 1); /* handles an up parallel to the view */
    RtVec3 up = v3_norm(c->up), right = v3_norm(b.right);
    if (!v->orbit) {
        /* the look-at point keeps its distance, so C prints a sensible one */
        float dist = v3_len(v3_sub(c->look, c->pos));
        RtVec3 d = v3_add(v3_add(v3_scale(b.fwd, f), v3_scale(right, r)), v3_scale(up, u));
        c->pos = v3_add(c->pos, v3_scale(d, step));
        RtVec3 fwd = turn(b.fwd, up, right, yaw, pitch);
        c->look = v3_add(c->pos, v3_scale(v3_norm(fwd), dist > 0 ? dist : 1.0f));
        return;
    }
    /* orbit: the camera circles the scene centre and looks at it */
    float turn_step = VIEW_ORBIT_RAD_PER_S * dt * (fast ? VIEW_FAST : 1.0f);
    yaw += -r * turn_step;
    pitch += u * turn_step;
    RtVec3 off = v3_sub(c->pos, v->centre);
    float dist = v3_len(off) - f * step, min_dist = VIEW_MIN_ORBIT_FRACTION * v->diagonal;
    if (dist < min_dist) dist = min_dist;
    RtVec3 dir = turn(v3_scale(b.fwd, -1.0f), up, right, yaw, -pitch);
    c->pos = v3_add(v->centre, v3_scale(v3_norm(dir), dist));
    c->look = v->centre;
}

/* ---- animation ------------------------------------------------------------------ */

/* Moves scene time by dt seconds (already scaled by the speed), looping over
 * the animation's range. */
static void advance_time(RtViewer *v, double dt)
{
    if (!v->dynamic) return;
    v->anim_t += dt;
    double len = v->anim_t1 - v->anim_t0;
    if (len > 0 && (v->anim_t > v->anim_t1 || v->anim_t < v->anim_t0))
        v->anim_t = v->anim_t0 + fmod(fmod(v->anim_t - v->anim_t0, len) + len, len);
}

/* The scene's own camera at time t (its camera track, if any); the
 * scene's static camera if the track cannot be evaluated. */
static RtCamera scene_camera_at(const RtScene *s, float t)
{
    RtCamera c = s->camera;
    RtError err = {0};
    if (rt_scene_camera_at(s, t, &c, &err) != RT_OK) RT_WARN("VIEW", "%s", err.msg);
    return c;
}

/* ---- input ------------------------------------------------------------------ */

static int move_of(int key)
{
    switch (key) {
    case GLFW_KEY_W: return MOVE_FWD;
    case GLFW_KEY_S: return MOVE_BACK;
    case GLFW_KEY_A: return MOVE_LEFT;
    case GLFW_KEY_D: return MOVE_RIGHT;
    case GLFW_KEY_Q: return MOVE_DOWN;
    case GLFW_KEY_E: return MOVE_UP;
    default: return -1;
    }
}

static void cycle_variant(RtViewer *v, RtVariantId id, int dir)
{
    const RtVariant *var = &rt_variants[id];
    if (rt_variant_cycle(&v->opt.pipe, id, dir) != RT_OK) {
        const char *why = rt_variant_unavailable(id);
        say(v, "%s: unavailable (%s)", var->name, why ? why : "no values to cycle");
        return;
    }
    char value[64];
    rt_variant_format(&v->opt.pipe, id, value, sizeof value);
    say(v, "%s: %s%s", var->name, value, var->gpu_only && !v->use_gpu ? " (GPU only: G switches)" : "");
}

/* J / Shift+J: the file's next / previous animation clip. assimp picks a
 * clip per import, so the file is loaded again and the pipelines reopened
 * on it (the GPU one only if there was one); the camera and the variants
 * stay, the time restarts at the clip's start. A failed load keeps the
 * scene as it was. */
static void cycle_clip(RtViewer *v, int dir)
{
    RtScene next;
    RtError err = {0};
    char buf[sizeof v->clip_buf];
    if (rt_app_load_next_clip(&v->opt, &v->scene, dir, &next, buf, sizeof buf, &err) != RT_OK) {
        say(v, "clip: %s", err.msg);
        return;
    }
    int had_gpu = v->gpu != NULL;
    rt_pipeline_destroy(v->gpu);
    rt_pipeline_destroy(v->cpu);
    v->gpu = v->cpu = NULL; /* the CPU one reopens on the next frame that needs it */
    rt_scene_free(&v->scene);
    v->scene = next;
    memcpy(v->clip_buf, buf, sizeof buf);
    v->opt.clip = v->clip_buf;
    int fb_w = 0, fb_h = 0;
    glfwGetFramebufferSize(v->win, &fb_w, &fb_h);
    if (had_gpu && rt_pipeline_create(&v->scene, RT_BACKEND_GPU, fb_w > 0 ? fb_w : 1, fb_h > 0 ? fb_h : 1, &v->gpu,
                                      &err) != RT_OK) {
        snprintf(v->gpu_off, sizeof v->gpu_off, "%s", err.msg);
        v->gpu = NULL;
    }
    v->use_gpu = v->use_gpu && v->gpu;
    float t0, t1;
    rt_scene_time_range(&v->scene, &t0, &t1);
    v->anim_t0 = t0;
    v->anim_t1 = t1;
    v->anim_t = t0;
    v->dynamic = rt_anim_is_dynamic(&v->scene.anim);
    const RtAnim *a = &v->scene.anim;
    say(v, "clip %d/%u%s%s%s (%.2f s)", a->clip + 1, a->clip_count, a->clip_name[0] ? " '" : "", a->clip_name,
        a->clip_name[0] ? "'" : "", t1 - t0);
}

static void on_key(GLFWwindow *w, int key, int scancode, int action, int mods)
{
    (void)scancode;
    RtViewer *v = glfwGetWindowUserPointer(w);
    int m = move_of(key);
    if (m >= 0) {
        /* a press counts for at least one frame, so a tap shorter than a
         * frame still moves the camera */
        if (action == GLFW_PRESS) v->held |= 1u << m, v->tapped |= 1u << m;
        else if (action == GLFW_RELEASE) v->held &= ~(1u << m);
        return;
    }
    if (action != GLFW_PRESS) return;
    for (int i = 0; i < RT_VAR_COUNT; i++)
        /* 'A'..'Z', '0'..'9' and ; ' / - = are their own GLFW key codes */
        if (rt_variants[i].hotkey && key == rt_variants[i].hotkey) {
            cycle_variant(v, (RtVariantId)i, mods & GLFW_MOD_SHIFT ? -1 : 1);
            return;
        }
    char buf[512];
    switch (key) {
    case GLFW_KEY_ESCAPE: glfwSetWindowShouldClose(w, GLFW_TRUE); break;
    case GLFW_KEY_F1: v->show_help = !v->show_help, v->show_hud |= v->show_help; break;
    case GLFW_KEY_H: v->show_hud = !v->show_hud, v->show_help = 0; break;
    case GLFW_KEY_F12: v->want_screenshot = 1; break;
    case GLFW_KEY_V:
        v->vsync = !v->vsync;
        glfwSwapInterval(v->vsync);
        say(v, "vsync %s", v->vsync ? "on" : "off");
        break;
    case GLFW_KEY_O:
        v->orbit = !v->orbit;
        if (v->orbit) {
            /* a camera at the centre has no direction to circle in: step back */
            RtVec3 fwd = rt_camera_basis(v->cam, 1, 1).fwd;
            if (v3_len(v3_sub(v->cam.pos, v->centre)) < VIEW_MIN_ORBIT_FRACTION * v->diagonal)
                v->cam.pos = v3_sub(v->centre, v3_scale(fwd, 0.5f * v->diagonal));
            v->cam.look = v->centre;
        }
        say(v, "camera: %s", v->orbit ? "orbit around the scene centre" : "fly");
        break;
    case GLFW_KEY_R:
        v->cam = v->home;
        v->orbit = 0;
        v->tapped = 0; /* a tap earlier in this batch of events moves nothing now */
        say(v, "camera: reset to the scene's");
        break;
    case GLFW_KEY_C:
        rt_camera_format(&v->cam, buf, sizeof buf);
        printf("--camera %s\n", buf);
        fflush(stdout);
        say(v, "camera printed to stdout");
        break;
    case GLFW_KEY_P:
        v->paused = !v->paused;
        say(v, "animation %s at t = %.3f s%s", v->paused ? "paused" : "playing", v->anim_t,
            v->dynamic ? "" : " (nothing moves in this scene)");
        break;
    case GLFW_KEY_N:
        v->paused = 1;
        advance_time(v, VIEW_STEP_S);
        say(v, "animation: step to t = %.3f s", v->anim_t);
        break;
    case GLFW_KEY_COMMA: case GLFW_KEY_PERIOD: {
        float *e = &v->opt.pipe.trace.shade.exposure;
        *e += key == GLFW_KEY_PERIOD ? 0.5f : -0.5f;
        if (*e < -16.0f) *e = -16.0f;
        if (*e > 16.0f) *e = 16.0f;
        say(v, "exposure %+.1f stops", *e);
        break;
    }
    case GLFW_KEY_LEFT_BRACKET: case GLFW_KEY_RIGHT_BRACKET:
        v->anim_speed *= key == GLFW_KEY_RIGHT_BRACKET ? 2.0f : 0.5f;
        if (v->anim_speed < VIEW_SPEED_MIN) v->anim_speed = VIEW_SPEED_MIN;
        if (v->anim_speed > VIEW_SPEED_MAX) v->anim_speed = VIEW_SPEED_MAX;
        say(v, "animation speed x%g", v->anim_speed);
        break;
    case GLFW_KEY_J: cycle_clip(v, mods & GLFW_MOD_SHIFT ? -1 : 1); break;
    case GLFW_KEY_G:
        if (!v->gpu) {
            say(v, "backend: GPU unavailable (%s)", v->gpu_off);
            break;
        }
        v->use_gpu = !v->use_gpu;
        say(v, "backend: %s", v->use_gpu ? "GPU" : "CPU reference");
        break;
    default: break;
    }
}

static void on_mouse_button(GLFWwindow *w, int button, int action, int mods)
{
    (void)mods;
    RtViewer *v = glfwGetWindowUserPointer(w);
    if (button != GLFW_MOUSE_BUTTON_RIGHT) return;
    v->looking = action == GLFW_PRESS;
    /* a captured cursor gives unbounded deltas; read the position after
     * the mode change so its warp is not taken for a movement */
    glfwSetInputMode(w, GLFW_CURSOR, v->looking ? GLFW_CURSOR_DISABLED : GLFW_CURSOR_NORMAL);
    glfwGetCursorPos(w, &v->mouse_x, &v->mouse_y);
}

static void on_cursor(GLFWwindow *w, double x, double y)
{
    RtViewer *v = glfwGetWindowUserPointer(w);
    if (v->looking) {
        v->look_dx += x - v->mouse_x;
        v->look_dy += y - v->mouse_y;
    }
    v->mouse_x = x;
    v->mouse_y = y;
}

static void on_scroll(GLFWwindow *w, double dx, double dy)
{
    (void)dx;
    RtViewer *v = glfwGetWindowUserPointer(w);
    v->speed *= powf(VIEW_WHEEL_STEP, (float)dy);
    say(v, "camera speed %.3g units/s", v->speed);
}

static void on_focus(GLFWwindow *w, int focused)
{
    RtViewer *v = glfwGetWindowUserPointer(w);
    if (!focused) v->held = 0; /* releases go elsewhere: no key may stay stuck */
}

/* ---- set-up ----------------------------------------------------------------- */

static RtStatus no_window(RtError *err, const char *what)
{
    const char *desc = NULL;
    glfwGetError(&desc);
    return rt_fail(err, RT_ERR_UNSUPPORTED,
                   "APP: cannot open a window: %s (%s). The viewer needs an X display with OpenGL 3.3; "
                   "run with --headless to render to PNG without one",
                   what, desc ? desc : "no details");
}

static RtStatus open_window(RtViewer *v, RtError *err)
{
    if (!glfwInit()) return no_window(err, "GLFW cannot start");
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    glfwWindowHint(GLFW_RESIZABLE, GLFW_TRUE);
    int w = v->opt.size_given ? v->opt.width : VIEW_DEFAULT_W;
    int h = v->opt.size_given ? v->opt.height : VIEW_DEFAULT_H;
    char title[256];
    snprintf(title, sizeof title, "rtviewer \xe2\x80\x94 %s", v->scene_name); /* UTF-8 em dash */
    v->win = glfwCreateWindow(w, h, title, NULL, NULL);
    if (!v->win) return no_window(err, "no OpenGL 3.3 core context");
    glfwSetWindowUserPointer(v->win, v);
    glfwMakeContextCurrent(v->win);
    glewExperimental = GL_TRUE; /* core profiles need it for GLEW to load everything */
    GLenum ge = glewInit();
    if (ge != GLEW_OK)
        return rt_fail(err, RT_ERR_UNSUPPORTED, "GL: GLEW cannot load OpenGL: %s", (const char *)glewGetErrorString(ge));
    while (glGetError() != GL_NO_ERROR) {} /* glewInit may leave GL_INVALID_ENUM behind */
    glfwSwapInterval(v->vsync);
    glfwSetKeyCallback(v->win, on_key);
    glfwSetMouseButtonCallback(v->win, on_mouse_button);
    glfwSetCursorPosCallback(v->win, on_cursor);
    glfwSetScrollCallback(v->win, on_scroll);
    glfwSetWindowFocusCallback(v->win, on_focus);
    RT_INFO("GL", "%s, OpenGL %s, window %dx%d", glGetString(GL_RENDERER), glGetString(GL_VERSION), w, h);
    return RT_OK;
}

/* The GPU backend when there is a usable GPU and no --cpu; the CPU reference
 * renderer otherwise (and on G). */
/* The GPU pipeline unless --cpu or none is usable; the CPU one opens when
 * first needed (G, or no GPU). */
static RtStatus open_backend(RtViewer *v, int w, int h, RtError *err)
{
    RtError gerr = {0};
    if (v->opt.cpu) {
        snprintf(v->gpu_off, sizeof v->gpu_off, "--cpu");
    } else if (rt_pipeline_create(&v->scene, RT_BACKEND_GPU, w, h, &v->gpu, &gerr) != RT_OK) {
        snprintf(v->gpu_off, sizeof v->gpu_off, "%s", gerr.msg);
        v->gpu = NULL;
    }
    v->use_gpu = v->gpu != NULL;
    if (v->gpu) {
        rt_pipeline_describe(v->gpu, v->backend, sizeof v->backend);
        RT_INFO("APP", "backend: %s; G switches to the CPU reference", v->backend);
        return RT_OK;
    }
    RT_INFO("APP", "backend: CPU (%s)", v->gpu_off);
    return rt_pipeline_create(&v->scene, RT_BACKEND_CPU, w, h, &v->cpu, err);
}

static void describe_backend(RtViewer *v)
{
    if (v->use_gpu) {
        rt_pipeline_describe(v->gpu, v->backend, sizeof v->backend);
        return;
    }
    int threads = v->opt.pipe.threads ? v->opt.pipe.threads : rt_thread_count();
    snprintf(v->backend, sizeof v->backend, "CPU backend, %d thread%s", threads, threads == 1 ? "" : "s");
}

static void describe_display(RtViewer *v)
{
    const char *why = NULL;
    if (rt_gl_display_interop(v->display, &why))
        snprintf(v->display_desc, sizeof v->display_desc, "PBO written by CUDA (CUDA-GL interop)");
    else
        snprintf(v->display_desc, sizeof v->display_desc, "PBO from host memory (interop off: %s)", why);
}

static RtStatus setup(RtViewer *v, const RtOptions *o, RtError *err)
{
    v->opt = *o;
    v->vsync = o->vsync;
    v->show_hud = 1;
    rt_scene_init(&v->scene);
    const char *base = o->scene_path ? strrchr(o->scene_path, '/') : NULL;
    snprintf(v->scene_name, sizeof v->scene_name, "%s",
             o->scene_path ? (base ? base + 1 : o->scene_path) : "default scene");

    RtStatus st = open_window(v, err);
    if (st != RT_OK) return st;
    if ((st = rt_app_load_scene(o, &v->scene, err)) != RT_OK) return st;
    int fb_w = 0, fb_h = 0;
    glfwGetFramebufferSize(v->win, &fb_w, &fb_h);
    if ((st = open_backend(v, fb_w > 0 ? fb_w : 1, fb_h > 0 ? fb_h : 1, err)) != RT_OK) return st;

    float t0, t1;
    rt_scene_time_range(&v->scene, &t0, &t1);
    v->anim_t0 = t0;
    v->anim_t1 = t1;
    v->dynamic = rt_anim_is_dynamic(&v->scene.anim);
    v->anim_t = o->has_time ? o->time : t0;
    v->paused = o->paused;
    v->anim_speed = o->speed;
    v->follow_scene_camera = !o->has_camera && v->scene.anim.camera_track >= 0;
    v->home = o->has_camera ? o->camera : scene_camera_at(&v->scene, (float)v->anim_t);
    v->cam = v->home;
    RtAabb bounds = rt_scene_bounds(&v->scene);
    v->centre = v3_scale(v3_add(bounds.lo, bounds.hi), 0.5f);
    v->diagonal = v3_len(v3_sub(bounds.hi, bounds.lo));
    if (!(v->diagonal > 0) || !isfinite(v->diagonal)) v->diagonal = 1.0f;
    v->speed = VIEW_SPEED_PER_DIAGONAL * v->diagonal;

    if ((st = rt_gl_display_create(o->interop, &v->display, err)) != RT_OK) return st;
    return rt_hud_create(&v->hud, err);
}

static void teardown(RtViewer *v)
{
    if (v->win) {
        glfwMakeContextCurrent(v->win);
        rt_hud_destroy(v->hud);
        rt_gl_display_destroy(v->display);
        glfwDestroyWindow(v->win);
    }
    glfwTerminate();
    rt_pipeline_destroy(v->gpu);
    rt_pipeline_destroy(v->cpu);
    rt_image_free(&v->frame);
    rt_scene_free(&v->scene);
}

/* ---- the frame ---------------------------------------------------------------- */

/* Progressive accumulation: the same view, time, size, backend and
 * settings as the last frame adds a sample; anything else starts again at
 * sample 0 (one sample per pixel while moving or playing). */
static void next_sample(RtViewer *v, int w, int h)
{
    RtPipelineParams pp = v->opt.pipe;
    pp.trace.shade.sample = 0;
    int same = v->sample > 0 && w == v->last_view.w && h == v->last_view.h && v->use_gpu == v->last_view.gpu &&
               v->anim_t == v->last_view.t && !memcmp(&v->cam, &v->last_view.cam, sizeof v->cam) &&
               !memcmp(&pp, &v->last_view.pp, sizeof pp);
    if (!same) v->sample = 0;
    /* new settings, size or backend: the HUD's rates per ray type are
     * measured again at once (a moving camera only every VIEW_RATES_MS) */
    if (w != v->last_view.w || h != v->last_view.h || v->use_gpu != v->last_view.gpu ||
        memcmp(&pp, &v->last_view.pp, sizeof pp))
        v->rates_at = 0;
    v->opt.pipe.trace.shade.sample = v->sample;
    /* --max-spp (at most 2^16: float sums stay exact to a byte, rt_shade_accumulate) */
    if (v->sample + 1u < (uint32_t)v->opt.max_spp) v->sample++;
    v->last_view.pp = pp;
    v->last_view.cam = v->cam;
    v->last_view.t = v->anim_t;
    v->last_view.w = w;
    v->last_view.h = h;
    v->last_view.gpu = v->use_gpu;
}

/* The frame pipeline into the window: on the GPU straight into the mapped
 * PBO (or read back when interop is off), on the CPU through the host image. */
static RtStatus run_pipeline(RtViewer *v, int fb_w, int fb_h, RtFrameTimes *t, RtError *err)
{
    RtStatus st;
    RtPipeline *p = v->use_gpu ? v->gpu : v->cpu;
    if (!p) {
        if ((st = rt_pipeline_create(&v->scene, RT_BACKEND_CPU, fb_w, fb_h, &v->cpu, err)) != RT_OK) return st;
        p = v->cpu;
    }
    unsigned char *dev = NULL;
    if (v->use_gpu && (st = rt_gl_display_map(v->display, &dev, err)) != RT_OK) return st;
    RtFrameTarget target = {fb_w, fb_h, dev, dev ? NULL : &v->frame};
    next_sample(v, fb_w, fb_h);
    st = rt_pipeline_frame(p, &v->opt.pipe, (float)v->anim_t, &v->cam, &target, &v->fs, err);
    /* The HUD's trace per ray type, every VIEW_RATES_MS while it shows: the
     * three passes once, after a frame of sample 0, whose image and
     * accumulation the last pass (everything) writes again. GPU backend
     * only: on the CPU the passes would take seconds. */
    if (st == RT_OK && v->use_gpu && v->show_hud && v->opt.pipe.trace.shade.sample == 0 &&
        (v->rates_at == 0 || rt_now_ms() - v->rates_at >= VIEW_RATES_MS)) {
        st = rt_pipeline_ray_rates(p, &v->opt.pipe, &v->cam, &target, 1, &v->rates, err);
        v->rates_at = rt_now_ms();
    }
    if (dev) {
        RtStatus su = rt_gl_display_unmap(v->display, err);
        if (st == RT_OK) st = su;
    }
    if (st == RT_ERR_OOM && v->use_gpu) {
        /* the GPU ran out of memory even for the leanest structure (the
         * pipeline tried that first): the CPU renderer from now on, the
         * reason on the HUD; the next frame opens it */
        snprintf(v->gpu_off, sizeof v->gpu_off, "%s", err->msg);
        say(v, "%s; the CPU backend goes on", err->msg);
        rt_pipeline_destroy(v->gpu);
        v->gpu = NULL;
        v->use_gpu = 0;
        return RT_OK;
    }
    if (!dev && st == RT_OK) {
        st = rt_gl_display_upload(v->display, &v->frame, err);
    }
    if (st != RT_OK) return st;
    t->stage_ms[RT_STAGE_ANIMATE] = v->fs.animate_ms;
    t->stage_ms[RT_STAGE_BUILD] = v->fs.build_ms;
    t->stage_ms[RT_STAGE_TRACE] = v->fs.trace_ms;
    return RT_OK;
}

/* One pass of the pipeline into the window's back buffer; times in t. */
static RtStatus frame(RtViewer *v, int fb_w, int fb_h, RtFrameTimes *t, RtError *err)
{
    RtStatus st;
    if (fb_w != v->frame.w || fb_h != v->frame.h) {
        rt_image_free(&v->frame);
        if (rt_image_alloc(&v->frame, fb_w, fb_h) != RT_OK)
            return rt_fail(err, RT_ERR_OOM, "APP: out of memory for a %dx%d frame", fb_w, fb_h);
        if ((st = rt_gl_display_resize(v->display, fb_w, fb_h, err)) != RT_OK) return st;
    }
    if (v->follow_scene_camera) v->cam = scene_camera_at(&v->scene, (float)v->anim_t);
    describe_backend(v);
    st = run_pipeline(v, fb_w, fb_h, t, err);
    if (st != RT_OK) return st;
    double t3 = rt_now_ms();
    if ((st = rt_gl_display_draw(v->display, fb_w, fb_h, err)) != RT_OK) return st;
    if (v->show_hud) {
        describe_display(v);
        char anim[192], clip[96] = "";
        const RtAnim *a = &v->scene.anim;
        if (a->clip_count)
            snprintf(clip, sizeof clip, "  clip %d/%u%s%.40s%s%s", a->clip + 1, a->clip_count,
                     a->clip_name[0] ? " '" : "", a->clip_name, a->clip_name[0] ? "'" : "",
                     a->clip_count > 1 ? " (J)" : ""); /* unnamed clips: no empty quotes */
        if (v->dynamic)
            snprintf(anim, sizeof anim, "t %.2f s of %.3g..%.3g  x%g%s%s", v->anim_t, v->anim_t0, v->anim_t1,
                     v->anim_speed, v->paused ? "  PAUSED" : "", clip);
        else
            snprintf(anim, sizeof anim, "static scene%s", clip);
        RtHudInfo info = {
            .scene = v->scene_name,
            .backend = v->backend,
            .gpu_stages = NULL,
            .display = v->display_desc,
            .gl_renderer = rt_gl_display_renderer(v->display),
            .width = fb_w,
            .height = fb_h,
            .vsync = v->vsync,
            .orbit = v->orbit,
            .speed = v->speed,
            .rays = v->fs.primary_rays + v->fs.shadow_rays + v->fs.reflection_rays,
            .trace_ms = t->stage_ms[RT_STAGE_TRACE],
            .triangles = v->scene.tri_count,
            .kd = v->fs.has_tree ? &v->fs.tree : NULL,
            .kd_gpu = v->use_gpu ? v->fs.kd_gpu : NULL,
            .structure_note = v->fs.structure_note,
            .photons = v->fs.has_photons ? &v->fs.photons : NULL,
            .rates = v->use_gpu && v->rates_at > 0 ? &v->rates : NULL,
            .rates_note = v->use_gpu ? "not measured yet" : "measured on the GPU backend only (G)",
            .samples = v->opt.pipe.trace.shade.sample + 1u,
            .gpu_variants = v->use_gpu,
            .anim = anim,
            .params = &v->opt.pipe,
            .message = rt_now_ms() < v->message_until ? v->message : NULL,
            .show_help = v->show_help,
        };
        if ((st = rt_hud_draw(v->hud, &info, fb_w, fb_h, err)) != RT_OK) return st;
    }
    double t4 = rt_now_ms();
    t->stage_ms[RT_STAGE_DISPLAY] = t4 - t3;
    return RT_OK;
}

static void screenshot(RtViewer *v, int fb_w, int fb_h)
{
    char path[4096];
    RtError err = {0};
    v->want_screenshot = 0;
    if (rt_gl_screenshot(fb_w, fb_h, v->opt.screenshot_dir, path, sizeof path, &err) != RT_OK) {
        say(v, "screenshot failed: %s", err.msg);
        return;
    }
    printf("screenshot: %s\n", path);
    fflush(stdout);
    say(v, "screenshot: %s", path);
}

RtStatus rt_viewer_run(const RtOptions *o, RtError *err)
{
    RtViewer *v = calloc(1, sizeof *v);
    if (!v) return rt_fail(err, RT_ERR_OOM, "APP: out of memory");
    RtStatus st = setup(v, o, err);
    int interop = -1; /* as last announced */
    double last_update = rt_now_ms(), last_end = last_update, start = last_update;
    long frames = 0;
    while (st == RT_OK && !glfwWindowShouldClose(v->win) && !(o->frames_given && frames >= o->frames)) {
        glfwPollEvents();
        int fb_w = 0, fb_h = 0;
        glfwGetFramebufferSize(v->win, &fb_w, &fb_h);
        if (fb_w <= 0 || fb_h <= 0 || glfwGetWindowAttrib(v->win, GLFW_ICONIFIED)) {
            /* minimised: nothing to draw into; sleep until something happens */
            glfwWaitEvents();
            last_update = last_end = rt_now_ms();
            continue;
        }
        double now = rt_now_ms(), dt = (now - last_update) / 1000.0;
        last_update = now;
        camera_update(v, (float)(dt < VIEW_MAX_DT_S ? dt : VIEW_MAX_DT_S));
        if (!v->paused) advance_time(v, (dt < VIEW_MAX_DT_S ? dt : VIEW_MAX_DT_S) * v->anim_speed);
        RtFrameTimes t = {0};
        if ((st = frame(v, fb_w, fb_h, &t, err)) != RT_OK) break;
        if (v->want_screenshot) screenshot(v, fb_w, fb_h);
        glfwSwapBuffers(v->win);
        double end = rt_now_ms();
        t.frame_ms = end - last_end;
        last_end = end;
        frames++;
        rt_hud_record(v->hud, end, &t);
        /* interop is known once the first frame registered the PBO; say it
         * once, and again only if it fails later */
        const char *why = NULL;
        int on = rt_gl_display_interop(v->display, &why);
        if (on != interop) {
            if (on) say(v, "interop: on (CUDA-GL PBO)");
            else say(v, "interop: off (%s)", why);
            interop = on;
        }
    }
    if (st == RT_OK && o->frames_given)
        printf("window: %ld frames in %.1f s (%.2f ms per frame)\n", frames, (rt_now_ms() - start) / 1000.0,
               frames ? (rt_now_ms() - start) / (double)frames : 0.0);
    teardown(v);
    free(v);
    return st;
}
