// ggml.h's utility API: logging and the abort callback, time, version, status names, GUIDs,
// arena objects and ggml_reset, tensor helpers, type traits and quantization, thread-pool
// parameters, and graph helpers (forward order/select, dup, print, dot).
#include <ggml-cpp.h>
#include <ggml-graph.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/types.h"

namespace {

ggml_context_ptr make_ctx(size_t bytes = 1 << 20, bool no_alloc = false) {
    return ggml_context_ptr(ggml_init({bytes, nullptr, no_alloc}));
}

// Captures everything logged while alive, then restores the previous logger.
class LogCapture {
public:
    LogCapture() {
        ggml_log_get(&previous_, &previous_data_);
        ggml_log_set(&LogCapture::record, this);
    }
    ~LogCapture() { ggml_log_set(previous_, previous_data_); }
    const std::string & text() const { return text_; }
    const std::vector<ggml_log_level> & levels() const { return levels_; }

private:
    static void record(ggml_log_level level, const char * text, void * self) {
        auto * capture = static_cast<LogCapture *>(self);
        capture->text_ += text;
        capture->levels_.push_back(level);
    }
    ggml_log_callback previous_ = nullptr;
    void * previous_data_ = nullptr;
    std::string text_;
    std::vector<ggml_log_level> levels_;
};

TEST(GgmlLog, CallbackReceivesDiagnosticsAndNullRestoresTheDefault) {
    ggml_log_callback original = nullptr;
    void * original_data = nullptr;
    ggml_log_get(&original, &original_data);
    ASSERT_NE(original, nullptr);  // the default stderr writer
    {
        LogCapture capture;
        EXPECT_FALSE(ggml_validate_row_data(GGML_TYPE_F32, "abc", 3));
        EXPECT_NE(capture.text().find("not a multiple"), std::string::npos) << capture.text();
        ASSERT_FALSE(capture.levels().empty());
        EXPECT_EQ(capture.levels().front(), GGML_LOG_LEVEL_ERROR);
    }
    ggml_log_set(nullptr, nullptr);
    ggml_log_callback now = nullptr;
    void * now_data = &now;
    ggml_log_get(&now, &now_data);
    EXPECT_EQ(now, original);
    EXPECT_EQ(now_data, nullptr);
}

void abort_callback_prints(const char * message) {
    std::fprintf(stderr, "abort callback got: %s\n", message);
    std::fflush(stderr);
}

TEST(GgmlAbortCallbackDeathTest, FatalErrorsGoThroughTheAbortCallback) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EQ(ggml_set_abort_callback(nullptr), nullptr);
    EXPECT_DEATH(
        {
            ggml_set_abort_callback(abort_callback_prints);
            ggml_context_ptr ctx = make_ctx(1 << 16);
            ggml_set_abort_on_error(ctx.get(), true);
            ggml_add(ctx.get(), ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 3),
                     ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 2));
        },
        "abort callback got: .*ggml_add");
    EXPECT_EQ(ggml_set_abort_callback(abort_callback_prints), nullptr);
    EXPECT_EQ(ggml_set_abort_callback(nullptr), abort_callback_prints);
}

TEST(GgmlTime, ClocksAdvanceMonotonically) {
    ggml_time_init();
    const int64_t us0 = ggml_time_us(), ms0 = ggml_time_ms(), cycles0 = ggml_cycles();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_GE(ggml_time_us() - us0, 20000);
    EXPECT_GE(ggml_time_ms() - ms0, 20);
    EXPECT_GT(ggml_cycles(), cycles0);
    EXPECT_GT(ggml_cycles_per_ms(), 0);
}

TEST(GgmlMisc, VersionCommitStatusAndGuids) {
    EXPECT_STREQ(ggml_version(), "0.21.0");
    EXPECT_GT(std::strlen(ggml_commit()), 0u);
    EXPECT_STREQ(ggml_status_to_string(GGML_STATUS_SUCCESS), "GGML status: success");
    EXPECT_NE(std::string(ggml_status_to_string(GGML_STATUS_FAILED)).find("error"), std::string::npos);
    EXPECT_NE(std::string(ggml_status_to_string(GGML_STATUS_ALLOC_FAILED)).find("allocate"), std::string::npos);
    EXPECT_NE(std::string(ggml_status_to_string(GGML_STATUS_ABORTED)).find("aborted"), std::string::npos);
    ggml_guid a = {1, 2, 3}, b = {1, 2, 3}, c = {1, 2, 4};
    EXPECT_TRUE(ggml_guid_matches(&a, &b));
    EXPECT_FALSE(ggml_guid_matches(&a, &c));
    ggml_unused_vars_impl(2, 1.0, "x");
}

