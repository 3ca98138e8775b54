/* ggx — core tensor and graph API (ggml programming model).
 *
 * Shapes are ggml-ordered: ne[0] is the fastest-varying dimension. nb[i] is the byte stride of
 * dimension i. For block-quantized types nb[0] is the size of one block and ne[0] counts elements.
 *
 * The ABI is ggml's: every enum value, struct layout and macro below equals ggml 0.21.0's, so a
 * program compiled against ggml's headers runs against ggx (tests/core/test_abi.cpp checks it).
 *
 * Errors: a constructor given an invalid shape or type, a full arena or a full graph is a misuse.
 * By default, as in ggml, it prints a message that names the operator and the shapes to stderr and
 * aborts. In the returning mode (ggml_ext_set_error_mode(GGML_EXT_ERROR_RETURN), ggml-ext.h) it
 * returns NULL and records the message in its context (ggml_get_error) instead; the first error is
 * kept until ggml_clear_error, and a constructor given a NULL input returns NULL without replacing
 * it. "NULL with an error" below means: in the returning mode. See docs/errors.md. */
#ifndef GGML_H
#define GGML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------------------------------------- */
/* Declaration attributes                                                                          */

/* Marks a public function: exported from (GGML_BUILD) or imported into a Windows DLL, default
 * visibility in an ELF shared library (GGML_SHARED), a plain declaration otherwise. */
#if defined(GGML_SHARED) && defined(_WIN32) && !defined(__MINGW32__)
#if defined(GGML_BUILD)
#define GGML_API __declspec(dllexport) extern
#else
#define GGML_API __declspec(dllimport) extern
#endif
#elif defined(GGML_SHARED)
#define GGML_API __attribute__((visibility("default"))) extern
#else
#define GGML_API extern
#endif

/* GGML_DEPRECATED(declaration, "hint"): the declaration, with a deprecation warning naming hint. */
#if defined(__GNUC__)
#define GGML_DEPRECATED(func, hint) func __attribute__((deprecated(hint)))
#elif defined(_MSC_VER)
#define GGML_DEPRECATED(func, hint) __declspec(deprecated(hint)) func
#else
#define GGML_DEPRECATED(func, hint) func
#endif

/* GGML_ATTRIBUTE_FORMAT(fmt_index, first_arg_index): printf-style argument checking. */
#if !defined(__GNUC__)
#define GGML_ATTRIBUTE_FORMAT(...)
#elif defined(__MINGW32__) && !defined(__clang__)
#define GGML_ATTRIBUTE_FORMAT(...) __attribute__((format(gnu_printf, __VA_ARGS__)))
#else
#define GGML_ATTRIBUTE_FORMAT(...) __attribute__((format(printf, __VA_ARGS__)))
#endif

/* A function that never returns. */
#if defined(__cplusplus)
#define GGML_NORETURN [[noreturn]]
#elif defined(_MSC_VER)
#define GGML_NORETURN __declspec(noreturn)
#else
#define GGML_NORETURN _Noreturn
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Limits and constants                                                                            */

#define GGML_FILE_MAGIC 0x67676d6c /* "ggml" */
#define GGML_FILE_VERSION 2
#define GGML_QNT_VERSION 2           /* version of the quantization formats */
#define GGML_QNT_VERSION_FACTOR 1000 /* ftype = type + GGML_QNT_VERSION * GGML_QNT_VERSION_FACTOR */

#define GGML_MAX_DIMS 4
#define GGML_MAX_PARAMS 2048
#define GGML_MAX_SRC 10
#define GGML_MAX_N_THREADS 512
#define GGML_MAX_OP_PARAMS 64
#ifndef GGML_MAX_NAME
#define GGML_MAX_NAME 64
#endif

#define GGML_DEFAULT_N_THREADS 4
#define GGML_DEFAULT_GRAPH_SIZE 2048

/* ggml's alignment guarantee for tensor data and arena objects. ggx's arenas align to 64 bytes
 * (the widest SIMD vector), which meets it. */
#if UINTPTR_MAX == 0xFFFFFFFF
#define GGML_MEM_ALIGN 4
#elif defined(__EMSCRIPTEN__)
#define GGML_MEM_ALIGN 8
#else
#define GGML_MEM_ALIGN 16
#endif

#define GGML_EXIT_SUCCESS 0
#define GGML_EXIT_ABORTED 1

/* RoPE modes (the mode argument of ggml_rope_ext): NORMAL rotates adjacent pairs (2i, 2i+1), NEOX
 * the pairs (i, i + n_dims/2); MROPE, VISION and IMROPE are the multi-section modes. */
#define GGML_ROPE_TYPE_NORMAL 0
#define GGML_ROPE_TYPE_NEOX 2
#define GGML_ROPE_TYPE_MROPE 8
#define GGML_ROPE_TYPE_VISION 24
#define GGML_ROPE_TYPE_IMROPE 40
#define GGML_MROPE_SECTIONS 4

/* ggml 0.21.0 no longer pads attention masks; kept for programs written against older ggml. A
 * multiple of 1 is no padding: ggml_flash_attn_ext accepts any mask with at least n_q rows. */
#define GGML_KQ_MASK_PAD 1

/* ---------------------------------------------------------------------------------------------- */
/* Helper macros                                                                                   */

#define GGML_UNUSED(x) (void)(x)
/* Marks any number of expressions as used (evaluated only for their size). */
#define GGML_UNUSED_VARS(...)           \
    do {                                \
        (void)sizeof((__VA_ARGS__, 0)); \
    } while (0)

/* x rounded up to a multiple of n (n a power of two). */
#define GGML_PAD(x, n) (((x) + (n)-1) & ~((n)-1))

/* A statement that must never run: with assertions on (no NDEBUG) it reports and aborts. */
#if !defined(NDEBUG)
#define GGML_UNREACHABLE()                                    \
    do {                                                      \
        fprintf(stderr, "statement should be unreachable\n"); \
        abort();                                              \
    } while (0)
#elif defined(__GNUC__)
#define GGML_UNREACHABLE() __builtin_unreachable()
#elif defined(_MSC_VER)
#define GGML_UNREACHABLE() __assume(0)
#else
#define GGML_UNREACHABLE() ((void)0)
#endif

