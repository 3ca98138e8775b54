// sd.sage_attn.v1 and sd.sol_attn.v1 (sd-ops.md 5; ggml-extensions.md "SageAttention", "Sol-Attn"):
// the schemas with their validation, the constructors ggml_sage_attn and ggml_sol_attn, and
// sd::register_attention, which registers the operators and their CPU kernels. No Vulkan kernel is
// registered: Vulkan devices report both operators unsupported and the scheduler runs them on the CPU.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "common/attention.h"
#include "common/pack.h"
#include "sd-ggml-ext.h"

namespace sd::attention {
namespace {

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

bool contiguous_of(const ggml_tensor * t, ggml_type type) { return t->type == type && ggml_is_contiguous(t); }

bool valid_scale(float scale) { return std::isfinite(scale) && scale > 0.0f; }

bool sage_infer(const ggml_tensor * const * inputs, int, const void * attr_bytes, size_t, ggml_type * type,
                int64_t ne[GGML_MAX_DIMS], char * why, size_t why_size, void *) {
    SageAttrs attrs;
    std::memcpy(&attrs, attr_bytes, sizeof attrs);
    const ggml_tensor *q = inputs[0], *k = inputs[1], *v = inputs[2];
    if (!contiguous_of(q, GGML_TYPE_F32) || !contiguous_of(k, GGML_TYPE_F32))
        return reject(why, why_size, "q and k must be contiguous f32, got q %s and k %s", shape(q).c_str(),
                      shape(k).c_str());
    if (!contiguous_of(v, GGML_TYPE_F16))
        return reject(why, why_size, "v must be contiguous f16, got %s", shape(v).c_str());
    if (!ggml_are_same_shape(k, v))
        return reject(why, why_size, "v must have the shape of k, got k %s and v %s", shape(k).c_str(),
                      shape(v).c_str());
    if (q->ne[0] != k->ne[0] || q->ne[0] < 1)
        return reject(why, why_size, "q.ne0 must equal k.ne0 (the head size), got q %s and k %s",
                      shape(q).c_str(), shape(k).c_str());
    if (k->ne[2] < 1 || q->ne[2] % k->ne[2] != 0)
        return reject(why, why_size,
                      "query heads q.ne2 = %" PRId64 " must be a multiple of kv heads k.ne2 = %" PRId64,
                      q->ne[2], k->ne[2]);
    if (q->ne[3] != k->ne[3])
        return reject(why, why_size, "q and k must have the same batch (ne3), got %" PRId64 " and %" PRId64,
                      q->ne[3], k->ne[3]);
    if (k->ne[1] < 1) return reject(why, why_size, "k and v must hold at least one token (ne1 > 0)");
    if (!valid_scale(attrs.scale))
        return reject(why, why_size, "scale must be finite and > 0, got %g", attrs.scale);
    if (attrs.mode < GGML_SAGE_ATTN_AUTO || attrs.mode > GGML_SAGE_ATTN_2_PLUS_PLUS)
        return reject(why, why_size, "unknown mode %d (AUTO 0, 2 1, 2++ 2)", attrs.mode);
    *type = GGML_TYPE_F32;
    ne[0] = q->ne[0];
    ne[1] = q->ne[2];
    ne[2] = q->ne[1];
    ne[3] = q->ne[3];
    return true;
}

bool sol_infer(const ggml_tensor * const * inputs, int, const void * attr_bytes, size_t, ggml_type * type,
               int64_t ne[GGML_MAX_DIMS], char * why, size_t why_size, void *) {
    SolAttrs attrs;
    std::memcpy(&attrs, attr_bytes, sizeof attrs);
    const ggml_tensor *q = inputs[0], *k = inputs[1], *v = inputs[2];
    if (!contiguous_of(q, GGML_TYPE_F32) || !contiguous_of(k, GGML_TYPE_F32) ||
        !contiguous_of(v, GGML_TYPE_F32))
        return reject(why, why_size, "q, k and v must be contiguous f32, got q %s, k %s, v %s",
                      shape(q).c_str(), shape(k).c_str(), shape(v).c_str());
    if (!ggml_are_same_shape(q, k) || !ggml_are_same_shape(q, v))
        return reject(why, why_size, "q, k and v must have identical shapes, got q %s, k %s, v %s",
                      shape(q).c_str(), shape(k).c_str(), shape(v).c_str());
    if (q->ne[0] != kSolDim)
        return reject(why, why_size, "the head size ne0 must be %" PRId64 ", got %s", kSolDim,
                      shape(q).c_str());
    if (q->ne[1] < 1) return reject(why, why_size, "q, k and v must hold at least one token (ne1 > 0)");
    if (!valid_scale(attrs.scale))
        return reject(why, why_size, "scale must be finite and > 0, got %g", attrs.scale);
    if (!std::isfinite(attrs.tau)) return reject(why, why_size, "tau must be finite, got %g", attrs.tau);
    *type = GGML_TYPE_F32;
    ne[0] = q->ne[0];
    ne[1] = q->ne[2];
    ne[2] = q->ne[1];
    ne[3] = q->ne[3];
    return true;
}

std::mutex g_op_mutex;

}  // namespace

ggml_ext_op_t sage_op() {
    static ggml_ext_op_t registered = nullptr;
    std::lock_guard lock(g_op_mutex);
    if (!registered) registered = register_op(kSageOpName, sizeof(SageAttrs), 3, 3, sage_infer);
    return registered;
}

ggml_ext_op_t sol_op() {
    static ggml_ext_op_t registered = nullptr;
    std::lock_guard lock(g_op_mutex);
    if (!registered) registered = register_op(kSolOpName, sizeof(SolAttrs), 3, 3, sol_infer);
    return registered;
}

SageAttrs sage_attrs_of(const ggml_tensor * node) { return node_attrs<SageAttrs>(node); }

SolAttrs sol_attrs_of(const ggml_tensor * node) { return node_attrs<SolAttrs>(node); }

}  // namespace sd::attention

namespace sd {

bool register_attention() {
    if (!attention::sage_op() || !attention::sol_op()) return false;
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!cpu) {
        ggml_ext_set_error("sd.sage_attn.v1: no CPU device to register the kernels on");
        return false;
    }
    return attention::register_cpu(cpu);
}

}  // namespace sd

namespace {

ggml_tensor * create(ggml_context * ctx, ggml_ext_op_t op, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v,
                     const void * attrs, size_t attr_size) {
    if (!q || !k || !v) return nullptr;  // ggml convention: a NULL input propagates without a new error
    ggml_tensor * inputs[3] = {q, k, v};
    return ggml_ext_op_create(ctx, op, inputs, 3, attrs, attr_size);
}

}  // namespace

extern "C" ggml_tensor * ggml_sage_attn(ggml_context * ctx, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v,
                                        float scale, enum ggml_sage_attn_mode mode) {
    const sd::attention::SageAttrs attrs{scale, static_cast<int32_t>(mode)};
    return create(ctx, sd::attention::sage_op(), q, k, v, &attrs, sizeof attrs);
}

extern "C" ggml_tensor * ggml_sol_attn(ggml_context * ctx, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v,
                                       float scale, float tau) {
    const sd::attention::SolAttrs attrs{scale, tau};
    return create(ctx, sd::attention::sol_op(), q, k, v, &attrs, sizeof attrs);
}
