// Automatic differentiation: ggml_build_backward_expand appends, to a graph made with gradients, the
// nodes that compute d loss / d t for every tensor t between the trainable parameters and the loss,
// with ggml's rule per op (docs/ggml-api.md, "Automatic differentiation").
#include <ggml.h>

#include <string>
#include <unordered_set>

#include "core/internal.h"
#include "core/op_params.h"

namespace {

using namespace ggx::core;

std::string node_text(const ggml_tensor * node) {
    return std::string(ggml_op_desc(node)) + " node '" + node->name + "' (" + describe(node) + ")";
}

// Gradients flow through source j of node only when it can change node's value: not through
// IM2COL's kernel (only its shape is used), row indices, rope positions, a copy's destination, or
// the piecewise constant SGN and STEP.
bool differentiable_source(const ggml_tensor * node, int j) {
    switch (node->op) {
        case GGML_OP_IM2COL:
        case GGML_OP_IM2COL_BACK:
            return j != 0;
        case GGML_OP_UNARY: {
            const ggml_unary_op op = ggml_get_unary_op(node);
            return j != 0 || (op != GGML_UNARY_OP_SGN && op != GGML_UNARY_OP_STEP);
        }
        case GGML_OP_CPY:
        case GGML_OP_GET_ROWS:
        case GGML_OP_GET_ROWS_BACK:
        case GGML_OP_ROPE:
            return j != 1;
        default:
            return true;
    }
}

// Ops whose result shares its source's storage and that still have a backward rule: every other
// in-place op overwrote a value the backward pass may need.
bool differentiable_view(ggml_op op) {
    return op == GGML_OP_CPY || op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE ||
           op == GGML_OP_TRANSPOSE;
}

// One backward pass over a graph: the set of tensors that need a gradient (they depend on a
// parameter), and each node's rule, which adds its sources' gradient contributions.
class Backward {
public:
    Backward(ggml_context * ctx, ggml_cgraph * graph) : ctx_(ctx), graph_(graph) {}

    // Marks the nodes that need a gradient and creates the loss's and the given accumulators.
    bool mark(ggml_tensor ** grad_accs);
    // Applies the rule of node i (when it has a gradient); false with error() set on failure.
    bool propagate(int i);
    const std::string & error() const { return error_; }

private:
    ggml_tensor * grad(const ggml_tensor * t) const { return *grad_slot(graph_, t); }
    bool needs(const ggml_tensor * t) const { return t && needed_.count(t); }
    bool fail(std::string why) {
        if (error_.empty()) error_ = std::move(why);
        return false;
    }
    bool apply(ggml_tensor * node, ggml_tensor * g);
    bool apply_unary(ggml_tensor * node, ggml_tensor * g);
    bool apply_glu(ggml_tensor * node, ggml_tensor * g);

    // Sets or accumulates a contribution to src's gradient (an accumulator is updated in place).
    void add(ggml_tensor * src, ggml_tensor * contribution);
    void subtract(ggml_tensor * src, ggml_tensor * contribution);
    // contribution (of a smaller shape) broadcast over src.
    void add_broadcast(ggml_tensor * src, ggml_tensor * contribution);
    // contribution added into the view of src's gradient with strides nb1..nb3 at offset.
    void add_into_view(ggml_tensor * src, ggml_tensor * contribution, size_t nb1, size_t nb2, size_t nb3,
                       size_t offset);
    void record(ggml_tensor * src, ggml_tensor * gradient);
    // t summed down to shape's shape when shape is a broadcast source of t's op.
    ggml_tensor * reduce_to(ggml_tensor * t, const ggml_tensor * shape) {
        return ggml_are_same_shape(t, shape) ? t
                                             : ggml_repeat_back(ctx_, t, const_cast<ggml_tensor *>(shape));
    }
    ggml_tensor * contiguous(ggml_tensor * t) { return !t || ggml_is_contiguous(t) ? t : ggml_cont(ctx_, t); }

