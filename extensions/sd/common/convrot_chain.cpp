// Parsing the chains fused into ConvRot quantization (common/convrot_chain.h).
#include "common/convrot_chain.h"

#include <algorithm>

#include "common/int8.h"
#include "common/pack.h"

namespace sd::convrot_chain {
namespace {

// A quantize node reading `input`, F32 and contiguous.
bool quantize_of(const ggml_tensor * node, const ggml_tensor * input) {
    return node && ggml_ext_node_op(node) == int8::quantize_op() && node->type == GGML_TYPE_I8 &&
           node->src[0] == input && input->type == GGML_TYPE_F32 && ggml_is_contiguous(input);
}

// A node of op computing F32 of x's shape from x (as src0).
bool map_of(const ggml_tensor * node, ggml_op op, const ggml_tensor * x) {
    return node->op == op && node->type == GGML_TYPE_F32 && node->src[0] == x && f32_rows(x) &&
           ggml_are_same_shape(node, x);
}

bool is_activation(const ggml_tensor * node) {
    if (node->op != GGML_OP_UNARY) return false;
    const ggml_unary_op op = ggml_get_unary_op(node);
    return op == GGML_UNARY_OP_SILU || op == GGML_UNARY_OP_SIGMOID;
}

// The other operand of a MUL of value (the MUL of value's shape; the operand of the row length, rows
// broadcast).
const ggml_tensor * mul_operand(const ggml_tensor * mul, const ggml_tensor * value, bool * value_first) {
    if (mul->op != GGML_OP_MUL || mul->type != GGML_TYPE_F32 || !ggml_are_same_shape(mul, value))
        return nullptr;
    *value_first = mul->src[0] == value;
    if (!*value_first && mul->src[1] != value) return nullptr;
    const ggml_tensor * other = *value_first ? mul->src[1] : mul->src[0];
    return f32_rows(other) && other->ne[0] == mul->ne[0] && ggml_can_repeat(other, mul) ? other : nullptr;
}

bool parse_swiglu(const ggml_tensor * glu, Chain * c) {
    const auto p = native_params<ggml_ext_glu_params>(glu);
    c->producer = Producer::swiglu;
    c->other = glu->src[1];
    c->swapped = p.swapped != 0;
    if (p.op != GGML_GLU_OP_SWIGLU || glu->type != GGML_TYPE_F32 || !f32_rows(c->x)) return false;
    if (c->other)
        return f32_rows(c->other) && ggml_are_same_shape(c->x, c->other) && ggml_are_same_shape(c->x, glu);
    return c->x->ne[0] == 2 * glu->ne[0] && c->x->ne[1] == glu->ne[1] && c->x->ne[2] == glu->ne[2] &&
           c->x->ne[3] == glu->ne[3];
}

}  // namespace

bool parse(const ggml_tensor * const * nodes, int n, Chain * c) {
    const ggml_tensor * first = nodes[0];
    const ggml_tensor * quantize = nodes[n - 1];
    if (n < 2 || !quantize_of(quantize, nodes[n - 2])) return false;
    *c = {};
    c->x = first->src[0];
    c->k = quantize->src[0]->ne[0];
    c->group = std::max(1, int8::quantize_attrs_of(quantize).group);
    if (n == 2 && first->op == GGML_OP_SCALE) {
        const auto p = native_params<ggml_ext_scale_params>(first);
        c->producer = Producer::scale;
        c->scale = p.scale;
        c->bias = p.bias;
        return map_of(first, GGML_OP_SCALE, c->x);
    }
    if (n == 2 && first->op == GGML_OP_GLU) return parse_swiglu(first, c);
    if (n == 3 && is_activation(first)) {
        c->producer =
            ggml_get_unary_op(first) == GGML_UNARY_OP_SILU ? Producer::silu_mul : Producer::sigmoid_mul;
        c->other = mul_operand(nodes[1], first, &c->activation_first);
        return map_of(first, GGML_OP_UNARY, c->x) && c->other;
    }
    return false;
}

int match(const ggml_cgraph * graph, int first, ggml_op op, int n_nodes, Chain * chain) {
    if (first + n_nodes > ggml_graph_n_nodes(graph) || ggml_graph_node(graph, first)->op != op) return 0;
    return parse(ggml_graph_nodes(graph) + first, n_nodes, chain) ? n_nodes : 0;
}

std::vector<int> activation_chain(const ggml_cgraph * graph, int first) {
    if (!is_activation(ggml_graph_node(graph, first))) return {};
    const int mul = next_consumer(graph, first, first + 1);
    if (mul < 0 || ggml_graph_node(graph, mul)->op != GGML_OP_MUL) return {};
    const int quantize = next_consumer(graph, mul, mul + 1);
    if (quantize < 0 || !quantize_of(ggml_graph_node(graph, quantize), ggml_graph_node(graph, mul)))
        return {};
    return {first, mul, quantize};
}

}  // namespace sd::convrot_chain
