// Internals shared by the files of src/core: the context arena, error reporting and op_params access.
#pragma once

#include <ggml.h>

#include <array>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

// One arena allocation, as ggml_print_objects lists it.
struct ggml_object {
    ggml_object_type type;
    size_t offs;
    size_t size;
};

struct ggml_context {
    unsigned char * mem = nullptr;
    size_t mem_size = 0;
    size_t used = 0;
    bool owns_mem = false;
    bool no_alloc = false;
    struct ggml_tensor * first_tensor = nullptr;
    struct ggml_tensor * last_tensor = nullptr;
    std::string error;
    bool has_error = false;
    ggml_error_callback error_callback = nullptr;
    void * error_user_data = nullptr;
    // ggml_set_abort_on_error's override of the process's error mode, when it was called.
    std::optional<bool> abort_on_error;
    std::vector<ggml_object> objects;  // in allocation order
};

namespace ggx::core {

// Alignment of everything the arena hands out: the widest SIMD vector, so kernels may use aligned
// loads on tensor data. It exceeds (and so meets) ggml's GGML_MEM_ALIGN guarantee.
constexpr size_t kArenaAlign = 64;

constexpr size_t align_up(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

// A misuse in ctx: calls the callback, then prints message and aborts when ctx's error mode (the
// process's, or ctx's override) says so; otherwise records it, keeping the first.
void report_error(ggml_context * ctx, std::string message);
// "f32 [4, 3, 1, 1]" (with strides appended when the tensor is not contiguous).
std::string describe(const ggml_tensor * tensor);
// Aligned bytes from the arena for an object of type, or nullptr with an error naming what when it is
// full.
void * arena_alloc(ggml_context * ctx, size_t bytes, ggml_object_type type, const char * what);

// A tensor (metadata in the arena). With view_src, it shares view_src's owner storage at view_offs;
// otherwise it owns contiguous storage, allocated in the arena unless the context is no-alloc.
ggml_tensor * new_tensor(ggml_context * ctx, const char * op_name, ggml_type type, const int64_t ne[4],
                         ggml_tensor * view_src, size_t view_offs);
// The context a tensor was created in (for functions that take a tensor but no context).
ggml_context * context_of(const ggml_tensor * tensor);
// Contiguous byte strides of a tensor of type and shape ne.
void set_contiguous_strides(ggml_tensor * tensor);
// True for a graph view (ggml_graph_view): it shares the node array of the graph it views.
bool graph_is_view(const ggml_cgraph * graph);
// ggml_graph_cpy and ggml_graph_add_node, telling whether they did it (false: the misuse was reported).
bool graph_copy(const ggml_cgraph * src, ggml_cgraph * dst);
bool graph_add_node(ggml_cgraph * cgraph, ggml_tensor * tensor);

// Gradients, for core/backward.cpp. A graph made with grads (ggml_new_graph_custom(..., true)) has a
// gradient and an accumulator slot per node and leaf; the slots of tensor, or nullptr when the graph
// has no gradients or does not hold tensor.
bool graph_has_grads(const ggml_cgraph * graph);
ggml_tensor ** grad_slot(ggml_cgraph * graph, const ggml_tensor * tensor);
ggml_tensor ** grad_acc_slot(ggml_cgraph * graph, const ggml_tensor * tensor);
void clear_grads(ggml_cgraph * graph);

// A graph's nodes, leafs and use counts, to undo a build that failed halfway (restoring clears the
// gradients).
struct GraphState {
    std::vector<ggml_tensor *> nodes, leafs;
    std::vector<int32_t> node_uses, leaf_uses;
    bool valid, has_uncomputed;
};
GraphState save_state(const ggml_cgraph * graph);
void restore_state(ggml_cgraph * graph, const GraphState & state);

// Writes size bytes of data at offset into tensor's storage. src/core knows no backend: the runtime
// installs the writer for tensors in backend buffers (ggml_backend_tensor_set) when it loads; a
// tensor of a context with host data is written directly.
using TensorWriter = void (*)(ggml_tensor * tensor, const void * data, size_t offset, size_t size);
void set_tensor_writer(TensorWriter writer);
void write_tensor(ggml_tensor * tensor, const void * data, size_t offset, size_t size);

// Ops that only describe storage (NONE, VIEW, RESHAPE, PERMUTE, TRANSPOSE): nothing to compute.
constexpr bool is_layout_op(ggml_op op) {
    return op == GGML_OP_NONE || op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE ||
           op == GGML_OP_TRANSPOSE;
}

// One 32-bit op_params slot of a CUSTOM node's own record (the CPU callback's, or the extension
// registry's marker, operator id and attribute size). Native ops' parameters are typed structs:
// core/op_params.h.
template <class T>
void set_param(ggml_tensor * tensor, size_t slot, T value) {
    static_assert(sizeof(T) == sizeof(int32_t) && std::is_trivially_copyable_v<T>);
    std::memcpy(&tensor->op_params[slot], &value, sizeof value);
}

template <class T>
T get_param(const ggml_tensor * tensor, size_t slot) {
    static_assert(sizeof(T) == sizeof(int32_t) && std::is_trivially_copyable_v<T>);
    T value;
    std::memcpy(&value, &tensor->op_params[slot], sizeof value);
    return value;
}

// Validates a constructor's inputs. Missing required inputs (an earlier failure) make it fail
// silently; the first failed requirement is reported as "<op>: <why> (a: f32 [..], b: ..)".
class Check {
public:
    struct Operand {
        const char * name;
        const ggml_tensor * tensor;
        bool optional = false;
    };

    Check(ggml_context * ctx, const char * op, std::initializer_list<Operand> operands);
    Check & require(bool condition, const char * why);
    explicit operator bool() const { return ok_; }

private:
    static constexpr size_t max_operands = GGML_MAX_SRC;
    ggml_context * ctx_;
    const char * op_;
    std::array<Operand, max_operands> operands_{};
    size_t n_operands_ = 0;
    bool ok_ = true;
};

}  // namespace ggx::core
