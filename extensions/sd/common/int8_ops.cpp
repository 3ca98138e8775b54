// The INT8 tensorwise operators of the sd pack (sd-ops.md section 3; ggml-extensions.md "sd.cpp
// integration"): the schemas of sd.quantize_i8_convrot.v1 and sd.linear_i8.v1 with their
// validation, the constructors ggml_quantize_i8_convrot, ggml_mul_mat_i8_tensorwise and
// ggml_ext_linear_i8_tensorwise, and sd::register_int8.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "common/int8.h"
#include "common/pack.h"
#ifdef SD_VULKAN
#include "vulkan/sd_vulkan.h"
#endif
#include "sd-ggml-ext.h"

namespace sd::int8 {
namespace {

bool valid_group(int64_t g) { return g == 1 || g == 4 || g == 16 || g == 64 || g == 256; }

std::string shape(const ggml_tensor * t) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "]%s",
                  ggml_type_name(t->type), t->ne[0], t->ne[1], t->ne[2], t->ne[3],
                  ggml_is_contiguous(t) ? "" : " (non-contiguous)");
    return buf;
}

template <typename... Args>
bool reject(char * why, size_t why_size, const char * format, Args... args) {
    std::snprintf(why, why_size, format, args...);
    return false;
}

bool quantize_infer(const ggml_tensor * const * inputs, int, const void * attr_bytes, size_t,
                    ggml_type * type, int64_t ne[GGML_MAX_DIMS], char * why, size_t why_size, void *) {
    QuantizeAttrs attrs;
    std::memcpy(&attrs, attr_bytes, sizeof attrs);
    const ggml_tensor * a = inputs[0];
    if (a->type != GGML_TYPE_F32 || !ggml_is_contiguous(a))
        return reject(why, why_size, "a must be contiguous f32, got %s", shape(a).c_str());
    if (!valid_group(attrs.group))
        return reject(why, why_size, "group_size %d unsupported (1, 4, 16, 64 or 256)", attrs.group);
    const int64_t k = a->ne[0], rows = a->ne[1] * a->ne[2] * a->ne[3];
    if (k < 1 || k % attrs.group != 0)
        return reject(why, why_size, "group_size %d must divide K = %" PRId64, attrs.group, k);
    *type = GGML_TYPE_I8;
    ne[0] = k;
    ne[1] = packed_rows_pad(rows) + packed_scale_rows(rows, k);
    ne[2] = ne[3] = 1;
    return true;
}

// A per-output or per-row scale vector of n values: contiguous F32 [n] (or [1, n], the
// checkpoint's [out, 1]); for per-row scales also any shape matching the rows' dimensions.
bool is_scale_vector(const ggml_tensor * s, int64_t n, const int64_t * rows_ne) {
    if (s->type != GGML_TYPE_F32 || !ggml_is_contiguous(s) || ggml_nelements(s) != n) return false;
    if (s->ne[0] == n) return true;                   // [n, 1, 1, 1]
    if (s->ne[0] == 1 && s->ne[1] == n) return true;  // [1, n, 1, 1]
    if (!rows_ne) return false;
    if (s->ne[0] == 1) return s->ne[1] == rows_ne[0] && s->ne[2] == rows_ne[1] && s->ne[3] == rows_ne[2];
    return s->ne[0] == rows_ne[0] && s->ne[1] == rows_ne[1] && s->ne[2] == rows_ne[2] && s->ne[3] == 1;
}

