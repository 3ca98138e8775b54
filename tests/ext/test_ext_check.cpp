// ggml_ext_check_kernel: a correct kernel passes; each kind of broken kernel is caught with a message
// naming its problem.
#include <ggml-ext-params.h>
#include <ggml-ext.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "support/test_util.h"

namespace {

using ggx::test::cpu_backend;
using ggx::test::ScopedErrorMode;

// check_test.axpb.v1: y = a * x + b elementwise, attributes {a, b}; x of any float type, y F32.
struct Axpb {
    float a, b;
};

bool infer_axpb(const ggml_tensor * const * inputs, int, const void *, size_t, ggml_type * type,
                int64_t ne[GGML_MAX_DIMS], char * why, size_t why_size, void *) {
    if (!ggml_is_float_type(inputs[0]->type)) {
        std::snprintf(why, why_size, "x must be a float type");
        return false;
    }
    *type = GGML_TYPE_F32;
    std::memcpy(ne, inputs[0]->ne, sizeof(int64_t) * GGML_MAX_DIMS);
    return true;
}

ggml_ext_op_t axpb_op() {
    static ggml_ext_op_t op = [] {
        ggml_ext_op_desc desc{};
        desc.struct_size = sizeof desc;
        desc.version = GGML_EXT_OP_DESC_VERSION;
        desc.name = "check_test.axpb.v1";
        desc.attr_size = sizeof(Axpb);
        desc.min_inputs = desc.max_inputs = 1;
        desc.infer = infer_axpb;
        return ggml_ext_register_op(&desc);
    }();
    return op;
}

Axpb attrs_of(const ggml_tensor * node) {
    Axpb attrs;
    std::memcpy(&attrs, ggml_ext_node_attrs(node, nullptr), sizeof attrs);
    return attrs;
}

// x's element (i0, i1, i2, i3) through its strides.
float element(const ggml_tensor * x, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const char * p =
        static_cast<const char *>(x->data) + i0 * x->nb[0] + i1 * x->nb[1] + i2 * x->nb[2] + i3 * x->nb[3];
    switch (x->type) {
        case GGML_TYPE_F16:
            return ggml_fp16_to_fp32(*reinterpret_cast<const ggml_fp16_t *>(p));
        case GGML_TYPE_BF16:
            return ggml_bf16_to_fp32(*reinterpret_cast<const ggml_bf16_t *>(p));
        default:
            return *reinterpret_cast<const float *>(p);
    }
}

// How each broken kernel misbehaves.
enum class Flaw {
    kNone,
    kWritePastOutput,
    kModifyInput,
    kWrongResult,
    kReadAsContiguous,
    kPastWorkspace,
    kNeedsZeroWorkspace
};

constexpr size_t kWorkspaceBytes = 64;

bool supports_float(ggml_backend_dev_t, const ggml_tensor * node, void *) {
    return ggml_is_float_type(node->src[0]->type);
}
bool supports_contiguous_f32(ggml_backend_dev_t, const ggml_tensor * node, void *) {
    return node->src[0]->type == GGML_TYPE_F32 && ggml_is_contiguous(node->src[0]);
}
bool supports_any_f32(ggml_backend_dev_t, const ggml_tensor * node, void *) {  // lies about layouts
    return node->src[0]->type == GGML_TYPE_F32;
}

ggml_status prepare_axpb(const ggml_ext_prepare_params * params, void ** state, size_t * workspace_bytes) {
    const ggml_tensor * node = params->node;
    *state = nullptr;
    *workspace_bytes = node->data == nullptr && node->src[0]->data == nullptr ? kWorkspaceBytes : 0;
    return GGML_STATUS_SUCCESS;
}

template <Flaw flaw>
ggml_status execute_axpb(const ggml_ext_execute_params * params) {
    ggml_tensor * y = params->node;
    const ggml_tensor * x = y->src[0];
    const Axpb attrs = attrs_of(y);
    auto * out = static_cast<float *>(y->data);
    auto * scratch = static_cast<unsigned char *>(params->workspace_data);
    if (flaw == Flaw::kPastWorkspace) scratch[kWorkspaceBytes] = 1;  // one byte past the request
    float bias = 0.0f;
    if (flaw == Flaw::kNeedsZeroWorkspace)
        std::memcpy(&bias, scratch, sizeof bias);  // assumes zeroed scratch
    int64_t k = 0;
    for (int64_t i3 = 0; i3 < y->ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < y->ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < y->ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < y->ne[0]; ++i0, ++k) {
                    const float v = flaw == Flaw::kReadAsContiguous ? static_cast<const float *>(x->data)[k]
                                                                    : element(x, i0, i1, i2, i3);
                    out[k] =
                        attrs.a * v + attrs.b + bias + (flaw == Flaw::kWrongResult && k == 3 ? 0.25f : 0.0f);
                }
    if (flaw == Flaw::kWritePastOutput) out[k] = 0.0f;
    if (flaw == Flaw::kModifyInput) static_cast<float *>(x->data)[0] = 7.0f;
    return GGML_STATUS_SUCCESS;
}

bool reference_axpb(const ggml_tensor * node, const double * const * inputs, double * output, void *) {
    const Axpb attrs = attrs_of(node);
    for (int64_t i = 0; i < ggml_nelements(node); ++i)
        output[i] = static_cast<double>(attrs.a) * inputs[0][i] + attrs.b;
    return true;
}

ggml_ext_kernel_desc make_kernel(const char * name, ggml_ext_op_t op,
                                 bool (*supports)(ggml_backend_dev_t, const ggml_tensor *, void *),
                                 ggml_status (*execute)(const ggml_ext_execute_params *), bool with_prepare) {
    ggml_ext_kernel_desc desc{};
    desc.struct_size = sizeof desc;
    desc.version = GGML_EXT_KERNEL_DESC_VERSION;
    desc.name = name;
    desc.op = GGML_OP_CUSTOM;
    desc.custom_op = op;
    desc.supports = supports;
    desc.execute = execute;
    if (with_prepare) desc.prepare = prepare_axpb;
    return desc;
}

ggml_ext_check_case axpb_case(const char * name, ggml_type type, std::initializer_list<int64_t> ne,
                              const Axpb * attrs) {
    ggml_ext_check_case c{};
    c.struct_size = sizeof c;
    c.version = GGML_EXT_CHECK_CASE_VERSION;
    c.name = name;
    c.n_inputs = 1;
    c.types[0] = type;
    int d = 0;
    for (int64_t n : ne)
        c.ne[0][d++] = n;
    c.range[0][0] = -2.0;
    c.range[0][1] = 2.0;
    c.attrs = attrs;
    c.attr_size = sizeof *attrs;
    c.non_contiguous = true;
    return c;
}

void collect(const char * message, void * user_data) {
    static_cast<std::vector<std::string> *>(user_data)->push_back(message);
}

struct Result {
    bool ok;
    ggml_ext_check_report report;
    std::vector<std::string> messages;
};

Result check(const ggml_ext_kernel_desc & kernel, const std::vector<ggml_ext_check_case> & cases,
             double max_nmse = 1e-12) {
    Result r{};
    ggml_ext_check_params params{};
    params.struct_size = sizeof params;
    params.version = GGML_EXT_CHECK_PARAMS_VERSION;
    params.device = ggml_backend_get_device(cpu_backend());
    params.backend = cpu_backend();
    params.kernel = &kernel;
    params.cases = cases.data();
    params.n_cases = static_cast<int>(cases.size());
    params.max_nmse = max_nmse;
    params.reference = reference_axpb;
    params.seed = 42;
    params.log = collect;
    params.log_user_data = &r.messages;
    r.report.struct_size = sizeof r.report;
    r.report.version = GGML_EXT_CHECK_REPORT_VERSION;
    r.ok = ggml_ext_check_kernel(&params, &r.report);
    return r;
}

const Axpb kAttrs{1.5f, -0.25f};

std::vector<ggml_ext_check_case> axpb_cases() {
    return {axpb_case("f32 [7, 5, 3, 2]", GGML_TYPE_F32, {7, 5, 3, 2}, &kAttrs),
            axpb_case("f16 [16, 3, 1, 1]", GGML_TYPE_F16, {16, 3, 1, 1}, &kAttrs),
            axpb_case("bf16 [5, 1, 4, 1]", GGML_TYPE_BF16, {5, 1, 4, 1}, &kAttrs)};
}

std::string all(const Result & r) {
    std::string text;
    for (const std::string & m : r.messages)
        text += m + "\n";
    return text;
}

TEST(ExtCheck, CorrectCustomKernelPasses) {
    const ggml_ext_kernel_desc k =
        make_kernel("check_test.axpb.cpu", axpb_op(), supports_float, execute_axpb<Flaw::kNone>, true);
    const Result r = check(k, axpb_cases());
    EXPECT_TRUE(r.ok) << all(r);
    EXPECT_STREQ(r.report.first_failure, "");
    EXPECT_EQ(r.report.n_cases, 3);
    EXPECT_EQ(r.report.n_passed, 3);
    EXPECT_EQ(r.report.n_runs, 3 * 3);  // contiguous, permuted and strided per case
    EXPECT_EQ(r.report.n_skipped, 0);
}

// The check builds its cases in contexts of its own that return errors whatever the process's error
// mode: a case the operator rejects is a failed check, never an abort.
TEST(ExtCheck, RejectedCaseFailsWithoutAbortingInTheDefaultErrorMode) {
    ScopedErrorMode aborting(GGML_EXT_ERROR_ABORT);
    const ggml_ext_kernel_desc k =
        make_kernel("check_test.axpb.rejected", axpb_op(), supports_float, execute_axpb<Flaw::kNone>, true);
    const Result r = check(k, {axpb_case("i32 [4, 1, 1, 1]", GGML_TYPE_I32, {4, 1, 1, 1}, &kAttrs)});
    EXPECT_FALSE(r.ok);
    EXPECT_NE(std::string(r.report.first_failure).find("x must be a float type"), std::string::npos)
        << r.report.first_failure;
}

TEST(ExtCheck, PrepareSeesNoAddresses) {
    // prepare_axpb requests the workspace only when every data pointer is NULL; the workspace
    // flaw is caught only if the request was made, so a pass of kPastWorkspace would mean addresses.
    const ggml_ext_kernel_desc k = make_kernel("check_test.axpb.past_ws", axpb_op(), supports_float,
                                               execute_axpb<Flaw::kPastWorkspace>, true);
    EXPECT_FALSE(check(k, axpb_cases()).ok);
}

TEST(ExtCheck, SupportsRejectingLayoutsSkipsThem) {
    const ggml_ext_kernel_desc k = make_kernel("check_test.axpb.contig", axpb_op(), supports_contiguous_f32,
                                               execute_axpb<Flaw::kNone>, false);
    const Result r = check(k, {axpb_cases()[0]});
    EXPECT_TRUE(r.ok) << all(r);
    EXPECT_EQ(r.report.n_runs, 1);
    EXPECT_EQ(r.report.n_skipped, 2);
}

TEST(ExtCheck, CatchesWritePastOutput) {
    const ggml_ext_kernel_desc k = make_kernel("check_test.axpb.past_out", axpb_op(), supports_float,
                                               execute_axpb<Flaw::kWritePastOutput>, false);
    const Result r = check(k, axpb_cases());
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.report.n_passed, 0);
    EXPECT_NE(std::string(r.report.first_failure).find("past the end of the output 'output'"),
              std::string::npos)
        << r.report.first_failure;
    EXPECT_NE(std::string(r.report.first_failure).find("check_test.axpb.past_out"), std::string::npos);
    EXPECT_NE(std::string(r.report.first_failure).find("f32 [7, 5, 3, 2], contiguous"), std::string::npos);
}

