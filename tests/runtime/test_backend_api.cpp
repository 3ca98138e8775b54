// ggml-backend.h's and ggml-alloc.h's utility API: 2-d transfers, reusable graph plans, graph
// copies and cross-backend comparison, scheduler queries (buffer type, reserve sizes, splitting),
// backend GUIDs, buffers over caller memory, meta devices, the linear allocator and sizing helpers.
#include <ggml-alloc.h>
#include <ggml-ext.h>
#include <ggml-cpp.h>
#include <ggml-cpu.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace {

ggml_context_ptr make_ctx(bool no_alloc = true, size_t bytes = 1 << 20) {
    return ggml_context_ptr(ggml_init({bytes, nullptr, no_alloc}));
}

// A virtual device for MUL_MAT and ADD (its memory is separate from the CPU's), made once.
ggml_backend_dev_t vgpu() {
    static ggml_backend_dev_t device = [] {
        const ggml_op ops[] = {GGML_OP_MUL_MAT, GGML_OP_ADD};
        return ggml_backend_cpu_add_virtual_device("api_vgpu", ops, 2);
    }();
    return device;
}

std::vector<float> iota_values(size_t n, float start = 1.0f) {
    std::vector<float> v(n);
    std::iota(v.begin(), v.end(), start);
    return v;
}

std::vector<float> read_all(const ggml_tensor * t) {
    std::vector<float> out(static_cast<size_t>(ggml_nelements(t)));
    EXPECT_EQ(ggml_ext_backend_tensor_get(t, out.data(), 0, ggml_nbytes(t)), GGML_STATUS_SUCCESS);
    return out;
}

// y = sqr(W x + b) with its tensors allocated on backend and filled.
struct SmallModel {
    ggml_context_ptr ctx = make_ctx();
    ggml_tensor *w, *x, *b, *y;
    ggml_cgraph * graph;
    ggml_backend_buffer_ptr buffer;

    explicit SmallModel(ggml_backend_t backend) {
        w = ggml_set_name(ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 8, 6), "w");
        x = ggml_set_name(ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 8, 3), "x");
        b = ggml_set_name(ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 6), "b");
        ggml_tensor * sum = ggml_add(ctx.get(), ggml_mul_mat(ctx.get(), w, x), b);
        y = ggml_set_name(ggml_sqr(ctx.get(), ggml_reshape_1d(ctx.get(), sum, 18)), "y");
        graph = ggml_new_graph(ctx.get());
        ggml_build_forward_expand(graph, y);
        buffer.reset(ggml_backend_alloc_ctx_tensors(ctx.get(), backend));
        set(w, iota_values(48, -20.0f));
        set(x, iota_values(24, 0.5f));
        set(b, iota_values(6));
    }
    static void set(ggml_tensor * t, const std::vector<float> & values) {
        ASSERT_EQ(ggml_ext_backend_tensor_set(t, values.data(), 0, values.size() * sizeof(float)), GGML_STATUS_SUCCESS);
    }
};

TEST(BackendTransfers2d, RowsGoToAndComeFromTheirStrides) {
    ggml_backend_ptr backend(ggml_backend_dev_init(vgpu(), nullptr));  // device memory: no host access
    ggml_context_ptr ctx = make_ctx();
    ggml_tensor * t = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 4, 3);
    ggml_backend_buffer_ptr buffer(ggml_backend_alloc_ctx_tensors(ctx.get(), backend.get()));
    ggml_backend_tensor_memset(t, 0, 0, ggml_nbytes(t));
    // Columns 1 and 2 of every row from a packed 3 x 2 source whose rows are 3 floats apart.
    const float source[] = {1, 2, -1, 3, 4, -1, 5, 6, -1};
    ASSERT_EQ(ggml_ext_backend_tensor_set_2d(t, source, sizeof(float), 2 * sizeof(float), 3, t->nb[1], 3 * sizeof(float)),
              GGML_STATUS_SUCCESS);
    EXPECT_EQ(read_all(t), std::vector<float>({0, 1, 2, 0, 0, 3, 4, 0, 0, 5, 6, 0}));
    float back[6] = {};
    ASSERT_EQ(ggml_ext_backend_tensor_get_2d(t, back, sizeof(float), 2 * sizeof(float), 3, t->nb[1], 2 * sizeof(float)),
              GGML_STATUS_SUCCESS);
    EXPECT_EQ(std::vector<float>(back, back + 6), std::vector<float>({1, 2, 3, 4, 5, 6}));

    ASSERT_EQ(ggml_ext_backend_tensor_set_2d_async(backend.get(), t, source, 0, sizeof(float), 3, t->nb[1], sizeof(float)),
              GGML_STATUS_SUCCESS);
    ASSERT_EQ(ggml_ext_backend_tensor_get_2d_async(backend.get(), t, back, 0, sizeof(float), 3, t->nb[1], sizeof(float)),
              GGML_STATUS_SUCCESS);
    ggml_backend_synchronize(backend.get());
    EXPECT_EQ(std::vector<float>(back, back + 3), std::vector<float>({1, 2, -1}));

    // The last row would end past the tensor: refused before anything is written.
    ggml_backend_tensor_memset(t, 0, 0, ggml_nbytes(t));
    EXPECT_EQ(ggml_ext_backend_tensor_set_2d(t, source, 3 * sizeof(float), 2 * sizeof(float), 3, t->nb[1], 0),
              GGML_STATUS_FAILED);
    EXPECT_NE(std::string(ggml_backend_get_last_error()).find("out of bounds"), std::string::npos);
    EXPECT_EQ(read_all(t), std::vector<float>(12, 0.0f));
    ggml_backend_buffer_reset(buffer.get());  // keeps tensors and data
    EXPECT_EQ(t->buffer, buffer.get());
}

