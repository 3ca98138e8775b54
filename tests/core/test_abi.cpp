// The ABI is ggml's (ggml 0.21.0): every enum value, struct layout and macro a program compiled
// against ggml's headers relies on. The expected values below are written from ggml's headers, not
// from ggx's, so a reordered or renumbered enum fails here.
#include <ggml-backend.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "reference/reference.h"

namespace {

template <class Enum>
struct Value {
    Enum value;
    int expected;
    const char * name;  // ggml's name of the value, where it has one
};

// ---- ggml_type: the GGUF type ids, with ggml's block layouts -------------------------------------

struct TypeFacts {
    ggml_type type;
    int id;
    const char * name;
    int64_t blck_size;
    size_t type_size;
    bool quantized;
};

constexpr TypeFacts kTypes[] = {
    {GGML_TYPE_F32, 0, "f32", 1, 4, false},
    {GGML_TYPE_F16, 1, "f16", 1, 2, false},
    {GGML_TYPE_Q4_0, 2, "q4_0", 32, 18, true},
    {GGML_TYPE_Q4_1, 3, "q4_1", 32, 20, true},
    {GGML_TYPE_Q5_0, 6, "q5_0", 32, 22, true},
    {GGML_TYPE_Q5_1, 7, "q5_1", 32, 24, true},
    {GGML_TYPE_Q8_0, 8, "q8_0", 32, 34, true},
    {GGML_TYPE_Q8_1, 9, "q8_1", 32, 36, true},
    {GGML_TYPE_Q2_K, 10, "q2_K", 256, 84, true},
    {GGML_TYPE_Q3_K, 11, "q3_K", 256, 110, true},
    {GGML_TYPE_Q4_K, 12, "q4_K", 256, 144, true},
    {GGML_TYPE_Q5_K, 13, "q5_K", 256, 176, true},
    {GGML_TYPE_Q6_K, 14, "q6_K", 256, 210, true},
    {GGML_TYPE_Q8_K, 15, "q8_K", 256, 292, true},
    {GGML_TYPE_IQ2_XXS, 16, "iq2_xxs", 256, 66, true},
    {GGML_TYPE_IQ2_XS, 17, "iq2_xs", 256, 74, true},
    {GGML_TYPE_IQ3_XXS, 18, "iq3_xxs", 256, 98, true},
    {GGML_TYPE_IQ1_S, 19, "iq1_s", 256, 50, true},
    {GGML_TYPE_IQ4_NL, 20, "iq4_nl", 32, 18, true},
    {GGML_TYPE_IQ3_S, 21, "iq3_s", 256, 110, true},
    {GGML_TYPE_IQ2_S, 22, "iq2_s", 256, 82, true},
    {GGML_TYPE_IQ4_XS, 23, "iq4_xs", 256, 136, true},
    {GGML_TYPE_I8, 24, "i8", 1, 1, false},
    {GGML_TYPE_I16, 25, "i16", 1, 2, false},
    {GGML_TYPE_I32, 26, "i32", 1, 4, false},
    {GGML_TYPE_I64, 27, "i64", 1, 8, false},
    {GGML_TYPE_F64, 28, "f64", 1, 8, false},
    {GGML_TYPE_IQ1_M, 29, "iq1_m", 256, 56, true},
    {GGML_TYPE_BF16, 30, "bf16", 1, 2, false},
    {GGML_TYPE_TQ1_0, 34, "tq1_0", 256, 54, true},
    {GGML_TYPE_TQ2_0, 35, "tq2_0", 256, 66, true},
    {GGML_TYPE_MXFP4, 39, "mxfp4", 32, 17, true},
    {GGML_TYPE_NVFP4, 40, "nvfp4", 64, 36, true},
    {GGML_TYPE_Q1_0, 41, "q1_0", 128, 18, true},
    {GGML_TYPE_Q2_0, 42, "q2_0", 64, 18, true},
};

TEST(Abi, TypeIdsAndTraits) {
    EXPECT_EQ(GGML_TYPE_COUNT, 43);
    for (const TypeFacts & t : kTypes) {
        SCOPED_TRACE(t.name);
        EXPECT_EQ(static_cast<int>(t.type), t.id);
        EXPECT_STREQ(ggml_type_name(t.type), t.name);
        EXPECT_EQ(ggml_blck_size(t.type), t.blck_size);
        EXPECT_EQ(ggml_type_size(t.type), t.type_size);
        EXPECT_EQ(ggml_is_quantized(t.type), t.quantized);
        EXPECT_EQ(ggml_row_size(t.type, 3 * t.blck_size), 3 * t.type_size);
    }
    // The ids of removed formats are not types.
    for (const int removed : {4, 5, 31, 32, 33, 36, 37, 38}) {
        EXPECT_STREQ(ggml_type_name(static_cast<ggml_type>(removed)), "unknown") << removed;
        EXPECT_EQ(ggml_type_size(static_cast<ggml_type>(removed)), 0u) << removed;
    }
}

// A K-quant tensor has ggml's sizes, and every device multiplies with it.
TEST(Abi, BlockFormatTensorsHaveGgmlSizes) {
    std::unique_ptr<ggml_context, decltype(&ggml_free)> ctx(ggml_init({1 << 20, nullptr, false}), &ggml_free);
    ggml_tensor * w = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_Q4_K, 512, 3);
    ASSERT_NE(w, nullptr) << ggml_get_error(ctx.get());
    EXPECT_EQ(w->nb[0], 144u);
    EXPECT_EQ(w->nb[1], 2 * 144u);
    EXPECT_EQ(ggml_nbytes(w), 3 * 2 * 144u);
    EXPECT_EQ(ggml_new_tensor_1d(ctx.get(), static_cast<ggml_type>(4), 8), nullptr);  // a removed id
    ggml_tensor * x = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 512, 2);
    ggml_tensor * y = ggml_mul_mat(ctx.get(), w, x);
    ASSERT_NE(y, nullptr) << ggml_get_error(ctx.get());
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        EXPECT_TRUE(ggml_backend_dev_supports_op(dev, y)) << ggml_backend_dev_name(dev);
    }
}

