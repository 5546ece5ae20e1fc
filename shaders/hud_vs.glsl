#version 330 core
// HUD quads (stb_easy_font text, panels, graph bars) in window pixels with
// the origin at the top left, as stb_easy_font emits them.
layout(location = 0) in vec2 pos;
layout(location = 1) in vec4 color;  // unsigned bytes, normalised
uniform vec2 screen;                 // framebuffer size in pixels
out vec4 vcolor;

void main()
{
    vcolor = color;
    gl_Position = vec4(pos.x / screen.x * 2.0 - 1.0, 1.0 - pos.y / screen.y * 2.0, 0.0, 1.0);
}