    ggml_context * ctx_;
    ggml_cgraph * graph_;
    std::unordered_set<const ggml_tensor *> needed_;
    std::string error_;
};

bool Backward::mark(ggml_tensor ** grad_accs) {
    const int n_nodes = ggml_graph_n_nodes(graph_);
    for (int i = 0; i < n_nodes; ++i) {
        ggml_tensor * node = ggml_graph_node(graph_, i);
        if (node->type == GGML_TYPE_I32) continue;
        bool needs_grad = node->flags & (GGML_TENSOR_FLAG_PARAM | GGML_TENSOR_FLAG_LOSS);
        for (int j = 0; j < GGML_MAX_SRC && !needs_grad; ++j) {
            const ggml_tensor * src = node->src[j];
            if (!needs(src) || !differentiable_source(node, j)) continue;
            if (src->type != GGML_TYPE_F32 && src->type != GGML_TYPE_F16)
                return fail("gradients need f32 or f16 tensors; " + node_text(src) + " is not");
            needs_grad = true;
        }
        if (!needs_grad) continue;
        if (node->view_src && !differentiable_view(node->op))
            return fail("in-place " + node_text(node) + " has no gradient (it overwrote its source)");
        ggml_tensor *& acc = *grad_acc_slot(graph_, node);
        if (grad_accs && grad_accs[i]) {
            acc = grad_accs[i];
        } else if (node->flags & GGML_TENSOR_FLAG_LOSS) {  // ggml_graph_reset sets it to 1
            acc = ggml_new_tensor(ctx_, GGML_TYPE_F32, GGML_MAX_DIMS, node->ne);
            if (!acc) return fail("no memory for the loss's gradient");
            ggml_format_name(acc, "grad acc for %s", node->name);
        }
        *grad_slot(graph_, node) = acc;
        needed_.insert(node);
    }
    return true;
}

bool Backward::propagate(int i) {
    ggml_tensor * node = ggml_graph_node(graph_, i);
    ggml_tensor * g = grad(node);
    if (!g || node->op == GGML_OP_NONE) return true;
    if (!apply(node, g)) return false;
    if (!error_.empty()) return false;
    for (ggml_tensor * src : node->src) {
        if (!needs(src) || !grad(src) || ggml_are_same_shape(src, grad(src))) continue;
        return fail("the gradient of " + node_text(src) + " from " + node_text(node) + " has shape " +
                    describe(grad(src)));
    }
    return true;
}

void Backward::record(ggml_tensor * src, ggml_tensor * gradient) {
    if (!gradient) {
        const char * why = ggml_get_error(ctx_);
        fail(std::string("a gradient's constructor failed") + (why ? std::string(": ") + why : ""));
        return;
    }
    *grad_slot(graph_, src) = gradient;
    ggml_format_name(gradient, "grad for %s", src->name);
    ggml_build_forward_expand(graph_, gradient);
}

void Backward::add(ggml_tensor * src, ggml_tensor * contribution) {
    ggml_tensor * old = grad(src);
    if (!old || !contribution) return record(src, contribution);
    const bool in_place = *grad_acc_slot(graph_, src) != nullptr;
    record(src, in_place ? ggml_add_inplace(ctx_, old, contribution) : ggml_add(ctx_, old, contribution));
}

void Backward::subtract(ggml_tensor * src, ggml_tensor * contribution) {
    ggml_tensor * old = grad(src);
    if (!old || !contribution) return record(src, contribution ? ggml_neg(ctx_, contribution) : nullptr);
    const bool in_place = *grad_acc_slot(graph_, src) != nullptr;
    record(src, in_place ? ggml_sub_inplace(ctx_, old, contribution) : ggml_sub(ctx_, old, contribution));
}

void Backward::add_broadcast(ggml_tensor * src, ggml_tensor * contribution) {
    add(src, contribution ? ggml_repeat(ctx_, contribution, src) : nullptr);
}

void Backward::add_into_view(ggml_tensor * src, ggml_tensor * contribution, size_t nb1, size_t nb2,
                             size_t nb3, size_t offset) {
    ggml_tensor * old = grad(src);
    if (!old) {
        // 0 * src as ggml starts it: the zero of src's shape and layout.
        ggml_tensor * zero = ggml_scale(ctx_, src, 0.0f);
        return record(src, ggml_acc(ctx_, zero, contribution, nb1, nb2, nb3, offset));
    }
    const bool in_place = *grad_acc_slot(graph_, src) != nullptr;
    record(src, in_place ? ggml_acc_inplace(ctx_, old, contribution, nb1, nb2, nb3, offset)
                         : ggml_acc(ctx_, old, contribution, nb1, nb2, nb3, offset));
}

bool Backward::apply(ggml_tensor * node, ggml_tensor * g) {
    ggml_tensor *a = node->src[0], *b = node->src[1], *c = node->src[2];
    const bool da = needs(a), db = needs(b) && differentiable_source(node, 1);
    switch (node->op) {
        case GGML_OP_DUP:
            if (da) add(a, g);
            return true;
        case GGML_OP_ADD:
            if (da) add(a, g);
            if (db) add(b, reduce_to(g, b));
            return true;
        case GGML_OP_ADD1:  // b is one value added to every element (ggml takes the mean; the sum is right)
            if (da) add(a, g);
            if (db) add(b, ggml_sum(ctx_, g));
            return true;
        case GGML_OP_ACC: {
            const auto p = params<ggml_ext_acc_params>(node);
            if (da) add(a, g);
            if (db) {
                ggml_tensor * part = ggml_view_4d(ctx_, g, b->ne[0], b->ne[1], b->ne[2], b->ne[3], p.nb1,
                                                  p.nb2, p.nb3, p.offset);
                add(b, ggml_reshape(ctx_, ggml_cont(ctx_, part), b));
            }
            return true;
        }
        case GGML_OP_SUB:
            if (da) add(a, g);
            if (db) subtract(b, reduce_to(g, b));
            return true;
        case GGML_OP_MUL:
            if (da) add(a, ggml_mul(ctx_, g, b));
            if (db) add(b, reduce_to(ggml_mul(ctx_, a, g), b));
            return true;
        case GGML_OP_DIV:
            if (da) add(a, ggml_div(ctx_, g, b));
            if (db) subtract(b, reduce_to(ggml_mul(ctx_, g, ggml_div(ctx_, node, b)), b));
            return true;
        case GGML_OP_SQR:
            if (da) add(a, ggml_scale(ctx_, ggml_mul(ctx_, a, g), 2.0f));
            return true;
        case GGML_OP_SQRT:
            if (da) add(a, ggml_scale(ctx_, ggml_div(ctx_, g, node), 0.5f));
            return true;
        case GGML_OP_LOG:
            if (da) add(a, ggml_div(ctx_, g, a));
            return true;
        case GGML_OP_SIN:
            if (da) add(a, ggml_mul(ctx_, g, ggml_cos(ctx_, a)));
            return true;
        case GGML_OP_COS:
            if (da) subtract(a, ggml_mul(ctx_, g, ggml_sin(ctx_, a)));
            return true;
        case GGML_OP_SUM:
        case GGML_OP_SUM_ROWS:
            if (da) add_broadcast(a, g);
            return true;
        case GGML_OP_MEAN:
            if (da) add_broadcast(a, ggml_scale(ctx_, g, 1.0f / static_cast<float>(a->ne[0])));
            return true;
        case GGML_OP_REPEAT:
            if (da) add(a, ggml_repeat_back(ctx_, g, a));
            return true;
        case GGML_OP_REPEAT_BACK:
            if (da) add(a, ggml_repeat(ctx_, g, a));
            return true;
        case GGML_OP_RMS_NORM:
            if (da) add(a, ggml_rms_norm_back(ctx_, g, a, params<ggml_ext_norm_params>(node).eps));
            return true;
        case GGML_OP_MUL_MAT: {
            // node [m, p, q, r] = a [n, m, qa, ra] x b [n, p, q, r]; b's planes q share a's plane q / (q /
            // qa).
            if (da) {
                ggml_tensor * da_full = ggml_out_prod(ctx_, b, g);  // [n, m, q, r]
                if (da_full && !ggml_are_same_shape(da_full, a)) {
                    if (da_full->ne[3] != a->ne[3])
                        return fail("no gradient for the broadcast of dimension 3 of " + node_text(a) +
                                    " in " + node_text(node));
                    const int64_t group = da_full->ne[2] / a->ne[2];
                    ggml_tensor * grouped =
                        ggml_view_4d(ctx_, da_full, a->ne[0], a->ne[1], a->ne[2], group, da_full->nb[1],
                                     da_full->nb[2] * group, da_full->nb[2], 0);
                    da_full = ggml_repeat_back(ctx_, grouped, a);
                }
                add(a, da_full);
            }
            if (db) add(b, ggml_out_prod(ctx_, a, ggml_transpose(ctx_, g)));
            return true;
        }
        case GGML_OP_SCALE:
            if (da) add(a, ggml_scale(ctx_, g, params<ggml_ext_scale_params>(node).scale));
            return true;
        case GGML_OP_SET: {
            // node is a with b written over a view: b's gradient is that view of g, a's the rest.
            const auto p = params<ggml_ext_acc_params>(node);
            if (!da && !db) return true;
            ggml_tensor * part =
                ggml_view_4d(ctx_, g, b->ne[0], b->ne[1], b->ne[2], b->ne[3], p.nb1, p.nb2, p.nb3, p.offset);
            if (da) add(a, ggml_acc(ctx_, g, ggml_neg(ctx_, part), p.nb1, p.nb2, p.nb3, p.offset));
            if (db) add(b, ggml_reshape(ctx_, ggml_cont(ctx_, part), b));
            return true;
        }
        case GGML_OP_CPY:  // node = a * 1 + b * 0
        case GGML_OP_CONT:
        case GGML_OP_RESHAPE:
            if (da) add(a, ggml_are_same_shape(g, a) ? g : ggml_reshape(ctx_, contiguous(g), a));
            return true;
        case GGML_OP_VIEW: {
            if (!da) return true;
            // The view's strides and offset, in the units of a's gradient when that has another type.
            const size_t source_offset = a->view_src ? a->view_offs : 0;
            size_t offset = node->view_offs - source_offset, nb1 = node->nb[1], nb2 = node->nb[2],
                   nb3 = node->nb[3];
            const ggml_tensor * old = grad(a);
            if (old && old->type != a->type) {
                const size_t from = ggml_element_size(a), to = ggml_element_size(old);
                if (offset % from || nb1 % from || nb2 % from || nb3 % from)
                    return fail("the view " + node_text(node) + " does not fall on elements");
                for (size_t * v : {&offset, &nb1, &nb2, &nb3})
                    *v = *v / from * to;
            }
            add_into_view(a, g, nb1, nb2, nb3, offset);
            return true;
        }
        case GGML_OP_PERMUTE: {
            if (!da) return true;
            const auto p = params<ggml_ext_permute_params>(node);
            int inverse[GGML_MAX_DIMS];
            for (int d = 0; d < GGML_MAX_DIMS; ++d)
                inverse[p.axes[d] & 3] = d;
            add(a, ggml_permute(ctx_, g, inverse[0], inverse[1], inverse[2], inverse[3]));
            return true;
        }
        case GGML_OP_TRANSPOSE:
            if (da) add(a, ggml_transpose(ctx_, g));
            return true;
        case GGML_OP_GET_ROWS:
            if (da) add(a, ggml_get_rows_back(ctx_, g, b, a));
            return true;
        case GGML_OP_DIAG_MASK_INF:
        case GGML_OP_DIAG_MASK_ZERO:
            if (da) add(a, ggml_diag_mask_zero(ctx_, g, params<ggml_ext_diag_mask_params>(node).n_past));
            return true;
        case GGML_OP_SOFT_MAX: {
            if (needs(b) || needs(c)) return fail("no gradient for the mask or sinks of " + node_text(node));
            const auto p = params<ggml_ext_soft_max_params>(node);
            if (da) add(a, ggml_soft_max_ext_back(ctx_, g, node, p.scale, p.max_bias));
            return true;
        }
        case GGML_OP_ROPE: {
            if (needs(c)) return fail("no gradient for the frequency factors of " + node_text(node));
            if (!da) return true;
            auto p = params<ggml_ext_rope_params>(node);
            if (p.n_offs != 0) return fail("no gradient for a rope with an offset: " + node_text(node));
            // One position per row (b [ne2]) is ggml_rope_ext; several per row, ggml_rope_multi.
            add(a,
                g->ne[2] == b->ne[0]
                    ? ggml_rope_ext_back(ctx_, g, b, c, p.n_dims, p.mode, p.n_ctx_orig, p.freq_base,
                                         p.freq_scale, p.ext_factor, p.attn_factor, p.beta_fast, p.beta_slow)
                    : ggml_rope_multi_back(ctx_, g, b, c, p.n_dims, p.sections, p.mode, p.n_ctx_orig,
                                           p.freq_base, p.freq_scale, p.ext_factor, p.attn_factor,
                                           p.beta_fast, p.beta_slow));
            return true;
        }
        case GGML_OP_IM2COL: {
            if (!db) return true;
            const auto p = params<ggml_ext_im2col_params>(node);
            add(b, ggml_im2col_back(ctx_, a, g, b->ne, p.s0, p.s1, p.p0, p.p1, p.d0, p.d1, p.is_2d != 0));
            return true;
        }
        case GGML_OP_POOL_2D: {
            if (!da) return true;
            const auto p = params<ggml_ext_pool_2d_params>(node);
            add(a, ggml_pool_2d_back(ctx_, g, a, static_cast<ggml_op_pool>(p.op), p.k0, p.k1, p.s0, p.s1,
                                     p.p0, p.p1));
            return true;
        }
        case GGML_OP_UNARY:
            return apply_unary(node, g);
        case GGML_OP_GLU:
            return apply_glu(node, g);
        case GGML_OP_CROSS_ENTROPY_LOSS:
            if (needs(b)) return fail("no gradient for the labels of " + node_text(node));
            if (da) add(a, ggml_cross_entropy_loss_back(ctx_, g, a, b));
            return true;
        default:
            return fail(std::string("op ") + ggml_op_name(node->op) + " has no backward (" + node_text(node) +
                        ")");
    }
}

bool Backward::apply_unary(ggml_tensor * node, ggml_tensor * g) {
    ggml_tensor * a = node->src[0];
    const ggml_unary_op op = ggml_get_unary_op(node);
    switch (op) {
        case GGML_UNARY_OP_SGN:
        case GGML_UNARY_OP_STEP:
            return true;  // piecewise constant
        default:
            break;
    }
    if (!needs(a)) return true;
    switch (op) {
        case GGML_UNARY_OP_ABS:
            add(a, ggml_mul(ctx_, ggml_sgn(ctx_, a), g));
            return true;
        case GGML_UNARY_OP_NEG:
            subtract(a, g);
            return true;
        case GGML_UNARY_OP_RELU:
            add(a, ggml_mul(ctx_, ggml_step(ctx_, a), g));
            return true;
        case GGML_UNARY_OP_SILU:
            add(a, ggml_silu_back(ctx_, g, a));
            return true;
        case GGML_UNARY_OP_EXP:
            add(a, ggml_mul(ctx_, node, g));
            return true;
        case GGML_UNARY_OP_EXPM1:
            add(a, ggml_mul(ctx_, g, ggml_exp(ctx_, a)));
            return true;
        case GGML_UNARY_OP_SOFTPLUS:
            add(a, ggml_mul(ctx_, g, ggml_sigmoid(ctx_, a)));
            return true;
        default:
            return fail(std::string("unary op ") + ggml_unary_op_name(op) + " has no backward (" +
                        node_text(node) + ")");
    }
}

bool Backward::apply_glu(ggml_tensor * node, ggml_tensor * g) {
    ggml_tensor *a = node->src[0], *b = node->src[1];
    const ggml_glu_op op = ggml_get_glu_op(node);
    if (op != GGML_GLU_OP_SWIGLU)
        return fail(std::string("GLU op ") + ggml_glu_op_name(op) + " has no backward (" + node_text(node) +
                    ")");
    if (!b)
        return fail("only the split form of swiglu (ggml_swiglu_split) has a backward: " + node_text(node));
    // node = silu(a) * b
    if (needs(a)) add(a, ggml_silu_back(ctx_, ggml_mul(ctx_, g, b), a));
    if (needs(b)) add(b, ggml_mul(ctx_, ggml_silu(ctx_, a), g));
    return true;
}

// Why graph cannot be differentiated as it is, or "".
std::string unusable(const ggml_cgraph * graph) {
    if (graph_is_view(graph)) return "a graph view cannot be modified";
    if (!graph_has_grads(graph))
        return "the graph has no gradients (create it with ggml_new_graph_custom(ctx, size, true))";
    if (!ggml_graph_is_valid(graph)) return "the graph is invalid (an earlier build failed)";
    bool any_param = false, any_loss = false;
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        any_param = any_param || (ggml_graph_node(graph, i)->flags & GGML_TENSOR_FLAG_PARAM);
        any_loss = any_loss || (ggml_graph_node(graph, i)->flags & GGML_TENSOR_FLAG_LOSS);
    }
    if (!any_param) return "no trainable parameters in the graph (ggml_set_param)";
    if (!any_loss) return "no loss in the graph (ggml_set_loss)";
    return "";
}

}  // namespace

extern "C" {

void ggml_build_backward_expand(ggml_context * ctx, ggml_cgraph * cgraph, ggml_tensor ** grad_accs) {
    if (const std::string why = unusable(cgraph); !why.empty()) {
        report_error(ctx, "ggml_build_backward_expand: " + why);
        return;
    }
    const GraphState before = save_state(cgraph);
    clear_grads(cgraph);
    Backward backward(ctx, cgraph);
    bool ok = backward.mark(grad_accs);
    // From the loss back to the parameters, over the forward nodes (the gradients go after them).
    for (int i = static_cast<int>(before.nodes.size()) - 1; ok && i >= 0; --i)
        ok = backward.propagate(i);
    if (ok && ggml_graph_is_valid(cgraph)) return;
    restore_state(cgraph, before);
    report_error(ctx, "ggml_build_backward_expand: " +
                          (backward.error().empty() ? std::string("the graph is full") : backward.error()));
}

}  // extern "C"