TEST(GgmlMisc, FopenOpensUtf8Paths) {
    const std::string path = testing::TempDir() + "ggx_fopen_\xc3\xa9t\xc3\xa9.txt";
    FILE * file = ggml_fopen(path.c_str(), "w");
    ASSERT_NE(file, nullptr);
    std::fputs("hello", file);
    std::fclose(file);
    std::ifstream in(path);
    std::string text;
    in >> text;
    EXPECT_EQ(text, "hello");
    std::remove(path.c_str());
    EXPECT_EQ(ggml_fopen((testing::TempDir() + "no/such/dir/x").c_str(), "r"), nullptr);
}

TEST(GgmlContext, NewBufferObjectsAndReset) {
    ggml_context_ptr ctx = make_ctx(1 << 16);
    EXPECT_NE(ggml_get_mem_buffer(ctx.get()), nullptr);
    ggml_tensor * t = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 8);
    void * buffer = ggml_new_buffer(ctx.get(), 100);
    ASSERT_NE(buffer, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % GGML_MEM_ALIGN, 0u);
    std::memset(buffer, 0xab, 100);  // usable memory
    EXPECT_NE(ggml_new_graph_custom(ctx.get(), 8, false), nullptr);
    {
        LogCapture capture;
        ggml_print_objects(ctx.get());
        EXPECT_NE(capture.text().find("3 objects"), std::string::npos) << capture.text();
        EXPECT_NE(capture.text().find("type = tensor"), std::string::npos);
        EXPECT_NE(capture.text().find("type = work buffer, offs = "), std::string::npos);
        EXPECT_NE(capture.text().find("type = graph"), std::string::npos);
    }
    EXPECT_EQ(ggml_get_first_tensor(ctx.get()), t);
    ggml_reset(ctx.get());
    EXPECT_EQ(ggml_used_mem(ctx.get()), 0u);
    EXPECT_EQ(ggml_get_first_tensor(ctx.get()), nullptr);
    EXPECT_EQ(ggml_new_buffer(ctx.get(), 1 << 20), nullptr);  // larger than the arena
    EXPECT_NE(ggml_get_error(ctx.get()), nullptr);
}

TEST(GgmlTensor, FlagsIndicesAndShapePredicates) {
    ggml_context_ptr ctx = make_ctx();
    ggml_tensor * t = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, 5, 4, 3, 2);
    ggml_set_param(t);
    EXPECT_TRUE(t->flags & GGML_TENSOR_FLAG_PARAM);
    ggml_tensor * loss = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 1);
    ggml_set_loss(loss);
    EXPECT_TRUE(loss->flags & GGML_TENSOR_FLAG_LOSS);
    EXPECT_EQ(ggml_nbytes_pad(ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 3)), size_t{GGML_MEM_ALIGN});
    int64_t i0, i1, i2, i3;
    ggml_unravel_index(t, 5 * 4 * 3 + 5 * 4 * 2 + 5 + 3, &i0, &i1, &i2, &i3);
    EXPECT_EQ(std::vector<int64_t>({i0, i1, i2, i3}), std::vector<int64_t>({3, 1, 2, 1}));
    ggml_unravel_index(t, 7, &i0, nullptr, nullptr, nullptr);
    EXPECT_EQ(i0, 2);

    EXPECT_FALSE(ggml_is_view(t));
    ggml_tensor * permuted = ggml_permute(ctx.get(), t, 1, 0, 2, 3);  // rows no longer dense
    EXPECT_TRUE(ggml_is_view(permuted));
    EXPECT_FALSE(ggml_is_contiguous_to_1(permuted));
    ggml_tensor * rows = ggml_view_3d(ctx.get(), t, 5, 2, 3, t->nb[1], t->nb[2], 0);  // 2 of 4 rows
    EXPECT_TRUE(ggml_is_contiguous_to_1(rows));
    EXPECT_TRUE(ggml_is_contiguous_to_2(rows));
    EXPECT_FALSE(ggml_is_contiguous_to_3(rows));
    EXPECT_TRUE(ggml_is_contiguous_to_3(t));

    // C x W x H x N stored, seen as W x H x C x N.
    ggml_tensor * cwhn = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, 3, 8, 6, 1);
    EXPECT_TRUE(ggml_is_contiguous_channels(ggml_permute(ctx.get(), cwhn, 2, 0, 1, 3)));
    EXPECT_FALSE(ggml_is_contiguous_channels(cwhn));

    float * data = ggml_get_data_f32(t);
    std::fill(data, data + ggml_nelements(t), 1.5f);
    EXPECT_EQ(ggml_set_zero(t), t);
    EXPECT_EQ(std::count(data, data + ggml_nelements(t), 0.0f), ggml_nelements(t));
}

