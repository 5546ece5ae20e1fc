#version 330 core
// Shows the frame the tracer wrote into the PBO-fed texture. The frame's
// row 0 is the top of the image, GL's texture row 0 the bottom: flip v.
// Texels are already sRGB-encoded bytes, so no conversion happens here.
in vec2 uv;
out vec4 color;
uniform sampler2D frame;

void main()
{
    color = vec4(texture(frame, vec2(uv.x, 1.0 - uv.y)).rgb, 1.0);
}
