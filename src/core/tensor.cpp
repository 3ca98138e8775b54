// Tensors: creation, metadata queries, names and flags, views and layout changes.
#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "core/internal.h"
#include "core/op_params.h"
#include "core/types.h"

namespace {

using namespace ggx::core;

// Arena object of one tensor: the tensor followed by the link to the next tensor of its context.
struct TensorObject {
    ggml_tensor tensor;
    ggml_tensor * next;
    ggml_context * ctx;
};
static_assert(std::is_standard_layout_v<TensorObject>);

TensorObject * object_of(ggml_tensor * tensor) { return reinterpret_cast<TensorObject *>(tensor); }

std::string join_ne(const int64_t * values) {
    std::string out = "[";
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        out += (i ? ", " : "") + std::to_string(values[i]);
    return out + "]";
}

// Byte size of a tensor of type and shape ne, or false on overflow.
bool checked_nbytes(ggml_type type, const int64_t ne[4], size_t * bytes) {
    size_t total = ggml_row_size(type, ne[0]);
    for (int i = 1; i < GGML_MAX_DIMS; ++i) {
        if (__builtin_mul_overflow(total, static_cast<size_t>(ne[i]), &total)) return false;
    }
    *bytes = total;
    return true;
}

// The storage owner of a and the offset of a inside it.
ggml_tensor * owner_of(ggml_tensor * a, size_t * offset) {
    *offset = a->view_src ? a->view_offs : 0;
    return a->view_src ? a->view_src : a;
}

// A view of a with shape ne, element stride of a's type, the given strides for dims >= 1 and byte
// offset relative to a; checked against the owner's storage.
ggml_tensor * make_view(ggml_context * ctx, const char * op_name, ggml_tensor * a, const int64_t ne[4],
                        const size_t nb[4], size_t offset) {
    Check check(ctx, op_name, {{"a", a}});
    if (!check) return nullptr;
    size_t owner_offset = 0;
    ggml_tensor * owner = owner_of(a, &owner_offset);
    const bool quantized = ggml_is_quantized(a->type);
    check.require(ne[0] >= 0 && ne[1] >= 0 && ne[2] >= 0 && ne[3] >= 0, "dimensions must be >= 0")
        .require(!quantized || (ne[0] % ggml_blck_size(a->type) == 0 &&
                                (owner_offset + offset) % ggml_type_size(a->type) == 0),
                 "a view of a quantized tensor must cover whole blocks");
    if (!check) return nullptr;

    ggml_tensor probe{};
    probe.type = a->type;
    for (int i = 0; i < GGML_MAX_DIMS; ++i) {
        probe.ne[i] = ne[i];
        probe.nb[i] = nb[i];
    }
    const size_t span = ggml_nbytes(&probe);
    const size_t start = owner_offset + offset;
    if (!check.require(start <= ggml_nbytes(owner) && span <= ggml_nbytes(owner) - start,
                       "view exceeds the storage of its source")) {
        return nullptr;
    }
    ggml_tensor * view = new_tensor(ctx, op_name, a->type, ne, owner, start);
    if (!view) return nullptr;
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        view->nb[i] = nb[i];
    view->op = GGML_OP_VIEW;
    view->src[0] = a;
    return view;
}

ggml_tensor * view_with_strides(ggml_context * ctx, const char * op_name, ggml_tensor * a, int64_t ne0,
                                int64_t ne1, int64_t ne2, int64_t ne3, size_t nb1, size_t nb2, size_t nb3,
                                size_t offset) {
    if (!a) return nullptr;
    const int64_t ne[4] = {ne0, ne1, ne2, ne3};
    const size_t nb[4] = {ggml_type_size(a->type), nb1, nb2, nb3};
    return make_view(ctx, op_name, a, ne, nb, offset);
}

ggml_tensor * reshape(ggml_context * ctx, const char * op_name, ggml_tensor * a, const int64_t ne[4]) {
    Check check(ctx, op_name, {{"a", a}});
    if (!check) return nullptr;
    check.require(ggml_is_contiguous(a), "a must be contiguous")
        .require(ne[0] * ne[1] * ne[2] * ne[3] == ggml_nelements(a), "element count must not change")
        .require(ne[0] % ggml_blck_size(a->type) == 0, "ne0 must be a multiple of the block size");
    if (!check) return nullptr;
    size_t offset = 0;
    ggml_tensor * owner = owner_of(a, &offset);
    ggml_tensor * result = new_tensor(ctx, op_name, a->type, ne, owner, offset);
    if (!result) return nullptr;
    result->op = GGML_OP_RESHAPE;
    result->src[0] = a;
    return result;
}

}  // namespace