/* Print "file:line: message" and abort (see ggml_abort). */
#define GGML_ABORT(...) ggml_abort(__FILE__, __LINE__, __VA_ARGS__)
/* Abort with the failed condition's text unless x holds. */
#define GGML_ASSERT(x) \
    if (!(x)) GGML_ABORT("GGML_ASSERT(%s) failed", #x)

/* GGML_TENSOR_LOCALS(type, prefix, tensor, field): const locals prefix0..prefix3 holding
 * tensor->field[0..3] (0 when tensor is NULL), each marked used. */
#define GGML_TENSOR_LOCAL_(type, prefix, pointer, array, i)     \
    const type prefix##i = (pointer) ? (pointer)->array[i] : 0; \
    GGML_UNUSED(prefix##i);
#define GGML_TENSOR_LOCALS(type, prefix, pointer, array) \
    GGML_TENSOR_LOCAL_(type, prefix, pointer, array, 0)  \
    GGML_TENSOR_LOCAL_(type, prefix, pointer, array, 1)  \
    GGML_TENSOR_LOCAL_(type, prefix, pointer, array, 2)  \
    GGML_TENSOR_LOCAL_(type, prefix, pointer, array, 3)

/* Shapes and strides of src0 (ne0x, nb0x), src1 (ne1x, nb1x), src2 (ne2x, nb2x) and dst (nex, nbx),
 * for kernels whose node variables are named so. */
#define GGML_TENSOR_SRC_LOCALS_(i, src)         \
    GGML_TENSOR_LOCALS(int64_t, ne##i, src, ne) \
    GGML_TENSOR_LOCALS(size_t, nb##i, src, nb)
#define GGML_TENSOR_DST_LOCALS_              \
    GGML_TENSOR_LOCALS(int64_t, ne, dst, ne) \
    GGML_TENSOR_LOCALS(size_t, nb, dst, nb)
#define GGML_TENSOR_UNARY_OP_LOCALS GGML_TENSOR_SRC_LOCALS_(0, src0) GGML_TENSOR_DST_LOCALS_
#define GGML_TENSOR_BINARY_OP_LOCALS01 GGML_TENSOR_SRC_LOCALS_(0, src0) GGML_TENSOR_SRC_LOCALS_(1, src1)
#define GGML_TENSOR_BINARY_OP_LOCALS GGML_TENSOR_BINARY_OP_LOCALS01 GGML_TENSOR_DST_LOCALS_
#define GGML_TENSOR_TERNARY_OP_LOCALS \
    GGML_TENSOR_BINARY_OP_LOCALS01 GGML_TENSOR_SRC_LOCALS_(2, src2) GGML_TENSOR_DST_LOCALS_

#ifdef __cplusplus
extern "C" {
#endif

/* A fatal-error handler given ggml_abort's formatted message (ggml's ggml_set_abort_callback). */
typedef void (*ggml_abort_callback_t)(const char * error_message);

/* Print "file:line: " and the printf-formatted message to stderr, then abort the process. */
GGML_NORETURN GGML_ATTRIBUTE_FORMAT(3, 4) GGML_API
    void ggml_abort(const char * file, int line, const char * fmt, ...);

/* Abort callback of a computation: polled between nodes and inside long kernels; returning true
 * stops the graph. */
typedef bool (*ggml_abort_callback)(void * data);

/* Status codes shared by every layer. */
enum ggml_status {
    GGML_STATUS_ALLOC_FAILED = -2,
    GGML_STATUS_FAILED = -1,
    GGML_STATUS_SUCCESS = 0,
    GGML_STATUS_ABORTED = 1,
};

/* ---------------------------------------------------------------------------------------------- */
/* Types                                                                                           */

/* Tensor element types. The values are the GGUF type ids; ids 4, 5, 31-33 and 36-38 belong to
 * removed formats. ggx computes with F32, F16, BF16, I8, I16, I32, Q8_0 and Q4_0; every other
 * type has its traits (name, block size and bytes) and tensors of it can be created and moved, but
 * no kernel accepts it yet (issue 19 adds them). */
enum ggml_type {
    GGML_TYPE_F32 = 0,
    GGML_TYPE_F16 = 1,
    GGML_TYPE_Q4_0 = 2, /* blocks of 32 4-bit values (offset 8) with one F16 scale: 18 bytes */
    GGML_TYPE_Q4_1 = 3,
    GGML_TYPE_Q5_0 = 6,
    GGML_TYPE_Q5_1 = 7,
    GGML_TYPE_Q8_0 = 8, /* blocks of 32 int8 values with one F16 scale: 34 bytes */
    GGML_TYPE_Q8_1 = 9,
    GGML_TYPE_Q2_K = 10,
    GGML_TYPE_Q3_K = 11,
    GGML_TYPE_Q4_K = 12,
    GGML_TYPE_Q5_K = 13,
    GGML_TYPE_Q6_K = 14,
    GGML_TYPE_Q8_K = 15,
    GGML_TYPE_IQ2_XXS = 16,
    GGML_TYPE_IQ2_XS = 17,
    GGML_TYPE_IQ3_XXS = 18,
    GGML_TYPE_IQ1_S = 19,
    GGML_TYPE_IQ4_NL = 20,
    GGML_TYPE_IQ3_S = 21,
    GGML_TYPE_IQ2_S = 22,
    GGML_TYPE_IQ4_XS = 23,
    GGML_TYPE_I8 = 24,
    GGML_TYPE_I16 = 25,
    GGML_TYPE_I32 = 26,
    GGML_TYPE_I64 = 27,
    GGML_TYPE_F64 = 28,
    GGML_TYPE_IQ1_M = 29,
    GGML_TYPE_BF16 = 30,
    GGML_TYPE_TQ1_0 = 34,
    GGML_TYPE_TQ2_0 = 35,
    GGML_TYPE_MXFP4 = 39,
    GGML_TYPE_NVFP4 = 40,
    GGML_TYPE_Q1_0 = 41,
    GGML_TYPE_Q2_0 = 42,
    GGML_TYPE_COUNT = 43,
};

/* Requested precision of an op's accumulation (kept in its op_params). */
enum ggml_prec {
    GGML_PREC_DEFAULT = 0,
    GGML_PREC_F32 = 10,
};

/* Hints a matrix product may use (ggml_mul_mat_set_hint). */
enum ggml_op_hint {
    GGML_HINT_NONE = 0,
    GGML_HINT_SRC0_IS_HADAMARD = 1,
};

/* Model file types: the dominant tensor type of a legacy ggml model file (1-D tensors excepted). */
enum ggml_ftype {
    GGML_FTYPE_UNKNOWN = -1,
    GGML_FTYPE_ALL_F32 = 0,
    GGML_FTYPE_MOSTLY_F16 = 1,
    GGML_FTYPE_MOSTLY_Q4_0 = 2,
    GGML_FTYPE_MOSTLY_Q4_1 = 3,
    GGML_FTYPE_MOSTLY_Q4_1_SOME_F16 = 4, /* token embedding and output weights F16 */
    GGML_FTYPE_MOSTLY_Q8_0 = 7,
    GGML_FTYPE_MOSTLY_Q5_0 = 8,
    GGML_FTYPE_MOSTLY_Q5_1 = 9,
    GGML_FTYPE_MOSTLY_Q2_K = 10,
    GGML_FTYPE_MOSTLY_Q3_K = 11,
    GGML_FTYPE_MOSTLY_Q4_K = 12,
    GGML_FTYPE_MOSTLY_Q5_K = 13,
    GGML_FTYPE_MOSTLY_Q6_K = 14,
    GGML_FTYPE_MOSTLY_IQ2_XXS = 15,
    GGML_FTYPE_MOSTLY_IQ2_XS = 16,
    GGML_FTYPE_MOSTLY_IQ3_XXS = 17,
    GGML_FTYPE_MOSTLY_IQ1_S = 18,
    GGML_FTYPE_MOSTLY_IQ4_NL = 19,
    GGML_FTYPE_MOSTLY_IQ3_S = 20,
    GGML_FTYPE_MOSTLY_IQ2_S = 21,
    GGML_FTYPE_MOSTLY_IQ4_XS = 22,
    GGML_FTYPE_MOSTLY_IQ1_M = 23,
    GGML_FTYPE_MOSTLY_BF16 = 24,
    GGML_FTYPE_MOSTLY_MXFP4 = 25,
    GGML_FTYPE_MOSTLY_NVFP4 = 26,
    GGML_FTYPE_MOSTLY_Q1_0 = 27,
    GGML_FTYPE_MOSTLY_Q2_0 = 28,
};

#define GGML_QK8_0 32
#define GGML_QK4_0 32

/* IEEE 754 binary16, stored as its bits. */
typedef uint16_t ggml_fp16_t;
/* bfloat16 (the top half of an IEEE binary32), stored as its bits. */
typedef struct {
    uint16_t bits;
} ggml_bf16_t;

/* Q8_0 block: value[i] = d * qs[i]. */
typedef struct {
    ggml_fp16_t d;
    int8_t qs[GGML_QK8_0];
} ggml_block_q8_0;

/* Q4_0 block: byte j holds element j in its low nibble and element j + 16 in its high nibble;
 * value = d * (nibble - 8). */
typedef struct {
    ggml_fp16_t d;
    uint8_t qs[GGML_QK4_0 / 2];
} ggml_block_q4_0;

/* The traits below hold for every value of enum ggml_type, whether ggx computes with the type or
 * not; any other value (a removed id, GGML_TYPE_COUNT) is named "unknown", with a block of one
 * element and zero bytes. */

/* Name of a type ("f32", "q8_0", "q4_K", ...). */
const char * ggml_type_name(enum ggml_type type);
/* Elements per block: 1 for the plain types, ggml's block size for the quantized ones (32 for
 * Q8_0 and Q4_0, 256 for the K-quants). */
int64_t ggml_blck_size(enum ggml_type type);
/* Bytes per block (for unquantized types: bytes per element). */
size_t ggml_type_size(enum ggml_type type);
/* True for the block-quantized types. */
bool ggml_is_quantized(enum ggml_type type);
/* True for F32, F16 and BF16. */
bool ggml_is_float_type(enum ggml_type type);
/* Bytes of a contiguous row of ne elements; ne must be a multiple of the block size. */
size_t ggml_row_size(enum ggml_type type, int64_t ne);

/* Exact conversions. F32 -> F16/BF16 round to nearest, ties to even; NaN stays NaN (quiet),
 * overflow gives infinity, F16 subnormals are produced and read exactly. */
float ggml_fp16_to_fp32(ggml_fp16_t h);
ggml_fp16_t ggml_fp32_to_fp16(float f);
float ggml_bf16_to_fp32(ggml_bf16_t h);
ggml_bf16_t ggml_fp32_to_bf16(float f);
void ggml_fp16_to_fp32_row(const ggml_fp16_t * x, float * y, int64_t n);
void ggml_fp32_to_fp16_row(const float * x, ggml_fp16_t * y, int64_t n);
void ggml_bf16_to_fp32_row(const ggml_bf16_t * x, float * y, int64_t n);
void ggml_fp32_to_bf16_row(const float * x, ggml_bf16_t * y, int64_t n);
/* The scalar reference of ggml_fp32_to_bf16_row: the same values, one ggml_fp32_to_bf16 at a time. */
void ggml_fp32_to_bf16_row_ref(const float * x, ggml_bf16_t * y, int64_t n);

/* Convert n F32 values (n a multiple of the block size) into a row of type at y; returns bytes
 * written, or 0 (writing nothing) for a type ggx has no conversion for (docs/quantization.md lists
 * the block formats ggx converts, each with its rounding rule). F16/BF16 round to nearest even; I8/I16/I32 round to nearest even and
 * saturate (NaN -> 0). Q8_0 per block: d = amax / 127, q = round-half-away(x / d). Q4_0 per block: m = the
 * value of largest magnitude (first one on ties), d = m / -8, q = min(15, trunc(x / d + 8.5)). d is stored as
 * F16; the division uses the unrounded d (id = 1 / d, 0 when d == 0). */
size_t ggml_quantize_row(enum ggml_type type, const float * x, void * y, int64_t n);
/* Convert a row of n values (n a multiple of the block size) of type into F32. False (writing
 * nothing) for a type ggx has no conversion for, as ggml_quantize_row. */
bool ggml_dequantize_row(enum ggml_type type, const void * x, float * y, int64_t n);

/* ---------------------------------------------------------------------------------------------- */
/* Operators                                                                                       */

/* Every ggml operator, in ggml's order. docs/ops.md says what each one computes and which devices
 * compute it (the CPU computes all of them; FLASH_ATTN_BACK cannot be built, as in ggml). */
enum ggml_op {
    GGML_OP_NONE = 0,

    GGML_OP_DUP,
    GGML_OP_ADD,
    GGML_OP_ADD_ID,
    GGML_OP_ADD1,
    GGML_OP_ACC,
    GGML_OP_SUB,
    GGML_OP_MUL,
    GGML_OP_DIV,
    GGML_OP_SQR,
    GGML_OP_SQRT,
    GGML_OP_LOG,
    GGML_OP_SIN,
    GGML_OP_COS,
    GGML_OP_SUM,
    GGML_OP_SUM_ROWS,
    GGML_OP_CUMSUM,
    GGML_OP_MEAN,
    GGML_OP_ARGMAX,
    GGML_OP_COUNT_EQUAL,
    GGML_OP_REPEAT,
    GGML_OP_REPEAT_BACK,
    GGML_OP_CONCAT,
    GGML_OP_SILU_BACK,
    GGML_OP_NORM,
    GGML_OP_RMS_NORM,
    GGML_OP_RMS_NORM_BACK,
    GGML_OP_GROUP_NORM,
    GGML_OP_L2_NORM,

    GGML_OP_MUL_MAT,
    GGML_OP_MUL_MAT_ID,
    GGML_OP_OUT_PROD,

    GGML_OP_SCALE,
    GGML_OP_SET,
    GGML_OP_CPY,
    GGML_OP_CONT,
    GGML_OP_RESHAPE,
    GGML_OP_VIEW,
    GGML_OP_PERMUTE,
    GGML_OP_TRANSPOSE,
    GGML_OP_GET_ROWS,
    GGML_OP_GET_ROWS_BACK,
    GGML_OP_SET_ROWS,
    GGML_OP_DIAG,
    GGML_OP_DIAG_MASK_INF,
    GGML_OP_DIAG_MASK_ZERO,
    GGML_OP_SOFT_MAX,
    GGML_OP_SOFT_MAX_BACK,
    GGML_OP_ROPE,
    GGML_OP_ROPE_BACK,
    GGML_OP_CLAMP,
    GGML_OP_CONV_TRANSPOSE_1D,
    GGML_OP_IM2COL,
    GGML_OP_IM2COL_BACK,
    GGML_OP_IM2COL_3D,
    GGML_OP_COL2IM_1D,
    GGML_OP_CONV_2D,
    GGML_OP_CONV_3D,
    GGML_OP_CONV_2D_DW,
    GGML_OP_CONV_TRANSPOSE_2D,
    GGML_OP_POOL_1D,
    GGML_OP_POOL_2D,
    GGML_OP_POOL_2D_BACK,
    GGML_OP_UPSCALE,
    GGML_OP_PAD,
    GGML_OP_PAD_REFLECT_1D,
    GGML_OP_ROLL,
    GGML_OP_ARANGE,
    GGML_OP_TIMESTEP_EMBEDDING,
    GGML_OP_ARGSORT,
    GGML_OP_TOP_K,
    GGML_OP_LEAKY_RELU,
    GGML_OP_TRI,
    GGML_OP_FILL,

    GGML_OP_FLASH_ATTN_EXT,
    GGML_OP_FLASH_ATTN_BACK,
    GGML_OP_SSM_CONV,
    GGML_OP_SSM_SCAN,
    GGML_OP_WIN_PART,
    GGML_OP_WIN_UNPART,
    GGML_OP_GET_REL_POS,
    GGML_OP_ADD_REL_POS,
    GGML_OP_RWKV_WKV6,
    GGML_OP_GATED_LINEAR_ATTN,
    GGML_OP_RWKV_WKV7,
    GGML_OP_SOLVE_TRI,
    GGML_OP_GATED_DELTA_NET,
    GGML_OP_LIGHTNING_INDEXER,
    GGML_OP_DSV4_HC_COMB,
    GGML_OP_DSV4_HC_PRE,
    GGML_OP_DSV4_HC_POST,

    GGML_OP_UNARY,

    GGML_OP_MAP_CUSTOM1,
    GGML_OP_MAP_CUSTOM2,
    GGML_OP_MAP_CUSTOM3,

    GGML_OP_CUSTOM,

    GGML_OP_CROSS_ENTROPY_LOSS,
    GGML_OP_CROSS_ENTROPY_LOSS_BACK,
    GGML_OP_OPT_STEP_ADAMW,
    GGML_OP_OPT_STEP_SGD,

    GGML_OP_GLU,

    GGML_OP_COUNT,
};

/* Sub-operations of GGML_OP_UNARY (op_params, see ggml_get_unary_op). ggx's kernels compute RELU,
 * SILU, GELU (tanh approximation), GELU_QUICK, SIGMOID and TANH. */
enum ggml_unary_op {
    GGML_UNARY_OP_ABS,
    GGML_UNARY_OP_SGN,
    GGML_UNARY_OP_NEG,
    GGML_UNARY_OP_STEP,
    GGML_UNARY_OP_TANH,
    GGML_UNARY_OP_ELU,
    GGML_UNARY_OP_RELU,
    GGML_UNARY_OP_SIGMOID,
    GGML_UNARY_OP_GELU,
    GGML_UNARY_OP_GELU_QUICK,
    GGML_UNARY_OP_SILU,
    GGML_UNARY_OP_HARDSWISH,
    GGML_UNARY_OP_HARDSIGMOID,
    GGML_UNARY_OP_EXP,
    GGML_UNARY_OP_EXPM1,
    GGML_UNARY_OP_SOFTPLUS,
    GGML_UNARY_OP_GELU_ERF,
    GGML_UNARY_OP_XIELU,
    GGML_UNARY_OP_FLOOR,
    GGML_UNARY_OP_CEIL,
    GGML_UNARY_OP_ROUND,
    GGML_UNARY_OP_TRUNC,

    GGML_UNARY_OP_COUNT,
};

/* Sub-operations of GGML_OP_GLU. ggx's kernels compute GEGLU and SWIGLU. */
enum ggml_glu_op {
    GGML_GLU_OP_REGLU,
    GGML_GLU_OP_GEGLU,
    GGML_GLU_OP_SWIGLU,
    GGML_GLU_OP_SWIGLU_OAI,
    GGML_GLU_OP_GEGLU_ERF,
    GGML_GLU_OP_GEGLU_QUICK,

    GGML_GLU_OP_COUNT,
};

/* Pooling of ggml_pool_1d / ggml_pool_2d. */
enum ggml_op_pool {
    GGML_OP_POOL_MAX,
    GGML_OP_POOL_AVG,
    GGML_OP_POOL_COUNT,
};

/* Resampling of ggml_upscale / ggml_interpolate. A mode may be combined (bitwise or) with
 * ggml_scale_flag values (ANTIALIAS only with BILINEAR). */
enum ggml_scale_mode {
    GGML_SCALE_MODE_NEAREST = 0,
    GGML_SCALE_MODE_BILINEAR = 1,
    GGML_SCALE_MODE_BICUBIC = 2,

    GGML_SCALE_MODE_COUNT
};

enum ggml_scale_flag {
    GGML_SCALE_FLAG_ALIGN_CORNERS = (1 << 8),
    GGML_SCALE_FLAG_ANTIALIAS = (1 << 9),
};

/* Row order of ggml_argsort. */
enum ggml_sort_order {
    GGML_SORT_ORDER_ASC,
    GGML_SORT_ORDER_DESC,
};

/* The part of a matrix ggml_tri keeps. */
enum ggml_tri_type {
    GGML_TRI_TYPE_UPPER_DIAG = 0,
    GGML_TRI_TYPE_UPPER = 1,
    GGML_TRI_TYPE_LOWER_DIAG = 2,
    GGML_TRI_TYPE_LOWER = 3,
};

/* Kinds of objects in a context's arena. */
enum ggml_object_type {
    GGML_OBJECT_TYPE_TENSOR,
    GGML_OBJECT_TYPE_GRAPH,
    GGML_OBJECT_TYPE_WORK_BUFFER,
};

/* Severity of a log message; CONT continues the previous message. */
enum ggml_log_level {
    GGML_LOG_LEVEL_NONE = 0,
    GGML_LOG_LEVEL_DEBUG = 1,
    GGML_LOG_LEVEL_INFO = 2,
    GGML_LOG_LEVEL_WARN = 3,
    GGML_LOG_LEVEL_ERROR = 4,
    GGML_LOG_LEVEL_CONT = 5,
};

/* Priorities of compute threads. */
enum ggml_sched_priority {
    GGML_SCHED_PRIO_LOW = -1,
    GGML_SCHED_PRIO_NORMAL,
    GGML_SCHED_PRIO_MEDIUM,
    GGML_SCHED_PRIO_HIGH,
    GGML_SCHED_PRIO_REALTIME,
};

/* Markers stored in op_params[0] of GGML_OP_CUSTOM nodes, so every layer can tell an application
 * CPU callback from a registered extension operator. */
#define GGML_CUSTOM_MARKER_CPU_CALLBACK 0x42435847u /* "GXCB" */
#define GGML_CUSTOM_MARKER_EXTENSION 0x58455847u    /* "GXEX" */

enum ggml_custom_kind {
    GGML_CUSTOM_KIND_NONE = 0, /* not a GGML_OP_CUSTOM node */
    GGML_CUSTOM_KIND_CPU_CALLBACK,
    GGML_CUSTOM_KIND_EXTENSION,
};

/* Tensor flags: the tensor is a graph input, a graph output, trainable parameters, a loss term;
 * COMPUTE is set on every node added to a graph. */
enum ggml_tensor_flag {
    GGML_TENSOR_FLAG_INPUT = 1,
    GGML_TENSOR_FLAG_OUTPUT = 2,
    GGML_TENSOR_FLAG_PARAM = 4,
    GGML_TENSOR_FLAG_LOSS = 8,
    GGML_TENSOR_FLAG_COMPUTE = 16,
};

struct ggml_backend_buffer;

/* A tensor: ggml's layout, field for field (336 bytes on LP64). */
struct ggml_tensor {
    enum ggml_type type;
    struct ggml_backend_buffer * buffer; /* backend buffer holding data; NULL in host contexts */

    int64_t ne[GGML_MAX_DIMS]; /* elements per dimension */
    size_t nb[GGML_MAX_DIMS];  /* byte strides */

    enum ggml_op op;
    int32_t op_params[GGML_MAX_OP_PARAMS / sizeof(int32_t)];
    int32_t flags;

    struct ggml_tensor * src[GGML_MAX_SRC];

    struct ggml_tensor * view_src; /* storage owner for views and in-place results; NULL if owner */
    size_t view_offs;              /* byte offset into view_src */

    void * data;
    char name[GGML_MAX_NAME];
    void * extra; /* backend-private */

    char padding[8];
};

static const size_t GGML_TENSOR_SIZE = sizeof(struct ggml_tensor);

/* GUIDs identify backends. */
typedef uint8_t ggml_guid[16];
typedef ggml_guid * ggml_guid_t;

struct ggml_object;
typedef void (*ggml_error_callback)(const char * message, void * user_data);

struct ggml_init_params {
    size_t mem_size;   /* bytes of the arena (metadata, graphs and, unless no_alloc, tensor data) */
    void * mem_buffer; /* caller-owned arena, or NULL to let the context allocate it */
    bool no_alloc;     /* true: tensors get no data; backend buffers provide it later */
};

/* ---------------------------------------------------------------------------------------------- */
/* Contexts                                                                                        */

/* Create a context over an arena. Returns NULL if the arena cannot be allocated. A mem_size of 0
 * gives an arena of GGML_MEM_ALIGN bytes (mem_buffer ignored), as in ggml: too small for any object.
 * The context owns an arena it allocated; a caller-provided mem_buffer stays the caller's. */
struct ggml_context * ggml_init(struct ggml_init_params params);
/* Destroy a context; every tensor and graph created in it becomes invalid. NULL is ignored. */
void ggml_free(struct ggml_context * ctx);
/* Bytes of the arena in use / in total. */
size_t ggml_used_mem(const struct ggml_context * ctx);
size_t ggml_get_mem_size(const struct ggml_context * ctx);
bool ggml_get_no_alloc(const struct ggml_context * ctx);
/* Switch no-alloc mode for tensors created from now on. */
void ggml_set_no_alloc(struct ggml_context * ctx, bool no_alloc);
/* Arena bytes one tensor takes beyond its data rounded up to GGML_MEM_ALIGN: its metadata and the
 * extra alignment of ggx's arena (64 bytes), so that ggml's sizing rule holds. */
size_t ggml_tensor_overhead(void);

/* The first recorded error message of ctx, or NULL. The string lives until the next clear. */
const char * ggml_get_error(const struct ggml_context * ctx);
/* Forget the recorded error so later failures are reported again. */
void ggml_clear_error(struct ggml_context * ctx);
/* Call cb(message, user_data) on every error recorded in ctx, also just before an abort (NULL
 * restores the default: none). */
void ggml_set_error_callback(struct ggml_context * ctx, ggml_error_callback cb, void * user_data);
/* Override the process's error mode for ctx: true aborts on its errors, false returns NULL with the
 * error recorded (for contexts built from untrusted input in an aborting process). */
void ggml_set_abort_on_error(struct ggml_context * ctx, bool abort_on_error);

/* Iterate the tensors of a context in creation order; NULL at the end. */
struct ggml_tensor * ggml_get_first_tensor(const struct ggml_context * ctx);
struct ggml_tensor * ggml_get_next_tensor(const struct ggml_context * ctx, struct ggml_tensor * tensor);
/* The first tensor of ctx named name, or NULL. */
struct ggml_tensor * ggml_get_tensor(struct ggml_context * ctx, const char * name);
/* Largest ggml_nbytes of any tensor in ctx. */
size_t ggml_get_max_tensor_size(const struct ggml_context * ctx);

/* ---------------------------------------------------------------------------------------------- */
/* Tensors                                                                                         */

/* New contiguous tensor of n_dims (1..4) dimensions, all ne >= 0; ne[0] must be a multiple of the
 * type's block size. Its data is in the arena unless the context is no-alloc (then NULL).
 * NULL with an error on invalid arguments or when the arena is full. */
struct ggml_tensor * ggml_new_tensor(struct ggml_context * ctx, enum ggml_type type, int n_dims,
                                     const int64_t * ne);
struct ggml_tensor * ggml_new_tensor_1d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0);
struct ggml_tensor * ggml_new_tensor_2d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0,
                                        int64_t ne1);
struct ggml_tensor * ggml_new_tensor_3d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0,
                                        int64_t ne1, int64_t ne2);
struct ggml_tensor * ggml_new_tensor_4d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0,
                                        int64_t ne1, int64_t ne2, int64_t ne3);
/* New tensor with a's type and shape (contiguous, own storage, no data copied). */
struct ggml_tensor * ggml_dup_tensor(struct ggml_context * ctx, const struct ggml_tensor * a);
/* A view of all of a with a's shape and strides (op VIEW). */
struct ggml_tensor * ggml_view_tensor(struct ggml_context * ctx, struct ggml_tensor * a);

/* The tensor's name (owned by the tensor; empty by default). */
const char * ggml_get_name(const struct ggml_tensor * tensor);
/* Set the name (truncated to GGML_MAX_NAME - 1 bytes); returns tensor. */
struct ggml_tensor * ggml_set_name(struct ggml_tensor * tensor, const char * name);
/* printf-style ggml_set_name. */
struct ggml_tensor * ggml_format_name(struct ggml_tensor * tensor, const char * fmt, ...);
/* Mark a tensor as a graph input / output (the allocator pins such tensors). */
void ggml_set_input(struct ggml_tensor * tensor);
void ggml_set_output(struct ggml_tensor * tensor);
/* Data pointer (NULL for no-alloc tensors not yet allocated). */
void * ggml_get_data(const struct ggml_tensor * tensor);
float * ggml_get_data_f32(const struct ggml_tensor * tensor);
/* The custom kind of a node (see GGML_CUSTOM_MARKER_*). */
enum ggml_custom_kind ggml_get_custom_kind(const struct ggml_tensor * tensor);
/* Unary / GLU sub-operation of a GGML_OP_UNARY / GGML_OP_GLU node. */
enum ggml_unary_op ggml_get_unary_op(const struct ggml_tensor * tensor);
enum ggml_glu_op ggml_get_glu_op(const struct ggml_tensor * tensor);

/* Static upper-case names ("MUL_MAT", "SILU", "SWIGLU"); "unknown" for out-of-range values. */
const char * ggml_op_name(enum ggml_op op);
/* A short formula for display ("x+y", "x*y", "softmax(x)"); "unknown" for out-of-range values. */
const char * ggml_op_symbol(enum ggml_op op);
/* True when node's operator allows the result to be written over src[0] (exactly the same layout,
 * src[0] not read again afterwards): what the graph allocator relies on for in-place reuse. */
bool ggml_op_can_inplace(const struct ggml_tensor * node);
const char * ggml_unary_op_name(enum ggml_unary_op op);
const char * ggml_glu_op_name(enum ggml_glu_op op);
/* ggml_op_name, or the unary/GLU sub-operation name for UNARY and GLU nodes. */
const char * ggml_op_desc(const struct ggml_tensor * tensor);

/* Number of elements (product of ne). */
int64_t ggml_nelements(const struct ggml_tensor * tensor);
/* ne[1] * ne[2] * ne[3]. */
int64_t ggml_nrows(const struct ggml_tensor * tensor);
/* Bytes spanned by the tensor's elements through its strides (0 if empty). */
size_t ggml_nbytes(const struct ggml_tensor * tensor);
/* Number of dimensions ignoring trailing ne == 1 (at least 1). */
int ggml_n_dims(const struct ggml_tensor * tensor);
size_t ggml_element_size(const struct ggml_tensor * tensor); /* ggml_type_size of its type */

/* Shape predicates: no elements; one element; ne1..3 == 1; ne2, ne3 == 1; ne3 == 1. */
bool ggml_is_empty(const struct ggml_tensor * tensor);
bool ggml_is_scalar(const struct ggml_tensor * tensor);
bool ggml_is_vector(const struct ggml_tensor * tensor);
bool ggml_is_matrix(const struct ggml_tensor * tensor);
bool ggml_is_3d(const struct ggml_tensor * tensor);
/* Elements laid out densely in ne order, with no gaps. */
bool ggml_is_contiguous(const struct ggml_tensor * tensor);
/* Same as ggml_is_contiguous. */
bool ggml_is_contiguous_0(const struct ggml_tensor * tensor);
/* _1: rows dense, the stride of dim 1 free, dims 2 and 3 packed after dim 1 (gaps between rows).
 * _2: rows dense, dims 1 and 2 free, dim 3 packed after dim 2. */
bool ggml_is_contiguous_1(const struct ggml_tensor * tensor);
bool ggml_is_contiguous_2(const struct ggml_tensor * tensor);
/* Each row is dense (nb[0] is the type size); rows may be anywhere. */
bool ggml_is_contiguous_rows(const struct ggml_tensor * tensor);
/* Elements occupy exactly ggml_nbytes bytes with strides in decreasing order (dims may be
 * padded only when ne == 1). */
bool ggml_is_contiguously_allocated(const struct ggml_tensor * tensor);
/* nb[0] > nb[1] (dims 0 and 1 swapped), or any nb[i] > nb[i+1]. */
bool ggml_is_transposed(const struct ggml_tensor * tensor);
bool ggml_is_permuted(const struct ggml_tensor * tensor);
/* Equal ne / equal nb in every dimension. */
bool ggml_are_same_shape(const struct ggml_tensor * a, const struct ggml_tensor * b);
bool ggml_are_same_stride(const struct ggml_tensor * a, const struct ggml_tensor * b);
/* True when every b->ne[i] is a multiple of a->ne[i] (a can be tiled to b's shape). */
bool ggml_can_repeat(const struct ggml_tensor * a, const struct ggml_tensor * b);

/* ---------------------------------------------------------------------------------------------- */
/* Views, layout and copies. View results share a's storage (view_src) and have no data of their own. */

/* Views with explicit shape, byte strides and byte offset; must lie inside a's storage. */
struct ggml_tensor * ggml_view_1d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0,
                                  size_t offset);
