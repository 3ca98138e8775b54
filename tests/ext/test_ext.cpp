// The extension interface, part 1 (include/ggml-ext.h): every sentence of the specification's sections
// "Operator definitions" and "Kernel selection" (../shared/spec/ggml-extensions.md), each test quoting
// the sentence it checks. Registrations are process-wide and permanent, so every test registers its
// kernels on a virtual device of its own and its operators under names of its own.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml-graph.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "support/test_util.h"

namespace ggx::test {
namespace {

Context new_context() { return Context(ggml_init({size_t{4} << 20, nullptr, true})); }

// A virtual device of its own for each caller (ops: what its native implementation supports).
ggml_backend_dev_t fresh_device(const std::vector<ggml_op> & ops) {
    static std::atomic<int> counter{0};
    const std::string name = "ext_test_dev_" + std::to_string(counter++);
    return ggml_backend_cpu_add_virtual_device(name.c_str(), ops.data(), static_cast<int>(ops.size()));
}

// ---------------------------------------------------------------------------------------------
// A test operator: y = x * scale + offset (attributes), optionally + bias (a second input of x's shape).

struct AffineAttrs {
    float scale, offset;
};

bool infer_same_as_first(const ggml_tensor * const * inputs, int n_inputs, const void *, size_t,
                         ggml_type * type, int64_t ne[GGML_MAX_DIMS], char * why, size_t why_size, void *) {
    if (n_inputs == 2 && !ggml_are_same_shape(inputs[0], inputs[1])) {
        std::snprintf(why, why_size, "bias must have x's shape");
        return false;
    }
    *type = GGML_TYPE_F32;
    std::copy(inputs[0]->ne, inputs[0]->ne + GGML_MAX_DIMS, ne);
    return true;
}

ggml_ext_op_desc affine_desc(const char * name) {
    return {sizeof(ggml_ext_op_desc),
            GGML_EXT_OP_DESC_VERSION,
            name,
            sizeof(AffineAttrs),
            1,
            2,
            infer_same_as_first,
            nullptr};
}

ggml_ext_op_t affine_op(const std::string & name) {
    ggml_ext_op_t op = ggml_ext_find_op(name.c_str());
    if (op) return op;
    const ggml_ext_op_desc desc = affine_desc(name.c_str());
    return ggml_ext_register_op(&desc);
}

ggml_tensor * affine(ggml_context * ctx, ggml_ext_op_t op, ggml_tensor * x, float scale, float offset,
                     ggml_tensor * bias = nullptr) {
    const AffineAttrs attrs{scale, offset};
    ggml_tensor * inputs[] = {x, bias};
    return ggml_ext_op_create(ctx, op, inputs, bias ? 2 : 1, &attrs, sizeof attrs);
}

// What every kernel below records, and the knobs the tests turn.
struct Probe {
    std::atomic<int> supports_calls{0}, prepares{0}, executes{0}, destroys{0};
    bool supports = true, preferred = true;
    size_t workspace_request = 0;
    bool prepare_saw_data = false;  // prepare ran with tensor addresses (it must not need them)
    ggml_status prepare_status = GGML_STATUS_SUCCESS, execute_status = GGML_STATUS_SUCCESS;
    ggml_backend_t last_backend = nullptr;
    void * last_workspace = nullptr;
    ggml_backend_buffer_type_t last_workspace_type = nullptr;
    size_t last_workspace_size = 0;
    float add = 0.0f;  // the override kernels add this to what native computes, to tell them apart
};

bool probe_supports(ggml_backend_dev_t, const ggml_tensor *, void * user) {
    auto * p = static_cast<Probe *>(user);
    ++p->supports_calls;
    return p->supports;
}
bool probe_preferred(ggml_backend_dev_t, const ggml_tensor *, void * user) {
    return static_cast<Probe *>(user)->preferred;
}
ggml_status probe_prepare(const ggml_ext_prepare_params * params, void ** state, size_t * workspace) {
    auto * p = static_cast<Probe *>(params->user_data);
    ++p->prepares;
    p->prepare_saw_data = p->prepare_saw_data || params->node->data != nullptr;
    if (p->prepare_status != GGML_STATUS_SUCCESS) {
        ggml_ext_set_error("the probe was told to fail in prepare");
        return p->prepare_status;
    }
    *state = new int(42);
    *workspace = p->workspace_request;
    return GGML_STATUS_SUCCESS;
}
void probe_destroy(void * state, void * user) {
    EXPECT_EQ(*static_cast<int *>(state), 42);
    delete static_cast<int *>(state);
    ++static_cast<Probe *>(user)->destroys;
}

// Records the call, checks the state, touches the whole workspace request; then the node's math.
bool probe_execute_common(const ggml_ext_execute_params * params, Probe * p) {
    ++p->executes;
    p->last_backend = params->backend;
    p->last_workspace = params->workspace_data;
    p->last_workspace_type = params->workspace ? ggml_backend_buffer_get_type(params->workspace) : nullptr;
    p->last_workspace_size = params->workspace_size;
    EXPECT_NE(params->state, nullptr);
    if (params->state) {
        EXPECT_EQ(*static_cast<int *>(params->state), 42);
    }
    if (p->workspace_request) {
        EXPECT_GE(params->workspace_size, p->workspace_request);
        std::memset(params->workspace_data, 0xab, p->workspace_request);
    }
    if (p->execute_status != GGML_STATUS_SUCCESS) ggml_ext_set_error("the probe was told to fail in execute");
    return p->execute_status == GGML_STATUS_SUCCESS;
}

ggml_status affine_execute(const ggml_ext_execute_params * params) {
    auto * p = static_cast<Probe *>(params->user_data);
    if (!probe_execute_common(params, p)) return p->execute_status;
    const ggml_tensor * node = params->node;
    AffineAttrs a;
    size_t size = 0;
    std::memcpy(&a, ggml_ext_node_attrs(node, &size), sizeof a);
    const float * x = static_cast<const float *>(node->src[0]->data);
    const float * bias = node->src[1] ? static_cast<const float *>(node->src[1]->data) : nullptr;
    float * y = static_cast<float *>(node->data);
    for (int64_t i = 0; i < ggml_nelements(node); ++i)
        y[i] = x[i] * a.scale + a.offset + (bias ? bias[i] : 0.0f) + p->add;
    return GGML_STATUS_SUCCESS;
}

// An override of the built-in ADD (F32, contiguous, same shapes): a + b + probe.add.
ggml_status add_execute(const ggml_ext_execute_params * params) {
    auto * p = static_cast<Probe *>(params->user_data);
    if (!probe_execute_common(params, p)) return p->execute_status;
    const ggml_tensor * node = params->node;
    const float * a = static_cast<const float *>(node->src[0]->data);
    const float * b = static_cast<const float *>(node->src[1]->data);
    float * y = static_cast<float *>(node->data);
    for (int64_t i = 0; i < ggml_nelements(node); ++i)
        y[i] = a[i] + b[i] + p->add;
    return GGML_STATUS_SUCCESS;
}

ggml_ext_kernel_desc kernel_desc(const char * name, ggml_op op, ggml_ext_op_t custom, int priority,
                                 Probe * probe, bool with_preferred = true) {
    ggml_ext_kernel_desc d{};
    d.struct_size = sizeof d;
    d.version = GGML_EXT_KERNEL_DESC_VERSION;
    d.name = name;
    d.op = op;
    d.custom_op = custom;
    d.priority = priority;
    d.supports = probe_supports;
    d.preferred = with_preferred ? probe_preferred : nullptr;
    d.prepare = probe_prepare;
    d.execute = custom ? affine_execute : add_execute;
    d.destroy = probe_destroy;
    d.user_data = probe;
    return d;
}

// A device with its backend and a scheduler over {device, CPU}.
struct Rig {
    explicit Rig(const std::vector<ggml_op> & native_ops)
        : device(fresh_device(native_ops)),
          backend(ggml_backend_dev_init(device, nullptr)),
          cpu(ggml_backend_cpu_init()) {}
    Sched sched() {
        ggml_backend_t list[] = {backend.get(), cpu.get()};
        return Sched(ggml_backend_sched_new(list, nullptr, 2, 1024, false, false));
    }
    ggml_backend_dev_t device;
    Backend backend, cpu;
};

// x (INPUT, [n]) -> node built by make(ctx, x) -> graph
struct OneNode {
    template <class Make>
    OneNode(int64_t n, Make make) : ctx(new_context()) {
        x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, n);
        ggml_set_input(x);
        y = make(ctx.get(), x);
        ggml_set_output(y);
        graph = ggml_new_graph(ctx.get());
        ggml_build_forward_expand(graph, y);
    }
    Context ctx;
    ggml_tensor *x, *y;
    ggml_cgraph * graph;
};

// ---------------------------------------------------------------------------------------------
// Operator definitions

// "ggml_ext_register_op registers a versioned name, attribute size, and an output metadata inference
// callback."
TEST(ExtOps, RegistersVersionedNamesWithAttributesAndInference) {
    // Untrusted input: refused with a status even in the default, aborting error mode.
    ScopedErrorMode aborting(GGML_EXT_ERROR_ABORT);
    ggml_ext_op_t op = affine_op("test.affine_register.v1");
    ASSERT_NE(op, nullptr) << ggml_backend_get_last_error();
    EXPECT_STREQ(ggml_ext_op_name(op), "test.affine_register.v1");
    EXPECT_EQ(ggml_ext_find_op("test.affine_register.v1"), op);
    EXPECT_EQ(ggml_ext_find_op("test.affine_unknown.v1"), nullptr);
    for (const char * bad : {"affine", "test.affine", "test.affine.v", "test.affine.vx", "Test.affine.v1",
                             ".a.v1", "test..affine.v1", "test.af-fine.v1"}) {
        const ggml_ext_op_desc desc = affine_desc(bad);
        EXPECT_EQ(ggml_ext_register_op(&desc), nullptr) << bad;
        EXPECT_TRUE(contains(ggml_backend_get_last_error(), "versioned")) << ggml_backend_get_last_error();
    }
    ggml_ext_op_desc no_infer = affine_desc("test.affine_no_infer.v1");
    no_infer.infer = nullptr;
    EXPECT_EQ(ggml_ext_register_op(&no_infer), nullptr);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "inference"));
    ggml_ext_op_desc old_abi = affine_desc("test.affine_old.v1");
    old_abi.struct_size = sizeof(ggml_ext_op_desc) - 8;
    EXPECT_EQ(ggml_ext_register_op(&old_abi), nullptr);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "struct_size"));
    EXPECT_EQ(ggml_ext_register_op(nullptr), nullptr);
}

