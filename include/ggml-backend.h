/* ggx — backend layer: registry -> devices -> backends, buffer types -> buffers, events.
 *
 * Errors: functions that can fail because of their input return NULL, false or a ggml_status other
 * than GGML_STATUS_SUCCESS, and leave a message naming the object, tensor and sizes in
 * ggml_backend_get_last_error() of the calling thread. See docs/errors.md. */
#ifndef GGML_BACKEND_H
#define GGML_BACKEND_H

#include "ggml.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ggml_backend_buffer_type * ggml_backend_buffer_type_t;
typedef struct ggml_backend_buffer * ggml_backend_buffer_t;
typedef struct ggml_backend_event * ggml_backend_event_t;
typedef struct ggml_backend * ggml_backend_t;
typedef struct ggml_backend_reg * ggml_backend_reg_t;
typedef struct ggml_backend_device * ggml_backend_dev_t;

/* The message of the last failure on this thread ("" if none). Valid until the next failure. */
const char * ggml_backend_get_last_error(void);

/* ---------------------------------------------------------------------------------------------- */
/* Buffer types                                                                                    */

const char * ggml_backend_buft_name(ggml_backend_buffer_type_t buft);
/* Allocate a buffer of size bytes (0 is allowed). NULL with an error when it cannot be allocated.
 * The caller owns the buffer: ggml_backend_buffer_free. */
ggml_backend_buffer_t ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size);
/* Byte alignment of tensor data in buffers of this type. */
size_t ggml_backend_buft_get_alignment(ggml_backend_buffer_type_t buft);
/* Largest buffer this type can allocate. */
size_t ggml_backend_buft_get_max_size(ggml_backend_buffer_type_t buft);
/* Bytes tensor needs in a buffer of this type (at least ggml_nbytes). */
size_t ggml_backend_buft_get_alloc_size(ggml_backend_buffer_type_t buft, const struct ggml_tensor * tensor);
/* True when the buffers' memory is directly addressable by the host. */
bool ggml_backend_buft_is_host(ggml_backend_buffer_type_t buft);
ggml_backend_dev_t ggml_backend_buft_get_device(ggml_backend_buffer_type_t buft);

/* ---------------------------------------------------------------------------------------------- */
/* Buffers                                                                                         */

enum ggml_backend_buffer_usage {
    GGML_BACKEND_BUFFER_USAGE_ANY = 0,
    GGML_BACKEND_BUFFER_USAGE_WEIGHTS = 1,
    GGML_BACKEND_BUFFER_USAGE_COMPUTE = 2,
};

/* Release a buffer and its memory; tensors placed in it become invalid. NULL is ignored. */
void ggml_backend_buffer_free(ggml_backend_buffer_t buffer);
const char * ggml_backend_buffer_name(ggml_backend_buffer_t buffer);
/* Address of the first byte (an opaque device address for non-host buffers). */
void * ggml_backend_buffer_get_base(ggml_backend_buffer_t buffer);
size_t ggml_backend_buffer_get_size(ggml_backend_buffer_t buffer);
size_t ggml_backend_buffer_get_alignment(ggml_backend_buffer_t buffer);
size_t ggml_backend_buffer_get_max_size(ggml_backend_buffer_t buffer);
size_t ggml_backend_buffer_get_alloc_size(ggml_backend_buffer_t buffer, const struct ggml_tensor * tensor);
bool ggml_backend_buffer_is_host(ggml_backend_buffer_t buffer);
/* Fill the whole buffer with value. */
void ggml_backend_buffer_clear(ggml_backend_buffer_t buffer, uint8_t value);
void ggml_backend_buffer_set_usage(ggml_backend_buffer_t buffer, enum ggml_backend_buffer_usage usage);
enum ggml_backend_buffer_usage ggml_backend_buffer_get_usage(ggml_backend_buffer_t buffer);
ggml_backend_buffer_type_t ggml_backend_buffer_get_type(ggml_backend_buffer_t buffer);

/* Place tensor (own storage, not yet placed) at addr inside buffer; fails when it does not fit or
 * addr is misaligned. */
enum ggml_status ggml_backend_tensor_alloc(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor,
                                           void * addr);
/* Give a view the buffer and address of its already placed view_src. */
enum ggml_status ggml_backend_view_init(struct ggml_tensor * tensor);
/* Let the buffer prepare backend state for a placed tensor (called by the two functions above). */
enum ggml_status ggml_backend_buffer_init_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor);

