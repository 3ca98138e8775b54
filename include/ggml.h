/* ggx — core tensor and graph API (ggml programming model).
 *
 * Shapes are ggml-ordered: ne[0] is the fastest-varying dimension. nb[i] is the byte stride of
 * dimension i. For block-quantized types nb[0] is the size of one block and ne[0] counts elements.
 *
 * Errors: a constructor given an invalid shape or type returns NULL and records a message that names
 * the operator and the shapes in its context (ggml_get_error). The first error is kept until
 * ggml_clear_error; a constructor given a NULL input returns NULL without replacing it. See
 * docs/errors.md. */
#ifndef GGML_H
#define GGML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GGML_MAX_DIMS 4
#define GGML_MAX_SRC 10
#define GGML_MAX_OP_PARAMS 64
#define GGML_MAX_NAME 64
#define GGML_MEM_ALIGN 64
#define GGML_DEFAULT_GRAPH_SIZE 2048

/* ---------------------------------------------------------------------------------------------- */
/* Types                                                                                           */

enum ggml_type {
    GGML_TYPE_F32 = 0,
    GGML_TYPE_F16,
    GGML_TYPE_BF16,
    GGML_TYPE_I8,
    GGML_TYPE_I16,
    GGML_TYPE_I32,
    GGML_TYPE_Q8_0, /* blocks of 32 int8 values with one F16 scale: 34 bytes */
    GGML_TYPE_Q4_0, /* blocks of 32 4-bit values (offset 8) with one F16 scale: 18 bytes */
    GGML_TYPE_COUNT,
};

#define GGML_QK8_0 32
#define GGML_QK4_0 32

typedef uint16_t ggml_fp16_t;
typedef uint16_t ggml_bf16_t;

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

/* Status codes shared by every layer. */
enum ggml_status {
    GGML_STATUS_ALLOC_FAILED = -2,
    GGML_STATUS_FAILED = -1,
    GGML_STATUS_SUCCESS = 0,
    GGML_STATUS_ABORTED = 1,
};

/* Name of a type ("f32", "q8_0", ...); "unknown" for an out-of-range value. */
const char * ggml_type_name(enum ggml_type type);
/* Elements per block: 32 for Q8_0 and Q4_0, 1 otherwise. */
int64_t ggml_blck_size(enum ggml_type type);
/* Bytes per block (for unquantized types: bytes per element). */
size_t ggml_type_size(enum ggml_type type);
/* True for block-quantized types (Q8_0, Q4_0). */
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

/* Convert n F32 values (n a multiple of the block size) into a row of type at y; returns bytes
 * written. F16/BF16 round to nearest even; I8/I16/I32 round to nearest even and saturate (NaN -> 0).
 * Q8_0 per block: d = amax / 127, q = round-half-away(x / d). Q4_0 per block: m = the value of
 * largest magnitude (first one on ties), d = m / -8, q = min(15, trunc(x / d + 8.5)). d is stored
 * as F16; the division uses the unrounded d (id = 1 / d, 0 when d == 0). */
size_t ggml_quantize_row(enum ggml_type type, const float * x, void * y, int64_t n);
/* Convert a row of n values (n a multiple of the block size) of any type into F32. */
void ggml_dequantize_row(enum ggml_type type, const void * x, float * y, int64_t n);

/* ---------------------------------------------------------------------------------------------- */
/* Operators                                                                                       */

enum ggml_op {
    GGML_OP_NONE = 0,