bool linear_infer(const ggml_tensor * const * inputs, int n_inputs, const void * attr_bytes, size_t,
                  ggml_type * type, int64_t ne[GGML_MAX_DIMS], char * why, size_t why_size, void *) {
    LinearAttrs attrs;
    std::memcpy(&attrs, attr_bytes, sizeof attrs);
    const int expected = 2 + ((attrs.flags & kHasWeightScale) != 0) + ((attrs.flags & kHasBias) != 0) +
                         ((attrs.flags & kHasInputScale) != 0);
    if ((attrs.flags & ~(kHasWeightScale | kHasBias | kHasInputScale)) != 0 || n_inputs != expected)
        return reject(why, why_size, "%d inputs do not match the attribute flags 0x%x (expected %d)",
                      n_inputs, attrs.flags, expected);
    const ggml_tensor * w = inputs[0];
    const ggml_tensor * x = inputs[1];
    if (w->type != GGML_TYPE_I8 || !ggml_is_contiguous(w) || w->ne[2] != 1 || w->ne[3] != 1)
        return reject(why, why_size, "weight must be a contiguous 2-D i8 [K, N], got %s", shape(w).c_str());
    const int64_t k = w->ne[0], n = w->ne[1];
    if (k < 1 || k > kMaxK)
        return reject(why, why_size,
                      "K = %" PRId64 " out of range [1, %" PRId64 "] (int32 accumulation must be exact)", k,
                      kMaxK);
    if (attrs.ne[0] < 0 || attrs.ne[1] < 0 || attrs.ne[2] < 0)
        return reject(why, why_size, "negative activation shape in the attributes");
    const int64_t rows = attrs.ne[0] * attrs.ne[1] * attrs.ne[2];
    int next = 2;
    switch (attrs.kind) {
        case kInputF32:
            if (x->type != GGML_TYPE_F32 || x->nb[0] != sizeof(float))
                return reject(why, why_size, "input must be f32 with contiguous rows, got %s",
                              shape(x).c_str());
            if (x->ne[0] != k || x->ne[1] != attrs.ne[0] || x->ne[2] != attrs.ne[1] ||
                x->ne[3] != attrs.ne[2])
                return reject(why, why_size, "input %s does not match weight %s (ne0 must be K)",
                              shape(x).c_str(), shape(w).c_str());
            if (attrs.group != 0 && (!valid_group(attrs.group) || k % attrs.group != 0))
                return reject(
                    why, why_size,
                    "convrot_group_size %d unsupported: 0, or 1, 4, 16, 64, 256 dividing K = %" PRId64,
                    attrs.group, k);
            if (attrs.requested != attrs.group)
                return reject(why, why_size, "inconsistent attributes (group %d, requested %d)", attrs.group,
                              attrs.requested);
            if (attrs.flags & kHasInputScale)
                return reject(why, why_size, "input_scale applies to i8 activations only, the input is f32");
            break;
        case kInputPacked:
            if (!valid_group(attrs.group) || k % attrs.group != 0)
                return reject(why, why_size, "packed input G = %d unsupported or not dividing K = %" PRId64,
                              attrs.group, k);
            if (attrs.requested != attrs.group && !(attrs.requested == 0 && attrs.group == 1))
                return reject(
                    why, why_size,
                    "convrot_group_size %d differs from the packed input's group size %d (the weights "
                    "must be rotated with the same G)",
                    attrs.requested, attrs.group);
            if (x->type != GGML_TYPE_I8 || !ggml_is_contiguous(x) || x->ne[0] != k ||
                x->ne[1] != packed_rows_pad(rows) + packed_scale_rows(rows, k) || x->ne[2] != 1 ||
                x->ne[3] != 1)
                return reject(why, why_size,
                              "packed input %s is not the packed layout of f32 [%" PRId64 ", %" PRId64
                              ", %" PRId64 ", %" PRId64 "] (i8 [K, round_up(rows, 4) + ceil(4 rows / K)])",
                              shape(x).c_str(), k, attrs.ne[0], attrs.ne[1], attrs.ne[2]);
            if (attrs.flags & kHasInputScale)
                return reject(why, why_size,
                              "input_scale given with a packed input, which carries its own row scales");
            break;
        case kInputI8:
            if (x->type != GGML_TYPE_I8 || !ggml_is_contiguous(x))
                return reject(why, why_size, "i8 activations must be contiguous, got %s", shape(x).c_str());
            if (x->ne[0] != k || x->ne[1] != attrs.ne[0] || x->ne[2] != attrs.ne[1] ||
                x->ne[3] != attrs.ne[2])
                return reject(why, why_size, "input %s does not match weight %s (ne0 must be K)",
                              shape(x).c_str(), shape(w).c_str());
            if (attrs.group != 0 || attrs.requested != 0)
                return reject(
                    why, why_size,
                    "convrot_group_size %d with already quantized i8 activations (rotation applies when "
                    "quantizing; pass 0)",
                    attrs.requested);
            break;
        default:
            return reject(why, why_size, "unknown input kind %d", attrs.kind);
    }
    if (attrs.flags & kHasWeightScale) {
        const ggml_tensor * s = inputs[next++];
        if (!is_scale_vector(s, n, nullptr))
            return reject(why, why_size,
                          "weight_scale must be contiguous f32 with N = %" PRId64
                          " values ([N] or [1, N]), got %s",
                          n, shape(s).c_str());
    }
    if (attrs.flags & kHasBias) {
        const ggml_tensor * b = inputs[next++];
        if (!is_scale_vector(b, n, nullptr))
            return reject(why, why_size,
                          "bias must be contiguous f32 with N = %" PRId64 " values ([N] or [1, N]), got %s",
                          n, shape(b).c_str());
    }
    if (attrs.flags & kHasInputScale) {
        const ggml_tensor * s = inputs[next++];
        if (!is_scale_vector(s, rows, attrs.ne))
            return reject(why, why_size,
                          "input_scale must be contiguous f32 with one value per activation row (%" PRId64
                          "), got %s",
                          rows, shape(s).c_str());
    }
    *type = GGML_TYPE_F32;
    ne[0] = n;
    ne[1] = attrs.ne[0];
    ne[2] = attrs.ne[1];
    ne[3] = attrs.ne[2];
    return true;
}

