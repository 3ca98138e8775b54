// Vulkan kernels of the reduction ops: SUM_ROWS, MEAN and SUM (sum.comp, F32/F16/BF16, any strides,
// one workgroup per reduced range; SUM of many elements in two passes through the workspace) and
// ARGMAX (the first maximum of each row of an F32 matrix of any strides, as I32; argmax.comp),
// CUMSUM (cumsum.comp, F32/F16/BF16, any strides, one workgroup per row), COUNT_EQUAL (F32/F16/BF16
// by value and I32 by bits, any strides, into I64; count_equal.comp, in two passes through the
// workspace above one chunk) and ARGSORT / TOP_K (F32/F16/BF16, any strides; a bitonic sort of the
// CPU's keys, argsort.comp in shared memory and argsort_step.comp through the workspace for rows
// longer than a block).
#include <algorithm>
#include <bit>
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

// SUM of more than one chunk sums chunks into F32 partial sums in the workspace first, then those
// (COUNT_EQUAL likewise, with U32 partial counts).
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

// ---- CUMSUM ----------------------------------------------------------------------------------------

bool supports_cumsum(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && a->type == node->type && ggml_are_same_shape(a, node) && float_tensor(device, a) &&
           float_tensor(device, node);
}

void record_cumsum(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const uint64_t rows = static_cast<uint64_t>(ggml_nrows(a));
    if (rows == 0 || a->ne[0] == 0) return;
    const uint32_t unit = float_unit(a->type);
    struct {
        Shape ne;
        View a, d;
    } push{shape_of(a), view_of(rec, a, unit), view_of(rec, node, unit)};
    constexpr uint64_t kPart = 4;  // cumsum.comp PART
    const uint32_t local_size = block_size((static_cast<uint64_t>(a->ne[0]) + kPart - 1) / kPart);
    rec.dispatch(std::string("cumsum_") + float_type_name(a->type), {rec.arg(a, false), rec.arg(node, true)},
                 push, unit_groups(rec, rows, local_size), {local_size});
}

// ---- COUNT_EQUAL -----------------------------------------------------------------------------------

const char * count_equal_type(ggml_type type) {
    return type == GGML_TYPE_I32 ? "i32" : float_type_name(type);
}

bool supports_count_equal(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    if (!a || !b || b->type != a->type || !ggml_are_same_shape(a, b) || node->type != GGML_TYPE_I64 ||
        ggml_nelements(node) != 1 || !addressable(device, node, 4))
        return false;
    if (a->type == GGML_TYPE_I32)
        return addressable(device, a, 4) && addressable(device, b, 4) && small_enough(a);
    return float_tensor(device, a) && float_tensor(device, b);
}

size_t count_equal_workspace(const ggml_tensor * node) {
    const uint32_t partials = sum_partials(node);
    return partials > 1 ? partials * sizeof(uint32_t) : 0;
}

void record_count_equal(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    const uint32_t n = static_cast<uint32_t>(ggml_nelements(a));
    const uint32_t unit = a->type == GGML_TYPE_I32 ? 4 : float_unit(a->type);
    const uint32_t partials = sum_partials(node);
    struct {
        Shape ne;
        View a, b;
        uint32_t d_offset, d_stride, len;
    } push{shape_of(a), view_of(rec, a, unit), view_of(rec, b, unit), rec.element_offset(node, 4), 2, n};
    const std::string shader = std::string("count_equal_") + count_equal_type(a->type);
    const Arg d = rec.arg(node, true);
    if (partials == 1) {
        const uint32_t local_size = block_size(n);
        rec.dispatch(shader, {rec.arg(a, false), rec.arg(b, false), d}, push, unit_groups(rec, 1, local_size),
                     {local_size});
        return;
    }
    Arg scratch = rec.workspace();
    scratch.written = true;
    push.d_offset = 0;
    push.d_stride = 1;
    push.len = (n + partials - 1) / partials;
    rec.dispatch(shader, {rec.arg(a, false), rec.arg(b, false), scratch}, push,
                 unit_groups(rec, partials, block_size(push.len)), {block_size(push.len)});
    scratch.written = false;
    push.ne = Shape{{partials, 1, 1, 1}};
    push.d_offset = rec.element_offset(node, 4);
    push.d_stride = 2;
    push.len = partials;
    rec.dispatch("count_equal_total", {scratch, d}, push, unit_groups(rec, 1, block_size(partials)),
                 {block_size(partials)});
}

