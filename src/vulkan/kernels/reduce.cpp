// Vulkan kernels of the reduction ops: SUM_ROWS, MEAN and SUM (sum.comp, F32/F16/BF16, any strides,
// one workgroup per reduced range; SUM of many elements in two passes through the workspace) and
// ARGMAX (the first maximum of each row of an F32 matrix of any strides, as I32; argmax.comp).
#include <algorithm>
#include <string>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

// ---- SUM_ROWS, MEAN, SUM ---------------------------------------------------------------------------

// A sum.comp dispatch: groups workgroups, each summing len consecutive logical elements of a tensor
// of shape ne into output element g of a tensor whose dims 1 and 2 are d_ne1, d_ne2.
struct SumPass {
    std::string shader;
    Arg a, d;
    Shape ne;
    View va, vd;
    uint32_t d_ne1 = 1, d_ne2 = 1, len = 0, groups = 1;
    float divisor = 1.0f;
};

void record_sum_pass(Recorder & rec, const SumPass & s) {
    struct {
        Shape ne;
        View a, d;
        uint32_t d_ne1, d_ne2, len;
        float divisor;
    } push{s.ne, s.va, s.vd, s.d_ne1, s.d_ne2, s.len, s.divisor};
    const uint32_t local_size = block_size(s.len);
    rec.dispatch(s.shader, {s.a, s.d}, push, unit_groups(rec, s.groups, local_size), {local_size});
}

std::string sum_shader(ggml_type a, ggml_type d) {
    return std::string("sum_") + float_type_name(a) + "_" + float_type_name(d);
}

bool supports_sum_rows(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && a->type == node->type && float_tensor(device, a) && float_tensor(device, node) &&
           node->ne[0] == 1 && node->ne[1] == a->ne[1] && node->ne[2] == a->ne[2] && node->ne[3] == a->ne[3];
}

void record_sum_rows(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const uint32_t rows = static_cast<uint32_t>(ggml_nrows(a));
    if (rows == 0) return;
    const uint32_t unit = float_unit(a->type);
    const float divisor = node->op == GGML_OP_MEAN ? static_cast<float>(a->ne[0]) : 1.0f;
    record_sum_pass(rec, {.shader = sum_shader(a->type, node->type),
                          .a = rec.arg(a, false),
                          .d = rec.arg(node, true),
                          .ne = shape_of(a),
                          .va = view_of(rec, a, unit),
                          .vd = view_of(rec, node, unit),
                          .d_ne1 = static_cast<uint32_t>(node->ne[1]),
                          .d_ne2 = static_cast<uint32_t>(node->ne[2]),
                          .len = static_cast<uint32_t>(a->ne[0]),
                          .groups = rows,
                          .divisor = divisor});
}

// SUM of more than one chunk sums chunks into F32 partial sums in the workspace first, then those.
constexpr uint64_t kSumChunk = 8192;
constexpr uint64_t kMaxPartials = 1024;
// The dense partial sums, seen as [n, 1, 1, 1] (read) or as [1, n, 1, 1] (written).
constexpr View kPartials{0, 1, 1, 1, 1};

uint32_t sum_partials(const ggml_tensor * node) {
    const uint64_t n = static_cast<uint64_t>(ggml_nelements(node->src[0]));
    return static_cast<uint32_t>(std::clamp<uint64_t>((n + kSumChunk - 1) / kSumChunk, 1, kMaxPartials));
}

bool supports_sum(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && a->type == node->type && float_tensor(device, a) && float_tensor(device, node) &&
           ggml_nelements(node) == 1;
}

size_t sum_workspace(const ggml_tensor * node) {
    const uint32_t partials = sum_partials(node);
    return partials > 1 ? partials * sizeof(float) : 0;
}

void record_sum(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const uint32_t n = static_cast<uint32_t>(ggml_nelements(a));
    const uint32_t unit = float_unit(a->type);
    const uint32_t partials = sum_partials(node);
    const SumPass whole{.shader = sum_shader(a->type, node->type),
                        .a = rec.arg(a, false),
                        .d = rec.arg(node, true),
                        .ne = shape_of(a),
                        .va = view_of(rec, a, unit),
                        .vd = view_of(rec, node, unit),
                        .len = n};
    if (partials == 1) {
        record_sum_pass(rec, whole);
        return;
    }
    Arg scratch = rec.workspace();
    scratch.written = true;
    SumPass chunks = whole;
    chunks.shader = sum_shader(a->type, GGML_TYPE_F32);
    chunks.d = scratch;
    chunks.vd = kPartials;
    chunks.d_ne1 = chunks.groups = partials;
    chunks.len = (n + partials - 1) / partials;
    record_sum_pass(rec, chunks);
    scratch.written = false;
    SumPass total = whole;
    total.shader = sum_shader(GGML_TYPE_F32, node->type);
    total.a = scratch;
    total.ne = Shape{{partials, 1, 1, 1}};
    total.va = kPartials;
    total.len = partials;
    record_sum_pass(rec, total);
}

// ---- ARGMAX ----------------------------------------------------------------------------------------

constexpr uint32_t kArgmaxLocalSize = 128;  // argmax.comp local_size_x

bool supports_argmax(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && a->type == GGML_TYPE_F32 && node->type == GGML_TYPE_I32 && a->ne[0] > 0 &&
           ggml_is_matrix(a) && node->ne[0] == a->ne[1] && ggml_nelements(node) == a->ne[1] &&
           float_tensor(device, a) && addressable(device, node, 4);
}

void record_argmax(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    struct {
        View a, d;
        uint32_t ne0, rows;
    } push{view_of(rec, a, 4), view_of(rec, node, 4), static_cast<uint32_t>(a->ne[0]),
           static_cast<uint32_t>(a->ne[1])};
    rec.dispatch("argmax", {rec.arg(a, false), rec.arg(node, true)}, push,
                 rec.groups_for(static_cast<uint64_t>(a->ne[1]) * kArgmaxLocalSize, kArgmaxLocalSize));
}

}  // namespace

namespace kernels {
const Kernel sum = vulkan_kernel<supports_sum, sum_workspace, record_sum>("vulkan.sum");
const Kernel sum_rows = vulkan_kernel<supports_sum_rows, nullptr, record_sum_rows>("vulkan.sum_rows");
const Kernel argmax = vulkan_kernel<supports_argmax, nullptr, record_argmax>("vulkan.argmax");
}  // namespace kernels

}  // namespace ggx::vulkan
