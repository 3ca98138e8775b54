// Vulkan kernels of the element-wise ops: ADD/ADD1/SUB/MUL/DIV/SILU_BACK (binary.comp), ADD_ID
// (add_id.comp), ACC/SET (cpy.comp, then binary.comp for ACC), OPT_STEP_SGD/ADAMW (opt_step.comp),
// SCALE/SQR/SQRT/CLAMP/LOG/SIN/COS/LEAKY_RELU/FILL/UNARY (map.comp) and GLU (glu.comp), for F32, F16
// and BF16 tensors of any strides.
#include <algorithm>
#include <array>
#include <iterator>
#include <string>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

constexpr uint32_t kLocalSize = 256;
constexpr int64_t kRun = 8;  // elements per invocation (RUN in common.glsl)

Groups element_groups(const Recorder & rec, const ggml_tensor * node) {
    return rec.groups_for((ggml_nelements(node) + kRun - 1) / kRun, kLocalSize);
}

bool same_float_shape(const Device & device, const ggml_tensor * node, const ggml_tensor * src) {
    return src && src->type == node->type && ggml_are_same_shape(node, src) && float_tensor(device, node) &&
           float_tensor(device, src);
}

// ---- binary ----------------------------------------------------------------------------------------

bool supports_binary(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * b = node->src[1];
    return same_float_shape(device, node, node->src[0]) && b &&
           (b->type == GGML_TYPE_F32 || b->type == node->type) && ggml_can_repeat(b, node) &&
           float_tensor(device, b);
}

// SILU_BACK pairs dy and x of one shape and type.
bool supports_silu_back(const Device & device, const ggml_tensor * node) {
    return same_float_shape(device, node, node->src[0]) && same_float_shape(device, node, node->src[1]);
}

uint32_t binary_op(ggml_op op) {
    switch (op) {
        case GGML_OP_SUB:
            return 1;
        case GGML_OP_MUL:
            return 2;
        case GGML_OP_DIV:
            return 3;
        case GGML_OP_SILU_BACK:
            return 4;
        default:  // ADD, and ADD1 (its one-element b repeats over a)
            return 0;
    }
}

void record_binary(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    struct {
        Shape ne, b_ne;
        View a, b, d;
    } push{shape_of(node), shape_of(b), view_of(rec, a, float_unit(a->type)),
           view_of(rec, b, float_unit(b->type)), view_of(rec, node, float_unit(node->type))};
    const std::string type = float_type_name(node->type);
    rec.dispatch("binary_" + type + "_" + float_type_name(b->type),
                 {rec.arg(a, false), rec.arg(b, false), rec.arg(node, true)}, push, element_groups(rec, node),
                 {binary_op(node->op)});
}

// ---- ADD_ID: a + b[:, ids[i1, i2]] -------------------------------------------------------------------

bool supports_add_id(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1], *ids = node->src[2];
    return same_float_shape(device, node, a) && b && ids &&
           (b->type == GGML_TYPE_F32 || b->type == a->type) && float_tensor(device, b) &&
           ids->type == GGML_TYPE_I32 && raw_tensor(device, ids) && b->ne[0] == a->ne[0] &&
           ids->ne[0] == a->ne[1] && ids->ne[1] == a->ne[2];
}

void record_add_id(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1], *ids = node->src[2];
    struct {
        Shape ne;
        View a, b, ids, d;
        uint32_t b_rows;
    } push{shape_of(node),
           view_of(rec, a, float_unit(a->type)),
           view_of(rec, b, float_unit(b->type)),
           view_of(rec, ids, 4),
           view_of(rec, node, float_unit(node->type)),
           static_cast<uint32_t>(b->ne[1])};
    rec.dispatch(std::string("add_id_") + float_type_name(a->type) + "_" + float_type_name(b->type),
                 {rec.arg(a, false), rec.arg(b, false), rec.arg(ids, false), rec.arg(node, true)}, push,
                 element_groups(rec, node));
}

// ---- OPT_STEP_SGD, OPT_STEP_ADAMW: in place on F32 w (and AdamW's moments) ----------------------------