TEST(ExtCheck, CatchesModifiedInput) {
    const ggml_ext_kernel_desc k = make_kernel("check_test.axpb.modify", axpb_op(), supports_any_f32,
                                               execute_axpb<Flaw::kModifyInput>, false);
    const Result r = check(k, {axpb_cases()[0]});
    EXPECT_FALSE(r.ok);
    EXPECT_NE(std::string(r.report.first_failure).find("modified input storage 'input0'"), std::string::npos)
        << r.report.first_failure;
}

TEST(ExtCheck, CatchesWrongResult) {
    const ggml_ext_kernel_desc k = make_kernel("check_test.axpb.wrong", axpb_op(), supports_float,
                                               execute_axpb<Flaw::kWrongResult>, false);
    const Result r = check(k, {axpb_cases()[0]});
    EXPECT_FALSE(r.ok);
    const std::string m = r.report.first_failure;
    EXPECT_NE(m.find("wrong result against the reference: nmse"), std::string::npos) << m;
    EXPECT_NE(m.find("worst element [3, 0, 0, 0]"), std::string::npos) << m;
}

TEST(ExtCheck, CatchesLyingSupports) {
    const ggml_ext_kernel_desc k = make_kernel("check_test.axpb.liar", axpb_op(), supports_any_f32,
                                               execute_axpb<Flaw::kReadAsContiguous>, false);
    const Result r = check(k, {axpb_cases()[0]});
    EXPECT_FALSE(r.ok);
    const std::string m = r.report.first_failure;
    EXPECT_NE(m.find("permuted (all inputs): wrong result"), std::string::npos) << m;
    EXPECT_NE(m.find("supports accepted this layout"), std::string::npos) << m;
    EXPECT_EQ(r.report.n_runs, 1) << all(r);  // contiguous passes; both other layouts fail
    EXPECT_EQ(r.messages.size(), 2u) << all(r);
}