namespace ggx::core {

void set_contiguous_strides(ggml_tensor * tensor) {
    tensor->nb[0] = ggml_type_size(tensor->type);
    tensor->nb[1] = ggml_row_size(tensor->type, tensor->ne[0]);
    for (int i = 2; i < GGML_MAX_DIMS; ++i)
        tensor->nb[i] = tensor->nb[i - 1] * tensor->ne[i - 1];
}

ggml_tensor * new_tensor(ggml_context * ctx, const char * op_name, ggml_type type, const int64_t ne[4],
                         ggml_tensor * view_src, size_t view_offs) {
    size_t data_bytes = 0;
    if (!checked_nbytes(type, ne, &data_bytes)) {
        report_error(ctx, std::string(op_name) + ": tensor size overflows: " + join_ne(ne));
        return nullptr;
    }
    const bool own_data = !view_src && !ctx->no_alloc;
    // One arena block: the object, then (in small-data mode) the data, both aligned.
    const size_t object_bytes = align_up(sizeof(TensorObject), kArenaAlign);
    auto * block =
        static_cast<unsigned char *>(arena_alloc(ctx, object_bytes + (own_data ? data_bytes : 0), GGML_OBJECT_TYPE_TENSOR, op_name));
    if (!block) return nullptr;

    auto * object = new (block) TensorObject{};
    object->ctx = ctx;
    ggml_tensor * tensor = &object->tensor;
    tensor->type = type;
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        tensor->ne[i] = ne[i];
    set_contiguous_strides(tensor);
    tensor->view_src = view_src;
    tensor->view_offs = view_offs;
    if (own_data) tensor->data = block + object_bytes;
    if (view_src && view_src->data) tensor->data = static_cast<char *>(view_src->data) + view_offs;
    if (view_src) tensor->buffer = view_src->buffer;

    if (ctx->last_tensor)
        object_of(ctx->last_tensor)->next = tensor;
    else
        ctx->first_tensor = tensor;
    ctx->last_tensor = tensor;
    return tensor;
}

namespace {
TensorWriter tensor_writer = nullptr;
}  // namespace

void set_tensor_writer(TensorWriter writer) { tensor_writer = writer; }

void write_tensor(ggml_tensor * tensor, const void * data, size_t offset, size_t size) {
    if (tensor->buffer && tensor_writer) {
        tensor_writer(tensor, data, offset, size);
    } else if (tensor->data && size) {
        std::memcpy(static_cast<char *>(tensor->data) + offset, data, size);
    }
}

ggml_context * context_of(const ggml_tensor * tensor) {
    return reinterpret_cast<const TensorObject *>(tensor)->ctx;
}

std::string describe(const ggml_tensor * tensor) {
    std::string out = std::string(ggml_type_name(tensor->type)) + " " + join_ne(tensor->ne);
    if (!ggml_is_contiguous(tensor)) {
        const int64_t nb[4] = {int64_t(tensor->nb[0]), int64_t(tensor->nb[1]), int64_t(tensor->nb[2]),
                               int64_t(tensor->nb[3])};
        out += " nb " + join_ne(nb);
    }
    return out;
}

Check::Check(ggml_context * ctx, const char * op, std::initializer_list<Operand> operands)
    : ctx_(ctx), op_(op) {
    for (const Operand & operand : operands) {
        if (!operand.tensor && !operand.optional) ok_ = false;
        if (n_operands_ < max_operands) operands_[n_operands_++] = operand;
    }
}

Check & Check::require(bool condition, const char * why) {
    if (!ok_ || condition) return *this;
    ok_ = false;
    std::string message = std::string(op_) + ": " + why + " (";
    bool first = true;
    for (size_t i = 0; i < n_operands_; ++i) {
        const Operand & operand = operands_[i];
        if (!operand.tensor) continue;
        message += std::string(first ? "" : ", ") + operand.name + ": " + describe(operand.tensor);
        first = false;
    }
    report_error(ctx_, message + ")");
    return *this;
}

}  // namespace ggx::core