// ---- ggml_op, ggml_unary_op, ggml_glu_op ------------------------------------------------------------

constexpr Value<ggml_op> kOps[] = {
    {GGML_OP_NONE, 0, "NONE"},
    {GGML_OP_DUP, 1, "DUP"},
    {GGML_OP_ADD, 2, "ADD"},
    {GGML_OP_ADD_ID, 3, "ADD_ID"},
    {GGML_OP_ADD1, 4, "ADD1"},
    {GGML_OP_ACC, 5, "ACC"},
    {GGML_OP_SUB, 6, "SUB"},
    {GGML_OP_MUL, 7, "MUL"},
    {GGML_OP_DIV, 8, "DIV"},
    {GGML_OP_SQR, 9, "SQR"},
    {GGML_OP_SQRT, 10, "SQRT"},
    {GGML_OP_LOG, 11, "LOG"},
    {GGML_OP_SIN, 12, "SIN"},
    {GGML_OP_COS, 13, "COS"},
    {GGML_OP_SUM, 14, "SUM"},
    {GGML_OP_SUM_ROWS, 15, "SUM_ROWS"},
    {GGML_OP_CUMSUM, 16, "CUMSUM"},
    {GGML_OP_MEAN, 17, "MEAN"},
    {GGML_OP_ARGMAX, 18, "ARGMAX"},
    {GGML_OP_COUNT_EQUAL, 19, "COUNT_EQUAL"},
    {GGML_OP_REPEAT, 20, "REPEAT"},
    {GGML_OP_REPEAT_BACK, 21, "REPEAT_BACK"},
    {GGML_OP_CONCAT, 22, "CONCAT"},
    {GGML_OP_SILU_BACK, 23, "SILU_BACK"},
    {GGML_OP_NORM, 24, "NORM"},
    {GGML_OP_RMS_NORM, 25, "RMS_NORM"},
    {GGML_OP_RMS_NORM_BACK, 26, "RMS_NORM_BACK"},
    {GGML_OP_GROUP_NORM, 27, "GROUP_NORM"},
    {GGML_OP_L2_NORM, 28, "L2_NORM"},
    {GGML_OP_MUL_MAT, 29, "MUL_MAT"},
    {GGML_OP_MUL_MAT_ID, 30, "MUL_MAT_ID"},
    {GGML_OP_OUT_PROD, 31, "OUT_PROD"},
    {GGML_OP_SCALE, 32, "SCALE"},
    {GGML_OP_SET, 33, "SET"},
    {GGML_OP_CPY, 34, "CPY"},
    {GGML_OP_CONT, 35, "CONT"},
    {GGML_OP_RESHAPE, 36, "RESHAPE"},
    {GGML_OP_VIEW, 37, "VIEW"},
    {GGML_OP_PERMUTE, 38, "PERMUTE"},
    {GGML_OP_TRANSPOSE, 39, "TRANSPOSE"},
    {GGML_OP_GET_ROWS, 40, "GET_ROWS"},
    {GGML_OP_GET_ROWS_BACK, 41, "GET_ROWS_BACK"},
    {GGML_OP_SET_ROWS, 42, "SET_ROWS"},
    {GGML_OP_DIAG, 43, "DIAG"},
    {GGML_OP_DIAG_MASK_INF, 44, "DIAG_MASK_INF"},
    {GGML_OP_DIAG_MASK_ZERO, 45, "DIAG_MASK_ZERO"},
    {GGML_OP_SOFT_MAX, 46, "SOFT_MAX"},
    {GGML_OP_SOFT_MAX_BACK, 47, "SOFT_MAX_BACK"},
    {GGML_OP_ROPE, 48, "ROPE"},
    {GGML_OP_ROPE_BACK, 49, "ROPE_BACK"},
    {GGML_OP_CLAMP, 50, "CLAMP"},
    {GGML_OP_CONV_TRANSPOSE_1D, 51, "CONV_TRANSPOSE_1D"},
    {GGML_OP_IM2COL, 52, "IM2COL"},
    {GGML_OP_IM2COL_BACK, 53, "IM2COL_BACK"},
    {GGML_OP_IM2COL_3D, 54, "IM2COL_3D"},
    {GGML_OP_COL2IM_1D, 55, "COL2IM_1D"},
    {GGML_OP_CONV_2D, 56, "CONV_2D"},
    {GGML_OP_CONV_3D, 57, "CONV_3D"},
    {GGML_OP_CONV_2D_DW, 58, "CONV_2D_DW"},
    {GGML_OP_CONV_TRANSPOSE_2D, 59, "CONV_TRANSPOSE_2D"},
    {GGML_OP_POOL_1D, 60, "POOL_1D"},
    {GGML_OP_POOL_2D, 61, "POOL_2D"},
    {GGML_OP_POOL_2D_BACK, 62, "POOL_2D_BACK"},
    {GGML_OP_UPSCALE, 63, "UPSCALE"},
    {GGML_OP_PAD, 64, "PAD"},
    {GGML_OP_PAD_REFLECT_1D, 65, "PAD_REFLECT_1D"},
    {GGML_OP_ROLL, 66, "ROLL"},
    {GGML_OP_ARANGE, 67, "ARANGE"},
    {GGML_OP_TIMESTEP_EMBEDDING, 68, "TIMESTEP_EMBEDDING"},
    {GGML_OP_ARGSORT, 69, "ARGSORT"},
    {GGML_OP_TOP_K, 70, "TOP_K"},
    {GGML_OP_LEAKY_RELU, 71, "LEAKY_RELU"},
    {GGML_OP_TRI, 72, "TRI"},
    {GGML_OP_FILL, 73, "FILL"},
    {GGML_OP_FLASH_ATTN_EXT, 74, "FLASH_ATTN_EXT"},
    {GGML_OP_FLASH_ATTN_BACK, 75, "FLASH_ATTN_BACK"},
    {GGML_OP_SSM_CONV, 76, "SSM_CONV"},
    {GGML_OP_SSM_SCAN, 77, "SSM_SCAN"},
    {GGML_OP_WIN_PART, 78, "WIN_PART"},
    {GGML_OP_WIN_UNPART, 79, "WIN_UNPART"},
    {GGML_OP_GET_REL_POS, 80, "GET_REL_POS"},
    {GGML_OP_ADD_REL_POS, 81, "ADD_REL_POS"},
    {GGML_OP_RWKV_WKV6, 82, "RWKV_WKV6"},
    {GGML_OP_GATED_LINEAR_ATTN, 83, "GATED_LINEAR_ATTN"},
    {GGML_OP_RWKV_WKV7, 84, "RWKV_WKV7"},
    {GGML_OP_SOLVE_TRI, 85, "SOLVE_TRI"},
    {GGML_OP_GATED_DELTA_NET, 86, "GATED_DELTA_NET"},
    {GGML_OP_LIGHTNING_INDEXER, 87, "LIGHTNING_INDEXER"},
    {GGML_OP_DSV4_HC_COMB, 88, "DSV4_HC_COMB"},
    {GGML_OP_DSV4_HC_PRE, 89, "DSV4_HC_PRE"},
    {GGML_OP_DSV4_HC_POST, 90, "DSV4_HC_POST"},
    {GGML_OP_UNARY, 91, "UNARY"},
    {GGML_OP_MAP_CUSTOM1, 92, "MAP_CUSTOM1"},
    {GGML_OP_MAP_CUSTOM2, 93, "MAP_CUSTOM2"},
    {GGML_OP_MAP_CUSTOM3, 94, "MAP_CUSTOM3"},
    {GGML_OP_CUSTOM, 95, "CUSTOM"},
    {GGML_OP_CROSS_ENTROPY_LOSS, 96, "CROSS_ENTROPY_LOSS"},
    {GGML_OP_CROSS_ENTROPY_LOSS_BACK, 97, "CROSS_ENTROPY_LOSS_BACK"},
    {GGML_OP_OPT_STEP_ADAMW, 98, "OPT_STEP_ADAMW"},
    {GGML_OP_OPT_STEP_SGD, 99, "OPT_STEP_SGD"},
    {GGML_OP_GLU, 100, "GLU"},
};

