// Vulkan kernels of FLASH_ATTN_EXT (flash_attn.comp): F32 q, F16/F32 K and V (heads and batches
// broadcast), optional F16/F32 mask with ALiBi slopes, logit softcap, optional sinks, any head size
// whose smallest tile fits the device's shared memory, any input strides, into the
// contiguous F32 [DV, H, n_q, B] result. When too few workgroups would cover the queries (decoding),
// the keys are split over more workgroups whose partial rows flash_attn_combine.comp merges.
// LIGHTNING_INDEXER (lightning_indexer.comp) and DSV4_HC_COMB/PRE/POST (dsv4_hc.comp): F32 inputs of any
// strides (the indexer's keys F16 too, its mask F16) into contiguous F32 results, float sums in the
// CPU's order.
#include <algorithm>
#include <string>
#include <vector>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

constexpr uint64_t kLanes = 8;  // flash_attn.comp's LANES: invocations per query row

// A flash_attn.comp tile: BR query rows per workgroup, BC keys per step.
struct Tile {
    uint64_t rows, keys;
};
// Largest first; wide heads (DeepSeek's 576) take the smaller ones to fit shared memory.
constexpr Tile kTiles[] = {{16, 32}, {8, 32}, {8, 16}, {4, 16}, {4, 8}, {2, 8}, {1, 8}};
// Key splits: enough workgroups for a large GPU, each with at least kMinSplitKeys keys.
constexpr uint64_t kTargetGroups = 128;
constexpr uint64_t kMinSplitKeys = 64;
constexpr uint64_t kMaxSplits = 64;  // flash_attn_combine.comp's LOCAL_SIZE
constexpr uint32_t kCombineLocal = 64;
constexpr int64_t kMaxPacked = 65535;  // the mask's ne2 and ne3 share a push-constant word

struct Problem {
    const ggml_tensor *q, *k, *v, *mask, *sinks;
    uint64_t d, dv, n_q, n_kv, heads, kv_heads, batch, kv_batch, group;

    Tile tile = kTiles[0];

    // With the largest tile.
    explicit Problem(const ggml_tensor * node)
        : q(node->src[0]),
          k(node->src[1]),
          v(node->src[2]),
          mask(node->src[3]),
          sinks(node->src[4]),
          d(q->ne[0]),
          dv(v->ne[0]),
          n_q(q->ne[1]),
          n_kv(k->ne[1]),
          heads(q->ne[2]),
          kv_heads(k->ne[2]),
          batch(q->ne[3]),
          kv_batch(k->ne[3]),
          group(heads / kv_heads) {}
    // With the largest tile whose shared memory fits the device.
    Problem(const ggml_tensor * node, const Device & device) : Problem(node) {
        for (const Tile & t : kTiles) {
            tile = t;
            if (shared_bytes() <= device.limits().max_shared_memory) break;
        }
    }

    uint64_t row_blocks() const { return (n_q * group + tile.rows - 1) / tile.rows; }
    uint64_t shared_bytes() const {
        const uint64_t br = tile.rows, bc = tile.keys;
        return 4 * (br * (d + 1) + bc * (std::max(d, dv) + 1) + br * (bc + 1) + br * kLanes + 1);
    }
};

// How the keys are divided among workgroups: splits of keys_per_split (a multiple of kKeys).
struct Split {
    uint64_t keys_per_split, splits;
};

Split split_of(const Problem & p) {
    const uint64_t groups = p.row_blocks() * p.kv_heads * p.batch;
    if (groups == 0 || groups >= kTargetGroups || p.n_kv < 2 * kMinSplitKeys)
        return {std::max<uint64_t>(p.n_kv, 1), 1};
    const uint64_t want =
        std::min({(kTargetGroups + groups - 1) / groups, p.n_kv / kMinSplitKeys, kMaxSplits});
    const uint64_t bc = p.tile.keys;
    const uint64_t keys = ((p.n_kv + want - 1) / want + bc - 1) / bc * bc;
    return {keys, (p.n_kv + keys - 1) / keys};
}

