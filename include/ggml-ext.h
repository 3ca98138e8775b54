/* ggx — operator extension interface (spec: ../shared/spec/ggml-extensions.md).
 *
 * Applications register operators, per-device kernels (for their operators or overriding built-in
 * ones) and use backend services; the scheduler and the backend graph APIs place, plan, allocate
 * workspace for and run them exactly like native work. Registrations are process-local and scoped to
 * a backend device; register before capability queries or graph allocation. Callback code and user
 * data must stay alive until every graph and backend depending on them is destroyed. Names are
 * unique: a duplicate registration fails and leaves the live one untouched.
 *
 * Every descriptor and service table starts with its struct size and version, so fields can be added
 * later without breaking registered extensions: set struct_size = sizeof(the struct) and version to
 * the matching GGML_EXT_*_VERSION.
 *
 * Errors (a malformed descriptor, a duplicate name, a failing prepare or execute) are reported with
 * ggml_backend_get_last_error(); constructors, ggml_ext_op_create included, follow the error mode
 * (below): they abort by default and report into the context (ggml_get_error) in the returning mode. */
#ifndef GGML_EXT_H
#define GGML_EXT_H

#include <stddef.h>
#include <stdint.h>

#include "ggml-backend.h"
#include "ggml.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Error mode (docs/errors.md)                                                                     */

/* What a constructor or graph function of ggml.h / ggml-graph.h does on misuse (an invalid shape,
 * type or parameter, a full arena or graph, a NULL tensor given to ggml_build_forward_expand):
 * ABORT, the default as in ggml, prints the message (operator, tensors, shapes) to stderr and aborts at
 * the failing call; RETURN returns NULL / false / an invalid graph and records the message in the
 * context (ggml_get_error). Untrusted input (descriptors, plans, backends, buffers) returns a status in
 * both modes. */
enum ggml_ext_error_mode {
    GGML_EXT_ERROR_ABORT = 0,
    GGML_EXT_ERROR_RETURN = 1,
};

/* Process-wide; set it once at startup, before other threads build graphs (a thread sees the change
 * at its next error). Other values are ignored. ggml_set_abort_on_error overrides it per context. */
void ggml_ext_set_error_mode(enum ggml_ext_error_mode mode);
enum ggml_ext_error_mode ggml_ext_get_error_mode(void);

/* ---------------------------------------------------------------------------------------------- */
/* Checked tensor transfers                                                                        */

/* ggml-backend.h's tensor transfers, returning their status in both error modes: FAILED (message in
 * ggml_backend_get_last_error, nothing copied) for a tensor that is not placed in a buffer or a range
 * outside it, and for ggml_ext_backend_tensor_copy tensors of different types or shapes or not
 * contiguous. For callers whose ranges come from untrusted input; ggml's void forms treat the same
 * cases as a misuse. */
enum ggml_status ggml_ext_backend_tensor_set(struct ggml_tensor * tensor, const void * data, size_t offset,
                                             size_t size);
enum ggml_status ggml_ext_backend_tensor_get(const struct ggml_tensor * tensor, void * data, size_t offset,
                                             size_t size);
enum ggml_status ggml_ext_backend_tensor_memset(struct ggml_tensor * tensor, uint8_t value, size_t offset,
                                                size_t size);
enum ggml_status ggml_ext_backend_tensor_copy(const struct ggml_tensor * src, struct ggml_tensor * dst);
enum ggml_status ggml_ext_backend_tensor_set_async(ggml_backend_t backend, struct ggml_tensor * tensor,
                                                   const void * data, size_t offset, size_t size);
enum ggml_status ggml_ext_backend_tensor_get_async(ggml_backend_t backend, const struct ggml_tensor * tensor,
                                                   void * data, size_t offset, size_t size);
enum ggml_status ggml_ext_backend_tensor_copy_async(ggml_backend_t backend_src, ggml_backend_t backend_dst,
                                                    const struct ggml_tensor * src, struct ggml_tensor * dst);
