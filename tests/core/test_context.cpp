// Unit tests for contexts: arenas, memory accounting, no-alloc vs small-data mode, tensor
// iteration and lookup, and the error mechanism (first error kept, NULL propagation, clear,
// callback, abort-on-error).
#include <ggml.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace {

struct CtxFree {
    void operator()(ggml_context * c) const { ggml_free(c); }
};
using Ctx = std::unique_ptr<ggml_context, CtxFree>;

Ctx make_ctx(size_t mem_size, bool no_alloc, void * buffer = nullptr) {
    ggml_init_params p{};
    p.mem_size = mem_size;
    p.mem_buffer = buffer;
    p.no_alloc = no_alloc;
    return Ctx(ggml_init(p));
}

std::string error_of(const ggml_context * ctx) {
    const char * e = ggml_get_error(ctx);
    return e ? std::string(e) : std::string();
}

bool aligned(const void * p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

// A tensor pair whose shapes cannot be added: a [7, 3], b [5, 3] (7 % 5 != 0).
struct BadAdd {
    ggml_tensor * a;
    ggml_tensor * b;
};
BadAdd make_bad_add(ggml_context * ctx) {
    BadAdd r{ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 7, 3), ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 5, 3)};
    EXPECT_NE(r.a, nullptr);
    EXPECT_NE(r.b, nullptr);
    return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ggml_init / ggml_free

TEST(ContextInit, OwnArenaReportsSizeAndMode) {
    Ctx ctx = make_ctx(1 << 20, false);
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(ggml_get_mem_size(ctx.get()), size_t(1) << 20);
    EXPECT_LE(ggml_used_mem(ctx.get()), ggml_get_mem_size(ctx.get()));
    EXPECT_FALSE(ggml_get_no_alloc(ctx.get()));
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);
    EXPECT_EQ(ggml_get_first_tensor(ctx.get()), nullptr);
    EXPECT_EQ(ggml_get_max_tensor_size(ctx.get()), 0u);
}

TEST(ContextInit, NoAllocFlagReported) {
    Ctx ctx = make_ctx(1 << 16, true);
    ASSERT_NE(ctx, nullptr);
    EXPECT_TRUE(ggml_get_no_alloc(ctx.get()));
}

// As in ggml: a size of 0 gives a context with a GGML_MEM_ALIGN-byte arena, too small for any object.
TEST(ContextInit, ZeroSizeGivesAnEmptyArena) {
    Ctx ctx(ggml_init({0, nullptr, true}));
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(ggml_get_mem_size(ctx.get()), size_t{GGML_MEM_ALIGN});
    EXPECT_EQ(ggml_used_mem(ctx.get()), 0u);
    EXPECT_EQ(ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 1), nullptr);
    ASSERT_NE(ggml_get_error(ctx.get()), nullptr);
    EXPECT_NE(std::strstr(ggml_get_error(ctx.get()), "arena full"), nullptr) << ggml_get_error(ctx.get());
}

TEST(ContextInit, FreeNullIsIgnored) { ggml_free(nullptr); }

TEST(ContextInit, ManyContextsAreIndependent) {
    Ctx a = make_ctx(1 << 16, false);
    Ctx b = make_ctx(1 << 16, false);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    ggml_tensor * ta = ggml_new_tensor_1d(a.get(), GGML_TYPE_F32, 16);
    ASSERT_NE(ta, nullptr);
    EXPECT_EQ(ggml_get_first_tensor(b.get()), nullptr);
    EXPECT_LT(ggml_used_mem(b.get()), ggml_used_mem(a.get()));
    // An error in one context is not visible in the other.
    BadAdd bad = make_bad_add(a.get());
    EXPECT_EQ(ggml_add(a.get(), bad.a, bad.b), nullptr);
    EXPECT_NE(ggml_get_error(a.get()), nullptr);
    EXPECT_EQ(ggml_get_error(b.get()), nullptr);
}