std::mutex g_op_mutex;

}  // namespace

ggml_ext_op_t quantize_op() {
    static ggml_ext_op_t registered = nullptr;
    std::lock_guard lock(g_op_mutex);
    if (!registered) registered = register_op(kQuantizeOpName, sizeof(QuantizeAttrs), 1, 1, quantize_infer);
    return registered;
}

ggml_ext_op_t linear_op() {
    static ggml_ext_op_t registered = nullptr;
    std::lock_guard lock(g_op_mutex);
    if (!registered) registered = register_op(kLinearOpName, sizeof(LinearAttrs), 2, 5, linear_infer);
    return registered;
}

QuantizeAttrs quantize_attrs_of(const ggml_tensor * node) { return node_attrs<QuantizeAttrs>(node); }

LinearAttrs linear_attrs_of(const ggml_tensor * node) { return node_attrs<LinearAttrs>(node); }

LinearShape linear_shape(const ggml_tensor * node) {
    LinearShape s{};
    s.attrs = linear_attrs_of(node);
    s.w = node->src[0];
    s.x = node->src[1];
    int next = 2;
    if (s.attrs.flags & kHasWeightScale) s.ws = node->src[next++];
    if (s.attrs.flags & kHasBias) s.bias = node->src[next++];
    if (s.attrs.flags & kHasInputScale) s.xs = node->src[next++];
    s.k = s.w->ne[0];
    s.n = s.w->ne[1];
    s.rows = s.attrs.ne[0] * s.attrs.ne[1] * s.attrs.ne[2];
    return s;
}

}  // namespace sd::int8

namespace sd {

bool register_int8() {
    ggml_ext_op_t q = int8::quantize_op();
    ggml_ext_op_t l = int8::linear_op();
    if (!q || !l) return false;
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!cpu) {
        ggml_ext_set_error("sd.linear_i8.v1: no CPU device to register the kernels on");
        return false;
    }
    if (!int8::register_cpu(cpu) || !int8::register_cpu_convrot_fusions(cpu)) return false;
#ifdef SD_VULKAN
    for (ggml_backend_dev_t device : vulkan::devices())
        if (!vulkan::register_convrot(device) || !vulkan::register_int8(device)) return false;
#endif
    return true;
}

}  // namespace sd

extern "C" ggml_tensor * ggml_quantize_i8_convrot(ggml_context * ctx, ggml_tensor * a, int group_size) {
    if (!a) return nullptr;  // ggml convention: a NULL input propagates without a new error
    const sd::int8::QuantizeAttrs attrs{group_size};
    return ggml_ext_op_create(ctx, sd::int8::quantize_op(), &a, 1, &attrs, sizeof attrs);
}