struct ggml_tensor * ggml_view_2d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                  size_t nb1, size_t offset);
struct ggml_tensor * ggml_view_3d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                  int64_t ne2, size_t nb1, size_t nb2, size_t offset);
struct ggml_tensor * ggml_view_4d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                  int64_t ne2, int64_t ne3, size_t nb1, size_t nb2, size_t nb3,
                                  size_t offset);
/* Reshapes of a contiguous a to b's shape / the given shape (same element count). */
struct ggml_tensor * ggml_reshape(struct ggml_context * ctx, struct ggml_tensor * a,
                                  const struct ggml_tensor * b);
struct ggml_tensor * ggml_reshape_1d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0);
struct ggml_tensor * ggml_reshape_2d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0,
                                     int64_t ne1);
struct ggml_tensor * ggml_reshape_3d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0,
                                     int64_t ne1, int64_t ne2);
struct ggml_tensor * ggml_reshape_4d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0,
                                     int64_t ne1, int64_t ne2, int64_t ne3);
/* Dimension i of a becomes dimension axis_i of the result; the axes are a permutation of 0..3. */
struct ggml_tensor * ggml_permute(struct ggml_context * ctx, struct ggml_tensor * a, int axis0, int axis1,
                                  int axis2, int axis3);
/* Swap dimensions 0 and 1. */
struct ggml_tensor * ggml_transpose(struct ggml_context * ctx, struct ggml_tensor * a);