TEST(ExtCheck, CatchesWritePastWorkspace) {
    const ggml_ext_kernel_desc k = make_kernel("check_test.axpb.past_ws2", axpb_op(), supports_float,
                                               execute_axpb<Flaw::kPastWorkspace>, true);
    const Result r = check(k, {axpb_cases()[0]});
    EXPECT_FALSE(r.ok);
    EXPECT_NE(std::string(r.report.first_failure).find("past the end of the workspace request (64 bytes)"),
              std::string::npos)
        << r.report.first_failure;
}

TEST(ExtCheck, CatchesDependenceOnWorkspaceContents) {
    const ggml_ext_kernel_desc k = make_kernel("check_test.axpb.zero_ws", axpb_op(), supports_float,
                                               execute_axpb<Flaw::kNeedsZeroWorkspace>, true);
    const Result r = check(k, {axpb_cases()[0]});
    EXPECT_FALSE(r.ok);
    const std::string m = r.report.first_failure;
    EXPECT_NE(m.find("on the second execution"), std::string::npos) << m;
    EXPECT_NE(m.find("depends on workspace contents"), std::string::npos) << m;
}

TEST(ExtCheck, CustomOpWithoutReferenceFails) {
    const ggml_ext_kernel_desc k =
        make_kernel("check_test.axpb.noref", axpb_op(), supports_float, execute_axpb<Flaw::kNone>, false);
    std::vector<ggml_ext_check_case> cases{axpb_cases()[0]};
    ggml_ext_check_params params{};
    params.struct_size = sizeof params;
    params.version = GGML_EXT_CHECK_PARAMS_VERSION;
    params.device = ggml_backend_get_device(cpu_backend());
    params.kernel = &k;
    params.cases = cases.data();
    params.n_cases = 1;
    ggml_ext_check_report report{};
    report.struct_size = sizeof report;
    report.version = GGML_EXT_CHECK_REPORT_VERSION;
    EXPECT_FALSE(ggml_ext_check_kernel(&params, &report));
    EXPECT_NE(std::string(report.first_failure).find("no reference callback"), std::string::npos)
        << report.first_failure;
}

