// The public backend API: argument validation around the backend interface classes.
#include "interface/backend-impl.h"

#include <ggml-ext.h>

#include <cstring>
#include <memory>

#include "core/internal.h"
#include "core/log.h"
#include "ext/registry.h"
#include "runtime/plan.h"

namespace ggx::backend {

namespace {

std::string range_text(const ggml_tensor * tensor, size_t offset, size_t size) {
    return "tensor '" + std::string(tensor->name) + "' (" + std::to_string(ggml_nbytes(tensor)) +
           " bytes): range [" + std::to_string(offset) + ", " + std::to_string(offset) + " + " +
           std::to_string(size) + ")";
}

// The tensor is placed and [offset, offset + size) lies inside it.
ggml_status check_range(const char * what, const ggml_tensor * tensor, size_t offset, size_t size) {
    if (!tensor) return fail(GGML_STATUS_FAILED, std::string(what) + ": tensor is NULL");
    if (!tensor->buffer || !tensor->data) {
        return fail(GGML_STATUS_FAILED,
                    std::string(what) + ": tensor '" + tensor->name + "' is not allocated");
    }
    const size_t nbytes = ggml_nbytes(tensor);
    if (offset > nbytes || size > nbytes - offset) {
        return fail(GGML_STATUS_FAILED,
                    std::string(what) + ": out of bounds: " + range_text(tensor, offset, size));
    }
    return GGML_STATUS_SUCCESS;
}

// Checks the ranges of an n_copies-row transfer (copy i at offset + i * stride_tensor) before any
// byte moves, then calls copy(tensor offset, data offset) for each row.
template <class Copy>
ggml_status transfer_2d(const char * what, const ggml_tensor * tensor, size_t offset, size_t size, size_t n_copies,
                        size_t stride_tensor, size_t stride_data, Copy copy) {
    for (size_t i = 0; i < n_copies; ++i) {
        if (const ggml_status status = check_range(what, tensor, offset + i * stride_tensor, size)) return status;
    }
    if (size == 0) return GGML_STATUS_SUCCESS;
    for (size_t i = 0; i < n_copies; ++i)
        copy(offset + i * stride_tensor, i * stride_data);
    return GGML_STATUS_SUCCESS;
}

// ggml's void transfer forms: a refused transfer is a misuse (docs/errors.md), which aborts in the
// aborting mode as ggml's asserts do; in the returning mode the message stays in the last error.
void misuse_unless_done(ggml_status status) {
    if (status != GGML_STATUS_SUCCESS && ggml_ext_get_error_mode() == GGML_EXT_ERROR_ABORT)
        ggx::core::fatal(ggml_backend_get_last_error());
}

// A plan of a whole graph with its own workspace, for ggml_backend_graph_plan_*.
struct GraphPlan {
    ExecutionPlan plan;
    int n_nodes = 0;
    std::unique_ptr<ggml_backend_buffer> workspace;
};

// Lets src/core write tensors that live in backend buffers (ggml_graph_reset, ggml_set_zero).
[[maybe_unused]] const bool tensor_writer_installed = [] {
    core::set_tensor_writer([](ggml_tensor * tensor, const void * data, size_t offset, size_t size) {
        ggml_backend_tensor_set(tensor, data, offset, size);
    });
    return true;
}();

}  // namespace
}  // namespace ggx::backend

using namespace ggx::backend;

extern "C" {

// Buffer types

const char * ggml_backend_buft_name(ggml_backend_buffer_type_t buft) { return buft->name(); }
ggml_backend_buffer_t ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
    if (size > buft->max_size()) {
        set_last_error(std::string(buft->name()) + ": cannot allocate " + std::to_string(size) +
                       " bytes: the maximum buffer size is " + std::to_string(buft->max_size()));
        return nullptr;
    }
    return buft->alloc_buffer(size);
}
size_t ggml_backend_buft_get_alignment(ggml_backend_buffer_type_t buft) { return buft->alignment(); }
size_t ggml_backend_buft_get_max_size(ggml_backend_buffer_type_t buft) { return buft->max_size(); }
size_t ggml_backend_buft_get_alloc_size(ggml_backend_buffer_type_t buft, const ggml_tensor * tensor) {
    return buft->alloc_size(tensor);
}
bool ggml_backend_buft_is_host(ggml_backend_buffer_type_t buft) { return buft->is_host(); }
ggml_backend_dev_t ggml_backend_buft_get_device(ggml_backend_buffer_type_t buft) { return buft->device(); }