// Whether node is a view of all of a's storage, starting where a starts (an in-place result).
bool views(const ggml_tensor * node, const ggml_tensor * a) {
    const ggml_tensor * owner = a->view_src ? a->view_src : a;
    return node->view_src == owner && node->view_offs == (a->view_src ? a->view_offs : 0);
}

bool supports_opt_step(const Device & device, const ggml_tensor * node) {
    const bool adamw = node->op == GGML_OP_OPT_STEP_ADAMW;
    const int n_src = adamw ? 5 : 3;
    const ggml_tensor * hyper = node->src[n_src - 1];
    for (int i = 0; i + 1 < n_src; ++i) {
        const ggml_tensor * t = node->src[i];
        if (!t || t->type != GGML_TYPE_F32 || !float_tensor(device, t) || !ggml_are_same_shape(t, node))
            return false;
    }
    return node->type == GGML_TYPE_F32 && views(node, node->src[0]) && hyper &&
           hyper->type == GGML_TYPE_F32 && ggml_is_contiguous(hyper) && float_tensor(device, hyper) &&
           ggml_nelements(hyper) == (adamw ? 7 : 2);
}

void record_opt_step(Recorder & rec, const ggml_tensor * node) {
    const bool adamw = node->op == GGML_OP_OPT_STEP_ADAMW;
    const ggml_tensor *w = node->src[0], *g = node->src[1];
    const ggml_tensor *m = adamw ? node->src[2] : w, *v = adamw ? node->src[3] : w;  // bound, unread by SGD
    const ggml_tensor * hyper = node->src[adamw ? 4 : 2];
    struct {
        Shape ne;
        View w, g, m, v;
        uint32_t hyper_off;
    } push{shape_of(node),     view_of(rec, w, 4), view_of(rec, g, 4),
           view_of(rec, m, 4), view_of(rec, v, 4), view_of(rec, hyper, 4).offset};
    rec.dispatch(
        "opt_step",
        {rec.arg(w, true), rec.arg(g, false), rec.arg(m, adamw), rec.arg(v, adamw), rec.arg(hyper, false)},
        push, element_groups(rec, node), {adamw ? 1u : 0u});
}

// ---- ACC, SET: node is a (copied first unless in place), then b is added to (ACC) or written over
// (SET) the region of node with b's shape, strides nb1..nb3 and byte offset -------------------------

bool supports_acc_set(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    if (!a || !b || !ggml_are_same_shape(a, node) || a->type != node->type || b->type != a->type ||
        !ggml_is_contiguous(a) || !ggml_is_contiguous(node) || !raw_tensor(device, a) ||
        !raw_tensor(device, b) || !raw_tensor(device, node))
        return false;
    return node->op == GGML_OP_SET || node->type == GGML_TYPE_F32;
}

void record_acc_set(Recorder & rec, const ggml_tensor * node) {
    ggml_tensor *a = node->src[0], *b = node->src[1];
    if (node->data != a->data) {
        ggml_tensor whole = *node;
        whole.op = GGML_OP_CPY;
        whole.src[0] = a;
        kernels::record_copy(rec, &whole);
    }
    if (ggml_nelements(b) == 0) return;
    const auto p = core::params<ggml_ext_acc_params>(node);
    ggml_tensor region = *node;  // the view of node that b covers
    std::copy(std::begin(b->ne), std::end(b->ne), region.ne);
    region.nb[1] = static_cast<size_t>(p.nb1);
    region.nb[2] = static_cast<size_t>(p.nb2);
    region.nb[3] = static_cast<size_t>(p.nb3);
    region.data = static_cast<char *>(node->data) + p.offset;
    region.view_src = node->view_src ? node->view_src : const_cast<ggml_tensor *>(node);
    ggml_tensor op = region;
    op.op = node->op == GGML_OP_SET ? GGML_OP_CPY : GGML_OP_ADD;
    op.src[0] = node->op == GGML_OP_SET ? b : &region;
    op.src[1] = b;
    if (node->op == GGML_OP_SET) return kernels::record_copy(rec, &op);
    record_binary(rec, &op);
}

// ---- maps of src0 ----------------------------------------------------------------------------------

bool supports_map(const Device & device, const ggml_tensor * node) {
    return same_float_shape(device, node, node->src[0]);
}