constexpr Value<ggml_unary_op> kUnaryOps[] = {
    {GGML_UNARY_OP_ABS, 0, "ABS"},
    {GGML_UNARY_OP_SGN, 1, "SGN"},
    {GGML_UNARY_OP_NEG, 2, "NEG"},
    {GGML_UNARY_OP_STEP, 3, "STEP"},
    {GGML_UNARY_OP_TANH, 4, "TANH"},
    {GGML_UNARY_OP_ELU, 5, "ELU"},
    {GGML_UNARY_OP_RELU, 6, "RELU"},
    {GGML_UNARY_OP_SIGMOID, 7, "SIGMOID"},
    {GGML_UNARY_OP_GELU, 8, "GELU"},
    {GGML_UNARY_OP_GELU_QUICK, 9, "GELU_QUICK"},
    {GGML_UNARY_OP_SILU, 10, "SILU"},
    {GGML_UNARY_OP_HARDSWISH, 11, "HARDSWISH"},
    {GGML_UNARY_OP_HARDSIGMOID, 12, "HARDSIGMOID"},
    {GGML_UNARY_OP_EXP, 13, "EXP"},
    {GGML_UNARY_OP_EXPM1, 14, "EXPM1"},
    {GGML_UNARY_OP_SOFTPLUS, 15, "SOFTPLUS"},
    {GGML_UNARY_OP_GELU_ERF, 16, "GELU_ERF"},
    {GGML_UNARY_OP_XIELU, 17, "XIELU"},
    {GGML_UNARY_OP_FLOOR, 18, "FLOOR"},
    {GGML_UNARY_OP_CEIL, 19, "CEIL"},
    {GGML_UNARY_OP_ROUND, 20, "ROUND"},
    {GGML_UNARY_OP_TRUNC, 21, "TRUNC"},
};