TEST(BackendGraphPlan, APlanComputesAgainWithNewData) {
    ggml_backend_ptr backend(ggml_backend_cpu_init());
    SmallModel model(backend.get());
    ggml_backend_graph_plan_t plan = ggml_backend_graph_plan_create(backend.get(), model.graph);
    ASSERT_NE(plan, nullptr);
    ASSERT_EQ(ggml_backend_graph_plan_compute(backend.get(), plan), GGML_STATUS_SUCCESS);
    const std::vector<float> first = read_all(model.y);
    ASSERT_EQ(ggml_backend_graph_compute(backend.get(), model.graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(read_all(model.y), first);

    SmallModel::set(model.b, std::vector<float>(6, 0.0f));
    ASSERT_EQ(ggml_backend_graph_plan_compute(backend.get(), plan), GGML_STATUS_SUCCESS);
    const std::vector<float> second = read_all(model.y);
    ASSERT_EQ(ggml_backend_graph_compute(backend.get(), model.graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(read_all(model.y), second);
    EXPECT_NE(first, second);

    ggml_backend_cpu_set_n_threads(backend.get(), ggml_backend_cpu_get_n_threads(backend.get()) + 1);
    EXPECT_EQ(ggml_backend_graph_plan_compute(backend.get(), plan), GGML_STATUS_FAILED);  // stale settings
    ggml_backend_graph_plan_free(backend.get(), plan);
}

TEST(BackendGraphPlan, UnsupportedNodeIsRefusedAtCreate) {
    ggml_backend_ptr backend(ggml_backend_dev_init(vgpu(), nullptr));
    ggml_context_ptr ctx = make_ctx();
    ggml_tensor * x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, ggml_sqr(ctx.get(), x));  // not an op of the virtual device
    EXPECT_EQ(ggml_backend_graph_plan_create(backend.get(), graph), nullptr);
    EXPECT_NE(std::string(ggml_backend_get_last_error()).find("not supported"), std::string::npos);
}

TEST(BackendGraphCopy, CopiesTensorsDataAndViewsIntoTheTargetBackend) {
    ggml_backend_ptr cpu(ggml_backend_cpu_init()), other(ggml_backend_cpu_init());
    SmallModel model(cpu.get());
    struct ggml_backend_graph_copy copy = ggml_backend_graph_copy(other.get(), model.graph);
    ASSERT_NE(copy.graph, nullptr);
    ASSERT_EQ(ggml_graph_n_nodes(copy.graph), ggml_graph_n_nodes(model.graph));
    for (int i = 0; i < ggml_graph_n_nodes(model.graph); ++i) {
        const ggml_tensor * original = ggml_graph_node(model.graph, i);
        const ggml_tensor * image = ggml_graph_node(copy.graph, i);
        EXPECT_NE(image, original);
        EXPECT_EQ(image->op, original->op);
        EXPECT_STREQ(image->name, original->name);
        EXPECT_EQ(image->view_src != nullptr, original->view_src != nullptr);
    }
    const ggml_tensor * w = ggml_graph_get_tensor(copy.graph, "w");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->buffer, copy.buffer);
    EXPECT_EQ(read_all(w), read_all(model.w));
    ASSERT_EQ(ggml_backend_graph_compute(other.get(), copy.graph), GGML_STATUS_SUCCESS);
    ASSERT_EQ(ggml_backend_graph_compute(cpu.get(), model.graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(read_all(ggml_graph_node(copy.graph, -1)), read_all(model.y));
    ggml_backend_graph_copy_free(copy);
}

struct Comparison {
    std::vector<int> indices;
    bool all_equal = true;
    int stop_after = -1;
};

bool compare_nodes(int index, ggml_tensor * t1, ggml_tensor * t2, void * data) {
    auto * c = static_cast<Comparison *>(data);
    c->indices.push_back(index);
    c->all_equal = c->all_equal && read_all(t1) == read_all(t2);
    return static_cast<int>(c->indices.size()) != c->stop_after;
}

TEST(BackendCompareGraph, EveryComputedNodeIsComparedInOrder) {
    ggml_backend_ptr cpu(ggml_backend_cpu_init()), device(ggml_backend_dev_init(vgpu(), nullptr));
    ggml_context_ptr ctx = make_ctx();
    ggml_tensor * w = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 8, 6);
    ggml_tensor * x = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 8, 3);
    ggml_tensor * product = ggml_mul_mat(ctx.get(), w, x);
    ggml_tensor * y = ggml_add(ctx.get(), ggml_view_2d(ctx.get(), product, 6, 3, product->nb[1], 0), product);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, y);
    ggml_backend_buffer_ptr buffer(ggml_backend_alloc_ctx_tensors(ctx.get(), cpu.get()));
    SmallModel::set(w, iota_values(48, -3.0f));
    SmallModel::set(x, iota_values(24, 0.25f));

    Comparison all;
    ASSERT_TRUE(ggml_backend_compare_graph_backend(cpu.get(), device.get(), graph, compare_nodes, &all, nullptr, 0));
    EXPECT_EQ(all.indices, std::vector<int>({0, 2}));  // the view (node 1) computes nothing
    EXPECT_TRUE(all.all_equal);

    Comparison first;
    first.stop_after = 1;
    ASSERT_TRUE(ggml_backend_compare_graph_backend(cpu.get(), device.get(), graph, compare_nodes, &first, nullptr, 0));
    EXPECT_EQ(first.indices, std::vector<int>({0}));

    Comparison only_y;
    const ggml_tensor * tested[] = {y};
    ASSERT_TRUE(ggml_backend_compare_graph_backend(cpu.get(), device.get(), graph, compare_nodes, &only_y, tested, 1));
    EXPECT_EQ(only_y.indices, std::vector<int>({2}));
}

TEST(BackendSched, BufferTypeReserveSizeAndSplitGraph) {
    ggml_backend_ptr device(ggml_backend_dev_init(vgpu(), nullptr)), cpu(ggml_backend_cpu_init());
    ggml_backend_t backends[] = {device.get(), cpu.get()};
    ggml_backend_sched_ptr sched(ggml_backend_sched_new(backends, nullptr, 2, 256, false, false));
    EXPECT_EQ(ggml_backend_sched_get_buffer_type(sched.get(), device.get()), ggml_backend_dev_buffer_type(vgpu()));
    EXPECT_EQ(ggml_backend_sched_get_buffer_type(sched.get(), cpu.get()), ggml_backend_cpu_buffer_type());
    ggml_backend_ptr outsider(ggml_backend_cpu_init());
    EXPECT_EQ(ggml_backend_sched_get_buffer_type(sched.get(), outsider.get()), nullptr);

    ggml_context_ptr weights_ctx = make_ctx(), ctx = make_ctx();
    ggml_tensor * w = ggml_new_tensor_2d(weights_ctx.get(), GGML_TYPE_F32, 64, 64);
    ggml_backend_buffer_ptr weights(ggml_backend_alloc_ctx_tensors(weights_ctx.get(), device.get()));
    ggml_backend_buffer_set_usage(weights.get(), GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ggml_tensor * x = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 64, 64);
    ggml_set_input(x);
    ggml_tensor * y = ggml_sqr(ctx.get(), ggml_mul_mat(ctx.get(), w, ggml_sqr(ctx.get(), x)));
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, y);

    size_t sizes[2] = {1, 1};
    ggml_backend_sched_reserve_size(sched.get(), graph, sizes);
    EXPECT_EQ(ggml_backend_sched_get_buffer_size(sched.get(), device.get()), 0u);  // nothing allocated
    ASSERT_TRUE(ggml_backend_sched_reserve(sched.get(), graph)) << ggml_backend_get_last_error();
    EXPECT_EQ(sizes[0], ggml_backend_sched_get_buffer_size(sched.get(), device.get()));
    EXPECT_EQ(sizes[1], ggml_backend_sched_get_buffer_size(sched.get(), cpu.get()));
    EXPECT_GT(sizes[0] + sizes[1], 0u);

    ggml_backend_sched_reset(sched.get());
    ggml_backend_sched_split_graph(sched.get(), graph);
    EXPECT_EQ(ggml_backend_sched_get_n_splits(sched.get()), 3);  // sqr on CPU, mul_mat on vgpu, sqr on CPU
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), y), cpu.get());
    EXPECT_EQ(y->data, nullptr);  // split, not allocated
}

