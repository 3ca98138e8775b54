#version 450
// One global distance j of bitonic stage k of ARGSORT / TOP_K (argsort.comp): every pair of keys
// (i, i + j) of each row of P keys in the workspace is put in order, ascending where i & k is 0.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(binding = 0) buffer W { uvec2 w[]; };

layout(push_constant) uniform Push {
    uint n_keys;  // P
    uint pairs;   // rows * P / 2
    uint j, k;
} p;

void main() {
    uint q = global_index(256);
    if (q >= p.pairs) return;
    uint half_ = p.n_keys / 2u;
    uint row = q / half_;
    q %= half_;
    uint i = (q / p.j) * 2u * p.j + q % p.j;
    bool ascending = (i & p.k) == 0u;
    uint at = row * p.n_keys + i;
    uvec2 x = w[at], y = w[at + p.j];
    if ((x.x > y.x || (x.x == y.x && x.y > y.y)) == ascending) {
        w[at] = y;
        w[at + p.j] = x;
    }
}
