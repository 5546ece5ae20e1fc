/* viewer.h — the interactive window: the per-frame pipeline (animate ->
 * build -> trace -> display) run in a GLFW window with a fly/orbit camera,
 * variant hotkeys, a HUD and screenshots. The keys are listed by
 * rt_options_usage (rt_viewer_keys, the registry rt_variants) and docs/viewer.md. */
#ifndef RT_VIEWER_H
#define RT_VIEWER_H

#include "app/options.h"

/* Opens the window on o's scene and runs until Esc or the window closes.
 * Fails with RT_ERR_UNSUPPORTED when no window with OpenGL 3.3 can be opened
 * (no display, no GLX): err then suggests --headless. */
RtStatus rt_viewer_run(const RtOptions *o, RtError *err);

#endif