constexpr Value<ggml_glu_op> kGluOps[] = {
    {GGML_GLU_OP_REGLU, 0, "REGLU"},         {GGML_GLU_OP_GEGLU, 1, "GEGLU"},
    {GGML_GLU_OP_SWIGLU, 2, "SWIGLU"},       {GGML_GLU_OP_SWIGLU_OAI, 3, "SWIGLU_OAI"},
    {GGML_GLU_OP_GEGLU_ERF, 4, "GEGLU_ERF"}, {GGML_GLU_OP_GEGLU_QUICK, 5, "GEGLU_QUICK"},
};

TEST(Abi, OpValuesAndNames) {
    EXPECT_EQ(GGML_OP_COUNT, 101);
    EXPECT_EQ(std::size(kOps), static_cast<size_t>(GGML_OP_COUNT));
    for (const auto & op : kOps) {
        EXPECT_EQ(static_cast<int>(op.value), op.expected) << op.name;
        EXPECT_STREQ(ggml_op_name(op.value), op.name);
        EXPECT_NE(std::string(ggml_op_symbol(op.value)), "unknown") << op.name;
    }
    EXPECT_STREQ(ggml_op_name(GGML_OP_COUNT), "unknown");
    EXPECT_STREQ(ggml_op_symbol(GGML_OP_COUNT), "unknown");
}