TEST(ContextInit, CallerArenaHoldsTensorData) {
    const size_t size = 64 * 1024;
    void * buf = std::aligned_alloc(GGML_MEM_ALIGN, size);
    ASSERT_NE(buf, nullptr);
    {
        Ctx ctx = make_ctx(size, false, buf);
        ASSERT_NE(ctx, nullptr);
        EXPECT_EQ(ggml_get_mem_size(ctx.get()), size);
        const char * lo = static_cast<const char *>(buf);
        const char * hi = lo + size;
        const int64_t sizes[] = {3, 1, 7, 33, 100};
        for (int64_t n : sizes) {
            ggml_tensor * t = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, n);
            ASSERT_NE(t, nullptr) << n;
            ASSERT_NE(t->data, nullptr);
            const char * d = static_cast<const char *>(t->data);
            EXPECT_GE(d, lo);
            EXPECT_LE(d + ggml_nbytes(t), hi);
            EXPECT_TRUE(aligned(t->data, GGML_MEM_ALIGN)) << n;
            // The tensor's metadata may live in the arena too, but never overlaps its own data.
            std::memset(t->data, 0x5a, ggml_nbytes(t));
        }
        EXPECT_LE(ggml_used_mem(ctx.get()), size);
    }
    // The caller's arena survives ggml_free and is still the caller's to use and release.
    std::memset(buf, 0, size);
    std::free(buf);
}

// ---------------------------------------------------------------------------------------------
// Memory accounting and allocation modes

TEST(ContextMemory, TensorOverheadCoversMetadata) { EXPECT_GE(ggml_tensor_overhead(), sizeof(ggml_tensor)); }

// ggml's sizing rule: a tensor takes ggml_tensor_overhead() plus its data rounded up to
// GGML_MEM_ALIGN. Tensors of every small odd size fill such a context without running out.
TEST(ContextMemory, GgmlSizingRuleHoldsTheTensors) {
    constexpr int64_t kTensors = 200;
    size_t size = 0;
    for (int64_t n = 1; n <= kTensors; ++n)
        size += ggml_tensor_overhead() + (static_cast<size_t>(n) + GGML_MEM_ALIGN - 1) / GGML_MEM_ALIGN * GGML_MEM_ALIGN;
    ggml_context * ctx = ggml_init({size, nullptr, false});
    ASSERT_NE(ctx, nullptr);
    for (int64_t n = 1; n <= kTensors; ++n)
        ASSERT_NE(ggml_new_tensor_1d(ctx, GGML_TYPE_I8, n), nullptr) << n << " bytes: " << ggml_get_error(ctx);
    ggml_free(ctx);
}

TEST(ContextMemory, NoAllocTensorTakesAtMostOverhead) {
    Ctx ctx = make_ctx(1 << 20, true);
    ASSERT_NE(ctx, nullptr);
    const size_t before = ggml_used_mem(ctx.get());
    ggml_tensor * t = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 1024, 64);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->data, nullptr);
    EXPECT_EQ(ggml_get_data(t), nullptr);
    EXPECT_EQ(t->buffer, nullptr);
    EXPECT_EQ(ggml_nbytes(t), size_t(1024) * 64 * 4);
    EXPECT_GE(ggml_used_mem(ctx.get()) - before, sizeof(ggml_tensor));
    EXPECT_LE(ggml_used_mem(ctx.get()) - before, ggml_tensor_overhead());
    // A tensor far bigger than the arena is fine without data.
    ggml_tensor * big = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, int64_t(1) << 30);
    ASSERT_NE(big, nullptr);
    EXPECT_EQ(big->data, nullptr);
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);
}

TEST(ContextMemory, SmallDataModeAllocatesAlignedData) {
    Ctx ctx = make_ctx(1 << 20, false);
    ASSERT_NE(ctx, nullptr);
    std::vector<ggml_tensor *> ts;
    const ggml_type types[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_I8, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0};
    for (ggml_type type : types) {
        const int64_t ne0 = ggml_blck_size(type) > 1 ? 32 : 3;
        const size_t before = ggml_used_mem(ctx.get());
        ggml_tensor * t = ggml_new_tensor_2d(ctx.get(), type, ne0, 3);
        ASSERT_NE(t, nullptr) << ggml_type_name(type);
        ASSERT_NE(t->data, nullptr);
        EXPECT_EQ(ggml_get_data(t), t->data);
        EXPECT_TRUE(aligned(t->data, GGML_MEM_ALIGN)) << ggml_type_name(type);
        const size_t used = ggml_used_mem(ctx.get()) - before;
        EXPECT_GE(used, sizeof(ggml_tensor) + ggml_nbytes(t));
        // ggml's sizing rule: the overhead plus the data rounded up to GGML_MEM_ALIGN.
        EXPECT_LE(used, ggml_tensor_overhead() + (ggml_nbytes(t) + GGML_MEM_ALIGN - 1) / GGML_MEM_ALIGN * GGML_MEM_ALIGN);
        std::memset(t->data, 0x11, ggml_nbytes(t));
        ts.push_back(t);
    }
    // Data regions of distinct tensors do not overlap.
    for (size_t i = 0; i < ts.size(); ++i) {
        for (size_t j = i + 1; j < ts.size(); ++j) {
            const char * ai = static_cast<const char *>(ts[i]->data);
            const char * aj = static_cast<const char *>(ts[j]->data);
            const bool disjoint = ai + ggml_nbytes(ts[i]) <= aj || aj + ggml_nbytes(ts[j]) <= ai;
            EXPECT_TRUE(disjoint) << i << " vs " << j;
        }
    }
    EXPECT_EQ(ggml_get_data_f32(ts[0]), static_cast<float *>(ts[0]->data));
}