    GGML_OP_DUP,
    GGML_OP_ADD,
    GGML_OP_SUB,
    GGML_OP_MUL,
    GGML_OP_DIV,
    GGML_OP_SCALE,
    GGML_OP_SQR,
    GGML_OP_SQRT,
    GGML_OP_CLAMP,
    GGML_OP_SUM,
    GGML_OP_SUM_ROWS,
    GGML_OP_MEAN,
    GGML_OP_ARGMAX,
    GGML_OP_REPEAT,
    GGML_OP_CONCAT,
    GGML_OP_NORM,
    GGML_OP_RMS_NORM,
    GGML_OP_GROUP_NORM,
    GGML_OP_L2_NORM,
    GGML_OP_MUL_MAT,
    GGML_OP_SOFT_MAX,
    GGML_OP_ROPE,
    GGML_OP_FLASH_ATTN_EXT,
    GGML_OP_GET_ROWS,
    GGML_OP_SET_ROWS,
    GGML_OP_UNARY,
    GGML_OP_GLU,
    GGML_OP_IM2COL,
    GGML_OP_PAD,
    GGML_OP_UPSCALE,
    GGML_OP_TIMESTEP_EMBEDDING,
    GGML_OP_CPY,
    GGML_OP_CONT,
    GGML_OP_RESHAPE,
    GGML_OP_VIEW,
    GGML_OP_PERMUTE,
    GGML_OP_TRANSPOSE,
    GGML_OP_CUSTOM,

    GGML_OP_COUNT,
};

enum ggml_unary_op {
    GGML_UNARY_OP_RELU = 0,
    GGML_UNARY_OP_SILU,
    GGML_UNARY_OP_GELU, /* tanh approximation */
    GGML_UNARY_OP_GELU_QUICK,
    GGML_UNARY_OP_SIGMOID,
    GGML_UNARY_OP_TANH,
    GGML_UNARY_OP_COUNT,
};

enum ggml_glu_op {
    GGML_GLU_OP_SWIGLU = 0,
    GGML_GLU_OP_GEGLU,
    GGML_GLU_OP_COUNT,
};

enum ggml_rope_mode {
    GGML_ROPE_TYPE_NORMAL = 0, /* rotate adjacent pairs (2i, 2i+1) */
    GGML_ROPE_TYPE_NEOX = 2,   /* rotate pairs (i, i + n_dims/2) */
};

enum ggml_scale_mode {
    GGML_SCALE_MODE_NEAREST = 0,
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

/* Tensor flags. */
enum ggml_tensor_flag {
    GGML_TENSOR_FLAG_INPUT = 1,
    GGML_TENSOR_FLAG_OUTPUT = 2,
    GGML_TENSOR_FLAG_PARAM = 4,    /* trainable parameter (recorded only: ggx does not train) */
    GGML_TENSOR_FLAG_LOSS = 8,     /* a loss (recorded only) */
    GGML_TENSOR_FLAG_COMPUTE = 16, /* set on every node a graph computes */
};

struct ggml_backend_buffer;

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
};

struct ggml_context;
struct ggml_cgraph;

typedef void (*ggml_error_callback)(const char * message, void * user_data);

struct ggml_init_params {
    size_t mem_size;   /* bytes of the arena (metadata, graphs and, unless no_alloc, tensor data) */
    void * mem_buffer; /* caller-owned arena, or NULL to let the context allocate it */
    bool no_alloc;     /* true: tensors get no data; backend buffers provide it later */
};

/* ---------------------------------------------------------------------------------------------- */
/* Contexts                                                                                        */

/* Create a context over an arena. Returns NULL if mem_size is 0 or the arena cannot be allocated.
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
/* Arena bytes one tensor's metadata takes (without data). */
size_t ggml_tensor_overhead(void);

