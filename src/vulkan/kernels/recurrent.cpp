// Vulkan kernels of the recurrent family (docs/ops.md): SSM_CONV (sx and weight F32/F16/BF16, any
// strides; ssm_conv.comp, one invocation per result element), SSM_SCAN (F32, ids I32; ssm_scan.comp,
// one invocation per state row), RWKV_WKV6, GATED_LINEAR_ATTN and RWKV_WKV7 (F32, contiguous;
// linear_attn.comp, one invocation per state column or row of a (sequence, head)) and
// GATED_DELTA_NET (F32, dense rows; gated_delta_net.comp, one invocation per state row). The
// recurrences run sequentially over the tokens inside an invocation, with the states in the result
// from the first token on, as on the CPU; the sums are float, as the CPU's.
#include <algorithm>
#include <string>
#include <vector>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

constexpr uint32_t kLocalSize = 64;  // the scan shaders' local_size_x

uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

bool f32_tensor(const Device & device, const ggml_tensor * t) {
    return t && t->type == GGML_TYPE_F32 && float_tensor(device, t);
}

// Every one of node's first n_src sources and node itself F32 and addressable, node contiguous.
bool all_f32(const Device & device, const ggml_tensor * node, int n_src) {
    for (int i = 0; i < n_src; ++i)
        if (!f32_tensor(device, node->src[i])) return false;
    return f32_tensor(device, node) && ggml_is_contiguous(node);
}

bool dense_rows(const ggml_tensor * t) { return t->nb[0] == sizeof(float); }

uint32_t offset_of(const Recorder & rec, const ggml_tensor * t) {
    return rec.element_offset(t, sizeof(float));
}

// ---- SSM_CONV --------------------------------------------------------------------------------------

bool supports_ssm_conv(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *sx = node->src[0], *w = node->src[1];
    return sx && w && float_tensor(device, sx) && float_tensor(device, w) && f32_tensor(device, node);
}

void record_ssm_conv(Recorder & rec, const ggml_tensor * node) {
    if (ggml_nelements(node) == 0) return;
    const ggml_tensor *sx = node->src[0], *w = node->src[1];
    struct {
        Shape ne;
        View x, w, d;
        uint32_t d_conv;
    } push{shape_of(node), view_of(rec, sx, float_unit(sx->type)), view_of(rec, w, float_unit(w->type)),
           view_of(rec, node, sizeof(float)), u32(w->ne[0])};
    rec.dispatch(std::string("ssm_conv_") + float_type_name(sx->type) + "_" + float_type_name(w->type),
                 {rec.arg(sx, false), rec.arg(w, false), rec.arg(node, true)}, push,
                 rec.groups_for(static_cast<uint64_t>(ggml_nelements(node)), 256));
}

// ---- SSM_SCAN --------------------------------------------------------------------------------------

bool supports_ssm_scan(const Device & device, const ggml_tensor * node) {
    if (!all_f32(device, node, 6)) return false;
    const ggml_tensor *x = node->src[1], *B = node->src[4], *ids = node->src[6];
    return ids && ids->type == GGML_TYPE_I32 && raw_tensor(device, ids) && dense_rows(x) && B->ne[1] > 0 &&
           x->ne[1] % B->ne[1] == 0;
}

void record_ssm_scan(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *s = node->src[0], *x = node->src[1], *dt = node->src[2], *A = node->src[3];
    const ggml_tensor *B = node->src[4], *C = node->src[5], *ids = node->src[6];
    const uint64_t rows = static_cast<uint64_t>(x->ne[0] * x->ne[1] * x->ne[3]);
    if (rows == 0 || s->ne[0] == 0) return;
    struct {
        uint32_t s_off, dt_off, a_off, b_off, c_off, ids_off, d_off;
        View x;
        uint32_t n_state, head_dim, n_head, n_tokens, n_seqs, n_group, n_slots, mamba2;
    } push{offset_of(rec, s),    offset_of(rec, dt),
           offset_of(rec, A),    offset_of(rec, B),
           offset_of(rec, C),    rec.element_offset(ids, sizeof(int32_t)),
           offset_of(rec, node), view_of(rec, x, sizeof(float)),
           u32(s->ne[0]),        u32(x->ne[0]),
           u32(x->ne[1]),        u32(x->ne[2]),
           u32(x->ne[3]),        u32(B->ne[1]),
           u32(s->ne[3]),        A->ne[0] == 1 ? 1u : 0u};
    rec.dispatch("ssm_scan",
                 {rec.arg(s, false), rec.arg(x, false), rec.arg(dt, false), rec.arg(A, false),
                  rec.arg(B, false), rec.arg(C, false), rec.arg(ids, false), rec.arg(node, true)},
                 push, rec.groups_for(rows, kLocalSize));
}

// ---- RWKV_WKV6, GATED_LINEAR_ATTN, RWKV_WKV7 -------------------------------------------------------

// The op's per-token inputs (state excluded), the index of its key among them and its shader.
struct LinearOp {
    int n_inputs, key;
    const char * shader;
};

LinearOp linear_op(ggml_op op) {
    switch (op) {
        case GGML_OP_RWKV_WKV6:
            return {5, 0, "rwkv_wkv6"};
        case GGML_OP_GATED_LINEAR_ATTN:
            return {4, 0, "gated_linear_attn"};
        default:
            return {6, 2, "rwkv_wkv7"};
    }
}