extern "C" {

// The metadata plus the padding the arena adds to a tensor's data beyond ggml's GGML_MEM_ALIGN, so
// that a context sized as ggml documents it (overhead per tensor plus the data, each rounded up to
// GGML_MEM_ALIGN) holds the same tensors in ggx's 64-byte-aligned arena.
size_t ggml_tensor_overhead(void) { return align_up(sizeof(TensorObject), kArenaAlign) + kArenaAlign - GGML_MEM_ALIGN; }

ggml_tensor * ggml_get_next_tensor(const ggml_context *, ggml_tensor * tensor) {
    return object_of(tensor)->next;
}

ggml_tensor * ggml_new_tensor(ggml_context * ctx, ggml_type type, int n_dims, const int64_t * ne) {
    Check check(ctx, "ggml_new_tensor", {});
    check.require(is_known_type(type), "unknown type")
        .require(n_dims >= 1 && n_dims <= GGML_MAX_DIMS, "n_dims must be 1..4");
    if (!check) return nullptr;
    int64_t shape[4] = {1, 1, 1, 1};
    for (int i = 0; i < n_dims; ++i)
        shape[i] = ne[i];
    const std::string dims = join_ne(shape);
    check
        .require(shape[0] >= 0 && shape[1] >= 0 && shape[2] >= 0 && shape[3] >= 0,
                 ("dimensions must be >= 0, got " + dims).c_str())
        .require(shape[0] % ggml_blck_size(type) == 0, ("ne0 must be a multiple of the block size of " +
                                                        std::string(ggml_type_name(type)) + ", got " + dims)
                                                           .c_str());
    if (!check) return nullptr;
    return new_tensor(ctx, "ggml_new_tensor", type, shape, nullptr, 0);
}

ggml_tensor * ggml_new_tensor_1d(ggml_context * ctx, ggml_type type, int64_t ne0) {
    return ggml_new_tensor(ctx, type, 1, &ne0);
}

ggml_tensor * ggml_new_tensor_2d(ggml_context * ctx, ggml_type type, int64_t ne0, int64_t ne1) {
    const int64_t ne[2] = {ne0, ne1};
    return ggml_new_tensor(ctx, type, 2, ne);
}

ggml_tensor * ggml_new_tensor_3d(ggml_context * ctx, ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2) {
    const int64_t ne[3] = {ne0, ne1, ne2};
    return ggml_new_tensor(ctx, type, 3, ne);
}

ggml_tensor * ggml_new_tensor_4d(ggml_context * ctx, ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2,
                                 int64_t ne3) {
    const int64_t ne[4] = {ne0, ne1, ne2, ne3};
    return ggml_new_tensor(ctx, type, 4, ne);
}

ggml_tensor * ggml_dup_tensor(ggml_context * ctx, const ggml_tensor * a) {
    if (!a) return nullptr;
    return new_tensor(ctx, "ggml_dup_tensor", a->type, a->ne, nullptr, 0);
}

ggml_tensor * ggml_view_tensor(ggml_context * ctx, ggml_tensor * a) {
    if (!a) return nullptr;
    return make_view(ctx, "ggml_view_tensor", a, a->ne, a->nb, 0);
}

const char * ggml_get_name(const ggml_tensor * tensor) { return tensor->name; }

ggml_tensor * ggml_set_name(ggml_tensor * tensor, const char * name) {
    std::snprintf(tensor->name, sizeof tensor->name, "%s", name);
    return tensor;
}

ggml_tensor * ggml_format_name(ggml_tensor * tensor, const char * fmt, ...) {
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(tensor->name, sizeof tensor->name, fmt, args);
    va_end(args);
    return tensor;
}

void ggml_set_input(ggml_tensor * tensor) { tensor->flags |= GGML_TENSOR_FLAG_INPUT; }
void ggml_set_output(ggml_tensor * tensor) { tensor->flags |= GGML_TENSOR_FLAG_OUTPUT; }
void ggml_set_param(ggml_tensor * tensor) {
    if (!tensor) return;
    Check check(context_of(tensor), "ggml_set_param", {{"tensor", tensor}});
    if (check.require(tensor->op == GGML_OP_NONE, "a trainable parameter must be a tensor without an op"))
        tensor->flags |= GGML_TENSOR_FLAG_PARAM;
}

void ggml_set_loss(ggml_tensor * tensor) {
    if (!tensor) return;
    Check check(context_of(tensor), "ggml_set_loss", {{"tensor", tensor}});
    if (check.require(ggml_is_scalar(tensor) && tensor->type == GGML_TYPE_F32,
                      "the loss must be one f32 value"))
        tensor->flags |= GGML_TENSOR_FLAG_LOSS;
}

ggml_tensor * ggml_set_zero(ggml_tensor * tensor) {
    const std::vector<unsigned char> zeros(ggml_nbytes(tensor));
    write_tensor(tensor, zeros.data(), 0, zeros.size());
    return tensor;
}

size_t ggml_nbytes_pad(const ggml_tensor * tensor) { return align_up(ggml_nbytes(tensor), GGML_MEM_ALIGN); }

void ggml_unravel_index(const ggml_tensor * tensor, int64_t i, int64_t * i0, int64_t * i1, int64_t * i2,
                        int64_t * i3) {
    int64_t * const out[GGML_MAX_DIMS] = {i0, i1, i2, i3};
    for (int d = 0; d < GGML_MAX_DIMS; ++d) {
        if (out[d]) *out[d] = i % tensor->ne[d];
        i /= tensor->ne[d];
    }
}
void * ggml_get_data(const ggml_tensor * tensor) { return tensor->data; }
float * ggml_get_data_f32(const ggml_tensor * tensor) { return static_cast<float *>(tensor->data); }

int64_t ggml_nelements(const ggml_tensor * t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }
int64_t ggml_nrows(const ggml_tensor * t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

size_t ggml_nbytes(const ggml_tensor * t) {
    for (int i = 0; i < GGML_MAX_DIMS; ++i) {
        if (t->ne[i] <= 0) return 0;
    }
    // Quantized rows are whole dense blocks; other types may have any element stride.
    const bool blocked = ggml_blck_size(t->type) != 1;
    size_t bytes = blocked ? ggml_row_size(t->type, t->ne[0]) : ggml_type_size(t->type);
    for (int i = blocked ? 1 : 0; i < GGML_MAX_DIMS; ++i)
        bytes += (t->ne[i] - 1) * t->nb[i];
    return bytes;
}

int ggml_n_dims(const ggml_tensor * t) {
    for (int i = GGML_MAX_DIMS - 1; i >= 1; --i) {
        if (t->ne[i] > 1) return i + 1;
    }
    return 1;
}

size_t ggml_element_size(const ggml_tensor * t) { return ggml_type_size(t->type); }

bool ggml_is_empty(const ggml_tensor * t) { return ggml_nelements(t) == 0; }
bool ggml_is_scalar(const ggml_tensor * t) {
    return t->ne[0] == 1 && t->ne[1] == 1 && t->ne[2] == 1 && t->ne[3] == 1;
}
bool ggml_is_vector(const ggml_tensor * t) { return t->ne[1] == 1 && t->ne[2] == 1 && t->ne[3] == 1; }
bool ggml_is_matrix(const ggml_tensor * t) { return t->ne[2] == 1 && t->ne[3] == 1; }
bool ggml_is_3d(const ggml_tensor * t) { return t->ne[3] == 1; }

// Rows dense, and each dim i in [1, end) above n_free packs right after the one below it (dims
// 1..n_free have free strides); dims with ne == 1 have no stride to check.
static bool is_contiguous_range(const ggml_tensor * t, int n_free, int end) {
    const int64_t block = ggml_blck_size(t->type);
    size_t next = ggml_type_size(t->type);
    if (t->ne[0] != block && t->nb[0] != next) return false;
    next *= t->ne[0] / block;
    for (int i = 1; i < end; ++i) {
        if (t->ne[i] == 1) continue;
        if (i > n_free && t->nb[i] != next) return false;
        next = t->nb[i] * t->ne[i];
    }
    return true;
}

static bool is_contiguous_n(const ggml_tensor * t, int n) { return is_contiguous_range(t, n, GGML_MAX_DIMS); }

bool ggml_is_contiguous(const ggml_tensor * t) { return is_contiguous_n(t, 0); }
bool ggml_is_contiguous_0(const ggml_tensor * t) { return is_contiguous_n(t, 0); }
bool ggml_is_contiguous_1(const ggml_tensor * t) { return is_contiguous_n(t, 1); }
bool ggml_is_contiguous_2(const ggml_tensor * t) { return is_contiguous_n(t, 2); }
bool ggml_is_contiguous_rows(const ggml_tensor * t) {
    return t->ne[0] == 1 || t->nb[0] == ggml_type_size(t->type);
}

bool ggml_is_contiguous_to_1(const ggml_tensor * t) { return is_contiguous_range(t, 0, 1); }
bool ggml_is_contiguous_to_2(const ggml_tensor * t) { return is_contiguous_range(t, 0, 2); }
bool ggml_is_contiguous_to_3(const ggml_tensor * t) { return is_contiguous_range(t, 0, 3); }

bool ggml_is_contiguous_channels(const ggml_tensor * t) {
    return t->nb[0] > t->nb[2] && t->nb[1] > t->nb[0] && t->nb[2] == ggml_type_size(t->type);
}

bool ggml_is_view(const ggml_tensor * t) { return t->view_src != nullptr; }

bool ggml_is_contiguously_allocated(const ggml_tensor * t) {
    return ggml_nbytes(t) == static_cast<size_t>(ggml_nelements(t)) * ggml_type_size(t->type) /
                                 static_cast<size_t>(ggml_blck_size(t->type));
}

bool ggml_is_transposed(const ggml_tensor * t) { return t->nb[0] > t->nb[1]; }

bool ggml_is_permuted(const ggml_tensor * t) {
    return t->nb[0] > t->nb[1] || t->nb[1] > t->nb[2] || t->nb[2] > t->nb[3];
}

bool ggml_are_same_shape(const ggml_tensor * a, const ggml_tensor * b) {
    for (int i = 0; i < GGML_MAX_DIMS; ++i) {
        if (a->ne[i] != b->ne[i]) return false;
    }
    return true;
}

bool ggml_are_same_stride(const ggml_tensor * a, const ggml_tensor * b) {
    for (int i = 0; i < GGML_MAX_DIMS; ++i) {
        if (a->nb[i] != b->nb[i]) return false;
    }
    return true;
}

bool ggml_can_repeat(const ggml_tensor * a, const ggml_tensor * b) {
    if (ggml_is_empty(a)) return ggml_is_empty(b);
    for (int i = 0; i < GGML_MAX_DIMS; ++i) {
        if (b->ne[i] % a->ne[i] != 0) return false;
    }
    return true;
}

ggml_tensor * ggml_view_1d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, size_t offset) {
    if (!a) return nullptr;
    const size_t row = ggml_row_size(a->type, ne0);
    return view_with_strides(ctx, "ggml_view_1d", a, ne0, 1, 1, 1, row, row, row, offset);
}

ggml_tensor * ggml_view_2d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, size_t nb1,
                           size_t offset) {
    return view_with_strides(ctx, "ggml_view_2d", a, ne0, ne1, 1, 1, nb1, nb1 * ne1, nb1 * ne1, offset);
}

