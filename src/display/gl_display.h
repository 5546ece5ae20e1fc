/* gl_display.h — the display stage: the window's GL objects. A frame reaches
 * the screen through a pixel buffer object (filled by CUDA through CUDA-GL
 * interop, or from host memory when interop is unavailable), is unpacked into
 * a texture and drawn by a full-screen pass (shaders/display_*.glsl). Also
 * the shader programs (embedded at build time), GL error checks and the
 * window screenshot.
 *
 * Every function needs the window's GL context current on the calling
 * thread. Include this after GL/glew.h. */
#ifndef RT_GL_DISPLAY_H
#define RT_GL_DISPLAY_H

#include "core/image.h"

typedef struct RtGlDisplay RtGlDisplay;

/* Reports a pending GL error as "file:line: GL: what failed: error" and
 * returns RT_ERR_UNSUPPORTED; RT_OK when there is none. */
RtStatus rt_gl_check(RtError *err, const char *file, int line, const char *what);
#define GL_CHECK(err, what) rt_gl_check((err), __FILE__, __LINE__, (what))

/* Compiles and links shaders/<vs>.glsl and shaders/<fs>.glsl (embedded in
 * the binary); a compile error names the file and GL's log. */
RtStatus rt_gl_program(const char *vs, const char *fs, unsigned int *program, RtError *err);

/* Creates the display objects and tries CUDA-GL interop (try_interop = 0
 * skips it); failing interop is not an error, see rt_gl_display_path. */
RtStatus rt_gl_display_create(int try_interop, RtGlDisplay **out, RtError *err);
void rt_gl_display_destroy(RtGlDisplay *d);

/* (Re)allocates the PBO and texture for a w x h frame and re-registers the
 * PBO with CUDA. Cheap when the size is unchanged. */
RtStatus rt_gl_display_resize(RtGlDisplay *d, int w, int h, RtError *err);

/* Puts img (the size of the last resize) into the PBO, then the texture. A
 * failing interop copy switches to host copies for good and is reported
 * through rt_gl_display_path; only GL errors fail. */
RtStatus rt_gl_display_upload(RtGlDisplay *d, const RtImage *img, RtError *err);

/* The GPU path: maps the PBO for CUDA so the tracer writes the frame there
 * (*dev: w*h*4 bytes of device memory until rt_gl_display_unmap). *dev is
 * NULL when interop is off (or just failed, which turns it off for good):
 * then the caller hands a host image to rt_gl_display_upload instead. */
RtStatus rt_gl_display_map(RtGlDisplay *d, unsigned char **dev, RtError *err);
/* Gives the PBO back to GL and unpacks it into the texture. */
RtStatus rt_gl_display_unmap(RtGlDisplay *d, RtError *err);
/* Draws the frame over the whole fb_w x fb_h framebuffer. */
RtStatus rt_gl_display_draw(RtGlDisplay *d, int fb_w, int fb_h, RtError *err);

/* 1 while frames go through CUDA-GL interop; reason says why not when off. */
int rt_gl_display_interop(const RtGlDisplay *d, const char **reason);
/* The GL_RENDERER string of the context. */
const char *rt_gl_display_renderer(const RtGlDisplay *d);

/* Reads the back buffer (what the next swap shows: frame and HUD) and
 * writes it as dir/rtviewer_YYYYmmdd-HHMMSS-mmm.png (dir NULL = current
 * directory; a suffix keeps names unique). The path goes to path[n]. */
RtStatus rt_gl_screenshot(int fb_w, int fb_h, const char *dir, char *path, size_t n, RtError *err);

#endif
