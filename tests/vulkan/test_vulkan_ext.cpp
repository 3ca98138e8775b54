// ggml_ext_vulkan_v1 (ggml-ext-vulkan.h, spec "Vulkan execution services"): device information,
// range resolution, application SPIR-V dispatches and copies recorded in the backend's command
// buffer in order with native work, and the validation of every kind of bad range or dispatch.
// The extension kernels are a SCALE override dispatching tests/vulkan/ext_scale.comp and a DUP
// override built on the copy service.
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext-params.h>
#include <ggml-ext-vulkan.h>
#include <ggml-ext.h>
#include <ggml-vulkan.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "support/check_util.h"
#include "support/test_util.h"
#include "vulkan/backend.h"
#include "vulkan/coopmat.h"
#include "vulkan/ext_shader.h"
#include "vulkan/vulkan_fixture.h"

namespace ggx::test {
namespace {

ggml_ext_vulkan_range range_of(const ggml_tensor * t, size_t offset = 0, size_t size = 0) {
    return {t, nullptr, offset, size};
}

bool contiguous_f32_pair(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && a->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && ggml_is_contiguous(a) &&
           ggml_is_contiguous(node) && ggml_are_same_shape(a, node);
}

// A hook the SCALE kernel runs inside execute before its own dispatch (for the negative tests);
// when it returns false the kernel fails.
std::function<bool(ggml_backend_t, const ggml_tensor *)> & probe() {
    static std::function<bool(ggml_backend_t, const ggml_tensor *)> hook;
    return hook;
}

// y = x * scale + bias through ext_scale.comp, 64 elements per workgroup.
ggml_status execute_scale(const ggml_ext_execute_params * params) {
    const ggml_tensor *y = params->node, *x = y->src[0];
    if (probe() && !probe()(params->backend, y)) {
        ggml_ext_set_error("the probe failed the kernel");
        return GGML_STATUS_FAILED;
    }
    const ggml_ext_vulkan_v1 * svc = service();
    const ggml_ext_vulkan_range xr = range_of(x), yr = range_of(y);
    ggml_ext_vulkan_buffer_info xi, yi;
    if (!svc->buffer_info(params->backend, &xr, &xi) || !svc->buffer_info(params->backend, &yr, &yi))
        return GGML_STATUS_FAILED;
    struct {
        uint32_t n, x_offset, y_offset;
        float scale, bias;
    } push{static_cast<uint32_t>(ggml_nelements(y)), xi.shader_offset / 4, yi.shader_offset / 4, 0.0f, 0.0f};
    ggml_ext_scale_params scale{};
    ggml_ext_get_op_params(y, GGML_OP_SCALE, &scale, sizeof scale);
    push.scale = scale.scale;
    push.bias = scale.bias;
    const ggml_ext_vulkan_binding bindings[] = {{xr, false}, {yr, true}};
    const uint32_t add_bias = push.bias != 0.0f;
    ggml_ext_vulkan_dispatch d{
        sizeof d, "ext_scale", scale_spirv().data(), scale_spirv().size() * 4,  bindings, 2, &add_bias,
        1,        &push,       sizeof push,          {(push.n + 63) / 64, 1, 1}};
    return svc->dispatch(params->backend, &d);
}

ggml_status execute_dup(const ggml_ext_execute_params * params) {
    const ggml_ext_vulkan_range dst = range_of(params->node), src = range_of(params->node->src[0]);
    return service()->copy(params->backend, &dst, &src);
}

ggml_ext_kernel_desc scale_kernel() {
    ggml_ext_kernel_desc d{};
    d.struct_size = sizeof d;
    d.version = GGML_EXT_KERNEL_DESC_VERSION;
    d.name = "test.scale.vulkan";
    d.op = GGML_OP_SCALE;
    d.supports = [](ggml_backend_dev_t, const ggml_tensor * node, void *) {
        return contiguous_f32_pair(node);
    };
    d.preferred = [](ggml_backend_dev_t, const ggml_tensor *, void *) { return true; };
    d.execute = execute_scale;
    return d;
}

ggml_ext_kernel_desc dup_kernel() {
    ggml_ext_kernel_desc d{};
    d.struct_size = sizeof d;
    d.version = GGML_EXT_KERNEL_DESC_VERSION;
    d.name = "test.dup.vulkan";
    d.op = GGML_OP_DUP;
    d.supports = [](ggml_backend_dev_t, const ggml_tensor * node, void *) {
        return contiguous_f32_pair(node) && ggml_nbytes(node) % 4 == 0;
    };
    d.preferred = [](ggml_backend_dev_t, const ggml_tensor *, void *) { return true; };
    d.execute = execute_dup;
    return d;
}

class VulkanExt : public VulkanTest {
protected:
    static void SetUpTestSuite() {
        if (ggml_backend_vk_get_device_count() == 0) return;
        ggml_backend_dev_t dev = ggml_backend_dev_by_name("Vulkan0");
        const ggml_ext_kernel_desc scale = scale_kernel(), dup = dup_kernel();
        ASSERT_TRUE(ggml_ext_register_kernel(dev, &scale)) << ggml_backend_get_last_error();
        ASSERT_TRUE(ggml_ext_register_kernel(dev, &dup)) << ggml_backend_get_last_error();
    }
    void TearDown() override { probe() = nullptr; }