/* ---------------------------------------------------------------------------------------------- */
/* Tensor data. The byte range [offset, offset + size) must lie within ggml_nbytes(tensor) and the
 * tensor must be placed in a buffer; otherwise nothing is copied and the call is a misuse: it aborts
 * in the aborting error mode (as ggml does) and leaves the message in ggml_backend_get_last_error in
 * the returning one. ggml-ext.h's ggml_ext_backend_tensor_* forms return the status instead, in both
 * modes (docs/errors.md). */

void ggml_backend_tensor_set(struct ggml_tensor * tensor, const void * data, size_t offset, size_t size);
void ggml_backend_tensor_get(const struct ggml_tensor * tensor, void * data, size_t offset, size_t size);
void ggml_backend_tensor_memset(struct ggml_tensor * tensor, uint8_t value, size_t offset, size_t size);
/* Copy all bytes of src into dst (same type and shape, both contiguous), across devices if needed. */
void ggml_backend_tensor_copy(const struct ggml_tensor * src, struct ggml_tensor * dst);

/* ---------------------------------------------------------------------------------------------- */
/* Backends (an execution stream on a device)                                                      */

const char * ggml_backend_name(ggml_backend_t backend);
/* Synchronize and release the backend. NULL is ignored. */
void ggml_backend_free(ggml_backend_t backend);
ggml_backend_dev_t ggml_backend_get_device(ggml_backend_t backend);
ggml_backend_buffer_type_t ggml_backend_get_default_buffer_type(ggml_backend_t backend);
/* Allocate a buffer of the default type. */
ggml_backend_buffer_t ggml_backend_alloc_buffer(ggml_backend_t backend, size_t size);
size_t ggml_backend_get_alignment(ggml_backend_t backend);
size_t ggml_backend_get_max_size(ggml_backend_t backend);

/* Asynchronous tensor data access ordered with the backend's work; complete after synchronize.
 * Backends without asynchronous transfers perform them immediately. */
void ggml_backend_tensor_set_async(ggml_backend_t backend, struct ggml_tensor * tensor, const void * data,
                                   size_t offset, size_t size);
void ggml_backend_tensor_get_async(ggml_backend_t backend, const struct ggml_tensor * tensor, void * data,
                                   size_t offset, size_t size);
void ggml_backend_tensor_copy_async(ggml_backend_t backend_src, ggml_backend_t backend_dst,
                                    const struct ggml_tensor * src, struct ggml_tensor * dst);
/* Wait until all queued work of the backend has finished. */
void ggml_backend_synchronize(ggml_backend_t backend);

/* Compute every node of an allocated, valid graph in order and wait for the result. Returns
 * FAILED (with an error naming the node) for an invalid graph, an unallocated tensor or a node the
 * device does not support; ABORTED when the abort callback asked to stop. */
enum ggml_status ggml_backend_graph_compute(ggml_backend_t backend, struct ggml_cgraph * cgraph);
/* As ggml_backend_graph_compute, but may return before the work finishes (see synchronize). */
enum ggml_status ggml_backend_graph_compute_async(ggml_backend_t backend, struct ggml_cgraph * cgraph);
/* Compute nodes [i0, i1) of an already allocated graph (spec "Public graph access"): the nodes run
 * as a segment that keeps the whole graph's recorded use counts. FAILED for a bad range. */
enum ggml_status ggml_backend_graph_compute_range(ggml_backend_t backend, struct ggml_cgraph * cgraph, int i0,
                                                  int i1);

bool ggml_backend_supports_op(ggml_backend_t backend, const struct ggml_tensor * op);
bool ggml_backend_supports_buft(ggml_backend_t backend, ggml_backend_buffer_type_t buft);
bool ggml_backend_offload_op(ggml_backend_t backend, const struct ggml_tensor * op);

/* ---------------------------------------------------------------------------------------------- */
/* Events                                                                                          */

/* New event of a device; NULL when the device has no events. The caller frees it. */
ggml_backend_event_t ggml_backend_event_new(ggml_backend_dev_t device);
void ggml_backend_event_free(ggml_backend_event_t event);
/* Mark the point after all work queued so far on backend. */
void ggml_backend_event_record(ggml_backend_event_t event, ggml_backend_t backend);
/* Block the host until the recorded point is reached. */
void ggml_backend_event_synchronize(ggml_backend_event_t event);
/* Make backend's later work wait for the recorded point. */
void ggml_backend_event_wait(ggml_backend_t backend, ggml_backend_event_t event);

/* ---------------------------------------------------------------------------------------------- */
/* Devices                                                                                         */

