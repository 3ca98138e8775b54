// The CPU registry's virtual devices (ggml_backend_cpu_add_virtual_device): a GPU-typed device with
// its own memory space whose backends compute with the CPU kernels. Devices live until the process
// ends, so every test adds its own, under its own name.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/test_util.h"

namespace {

using ggx::test::Backend;
using ggx::test::Buffer;
using ggx::test::contains;
using ggx::test::Context;
using ggx::test::Rng;

Context metadata_context() { return Context(ggml_init({1 << 20, nullptr, true})); }

const ggml_op kMatmulOps[] = {GGML_OP_MUL_MAT, GGML_OP_ADD, GGML_OP_MUL, GGML_OP_SOFT_MAX, GGML_OP_VIEW};

ggml_backend_dev_t add_device(const char * name) {
    ggml_backend_dev_t device =
        ggml_backend_cpu_add_virtual_device(name, kMatmulOps, static_cast<int>(std::size(kMatmulOps)));
    EXPECT_NE(device, nullptr) << ggml_backend_get_last_error();
    return device;
}

TEST(VirtualDevice, IsRegisteredInTheCpuRegistry) {
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    const size_t reg_devices = ggml_backend_reg_dev_count(reg);
    const size_t all_devices = ggml_backend_dev_count();
    ggml_backend_dev_t device = add_device("vdev-registered");
    ASSERT_NE(device, nullptr);

    EXPECT_EQ(ggml_backend_reg_dev_count(reg), reg_devices + 1);
    EXPECT_EQ(ggml_backend_reg_dev_get(reg, reg_devices), device);
    EXPECT_EQ(ggml_backend_dev_count(), all_devices + 1);
    bool listed = false;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i)
        listed = listed || ggml_backend_dev_get(i) == device;
    EXPECT_TRUE(listed);
    EXPECT_EQ(ggml_backend_dev_by_name("vdev-registered"), device);
    EXPECT_EQ(ggml_backend_dev_by_name("VDEV-Registered"), device);
    EXPECT_EQ(ggml_backend_dev_backend_reg(device), reg);
    EXPECT_EQ(ggml_backend_dev_by_name("CPU"), ggml_backend_reg_dev_get(reg, 0));

    ggml_backend_dev_props props{};
    ggml_backend_dev_get_props(device, &props);
    EXPECT_STREQ(props.name, "vdev-registered");
    EXPECT_TRUE(contains(props.description, "virtual"));
    EXPECT_EQ(props.type, GGML_BACKEND_DEVICE_TYPE_GPU);
    EXPECT_FALSE(props.caps.async);
    EXPECT_FALSE(props.caps.events);
    EXPECT_GT(props.memory_total, 0u);
    EXPECT_EQ(ggml_backend_dev_host_buffer_type(device), nullptr);
    EXPECT_EQ(ggml_backend_event_new(device), nullptr);

    Backend by_name(ggml_backend_init_by_name("vdev-registered", nullptr));
    ASSERT_NE(by_name, nullptr);
    EXPECT_EQ(ggml_backend_get_device(by_name.get()), device);
}

TEST(VirtualDevice, TakenNamesAndBadArgumentsAreRefused) {
    ASSERT_NE(add_device("vdev-unique"), nullptr);
    const size_t devices = ggml_backend_dev_count();
    for (const char * taken : {"vdev-unique", "VDEV-UNIQUE", "CPU", "cpu"}) {
        EXPECT_EQ(ggml_backend_cpu_add_virtual_device(taken, kMatmulOps, 1), nullptr) << taken;
        const std::string error = ggml_backend_get_last_error();
        EXPECT_TRUE(contains(error, "already exists")) << error;
        EXPECT_TRUE(contains(error, taken)) << error;
    }
    EXPECT_EQ(ggml_backend_cpu_add_virtual_device(nullptr, kMatmulOps, 1), nullptr);
    EXPECT_EQ(ggml_backend_cpu_add_virtual_device("", kMatmulOps, 1), nullptr);
    EXPECT_EQ(ggml_backend_cpu_add_virtual_device("vdev-bad-list", nullptr, 2), nullptr);
    EXPECT_EQ(ggml_backend_cpu_add_virtual_device("vdev-bad-list", kMatmulOps, -1), nullptr);
    const ggml_op not_an_op[] = {GGML_OP_ADD, static_cast<ggml_op>(GGML_OP_COUNT)};
    EXPECT_EQ(ggml_backend_cpu_add_virtual_device("vdev-bad-op", not_an_op, 2), nullptr);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "not a ggml_op"));
    EXPECT_EQ(ggml_backend_dev_count(), devices);
    EXPECT_EQ(ggml_backend_dev_by_name("vdev-bad-op"), nullptr);
}