TEST(ExtCheck, BadParametersAreRefused) {
    ggml_ext_check_report report{};
    report.struct_size = sizeof report;
    report.version = GGML_EXT_CHECK_REPORT_VERSION;
    EXPECT_FALSE(ggml_ext_check_kernel(nullptr, &report));
    EXPECT_NE(std::string(report.first_failure).find("NULL"), std::string::npos);
    ggml_ext_check_params params{};
    params.struct_size = sizeof params;
    params.version = GGML_EXT_CHECK_PARAMS_VERSION;
    params.device = ggml_backend_get_device(cpu_backend());
    EXPECT_FALSE(ggml_ext_check_kernel(&params, &report));
    EXPECT_NE(std::string(ggml_backend_get_last_error()).find("kernel descriptor is NULL"),
              std::string::npos);
}

// An override of a built-in op, checked against the CPU's native SCALE.
bool supports_scale(ggml_backend_dev_t, const ggml_tensor * node, void *) {
    return node->type == GGML_TYPE_F32 && node->src[0]->type == GGML_TYPE_F32;
}

ggml_status execute_scale(const ggml_ext_execute_params * params) {
    ggml_tensor * y = params->node;
    const ggml_tensor * x = y->src[0];
    ggml_ext_scale_params p{};
    ggml_ext_get_op_params(y, GGML_OP_SCALE, &p, sizeof p);
    const float s = p.scale, b = p.bias;
    for (int64_t i3 = 0; i3 < y->ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < y->ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < y->ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < y->ne[0]; ++i0) {
                    auto * out = reinterpret_cast<float *>(static_cast<char *>(y->data) + i0 * y->nb[0] +
                                                           i1 * y->nb[1] + i2 * y->nb[2] + i3 * y->nb[3]);
                    *out = element(x, i0, i1, i2, i3) * s + b;
                }
    return GGML_STATUS_SUCCESS;
}