// "Registration names are unique, and duplicate registrations fail rather than replacing live
// implementations."
TEST(ExtOps, DuplicateOperatorNamesFailAndKeepTheLiveOne) {
    ggml_ext_op_t op = affine_op("test.affine_dup.v1");
    ASSERT_NE(op, nullptr);
    ggml_ext_op_desc again = affine_desc("test.affine_dup.v1");
    again.attr_size = 4;
    EXPECT_EQ(ggml_ext_register_op(&again), nullptr);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "already registered"));
    EXPECT_EQ(ggml_ext_find_op("test.affine_dup.v1"), op);
    Context ctx = new_context();
    ggml_tensor * x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    EXPECT_NE(affine(ctx.get(), op, x, 2.0f, 1.0f), nullptr);  // still takes 8 bytes of attributes
}

// "ggml_ext_op_create creates an ordinary ggml tensor with explicit input dependencies." and "The
// initial interface supports one contiguous, out-of-place output with an existing ggml_type."
TEST(ExtOps, CreatesOrdinaryTensorsWithExplicitInputs) {
    ggml_ext_op_t op = affine_op("test.affine_create.v1");
    Context ctx = new_context();
    ggml_tensor * x = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 6, 3);
    ggml_tensor * bias = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 6, 3);
    ggml_tensor * y = affine(ctx.get(), op, x, 2.0f, 0.5f, bias);
    ASSERT_NE(y, nullptr) << ggml_get_error(ctx.get());
    EXPECT_EQ(y->src[0], x);
    EXPECT_EQ(y->src[1], bias);
    EXPECT_EQ(y->src[2], nullptr);
    EXPECT_EQ(y->view_src, nullptr);
    EXPECT_TRUE(ggml_is_contiguous(y));
    EXPECT_EQ(y->type, GGML_TYPE_F32);
    EXPECT_TRUE(ggml_are_same_shape(y, x));
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, y);
    EXPECT_EQ(ggml_graph_n_nodes(graph), 1);
    EXPECT_TRUE(ggml_graph_get_use_count(graph, x) == 1 && ggml_graph_get_use_count(graph, bias) == 1);
}