enum ggml_status ggml_ext_backend_tensor_set_2d(struct ggml_tensor * tensor, const void * data, size_t offset,
                                                size_t size, size_t n_copies, size_t stride_tensor,
                                                size_t stride_data);
enum ggml_status ggml_ext_backend_tensor_get_2d(const struct ggml_tensor * tensor, void * data, size_t offset,
                                                size_t size, size_t n_copies, size_t stride_tensor,
                                                size_t stride_data);
enum ggml_status ggml_ext_backend_tensor_set_2d_async(ggml_backend_t backend, struct ggml_tensor * tensor,
                                                      const void * data, size_t offset, size_t size,
                                                      size_t n_copies, size_t stride_tensor,
                                                      size_t stride_data);
enum ggml_status ggml_ext_backend_tensor_get_2d_async(ggml_backend_t backend,
                                                      const struct ggml_tensor * tensor, void * data,
                                                      size_t offset, size_t size, size_t n_copies,
                                                      size_t stride_tensor, size_t stride_data);

/* ---------------------------------------------------------------------------------------------- */
/* Operators                                                                                       */

#define GGML_EXT_OP_DESC_VERSION 1
/* Bytes of op_params available to attributes (the rest holds the marker, op id and size). */
#define GGML_EXT_MAX_ATTR_SIZE (GGML_MAX_OP_PARAMS - 3 * sizeof(int32_t))
#define GGML_EXT_MAX_NAME 64

typedef struct ggml_ext_op * ggml_ext_op_t;

/* Output metadata of a node of the operator: from its inputs and attributes, set *type and ne (every
 * dimension >= 0; the output is contiguous). Return false to reject the inputs, after writing a
 * reason into why (why_size bytes, NUL-terminated). Metadata only: no data is available. */
typedef bool (*ggml_ext_infer_fn)(const struct ggml_tensor * const * inputs, int n_inputs, const void * attrs,
                                  size_t attr_size, enum ggml_type * type, int64_t ne[GGML_MAX_DIMS],
                                  char * why, size_t why_size, void * user_data);

struct ggml_ext_op_desc {
    size_t struct_size; /* sizeof(struct ggml_ext_op_desc) */
    uint32_t version;   /* GGML_EXT_OP_DESC_VERSION */
    const char * name;  /* versioned, "<namespace>.<name>.v<N>", e.g. "sd.rope_apply.v1" */
    size_t attr_size;   /* exact attribute bytes of every node, <= GGML_EXT_MAX_ATTR_SIZE */
    int min_inputs;     /* 0 <= min_inputs <= max_inputs <= GGML_MAX_SRC */
    int max_inputs;
    ggml_ext_infer_fn infer;
    void * user_data;
};

/* Register an operator. NULL (error in ggml_backend_get_last_error, nothing registered) for a bad
 * descriptor or a name already registered. */
ggml_ext_op_t ggml_ext_register_op(const struct ggml_ext_op_desc * desc);
/* The registered operator of that name, or NULL. */
ggml_ext_op_t ggml_ext_find_op(const char * name);
const char * ggml_ext_op_name(ggml_ext_op_t op);

/* A node of op: an ordinary tensor with inputs as src (in order; auxiliary tensors belong here, never
 * in attributes) and a copy of the attr_size attribute bytes in op_params. Its op is GGML_OP_CUSTOM
 * with the GGML_CUSTOM_MARKER_EXTENSION marker (no device takes it for a CPU callback node); its one
 * output is contiguous, out of place, of the type and shape the inference callback gives. A misuse
 * (attributes or a number of inputs that do not fit the operator, inputs inference rejects) follows
 * the error mode like any constructor: abort, or NULL with the error in the context. */
struct ggml_tensor * ggml_ext_op_create(struct ggml_context * ctx, ggml_ext_op_t op,
                                        struct ggml_tensor ** inputs, int n_inputs, const void * attrs,
                                        size_t attr_size);