    // Computes out's graph as a scheduled plan: through a scheduler over Vulkan0 and the CPU (the
    // tensors are already in Vulkan memory, so every node runs there).
    ggml_status scheduled_compute(ggml_tensor * out) {
        ggml_cgraph * graph = ggml_new_graph_custom(ctx(), 512, false);
        ggml_build_forward_expand(graph, out);
        return scheduled_compute(graph);
    }
    ggml_status scheduled_compute(ggml_cgraph * graph) {
        Backend cpu(ggml_backend_cpu_init());
        ggml_backend_t backends[] = {vk(), cpu.get()};
        Sched sched(ggml_backend_sched_new(backends, nullptr, 2, 512, false, false));
        if (!ggml_backend_sched_alloc_graph(sched.get(), graph)) return GGML_STATUS_ALLOC_FAILED;
        return ggml_backend_sched_graph_compute(sched.get(), graph);
    }
};

TEST_F(VulkanExt, ServiceIsVersionedAndReportsTheDevice) {
    const ggml_ext_vulkan_v1 * svc = service();
    ASSERT_NE(svc, nullptr);
    EXPECT_GE(svc->struct_size, sizeof *svc);
    EXPECT_EQ(svc->version, GGML_EXT_VULKAN_V1_VERSION);
    ggml_ext_vulkan_device_info info{};
    info.struct_size = sizeof info;
    ASSERT_TRUE(svc->device_info(ggml_backend_get_device(vk()), &info));
    EXPECT_EQ(info.max_bindings, 8u);
    EXPECT_EQ(info.max_push_constants, 128u);
    EXPECT_TRUE(info.storage_buffer_16bit);
    EXPECT_GT(info.subgroup_size, 0u);
    EXPECT_LE(info.min_subgroup_size, info.subgroup_size);
    EXPECT_GE(info.max_subgroup_size, info.subgroup_size);
    EXPECT_GE(info.max_workgroup_count[0], 65535u);
    EXPECT_GE(info.max_shared_memory, 16384u);
    EXPECT_GT(info.max_storage_range, 0u);
    EXPECT_LE(info.n_coopmat, static_cast<uint32_t>(GGML_EXT_VULKAN_MAX_COOPMAT));

    EXPECT_FALSE(svc->device_info(ggml_backend_dev_by_name("CPU"), &info));
    info.struct_size = 8;
    EXPECT_FALSE(svc->device_info(ggml_backend_get_device(vk()), &info));
    info.struct_size = GGML_EXT_VULKAN_DEVICE_INFO_V1_SIZE - 1;
    EXPECT_FALSE(svc->device_info(ggml_backend_get_device(vk()), &info));
}

ggml_ext_vulkan_device_info full_device_info(ggml_backend_dev_t device) {
    ggml_ext_vulkan_device_info info{};
    info.struct_size = sizeof info;
    EXPECT_TRUE(service()->device_info(device, &info)) << ggml_backend_get_last_error();
    EXPECT_EQ(info.struct_size, sizeof info);
    return info;
}

TEST_F(VulkanExt, DeviceInfoReportsCooperativeMatricesOfTheEnabledExtensions) {
    const ggml_backend_dev_t device = ggml_backend_get_device(vk());
    const ggml_ext_vulkan_device_info info = full_device_info(device);
    ASSERT_LE(info.n_coopmat_shapes, static_cast<uint32_t>(GGML_EXT_VULKAN_MAX_COOPMAT_SHAPES));
    uint32_t n_nv = 0;
    for (uint32_t i = 0; i < info.n_coopmat_shapes; ++i) {
        const ggml_ext_vulkan_coopmat_shape & s = info.coopmat_shapes[i];
        EXPECT_TRUE(s.source == GGML_EXT_VULKAN_COOPMAT_KHR ? info.coopmat_khr : info.coopmat_nv) << i;
        EXPECT_TRUE(s.m > 0 && s.n > 0 && s.k > 0) << i;
        if (s.source == GGML_EXT_VULKAN_COOPMAT_NV) {
            EXPECT_FALSE(s.saturating_accumulation);
            if (n_nv < info.n_coopmat) {
                const ggml_ext_vulkan_coopmat & legacy = info.coopmat[n_nv];
                EXPECT_EQ(legacy.m, s.m);
                EXPECT_EQ(legacy.result_type, s.result_type);
            }
            ++n_nv;
        }
    }
    // The first revision's list holds the NV shapes alone.
    EXPECT_EQ(info.n_coopmat, std::min<uint32_t>(n_nv, GGML_EXT_VULKAN_MAX_COOPMAT));
    EXPECT_EQ(info.coopmat_khr_stages != 0, info.coopmat_khr);
    if (std::string(ggml_backend_dev_description(device)).starts_with("llvmpipe")) {
        // lavapipe (CI) has neither extension.
        EXPECT_FALSE(info.coopmat_nv);
        EXPECT_FALSE(info.coopmat_khr);
        EXPECT_EQ(info.n_coopmat_shapes, 0u);
        EXPECT_EQ(info.n_coopmat, 0u);
    }
}

TEST_F(VulkanExt, DeviceInfoFillsAnOlderStructAndNothingPastIt) {
    const ggml_backend_dev_t device = ggml_backend_get_device(vk());
    const ggml_ext_vulkan_device_info full = full_device_info(device);
    constexpr size_t v1 = GGML_EXT_VULKAN_DEVICE_INFO_V1_SIZE;
    static_assert(v1 < sizeof(ggml_ext_vulkan_device_info));
    std::vector<unsigned char> bytes(sizeof(ggml_ext_vulkan_device_info) + 64, 0xAB);
    auto * old = reinterpret_cast<ggml_ext_vulkan_device_info *>(bytes.data());
    old->struct_size = v1;
    ASSERT_TRUE(service()->device_info(device, old)) << ggml_backend_get_last_error();
    EXPECT_EQ(old->struct_size, v1);
    EXPECT_EQ(
        std::memcmp(bytes.data() + sizeof(size_t),
                    reinterpret_cast<const unsigned char *>(&full) + sizeof(size_t), v1 - sizeof(size_t)),
        0);
    for (size_t i = v1; i < bytes.size(); ++i)
        ASSERT_EQ(bytes[i], 0xAB) << "byte " << i << " written past struct_size " << v1;

    // A caller from a later revision gets this revision's bytes and struct_size.
    std::fill(bytes.begin(), bytes.end(), 0xAB);
    old->struct_size = bytes.size();
    ASSERT_TRUE(service()->device_info(device, old));
    EXPECT_EQ(old->struct_size, sizeof(ggml_ext_vulkan_device_info));
    for (size_t i = sizeof(ggml_ext_vulkan_device_info); i < bytes.size(); ++i)
        ASSERT_EQ(bytes[i], 0xAB) << "byte " << i;
}

TEST(VulkanCoopmat, KhrPropertiesBecomeShapesOfTheKhrExtension) {
    VkCooperativeMatrixPropertiesKHR p{.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR,
                                       .pNext = nullptr,
                                       .MSize = 16,
                                       .NSize = 8,
                                       .KSize = 32,
                                       .AType = VK_COMPONENT_TYPE_SINT8_KHR,
                                       .BType = VK_COMPONENT_TYPE_UINT8_KHR,
                                       .CType = VK_COMPONENT_TYPE_SINT32_KHR,
                                       .ResultType = VK_COMPONENT_TYPE_SINT32_KHR,
                                       .saturatingAccumulation = VK_TRUE,
                                       .scope = VK_SCOPE_SUBGROUP_KHR};
    const ggml_ext_vulkan_coopmat_shape s = vulkan::coopmat_shape(p);
    EXPECT_EQ(s.source, static_cast<uint32_t>(GGML_EXT_VULKAN_COOPMAT_KHR));
    EXPECT_EQ(s.m, 16u);
    EXPECT_EQ(s.n, 8u);
    EXPECT_EQ(s.k, 32u);
    EXPECT_EQ(s.a_type, 3u);
    EXPECT_EQ(s.b_type, 7u);
    EXPECT_EQ(s.c_type, 5u);
    EXPECT_EQ(s.result_type, 5u);
    EXPECT_TRUE(s.saturating_accumulation);
    EXPECT_EQ(s.scope, 3u);
    p.saturatingAccumulation = VK_FALSE;
    EXPECT_FALSE(vulkan::coopmat_shape(p).saturating_accumulation);
}

TEST(VulkanCoopmat, NvPropertiesBecomeShapesAndFirstRevisionEntries) {
    const VkCooperativeMatrixPropertiesNV p{.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV,
                                            .pNext = nullptr,
                                            .MSize = 16,
                                            .NSize = 16,
                                            .KSize = 8,
                                            .AType = VK_COMPONENT_TYPE_FLOAT16_NV,
                                            .BType = VK_COMPONENT_TYPE_FLOAT16_NV,
                                            .CType = VK_COMPONENT_TYPE_FLOAT32_NV,
                                            .DType = VK_COMPONENT_TYPE_FLOAT32_NV,
                                            .scope = VK_SCOPE_SUBGROUP_NV};
    const ggml_ext_vulkan_coopmat_shape s = vulkan::coopmat_shape(p);
    EXPECT_EQ(s.source, static_cast<uint32_t>(GGML_EXT_VULKAN_COOPMAT_NV));
    EXPECT_EQ(s.k, 8u);
    EXPECT_EQ(s.a_type, static_cast<uint32_t>(VK_COMPONENT_TYPE_FLOAT16_KHR));
    EXPECT_EQ(s.result_type, static_cast<uint32_t>(VK_COMPONENT_TYPE_FLOAT32_KHR));
    EXPECT_EQ(s.scope, static_cast<uint32_t>(VK_SCOPE_SUBGROUP_KHR));
    EXPECT_FALSE(s.saturating_accumulation);
    const ggml_ext_vulkan_coopmat legacy = vulkan::legacy_coopmat(s);
    EXPECT_EQ(legacy.m, 16u);
    EXPECT_EQ(legacy.n, 16u);
    EXPECT_EQ(legacy.k, 8u);
    EXPECT_EQ(legacy.a_type, s.a_type);
    EXPECT_EQ(legacy.b_type, s.b_type);
    EXPECT_EQ(legacy.c_type, s.c_type);
    EXPECT_EQ(legacy.result_type, s.result_type);
    EXPECT_EQ(legacy.scope, s.scope);
}

TEST_F(VulkanExt, BufferInfoGivesStorageRangesAndShaderOffsets) {
    ggml_tensor * a = input(100, 4);
    alloc();
    const ggml_ext_vulkan_v1 * svc = service();
    ggml_tensor * row = ggml_view_1d(ctx(), a, 100, a->nb[1]);  // row 1: 400 bytes in
    ggml_backend_view_init(row);
    ggml_ext_vulkan_buffer_info whole, second, part;
    const ggml_ext_vulkan_range r_whole = range_of(a), r_row = range_of(row), r_part = range_of(a, 12, 8);
    ASSERT_TRUE(svc->buffer_info(vk(), &r_whole, &whole));
    ASSERT_TRUE(svc->buffer_info(vk(), &r_row, &second));
    ASSERT_TRUE(svc->buffer_info(vk(), &r_part, &part));
    EXPECT_EQ(whole.storage, second.storage);
    EXPECT_EQ(whole.end - whole.begin, ggml_nbytes(a));
    EXPECT_EQ(second.begin, whole.begin + 400);
    EXPECT_EQ(part.begin, whole.begin + 12);
    EXPECT_EQ(part.end, whole.begin + 20);
    ggml_ext_vulkan_device_info info{};
    info.struct_size = sizeof info;
    ASSERT_TRUE(svc->device_info(ggml_backend_get_device(vk()), &info));
    for (const ggml_ext_vulkan_buffer_info & i : {whole, second, part}) {
        EXPECT_EQ(i.descriptor_offset % info.storage_offset_alignment, 0u);
        EXPECT_EQ(i.descriptor_offset + i.shader_offset, i.begin);
        EXPECT_LT(i.shader_offset, info.storage_offset_alignment);
    }
    // A plain buffer of the device (as the plan workspace is) resolves too.
    Buffer scratch(ggml_backend_buft_alloc_buffer(ggml_backend_vk_buffer_type(0), 1024));
    const ggml_ext_vulkan_range r_scratch{nullptr, scratch.get(), 64, 0};
    ggml_ext_vulkan_buffer_info s;
    ASSERT_TRUE(svc->buffer_info(vk(), &r_scratch, &s));
    EXPECT_NE(s.storage, whole.storage);
    EXPECT_EQ(s.end - s.begin, 1024u - 64u);
}

TEST_F(VulkanExt, BufferInfoRejectsEmptyOutsideAndForeignRanges) {
    ggml_tensor * a = input(16);
    alloc();
    Context host_ctx(ggml_init({size_t{1} << 16, nullptr, true}));
    ggml_tensor * h = ggml_new_tensor_1d(host_ctx.get(), GGML_TYPE_F32, 16);
    Buffer host(ggml_backend_alloc_ctx_tensors(host_ctx.get(), cpu_backend()));
    const ggml_ext_vulkan_v1 * svc = service();
    ggml_ext_vulkan_buffer_info info;
    const struct {
        ggml_ext_vulkan_range range;
        const char * why;
    } bad[] = {{range_of(a, 64), "outside"},
               {range_of(a, 60, 8), "outside"},
               {range_of(h), "not on this Vulkan"},
               {{nullptr, nullptr, 0, 0}, "neither"},
               {range_of(ggml_new_tensor_1d(ctx(), GGML_TYPE_F32, 4)), "not allocated"}};
    for (const auto & b : bad) {
        EXPECT_FALSE(svc->buffer_info(vk(), &b.range, &info)) << b.why;
        EXPECT_TRUE(contains(ggml_backend_get_last_error(), b.why)) << ggml_backend_get_last_error();
    }
    const ggml_ext_vulkan_range good = range_of(a);
    EXPECT_FALSE(svc->buffer_info(cpu_backend(), &good, &info));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "not a Vulkan backend"));
}

