// Unit tests for tensor helpers, names and flags, and the layout operators: views, reshapes,
// permute/transpose, cont/dup and cpy/cast, including their rejected inputs.
#include <ggml.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>

namespace {

struct CtxFree {
    void operator()(ggml_context * c) const { ggml_free(c); }
};
using Ctx = std::unique_ptr<ggml_context, CtxFree>;

using Ne = std::array<int64_t, 4>;
using Nb = std::array<size_t, 4>;

class Views : public ::testing::Test {
protected:
    void SetUp() override {
        ggml_init_params p{};
        p.mem_size = 16 << 20;
        p.mem_buffer = nullptr;
        p.no_alloc = false;
        ctx_.reset(ggml_init(p));
        ASSERT_NE(ctx_, nullptr);
    }

    ggml_context * ctx() { return ctx_.get(); }

    ggml_tensor * t1(ggml_type t, int64_t a) {
        ggml_tensor * r = ggml_new_tensor_1d(ctx(), t, a);
        EXPECT_NE(r, nullptr);
        return r;
    }
    ggml_tensor * t2(ggml_type t, int64_t a, int64_t b) {
        ggml_tensor * r = ggml_new_tensor_2d(ctx(), t, a, b);
        EXPECT_NE(r, nullptr);
        return r;
    }
    ggml_tensor * t3(ggml_type t, int64_t a, int64_t b, int64_t c) {
        ggml_tensor * r = ggml_new_tensor_3d(ctx(), t, a, b, c);
        EXPECT_NE(r, nullptr);
        return r;
    }
    ggml_tensor * t4(ggml_type t, int64_t a, int64_t b, int64_t c, int64_t d) {
        ggml_tensor * r = ggml_new_tensor_4d(ctx(), t, a, b, c, d);
        EXPECT_NE(r, nullptr);
        return r;
    }

    std::string error() const {
        const char * e = ggml_get_error(ctx_.get());
        return e ? std::string(e) : std::string();
    }

    // The constructor result r must be NULL with a recorded error naming the operator (one of
    // names: a family prefix such as "ggml_view" or "ggml_reshape"); then clear it.
    void expect_rejected(const ggml_tensor * r, std::initializer_list<const char *> names) {
        const char * first = *names.begin();
        EXPECT_EQ(r, nullptr) << first;
        const std::string e = error();
        EXPECT_FALSE(e.empty()) << first << ": no error recorded";
        bool named = false;
        for (const char * n : names)
            named = named || e.find(n) != std::string::npos;
        EXPECT_TRUE(named) << "error '" << e << "' does not name " << first;
        ggml_clear_error(ctx());
    }
    void expect_rejected(const ggml_tensor * r, const char * name) { expect_rejected(r, {name}); }

    void TearDown() override {
        // Every positive check must leave no error behind.
        if (ctx_) {
            EXPECT_EQ(ggml_get_error(ctx_.get()), nullptr) << error();
        }
    }