// map.comp's operation numbers of the ops that are not unary sub-ops.
constexpr uint32_t kScaleShader = 0, kSqrShader = 1, kSqrtShader = 2, kClampShader = 3, kLogShader = 10,
                   kSinShader = 11, kCosShader = 12, kLeakyReluShader = 13, kFillShader = 14;

// The shader operation of every unary op, listed in ggml_unary_op order so that the static_assert
// below proves each op has exactly one entry: a new unary op fails to compile until it is listed.
struct SubOpShader {
    int32_t op;
    uint32_t shader;
};
constexpr SubOpShader unary_shaders[] = {
    {GGML_UNARY_OP_ABS, 15},         {GGML_UNARY_OP_SGN, 16},      {GGML_UNARY_OP_NEG, 17},
    {GGML_UNARY_OP_STEP, 18},        {GGML_UNARY_OP_TANH, 9},      {GGML_UNARY_OP_ELU, 19},
    {GGML_UNARY_OP_RELU, 4},         {GGML_UNARY_OP_SIGMOID, 8},   {GGML_UNARY_OP_GELU, 6},
    {GGML_UNARY_OP_GELU_QUICK, 7},   {GGML_UNARY_OP_SILU, 5},      {GGML_UNARY_OP_HARDSWISH, 20},
    {GGML_UNARY_OP_HARDSIGMOID, 21}, {GGML_UNARY_OP_EXP, 22},      {GGML_UNARY_OP_EXPM1, 23},
    {GGML_UNARY_OP_SOFTPLUS, 24},    {GGML_UNARY_OP_GELU_ERF, 25}, {GGML_UNARY_OP_XIELU, 26},
    {GGML_UNARY_OP_FLOOR, 27},       {GGML_UNARY_OP_CEIL, 28},     {GGML_UNARY_OP_ROUND, 29},
    {GGML_UNARY_OP_TRUNC, 30},
};
static_assert(lists_every_value_in_order(unary_shaders, GGML_UNARY_OP_COUNT),
              "the Vulkan unary table must list every ggml_unary_op once, in order");

// glu.comp's activation of every GLU op, in ggml_glu_op order.
constexpr SubOpShader glu_shaders[] = {
    {GGML_GLU_OP_REGLU, 0},      {GGML_GLU_OP_GEGLU, 1},     {GGML_GLU_OP_SWIGLU, 2},
    {GGML_GLU_OP_SWIGLU_OAI, 3}, {GGML_GLU_OP_GEGLU_ERF, 4}, {GGML_GLU_OP_GEGLU_QUICK, 5},
};
static_assert(lists_every_value_in_order(glu_shaders, GGML_GLU_OP_COUNT),
              "the Vulkan GLU table must list every ggml_glu_op once, in order");

// The shader operation of sub-op value op in table, or nullptr when op is not one of its values.
template <size_t N>
const uint32_t * shader_of(const SubOpShader (&table)[N], int32_t op) {
    if (op < 0 || static_cast<size_t>(op) >= N) return nullptr;
    return &table[op].shader;
}

bool supports_unary(const Device & device, const ggml_tensor * node) {
    return supports_map(device, node) &&
           shader_of(unary_shaders, core::params<ggml_ext_unary_params>(node).op);
}

uint32_t map_op(const ggml_tensor * node) {
    switch (node->op) {
        case GGML_OP_SCALE:
            return kScaleShader;
        case GGML_OP_SQR:
            return kSqrShader;
        case GGML_OP_SQRT:
            return kSqrtShader;
        case GGML_OP_CLAMP:
            return kClampShader;
        case GGML_OP_LOG:
            return kLogShader;
        case GGML_OP_SIN:
            return kSinShader;
        case GGML_OP_COS:
            return kCosShader;
        case GGML_OP_LEAKY_RELU:
            return kLeakyReluShader;
        case GGML_OP_FILL:
            return kFillShader;
        default:
            break;
    }
    const int32_t op = core::params<ggml_ext_unary_params>(node).op;
    if (const uint32_t * shader = shader_of(unary_shaders, op)) return *shader;
    throw Error("unknown unary op " + std::to_string(op) + " (the Vulkan backend has no shader for it)");
}