enum ggml_backend_dev_type {
    GGML_BACKEND_DEVICE_TYPE_CPU,   /* the host CPU, system memory */
    GGML_BACKEND_DEVICE_TYPE_GPU,   /* a GPU with its own memory */
    GGML_BACKEND_DEVICE_TYPE_IGPU,  /* an integrated GPU using host memory */
    GGML_BACKEND_DEVICE_TYPE_ACCEL, /* an accelerator used together with the CPU backend */
    GGML_BACKEND_DEVICE_TYPE_META,  /* a device spreading tensors over several others */
};

struct ggml_backend_dev_caps {
    bool async;                /* asynchronous compute and transfers */
    bool host_buffer;          /* has a pinned host buffer type */
    bool buffer_from_host_ptr; /* can wrap host memory */
    bool events;               /* supports events */
};

struct ggml_backend_dev_props {
    const char * name;
    const char * description;
    size_t memory_free;
    size_t memory_total;
    enum ggml_backend_dev_type type;
    const char * device_id; /* lower-case PCI bus id ("0000:c1:00.0"), NULL when unknown */
    struct ggml_backend_dev_caps caps;
};

const char * ggml_backend_dev_name(ggml_backend_dev_t device);
const char * ggml_backend_dev_description(ggml_backend_dev_t device);
void ggml_backend_dev_memory(ggml_backend_dev_t device, size_t * free, size_t * total);
enum ggml_backend_dev_type ggml_backend_dev_type(ggml_backend_dev_t device);
void ggml_backend_dev_get_props(ggml_backend_dev_t device, struct ggml_backend_dev_props * props);
ggml_backend_reg_t ggml_backend_dev_backend_reg(ggml_backend_dev_t device);
/* New backend on the device (params: device-specific text, may be NULL). The caller frees it. */
ggml_backend_t ggml_backend_dev_init(ggml_backend_dev_t device, const char * params);
ggml_backend_buffer_type_t ggml_backend_dev_buffer_type(ggml_backend_dev_t device);
/* Pinned host buffer type for fast transfers, or NULL. */
ggml_backend_buffer_type_t ggml_backend_dev_host_buffer_type(ggml_backend_dev_t device);
/* Whether the device can compute op (a node with its sources and types); metadata only. */
bool ggml_backend_dev_supports_op(ggml_backend_dev_t device, const struct ggml_tensor * op);
bool ggml_backend_dev_supports_buft(ggml_backend_dev_t device, ggml_backend_buffer_type_t buft);
/* Whether the device wants op even when its weights live elsewhere (large batches). */
bool ggml_backend_dev_offload_op(ggml_backend_dev_t device, const struct ggml_tensor * op);

/* ---------------------------------------------------------------------------------------------- */
/* Registry. Built-in backends register themselves on first use of these functions. Devices are   */
/* enumerated in registration order with the CPU devices last: GPU devices come first.            */

const char * ggml_backend_reg_name(ggml_backend_reg_t reg);
size_t ggml_backend_reg_dev_count(ggml_backend_reg_t reg);
ggml_backend_dev_t ggml_backend_reg_dev_get(ggml_backend_reg_t reg, size_t index);
/* A named, versioned service or function of the backend (e.g. "ggml_backend_set_n_threads"), or
 * NULL when the backend does not provide it (or reg is NULL, as ggml_backend_reg_by_name returns for a
 * backend not loaded). */
void * ggml_backend_reg_get_proc_address(ggml_backend_reg_t reg, const char * name);

/* What proc address "ggml_backend_get_features" returns: the backend's features as name/value pairs
 * (the CPU's: the instruction sets it can use, value "1"), ending with a NULL name. */
struct ggml_backend_feature {
    const char * name;
    const char * value;
};
typedef struct ggml_backend_feature * (*ggml_backend_get_features_t)(ggml_backend_reg_t reg);

size_t ggml_backend_reg_count(void);
ggml_backend_reg_t ggml_backend_reg_get(size_t index);
ggml_backend_reg_t ggml_backend_reg_by_name(const char * name);
/* Add a backend registry (and its devices). Registering a registry twice, or two registries of one
 * name, is refused with a message in ggml_backend_get_last_error(). */
void ggml_backend_register(ggml_backend_reg_t reg);
/* Add one device whose registry is not registered; a device already listed is refused. */
void ggml_backend_device_register(ggml_backend_dev_t device);

