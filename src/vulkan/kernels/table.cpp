// The Vulkan kernel table and the helpers the kernel families share.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>
#include <limits>

#include "core/quant/iq_grids.h"
#include "vulkan/buffer.h"
#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

bool supports_nothing(const Device &, const ggml_tensor *) { return false; }
bool supports_any(const Device &, const ggml_tensor *) { return true; }
void record_nothing(Recorder &, const ggml_tensor *) {}
[[noreturn]] void record_unsupported(Recorder &, const ggml_tensor * node) {
    throw Error(std::string("the Vulkan backend has no kernel for ") + ggml_op_desc(node));
}

}  // namespace

namespace kernels {
const Kernel none = vulkan_kernel<supports_any, nullptr, record_nothing>("vulkan.none");
const Kernel unsupported = vulkan_kernel<supports_nothing, nullptr, record_unsupported>("vulkan.unsupported");
}  // namespace kernels

namespace {

struct Entry {
    ggml_op op;
    const Kernel * kernel;
};

// Listed in ggml_op order so that the static_assert below proves every op has exactly one entry: a
// new op fails to compile until it is listed (as kernels::unsupported if Vulkan lacks it).
constexpr Entry entries[] = {
    {GGML_OP_NONE, &kernels::none},
    {GGML_OP_DUP, &kernels::copy},
    {GGML_OP_ADD, &kernels::binary},
    {GGML_OP_ADD_ID, &kernels::add_id},
    {GGML_OP_ADD1, &kernels::binary},
    {GGML_OP_ACC, &kernels::acc_set},
    {GGML_OP_SUB, &kernels::binary},
    {GGML_OP_MUL, &kernels::binary},
    {GGML_OP_DIV, &kernels::binary},
    {GGML_OP_SQR, &kernels::map},
    {GGML_OP_SQRT, &kernels::map},
    {GGML_OP_LOG, &kernels::map},
    {GGML_OP_SIN, &kernels::map},
    {GGML_OP_COS, &kernels::map},
    {GGML_OP_SUM, &kernels::sum},
    {GGML_OP_SUM_ROWS, &kernels::sum_rows},
    {GGML_OP_CUMSUM, &kernels::cumsum},
    {GGML_OP_MEAN, &kernels::sum_rows},
    {GGML_OP_ARGMAX, &kernels::argmax},
    {GGML_OP_COUNT_EQUAL, &kernels::count_equal},
    {GGML_OP_REPEAT, &kernels::repeat},
    {GGML_OP_REPEAT_BACK, &kernels::repeat_back},
    {GGML_OP_CONCAT, &kernels::concat},
    {GGML_OP_SILU_BACK, &kernels::silu_back},
    {GGML_OP_NORM, &kernels::row_norm},
    {GGML_OP_RMS_NORM, &kernels::row_norm},
    {GGML_OP_RMS_NORM_BACK, &kernels::rms_norm_back},
    {GGML_OP_GROUP_NORM, &kernels::group_norm},
    {GGML_OP_L2_NORM, &kernels::row_norm},
    {GGML_OP_MUL_MAT, &kernels::mul_mat},
    {GGML_OP_MUL_MAT_ID, &kernels::mul_mat_id},
    {GGML_OP_OUT_PROD, &kernels::out_prod},
    {GGML_OP_SCALE, &kernels::map},
    {GGML_OP_SET, &kernels::acc_set},
    {GGML_OP_CPY, &kernels::copy},
    {GGML_OP_CONT, &kernels::copy},
    {GGML_OP_RESHAPE, &kernels::none},
    {GGML_OP_VIEW, &kernels::none},
    {GGML_OP_PERMUTE, &kernels::none},
    {GGML_OP_TRANSPOSE, &kernels::none},
    {GGML_OP_GET_ROWS, &kernels::get_rows},
    {GGML_OP_GET_ROWS_BACK, &kernels::get_rows_back},
    {GGML_OP_SET_ROWS, &kernels::set_rows},
    {GGML_OP_DIAG, &kernels::diag},
    {GGML_OP_DIAG_MASK_INF, &kernels::diag_mask},
    {GGML_OP_DIAG_MASK_ZERO, &kernels::diag_mask},
    {GGML_OP_SOFT_MAX, &kernels::soft_max},
    {GGML_OP_SOFT_MAX_BACK, &kernels::soft_max_back},
    {GGML_OP_ROPE, &kernels::rope},
    {GGML_OP_ROPE_BACK, &kernels::rope},
    {GGML_OP_CLAMP, &kernels::map},
    {GGML_OP_CONV_TRANSPOSE_1D, &kernels::conv_transpose},
    {GGML_OP_IM2COL, &kernels::im2col},
    {GGML_OP_IM2COL_BACK, &kernels::im2col_back},
    {GGML_OP_IM2COL_3D, &kernels::im2col},
    {GGML_OP_COL2IM_1D, &kernels::col2im_1d},
    {GGML_OP_CONV_2D, &kernels::conv},
    {GGML_OP_CONV_3D, &kernels::conv},
    {GGML_OP_CONV_2D_DW, &kernels::conv_2d_dw},
    {GGML_OP_CONV_TRANSPOSE_2D, &kernels::conv_transpose},
    {GGML_OP_POOL_1D, &kernels::pool},
    {GGML_OP_POOL_2D, &kernels::pool},
    {GGML_OP_POOL_2D_BACK, &kernels::pool_2d_back},
    {GGML_OP_UPSCALE, &kernels::upscale},
    {GGML_OP_PAD, &kernels::pad},
    {GGML_OP_PAD_REFLECT_1D, &kernels::pad_reflect_1d},
    {GGML_OP_ROLL, &kernels::roll},
    {GGML_OP_ARANGE, &kernels::arange},
    {GGML_OP_TIMESTEP_EMBEDDING, &kernels::timestep_embedding},
    {GGML_OP_ARGSORT, &kernels::argsort},
    {GGML_OP_TOP_K, &kernels::argsort},
    {GGML_OP_LEAKY_RELU, &kernels::map},
    {GGML_OP_TRI, &kernels::tri},
    {GGML_OP_FILL, &kernels::map},
    {GGML_OP_FLASH_ATTN_EXT, &kernels::flash_attn_ext},
    {GGML_OP_FLASH_ATTN_BACK, &kernels::unsupported},
    {GGML_OP_SSM_CONV, &kernels::ssm_conv},
    {GGML_OP_SSM_SCAN, &kernels::ssm_scan},
    {GGML_OP_WIN_PART, &kernels::win_part},
    {GGML_OP_WIN_UNPART, &kernels::win_unpart},
    {GGML_OP_GET_REL_POS, &kernels::get_rel_pos},
    {GGML_OP_ADD_REL_POS, &kernels::add_rel_pos},
    {GGML_OP_RWKV_WKV6, &kernels::linear_attention},
    {GGML_OP_GATED_LINEAR_ATTN, &kernels::linear_attention},
    {GGML_OP_RWKV_WKV7, &kernels::linear_attention},
    {GGML_OP_SOLVE_TRI, &kernels::solve_tri},
    {GGML_OP_GATED_DELTA_NET, &kernels::gated_delta_net},
    {GGML_OP_LIGHTNING_INDEXER, &kernels::lightning_indexer},
    {GGML_OP_DSV4_HC_COMB, &kernels::dsv4_hc},
    {GGML_OP_DSV4_HC_PRE, &kernels::dsv4_hc},
    {GGML_OP_DSV4_HC_POST, &kernels::dsv4_hc},
    {GGML_OP_UNARY, &kernels::unary},
    {GGML_OP_MAP_CUSTOM1, &kernels::unsupported},
    {GGML_OP_MAP_CUSTOM2, &kernels::unsupported},
    {GGML_OP_MAP_CUSTOM3, &kernels::unsupported},
    {GGML_OP_CUSTOM, &kernels::unsupported},  // CPU callbacks; extension nodes run extension kernels
    {GGML_OP_CROSS_ENTROPY_LOSS, &kernels::cross_entropy},
    {GGML_OP_CROSS_ENTROPY_LOSS_BACK, &kernels::cross_entropy},
    {GGML_OP_OPT_STEP_ADAMW, &kernels::opt_step},
    {GGML_OP_OPT_STEP_SGD, &kernels::opt_step},
    {GGML_OP_GLU, &kernels::glu},
};
static_assert(lists_every_value_in_order(entries, GGML_OP_COUNT),
              "the Vulkan kernel table must list every ggml_op once, in order");

}  // namespace