// "Attributes are copied into the unused portion of op_params. They are small, plain values; use
// memcpy when reading attributes that need stricter alignment."
TEST(ExtOps, CopiesAttributesIntoOpParams) {
    ggml_ext_op_t op = affine_op("test.affine_attrs.v1");
    Context ctx = new_context();
    ggml_tensor * x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    AffineAttrs attrs{3.0f, -1.0f};
    ggml_tensor * y = ggml_ext_op_create(ctx.get(), op, &x, 1, &attrs, sizeof attrs);
    attrs.scale = 100.0f;  // the node keeps its copy
    size_t size = 0;
    const void * stored = ggml_ext_node_attrs(y, &size);
    ASSERT_NE(stored, nullptr);
    EXPECT_EQ(size, sizeof(AffineAttrs));
    AffineAttrs copy;
    std::memcpy(&copy, stored, sizeof copy);
    EXPECT_EQ(copy.scale, 3.0f);
    EXPECT_EQ(copy.offset, -1.0f);
    EXPECT_GE(static_cast<const char *>(stored), reinterpret_cast<const char *>(y->op_params));
    EXPECT_LE(static_cast<const char *>(stored) + size,
              reinterpret_cast<const char *>(y->op_params) + GGML_MAX_OP_PARAMS);
    EXPECT_EQ(ggml_ext_node_attrs(x, &size), nullptr);

    // Attributes must fit op_params, and every node carries the operator's size exactly.
    ggml_ext_op_desc huge = affine_desc("test.affine_huge.v1");
    huge.attr_size = GGML_EXT_MAX_ATTR_SIZE + 1;
    EXPECT_EQ(ggml_ext_register_op(&huge), nullptr);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "do not fit"));
    const float one = 1.0f;
    EXPECT_EQ(ggml_ext_op_create(ctx.get(), op, &x, 1, &one, sizeof one), nullptr);
    EXPECT_TRUE(contains(ggml_get_error(ctx.get()), "attributes of 4 bytes"));
}

