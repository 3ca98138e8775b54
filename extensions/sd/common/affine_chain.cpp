// Parsing the Mul(gate) -> Add(residual) chain (common/affine_chain.h).
#include "common/affine_chain.h"

#include "common/pack.h"

namespace sd::affine_chain {
namespace {

// An operand read per output row: k values, or one repeated (ne0 == 1), with rows broadcast.
bool row_operand(const ggml_tensor * t, const ggml_tensor * node) {
    return f32_rows(t) && (t->ne[0] == node->ne[0] || t->ne[0] == 1) && ggml_can_repeat(t, node);
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

}  // namespace sd::affine_chain