// add (native) -> scale (the extension's SPIR-V) -> mul (native) -> dup (the copy service). A
// scheduled plan records them all in one command buffer and one submission, ordered by barriers; a
// direct ggml_backend_graph_compute keeps fragment execution: each of the four fragments is
// submitted (and completed) on its own. Both give the same values.
TEST_F(VulkanExt, ScheduledPlansBatchFragmentsAndDirectCallsSubmitEachFragment) {
    ggml_tensor * a = input(1000, 3);
    ggml_tensor * b = input(1000, 3);
    ggml_tensor * scaled = ggml_scale_bias(ctx(), ggml_add(ctx(), a, b), 3.0f, 1.0f);
    ggml_tensor * out = ggml_dup(ctx(), ggml_mul(ctx(), scaled, a));
    alloc();
    EXPECT_STREQ(ggml_ext_dev_selected_kernel(ggml_backend_get_device(vk()), scaled), "test.scale.vulkan");
    const std::vector<float> va = ramp(3000, -1.0f, 0.001f), vb = ramp(3000, 2.0f, -0.0005f);
    write_f32(a, va);
    write_f32(b, vb);
    const auto expect_values = [&] {
        const std::vector<float> got = read_f32(out);
        for (size_t i = 0; i < got.size(); ++i) {
            const float want = ((va[i] + vb[i]) * 3.0f + 1.0f) * va[i];
            ASSERT_NEAR(got[i], want, 1e-5f * (1.0f + std::fabs(want))) << i;
        }
    };
    size_t before = vk_impl().total_submissions();
    ASSERT_EQ(scheduled_compute(out), GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_EQ(vk_impl().last_dispatches(), 3u);  // add, scale, mul; the dup is a copy command
    EXPECT_EQ(vk_impl().last_barriers(), 3u);
    EXPECT_EQ(vk_impl().total_submissions() - before, 1u);
    expect_values();

    write_f32(out, std::vector<float>(3000, -1.0f));
    before = vk_impl().total_submissions();
    ASSERT_EQ(compute(out), GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_EQ(vk_impl().total_submissions() - before, 4u);
    expect_values();
}

// Native dispatches and the extension's count toward one submission threshold in a scheduled plan:
// 60 extension scales and 60 native adds are 120 commands, so one early submission and one at the
// end. A direct call submits each of its 120 fragments instead.
TEST_F(VulkanExt, NativeAndExtensionCommandsShareTheSubmissionCounter) {
    ggml_tensor * x = input(32);
    ggml_tensor * one = input(32);
    ggml_tensor * y = x;
    for (int i = 0; i < 60; ++i)
        y = ggml_add(ctx(), ggml_scale(ctx(), y, 0.5f), one);
    alloc();
    write_f32(x, std::vector<float>(32, 2.0f));
    write_f32(one, std::vector<float>(32, 1.0f));
    size_t before = vk_impl().total_submissions();
    ASSERT_EQ(scheduled_compute(y), GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_EQ(vk_impl().last_dispatches(), 120u);
    EXPECT_EQ(vk_impl().total_submissions() - before, 2u);
    EXPECT_EQ(read_f32(y), std::vector<float>(32, 2.0f));  // 2 is the fixed point of x / 2 + 1

    ggml_cgraph * graph = ggml_new_graph_custom(ctx(), 256, false);
    ggml_build_forward_expand(graph, y);
    before = vk_impl().total_submissions();
    ASSERT_EQ(ggml_backend_graph_compute(vk(), graph), GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_EQ(vk_impl().total_submissions() - before, 120u);
    EXPECT_EQ(read_f32(y), std::vector<float>(32, 2.0f));
}

// An extension kernel for the MUL_MATs named "flops*" that records one copy each (its values do not
// matter here): the products' matrix FLOPs count toward the submission threshold as native ones do.
ggml_ext_kernel_desc flops_kernel() {
    ggml_ext_kernel_desc d{};
    d.struct_size = sizeof d;
    d.version = GGML_EXT_KERNEL_DESC_VERSION;
    d.name = "test.mul_mat_copy.vulkan";
    d.op = GGML_OP_MUL_MAT;
    d.supports = [](ggml_backend_dev_t, const ggml_tensor * node, void *) {
        return std::string(node->name).starts_with("flops");
    };
    d.preferred = [](ggml_backend_dev_t, const ggml_tensor *, void *) { return true; };
    d.execute = [](const ggml_ext_execute_params * params) {
        const ggml_ext_vulkan_range dst = range_of(params->node),
                                    src = range_of(params->node->src[1], 0, ggml_nbytes(params->node));
        return service()->copy(params->backend, &dst, &src);
    };
    return d;
}

// Four extension products of 2 * 4096 * 512 * 512 = 2.1 GFLOP each, four commands: the 4 GFLOP
// threshold submits after the second and the fourth, with nothing left for the end of the plan.
TEST_F(VulkanExt, ExtensionStepsCountTowardTheFlopThreshold) {
    static const bool registered = [] {
        const ggml_ext_kernel_desc d = flops_kernel();
        return ggml_ext_register_kernel(ggml_backend_dev_by_name("Vulkan0"), &d);
    }();
    ASSERT_TRUE(registered) << ggml_backend_get_last_error();
    ggml_tensor * a = input(4096, 512);
    ggml_tensor * b = input(4096, 512);
    ggml_cgraph * graph = ggml_new_graph(ctx());
    for (int i = 0; i < 4; ++i) {
        ggml_tensor * product = ggml_mul_mat(ctx(), a, b);
        ggml_format_name(product, "flops%d", i);
        ggml_build_forward_expand(graph, product);
    }
    alloc();
    ASSERT_STREQ(ggml_ext_dev_selected_kernel(ggml_backend_get_device(vk()), ggml_graph_node(graph, 0)),
                 "test.mul_mat_copy.vulkan");
    ASSERT_GT(2.0 * 4096 * 512 * 512 * 2, vulkan::Backend::kSubmitFlops);
    ASSERT_LT(2.0 * 4096 * 512 * 512, vulkan::Backend::kSubmitFlops);
    const size_t before = vk_impl().total_submissions();
    ASSERT_EQ(scheduled_compute(graph), GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_EQ(vk_impl().last_dispatches(), 0u);
    EXPECT_EQ(vk_impl().total_submissions() - before, 2u);
}

// With an eval callback the scheduler runs node by node, each fragment submitted on its own: the
// callback sees every result, the extension's included, when it is asked.
TEST_F(VulkanExt, EvalCallbacksSeeEachFragmentsResults) {
    Context c(ggml_init({size_t{1} << 20, nullptr, true}));
    ggml_tensor * a = ggml_new_tensor_1d(c.get(), GGML_TYPE_F32, 100);
    ggml_set_input(a);
    ggml_tensor * scaled = ggml_scale(c.get(), a, 3.0f);  // the extension kernel
    ggml_set_name(scaled, "scaled");
    ggml_tensor * y = ggml_add(c.get(), scaled, a);
    ggml_set_output(y);
    ggml_cgraph * graph = ggml_new_graph(c.get());
    ggml_build_forward_expand(graph, y);
    Backend cpu(ggml_backend_cpu_init());
    ggml_backend_t backends[] = {vk(), cpu.get()};
    Sched sched(ggml_backend_sched_new(backends, nullptr, 2, 256, false, false));
    std::vector<float> seen;
    const auto callback = [](ggml_tensor * t, bool ask, void * data) {
        if (ask) return std::strcmp(t->name, "scaled") == 0;
        *static_cast<std::vector<float> *>(data) = read_f32(t);
        return true;
    };
    ggml_backend_sched_set_eval_callback(sched.get(), callback, &seen);
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), graph)) << ggml_backend_get_last_error();
    write_f32(a, ramp(100, -1.0f, 0.02f));
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    const std::vector<float> in = ramp(100, -1.0f, 0.02f);
    ASSERT_EQ(seen.size(), in.size());
    for (size_t i = 0; i < in.size(); ++i)
        EXPECT_FLOAT_EQ(seen[i], in[i] * 3.0f) << i;
}

TEST_F(VulkanExt, SchedulerOverVulkanAndCpuRunsTheExtensionKernels) {
    Context c(ggml_init({size_t{1} << 20, nullptr, true}));
    ggml_tensor * a = ggml_new_tensor_1d(c.get(), GGML_TYPE_F32, 777);
    ggml_set_input(a);
    ggml_tensor * y = ggml_dup(c.get(), ggml_scale(c.get(), ggml_sqr(c.get(), a), 0.5f));
    ggml_set_output(y);
    ggml_cgraph * graph = ggml_new_graph(c.get());
    ggml_build_forward_expand(graph, y);
    Backend cpu(ggml_backend_cpu_init());
    ggml_backend_t backends[] = {vk(), cpu.get()};
    Sched sched(ggml_backend_sched_new(backends, nullptr, 2, 256, false, false));
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), graph)) << ggml_backend_get_last_error();
    const std::vector<float> v = ramp(777, -2.0f, 0.005f);
    write_f32(a, v);
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    const std::vector<float> got = read_f32(y);
    for (size_t i = 0; i < got.size(); ++i)
        ASSERT_FLOAT_EQ(got[i], v[i] * v[i] * 0.5f) << i;
}

