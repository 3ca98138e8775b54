// The backend interface's shared pieces: the error channel, the registered-device lookup, node
// descriptions and the default asynchronous transfers.
#include "interface/backend-impl.h"

#include "core/internal.h"

namespace ggx::backend {

namespace {
thread_local std::string last_error;
ggml_backend_dev_t (*device_lookup)(const char * name) = nullptr;
}  // namespace

void set_last_error(std::string message) { last_error = std::move(message); }

void clear_last_error() {
    if (!last_error.empty()) last_error.clear();
}

ggml_status fail(ggml_status status, std::string message) {
    set_last_error(std::move(message));
    return status;
}

ggml_backend_dev_t registered_device(const char * name) {
    return device_lookup ? device_lookup(name) : nullptr;
}

void set_device_lookup(ggml_backend_dev_t (*lookup)(const char * name)) { device_lookup = lookup; }

std::string describe_node(int index, const ggml_tensor * node) {
    return "node " + std::to_string(index) + " '" + node->name + "' (" + ggml_op_desc(node) + " " +
           core::describe(node) + ")";
}

// Nodes without the compute flag belong to branches ggml_build_forward_select left unselected.
bool needs_compute(const ggml_tensor * node) {
    return !core::is_layout_op(node->op) && !ggml_is_empty(node) && (node->flags & GGML_TENSOR_FLAG_COMPUTE);
}

}  // namespace ggx::backend

void ggml_backend::set_tensor_async(ggml_tensor * tensor, const void * data, size_t offset, size_t size) {
    tensor->buffer->set_tensor(tensor, data, offset, size);
}

void ggml_backend::get_tensor_async(const ggml_tensor * tensor, void * data, size_t offset, size_t size) {
    tensor->buffer->get_tensor(tensor, data, offset, size);
}

ggml_guid_t ggml_backend::guid() const {
    static ggml_guid generic = {0x67, 0x67, 0x78, 0x2d, 0x62, 0x61, 0x63, 0x6b,
                                0x65, 0x6e, 0x64, 0x00, 0x00, 0x00, 0x00, 0x00};  // "ggx-backend"
    return &generic;
}

ggml_backend_buffer_t ggml_backend_device::buffer_from_host_ptr(void *, size_t, size_t) {
    ggx::backend::set_last_error(std::string(name()) + ": buffers over host memory are not supported");
    return nullptr;
}

extern "C" const char * ggml_backend_get_last_error(void) { return ggx::backend::last_error.c_str(); }
