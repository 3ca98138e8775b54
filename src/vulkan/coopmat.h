// Cooperative-matrix support (VK_NV_cooperative_matrix and VK_KHR_cooperative_matrix) as the
// extension service reports it. The KHR extension is queried even with Vulkan headers older than
// 1.3.255, which lack its types: the mirror below follows the specification's definitions.
#pragma once

#include <ggml-ext-vulkan.h>
#include <vulkan/vulkan.h>

#include <cstdint>

#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_cooperative_matrix 1
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"

// Extension number 507: structure types 1000000000 + 506 * 1000 + n.
inline constexpr VkStructureType VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR =
    static_cast<VkStructureType>(1000506000);
inline constexpr VkStructureType VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR =
    static_cast<VkStructureType>(1000506001);
inline constexpr VkStructureType VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR =
    static_cast<VkStructureType>(1000506002);

enum VkComponentTypeKHR : int32_t {
    VK_COMPONENT_TYPE_FLOAT16_KHR = 0,
    VK_COMPONENT_TYPE_FLOAT32_KHR = 1,
    VK_COMPONENT_TYPE_FLOAT64_KHR = 2,
    VK_COMPONENT_TYPE_SINT8_KHR = 3,
    VK_COMPONENT_TYPE_SINT16_KHR = 4,
    VK_COMPONENT_TYPE_SINT32_KHR = 5,
    VK_COMPONENT_TYPE_SINT64_KHR = 6,
    VK_COMPONENT_TYPE_UINT8_KHR = 7,
    VK_COMPONENT_TYPE_UINT16_KHR = 8,
    VK_COMPONENT_TYPE_UINT32_KHR = 9,
    VK_COMPONENT_TYPE_UINT64_KHR = 10,
};

enum VkScopeKHR : int32_t {
    VK_SCOPE_DEVICE_KHR = 1,
    VK_SCOPE_WORKGROUP_KHR = 2,
    VK_SCOPE_SUBGROUP_KHR = 3,
    VK_SCOPE_QUEUE_FAMILY_KHR = 5,
};

struct VkCooperativeMatrixPropertiesKHR {
    VkStructureType sType;
    void * pNext;
    uint32_t MSize;
    uint32_t NSize;
    uint32_t KSize;
    VkComponentTypeKHR AType;
    VkComponentTypeKHR BType;
    VkComponentTypeKHR CType;
    VkComponentTypeKHR ResultType;
    VkBool32 saturatingAccumulation;
    VkScopeKHR scope;
};

struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
    VkStructureType sType;
    void * pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
};

struct VkPhysicalDeviceCooperativeMatrixPropertiesKHR {
    VkStructureType sType;
    void * pNext;
    VkShaderStageFlags cooperativeMatrixSupportedStages;
};

#endif

namespace ggx::vulkan {

// One driver-reported shape in the service's representation.
ggml_ext_vulkan_coopmat_shape coopmat_shape(const VkCooperativeMatrixPropertiesKHR & properties);
ggml_ext_vulkan_coopmat_shape coopmat_shape(const VkCooperativeMatrixPropertiesNV & properties);
// The first revision's NV-only entry for a shape of the NV extension.
ggml_ext_vulkan_coopmat legacy_coopmat(const ggml_ext_vulkan_coopmat_shape & shape);

}  // namespace ggx::vulkan