/* Copy a into b (same element count, element order of each), converting to b's type; the result
 * is a view of b with src = {a, b}. Any type to itself; F32/F16/BF16 to any of those or to
 * Q8_0/Q4_0; Q8_0/Q4_0 to F32. A CPY node always writes into itself. */
struct ggml_tensor * ggml_cpy(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
/* New contiguous tensor of type holding a converted (op CPY, src = {a, NULL}, own storage). */
struct ggml_tensor * ggml_cast(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_type type);
/* Contiguous copy of a with the same shape and type (op DUP); _inplace: the result is a view of a. */
struct ggml_tensor * ggml_dup(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_dup_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
/* Contiguous copy of a (op CONT), optionally with a new shape of the same element count (_1d.._3d:
 * ggml_cont_4d with the omitted sizes 1). */
struct ggml_tensor * ggml_cont(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_cont_1d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0);
struct ggml_tensor * ggml_cont_2d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1);
struct ggml_tensor * ggml_cont_3d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                  int64_t ne2);
struct ggml_tensor * ggml_cont_4d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                  int64_t ne2, int64_t ne3);

/* ---------------------------------------------------------------------------------------------- */
/* Element-wise arithmetic. b is broadcast (tiled) over a: a->ne[i] % b->ne[i] == 0. The result has
 * a's shape and type. a: F32/F16/BF16; b: F32 or a's type. _inplace results are views of a. */

struct ggml_tensor * ggml_add(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
struct ggml_tensor * ggml_sub(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
struct ggml_tensor * ggml_mul(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
struct ggml_tensor * ggml_div(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
struct ggml_tensor * ggml_add_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                      struct ggml_tensor * b);
struct ggml_tensor * ggml_sub_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                      struct ggml_tensor * b);
struct ggml_tensor * ggml_mul_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                      struct ggml_tensor * b);
struct ggml_tensor * ggml_div_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                      struct ggml_tensor * b);
/* a + b for a one-element b (op ADD1). */
struct ggml_tensor * ggml_add1(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
struct ggml_tensor * ggml_add1_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                       struct ggml_tensor * b);
/* a + b with a result of type (op ADD); a may be quantized. */
struct ggml_tensor * ggml_add_cast(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                   enum ggml_type type);
/* result[i0, i1, i2] = a[i0, i1, i2] + b[i0, ids[i1, i2]]: a [ne0, n, t], b [ne0, n_b], ids I32 [n, t]
 * (op ADD_ID). */
struct ggml_tensor * ggml_add_id(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                 struct ggml_tensor * ids);
/* a with b added to (acc, F32) or written over (set, b of a's type) the view of a with b's shape, byte
 * strides nb1..nb3 and byte offset, which must lie inside a (ops ACC, SET). _1d/_2d
 * take a's own strides for the ones they omit. */
struct ggml_tensor * ggml_acc(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                              size_t nb1, size_t nb2, size_t nb3, size_t offset);
struct ggml_tensor * ggml_acc_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                      size_t nb1, size_t nb2, size_t nb3, size_t offset);
struct ggml_tensor * ggml_set(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                              size_t nb1, size_t nb2, size_t nb3, size_t offset);
struct ggml_tensor * ggml_set_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                      size_t nb1, size_t nb2, size_t nb3, size_t offset);
struct ggml_tensor * ggml_set_1d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                 size_t offset);
struct ggml_tensor * ggml_set_1d_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                         struct ggml_tensor * b, size_t offset);
struct ggml_tensor * ggml_set_2d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                 size_t nb1, size_t offset);
struct ggml_tensor * ggml_set_2d_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                         struct ggml_tensor * b, size_t nb1, size_t offset);

/* a * s, and a * s + bias. */
struct ggml_tensor * ggml_scale(struct ggml_context * ctx, struct ggml_tensor * a, float s);
struct ggml_tensor * ggml_scale_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float s);
struct ggml_tensor * ggml_scale_bias(struct ggml_context * ctx, struct ggml_tensor * a, float s, float bias);
struct ggml_tensor * ggml_scale_bias_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float s,
                                             float bias);
