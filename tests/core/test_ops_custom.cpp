// Constructors of the custom family added for ggml's API: ggml_map_custom1/2/3 (+ _inplace), computed on
// the CPU by the application's callback with their sources, and ggml_custom_inplace (a CUSTOM node over
// a's storage).
#include "core/ops_test_support.h"

namespace {

using ggx::test::compute_on_cpu;
using ggx::test::ramp;

class OpsCustom : public ggx::test::OpsTest {};

// Element i of an F32 tensor (contiguous in these tests).
float & at(const ggml_tensor * t, int64_t i) { return static_cast<float *>(t->data)[i]; }

// Rows ith, ith + nth, ... of dst, so every thread's share is exercised.
template <class F>
void by_rows(ggml_tensor * dst, int ith, int nth, F f) {
    for (int64_t i = ith; i < ggml_nelements(dst); i += nth)
        f(i);
}

void twice(ggml_tensor * dst, const ggml_tensor * a, int ith, int nth, void * userdata) {
    const float k = *static_cast<float *>(userdata);
    by_rows(dst, ith, nth, [&](int64_t i) { at(dst, i) = k * at(a, i); });
}
void sum2(ggml_tensor * dst, const ggml_tensor * a, const ggml_tensor * b, int ith, int nth, void *) {
    by_rows(dst, ith, nth, [&](int64_t i) { at(dst, i) = at(a, i) + at(b, i); });
}
void fma3(ggml_tensor * dst, const ggml_tensor * a, const ggml_tensor * b, const ggml_tensor * c, int ith,
          int nth, void *) {
    by_rows(dst, ith, nth, [&](int64_t i) { at(dst, i) = at(a, i) * at(b, i) + at(c, i); });
}
void negate_src1(ggml_tensor * dst, int ith, int nth, void *) {
    by_rows(dst, ith, nth, [&](int64_t i) { at(dst, i) = -at(dst->src[1], i); });
}

TEST_F(OpsCustom, MapCustomNodesRecordTheirCallback) {
    float k = 2;
    ggml_tensor *a = f32(4, 2), *b = f32(4, 2), *c = f32(4, 2);
    ggml_tensor * one = ggml_map_custom1(ctx(), a, twice, 3, &k);
    expect_node(one, GGML_OP_MAP_CUSTOM1, GGML_TYPE_F32, {4, 2, 1, 1}, {a});
    const auto p = params_of<ggml_ext_map_custom1_params>(one);
    EXPECT_EQ(p.fun, &twice);
    EXPECT_EQ(p.n_tasks, 3);
    EXPECT_EQ(p.userdata, &k);
    EXPECT_EQ(one->view_src, nullptr);
    expect_view_of(ggml_map_custom1_inplace(ctx(), a, twice, 1, &k), a);
    expect_node(ggml_map_custom2(ctx(), a, b, sum2, GGML_N_TASKS_MAX, nullptr), GGML_OP_MAP_CUSTOM2,
                GGML_TYPE_F32, {4, 2, 1, 1}, {a, b});
    expect_view_of(ggml_map_custom2_inplace(ctx(), a, b, sum2, 1, nullptr), a);
    ggml_tensor * three = ggml_map_custom3(ctx(), a, b, c, fma3, 1, nullptr);
    expect_node(three, GGML_OP_MAP_CUSTOM3, GGML_TYPE_F32, {4, 2, 1, 1}, {a, b, c});
    EXPECT_EQ(params_of<ggml_ext_map_custom3_params>(three).fun, &fma3);
    expect_view_of(ggml_map_custom3_inplace(ctx(), a, b, c, fma3, 1, nullptr), a);

    expect_error(ggml_map_custom1(ctx(), a, nullptr, 1, nullptr), "ggml_map_custom1", "fun must not be NULL");
    expect_error(ggml_map_custom2(ctx(), a, b, sum2, 0, nullptr), "ggml_map_custom2", "n_tasks must be >= 1");
    EXPECT_EQ(ggml_map_custom3(ctx(), a, nullptr, c, fma3, 1, nullptr), nullptr);
    EXPECT_EQ(ggml_get_error(ctx()), nullptr);
}

TEST_F(OpsCustom, MapCustomComputesOnTheCpu) {
    float k = 3;
    ggml_tensor * a = f32(5, 3);
    EXPECT_EQ(
        compute_on_cpu(ctx(), ggml_map_custom1(ctx(), a, twice, GGML_N_TASKS_MAX, &k), {{a, ramp(15, 0, 1)}}),
        ramp(15, 0, 3));
}

TEST_F(OpsCustom, MapCustom2And3ComputeOnTheCpu) {
    ggml_tensor *a = f32(6), *b = f32(6), *c = f32(6);
    ggml_tensor * r =
        ggml_map_custom3(ctx(), ggml_map_custom2(ctx(), a, b, sum2, 2, nullptr), b, c, fma3, 1, nullptr);
    // (a + b) * b + c with a = 0..5, b = 1, c = 10.
    EXPECT_EQ(compute_on_cpu(ctx(), r, {{a, ramp(6, 0, 1)}, {b, ramp(6, 1, 0)}, {c, ramp(6, 10, 0)}}),
              ramp(6, 11, 1));
}

TEST_F(OpsCustom, CustomInplaceIsACallbackNodeOverA) {
    ggml_tensor *a = f32(4), *x = f32(4);
    ggml_tensor * args[] = {x};
    ggml_tensor * r = ggml_custom_inplace(ctx(), a, args, 1, negate_src1, GGML_N_TASKS_MAX, nullptr);
    expect_node(r, GGML_OP_CUSTOM, GGML_TYPE_F32, {4, 1, 1, 1}, {a, x});
    expect_view_of(r, a);
    EXPECT_EQ(ggml_get_custom_kind(r), GGML_CUSTOM_KIND_CPU_CALLBACK);
    EXPECT_EQ(compute_on_cpu(ctx(), r, {{a, ramp(4, 0, 0)}, {x, ramp(4, 1, 1)}}), ramp(4, -1, -1));
}

TEST_F(OpsCustom, CustomInplaceRejectsMisuse) {
    ggml_tensor * a = f32(4);
    std::vector<ggml_tensor *> args(GGML_MAX_SRC, f32(4));
    expect_error(ggml_custom_inplace(ctx(), a, args.data(), GGML_MAX_SRC, negate_src1, 1, nullptr),
                 "ggml_custom_inplace", "n_args must be 0..GGML_MAX_SRC-1");
    expect_error(ggml_custom_inplace(ctx(), a, nullptr, 0, nullptr, 1, nullptr), "ggml_custom_inplace",
                 "fun must not be NULL");
    EXPECT_EQ(ggml_custom_inplace(ctx(), nullptr, nullptr, 0, negate_src1, 1, nullptr), nullptr);
}

}  // namespace
