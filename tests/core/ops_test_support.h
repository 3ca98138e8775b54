// The fixture of the per-family constructor suites (test_ops_<family>.cpp): a no-alloc context,
// checks of a node's op, type, shape and sources, of in-place results, of rejected inputs, and
// computing a graph on the CPU backend.
#pragma once

#include <ggml-alloc.h>
#include <ggml-ext-params.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "support/test_util.h"

namespace ggx::test {

class OpsTest : public ::testing::Test {
protected:
    void SetUp() override {
        ggml_init_params p{};
        p.mem_size = 16 << 20;
        p.no_alloc = true;
        ctx_.reset(ggml_init(p));
    }

    ggml_context * ctx() const { return ctx_.get(); }
    ggml_tensor * tensor(ggml_type type, int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1,
                         int64_t ne3 = 1) const {
        return ggml_new_tensor_4d(ctx(), type, ne0, ne1, ne2, ne3);
    }
    ggml_tensor * f32(int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1, int64_t ne3 = 1) const {
        return tensor(GGML_TYPE_F32, ne0, ne1, ne2, ne3);
    }

    // node is a node of op and type with shape ne whose sources are srcs (then NULL).
    static void expect_node(const ggml_tensor * node, ggml_op op, ggml_type type, Shape ne,
                            std::initializer_list<const ggml_tensor *> srcs) {
        ASSERT_NE(node, nullptr);
        EXPECT_EQ(node->op, op) << ggml_op_name(node->op);
        EXPECT_EQ(node->type, type) << ggml_type_name(node->type);
        EXPECT_EQ((Shape{node->ne[0], node->ne[1], node->ne[2], node->ne[3]}), ne);
        size_t i = 0;
        for (const ggml_tensor * src : srcs)
            EXPECT_EQ(node->src[i++], src) << "src " << i - 1;
        for (; i < GGML_MAX_SRC; ++i)
            EXPECT_EQ(node->src[i], nullptr) << "src " << i;
    }

    // node is an in-place result: a view of a's storage with a's shape and strides.
    static void expect_view_of(const ggml_tensor * node, const ggml_tensor * a) {
        ASSERT_NE(node, nullptr);
        EXPECT_EQ(node->view_src, a->view_src ? a->view_src : a);
        EXPECT_TRUE(ggml_are_same_shape(node, a) && ggml_are_same_stride(node, a));
    }

    // node records P, read back through the public accessor.
    template <class P>
    static P params_of(const ggml_tensor * node) {
        P p{};
        EXPECT_TRUE(node && ggml_ext_get_op_params(node, node->op, &p, sizeof p));
        return p;
    }

    // A constructor returned NULL and recorded an error naming op and saying why; clears it.
    void expect_error(const ggml_tensor * node, const std::string & op, const std::string & why) {
        EXPECT_EQ(node, nullptr);
        const char * error = ggml_get_error(ctx());
        ASSERT_NE(error, nullptr) << "no error recorded for " << op;
        EXPECT_EQ(std::string(error).rfind(op + ": ", 0), 0u) << error;
        EXPECT_TRUE(contains(error, why)) << error;
        ggml_clear_error(ctx());
    }

private:
    Context ctx_;
};

// Builds a graph of out on the CPU backend, sets each input to its values, computes, and returns
// out's values (F32).
inline std::vector<float> compute_on_cpu(
    ggml_context * ctx, ggml_tensor * out,
    const std::vector<std::pair<ggml_tensor *, std::vector<float>>> & inputs) {
    ggml_cgraph * graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, out);
    Buffer buffer(ggml_backend_alloc_ctx_tensors(ctx, cpu_backend()));
    EXPECT_NE(buffer, nullptr);
    if (!buffer) return {};
    for (const auto & [tensor, values] : inputs)
        write_f32(tensor, values);
    EXPECT_EQ(ggml_backend_graph_compute(cpu_backend(), graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    return read_f32(out);
}

}  // namespace ggx::test