ggml_tensor * ggml_view_3d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2,
                           size_t nb1, size_t nb2, size_t offset) {
    return view_with_strides(ctx, "ggml_view_3d", a, ne0, ne1, ne2, 1, nb1, nb2, nb2 * ne2, offset);
}

ggml_tensor * ggml_view_4d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2,
                           int64_t ne3, size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    return view_with_strides(ctx, "ggml_view_4d", a, ne0, ne1, ne2, ne3, nb1, nb2, nb3, offset);
}

ggml_tensor * ggml_reshape(ggml_context * ctx, ggml_tensor * a, const ggml_tensor * b) {
    if (!a || !b) return nullptr;
    return reshape(ctx, "ggml_reshape", a, b->ne);
}

ggml_tensor * ggml_reshape_1d(ggml_context * ctx, ggml_tensor * a, int64_t ne0) {
    const int64_t ne[4] = {ne0, 1, 1, 1};
    return reshape(ctx, "ggml_reshape_1d", a, ne);
}

ggml_tensor * ggml_reshape_2d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1) {
    const int64_t ne[4] = {ne0, ne1, 1, 1};
    return reshape(ctx, "ggml_reshape_2d", a, ne);
}

ggml_tensor * ggml_reshape_3d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2) {
    const int64_t ne[4] = {ne0, ne1, ne2, 1};
    return reshape(ctx, "ggml_reshape_3d", a, ne);
}