TEST(BackendGuid, OnePerImplementation) {
    ggml_backend_ptr a(ggml_backend_cpu_init()), b(ggml_backend_cpu_init()), v(ggml_backend_dev_init(vgpu(), nullptr));
    EXPECT_TRUE(ggml_guid_matches(ggml_backend_guid(a.get()), ggml_backend_guid(b.get())));
    EXPECT_TRUE(ggml_guid_matches(ggml_backend_guid(a.get()), ggml_backend_guid(v.get())));  // CPU kernels too
}

TEST(BackendHostPointers, BuffersOverCallerMemory) {
    alignas(64) float memory[32] = {};
    ggml_backend_buffer_ptr buffer(ggml_backend_cpu_buffer_from_ptr(memory, sizeof memory));
    ASSERT_NE(buffer, nullptr);
    EXPECT_EQ(ggml_backend_buffer_get_base(buffer.get()), memory);
    EXPECT_EQ(ggml_backend_buffer_get_size(buffer.get()), sizeof memory);
    EXPECT_EQ(ggml_backend_buffer_get_type(buffer.get()), ggml_backend_cpu_buffer_type());
    EXPECT_TRUE(ggml_backend_buffer_is_host(buffer.get()));
    ggml_context_ptr ctx = make_ctx();
    ggml_tensor * t = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 8);
    ASSERT_EQ(ggml_backend_tensor_alloc(buffer.get(), t, memory + 16), GGML_STATUS_SUCCESS);
    const std::vector<float> values = iota_values(8);
    ggml_backend_tensor_set(t, values.data(), 0, 8 * sizeof(float));
    EXPECT_EQ(memory[16], 1.0f);
    EXPECT_EQ(memory[23], 8.0f);
    buffer.reset();  // the memory stays the caller's
    EXPECT_EQ(memory[23], 8.0f);

    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    ggml_backend_dev_props props;
    ggml_backend_dev_get_props(cpu, &props);
    EXPECT_TRUE(props.caps.buffer_from_host_ptr);
    ggml_backend_buffer_ptr from_device(ggml_backend_dev_buffer_from_host_ptr(cpu, memory, sizeof memory, 64));
    ASSERT_NE(from_device, nullptr);
    EXPECT_EQ(ggml_backend_buffer_get_base(from_device.get()), memory);
    EXPECT_EQ(ggml_backend_dev_buffer_from_host_ptr(vgpu(), memory, sizeof memory, 64), nullptr);
    EXPECT_NE(std::string(ggml_backend_get_last_error()).find("not supported"), std::string::npos);
}