TEST(ContextMemory, SetNoAllocAffectsLaterTensorsOnly) {
    Ctx ctx = make_ctx(1 << 20, false);
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * a = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 8);
    ASSERT_NE(a, nullptr);
    EXPECT_NE(a->data, nullptr);
    ggml_set_no_alloc(ctx.get(), true);
    EXPECT_TRUE(ggml_get_no_alloc(ctx.get()));
    ggml_tensor * b = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 8);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->data, nullptr);
    EXPECT_NE(a->data, nullptr);
    ggml_set_no_alloc(ctx.get(), false);
    EXPECT_FALSE(ggml_get_no_alloc(ctx.get()));
    ggml_tensor * c = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 8);
    ASSERT_NE(c, nullptr);
    EXPECT_NE(c->data, nullptr);
}

TEST(ContextMemory, DupTensorHasOwnStorage) {
    Ctx ctx = make_ctx(1 << 20, false);
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * a = ggml_new_tensor_3d(ctx.get(), GGML_TYPE_F16, 7, 3, 2);
    ASSERT_NE(a, nullptr);
    ggml_tensor * t = ggml_transpose(ctx.get(), a);
    ASSERT_NE(t, nullptr);
    ggml_tensor * d = ggml_dup_tensor(ctx.get(), t);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->type, GGML_TYPE_F16);
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        EXPECT_EQ(d->ne[i], t->ne[i]) << i;
    EXPECT_TRUE(ggml_is_contiguous(d));
    EXPECT_EQ(d->op, GGML_OP_NONE);
    EXPECT_EQ(d->view_src, nullptr);
    ASSERT_NE(d->data, nullptr);
    EXPECT_NE(d->data, a->data);
}

TEST(ContextMemory, EmptyTensorAllowed) {
    Ctx ctx = make_ctx(1 << 16, false);
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * t = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 0, 5);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(ggml_nelements(t), 0);
    EXPECT_EQ(ggml_nbytes(t), 0u);
    EXPECT_TRUE(ggml_is_empty(t));
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);
}

// ---------------------------------------------------------------------------------------------
// Arena exhaustion and invalid tensor arguments give NULL + error, never a crash.

TEST(ContextExhaustion, DataDoesNotFit) {
    const size_t size = 2 * ggml_tensor_overhead() + 256;
    Ctx ctx = make_ctx(size, false);
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * t = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4096);
    EXPECT_EQ(t, nullptr);
    EXPECT_NE(ggml_get_error(ctx.get()), nullptr);
    EXPECT_FALSE(error_of(ctx.get()).empty());
    EXPECT_LE(ggml_used_mem(ctx.get()), ggml_get_mem_size(ctx.get()));
}

TEST(ContextExhaustion, MetadataDoesNotFit) {
    const size_t size = 5 * ggml_tensor_overhead();
    Ctx ctx = make_ctx(size, true);
    ASSERT_NE(ctx, nullptr);
    int created = 0;
    bool failed = false;
    for (int i = 0; i < 100; ++i) {
        ggml_tensor * t = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
        if (t == nullptr) {
            failed = true;
            break;
        }
        ++created;
    }
    EXPECT_TRUE(failed);
    EXPECT_GE(created, 1);
    EXPECT_LE(created, 5);
    EXPECT_NE(ggml_get_error(ctx.get()), nullptr);
    EXPECT_LE(ggml_used_mem(ctx.get()), ggml_get_mem_size(ctx.get()));
    // The tensors made before the failure are still intact and iterable.
    int seen = 0;
    for (ggml_tensor * t = ggml_get_first_tensor(ctx.get()); t; t = ggml_get_next_tensor(ctx.get(), t)) {
        EXPECT_EQ(t->ne[0], 4);
        ++seen;
    }
    EXPECT_EQ(seen, created);
}