bool supports_linear(const Device & device, const ggml_tensor * node) {
    const LinearOp op = linear_op(node->op);
    if (!all_f32(device, node, op.n_inputs + 1)) return false;
    for (int i = 0; i <= op.n_inputs; ++i)
        if (!ggml_is_contiguous(node->src[i])) return false;
    const ggml_tensor *k = node->src[op.key], *state = node->src[op.n_inputs];
    if (state->ne[1] <= 0 || k->ne[2] % state->ne[1] != 0) return false;
    // RWKV_WKV6's tf holds one S-vector per head.
    return node->op != GGML_OP_RWKV_WKV6 || ggml_nelements(node->src[3]) == k->ne[0] * k->ne[1];
}

void record_linear(Recorder & rec, const ggml_tensor * node) {
    const LinearOp op = linear_op(node->op);
    const ggml_tensor *k = node->src[op.key], *state = node->src[op.n_inputs];
    const uint64_t lines = static_cast<uint64_t>(k->ne[0] * k->ne[1] * state->ne[1]);
    if (lines == 0) return;
    struct {
        uint32_t off[6];
        uint32_t s_off, d_off;
        uint32_t S, H, T, n_seqs;
        float scale;
    } push{};
    std::vector<Arg> args;
    for (int i = 0; i < 6; ++i) {
        const ggml_tensor * in = node->src[std::min(i, op.n_inputs - 1)];  // unused bindings repeat one
        push.off[i] = offset_of(rec, in);
        args.push_back(rec.arg(in, false));
    }
    args.push_back(rec.arg(state, false));
    args.push_back(rec.arg(node, true));
    push.s_off = offset_of(rec, state);
    push.d_off = offset_of(rec, node);
    push.S = u32(k->ne[0]);
    push.H = u32(k->ne[1]);
    push.T = u32(k->ne[2]);
    push.n_seqs = u32(state->ne[1]);
    push.scale = node->op == GGML_OP_GATED_LINEAR_ATTN
                     ? core::params<ggml_ext_gated_linear_attn_params>(node).scale
                     : 1.0f;
    rec.dispatch(op.shader, args, push, rec.groups_for(lines, kLocalSize));
}

// ---- GATED_DELTA_NET -------------------------------------------------------------------------------

bool supports_gated_delta_net(const Device & device, const ggml_tensor * node) {
    if (!all_f32(device, node, 6)) return false;
    const ggml_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2], *g = node->src[3];
    const ggml_tensor * state = node->src[5];
    const int64_t K = core::params<ggml_ext_gated_delta_net_params>(node).n_states;
    // Slots older than the tokens are left unwritten by ggml; refused rather than left undefined.
    return dense_rows(q) && dense_rows(k) && dense_rows(v) && dense_rows(g) && dense_rows(state) &&
           q->ne[3] > 0 && v->ne[3] % q->ne[3] == 0 && K <= std::max<int64_t>(v->ne[2], 1);
}

// A tensor's first element and strides of dims 1..3 (gated_delta_net.comp Rows).
struct Rows {
    uint32_t off, s1, s2, s3;
};
Rows rows_of(const Recorder & rec, const ggml_tensor * t) {
    const View v = view_of(rec, t, sizeof(float));
    return {v.offset, v.s1, v.s2, v.s3};
}

void record_gated_delta_net(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2], *g = node->src[3];
    const ggml_tensor *beta = node->src[4], *state = node->src[5];
    const uint64_t lines = static_cast<uint64_t>(v->ne[0] * v->ne[1] * v->ne[3]);
    if (lines == 0) return;
    struct {
        Rows q, k, v, g, beta, s;
        uint32_t d_off, S, H, T, n_seqs, Hk, seqs_per_qk, K;
    } push{rows_of(rec, q),
           rows_of(rec, k),
           rows_of(rec, v),
           rows_of(rec, g),
           rows_of(rec, beta),
           rows_of(rec, state),
           offset_of(rec, node),
           u32(v->ne[0]),
           u32(v->ne[1]),
           u32(v->ne[2]),
           u32(v->ne[3]),
           u32(q->ne[1]),
           u32(v->ne[3] / q->ne[3]),
           u32(core::params<ggml_ext_gated_delta_net_params>(node).n_states)};
    rec.dispatch("gated_delta_net",
                 {rec.arg(q, false), rec.arg(k, false), rec.arg(v, false), rec.arg(g, false),
                  rec.arg(beta, false), rec.arg(state, false), rec.arg(node, true)},
                 push, rec.groups_for(lines, kLocalSize), {g->ne[0] == v->ne[0] ? 1u : 0u});
}

}  // namespace

namespace kernels {
const Kernel ssm_conv = vulkan_kernel<supports_ssm_conv, nullptr, record_ssm_conv>("vulkan.ssm_conv");
const Kernel ssm_scan = vulkan_kernel<supports_ssm_scan, nullptr, record_ssm_scan>("vulkan.ssm_scan");
const Kernel linear_attention =
    vulkan_kernel<supports_linear, nullptr, record_linear>("vulkan.linear_attention");
const Kernel gated_delta_net =
    vulkan_kernel<supports_gated_delta_net, nullptr, record_gated_delta_net>("vulkan.gated_delta_net");
}  // namespace kernels

}  // namespace ggx::vulkan