TEST(GgmlTypes, TraitsSizesAndFileTypes) {
    EXPECT_DOUBLE_EQ(ggml_type_sizef(GGML_TYPE_F32), 4.0);
    EXPECT_DOUBLE_EQ(ggml_type_sizef(GGML_TYPE_Q8_0), 34.0 / 32.0);
    EXPECT_EQ(ggml_ftype_to_ggml_type(GGML_FTYPE_ALL_F32), GGML_TYPE_F32);
    EXPECT_EQ(ggml_ftype_to_ggml_type(GGML_FTYPE_MOSTLY_F16), GGML_TYPE_F16);
    EXPECT_EQ(ggml_ftype_to_ggml_type(GGML_FTYPE_MOSTLY_BF16), GGML_TYPE_BF16);
    EXPECT_EQ(ggml_ftype_to_ggml_type(GGML_FTYPE_MOSTLY_Q8_0), GGML_TYPE_Q8_0);
    EXPECT_EQ(ggml_ftype_to_ggml_type(GGML_FTYPE_MOSTLY_Q4_0), GGML_TYPE_Q4_0);
    EXPECT_EQ(ggml_ftype_to_ggml_type(GGML_FTYPE_MOSTLY_Q6_K), GGML_TYPE_Q6_K);
    EXPECT_EQ(ggml_ftype_to_ggml_type(GGML_FTYPE_MOSTLY_Q4_1_SOME_F16), GGML_TYPE_Q4_1);
    EXPECT_EQ(ggml_ftype_to_ggml_type(GGML_FTYPE_MOSTLY_Q2_0), GGML_TYPE_Q2_0);
    EXPECT_EQ(ggml_ftype_to_ggml_type(GGML_FTYPE_UNKNOWN), GGML_TYPE_COUNT);

    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const auto type = static_cast<ggml_type>(t);
        const ggml_type_traits * traits = ggml_get_type_traits(type);
        ASSERT_NE(traits, nullptr);
        EXPECT_STREQ(traits->type_name, ggml_type_name(type));
        EXPECT_EQ(traits->blck_size, ggml_blck_size(type));
        EXPECT_EQ(traits->type_size, ggml_type_size(type));
        EXPECT_EQ(traits->is_quantized, ggml_is_quantized(type));
        // A type without a conversion has none in its traits either, as in ggml.
        if (!ggx::core::has_conversion(type)) {
            EXPECT_EQ(traits->to_float, nullptr) << ggml_type_name(type);
            EXPECT_EQ(traits->from_float_ref, nullptr) << ggml_type_name(type);
            continue;
        }
        // from_float_ref then to_float is ggml_quantize_row then ggml_dequantize_row (256 values: a
        // multiple of every block size).
        constexpr int64_t n = 256;
        std::vector<float> x(n), y(n), expected(n);
        for (size_t k = 0; k < x.size(); ++k)
            x[k] = static_cast<float>(k % 64) * 0.25f - 7.0f;
        std::vector<char> row(ggml_row_size(type, n)), reference(row.size());
        traits->from_float_ref(x.data(), row.data(), n);
        ggml_quantize_row(type, x.data(), reference.data(), n);
        EXPECT_EQ(row, reference) << ggml_type_name(type);
        traits->to_float(row.data(), y.data(), n);
        ggml_dequantize_row(type, reference.data(), expected.data(), n);
        EXPECT_EQ(y, expected) << ggml_type_name(type);
    }
    EXPECT_EQ(ggml_get_type_traits(GGML_TYPE_COUNT), nullptr);
}