/* The operator of an extension node, or NULL for any other tensor. */
ggml_ext_op_t ggml_ext_node_op(const struct ggml_tensor * node);
/* The attribute bytes of an extension node (copy them out with memcpy), and their size; NULL for any
 * other tensor. */
const void * ggml_ext_node_attrs(const struct ggml_tensor * node, size_t * attr_size);

/* ---------------------------------------------------------------------------------------------- */
/* Kernels                                                                                         */

#define GGML_EXT_KERNEL_DESC_VERSION 1

/* Host-side plan of one node, made before tensor addresses exist (possibly during memory
 * measurement). prepare must not launch work or allocate device memory. */
struct ggml_ext_prepare_params {
    size_t struct_size;
    ggml_backend_dev_t device;
    const struct ggml_tensor * node; /* metadata only: data pointers are not valid yet */
    void * user_data;                /* the kernel descriptor's user_data */
};

/* One execution of a prepared node: current tensor addresses, the plan's workspace. */
struct ggml_ext_execute_params {
    size_t struct_size;
    ggml_backend_t backend;
    struct ggml_tensor * node;
    void * state;                    /* what prepare returned in *state (NULL without prepare) */
    ggml_backend_buffer_t workspace; /* NULL when the plan needs none */
    void * workspace_data;           /* the workspace base in the backend's representation */
    size_t workspace_size;           /* >= this node's request; contents not preserved between calls */
    void * user_data;
};

struct ggml_ext_kernel_desc {
    size_t struct_size; /* sizeof(struct ggml_ext_kernel_desc) */
    uint32_t version;   /* GGML_EXT_KERNEL_DESC_VERSION */
    const char * name;  /* unique among the device's kernels, e.g. "sd.rope_apply.cpu" */
    /* What it computes: a built-in op (an override), or GGML_OP_CUSTOM with custom_op set. */
    enum ggml_op op;
    ggml_ext_op_t custom_op;
    int priority; /* higher first */
    /* Correctness constraints (types, shapes, layouts); metadata only. Must not call the public
     * capability query (ggml_backend_dev_supports_op) for the same device and op: that recursion is
     * detected, reported and answered false. */
    bool (*supports)(ggml_backend_dev_t device, const struct ggml_tensor * node, void * user_data);
    /* Optional: whether to take the node even though the device's native implementation supports it
     * (NULL: never override native). When native does not support the node, a kernel whose supports
     * accepts it runs regardless. */
    bool (*preferred)(ggml_backend_dev_t device, const struct ggml_tensor * node, void * user_data);
    /* Optional: host plan state (*state) and the workspace bytes the node needs (*workspace_bytes). */
    enum ggml_status (*prepare)(const struct ggml_ext_prepare_params * params, void ** state,
                                size_t * workspace_bytes);
    /* Required: run the node, queued in backend execution order. An error status (with a message
     * set through ggml_ext_set_error) propagates; native is never retried after launch. */
    enum ggml_status (*execute)(const struct ggml_ext_execute_params * params);
    /* Optional: release prepare's state. */
    void (*destroy)(void * state, void * user_data);
    void * user_data;
};

/* Register a single-node kernel for device. false (error in ggml_backend_get_last_error, nothing
 * registered) for a bad descriptor, an unknown custom op or a name the device already has. */
bool ggml_ext_register_kernel(ggml_backend_dev_t device, const struct ggml_ext_kernel_desc * desc);

/* Device replay (spec "replayable plans"): flags of ggml_ext_register_kernel_ex.
 * CAPTURE_SAFE: execute only enqueues replayable device work on the backend's queue or stream: no
 * required per-execution host side effect, no decision based on tensor contents, private streams
 * rejoin the borrowed one; lazy setup completes during the first ordinary execution. Tensor
 * metadata, attributes and host plan state stay frozen until the scheduler allocates again (tensor
 * contents may change). When every extension step of a scheduled plan opts in, a backend that can
 * record device work (Vulkan) runs the first execution ordinarily, records the second while it runs,
 * and later resubmits the recording without calling execute. */