    Ctx ctx_;
};

Ne ne_of(const ggml_tensor * t) { return {t->ne[0], t->ne[1], t->ne[2], t->ne[3]}; }
Nb nb_of(const ggml_tensor * t) { return {t->nb[0], t->nb[1], t->nb[2], t->nb[3]}; }

const char * data_at(const ggml_tensor * t, size_t off) {
    return t->data ? static_cast<const char *>(t->data) + off : nullptr;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Element and byte counts

TEST_F(Views, CountsOfContiguousTensors) {
    ggml_tensor * a = t4(GGML_TYPE_F32, 3, 4, 5, 2);
    EXPECT_EQ(ggml_nelements(a), 120);
    EXPECT_EQ(ggml_nrows(a), 40);
    EXPECT_EQ(ggml_nbytes(a), 480u);
    EXPECT_EQ(ggml_element_size(a), 4u);
    EXPECT_EQ(nb_of(a), (Nb{4, 12, 48, 240}));

    ggml_tensor * h = t2(GGML_TYPE_F16, 7, 3);
    EXPECT_EQ(ggml_nbytes(h), 42u);
    EXPECT_EQ(ggml_element_size(h), 2u);

    ggml_tensor * q8 = t2(GGML_TYPE_Q8_0, 64, 3);  // 2 blocks of 34 bytes per row
    EXPECT_EQ(ggml_nelements(q8), 192);
    EXPECT_EQ(ggml_nrows(q8), 3);
    EXPECT_EQ(nb_of(q8), (Nb{34, 68, 204, 204}));
    EXPECT_EQ(ggml_nbytes(q8), 204u);

    ggml_tensor * q4 = t3(GGML_TYPE_Q4_0, 32, 5, 2);  // 1 block of 18 bytes per row
    EXPECT_EQ(nb_of(q4), (Nb{18, 18, 90, 180}));
    EXPECT_EQ(ggml_nbytes(q4), 180u);
    EXPECT_EQ(ggml_nrows(q4), 10);
}

TEST_F(Views, NbytesOfViewsFollowsStrides) {
    ggml_tensor * a = t2(GGML_TYPE_F32, 8, 4);  // 128 bytes
    // 4 columns of every row: 4 + 3*4 + 3*32 bytes spanned.
    ggml_tensor * v = ggml_view_2d(ctx(), a, 4, 4, a->nb[1], 16);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(ggml_nelements(v), 16);
    EXPECT_EQ(ggml_nrows(v), 4);
    EXPECT_EQ(ggml_nbytes(v), 112u);
    // A transposed tensor spans the same bytes as its source.
    ggml_tensor * t = ggml_transpose(ctx(), a);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(ggml_nbytes(t), 128u);
    EXPECT_EQ(ggml_nrows(t), 8);
    // Quantized view of 1 of 3 rows.
    ggml_tensor * q = t2(GGML_TYPE_Q8_0, 64, 3);
    ggml_tensor * qv = ggml_view_2d(ctx(), q, 64, 2, q->nb[1], q->nb[1]);
    ASSERT_NE(qv, nullptr);
    EXPECT_EQ(ggml_nbytes(qv), 136u);
    // A view skipping every other row of a quantized tensor: 68 + 2*136.
    ggml_tensor * q2 = t2(GGML_TYPE_Q8_0, 64, 6);
    ggml_tensor * qs = ggml_view_2d(ctx(), q2, 64, 3, 2 * q2->nb[1], 0);
    ASSERT_NE(qs, nullptr);
    EXPECT_EQ(ggml_nbytes(qs), 68u + 2 * 136u);
}

TEST_F(Views, NDims) {
    EXPECT_EQ(ggml_n_dims(t1(GGML_TYPE_F32, 3)), 1);
    EXPECT_EQ(ggml_n_dims(t1(GGML_TYPE_F32, 1)), 1);
    EXPECT_EQ(ggml_n_dims(t2(GGML_TYPE_F32, 3, 4)), 2);
    EXPECT_EQ(ggml_n_dims(t2(GGML_TYPE_F32, 1, 4)), 2);
    EXPECT_EQ(ggml_n_dims(t4(GGML_TYPE_F32, 3, 4, 1, 1)), 2);
    EXPECT_EQ(ggml_n_dims(t4(GGML_TYPE_F32, 3, 1, 5, 1)), 3);
    EXPECT_EQ(ggml_n_dims(t4(GGML_TYPE_F32, 3, 4, 5, 2)), 4);
    EXPECT_EQ(ggml_n_dims(t4(GGML_TYPE_F32, 1, 1, 1, 7)), 4);
    EXPECT_EQ(ggml_n_dims(t4(GGML_TYPE_F32, 1, 1, 1, 1)), 1);
}

TEST_F(Views, ShapePredicates) {
    ggml_tensor * s = t4(GGML_TYPE_F32, 1, 1, 1, 1);
    ggml_tensor * v = t1(GGML_TYPE_F32, 5);
    ggml_tensor * m = t2(GGML_TYPE_F32, 5, 3);
    ggml_tensor * c = t3(GGML_TYPE_F32, 5, 3, 2);
    ggml_tensor * q = t4(GGML_TYPE_F32, 5, 3, 2, 2);
    ggml_tensor * e = t2(GGML_TYPE_F32, 5, 0);

    EXPECT_TRUE(ggml_is_scalar(s));
    EXPECT_FALSE(ggml_is_scalar(v));
    EXPECT_FALSE(ggml_is_scalar(m));

    EXPECT_TRUE(ggml_is_vector(v));
    EXPECT_FALSE(ggml_is_vector(m));
    EXPECT_FALSE(ggml_is_vector(c));

    EXPECT_TRUE(ggml_is_matrix(m));
    EXPECT_FALSE(ggml_is_matrix(c));
    EXPECT_FALSE(ggml_is_matrix(q));

    EXPECT_TRUE(ggml_is_3d(c));
    EXPECT_FALSE(ggml_is_3d(q));

    EXPECT_TRUE(ggml_is_empty(e));
    EXPECT_FALSE(ggml_is_empty(s));
    EXPECT_FALSE(ggml_is_empty(q));
    EXPECT_EQ(ggml_nelements(e), 0);
}

// ---------------------------------------------------------------------------------------------
// Layout predicates

TEST_F(Views, ContiguousTensorPredicates) {
    ggml_tensor * a = t4(GGML_TYPE_F32, 3, 4, 5, 2);
    EXPECT_TRUE(ggml_is_contiguous(a));
    EXPECT_TRUE(ggml_is_contiguous_0(a));
    EXPECT_TRUE(ggml_is_contiguous_1(a));
    EXPECT_TRUE(ggml_is_contiguous_2(a));
    EXPECT_TRUE(ggml_is_contiguous_rows(a));
    EXPECT_TRUE(ggml_is_contiguously_allocated(a));
    EXPECT_FALSE(ggml_is_transposed(a));
    EXPECT_FALSE(ggml_is_permuted(a));

    ggml_tensor * q = t2(GGML_TYPE_Q4_0, 64, 3);
    EXPECT_TRUE(ggml_is_contiguous(q));
    EXPECT_TRUE(ggml_is_contiguous_rows(q));
    EXPECT_TRUE(ggml_is_contiguously_allocated(q));
}

TEST_F(Views, TransposedPredicates) {
    ggml_tensor * a = t2(GGML_TYPE_F32, 4, 3);
    ggml_tensor * t = ggml_transpose(ctx(), a);
    ASSERT_NE(t, nullptr);
    EXPECT_FALSE(ggml_is_contiguous(t));
    EXPECT_FALSE(ggml_is_contiguous_0(t));
    EXPECT_FALSE(ggml_is_contiguous_1(t));
    EXPECT_FALSE(ggml_is_contiguous_2(t));
    EXPECT_FALSE(ggml_is_contiguous_rows(t));
    EXPECT_TRUE(ggml_is_transposed(t));
    EXPECT_TRUE(ggml_is_permuted(t));
}

TEST_F(Views, PermutedPredicates) {
    ggml_tensor * a = t4(GGML_TYPE_F32, 2, 3, 4, 5);
    ggml_tensor * p = ggml_permute(ctx(), a, 0, 2, 1, 3);  // swap dims 1 and 2, rows stay dense
    ASSERT_NE(p, nullptr);
    EXPECT_FALSE(ggml_is_contiguous(p));
    EXPECT_TRUE(ggml_is_contiguous_rows(p));
    EXPECT_TRUE(ggml_is_permuted(p));
    EXPECT_FALSE(ggml_is_transposed(p));

    ggml_tensor * id = ggml_permute(ctx(), a, 0, 1, 2, 3);
    ASSERT_NE(id, nullptr);
    EXPECT_TRUE(ggml_is_contiguous(id));
    EXPECT_FALSE(ggml_is_permuted(id));
}

TEST_F(Views, RowSlicePredicates) {
    // Half of every row: rows dense, gaps between rows.
    ggml_tensor * a = t2(GGML_TYPE_F32, 8, 4);
    ggml_tensor * v = ggml_view_2d(ctx(), a, 4, 4, a->nb[1], 0);
    ASSERT_NE(v, nullptr);
    EXPECT_FALSE(ggml_is_contiguous(v));
    EXPECT_FALSE(ggml_is_contiguous_0(v));
    EXPECT_TRUE(ggml_is_contiguous_1(v));
    EXPECT_TRUE(ggml_is_contiguous_rows(v));
    EXPECT_FALSE(ggml_is_contiguously_allocated(v));
    EXPECT_FALSE(ggml_is_transposed(v));
    EXPECT_FALSE(ggml_is_permuted(v));

    // 3-D: half of every row, gaps between rows, matrices follow each other at ne1 * nb1.
    ggml_tensor * b = t3(GGML_TYPE_F32, 8, 3, 2);
    ggml_tensor * w = ggml_view_3d(ctx(), b, 4, 3, 2, b->nb[1], b->nb[2], 0);
    ASSERT_NE(w, nullptr);
    EXPECT_FALSE(ggml_is_contiguous(w));
    EXPECT_TRUE(ggml_is_contiguous_1(w));
    EXPECT_TRUE(ggml_is_contiguous_rows(w));

    // 3-D: whole rows, 2 of 3 rows of each matrix: matrices dense, gaps between matrices.
    ggml_tensor * c = t3(GGML_TYPE_F32, 4, 3, 2);
    ggml_tensor * u = ggml_view_3d(ctx(), c, 4, 2, 2, c->nb[1], c->nb[2], 0);
    ASSERT_NE(u, nullptr);
    EXPECT_FALSE(ggml_is_contiguous(u));
    EXPECT_TRUE(ggml_is_contiguous_2(u));
    EXPECT_TRUE(ggml_is_contiguous_rows(u));
    EXPECT_EQ(ggml_nbytes(u), 4u + 3 * 4 + 16 + 48);

    // A dense sub-range of a contiguous tensor is contiguous.
    ggml_tensor * d = ggml_view_2d(ctx(), a, 8, 2, a->nb[1], a->nb[1]);
    ASSERT_NE(d, nullptr);
    EXPECT_TRUE(ggml_is_contiguous(d));
    EXPECT_TRUE(ggml_is_contiguously_allocated(d));
}

TEST_F(Views, SameShapeStrideAndRepeat) {
    ggml_tensor * a = t3(GGML_TYPE_F32, 4, 6, 2);
    ggml_tensor * b = t3(GGML_TYPE_F16, 4, 6, 2);
    ggml_tensor * c = t3(GGML_TYPE_F32, 4, 6, 2);
    ggml_tensor * d = t3(GGML_TYPE_F32, 6, 4, 2);
    EXPECT_TRUE(ggml_are_same_shape(a, b));
    EXPECT_TRUE(ggml_are_same_shape(a, c));
    EXPECT_FALSE(ggml_are_same_shape(a, d));
    EXPECT_TRUE(ggml_are_same_stride(a, c));
    EXPECT_FALSE(ggml_are_same_stride(a, b));  // F16 strides are half as large
    ggml_tensor * td = ggml_transpose(ctx(), d);
    ASSERT_NE(td, nullptr);
    EXPECT_TRUE(ggml_are_same_shape(a, td));
    EXPECT_FALSE(ggml_are_same_stride(a, td));

    ggml_tensor * r1 = t2(GGML_TYPE_F32, 1, 3);
    ggml_tensor * r2 = t2(GGML_TYPE_F32, 2, 3);
    ggml_tensor * r3 = t2(GGML_TYPE_F32, 3, 3);
    ggml_tensor * target = t3(GGML_TYPE_F32, 4, 6, 5);
    EXPECT_TRUE(ggml_can_repeat(r1, target));
    EXPECT_TRUE(ggml_can_repeat(r2, target));
    EXPECT_FALSE(ggml_can_repeat(r3, target));
    EXPECT_TRUE(ggml_can_repeat(target, target));
    EXPECT_FALSE(ggml_can_repeat(target, r1));
}

// ---------------------------------------------------------------------------------------------
// Names and flags

TEST_F(Views, Names) {
    ggml_tensor * a = t1(GGML_TYPE_F32, 4);
    EXPECT_STREQ(ggml_get_name(a), "");
    EXPECT_EQ(ggml_set_name(a, "alpha"), a);
    EXPECT_STREQ(ggml_get_name(a), "alpha");
    EXPECT_STREQ(a->name, "alpha");
    EXPECT_EQ(ggml_format_name(a, "blk.%d.%s", 12, "attn"), a);
    EXPECT_STREQ(ggml_get_name(a), "blk.12.attn");

    const std::string longname(200, 'x');
    ggml_set_name(a, longname.c_str());
    EXPECT_EQ(std::strlen(ggml_get_name(a)), size_t(GGML_MAX_NAME - 1));
    EXPECT_EQ(std::string(ggml_get_name(a)), longname.substr(0, GGML_MAX_NAME - 1));

    ggml_format_name(a, "%s-%d", longname.c_str(), 7);
    EXPECT_EQ(std::string(ggml_get_name(a)), longname.substr(0, GGML_MAX_NAME - 1));

    ggml_set_name(a, "");
    EXPECT_STREQ(ggml_get_name(a), "");
}

TEST_F(Views, Flags) {
    ggml_tensor * a = t1(GGML_TYPE_F32, 4);
    ggml_tensor * b = t1(GGML_TYPE_F32, 4);
    EXPECT_EQ(a->flags & (GGML_TENSOR_FLAG_INPUT | GGML_TENSOR_FLAG_OUTPUT), 0);
    ggml_set_input(a);
    EXPECT_NE(a->flags & GGML_TENSOR_FLAG_INPUT, 0);
    EXPECT_EQ(a->flags & GGML_TENSOR_FLAG_OUTPUT, 0);
    ggml_set_output(b);
    EXPECT_NE(b->flags & GGML_TENSOR_FLAG_OUTPUT, 0);
    EXPECT_EQ(b->flags & GGML_TENSOR_FLAG_INPUT, 0);
    ggml_set_output(a);
    EXPECT_NE(a->flags & GGML_TENSOR_FLAG_INPUT, 0);
    EXPECT_NE(a->flags & GGML_TENSOR_FLAG_OUTPUT, 0);
}

// ---------------------------------------------------------------------------------------------
// Views

TEST_F(Views, View1d) {
    ggml_tensor * a = t1(GGML_TYPE_F32, 10);
    ggml_tensor * v = ggml_view_1d(ctx(), a, 3, 8);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->op, GGML_OP_VIEW);
    EXPECT_EQ(v->type, GGML_TYPE_F32);
    EXPECT_EQ(v->src[0], a);
    EXPECT_EQ(v->view_src, a);
    EXPECT_EQ(v->view_offs, 8u);
    EXPECT_EQ(ne_of(v), (Ne{3, 1, 1, 1}));
    EXPECT_EQ(v->nb[0], 4u);
    EXPECT_EQ(v->data, data_at(a, 8));
    EXPECT_TRUE(ggml_is_contiguous(v));
    EXPECT_EQ(ggml_nbytes(v), 12u);
}

TEST_F(Views, View2dTo4d) {
    ggml_tensor * a = t1(GGML_TYPE_F16, 1000);  // 2000 bytes
    ggml_tensor * v2 = ggml_view_2d(ctx(), a, 7, 3, 40, 6);
    ASSERT_NE(v2, nullptr);
    EXPECT_EQ(ne_of(v2), (Ne{7, 3, 1, 1}));
    EXPECT_EQ(v2->nb[0], 2u);
    EXPECT_EQ(v2->nb[1], 40u);
    EXPECT_EQ(v2->view_offs, 6u);
    EXPECT_EQ(v2->data, data_at(a, 6));

    ggml_tensor * v3 = ggml_view_3d(ctx(), a, 7, 3, 5, 40, 200, 10);
    ASSERT_NE(v3, nullptr);
    EXPECT_EQ(ne_of(v3), (Ne{7, 3, 5, 1}));
    EXPECT_EQ(v3->nb[0], 2u);
    EXPECT_EQ(v3->nb[1], 40u);
    EXPECT_EQ(v3->nb[2], 200u);
    EXPECT_EQ(v3->view_offs, 10u);

    ggml_tensor * v4 = ggml_view_4d(ctx(), a, 7, 3, 2, 2, 40, 200, 600, 2);
    ASSERT_NE(v4, nullptr);
    EXPECT_EQ(ne_of(v4), (Ne{7, 3, 2, 2}));
    EXPECT_EQ(nb_of(v4), (Nb{2, 40, 200, 600}));
    EXPECT_EQ(v4->view_offs, 2u);
    EXPECT_EQ(v4->data, data_at(a, 2));
    EXPECT_EQ(v4->op, GGML_OP_VIEW);
    EXPECT_EQ(v4->src[0], a);
    EXPECT_EQ(v4->view_src, a);
    // Span: 2 + 6*2 + 2*40 + 1*200 + 1*600 bytes
    EXPECT_EQ(ggml_nbytes(v4), 2u + 12 + 80 + 200 + 600);

    // Overlapping rows (stride smaller than the row) are allowed for views.
    ggml_tensor * ov = ggml_view_2d(ctx(), a, 8, 4, 4, 0);
    ASSERT_NE(ov, nullptr);
    EXPECT_EQ(ov->nb[1], 4u);
}

TEST_F(Views, ViewTensor) {
    ggml_tensor * a = t3(GGML_TYPE_F32, 3, 4, 5);
    ggml_tensor * t = ggml_transpose(ctx(), a);
    ggml_tensor * v = ggml_view_tensor(ctx(), t);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->op, GGML_OP_VIEW);
    EXPECT_EQ(ne_of(v), ne_of(t));
    EXPECT_EQ(nb_of(v), nb_of(t));
    EXPECT_EQ(v->src[0], t);
    EXPECT_EQ(v->view_src, a);
    EXPECT_EQ(v->view_offs, 0u);
    EXPECT_EQ(v->data, a->data);
}