TEST(ContextExhaustion, ConstructorOnFullArena) {
    // Inputs fit, the operator's result does not.
    const size_t size = 2 * ggml_tensor_overhead() + 2 * 1024 * 4 + 4 * GGML_MEM_ALIGN;
    Ctx ctx = make_ctx(size, false);
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * a = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 1024);
    ggml_tensor * b = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 1024);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    ggml_tensor * c = ggml_add(ctx.get(), a, b);
    EXPECT_EQ(c, nullptr);
    EXPECT_NE(ggml_get_error(ctx.get()), nullptr);
}

struct BadTensorCase {
    const char * label;
    ggml_type type;
    int n_dims;
    int64_t ne[4];
};

void PrintTo(const BadTensorCase & c, std::ostream * os) { *os << c.label; }

class ContextBadTensor : public ::testing::TestWithParam<BadTensorCase> {};

TEST_P(ContextBadTensor, ReturnsNullWithError) {
    const BadTensorCase & c = GetParam();
    Ctx ctx = make_ctx(1 << 16, true);
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(ggml_new_tensor(ctx.get(), c.type, c.n_dims, c.ne), nullptr);
    EXPECT_NE(ggml_get_error(ctx.get()), nullptr);
    EXPECT_FALSE(error_of(ctx.get()).empty());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ContextBadTensor,
    ::testing::Values(BadTensorCase{"zero_dims", GGML_TYPE_F32, 0, {4, 1, 1, 1}},
                      BadTensorCase{"five_dims", GGML_TYPE_F32, 5, {4, 1, 1, 1}},
                      BadTensorCase{"negative_ne", GGML_TYPE_F32, 2, {4, -1, 1, 1}},
                      BadTensorCase{"q8_ne0_not_block", GGML_TYPE_Q8_0, 1, {33, 1, 1, 1}},
                      BadTensorCase{"q4_ne0_not_block", GGML_TYPE_Q4_0, 2, {16, 2, 1, 1}},
                      BadTensorCase{"bad_type", GGML_TYPE_COUNT, 1, {4, 1, 1, 1}}),
    [](const ::testing::TestParamInfo<BadTensorCase> & i) { return i.param.label; });

// ---------------------------------------------------------------------------------------------
// Iteration, lookup, max tensor size

TEST(ContextTensors, IterationInCreationOrder) {
    Ctx ctx = make_ctx(1 << 20, false);
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 4, 4);
    ggml_tensor * v = ggml_view_1d(ctx.get(), a, 4, 16);
    ggml_cgraph * g = ggml_new_graph_custom(ctx.get(), 8, false);  // not a tensor: skipped
    ggml_tensor * b = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_I32, 3);
    ggml_tensor * c = ggml_add(ctx.get(), a, a);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(v, nullptr);
    ASSERT_NE(g, nullptr);
    ASSERT_NE(b, nullptr);
    ASSERT_NE(c, nullptr);
    std::vector<ggml_tensor *> seen;
    for (ggml_tensor * t = ggml_get_first_tensor(ctx.get()); t; t = ggml_get_next_tensor(ctx.get(), t)) {
        seen.push_back(t);
        ASSERT_LT(seen.size(), 100u);
    }
    const std::vector<ggml_tensor *> expected = {a, v, b, c};
    EXPECT_EQ(seen, expected);
}

TEST(ContextTensors, GetTensorByName) {
    Ctx ctx = make_ctx(1 << 16, true);
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * a = ggml_set_name(ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4), "weight");
    ggml_tensor * b = ggml_set_name(ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4), "bias");
    ggml_tensor * a2 = ggml_set_name(ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4), "weight");
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    ASSERT_NE(a2, nullptr);
    EXPECT_EQ(ggml_get_tensor(ctx.get(), "weight"), a);  // the first one
    EXPECT_EQ(ggml_get_tensor(ctx.get(), "bias"), b);
    EXPECT_EQ(ggml_get_tensor(ctx.get(), "missing"), nullptr);
    EXPECT_EQ(ggml_get_tensor(ctx.get(), "weigh"), nullptr);
}