TEST(VirtualDevice, SupportsExactlyTheListedOpsTheCpuSupports) {
    const ggml_op ops[] = {GGML_OP_ADD, GGML_OP_CUSTOM};
    ggml_backend_dev_t device = ggml_backend_cpu_add_virtual_device("vdev-subset", ops, 2);
    ASSERT_NE(device, nullptr);
    ggml_backend_dev_t cpu = ggml_backend_dev_by_name("CPU");
    Context ctx = metadata_context();
    ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 8, 4);
    ggml_tensor * b = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 8, 4);
    ggml_tensor * add = ggml_add(ctx.get(), a, b);
    ggml_tensor * mul = ggml_mul(ctx.get(), a, b);
    ggml_tensor * callback = ggml_custom_4d(
        ctx.get(), GGML_TYPE_F32, 4, 1, 1, 1, nullptr, 0, [](ggml_tensor *, int, int, void *) {}, 1, nullptr);
    ggml_tensor * extension = ggml_custom_4d(
        ctx.get(), GGML_TYPE_F32, 4, 1, 1, 1, nullptr, 0, [](ggml_tensor *, int, int, void *) {}, 1, nullptr);
    const uint32_t marker = GGML_CUSTOM_MARKER_EXTENSION;  // listed, but no CPU kernel supports it
    std::memcpy(extension->op_params, &marker, sizeof marker);

    EXPECT_TRUE(ggml_backend_dev_supports_op(device, add));
    EXPECT_TRUE(ggml_backend_dev_supports_op(cpu, mul));
    EXPECT_FALSE(ggml_backend_dev_supports_op(device, mul));
    EXPECT_TRUE(ggml_backend_dev_supports_op(device, callback));
    EXPECT_FALSE(ggml_backend_dev_supports_op(cpu, extension));
    EXPECT_FALSE(ggml_backend_dev_supports_op(device, extension));
    EXPECT_FALSE(ggml_backend_dev_offload_op(device, add));
    // Ops that compute nothing are admitted without being listed.
    EXPECT_TRUE(ggml_backend_dev_supports_op(device, ggml_transpose(ctx.get(), a)));
    EXPECT_TRUE(ggml_backend_dev_supports_op(device, ggml_view_1d(ctx.get(), a, 4, 0)));

    const ggml_op none[] = {GGML_OP_ADD};
    ggml_backend_dev_t empty = ggml_backend_cpu_add_virtual_device("vdev-no-ops", none, 0);
    ASSERT_NE(empty, nullptr);
    EXPECT_FALSE(ggml_backend_dev_supports_op(empty, add));
}

// Contract: offload_op accepts an admitted MUL_MAT whose src[1] has at least 32 columns.
TEST(VirtualDevice, OffloadsLargeBatchMatrixProductsOnly) {
    const ggml_op ops[] = {GGML_OP_MUL_MAT};
    ggml_backend_dev_t device = ggml_backend_cpu_add_virtual_device("vdev-offload", ops, 1);
    ASSERT_NE(device, nullptr);
    Context ctx = metadata_context();
    ggml_tensor * w = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 16, 8);
    EXPECT_TRUE(ggml_backend_dev_offload_op(
        device, ggml_mul_mat(ctx.get(), w, ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 16, 32))));
    EXPECT_FALSE(ggml_backend_dev_offload_op(
        device, ggml_mul_mat(ctx.get(), w, ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 16, 31))));
    const ggml_op add_only[] = {GGML_OP_ADD};
    ggml_backend_dev_t no_matmul = ggml_backend_cpu_add_virtual_device("vdev-offload-none", add_only, 1);
    EXPECT_FALSE(ggml_backend_dev_offload_op(
        no_matmul, ggml_mul_mat(ctx.get(), w, ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 16, 64))));
}