TEST_F(Views, ViewOfViewFlattensToOwner) {
    ggml_tensor * a = t1(GGML_TYPE_F32, 64);
    ggml_tensor * v1 = ggml_view_1d(ctx(), a, 32, 16);
    ASSERT_NE(v1, nullptr);
    ggml_tensor * v2 = ggml_view_2d(ctx(), v1, 4, 3, 32, 8);
    ASSERT_NE(v2, nullptr);
    EXPECT_EQ(v2->src[0], v1);
    EXPECT_EQ(v2->view_src, a);
    EXPECT_EQ(v2->view_offs, 24u);
    EXPECT_EQ(v2->data, data_at(a, 24));
    ggml_tensor * v3 = ggml_view_1d(ctx(), v2, 2, 4);
    ASSERT_NE(v3, nullptr);
    EXPECT_EQ(v3->src[0], v2);
    EXPECT_EQ(v3->view_src, a);
    EXPECT_EQ(v3->view_offs, 28u);
    EXPECT_EQ(v3->data, data_at(a, 28));

    // Reshape, permute, transpose of a view also point at the owner.
    ggml_tensor * r = ggml_reshape_2d(ctx(), v1, 8, 4);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->view_src, a);
    EXPECT_EQ(r->view_offs, 16u);
    ggml_tensor * p = ggml_permute(ctx(), r, 1, 0, 2, 3);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->view_src, a);
    EXPECT_EQ(p->view_offs, 16u);
    ggml_tensor * t = ggml_transpose(ctx(), p);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->view_src, a);
    EXPECT_EQ(t->view_offs, 16u);
    EXPECT_EQ(t->data, data_at(a, 16));
}