#define GGML_EXT_KERNEL_CAPTURE_SAFE (1u << 0)
/* REPLAY_REUSABLE (requires CAPTURE_SAFE): the recorded work depends only on complete tensor
 * metadata, addresses, the device and immutable registration data, uses no per-plan host state and
 * initializes any workspace it reads on every execution, so a recording may be reused by an
 * equivalent plan after a scheduler rebuild. */
#define GGML_EXT_KERNEL_REPLAY_REUSABLE (1u << 1)

/* As ggml_ext_register_kernel, with GGML_EXT_KERNEL_* flags (the descriptor is the same). false
 * (error set, nothing registered) for unknown flags or REPLAY_REUSABLE without CAPTURE_SAFE.
 * ggml_ext_register_kernel registers with flags 0: its kernel is called on every execution. */
bool ggml_ext_register_kernel_ex(ggml_backend_dev_t device, const struct ggml_ext_kernel_desc * desc,
                                 uint32_t flags);

/* Whether the device's own implementation supports op, ignoring every extension kernel. (The public
 * ggml_backend_dev_supports_op also counts single-node extension kernels.) */
bool ggml_ext_dev_supports_native_op(ggml_backend_dev_t device, const struct ggml_tensor * op);

/* Selection policy: with enabled false, the device's extension kernels are ignored (native only; nodes
 * only an extension supports become unsupported). On by default. Changing it makes existing plans
 * stale: rebuild the scheduler allocation afterwards. */
void ggml_ext_dev_set_enabled(ggml_backend_dev_t device, bool enabled);
bool ggml_ext_dev_get_enabled(ggml_backend_dev_t device);

/* The kernel that would run node on device: the registered name, "native" for the device's own
 * implementation, or NULL when neither supports it. */
const char * ggml_ext_dev_selected_kernel(ggml_backend_dev_t device, const struct ggml_tensor * node);

/* For kernels: record why prepare or execute failed; the runtime adds the node's name and op. */
void ggml_ext_set_error(const char * message);

/* ---------------------------------------------------------------------------------------------- */
/* Fusion (spec "Fusion")                                                                          */
/*
 * A fusion rule replaces consecutive nodes [first, first + n) of a scheduled graph with one step. The
 * scheduler matches rules in scheduler execution with one pipeline copy and no eval callback, and
 * freezes the selection before allocating tensors. The runtime checks legality (compute flags,
 * external uses, output flags, views, in-place writes; see docs/extensions.md); the rule stays
 * responsible for mathematical equivalence, dtype, shape, layout and hardware constraints. Only the
 * last node is the fused output; the computation of the others is removed. The intermediates keep
 * their allocations (the rule's kernel may use them as scratch) unless the rule declares
 * GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE, in which case they take no memory and their data stays
 * NULL. External inputs stay allocated through the last node; the
 * output may still share storage with an input by the allocator's in-place reuse, which the kernel
 * must handle (with workspace when needed). A fusion-only registration does not claim single-node
 * support in capability queries. */

#define GGML_EXT_FUSION_DESC_VERSION 2

/* ggml_ext_fusion_desc.flags (version 2). */
/* The rule's kernels never read or write the storage of the range's intermediates (every node but
 * the last, and the storage their views share): the scheduler gives them no memory and leaves their
 * data NULL. Without it the intermediates keep their allocations (the specification's initial
 * implementation), so a kernel may use them as scratch; the owner a writeback output writes into
 * always keeps its storage. */
#define GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE (1u << 0)
/* The rule's kernels compute correctly with the output exactly over (same address, type, shape and
 * strides as) the external input at the head of the range's src[0] chain, when every node of that
 * chain is an operator that may run in place (ggml_op_can_inplace): the allocator may then place the
 * output over that input when nothing after the range reads it, as the unfused in-place chain would
 * be placed, so fusing costs no memory. */