const KernelTable & kernel_table() {
    static const KernelTable table = [] {
        KernelTable t{};
        for (const Entry & entry : entries)
            t[entry.op] = *entry.kernel;
        return t;
    }();
    return table;
}

View view_of(const Recorder & recorder, const ggml_tensor * tensor, uint32_t unit) {
    const auto stride = [&](int i) { return static_cast<uint32_t>(tensor->nb[i] / unit); };
    return {recorder.element_offset(tensor, unit), stride(0), stride(1), stride(2), stride(3)};
}

bool addressable(const Device & device, const ggml_tensor * tensor, uint32_t unit) {
    for (size_t nb : tensor->nb) {
        if (nb % unit != 0) return false;
    }
    return ggml_nbytes(tensor) + device.limits().storage_offset_alignment <=
           device.limits().max_storage_range;
}

bool small_enough(const ggml_tensor * tensor) {
    return ggml_nelements(tensor) <= std::numeric_limits<int32_t>::max();
}

const char * float_type_name(ggml_type type) {
    switch (type) {
        case GGML_TYPE_F32:
            return "f32";
        case GGML_TYPE_F16:
            return "f16";
        case GGML_TYPE_BF16:
            return "bf16";
        default:
            return nullptr;
    }
}

namespace {

// The i-quant grids (core/quant/iq_grids.h) as the one table the shaders read (quant.glsl's GRID_*
// byte offsets).
struct IqGrids {
    uint8_t signs[128];
    uint8_t iq2xxs[256][8], iq2xs[512][8], iq2s[1024][8];
    uint8_t iq3xxs[256][4], iq3s[512][4];
    int8_t iq1s[2048][8];
};
static_assert(offsetof(IqGrids, iq2xxs) == 128 && offsetof(IqGrids, iq2xs) == 2176 &&
                  offsetof(IqGrids, iq2s) == 6272 && offsetof(IqGrids, iq3xxs) == 14464 &&
                  offsetof(IqGrids, iq3s) == 15488 && offsetof(IqGrids, iq1s) == 17536 &&
                  sizeof(IqGrids) == 33920,
              "quant.glsl's GRID_* offsets");

const IqGrids & iq_grids() {
    static const IqGrids grids = [] {
        namespace q = core::quant;
        IqGrids g;
        std::memcpy(g.signs, q::kIqSigns, sizeof g.signs);
        std::memcpy(g.iq2xxs, q::kIq2xxsGrid, sizeof g.iq2xxs);
        std::memcpy(g.iq2xs, q::kIq2xsGrid, sizeof g.iq2xs);
        std::memcpy(g.iq2s, q::kIq2sGrid, sizeof g.iq2s);
        std::memcpy(g.iq3xxs, q::kIq3xxsGrid, sizeof g.iq3xxs);
        std::memcpy(g.iq3s, q::kIq3sGrid, sizeof g.iq3s);
        std::memcpy(g.iq1s, q::kIq1sGrid, sizeof g.iq1s);
        return g;
    }();
    return grids;
}

bool grid_block_type(ggml_type type) {
    switch (type) {
        case GGML_TYPE_IQ2_XXS:
        case GGML_TYPE_IQ2_XS:
        case GGML_TYPE_IQ2_S:
        case GGML_TYPE_IQ3_XXS:
        case GGML_TYPE_IQ3_S:
        case GGML_TYPE_IQ1_S:
        case GGML_TYPE_IQ1_M:
            return true;
        default:
            return false;
    }
}

}  // namespace