TEST_F(Views, ViewOfNoAllocTensorHasNoData) {
    ggml_set_no_alloc(ctx(), true);
    ggml_tensor * a = t2(GGML_TYPE_F32, 8, 8);
    ggml_tensor * v = ggml_view_1d(ctx(), a, 8, 32);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->data, nullptr);
    EXPECT_EQ(v->view_src, a);
    EXPECT_EQ(v->view_offs, 32u);
}

TEST_F(Views, QuantizedViews) {
    ggml_tensor * q = t2(GGML_TYPE_Q8_0, 64, 4);  // row = 68 bytes
    ggml_tensor * row = ggml_view_1d(ctx(), q, 64, 2 * q->nb[1]);
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->type, GGML_TYPE_Q8_0);
    EXPECT_EQ(row->nb[0], 34u);
    EXPECT_EQ(ggml_nbytes(row), 68u);
    EXPECT_EQ(row->view_offs, 136u);
    ggml_tensor * half = ggml_view_2d(ctx(), q, 32, 4, q->nb[1], 34);  // second block of each row
    ASSERT_NE(half, nullptr);
    EXPECT_EQ(ne_of(half), (Ne{32, 4, 1, 1}));
    EXPECT_EQ(half->nb[0], 34u);
    EXPECT_EQ(half->nb[1], 68u);
    EXPECT_EQ(ggml_nbytes(half), 34u + 3 * 68);
}