TEST_F(VulkanExt, ExtensionKernelsPassTheConformanceCheck) {
    const auto build_scale = [](ggml_context * c, ggml_tensor ** in, int, void *) {
        return ggml_scale_bias(c, in[0], -1.25f, 0.5f);
    };
    const auto build_dup = [](ggml_context * c, ggml_tensor ** in, int, void *) {
        return ggml_dup(c, in[0]);
    };
    for (auto [kernel, build] :
         {std::pair{scale_kernel(), +build_scale}, std::pair{dup_kernel(), +build_dup}}) {
        std::vector<ggml_ext_check_case> cases;
        for (const auto & ne : {std::array<int64_t, 4>{1, 1, 1, 1}, {37, 3, 1, 1}, {1000, 2, 3, 1}}) {
            ggml_ext_check_case c = check_case(nullptr, {{GGML_TYPE_F32, ne}});
            c.build = build;
            cases.push_back(c);
        }
        const CheckResult check = check_kernel(vk(), &kernel, cases, 1e-12, 5);
        const ggml_ext_check_report & report = check.report;
        EXPECT_TRUE(check.passed) << kernel.name << ": " << report.first_failure;
        EXPECT_EQ(report.n_passed, 3) << kernel.name;
    }
}

// Each kind of bad dispatch or copy fails with its reason and records nothing; the kernel's own
// dispatch after them still gives the right result.
TEST_F(VulkanExt, DispatchAndCopyRejectEachKindOfBadRequest) {
    ggml_tensor * a = input(256);
    ggml_tensor * y = ggml_scale(ctx(), a, 2.0f);
    ggml_tensor * other = input(300);
    alloc();
    Context host_ctx(ggml_init({size_t{1} << 16, nullptr, true}));
    ggml_tensor * h = ggml_new_tensor_1d(host_ctx.get(), GGML_TYPE_F32, 256);
    Buffer host(ggml_backend_alloc_ctx_tensors(host_ctx.get(), cpu_backend()));
    std::vector<std::string> errors;
    probe() = [&](ggml_backend_t backend, const ggml_tensor *) {
        const ggml_ext_vulkan_v1 * svc = service();
        const std::vector<uint32_t> & spirv = scale_spirv();
        const ggml_ext_vulkan_binding good[] = {{range_of(a), false}, {range_of(y), true}};
        const uint32_t push[5] = {256, 0, 0, 0, 0};
        const auto base = [&] {
            return ggml_ext_vulkan_dispatch{sizeof(ggml_ext_vulkan_dispatch),
                                            "bad",
                                            spirv.data(),
                                            spirv.size() * 4,
                                            good,
                                            2,
                                            nullptr,
                                            0,
                                            push,
                                            sizeof push,
                                            {4, 1, 1}};
        };
        const auto try_dispatch = [&](ggml_ext_vulkan_dispatch d) {
            errors.push_back(svc->dispatch(backend, &d) == GGML_STATUS_SUCCESS
                                 ? "accepted"
                                 : ggml_backend_get_last_error());
        };
        ggml_ext_vulkan_dispatch d = base();
        d.n_bindings = 9;
        try_dispatch(d);  // too many bindings
        d = base();
        d.push_constants_bytes = 6;
        try_dispatch(d);  // push bytes not a multiple of 4
        d = base();
        d.push_constants_bytes = 132;
        try_dispatch(d);  // too many push bytes
        d = base();
        d.groups[0] = 0;
        try_dispatch(d);  // no workgroups
        d = base();
        d.groups[1] = UINT32_MAX;
        try_dispatch(d);  // beyond the device's limit
        d = base();
        const uint32_t garbage[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        d.spirv = garbage;
        d.spirv_bytes = sizeof garbage;
        try_dispatch(d);  // not SPIR-V
        d = base();
        const ggml_ext_vulkan_binding outside[] = {{range_of(a, 1020, 8), false}, {range_of(y), true}};
        d.bindings = outside;
        try_dispatch(d);  // a range outside its tensor
        d = base();
        const ggml_ext_vulkan_binding foreign[] = {{range_of(h), false}, {range_of(y), true}};
        d.bindings = foreign;
        try_dispatch(d);  // host memory
        d = base();
        d.n_constants = 65;
        d.constants = push;
        try_dispatch(d);  // too many constants
        const auto try_copy = [&](ggml_ext_vulkan_range dst, ggml_ext_vulkan_range src) {
            errors.push_back(svc->copy(backend, &dst, &src) == GGML_STATUS_SUCCESS
                                 ? "accepted"
                                 : ggml_backend_get_last_error());
        };
        try_copy(range_of(other, 0, 512), range_of(a, 0, 256));  // sizes differ
        try_copy(range_of(other, 2, 256), range_of(a, 0, 256));  // unaligned
        try_copy(range_of(a, 0, 512), range_of(a, 256, 512));    // overlapping
        try_copy(range_of(other, 0, 256), range_of(h, 0, 256));  // foreign source
        return true;
    };
    write_f32(a, ramp(256, 0.0f, 1.0f));
    ASSERT_EQ(compute(y), GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    const char * expected[] = {"9 bindings",        "6 push-constant bytes", "132 push-constant bytes",
                               "workgroup count 0", "workgroup count",       "no SPIR-V module",
                               "outside the",       "not on this Vulkan",    "65 constants",
                               "differ in size",    "4-byte aligned",        "overlap",
                               "not on this Vulkan"};
    ASSERT_EQ(errors.size(), std::size(expected));
    for (size_t i = 0; i < errors.size(); ++i)
        EXPECT_TRUE(contains(errors[i], expected[i])) << i << ": " << errors[i];
    EXPECT_EQ(vk_impl().last_dispatches(), 1u);  // only the kernel's own
    EXPECT_EQ(read_f32(y), ramp(256, 0.0f, 2.0f));
}

TEST_F(VulkanExt, DispatchOutsideAnExecutingPlanFails) {
    ggml_tensor * a = input(64);
    alloc();
    const ggml_ext_vulkan_binding bindings[] = {{range_of(a), false}, {range_of(a), true}};
    const uint32_t push[5] = {64, 0, 0, 0, 0};
    const ggml_ext_vulkan_dispatch d{
        sizeof d,    "outside", scale_spirv().data(), scale_spirv().size() * 4, bindings, 2, nullptr, 0, push,
        sizeof push, {1, 1, 1}};
    EXPECT_EQ(service()->dispatch(vk(), &d), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "while a plan executes"))
        << ggml_backend_get_last_error();
}

// "Callback errors propagate without retry": the failing extension's node is named, the native
// implementation is not run instead, and nothing of the plan is submitted.
TEST_F(VulkanExt, AKernelErrorFailsThePlanWithoutRetry) {
    ggml_tensor * a = input(64);
    ggml_tensor * y = ggml_scale(ctx(), ggml_sqr(ctx(), a), 2.0f);
    alloc();
    write_f32(a, std::vector<float>(64, 3.0f));
    write_f32(y, std::vector<float>(64, -1.0f));
    probe() = [](ggml_backend_t, const ggml_tensor *) { return false; };
    EXPECT_EQ(compute(y), GGML_STATUS_FAILED);
    const std::string error = ggml_backend_get_last_error();
    EXPECT_TRUE(contains(error, "test.scale.vulkan")) << error;
    EXPECT_TRUE(contains(error, "the probe failed the kernel")) << error;
    EXPECT_EQ(read_f32(y), std::vector<float>(64, -1.0f));  // no native SCALE ran in its place
}

// "Pipeline creation occurs on execution, never during host-only plan preparation": planning a
// graph with a scheduler creates none; computing it creates them, and computing again reuses them.
TEST_F(VulkanExt, PipelinesAreCreatedOnExecutionAndCached) {
    ggml_tensor * t = ggml_new_tensor_1d(ctx(), GGML_TYPE_F32, 16);
    ggml_set_input(t);
    // TIMESTEP_EMBEDDING runs in no other test of this program, so its pipeline is new here.
    ggml_tensor * y = ggml_scale(ctx(), ggml_timestep_embedding(ctx(), t, 32, 10000), 2.0f);
    ggml_set_output(y);
    ggml_cgraph * graph = ggml_new_graph(ctx());
    ggml_build_forward_expand(graph, y);
    Backend cpu(ggml_backend_cpu_init());
    ggml_backend_t backends[] = {vk(), cpu.get()};
    Sched sched(ggml_backend_sched_new(backends, nullptr, 2, 256, false, false));
    vulkan::Device & device = vk_impl().vulkan();
    const size_t before = device.n_pipelines();
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), graph)) << ggml_backend_get_last_error();
    EXPECT_EQ(device.n_pipelines(), before);
    write_f32(t, ramp(16, 0.0f, 10.0f));
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), graph), GGML_STATUS_SUCCESS);
    const size_t after_first = device.n_pipelines();
    EXPECT_GT(after_first, before);
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(device.n_pipelines(), after_first);
}