size_t ggml_backend_dev_count(void);
ggml_backend_dev_t ggml_backend_dev_get(size_t index);
/* Device by name (case-insensitive), or NULL. */
ggml_backend_dev_t ggml_backend_dev_by_name(const char * name);
/* First device of a type, or NULL. */
ggml_backend_dev_t ggml_backend_dev_by_type(enum ggml_backend_dev_type type);
/* Backend on the named device / first device of type / best device (GPU, else CPU); NULL if none. */
ggml_backend_t ggml_backend_init_by_name(const char * name, const char * params);
ggml_backend_t ggml_backend_init_by_type(enum ggml_backend_dev_type type, const char * params);
ggml_backend_t ggml_backend_init_best(void);

/* Load a backend module (a shared library exporting ggml_backend_init) and register its registry;
 * NULL with a message for a path that is not one. Loading a loaded module returns its registry. */
ggml_backend_reg_t ggml_backend_load(const char * path);
/* Unregister a registry and, if it was loaded from a module, close the module: first free every
 * backend, buffer and extension registration of its devices. */
void ggml_backend_unload(ggml_backend_reg_t reg);
/* Load the backend modules not registered yet (builds with GGX_BACKEND_DL), from beside the library,
 * beside the executable or the current directory, then the module named by GGML_BACKEND_PATH. With
 * the backends built in there are no modules to find. */
void ggml_backend_load_all(void);
/* The same, looking for the modules in dir_path only. */
void ggml_backend_load_all_from_path(const char * dir_path);

/* ---------------------------------------------------------------------------------------------- */
/* Scheduler: one graph over several backends                                                     */
/*
 * Placement, in order: a tensor pinned with ggml_backend_sched_set_tensor_backend; an op with a
 * source that already has storage (weights) runs where that storage is, when that backend supports
 * the op (with op_offload, a higher-priority backend whose offload_op accepts the op takes it
 * instead); otherwise the first backend in priority order whose supports_op accepts the op and
 * whose buffer type the op's pre-allocated sources can be read from. Backends are given in priority
 * order and the last must be a CPU backend (the fallback). The graph is cut into splits: maximal runs
 * of consecutive nodes on one backend; a split's inputs that live on another backend are copied
 * into the split's backend first (n_copies copies of them with parallel pipelining, events order
 * the copies against compute). Sources of nodes that read copies are rewritten to the copies.
 */
typedef struct ggml_backend_sched * ggml_backend_sched_t;

/* Called for each node when asking (ask = true: return whether the caller wants to observe t) and
 * after computing it (ask = false: t's data is ready; return false to stop the graph there). */
typedef bool (*ggml_backend_sched_eval_callback)(struct ggml_tensor * t, bool ask, void * user_data);

/* New scheduler over n_backends backends (bufts: their buffer types, NULL for each backend's
 * default), for graphs of up to graph_size nodes. parallel: keep GGML_SCHED_MAX_COPIES copies of
 * split inputs for pipelining. NULL (error in ggml_backend_get_last_error) on bad arguments. */
ggml_backend_sched_t ggml_backend_sched_new(ggml_backend_t * backends, ggml_backend_buffer_type_t * bufts,
                                            int n_backends, size_t graph_size, bool parallel,
                                            bool op_offload);
void ggml_backend_sched_free(ggml_backend_sched_t sched);

/* Size the compute buffers for the worst-case graph measure_graph (nothing is computed; measure_graph's
 * tensors are left unallocated). */
bool ggml_backend_sched_reserve(ggml_backend_sched_t sched, struct ggml_cgraph * measure_graph);
int ggml_backend_sched_get_n_backends(ggml_backend_sched_t sched);
ggml_backend_t ggml_backend_sched_get_backend(ggml_backend_sched_t sched, int i);
/* Splits and input copies of the last scheduled graph. */
int ggml_backend_sched_get_n_splits(ggml_backend_sched_t sched);
int ggml_backend_sched_get_n_copies(ggml_backend_sched_t sched);
/* Bytes of backend's compute buffer. */
size_t ggml_backend_sched_get_buffer_size(ggml_backend_sched_t sched, ggml_backend_t backend);
/* Pin node (or leaf) to backend for the next graph; NULL clears. */
void ggml_backend_sched_set_tensor_backend(ggml_backend_sched_t sched, struct ggml_tensor * node,
                                           ggml_backend_t backend);
ggml_backend_t ggml_backend_sched_get_tensor_backend(ggml_backend_sched_t sched, struct ggml_tensor * node);

