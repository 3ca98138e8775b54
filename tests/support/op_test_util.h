// Helpers of the constructor suites tests/core/test_ops_<family>.cpp: a no-alloc context with
// tensor factories, and checks of a node (op, type, shape, sources, view) or of a rejection
// (NULL and ggml_get_error naming the operator and the reason).
#pragma once

#include <ggml-ext-params.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

namespace ggx::test {

class OpTest : public ::testing::Test {
protected:
    OpTest() {
        ggml_init_params p{};
        p.mem_size = 16 << 20;
        p.no_alloc = true;
        ctx_.reset(ggml_init(p));
    }

    ggml_context * ctx() { return ctx_.get(); }

    ggml_tensor * t(ggml_type type, int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1, int64_t ne3 = 1) {
        return ggml_new_tensor_4d(ctx(), type, ne0, ne1, ne2, ne3);
    }
    ggml_tensor * f32(int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1, int64_t ne3 = 1) {
        return t(GGML_TYPE_F32, ne0, ne1, ne2, ne3);
    }
    ggml_tensor * i32(int64_t ne0) { return t(GGML_TYPE_I32, ne0); }

    // r is a new node of op with type, shape ne and exactly srcs as its leading sources.
    void expect_node(const ggml_tensor * r, ggml_op op, ggml_type type, std::array<int64_t, 4> ne,
                     std::initializer_list<const ggml_tensor *> srcs) {
        ASSERT_NE(r, nullptr) << error();
        EXPECT_EQ(r->op, op) << ggml_op_name(r->op);
        EXPECT_EQ(r->type, type) << ggml_type_name(r->type);
        EXPECT_EQ((std::array<int64_t, 4>{r->ne[0], r->ne[1], r->ne[2], r->ne[3]}), ne);
        int i = 0;
        for (const ggml_tensor * src : srcs)
            EXPECT_EQ(r->src[i++], src) << "src " << i - 1;
        for (; i < GGML_MAX_SRC; ++i)
            EXPECT_EQ(r->src[i], nullptr) << "src " << i;
    }

    // r is a node of op over a's storage (an in-place result).
    void expect_view_of(const ggml_tensor * r, const ggml_tensor * a) {
        ASSERT_NE(r, nullptr) << error();
        EXPECT_EQ(r->view_src, a);
        EXPECT_EQ(r->view_offs, 0u);
    }

    // r is NULL and the first recorded error is "<op_name>: <why> (...)"; the error is then cleared.
    void expect_rejected(const ggml_tensor * r, const std::string & op_name, const std::string & why) {
        EXPECT_EQ(r, nullptr);
        expect_error(op_name, why);
    }
    void expect_error(const std::string & op_name, const std::string & why) {
        const std::string e = error();
        EXPECT_EQ(e.rfind(op_name + ": " + why, 0), 0u) << e;
        ggml_clear_error(ctx());
    }

    template <class P>
    P params_of(const ggml_tensor * r) {
        P p{};
        EXPECT_TRUE(r && ggml_ext_get_op_params(r, r->op, &p, sizeof p));
        return p;
    }

    std::string error() const {
        const char * e = ggml_get_error(ctx_.get());
        return e ? e : "";
    }

private:
    struct Free {
        void operator()(ggml_context * c) const { ggml_free(c); }
    };
    std::unique_ptr<ggml_context, Free> ctx_;
};

}  // namespace ggx::test
