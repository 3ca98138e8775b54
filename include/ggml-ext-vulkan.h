/* ggx — the Vulkan execution service for extension kernels (spec "Vulkan execution services";
 * docs/vulkan.md). An extension kernel registered for a Vulkan device gets the table from the
 * Vulkan registry:
 *
 *   const struct ggml_ext_vulkan_v1 * vk = ggml_backend_reg_get_proc_address(
 *       ggml_backend_dev_backend_reg(device), GGML_EXT_VULKAN_V1);
 *
 * and, inside its execute callback, records its own SPIR-V dispatches and buffer copies into the
 * backend's command buffer, ordered (with barriers) after everything recorded before them and
 * before everything after. Nothing runs until the plan's work is submitted, so execute never waits
 * for the device and never reads tensor contents on the host. */
#ifndef GGML_EXT_VULKAN_H
#define GGML_EXT_VULKAN_H

#include "ggml-backend.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GGML_EXT_VULKAN_V1 "ggml_ext_vulkan_v1"
#define GGML_EXT_VULKAN_V1_VERSION 1
#define GGML_EXT_VULKAN_MAX_COOPMAT 16
#define GGML_EXT_VULKAN_MAX_COOPMAT_SHAPES 64

/* A cooperative-matrix shape the device supports (VK_NV_cooperative_matrix), as M x N x K with
 * VkComponentTypeNV values for A, B, C and the result and a VkScopeNV. The first revision of
 * ggml_ext_vulkan_device_info lists these; coopmat_shapes supersedes it. */
struct ggml_ext_vulkan_coopmat {
    uint32_t m, n, k;
    uint32_t a_type, b_type, c_type, result_type;
    uint32_t scope;
};

/* The extension a cooperative-matrix shape belongs to: shaders using it declare that extension's
 * SPIR-V capability (CooperativeMatrixNV or CooperativeMatrixKHR). */
enum ggml_ext_vulkan_coopmat_source {
    GGML_EXT_VULKAN_COOPMAT_NV = 1,  /* VK_NV_cooperative_matrix */
    GGML_EXT_VULKAN_COOPMAT_KHR = 2, /* VK_KHR_cooperative_matrix */
};

/* A cooperative-matrix shape of either extension: Result (M x N) = A (M x K) x B (K x N) + C, with
 * VkComponentTypeKHR values for the component types and a VkScopeKHR (the NV enumerations have the
 * same values). saturating_accumulation: the multiply-add must carry the SaturatingAccumulation
 * operand (KHR only; always false for NV). */
struct ggml_ext_vulkan_coopmat_shape {
    uint32_t source; /* enum ggml_ext_vulkan_coopmat_source */
    uint32_t m, n, k;
    uint32_t a_type, b_type, c_type, result_type;
    uint32_t scope;
    bool saturating_accumulation;
};

/* What extension shaders may rely on. Features are the ones enabled on the logical device.
 * Versioned by size: the caller sets struct_size to the size it knows (sizeof, at least
 * GGML_EXT_VULKAN_DEVICE_INFO_V1_SIZE); the runtime writes no byte past it and on return sets
 * struct_size to the bytes it filled. A runtime that predates the second revision returns less
 * than sizeof (its own size) and leaves the second revision's fields unfilled. */
struct ggml_ext_vulkan_device_info {
    size_t struct_size;
    uint32_t api_version, vendor_id, device_id;
    uint32_t max_workgroup_count[3];
    uint32_t max_workgroup_size[3];
    uint32_t max_workgroup_invocations;
    uint32_t max_shared_memory;        /* bytes of workgroup shared memory */
    uint32_t max_bindings;             /* storage buffers per dispatch, at bindings 0 .. max_bindings - 1 */
    uint32_t max_push_constants;       /* bytes */
    uint32_t max_constants;            /* 32-bit specialisation constants per dispatch, ids 0, 1, ... */
    uint64_t storage_offset_alignment; /* minStorageBufferOffsetAlignment */
    uint64_t max_storage_range;        /* largest binding in bytes */
    uint32_t subgroup_size, min_subgroup_size, max_subgroup_size;
    uint32_t subgroup_stages;     /* VkShaderStageFlags with subgroup operations */
    uint32_t subgroup_operations; /* VkSubgroupFeatureFlags */
    bool storage_buffer_16bit;    /* always true: a device without it is not offered */
    bool storage_buffer_8bit;
    bool shader_int8;
    bool shader_float16;
    uint32_t n_coopmat; /* VK_NV_cooperative_matrix shapes below (0 without that extension) */
    struct ggml_ext_vulkan_coopmat coopmat[GGML_EXT_VULKAN_MAX_COOPMAT];
    /* Second revision. The extension and its cooperativeMatrix feature are enabled on the device
     * exactly when the flag is true. */
    bool coopmat_nv;
    bool coopmat_khr;
    uint32_t coopmat_khr_stages; /* VkShaderStageFlags with KHR cooperative-matrix instructions */
    /* The KHR shapes, then the NV ones, each in the driver's order (preferred first); at most
     * GGML_EXT_VULKAN_MAX_COOPMAT_SHAPES in all. */
    uint32_t n_coopmat_shapes;
    struct ggml_ext_vulkan_coopmat_shape coopmat_shapes[GGML_EXT_VULKAN_MAX_COOPMAT_SHAPES];
};