ggml_tensor * ggml_reshape_4d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2,
                              int64_t ne3) {
    const int64_t ne[4] = {ne0, ne1, ne2, ne3};
    return reshape(ctx, "ggml_reshape_4d", a, ne);
}

static ggml_tensor * permute(ggml_context * ctx, const char * op_name, ggml_op op, ggml_tensor * a,
                             const std::array<int, 4> & axes) {
    Check check(ctx, op_name, {{"a", a}});
    if (!check) return nullptr;
    bool seen[4] = {};
    bool valid = true;
    for (int axis : axes) {
        valid = valid && axis >= 0 && axis < GGML_MAX_DIMS && !seen[axis];
        if (valid) seen[axis] = true;
    }
    check.require(valid, "axes must be a permutation of 0, 1, 2, 3")
        .require(!ggml_is_quantized(a->type) || axes[0] == 0,
                 "dimension 0 of a quantized tensor cannot move");
    if (!check) return nullptr;
    int64_t ne[4];
    size_t nb[4];
    for (int i = 0; i < GGML_MAX_DIMS; ++i) {
        ne[axes[i]] = a->ne[i];
        nb[axes[i]] = a->nb[i];
    }
    ggml_tensor * result = make_view(ctx, op_name, a, ne, nb, 0);
    if (!result) return nullptr;
    result->op = op;
    ggml_ext_permute_params params{};
    std::copy(axes.begin(), axes.end(), params.axes);
    set_params(result, params);
    return result;
}

ggml_tensor * ggml_permute(ggml_context * ctx, ggml_tensor * a, int axis0, int axis1, int axis2, int axis3) {
    return permute(ctx, "ggml_permute", GGML_OP_PERMUTE, a, {axis0, axis1, axis2, axis3});
}

ggml_tensor * ggml_transpose(ggml_context * ctx, ggml_tensor * a) {
    return permute(ctx, "ggml_transpose", GGML_OP_TRANSPOSE, a, {1, 0, 2, 3});
}

}  // extern "C"