bool kv_type(const ggml_tensor * t) { return t->type == GGML_TYPE_F32 || t->type == GGML_TYPE_F16; }

bool supports_shapes(const ggml_tensor * node) {
    const ggml_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2], *mask = node->src[3];
    const ggml_tensor * sinks = node->src[4];  // ggml_flash_attn_ext_add_sinks: F32 [H]
    if (!q || !k || !v || q->type != GGML_TYPE_F32 || !kv_type(k) || !kv_type(v)) return false;
    if (sinks && (sinks->type != GGML_TYPE_F32 || !ggml_is_vector(sinks) || sinks->ne[0] != q->ne[2]))
        return false;
    if (q->ne[0] != k->ne[0] || k->ne[1] != v->ne[1] || k->ne[2] != v->ne[2] || k->ne[3] != v->ne[3])
        return false;
    if (k->ne[2] <= 0 || q->ne[2] % k->ne[2] != 0 || k->ne[3] <= 0 || q->ne[3] % k->ne[3] != 0) return false;
    if (mask && (!kv_type(mask) || mask->ne[0] != k->ne[1] || mask->ne[1] < q->ne[1] || mask->ne[2] <= 0 ||
                 mask->ne[3] <= 0 || q->ne[2] % mask->ne[2] != 0 || q->ne[3] % mask->ne[3] != 0 ||
                 mask->ne[2] > kMaxPacked || mask->ne[3] > kMaxPacked))
        return false;
    return node->type == GGML_TYPE_F32 && ggml_is_contiguous(node) && node->ne[0] == v->ne[0] &&
           node->ne[1] == q->ne[2] && node->ne[2] == q->ne[1] && node->ne[3] == q->ne[3];
}

bool supports_flash_attn(const Device & device, const ggml_tensor * node) {
    if (!supports_shapes(node) || node->src[0]->ne[0] == 0) return false;
    for (int i = 0; i < 5; ++i) {
        if (node->src[i] && !float_tensor(device, node->src[i])) return false;
    }
    const Problem p(node, device);
    const Limits & limits = device.limits();
    return float_tensor(device, node) && p.shared_bytes() <= limits.max_shared_memory &&
           p.row_blocks() <= limits.max_workgroup_count[0] && p.kv_heads <= limits.max_workgroup_count[1] &&
           p.batch * split_of(p).splits <= limits.max_workgroup_count[2];
}

// The split partials' bytes, for the tile the device will choose: the request knows no device, so it
// is the largest over the tiles.
size_t workspace_flash_attn(const ggml_tensor * node) {
    Problem p(node);
    uint64_t splits = 1;
    for (const Tile & t : kTiles) {
        p.tile = t;
        splits = std::max(splits, split_of(p).splits);
    }
    return splits == 1 ? 0 : splits * p.batch * p.n_q * p.heads * (p.dv + 2) * sizeof(float);
}

uint32_t u32(uint64_t x) { return static_cast<uint32_t>(x); }

// flash_attn.comp's push constants.
struct AttentionPush {
    View q, k, v, mask;
    uint32_t o_off, n_q, n_kv, group, kv_ratio, mask_repeat, n_head_log2;
    float scale, softcap, log2_m0;
    uint32_t keys_per_split;
    uint32_t sinks_off;
};

