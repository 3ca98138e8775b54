// Shared by every ggx compute shader: storage types chosen by -D macros, exact conversions that
// match the CPU backend bit for bit (round to nearest even, quiet NaNs), and tensor addressing.
#extension GL_EXT_shader_16bit_storage : require

// A storage type T is one of the tokens f32, f16, bf16 (passed as -DA_TYPE=f16, ...):
// STORAGE(T) declares the array element, LOAD(T, x) reads an element as float, STORE(T, v) converts
// a float for storing.
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define STORAGE(T) CAT(storage_, T)
#define LOAD(T, x) CAT(load_, T)(x)
#define STORE(T, v) CAT(store_, T)(v)

#define storage_f32 float
#define storage_f16 uint16_t
#define storage_bf16 uint16_t
#define storage_i32 int

// 16-bit values exist only in storage (no shaderInt16), so their accessors are macros that widen
// or narrow at the load or store itself.
float bf16_bits_to_f32(uint h) {
    uint bits = h << 16;
    return uintBitsToFloat((bits & 0x7fffffffu) > 0x7f800000u ? bits | 0x00400000u : bits);
}
#define load_f32(value_) float(value_)
#define load_f16(value_) unpackHalf2x16(uint(value_)).x
#define load_bf16(value_) bf16_bits_to_f32(uint(value_))
#define load_i32(value_) float(value_)

// value >> shift, rounded to nearest with ties to even (1 <= shift < 32).
uint shift_right_rne(uint value, uint shift) {
    uint kept = value >> shift;
    uint rest = value & ((1u << shift) - 1u);
    uint half_ = 1u << (shift - 1u);
    return kept + ((rest > half_ || (rest == half_ && (kept & 1u) != 0u)) ? 1u : 0u);
}

uint f32_to_f16_bits(float f) {
    uint bits = floatBitsToUint(f);
    uint sign = (bits >> 16) & 0x8000u;
    uint a = bits & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u | ((a >> 13) & 0x03ffu);
    if (a >= 0x477ff000u) return sign | 0x7c00u;
    if (a >= 0x38800000u) return sign | shift_right_rne(a - 0x38000000u, 13u);
    if (a <= 0x33000000u) return sign;
    uint exponent = a >> 23;
    uint mantissa = (a & 0x007fffffu) | 0x00800000u;
    return sign | shift_right_rne(mantissa, 126u - exponent);
}

uint f32_to_bf16_bits(float f) {
    uint bits = floatBitsToUint(f);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (bits >> 16) | 0x0040u;
    return shift_right_rne(bits, 16u);
}

#define store_f32(value_) float(value_)
#define store_f16(value_) uint16_t(f32_to_f16_bits(value_))
#define store_bf16(value_) uint16_t(f32_to_bf16_bits(value_))
#define store_i32(value_) int(value_)

// A tensor as a binding sees it: first element and strides in array elements (kernels.h View).
struct View {
    uint off, s0, s1, s2, s3;
};

uint element_index(View v, uint i0, uint i1, uint i2, uint i3) {
    return v.off + i0 * v.s0 + i1 * v.s1 + i2 * v.s2 + i3 * v.s3;
}

// The linear invocation index of a dispatch spread over x and y (Recorder::groups_for).
uint global_index(uint local_size) {
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * local_size + gl_LocalInvocationID.x;
}

// The linear workgroup index of a dispatch spread over x and y.
uint group_index() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

// Splits a linear index over a shape [n0, n1, n2, *].
uvec4 unravel(uint i, uvec4 ne) {
    uint i0 = i % ne.x;
    i /= ne.x;
    uint i1 = i % ne.y;
    i /= ne.y;
    uint i2 = i % ne.z;
    return uvec4(i0, i1, i2, i / ne.z);
}

// The coordinates after c in flat order over shape ne (a carry instead of a division per element).
uvec4 next_coord(uvec4 c, uvec4 ne) {
    if (++c.x < ne.x) return c;
    c.x = 0u;
    if (++c.y < ne.y) return c;
    c.y = 0u;
    if (++c.z < ne.z) return c;
    return uvec4(0u, 0u, 0u, c.w + 1u);
}

// i modulo n, dividing only when a broadcast dimension actually wraps.
uint wrap(uint i, uint n) { return i < n ? i : (n == 1u ? 0u : i % n); }
uvec4 wrap(uvec4 c, uvec4 n) { return uvec4(wrap(c.x, n.x), wrap(c.y, n.y), wrap(c.z, n.z), wrap(c.w, n.w)); }

// Element-wise shaders give each invocation RUN consecutive elements in flat order
// (kernels/elementwise.cpp kRun): [first, end) of the n elements, unravelled once.
const uint RUN = 8u;
bool flat_run(uint n, out uint first, out uint end) {
    first = global_index(256) * RUN;
    end = min(first + RUN, n);
    return first < end;
}