// Those whose reference quantization (core/quant) is a formula the shaders repeat exactly; the
// K-quants, IQ4_XS and the i-quants search over candidate scales (docs/vulkan.md).
bool quantizable_block_type(ggml_type type) {
    switch (type) {
        case GGML_TYPE_Q4_0:
        case GGML_TYPE_Q4_1:
        case GGML_TYPE_Q5_0:
        case GGML_TYPE_Q5_1:
        case GGML_TYPE_Q8_0:
        case GGML_TYPE_Q8_1:
        case GGML_TYPE_IQ4_NL:
        case GGML_TYPE_MXFP4:
        case GGML_TYPE_NVFP4:
        case GGML_TYPE_TQ1_0:
        case GGML_TYPE_TQ2_0:
        case GGML_TYPE_Q1_0:
        case GGML_TYPE_Q2_0:
            return true;
        default:
            return false;
    }
}

// The quantizable types, the i-quants (grid_block_type) and those dequantized only: the K-quants and
// IQ4_XS.
const char * block_type_name(ggml_type type) {
    switch (type) {
        case GGML_TYPE_Q2_K:
        case GGML_TYPE_Q3_K:
        case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q5_K:
        case GGML_TYPE_Q6_K:
        case GGML_TYPE_Q8_K:
        case GGML_TYPE_IQ4_XS:
            break;
        default:
            if (!quantizable_block_type(type) && !grid_block_type(type)) return nullptr;
    }
    return ggml_type_name(type);  // the suffix of the shaders (vulkan.cmake's lists)
}

