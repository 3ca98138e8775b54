// Allocation of all tensors of a context into one buffer.
#include <ggml-alloc.h>

#include <vector>

#include "interface/backend-impl.h"

using ggx::backend::set_last_error;

extern "C" {

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors_from_buft(ggml_context * ctx,
                                                               ggml_backend_buffer_type_t buft) {
    const size_t alignment = buft->alignment();
    std::vector<std::pair<ggml_tensor *, size_t>> placements;
    size_t total = 0;
    for (ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (t->data || t->view_src) continue;
        placements.emplace_back(t, total);
        total += (buft->alloc_size(t) + alignment - 1) / alignment * alignment;
    }
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
