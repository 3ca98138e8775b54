// The error-bound table. Bounds are normalised mean squared errors (sum (a - e)^2 / sum e^2) of a
// device result against the double-precision oracle, whose result is rounded to the node's type.
// They allow the rounding a correct kernel adds on top of the oracle's:
//  - F32 columns: float accumulation (about K * 2^-48 for a K-term sum) and transcendental
//    approximations of a few ulp;
//  - F16 and BF16 columns: at least one ulp of the storage type on a single element (a kernel's
//    float result and the oracle's exact one can round to neighbouring values; on a one-element
//    result that is up to 2^-20 for F16 and 2^-14 for BF16);
//  - products: the conversion of the activations to the weights' precision (F16: 2^-22 / 3,
//    BF16: 2^-16 / 3, Q8_0 blocks: about 2e-5).
// Copies, layout, indexing and selection ops (CLAMP, ARGMAX, SET, FILL; the integer results of
// COUNT_EQUAL, ARGSORT, TOP_K) are exact.
#include "bounds.h"

#include <ggml-ext.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace ggx::ops {

namespace {

constexpr double kNotApplicable = -1.0;
constexpr double na = kNotApplicable;

// Columns, least precise last.
enum Column { kF32, kF16, kBF16, kQ8_0, kQ4_0, kColumns };

struct Row {
    ggml_op op;
    std::array<double, kColumns> nmse;  // F32, F16, BF16, Q8_0, Q4_0
};

// clang-format off
constexpr Row kTable[] = {
    //  op                          F32    F16    BF16   Q8_0   Q4_0
    {GGML_OP_DUP,                  {0,     0,     0,     na,    na}},
    {GGML_OP_CPY,                  {0,     0,     0,     0,     0}},
    {GGML_OP_CONT,                 {0,     0,     0,     na,    na}},
    {GGML_OP_VIEW,                 {0,     0,     0,     0,     0}},
    {GGML_OP_RESHAPE,              {0,     0,     0,     0,     0}},
    {GGML_OP_PERMUTE,              {0,     0,     0,     0,     0}},
    {GGML_OP_TRANSPOSE,            {0,     0,     0,     0,     0}},
    {GGML_OP_ADD,                  {1e-12, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_SUB,                  {1e-12, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_MUL,                  {1e-12, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_DIV,                  {1e-12, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_SCALE,                {1e-12, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_SQR,                  {1e-12, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_SQRT,                 {1e-12, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_CLAMP,                {0,     0,     0,     na,    na}},
    {GGML_OP_ADD1,                 {1e-12, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_ADD_ID,               {1e-12, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_ACC,                  {1e-12, na,    na,    na,    na}},
    {GGML_OP_SET,                  {0,     0,     0,     na,    na}},
    {GGML_OP_LOG,                  {1e-7,  2e-6,  1e-4,  na,    na}},
    {GGML_OP_SIN,                  {1e-7,  2e-6,  1e-4,  na,    na}},
    {GGML_OP_COS,                  {1e-7,  2e-6,  1e-4,  na,    na}},
    {GGML_OP_LEAKY_RELU,           {1e-12, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_FILL,                 {0,     0,     0,     na,    na}},
    {GGML_OP_SILU_BACK,            {1e-7,  2e-6,  1e-4,  na,    na}},
    {GGML_OP_OPT_STEP_ADAMW,       {1e-10, na,    na,    na,    na}},
    // SGD's w (1 - alpha wd) - alpha g is a float difference that can cancel on a one-element case.
    {GGML_OP_OPT_STEP_SGD,         {1e-10, na,    na,    na,    na}},
    {GGML_OP_UNARY,                {1e-7,  2e-6,  1e-4,  na,    na}},
    {GGML_OP_GLU,                  {1e-7,  2e-6,  1e-4,  na,    na}},
    {GGML_OP_SUM,                  {1e-10, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_SUM_ROWS,             {1e-10, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_MEAN,                 {1e-10, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_ARGMAX,               {0,     na,    na,    na,    na}},
    {GGML_OP_CUMSUM,               {1e-12, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_CROSS_ENTROPY_LOSS,   {1e-10, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_CROSS_ENTROPY_LOSS_BACK, {1e-10, 2e-6, 1e-4, na,   na}},
    {GGML_OP_GET_ROWS_BACK,        {1e-12, na,    na,    na,    na}},
    {GGML_OP_REPEAT,               {0,     0,     0,     na,    na}},
    {GGML_OP_CONCAT,               {0,     0,     0,     na,    na}},
    {GGML_OP_PAD,                  {0,     0,     0,     na,    na}},
    // UPSCALE: nearest copies exactly; the filtering modes place taps and weights in float (about
    // 1e-7 relative on positions up to a few dozen source elements).
    {GGML_OP_UPSCALE,              {1e-9,  2e-6,  1e-4,  na,    na}},
    {GGML_OP_TIMESTEP_EMBEDDING,   {1e-6,  na,    na,    na,    na}},
    {GGML_OP_REPEAT_BACK,          {1e-12, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_PAD_REFLECT_1D,       {0,     na,    na,    na,    na}},
    {GGML_OP_ROLL,                 {0,     0,     0,     na,    na}},
    {GGML_OP_ARANGE,               {1e-12, na,    na,    na,    na}},
    {GGML_OP_WIN_PART,             {0,     na,    na,    na,    na}},
    {GGML_OP_WIN_UNPART,           {0,     na,    na,    na,    na}},
    {GGML_OP_GET_REL_POS,          {0,     0,     0,     na,    na}},
    {GGML_OP_ADD_REL_POS,          {1e-12, na,    na,    na,    na}},
    {GGML_OP_TRI,                  {0,     na,    na,    na,    na}},
    {GGML_OP_DIAG,                 {0,     0,     0,     na,    na}},
    // SOLVE_TRI: forward substitution in float on well-conditioned systems (n up to 64).
    {GGML_OP_SOLVE_TRI,            {1e-9,  na,    na,    na,    na}},
    {GGML_OP_NORM,                 {1e-8,  na,    na,    na,    na}},
    {GGML_OP_RMS_NORM,             {1e-8,  na,    na,    na,    na}},
    {GGML_OP_GROUP_NORM,           {1e-8,  na,    na,    na,    na}},
    {GGML_OP_L2_NORM,              {1e-8,  na,    na,    na,    na}},
    {GGML_OP_MUL_MAT,              {1e-8,  2e-6,  1e-4,  5e-4,  5e-4}},
    {GGML_OP_MUL_MAT_ID,           {1e-8,  2e-6,  1e-4,  5e-4,  5e-4}},
    {GGML_OP_OUT_PROD,             {1e-8,  2e-6,  1e-4,  5e-4,  5e-4}},
    {GGML_OP_RMS_NORM_BACK,        {1e-7,  na,    na,    na,    na}},
    {GGML_OP_SOFT_MAX_BACK,        {1e-7,  na,    na,    na,    na}},
    {GGML_OP_DIAG_MASK_INF,        {0,     0,     0,     na,    na}},
    {GGML_OP_DIAG_MASK_ZERO,       {0,     0,     0,     na,    na}},
    {GGML_OP_ROPE_BACK,            {1e-6,  2e-6,  na,    na,    na}},
    {GGML_OP_SOFT_MAX,             {1e-8,  2e-6,  na,    na,    na}},
    {GGML_OP_ROPE,                 {1e-6,  2e-6,  na,    na,    na}},
    {GGML_OP_FLASH_ATTN_EXT,       {1e-6,  5e-4,  na,    na,    na}},
    {GGML_OP_LIGHTNING_INDEXER,    {1e-10, 1e-10, na,    na,    na}},
    {GGML_OP_DSV4_HC_COMB,         {1e-10, na,    na,    na,    na}},
    {GGML_OP_DSV4_HC_PRE,          {1e-10, na,    na,    na,    na}},
    {GGML_OP_DSV4_HC_POST,         {1e-10, na,    na,    na,    na}},
    {GGML_OP_SSM_CONV,             {1e-10, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_SSM_SCAN,             {1e-10, na,    na,    na,    na}},
    {GGML_OP_RWKV_WKV6,            {1e-10, na,    na,    na,    na}},
    {GGML_OP_GATED_LINEAR_ATTN,    {1e-10, na,    na,    na,    na}},
    {GGML_OP_RWKV_WKV7,            {1e-10, na,    na,    na,    na}},
    {GGML_OP_GATED_DELTA_NET,      {1e-10, na,    na,    na,    na}},
    {GGML_OP_GET_ROWS,             {0,     0,     0,     0,     0}},
    {GGML_OP_SET_ROWS,             {0,     0,     0,     0,     0}},
    {GGML_OP_IM2COL,               {0,     0,     na,    na,    na}},
    {GGML_OP_IM2COL_3D,            {0,     0,     na,    na,    na}},
    {GGML_OP_IM2COL_BACK,          {1e-12, na,    na,    na,    na}},
    {GGML_OP_COL2IM_1D,            {1e-12, 2e-6,  1e-4,  na,    na}},
    {GGML_OP_CONV_2D,              {1e-8,  2e-6,  na,    na,    na}},
    {GGML_OP_CONV_2D_DW,           {1e-8,  2e-6,  na,    na,    na}},
    {GGML_OP_CONV_3D,              {1e-8,  2e-6,  na,    na,    na}},
    {GGML_OP_CONV_TRANSPOSE_1D,    {1e-8,  2e-6,  na,    na,    na}},
    {GGML_OP_CONV_TRANSPOSE_2D,    {1e-8,  2e-6,  na,    na,    na}},
    {GGML_OP_POOL_1D,              {1e-12, 1e-12, 1e-12, na,    na}},
    {GGML_OP_POOL_2D,              {1e-12, 1e-12, 1e-12, na,    na}},
    {GGML_OP_POOL_2D_BACK,         {1e-12, 1e-12, 1e-12, na,    na}},
    {GGML_OP_CUSTOM,               {0,     0,     0,     0,     0}},
    {GGML_OP_MAP_CUSTOM1,          {0,     0,     0,     0,     0}},
    {GGML_OP_MAP_CUSTOM2,          {0,     0,     0,     0,     0}},
    {GGML_OP_MAP_CUSTOM3,          {0,     0,     0,     0,     0}},
};
// clang-format on

// Registered extension operators (GGML_OP_CUSTOM nodes), by name. Their results are F32 or
// integer (then exact whatever the row says).
struct ExtensionRow {
    const char * name;
    double nmse;
};
constexpr ExtensionRow kExtensionTable[] = {
    // sd.rope_apply.v1: F32 products and one add per value (sd-ops.md 1.3) against the double formula.
    {"sd.rope_apply.v1", 1e-12},
    // sd.linear_i8.v1: exact int32 sums and an F32 epilogue the oracle repeats step by step.
    {"sd.linear_i8.v1", 1e-12},
    // sd.quantize_i8_convrot.v1: packed I8 codes and scales, exact (the oracle repeats the F32 steps);
    // see kRequantizeNmse for inputs that carry rounding error.
    {"sd.quantize_i8_convrot.v1", 0},
    // sd.sage_attn.v1: INT8 QK^T against exact attention; the contract's relative L2 error < 0.05
    // (sd-ops.md 5.1) squared. The max-abs half of the contract is tests/extensions/sd's.
    {"sd.sage_attn.v1", 0.05 * 0.05},
    // sd.sol_attn.v1: the oracle repeats the tile selection; F32 dots, exp and accumulation.
    {"sd.sol_attn.v1", 1e-10},
};

int column_of(ggml_type type) {
    switch (type) {
        case GGML_TYPE_F32:
            return kF32;
        case GGML_TYPE_F16:
            return kF16;
        case GGML_TYPE_BF16:
            return kBF16;
        case GGML_TYPE_Q8_0:
            return kQ8_0;
        case GGML_TYPE_Q4_0:
            return kQ4_0;
        default:
            // The other block formats take Q4_0's bounds: their products may round the activations
            // to 8 bits per block as Q4_0's do. Integer types do not lower precision.
            return ggml_is_quantized(type) ? kQ4_0 : -1;
    }
}

int key_column(const ggml_tensor * node) {
    int column = std::max<int>(kF32, column_of(node->type));
    for (const ggml_tensor * src : node->src) {
        if (src) column = std::max(column, column_of(src->type));
    }
    return column;
}

const Row * row_of(ggml_op op) {
    for (const Row & row : kTable) {
        if (row.op == op) return &row;
    }
    return nullptr;
}

}  // namespace

double nmse_bound(const ggml_tensor * node) {
    if (!ggml_is_float_type(node->type) && !ggml_is_quantized(node->type)) return 0.0;
    if (const char * name = ggml_ext_op_name(ggml_ext_node_op(node))) {
        for (const ExtensionRow & row : kExtensionTable)
            if (std::strcmp(row.name, name) == 0) return row.nmse;
        return 0.0;  // an extension operator without a row must match exactly
    }
    const Row * row = row_of(node->op);
    if (!row) return 0.0;  // an op without a row must match exactly
    const double bound = row->nmse[key_column(node)];
    if (bound != kNotApplicable) return bound;
    // A dtype the table does not expect for this op: the op's loosest documented bound.
    return *std::max_element(row->nmse.begin(), row->nmse.end());
}

}  // namespace ggx::ops
