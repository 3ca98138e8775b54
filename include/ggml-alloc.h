/* ggx — tensor allocation into backend buffers. */
#ifndef GGML_ALLOC_H
#define GGML_ALLOC_H

#include "ggml-backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Allocate every tensor of a no-alloc context that has no data yet into one new buffer of buft
 * (each tensor at its own aligned offset, no reuse) and initialise views of allocated tensors.
 * Returns the buffer (owned by the caller), or NULL when there is nothing to allocate or the buffer
 * cannot be allocated (then ggml_backend_get_last_error says why and no tensor was changed). */
ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context * ctx,
                                                               ggml_backend_buffer_type_t buft);
/* Same, with the backend's default buffer type. */
ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors(struct ggml_context * ctx, ggml_backend_t backend);

#ifdef __cplusplus
}
#endif

#endif /* GGML_ALLOC_H */