// "Auxiliary tensors must appear in src, not in an attribute pointer or user data." (inputs are
// counted against the operator's bounds; inference sees them all)
TEST(ExtOps, InputsAreCheckedAgainstTheOperatorAndItsInference) {
    ggml_ext_op_t op = affine_op("test.affine_inputs.v1");
    Context ctx = new_context();
    ggml_tensor * x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    ggml_tensor * wrong = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 5);
    const AffineAttrs attrs{1.0f, 0.0f};
    ggml_tensor * three[] = {x, x, x};
    EXPECT_EQ(ggml_ext_op_create(ctx.get(), op, three, 3, &attrs, sizeof attrs), nullptr);
    EXPECT_TRUE(contains(ggml_get_error(ctx.get()), "3 inputs given"));
    ggml_clear_error(ctx.get());
    EXPECT_EQ(ggml_ext_op_create(ctx.get(), op, three, 0, &attrs, sizeof attrs), nullptr);
    ggml_clear_error(ctx.get());
    EXPECT_EQ(affine(ctx.get(), op, x, 1.0f, 0.0f, wrong), nullptr);
    EXPECT_TRUE(contains(ggml_get_error(ctx.get()), "bias must have x's shape"));
    ggml_clear_error(ctx.get());
    ggml_tensor * missing[] = {nullptr};
    EXPECT_EQ(ggml_ext_op_create(ctx.get(), op, missing, 1, &attrs, sizeof attrs), nullptr);
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);  // an earlier failure: nothing new to report
}

// "Registered operators use GGML_OP_CUSTOM internally, with an identifiable callback marker.
// Unsupported devices do not mistake them for CPU callbacks."
TEST(ExtOps, NodesAreMarkedCustomAndNotTakenForCpuCallbacks) {
    ggml_ext_op_t op = affine_op("test.affine_marker.v1");
    OneNode g(8, [&](ggml_context * c, ggml_tensor * x) { return affine(c, op, x, 2.0f, 0.0f); });
    EXPECT_EQ(g.y->op, GGML_OP_CUSTOM);
    EXPECT_EQ(ggml_get_custom_kind(g.y), GGML_CUSTOM_KIND_EXTENSION);
    EXPECT_EQ(ggml_ext_node_op(g.y), op);
    ggml_custom_op_t fun = nullptr;
    int n_tasks = 0;
    void * user = nullptr;
    EXPECT_FALSE(ggml_get_custom_callback(g.y, &fun, &n_tasks, &user));
    // No kernel for it anywhere: the CPU refuses it, and computing names the node.
    Backend cpu(ggml_backend_cpu_init());
    EXPECT_FALSE(ggml_backend_supports_op(cpu.get(), g.y));
    Buffer buffer(ggml_backend_alloc_ctx_tensors(g.ctx.get(), cpu.get()));
    ggml_set_name(g.y, "marked");
    EXPECT_EQ(ggml_backend_graph_compute(cpu.get(), g.graph), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "'marked'")) << ggml_backend_get_last_error();
}

// ---------------------------------------------------------------------------------------------
// Kernel selection

