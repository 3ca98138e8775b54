// ggx-ops cases: one graph per case, built from fresh leaf inputs in a no-alloc context, plus the
// registry the case tables (tests/ops/<family>_cases.cpp, tests/ops/extensions/<pack>_cases.cpp) fill.
#pragma once

#include <ggml.h>

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <vector>

namespace ggx::ops {

using Shape = std::array<int64_t, 4>;

// How the values of a leaf input are drawn (per row of ne0 elements, in logical order).
struct Gen {
    enum class Kind {
        Uniform,   // uniform in [lo, hi)
        Integer,   // integers uniform in [lo, hi)
        Distinct,  // any hi consecutive elements of a row are distinct integers of [0, hi)
        Mask,      // 0 or -inf (about a third), never -inf at one position per row; else in [lo, 0]
        Special,   // uniform in [lo, hi) with about one in six replaced by +-inf, NaN, +-0, 1e6, 1e-40
    };
    Kind kind = Kind::Uniform;
    double lo = -1.0, hi = 1.0;

    static Gen uniform(double lo, double hi) { return {Kind::Uniform, lo, hi}; }
    static Gen integer(double lo, double hi) { return {Kind::Integer, lo, hi}; }
    static Gen distinct(int64_t n) { return {Kind::Distinct, 0.0, static_cast<double>(n)}; }
    static Gen mask() { return {Kind::Mask, -2.0, 0.0}; }
    static Gen special(double lo = -2.0, double hi = 2.0) { return {Kind::Special, lo, hi}; }
};

// How an input of a given logical shape is laid out in memory.
enum class Layout {
    Contiguous,  // a dense leaf
    Transposed,  // a view swapping dims 0 and 1 of a dense leaf
    Permuted,    // a ggml_permute view of a dense leaf with all four dims moved
    Strided,     // a view of a larger leaf: an element/block offset, gaps between rows and planes
};
const char * layout_name(Layout layout);
// The layouts an input of type may take (quantized rows must stay dense: Contiguous and Strided).
std::vector<Layout> layouts_for(ggml_type type);

// What a case's builder receives: the context and the input factory that records generators.
class Graph {
public:
    explicit Graph(ggml_context * ctx) : ctx_(ctx) {}
    ggml_context * ctx() const { return ctx_; }
    // A leaf input of logical shape ne laid out as layout; returns the tensor to use (the leaf or
    // a view of it). NULL when a constructor fails (the context holds the error).
    ggml_tensor * input(ggml_type type, Shape ne, Layout layout = Layout::Contiguous, Gen gen = {});
    // The generator recorded for a leaf (Gen{} when the builder made the leaf itself).
    Gen gen_of(const ggml_tensor * leaf) const;

private:
    ggml_context * ctx_;
    std::unordered_map<const ggml_tensor *, Gen> gens_;
};

// Builds the case's graph and returns its final node (NULL when a constructor failed).
using Builder = std::function<ggml_tensor *(Graph &)>;

struct Case {
    std::string name;           // unique; starts with the op (or UNARY/GLU sub-op, extension op) name
    ggml_op op = GGML_OP_NONE;  // the op under test (coverage, --op)
    std::string sub;            // UNARY / GLU sub-op name ("SILU"), empty otherwise (also matches --op)
    Builder build;
    bool perf = false;   // a large-shape case for `ggx-ops perf`
    double flops = 0.0;  // perf: floating-point operations per run (0: a memory-bound op)
    std::string ext_op;  // the registered extension operator under test ("sd.rope_apply.v1"), or empty
    // Run through a scheduler over the device (and the CPU), where fusion rules can fire (direct
    // ggml_backend_graph_compute never fuses); --op FUSION selects these cases.
    bool sched = false;
};

class CaseList {
public:
    // A check case named "<OP> <detail>".
    void add(ggml_op op, const std::string & detail, Builder build);
    // A check case of a UNARY or GLU sub-op, named "<SUB> <detail>".
    void add_sub(ggml_op op, const std::string & sub, const std::string & detail, Builder build);
    // A check case of a registered extension operator, named "<ext_op> <detail>".
    void add_ext(const std::string & ext_op, const std::string & detail, Builder build);
    // A check case run through a scheduler so that fusion rules can fire, named "fusion <detail>";
    // op is its last node's op.
    void add_fusion(ggml_op op, const std::string & detail, Builder build);
    // A perf case; flops 0 means the op is judged by its memory traffic alone.
    void add_perf(ggml_op op, const std::string & detail, double flops, Builder build);
    // A perf case of a registered extension operator, named "<ext_op> <detail>".
    void add_perf_ext(const std::string & ext_op, const std::string & detail, double flops, Builder build);
    const std::vector<Case> & cases() const { return cases_; }

private:
    std::vector<Case> cases_;
};

// Formatting helpers for case names.
std::string format(const char * fmt, ...) __attribute__((format(printf, 1, 2)));
std::string str(const Shape & ne);
std::string str(ggml_type type);
std::string str(double value);

inline constexpr ggml_type kFloatTypes[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16};
inline constexpr ggml_type kQuantTypes[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0};
inline constexpr ggml_type kWeightTypes[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0,
                                             GGML_TYPE_Q4_0};
// The block formats ggx converts beyond kQuantTypes, found at run time (so the list grows with the
// format table): each gets a smaller set of cases than Q8_0 and Q4_0 in every op that takes quantized
// tensors, with rows of kFormatRow elements (a multiple of every block size).
const std::vector<ggml_type> & more_block_types();
inline constexpr int64_t kFormatRow = 256;
inline constexpr Layout kAllLayouts[] = {Layout::Contiguous, Layout::Transposed, Layout::Permuted,
                                         Layout::Strided};

// The per-family tables, each in tests/ops/<family>_cases.cpp.
void add_copy_cases(CaseList & list);         // CPY, DUP, CONT, VIEW, RESHAPE, PERMUTE, TRANSPOSE
void add_elementwise_cases(CaseList & list);  // ADD..DIV, ADD1/_ID, ACC, SET, maps, UNARY, GLU, OPT_STEP
void add_reduce_cases(CaseList & list);       // SUM.., ARGMAX, CUMSUM, COUNT_EQUAL, ARGSORT, TOP_K, CE
// REPEAT(_BACK), CONCAT, PAD(_REFLECT_1D), ROLL, UPSCALE, ARANGE, TIMESTEP_EMBEDDING, WIN_(UN)PART,
// GET/ADD_REL_POS, TRI, DIAG, SOLVE_TRI:
void add_shape_cases(CaseList & list);
void add_norm_cases(CaseList & list);       // NORM, RMS_NORM, GROUP_NORM, L2_NORM, RMS_NORM_BACK
void add_matmul_cases(CaseList & list);     // MUL_MAT, MUL_MAT_ID, OUT_PROD
void add_softmax_cases(CaseList & list);    // SOFT_MAX, SOFT_MAX_BACK, DIAG_MASK_INF/ZERO
void add_rope_cases(CaseList & list);       // ROPE, ROPE_BACK
void add_attention_cases(CaseList & list);  // FLASH_ATTN_EXT
void add_recurrent_cases(CaseList & list);  // SSM_CONV, SSM_SCAN, WKV6/7, GLA, GATED_DELTA_NET
void add_indexing_cases(CaseList & list);   // GET_ROWS, GET_ROWS_BACK, SET_ROWS
void add_conv_cases(CaseList & list);       // IM2COL(_3D, _BACK), CONV_*, COL2IM_1D, POOL_*
void add_custom_cases(CaseList & list);     // CUSTOM, MAP_CUSTOM1..3 (CPU callbacks)
// The sd extension pack (tests/ops/extensions/sd_cases.cpp): every sd.* operator and, through a
// scheduler, graphs that trigger each of the pack's fusion rules.
void add_sd_cases(CaseList & list);

// Every case of every family, in family order.
std::vector<Case> all_cases();

}  // namespace ggx::ops