TEST(VirtualDevice, HasItsOwnNonHostBufferType) {
    ggml_backend_dev_t device = add_device("vdev-buft");
    ASSERT_NE(device, nullptr);
    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(device);
    ggml_backend_buffer_type_t cpu_buft = ggml_backend_cpu_buffer_type();
    ASSERT_NE(buft, nullptr);
    EXPECT_NE(buft, cpu_buft);
    EXPECT_EQ(ggml_backend_dev_buffer_type(device), buft);
    EXPECT_STREQ(ggml_backend_buft_name(buft), "vdev-buft_buffer");
    EXPECT_FALSE(ggml_backend_buft_is_host(buft));
    EXPECT_EQ(ggml_backend_buft_get_alignment(buft), 64u);
    EXPECT_EQ(ggml_backend_buft_get_device(buft), device);

    EXPECT_TRUE(ggml_backend_dev_supports_buft(device, buft));
    EXPECT_FALSE(ggml_backend_dev_supports_buft(device, cpu_buft));
    EXPECT_FALSE(ggml_backend_dev_supports_buft(ggml_backend_dev_by_name("CPU"), buft));
    ggml_backend_dev_t other = add_device("vdev-buft-other");
    EXPECT_FALSE(ggml_backend_dev_supports_buft(device, ggml_backend_dev_buffer_type(other)));

    Buffer buffer(ggml_backend_buft_alloc_buffer(buft, 1000));
    ASSERT_NE(buffer, nullptr);
    EXPECT_EQ(ggml_backend_buffer_get_type(buffer.get()), buft);
    EXPECT_FALSE(ggml_backend_buffer_is_host(buffer.get()));
    EXPECT_STREQ(ggml_backend_buffer_name(buffer.get()), "vdev-buft_buffer");
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ggml_backend_buffer_get_base(buffer.get())) % 64, 0u);
}

TEST(VirtualDevice, BackendsAreCpuKernelBackendsOfTheirOwnDevice) {
    ggml_backend_dev_t device = add_device("vdev-backend");
    ASSERT_NE(device, nullptr);
    Backend backend(ggml_backend_dev_init(device, nullptr));
    ASSERT_NE(backend, nullptr);
    EXPECT_STREQ(ggml_backend_name(backend.get()), "vdev-backend");
    EXPECT_EQ(ggml_backend_get_device(backend.get()), device);
    EXPECT_EQ(ggml_backend_get_default_buffer_type(backend.get()), ggml_backend_dev_buffer_type(device));
    EXPECT_EQ(ggml_backend_get_alignment(backend.get()), 64u);
    // A separate device, not the CPU: it cannot be a scheduler's CPU fallback.
    EXPECT_FALSE(ggml_backend_is_cpu(backend.get()));

    ggml_backend_cpu_set_n_threads(backend.get(), 3);
    EXPECT_EQ(ggml_backend_cpu_get_n_threads(backend.get()), 3);
    auto set_n_threads = reinterpret_cast<ggml_backend_set_n_threads_t>(ggml_backend_reg_get_proc_address(
        ggml_backend_dev_backend_reg(device), "ggml_backend_set_n_threads"));
    ASSERT_NE(set_n_threads, nullptr);
    set_n_threads(backend.get(), 2);
    EXPECT_EQ(ggml_backend_cpu_get_n_threads(backend.get()), 2);
}