TEST(Abi, SubOpValuesAndNames) {
    EXPECT_EQ(GGML_UNARY_OP_COUNT, 22);
    EXPECT_EQ(std::size(kUnaryOps), static_cast<size_t>(GGML_UNARY_OP_COUNT));
    for (const auto & op : kUnaryOps) {
        EXPECT_EQ(static_cast<int>(op.value), op.expected) << op.name;
        EXPECT_STREQ(ggml_unary_op_name(op.value), op.name);
    }
    EXPECT_EQ(GGML_GLU_OP_COUNT, 6);
    EXPECT_EQ(std::size(kGluOps), static_cast<size_t>(GGML_GLU_OP_COUNT));
    for (const auto & op : kGluOps) {
        EXPECT_EQ(static_cast<int>(op.value), op.expected) << op.name;
        EXPECT_STREQ(ggml_glu_op_name(op.value), op.name);
    }
}

// The ops ggml has and ggx does not compute yet (the oracle's scope is what ggx computes) are
// refused by every device, even on a hand-made node.
TEST(Abi, OpsWithoutKernelsAreRefusedEverywhere) {
    std::unique_ptr<ggml_context, decltype(&ggml_free)> ctx(ggml_init({1 << 20, nullptr, true}), &ggml_free);
    ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 8, 4);
    ggml_tensor * b = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 8, 4);
    int without_kernel = 0;
    for (const auto & op : kOps) {
        if (ggx::ref::evaluates(op.value)) continue;
        ++without_kernel;
        ggml_tensor * node = ggml_dup_tensor(ctx.get(), a);
        node->op = op.value;
        node->src[0] = a;
        node->src[1] = b;
        for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
            ggml_backend_dev_t dev = ggml_backend_dev_get(i);
            EXPECT_FALSE(ggml_backend_dev_supports_op(dev, node))
                << op.name << " on " << ggml_backend_dev_name(dev);
        }
    }
    EXPECT_GT(without_kernel, 0);
}

// ---- The other enums --------------------------------------------------------------------------------

template <class Enum, size_t N>
void expect_values(const Value<Enum> (&values)[N]) {
    for (const auto & v : values)
        EXPECT_EQ(static_cast<int>(v.value), v.expected) << v.name;
}