TEST_F(Views, ViewRejections) {
    ggml_tensor * a = t1(GGML_TYPE_F32, 8);  // 32 bytes of storage
    // Exactly fits: accepted.
    EXPECT_NE(ggml_view_1d(ctx(), a, 4, 16), nullptr);
    EXPECT_NE(ggml_view_1d(ctx(), a, 8, 0), nullptr);
    // One element past the end.
    expect_rejected(ggml_view_1d(ctx(), a, 4, 20), "ggml_view");
    expect_rejected(ggml_view_1d(ctx(), a, 9, 0), "ggml_view");
    // Offset alone past the end.
    expect_rejected(ggml_view_1d(ctx(), a, 1, 64), "ggml_view");
    // Strides reaching past the end: 4*4 + 2*64 > 32.
    ggml_tensor * big = t1(GGML_TYPE_F32, 32);  // 128 bytes
    expect_rejected(ggml_view_2d(ctx(), big, 4, 3, 64, 0), "ggml_view");
    expect_rejected(ggml_view_3d(ctx(), big, 4, 2, 2, 16, 128, 0), "ggml_view");
    expect_rejected(ggml_view_4d(ctx(), big, 4, 2, 2, 2, 16, 32, 64, 16), "ggml_view");
    // A view of a view may not leave the owner's storage.
    ggml_tensor * v = ggml_view_1d(ctx(), a, 4, 16);
    ASSERT_NE(v, nullptr);
    expect_rejected(ggml_view_1d(ctx(), v, 4, 4), "ggml_view");
    // Quantized: ne0 must be a multiple of the block size.
    ggml_tensor * q = t2(GGML_TYPE_Q8_0, 64, 2);
    expect_rejected(ggml_view_1d(ctx(), q, 16, 0), "ggml_view");
    expect_rejected(ggml_view_2d(ctx(), q, 48, 2, q->nb[1], 0), "ggml_view");
    // Quantized views out of bounds.
    expect_rejected(ggml_view_1d(ctx(), q, 64, q->nb[1] + 34), "ggml_view");
}

// ---------------------------------------------------------------------------------------------
// Reshape

TEST_F(Views, Reshapes) {
    ggml_tensor * a = t3(GGML_TYPE_F32, 6, 4, 2);
    ggml_tensor * r1 = ggml_reshape_1d(ctx(), a, 48);
    ASSERT_NE(r1, nullptr);
    EXPECT_EQ(r1->op, GGML_OP_RESHAPE);
    EXPECT_EQ(r1->src[0], a);
    EXPECT_EQ(r1->view_src, a);
    EXPECT_EQ(r1->view_offs, 0u);
    EXPECT_EQ(r1->data, a->data);
    EXPECT_EQ(ne_of(r1), (Ne{48, 1, 1, 1}));

    ggml_tensor * r2 = ggml_reshape_2d(ctx(), a, 12, 4);
    ASSERT_NE(r2, nullptr);
    EXPECT_EQ(ne_of(r2), (Ne{12, 4, 1, 1}));
    EXPECT_EQ(r2->nb[0], 4u);
    EXPECT_EQ(r2->nb[1], 48u);
    EXPECT_TRUE(ggml_is_contiguous(r2));

    ggml_tensor * r3 = ggml_reshape_3d(ctx(), a, 2, 3, 8);
    ASSERT_NE(r3, nullptr);
    EXPECT_EQ(ne_of(r3), (Ne{2, 3, 8, 1}));
    EXPECT_EQ(nb_of(r3), (Nb{4, 8, 24, 192}));

    ggml_tensor * r4 = ggml_reshape_4d(ctx(), a, 1, 3, 4, 4);
    ASSERT_NE(r4, nullptr);
    EXPECT_EQ(ne_of(r4), (Ne{1, 3, 4, 4}));
    EXPECT_EQ(nb_of(r4), (Nb{4, 4, 12, 48}));

    ggml_tensor * shape = t2(GGML_TYPE_I32, 16, 3);  // type is irrelevant, only the shape is used
    ggml_tensor * r = ggml_reshape(ctx(), a, shape);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->type, GGML_TYPE_F32);
    EXPECT_EQ(ne_of(r), (Ne{16, 3, 1, 1}));
    EXPECT_EQ(r->op, GGML_OP_RESHAPE);

    // Quantized: rows stay whole blocks.
    ggml_tensor * q = t2(GGML_TYPE_Q8_0, 64, 2);
    ggml_tensor * rq = ggml_reshape_2d(ctx(), q, 32, 4);
    ASSERT_NE(rq, nullptr);
    EXPECT_EQ(nb_of(rq), (Nb{34, 34, 136, 136}));
    ggml_tensor * rq1 = ggml_reshape_1d(ctx(), q, 128);
    ASSERT_NE(rq1, nullptr);
    EXPECT_EQ(ggml_nbytes(rq1), 136u);
}