TEST(ContextTensors, MaxTensorSize) {
    Ctx ctx = make_ctx(1 << 16, true);
    ASSERT_NE(ctx, nullptr);
    ASSERT_NE(ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 10), nullptr);      // 40
    ggml_tensor * h = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F16, 100);       // 200
    ASSERT_NE(ggml_new_tensor_2d(ctx.get(), GGML_TYPE_Q8_0, 64, 2), nullptr);  // 136
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(ggml_get_max_tensor_size(ctx.get()), 200u);
    ASSERT_NE(ggml_view_1d(ctx.get(), h, 10, 0), nullptr);  // smaller view: no change
    EXPECT_EQ(ggml_get_max_tensor_size(ctx.get()), 200u);
    ASSERT_NE(ggml_new_tensor_3d(ctx.get(), GGML_TYPE_I32, 7, 3, 5), nullptr);  // 420
    EXPECT_EQ(ggml_get_max_tensor_size(ctx.get()), 420u);
}

// ---------------------------------------------------------------------------------------------
// The error mechanism

TEST(ContextErrors, FirstErrorIsKeptUntilCleared) {
    Ctx ctx = make_ctx(1 << 16, true);
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);
    BadAdd bad = make_bad_add(ctx.get());
    ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 4, 3);
    ggml_tensor * b = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 5, 3);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);

    EXPECT_EQ(ggml_add(ctx.get(), bad.a, bad.b), nullptr);
    const std::string first = error_of(ctx.get());
    EXPECT_NE(first.find("ggml_add"), std::string::npos) << first;

    // A second, different failure does not replace the first message.
    EXPECT_EQ(ggml_mul_mat(ctx.get(), a, b), nullptr);
    EXPECT_EQ(error_of(ctx.get()), first);
    EXPECT_EQ(error_of(ctx.get()).find("ggml_mul_mat"), std::string::npos);

    // Successful constructors do not clear or change it either.
    EXPECT_NE(ggml_add(ctx.get(), a, a), nullptr);
    EXPECT_EQ(error_of(ctx.get()), first);

    ggml_clear_error(ctx.get());
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);

    // After the clear, the next failure is reported.
    EXPECT_EQ(ggml_mul_mat(ctx.get(), a, b), nullptr);
    const std::string second = error_of(ctx.get());
    EXPECT_NE(second.find("ggml_mul_mat"), std::string::npos) << second;
}

TEST(ContextErrors, ErrorStringStaysValidUntilClear) {
    Ctx ctx = make_ctx(1 << 16, true);
    ASSERT_NE(ctx, nullptr);
    BadAdd bad = make_bad_add(ctx.get());
    EXPECT_EQ(ggml_add(ctx.get(), bad.a, bad.b), nullptr);
    const char * p = ggml_get_error(ctx.get());
    ASSERT_NE(p, nullptr);
    const std::string copy = p;
    EXPECT_EQ(ggml_sub(ctx.get(), bad.a, bad.b), nullptr);  // another error, not recorded
    EXPECT_EQ(std::string(p), copy);
}

TEST(ContextErrors, NullInputPropagatesWithoutReplacingFirstError) {
    Ctx ctx = make_ctx(1 << 16, true);
    ASSERT_NE(ctx, nullptr);
    BadAdd bad = make_bad_add(ctx.get());
    ggml_tensor * failed = ggml_add(ctx.get(), bad.a, bad.b);
    ASSERT_EQ(failed, nullptr);
    const std::string first = error_of(ctx.get());
    ASSERT_FALSE(first.empty());

    // Chaining on the failed result: every constructor returns NULL, the root cause is kept.
    ggml_tensor * ok = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 7, 3);
    ASSERT_NE(ok, nullptr);
    EXPECT_EQ(ggml_sqr(ctx.get(), failed), nullptr);
    EXPECT_EQ(ggml_mul(ctx.get(), failed, ok), nullptr);
    EXPECT_EQ(ggml_mul(ctx.get(), ok, failed), nullptr);
    EXPECT_EQ(ggml_mul_mat(ctx.get(), ok, failed), nullptr);
    EXPECT_EQ(ggml_scale(ctx.get(), failed, 2.0f), nullptr);
    EXPECT_EQ(ggml_reshape_1d(ctx.get(), failed, 21), nullptr);
    EXPECT_EQ(ggml_view_1d(ctx.get(), failed, 1, 0), nullptr);
    EXPECT_EQ(ggml_cpy(ctx.get(), ok, failed), nullptr);
    EXPECT_EQ(ggml_cont(ctx.get(), failed), nullptr);
    EXPECT_EQ(error_of(ctx.get()), first);
}