TEST(Abi, OtherEnumValues) {
    expect_values<ggml_status>({{GGML_STATUS_ALLOC_FAILED, -2, "ALLOC_FAILED"},
                                {GGML_STATUS_FAILED, -1, "FAILED"},
                                {GGML_STATUS_SUCCESS, 0, "SUCCESS"},
                                {GGML_STATUS_ABORTED, 1, "ABORTED"}});
    expect_values<ggml_prec>({{GGML_PREC_DEFAULT, 0, "DEFAULT"}, {GGML_PREC_F32, 10, "F32"}});
    expect_values<ggml_op_hint>(
        {{GGML_HINT_NONE, 0, "NONE"}, {GGML_HINT_SRC0_IS_HADAMARD, 1, "SRC0_IS_HADAMARD"}});
    expect_values<ggml_ftype>(
        {{GGML_FTYPE_UNKNOWN, -1, "UNKNOWN"},        {GGML_FTYPE_ALL_F32, 0, "ALL_F32"},
         {GGML_FTYPE_MOSTLY_F16, 1, "F16"},          {GGML_FTYPE_MOSTLY_Q4_0, 2, "Q4_0"},
         {GGML_FTYPE_MOSTLY_Q4_1, 3, "Q4_1"},        {GGML_FTYPE_MOSTLY_Q4_1_SOME_F16, 4, "Q4_1_SOME_F16"},
         {GGML_FTYPE_MOSTLY_Q8_0, 7, "Q8_0"},        {GGML_FTYPE_MOSTLY_Q5_0, 8, "Q5_0"},
         {GGML_FTYPE_MOSTLY_Q5_1, 9, "Q5_1"},        {GGML_FTYPE_MOSTLY_Q2_K, 10, "Q2_K"},
         {GGML_FTYPE_MOSTLY_Q3_K, 11, "Q3_K"},       {GGML_FTYPE_MOSTLY_Q4_K, 12, "Q4_K"},
         {GGML_FTYPE_MOSTLY_Q5_K, 13, "Q5_K"},       {GGML_FTYPE_MOSTLY_Q6_K, 14, "Q6_K"},
         {GGML_FTYPE_MOSTLY_IQ2_XXS, 15, "IQ2_XXS"}, {GGML_FTYPE_MOSTLY_IQ2_XS, 16, "IQ2_XS"},
         {GGML_FTYPE_MOSTLY_IQ3_XXS, 17, "IQ3_XXS"}, {GGML_FTYPE_MOSTLY_IQ1_S, 18, "IQ1_S"},
         {GGML_FTYPE_MOSTLY_IQ4_NL, 19, "IQ4_NL"},   {GGML_FTYPE_MOSTLY_IQ3_S, 20, "IQ3_S"},
         {GGML_FTYPE_MOSTLY_IQ2_S, 21, "IQ2_S"},     {GGML_FTYPE_MOSTLY_IQ4_XS, 22, "IQ4_XS"},
         {GGML_FTYPE_MOSTLY_IQ1_M, 23, "IQ1_M"},     {GGML_FTYPE_MOSTLY_BF16, 24, "BF16"},
         {GGML_FTYPE_MOSTLY_MXFP4, 25, "MXFP4"},     {GGML_FTYPE_MOSTLY_NVFP4, 26, "NVFP4"},
         {GGML_FTYPE_MOSTLY_Q1_0, 27, "Q1_0"},       {GGML_FTYPE_MOSTLY_Q2_0, 28, "Q2_0"}});
    expect_values<ggml_object_type>({{GGML_OBJECT_TYPE_TENSOR, 0, "TENSOR"},
                                     {GGML_OBJECT_TYPE_GRAPH, 1, "GRAPH"},
                                     {GGML_OBJECT_TYPE_WORK_BUFFER, 2, "WORK_BUFFER"}});
    expect_values<ggml_log_level>({{GGML_LOG_LEVEL_NONE, 0, "NONE"},
                                   {GGML_LOG_LEVEL_DEBUG, 1, "DEBUG"},
                                   {GGML_LOG_LEVEL_INFO, 2, "INFO"},
                                   {GGML_LOG_LEVEL_WARN, 3, "WARN"},
                                   {GGML_LOG_LEVEL_ERROR, 4, "ERROR"},
                                   {GGML_LOG_LEVEL_CONT, 5, "CONT"}});
    expect_values<ggml_tensor_flag>({{GGML_TENSOR_FLAG_INPUT, 1, "INPUT"},
                                     {GGML_TENSOR_FLAG_OUTPUT, 2, "OUTPUT"},
                                     {GGML_TENSOR_FLAG_PARAM, 4, "PARAM"},
                                     {GGML_TENSOR_FLAG_LOSS, 8, "LOSS"},
                                     {GGML_TENSOR_FLAG_COMPUTE, 16, "COMPUTE"}});
    expect_values<ggml_tri_type>({{GGML_TRI_TYPE_UPPER_DIAG, 0, "UPPER_DIAG"},
                                  {GGML_TRI_TYPE_UPPER, 1, "UPPER"},
                                  {GGML_TRI_TYPE_LOWER_DIAG, 2, "LOWER_DIAG"},
                                  {GGML_TRI_TYPE_LOWER, 3, "LOWER"}});
    expect_values<ggml_op_pool>(
        {{GGML_OP_POOL_MAX, 0, "MAX"}, {GGML_OP_POOL_AVG, 1, "AVG"}, {GGML_OP_POOL_COUNT, 2, "COUNT"}});
    expect_values<ggml_scale_mode>({{GGML_SCALE_MODE_NEAREST, 0, "NEAREST"},
                                    {GGML_SCALE_MODE_BILINEAR, 1, "BILINEAR"},
                                    {GGML_SCALE_MODE_BICUBIC, 2, "BICUBIC"},
                                    {GGML_SCALE_MODE_COUNT, 3, "COUNT"}});
    expect_values<ggml_scale_flag>({{GGML_SCALE_FLAG_ALIGN_CORNERS, 256, "ALIGN_CORNERS"},
                                    {GGML_SCALE_FLAG_ANTIALIAS, 512, "ANTIALIAS"}});
    expect_values<ggml_sort_order>({{GGML_SORT_ORDER_ASC, 0, "ASC"}, {GGML_SORT_ORDER_DESC, 1, "DESC"}});
    expect_values<ggml_sched_priority>({{GGML_SCHED_PRIO_LOW, -1, "LOW"},
                                        {GGML_SCHED_PRIO_NORMAL, 0, "NORMAL"},
                                        {GGML_SCHED_PRIO_MEDIUM, 1, "MEDIUM"},
                                        {GGML_SCHED_PRIO_HIGH, 2, "HIGH"},
                                        {GGML_SCHED_PRIO_REALTIME, 3, "REALTIME"}});
}