#define GGML_EXT_FUSION_OUTPUT_IN_PLACE (1u << 1)
/* The rule's kernels opt into device replay as GGML_EXT_KERNEL_CAPTURE_SAFE and
 * GGML_EXT_KERNEL_REPLAY_REUSABLE state for single-node kernels (REPLAY_REUSABLE requires
 * CAPTURE_SAFE). */
#define GGML_EXT_FUSION_CAPTURE_SAFE (1u << 2)
#define GGML_EXT_FUSION_REPLAY_REUSABLE (1u << 3)

/* One fused range, metadata only (prepare) or with current addresses (execute). */
struct ggml_ext_fusion_prepare_params {
    size_t struct_size;
    ggml_backend_dev_t device;
    struct ggml_tensor * const * nodes; /* the matched nodes in order; nodes[n_nodes - 1] is the output */
    int n_nodes;
    void * user_data;
};

struct ggml_ext_fusion_execute_params {
    size_t struct_size;
    ggml_backend_t backend;
    struct ggml_tensor * const * nodes;
    int n_nodes;
    void * state;
    ggml_backend_buffer_t workspace;
    void * workspace_data;
    size_t workspace_size;
    void * user_data;
};

struct ggml_ext_fusion_desc {
    size_t struct_size; /* sizeof(struct ggml_ext_fusion_desc) */
    uint32_t version;   /* GGML_EXT_FUSION_DESC_VERSION */
    const char * name;  /* unique among the device's fusion rules */
    int priority;       /* higher first */
    /* Optional: reorder the graph before matching and allocation, only through ggml_ext_graph_delay. */
    void (*optimize)(ggml_backend_dev_t device, struct ggml_cgraph * graph, void * user_data);
    /* How many consecutive nodes starting at node `first` the rule replaces (0 or 1: none). Metadata
     * only; use counts (ggml_graph_get_use_count) count every consumer of the whole graph. */
    int (*match)(ggml_backend_dev_t device, const struct ggml_cgraph * graph, int first, void * user_data);
    enum ggml_status (*prepare)(const struct ggml_ext_fusion_prepare_params * params, void ** state,
                                size_t * workspace_bytes); /* optional */
    enum ggml_status (*execute)(const struct ggml_ext_fusion_execute_params * params);
    void (*destroy)(void * state, void * user_data); /* optional */
    void * user_data;
    /* Version 2: GGML_EXT_FUSION_* flags (0 for a version 1 descriptor, which ends before it). */
    uint32_t flags;
};

/* Register a fusion rule for device. false (error in ggml_backend_get_last_error, nothing registered)
 * for a bad descriptor (unknown flags included) or a name the device already has. A version 1
 * descriptor (struct_size up to user_data) is accepted with flags 0. */
bool ggml_ext_register_fusion(ggml_backend_dev_t device, const struct ggml_ext_fusion_desc * desc);

/* For optimize callbacks: move the producer range, nodes [first, first + n) of graph, to just after
 * node `after` (first + n <= after < n_nodes), shifting the nodes in between up by n. Refused (false,
 * graph unchanged, reason in ggml_backend_get_last_error naming the node) when a crossed node depends
 * on the moved range (reads its results, directly or through views or shared storage), has unknown
 * side effects (CPU callback nodes), or writes storage that aliases the moved range's inputs or
 * outputs; independent copies, known in-place operators and owning dtype conversions whose storage
 * does not alias the moved inputs or outputs may be crossed or moved. Edges, tensor metadata and use
 * counts are preserved; only the order changes. */
bool ggml_ext_graph_delay(struct ggml_cgraph * graph, int first, int n, int after);

/* Explain mode. While on (also when the environment variable GGX_EXPLAIN is set to 1, which also
 * prints each explanation to stderr), the scheduler records for each graph it schedules: every split
 * and its backend; every fusion candidate, the rule that matched it and, for a rejection, the legality
 * rule that failed and the node involved; and for every other node, the kernel selected and why
 * (priority, supports, preferred, native fallback). */
