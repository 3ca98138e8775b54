// Allocation of all tensors of a context into one buffer.
#include <ggml-alloc.h>

#include <algorithm>
#include <string>
#include <vector>

#include "interface/backend-impl.h"

using ggx::backend::fail;
using ggx::backend::set_last_error;

namespace {

size_t align_up(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

// Where each tensor of ctx without storage goes in one buffer of buft: offsets in creation order.
struct ContextLayout {
    std::vector<std::pair<ggml_tensor *, size_t>> placements;
    size_t total = 0;
};

ContextLayout layout_ctx_tensors(ggml_context * ctx, ggml_backend_buffer_type_t buft) {
    ContextLayout layout;
    for (ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (t->data || t->view_src) continue;
        layout.placements.emplace_back(t, layout.total);
        layout.total += align_up(buft->alloc_size(t), buft->alignment());
    }
    return layout;
}

}  // namespace

extern "C" {

ggml_tallocr ggml_tallocr_new(ggml_backend_buffer_t buffer) {
    auto * base = static_cast<char *>(ggml_backend_buffer_get_base(buffer));
    const size_t alignment = ggml_backend_buffer_get_alignment(buffer);
    const size_t misalignment = reinterpret_cast<uintptr_t>(base) % alignment;
    return {buffer, base, alignment, misalignment ? alignment - misalignment : 0};
}

ggml_status ggml_tallocr_alloc(ggml_tallocr * talloc, ggml_tensor * tensor) {
    const size_t size = align_up(ggml_backend_buffer_get_alloc_size(talloc->buffer, tensor), talloc->alignment);
    const size_t capacity = ggml_backend_buffer_get_size(talloc->buffer);
    if (talloc->offset > capacity || size > capacity - talloc->offset) {
        return fail(GGML_STATUS_ALLOC_FAILED, "ggml_tallocr_alloc: tensor '" + std::string(tensor->name) + "' needs " +
                                                  std::to_string(size) + " bytes; buffer " +
                                                  ggml_backend_buffer_name(talloc->buffer) + " has " +
                                                  std::to_string(capacity - std::min(capacity, talloc->offset)) +
                                                  " of " + std::to_string(capacity) + " left");
    }
    void * address = static_cast<char *>(talloc->base) + talloc->offset;
    talloc->offset += size;
    return ggml_backend_tensor_alloc(talloc->buffer, tensor, address);
}

size_t ggml_backend_alloc_ctx_tensors_from_buft_size(ggml_context * ctx, ggml_backend_buffer_type_t buft) {
    return layout_ctx_tensors(ctx, buft).total;
}

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors_from_buft(ggml_context * ctx,
                                                               ggml_backend_buffer_type_t buft) {
    const auto [placements, total] = layout_ctx_tensors(ctx, buft);
    if (placements.empty()) {
        set_last_error("ggml_backend_alloc_ctx_tensors: no tensor of the context needs allocation");
        return nullptr;
    }
    ggml_backend_buffer_t buffer = ggml_backend_buft_alloc_buffer(buft, total);
    if (!buffer) return nullptr;
    auto * base = static_cast<char *>(buffer->base());
    for (auto [tensor, offset] : placements) {
        if (ggml_backend_tensor_alloc(buffer, tensor, base + offset) == GGML_STATUS_SUCCESS) continue;
        for (auto [placed, unused] : placements) {  // leave no tensor pointing into the freed buffer
            placed->data = nullptr;
            placed->buffer = nullptr;
        }
        ggml_backend_buffer_free(buffer);
        return nullptr;
    }
    for (ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (t->view_src && !t->data && t->view_src->buffer == buffer) ggml_backend_view_init(t);
    }
    return buffer;
}

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors(ggml_context * ctx, ggml_backend_t backend) {
    return ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_get_default_buffer_type(backend));
}

}  // extern "C"