TEST_F(Views, ReshapeRejections) {
    ggml_tensor * a = t2(GGML_TYPE_F32, 6, 4);
    expect_rejected(ggml_reshape_1d(ctx(), a, 23), "ggml_reshape");
    expect_rejected(ggml_reshape_2d(ctx(), a, 5, 5), "ggml_reshape");
    expect_rejected(ggml_reshape_3d(ctx(), a, 2, 2, 7), "ggml_reshape");
    expect_rejected(ggml_reshape_4d(ctx(), a, 1, 2, 3, 5), "ggml_reshape");
    ggml_tensor * wrong = t1(GGML_TYPE_F32, 25);
    expect_rejected(ggml_reshape(ctx(), a, wrong), "ggml_reshape");

    // Non-contiguous inputs.
    ggml_tensor * t = ggml_transpose(ctx(), a);
    ASSERT_NE(t, nullptr);
    expect_rejected(ggml_reshape_1d(ctx(), t, 24), "ggml_reshape");
    ggml_tensor * slice = ggml_view_2d(ctx(), a, 3, 4, a->nb[1], 0);
    ASSERT_NE(slice, nullptr);
    expect_rejected(ggml_reshape_1d(ctx(), slice, 12), "ggml_reshape");
    expect_rejected(ggml_reshape_2d(ctx(), slice, 4, 3), "ggml_reshape");

    // Quantized: the new ne0 must be a whole number of blocks.
    ggml_tensor * q = t2(GGML_TYPE_Q8_0, 64, 2);
    expect_rejected(ggml_reshape_2d(ctx(), q, 16, 8), "ggml_reshape");
}

// ---------------------------------------------------------------------------------------------
// Permute / transpose

TEST_F(Views, PermuteMovesDimIToAxisI) {
    ggml_tensor * a = t4(GGML_TYPE_F32, 2, 3, 4, 5);  // nb = 4, 8, 24, 96
    ggml_tensor * p = ggml_permute(ctx(), a, 1, 2, 0, 3);
    ASSERT_NE(p, nullptr);
    // dim 0 (2) -> axis 1, dim 1 (3) -> axis 2, dim 2 (4) -> axis 0, dim 3 (5) -> axis 3
    EXPECT_EQ(ne_of(p), (Ne{4, 2, 3, 5}));
    EXPECT_EQ(nb_of(p), (Nb{24, 4, 8, 96}));
    EXPECT_EQ(p->op, GGML_OP_PERMUTE);
    EXPECT_EQ(p->src[0], a);
    EXPECT_EQ(p->view_src, a);
    EXPECT_EQ(p->view_offs, 0u);
    EXPECT_EQ(p->data, a->data);
    EXPECT_EQ(p->op_params[0], 1);
    EXPECT_EQ(p->op_params[1], 2);
    EXPECT_EQ(p->op_params[2], 0);
    EXPECT_EQ(p->op_params[3], 3);
    EXPECT_EQ(ggml_nelements(p), 120);
    EXPECT_EQ(ggml_nbytes(p), ggml_nbytes(a));

    ggml_tensor * q = ggml_permute(ctx(), a, 3, 0, 1, 2);
    ASSERT_NE(q, nullptr);
    // dim 0 -> 3, dim 1 -> 0, dim 2 -> 1, dim 3 -> 2
    EXPECT_EQ(ne_of(q), (Ne{3, 4, 5, 2}));
    EXPECT_EQ(nb_of(q), (Nb{8, 24, 96, 4}));

    // Permuting back with the inverse permutation restores the layout.
    ggml_tensor * back = ggml_permute(ctx(), q, 1, 2, 3, 0);
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(ne_of(back), ne_of(a));
    EXPECT_EQ(nb_of(back), nb_of(a));
    EXPECT_TRUE(ggml_is_contiguous(back));
    EXPECT_EQ(back->view_src, a);
}

TEST_F(Views, PermuteRejections) {
    ggml_tensor * a = t4(GGML_TYPE_F32, 2, 3, 4, 5);
    expect_rejected(ggml_permute(ctx(), a, 0, 0, 1, 2), "ggml_permute");
    expect_rejected(ggml_permute(ctx(), a, 0, 1, 2, 4), "ggml_permute");
    expect_rejected(ggml_permute(ctx(), a, -1, 0, 1, 2), "ggml_permute");
    expect_rejected(ggml_permute(ctx(), a, 3, 3, 3, 3), "ggml_permute");
}