/* Place and allocate graph without computing it. */
bool ggml_backend_sched_alloc_graph(ggml_backend_sched_t sched, struct ggml_cgraph * graph);
/* Compute graph (placing and allocating it first when needed) and wait for the result. */
enum ggml_status ggml_backend_sched_graph_compute(ggml_backend_sched_t sched, struct ggml_cgraph * graph);
enum ggml_status ggml_backend_sched_graph_compute_async(ggml_backend_sched_t sched,
                                                        struct ggml_cgraph * graph);
void ggml_backend_sched_synchronize(ggml_backend_sched_t sched);
/* Forget the last graph's placement and allocation (pins included); buffers are kept. */
void ggml_backend_sched_reset(ggml_backend_sched_t sched);
void ggml_backend_sched_set_eval_callback(ggml_backend_sched_t sched,
                                          ggml_backend_sched_eval_callback callback, void * user_data);

#define GGML_SCHED_MAX_COPIES 4

/* ---------------------------------------------------------------------------------------------- */
/* Meta devices (tensor parallelism)                                                               */

#define GGML_BACKEND_META_MAX_DEVICES 16

/* How a meta device spreads a tensor over its devices: sliced along dimension 0..3, a full copy
 * on each (MIRRORED), or a partial sum on each (PARTIAL); NONE and UNKNOWN are bookkeeping. */
enum ggml_backend_meta_split_axis {
    GGML_BACKEND_SPLIT_AXIS_0 = 0,
    GGML_BACKEND_SPLIT_AXIS_1 = 1,
    GGML_BACKEND_SPLIT_AXIS_2 = 2,
    GGML_BACKEND_SPLIT_AXIS_3 = 3,

    GGML_BACKEND_SPLIT_AXIS_MIRRORED = 10,
    GGML_BACKEND_SPLIT_AXIS_PARTIAL = 11,

    GGML_BACKEND_SPLIT_AXIS_NONE = 98,
    GGML_BACKEND_SPLIT_AXIS_UNKNOWN = 99,
};

/* The split of one tensor: for an axis 0..3, the tensor is n_segments segments along it, segment
 * s repeating nr[s] times, and ne holds each segment's slice length per device (segments outer,
 * devices inner). */
struct ggml_backend_meta_split_state {
    enum ggml_backend_meta_split_axis axis;
    int64_t ne[16 * GGML_BACKEND_META_MAX_DEVICES];
    uint32_t nr[16];
    uint32_t n_segments;
};

/* Signature of the "ggml_backend_set_n_threads" service. */
typedef void (*ggml_backend_set_n_threads_t)(ggml_backend_t backend, int n_threads);

/* ---------------------------------------------------------------------------------------------- */
/* ggml's utility API: host buffers, 2-d transfers, plans, graph copies and comparison            */

/* The host buffer type ("CPU", 64-byte aligned memory; is_host). */
ggml_backend_buffer_type_t ggml_backend_cpu_buffer_type(void);
/* A buffer of the CPU buffer type over caller memory [ptr, ptr + size) (not freed with the buffer;
 * ptr should be 64-byte aligned for the kernels' vector loads). */
ggml_backend_buffer_t ggml_backend_cpu_buffer_from_ptr(void * ptr, size_t size);
/* A buffer of device over host memory [ptr, ptr + size), for devices whose caps have
 * buffer_from_host_ptr (or that access host memory directly, like the CPU); NULL with an error
 * otherwise. max_tensor_size bounds the tensors placed in it. */
ggml_backend_buffer_t ggml_backend_dev_buffer_from_host_ptr(ggml_backend_dev_t device, void * ptr,
                                                            size_t size, size_t max_tensor_size);
/* Forget per-tensor state the buffer's backend attached to tensors it initialised (ggx keeps none,
 * so this does nothing: tensors and data stay). */
void ggml_backend_buffer_reset(ggml_backend_buffer_t buffer);

/* The backend's kind: one 16-byte identifier per device type (CPU, Vulkan, virtual). */
ggml_guid_t ggml_backend_guid(ggml_backend_t backend);

/* n_copies transfers of size bytes: copy i moves data + i * stride_data to/from the tensor's bytes
 * at offset + i * stride_tensor. Every range must lie inside the tensor (otherwise nothing is copied
 * and the call is a misuse, as for ggml_backend_tensor_set). */
void ggml_backend_tensor_set_2d(struct ggml_tensor * tensor, const void * data, size_t offset, size_t size,
                                size_t n_copies, size_t stride_tensor, size_t stride_data);
