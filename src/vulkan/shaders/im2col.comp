#version 450
// IM2COL, IM2COL_3D: column (ow, oh, od, n) of d holds the input patch under the kernel at that
// output position, d[((c*KD + kd)*KH + kh)*KW + kw, ow, oh, od, n] =
// x[ow*s0 + kw*d0 - p0, oh*s1 + kh*d1 - p1, od*s2 + kd*d2 - p2, c, n], 0 outside x; 2-D convolutions
// arrive as 3-D ones with KD = D = OD = 1, 1-D ones also with KH = H = OH = 1 (kernels/conv.cpp maps
// each op's dimensions onto these five). An invocation owns one row r of d and CHUNK consecutive
// columns ow, so its index arithmetic (the divisions) is paid once per CHUNK elements; neighbouring
// invocations take neighbouring rows, so the stores are contiguous.
#include "common.glsl"

layout(local_size_x = 256) in;
const uint CHUNK = 16;  // kernels/conv.cpp kIm2colChunk

layout(binding = 0) readonly buffer X { STORAGE(X_TYPE) x[]; };
layout(binding = 1) writeonly buffer D { STORAGE(D_TYPE) d[]; };

layout(push_constant) uniform Push {
    View vx;  // strides of w, h, d, c
    uint x_n;  // stride of n
    View vd;  // strides of r, ow, oh, od
    uint d_n;  // stride of n
    int s0, s1, s2, p0, p1, p2, d0, d1, d2;
    uint kw, kh, kd, width, height, depth;
    uint rows, ow, oh, od, count;  // count = rows * ceil(ow / CHUNK) * oh * od * n
} p;

void main() {
    uint i = global_index(256);
    if (i >= p.count) return;
    uint ow_chunks = (p.ow + CHUNK - 1u) / CHUNK;
    uint r = i % p.rows;
    uint column = i / p.rows;
    uint chunk = column % ow_chunks;
    column /= ow_chunks;
    uint oh = column % p.oh;
    column /= p.oh;
    uint od = column % p.od, n = column / p.od;
    uint plane = p.kw * p.kh, patch_ = plane * p.kd;
    uint c = r / patch_, kd = r % patch_ / plane, kh = r % plane / p.kw, kw = r % p.kw;

    int ih = int(oh) * p.s1 + int(kh) * p.d1 - p.p1;
    int id = int(od) * p.s2 + int(kd) * p.d2 - p.p2;
    bool row_inside = ih >= 0 && ih < int(p.height) && id >= 0 && id < int(p.depth);
    uint x_row = p.vx.off + c * p.vx.s3 + n * p.x_n + (row_inside ? uint(ih) * p.vx.s1 + uint(id) * p.vx.s2 : 0u);

    uint ow = chunk * CHUNK;
    uint end = min(ow + CHUNK, p.ow);
    int iw = int(ow) * p.s0 + int(kw) * p.d0 - p.p0;
    uint out_ = element_index(p.vd, r, ow, oh, od) + n * p.d_n;
    for (; ow < end; ++ow, iw += p.s0, out_ += p.vd.s1) {
        bool inside = row_inside && iw >= 0 && iw < int(p.width);
        d[out_] = STORE(D_TYPE, inside ? LOAD(X_TYPE, x[x_row + uint(iw) * p.vx.s0]) : 0.0);
    }
}