TEST(GgmlTypes, ValidateRowDataRejectsNonFiniteValuesAndScales) {
    LogCapture quiet;
    const float good[] = {1, -2, 3.5f}, bad[] = {1, std::numeric_limits<float>::infinity(), 0};
    EXPECT_TRUE(ggml_validate_row_data(GGML_TYPE_F32, good, sizeof good));
    EXPECT_FALSE(ggml_validate_row_data(GGML_TYPE_F32, bad, sizeof bad));
    const ggml_fp16_t halves[] = {ggml_fp32_to_fp16(1), ggml_fp32_to_fp16(NAN)};
    EXPECT_TRUE(ggml_validate_row_data(GGML_TYPE_F16, halves, 2));
    EXPECT_FALSE(ggml_validate_row_data(GGML_TYPE_F16, halves, 4));
    ggml_block_q8_0 block{};
    block.d = ggml_fp32_to_fp16(0.5f);
    EXPECT_TRUE(ggml_validate_row_data(GGML_TYPE_Q8_0, &block, sizeof block));
    block.d = ggml_fp32_to_fp16(INFINITY);
    EXPECT_FALSE(ggml_validate_row_data(GGML_TYPE_Q8_0, &block, sizeof block));
    EXPECT_FALSE(ggml_validate_row_data(GGML_TYPE_Q8_0, &block, sizeof block - 1));
    const int32_t ints[] = {-1, 0x7fffffff};
    EXPECT_TRUE(ggml_validate_row_data(GGML_TYPE_I32, ints, sizeof ints));
    EXPECT_NE(quiet.text().find("is not finite"), std::string::npos);
}

TEST(GgmlQuantize, ChunkWritesWholeRowsAtTheirPosition) {
    ggml_quantize_init(GGML_TYPE_Q4_0);
    ggml_quantize_init(GGML_TYPE_Q4_0);  // repeatable
    for (ggml_type type : {GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0}) {
        EXPECT_FALSE(ggml_quantize_requires_imatrix(type));
        const int64_t n_per_row = 64, rows = 4;
        std::vector<float> src(static_cast<size_t>(n_per_row * rows));
        for (size_t k = 0; k < src.size(); ++k)
            src[k] = std::sin(static_cast<float>(k));
        const size_t row_bytes = ggml_row_size(type, n_per_row);
        std::vector<char> dst(row_bytes * rows, 0), expected(row_bytes);
        // rows 1 and 2 only
        EXPECT_EQ(ggml_quantize_chunk(type, src.data(), dst.data(), n_per_row, 2, n_per_row, nullptr), 2 * row_bytes);
        for (int r = 0; r < rows; ++r) {
            std::vector<char> got(dst.begin() + r * row_bytes, dst.begin() + (r + 1) * row_bytes);
            if (r == 1 || r == 2) {
                ggml_quantize_row(type, src.data() + r * n_per_row, expected.data(), n_per_row);
                EXPECT_EQ(got, expected) << ggml_type_name(type) << " row " << r;
            } else {
                EXPECT_EQ(got, std::vector<char>(row_bytes, 0)) << ggml_type_name(type) << " row " << r;
            }
        }
    }
    LogCapture quiet;
    float x[32] = {};
    char y[64];
    EXPECT_EQ(ggml_quantize_chunk(GGML_TYPE_Q8_0, x, y, 3, 1, 32, nullptr), 0u);  // not a row start
    EXPECT_EQ(ggml_quantize_chunk(GGML_TYPE_Q8_0, x, y, 0, 1, 31, nullptr), 0u);  // not whole blocks
    ggml_quantize_free();
}

TEST(GgmlThreadpoolParams, DefaultsInitAndMatch) {
    ggml_threadpool_params p = ggml_threadpool_params_default(3);
    EXPECT_EQ(p.n_threads, 3);
    EXPECT_EQ(p.prio, GGML_SCHED_PRIO_NORMAL);
    EXPECT_EQ(p.poll, 50u);
    EXPECT_FALSE(p.strict_cpu);
    EXPECT_FALSE(p.paused);
    EXPECT_EQ(std::count(std::begin(p.cpumask), std::end(p.cpumask), true), 0);
    ggml_threadpool_params q;
    ggml_threadpool_params_init(&q, 3);
    EXPECT_TRUE(ggml_threadpool_params_match(&p, &q));
    q.cpumask[5] = true;
    EXPECT_FALSE(ggml_threadpool_params_match(&p, &q));
    q = p;
    q.n_threads = 4;
    EXPECT_FALSE(ggml_threadpool_params_match(&p, &q));
}