TEST_F(Views, Transpose) {
    ggml_tensor * a = t3(GGML_TYPE_F16, 7, 3, 2);  // nb = 2, 14, 42
    ggml_tensor * t = ggml_transpose(ctx(), a);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->op, GGML_OP_TRANSPOSE);
    EXPECT_EQ(t->src[0], a);
    EXPECT_EQ(t->view_src, a);
    EXPECT_EQ(t->type, GGML_TYPE_F16);
    EXPECT_EQ(ne_of(t), (Ne{3, 7, 2, 1}));
    EXPECT_EQ(t->nb[0], 14u);
    EXPECT_EQ(t->nb[1], 2u);
    EXPECT_EQ(t->nb[2], 42u);
    ggml_tensor * tt = ggml_transpose(ctx(), t);
    ASSERT_NE(tt, nullptr);
    EXPECT_EQ(ne_of(tt), ne_of(a));
    EXPECT_EQ(tt->nb[0], a->nb[0]);
    EXPECT_EQ(tt->nb[1], a->nb[1]);
    EXPECT_EQ(tt->nb[2], a->nb[2]);
    EXPECT_TRUE(ggml_is_contiguous(tt));
    EXPECT_EQ(tt->view_src, a);
}

TEST_F(Views, TransposeAndPermuteOfThinTensors) {
    // A column [3, 1] transposed is a row [1, 3] spanning the same 12 bytes.
    ggml_tensor * col = t2(GGML_TYPE_F32, 3, 1);
    ggml_tensor * row = ggml_transpose(ctx(), col);
    ASSERT_NE(row, nullptr) << error();
    EXPECT_EQ(ne_of(row), (Ne{1, 3, 1, 1}));
    EXPECT_EQ(ggml_nbytes(row), 12u);
    // Moving the only non-trivial dimension anywhere keeps the span.
    ggml_tensor * v = t1(GGML_TYPE_F16, 7);
    for (int axis = 1; axis < 4; ++axis) {
        int axes[4] = {axis, 0, 0, 0};
        for (int i = 1, next = 0; i < 4; ++i, ++next) {
            if (next == axis) ++next;
            axes[i] = next;
        }
        ggml_tensor * p = ggml_permute(ctx(), v, axes[0], axes[1], axes[2], axes[3]);
        ASSERT_NE(p, nullptr) << "axis " << axis << ": " << error();
        EXPECT_EQ(p->ne[axis], 7);
        EXPECT_EQ(ggml_nelements(p), 7);
        EXPECT_EQ(ggml_nbytes(p), 14u);
    }
}

// ---------------------------------------------------------------------------------------------
// cont / dup

TEST_F(Views, ContAndDup) {
    ggml_tensor * a = t3(GGML_TYPE_F16, 7, 3, 2);
    ggml_tensor * p = ggml_permute(ctx(), a, 2, 0, 1, 3);
    ASSERT_NE(p, nullptr);

    ggml_tensor * c = ggml_cont(ctx(), p);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->op, GGML_OP_CONT);
    EXPECT_EQ(c->src[0], p);
    EXPECT_EQ(c->type, GGML_TYPE_F16);
    EXPECT_EQ(ne_of(c), ne_of(p));
    EXPECT_TRUE(ggml_is_contiguous(c));
    EXPECT_EQ(c->view_src, nullptr);
    EXPECT_NE(c->data, nullptr);
    EXPECT_NE(c->data, a->data);

    ggml_tensor * c4 = ggml_cont_4d(ctx(), p, 6, 1, 7, 1);
    ASSERT_NE(c4, nullptr);
    EXPECT_EQ(c4->op, GGML_OP_CONT);
    EXPECT_EQ(c4->src[0], p);
    EXPECT_EQ(ne_of(c4), (Ne{6, 1, 7, 1}));
    EXPECT_TRUE(ggml_is_contiguous(c4));
    EXPECT_EQ(c4->view_src, nullptr);

    ggml_tensor * d = ggml_dup(ctx(), p);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->op, GGML_OP_DUP);
    EXPECT_EQ(d->src[0], p);
    EXPECT_EQ(d->type, GGML_TYPE_F16);
    EXPECT_EQ(ne_of(d), ne_of(p));
    EXPECT_TRUE(ggml_is_contiguous(d));
    EXPECT_EQ(d->view_src, nullptr);

    ggml_tensor * i = t2(GGML_TYPE_I32, 5, 3);
    ggml_tensor * ci = ggml_cont(ctx(), ggml_transpose(ctx(), i));
    ASSERT_NE(ci, nullptr);
    EXPECT_EQ(ci->type, GGML_TYPE_I32);
    EXPECT_EQ(ne_of(ci), (Ne{3, 5, 1, 1}));
}

TEST_F(Views, ContAndDupRejections) {
    ggml_tensor * a = t2(GGML_TYPE_F32, 6, 4);
    expect_rejected(ggml_cont_4d(ctx(), a, 5, 5, 1, 1), "ggml_cont");
    ggml_tensor * q = t2(GGML_TYPE_Q8_0, 64, 2);
    expect_rejected(ggml_cont_4d(ctx(), q, 16, 8, 1, 1), "ggml_cont");  // ne0 not a whole number of blocks
}

TEST_F(Views, ContAndDupCopyQuantizedTensorsBlockwise) {
    ggml_tensor * q = t2(GGML_TYPE_Q8_0, 64, 2);
    for (ggml_tensor * c : {ggml_cont(ctx(), q), ggml_dup(ctx(), q), ggml_cont_4d(ctx(), q, 32, 4, 1, 1)}) {
        ASSERT_NE(c, nullptr) << error();
        EXPECT_EQ(c->type, GGML_TYPE_Q8_0);
        EXPECT_TRUE(ggml_is_contiguous(c));
    }
}

// ---------------------------------------------------------------------------------------------
// cpy / cast

