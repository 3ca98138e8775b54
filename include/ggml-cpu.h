/* ggx — the CPU backend. */
#ifndef GGML_CPU_H
#define GGML_CPU_H

#include "ggml-backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU registry ("CPU") and its device ("CPU"). */
ggml_backend_reg_t ggml_backend_cpu_reg(void);
/* New CPU backend with a persistent thread pool of one thread per hardware thread. */
ggml_backend_t ggml_backend_cpu_init(void);
bool ggml_backend_is_cpu(ggml_backend_t backend);
/* Threads used by later computations (>= 1, or 0 for one per hardware thread); settable at any
 * time between computations. */
void ggml_backend_cpu_set_n_threads(ggml_backend_t backend, int n_threads);
int ggml_backend_cpu_get_n_threads(ggml_backend_t backend);
/* Called between nodes and inside long kernels; returning true stops the graph with
 * GGML_STATUS_ABORTED. NULL removes it. */
void ggml_backend_cpu_set_abort_callback(ggml_backend_t backend, ggml_abort_callback cb, void * data);
/* Host buffer type: 64-byte aligned heap memory. */
ggml_backend_buffer_type_t ggml_backend_cpu_buffer_type(void);

/* A virtual device for testing placement without a GPU: registered in the CPU registry under
 * name (unique among devices), of type GPU, with its own buffer type (host memory that the
 * scheduler treats as a separate memory space) and backends computing with the CPU kernels. Its
 * supports_op admits the listed ops (where the CPU supports the node) and the ops that compute
 * nothing (NONE, VIEW, RESHAPE, PERMUTE, TRANSPOSE); its offload_op accepts an admitted MUL_MAT
 * whose src[1] has at least 32 columns, as a GPU would. Its backends refuse to compute a node that
 * reads or writes a tensor in any other buffer type. NULL (error in ggml_backend_get_last_error)
 * for a taken name. The device lives until the process ends. */
ggml_backend_dev_t ggml_backend_cpu_add_virtual_device(const char * name, const enum ggml_op * ops,
                                                       int n_ops);

#ifdef __cplusplus
}
#endif

#endif /* GGML_CPU_H */