TEST(Abi, BackendEnumValues) {
    expect_values<ggml_backend_buffer_usage>({{GGML_BACKEND_BUFFER_USAGE_ANY, 0, "ANY"},
                                              {GGML_BACKEND_BUFFER_USAGE_WEIGHTS, 1, "WEIGHTS"},
                                              {GGML_BACKEND_BUFFER_USAGE_COMPUTE, 2, "COMPUTE"}});
    expect_values<enum ggml_backend_dev_type>({{GGML_BACKEND_DEVICE_TYPE_CPU, 0, "CPU"},
                                               {GGML_BACKEND_DEVICE_TYPE_GPU, 1, "GPU"},
                                               {GGML_BACKEND_DEVICE_TYPE_IGPU, 2, "IGPU"},
                                               {GGML_BACKEND_DEVICE_TYPE_ACCEL, 3, "ACCEL"},
                                               {GGML_BACKEND_DEVICE_TYPE_META, 4, "META"}});
    expect_values<ggml_backend_meta_split_axis>({{GGML_BACKEND_SPLIT_AXIS_0, 0, "0"},
                                                 {GGML_BACKEND_SPLIT_AXIS_1, 1, "1"},
                                                 {GGML_BACKEND_SPLIT_AXIS_2, 2, "2"},
                                                 {GGML_BACKEND_SPLIT_AXIS_3, 3, "3"},
                                                 {GGML_BACKEND_SPLIT_AXIS_MIRRORED, 10, "MIRRORED"},
                                                 {GGML_BACKEND_SPLIT_AXIS_PARTIAL, 11, "PARTIAL"},
                                                 {GGML_BACKEND_SPLIT_AXIS_NONE, 98, "NONE"},
                                                 {GGML_BACKEND_SPLIT_AXIS_UNKNOWN, 99, "UNKNOWN"}});
    EXPECT_EQ(GGML_SCHED_MAX_COPIES, 4);
    EXPECT_EQ(GGML_BACKEND_META_MAX_DEVICES, 16);
}

// ---- Struct layouts (LP64) ---------------------------------------------------------------------------

TEST(Abi, TensorLayout) {
    static_assert(sizeof(void *) == 8, "the expected offsets are LP64's");
    EXPECT_EQ(sizeof(ggml_tensor), 336u);
    EXPECT_EQ(GGML_TENSOR_SIZE, sizeof(ggml_tensor));
    EXPECT_EQ(offsetof(ggml_tensor, type), 0u);
    EXPECT_EQ(offsetof(ggml_tensor, buffer), 8u);
    EXPECT_EQ(offsetof(ggml_tensor, ne), 16u);
    EXPECT_EQ(offsetof(ggml_tensor, nb), 48u);
    EXPECT_EQ(offsetof(ggml_tensor, op), 80u);
    EXPECT_EQ(offsetof(ggml_tensor, op_params), 84u);
    EXPECT_EQ(offsetof(ggml_tensor, flags), 148u);
    EXPECT_EQ(offsetof(ggml_tensor, src), 152u);
    EXPECT_EQ(offsetof(ggml_tensor, view_src), 232u);
    EXPECT_EQ(offsetof(ggml_tensor, view_offs), 240u);
    EXPECT_EQ(offsetof(ggml_tensor, data), 248u);
    EXPECT_EQ(offsetof(ggml_tensor, name), 256u);
    EXPECT_EQ(offsetof(ggml_tensor, extra), 320u);
    EXPECT_EQ(offsetof(ggml_tensor, padding), 328u);
    EXPECT_EQ(sizeof(ggml_tensor::padding), 8u);
}

TEST(Abi, ScalarAndGuidTypes) {
    static_assert(std::is_same_v<ggml_fp16_t, uint16_t>);
    static_assert(std::is_same_v<decltype(ggml_bf16_t::bits), uint16_t>);
    EXPECT_EQ(sizeof(ggml_bf16_t), 2u);
    EXPECT_EQ(ggml_fp32_to_bf16(1.0f).bits, 0x3f80);
    EXPECT_EQ(ggml_bf16_to_fp32(ggml_bf16_t{0xc000}), -2.0f);
    static_assert(std::is_same_v<ggml_guid, uint8_t[16]>);
    static_assert(std::is_same_v<ggml_guid_t, ggml_guid *>);
}

TEST(Abi, DevicePropsLayout) {
    EXPECT_EQ(offsetof(ggml_backend_dev_props, type), 32u);
    EXPECT_EQ(offsetof(ggml_backend_dev_props, device_id), 40u);
    EXPECT_EQ(offsetof(ggml_backend_dev_props, caps), 48u);
    EXPECT_EQ(sizeof(ggml_backend_dev_props), 56u);
}