void ggml_ext_sched_set_explain(ggml_backend_sched_t sched, bool enabled);
/* The explanation of the last graph sched scheduled ("" when explain mode was off); valid until it
 * schedules the next. */
const char * ggml_ext_sched_explanation(ggml_backend_sched_t sched);

/* Plan query: the steps of the plan of the last graph sched scheduled, in execution order. A step
 * is a native range (consecutive nodes the device's own kernels run as one batch), one node run by
 * an extension kernel, or a range a fusion rule replaced. Valid until sched schedules the next graph
 * or is reset, and while the graph's tensors live; 0 steps before any and after
 * ggml_backend_sched_reserve (which releases the measured plan). For programs; explain mode's text
 * is for people. */
enum ggml_ext_step_kind {
    GGML_EXT_STEP_NATIVE = 0, /* the device's own kernels */
    GGML_EXT_STEP_KERNEL = 1, /* a single-node extension kernel */
    GGML_EXT_STEP_FUSION = 2, /* a fusion rule's range */
};

struct ggml_ext_sched_step {
    size_t struct_size; /* set by the caller: sizeof(struct ggml_ext_sched_step) */
    enum ggml_ext_step_kind kind;
    const char * name;                  /* the kernel's or fusion rule's name; "native" for a native range */
    ggml_backend_t backend;             /* the backend that runs it */
    int split;                          /* its split (ggml_backend_sched_get_n_splits) */
    struct ggml_tensor * const * nodes; /* the nodes it computes, in order; the last is the output */
    int n_nodes;
    size_t workspace_bytes; /* its workspace request; a backend's workspace is the largest one */
};

/* Number of steps of the current plan. */
int ggml_ext_sched_get_n_steps(ggml_backend_sched_t sched);
/* Step i of the current plan into *step (struct_size set by the caller). false for an index out of
 * range or a struct_size smaller than the first version of the struct. */
bool ggml_ext_sched_get_step(ggml_backend_sched_t sched, int i, struct ggml_ext_sched_step * step);

/* The runtime's legality check of fusing nodes [first, first + n) of graph into their last node: true,
 * or false with the rule that failed and the node involved in ggml_backend_get_last_error. */
bool ggml_ext_fusion_is_legal(const struct ggml_cgraph * graph, int first, int n);

/* ---------------------------------------------------------------------------------------------- */
/* Enumerating registrations                                                                       */
/*
 * What is registered, for programs that list or check it (a coverage check, a tool's listing): the
 * operators, and per device the kernels and fusion rules. Registrations never go away, so a count
 * only grows and entry i stays entry i: each list is in registration order (not the priority order
 * selection uses). An index outside [0, count), a NULL device or a NULL info answers NULL / false
 * and changes nothing. Names stay valid for the life of the process. The selection policy
 * (ggml_ext_dev_set_enabled) hides nothing here. Another thread may register meanwhile: a count
 * read before a registration simply misses it. */

/* Number of registered operators. */
int ggml_ext_get_n_ops(void);
/* Operator i (0 <= i < ggml_ext_get_n_ops()) in registration order, or NULL; its name through
 * ggml_ext_op_name. */
ggml_ext_op_t ggml_ext_get_op(int i);

/* One kernel registration of a device. */
struct ggml_ext_kernel_info {
    size_t struct_size;      /* set by the caller: sizeof(struct ggml_ext_kernel_info) */
    const char * name;       /* the descriptor's name, e.g. "sd.rope_apply.cpu" */
    enum ggml_op op;         /* the built-in op it computes (an override), or GGML_OP_CUSTOM */
    ggml_ext_op_t custom_op; /* with GGML_OP_CUSTOM: the registered operator; else NULL */
    int priority;
    uint32_t flags; /* version 2: the GGML_EXT_KERNEL_* flags it was registered with */
};