// The float parameters of SCALE (scale, bias), CLAMP (min, max), LEAKY_RELU (slope), FILL (value)
// and XIELU (alpha_n, alpha_p, beta, eps); zeros for the other maps.
std::array<float, 4> map_params(const ggml_tensor * node) {
    switch (node->op) {
        case GGML_OP_SCALE: {
            const auto p = core::params<ggml_ext_scale_params>(node);
            return {p.scale, p.bias};
        }
        case GGML_OP_CLAMP: {
            const auto p = core::params<ggml_ext_clamp_params>(node);
            return {p.min, p.max};
        }
        case GGML_OP_LEAKY_RELU:
            return {core::params<ggml_ext_leaky_relu_params>(node).negative_slope};
        case GGML_OP_FILL:
            return {core::params<ggml_ext_fill_params>(node).c};
        case GGML_OP_UNARY: {
            const auto p = core::params<ggml_ext_unary_params>(node);
            return {p.alpha_n, p.alpha_p, p.beta, p.eps};
        }
        default:
            return {};
    }
}

void record_map(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const uint32_t unit = float_unit(node->type);
    struct {
        Shape ne;
        View a, d;
        std::array<float, 4> p;
    } push{shape_of(node), view_of(rec, a, unit), view_of(rec, node, unit), map_params(node)};
    rec.dispatch(std::string("map_") + float_type_name(node->type), {rec.arg(a, false), rec.arg(node, true)},
                 push, element_groups(rec, node), {map_op(node)});
}

// ---- GLU -------------------------------------------------------------------------------------------

bool supports_glu(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    if (!a || a->type != node->type || !float_tensor(device, a) || !float_tensor(device, node) ||
        !shader_of(glu_shaders, core::params<ggml_ext_glu_params>(node).op))
        return false;
    if (b) return same_float_shape(device, node, a) && same_float_shape(device, node, b);
    return a->ne[0] == 2 * node->ne[0] && a->ne[1] == node->ne[1] && a->ne[2] == node->ne[2] &&
           a->ne[3] == node->ne[3];
}

void record_glu(Recorder & rec, const ggml_tensor * node) {
    const auto glu = core::params<ggml_ext_glu_params>(node);
    const int32_t op = glu.op;
    const uint32_t * activation = shader_of(glu_shaders, op);
    if (!activation)
        throw Error("unknown GLU op " + std::to_string(op) + " (the Vulkan backend has no shader for it)");
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * g = node->src[1] ? node->src[1] : a;
    const uint32_t unit = float_unit(node->type);
    const uint32_t half = node->src[1] ? 0 : static_cast<uint32_t>(node->ne[0]);
    const bool swapped = glu.swapped != 0;
    struct {
        Shape ne;
        View x, g, d;
        uint32_t x_shift, g_shift;
        float alpha, limit;
    } push{shape_of(node),
           view_of(rec, a, unit),
           view_of(rec, g, unit),
           view_of(rec, node, unit),
           swapped ? half : 0,
           swapped ? 0 : half,
           glu.alpha,
           glu.limit};
    rec.dispatch(std::string("glu_") + float_type_name(node->type),
                 {rec.arg(a, false), rec.arg(g, false), rec.arg(node, true)}, push, element_groups(rec, node),
                 {*activation});
}

}  // namespace

namespace kernels {
const Kernel binary = vulkan_kernel<supports_binary, nullptr, record_binary>("vulkan.binary");
const Kernel silu_back = vulkan_kernel<supports_silu_back, nullptr, record_binary>("vulkan.silu_back");
const Kernel acc_set = vulkan_kernel<supports_acc_set, nullptr, record_acc_set>("vulkan.acc_set");
const Kernel add_id = vulkan_kernel<supports_add_id, nullptr, record_add_id>("vulkan.add_id");
const Kernel opt_step = vulkan_kernel<supports_opt_step, nullptr, record_opt_step>("vulkan.opt_step");
const Kernel map = vulkan_kernel<supports_map, nullptr, record_map>("vulkan.map");
const Kernel unary = vulkan_kernel<supports_unary, nullptr, record_map>("vulkan.unary");
const Kernel glu = vulkan_kernel<supports_glu, nullptr, record_glu>("vulkan.glu");
}  // namespace kernels

}  // namespace ggx::vulkan