/* The first recorded error message of ctx, or NULL. The string lives until the next clear. */
const char * ggml_get_error(const struct ggml_context * ctx);
/* Forget the recorded error so later failures are reported again. */
void ggml_clear_error(struct ggml_context * ctx);
/* Call cb(message, user_data) on every error recorded in ctx (NULL restores the default: none). */
void ggml_set_error_callback(struct ggml_context * ctx, ggml_error_callback cb, void * user_data);
/* If true, an error in ctx prints its message and aborts the process instead of returning NULL. */
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
 * Returns NULL and records an error on invalid arguments or when the arena is full. */
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
/* Contiguous copy of a with the same shape and type (op DUP). */
struct ggml_tensor * ggml_dup(struct ggml_context * ctx, struct ggml_tensor * a);
/* Contiguous copy of a (op CONT), optionally with a new shape of the same element count. */
struct ggml_tensor * ggml_cont(struct ggml_context * ctx, struct ggml_tensor * a);
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
/* min(max(a, min), max); requires min <= max. */
struct ggml_tensor * ggml_clamp(struct ggml_context * ctx, struct ggml_tensor * a, float min, float max);
struct ggml_tensor * ggml_clamp_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float min,
                                        float max);

/* ---------------------------------------------------------------------------------------------- */
/* Reductions (a: F32/F16/BF16; result type a's). */