TEST(VirtualDevice, TensorDataGoesThroughItsBuffers) {
    ggml_backend_dev_t device = add_device("vdev-data");
    ASSERT_NE(device, nullptr);
    Context ctx = metadata_context();
    ggml_tensor * on_device = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 8);
    ggml_tensor * also_on_device = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 8);
    Buffer buffer(ggml_backend_alloc_ctx_tensors_from_buft(ctx.get(), ggml_backend_dev_buffer_type(device)));
    ASSERT_NE(buffer, nullptr) << ggml_backend_get_last_error();
    Context host_ctx = metadata_context();
    ggml_tensor * on_host = ggml_new_tensor_1d(host_ctx.get(), GGML_TYPE_F32, 8);
    Buffer host_buffer(
        ggml_backend_alloc_ctx_tensors_from_buft(host_ctx.get(), ggml_backend_cpu_buffer_type()));
    ASSERT_NE(host_buffer, nullptr);
    EXPECT_EQ(on_device->buffer, buffer.get());

    const float values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ASSERT_EQ(ggml_ext_backend_tensor_set(on_device, values, 0, sizeof values), GGML_STATUS_SUCCESS);
    ASSERT_EQ(ggml_ext_backend_tensor_memset(on_device, 0, 4, 4), GGML_STATUS_SUCCESS);
    float out[8] = {};
    ASSERT_EQ(ggml_ext_backend_tensor_get(on_device, out, 0, sizeof out), GGML_STATUS_SUCCESS);
    EXPECT_EQ(std::vector<float>(out, out + 8), (std::vector<float>{1, 0, 3, 4, 5, 6, 7, 8}));

    // Device to device, device to host and host to device.
    ASSERT_EQ(ggml_ext_backend_tensor_copy(on_device, also_on_device), GGML_STATUS_SUCCESS);
    ASSERT_EQ(ggml_ext_backend_tensor_copy(also_on_device, on_host), GGML_STATUS_SUCCESS);
    EXPECT_EQ(std::memcmp(on_host->data, out, sizeof out), 0);
    const float twos[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    std::memcpy(on_host->data, twos, sizeof twos);
    ASSERT_EQ(ggml_ext_backend_tensor_copy(on_host, on_device), GGML_STATUS_SUCCESS);
    ASSERT_EQ(ggml_ext_backend_tensor_get(on_device, out, 0, sizeof out), GGML_STATUS_SUCCESS);
    EXPECT_EQ(std::memcmp(out, twos, sizeof twos), 0);
    EXPECT_EQ(ggml_ext_backend_tensor_get(on_device, out, 4, sizeof out), GGML_STATUS_FAILED);
}

// x @ w + bias, times a gate, then softmax (every op in kMatmulOps but VIEW), in a context of its own.
struct MatmulGraph {
    Context ctx = metadata_context();
    ggml_tensor * w = ggml_set_name(ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 32, 24), "w");
    ggml_tensor * x = ggml_set_name(ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 32, 5), "x");
    ggml_tensor * bias = ggml_set_name(ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 24), "bias");
    ggml_tensor * gate = ggml_set_name(ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 24, 5), "gate");
    ggml_tensor * product = ggml_set_name(ggml_mul_mat(ctx.get(), w, x), "product");
    ggml_tensor * out = ggml_set_name(
        ggml_soft_max(ctx.get(), ggml_mul(ctx.get(), ggml_add(ctx.get(), product, bias), gate)), "out");
    ggml_cgraph * graph = ggml_new_graph(ctx.get());

    MatmulGraph() { ggml_build_forward_expand(graph, out); }

    void upload(uint32_t seed) {
        Rng rng(seed);
        for (ggml_tensor * t : {w, x, bias, gate}) {
            std::vector<float> values(static_cast<size_t>(ggml_nelements(t)));
            for (float & v : values)
                v = static_cast<float>(rng.uniform(-1.0, 1.0));
            ASSERT_EQ(ggml_ext_backend_tensor_set(t, values.data(), 0, ggml_nbytes(t)), GGML_STATUS_SUCCESS);
        }
    }

    std::vector<float> result() const {
        std::vector<float> values(static_cast<size_t>(ggml_nelements(out)));
        EXPECT_EQ(ggml_ext_backend_tensor_get(out, values.data(), 0, ggml_nbytes(out)), GGML_STATUS_SUCCESS);
        return values;
    }
};