// ---- Macros ------------------------------------------------------------------------------------------

TEST(Abi, MacroValues) {
    EXPECT_EQ(GGML_FILE_MAGIC, 0x67676d6c);
    EXPECT_EQ(GGML_FILE_VERSION, 2);
    EXPECT_EQ(GGML_QNT_VERSION, 2);
    EXPECT_EQ(GGML_QNT_VERSION_FACTOR, 1000);
    EXPECT_EQ(GGML_MAX_DIMS, 4);
    EXPECT_EQ(GGML_MAX_PARAMS, 2048);
    EXPECT_EQ(GGML_MAX_SRC, 10);
    EXPECT_EQ(GGML_MAX_N_THREADS, 512);
    EXPECT_EQ(GGML_MAX_OP_PARAMS, 64);
    EXPECT_EQ(GGML_MAX_NAME, 64);
    EXPECT_EQ(GGML_DEFAULT_N_THREADS, 4);
    EXPECT_EQ(GGML_DEFAULT_GRAPH_SIZE, 2048);
    EXPECT_EQ(GGML_MEM_ALIGN, 16);
    EXPECT_EQ(GGML_EXIT_SUCCESS, 0);
    EXPECT_EQ(GGML_EXIT_ABORTED, 1);
    EXPECT_EQ(GGML_N_TASKS_MAX, -1);
    EXPECT_EQ(GGML_KQ_MASK_PAD, 1);
    EXPECT_EQ(GGML_ROPE_TYPE_NORMAL, 0);
    EXPECT_EQ(GGML_ROPE_TYPE_NEOX, 2);
    EXPECT_EQ(GGML_ROPE_TYPE_MROPE, 8);
    EXPECT_EQ(GGML_ROPE_TYPE_VISION, 24);
    EXPECT_EQ(GGML_ROPE_TYPE_IMROPE, 40);
    EXPECT_EQ(GGML_MROPE_SECTIONS, 4);
}

TEST(Abi, PadRoundsUpToAPowerOfTwo) {
    EXPECT_EQ(GGML_PAD(0, 16), 0);
    EXPECT_EQ(GGML_PAD(1, 16), 16);
    EXPECT_EQ(GGML_PAD(16, 16), 16);
    EXPECT_EQ(GGML_PAD(17, 16), 32);
    EXPECT_EQ(GGML_PAD(size_t{1000}, size_t{32}), size_t{1024});
    EXPECT_EQ(GGML_PAD(7, 1), 7);
}

TEST(Abi, TensorLocals) {
    ggml_tensor a{}, d{};
    for (int i = 0; i < GGML_MAX_DIMS; ++i) {
        a.ne[i] = 10 + i;
        a.nb[i] = 100 + static_cast<size_t>(i);
        d.ne[i] = 20 + i;
        d.nb[i] = 200 + static_cast<size_t>(i);
    }
    const ggml_tensor *src0 = &a, *dst = &d;
    const ggml_tensor * src1 = nullptr;  // a missing source reads as zeros
    GGML_TENSOR_BINARY_OP_LOCALS
    EXPECT_EQ(ne00, 10);
    EXPECT_EQ(ne03, 13);
    EXPECT_EQ(nb02, 102u);
    EXPECT_EQ(ne10, 0);
    EXPECT_EQ(nb13, 0u);
    EXPECT_EQ(ne1, 21);
    EXPECT_EQ(nb3, 203u);
    int unused = 0;
    GGML_UNUSED(unused);
}

TEST(AbiDeathTest, AssertAbortsWithTheCondition) {
    const int two = 2;
    EXPECT_DEATH({ GGML_ASSERT(two == 3); }, "test_abi\\.cpp:[0-9]+: GGML_ASSERT\\(two == 3\\) failed");
    GGML_ASSERT(two == 2);  // a true condition does nothing
}

TEST(AbiDeathTest, AbortPrintsFileLineAndMessage) {
    EXPECT_DEATH(GGML_ABORT("bad value %d in %s", 42, "x"), "test_abi\\.cpp:[0-9]+: bad value 42 in x");
}

#ifndef NDEBUG
TEST(AbiDeathTest, UnreachableAbortsInDebugBuilds) {
    EXPECT_DEATH(GGML_UNREACHABLE(), "statement should be unreachable");
}
#endif

}  // namespace
