// The backend interface's shared pieces: the error channel, node descriptions and the default
// asynchronous transfers.
#include "interface/backend-impl.h"

#include "core/internal.h"

namespace ggx::backend {

namespace {
thread_local std::string last_error;
}  // namespace

void set_last_error(std::string message) { last_error = std::move(message); }

ggml_status fail(ggml_status status, std::string message) {
    set_last_error(std::move(message));
    return status;
}

std::string describe_node(int index, const ggml_tensor * node) {
    return "node " + std::to_string(index) + " '" + node->name + "' (" + ggml_op_desc(node) + " " +
           core::describe(node) + ")";
}

bool needs_compute(const ggml_tensor * node) { return !core::is_layout_op(node->op) && !ggml_is_empty(node); }

namespace {

ggml_status check_memory(const ggml_backend & backend, int index, const ggml_tensor * node,
                         const std::function<bool(ggml_backend_buffer_type_t)> & can_access) {
    for (int s = -1; s < GGML_MAX_SRC; ++s) {
        const ggml_tensor * tensor = s < 0 ? node : node->src[s];
        if (!tensor || (ggml_is_empty(tensor) && !tensor->data)) continue;
        const ggml_tensor * owner = tensor->view_src ? tensor->view_src : tensor;
        if (can_access(owner->buffer ? owner->buffer->buft : nullptr)) continue;
        const std::string role = s < 0 ? "its result" : "source " + std::to_string(s);
        const std::string where = owner->buffer
                                      ? std::string("a buffer of type ") + owner->buffer->buft->name()
                                      : std::string("memory of no buffer");
        return fail(
            GGML_STATUS_FAILED,
            std::string(backend.name()) + ": " + describe_node(index, node) + ": " + role + " '" +
                tensor->name + "' is in " + where + ", which " + backend.name() + " cannot access" +
                (s < 0 ? " (it must be allocated on the device)" : " (a cross-device copy is missing)"));
    }
    return GGML_STATUS_SUCCESS;
}

}  // namespace

ggml_status check_graph(const ggml_backend & backend, ggml_cgraph * graph,
                        const std::function<bool(ggml_backend_buffer_type_t)> & can_access,
                        const std::function<ggml_status(int, ggml_tensor *)> & check_node) {
    const std::string name = backend.name();
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        ggml_tensor * node = ggml_graph_node(graph, i);
        if (!backend.device()->supports_op(node))
            return fail(GGML_STATUS_FAILED, name + ": " + describe_node(i, node) + " is not supported");
        if (!needs_compute(node)) continue;
        bool allocated = node->data != nullptr;
        for (const ggml_tensor * src : node->src)
            allocated = allocated && (!src || src->data || ggml_is_empty(src));
        if (!allocated) {
            return fail(GGML_STATUS_FAILED,
                        name + ": " + describe_node(i, node) + " or a source is not allocated");
        }
        if (const ggml_status status = check_memory(backend, i, node, can_access)) return status;
        if (const ggml_status status = check_node(i, node)) return status;
    }
    return GGML_STATUS_SUCCESS;
}

}  // namespace ggx::backend

void ggml_backend::set_tensor_async(ggml_tensor * tensor, const void * data, size_t offset, size_t size) {
    tensor->buffer->set_tensor(tensor, data, offset, size);
}

void ggml_backend::get_tensor_async(const ggml_tensor * tensor, void * data, size_t offset, size_t size) {
    tensor->buffer->get_tensor(tensor, data, offset, size);
}

extern "C" const char * ggml_backend_get_last_error(void) { return ggx::backend::last_error.c_str(); }