/* The first revision's struct_size: everything up to and including coopmat. */
#define GGML_EXT_VULKAN_DEVICE_INFO_V1_SIZE offsetof(struct ggml_ext_vulkan_device_info, coopmat_nv)

/* A byte range of device memory: of a tensor (tensor set; offset from its first byte, size 0 means
 * to the end of its extent, ggml_nbytes), or of a buffer of the device such as the plan workspace
 * (tensor NULL, buffer set; offset from the buffer's start, size 0 means to its end). */
struct ggml_ext_vulkan_range {
    const struct ggml_tensor * tensor;
    ggml_backend_buffer_t buffer;
    size_t offset;
    size_t size;
};

/* Where a range is. Equal storage values mean the same device memory, so two ranges alias exactly
 * when their storage is equal and [begin, end) intersect. A binding starts at descriptor_offset
 * (begin rounded down to storage_offset_alignment); the range's first byte is shader_offset bytes
 * into the binding, which the shader must add. */
struct ggml_ext_vulkan_buffer_info {
    uint64_t storage;
    uint64_t begin, end;
    uint64_t descriptor_offset;
    uint32_t shader_offset;
};

struct ggml_ext_vulkan_binding {
    struct ggml_ext_vulkan_range range;
    bool written; /* the shader writes it (orders later readers and writers after this dispatch) */
};

struct ggml_ext_vulkan_dispatch {
    size_t struct_size;     /* sizeof(struct ggml_ext_vulkan_dispatch) */
    const char * name;      /* for error messages */
    const uint32_t * spirv; /* a compute module with entry point "main" */
    size_t spirv_bytes;
    /* Storage buffers at bindings 0 .. n_bindings - 1 of descriptor set 0. */
    const struct ggml_ext_vulkan_binding * bindings;
    uint32_t n_bindings;
    const uint32_t * constants; /* specialisation constants, ids 0 .. n_constants - 1 (copied) */
    uint32_t n_constants;
    const void * push_constants; /* copied; a multiple of 4 bytes, at most max_push_constants */
    uint32_t push_constants_bytes;
    uint32_t groups[3]; /* workgroup counts, each 1 .. max_workgroup_count */
};

struct ggml_ext_vulkan_v1 {
    size_t struct_size; /* of this table, as provided by the runtime */
    uint32_t version;   /* GGML_EXT_VULKAN_V1_VERSION */
    /* The device's limits and capabilities, at most info->struct_size bytes of them; false (error
     * set) for a non-Vulkan device or a struct_size below GGML_EXT_VULKAN_DEVICE_INFO_V1_SIZE. */
    bool (*device_info)(ggml_backend_dev_t device, struct ggml_ext_vulkan_device_info * info);
    /* Resolves range on backend's device; false (error set) when it is empty, outside its tensor or
     * buffer, or in memory of another device. */
    bool (*buffer_info)(ggml_backend_t backend, const struct ggml_ext_vulkan_range * range,
                        struct ggml_ext_vulkan_buffer_info * info);
    /* Inside an execute callback: records the dispatch. The pipeline is created on first use and
     * cached per device for the device's lifetime. FAILED (error set, nothing recorded) for an
     * invalid range, a binding larger than max_storage_range, too many bindings, constants or push
     * constant bytes, a workgroup count outside the limits, missing SPIR-V, a module the driver
     * rejects, or a call outside an execute callback. */
    enum ggml_status (*dispatch)(ggml_backend_t backend, const struct ggml_ext_vulkan_dispatch * dispatch);
    /* Inside an execute callback: records a copy of src into dst. FAILED (error set, nothing
     * recorded) unless both are valid ranges of the device, of equal size, 4-byte aligned in offset
     * and size, and do not overlap. */
    enum ggml_status (*copy)(ggml_backend_t backend, const struct ggml_ext_vulkan_range * dst,
                             const struct ggml_ext_vulkan_range * src);
};

#ifdef __cplusplus
}
#endif

#endif /* GGML_EXT_VULKAN_H */