ggml_tensor * build_scale(ggml_context * ctx, ggml_tensor ** inputs, int, void * user_data) {
    return ggml_scale_bias(ctx, inputs[0], *static_cast<const float *>(user_data), 0.125f);
}

TEST(ExtCheck, BuiltinOverridePassesAgainstNative) {
    ggml_ext_kernel_desc k{};
    k.struct_size = sizeof k;
    k.version = GGML_EXT_KERNEL_DESC_VERSION;
    k.name = "check_test.scale.cpu";
    k.op = GGML_OP_SCALE;
    k.supports = supports_scale;
    k.execute = execute_scale;
    static const float scale = -0.75f;
    ggml_ext_check_case c{};
    c.struct_size = sizeof c;
    c.version = GGML_EXT_CHECK_CASE_VERSION;
    c.name = "scale_bias f32 [33, 4, 2, 1]";
    c.n_inputs = 1;
    c.types[0] = GGML_TYPE_F32;
    c.ne[0][0] = 33, c.ne[0][1] = 4, c.ne[0][2] = 2, c.ne[0][3] = 1;
    c.build = build_scale;
    c.build_user_data = const_cast<float *>(&scale);
    c.non_contiguous = true;
    std::vector<std::string> messages;
    ggml_ext_check_params params{};
    params.struct_size = sizeof params;
    params.version = GGML_EXT_CHECK_PARAMS_VERSION;
    params.device = ggml_backend_get_device(cpu_backend());
    params.kernel = &k;
    params.cases = &c;
    params.n_cases = 1;
    params.max_nmse = 1e-12;
    params.seed = 7;
    params.log = collect;
    params.log_user_data = &messages;
    ggml_ext_check_report report{};
    report.struct_size = sizeof report;
    report.version = GGML_EXT_CHECK_REPORT_VERSION;
    EXPECT_TRUE(ggml_ext_check_kernel(&params, &report)) << report.first_failure;
    EXPECT_EQ(report.n_runs, 3);

    // The same override with a wrong bias is caught against native.
    k.execute = [](const ggml_ext_execute_params * p) {
        execute_scale(p);
        static_cast<float *>(p->node->data)[0] += 1.0f;
        return GGML_STATUS_SUCCESS;
    };
    EXPECT_FALSE(ggml_ext_check_kernel(&params, &report));
    EXPECT_NE(std::string(report.first_failure).find("wrong result against native"), std::string::npos)
        << report.first_failure;
}

}  // namespace
