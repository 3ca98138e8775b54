#version 450
// IM2COL: column (ow, oh, n) of d holds the input patch under the kernel at that output position,
// d[(c*KH + kh)*KW + kw, ow, oh, n] = x[ow*s0 + kw*d0 - p0, oh*s1 + kh*d1 - p1, c, n], 0 outside x;
// 1-D convolutions arrive as 2-D ones with KH = H = OH = 1. An invocation owns one row r of d and
// CHUNK consecutive columns ow, so its index arithmetic (the divisions) is paid once per CHUNK
// elements; neighbouring invocations take neighbouring rows, so the stores are contiguous.
#include "common.glsl"

layout(local_size_x = 256) in;
const uint CHUNK = 16;  // kernels/conv.cpp kIm2colChunk

layout(binding = 0) readonly buffer X { STORAGE(X_TYPE) x[]; };
layout(binding = 1) writeonly buffer D { STORAGE(D_TYPE) d[]; };

layout(push_constant) uniform Push {
    View vx;  // strides of w, h, c, n
    View vd;  // strides of r, ow, oh, n
    int s0, s1, p0, p1, d0, d1;
    uint kw, kh, width, height;
    uint rows, ow, ow_chunks, oh, count;  // count = rows * ow_chunks * oh * n
} p;

void main() {
    uint i = global_index(256);
    if (i >= p.count) return;
    uint r = i % p.rows;
    uint column = i / p.rows;
    uint chunk = column % p.ow_chunks;
    column /= p.ow_chunks;
    uint oh = column % p.oh, n = column / p.oh;
    uint patch_ = p.kw * p.kh;
    uint c = r / patch_, kh = r % patch_ / p.kw, kw = r % p.kw;

    int ih = int(oh) * p.s1 + int(kh) * p.d1 - p.p1;
    bool row_inside = ih >= 0 && ih < int(p.height);
    uint x_row = p.vx.off + c * p.vx.s2 + n * p.vx.s3 + (row_inside ? uint(ih) * p.vx.s1 : 0u);

    uint ow = chunk * CHUNK;
    uint end = min(ow + CHUNK, p.ow);
    int iw = int(ow) * p.s0 + int(kw) * p.d0 - p.p0;
    uint out_ = element_index(p.vd, r, ow, oh, n);
    for (; ow < end; ++ow, iw += p.s0, out_ += p.vd.s1) {
        bool inside = row_inside && iw >= 0 && iw < int(p.width);
        d[out_] = STORE(D_TYPE, inside ? LOAD(X_TYPE, x[x_row + uint(iw) * p.vx.s0]) : 0.0);
    }
}
