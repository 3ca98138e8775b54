// The error modes (include/ggml-ext.h, docs/errors.md): a misuse of a constructor or graph function
// aborts with its message by default and returns NULL with ggml_get_error in the returning mode;
// ggml_set_abort_on_error overrides the mode per context. This suite has GoogleTest's own main, so
// the process starts in the default mode.
#include <ggml-alloc.h>
#include <ggml-ext.h>
#include <ggml-graph.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>

#include "support/test_util.h"

namespace ggx::test {
namespace {

Context new_context() { return Context(ggml_init({size_t{1} << 16, nullptr, true})); }

// a: f32 [4, 3], b: f32 [3]: b cannot be broadcast over a.
ggml_tensor * bad_add(ggml_context * ctx) {
    ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
    return ggml_add(ctx, a, b);
}

// What bad_add reports, as a death-test regular expression and as the text ggml_get_error holds.
constexpr const char * kBadAddPattern =
    "ggx: ggml_add: b cannot be broadcast over a .* \\(a: f32 \\[4, 3, 1, 1\\], b: f32 \\[3, 1, 1, 1\\]\\)";
constexpr const char * kBadAddReason = "ggml_add: b cannot be broadcast over a";
constexpr const char * kBadAddShapes = "(a: f32 [4, 3, 1, 1], b: f32 [3, 1, 1, 1])";

// A placed F32 tensor of 4 elements (16 bytes) in a CPU buffer owned by the returned handle.
struct PlacedTensor {
    ggml_tensor * tensor = nullptr;
    Buffer buffer;
};
PlacedTensor placed_tensor(ggml_context * ctx) {
    PlacedTensor p;
    p.tensor = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    p.buffer.reset(ggml_backend_alloc_ctx_tensors(ctx, cpu_backend()));
    return p;
}

// An extension operator whose inference rejects every input.
ggml_ext_op_t rejecting_op() {
    static const ggml_ext_op_t op = [] {
        ggml_ext_op_desc desc{};
        desc.struct_size = sizeof desc;
        desc.version = GGML_EXT_OP_DESC_VERSION;
        desc.name = "test.error_mode_rejecting.v1";
        desc.min_inputs = desc.max_inputs = 1;
        desc.infer = [](const ggml_tensor * const *, int, const void *, size_t, ggml_type *, int64_t *,
                        char * why, size_t why_size, void *) {
            std::snprintf(why, why_size, "never accepts");
            return false;
        };
        return ggml_ext_register_op(&desc);
    }();
    return op;
}

TEST(ErrorMode, DefaultIsAbort) { EXPECT_EQ(ggml_ext_get_error_mode(), GGML_EXT_ERROR_ABORT); }

TEST(ErrorMode, SwitchesProcessWideAndIgnoresUnknownModes) {
    {
        ScopedErrorMode returning(GGML_EXT_ERROR_RETURN);
        EXPECT_EQ(ggml_ext_get_error_mode(), GGML_EXT_ERROR_RETURN);
        ggml_ext_set_error_mode(static_cast<ggml_ext_error_mode>(7));
        EXPECT_EQ(ggml_ext_get_error_mode(), GGML_EXT_ERROR_RETURN);
    }
    EXPECT_EQ(ggml_ext_get_error_mode(), GGML_EXT_ERROR_ABORT);
}

// ---------------------------------------------------------------------------------------------
// The default mode: every misuse aborts at the failing call with ggx's message.

class ErrorModeDeathTest : public ::testing::Test {
protected:
    void SetUp() override {
        GTEST_FLAG_SET(death_test_style, "threadsafe");
        ctx = new_context();
        ASSERT_NE(ctx, nullptr);
    }
    Context ctx;
};

TEST_F(ErrorModeDeathTest, ConstructorMisuseAbortsWithTheMessage) {
    EXPECT_DEATH(bad_add(ctx.get()), kBadAddPattern);
}

TEST_F(ErrorModeDeathTest, FullArenaAborts) {
    Context small(ggml_init({2 * ggml_tensor_overhead() + 128, nullptr, false}));
    ASSERT_NE(small, nullptr);
    EXPECT_DEATH(ggml_new_tensor_1d(small.get(), GGML_TYPE_F32, 1 << 16),
                 "ggx: ggml_new_tensor: context arena full");
}

TEST_F(ErrorModeDeathTest, GraphMisuseAborts) {
    ggml_tensor * x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    ggml_tensor * y = ggml_scale(ctx.get(), ggml_scale(ctx.get(), x, 2.0f), 2.0f);
    ggml_cgraph * one_node = ggml_new_graph_custom(ctx.get(), 1, false);
    EXPECT_DEATH(ggml_build_forward_expand(one_node, y), "ggx: ggml_build_forward_expand: graph is full");
    EXPECT_DEATH(ggml_build_forward_expand(one_node, nullptr),
                 "ggx: ggml_build_forward_expand: tensor is NULL");
    EXPECT_DEATH(ggml_graph_add_leaf(one_node, y), "ggx: ggml_graph_add_leaf: a leaf must have no op");
}

TEST_F(ErrorModeDeathTest, GraphCopyIntoTooSmallAGraphAborts) {
    ggml_tensor * x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    ggml_cgraph * two_nodes = ggml_new_graph_custom(ctx.get(), 2, false);
    ggml_build_forward_expand(two_nodes, ggml_scale(ctx.get(), ggml_scale(ctx.get(), x, 2.0f), 2.0f));
    ggml_cgraph * one_node = ggml_new_graph_custom(ctx.get(), 1, false);
    EXPECT_DEATH(ggml_graph_cpy(two_nodes, one_node), "ggx: ggml_graph_cpy: destination holds 1 nodes");
}

// ggml's void tensor transfers treat a refused transfer as a misuse, as ggml's asserts do.
TEST_F(ErrorModeDeathTest, TensorTransferOutOfRangeAborts) {
    const PlacedTensor p = placed_tensor(ctx.get());
    ASSERT_NE(p.buffer, nullptr);
    std::array<char, 32> bytes{};
    EXPECT_DEATH(ggml_backend_tensor_set(p.tensor, bytes.data(), 8, 16),
                 "ggx: ggml_backend_tensor_set: out of bounds");
    EXPECT_DEATH(ggml_backend_tensor_get_2d(p.tensor, bytes.data(), 0, 8, 3, 8, 8),
                 "ggx: ggml_backend_tensor_get_2d: out of bounds");
}

// The checked forms return the status in the aborting mode too.
TEST_F(ErrorModeDeathTest, CheckedTensorTransfersReturnTheirStatus) {
    const PlacedTensor p = placed_tensor(ctx.get());
    ASSERT_NE(p.buffer, nullptr);
    std::array<char, 32> bytes{};
    EXPECT_EQ(ggml_ext_backend_tensor_set(p.tensor, bytes.data(), 8, 16), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "ggml_backend_tensor_set: out of bounds"));
    EXPECT_EQ(ggml_ext_backend_tensor_set(p.tensor, bytes.data(), 0, 16), GGML_STATUS_SUCCESS);
}

TEST_F(ErrorModeDeathTest, ExtensionConstructorAborts) {
    ggml_tensor * x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    ASSERT_NE(rejecting_op(), nullptr) << ggml_backend_get_last_error();
    EXPECT_DEATH(ggml_ext_op_create(ctx.get(), rejecting_op(), &x, 1, nullptr, 0),
                 "ggx: ggml_ext_op_create 'test.error_mode_rejecting.v1': inputs rejected: never accepts");
}

TEST_F(ErrorModeDeathTest, CallbackSeesTheMessageBeforeTheAbort) {
    ggml_set_error_callback(
        ctx.get(), [](const char * message, void *) { std::fprintf(stderr, "callback: %s\n", message); },
        nullptr);
    EXPECT_DEATH(bad_add(ctx.get()), "callback: ggml_add");
}

TEST_F(ErrorModeDeathTest, ContextOverrideAbortsInTheReturningMode) {
    ScopedErrorMode returning(GGML_EXT_ERROR_RETURN);
    ggml_set_abort_on_error(ctx.get(), true);
    EXPECT_DEATH(bad_add(ctx.get()), kBadAddPattern);
}

// ---------------------------------------------------------------------------------------------
// The returning mode: NULL (false, an invalid graph) with the same message in ggml_get_error.

TEST(ErrorModeReturn, ConstructorMisuseReturnsNullWithTheMessage) {
    ScopedErrorMode returning(GGML_EXT_ERROR_RETURN);
    Context ctx = new_context();
    EXPECT_EQ(bad_add(ctx.get()), nullptr);
    const char * error = ggml_get_error(ctx.get());
    ASSERT_NE(error, nullptr);
    EXPECT_TRUE(contains(error, kBadAddReason)) << error;
    EXPECT_TRUE(contains(error, kBadAddShapes)) << error;
}

TEST(ErrorModeReturn, GraphMisuseInvalidatesTheGraph) {
    ScopedErrorMode returning(GGML_EXT_ERROR_RETURN);
    Context ctx = new_context();
    ggml_cgraph * graph = ggml_new_graph_custom(ctx.get(), 4, false);
    ASSERT_NE(graph, nullptr);
    ggml_build_forward_expand(graph, nullptr);
    EXPECT_FALSE(ggml_graph_is_valid(graph));
    ASSERT_NE(ggml_get_error(ctx.get()), nullptr);
    EXPECT_TRUE(contains(ggml_get_error(ctx.get()), "ggml_build_forward_expand: tensor is NULL"));
}

TEST(ErrorModeReturn, RefusedTensorTransferLeavesTheMessageAndTheData) {
    ScopedErrorMode returning(GGML_EXT_ERROR_RETURN);
    Context ctx = new_context();
    const PlacedTensor p = placed_tensor(ctx.get());
    ASSERT_NE(p.buffer, nullptr);
    write_f32(p.tensor, {1, 2, 3, 4});
    const std::array<float, 4> other = {9, 9, 9, 9};
    ggml_backend_tensor_set(p.tensor, other.data(), 4, sizeof other);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "ggml_backend_tensor_set: out of bounds"));
    EXPECT_EQ(read_f32(p.tensor), (std::vector<float>{1, 2, 3, 4}));
}

TEST(ErrorModeReturn, ModeIsReadAtEachError) {
    Context ctx = new_context();  // created in the aborting mode
    ScopedErrorMode returning(GGML_EXT_ERROR_RETURN);
    EXPECT_EQ(bad_add(ctx.get()), nullptr);
    EXPECT_NE(ggml_get_error(ctx.get()), nullptr);
}

TEST(ErrorModeReturn, ContextOverrideReturnsInTheAbortingMode) {
    ASSERT_EQ(ggml_ext_get_error_mode(), GGML_EXT_ERROR_ABORT);
    Context ctx = new_context();
    ggml_set_abort_on_error(ctx.get(), false);
    EXPECT_EQ(bad_add(ctx.get()), nullptr);
    ASSERT_NE(ggml_get_error(ctx.get()), nullptr);
    EXPECT_TRUE(contains(ggml_get_error(ctx.get()), kBadAddReason)) << ggml_get_error(ctx.get());
}

}  // namespace
}  // namespace ggx::test