// Buffers

void ggml_backend_buffer_free(ggml_backend_buffer_t buffer) { delete buffer; }
const char * ggml_backend_buffer_name(ggml_backend_buffer_t buffer) { return buffer->buft->name(); }
void * ggml_backend_buffer_get_base(ggml_backend_buffer_t buffer) { return buffer->base(); }
size_t ggml_backend_buffer_get_size(ggml_backend_buffer_t buffer) { return buffer->size; }
size_t ggml_backend_buffer_get_alignment(ggml_backend_buffer_t buffer) { return buffer->buft->alignment(); }
size_t ggml_backend_buffer_get_max_size(ggml_backend_buffer_t buffer) { return buffer->buft->max_size(); }
size_t ggml_backend_buffer_get_alloc_size(ggml_backend_buffer_t buffer, const ggml_tensor * tensor) {
    return buffer->buft->alloc_size(tensor);
}
bool ggml_backend_buffer_is_host(ggml_backend_buffer_t buffer) { return buffer->buft->is_host(); }
void ggml_backend_buffer_clear(ggml_backend_buffer_t buffer, uint8_t value) { buffer->clear(value); }
void ggml_backend_buffer_set_usage(ggml_backend_buffer_t buffer, ggml_backend_buffer_usage usage) {
    buffer->usage = usage;
}
ggml_backend_buffer_usage ggml_backend_buffer_get_usage(ggml_backend_buffer_t buffer) {
    return buffer->usage;
}
ggml_backend_buffer_type_t ggml_backend_buffer_get_type(ggml_backend_buffer_t buffer) { return buffer->buft; }

ggml_status ggml_backend_buffer_init_tensor(ggml_backend_buffer_t buffer, ggml_tensor * tensor) {
    return buffer->init_tensor(tensor);
}

ggml_status ggml_backend_tensor_alloc(ggml_backend_buffer_t buffer, ggml_tensor * tensor, void * addr) {
    const std::string what = "ggml_backend_tensor_alloc: tensor '" + std::string(tensor->name) + "'";
    if (tensor->view_src) return fail(GGML_STATUS_FAILED, what + " is a view: use ggml_backend_view_init");
    if (tensor->data || tensor->buffer) return fail(GGML_STATUS_FAILED, what + " is already allocated");
    auto * base = static_cast<char *>(buffer->base());
    auto * start = static_cast<char *>(addr);
    const size_t bytes = buffer->buft->alloc_size(tensor);
    if (start < base || start > base + buffer->size || bytes > size_t(base + buffer->size - start)) {
        return fail(GGML_STATUS_FAILED, what + " (" + std::to_string(bytes) +
                                            " bytes) does not fit in buffer " + buffer->buft->name() +
                                            " of " + std::to_string(buffer->size) + " bytes");
    }
    if ((start - base) % buffer->buft->alignment() != 0) {
        return fail(GGML_STATUS_FAILED, what + ": address not aligned to " +
                                            std::to_string(buffer->buft->alignment()) + " bytes");
    }
    tensor->buffer = buffer;
    tensor->data = addr;
    return buffer->init_tensor(tensor);
}

ggml_status ggml_backend_view_init(ggml_tensor * tensor) {
    const ggml_tensor * owner = tensor->view_src;
    if (!owner || !owner->buffer || !owner->data) {
        return fail(GGML_STATUS_FAILED, "ggml_backend_view_init: tensor '" + std::string(tensor->name) +
                                            "' has no allocated view_src");
    }
    tensor->buffer = owner->buffer;
    tensor->data = static_cast<char *>(owner->data) + tensor->view_offs;
    return tensor->buffer->init_tensor(tensor);
}

// Tensor data

ggml_status ggml_ext_backend_tensor_set(ggml_tensor * tensor, const void * data, size_t offset, size_t size) {
    if (const ggml_status status = check_range("ggml_backend_tensor_set", tensor, offset, size))
        return status;
    if (size) tensor->buffer->set_tensor(tensor, data, offset, size);
    return GGML_STATUS_SUCCESS;
}

ggml_status ggml_ext_backend_tensor_get(const ggml_tensor * tensor, void * data, size_t offset, size_t size) {
    if (const ggml_status status = check_range("ggml_backend_tensor_get", tensor, offset, size))
        return status;
    if (size) tensor->buffer->get_tensor(tensor, data, offset, size);
    return GGML_STATUS_SUCCESS;
}