// "ggml_ext_register_kernel(device, &desc) associates a kernel with a built-in ggml_op, or with a
// registered custom operator."
TEST(ExtKernels, RegisterForBuiltInOpsAndCustomOperators) {
    // Untrusted input: refused with a status even in the default, aborting error mode.
    ScopedErrorMode aborting(GGML_EXT_ERROR_ABORT);
    Rig rig({GGML_OP_ADD});
    ggml_ext_op_t op = affine_op("test.affine_kernels.v1");
    Probe p;
    const ggml_ext_kernel_desc custom = kernel_desc("affine.test", GGML_OP_CUSTOM, op, 0, &p);
    const ggml_ext_kernel_desc add = kernel_desc("add.test", GGML_OP_ADD, nullptr, 0, &p);
    EXPECT_TRUE(ggml_ext_register_kernel(rig.device, &custom)) << ggml_backend_get_last_error();
    EXPECT_TRUE(ggml_ext_register_kernel(rig.device, &add)) << ggml_backend_get_last_error();

    // Duplicates fail and keep the live kernel.
    EXPECT_FALSE(ggml_ext_register_kernel(rig.device, &add));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "already has a kernel"));
    // Malformed descriptors.
    ggml_ext_kernel_desc bad = kernel_desc("bad.test", GGML_OP_CUSTOM, nullptr, 0, &p);
    EXPECT_FALSE(ggml_ext_register_kernel(rig.device, &bad));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "custom_op"));
    bad = kernel_desc("bad.test", GGML_OP_ADD, op, 0, &p);
    EXPECT_FALSE(ggml_ext_register_kernel(rig.device, &bad));
    bad = kernel_desc("bad.test", GGML_OP_VIEW, nullptr, 0, &p);
    EXPECT_FALSE(ggml_ext_register_kernel(rig.device, &bad));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "compute nothing"));
    bad = kernel_desc("bad.test", GGML_OP_ADD, nullptr, 0, &p);
    bad.execute = nullptr;
    EXPECT_FALSE(ggml_ext_register_kernel(rig.device, &bad));
    bad = kernel_desc("bad.test", GGML_OP_ADD, nullptr, 0, &p);
    bad.struct_size = 16;
    EXPECT_FALSE(ggml_ext_register_kernel(rig.device, &bad));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "struct_size"));
    EXPECT_FALSE(ggml_ext_register_kernel(nullptr, &add));

    OneNode g(8, [&](ggml_context * c, ggml_tensor * x) { return affine(c, op, x, 2.0f, 1.0f); });
    EXPECT_STREQ(ggml_ext_dev_selected_kernel(rig.device, g.y), "affine.test");
}

// "supports describes correctness constraints; preferred optionally decides whether to override an
// available native implementation."
TEST(ExtKernels, PreferredDecidesOverridesOfAvailableNative) {
    Rig rig({GGML_OP_ADD});
    Probe with, without;
    const ggml_ext_kernel_desc d1 = kernel_desc("add.preferred", GGML_OP_ADD, nullptr, 0, &with);
    const ggml_ext_kernel_desc d2 = kernel_desc("add.no_preferred", GGML_OP_ADD, nullptr, 5, &without, false);
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &d1));
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &d2));
    OneNode g(8, [](ggml_context * c, ggml_tensor * x) { return ggml_add(c, x, x); });
    with.preferred = true;
    EXPECT_STREQ(ggml_ext_dev_selected_kernel(rig.device, g.y),
                 "add.preferred");  // d2: no preferred, native stays
    with.preferred = false;
    EXPECT_STREQ(ggml_ext_dev_selected_kernel(rig.device, g.y), "native");
    with.preferred = true;
    with.supports = false;  // correctness first
    EXPECT_STREQ(ggml_ext_dev_selected_kernel(rig.device, g.y), "native");
}

// "Higher priorities are considered first."
TEST(ExtKernels, HigherPrioritiesAreConsideredFirst) {
    Rig rig({GGML_OP_ADD});
    Probe low, high;
    const ggml_ext_kernel_desc d_low = kernel_desc("add.low", GGML_OP_ADD, nullptr, 1, &low);
    const ggml_ext_kernel_desc d_high = kernel_desc("add.high", GGML_OP_ADD, nullptr, 9, &high);
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &d_low));  // registered first
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &d_high));
    OneNode g(8, [](ggml_context * c, ggml_tensor * x) { return ggml_add(c, x, x); });
    EXPECT_STREQ(ggml_ext_dev_selected_kernel(rig.device, g.y), "add.high");
    high.supports = false;
    EXPECT_STREQ(ggml_ext_dev_selected_kernel(rig.device, g.y), "add.low");
}

// "When native execution is unsupported, a supported extension can run regardless of its preference
// callback." and "Capability queries include registered single-node implementations, so the
// scheduler can select a device even when its native implementation rejects the operator."
TEST(ExtKernels, RunsWhereNativeIsUnsupportedAndCountsForCapability) {
    Rig rig({GGML_OP_MUL});  // natively: no ADD
    Probe p;
    p.preferred = false;
    p.add = 1000.0f;
    const ggml_ext_kernel_desc d = kernel_desc("add.fallback", GGML_OP_ADD, nullptr, 0, &p);
    OneNode g(8, [](ggml_context * c, ggml_tensor * x) { return ggml_add(c, x, x); });
    EXPECT_FALSE(ggml_backend_dev_supports_op(rig.device, g.y));
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &d));
    EXPECT_TRUE(ggml_backend_dev_supports_op(rig.device, g.y));
    EXPECT_FALSE(ggml_ext_dev_supports_native_op(rig.device, g.y));
    // "Registrations are in-process and scoped to a backend device.": another device with the same
    // native ops gains nothing.
    EXPECT_FALSE(ggml_backend_dev_supports_op(fresh_device({GGML_OP_MUL}), g.y));

    Sched sched = rig.sched();
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph)) << ggml_backend_get_last_error();
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), g.y), rig.backend.get());
    const std::vector<float> x = ramp(8, -1.0f, 0.125f);
    write_f32(g.x, x);
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    const std::vector<float> y = read_f32(g.y);
    for (size_t i = 0; i < y.size(); ++i)
        EXPECT_EQ(y[i], x[i] + x[i] + 1000.0f);
    EXPECT_EQ(p.executes, 1);
    EXPECT_EQ(p.last_backend, rig.backend.get());
}

