#version 450
// The extension kernel of test_vulkan_ext: y = x * scale + bias over n contiguous F32 elements,
// first elements at the buffer_info shader offsets (in floats), with a specialisation constant
// selecting whether the bias is added.
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint ADD_BIAS = 1;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
    uint n, x_offset, y_offset;
    float scale, bias;
} p;

void main() {
    uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u + gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    y[p.y_offset + i] = x[p.x_offset + i] * p.scale + (ADD_BIAS != 0u ? p.bias : 0.0);
}