ggml_backend_meta_split_state split_nothing(const ggml_tensor *, void *) { return {}; }

TEST(BackendMeta, OneDeviceIsItselfAndSplittingIsRefused) {
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    ggml_backend_dev_t one[] = {cpu};
    EXPECT_EQ(ggml_backend_meta_device(one, 1, split_nothing, nullptr), cpu);
    ggml_backend_dev_t two[] = {cpu, vgpu()};
    EXPECT_EQ(ggml_backend_meta_device(two, 2, split_nothing, nullptr), nullptr);
    EXPECT_NE(std::string(ggml_backend_get_last_error()).find("2 devices"), std::string::npos);
    EXPECT_STREQ(ggml_backend_meta_split_axis_name(GGML_BACKEND_SPLIT_AXIS_0), "0");
    EXPECT_STREQ(ggml_backend_meta_split_axis_name(GGML_BACKEND_SPLIT_AXIS_3), "3");
    EXPECT_STREQ(ggml_backend_meta_split_axis_name(GGML_BACKEND_SPLIT_AXIS_MIRRORED), "MIRRORED");
    EXPECT_STREQ(ggml_backend_meta_split_axis_name(GGML_BACKEND_SPLIT_AXIS_PARTIAL), "PARTIAL");
    EXPECT_STREQ(ggml_backend_meta_split_axis_name(GGML_BACKEND_SPLIT_AXIS_NONE), "NONE");
    EXPECT_STREQ(ggml_backend_meta_split_axis_name(GGML_BACKEND_SPLIT_AXIS_UNKNOWN), "UNKNOWN");
    EXPECT_EQ(ggml_backend_meta_split_axis_name(static_cast<ggml_backend_meta_split_axis>(5)), nullptr);
}