void ggml_backend_tensor_get_2d(const struct ggml_tensor * tensor, void * data, size_t offset, size_t size,
                                size_t n_copies, size_t stride_tensor, size_t stride_data);
void ggml_backend_tensor_set_2d_async(ggml_backend_t backend, struct ggml_tensor * tensor, const void * data,
                                      size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                      size_t stride_data);
void ggml_backend_tensor_get_2d_async(ggml_backend_t backend, const struct ggml_tensor * tensor, void * data,
                                      size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                      size_t stride_data);

/* A reusable plan of all of cgraph on backend (kernels selected and prepared once, with its own
 * workspace): compute runs it again on the graph's current data. NULL (error set) when a node is not
 * supported. A plan whose registrations or backend settings changed since create fails to compute
 * (create a new one). */
typedef void * ggml_backend_graph_plan_t;
ggml_backend_graph_plan_t ggml_backend_graph_plan_create(ggml_backend_t backend, struct ggml_cgraph * cgraph);
void ggml_backend_graph_plan_free(ggml_backend_t backend, ggml_backend_graph_plan_t plan);
enum ggml_status ggml_backend_graph_plan_compute(ggml_backend_t backend, ggml_backend_graph_plan_t plan);

/* A copy of graph whose tensors live in one new buffer of backend: ctx_allocated holds the tensors
 * with storage (data copied from the originals), ctx_unallocated the views. On failure every field
 * is NULL (error set). */
struct ggml_backend_graph_copy {
    ggml_backend_buffer_t buffer;
    struct ggml_context * ctx_allocated;
    struct ggml_context * ctx_unallocated;
    struct ggml_cgraph * graph;
};
#if defined(__cplusplus) && defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow" /* ggml names the function like the struct it returns */
#endif
struct ggml_backend_graph_copy ggml_backend_graph_copy(ggml_backend_t backend, struct ggml_cgraph * graph);
#if defined(__cplusplus) && defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
void ggml_backend_graph_copy_free(struct ggml_backend_graph_copy copy);

/* Computes graph on backend1 and a copy of it on backend2 node by node, and calls
 * callback(i, node of backend1, node of backend2, user_data) after each node (tensors readable
 * with ggml_backend_tensor_get); false from the callback stops. With test_nodes, only those nodes
 * are compared (the graph is computed up to each). False when the copy or a computation fails. */
typedef bool (*ggml_backend_eval_callback)(int node_index, struct ggml_tensor * t1, struct ggml_tensor * t2,
                                           void * user_data);
bool ggml_backend_compare_graph_backend(ggml_backend_t backend1, ggml_backend_t backend2,
                                        struct ggml_cgraph * graph, ggml_backend_eval_callback callback,
                                        void * user_data, struct ggml_tensor const * const * test_nodes,
                                        size_t num_test_nodes);

/* The buffer type of backend's compute buffer in sched (NULL for a backend not in sched). */
ggml_backend_buffer_type_t ggml_backend_sched_get_buffer_type(ggml_backend_sched_t sched,
                                                              ggml_backend_t backend);
/* What ggml_backend_sched_reserve(measure_graph) would make each backend's compute buffer
 * (sizes[i] for backend i), without allocating anything. */
void ggml_backend_sched_reserve_size(ggml_backend_sched_t sched, struct ggml_cgraph * measure_graph,
                                     size_t * sizes);
/* Place graph's nodes and form its splits (ggml_backend_sched_get_n_splits / _get_tensor_backend
 * answer for it) without allocating anything. */
void ggml_backend_sched_split_graph(ggml_backend_sched_t sched, struct ggml_cgraph * graph);

/* Meta devices group devices for tensor parallelism: the split state of each weight says how it is
 * divided among them. ggx has no tensor splitting: a meta device of one device is that device
 * (every tensor whole on it); more devices answer NULL with an error (types: above). */
/* "0" .. "3", "MIRRORED", "PARTIAL", "NONE", "UNKNOWN"; NULL for other values. */
const char * ggml_backend_meta_split_axis_name(enum ggml_backend_meta_split_axis split_axis);
typedef struct ggml_backend_meta_split_state (*ggml_backend_meta_get_split_state_t)(
    const struct ggml_tensor * tensor, void * userdata);
ggml_backend_dev_t ggml_backend_meta_device(ggml_backend_dev_t * devs, size_t n_devs,
                                            ggml_backend_meta_get_split_state_t get_split_state,
                                            void * get_split_state_ud);

#ifdef __cplusplus
}
#endif

#endif /* GGML_BACKEND_H */