ggml_status ggml_ext_backend_tensor_memset(ggml_tensor * tensor, uint8_t value, size_t offset, size_t size) {
    if (const ggml_status status = check_range("ggml_backend_tensor_memset", tensor, offset, size))
        return status;
    if (size) tensor->buffer->memset_tensor(tensor, value, offset, size);
    return GGML_STATUS_SUCCESS;
}

ggml_status ggml_ext_backend_tensor_copy(const ggml_tensor * src, ggml_tensor * dst) {
    if (const ggml_status status = check_range("ggml_backend_tensor_copy", src, 0, 0)) return status;
    if (const ggml_status status = check_range("ggml_backend_tensor_copy", dst, 0, 0)) return status;
    if (src->type != dst->type || !ggml_are_same_shape(src, dst) || !ggml_is_contiguous(src) ||
        !ggml_is_contiguous(dst)) {
        return fail(GGML_STATUS_FAILED, "ggml_backend_tensor_copy: '" + std::string(src->name) + "' and '" +
                                            dst->name + "' must be contiguous with the same type and shape");
    }
    const size_t nbytes = ggml_nbytes(src);
    if (src == dst || nbytes == 0) return GGML_STATUS_SUCCESS;
    if (src->buffer->buft->is_host()) {
        dst->buffer->set_tensor(dst, src->data, 0, nbytes);
    } else if (dst->buffer->buft->is_host()) {
        src->buffer->get_tensor(src, dst->data, 0, nbytes);
    } else if (!dst->buffer->copy_tensor(src, dst)) {
        std::string staging(nbytes, '\0');
        src->buffer->get_tensor(src, staging.data(), 0, nbytes);
        dst->buffer->set_tensor(dst, staging.data(), 0, nbytes);
    }
    return GGML_STATUS_SUCCESS;
}

void ggml_backend_buffer_reset(ggml_backend_buffer_t) {}

ggml_status ggml_ext_backend_tensor_set_2d(ggml_tensor * tensor, const void * data, size_t offset, size_t size,
                                       size_t n_copies, size_t stride_tensor, size_t stride_data) {
    return transfer_2d("ggml_backend_tensor_set_2d", tensor, offset, size, n_copies, stride_tensor, stride_data,
                       [&](size_t at, size_t from) {
                           tensor->buffer->set_tensor(tensor, static_cast<const char *>(data) + from, at, size);
                       });
}

ggml_status ggml_ext_backend_tensor_get_2d(const ggml_tensor * tensor, void * data, size_t offset, size_t size,
                                       size_t n_copies, size_t stride_tensor, size_t stride_data) {
    return transfer_2d("ggml_backend_tensor_get_2d", tensor, offset, size, n_copies, stride_tensor, stride_data,
                       [&](size_t at, size_t to) {
                           tensor->buffer->get_tensor(tensor, static_cast<char *>(data) + to, at, size);
                       });
}

ggml_status ggml_ext_backend_tensor_set_2d_async(ggml_backend_t backend, ggml_tensor * tensor, const void * data,
                                             size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                             size_t stride_data) {
    return transfer_2d("ggml_backend_tensor_set_2d_async", tensor, offset, size, n_copies, stride_tensor,
                       stride_data, [&](size_t at, size_t from) {
                           backend->set_tensor_async(tensor, static_cast<const char *>(data) + from, at, size);
                       });
}

ggml_status ggml_ext_backend_tensor_get_2d_async(ggml_backend_t backend, const ggml_tensor * tensor, void * data,
                                             size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                             size_t stride_data) {
    return transfer_2d("ggml_backend_tensor_get_2d_async", tensor, offset, size, n_copies, stride_tensor,
                       stride_data, [&](size_t at, size_t to) {
                           backend->get_tensor_async(tensor, static_cast<char *>(data) + to, at, size);
                       });
}

// Backends

const char * ggml_backend_name(ggml_backend_t backend) { return backend->name(); }
ggml_guid_t ggml_backend_guid(ggml_backend_t backend) { return backend->guid(); }

void ggml_backend_free(ggml_backend_t backend) {
    if (!backend) return;
    backend->synchronize();
    delete backend;
}