struct ggml_tensor * ggml_sqr(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_sqr_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_sqrt(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_sqrt_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
/* Natural logarithm, sine, cosine (ops LOG, SIN, COS). */
struct ggml_tensor * ggml_log(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_log_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_sin(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_sin_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_cos(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_cos_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
/* Every element set to c (op FILL). */
struct ggml_tensor * ggml_fill(struct ggml_context * ctx, struct ggml_tensor * a, float c);
struct ggml_tensor * ggml_fill_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float c);
/* min(max(a, min), max); requires min <= max. */
struct ggml_tensor * ggml_clamp(struct ggml_context * ctx, struct ggml_tensor * a, float min, float max);
struct ggml_tensor * ggml_clamp_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float min,
                                        float max);

/* Optimizer steps updating a (flagged GGML_TENSOR_FLAG_PARAM) in place from its gradient: AdamW with
 * moments m, v (a's shape) and adamw_params (7 F32: alpha, beta1, beta2, eps, wd, beta1h, beta2h); SGD
 * with sgd_params (2 F32: alpha, wd). The result is a view of a. */
struct ggml_tensor * ggml_opt_step_adamw(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * grad,
                                         struct ggml_tensor * m, struct ggml_tensor * v,
                                         struct ggml_tensor * adamw_params);
struct ggml_tensor * ggml_opt_step_sgd(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * grad,
                                       struct ggml_tensor * sgd_params);

/* ---------------------------------------------------------------------------------------------- */
/* Reductions (a: F32/F16/BF16; result type a's). */

/* Sum of all elements, shape [1]. */
struct ggml_tensor * ggml_sum(struct ggml_context * ctx, struct ggml_tensor * a);
/* Sum / mean of each row, shape [1, ne1, ne2, ne3]. */
struct ggml_tensor * ggml_sum_rows(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_mean(struct ggml_context * ctx, struct ggml_tensor * a);
/* Index of the first maximum of each row of a matrix a (F32), I32 shape [ne1]. */
struct ggml_tensor * ggml_argmax(struct ggml_context * ctx, struct ggml_tensor * a);
/* Running sum along each row, a's shape (op CUMSUM). */
struct ggml_tensor * ggml_cumsum(struct ggml_context * ctx, struct ggml_tensor * a);
/* Number of equal elements of a and b (same shape and type), I64 [1] (op COUNT_EQUAL). */
struct ggml_tensor * ggml_count_equal(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
/* Indices sorting each row, I32 of a's shape (op ARGSORT); _top_k: the first k of a
 * descending argsort (a view [k, ne1, ne2, ne3]); top_k: the indices of the k largest of each row in no
 * particular order, I32 [k, ne1, ne2, ne3] (op TOP_K). 1 <= k <= ne0. */
struct ggml_tensor * ggml_argsort(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_sort_order order);
struct ggml_tensor * ggml_argsort_top_k(struct ggml_context * ctx, struct ggml_tensor * a, int k);
struct ggml_tensor * ggml_top_k(struct ggml_context * ctx, struct ggml_tensor * a, int k);
/* Cross-entropy of logits a against labels b (same shape), [1]. _back, as ggml builds it:
 * a the loss gradient (one element), b the logits, c the labels; result b's shape. */
struct ggml_tensor * ggml_cross_entropy_loss(struct ggml_context * ctx, struct ggml_tensor * a,
                                             struct ggml_tensor * b);
struct ggml_tensor * ggml_cross_entropy_loss_back(struct ggml_context * ctx, struct ggml_tensor * a,
                                                  struct ggml_tensor * b, struct ggml_tensor * c);

/* ---------------------------------------------------------------------------------------------- */
/* Shape ops */

/* Tile a to b's shape (ggml_can_repeat(a, b)); result has b's shape, a's type. */
struct ggml_tensor * ggml_repeat(struct ggml_context * ctx, struct ggml_tensor * a,
                                 const struct ggml_tensor * b);
/* Tile a to the shape ne0..ne3 (each a multiple of a's; op REPEAT). */
struct ggml_tensor * ggml_repeat_4d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                    int64_t ne2, int64_t ne3);
/* Sum the repetitions of b's shape in a into b's shape (op REPEAT_BACK). */
struct ggml_tensor * ggml_repeat_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
/* Concatenate along dim (0..3); all other dimensions and the types must match. */
struct ggml_tensor * ggml_concat(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                 int dim);
/* Zero padding: lp_i elements before and rp_i after dimension i. */
struct ggml_tensor * ggml_pad_ext(struct ggml_context * ctx, struct ggml_tensor * a, int lp0, int rp0,
                                  int lp1, int rp1, int lp2, int rp2, int lp3, int rp3);
/* Zero padding after each dimension. */
struct ggml_tensor * ggml_pad(struct ggml_context * ctx, struct ggml_tensor * a, int p0, int p1, int p2,
                              int p3);
/* Circular padding (values from the other end, paddings <= ne; op PAD). */
struct ggml_tensor * ggml_pad_circular(struct ggml_context * ctx, struct ggml_tensor * a, int p0, int p1, int p2,
                                       int p3);
struct ggml_tensor * ggml_pad_ext_circular(struct ggml_context * ctx, struct ggml_tensor * a, int lp0, int rp0,
                                           int lp1, int rp1, int lp2, int rp2, int lp3, int rp3);
/* Reflection padding of each row: [a b c d] with 1, 1 -> [b a b c d c]; p0, p1 < ne0. */
struct ggml_tensor * ggml_pad_reflect_1d(struct ggml_context * ctx, struct ggml_tensor * a, int p0, int p1);
/* Move elements by shift_i along dimension i, wrapping around; |shift_i| < ne_i. */
struct ggml_tensor * ggml_roll(struct ggml_context * ctx, struct ggml_tensor * a, int shift0, int shift1,
                               int shift2, int shift3);
/* Resize dims 0..3 to ne0..ne3 as ggml_interpolate (nearest: src index = floor(i * src_ne / dst_ne)). */
struct ggml_tensor * ggml_upscale_ext(struct ggml_context * ctx, struct ggml_tensor * a, int ne0, int ne1,
                                      int ne2, int ne3, enum ggml_scale_mode mode);
/* Resample to ne0..ne3 (op UPSCALE); mode is a ggml_scale_mode or-ed with ggml_scale_flag values.
 * Dims 0, 1 are interpolated, dims 2, 3 take the nearest element (docs/ops.md has the formulas). */
struct ggml_tensor * ggml_interpolate(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                      int64_t ne2, int64_t ne3, uint32_t mode);
/* Multiply ne0 and ne1 by scale_factor (>= 1). */
struct ggml_tensor * ggml_upscale(struct ggml_context * ctx, struct ggml_tensor * a, int scale_factor,
                                  enum ggml_scale_mode mode);

/* ---------------------------------------------------------------------------------------------- */
/* Normalisation (per row of ne0 elements unless stated; a: F32) */

/* (x - mean) / sqrt(var + eps). */
struct ggml_tensor * ggml_norm(struct ggml_context * ctx, struct ggml_tensor * a, float eps);
struct ggml_tensor * ggml_norm_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float eps);
/* x / sqrt(mean(x^2) + eps). */
struct ggml_tensor * ggml_rms_norm(struct ggml_context * ctx, struct ggml_tensor * a, float eps);
struct ggml_tensor * ggml_rms_norm_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float eps);
/* a [W, H, C, N]: channels taken in consecutive groups of ceil(C / n_groups) (the last may be smaller,
 * and fewer than n_groups groups may result); each group of one sample normalised like ggml_norm
 * over all its elements. */
struct ggml_tensor * ggml_group_norm(struct ggml_context * ctx, struct ggml_tensor * a, int n_groups,
                                     float eps);
struct ggml_tensor * ggml_group_norm_inplace(struct ggml_context * ctx, struct ggml_tensor * a, int n_groups,
                                             float eps);
/* x / max(||x||_2, eps). */
struct ggml_tensor * ggml_l2_norm(struct ggml_context * ctx, struct ggml_tensor * a, float eps);
struct ggml_tensor * ggml_l2_norm_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float eps);
/* Gradient of ggml_rms_norm: a = dy, b = x, same shape (op RMS_NORM_BACK). ggml's header names
 * the operands the other way round; its kernel and its backward pass use this order. */
struct ggml_tensor * ggml_rms_norm_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                       float eps);

/* ---------------------------------------------------------------------------------------------- */
/* Matrix products and attention */

/* a [K, M, A2, A3], b [K, N, B2, B3] -> F32 [M, N, B2, B3], result[m, n] = sum_k a[k, m] * b[k, n];
 * a broadcast over dims 2, 3 (B2 % A2 == 0, B3 % A3 == 0; b matrix i2 uses a matrix i2 / (B2 / A2)). a:
 * F32/F16/BF16/Q8_0/Q4_0 (quantized rows dense); b: F32/F16/BF16. */
struct ggml_tensor * ggml_mul_mat(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
/* Record on a mul_mat result the precision ggml's backends accumulate in (ggx's kernels always use F32) and a
 * hint about a (GGML_HINT_SRC0_IS_HADAMARD: a is a Hadamard matrix); both in op_params
 * (ggml_ext_mul_mat_params). NULL a is ignored; any other op is an error in a's context. */
void ggml_mul_mat_set_prec(struct ggml_tensor * a, enum ggml_prec prec);
void ggml_mul_mat_set_hint(struct ggml_tensor * a, enum ggml_op_hint hint);
/* Expert matmul: as [K, M, n_as] holds n_as matrices, b [K, n_b, n_tokens] (n_b 1 or n_used), ids I32
 * [n_used, n_tokens] picks them; result F32 [M, n_used, n_tokens], result[:, e, t] = as[ids[e, t]] *
 * b[:, e % n_b, t]. */
struct ggml_tensor * ggml_mul_mat_id(struct ggml_context * ctx, struct ggml_tensor * as, struct ggml_tensor * b,
                                     struct ggml_tensor * ids);
/* Outer products summed over dim 1: a [M, N, A2, A3], b [P, N, B2, B3] -> F32 [M, P, B2, B3],
 * result[m, p] = sum_n a[m, n] * b[p, n] (a broadcast as in mul_mat). */
struct ggml_tensor * ggml_out_prod(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);

/* softmax over rows of a * scale + slope * mask (an all -inf row gives zeros; mask optional, F16/F32, [ne0,
 * >= ne1, ...] broadcast over dims 2, 3); slope is 1 unless max_bias > 0 (ALiBi, head = dim 2). a: F32. */
struct ggml_tensor * ggml_soft_max(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_soft_max_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_soft_max_ext(struct ggml_context * ctx, struct ggml_tensor * a,
                                       struct ggml_tensor * mask, float scale, float max_bias);
struct ggml_tensor * ggml_soft_max_ext_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                               struct ggml_tensor * mask, float scale, float max_bias);
/* Attach sinks (F32 [a's source ne2], one logit per head joining each row's normalisation) to a
 * SOFT_MAX node as its src[2]; NULL detaches them. Misuse aborts with a message (there is no context to
 * report into). The CPU computes sinks; Vulkan refuses such a node. */
void ggml_soft_max_add_sinks(struct ggml_tensor * a, struct ggml_tensor * sinks);
/* Gradient of ggml_soft_max_ext: a = dy, b = the softmax output, same shape (op SOFT_MAX_BACK). */
struct ggml_tensor * ggml_soft_max_ext_back(struct ggml_context * ctx, struct ggml_tensor * a,
                                            struct ggml_tensor * b, float scale, float max_bias);
struct ggml_tensor * ggml_soft_max_ext_back_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                                    struct ggml_tensor * b, float scale, float max_bias);
/* Elements above the diagonal shifted by n_past (column > row + n_past, per matrix) set to -inf / 0
 * (ops DIAG_MASK_INF, DIAG_MASK_ZERO). */
struct ggml_tensor * ggml_diag_mask_inf(struct ggml_context * ctx, struct ggml_tensor * a, int n_past);
struct ggml_tensor * ggml_diag_mask_inf_inplace(struct ggml_context * ctx, struct ggml_tensor * a, int n_past);
struct ggml_tensor * ggml_diag_mask_zero(struct ggml_context * ctx, struct ggml_tensor * a, int n_past);
struct ggml_tensor * ggml_diag_mask_zero_inplace(struct ggml_context * ctx, struct ggml_tensor * a, int n_past);

/* Rotary position embedding of a [head_dim, n_head, n_tokens, B] (F32/F16) at positions b (I32
 * [n_tokens]); the first n_dims channels (even, <= head_dim) rotate, the rest are copied. mode is
 * GGML_ROPE_TYPE_NORMAL or GGML_ROPE_TYPE_NEOX; c optional F32 frequency factors [n_dims / 2];
 * YaRN parameters as in ggml. */
struct ggml_tensor * ggml_rope_ext(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                   struct ggml_tensor * c, int n_dims, int mode, int n_ctx_orig,
                                   float freq_base, float freq_scale, float ext_factor, float attn_factor,
                                   float beta_fast, float beta_slow);
/* ggml_rope_ext with its result a view of a. */
struct ggml_tensor * ggml_rope_ext_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                           struct ggml_tensor * c, int n_dims, int mode, int n_ctx_orig,
                                           float freq_base, float freq_scale, float ext_factor, float attn_factor,
                                           float beta_fast, float beta_slow);
/* ggml_rope_ext without frequency factors, base 10000, no scaling and no YaRN. */
struct ggml_tensor * ggml_rope(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int n_dims,
                               int mode);
struct ggml_tensor * ggml_rope_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                       int n_dims, int mode);
/* ggml_rope_ext without frequency factors (ggml's older name). */
struct ggml_tensor * ggml_rope_custom(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                      int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale,
                                      float ext_factor, float attn_factor, float beta_fast, float beta_slow);
struct ggml_tensor * ggml_rope_custom_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                              struct ggml_tensor * b, int n_dims, int mode, int n_ctx_orig,
                                              float freq_base, float freq_scale, float ext_factor,
                                              float attn_factor, float beta_fast, float beta_slow);
/* Multi-axis RoPE (MROPE, IMROPE, VISION modes): b holds 4 positions per token (I32 [4 * n_tokens]),
 * sections the rotation pairs each position axis drives; VISION needs n_dims = head_dim / 2. */
struct ggml_tensor * ggml_rope_multi(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                     struct ggml_tensor * c, int n_dims, int sections[GGML_MROPE_SECTIONS], int mode,
                                     int n_ctx_orig, float freq_base, float freq_scale, float ext_factor,
                                     float attn_factor, float beta_fast, float beta_slow);
struct ggml_tensor * ggml_rope_multi_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                             struct ggml_tensor * b, struct ggml_tensor * c, int n_dims,
                                             int sections[GGML_MROPE_SECTIONS], int mode, int n_ctx_orig,
                                             float freq_base, float freq_scale, float ext_factor,
                                             float attn_factor, float beta_fast, float beta_slow);
/* The gradient of ggml_rope_ext / ggml_rope_multi: a is the gradient of their result (GGML_OP_ROPE_BACK,
 * the same parameters). */
struct ggml_tensor * ggml_rope_ext_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                        struct ggml_tensor * c, int n_dims, int mode, int n_ctx_orig,
                                        float freq_base, float freq_scale, float ext_factor, float attn_factor,
                                        float beta_fast, float beta_slow);
struct ggml_tensor * ggml_rope_multi_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                          struct ggml_tensor * c, int n_dims, int sections[4], int mode,
                                          int n_ctx_orig, float freq_base, float freq_scale, float ext_factor,
                                          float attn_factor, float beta_fast, float beta_slow);
/* Rotate elements [n_offs, n_offs + n_dims) of each row instead of [0, n_dims) (n_offs even; not VISION).
 * a must be a ROPE or ROPE_BACK node; returns a, or NULL with the error in a's context. Vulkan does not
 * compute offsets. */
struct ggml_tensor * ggml_rope_set_offset(struct ggml_tensor * a, int n_offs);
/* YaRN's correction range: dims[0] = max(0, floor(c(beta_fast))), dims[1] = min(n_dims - 1,
 * ceil(c(beta_slow))), c(r) = n_dims * ln(n_ctx_orig / (2 pi r)) / (2 ln(freq_base)). */
