// The registry of backends (src/registry): registries and devices, their order, module loading.
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/test_util.h"

namespace {

using ggx::test::Backend;
using ggx::test::contains;

constexpr enum ggml_op kMatmul[] = {GGML_OP_MUL_MAT};

ggml_backend_dev_t add_virtual_device(const char * name) {
    ggml_backend_dev_t device = ggml_backend_cpu_add_virtual_device(name, kMatmul, 1);
    EXPECT_NE(device, nullptr) << ggml_backend_get_last_error();
    return device;
}

size_t index_of(ggml_backend_dev_t device) {
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        if (ggml_backend_dev_get(i) == device) return i;
    }
    return SIZE_MAX;
}

TEST(Registry, FindsTheCpuRegistryAndDevice) {
    ASSERT_GE(ggml_backend_reg_count(), 1u);
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("cpu");
    ASSERT_NE(reg, nullptr);
    EXPECT_EQ(reg, ggml_backend_cpu_reg());
    EXPECT_STREQ(ggml_backend_reg_name(reg), "CPU");
    ASSERT_EQ(ggml_backend_reg_dev_count(reg), 1u);
    ggml_backend_dev_t device = ggml_backend_reg_dev_get(reg, 0);
    EXPECT_EQ(ggml_backend_reg_dev_get(reg, 1), nullptr);
    EXPECT_EQ(ggml_backend_dev_by_name("CPU"), device);
    EXPECT_EQ(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU), device);
    EXPECT_EQ(ggml_backend_dev_by_name("no-such-device"), nullptr);
    EXPECT_EQ(ggml_backend_reg_by_name("no-such-registry"), nullptr);
    EXPECT_EQ(ggml_backend_dev_backend_reg(device), reg);
}

TEST(Registry, RegisteringTheSameRegistryTwiceFails) {
    const size_t count = ggml_backend_reg_count();
    ggml_backend_register(ggml_backend_cpu_reg());
    EXPECT_EQ(ggml_backend_reg_count(), count);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "already registered"));
}

TEST(Registry, ListsGpuDevicesFirstAndTheCpuLast) {
    ggml_backend_dev_t gpu = add_virtual_device("vgpu-order");  // appended to the CPU registry
    const size_t count = ggml_backend_dev_count();
    ASSERT_GE(count, 2u);
    EXPECT_EQ(ggml_backend_dev_get(count - 1), ggml_backend_dev_by_name("CPU"));
    EXPECT_EQ(ggml_backend_dev_get(count), nullptr);
    EXPECT_LT(index_of(gpu), count - 1);
    for (size_t i = 0; i + 1 < count; ++i)
        EXPECT_NE(ggml_backend_dev_type(ggml_backend_dev_get(i)), GGML_BACKEND_DEVICE_TYPE_CPU) << i;
    // Registries likewise: the CPU's is registered last.
    EXPECT_EQ(ggml_backend_reg_get(ggml_backend_reg_count() - 1), ggml_backend_cpu_reg());
}

TEST(Registry, InitBestPicksTheFirstGpu) {
    add_virtual_device("vgpu-best");
    ggml_backend_dev_t gpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_GPU);
    ASSERT_NE(gpu, nullptr);
    EXPECT_EQ(ggml_backend_dev_get(0), gpu);
    Backend best(ggml_backend_init_best());
    ASSERT_NE(best, nullptr);
    EXPECT_EQ(ggml_backend_get_device(best.get()), gpu);
}

// Names are unique across registries: a virtual device cannot take another registry's device name.
TEST(Registry, VirtualDeviceNamesAreCheckedAgainstEveryRegistry) {
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t device = ggml_backend_dev_get(i);
        if (ggml_backend_dev_backend_reg(device) == ggml_backend_cpu_reg()) continue;
        EXPECT_EQ(ggml_backend_cpu_add_virtual_device(ggml_backend_dev_name(device), kMatmul, 1), nullptr);
        EXPECT_TRUE(contains(ggml_backend_get_last_error(), "already exists"));
    }
}

TEST(Registry, UnloadUnregistersAndRegisterAddsAgain) {
    ggml_backend_reg_t cpu = ggml_backend_cpu_reg();
    const size_t regs = ggml_backend_reg_count();
    ggml_backend_unload(cpu);
    EXPECT_EQ(ggml_backend_reg_count(), regs - 1);
    EXPECT_EQ(ggml_backend_reg_by_name("CPU"), nullptr);
    EXPECT_EQ(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU), nullptr);
    ggml_backend_unload(cpu);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "not registered"));
    ggml_backend_register(cpu);
    EXPECT_EQ(ggml_backend_reg_count(), regs);
    EXPECT_EQ(ggml_backend_reg_by_name("CPU"), cpu);
}

TEST(Registry, DeviceRegisterListsALoneDeviceOnce) {
    ggml_backend_dev_t cpu = ggml_backend_dev_by_name("CPU");
    ggml_backend_unload(ggml_backend_cpu_reg());
    const size_t count = ggml_backend_dev_count();
    ggml_backend_device_register(cpu);
    EXPECT_EQ(ggml_backend_dev_count(), count + 1);
    EXPECT_EQ(ggml_backend_dev_by_name("CPU"), cpu);
    EXPECT_EQ(ggml_backend_dev_get(count), cpu);
    ggml_backend_device_register(cpu);
    EXPECT_EQ(ggml_backend_dev_count(), count + 1);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "already registered"));
    ggml_backend_device_register(nullptr);
    EXPECT_EQ(ggml_backend_dev_count(), count + 1);
}

TEST(Loader, RefusesWhatIsNotABackendModuleWithAMessage) {
    const size_t regs = ggml_backend_reg_count();
    EXPECT_EQ(ggml_backend_load(nullptr), nullptr);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "no path"));

    EXPECT_EQ(ggml_backend_load("/no/such/dir/libggml-none.so"), nullptr);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "/no/such/dir/libggml-none.so"));

    const std::filesystem::path text = std::filesystem::temp_directory_path() / "ggx-not-a-module.so";
    std::ofstream(text) << "not a shared object\n";
    EXPECT_EQ(ggml_backend_load(text.c_str()), nullptr);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), text.string()));
    std::filesystem::remove(text);

    EXPECT_EQ(ggml_backend_load("libm.so.6"), nullptr);  // a shared library, but no backend
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "exports no ggml_backend_init"));
    EXPECT_EQ(ggml_backend_reg_count(), regs);
}

// The backends are built in (the tests are not built with GGX_BACKEND_DL): nothing more to load,
// and a bad GGML_BACKEND_PATH is reported, not fatal.
TEST(Loader, LoadAllKeepsTheBuiltInBackends) {
    const size_t regs = ggml_backend_reg_count();
    const size_t devices = ggml_backend_dev_count();
    unsetenv("GGML_BACKEND_PATH");
    ggml_backend_load_all();
    ggml_backend_load_all_from_path("/no/such/dir");
    setenv("GGML_BACKEND_PATH", "/no/such/dir/libggml-none.so", 1);
    ggml_backend_load_all();
    unsetenv("GGML_BACKEND_PATH");
    EXPECT_EQ(ggml_backend_reg_count(), regs);
    EXPECT_EQ(ggml_backend_dev_count(), devices);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "/no/such/dir/libggml-none.so"));
}

}  // namespace