// "ggml_ext_dev_supports_native_op queries the original device implementation without extension
// dispatch."
TEST(ExtKernels, NativeQueryIgnoresExtensions) {
    Rig rig({GGML_OP_ADD});
    ggml_ext_op_t op = affine_op("test.affine_native.v1");
    Probe p;
    const ggml_ext_kernel_desc d = kernel_desc("affine.native_query", GGML_OP_CUSTOM, op, 0, &p);
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &d));
    OneNode custom(4, [&](ggml_context * c, ggml_tensor * x) { return affine(c, op, x, 1.0f, 0.0f); });
    OneNode add(4, [](ggml_context * c, ggml_tensor * x) { return ggml_add(c, x, x); });
    EXPECT_TRUE(ggml_backend_dev_supports_op(rig.device, custom.y));
    EXPECT_FALSE(ggml_ext_dev_supports_native_op(rig.device, custom.y));
    EXPECT_TRUE(ggml_ext_dev_supports_native_op(rig.device, add.y));
}

// "Callbacks inspect metadata only and must not recursively call the public capability query for the
// same device and operator." (detected and reported, never a hang or a stack overflow)
TEST(ExtKernels, RecursiveCapabilityQueriesAreDetected) {
    Rig rig({GGML_OP_MUL});
    ggml_ext_kernel_desc d{};
    d.struct_size = sizeof d;
    d.version = GGML_EXT_KERNEL_DESC_VERSION;
    d.name = "add.recursive";
    d.op = GGML_OP_ADD;
    d.supports = [](ggml_backend_dev_t device, const ggml_tensor * node, void *) {
        return ggml_backend_dev_supports_op(device, node);  // forbidden
    };
    d.execute = add_execute;
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &d));
    OneNode g(4, [](ggml_context * c, ggml_tensor * x) { return ggml_add(c, x, x); });
    EXPECT_FALSE(ggml_backend_dev_supports_op(rig.device, g.y));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "while that same query was running"))
        << ggml_backend_get_last_error();
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "add.recursive"));
}

// "prepare creates optional host-side plan state and reports workspace bytes. It can run during
// memory measurement, before tensor addresses are assigned, and must not launch work or allocate
// device buffers." and "Workspace is allocated by ggml before execution and included in scheduler
// memory estimates and buffer-size reports."
TEST(ExtKernels, PrepareRunsDuringMeasurementAndWorkspaceIsReported) {
    Rig rig({GGML_OP_ADD});
    ggml_ext_op_t op = affine_op("test.affine_prepare.v1");
    Probe p;
    p.workspace_request = size_t{3} << 20;
    const ggml_ext_kernel_desc d = kernel_desc("affine.prepare", GGML_OP_CUSTOM, op, 0, &p);
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &d));
    OneNode g(64, [&](ggml_context * c, ggml_tensor * x) { return affine(c, op, x, 2.0f, 0.0f); });
    Sched sched = rig.sched();
    ASSERT_TRUE(ggml_backend_sched_reserve(sched.get(), g.graph)) << ggml_backend_get_last_error();
    EXPECT_EQ(p.prepares, 1);
    EXPECT_EQ(p.executes, 0);
    EXPECT_FALSE(p.prepare_saw_data);
    EXPECT_EQ(g.y->data, nullptr);
    EXPECT_GE(ggml_backend_sched_get_buffer_size(sched.get(), rig.backend.get()), p.workspace_request);
    EXPECT_EQ(p.destroys, 1);  // the measuring plan is released
}