/* Number of kernels registered on device (0 for NULL). */
int ggml_ext_dev_get_n_kernels(ggml_backend_dev_t device);
/* Kernel i of device, in registration order, into *info (struct_size set by the caller). false for
 * an index out of range, a NULL device or info, or a struct_size smaller than the first version of
 * the struct. */
bool ggml_ext_dev_get_kernel(ggml_backend_dev_t device, int i, struct ggml_ext_kernel_info * info);

/* Number of fusion rules registered on device (0 for NULL). */
int ggml_ext_dev_get_n_fusions(ggml_backend_dev_t device);
/* The name of fusion rule i of device, in registration order (the name ggml_ext_sched_get_step
 * reports for its fused steps), or NULL. */
const char * ggml_ext_dev_get_fusion_name(ggml_backend_dev_t device, int i);

/* ---------------------------------------------------------------------------------------------- */
/* Backend services (ggml_backend_reg_get_proc_address)                                            */

/* "ggml_ext_cpu_parallel_v1" from the CPU registry: run a callback on a CPU backend's thread pool. */
#define GGML_EXT_CPU_PARALLEL_V1 "ggml_ext_cpu_parallel_v1"
#define GGML_EXT_CPU_PARALLEL_V1_VERSION 1

struct ggml_ext_cpu_task {
    int ith; /* this thread, 0 .. nth - 1 */
    int nth; /* threads running the callback */
    void * user_data;
    void * runtime; /* opaque; pass the task to should_stop / fail */
};
typedef void (*ggml_ext_cpu_task_fn)(const struct ggml_ext_cpu_task * task);

struct ggml_ext_cpu_parallel_v1 {
    size_t struct_size; /* of this table, as provided by the runtime */
    uint32_t version;   /* GGML_EXT_CPU_PARALLEL_V1_VERSION */
    /* Threads of the backend's pool (a CPU-kernel backend: CPU or a virtual device), or 0. */
    int (*n_threads)(ggml_backend_t backend);
    /* Call fn on every thread of the backend's pool (n_tasks > 0: on that many, at most all) and
     * wait. ABORTED when the backend's abort callback asked to stop, FAILED after a task called fail
     * (message in ggml_backend_get_last_error), or for a backend without a CPU thread pool. */
    enum ggml_status (*run)(ggml_backend_t backend, ggml_ext_cpu_task_fn fn, void * user_data, int n_tasks);
    /* Inside fn: true once the abort callback asked to stop or a task failed; long tasks poll it. */
    bool (*should_stop)(const struct ggml_ext_cpu_task * task);
    /* Inside fn: fail the run with message (the first failure wins); the other tasks see should_stop. */
    void (*fail)(const struct ggml_ext_cpu_task * task, const char * message);
};

/* ---------------------------------------------------------------------------------------------- */
/* Conformance check of a kernel (opcheck)                                                         */
/*
 * ggml_ext_check_kernel runs one kernel alone on a device, case by case, and checks what the
 * runtime relies on: results within max_nmse of the device's native implementation (or, when native
 * does not support the node, of the caller's reference) with NaN/Inf positions agreeing; no byte
 * written outside the output and the workspace request (guard bytes surround every input, the
 * output and the workspace); inputs unchanged; prepare run with every data pointer NULL (metadata
 * only); a second execute, after the workspace was overwritten, still right (workspace contents are
 * not preserved); for a custom operator, the node contiguous, out of place, of the inferred type
 * and shape. With non_contiguous set, each case is also laid out permuted and strided (all inputs,
 * then each input alone); a layout the kernel's supports rejects is skipped, one it accepts must give
 * the right result. The kernel is given by its descriptor and need not be registered; the check
 * never changes registrations or selection. */

#define GGML_EXT_CHECK_CASE_VERSION 1
#define GGML_EXT_CHECK_PARAMS_VERSION 1
#define GGML_EXT_CHECK_REPORT_VERSION 1