AttentionPush attention_push(const Recorder & rec, const ggml_tensor * node, const Problem & p,
                             const Split & split, uint32_t o_off) {
    const auto attention = core::params<ggml_ext_flash_attn_ext_params>(node);
    const float max_bias = attention.max_bias;
    uint32_t n_head_log2 = 1;  // ALiBi: the largest power of two <= the head count
    while (2 * n_head_log2 <= p.heads)
        n_head_log2 *= 2;
    return {view_of(rec, p.q, 4),
            view_of(rec, p.k, float_unit(p.k->type)),
            view_of(rec, p.v, float_unit(p.v->type)),
            p.mask ? view_of(rec, p.mask, float_unit(p.mask->type)) : View{},
            o_off,
            u32(p.n_q),
            u32(p.n_kv),
            u32(p.group),
            u32(p.batch / p.kv_batch),
            p.mask ? u32(p.mask->ne[2] | (p.mask->ne[3] << 16)) : 0,
            n_head_log2,
            attention.scale,
            attention.logit_softcap,
            max_bias > 0.0f ? static_cast<float>(-static_cast<double>(max_bias) / n_head_log2) : 0.0f,
            u32(split.keys_per_split),
            p.sinks ? view_of(rec, p.sinks, 4).offset : 0};
}

void record_flash_attn(Recorder & rec, const ggml_tensor * node) {
    if (ggml_nelements(node) == 0) return;
    const Problem p(node, rec.device());
    const Split split = split_of(p);
    const bool splits = split.splits > 1;
    const uint32_t o_off = view_of(rec, node, 4).offset;
    const Arg q_arg = rec.arg(p.q, false);
    Arg out = splits ? rec.workspace() : rec.arg(node, true);
    out.written = true;
    const std::string name = std::string("flash_attn_") + float_type_name(p.k->type) + "_" +
                             float_type_name(p.v->type) + "_" +
                             (p.mask ? float_type_name(p.mask->type) : "f16");
    const Arg sinks_arg = p.sinks ? rec.arg(p.sinks, false) : q_arg;  // bound, read with sinks only
    const bool softcap = core::params<ggml_ext_flash_attn_ext_params>(node).logit_softcap != 0.0f;
    rec.dispatch(name,
                 {q_arg, rec.arg(p.k, false), rec.arg(p.v, false), p.mask ? rec.arg(p.mask, false) : q_arg,
                  out, sinks_arg},
                 attention_push(rec, node, p, split, splits ? 0 : o_off),
                 Groups{u32(p.row_blocks()), u32(p.kv_heads), u32(p.batch * split.splits)},
                 {u32(p.d), u32(p.dv), p.mask ? 1u : 0u, softcap ? 1u : 0u, splits ? 1u : 0u,
                  u32(p.tile.rows * kLanes), u32(p.tile.keys), p.sinks ? 1u : 0u});
    if (!splits) return;

    const uint64_t rows = p.batch * p.n_q * p.heads;
    struct {
        uint32_t o_off, n_rows, n_splits, dv, heads, sinks_off;
    } combine{o_off,     u32(rows),    u32(split.splits),
              u32(p.dv), u32(p.heads), p.sinks ? view_of(rec, p.sinks, 4).offset : 0};
    Arg parts = rec.workspace();
    parts.written = false;
    rec.dispatch("flash_attn_combine", {parts, rec.arg(node, true), sinks_arg}, combine,
                 rec.groups_for(rows * kCombineLocal, kCombineLocal), {p.sinks ? 1u : 0u});
}

// ---- LIGHTNING_INDEXER, DSV4_HC_COMB, DSV4_HC_PRE, DSV4_HC_POST -----------------------------------

constexpr uint32_t kDeepSeekLocalSize = 64;  // lightning_indexer.comp and dsv4_hc.comp local_size_x

bool f32_input(const Device & device, const ggml_tensor * t) {
    return t && t->type == GGML_TYPE_F32 && float_tensor(device, t);
}
bool f32_result(const Device & device, const ggml_tensor * node) {
    return f32_input(device, node) && ggml_is_contiguous(node);
}

// q, w F32, k F32/F16, mask F16, any strides (lightning_indexer.comp).
bool supports_lightning_indexer(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *q = node->src[0], *k = node->src[1], *w = node->src[2], *mask = node->src[3];
    return f32_result(device, node) && f32_input(device, q) && f32_input(device, w) && k && kv_type(k) &&
           float_tensor(device, k) && mask && mask->type == GGML_TYPE_F16 && float_tensor(device, mask) &&
           mask->ne[3] > 0;
}