// ---- ARGSORT, TOP_K --------------------------------------------------------------------------------

// A row is sorted as P keys (its length rounded up to a power of two) of 8 bytes, in blocks of at
// most kMaxBlock keys in shared memory (argsort.comp L: 16 KiB, the least maxComputeSharedMemorySize
// Vulkan allows); longer rows keep their keys in the workspace between the passes.
constexpr uint64_t kMaxBlock = 2048;
constexpr uint64_t kKeyBytes = 8;
constexpr uint32_t kStepLocalSize = 256;  // argsort_step.comp local_size_x

uint64_t sort_keys(const ggml_tensor * node) {
    return std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(node->src[0]->ne[0], 1)));
}

size_t sort_workspace(const ggml_tensor * node) {
    const uint64_t keys = sort_keys(node);
    if (keys <= kMaxBlock) return 0;
    return static_cast<size_t>(keys * static_cast<uint64_t>(ggml_nrows(node->src[0])) * kKeyBytes);
}

bool supports_sort(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (!a || node->type != GGML_TYPE_I32 || node->ne[1] != a->ne[1] || node->ne[2] != a->ne[2] ||
        node->ne[3] != a->ne[3] || !float_tensor(device, a) || !addressable(device, node, 4) ||
        !small_enough(node))
        return false;
    if (node->op == GGML_OP_TOP_K ? node->ne[0] < 1 || node->ne[0] > a->ne[0] : node->ne[0] != a->ne[0])
        return false;
    // The keys of every row index with 32 bits, in one binding.
    const uint64_t keys = sort_keys(node) * static_cast<uint64_t>(ggml_nrows(a));
    return keys <= UINT32_MAX && sort_workspace(node) + device.limits().storage_offset_alignment <=
                                     device.limits().max_storage_range;
}

void record_sort(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const uint64_t rows = static_cast<uint64_t>(ggml_nrows(a));
    if (rows == 0 || a->ne[0] == 0) return;
    const uint32_t keys = static_cast<uint32_t>(sort_keys(node));
    const uint32_t block = static_cast<uint32_t>(std::min(uint64_t{keys}, kMaxBlock));
    const bool descending = node->op == GGML_OP_TOP_K ||
                            core::params<ggml_ext_argsort_params>(node).order == GGML_SORT_ORDER_DESC;
    struct {
        Shape ne;
        View a, d;
        uint32_t n_keys, top, k_first, k_last, descending, from_source, to_output;
    } push{shape_of(a),
           view_of(rec, a, float_unit(a->type)),
           view_of(rec, node, 4),
           keys,
           static_cast<uint32_t>(node->ne[0]),
           2,
           block,
           descending ? 1u : 0u,
           1,
           1};
    const std::string shader = std::string("argsort_") + float_type_name(a->type);
    const Arg src = rec.arg(a, false), dst = rec.arg(node, true);
    const uint32_t local_size = block_size(block / 2);
    const std::vector<uint32_t> constants{local_size, block};
    const Groups blocks = unit_groups(rec, rows * (keys / block), local_size);
    if (keys == block) {  // the whole row in one workgroup; the workspace binding is a placeholder
        rec.dispatch(shader, {src, dst, dst}, push, blocks, constants);
        return;
    }
    Arg scratch = rec.workspace();
    scratch.written = true;
    push.to_output = 0;
    rec.dispatch(shader, {src, dst, scratch}, push, blocks, constants);
    push.from_source = 0;
    struct {
        uint32_t n_keys, pairs, j, k;
    } step{keys, static_cast<uint32_t>(rows * keys / 2), 0, 0};
    for (uint32_t k = 2 * block; k <= keys; k *= 2) {
        step.k = k;
        for (step.j = k / 2; step.j >= block; step.j /= 2)
            rec.dispatch("argsort_step", {scratch}, step, rec.groups_for(step.pairs, kStepLocalSize));
        push.k_first = push.k_last = k;
        push.to_output = k == keys ? 1 : 0;
        rec.dispatch(shader, {src, dst, scratch}, push, blocks, constants);
    }
}

// ---- CROSS_ENTROPY_LOSS, CROSS_ENTROPY_LOSS_BACK (cross_entropy.comp) ------------------------------------

bool back_loss(const ggml_tensor * node) { return node->op == GGML_OP_CROSS_ENTROPY_LOSS_BACK; }

