// Internal entry points of the sd pack's parts, called once by sd_ggml_register_extensions, and
// the descriptor builders every device's part uses.
#pragma once

#include <ggml-ext-params.h>
#include <ggml-ext.h>

#include <ggml-graph.h>

#include <cassert>
#include <cstring>
#include <functional>
#include <vector>

namespace sd {

// The parameters P of a native node (include/ggml-ext-params.h); node's op records P (the caller
// matched the op).
template <class P>
P native_params(const ggml_tensor * node) {
    P p{};
    [[maybe_unused]] const bool ok = ggml_ext_get_op_params(node, node->op, &p, sizeof p);
    assert(ok);
    return p;
}

// The attributes A of an extension node (the caller matched its operator, whose attr_size is sizeof(A)).
template <class A>
A node_attrs(const ggml_tensor * node) {
    A attrs{};
    std::memcpy(&attrs, ggml_ext_node_attrs(node, nullptr), sizeof attrs);
    return attrs;
}

// F32 with contiguous elements (nb0 == 4) and float-aligned strides.
inline bool f32_rows(const ggml_tensor * t) {
    if (!t || t->type != GGML_TYPE_F32 || t->nb[0] != sizeof(float)) return false;
    for (size_t nb : t->nb)
        if (nb % sizeof(float) != 0) return false;
    return true;
}

// Registers the custom operator name (attr_size attribute bytes, min_inputs .. max_inputs inputs,
// output inference infer); NULL with the registry's message when that fails.
ggml_ext_op_t register_op(const char * name, size_t attr_size, int min_inputs, int max_inputs,
                          ggml_ext_infer_fn infer);

// The descriptor of a kernel for the custom operator op (prepare may be null).
ggml_ext_kernel_desc custom_kernel_desc(const char * name, ggml_ext_op_t op,
                                        decltype(ggml_ext_kernel_desc::supports) supports,
                                        decltype(ggml_ext_kernel_desc::execute) execute,
                                        decltype(ggml_ext_kernel_desc::prepare) prepare = nullptr);
// The descriptor of a fusion rule with its required callbacks; the caller sets the optional ones. It
// declares GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE (intermediates take no memory): a rule that uses
// their storage must clear it.
ggml_ext_fusion_desc fusion_desc(const char * name, decltype(ggml_ext_fusion_desc::match) match,
                                 decltype(ggml_ext_fusion_desc::execute) execute);

// Registers a fusion rule of the pack on device: fusion_desc(name, match, execute), the optional
// optimize, extra flags, and a prepare requesting a workspace of the output's size (for an output that
// overlaps an input, computed there and copied over).
bool register_fusion(ggml_backend_dev_t device, const char * name,
                     decltype(ggml_ext_fusion_desc::match) match,
                     decltype(ggml_ext_fusion_desc::execute) execute,
                     decltype(ggml_ext_fusion_desc::optimize) optimize = nullptr, uint32_t flags = 0);
// That prepare.
ggml_status output_sized_workspace(const ggml_ext_fusion_prepare_params * params, void ** state,
                                   size_t * workspace_bytes);

// For the rules' optimize callbacks: makes every chain (node indices, increasing) that chain_at(i)
// finds at node i (empty: none) consecutive, scanning the graph once: the leading links are delayed
// past the independent nodes before each next link (ggml_ext_graph_delay), so each chain ends
// consecutive at its last link; a refused delay (a crossed node depends on the chain, so the
// legality check would refuse the fusion anyway) stops that chain. Idempotent.
void make_chains_consecutive(ggml_cgraph * graph, const std::function<std::vector<int>(int)> & chain_at);
// The first node at or after `from` that reads node `producer` directly, or -1.
int next_consumer(const ggml_cgraph * graph, int producer, int from);

// Each registers its operators, CPU kernels and CPU fusion rules; false after setting the error
// (ggml_ext_set_error / the registry's message) when a registration fails.
bool register_rope();       // common/rope_ops.cpp + cpu/rope.cpp
bool register_int8();       // common/int8_ops.cpp + cpu/int8.cpp
bool register_attention();  // common/attention_ops.cpp + cpu/attention.cpp (CPU only)
bool register_affine();     // cpu/affine_fusions.cpp + vulkan/affine.cpp: the affine fusion rules

}  // namespace sd