TEST(GgmlGraph, ForwardOrderAddsNodesWithoutComputingThem) {
    ggml_context_ptr ctx = make_ctx();
    ggml_tensor * x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    ggml_tensor * a = ggml_scale(ctx.get(), x, 2.0f);
    ggml_tensor * b = ggml_add(ctx.get(), a, x);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_order(graph, a);
    ASSERT_EQ(ggml_graph_n_nodes(graph), 1);
    EXPECT_FALSE(a->flags & GGML_TENSOR_FLAG_COMPUTE);
    ggml_build_forward_expand(graph, b);  // b needs a: a is computed now, in the position order gave it
    ASSERT_EQ(ggml_graph_n_nodes(graph), 2);
    EXPECT_EQ(ggml_graph_node(graph, 0), a);
    EXPECT_TRUE(a->flags & GGML_TENSOR_FLAG_COMPUTE);
    EXPECT_TRUE(b->flags & GGML_TENSOR_FLAG_COMPUTE);
}

TEST(GgmlGraph, ForwardSelectComputesOnlyTheChosenBranch) {
    ggml_context_ptr ctx = make_ctx();
    ggml_tensor * x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    ggml_tensor * branches[] = {ggml_scale(ctx.get(), x, 2.0f), ggml_sqr(ctx.get(), x)};
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    EXPECT_EQ(ggml_build_forward_select(graph, branches, 2, 1), branches[1]);
    EXPECT_EQ(ggml_graph_n_nodes(graph), 2);  // both branches are in the graph
    EXPECT_FALSE(branches[0]->flags & GGML_TENSOR_FLAG_COMPUTE);
    EXPECT_TRUE(branches[1]->flags & GGML_TENSOR_FLAG_COMPUTE);
    EXPECT_EQ(ggml_build_forward_select(graph, branches, 2, 2), nullptr);
    EXPECT_FALSE(ggml_graph_is_valid(graph));
}

TEST(GgmlGraph, DupCopiesTheGraph) {
    ggml_context_ptr ctx = make_ctx();
    ggml_tensor * x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    ggml_tensor * y = ggml_sqr(ctx.get(), ggml_scale(ctx.get(), x, 2.0f));
    ggml_cgraph * graph = ggml_new_graph_custom(ctx.get(), 16, false);
    ggml_build_forward_expand(graph, y);
    ggml_cgraph * copy = ggml_graph_dup(ctx.get(), graph, false);
    ASSERT_NE(copy, nullptr);
    EXPECT_EQ(ggml_graph_size(copy), 16);
    EXPECT_EQ(ggml_graph_n_nodes(copy), 2);
    EXPECT_EQ(ggml_graph_node(copy, -1), y);
    EXPECT_EQ(ggml_graph_get_use_count(copy, x), 1);
    // Gradients (tests/core/test_backward.cpp): a graph without them has none to give.
    EXPECT_EQ(ggml_graph_get_grad(graph, y), nullptr);
    EXPECT_EQ(ggml_graph_get_grad_acc(graph, y), nullptr);
    EXPECT_NE(ggml_graph_dup(ctx.get(), graph, true), nullptr);
}

TEST(GgmlGraph, PrintAndDumpDotDescribeEveryNode) {
    ggml_context_ptr ctx = make_ctx();
    ggml_tensor * x = ggml_set_name(ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 4, 3), "x");
    ggml_set_input(x);
    ggml_tensor * y = ggml_set_name(ggml_sqr(ctx.get(), x), "y");
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, y);
    {
        LogCapture capture;
        ggml_graph_print(graph);
        EXPECT_NE(capture.text().find("1 nodes, 1 leafs"), std::string::npos) << capture.text();
        EXPECT_NE(capture.text().find("SQR"), std::string::npos);
        EXPECT_NE(capture.text().find("I---"), std::string::npos);  // x: an input
        EXPECT_NE(capture.text().find(" y\n"), std::string::npos);
    }
    const std::string path = testing::TempDir() + "ggx_graph.dot";
    LogCapture quiet;
    ggml_graph_dump_dot(graph, nullptr, path.c_str());
    std::ifstream in(path);
    std::stringstream dot;
    dot << in.rdbuf();
    EXPECT_EQ(dot.str().rfind("digraph", 0), 0u);
    EXPECT_NE(dot.str().find("label=\"y | SQR | [4, 3, 1, 1] | f32\""), std::string::npos) << dot.str();
    EXPECT_NE(dot.str().find("label=\"src0\""), std::string::npos);
    std::remove(path.c_str());
    ggml_graph_dump_dot(graph, nullptr, (testing::TempDir() + "no/such/dir/g.dot").c_str());
    EXPECT_NE(quiet.text().find("cannot open"), std::string::npos);
}

}  // namespace
