// sd.rope_apply.v1: the operator schema (sd-ops.md 1.1, with partial rotation from ggml-extensions.md
// "sd.cpp integration"), its graph constructor ggml_rope_apply, and sd::register_rope, which registers
// the operator, its CPU kernel and the CPU RMSNorm -> Mul -> RoPE fusion rule.
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "common/pack.h"
#ifdef SD_VULKAN
#include "vulkan/sd_vulkan.h"
#endif
#include "common/rope.h"
#include "sd-ggml-ext.h"

namespace sd::rope {
namespace {

// a: F32 [D, H, L, B] with D even; pe: F32 [2, 2, P, L] with 1 <= P <= D/2 (the first 2P channels of
// every row are rotated, the rest copied); result: F32 [D, L, H*B].
bool infer(const ggml_tensor * const * inputs, int n_inputs, const void * attrs_bytes, size_t,
           ggml_type * type, int64_t ne[GGML_MAX_DIMS], char * why, size_t why_size, void *) {
    const ggml_tensor * a = inputs[0];
    const ggml_tensor * pe = inputs[1];
    Attrs attrs;
    std::memcpy(&attrs, attrs_bytes, sizeof attrs);
    if (n_inputs != 2) {
        std::snprintf(why, why_size, "takes 2 inputs (a, pe), got %d", n_inputs);
        return false;
    }
    if (attrs.interleaved != 0 && attrs.interleaved != 1) {
        std::snprintf(why, why_size, "attribute interleaved must be 0 or 1, got %" PRId32, attrs.interleaved);
        return false;
    }
    if (a->type != GGML_TYPE_F32 || pe->type != GGML_TYPE_F32) {
        std::snprintf(why, why_size, "a and pe must be f32, got a %s and pe %s", ggml_type_name(a->type),
                      ggml_type_name(pe->type));
        return false;
    }
    const int64_t d = a->ne[0];
    if (d <= 0 || d % 2 != 0) {
        std::snprintf(why, why_size, "the head dimension a.ne0 = %" PRId64 " must be even and positive", d);
        return false;
    }
    if (pe->ne[0] != 2 || pe->ne[1] != 2 || pe->ne[2] < 1 || pe->ne[2] > d / 2 || pe->ne[3] != a->ne[2]) {
        std::snprintf(why, why_size,
                      "pe must be [2, 2, P, L] with 1 <= P <= D/2 = %" PRId64 " and L = a.ne2 = %" PRId64
                      ", got pe [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "] for a [%" PRId64
                      ", %" PRId64 ", %" PRId64 ", %" PRId64 "]",
                      d / 2, a->ne[2], pe->ne[0], pe->ne[1], pe->ne[2], pe->ne[3], a->ne[0], a->ne[1],
                      a->ne[2], a->ne[3]);
        return false;
    }
    *type = GGML_TYPE_F32;
    ne[0] = d;
    ne[1] = a->ne[2];
    ne[2] = a->ne[1] * a->ne[3];
    ne[3] = 1;
    return true;
}

}  // namespace

ggml_ext_op_t op() {
    static std::mutex mutex;
    static ggml_ext_op_t registered = nullptr;
    std::lock_guard lock(mutex);
    if (!registered) registered = register_op(kOpName, sizeof(Attrs), 2, 2, infer);
    return registered;
}

Attrs attrs_of(const ggml_tensor * node) { return node_attrs<Attrs>(node); }

}  // namespace sd::rope

namespace sd {

bool register_rope() {
    ggml_ext_op_t rope_op = rope::op();
    if (!rope_op) return false;
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!cpu) {
        ggml_ext_set_error("sd.rope_apply.v1: no CPU device to register the kernel on");
        return false;
    }
    if (!rope::register_cpu(cpu, rope_op)) return false;
#ifdef SD_VULKAN
    for (ggml_backend_dev_t device : vulkan::devices())
        if (!vulkan::register_rope(device, rope_op)) return false;
#endif
    return true;
}

}  // namespace sd

extern "C" ggml_tensor * ggml_rope_apply(ggml_context * ctx, ggml_tensor * a, ggml_tensor * pe,
                                         bool interleaved) {
    ggml_tensor * inputs[2] = {a, pe};
    const sd::rope::Attrs attrs{interleaved ? 1 : 0};
    return ggml_ext_op_create(ctx, sd::rope::op(), inputs, 2, &attrs, sizeof attrs);
}

// sd.cpp's decomposed apply_rope (sd-ops.md 1.5) from views, permutes, repeats, two ggml_mul and one
// ggml_add: a [D, H, L, B] -> [D, L, H*B], full rotation.
extern "C" ggml_tensor * sd_ggml_rope_apply_decomposed(ggml_context * ctx, ggml_tensor * a, ggml_tensor * pe,
                                                       bool interleaved) {
    if (!a || !pe) return nullptr;
    const int64_t dim = a->ne[0], pairs = dim / 2, tokens = a->ne[2], hb = a->ne[1] * a->ne[3];
    ggml_tensor * x = ggml_cont(ctx, ggml_permute(ctx, a, 0, 2, 1, 3));  // [D, L, H, B]
    ggml_tensor *p, *q, *m0, *m1, *shape;
    if (interleaved) {
        x = ggml_reshape_4d(ctx, x, 2, pairs, tokens, hb);
        p = ggml_view_4d(ctx, x, 1, pairs, tokens, hb, x->nb[1], x->nb[2], x->nb[3], 0);
        q = ggml_view_4d(ctx, x, 1, pairs, tokens, hb, x->nb[1], x->nb[2], x->nb[3], sizeof(float));
        shape = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 2, pairs, tokens, hb);
        ggml_tensor * pr = ggml_cont(ctx, ggml_permute(ctx, pe, 1, 0, 2, 3));           // [row, col, P, L]
        m0 = ggml_view_3d(ctx, pr, 2, pairs, tokens, pr->nb[2], pr->nb[3], 0);          // M[row][0]
        m1 = ggml_view_3d(ctx, pr, 2, pairs, tokens, pr->nb[2], pr->nb[3], pr->nb[1]);  // M[row][1]
    } else {
        x = ggml_reshape_4d(ctx, x, pairs, 2, tokens, hb);
        p = ggml_view_4d(ctx, x, pairs, 1, tokens, hb, x->nb[1], x->nb[2], x->nb[3], 0);
        q = ggml_view_4d(ctx, x, pairs, 1, tokens, hb, x->nb[1], x->nb[2], x->nb[3], x->nb[1]);
        shape = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, pairs, 2, tokens, hb);
        ggml_tensor * pr = ggml_cont(ctx, ggml_permute(ctx, pe, 2, 1, 0, 3));  // [P, row, col, L]
        m0 = ggml_view_3d(ctx, pr, pairs, 2, tokens, pr->nb[1], pr->nb[3], 0);
        m1 = ggml_view_3d(ctx, pr, pairs, 2, tokens, pr->nb[1], pr->nb[3], pr->nb[2]);
    }
    ggml_tensor * y = ggml_add(ctx, ggml_mul(ctx, ggml_repeat(ctx, p, shape), m0),
                               ggml_mul(ctx, ggml_repeat(ctx, q, shape), m1));
    return ggml_reshape_3d(ctx, y, dim, tokens, hb);
}