TEST(VirtualDevice, ComputesWhatTheCpuComputes) {
    ggml_backend_dev_t device = add_device("vdev-compute");
    ASSERT_NE(device, nullptr);
    Backend virtual_backend(ggml_backend_dev_init(device, nullptr));
    Backend cpu(ggml_backend_cpu_init());
    for (int threads : {1, 3}) {
        ggml_backend_cpu_set_n_threads(virtual_backend.get(), threads);
        ggml_backend_cpu_set_n_threads(cpu.get(), threads);
        MatmulGraph on_device, on_cpu;
        Buffer device_buffer(ggml_backend_alloc_ctx_tensors(on_device.ctx.get(), virtual_backend.get()));
        Buffer cpu_buffer(ggml_backend_alloc_ctx_tensors(on_cpu.ctx.get(), cpu.get()));
        ASSERT_NE(device_buffer, nullptr);
        ASSERT_NE(cpu_buffer, nullptr);
        on_device.upload(7);
        on_cpu.upload(7);
        for (int i = 0; i < ggml_graph_n_nodes(on_device.graph); ++i)
            EXPECT_TRUE(ggml_backend_supports_op(virtual_backend.get(), ggml_graph_node(on_device.graph, i)));
        ASSERT_EQ(ggml_backend_graph_compute(virtual_backend.get(), on_device.graph), GGML_STATUS_SUCCESS)
            << ggml_backend_get_last_error();
        ASSERT_EQ(ggml_backend_graph_compute(cpu.get(), on_cpu.graph), GGML_STATUS_SUCCESS);
        EXPECT_EQ(on_device.result(), on_cpu.result()) << threads << " threads";

        // The CPU supports the ops (metadata only) but refuses to compute on the device's memory.
        EXPECT_TRUE(ggml_backend_supports_op(cpu.get(), on_device.out));
        EXPECT_EQ(ggml_backend_graph_compute(cpu.get(), on_device.graph), GGML_STATUS_FAILED);
        EXPECT_TRUE(contains(ggml_backend_get_last_error(), "cannot access"));
    }
}

TEST(VirtualDevice, RefusesNodesTouchingForeignBuffers) {
    ggml_backend_dev_t device = add_device("vdev-foreign");
    ASSERT_NE(device, nullptr);
    Backend backend(ggml_backend_dev_init(device, nullptr));
    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(device);

    // x lives in CPU memory, everything else on the device: the matmul reads x without a copy.
    MatmulGraph g;
    Context host_ctx = metadata_context();
    ggml_tensor * host_x = ggml_set_name(ggml_new_tensor_2d(host_ctx.get(), GGML_TYPE_F32, 32, 5), "x");
    Buffer host_buffer(
        ggml_backend_alloc_ctx_tensors_from_buft(host_ctx.get(), ggml_backend_cpu_buffer_type()));
    Buffer buffer(ggml_backend_alloc_ctx_tensors_from_buft(g.ctx.get(), buft));
    ASSERT_NE(buffer, nullptr);
    g.upload(9);
    const std::vector<float> before = g.result();
    g.product->src[1] = host_x;
    EXPECT_EQ(ggml_backend_graph_compute(backend.get(), g.graph), GGML_STATUS_FAILED);
    std::string error = ggml_backend_get_last_error();
    EXPECT_TRUE(contains(error, "vdev-foreign")) << error;
    EXPECT_TRUE(contains(error, "'product'")) << error;
    EXPECT_TRUE(contains(error, "source 1 'x'")) << error;
    EXPECT_TRUE(contains(error, "CPU")) << error;
    EXPECT_TRUE(contains(error, "cannot access")) << error;
    EXPECT_TRUE(contains(error, "cross-device copy is missing")) << error;
    EXPECT_EQ(g.result(), before);  // nothing ran

    // A view is judged by its storage owner: a device view of host memory is refused.
    g.product->src[1] = g.x;
    ggml_tensor * host_gate = ggml_new_tensor_2d(host_ctx.get(), GGML_TYPE_F32, 48, 5);
    ggml_set_name(host_gate, "host_gate");
    Buffer gate_buffer(
        ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), ggml_nbytes(host_gate)));
    ASSERT_EQ(ggml_backend_tensor_alloc(gate_buffer.get(), host_gate,
                                        ggml_backend_buffer_get_base(gate_buffer.get())),
              GGML_STATUS_SUCCESS);
    ggml_tensor * gate_view = ggml_view_2d(host_ctx.get(), host_gate, 24, 5, host_gate->nb[1], 0);
    ggml_set_name(gate_view, "gate_view");
    ASSERT_EQ(ggml_backend_view_init(gate_view), GGML_STATUS_SUCCESS);
    ggml_tensor * mul = g.out->src[0];
    ASSERT_EQ(mul->op, GGML_OP_MUL);
    mul->src[1] = gate_view;
    EXPECT_EQ(ggml_backend_graph_compute(backend.get(), g.graph), GGML_STATUS_FAILED);
    error = ggml_backend_get_last_error();
    EXPECT_TRUE(contains(error, "source 1 'gate_view'")) << error;
    mul->src[1] = g.gate;

    // A result outside the device's memory is refused too.
    ggml_tensor * product = g.product;
    void * data = product->data;
    ggml_backend_buffer_t owner = product->buffer;
    product->buffer = gate_buffer.get();
    EXPECT_EQ(ggml_backend_graph_compute(backend.get(), g.graph), GGML_STATUS_FAILED);
    error = ggml_backend_get_last_error();
    EXPECT_TRUE(contains(error, "'product'")) << error;
    EXPECT_TRUE(contains(error, "its result 'product'")) << error;
    product->buffer = owner;
    product->data = data;

    // Host tensors that belong to no buffer are refused as well; the repaired graph computes.
    ASSERT_EQ(ggml_backend_graph_compute(backend.get(), g.graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    Context plain(ggml_init({1 << 20, nullptr, false}));
    ggml_tensor * a = ggml_new_tensor_1d(plain.get(), GGML_TYPE_F32, 4);
    ggml_tensor * sum = ggml_set_name(ggml_add(plain.get(), a, a), "plain_sum");
    ggml_cgraph * graph = ggml_new_graph(plain.get());
    ggml_build_forward_expand(graph, sum);
    EXPECT_EQ(ggml_backend_graph_compute(backend.get(), graph), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "no buffer")) << ggml_backend_get_last_error();
}