// "caches the complete shader/configuration per device": an application module is found again by
// its words wherever they lie, a module one word apart (the header's generator, so it stays valid)
// and another list of constants get pipelines of their own.
TEST_F(VulkanExt, ApplicationPipelinesAreKeyedByTheCompleteModuleAndConstants) {
    vulkan::Device & device = vk_impl().vulkan();
    const std::vector<uint32_t> & words = scale_spirv();
    std::vector<uint32_t> copy = words, other = words;
    other[2] ^= 1;  // SPIR-V word 2: the generator's magic number
    const vulkan::Pipeline & p = device.pipeline("scale", words, {0});
    const size_t n = device.n_pipelines();
    EXPECT_EQ(&device.pipeline("scale copy", copy, {0}), &p);
    EXPECT_EQ(device.n_pipelines(), n);
    const vulkan::Pipeline & q = device.pipeline("scale other", other, {0});
    const vulkan::Pipeline & r = device.pipeline("scale", words, {2});  // no other test uses 2
    EXPECT_NE(&q, &p);
    EXPECT_NE(&r, &p);
    EXPECT_NE(q.handle, p.handle);
    EXPECT_NE(r.handle, p.handle);
    EXPECT_EQ(device.n_pipelines(), n + 2);
}

}  // namespace
}  // namespace ggx::test
