// Parsing the Mul(gate) -> Add(residual) chain (common/affine_chain.h).
#include "common/affine_chain.h"

#include <algorithm>

#include "common/pack.h"

namespace sd::affine_chain {

namespace {

// An operand read per output row: k values, or one repeated (ne0 == 1), with rows broadcast.
bool row_operand(const ggml_tensor * t, const ggml_tensor * node) {
    return f32_rows(t) && (t->ne[0] == node->ne[0] || t->ne[0] == 1) && ggml_can_repeat(t, node);
}

// Float-aligned strides.
bool float_strides(const ggml_tensor * t) {
    return std::all_of(t->nb, t->nb + GGML_MAX_DIMS, [](size_t nb) { return nb % sizeof(float) == 0; });
}

bool f16_copy_of(const ggml_tensor * cpy, const ggml_tensor * src) {
    return cpy->op == GGML_OP_CPY && cpy->src[0] == src && cpy->type == GGML_TYPE_F16 &&
           ggml_are_same_shape(cpy, src) && cpy->nb[0] % sizeof(uint16_t) == 0;
}

// view reads c, contiguous, as a permutation: the view's dimension of each of c's.
bool map_axes(const ggml_tensor * view, const ggml_tensor * c, int axis_of[GGML_MAX_DIMS]) {
    for (int d = 0; d < GGML_MAX_DIMS; ++d) {
        axis_of[d] = -1;
        if (c->ne[d] == 1) continue;
        for (int k = 0; k < GGML_MAX_DIMS; ++k)
            if (view->ne[k] == c->ne[d] && view->nb[k] == c->nb[d]) axis_of[d] = k;
        if (axis_of[d] < 0) return false;
    }
    return view == c || view->view_offs == 0;
}

bool concat_inputs(const ggml_tensor * concat, CopyChain * ch) {
    ch->a = concat->src[0];
    ch->b = concat->src[1];
    ch->dim = native_params<ggml_ext_concat_params>(concat).dim;
    if (!ch->a || !ch->b || ch->a->type != GGML_TYPE_F32 || ch->b->type != GGML_TYPE_F32 ||
        concat->type != GGML_TYPE_F32 || ch->dim < 0 || ch->dim >= GGML_MAX_DIMS)
        return false;
    return float_strides(ch->a) && float_strides(ch->b);  // (ggml_concat checked the shapes)
}

}  // namespace

bool parse_mul_add(const ggml_tensor * mul, const ggml_tensor * add, MulAdd * m) {
    if (mul->op != GGML_OP_MUL || add->op != GGML_OP_ADD || mul->type != GGML_TYPE_F32 ||
        add->type != GGML_TYPE_F32 || !ggml_are_same_shape(mul, add) || !ggml_is_contiguous(add))
        return false;
    if (add->src[0] == add->src[1]) return false;  // a self-residual
    m->mul_first = add->src[0] == mul;
    if (!m->mul_first && add->src[1] != mul) return false;
    m->x = mul->src[0];
    m->gate = mul->src[1];
    m->residual = m->mul_first ? add->src[1] : add->src[0];
    return f32_rows(m->x) && ggml_are_same_shape(m->x, mul) && row_operand(m->gate, mul) &&
           row_operand(m->residual, add);
}

bool parse_copy(const ggml_tensor * const * nodes, int n, CopyChain * ch) {
    *ch = {};
    const ggml_tensor * cpy = nodes[n - 1];
    const ggml_tensor * producer = nodes[0];
    ch->c = producer;
    if (producer->op == GGML_OP_CONCAT) {
        if (n < 2 || n > 3 || !concat_inputs(producer, ch)) return false;
    } else if (producer->op == GGML_OP_CONT) {
        const ggml_tensor * x = producer->src[0];
        const ggml_tensor * scale = n == 4 ? nodes[1] : nullptr;
        if (!scale || scale->op != GGML_OP_SCALE || scale->src[0] != producer ||
            scale->type != GGML_TYPE_F32 || !x || x->type != GGML_TYPE_F32 ||
            producer->type != GGML_TYPE_F32 || !ggml_are_same_shape(x, producer) || !float_strides(x))
            return false;
        const auto p = native_params<ggml_ext_scale_params>(scale);
        ch->a = x;
        ch->dim = -1;
        ch->scaled = true;
        ch->scale = p.scale;
        ch->bias = p.bias;
        ch->c = scale;  // contiguous, x's values scaled
    } else {
        return false;
    }
    if (!ggml_is_contiguous(ch->c)) return false;
    const ggml_tensor * permute = n >= 3 ? nodes[n - 2] : nullptr;
    if (permute && (permute->op != GGML_OP_PERMUTE || permute->src[0] != ch->c)) return false;
    ch->view = permute ? permute : ch->c;
    return f16_copy_of(cpy, ch->view) && map_axes(ch->view, ch->c, ch->axis_of);
}

}  // namespace sd::affine_chain
