/* ggx — the Vulkan backend (see docs/vulkan.md). */
#ifndef GGML_VULKAN_H
#define GGML_VULKAN_H

#include "ggml-backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The Vulkan registry ("Vulkan"): one device per usable Vulkan physical device, named "Vulkan0",
 * "Vulkan1", ... in the loader's order (VK_ICD_FILENAMES chooses drivers; GGX_VULKAN_DEVICES, a
 * comma-separated list of physical-device indices, restricts and orders them). A device is usable
 * when it has a compute queue and 16-bit storage-buffer access. */
ggml_backend_reg_t ggml_backend_vk_reg(void);
/* Number of Vulkan devices, and a new backend on device index (NULL with an error if none). */
int ggml_backend_vk_get_device_count(void);
ggml_backend_t ggml_backend_vk_init(size_t device_index);
bool ggml_backend_is_vk(ggml_backend_t backend);
/* Device memory of device index (NULL if none). */
ggml_backend_buffer_type_t ggml_backend_vk_buffer_type(size_t device_index);
/* The description (the driver's device name) of device, written into description (at most
 * description_size bytes with the terminator; "" for no such device). */
void ggml_backend_vk_get_device_description(int device, char * description, size_t description_size);
/* Free and total device-local memory of device (0 for no such device). */
void ggml_backend_vk_get_device_memory(int device, size_t * free, size_t * total);
/* Pinned host memory of the first device ("Vulkan0_Host", is_host): buffers the host and the CPU
 * backend use directly and that stage transfers to the devices. NULL without a Vulkan device. */
ggml_backend_buffer_type_t ggml_backend_vk_host_buffer_type(void);

#ifdef __cplusplus
}
#endif

#endif /* GGML_VULKAN_H */