void ggml_rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow,
                              float dims[2]);

/* Attention: q [D, n_q, H, B] F32, k [D, n_kv, Hkv, Bk] and v [Dv, n_kv, Hkv, Bk] F16 or F32
 * (H % Hkv == 0, B % Bk == 0; head h reads k/v head h / (H / Hkv)), mask optional F16/F32 [n_kv, >= n_q,
 * broadcast, broadcast]. Result F32 [Dv, H, n_q, B]. Score = softcap * tanh(q.k * scale / softcap) (softcap
 * 0: q.k * scale), plus slope * mask (ALiBi slope as in soft_max_ext). */
struct ggml_tensor * ggml_flash_attn_ext(struct ggml_context * ctx, struct ggml_tensor * q,
                                         struct ggml_tensor * k, struct ggml_tensor * v,
                                         struct ggml_tensor * mask, float scale, float max_bias,
                                         float logit_softcap);
/* Precision ggml's backends compute a flash_attn_ext result in (op_params prec; ggx's kernels always use
 * F32); get returns GGML_PREC_DEFAULT for NULL or another op. Any other op is an error in a's context. */
void ggml_flash_attn_ext_set_prec(struct ggml_tensor * a, enum ggml_prec prec);
enum ggml_prec ggml_flash_attn_ext_get_prec(const struct ggml_tensor * a);
/* Attention sinks: sinks (F32 [n_head]) become src[4] of a flash_attn_ext result (NULL sinks: nothing).
 * The CPU computes sinks; Vulkan refuses such a node. */
void ggml_flash_attn_ext_add_sinks(struct ggml_tensor * a, struct ggml_tensor * sinks);
/* Always an error, as in ggml, which has not adapted it to ggml_flash_attn_ext's layout. */
struct ggml_tensor * ggml_flash_attn_back(struct ggml_context * ctx, struct ggml_tensor * q, struct ggml_tensor * k,
                                          struct ggml_tensor * v, struct ggml_tensor * d, bool masked);

/* Recurrent and model-specific attention (shapes as in ggml, docs/ops.md). */
/* Mamba's convolution: sx [d_conv - 1 + n_t, d_inner, n_s], c [d_conv, d_inner] -> F32 [d_inner, n_t, n_s]. */
struct ggml_tensor * ggml_ssm_conv(struct ggml_context * ctx, struct ggml_tensor * sx, struct ggml_tensor * c);
/* Mamba's selective scan: s [d_state, head_dim, n_head, ...], x [head_dim, n_head, n_tokens, n_seqs], dt
 * [n_head, n_tokens, n_seqs], A [1 or d_state, n_head], B and C [d_state, n_group, n_tokens, n_seqs], ids I32
 * [n_seqs] -> F32 1-D: the outputs (x's element count) then the new states. */
struct ggml_tensor * ggml_ssm_scan(struct ggml_context * ctx, struct ggml_tensor * s, struct ggml_tensor * x,
                                   struct ggml_tensor * dt, struct ggml_tensor * A, struct ggml_tensor * B,
                                   struct ggml_tensor * C, struct ggml_tensor * ids);
/* RWKV-6, gated linear attention, RWKV-7: per-token inputs [S, H, n_tokens] (contiguous), state S * S * H
 * values per sequence (state.ne1 = n_seqs) -> F32 [S * H, n_tokens + S * n_seqs]: outputs, then states. */
struct ggml_tensor * ggml_rwkv_wkv6(struct ggml_context * ctx, struct ggml_tensor * k, struct ggml_tensor * v,
                                    struct ggml_tensor * r, struct ggml_tensor * tf, struct ggml_tensor * td,
                                    struct ggml_tensor * state);
struct ggml_tensor * ggml_gated_linear_attn(struct ggml_context * ctx, struct ggml_tensor * k, struct ggml_tensor * v,
                                            struct ggml_tensor * q, struct ggml_tensor * g, struct ggml_tensor * state,
                                            float scale);
struct ggml_tensor * ggml_rwkv_wkv7(struct ggml_context * ctx, struct ggml_tensor * r, struct ggml_tensor * w,
                                    struct ggml_tensor * k, struct ggml_tensor * v, struct ggml_tensor * a,
                                    struct ggml_tensor * b, struct ggml_tensor * state);
/* Gated delta net: q, k [S, H_k, n_tokens, n_seqs], v [S, H_v, n_tokens, n_seqs] (H_v % H_k == 0), g [1 or S,
 * H_v, n_tokens, n_seqs], beta [1, H_v, n_tokens, n_seqs], state [S, S, H_v, n_seqs] -> F32 [S * H_v,
 * n_tokens * n_seqs + K * S * n_seqs]: the outputs, then K states, the most recent first. */
struct ggml_tensor * ggml_gated_delta_net(struct ggml_context * ctx, struct ggml_tensor * q, struct ggml_tensor * k,
                                          struct ggml_tensor * v, struct ggml_tensor * g, struct ggml_tensor * beta,
                                          struct ggml_tensor * state, int64_t K);
/* DeepSeek's lightning indexer: q [E, H, n_batch, B] F32, k [E, 1, n_kv, B] F16/F32, weights [H, n_batch, 1, B]
 * F32 (prescaled), mask F16 [n_kv, n_batch, 1, B'] (B % B' == 0) -> F32 [n_kv, n_batch, 1, B]. */
struct ggml_tensor * ggml_lightning_indexer(struct ggml_context * ctx, struct ggml_tensor * q, struct ggml_tensor * k,
                                            struct ggml_tensor * weights, struct ggml_tensor * mask);
/* DeepSeek-V4 hyper-connections (F32). comb: mixes [(2 + hc) * hc, n_tokens], scale [3], base [(2 + hc) * hc]
 * -> [hc, hc, n_tokens] (softmax, then n_iter Sinkhorn normalisations with eps). pre: x [n_embd, hc, n_tokens],
 * weights [hc, n_tokens] -> [n_embd, n_tokens]. post: x [n_embd, n_tokens], residual [n_embd, hc, n_tokens],
 * post [hc, n_tokens], comb [hc, hc, n_tokens] -> [n_embd, hc, n_tokens]. */
struct ggml_tensor * ggml_dsv4_hc_comb(struct ggml_context * ctx, struct ggml_tensor * mixes, struct ggml_tensor * scale,
                                       struct ggml_tensor * base, float eps, int32_t n_iter);
struct ggml_tensor * ggml_dsv4_hc_pre(struct ggml_context * ctx, struct ggml_tensor * x, struct ggml_tensor * weights);
struct ggml_tensor * ggml_dsv4_hc_post(struct ggml_context * ctx, struct ggml_tensor * x, struct ggml_tensor * residual,
                                       struct ggml_tensor * post, struct ggml_tensor * comb);

/* ---------------------------------------------------------------------------------------------- */
/* Indexing */

/* Rows of a [ne0, R, A2, A3] picked by b (I32 [n, A2, A3]): result [ne0, n, A2, A3], F32 (I32 when
 * a is I32). a: F32/F16/BF16/Q8_0/Q4_0/I32. */
struct ggml_tensor * ggml_get_rows(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
/* Gradient of ggml_get_rows: rows of a (F32 [ne0, n]) summed into the rows b (I32 [n]) of an F32 result of
 * c's shape (c a matrix, only its shape is used) (op GET_ROWS_BACK). */
struct ggml_tensor * ggml_get_rows_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                        struct ggml_tensor * c);
/* Write rows of b (F32 [ne0, n, B2, B3]) into a ([ne0, R, B2, B3], F32/F16/BF16/Q8_0/Q4_0) at rows c
 * (I32 [n, C2, C3], broadcast: B2 % C2 == 0, B3 % C3 == 0). The result is a view of a. */
struct ggml_tensor * ggml_set_rows(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                   struct ggml_tensor * c);

/* ---------------------------------------------------------------------------------------------- */
/* Activations */

