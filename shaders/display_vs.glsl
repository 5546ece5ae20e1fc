#version 330 core
// The display pass: one triangle that covers the viewport, generated from
// gl_VertexID, so no vertex buffer is needed (an empty VAO is bound).
out vec2 uv;

void main()
{
    vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
    uv = p;
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