TEST(Tallocr, PlacesTensorsOneAfterAnotherAligned) {
    ggml_backend_buffer_ptr buffer(ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 256));
    ggml_tallocr talloc = ggml_tallocr_new(buffer.get());
    EXPECT_EQ(talloc.buffer, buffer.get());
    EXPECT_EQ(talloc.alignment, ggml_backend_buffer_get_alignment(buffer.get()));
    ggml_context_ptr ctx = make_ctx();
    ggml_tensor * a = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 5);  // 20 bytes, padded to 64
    ggml_tensor * b = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 40);
    ggml_tensor * c = ggml_set_name(ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 32), "c");
    ASSERT_EQ(ggml_tallocr_alloc(&talloc, a), GGML_STATUS_SUCCESS);
    ASSERT_EQ(ggml_tallocr_alloc(&talloc, b), GGML_STATUS_SUCCESS);
    EXPECT_EQ(a->data, ggml_backend_buffer_get_base(buffer.get()));
    EXPECT_EQ(static_cast<char *>(b->data) - static_cast<char *>(a->data), 64);
    EXPECT_EQ(talloc.offset, 64u + 192u);
    EXPECT_EQ(a->buffer, buffer.get());
    EXPECT_EQ(ggml_tallocr_alloc(&talloc, c), GGML_STATUS_ALLOC_FAILED);
    EXPECT_NE(std::string(ggml_backend_get_last_error()).find("'c' needs 128 bytes"), std::string::npos)
        << ggml_backend_get_last_error();
    EXPECT_EQ(c->data, nullptr);
}

TEST(AllocSizes, ContextAndGraphSizesMatchWhatIsAllocated) {
    ggml_context_ptr ctx = make_ctx();
    ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 5);
    ggml_new_tensor_2d(ctx.get(), GGML_TYPE_Q8_0, 64, 3);
    const size_t expected = ggml_backend_alloc_ctx_tensors_from_buft_size(ctx.get(), ggml_backend_cpu_buffer_type());
    ggml_backend_buffer_ptr buffer(ggml_backend_alloc_ctx_tensors_from_buft(ctx.get(), ggml_backend_cpu_buffer_type()));
    EXPECT_EQ(ggml_backend_buffer_get_size(buffer.get()), expected);
    EXPECT_EQ(ggml_backend_alloc_ctx_tensors_from_buft_size(ctx.get(), ggml_backend_cpu_buffer_type()), 0u);

    ggml_context_ptr graph_ctx = make_ctx();
    ggml_tensor * x = ggml_new_tensor_1d(graph_ctx.get(), GGML_TYPE_F32, 1000);
    ggml_cgraph * graph = ggml_new_graph(graph_ctx.get());
    ggml_build_forward_expand(graph, ggml_sqr(graph_ctx.get(), ggml_scale(graph_ctx.get(), x, 2.0f)));
    ggml_gallocr_ptr galloc(ggml_gallocr_new(ggml_backend_cpu_buffer_type()));
    size_t reserve_size = 0, measured = 0;
    ggml_gallocr_reserve_n_size(galloc.get(), graph, nullptr, nullptr, &reserve_size);
    ggml_gallocr_measure_n(galloc.get(), graph, nullptr, nullptr, &measured);
    EXPECT_EQ(reserve_size, measured);
    EXPECT_EQ(ggml_gallocr_get_buffer_size(galloc.get(), 0), 0u);  // nothing allocated
    ASSERT_TRUE(ggml_gallocr_reserve(galloc.get(), graph));
    EXPECT_EQ(ggml_gallocr_get_buffer_size(galloc.get(), 0), reserve_size);
}

}  // namespace