ggml_backend_dev_t ggml_backend_get_device(ggml_backend_t backend) { return backend->device(); }
ggml_backend_buffer_type_t ggml_backend_get_default_buffer_type(ggml_backend_t backend) {
    return backend->device()->buffer_type();
}
ggml_backend_buffer_t ggml_backend_alloc_buffer(ggml_backend_t backend, size_t size) {
    return ggml_backend_buft_alloc_buffer(ggml_backend_get_default_buffer_type(backend), size);
}
size_t ggml_backend_get_alignment(ggml_backend_t backend) {
    return ggml_backend_get_default_buffer_type(backend)->alignment();
}
size_t ggml_backend_get_max_size(ggml_backend_t backend) {
    return ggml_backend_get_default_buffer_type(backend)->max_size();
}

ggml_status ggml_ext_backend_tensor_set_async(ggml_backend_t backend, ggml_tensor * tensor, const void * data,
                                          size_t offset, size_t size) {
    if (const ggml_status status = check_range("ggml_backend_tensor_set_async", tensor, offset, size))
        return status;
    if (size) backend->set_tensor_async(tensor, data, offset, size);
    return GGML_STATUS_SUCCESS;
}

ggml_status ggml_ext_backend_tensor_get_async(ggml_backend_t backend, const ggml_tensor * tensor, void * data,
                                          size_t offset, size_t size) {
    if (const ggml_status status = check_range("ggml_backend_tensor_get_async", tensor, offset, size))
        return status;
    if (size) backend->get_tensor_async(tensor, data, offset, size);
    return GGML_STATUS_SUCCESS;
}

ggml_status ggml_ext_backend_tensor_copy_async(ggml_backend_t backend_src, ggml_backend_t backend_dst,
                                           const ggml_tensor * src, ggml_tensor * dst) {
    if (backend_dst->copy_tensor_async(backend_src, src, dst)) return GGML_STATUS_SUCCESS;
    ggml_backend_synchronize(backend_src);
    ggml_backend_synchronize(backend_dst);
    return ggml_ext_backend_tensor_copy(src, dst);
}

void ggml_backend_tensor_set(ggml_tensor * tensor, const void * data, size_t offset, size_t size) {
    misuse_unless_done(ggml_ext_backend_tensor_set(tensor, data, offset, size));
}
void ggml_backend_tensor_get(const ggml_tensor * tensor, void * data, size_t offset, size_t size) {
    misuse_unless_done(ggml_ext_backend_tensor_get(tensor, data, offset, size));
}
void ggml_backend_tensor_memset(ggml_tensor * tensor, uint8_t value, size_t offset, size_t size) {
    misuse_unless_done(ggml_ext_backend_tensor_memset(tensor, value, offset, size));
}
void ggml_backend_tensor_copy(const ggml_tensor * src, ggml_tensor * dst) {
    misuse_unless_done(ggml_ext_backend_tensor_copy(src, dst));
}
void ggml_backend_tensor_set_async(ggml_backend_t backend, ggml_tensor * tensor, const void * data, size_t offset,
                                   size_t size) {
    misuse_unless_done(ggml_ext_backend_tensor_set_async(backend, tensor, data, offset, size));
}
void ggml_backend_tensor_get_async(ggml_backend_t backend, const ggml_tensor * tensor, void * data, size_t offset,
                                   size_t size) {
    misuse_unless_done(ggml_ext_backend_tensor_get_async(backend, tensor, data, offset, size));
}
void ggml_backend_tensor_copy_async(ggml_backend_t backend_src, ggml_backend_t backend_dst, const ggml_tensor * src,
                                    ggml_tensor * dst) {
    misuse_unless_done(ggml_ext_backend_tensor_copy_async(backend_src, backend_dst, src, dst));
}
void ggml_backend_tensor_set_2d(ggml_tensor * tensor, const void * data, size_t offset, size_t size, size_t n_copies,
                                size_t stride_tensor, size_t stride_data) {
    misuse_unless_done(
        ggml_ext_backend_tensor_set_2d(tensor, data, offset, size, n_copies, stride_tensor, stride_data));
}
void ggml_backend_tensor_get_2d(const ggml_tensor * tensor, void * data, size_t offset, size_t size, size_t n_copies,
                                size_t stride_tensor, size_t stride_data) {
    misuse_unless_done(
        ggml_ext_backend_tensor_get_2d(tensor, data, offset, size, n_copies, stride_tensor, stride_data));
}
void ggml_backend_tensor_set_2d_async(ggml_backend_t backend, ggml_tensor * tensor, const void * data, size_t offset,
                                      size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data) {
    misuse_unless_done(ggml_ext_backend_tensor_set_2d_async(backend, tensor, data, offset, size, n_copies,
                                                            stride_tensor, stride_data));
}
void ggml_backend_tensor_get_2d_async(ggml_backend_t backend, const ggml_tensor * tensor, void * data, size_t offset,
                                      size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data) {
    misuse_unless_done(ggml_ext_backend_tensor_get_2d_async(backend, tensor, data, offset, size, n_copies,
                                                            stride_tensor, stride_data));
}