// "execute receives the backend, workspace buffer, and current tensor addresses. destroy releases
// prepared state." and "scheduler plans and workspaces are reused across executions."
TEST(ExtKernels, ExecuteGetsBackendWorkspaceAndAddressesAndPlansAreReused) {
    Rig rig({GGML_OP_ADD});
    ggml_ext_op_t op = affine_op("test.affine_execute.v1");
    Probe p;
    p.workspace_request = 4096;
    const ggml_ext_kernel_desc d = kernel_desc("affine.execute", GGML_OP_CUSTOM, op, 0, &p);
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &d));
    OneNode g(32, [&](ggml_context * c, ggml_tensor * x) { return affine(c, op, x, 2.0f, 0.25f); });
    {
        Sched sched = rig.sched();
        ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph));
        const std::vector<float> x = ramp(32, -1.0f, 0.125f);
        write_f32(g.x, x);
        for (int run = 0; run < 3; ++run)
            ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS)
                << ggml_backend_get_last_error();
        EXPECT_EQ(p.prepares, 1);  // one plan, three executions
        EXPECT_EQ(p.executes, 3);
        EXPECT_EQ(p.last_backend, rig.backend.get());
        EXPECT_NE(p.last_workspace, nullptr);
        EXPECT_GE(p.last_workspace_size, p.workspace_request);
        // "Workspace is a backend buffer." (of the device's buffer type; its base is what kernels use)
        EXPECT_EQ(p.last_workspace_type, ggml_backend_dev_buffer_type(rig.device));
        const std::vector<float> y = read_f32(g.y);
        for (size_t i = 0; i < y.size(); ++i)
            EXPECT_EQ(y[i], x[i] * 2.0f + 0.25f);
        EXPECT_EQ(p.destroys, 0);
    }
    EXPECT_EQ(p.destroys, 1);  // with the scheduler
}

// "Workspace is scratch storage shared by sequential extension steps in a plan; its capacity is the
// maximum request, not the sum across nodes." (issue 5: 1 MiB and 3 MiB steps get a 3 MiB workspace)
TEST(ExtKernels, WorkspaceIsTheLargestRequestNotTheSum) {
    Rig rig({GGML_OP_ADD});
    ggml_ext_op_t small_op = affine_op("test.affine_ws_small.v1");
    ggml_ext_op_t large_op = affine_op("test.affine_ws_large.v1");
    Probe small, large;
    small.workspace_request = size_t{1} << 20;
    large.workspace_request = size_t{3} << 20;
    const ggml_ext_kernel_desc ds = kernel_desc("affine.ws_small", GGML_OP_CUSTOM, small_op, 0, &small);
    const ggml_ext_kernel_desc dl = kernel_desc("affine.ws_large", GGML_OP_CUSTOM, large_op, 0, &large);
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &ds));
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &dl));
    OneNode g(16, [&](ggml_context * c, ggml_tensor * x) {
        return affine(c, large_op, affine(c, small_op, x, 2.0f, 0.0f), 0.5f, 1.0f);
    });
    OneNode without(16, [&](ggml_context * c, ggml_tensor * x) { return ggml_add(c, x, x); });
    Sched sched = rig.sched();
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph)) << ggml_backend_get_last_error();
    const size_t with_workspace = ggml_backend_sched_get_buffer_size(sched.get(), rig.backend.get());
    write_f32(g.x, ramp(16, -1.0f, 0.125f));
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(small.last_workspace, large.last_workspace);  // shared, one after the other
    EXPECT_EQ(large.last_workspace_size, size_t{3} << 20);
    EXPECT_GE(with_workspace, size_t{3} << 20);
    EXPECT_LT(with_workspace, size_t{4} << 20);
}

// "A preparation or execution error is propagated; execution never retries a native implementation
// after launch."
TEST(ExtKernels, PrepareAndExecuteErrorsPropagateWithoutNativeRetry) {
    Rig rig({GGML_OP_ADD});
    Probe p;
    p.add = 500.0f;
    const ggml_ext_kernel_desc d = kernel_desc("add.failing", GGML_OP_ADD, nullptr, 0, &p);
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &d));
    OneNode g(8, [](ggml_context * c, ggml_tensor * x) { return ggml_add(c, x, x); });
    ggml_set_name(g.y, "sum");

    p.prepare_status = GGML_STATUS_FAILED;
    Sched failing_prepare = rig.sched();
    EXPECT_FALSE(ggml_backend_sched_alloc_graph(failing_prepare.get(), g.graph));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "told to fail in prepare"));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "'sum'")) << ggml_backend_get_last_error();

    p.prepare_status = GGML_STATUS_SUCCESS;
    p.execute_status = GGML_STATUS_FAILED;
    Sched sched = rig.sched();
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph));
    write_f32(g.x, ramp(8, -1.0f, 0.125f));
    ASSERT_EQ(ggml_ext_backend_tensor_memset(g.y, 0, 0, ggml_nbytes(g.y)), GGML_STATUS_SUCCESS);
    EXPECT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "told to fail in execute"));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "add.failing"));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "'sum'"));
    for (float v : read_f32(g.y))
        EXPECT_EQ(v, 0.0f);  // native did not run instead
}

