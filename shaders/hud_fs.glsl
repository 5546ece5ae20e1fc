#version 330 core
in vec4 vcolor;
out vec4 color;

void main()
{
    color = vcolor;
}