extern "C" ggml_tensor * ggml_mul_mat_i8_tensorwise(ggml_context * ctx, ggml_tensor * weight,
                                                    ggml_tensor * input, ggml_tensor * weight_scale,
                                                    ggml_tensor * bias, int convrot_group_size) {
    return ggml_mul_mat_i8_tensorwise_ex(ctx, weight, input, weight_scale, bias, convrot_group_size, nullptr);
}

extern "C" ggml_tensor * ggml_mul_mat_i8_tensorwise_ex(ggml_context * ctx, ggml_tensor * weight,
                                                       ggml_tensor * input, ggml_tensor * weight_scale,
                                                       ggml_tensor * bias, int convrot_group_size,
                                                       ggml_tensor * input_scale) {
    using namespace sd::int8;
    if (!weight || !input) return nullptr;
    LinearAttrs attrs{};
    attrs.requested = convrot_group_size;
    attrs.group = convrot_group_size;
    const ggml_tensor * logical = input;
    if (input->type == GGML_TYPE_F32) {
        attrs.kind = kInputF32;
    } else if (ggml_ext_node_op(input) == quantize_op() && input->src[0]) {
        attrs.kind = kInputPacked;
        attrs.group = quantize_attrs_of(input).group;
        logical = input->src[0];
    } else {
        attrs.kind = kInputI8;  // anything else is validated as ordinary i8 codes
    }
    attrs.ne[0] = logical->ne[1];
    attrs.ne[1] = logical->ne[2];
    attrs.ne[2] = logical->ne[3];
    ggml_tensor * inputs[5] = {weight, input};
    int n = 2;
    if (weight_scale) inputs[n++] = weight_scale, attrs.flags |= kHasWeightScale;
    if (bias) inputs[n++] = bias, attrs.flags |= kHasBias;
    if (input_scale) inputs[n++] = input_scale, attrs.flags |= kHasInputScale;
    return ggml_ext_op_create(ctx, linear_op(), inputs, n, &attrs, sizeof attrs);
}

// The packed activations are cached per (context, input, G) by naming: the packed node is named
// "sd.i8cr:<G>:<address of input>" and looked up with ggml_get_tensor in the same context. The
// cache lives exactly as long as the context's tensors (no global state that could outlive a
// context, and addresses are never reused within one context's arena), and a hit is verified to be
// a quantize node of that very input and G before it is reused.
extern "C" ggml_tensor * ggml_ext_linear_i8_tensorwise(ggml_context * ctx, ggml_tensor * input,
                                                       ggml_tensor * weight, ggml_tensor * weight_scale,
                                                       ggml_tensor * bias, int convrot_group_size,
                                                       float scale) {
    using namespace sd::int8;
    if (!input || !weight) return nullptr;
    ggml_tensor * x = input;
    if (x->type != GGML_TYPE_F32) x = ggml_cast(ctx, x, GGML_TYPE_F32);
    if (x && !ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    if (!x) return nullptr;
    if (scale == 1.0f) {
        if (convrot_group_size <= 0)
            return ggml_mul_mat_i8_tensorwise(ctx, weight, x, weight_scale, bias, 0, nullptr);
        char name[GGML_MAX_NAME];
        std::snprintf(name, sizeof name, "sd.i8cr:%d:%p", convrot_group_size, static_cast<void *>(x));
        ggml_tensor * packed = ggml_get_tensor(ctx, name);
        if (!packed || ggml_ext_node_op(packed) != quantize_op() || packed->src[0] != x ||
            quantize_attrs_of(packed).group != convrot_group_size) {
            packed = ggml_quantize_i8_convrot(ctx, x, convrot_group_size);
            if (!packed) return nullptr;
            ggml_set_name(packed, name);
        }
        return ggml_mul_mat_i8_tensorwise(ctx, weight, packed, weight_scale, bias, convrot_group_size,
                                          nullptr);
    }
    // A module scale != 1 (sd-ops.md 3.5): scale the input, quantize inside the product, unscale,
    // then add the bias separately.
    ggml_tensor * y = ggml_mul_mat_i8_tensorwise(ctx, weight, ggml_scale(ctx, x, scale), weight_scale,
                                                 nullptr, convrot_group_size, nullptr);
    if (!y) return nullptr;
    y = ggml_scale(ctx, y, 1.0f / scale);
    return bias && y ? ggml_add(ctx, y, bias) : y;
}