bool supports_cross_entropy(const Device & device, const ggml_tensor * node) {
    const bool back = back_loss(node);
    const ggml_tensor *logits = node->src[back ? 1 : 0], *labels = node->src[back ? 2 : 1];
    if (!logits || !labels || !float_tensor(device, logits) || labels->type != logits->type ||
        !float_tensor(device, labels) || !ggml_are_same_shape(logits, labels) || node->type != logits->type ||
        !float_tensor(device, node))
        return false;
    if (!back) return ggml_nelements(node) == 1;
    const ggml_tensor * grad = node->src[0];
    return grad && grad->type == logits->type && float_tensor(device, grad) && ggml_nelements(grad) == 1 &&
           ggml_are_same_shape(node, logits);
}

size_t cross_entropy_workspace(const ggml_tensor * node) {
    return back_loss(node) ? 0 : static_cast<size_t>(ggml_nrows(node->src[0])) * sizeof(float);
}

void record_cross_entropy(Recorder & rec, const ggml_tensor * node) {
    const bool back = back_loss(node);
    const ggml_tensor *logits = node->src[back ? 1 : 0], *labels = node->src[back ? 2 : 1];
    const ggml_tensor * grad = back ? node->src[0] : logits;  // bound, read by BACK only
    const uint32_t unit = float_unit(logits->type);
    const uint64_t rows = static_cast<uint64_t>(ggml_nrows(logits));
    // The loss of no elements: sum.comp over nothing stores 0 / divisor.
    const float divisor = rows > 0 ? -static_cast<float>(rows) : 1.0f;
    const SumPass empty{.shader = sum_shader(logits->type, node->type),
                        .a = rec.arg(logits, false),
                        .d = rec.arg(node, true),
                        .ne = shape_of(logits),
                        .va = view_of(rec, logits, unit),
                        .vd = view_of(rec, node, unit),
                        .len = 0,
                        .divisor = divisor};
    if (ggml_nelements(logits) == 0) {
        if (!back) record_sum_pass(rec, empty);
        return;
    }
    Arg parts = back ? rec.arg(node, false) : rec.workspace();  // BACK: a placeholder binding
    parts.written = !back;
    struct {
        Shape ne;
        View x, l, d;
        uint32_t grad_off;
        float rows;
    } push{shape_of(logits),         view_of(rec, logits, unit),      view_of(rec, labels, unit),
           view_of(rec, node, unit), view_of(rec, grad, unit).offset, static_cast<float>(rows)};
    const uint32_t local_size = block_size(static_cast<uint64_t>(logits->ne[0]));
    rec.dispatch(
        std::string("cross_entropy_") + float_type_name(logits->type),
        {rec.arg(logits, false), rec.arg(labels, false), rec.arg(grad, false), parts, rec.arg(node, back)},
        push, unit_groups(rec, rows, local_size), {local_size, back ? 1u : 0u});
    if (back) return;
    parts.written = false;
    SumPass total = empty;
    total.shader = sum_shader(GGML_TYPE_F32, node->type);
    total.a = parts;
    total.ne = Shape{{static_cast<uint32_t>(rows), 1, 1, 1}};
    total.va = kPartials;
    total.len = static_cast<uint32_t>(rows);
    record_sum_pass(rec, total);
}

}  // namespace

namespace kernels {
const Kernel sum = vulkan_kernel<supports_sum, sum_workspace, record_sum>("vulkan.sum");
const Kernel sum_rows = vulkan_kernel<supports_sum_rows, nullptr, record_sum_rows>("vulkan.sum_rows");
const Kernel argmax = vulkan_kernel<supports_argmax, nullptr, record_argmax>("vulkan.argmax");
const Kernel cumsum = vulkan_kernel<supports_cumsum, nullptr, record_cumsum>("vulkan.cumsum");
const Kernel count_equal =
    vulkan_kernel<supports_count_equal, count_equal_workspace, record_count_equal>("vulkan.count_equal");
const Kernel argsort = vulkan_kernel<supports_sort, sort_workspace, record_sort>("vulkan.argsort");
const Kernel cross_entropy =
    vulkan_kernel<supports_cross_entropy, cross_entropy_workspace, record_cross_entropy>(
        "vulkan.cross_entropy");
}  // namespace kernels

}  // namespace ggx::vulkan
