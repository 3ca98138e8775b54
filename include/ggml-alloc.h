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
/* Bytes ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft) would allocate now (0: nothing to place). */
size_t ggml_backend_alloc_ctx_tensors_from_buft_size(struct ggml_context * ctx, ggml_backend_buffer_type_t buft);

/* Linear allocator: places tensors one after the other in an existing buffer, each at the next
 * offset aligned to the buffer's alignment; nothing is ever freed. */
struct ggml_tallocr {
    ggml_backend_buffer_t buffer;
    void * base;
    size_t alignment;
    size_t offset; /* bytes of the buffer used so far */
};
struct ggml_tallocr ggml_tallocr_new(ggml_backend_buffer_t buffer);
/* Places tensor (ggml_backend_buffer_get_alloc_size bytes) at the next offset. ALLOC_FAILED (message in
 * ggml_backend_get_last_error, tensor unchanged) when it does not fit. */
enum ggml_status ggml_tallocr_alloc(struct ggml_tallocr * talloc, struct ggml_tensor * tensor);

/* ---------------------------------------------------------------------------------------------- */
/* Graph allocator                                                                                 */
/*
 * Places the tensors of a graph that have no storage yet (nodes, leafs and the views among them)
 * into one buffer per buffer type, reusing memory as tensors die:
 *  - a tensor is live from the node that produces it (leafs and INPUT-flagged tensors: from the
 *    start) until its last consumer has run, counted with the graph's recorded use counts (a graph
 *    view counts the consumers of its whole graph); OUTPUT-flagged tensors and leafs never die;
 *  - views take their source's storage and keep it alive until they die themselves;
 *  - freed blocks are reused best-fit and merged with free neighbours;
 *  - a node whose op allows it (ggml_op_can_inplace) is placed over its first source when that
 *    source dies at this node, has exactly the node's layout and is owned by this allocator;
 *  - tensors that already have storage (data or buffer set) are left alone.
 */
typedef struct ggml_gallocr * ggml_gallocr_t;

/* Allocator with one buffer of buft / of each of n_bufs buffer types. NULL on bad arguments. */
ggml_gallocr_t ggml_gallocr_new(ggml_backend_buffer_type_t buft);
ggml_gallocr_t ggml_gallocr_new_n(ggml_backend_buffer_type_t * bufts, int n_bufs);
/* Frees the allocator and its buffers. NULL is ignored. */
void ggml_gallocr_free(ggml_gallocr_t galloc);

/* Size of the buffers graph needs (the worst case when called for several graphs) without
 * touching graph's tensors: the buffers grow to fit, and are kept for later ggml_gallocr_alloc_graph
 * calls. node_buffer_ids / leaf_buffer_ids give each node / leaf's buffer index (NULL: all 0).
 * False (error in ggml_backend_get_last_error, buffers unchanged) when a buffer cannot be allocated. */
bool ggml_gallocr_reserve(ggml_gallocr_t galloc, struct ggml_cgraph * graph);
bool ggml_gallocr_reserve_n(ggml_gallocr_t galloc, struct ggml_cgraph * graph, const int * node_buffer_ids,
                            const int * leaf_buffer_ids);
/* Bytes each buffer would need for graph, written to sizes[0 .. n_bufs), without allocating
 * anything and without touching graph's tensors. */
void ggml_gallocr_measure_n(ggml_gallocr_t galloc, struct ggml_cgraph * graph, const int * node_buffer_ids,
                            const int * leaf_buffer_ids, size_t * sizes);
/* ggml's name for ggml_gallocr_measure_n: the sizes reserve_n would give, nothing allocated. */
void ggml_gallocr_reserve_n_size(ggml_gallocr_t galloc, struct ggml_cgraph * graph, const int * node_buffer_ids,
                                 const int * leaf_buffer_ids, size_t * sizes);
/* Place graph's tensors (all in buffer 0, or with the ids of the last reserve_n), growing the
 * buffers first when they are too small. False (error in ggml_backend_get_last_error, no tensor
 * changed) when a buffer cannot be allocated. */
bool ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, struct ggml_cgraph * graph);
/* Current size of buffer buffer_id (0 before the first reserve or allocation). */
size_t ggml_gallocr_get_buffer_size(ggml_gallocr_t galloc, int buffer_id);

#ifdef __cplusplus
}
#endif

#endif /* GGML_ALLOC_H */