void ggml_backend_synchronize(ggml_backend_t backend) { backend->synchronize(); }

ggml_status ggml_backend_graph_compute_async(ggml_backend_t backend, ggml_cgraph * cgraph) {
    if (!ggml_graph_is_valid(cgraph)) {
        return fail(GGML_STATUS_FAILED, std::string(backend->name()) +
                                            ": graph is invalid (it was given a NULL tensor or overflowed)");
    }
    return ggx::backend::compute_with_temporary_plan(backend, cgraph, 0, ggml_graph_n_nodes(cgraph));
}

ggml_status ggml_backend_graph_compute(ggml_backend_t backend, ggml_cgraph * cgraph) {
    const ggml_status status = ggml_backend_graph_compute_async(backend, cgraph);
    backend->synchronize();
    return status;
}

ggml_status ggml_backend_graph_compute_range(ggml_backend_t backend, ggml_cgraph * cgraph, int i0, int i1) {
    const int n_nodes = ggml_graph_n_nodes(cgraph);
    if (i0 < 0 || i0 > i1 || i1 > n_nodes) {
        return fail(GGML_STATUS_FAILED,
                    std::string(backend->name()) + ": ggml_backend_graph_compute_range: bad range [" +
                        std::to_string(i0) + ", " + std::to_string(i1) + "): the graph has " +
                        std::to_string(n_nodes) + " nodes (need 0 <= i0 <= i1 <= n_nodes)");
    }
    if (!ggml_graph_is_valid(cgraph)) {
        return fail(GGML_STATUS_FAILED, std::string(backend->name()) +
                                            ": graph is invalid (it was given a NULL tensor or overflowed)");
    }
    const ggml_status status = ggx::backend::compute_with_temporary_plan(backend, cgraph, i0, i1);
    backend->synchronize();
    return status;
}

ggml_backend_graph_plan_t ggml_backend_graph_plan_create(ggml_backend_t backend, ggml_cgraph * cgraph) {
    auto plan = std::make_unique<GraphPlan>();
    plan->n_nodes = ggml_graph_n_nodes(cgraph);
    if (!plan->plan.build(backend, cgraph, 0, plan->n_nodes)) return nullptr;
    if (const size_t bytes = plan->plan.workspace_bytes()) {
        plan->workspace.reset(ggml_backend_buft_alloc_buffer(ggml_backend_get_default_buffer_type(backend), bytes));
        if (!plan->workspace) return nullptr;
    }
    return plan.release();
}

void ggml_backend_graph_plan_free(ggml_backend_t, ggml_backend_graph_plan_t plan) {
    delete static_cast<GraphPlan *>(plan);
}

ggml_status ggml_backend_graph_plan_compute(ggml_backend_t backend, ggml_backend_graph_plan_t handle) {
    auto * plan = static_cast<GraphPlan *>(handle);
    const ggx::Workspace workspace = plan->workspace
                                    ? ggx::Workspace{plan->workspace.get(), plan->workspace->base(), plan->workspace->size}
                                    : ggx::Workspace{};
    // A direct backend call: fragment execution, as ggml_backend_graph_compute.
    const ggml_status status =
        plan->plan.run(0, plan->n_nodes, workspace, ExecutionPlan::Execution::kFragments);
    backend->synchronize();
    return status;
}

bool ggml_backend_supports_op(ggml_backend_t backend, const ggml_tensor * op) {
    return ggx::ext::supports(backend->device(), op);
}
bool ggml_backend_supports_buft(ggml_backend_t backend, ggml_backend_buffer_type_t buft) {
    return backend->device()->supports_buft(buft);
}
bool ggml_backend_offload_op(ggml_backend_t backend, const ggml_tensor * op) {
    return backend->device()->offload_op(op);
}

// Events