/* Builds the node of a case from its inputs (already laid out): for an override, the built-in op's
 * constructor, e.g. return ggml_scale(ctx, inputs[0], 0.5f). It must add no other computing node. */
typedef struct ggml_tensor * (*ggml_ext_check_build_fn)(struct ggml_context * ctx,
                                                        struct ggml_tensor ** inputs, int n_inputs,
                                                        void * user_data);

/* Expected output of node (metadata only; attributes through ggml_ext_node_attrs) in double precision:
 * inputs[i] holds node->src[i]'s values as the kernel sees them, output receives the node's, each
 * in logical order (ne0 fastest, no gaps). Return false when it cannot (the check fails). */
typedef bool (*ggml_ext_check_reference_fn)(const struct ggml_tensor * node, const double * const * inputs,
                                            double * output, void * user_data);

struct ggml_ext_check_case {
    size_t struct_size; /* sizeof(struct ggml_ext_check_case) */
    uint32_t version;   /* GGML_EXT_CHECK_CASE_VERSION */
    const char * name;  /* for messages; NULL: "case <index>" */
    int n_inputs;
    enum ggml_type types[GGML_MAX_SRC];
    int64_t ne[GGML_MAX_SRC][GGML_MAX_DIMS];
    /* Input values are drawn uniformly from [range[i][0], range[i][1]) (both 0: [-1, 1)) and rounded
     * to the input's type. */
    double range[GGML_MAX_SRC][2];
    /* A custom operator's attributes (attr_size must be the operator's). */
    const void * attrs;
    size_t attr_size;
    /* Builds the node; required for a built-in op. NULL for a custom operator: ggml_ext_op_create. */
    ggml_ext_check_build_fn build;
    void * build_user_data;
    /* Also try permuted and strided layouts of the inputs. */
    bool non_contiguous;
};

struct ggml_ext_check_params {
    size_t struct_size; /* sizeof(struct ggml_ext_check_params) */
    uint32_t version;   /* GGML_EXT_CHECK_PARAMS_VERSION */
    ggml_backend_dev_t device;
    /* Optional: the backend to run on (a backend of device); NULL: the check makes one. */
    ggml_backend_t backend;
    /* The kernel, as given (or to be given) to ggml_ext_register_kernel. */
    const struct ggml_ext_kernel_desc * kernel;
    const struct ggml_ext_check_case * cases;
    int n_cases;
    /* Largest normalised mean squared error sum((y - e)^2) / sum(e^2); 0: results must be exact. */
    double max_nmse;
    /* Optional: expected values where native does not support the node (custom operators). */
    ggml_ext_check_reference_fn reference;
    void * reference_user_data;
    uint64_t seed; /* input values; the same seed gives the same values */
    /* Optional: called with every failure message as it is found (first_failure keeps the first). */
    void (*log)(const char * message, void * user_data);
    void * log_user_data;
};

struct ggml_ext_check_report {
    size_t struct_size;      /* sizeof(struct ggml_ext_check_report), set by the caller */
    uint32_t version;        /* GGML_EXT_CHECK_REPORT_VERSION */
    int n_cases;             /* cases checked */
    int n_passed;            /* cases whose every layout the kernel accepted passed */
    int n_runs;              /* case layouts the kernel ran (each executed twice) */
    int n_skipped;           /* non-contiguous case layouts its supports rejected */
    char first_failure[512]; /* "" when everything passed; else names the case, layout and problem */
};

/* Check the kernel on every case (see above). true when every case passed; false with the first
 * problem in report->first_failure (and every one through params->log), also for bad parameters
 * (then the message is in ggml_backend_get_last_error too). report may be NULL. */
bool ggml_ext_check_kernel(const struct ggml_ext_check_params * params,
                           struct ggml_ext_check_report * report);

#ifdef __cplusplus
}
#endif

#endif /* GGML_EXT_H */
