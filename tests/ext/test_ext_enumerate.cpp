// The registration enumeration API of ggml-ext.h: operators, a device's kernels and fusion rules,
// counted and listed in registration order; bad indices, devices and structs answer NULL / false.
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <gtest/gtest.h>

#include <string>

namespace {

bool infer_copy(const ggml_tensor * const * inputs, int, const void *, size_t, ggml_type * type,
                int64_t ne[GGML_MAX_DIMS], char *, size_t, void *) {
    *type = inputs[0]->type;
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        ne[i] = inputs[0]->ne[i];
    return true;
}

ggml_ext_op_t register_op(const char * name) {
    ggml_ext_op_desc desc{};
    desc.struct_size = sizeof desc;
    desc.version = GGML_EXT_OP_DESC_VERSION;
    desc.name = name;
    desc.min_inputs = desc.max_inputs = 1;
    desc.infer = infer_copy;
    return ggml_ext_register_op(&desc);
}

bool never(ggml_backend_dev_t, const ggml_tensor *, void *) { return false; }
ggml_status nothing(const ggml_ext_execute_params *) { return GGML_STATUS_SUCCESS; }
int no_match(ggml_backend_dev_t, const ggml_cgraph *, int, void *) { return 0; }
ggml_status no_fusion(const ggml_ext_fusion_execute_params *) { return GGML_STATUS_SUCCESS; }

ggml_ext_kernel_desc kernel_desc(const char * name, ggml_op op, ggml_ext_op_t custom, int priority) {
    ggml_ext_kernel_desc d{};
    d.struct_size = sizeof d;
    d.version = GGML_EXT_KERNEL_DESC_VERSION;
    d.name = name;
    d.op = op;
    d.custom_op = custom;
    d.priority = priority;
    d.supports = never;
    d.execute = nothing;
    return d;
}

ggml_ext_fusion_desc fusion_desc(const char * name, int priority) {
    ggml_ext_fusion_desc d{};
    d.struct_size = sizeof d;
    d.version = GGML_EXT_FUSION_DESC_VERSION;
    d.name = name;
    d.priority = priority;
    d.match = no_match;
    d.execute = no_fusion;
    return d;
}

ggml_backend_dev_t fresh_device(const char * name) {
    const ggml_op ops[] = {GGML_OP_ADD};
    return ggml_backend_cpu_add_virtual_device(name, ops, 1);
}

ggml_ext_kernel_info kernel_at(ggml_backend_dev_t device, int i) {
    ggml_ext_kernel_info info{};
    info.struct_size = sizeof info;
    EXPECT_TRUE(ggml_ext_dev_get_kernel(device, i, &info)) << i;
    return info;
}

TEST(ExtEnumerate, OperatorsInRegistrationOrder) {
    const int before = ggml_ext_get_n_ops();
    ASSERT_GE(before, 0);
    ggml_ext_op_t a = register_op("test.enumerate_a.v1");
    ggml_ext_op_t b = register_op("test.enumerate_b.v1");
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(ggml_ext_get_n_ops(), before + 2);
    EXPECT_EQ(ggml_ext_get_op(before), a);
    EXPECT_EQ(ggml_ext_get_op(before + 1), b);
    EXPECT_STREQ(ggml_ext_op_name(ggml_ext_get_op(before + 1)), "test.enumerate_b.v1");
    // A refused registration (duplicate name) adds nothing.
    EXPECT_EQ(register_op("test.enumerate_a.v1"), nullptr);
    EXPECT_EQ(ggml_ext_get_n_ops(), before + 2);
    // Every listed operator is the one its name finds.
    for (int i = 0; i < ggml_ext_get_n_ops(); ++i) {
        ggml_ext_op_t op = ggml_ext_get_op(i);
        ASSERT_NE(op, nullptr) << i;
        EXPECT_EQ(ggml_ext_find_op(ggml_ext_op_name(op)), op) << i;
    }
    EXPECT_EQ(ggml_ext_get_op(-1), nullptr);
    EXPECT_EQ(ggml_ext_get_op(ggml_ext_get_n_ops()), nullptr);
    EXPECT_EQ(ggml_ext_get_op(1 << 30), nullptr);
}

TEST(ExtEnumerate, KernelsPerDeviceInRegistrationOrder) {
    ggml_backend_dev_t device = fresh_device("enumerate_kernels");
    ggml_backend_dev_t other = fresh_device("enumerate_kernels_other");
    ASSERT_NE(device, nullptr);
    ASSERT_NE(other, nullptr);
    ggml_ext_op_t op = register_op("test.enumerate_kernel_op.v1");
    ASSERT_NE(op, nullptr);
    EXPECT_EQ(ggml_ext_dev_get_n_kernels(device), 0);

    // Registration order, not priority order: the low-priority kernel stays entry 0.
    const ggml_ext_kernel_desc low = kernel_desc("enumerate.scale.low", GGML_OP_SCALE, nullptr, -5);
    const ggml_ext_kernel_desc high = kernel_desc("enumerate.custom.high", GGML_OP_CUSTOM, op, 7);
    ASSERT_TRUE(ggml_ext_register_kernel(device, &low));
    EXPECT_EQ(ggml_ext_dev_get_n_kernels(device), 1);
    ASSERT_TRUE(ggml_ext_register_kernel(device, &high));
    EXPECT_EQ(ggml_ext_dev_get_n_kernels(device), 2);
    EXPECT_FALSE(ggml_ext_register_kernel(device, &low));  // duplicate: nothing added
    EXPECT_EQ(ggml_ext_dev_get_n_kernels(device), 2);
    EXPECT_EQ(ggml_ext_dev_get_n_kernels(other), 0);  // per device

    const ggml_ext_kernel_info first = kernel_at(device, 0);
    EXPECT_STREQ(first.name, "enumerate.scale.low");
    EXPECT_EQ(first.op, GGML_OP_SCALE);
    EXPECT_EQ(first.custom_op, nullptr);
    EXPECT_EQ(first.priority, -5);
    const ggml_ext_kernel_info second = kernel_at(device, 1);
    EXPECT_STREQ(second.name, "enumerate.custom.high");
    EXPECT_EQ(second.op, GGML_OP_CUSTOM);
    EXPECT_EQ(second.custom_op, op);
    EXPECT_EQ(second.priority, 7);

    // The policy switch hides nothing from the listing.
    ggml_ext_dev_set_enabled(device, false);
    EXPECT_EQ(ggml_ext_dev_get_n_kernels(device), 2);
    ggml_ext_dev_set_enabled(device, true);

    ggml_ext_kernel_info info{};
    info.struct_size = sizeof info;
    info.name = "untouched";
    EXPECT_FALSE(ggml_ext_dev_get_kernel(device, -1, &info));
    EXPECT_FALSE(ggml_ext_dev_get_kernel(device, 2, &info));
    EXPECT_FALSE(ggml_ext_dev_get_kernel(other, 0, &info));
    EXPECT_FALSE(ggml_ext_dev_get_kernel(nullptr, 0, &info));
    EXPECT_STREQ(info.name, "untouched");
    EXPECT_FALSE(ggml_ext_dev_get_kernel(device, 0, nullptr));
    info.struct_size = sizeof(size_t);  // older than the first version of the struct
    EXPECT_FALSE(ggml_ext_dev_get_kernel(device, 0, &info));
    EXPECT_STREQ(info.name, "untouched");
    EXPECT_EQ(ggml_ext_dev_get_n_kernels(nullptr), 0);
}

TEST(ExtEnumerate, FusionRulesPerDeviceInRegistrationOrder) {
    ggml_backend_dev_t device = fresh_device("enumerate_fusions");
    ASSERT_NE(device, nullptr);
    EXPECT_EQ(ggml_ext_dev_get_n_fusions(device), 0);
    const ggml_ext_fusion_desc low = fusion_desc("enumerate.fusion.low", 0);
    const ggml_ext_fusion_desc high = fusion_desc("enumerate.fusion.high", 9);
    ASSERT_TRUE(ggml_ext_register_fusion(device, &low));
    ASSERT_TRUE(ggml_ext_register_fusion(device, &high));
    EXPECT_FALSE(ggml_ext_register_fusion(device, &high));
    EXPECT_EQ(ggml_ext_dev_get_n_fusions(device), 2);
    EXPECT_STREQ(ggml_ext_dev_get_fusion_name(device, 0), "enumerate.fusion.low");
    EXPECT_STREQ(ggml_ext_dev_get_fusion_name(device, 1), "enumerate.fusion.high");
    EXPECT_EQ(ggml_ext_dev_get_fusion_name(device, 2), nullptr);
    EXPECT_EQ(ggml_ext_dev_get_fusion_name(device, -1), nullptr);
    EXPECT_EQ(ggml_ext_dev_get_fusion_name(nullptr, 0), nullptr);
    EXPECT_EQ(ggml_ext_dev_get_n_fusions(nullptr), 0);
    // Kernels and fusion rules are separate lists.
    EXPECT_EQ(ggml_ext_dev_get_n_kernels(device), 0);
}

}  // namespace