// "Overriding a built-in operator preserves its numerical and aliasing contract, including allocator
// reuse of input storage. Explicit views/in-place nodes are not intercepted by this first interface."
TEST(ExtKernels, OverridesKeepAllocatorReuseAndLeaveInPlaceNodesAlone) {
    Rig rig({GGML_OP_ADD, GGML_OP_MUL});
    Probe p;
    const ggml_ext_kernel_desc d = kernel_desc("add.override", GGML_OP_ADD, nullptr, 0, &p);
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &d));
    // t = x * x (dies at the add, so the allocator may place the add over it), then in-place add.
    ggml_tensor * t = nullptr;
    ggml_tensor * sum = nullptr;
    OneNode g(64, [&](ggml_context * c, ggml_tensor * x) {
        t = ggml_mul(c, x, x);
        sum = ggml_add(c, t, x);
        return ggml_add_inplace(c, sum, x);
    });
    EXPECT_STREQ(ggml_ext_dev_selected_kernel(rig.device, sum), "add.override");
    EXPECT_STREQ(ggml_ext_dev_selected_kernel(rig.device, g.y), "native");  // explicit in-place: native
    Sched sched = rig.sched();
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph));
    EXPECT_EQ(sum->data, t->data);  // allocator reuse, as for the native op
    const std::vector<float> x = ramp(64, -1.0f, 0.125f);
    write_f32(g.x, x);
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    EXPECT_EQ(p.executes, 1);
    const std::vector<float> y = read_f32(g.y);
    for (size_t i = 0; i < y.size(); ++i)
        EXPECT_EQ(y[i], (x[i] * x[i] + x[i]) + x[i]);
}

// "Rebuild the scheduler allocation after changing graph metadata, selection policy, or
// registrations." (a stale plan is detected and refused with a clear error)
TEST(ExtKernels, StalePlansAreRefused) {
    Rig rig({GGML_OP_ADD});
    OneNode g(8, [](ggml_context * c, ggml_tensor * x) { return ggml_scale(c, ggml_add(c, x, x), 2.0f); });
    Sched sched = rig.sched();
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph));
    write_f32(g.x, ramp(8, -1.0f, 0.125f));
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS);

    Probe p;
    const ggml_ext_kernel_desc d = kernel_desc("add.late", GGML_OP_ADD, nullptr, 0, &p);
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &d));
    EXPECT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "registrations")) << ggml_backend_get_last_error();
    ggml_backend_sched_reset(sched.get());
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph));
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(p.executes, 1);

    // Selection policy changed.
    ggml_ext_dev_set_enabled(rig.device, false);
    EXPECT_FALSE(ggml_ext_dev_get_enabled(rig.device));
    EXPECT_STREQ(ggml_ext_dev_selected_kernel(rig.device, ggml_graph_node(g.graph, 0)), "native");
    EXPECT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "selection policy")) << ggml_backend_get_last_error();
    ggml_backend_sched_reset(sched.get());
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph));
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(p.executes, 1);  // native ran
    ggml_ext_dev_set_enabled(rig.device, true);
    ggml_backend_sched_reset(sched.get());
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph));

    // Graph metadata changed after allocation.
    const float half = 0.5f;
    std::memcpy(g.y->op_params, &half, sizeof half);
    EXPECT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "changed")) << ggml_backend_get_last_error();
}

// "Direct backend graph computation supports single-node extensions" and "Direct calls use temporary
// plans and synchronize before releasing them" (from "Fusion").
TEST(ExtKernels, DirectBackendComputeUsesTemporaryPlans) {
    Rig rig({GGML_OP_ADD});
    ggml_ext_op_t op = affine_op("test.affine_direct.v1");
    Probe p;
    p.workspace_request = 256;
    const ggml_ext_kernel_desc d = kernel_desc("affine.direct", GGML_OP_CUSTOM, op, 0, &p);
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &d));
    OneNode g(
        16, [&](ggml_context * c, ggml_tensor * x) { return ggml_add(c, affine(c, op, x, 3.0f, 0.0f), x); });
    Buffer buffer(ggml_backend_alloc_ctx_tensors(g.ctx.get(), rig.backend.get()));
    const std::vector<float> x = ramp(16, -1.0f, 0.125f);
    write_f32(g.x, x);
    for (int run = 1; run <= 2; ++run) {
        ASSERT_EQ(ggml_backend_graph_compute(rig.backend.get(), g.graph), GGML_STATUS_SUCCESS)
            << ggml_backend_get_last_error();
        EXPECT_EQ(p.prepares, run);  // a plan per call, released after it
        EXPECT_EQ(p.destroys, run);
    }
    const std::vector<float> y = read_f32(g.y);
    for (size_t i = 0; i < y.size(); ++i)
        EXPECT_EQ(y[i], x[i] * 3.0f + x[i]);
    // And through a range.
    ASSERT_EQ(ggml_backend_graph_compute_range(rig.backend.get(), g.graph, 0, 1), GGML_STATUS_SUCCESS);
    EXPECT_EQ(p.executes, 3);
}

}  // namespace
}  // namespace ggx::test