ggml_backend_event_t ggml_backend_event_new(ggml_backend_dev_t device) { return device->new_event(); }
void ggml_backend_event_free(ggml_backend_event_t event) { delete event; }
void ggml_backend_event_record(ggml_backend_event_t event, ggml_backend_t backend) { event->record(backend); }
void ggml_backend_event_synchronize(ggml_backend_event_t event) { event->synchronize(); }
void ggml_backend_event_wait(ggml_backend_t backend, ggml_backend_event_t event) { event->wait(backend); }

// Devices

const char * ggml_backend_dev_name(ggml_backend_dev_t device) { return device->name(); }
const char * ggml_backend_dev_description(ggml_backend_dev_t device) { return device->description(); }
void ggml_backend_dev_memory(ggml_backend_dev_t device, size_t * free, size_t * total) {
    device->memory(free, total);
}
enum ggml_backend_dev_type ggml_backend_dev_type(ggml_backend_dev_t device) { return device->type(); }

void ggml_backend_dev_get_props(ggml_backend_dev_t device, ggml_backend_dev_props * props) {
    props->name = device->name();
    props->description = device->description();
    device->memory(&props->memory_free, &props->memory_total);
    props->type = device->type();
    props->device_id = nullptr;  // no device reports a PCI bus id yet
    props->caps = device->caps();
}

ggml_backend_reg_t ggml_backend_dev_backend_reg(ggml_backend_dev_t device) { return device->reg(); }
ggml_backend_t ggml_backend_dev_init(ggml_backend_dev_t device, const char * params) {
    return device->init_backend(params);
}
ggml_backend_buffer_type_t ggml_backend_dev_buffer_type(ggml_backend_dev_t device) {
    return device->buffer_type();
}
ggml_backend_buffer_type_t ggml_backend_dev_host_buffer_type(ggml_backend_dev_t device) {
    return device->host_buffer_type();
}
ggml_backend_buffer_t ggml_backend_dev_buffer_from_host_ptr(ggml_backend_dev_t device, void * ptr, size_t size,
                                                            size_t max_tensor_size) {
    return device->buffer_from_host_ptr(ptr, size, max_tensor_size);
}
const char * ggml_backend_meta_split_axis_name(enum ggml_backend_meta_split_axis split_axis) {
    switch (split_axis) {
        case GGML_BACKEND_SPLIT_AXIS_0: return "0";
        case GGML_BACKEND_SPLIT_AXIS_1: return "1";
        case GGML_BACKEND_SPLIT_AXIS_2: return "2";
        case GGML_BACKEND_SPLIT_AXIS_3: return "3";
        case GGML_BACKEND_SPLIT_AXIS_MIRRORED: return "MIRRORED";
        case GGML_BACKEND_SPLIT_AXIS_PARTIAL: return "PARTIAL";
        case GGML_BACKEND_SPLIT_AXIS_NONE: return "NONE";
        case GGML_BACKEND_SPLIT_AXIS_UNKNOWN: return "UNKNOWN";
    }
    return nullptr;
}

// Over one device every split state leaves each tensor whole on it: the meta device is the device.
ggml_backend_dev_t ggml_backend_meta_device(ggml_backend_dev_t * devs, size_t n_devs,
                                            ggml_backend_meta_get_split_state_t, void *) {
    if (n_devs == 1 && devs[0]) return devs[0];
    set_last_error("ggml_backend_meta_device: ggx cannot split tensors across " + std::to_string(n_devs) +
                   " devices (a meta device needs exactly one)");
    return nullptr;
}

bool ggml_backend_dev_supports_op(ggml_backend_dev_t device, const ggml_tensor * op) {
    return ggx::ext::supports(device, op);
}
bool ggml_backend_dev_supports_buft(ggml_backend_dev_t device, ggml_backend_buffer_type_t buft) {
    return device->supports_buft(buft);
}
bool ggml_backend_dev_offload_op(ggml_backend_dev_t device, const ggml_tensor * op) {
    return device->offload_op(op);
}

// Registries (the list of registries is libggml's: src/registry)

const char * ggml_backend_reg_name(ggml_backend_reg_t reg) { return reg->name(); }
size_t ggml_backend_reg_dev_count(ggml_backend_reg_t reg) { return reg->device_count(); }
ggml_backend_dev_t ggml_backend_reg_dev_get(ggml_backend_reg_t reg, size_t index) {
    return index < reg->device_count() ? reg->device(index) : nullptr;
}
void * ggml_backend_reg_get_proc_address(ggml_backend_reg_t reg, const char * name) {
    return reg && name ? reg->proc_address(name) : nullptr;
}

}  // extern "C"