void add_grids(const Recorder & rec, ggml_type type, std::vector<Arg> & args) {
    if (!grid_block_type(type)) return;
    const IqGrids & grids = iq_grids();
    args.push_back({rec.device().constant_table(&grids, sizeof grids), 0, sizeof grids, false});
}

uint32_t float_unit(ggml_type type) { return type == GGML_TYPE_F32 ? 4 : 2; }

bool float_tensor(const Device & device, const ggml_tensor * tensor) {
    return float_type_name(tensor->type) && addressable(device, tensor, float_unit(tensor->type)) &&
           small_enough(tensor);
}

Shape shape_of(const ggml_tensor * t) {
    return {{static_cast<uint32_t>(t->ne[0]), static_cast<uint32_t>(t->ne[1]),
             static_cast<uint32_t>(t->ne[2]), static_cast<uint32_t>(t->ne[3])}};
}

bool same_f32_shape(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && a->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && ggml_are_same_shape(a, node) &&
           float_tensor(device, a) && float_tensor(device, node);
}

const char * raw_name(ggml_type type) {
    if (ggml_is_quantized(type)) return nullptr;
    switch (ggml_type_size(type)) {
        case 4:
            return "u32";
        case 2:
            return "u16";
        case 1:
            return "u8";
        default:
            return nullptr;
    }
}

bool raw_tensor(const Device & device, const ggml_tensor * t) {
    return raw_name(t->type) && addressable(device, t, static_cast<uint32_t>(ggml_type_size(t->type))) &&
           small_enough(t);
}

bool block_tensor(const Device & device, const ggml_tensor * t) {
    return block_type_name(t->type) && t->ne[0] % ggml_blck_size(t->type) == 0 &&
           t->nb[0] == ggml_type_size(t->type) && addressable(device, t, kBlockUnit) && small_enough(t);
}

Shape block_shape(const ggml_tensor * t, ggml_type block_type) {
    Shape ne = shape_of(t);
    ne.ne[0] /= static_cast<uint32_t>(ggml_blck_size(block_type));
    return ne;
}

uint64_t count(const Shape & s) { return uint64_t{s.ne[0]} * s.ne[1] * s.ne[2] * s.ne[3]; }

uint32_t block_size(uint64_t n) {
    return static_cast<uint32_t>(std::clamp<uint64_t>(std::bit_ceil(std::max<uint64_t>(n, 1)), 32, 256));
}

Groups unit_groups(const Recorder & rec, uint64_t units, uint32_t local_size) {
    return rec.groups_for(units * local_size, local_size);
}

}  // namespace ggx::vulkan
