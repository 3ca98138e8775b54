// Helpers shared by the test suites: seeded random numbers, owners of contexts, backends, buffers,
// allocators and schedulers, and the shared CPU backend.
#pragma once

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace ggx::test {

using Shape = std::array<int64_t, 4>;

// Uniform random numbers from a fixed seed, which trace() names for failure messages.
struct Rng {
    explicit Rng(uint32_t s) : seed(s), gen(s) {}
    double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(gen); }
    std::string trace() const { return "seed " + std::to_string(seed); }

    uint32_t seed;
    std::mt19937 gen;
};

using Build = std::function<ggml_tensor *(ggml_context *, Rng &)>;

struct BackendDeleter {
    void operator()(ggml_backend_t backend) const { ggml_backend_free(backend); }
};
struct ContextDeleter {
    void operator()(ggml_context * ctx) const { ggml_free(ctx); }
};
struct BufferDeleter {
    void operator()(ggml_backend_buffer_t buffer) const { ggml_backend_buffer_free(buffer); }
};
struct GallocrDeleter {
    void operator()(ggml_gallocr_t galloc) const { ggml_gallocr_free(galloc); }
};
struct SchedDeleter {
    void operator()(ggml_backend_sched_t sched) const { ggml_backend_sched_free(sched); }
};
using Backend = std::unique_ptr<ggml_backend, BackendDeleter>;
using Context = std::unique_ptr<ggml_context, ContextDeleter>;
using Buffer = std::unique_ptr<ggml_backend_buffer, BufferDeleter>;
using Gallocr = std::unique_ptr<ggml_gallocr, GallocrDeleter>;
using Sched = std::unique_ptr<ggml_backend_sched, SchedDeleter>;

// Switches the process's error mode for one scope (the suites run in GGML_EXT_ERROR_RETURN, set by
// support/gtest_main.cpp); tests of the default mode take GGML_EXT_ERROR_ABORT.
class ScopedErrorMode {
public:
    explicit ScopedErrorMode(ggml_ext_error_mode mode) : previous_(ggml_ext_get_error_mode()) {
        ggml_ext_set_error_mode(mode);
    }
    ~ScopedErrorMode() { ggml_ext_set_error_mode(previous_); }
    ScopedErrorMode(const ScopedErrorMode &) = delete;
    ScopedErrorMode & operator=(const ScopedErrorMode &) = delete;

private:
    ggml_ext_error_mode previous_;
};

// One CPU backend for the whole test program.
inline ggml_backend_t cpu_backend() {
    static const Backend cpu(ggml_backend_cpu_init());
    return cpu.get();
}

// The values of an allocated F32 tensor, read through the backend API.
inline std::vector<float> read_f32(const ggml_tensor * t) {
    std::vector<float> v(static_cast<size_t>(ggml_nelements(t)));
    EXPECT_EQ(ggml_ext_backend_tensor_get(t, v.data(), 0, ggml_nbytes(t)), GGML_STATUS_SUCCESS);
    return v;
}

// Sets all values of an allocated F32 tensor through the backend API.
inline void write_f32(ggml_tensor * t, const std::vector<float> & v) {
    ASSERT_EQ(v.size(), static_cast<size_t>(ggml_nelements(t)));
    ASSERT_EQ(ggml_ext_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t)), GGML_STATUS_SUCCESS);
}

// start, start + step, start + 2 step, ... (n values).
inline std::vector<float> ramp(int64_t n, float start, float step) {
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = start + step * static_cast<float>(i);
    return v;
}

// n values drawn uniformly from [lo, hi).
template <typename Rng>
std::vector<float> random_floats(Rng & rng, int64_t n, float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (float & f : v)
        f = u(rng);
    return v;
}

// Whether text contains part (error and explain messages).
inline bool contains(const std::string & text, const std::string & part) {
    return text.find(part) != std::string::npos;
}

// The names of graph's nodes in order (to observe a reordering).
inline std::vector<std::string> node_names(const ggml_cgraph * graph) {
    std::vector<std::string> names;
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i)
        names.emplace_back(ggml_graph_node(graph, i)->name);
    return names;
}

// The runtime's legality check (ggml_ext_fusion_is_legal) of fusing graph's nodes from the earliest to
// the latest of nodes: "" when legal, else its reason (the rule that failed and the node involved).
// Beside the plan query for a rule that did not fire: whether the runtime's check refused the range,
// or the rule did not match it.
inline std::string fusion_rejection(const ggml_cgraph * graph,
                                    const std::vector<const ggml_tensor *> & nodes) {
    int first = ggml_graph_n_nodes(graph), last = -1;
    for (const ggml_tensor * t : nodes) {
        int i = 0;
        while (i < ggml_graph_n_nodes(graph) && ggml_graph_node(graph, i) != t)
            ++i;
        if (i == ggml_graph_n_nodes(graph)) return std::string("node '") + t->name + "' is not in the graph";
        first = std::min(first, i);
        last = std::max(last, i);
    }
    if (ggml_ext_fusion_is_legal(graph, first, last - first + 1)) return "";
    return ggml_backend_get_last_error();
}

inline constexpr ggml_type kFloatTypes[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16};

// Every UNARY and GLU sub-op (the CPU and Vulkan compute them all), starting with the ones every
// device computed first, in the order their enums had before they took ggml's values: random tests
// pick from these by index, so a seed keeps picking the same ops among them.
inline constexpr ggml_unary_op kUnaryOps[] = {
    GGML_UNARY_OP_RELU,        GGML_UNARY_OP_SILU,  GGML_UNARY_OP_GELU,  GGML_UNARY_OP_GELU_QUICK,
    GGML_UNARY_OP_SIGMOID,     GGML_UNARY_OP_TANH,  GGML_UNARY_OP_ABS,   GGML_UNARY_OP_SGN,
    GGML_UNARY_OP_NEG,         GGML_UNARY_OP_STEP,  GGML_UNARY_OP_ELU,   GGML_UNARY_OP_HARDSWISH,
    GGML_UNARY_OP_HARDSIGMOID, GGML_UNARY_OP_EXP,   GGML_UNARY_OP_EXPM1, GGML_UNARY_OP_SOFTPLUS,
    GGML_UNARY_OP_GELU_ERF,    GGML_UNARY_OP_XIELU, GGML_UNARY_OP_FLOOR, GGML_UNARY_OP_CEIL,
    GGML_UNARY_OP_ROUND,       GGML_UNARY_OP_TRUNC};
inline constexpr ggml_glu_op kGluOps[] = {GGML_GLU_OP_SWIGLU,    GGML_GLU_OP_GEGLU,
                                          GGML_GLU_OP_REGLU,     GGML_GLU_OP_SWIGLU_OAI,
                                          GGML_GLU_OP_GEGLU_ERF, GGML_GLU_OP_GEGLU_QUICK};
static_assert(std::size(kUnaryOps) == GGML_UNARY_OP_COUNT && std::size(kGluOps) == GGML_GLU_OP_COUNT);

}  // namespace ggx::test