TEST(ContextErrors, NullInputWithoutPriorErrorDoesNotCrash) {
    Ctx ctx = make_ctx(1 << 16, true);
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(ggml_relu(ctx.get(), nullptr), nullptr);
    EXPECT_EQ(ggml_add(ctx.get(), nullptr, nullptr), nullptr);
}

namespace {
struct Collected {
    std::vector<std::string> messages;
};
void collect(const char * message, void * user_data) {
    static_cast<Collected *>(user_data)->messages.emplace_back(message ? message : "");
}
}  // namespace

TEST(ContextErrors, CallbackReceivesEveryMessage) {
    Ctx ctx = make_ctx(1 << 16, true);
    ASSERT_NE(ctx, nullptr);
    Collected got;
    ggml_set_error_callback(ctx.get(), collect, &got);
    BadAdd bad = make_bad_add(ctx.get());
    ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 4, 3);
    ggml_tensor * b = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 5, 3);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(got.messages.empty());

    EXPECT_EQ(ggml_add(ctx.get(), bad.a, bad.b), nullptr);
    ASSERT_EQ(got.messages.size(), 1u);
    EXPECT_NE(got.messages[0].find("ggml_add"), std::string::npos) << got.messages[0];
    EXPECT_EQ(got.messages[0], error_of(ctx.get()));

    // A later error also reaches the callback, even though the first one stays recorded.
    EXPECT_EQ(ggml_mul_mat(ctx.get(), a, b), nullptr);
    ASSERT_EQ(got.messages.size(), 2u);
    EXPECT_NE(got.messages[1].find("ggml_mul_mat"), std::string::npos) << got.messages[1];
    EXPECT_NE(error_of(ctx.get()).find("ggml_add"), std::string::npos);

    // Successful constructors do not call it.
    EXPECT_NE(ggml_add(ctx.get(), a, a), nullptr);
    EXPECT_EQ(got.messages.size(), 2u);

    // NULL restores the default: no callback.
    ggml_set_error_callback(ctx.get(), nullptr, nullptr);
    ggml_clear_error(ctx.get());
    EXPECT_EQ(ggml_add(ctx.get(), bad.a, bad.b), nullptr);
    EXPECT_EQ(got.messages.size(), 2u);
    EXPECT_NE(ggml_get_error(ctx.get()), nullptr);
}

TEST(ContextErrors, CallbackSeesArenaExhaustion) {
    Ctx ctx = make_ctx(2 * ggml_tensor_overhead() + 128, false);
    ASSERT_NE(ctx, nullptr);
    Collected got;
    ggml_set_error_callback(ctx.get(), collect, &got);
    EXPECT_EQ(ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 1 << 16), nullptr);
    ASSERT_EQ(got.messages.size(), 1u);
    EXPECT_FALSE(got.messages[0].empty());
}

TEST(ContextErrorsDeathTest, AbortOnErrorAborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            Ctx ctx = make_ctx(1 << 16, true);
            ggml_set_abort_on_error(ctx.get(), true);
            BadAdd bad = make_bad_add(ctx.get());
            ggml_add(ctx.get(), bad.a, bad.b);
        },
        "ggml_add");
}

TEST(ContextErrors, AbortOnErrorCanBeSwitchedOff) {
    Ctx ctx = make_ctx(1 << 16, true);
    ASSERT_NE(ctx, nullptr);
    ggml_set_abort_on_error(ctx.get(), true);
    ggml_set_abort_on_error(ctx.get(), false);
    BadAdd bad = make_bad_add(ctx.get());
    EXPECT_EQ(ggml_add(ctx.get(), bad.a, bad.b), nullptr);
    EXPECT_NE(ggml_get_error(ctx.get()), nullptr);
}