void record_lightning_indexer(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *q = node->src[0], *k = node->src[1], *w = node->src[2], *mask = node->src[3];
    if (ggml_nelements(node) == 0) return;
    struct {
        Shape ne;
        View q, k, w, m;
        uint32_t d_off, n_embd, n_head, mask_b;
    } push{shape_of(node),
           view_of(rec, q, sizeof(float)),
           view_of(rec, k, float_unit(k->type)),
           view_of(rec, w, sizeof(float)),
           view_of(rec, mask, 2),
           rec.element_offset(node, sizeof(float)),
           u32(static_cast<uint64_t>(q->ne[0])),
           u32(static_cast<uint64_t>(q->ne[1])),
           u32(static_cast<uint64_t>(mask->ne[3]))};
    rec.dispatch(
        std::string("lightning_indexer_") + float_type_name(k->type),
        {rec.arg(q, false), rec.arg(k, false), rec.arg(w, false), rec.arg(mask, false), rec.arg(node, true)},
        push, rec.groups_for(static_cast<uint64_t>(ggml_nelements(node)), kDeepSeekLocalSize));
}

int dsv4_inputs(ggml_op op) { return op == GGML_OP_DSV4_HC_COMB ? 3 : op == GGML_OP_DSV4_HC_PRE ? 2 : 4; }

// Every input F32 of any strides, the result contiguous F32 (dsv4_hc.comp).
bool supports_dsv4_hc(const Device & device, const ggml_tensor * node) {
    if (!f32_result(device, node)) return false;
    for (int i = 0; i < dsv4_inputs(node->op); ++i)
        if (!f32_input(device, node->src[i])) return false;
    return true;
}

void record_dsv4_hc(Recorder & rec, const ggml_tensor * node) {
    if (ggml_nelements(node) == 0) return;
    const int n_inputs = dsv4_inputs(node->op);
    struct {
        Shape ne;
        View in[4];
        uint32_t d_off;
        float eps;
        uint32_t n_iter;
    } push{};
    push.ne = shape_of(node);
    std::vector<Arg> args;
    for (int i = 0; i < 4; ++i) {
        const ggml_tensor * in = node->src[std::min(i, n_inputs - 1)];  // unused bindings repeat one
        push.in[i] = view_of(rec, in, sizeof(float));
        args.push_back(rec.arg(in, false));
    }
    args.push_back(rec.arg(node, true));
    push.d_off = rec.element_offset(node, sizeof(float));
    uint64_t invocations = static_cast<uint64_t>(ggml_nelements(node));
    const char * shader = "dsv4_hc_post";
    if (node->op == GGML_OP_DSV4_HC_COMB) {
        const auto comb = core::params<ggml_ext_dsv4_hc_comb_params>(node);
        push.eps = comb.eps;
        push.n_iter = static_cast<uint32_t>(std::max(comb.n_iter, 0));
        invocations = static_cast<uint64_t>(node->ne[2]);
        shader = "dsv4_hc_comb";
    } else if (node->op == GGML_OP_DSV4_HC_PRE) {
        push.ne.ne[2] = u32(static_cast<uint64_t>(node->src[0]->ne[1]));  // dsv4_hc.comp reads x's hc there
        shader = "dsv4_hc_pre";
    }
    rec.dispatch(shader, args, push, rec.groups_for(invocations, kDeepSeekLocalSize));
}

}  // namespace

namespace kernels {
const Kernel flash_attn_ext =
    vulkan_kernel<supports_flash_attn, workspace_flash_attn, record_flash_attn>("vulkan.flash_attn_ext");
const Kernel lightning_indexer =
    vulkan_kernel<supports_lightning_indexer, nullptr, record_lightning_indexer>("vulkan.lightning_indexer");
const Kernel dsv4_hc = vulkan_kernel<supports_dsv4_hc, nullptr, record_dsv4_hc>("vulkan.dsv4_hc");
}  // namespace kernels

}  // namespace ggx::vulkan