TEST_F(Views, CpyResultIsViewOfDestination) {
    ggml_tensor * a = t2(GGML_TYPE_F32, 4, 3);
    ggml_tensor * b = t1(GGML_TYPE_F16, 12);
    ggml_tensor * c = ggml_cpy(ctx(), ggml_transpose(ctx(), a), b);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->op, GGML_OP_CPY);
    EXPECT_EQ(c->src[0]->op, GGML_OP_TRANSPOSE);
    EXPECT_EQ(c->src[1], b);
    EXPECT_EQ(c->view_src, b);
    EXPECT_EQ(c->view_offs, 0u);
    EXPECT_EQ(c->data, b->data);
    EXPECT_EQ(c->type, GGML_TYPE_F16);
    EXPECT_EQ(ne_of(c), ne_of(b));
    EXPECT_EQ(nb_of(c), nb_of(b));

    // Into a view of a bigger destination: result is a view of the owner at the view's offset.
    ggml_tensor * big = t2(GGML_TYPE_F32, 12, 3);
    ggml_tensor * row = ggml_view_1d(ctx(), big, 12, big->nb[1]);
    ggml_tensor * c2 = ggml_cpy(ctx(), a, row);
    ASSERT_NE(c2, nullptr);
    EXPECT_EQ(c2->src[0], a);
    EXPECT_EQ(c2->src[1], row);
    EXPECT_EQ(c2->view_src, big);
    EXPECT_EQ(c2->view_offs, big->nb[1]);
    EXPECT_EQ(ne_of(c2), (Ne{12, 1, 1, 1}));
}

TEST_F(Views, CpyAcceptedTypePairs) {
    struct Pair {
        ggml_type from, to;
    };
    const Pair ok[] = {
        {GGML_TYPE_F32, GGML_TYPE_F32},  {GGML_TYPE_F32, GGML_TYPE_F16},   {GGML_TYPE_F32, GGML_TYPE_BF16},
        {GGML_TYPE_F16, GGML_TYPE_F32},  {GGML_TYPE_BF16, GGML_TYPE_F16},  {GGML_TYPE_F32, GGML_TYPE_Q8_0},
        {GGML_TYPE_F16, GGML_TYPE_Q4_0}, {GGML_TYPE_BF16, GGML_TYPE_Q8_0}, {GGML_TYPE_I32, GGML_TYPE_I32},
        {GGML_TYPE_I8, GGML_TYPE_I8},    {GGML_TYPE_Q8_0, GGML_TYPE_F32},  {GGML_TYPE_Q4_0, GGML_TYPE_F32},
    };
    for (const Pair & p : ok) {
        ggml_tensor * a = t2(p.from, 32, 3);
        ggml_tensor * b = t2(p.to, 32, 3);
        ggml_tensor * c = ggml_cpy(ctx(), a, b);
        ASSERT_NE(c, nullptr) << ggml_type_name(p.from) << " -> " << ggml_type_name(p.to) << ": " << error();
        EXPECT_EQ(c->type, p.to);
        EXPECT_EQ(c->view_src, b);

        ggml_tensor * k = ggml_cast(ctx(), a, p.to);
        ASSERT_NE(k, nullptr) << ggml_type_name(p.from) << " -> " << ggml_type_name(p.to) << ": " << error();
        EXPECT_EQ(k->op, GGML_OP_CPY);
        EXPECT_EQ(k->type, p.to);
        EXPECT_EQ(k->src[0], a);
        EXPECT_EQ(ne_of(k), ne_of(a));
        EXPECT_TRUE(ggml_is_contiguous(k));
        // A cast writes into its own new storage: it has no destination source and is no view.
        EXPECT_EQ(k->src[1], nullptr);
        EXPECT_EQ(k->view_src, nullptr);
    }
}

TEST_F(Views, CastOfView) {
    ggml_tensor * a = t3(GGML_TYPE_F32, 5, 3, 2);
    ggml_tensor * p = ggml_permute(ctx(), a, 1, 0, 2, 3);
    ggml_tensor * k = ggml_cast(ctx(), p, GGML_TYPE_F16);
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(ne_of(k), (Ne{3, 5, 2, 1}));
    EXPECT_EQ(nb_of(k), (Nb{2, 6, 30, 60}));
    EXPECT_EQ(k->src[0], p);
}

TEST_F(Views, CpyRejections) {
    ggml_tensor * a = t2(GGML_TYPE_F32, 4, 3);
    expect_rejected(ggml_cpy(ctx(), a, t1(GGML_TYPE_F32, 13)), "ggml_cpy");
    expect_rejected(ggml_cpy(ctx(), a, t1(GGML_TYPE_I32, 12)), "ggml_cpy");
    expect_rejected(ggml_cpy(ctx(), a, t1(GGML_TYPE_I8, 12)), "ggml_cpy");
    expect_rejected(ggml_cpy(ctx(), t1(GGML_TYPE_I32, 12), t1(GGML_TYPE_F32, 12)), "ggml_cpy");
    expect_rejected(ggml_cpy(ctx(), t1(GGML_TYPE_I8, 12), t1(GGML_TYPE_I32, 12)), "ggml_cpy");
    expect_rejected(ggml_cpy(ctx(), t1(GGML_TYPE_Q8_0, 32), t1(GGML_TYPE_F16, 32)), "ggml_cpy");
    expect_rejected(ggml_cpy(ctx(), t1(GGML_TYPE_Q8_0, 32), t1(GGML_TYPE_Q4_0, 32)), "ggml_cpy");
    // Into a quantized destination, the shape must still hold whole blocks.
    ggml_tensor * odd = t2(GGML_TYPE_F32, 33, 2);
    ggml_tensor * r = ggml_cast(ctx(), odd, GGML_TYPE_Q8_0);
    EXPECT_EQ(r, nullptr);
    EXPECT_FALSE(error().empty());
    ggml_clear_error(ctx());
    expect_rejected(ggml_cast(ctx(), t1(GGML_TYPE_I32, 8), GGML_TYPE_F32), {"ggml_cast", "ggml_cpy"});
}
