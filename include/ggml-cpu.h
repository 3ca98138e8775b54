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
/* Compute on threadpool (created by ggml_threadpool_new, kept alive by the caller while attached)
 * instead of the backend's own pool: later computations use its threads and thread count. NULL
 * returns to the backend's own pool. */
void ggml_backend_cpu_set_threadpool(ggml_backend_t backend_cpu, ggml_threadpool_t threadpool);
/* true: later computations use the portable kernels only (Highway's baseline target, no
 * instruction-set specific paths), the reference the optimised paths are tested against. */
void ggml_backend_cpu_set_use_ref(ggml_backend_t backend_cpu, bool use_ref);

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

/* ---------------------------------------------------------------------------------------------- */
/* ggml's CPU API: thread pools, graph computation on host tensors, element access, system info    */

/* A pool of n_threads threads (the caller of a computation is thread 0), started paused when
 * params->paused. cpumask, strict_cpu, prio and poll are kept in the pool's parameters but not
 * applied: ggx neither pins nor reprioritises threads, and idle workers always spin briefly, then
 * sleep. NULL for a thread count outside [1, GGML_MAX_N_THREADS], or (error in
 * ggml_backend_get_last_error) when a thread cannot be started. */
struct ggml_threadpool * ggml_threadpool_new(struct ggml_threadpool_params * params);
void ggml_threadpool_free(struct ggml_threadpool * threadpool);
int ggml_threadpool_get_n_threads(struct ggml_threadpool * threadpool);
/* pause stops the workers (they exit; no thread of the pool runs or waits); resume starts them
 * again. A computation on a paused pool resumes it. */
void ggml_threadpool_pause(struct ggml_threadpool * threadpool);
void ggml_threadpool_resume(struct ggml_threadpool * threadpool);

/* What ggml_graph_compute needs: the work buffer (work_size bytes, which the caller provides in
 * work_data), threads, and the abort callback. */
struct ggml_cplan {
    size_t work_size;
    uint8_t * work_data;
    int n_threads;
    struct ggml_threadpool * threadpool;
    ggml_abort_callback abort_callback;
    void * abort_callback_data;
    bool use_ref; /* portable kernels only, as ggml_backend_cpu_set_use_ref */
};
/* Plans cgraph (tensors in host memory with data) for n_threads threads (<= 0: one per hardware
 * thread) or, when threadpool is not NULL, for the pool's threads: work_size is the kernels' largest
 * scratch request. */
struct ggml_cplan ggml_graph_plan(const struct ggml_cgraph * cgraph, int n_threads, struct ggml_threadpool * threadpool);
/* Computes cgraph with the CPU backend's kernels, exactly as ggml_backend_graph_compute on a CPU
 * backend with that thread count would. FAILED (message in ggml_backend_get_last_error) when a node
 * is not supported or not allocated, or work_data is smaller than the plan needs. */
enum ggml_status ggml_graph_compute(struct ggml_cgraph * cgraph, struct ggml_cplan * cplan);
/* Plans and computes, with the work buffer allocated in ctx (which must have room for it). */
enum ggml_status ggml_graph_compute_with_ctx(struct ggml_context * ctx, struct ggml_cgraph * cgraph, int n_threads);

/* NUMA: strategies are accepted; ggx places no memory or threads by node. ggml_is_numa tells
 * whether the system has more than one NUMA node (read from sysfs by ggml_numa_init). */
enum ggml_numa_strategy {
    GGML_NUMA_STRATEGY_DISABLED = 0,
    GGML_NUMA_STRATEGY_DISTRIBUTE = 1,
    GGML_NUMA_STRATEGY_ISOLATE = 2,
    GGML_NUMA_STRATEGY_NUMACTL = 3,
    GGML_NUMA_STRATEGY_MIRROR = 4,
    GGML_NUMA_STRATEGY_COUNT
};
void ggml_numa_init(enum ggml_numa_strategy numa);
bool ggml_is_numa(void);

/* Element access on tensors in host memory (data set), any layout, every type: values convert like
 * C casts (integers truncate toward zero; float to int saturates), and writing an element of a
 * Q8_0/Q4_0 tensor re-quantizes its block. 1d indices count elements in ne order. */