/* Element-wise activation (formulas in docs/ops.md); a: F32/F16/BF16; result a's shape and type. */
struct ggml_tensor * ggml_unary(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_unary_op op);
struct ggml_tensor * ggml_unary_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                        enum ggml_unary_op op);
struct ggml_tensor * ggml_relu(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_silu(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_gelu(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_gelu_quick(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_sigmoid(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_tanh(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_relu_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_silu_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_gelu_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_gelu_quick_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_sigmoid_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_tanh_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
/* More unary sub-ops: |x|, sign, -x, step (x > 0), elu, gelu (erf form), hardswish
 * x * relu6(x + 3) / 6, hardsigmoid relu6(x + 3) / 6, e^x, e^x - 1, softplus ln(1 + e^x), floor,
 * ceil, round (half away from zero), trunc. */
struct ggml_tensor * ggml_abs(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_abs_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_sgn(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_sgn_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_neg(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_neg_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_step(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_step_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_elu(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_elu_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_gelu_erf(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_gelu_erf_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_hardswish(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_hardsigmoid(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_exp(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_exp_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_expm1(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_expm1_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_softplus(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_softplus_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_floor(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_floor_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_ceil(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_ceil_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_round(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_round_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_trunc(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_trunc_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
/* xIELU: x > 0: ap x^2 + beta x, else (expm1(min(x, eps)) - x) an + beta x with ap = softplus(alpha_p),
 * an = beta + softplus(alpha_n) (UNARY XIELU). */
struct ggml_tensor * ggml_xielu(struct ggml_context * ctx, struct ggml_tensor * a, float alpha_n, float alpha_p,
                                float beta, float eps);
/* x > 0 ? x : negative_slope * x (op LEAKY_RELU); inplace: the result is a view of a. */
struct ggml_tensor * ggml_leaky_relu(struct ggml_context * ctx, struct ggml_tensor * a, float negative_slope,
                                     bool inplace);
/* Gradient of silu: a = dy, b = x, same shape and type (op SILU_BACK). ggml's header names the
 * operands the other way round; its kernel and its backward pass use this order. */
struct ggml_tensor * ggml_silu_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);

/* Gated linear units. Merged: a [2n, ...] -> [n, ...], x = first half, g = second half (swapped:
 * the halves exchange roles); result act(x) * g. Split: act(a) * b with a, b of the same shape. */
struct ggml_tensor * ggml_glu(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_glu_op op,
                              bool swapped);
struct ggml_tensor * ggml_glu_split(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                    enum ggml_glu_op op);
struct ggml_tensor * ggml_swiglu(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_swiglu_swapped(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_swiglu_split(struct ggml_context * ctx, struct ggml_tensor * a,
                                       struct ggml_tensor * b);
struct ggml_tensor * ggml_geglu(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_geglu_swapped(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_geglu_split(struct ggml_context * ctx, struct ggml_tensor * a,
                                      struct ggml_tensor * b);
/* More GLU sub-ops: relu (REGLU), erf gelu (GEGLU_ERF), quick gelu (GEGLU_QUICK). */
struct ggml_tensor * ggml_reglu(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_reglu_swapped(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_reglu_split(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
struct ggml_tensor * ggml_geglu_erf(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_geglu_erf_swapped(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_geglu_erf_split(struct ggml_context * ctx, struct ggml_tensor * a,
                                          struct ggml_tensor * b);
struct ggml_tensor * ggml_geglu_quick(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_geglu_quick_swapped(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_geglu_quick_split(struct ggml_context * ctx, struct ggml_tensor * a,
                                            struct ggml_tensor * b);
/* gpt-oss SwiGLU with alpha and clamping limit; b NULL: merged like ggml_glu (SWIGLU_OAI). */
struct ggml_tensor * ggml_swiglu_oai(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                     float alpha, float limit);

/* ---------------------------------------------------------------------------------------------- */
/* Convolution */

/* Unfold input b for kernel a. 2-D: a [KW, KH, IC, OC], b [IW, IH, IC, N] -> [IC*KH*KW, OW, OH, N];
 * 1-D: a [KW, IC, OC], b [IW, IC, N] -> [IC*KW, OW, N]. OW = (IW + 2*p0 - d0*(KW-1) - 1) / s0 + 1.
 * Out-of-range input positions read as zero. b: F32/F16; dst_type F32 or F16. */
struct ggml_tensor * ggml_im2col(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                 int s0, int s1, int p0, int p1, int d0, int d1, bool is_2d,
                                 enum ggml_type dst_type);
/* The gradient of ggml_im2col: b is the gradient of its result, ne the shape of its input (F32 result of
 * that shape). */
struct ggml_tensor * ggml_im2col_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                      int64_t * ne, int s0, int s1, int p0, int p1, int d0, int d1, bool is_2d);
/* 3-D unfold: a [KW, KH, KD, OC * IC], b [W, H, D, N * IC] -> [IC * KD * KH * KW, OW, OH, OD * N] of dst_type. */
struct ggml_tensor * ggml_im2col_3d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                    int64_t IC, int s0, int s1, int s2, int p0, int p1, int p2, int d0, int d1,
                                    int d2, enum ggml_type dst_type);
/* Scatter-add of columns back to a signal: a [K * oc, T_in] -> [(T_in - 1) * s0 + K - 2 * p0, oc] of a's
 * type. */
struct ggml_tensor * ggml_col2im_1d(struct ggml_context * ctx, struct ggml_tensor * a, int s0, int oc, int p0);
/* 2-D convolution, kernel a [KW, KH, IC, OC] (F32/F16), input b [IW, IH, IC, N] (F32) ->
 * F32 [OW, OH, OC, N]; built as im2col followed by mul_mat. */
struct ggml_tensor * ggml_conv_2d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                  int s0, int s1, int p0, int p1, int d0, int d1);
/* 1-D convolution, kernel a [K, IC, OC] (F32/F16), input b [IW, IC, N] (F32) -> F32 [OW, OC, N]: im2col into
 * F16 columns, then mul_mat (as ggml, whose layout is right for N = 1). _ph: padding K / 2. */
struct ggml_tensor * ggml_conv_1d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int s0,
                                  int p0, int d0);
struct ggml_tensor * ggml_conv_1d_ph(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int s,
                                     int d);
/* Depthwise 1-D convolution: kernel a [K, 1, C], input b [IW, C] (one sample) -> F32 [OW, C]. _ph: padding K / 2. */
struct ggml_tensor * ggml_conv_1d_dw(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                     int s0, int p0, int d0);
struct ggml_tensor * ggml_conv_1d_dw_ph(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                        int s0, int d0);
/* ggml_conv_2d with stride = kernel size and no padding (_sk_p0), or stride 1 and half-kernel padding (_s1_ph). */
struct ggml_tensor * ggml_conv_2d_sk_p0(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
struct ggml_tensor * ggml_conv_2d_s1_ph(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
/* Depthwise 2-D convolution through im2col (F16 columns) and mul_mat: kernel a [KW, KH, 1, C], input b
 * [IW, IH, C, N] (F32) -> F32 [OW, OH, C, N]. */
struct ggml_tensor * ggml_conv_2d_dw(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                     int s0, int s1, int p0, int p1, int d0, int d1);
/* Direct convolutions (single ops). 2-D: a [KW, KH, IC, OC], b [IW, IH, IC, N] -> [OW, OH, OC, N]
 * of b's type. Depthwise: a [KW, KH, 1, C], b [IW, IH, C, N] -> [OW, OH, C, N] of b's type (stored channels-first
 * when b is). 3-D: a [KW, KH, KD, IC * OC], b [IW, IH, ID, IC * N] -> F32 [OW, OH, OD, OC * N]. */
struct ggml_tensor * ggml_conv_2d_direct(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                         int s0, int s1, int p0, int p1, int d0, int d1);
struct ggml_tensor * ggml_conv_2d_dw_direct(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                            int stride0, int stride1, int pad0, int pad1, int dilation0,
                                            int dilation1);
struct ggml_tensor * ggml_conv_3d_direct(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                         int s0, int s1, int s2, int p0, int p1, int p2, int d0, int d1, int d2,
                                         int n_channels, int n_batch, int n_channels_out);
/* 3-D convolution as im2col_3d then mul_mat: a [KW, KH, KD, OC * IC], b [IW, IH, ID, N * IC] ->
 * [OW, OH, OD, OC * N]. */
struct ggml_tensor * ggml_conv_3d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                  int64_t IC, int s0, int s1, int s2, int p0, int p1, int p2, int d0, int d1, int d2);
/* Transposed convolutions. 1-D: a [K, OC, IC], b [IW, IC] -> F32 [(IW - 1) * s0 + K, OC]
 * (p0 = 0, d0 = 1 only). 2-D: a [KW, KH, OC, IC], b [IW, IH, IC, N] -> F32 [(IW - 1) * stride + KW,
 * (IH - 1) * stride + KH, OC, N]. */
struct ggml_tensor * ggml_conv_transpose_1d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                            int s0, int p0, int d0);
struct ggml_tensor * ggml_conv_transpose_2d_p0(struct ggml_context * ctx, struct ggml_tensor * a,
                                               struct ggml_tensor * b, int stride);
/* Pooling over dim 0 (1-D) or dims 0, 1 (2-D): O = (I + 2p - k) / s + 1, F32. _back: a is the
 * gradient of pool_2d's result, af its input; the result has af's shape. */
struct ggml_tensor * ggml_pool_1d(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_op_pool op, int k0,
                                  int s0, int p0);
struct ggml_tensor * ggml_pool_2d(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_op_pool op, int k0,
                                  int k1, int s0, int s1, float p0, float p1);
struct ggml_tensor * ggml_pool_2d_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * af,
                                       enum ggml_op_pool op, int k0, int k1, int s0, int s1, float p0, float p1);

/* ---------------------------------------------------------------------------------------------- */
/* Diffusion helpers */

/* Sinusoidal embedding of timesteps (F32 [N]) -> F32 [dim, N]: with half = dim / 2 and
 * f_j = exp(-ln(max_period) * j / half), row = [cos(t f_0..), sin(t f_0..)] (+ one 0 if dim odd). */
struct ggml_tensor * ggml_timestep_embedding(struct ggml_context * ctx, struct ggml_tensor * timesteps,
                                             int dim, int max_period);
/* F32 [ceil((stop - start) / step)]: start, start + step, ...; stop > start, step > 0. */
struct ggml_tensor * ggml_arange(struct ggml_context * ctx, float start, float stop, float step);
/* Windows of w x w over dims 1, 2 of a [C, W, H, 1] (F32), zero-padded: [C, w, w, npx * npy]; unpart
 * reverses it to [C, w0, h0, 1] (ops WIN_PART, WIN_UNPART). */
struct ggml_tensor * ggml_win_part(struct ggml_context * ctx, struct ggml_tensor * a, int w);
struct ggml_tensor * ggml_win_unpart(struct ggml_context * ctx, struct ggml_tensor * a, int w0, int h0, int w);
/* Relative position table of a [C, 2 kh - 1] for qh == kh: F16 [C, kh, qh] = a[c, kh - 1 - k + q]. */
struct ggml_tensor * ggml_get_rel_pos(struct ggml_context * ctx, struct ggml_tensor * a, int qh, int kh);
/* a [W*W, H*W, B] plus the decomposed relative positions pw, ph [W, H, W, B] (F32, contiguous). */
struct ggml_tensor * ggml_add_rel_pos(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * pw,
                                      struct ggml_tensor * ph);
struct ggml_tensor * ggml_add_rel_pos_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                              struct ggml_tensor * pw, struct ggml_tensor * ph);
/* The triangle type of each square matrix of a (F32), zeros elsewhere. */
struct ggml_tensor * ggml_tri(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_tri_type type);
/* Diagonal matrices [ne0, ne0, ne2, ne3] from the rows of a (ne1 == 1). */
struct ggml_tensor * ggml_diag(struct ggml_context * ctx, struct ggml_tensor * a);
/* x with a x = b for lower-triangular a [n, n, B2, B3] and b [k, n, B2, B3] (F32, contiguous): F32 of b's
 * shape. Only left = true, lower = true, uni = false is defined. */
struct ggml_tensor * ggml_solve_tri(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                    bool left, bool lower, bool uni);

/* ---------------------------------------------------------------------------------------------- */
/* Application CPU callbacks */

#define GGML_N_TASKS_MAX (-1)

/* Compute rows of dst; thread ith of nth. */
typedef void (*ggml_custom_op_t)(struct ggml_tensor * dst, int ith, int nth, void * userdata);

/* Node of type and shape ne0..ne3 computed by fun on the CPU (n_tasks threads, GGML_N_TASKS_MAX =
 * all); args (at most GGML_MAX_SRC) become src. op_params carry GGML_CUSTOM_MARKER_CPU_CALLBACK.
 * userdata must stay alive while the graph is in use. */
struct ggml_tensor * ggml_custom_4d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1,
                                    int64_t ne2, int64_t ne3, struct ggml_tensor ** args, int n_args,
                                    ggml_custom_op_t fun, int n_tasks, void * userdata);
/* A CUSTOM node computed by fun over a's storage: the result is a view of a, src = {a, args...} (at
 * most GGML_MAX_SRC - 1 args). */
struct ggml_tensor * ggml_custom_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor ** args,
                                         int n_args, ggml_custom_op_t fun, int n_tasks, void * userdata);

/* Nodes of a's type and shape computed on the CPU by fun(dst, a[, b[, c]], ith, nth, userdata) (ops
 * MAP_CUSTOM1..3; op_params hold fun, n_tasks and userdata: ggml_ext_map_custom<n>_params); _inplace:
 * the result is a view of a. */
typedef void (*ggml_custom1_op_t)(struct ggml_tensor * dst, const struct ggml_tensor * a, int ith, int nth,
                                  void * userdata);
typedef void (*ggml_custom2_op_t)(struct ggml_tensor * dst, const struct ggml_tensor * a,
                                  const struct ggml_tensor * b, int ith, int nth, void * userdata);
typedef void (*ggml_custom3_op_t)(struct ggml_tensor * dst, const struct ggml_tensor * a,
                                  const struct ggml_tensor * b, const struct ggml_tensor * c, int ith, int nth,
                                  void * userdata);
struct ggml_tensor * ggml_map_custom1(struct ggml_context * ctx, struct ggml_tensor * a, ggml_custom1_op_t fun,
                                      int n_tasks, void * userdata);
struct ggml_tensor * ggml_map_custom1_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                              ggml_custom1_op_t fun, int n_tasks, void * userdata);
struct ggml_tensor * ggml_map_custom2(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                      ggml_custom2_op_t fun, int n_tasks, void * userdata);
struct ggml_tensor * ggml_map_custom2_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                              struct ggml_tensor * b, ggml_custom2_op_t fun, int n_tasks,
                                              void * userdata);
struct ggml_tensor * ggml_map_custom3(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                      struct ggml_tensor * c, ggml_custom3_op_t fun, int n_tasks, void * userdata);
struct ggml_tensor * ggml_map_custom3_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                              struct ggml_tensor * b, struct ggml_tensor * c, ggml_custom3_op_t fun,
                                              int n_tasks, void * userdata);

/* The callback, thread count and user data of a CPU-callback node (false for other nodes). */
bool ggml_get_custom_callback(const struct ggml_tensor * tensor, ggml_custom_op_t * fun, int * n_tasks,
                              void ** userdata);

/* ---------------------------------------------------------------------------------------------- */
/* ggml's utility API: context and tensor helpers, graph inspection, time, logging, types          */

/* Forget every tensor, graph and buffer of ctx (its arena is reused from the start); the error
 * state and settings stay. */
void ggml_reset(struct ggml_context * ctx);
/* The context's arena. */
void * ggml_get_mem_buffer(const struct ggml_context * ctx);
/* nbytes of uninitialised arena memory (GGML_MEM_ALIGN aligned), living as long as the context's
 * tensors; NULL with an error when the arena is full. */
void * ggml_new_buffer(struct ggml_context * ctx, size_t nbytes);

/* Mark tensor a trainable parameter (it must have no op; graphs hold it as a node, and
 * ggml_build_backward_expand gives it a gradient) or a loss (one f32 value; its gradient is 1). */
void ggml_set_param(struct ggml_tensor * tensor);
void ggml_set_loss(struct ggml_tensor * tensor);

/* ggml_nbytes rounded up to GGML_MEM_ALIGN. */
size_t ggml_nbytes_pad(const struct ggml_tensor * tensor);
/* Coordinates of flat element index i (in ne order) of tensor. */
void ggml_unravel_index(const struct ggml_tensor * tensor, int64_t i, int64_t * i0, int64_t * i1, int64_t * i2,
                        int64_t * i3);
/* True when the tensor shares another tensor's storage (view_src set). */
bool ggml_is_view(const struct ggml_tensor * tensor);
/* Dims 0 .. n-1 are dense (elements, then rows, ...); higher dims may have any stride. */
bool ggml_is_contiguous_to_1(const struct ggml_tensor * tensor);
bool ggml_is_contiguous_to_2(const struct ggml_tensor * tensor);
bool ggml_is_contiguous_to_3(const struct ggml_tensor * tensor);
/* A tensor stored as C x W x H x N and permuted to W x H x C x N (channels innermost in memory). */
bool ggml_is_contiguous_channels(const struct ggml_tensor * tensor);
/* Sets every element to zero, in host memory or a backend buffer (tensors without data are left alone). */
struct ggml_tensor * ggml_set_zero(struct ggml_tensor * tensor);

/* ggml_type_size / ggml_blck_size (bytes per element, fractional for block types). */
double ggml_type_sizef(enum ggml_type type);

/* The weight type of a file type: F32, F16, BF16, Q8_0 or Q4_0; GGML_TYPE_COUNT for file types of
 * formats ggx does not have. */
enum ggml_type ggml_ftype_to_ggml_type(enum ggml_ftype ftype);

/* Whether nbytes of row data of type are well formed: nbytes a multiple of the type size, float
 * values (and block scales) finite. Logs what is wrong. */
bool ggml_validate_row_data(enum ggml_type type, const void * data, size_t nbytes);

typedef void (*ggml_to_float_t)(const void * x, float * y, int64_t k);
typedef void (*ggml_from_float_t)(const float * x, void * y, int64_t k);
/* Per-type facts and row conversions (to_float: ggml_dequantize_row; from_float_ref:
 * ggml_quantize_row). */
struct ggml_type_traits {
    const char * type_name;
    int64_t blck_size;
    int64_t blck_size_interleave;
    size_t type_size;
    bool is_quantized;
    ggml_to_float_t to_float;
    ggml_from_float_t from_float_ref;
};
/* The traits of type; NULL for a value that is no type of ggx. */
const struct ggml_type_traits * ggml_get_type_traits(enum ggml_type type);

/* Quantization of whole rows for the types ggx has. Tables are built on first use: init and free do
 * nothing and are safe to call any number of times. requires_imatrix: the type is quantized only
 * with an importance matrix (ggml_quantize_chunk refuses a NULL one). */
void ggml_quantize_init(enum ggml_type type);
void ggml_quantize_free(void);
bool ggml_quantize_requires_imatrix(enum ggml_type type);
/* Converts nrows rows of n_per_row values, starting at element start (a multiple of n_per_row)
 * of src, into dst at the same row; returns the bytes written. imatrix (n_per_row importance
 * weights, or NULL) weights the rounding error of the formats that have an importance-weighted
 * quantization; the others ignore it. 0 with a logged error for a type ggx cannot write, a start
 * that is not a row start, or a missing imatrix the type requires. */
size_t ggml_quantize_chunk(enum ggml_type type, const float * src, void * dst, int64_t start, int64_t nrows,
                           int64_t n_per_row, const float * imatrix);

/* 16-byte identifiers (of backends). */
bool ggml_guid_matches(ggml_guid_t guid_a, ggml_guid_t guid_b);

/* The ggml version whose API ggx implements ("0.21.0") and ggx's source revision. */
const char * ggml_version(void);
const char * ggml_commit(void);

/* Monotonic time since ggml_time_init (or the first call): milliseconds, microseconds; the CPU's
 * time-stamp counter and its ticks per millisecond. */
void ggml_time_init(void);
int64_t ggml_time_ms(void);
int64_t ggml_time_us(void);
int64_t ggml_cycles(void);
int64_t ggml_cycles_per_ms(void);

/* fopen of a UTF-8 path. */
FILE * ggml_fopen(const char * fname, const char * mode);

/* "GGML status: success", ... for each status. */
const char * ggml_status_to_string(enum ggml_status status);

typedef void (*ggml_log_callback)(enum ggml_log_level level, const char * text, void * user_data);
/* Where ggx's diagnostics go (process-wide; not synchronised with concurrent logging). NULL
 * restores the default, which writes to stderr. */
void ggml_log_set(ggml_log_callback log_callback, void * user_data);
void ggml_log_get(ggml_log_callback * log_callback, void ** user_data);

/* Called with the message before ggx aborts the process on a fatal error (instead of logging it);
 * returns the previous callback. NULL restores logging. */
typedef void (*ggml_abort_callback_t)(const char * error_message);
ggml_abort_callback_t ggml_set_abort_callback(ggml_abort_callback_t callback);

struct ggml_object;
/* Log one object / every object of ctx in allocation order (type, offset, size). */
void ggml_print_object(const struct ggml_object * obj);
void ggml_print_objects(const struct ggml_context * ctx);

/* Does nothing with its arguments (for macros that mark variables as used). */
void ggml_unused_vars_impl(int n, ...);

/* Thread pools (created by ggml_threadpool_new, ggml-cpu.h). */
#define GGML_MAX_N_THREADS 512
struct ggml_threadpool_params {
    bool cpumask[GGML_MAX_N_THREADS]; /* cores the threads may run on (all false: no affinity) */
    int n_threads;
    enum ggml_sched_priority prio;
    uint32_t poll;   /* 0..100: how long idle threads spin before sleeping */
    bool strict_cpu; /* one core of cpumask per thread instead of the whole mask */
    bool paused;     /* start paused */
};
struct ggml_threadpool;
typedef struct ggml_threadpool * ggml_threadpool_t;
/* Defaults for n_threads threads: no affinity, normal priority, poll 50, not strict, running. */
struct ggml_threadpool_params ggml_threadpool_params_default(int n_threads);
void ggml_threadpool_params_init(struct ggml_threadpool_params * p, int n_threads);
/* Whether two parameter sets describe the same pool (threads, priority, poll, placement, mask). */
bool ggml_threadpool_params_match(const struct ggml_threadpool_params * p0, const struct ggml_threadpool_params * p1);

/* ---------------------------------------------------------------------------------------------- */
/* Graphs */

/* Arena bytes of a graph of GGML_DEFAULT_GRAPH_SIZE / size nodes, with gradient slots when grads. */
size_t ggml_graph_overhead(void);
size_t ggml_graph_overhead_custom(size_t size, bool grads);
/* New empty graph in ctx holding up to GGML_DEFAULT_GRAPH_SIZE (or size) nodes and as many leafs;
 * grads: with a gradient and an accumulator slot per tensor (for ggml_build_backward_expand). NULL with
 * an error when the arena is full. */
struct ggml_cgraph * ggml_new_graph(struct ggml_context * ctx);
struct ggml_cgraph * ggml_new_graph_custom(struct ggml_context * ctx, size_t size, bool grads);
/* Add tensor and everything it depends on, sources before consumers; each tensor once. A NULL tensor
 * (a failed constructor) or a full graph is a misuse: in the returning mode it marks the graph
 * invalid and records an error in the graph's context. */
void ggml_build_forward_expand(struct ggml_cgraph * cgraph, struct ggml_tensor * tensor);
/* False once the graph has been given a NULL tensor or overflowed. */
bool ggml_graph_is_valid(const struct ggml_cgraph * cgraph);
/* A graph over nodes [i0, i1) of cgraph, allocated in ctx. It shares cgraph's nodes and recorded
 * use counts (so consumers outside the view still count); it has no leafs. NULL on a bad range. */
struct ggml_cgraph * ggml_graph_view(struct ggml_context * ctx, struct ggml_cgraph * cgraph, int i0, int i1);
/* Copy nodes, leafs, use counts and gradients of src into dst. A dst too small for src, or without
 * gradient slots when src has them, is a misuse (dst unchanged in the returning mode). */
void ggml_graph_cpy(const struct ggml_cgraph * src, struct ggml_cgraph * dst);
/* Remove every node and leaf (and their gradients). */
void ggml_graph_clear(struct ggml_cgraph * cgraph);

/* Node capacity and node count. */
int ggml_graph_size(const struct ggml_cgraph * cgraph);
int ggml_graph_n_nodes(const struct ggml_cgraph * cgraph);
/* Node i; negative i counts from the end (-1 is the last node). NULL when out of range. */
struct ggml_tensor * ggml_graph_node(const struct ggml_cgraph * cgraph, int i);
struct ggml_tensor ** ggml_graph_nodes(const struct ggml_cgraph * cgraph);
/* Append a node whose sources are already in the graph (no dependency walk). A full graph or a
 * tensor already in it is a misuse (the graph unchanged in the returning mode). */
void ggml_graph_add_node(struct ggml_cgraph * cgraph, struct ggml_tensor * tensor);
/* The node or leaf named name, or NULL. */
struct ggml_tensor * ggml_graph_get_tensor(const struct ggml_cgraph * cgraph, const char * name);

/* Add tensor and its dependencies like ggml_build_forward_expand, but without marking the new nodes
 * for computation: it fixes their position in the graph; they compute only when a later expand
 * reaches them. */
void ggml_build_forward_order(struct ggml_cgraph * cgraph, struct ggml_tensor * tensor);
/* Add every one of tensors[0 .. n_tensors) to the graph (so the graph's shape is the same whichever
 * is chosen), computing only tensors[idx] and what it needs; returns tensors[idx]. Nodes only an
 * unselected branch needs are skipped by every backend. */
struct ggml_tensor * ggml_build_forward_select(struct ggml_cgraph * cgraph, struct ggml_tensor ** tensors,
                                              int n_tensors, int idx);
/* A copy of cgraph in ctx (nodes, leafs, use counts, gradients; capacity cgraph's), with gradient slots
 * when cgraph has them or force_grads. NULL with an error when ctx is full. */
struct ggml_cgraph * ggml_graph_dup(struct ggml_context * ctx, struct ggml_cgraph * cgraph, bool force_grads);
/* The gradient of the loss with respect to node (the tensor computing it) and node's accumulator; NULL
 * when it has none (docs/ggml-api.md, "Automatic differentiation"). */
struct ggml_tensor * ggml_graph_get_grad(const struct ggml_cgraph * cgraph, const struct ggml_tensor * node);
struct ggml_tensor * ggml_graph_get_grad_acc(const struct ggml_cgraph * cgraph, const struct ggml_tensor * node);
/* Before a backward pass: the loss's accumulator becomes 1, every other accumulator (and the moments of
 * OPT_STEP_ADAMW nodes) 0. The graph must have gradient slots. */
void ggml_graph_reset(struct ggml_cgraph * cgraph);
/* Append to cgraph (made with grads, holding the forward pass) the nodes computing the gradient of its
 * loss with respect to every tensor between the parameters and the loss, new tensors in ctx.
 * grad_accs[i], when given and not NULL, is the accumulator of node i (the gradient is added into it in
 * place); the loss gets one itself. A graph without parameter or loss, an op without a backward or an
 * in-place op on the way is an error in ctx, and the graph is left as it was. */
void ggml_build_backward_expand(struct ggml_context * ctx, struct ggml_cgraph * cgraph,
                                struct ggml_tensor ** grad_accs);
/* Log the graph: every node (index, op, type, shape, flags, name) and leaf. */
void ggml_graph_print(const struct ggml_cgraph * cgraph);
/* Write graph gb as a Graphviz dot file: nodes (op, type, shape, name; inputs, outputs and
 * parameters coloured) and leafs, with an edge from each source. gf, the forward graph of a
 * backward graph in ggml, may be NULL and is not used. Logs an error when
 * the file cannot be written. */
void ggml_graph_dump_dot(const struct ggml_cgraph * gb, const struct ggml_cgraph * gf, const char * filename);

#ifdef __cplusplus
}
#endif

#endif /* GGML_H */