/* Sum of all elements, shape [1]. */
struct ggml_tensor * ggml_sum(struct ggml_context * ctx, struct ggml_tensor * a);
/* Sum / mean of each row, shape [1, ne1, ne2, ne3]. */
struct ggml_tensor * ggml_sum_rows(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_mean(struct ggml_context * ctx, struct ggml_tensor * a);
/* Index of the first maximum of each row of a matrix a (F32), I32 shape [ne1]. */
struct ggml_tensor * ggml_argmax(struct ggml_context * ctx, struct ggml_tensor * a);

/* ---------------------------------------------------------------------------------------------- */
/* Shape ops */

/* Tile a to b's shape (ggml_can_repeat(a, b)); result has b's shape, a's type. */
struct ggml_tensor * ggml_repeat(struct ggml_context * ctx, struct ggml_tensor * a,
                                 const struct ggml_tensor * b);
/* Concatenate along dim (0..3); all other dimensions and the types must match. */
struct ggml_tensor * ggml_concat(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                 int dim);
/* Zero padding: lp_i elements before and rp_i after dimension i. */
struct ggml_tensor * ggml_pad_ext(struct ggml_context * ctx, struct ggml_tensor * a, int lp0, int rp0,
                                  int lp1, int rp1, int lp2, int rp2, int lp3, int rp3);
/* Zero padding after each dimension. */
struct ggml_tensor * ggml_pad(struct ggml_context * ctx, struct ggml_tensor * a, int p0, int p1, int p2,
                              int p3);
/* Resize dims 0..3 to ne0..ne3 (F32); nearest: src index = floor(dst index * src_ne / dst_ne). */
struct ggml_tensor * ggml_upscale_ext(struct ggml_context * ctx, struct ggml_tensor * a, int ne0, int ne1,
                                      int ne2, int ne3, enum ggml_scale_mode mode);
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
/* x / max(||x||_2, eps). */
struct ggml_tensor * ggml_l2_norm(struct ggml_context * ctx, struct ggml_tensor * a, float eps);

/* ---------------------------------------------------------------------------------------------- */
/* Matrix products and attention */

/* a [K, M, A2, A3], b [K, N, B2, B3] -> F32 [M, N, B2, B3], result[m, n] = sum_k a[k, m] * b[k, n];
 * a broadcast over dims 2, 3 (B2 % A2 == 0, B3 % A3 == 0; b matrix i2 uses a matrix i2 / (B2 / A2)). a:
 * F32/F16/BF16/Q8_0/Q4_0 (quantized rows dense); b: F32/F16/BF16. */
struct ggml_tensor * ggml_mul_mat(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);

/* softmax over rows of a * scale + slope * mask (an all -inf row gives zeros; mask optional, F16/F32, [ne0,
 * >= ne1, ...] broadcast over dims 2, 3); slope is 1 unless max_bias > 0 (ALiBi, head = dim 2). a: F32. */
struct ggml_tensor * ggml_soft_max(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_soft_max_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_soft_max_ext(struct ggml_context * ctx, struct ggml_tensor * a,
                                       struct ggml_tensor * mask, float scale, float max_bias);

/* Rotary position embedding of a [head_dim, n_head, n_tokens, B] (F32/F16) at positions b (I32
 * [n_tokens]); the first n_dims channels (even, <= head_dim) rotate, the rest are copied. mode is
 * GGML_ROPE_TYPE_NORMAL or GGML_ROPE_TYPE_NEOX; c optional F32 frequency factors [n_dims / 2];
 * YaRN parameters as in ggml. */
struct ggml_tensor * ggml_rope_ext(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                   struct ggml_tensor * c, int n_dims, int mode, int n_ctx_orig,
                                   float freq_base, float freq_scale, float ext_factor, float attn_factor,
                                   float beta_fast, float beta_slow);

/* Attention: q [D, n_q, H, B] F32, k [D, n_kv, Hkv, Bk] and v [Dv, n_kv, Hkv, Bk] F16 or F32
 * (H % Hkv == 0, B % Bk == 0; head h reads k/v head h / (H / Hkv)), mask optional F16/F32 [n_kv, >= n_q,
 * broadcast, broadcast]. Result F32 [Dv, H, n_q, B]. Score = softcap * tanh(q.k * scale / softcap) (softcap
 * 0: q.k * scale), plus slope * mask (ALiBi slope as in soft_max_ext). */
struct ggml_tensor * ggml_flash_attn_ext(struct ggml_context * ctx, struct ggml_tensor * q,
                                         struct ggml_tensor * k, struct ggml_tensor * v,
                                         struct ggml_tensor * mask, float scale, float max_bias,
                                         float logit_softcap);

/* ---------------------------------------------------------------------------------------------- */
/* Indexing */

/* Rows of a [ne0, R, A2, A3] picked by b (I32 [n, A2, A3]): result [ne0, n, A2, A3], F32 (I32 when
 * a is I32). a: F32/F16/BF16/Q8_0/Q4_0/I32. */
struct ggml_tensor * ggml_get_rows(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
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

/* ---------------------------------------------------------------------------------------------- */
/* Convolution */

/* Unfold input b for kernel a. 2-D: a [KW, KH, IC, OC], b [IW, IH, IC, N] -> [IC*KH*KW, OW, OH, N];
 * 1-D: a [KW, IC, OC], b [IW, IC, N] -> [IC*KW, OW, N]. OW = (IW + 2*p0 - d0*(KW-1) - 1) / s0 + 1.
 * Out-of-range input positions read as zero. b: F32/F16; dst_type F32 or F16. */
struct ggml_tensor * ggml_im2col(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                 int s0, int s1, int p0, int p1, int d0, int d1, bool is_2d,
                                 enum ggml_type dst_type);
/* 2-D convolution, kernel a [KW, KH, IC, OC] (F32/F16), input b [IW, IH, IC, N] (F32) ->
 * F32 [OW, OH, OC, N]; built as im2col followed by mul_mat. */
struct ggml_tensor * ggml_conv_2d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                  int s0, int s1, int p0, int p1, int d0, int d1);

/* ---------------------------------------------------------------------------------------------- */
/* Diffusion helpers */

/* Sinusoidal embedding of timesteps (F32 [N]) -> F32 [dim, N]: with half = dim / 2 and
 * f_j = exp(-ln(max_period) * j / half), row = [cos(t f_0..), sin(t f_0..)] (+ one 0 if dim odd). */
struct ggml_tensor * ggml_timestep_embedding(struct ggml_context * ctx, struct ggml_tensor * timesteps,
                                             int dim, int max_period);

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

/* Trainable parameter / loss flags. ggx has no automatic differentiation: they are recorded for
 * the application (and ggml_graph_reset), nothing else reads them. */
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
/* Sets every element to zero (host data only; tensors without data are left alone). */
struct ggml_tensor * ggml_set_zero(struct ggml_tensor * tensor);

/* ggml_type_size / ggml_blck_size (bytes per element, fractional for block types). */
double ggml_type_sizef(enum ggml_type type);

/* Model file types (the values of ggml's file headers). */
enum ggml_ftype {
    GGML_FTYPE_UNKNOWN = -1,
    GGML_FTYPE_ALL_F32 = 0,
    GGML_FTYPE_MOSTLY_F16 = 1,
    GGML_FTYPE_MOSTLY_Q4_0 = 2,
    GGML_FTYPE_MOSTLY_Q4_1 = 3,
    GGML_FTYPE_MOSTLY_Q4_1_SOME_F16 = 4,
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
};
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

/* Quantization of whole rows for the types ggx has. There are no tables to build: init and free do
 * nothing and are safe to call any number of times. No type needs an importance matrix. */
void ggml_quantize_init(enum ggml_type type);
void ggml_quantize_free(void);
bool ggml_quantize_requires_imatrix(enum ggml_type type);
/* Converts nrows rows of n_per_row values, starting at element start (a multiple of n_per_row)
 * of src, into dst at the same row; returns the bytes written. imatrix is accepted and not used
 * (ggx's formats round without weights). 0 with a logged error for a type ggx cannot write or a
 * start that is not a row start. */
size_t ggml_quantize_chunk(enum ggml_type type, const float * src, void * dst, int64_t start, int64_t nrows,
                           int64_t n_per_row, const float * imatrix);

/* 16-byte identifiers (of backends). */
typedef uint8_t ggml_guid[16];
typedef ggml_guid * ggml_guid_t;
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

enum ggml_log_level {
    GGML_LOG_LEVEL_NONE = 0,
    GGML_LOG_LEVEL_DEBUG = 1,
    GGML_LOG_LEVEL_INFO = 2,
    GGML_LOG_LEVEL_WARN = 3,
    GGML_LOG_LEVEL_ERROR = 4,
    GGML_LOG_LEVEL_CONT = 5, /* continues the previous message */
};
typedef void (*ggml_log_callback)(enum ggml_log_level level, const char * text, void * user_data);
/* Where ggx's diagnostics go (process-wide; not synchronised with concurrent logging). NULL
 * restores the default, which writes to stderr. */
void ggml_log_set(ggml_log_callback log_callback, void * user_data);
void ggml_log_get(ggml_log_callback * log_callback, void ** user_data);

/* Called with the message before ggx aborts the process on a fatal error (instead of logging it);
 * returns the previous callback. NULL restores logging. */
typedef void (*ggml_abort_callback_t)(const char * error_message);
ggml_abort_callback_t ggml_set_abort_callback(ggml_abort_callback_t callback);

/* One allocation of a context's arena: a tensor, a graph or a buffer (ggml_new_buffer). */
enum ggml_object_type {
    GGML_OBJECT_TYPE_TENSOR,
    GGML_OBJECT_TYPE_GRAPH,
    GGML_OBJECT_TYPE_WORK_BUFFER,
};
struct ggml_object;
/* Log one object / every object of ctx in allocation order (type, offset, size). */
void ggml_print_object(const struct ggml_object * obj);
void ggml_print_objects(const struct ggml_context * ctx);

/* Does nothing with its arguments (for macros that mark variables as used). */
void ggml_unused_vars_impl(int n, ...);

/* Thread pools (created by ggml_threadpool_new, ggml-cpu.h). */
#define GGML_MAX_N_THREADS 512
enum ggml_sched_priority {
    GGML_SCHED_PRIO_LOW = -1,
    GGML_SCHED_PRIO_NORMAL,
    GGML_SCHED_PRIO_MEDIUM,
    GGML_SCHED_PRIO_HIGH,
    GGML_SCHED_PRIO_REALTIME,
};
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

/* Arena bytes of a graph of GGML_DEFAULT_GRAPH_SIZE / size nodes. */
size_t ggml_graph_overhead(void);
size_t ggml_graph_overhead_custom(size_t size);
/* New empty graph in ctx holding up to GGML_DEFAULT_GRAPH_SIZE (or size) nodes and as many leafs.
 * grads must be false (no training support). NULL with an error when the arena is full. */
struct ggml_cgraph * ggml_new_graph(struct ggml_context * ctx);
struct ggml_cgraph * ggml_new_graph_custom(struct ggml_context * ctx, size_t size, bool grads);
/* Add tensor and everything it depends on, sources before consumers; each tensor once. A NULL tensor
 * (a failed constructor) or a full graph marks the graph invalid and records an error in the
 * graph's context. */
void ggml_build_forward_expand(struct ggml_cgraph * cgraph, struct ggml_tensor * tensor);
/* False once the graph has been given a NULL tensor or overflowed. */
bool ggml_graph_is_valid(const struct ggml_cgraph * cgraph);
/* A graph over nodes [i0, i1) of cgraph, allocated in ctx. It shares cgraph's nodes and recorded
 * use counts (so consumers outside the view still count); it has no leafs. NULL on a bad range. */
struct ggml_cgraph * ggml_graph_view(struct ggml_context * ctx, struct ggml_cgraph * cgraph, int i0, int i1);
/* Copy nodes, leafs and use counts of src into dst (capacity must suffice; false otherwise). */
bool ggml_graph_cpy(const struct ggml_cgraph * src, struct ggml_cgraph * dst);
/* Remove every node and leaf. */
void ggml_graph_clear(struct ggml_cgraph * cgraph);

/* Node capacity and node count. */
int ggml_graph_size(const struct ggml_cgraph * cgraph);
int ggml_graph_n_nodes(const struct ggml_cgraph * cgraph);
/* Node i; negative i counts from the end (-1 is the last node). NULL when out of range. */
struct ggml_tensor * ggml_graph_node(const struct ggml_cgraph * cgraph, int i);
struct ggml_tensor ** ggml_graph_nodes(const struct ggml_cgraph * cgraph);
/* Append a node whose sources are already in the graph (no dependency walk). False when full. */
bool ggml_graph_add_node(struct ggml_cgraph * cgraph, struct ggml_tensor * tensor);
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
/* A copy of cgraph in ctx (nodes, leafs, use counts; capacity cgraph's). force_grads must be false
 * (no gradients); NULL with an error otherwise or when ctx is full. */
struct ggml_cgraph * ggml_graph_dup(struct ggml_context * ctx, struct ggml_cgraph * cgraph, bool force_grads);
/* ggx has no automatic differentiation: graphs hold no gradients, so get_grad / get_grad_acc return
 * NULL, reset does nothing, and build_backward_expand records an error in ctx and adds nothing. */
struct ggml_tensor * ggml_graph_get_grad(const struct ggml_cgraph * cgraph, const struct ggml_tensor * node);
struct ggml_tensor * ggml_graph_get_grad_acc(const struct ggml_cgraph * cgraph, const struct ggml_tensor * node);
void ggml_graph_reset(struct ggml_cgraph * cgraph);
void ggml_build_backward_expand(struct ggml_context * ctx, struct ggml_cgraph * cgraph,
                                struct ggml_tensor ** grad_accs);
/* Log the graph: every node (index, op, type, shape, flags, name) and leaf. */
void ggml_graph_print(const struct ggml_cgraph * cgraph);
/* Write graph gb as a Graphviz dot file: nodes (op, type, shape, name; inputs, outputs and
 * parameters coloured) and leafs, with an edge from each source. gf, the forward graph of a
 * backward graph in ggml, may be NULL and is not used (ggx has no gradients). Logs an error when
 * the file cannot be written. */
void ggml_graph_dump_dot(const struct ggml_cgraph * gb, const struct ggml_cgraph * gf, const char * filename);

#ifdef __cplusplus
}
#endif

#endif /* GGML_H */
