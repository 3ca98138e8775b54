// Vulkan kernel of FLASH_ATTN_EXT (flash_attn.comp): F32 q, F16/F32 K and V (heads and batches
// broadcast), optional F16/F32 mask with ALiBi slopes, logit softcap, any input strides, into the
// contiguous F32 [DV, H, n_q, B] result. When too few workgroups would cover the queries (decoding),
// the keys are split over more workgroups whose partial rows flash_attn_combine.comp merges.
#include <algorithm>
#include <string>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

// flash_attn.comp's tiles.
constexpr uint64_t kRows = 16;  // BR: query rows per workgroup
constexpr uint64_t kKeys = 32;  // BC: keys per tile
constexpr uint64_t kLanes = 8;  // LANES: invocations per row
// Key splits: enough workgroups for a large GPU, each with at least kMinSplitKeys keys.
constexpr uint64_t kTargetGroups = 128;
constexpr uint64_t kMinSplitKeys = 64;
constexpr uint64_t kMaxSplits = 64;  // flash_attn_combine.comp's LOCAL_SIZE
constexpr uint32_t kCombineLocal = 64;
constexpr int64_t kMaxPacked = 65535;  // the mask's ne2 and ne3 share a push-constant word

struct Problem {
    const ggml_tensor *q, *k, *v, *mask;
    uint64_t d, dv, n_q, n_kv, heads, kv_heads, batch, kv_batch, group;

    explicit Problem(const ggml_tensor * node)
        : q(node->src[0]),
          k(node->src[1]),
          v(node->src[2]),
          mask(node->src[3]),
          d(q->ne[0]),
          dv(v->ne[0]),
          n_q(q->ne[1]),
          n_kv(k->ne[1]),
          heads(q->ne[2]),
          kv_heads(k->ne[2]),
          batch(q->ne[3]),
          kv_batch(k->ne[3]),
          group(heads / kv_heads) {}

    uint64_t row_blocks() const { return (n_q * group + kRows - 1) / kRows; }
    uint64_t shared_bytes() const {
        return 4 *
               (kRows * (d + 1) + kKeys * (std::max(d, dv) + 1) + kRows * (kKeys + 1) + kRows * kLanes + 1);
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
    const uint64_t keys = ((p.n_kv + want - 1) / want + kKeys - 1) / kKeys * kKeys;
    return {keys, (p.n_kv + keys - 1) / keys};
}

bool kv_type(const ggml_tensor * t) { return t->type == GGML_TYPE_F32 || t->type == GGML_TYPE_F16; }

bool supports_shapes(const ggml_tensor * node) {
    const ggml_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2], *mask = node->src[3];
    if (!q || !k || !v || node->src[4] || q->type != GGML_TYPE_F32 || !kv_type(k) || !kv_type(v)) return false;
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
    for (int i = 0; i < 4; ++i) {
        if (node->src[i] && !float_tensor(device, node->src[i])) return false;
    }
    const Problem p(node);
    const Limits & limits = device.limits();
    return float_tensor(device, node) && p.shared_bytes() <= limits.max_shared_memory &&
           p.row_blocks() <= limits.max_workgroup_count[0] && p.kv_heads <= limits.max_workgroup_count[1] &&
           p.batch * split_of(p).splits <= limits.max_workgroup_count[2];
}

size_t workspace_flash_attn(const ggml_tensor * node) {
    const Problem p(node);
    const Split split = split_of(p);
    if (split.splits == 1) return 0;
    return split.splits * p.batch * p.n_q * p.heads * (p.dv + 2) * sizeof(float);
}

uint32_t u32(uint64_t x) { return static_cast<uint32_t>(x); }

// flash_attn.comp's push constants.
struct AttentionPush {
    View q, k, v, mask;
    uint32_t o_off, n_q, n_kv, group, kv_ratio, mask_repeat, n_head_log2;
    float scale, softcap, log2_m0;
    uint32_t keys_per_split;
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
            u32(split.keys_per_split)};
}

void record_flash_attn(Recorder & rec, const ggml_tensor * node) {
    if (ggml_nelements(node) == 0) return;
    const Problem p(node);
    const Split split = split_of(p);
    const bool splits = split.splits > 1;
    const uint32_t o_off = view_of(rec, node, 4).offset;
    const Arg q_arg = rec.arg(p.q, false);
    Arg out = splits ? rec.workspace() : rec.arg(node, true);
    out.written = true;
    const std::string name = std::string("flash_attn_") + float_type_name(p.k->type) + "_" +
                             float_type_name(p.v->type) + "_" +
                             (p.mask ? float_type_name(p.mask->type) : "f16");
    rec.dispatch(
        name, {q_arg, rec.arg(p.k, false), rec.arg(p.v, false), p.mask ? rec.arg(p.mask, false) : q_arg, out},
        attention_push(rec, node, p, split, splits ? 0 : o_off),
        Groups{u32(p.row_blocks()), u32(p.kv_heads), u32(p.batch * split.splits)},
        {u32(p.d), u32(p.dv), p.mask ? 1u : 0u, core::params<ggml_ext_flash_attn_ext_params>(node).logit_softcap != 0.0f ? 1u : 0u, splits ? 1u : 0u});
    if (!splits) return;

    const uint64_t rows = p.batch * p.n_q * p.heads;
    struct {
        uint32_t o_off, n_rows, n_splits, dv;
    } combine{o_off, u32(rows), u32(split.splits), u32(p.dv)};
    Arg parts = rec.workspace();
    parts.written = false;
    rec.dispatch("flash_attn_combine", {parts, rec.arg(node, true)}, combine,
                 rec.groups_for(rows * kCombineLocal, kCombineLocal));
}

}  // namespace

namespace kernels {
const Kernel flash_attn_ext =
    vulkan_kernel<supports_flash_attn, workspace_flash_attn, record_flash_attn>("vulkan.flash_attn_ext");
}  // namespace kernels

}  // namespace ggx::vulkan