struct ggml_tensor * ggml_new_i32(struct ggml_context * ctx, int32_t value); /* data even if no_alloc */
struct ggml_tensor * ggml_new_f32(struct ggml_context * ctx, float value);
struct ggml_tensor * ggml_set_i32(struct ggml_tensor * tensor, int32_t value); /* every element */
struct ggml_tensor * ggml_set_f32(struct ggml_tensor * tensor, float value);
int32_t ggml_get_i32_1d(const struct ggml_tensor * tensor, int i);
void ggml_set_i32_1d(const struct ggml_tensor * tensor, int i, int32_t value);
int32_t ggml_get_i32_nd(const struct ggml_tensor * tensor, int i0, int i1, int i2, int i3);
void ggml_set_i32_nd(const struct ggml_tensor * tensor, int i0, int i1, int i2, int i3, int32_t value);
float ggml_get_f32_1d(const struct ggml_tensor * tensor, int i);
void ggml_set_f32_1d(const struct ggml_tensor * tensor, int i, float value);
float ggml_get_f32_nd(const struct ggml_tensor * tensor, int i0, int i1, int i2, int i3);
void ggml_set_f32_nd(const struct ggml_tensor * tensor, int i0, int i1, int i2, int i3, float value);

/* Row conversions with the CPU's vector units (F16/BF16 round to nearest even; to I32 truncates). */
void ggml_cpu_fp32_to_fp32(const float * x, float * y, int64_t n);
void ggml_cpu_fp32_to_i32(const float * x, int32_t * y, int64_t n);
void ggml_cpu_fp32_to_fp16(const float * x, ggml_fp16_t * y, int64_t n);
void ggml_cpu_fp16_to_fp32(const ggml_fp16_t * x, float * y, int64_t n);
void ggml_cpu_fp32_to_bf16(const float * x, ggml_bf16_t * y, int64_t n);
void ggml_cpu_bf16_to_fp32(const ggml_bf16_t * x, float * y, int64_t n);

/* s[0] = the dot product of n values of row x (of a type) and row y (of its vec_dot_type);
 * bs, bx, by and nrc (rows at once, always 1 here) as in ggml. */
typedef void (*ggml_vec_dot_t)(int n, float * s, size_t bs, const void * x, size_t bx, const void * y, size_t by,
                               int nrc);
struct ggml_type_traits_cpu {
    ggml_from_float_t from_float;
    ggml_vec_dot_t vec_dot; /* NULL for integer types */
    enum ggml_type vec_dot_type;
    int64_t nrows;
};
const struct ggml_type_traits_cpu * ggml_get_type_traits_cpu(enum ggml_type type);

/* Prepares the CPU backend (feature detection); called by the backend itself, safe to repeat. */
void ggml_cpu_init(void);

/* Instruction-set features of the CPU running the process (1 or 0), detected at run time; the
 * features of other architectures answer 0. */
int ggml_cpu_has_sse3(void);
int ggml_cpu_has_ssse3(void);
int ggml_cpu_has_avx(void);
int ggml_cpu_has_avx_vnni(void);
int ggml_cpu_has_avx2(void);
int ggml_cpu_has_bmi2(void);
int ggml_cpu_has_f16c(void);
int ggml_cpu_has_fma(void);
int ggml_cpu_has_avx512(void);
int ggml_cpu_has_avx512_vbmi(void);
int ggml_cpu_has_avx512_vnni(void);
int ggml_cpu_has_avx512_bf16(void);
int ggml_cpu_has_amx_int8(void);
int ggml_cpu_has_neon(void);
int ggml_cpu_has_arm_fma(void);
int ggml_cpu_has_fp16_va(void);
int ggml_cpu_has_dotprod(void);
int ggml_cpu_has_matmul_int8(void);
int ggml_cpu_has_sve(void);
int ggml_cpu_get_sve_cnt(void); /* SVE vector length in bytes, 0 without SVE */
int ggml_cpu_has_sme(void);
int ggml_cpu_has_sme2(void);
int ggml_cpu_has_riscv_v(void);
int ggml_cpu_get_rvv_vlen(void); /* RISC-V vector length in bytes, 0 without RVV */
int ggml_cpu_has_vsx(void);
int ggml_cpu_has_vxe(void);
int ggml_cpu_has_wasm_simd(void);
int ggml_cpu_has_llamafile(void); /* 0: ggx has no llamafile kernels */

#ifdef __cplusplus
}
#endif

#endif /* GGML_CPU_H */
