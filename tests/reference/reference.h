// The oracle: an independent, plain, scalar, double-precision implementation of every operator in
// docs/ops.md, written for clarity, not speed. Kernels of every device are compared against it.
#pragma once

#include <ggml.h>

#include <span>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ggx::ref {

// Raised for anything the oracle cannot evaluate: a leaf without values, an index out of range,
// an operator or dtype it does not know. The message names the node and the reason.
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Evaluates graphs node by node in double precision. Storage is modelled per storage owner (a
// tensor without view_src): views and in-place results read and write their owner's elements, and
// every value written to a tensor is rounded to that tensor's type (quantized types: quantize and
// dequantize each row with the library helpers).
class Evaluator {
public:
    // Values of a leaf (or any storage owner) in logical order, ne0 fastest; overrides its data. They
    // are rounded to the tensor's type, except for a block format when `stored` says they were read
    // from the tensor's own blocks (read_tensor): quantizing decoded values again does not give the
    // same blocks back in every format.
    void set_input(const ggml_tensor * tensor, std::vector<double> values, bool stored = false);
    // Evaluate every node of graph in order. Leafs take values from set_input, else from their
    // host data (tensor->data); a leaf with neither raises Error.
    void compute(const ggml_cgraph * graph);
    // Logical values (ne0 fastest) of any tensor known so far: a leaf, a computed node or a view.
    std::vector<double> values(const ggml_tensor * tensor) const;

private:
    // Storage bookkeeping (owner lookup, view mapping, rounding on store); defined in reference.cpp.
    struct Storage;
    // Elements of every storage owner known so far, in the owner's logical order.
    std::unordered_map<const ggml_tensor *, std::vector<double>> owners_;
    // set_input values per owner, already values of the owner's type.
    std::unordered_map<const ggml_tensor *, std::vector<double>> inputs_;
    // Leaf owners a node has written (ggml_cpy / ggml_set_rows destinations, in-place results):
    // compute keeps their modelled storage instead of re-reading set_input values or host data, so a
    // later graph sees what an earlier one wrote, as a device would. set_input resets the entry.
    std::unordered_set<const ggml_tensor *> written_;
    // Implementation details are free to grow; keep the public surface above stable.
    friend struct EvaluatorAccess;
};

// Whether the oracle evaluates nodes of op (or of a UNARY / GLU sub-op): every ggml op and sub-op
// except FLASH_ATTN_BACK, which no graph can hold (docs/ops.md); ggx-ops's coverage check holds it
// to that.
bool evaluates(ggml_op op);
bool evaluates(ggml_unary_op op);
bool evaluates(ggml_glu_op op);

// Extension operators: the oracle evaluates a node of a registered extension operator (ggml-ext.h)
// with the kernel taught to it under the operator's name. The kernel gets the logical values (ne0
// fastest) of node->src[0..GGML_MAX_SRC) (empty where a source is absent) and returns the node's
// logical values; it raises Error for what it cannot evaluate. Process-wide; register before
// computing. false (nothing changed) when the name already has a kernel.
using ExtensionKernel = std::vector<double> (*)(const ggml_tensor * node,
                                                std::span<const std::vector<double>> inputs);
bool register_extension(const char * op_name, ExtensionKernel kernel);

// Elements of a host tensor (data != NULL) through its strides, as doubles, ne0 fastest.
std::vector<double> read_tensor(const ggml_tensor * tensor);
// Write values (ne0 fastest) into a host tensor through its strides, converting to its type.
void write_tensor(ggml_tensor * tensor, std::span<const double> values);
// Normalised mean squared error sum((a - e)^2) / sum(e^2); 0 when both are all zero; infinity
// when NaN/Inf positions disagree (matching NaN/Inf positions are skipped).
double nmse(std::span<const double> actual, std::span<const double> expected);

// Direct 2-D convolution (no im2col), kernel [KW, KH, C, O] and input [W, H, C, N] as flat
// ne0-fastest arrays; returns [OW, OH, O, N]. Used to check the ggml_conv_2d composite.
std::vector<double> conv2d_direct(std::span<const double> kernel, const int64_t kernel_ne[4],
                                  std::span<const double> input, const int64_t input_ne[4], int s0, int s1,
                                  int p0, int p1, int d0, int d1);

}  // namespace ggx::ref
