#version 450
// The shape ops whose every element of d is a copy of one element of a or b, or a constant, moved as
// raw bits (RAW=uint, uint16_t or uint8_t with RAW_U8, the element size): REPEAT, CONCAT, PAD, ROLL and circular PAD,
// PAD_REFLECT_1D, DIAG, TRI, DIAG_MASK_INF/ZERO, WIN_PART, WIN_UNPART; and ARANGE (F32 bits).
#ifdef RAW_U8
#extension GL_EXT_shader_8bit_storage : require
#endif
#include "common.glsl"

layout(local_size_x = 256) in;
// 0 repeat, 1 concat, 2 pad, 3 wrap (roll, circular pad), 4 reflect, 5 diag, 6 tri, 7 diag_mask,
// 8 win_part, 9 win_unpart, 10 arange.
layout(constant_id = 0) const uint OP = 0;

layout(binding = 0) readonly buffer A { RAW a[]; };
layout(binding = 1) readonly buffer B { RAW b[]; };
layout(binding = 2) writeonly buffer D { RAW d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;    // d's shape
    uvec4 a_ne;  // a's shape
    // concat: x the dimension; pad: the leading pads; wrap: per dimension the offset added before
    // wrapping around a_ne; reflect: x the leading pad; tri: x the ggml_tri_type; diag_mask: x
    // n_past (signed), y the masked value's bits; win_part / win_unpart: x the window, y the windows
    // per row; arange: x, y the bits of start and step.
    uvec4 extra;
    View va, vb, vd;
} p;

uint at(View v, uvec4 c) { return element_index(v, c.x, c.y, c.z, c.w); }
uint from_a(uvec4 c) { return uint(a[at(p.va, c)]); }

bool in_triangle(uint type, uint column, uint row) {
    switch (type) {
        case 0: return column >= row;  // GGML_TRI_TYPE_UPPER_DIAG
        case 1: return column > row;   // UPPER
        case 2: return column <= row;  // LOWER_DIAG
        default: return column < row;  // LOWER
    }
}

uint element(uvec4 c) {
    switch (OP) {
        case 0: return from_a(c % p.a_ne);
        case 1: {
            uint dim = p.extra.x;
            if (c[dim] < p.a_ne[dim]) return from_a(c);
            c[dim] -= p.a_ne[dim];
            return uint(b[at(p.vb, c)]);
        }
        case 2: {
            uvec4 s = c - p.extra;  // below a leading pad it wraps to >= a_ne
            return all(lessThan(s, p.a_ne)) ? from_a(s) : 0u;
        }
        case 3: return from_a((c + p.extra) % p.a_ne);
        case 4: {
            int j = int(c.x) - int(p.extra.x), last = int(p.a_ne.x) - 1;
            return from_a(uvec4(j < 0 ? -j : j > last ? 2 * last - j : j, c.y, c.z, c.w));
        }
        case 5: return c.x == c.y ? from_a(uvec4(c.x, 0u, c.z, c.w)) : 0u;
        case 6: return in_triangle(p.extra.x, c.x, c.y) ? from_a(c) : 0u;
        case 7: return int(c.x) > int(p.extra.x) + int(c.y) ? p.extra.y : from_a(c);
        case 8: {
            uint w = p.extra.x, x = c.w % p.extra.y * w + c.y, y = c.w / p.extra.y * w + c.z;
            return x < p.a_ne.y && y < p.a_ne.z ? from_a(uvec4(c.x, x, y, 0u)) : 0u;
        }
        case 9: {
            uint w = p.extra.x;
            return from_a(uvec4(c.x, c.y % w, c.z % w, c.z / w * p.extra.y + c.y / w));
        }
        default: return floatBitsToUint(uintBitsToFloat(p.extra.x) + uintBitsToFloat(p.extra.y) * float(c.x));
    }
}

void main() {
    uint i = global_index(256);
    if (i >= p.ne.x * p.ne.y * p.ne.z * p.ne.w) return;
    uvec4 c = unravel(i, p.ne);
    d[at(p.vd, c)] = RAW(element(c));
}