TEST(VirtualDevice, UnlistedOpsAreRefusedAtCompute) {
    const ggml_op ops[] = {GGML_OP_ADD};
    ggml_backend_dev_t device = ggml_backend_cpu_add_virtual_device("vdev-add-only", ops, 1);
    ASSERT_NE(device, nullptr);
    Backend backend(ggml_backend_dev_init(device, nullptr));
    Context ctx = metadata_context();
    ggml_tensor * a = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    ggml_tensor * squared = ggml_set_name(ggml_sqr(ctx.get(), ggml_add(ctx.get(), a, a)), "squared");
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, squared);
    Buffer buffer(ggml_backend_alloc_ctx_tensors(ctx.get(), backend.get()));
    ASSERT_NE(buffer, nullptr);
    EXPECT_EQ(ggml_backend_graph_compute(backend.get(), graph), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "'squared'"));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "not supported"));
    EXPECT_EQ(ggml_backend_graph_compute_range(backend.get(), graph, 0, 1), GGML_STATUS_SUCCESS);
}

TEST(VirtualDevice, DevicesCanBeAddedWhileOthersEnumerate) {
    std::atomic<bool> done{false};
    std::thread reader([&done] {
        while (!done.load()) {
            const size_t n = ggml_backend_dev_count();
            for (size_t i = 0; i < n; ++i)
                ASSERT_NE(ggml_backend_dev_get(i), nullptr);
            ASSERT_NE(ggml_backend_dev_by_name("CPU"), nullptr);
        }
    });
    const ggml_op ops[] = {GGML_OP_ADD};
    for (int i = 0; i < 20; ++i) {
        const std::string name = "vdev-concurrent-" + std::to_string(i);
        EXPECT_NE(ggml_backend_cpu_add_virtual_device(name.c_str(), ops, 1), nullptr);
    }
    done.store(true);
    reader.join();
    for (int i = 0; i < 20; ++i)
        EXPECT_NE(ggml_backend_dev_by_name(("vdev-concurrent-" + std::to_string(i)).c_str()), nullptr);
}

}  // namespace
