// Property test of extension fusion (spec "Fusion", ../shared/spec/ggml-extensions.md): thousands of
// seeded random graphs run through a scheduler whose virtual devices carry four toy fusion rules,
//   chain      2..4 consecutive pointwise (ADD/SUB/MUL/SCALE/SQR) or layout nodes, ending anywhere;
//   norm_mul   RMS_NORM, then a MUL of it by a weight;
//   cpy        1..3 pointwise/layout nodes, then a terminal CPY into a pre-existing "cache" tensor
//              (F32 -> F16 or F32 -> F32, the whole cache or a strided view of it);
//   writeback  1..3 pointwise/layout nodes, then a pointwise node written in place (e.g. MUL, then
//              SCALE_INPLACE of it),
// whose match callbacks are naive on purpose: they propose ranges by op pattern, dtype and layout
// only, never looking at consumers, flags or where views point, so that the runtime's central
// legality check is what turns the illegal proposals down. Every rule executes through one scalar
// interpreter that replays the range node by node in the native kernels' float operation order
// (ADD/SUB/MUL one rounding each, SCALE as fma(x, s, b), SQR as x * x, F16 by ggml_fp32_to_fp16):
// chain, cpy and writeback results are compared bit for bit (NaN equal to NaN); RMS_NORM is
// computed in double like the native kernel but not bit-identically, so a graph in which norm_mul
// ran is compared with a normalised mean squared error bound (kNormNmse) and NaN/Inf agreeing.
//
// The random graphs have several consumers of intermediates, OUTPUT flags on random nodes,
// reshapes, transposes and views of intermediates, explicit in-place ops (on intermediates and on
// inputs), pre-allocated weights and caches, and random placement between a virtual device and the
// CPU (four virtual devices natively supporting different op subsets). For every graph:
//  (a) it is computed with fusion (scheduler, one pipeline copy, no eval callback) and without (the
//      same graph, built again from the same seed, through a scheduler with an eval callback that
//      observes nothing, which the spec says retains individual operations), and every
//      OUTPUT-flagged tensor and every cache must agree;
//  (b) every range a rule executed is re-checked by an independent verifier of the spec's rules,
//      over the caller's graph: intermediates have no consumer outside the range and no OUTPUT flag
//      (except the writeback owner), an intermediate view or in-place node's storage belongs to an
//      earlier node of the range, and the final node owns its storage, is a terminal CPY, or writes
//      back over exactly an earlier owning node of the range (whose other consumers are inside);
//  (c) proposals are counted as accepted (executed) or rejected, and the totals must show both.
//      Proposals the verifier finds legal that the runtime still refused inside one split (a
//      conservative runtime) are counted and printed, not failed.
//
// GGX_FUSION_GRAPHS (default 10000) sets the number of graphs, GGX_FUSION_SEED (default 1) the seed
// of the first (graph k uses seed + k). A failure names the seed; GGX_FUSION_SEED=<seed>
// GGX_FUSION_GRAPHS=1 replays it, GGX_FUSION_DUMP=1 prints the graph.
#include <ggml-ext-params.h>
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml-graph.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "support/test_util.h"

namespace {

using ggx::test::Backend;
using ggx::test::Buffer;
using ggx::test::Context;
using ggx::test::Rng;
using ggx::test::Sched;

constexpr double kNormNmse = 1e-8;  // graphs where norm_mul ran: error bound of every compared tensor

long env_or(const char * name, long fallback) {
    const char * value = std::getenv(name);
    return value && *value ? std::strtol(value, nullptr, 10) : fallback;
}

const ggml_tensor * root_of(const ggml_tensor * t) {
    while (t->view_src)
        t = t->view_src;
    return t;
}

bool is_pointwise(ggml_op op) {
    return op == GGML_OP_ADD || op == GGML_OP_SUB || op == GGML_OP_MUL || op == GGML_OP_SCALE ||
           op == GGML_OP_SQR;
}
bool is_layout(ggml_op op) {
    return op == GGML_OP_RESHAPE || op == GGML_OP_VIEW || op == GGML_OP_PERMUTE || op == GGML_OP_TRANSPOSE;
}
// F32 node with F32 sources (what the interpreter reads and writes).
bool all_f32(const ggml_tensor * t) {
    if (t->type != GGML_TYPE_F32) return false;
    for (const ggml_tensor * src : t->src)
        if (src && src->type != GGML_TYPE_F32) return false;
    return true;
}

// ---- what the rules saw and did ------------------------------------------------------------------

enum RuleId { kChain, kNormMul, kCpy, kWriteback, kRuleCount };
constexpr const char * kRuleNames[kRuleCount] = {"chain", "norm_mul", "cpy", "writeback"};

struct Range {
    int rule;
    std::vector<const ggml_tensor *> nodes;
    bool operator<(const Range & o) const { return std::tie(rule, nodes) < std::tie(o.rule, o.nodes); }
    bool operator==(const Range & o) const { return rule == o.rule && nodes == o.nodes; }
};

struct Recorder {
    std::vector<Range> proposals, executed;
    int max_chain = 4;  // the chain rule's longest range, drawn per graph
    std::string error;  // an execute that could not run
};
Recorder g_rec;  // the test runs on one thread; the rules record here

struct RuleInfo {
    RuleId id;
};
RuleInfo g_rule_info[kRuleCount] = {{kChain}, {kNormMul}, {kCpy}, {kWriteback}};

int record(RuleId rule, const ggml_cgraph * graph, int first, int n) {
    if (n < 2) return 0;
    Range r{rule, {}};
    for (int k = 0; k < n; ++k)
        r.nodes.push_back(ggml_graph_node(graph, first + k));
    g_rec.proposals.push_back(std::move(r));
    return n;
}

// A node the chain-like rules take: pointwise or layout, all F32.
bool chain_node(const ggml_tensor * t) { return (is_pointwise(t->op) || is_layout(t->op)) && all_f32(t); }

int match_chain(ggml_backend_dev_t, const ggml_cgraph * graph, int first, void *) {
    int n = 0;
    while (n < g_rec.max_chain && first + n < ggml_graph_n_nodes(graph) &&
           chain_node(ggml_graph_node(graph, first + n)))
        ++n;
    return record(kChain, graph, first, n);
}

int match_norm_mul(ggml_backend_dev_t, const ggml_cgraph * graph, int first, void *) {
    if (first + 1 >= ggml_graph_n_nodes(graph)) return 0;
    const ggml_tensor * norm = ggml_graph_node(graph, first);
    const ggml_tensor * mul = ggml_graph_node(graph, first + 1);
    const bool pattern = norm->op == GGML_OP_RMS_NORM && all_f32(norm) && mul->op == GGML_OP_MUL &&
                         all_f32(mul) && mul->src[0] == norm;
    return pattern ? record(kNormMul, graph, first, 2) : 0;
}

int match_cpy(ggml_backend_dev_t, const ggml_cgraph * graph, int first, void *) {
    const int n_nodes = ggml_graph_n_nodes(graph);
    for (int k = 1; k <= 3 && first + k < n_nodes; ++k) {
        if (!chain_node(ggml_graph_node(graph, first + k - 1))) return 0;
        const ggml_tensor * cpy = ggml_graph_node(graph, first + k);
        if (cpy->op == GGML_OP_CPY && cpy->src[0]->type == GGML_TYPE_F32 &&
            (cpy->type == GGML_TYPE_F32 || cpy->type == GGML_TYPE_F16))
            return record(kCpy, graph, first, k + 1);
    }
    return 0;
}

int match_writeback(ggml_backend_dev_t, const ggml_cgraph * graph, int first, void *) {
    const int n_nodes = ggml_graph_n_nodes(graph);
    for (int k = 1; k <= 3 && first + k < n_nodes; ++k) {
        if (!chain_node(ggml_graph_node(graph, first + k - 1))) return 0;
        const ggml_tensor * last = ggml_graph_node(graph, first + k);
        if (is_pointwise(last->op) && all_f32(last) && last->view_src)
            return record(kWriteback, graph, first, k + 1);
    }
    return 0;
}

// ---- the interpreter every rule executes with ------------------------------------------------------

using Coord = std::array<int64_t, 4>;

template <class F>
void for_each_coord(const int64_t * ne, F && f) {
    Coord c{};
    int64_t flat = 0;
    for (c[3] = 0; c[3] < ne[3]; ++c[3])
        for (c[2] = 0; c[2] < ne[2]; ++c[2])
            for (c[1] = 0; c[1] < ne[1]; ++c[1])
                for (c[0] = 0; c[0] < ne[0]; ++c[0])
                    f(c, flat++);
}

Coord unflatten(int64_t flat, const int64_t * ne) {
    Coord c{};
    for (int d = 0; d < 4; ++d) {
        c[d] = flat % ne[d];
        flat /= ne[d];
    }
    return c;
}

int64_t byte_offset(const ggml_tensor * t, const Coord & c) {
    return c[0] * static_cast<int64_t>(t->nb[0]) + c[1] * static_cast<int64_t>(t->nb[1]) +
           c[2] * static_cast<int64_t>(t->nb[2]) + c[3] * static_cast<int64_t>(t->nb[3]);
}

// Byte offset of t's first element in its storage owner's storage (eliminated intermediates of a
// fused range may have no storage, so data pointers cannot tell).
int64_t offset_in_root(const ggml_tensor * t) {
    int64_t offs = 0;
    for (; t->view_src; t = t->view_src)
        offs += static_cast<int64_t>(t->view_offs);
    return offs;
}

// Replays nodes[0, n) in order: the storage of the range's owning nodes lives in host arrays (their
// computation is removed, so their device storage is never written), every external tensor is read
// where it is, and only the final node is written to memory, after everything was read (so any
// overlap of the output with an input, allocator reuse included, is harmless). out_scratch holds
// the final node's values (the workspace for the chain rule).
bool interpret(ggml_tensor * const * nodes, int n, float * out_scratch) {
    std::unordered_map<const ggml_tensor *, std::vector<float>> storage;  // owning nodes of the range
    const auto owned = [&](const ggml_tensor * t) -> std::vector<float> * {
        const auto it = storage.find(root_of(t));
        return it == storage.end() ? nullptr : &it->second;
    };
    const auto read = [&](const ggml_tensor * t, const Coord & c) -> float {
        const int64_t offs = byte_offset(t, c);
        if (std::vector<float> * s = owned(t)) {
            const int64_t base = offset_in_root(t);
            return (*s)[static_cast<size_t>((base + offs) / static_cast<int64_t>(sizeof(float)))];
        }
        float v;
        std::memcpy(&v, static_cast<const char *>(t->data) + offs, sizeof v);
        return v;
    };
    for (int k = 0; k < n; ++k) {
        const ggml_tensor * node = nodes[k];
        const ggml_tensor *a = node->src[0], *b = node->src[1];
        const int64_t count = ggml_nelements(node);
        std::vector<float> local;
        float * vals = out_scratch;
        if (k + 1 < n) {
            local.resize(static_cast<size_t>(count));
            vals = local.data();
        }
        switch (node->op) {
            case GGML_OP_ADD:
            case GGML_OP_SUB:
            case GGML_OP_MUL:
                for_each_coord(node->ne, [&](const Coord & c, int64_t i) {
                    const Coord cb{c[0] % b->ne[0], c[1] % b->ne[1], c[2] % b->ne[2], c[3] % b->ne[3]};
                    const float x = read(a, c), y = read(b, cb);
                    vals[i] = node->op == GGML_OP_ADD ? x + y : node->op == GGML_OP_SUB ? x - y : x * y;
                });
                break;
            case GGML_OP_SCALE: {
                ggml_ext_scale_params p{};
                ggml_ext_get_op_params(node, GGML_OP_SCALE, &p, sizeof p);
                const float s = p.scale, bias = p.bias;
                for_each_coord(node->ne,
                               [&](const Coord & c, int64_t i) { vals[i] = std::fma(read(a, c), s, bias); });
                break;
            }
            case GGML_OP_SQR:
                for_each_coord(node->ne, [&](const Coord & c, int64_t i) {
                    const float x = read(a, c);
                    vals[i] = x * x;
                });
                break;
            case GGML_OP_RMS_NORM: {
                ggml_ext_norm_params p{};
                ggml_ext_get_op_params(node, GGML_OP_RMS_NORM, &p, sizeof p);
                const float eps = p.eps;
                const int64_t ne0 = node->ne[0];
                for (int64_t r = 0; r < count / std::max<int64_t>(ne0, 1); ++r) {
                    Coord c = unflatten(r * ne0, node->ne);
                    double sum = 0.0;
                    for (c[0] = 0; c[0] < ne0; ++c[0])
                        sum += static_cast<double>(read(a, c)) * read(a, c);
                    const double scale = 1.0 / std::sqrt(sum / static_cast<double>(ne0) + eps);
                    for (c[0] = 0; c[0] < ne0; ++c[0])
                        vals[r * ne0 + c[0]] = static_cast<float>(read(a, c) * scale);
                }
                break;
            }
            case GGML_OP_CPY:  // elements in logical order, whatever the shapes
                for_each_coord(node->ne,
                               [&](const Coord & c, int64_t i) { vals[i] = read(a, unflatten(i, a->ne)); });
                break;
            default:
                if (!is_layout(node->op)) {
                    g_rec.error = std::string("the interpreter cannot run ") + ggml_op_desc(node);
                    return false;
                }
                for_each_coord(node->ne, [&](const Coord & c, int64_t i) { vals[i] = read(node, c); });
                break;
        }
        if (k + 1 == n) break;
        if (is_layout(node->op)) continue;  // computes nothing: read through its storage
        if (!node->view_src) {
            storage[node] = std::move(local);               // an op's own output is contiguous F32
        } else if (std::vector<float> * s = owned(node)) {  // in place over an earlier node of the range
            const int64_t base = offset_in_root(node);
            for_each_coord(node->ne, [&](const Coord & c, int64_t i) {
                (*s)[static_cast<size_t>((base + byte_offset(node, c)) /
                                         static_cast<int64_t>(sizeof(float)))] = vals[i];
            });
        }
        // An in-place intermediate over external storage (illegal): its write is dropped; the
        // verifier reports the range.
    }
    ggml_tensor * out = nodes[n - 1];
    for_each_coord(out->ne, [&](const Coord & c, int64_t i) {
        char * p = static_cast<char *>(out->data) + byte_offset(out, c);
        if (out->type == GGML_TYPE_F16) {
            const ggml_fp16_t h = ggml_fp32_to_fp16(out_scratch[i]);
            std::memcpy(p, &h, sizeof h);
        } else {
            std::memcpy(p, &out_scratch[i], sizeof(float));
        }
    });
    return true;
}

ggml_status execute_any(const ggml_ext_fusion_execute_params * params) {
    const RuleId rule = static_cast<const RuleInfo *>(params->user_data)->id;
    Range r{rule, {}};
    for (int k = 0; k < params->n_nodes; ++k)
        r.nodes.push_back(params->nodes[k]);
    g_rec.executed.push_back(std::move(r));
    if (env_or("GGX_FUSION_TRACE", 0)) {
        for (int k = 0; k < params->n_nodes; ++k) {
            const ggml_tensor * t = params->nodes[k];
            std::printf("exec %s data=%p:", t->name, t->data);
            for (const ggml_tensor * src : t->src) {
                if (!src) continue;
                std::printf(" %s(%p nb=%zu,%zu)=", src->name, src->data, src->nb[0], src->nb[1]);
                if (src->type == GGML_TYPE_F32 && src->data)
                    for (int i = 0; i < std::min<int64_t>(4, ggml_nelements(src)); ++i)
                        std::printf("%g,", static_cast<const float *>(src->data)[i]);
            }
            std::printf("\n");
        }
    }
    const size_t needed =
        sizeof(float) * static_cast<size_t>(ggml_nelements(params->nodes[params->n_nodes - 1]));
    std::vector<float> scratch;
    float * out = nullptr;
    if (rule == kChain) {  // the chain rule asked for its scratch as workspace
        if (params->workspace_size < needed || !params->workspace_data) {
            ggml_ext_set_error("workspace smaller than prepare asked for");
            return GGML_STATUS_FAILED;
        }
        out = static_cast<float *>(params->workspace_data);
    } else {
        scratch.resize(needed / sizeof(float) + 1);
        out = scratch.data();
    }
    if (!interpret(params->nodes, params->n_nodes, out)) {
        ggml_ext_set_error(g_rec.error.c_str());
        return GGML_STATUS_FAILED;
    }
    return GGML_STATUS_SUCCESS;
}

ggml_status prepare_chain(const ggml_ext_fusion_prepare_params * params, void ** state,
                          size_t * workspace_bytes) {
    *state = nullptr;
    *workspace_bytes =
        sizeof(float) * static_cast<size_t>(ggml_nelements(params->nodes[params->n_nodes - 1]));
    return GGML_STATUS_SUCCESS;
}

// ---- the independent verifier of the spec's legality rules ----------------------------------------

// Why fusing `range` (into its last node) is illegal in the caller's graph, or "" when legal.
std::string illegal_because(const ggml_cgraph * graph, const std::vector<const ggml_tensor *> & range) {
    const int n_nodes = ggml_graph_n_nodes(graph);
    int at = -1;
    for (int i = 0; i < n_nodes && at < 0; ++i)
        if (ggml_graph_node(graph, i) == range[0]) at = i;
    if (at < 0 || at + static_cast<int>(range.size()) > n_nodes) return "not a range of the caller's graph";
    for (size_t k = 0; k < range.size(); ++k)
        if (ggml_graph_node(graph, at + static_cast<int>(k)) != range[k])
            return "not consecutive in the caller's graph";
    const auto index_in_range = [&](const ggml_tensor * t) {
        const auto it = std::find(range.begin(), range.end(), t);
        return it == range.end() ? -1 : static_cast<int>(it - range.begin());
    };
    const size_t last = range.size() - 1;
    const ggml_tensor * out = range[last];
    const ggml_tensor * owner = nullptr;  // the writeback owner
    if (out->view_src && out->op != GGML_OP_CPY) {
        const ggml_tensor * o = out->view_src;
        const int i = index_in_range(o);
        if (i < 0 || o->view_src)
            return "the final node writes into storage not owned by an earlier node of the range";
        const bool exact = out->type == o->type && out->view_offs == 0 &&
                           std::equal(out->ne, out->ne + 4, o->ne) && std::equal(out->nb, out->nb + 4, o->nb);
        if (!exact) return "the writeback does not cover its owner exactly";
        owner = o;
    }
    for (size_t k = 0; k < last; ++k) {
        const ggml_tensor * t = range[k];
        if (!(t->flags & GGML_TENSOR_FLAG_COMPUTE)) return "an intermediate is not computed";
        for (int i = 0; i < n_nodes; ++i) {
            // A consumer names t as a source. (A view of the final node has the writeback owner
            // as its view_src, but it reads the final result, not the owner's eliminated value.)
            const ggml_tensor * user = ggml_graph_node(graph, i);
            bool reads = false;
            for (const ggml_tensor * src : user->src)
                reads = reads || src == t;
            if (reads && index_in_range(user) < 0)
                return std::string("intermediate '") + t->name + "' is read by '" + user->name +
                       "' outside the range";
        }
        if ((t->flags & GGML_TENSOR_FLAG_OUTPUT) && t != owner)
            return std::string("intermediate '") + t->name + "' is an output";
        if (t->view_src) {
            const int i = index_in_range(root_of(t));
            if (i < 0 || i >= static_cast<int>(k))
                return std::string("intermediate '") + t->name + "' aliases storage outside the range";
        }
    }
    return "";
}

// ---- virtual devices with the rules ---------------------------------------------------------------

struct Device {
    ggml_backend_dev_t dev = nullptr;
    Backend backend;
    bool has_cpy = false;
};

constexpr int kDevices = 4;

std::vector<Device> & devices() {
    static std::vector<Device> list = [] {
        const std::vector<std::vector<ggml_op>> subsets = {
            {GGML_OP_ADD, GGML_OP_SUB, GGML_OP_MUL, GGML_OP_SCALE, GGML_OP_SQR, GGML_OP_RMS_NORM,
             GGML_OP_CPY},
            {GGML_OP_ADD, GGML_OP_MUL, GGML_OP_SCALE, GGML_OP_RMS_NORM, GGML_OP_CPY},
            {GGML_OP_MUL, GGML_OP_SUB, GGML_OP_SQR, GGML_OP_RMS_NORM},
            {GGML_OP_ADD, GGML_OP_SUB, GGML_OP_SCALE, GGML_OP_SQR, GGML_OP_CPY},
        };
        std::vector<Device> out(kDevices);
        for (int d = 0; d < kDevices; ++d) {
            const std::string name = "fusion_prop_dev_" + std::to_string(d);
            out[d].dev = ggml_backend_cpu_add_virtual_device(name.c_str(), subsets[d].data(),
                                                             static_cast<int>(subsets[d].size()));
            out[d].has_cpy = std::find(subsets[d].begin(), subsets[d].end(), GGML_OP_CPY) != subsets[d].end();
            if (!out[d].dev) continue;
            out[d].backend.reset(ggml_backend_dev_init(out[d].dev, nullptr));
            ggml_backend_cpu_set_n_threads(out[d].backend.get(), 1);
            using Match = int (*)(ggml_backend_dev_t, const ggml_cgraph *, int, void *);
            const Match matches[kRuleCount] = {match_chain, match_norm_mul, match_cpy, match_writeback};
            const int priorities[kRuleCount] = {0, 1, 3, 2};
            for (int r = 0; r < kRuleCount; ++r) {
                ggml_ext_fusion_desc desc{};
                desc.struct_size = sizeof desc;
                desc.version = GGML_EXT_FUSION_DESC_VERSION;
                desc.name = kRuleNames[r];
                desc.priority = priorities[r];
                desc.match = matches[r];
                desc.prepare = r == kChain ? prepare_chain : nullptr;
                desc.execute = execute_any;
                desc.user_data = &g_rule_info[r];
                EXPECT_TRUE(ggml_ext_register_fusion(out[d].dev, &desc)) << ggml_backend_get_last_error();
            }
        }
        return out;
    }();
    return list;
}

ggml_backend_t cpu_backend_1t() {
    static const Backend cpu = [] {
        Backend b(ggml_backend_cpu_init());
        ggml_backend_cpu_set_n_threads(b.get(), 1);
        return b;
    }();
    return cpu.get();
}

// ---- random graphs ----------------------------------------------------------------------------------

using Shape = std::array<int64_t, 4>;

// One random graph, built identically from the same seed (the fused and the unfused run each build
// their own copy). Pre-existing tensors (weights, caches) live in wctx, allocated on `buft`.
struct Case {
    Context ctx, wctx;
    Buffer wbuf;
    ggml_cgraph * graph = nullptr;
    std::vector<ggml_tensor *> leafs, pre, outputs, caches;
};

class Generator {
public:
    Generator(uint32_t seed, Case & c, bool cache_on_device, ggml_backend_buffer_type_t device_buft)
        : rng_(seed), c_(c), cache_on_device_(cache_on_device), device_buft_(device_buft) {}

    void build() {
        c_.ctx.reset(ggml_init({size_t{4} << 20, nullptr, true}));
        c_.wctx.reset(ggml_init({size_t{1} << 20, nullptr, true}));
        base_ = {pick_of({1, 2, 3, 4, 5, 8, 16, 33}), pick_of({1, 2, 3, 4}), pick_of({1, 1, 2}), 1};
        const int n_leafs = 1 + pick(3);
        for (int i = 0; i < n_leafs; ++i)
            pool_.push_back(leaf(base_));
        const int n_steps = 3 + pick(10);
        for (int i = 0; i < n_steps; ++i)
            step();
        for (ggml_tensor * t : made_)
            if (chance(0.15)) ggml_set_output(t);
        ggml_set_output(made_.back());
        c_.graph = ggml_new_graph(c_.ctx.get());
        for (ggml_tensor * t : early_)
            ggml_build_forward_expand(c_.graph, t);
        for (ggml_tensor * t : made_)
            ggml_build_forward_expand(c_.graph, t);
        for (int i = 0; i < ggml_graph_n_nodes(c_.graph); ++i) {
            ggml_tensor * t = ggml_graph_node(c_.graph, i);
            if (t->flags & GGML_TENSOR_FLAG_OUTPUT) c_.outputs.push_back(t);
        }
        c_.wbuf.reset(
            ggml_get_first_tensor(c_.wctx.get())
                ? ggml_backend_alloc_ctx_tensors_from_buft(
                      c_.wctx.get(), cache_on_device_ ? device_buft_ : ggml_backend_cpu_buffer_type())
                : nullptr);
    }

private:
    int pick(int n) { return static_cast<int>(rng_.gen() % static_cast<uint32_t>(n)); }
    int64_t pick_of(std::initializer_list<int64_t> v) { return v.begin()[pick(static_cast<int>(v.size()))]; }
    bool chance(double p) { return rng_.uniform(0.0, 1.0) < p; }
    static Shape shape_of(const ggml_tensor * t) { return {t->ne[0], t->ne[1], t->ne[2], t->ne[3]}; }

    ggml_tensor * named(ggml_tensor * t, const char * what) {
        ggml_format_name(t, "%s%d", what, counter_++);
        return t;
    }
    ggml_tensor * leaf(const Shape & s) {
        ggml_tensor * t = named(ggml_new_tensor_4d(c_.ctx.get(), GGML_TYPE_F32, s[0], s[1], s[2], s[3]), "x");
        if (chance(0.5)) ggml_set_input(t);
        c_.leafs.push_back(t);
        return t;
    }
    ggml_tensor * weight(const Shape & s) {
        ggml_tensor * t =
            named(ggml_new_tensor_4d(c_.wctx.get(), GGML_TYPE_F32, s[0], s[1], s[2], s[3]), "w");
        c_.pre.push_back(t);
        return t;
    }
    ggml_tensor * add(ggml_tensor * t) {
        made_.push_back(t);
        if (t->type == GGML_TYPE_F32) pool_.push_back(t);
        return t;
    }
    ggml_tensor * recent() {
        const int n = static_cast<int>(pool_.size());
        return chance(0.6) ? pool_[n - 1 - pick(std::min(n, 2))] : pool_[pick(n)];
    }
    bool preexisting(const ggml_tensor * t) const {
        const ggml_tensor * r = root_of(t);
        return std::find(c_.pre.begin(), c_.pre.end(), r) != c_.pre.end();
    }
    // Something b of a binary op can be: a pool tensor of a's shape, or a broadcast leaf / weight.
    ggml_tensor * operand_for(const ggml_tensor * a) {
        if (chance(0.5)) {
            for (int i = 0; i < 4; ++i) {
                ggml_tensor * b = pool_[pick(static_cast<int>(pool_.size()))];
                if (ggml_are_same_shape(a, b)) return b;
            }
        }
        Shape s = shape_of(a);
        for (int64_t & d : s)
            if (chance(0.4)) d = 1;
        return chance(0.3) ? weight(s) : leaf(s);
    }
    ggml_tensor * binary(ggml_tensor * a, ggml_tensor * b, bool inplace) {
        switch (pick(3)) {
            case 0:
                return named(inplace ? ggml_add_inplace(c_.ctx.get(), a, b) : ggml_add(c_.ctx.get(), a, b),
                             "add");
            case 1:
                return named(inplace ? ggml_sub_inplace(c_.ctx.get(), a, b) : ggml_sub(c_.ctx.get(), a, b),
                             "sub");
            default:
                return named(inplace ? ggml_mul_inplace(c_.ctx.get(), a, b) : ggml_mul(c_.ctx.get(), a, b),
                             "mul");
        }
    }
    ggml_tensor * unary(ggml_tensor * a, bool inplace) {
        if (chance(0.5))
            return named(inplace ? ggml_sqr_inplace(c_.ctx.get(), a) : ggml_sqr(c_.ctx.get(), a), "sqr");
        const float s = static_cast<float>(pick_of({-2, -1, 1, 3})) * 0.5f;
        return named(inplace ? ggml_scale_inplace(c_.ctx.get(), a, s) : ggml_scale(c_.ctx.get(), a, s),
                     "scale");
    }
    ggml_tensor * pointwise(ggml_tensor * a, bool inplace) {
        if (inplace && preexisting(a)) inplace = false;  // never write weights or caches in place
        return chance(0.5) ? binary(a, operand_for(a), inplace) : unary(a, inplace);
    }

    void step() {
        const int kind = pick(100);
        if (kind < 25) {  // one pointwise op, sometimes in place
            add(pointwise(recent(), chance(0.15)));
        } else if (kind < 45) {  // a chain of 2..4, each reading the previous
            ggml_tensor * t = recent();
            for (int n = 2 + pick(3); n > 0; --n)
                t = add(pointwise(t, chance(0.1)));
        } else if (kind < 53) {  // norm -> mul by a weight row
            ggml_tensor * a = recent();
            ggml_tensor * norm = add(named(ggml_rms_norm(c_.ctx.get(), a, 1e-6f), "norm"));
            if (chance(0.8)) {
                ggml_tensor * w = chance(0.6) ? weight({a->ne[0], 1, 1, 1}) : leaf({a->ne[0], 1, 1, 1});
                add(named(ggml_mul(c_.ctx.get(), norm, w), "normw"));
            }
        } else if (kind < 60) {  // a layout op of something
            ggml_tensor * a = recent();
            if (chance(0.4) && ggml_is_contiguous(a)) {
                add(named(ggml_reshape_1d(c_.ctx.get(), a, ggml_nelements(a)), "reshape"));
            } else if (chance(0.5)) {
                add(named(ggml_transpose(c_.ctx.get(), a), "transpose"));
            } else if (a->ne[1] > 1) {  // the first rows
                add(named(ggml_view_4d(c_.ctx.get(), a, a->ne[0], a->ne[1] / 2, a->ne[2], a->ne[3], a->nb[1],
                                       a->nb[2], a->nb[3], 0),
                          "view"));
            } else {
                add(named(ggml_view_4d(c_.ctx.get(), a, a->ne[0], a->ne[1], a->ne[2], a->ne[3], a->nb[1],
                                       a->nb[2], a->nb[3], 0),
                          "fullview"));
            }
        } else if (kind < 75) {  // pointwise op(s) then a copy into a cache
            ggml_tensor * t = recent();
            if (chance(0.7)) t = add(pointwise(t, false));
            copy_to_cache(t);
        } else if (kind < 88) {  // explicit in-place writeback: op, then op_inplace on it
            ggml_tensor * a = recent();
            ggml_tensor * m = add(pointwise(a, false));
            if (chance(0.3)) ggml_set_output(m);
            ggml_tensor * w = add(chance(0.5) ? binary(m, operand_for(m), true) : unary(m, true));
            (void)w;
            if (chance(0.2)) add(named(ggml_sqr(c_.ctx.get(), m), "later"));  // the owner read outside
        } else {  // an in-place op straight on an input
            ggml_tensor * x = leaf(base_);
            add(chance(0.5) ? binary(x, operand_for(x), true) : unary(x, true));
        }
    }

    void copy_to_cache(ggml_tensor * src) {
        const ggml_type type = chance(0.5) ? GGML_TYPE_F16 : GGML_TYPE_F32;
        const int64_t n = ggml_nelements(src);
        ggml_tensor * dst = nullptr;
        if (chance(0.4)) {  // the whole cache
            dst = named(ggml_new_tensor_1d(c_.wctx.get(), type, n), "cache");
            c_.pre.push_back(dst);
            c_.caches.push_back(dst);
        } else {  // a strided view of a larger cache: [ne0 + pad, rows + pad2]
            const int64_t ne0 = src->ne[0], rows = n / std::max<int64_t>(ne0, 1);
            const int64_t pad = pick(3), pad2 = pick(3);
            ggml_tensor * cache =
                named(ggml_new_tensor_2d(c_.wctx.get(), type, ne0 + pad, rows + pad2), "cache");
            c_.pre.push_back(cache);
            c_.caches.push_back(cache);
            const size_t offset = static_cast<size_t>(pick(static_cast<int>(pad2) + 1)) * cache->nb[1] +
                                  static_cast<size_t>(pick(static_cast<int>(pad) + 1)) * cache->nb[0];
            dst = named(ggml_view_2d(c_.ctx.get(), cache, ne0, rows, cache->nb[1], offset), "cacheview");
            // Usually made before the chain (a node early in the graph), sometimes right before the copy.
            if (chance(0.75))
                early_.push_back(dst);
            else
                made_.push_back(dst);
        }
        add(named(ggml_cpy(c_.ctx.get(), src, dst), "cpy"));
    }

    Rng rng_;
    Case & c_;
    bool cache_on_device_;
    ggml_backend_buffer_type_t device_buft_;
    Shape base_{};
    int counter_ = 0;
    std::vector<ggml_tensor *> pool_, made_, early_;
};

// ---- running and comparing ---------------------------------------------------------------------------

// Deterministic values of every leaf and pre-existing tensor of a case (after allocation).
void fill(const Case & c, uint32_t seed) {
    Rng rng(seed ^ 0x5bd1e995u);
    const auto fill_one = [&](ggml_tensor * t) {
        const size_t n = static_cast<size_t>(ggml_nelements(t));
        if (t->type == GGML_TYPE_F16) {
            std::vector<ggml_fp16_t> v(n);
            for (auto & h : v)
                h = ggml_fp32_to_fp16(static_cast<float>(rng.uniform(-4.0, 4.0)));
            ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
        } else {
            std::vector<float> v(n);
            for (float & f : v)
                f = static_cast<float>(rng.uniform(-2.0, 2.0));
            ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
        }
    };
    for (ggml_tensor * t : c.leafs)
        fill_one(t);
    for (ggml_tensor * t : c.pre)
        fill_one(t);
}

// The logical values of t (F32 or F16, any strides) as floats.
std::vector<float> values_of(const ggml_tensor * t) {
    std::vector<char> raw(ggml_nbytes(t));
    if (!raw.empty()) ggml_backend_tensor_get(t, raw.data(), 0, raw.size());
    std::vector<float> v;
    for_each_coord(t->ne, [&](const Coord & c, int64_t) {
        const char * p = raw.data() + byte_offset(t, c);
        if (t->type == GGML_TYPE_F16) {
            ggml_fp16_t h;
            std::memcpy(&h, p, sizeof h);
            v.push_back(ggml_fp16_to_fp32(h));
        } else {
            float f;
            std::memcpy(&f, p, sizeof f);
            v.push_back(f);
        }
    });
    return v;
}

// "" when they agree: bit for bit (NaN = NaN), or within kNormNmse with NaN/Inf in the same places.
std::string compare(const std::vector<float> & fused, const std::vector<float> & native, bool exact) {
    if (fused.size() != native.size()) return "sizes differ";
    double err = 0.0, ref = 0.0;
    for (size_t i = 0; i < fused.size(); ++i) {
        const float f = fused[i], e = native[i];
        if (std::isnan(f) || std::isnan(e) || std::isinf(f) || std::isinf(e)) {
            if ((std::isnan(f) && std::isnan(e)) || f == e) continue;
            return "element " + std::to_string(i) + ": " + std::to_string(f) + " fused, " +
                   std::to_string(e) + " native";
        }
        if (exact && std::memcmp(&f, &e, sizeof f) != 0)
            return "element " + std::to_string(i) + ": " + std::to_string(f) + " fused, " +
                   std::to_string(e) + " native";
        err += (static_cast<double>(f) - e) * (static_cast<double>(f) - e);
        ref += static_cast<double>(e) * e;
    }
    if (!exact && err > kNormNmse * std::max(ref, 1e-30))
        return "nmse " + std::to_string(err / std::max(ref, 1e-30)) + " above " + std::to_string(kNormNmse);
    return "";
}

std::string dump(const ggml_cgraph * g, ggml_backend_sched_t sched) {
    std::ostringstream out;
    for (int i = 0; i < ggml_graph_n_nodes(g); ++i) {
        ggml_tensor * t = ggml_graph_node(g, i);
        ggml_backend_t b = sched ? ggml_backend_sched_get_tensor_backend(sched, t) : nullptr;
        out << "  " << i << " " << t->name << " = " << ggml_op_desc(t) << "(";
        for (const ggml_tensor * s : t->src)
            if (s) out << s->name << " ";
        out << ") [" << t->ne[0] << "," << t->ne[1] << "," << t->ne[2] << "," << t->ne[3] << "] "
            << ggml_type_name(t->type) << (t->view_src ? std::string(" view_of=") + t->view_src->name : "")
            << ((t->flags & GGML_TENSOR_FLAG_OUTPUT) ? " OUTPUT" : "") << " on "
            << (b ? ggml_backend_name(b) : "?") << "\n";
    }
    return out.str();
}

std::string names(const Range & r) {
    std::string s = std::string(kRuleNames[r.rule]) + " [";
    for (const ggml_tensor * t : r.nodes)
        s += std::string(t->name) + " ";
    return s + "]";
}

struct Totals {
    long graphs = 0, skipped = 0, unrunnable = 0, proposals = 0, accepted = 0, rejected = 0, conservative = 0;
    std::string unrunnable_example, skipped_example;
    long accepted_by_rule[kRuleCount] = {}, rejected_by_rule[kRuleCount] = {};
    std::vector<std::string> conservative_examples;
};

bool observe_nothing(ggml_tensor *, bool ask, void *) { return !ask; }

// Runs one seed: a fused and an unfused computation and the checks. Returns "" or the failure.
std::string run_graph(uint32_t seed, Sched * fused_scheds, Sched * native_scheds, Totals & totals) {
    Rng rng(seed);
    const int d = static_cast<int>(rng.gen() % kDevices);
    Device & device = devices()[d];
    const bool cache_on_device = device.has_cpy && rng.uniform(0.0, 1.0) < 0.7;
    const int max_chain = 2 + static_cast<int>(rng.gen() % 3);
    const uint32_t graph_seed = static_cast<uint32_t>(rng.gen());
    ggml_backend_buffer_type_t dev_buft = ggml_backend_dev_buffer_type(device.dev);

    Case fused, native;
    Generator(graph_seed, fused, cache_on_device, dev_buft).build();
    Generator(graph_seed, native, cache_on_device, dev_buft).build();
    ggml_backend_sched_t on = fused_scheds[d].get(), off = native_scheds[d].get();

    g_rec = Recorder{};
    g_rec.max_chain = max_chain;
    ggml_backend_sched_reset(on);
    ggml_backend_sched_reset(off);
    const bool on_ok = ggml_backend_sched_alloc_graph(on, fused.graph);
    const std::string on_error = on_ok ? "" : ggml_backend_get_last_error();
    const bool off_ok = ggml_backend_sched_alloc_graph(off, native.graph);
    const std::string off_error = off_ok ? "" : ggml_backend_get_last_error();
    std::string failure;
    const auto finish = [&](std::string why) {
        ggml_backend_sched_reset(on);  // before the graphs' contexts go
        ggml_backend_sched_reset(off);
        return why;
    };
    if (on_ok != off_ok) {
        return finish("allocation " + std::string(on_ok ? "succeeded" : "failed") + " with fusion and " +
                      (off_ok ? "succeeded" : "failed") + " without: " + on_error + off_error + "\n" +
                      dump(fused.graph, nullptr));
    }
    if (!on_ok) {  // a graph this scheduler cannot place (both ways): not a fusion question
        ++totals.skipped;
        if (totals.skipped_example.empty())
            totals.skipped_example = "seed " + std::to_string(seed) + ": " + on_error;
        return finish("");
    }
    if (env_or("GGX_FUSION_DUMP", 0))
        std::printf("seed %u on device %d:\n%s", seed, d, dump(fused.graph, on).c_str());
    fill(fused, graph_seed);
    fill(native, graph_seed);
    const bool on_ran = ggml_backend_sched_graph_compute(on, fused.graph) == GGML_STATUS_SUCCESS;
    const std::string on_run_error = on_ran ? "" : ggml_backend_get_last_error();
    const bool off_ran = ggml_backend_sched_graph_compute(off, native.graph) == GGML_STATUS_SUCCESS;
    const std::string off_run_error = off_ran ? "" : ggml_backend_get_last_error();
    if (!on_ran && !off_ran) {  // the scheduler cannot run this graph at all: not a fusion question
        ++totals.unrunnable;
        if (totals.unrunnable_example.empty())
            totals.unrunnable_example = "seed " + std::to_string(seed) + ": " + off_run_error;
        return finish("");
    }
    if (!on_ran || !off_ran) {
        return finish(std::string(on_ran ? "unfused" : "fused") + " compute failed (the other ran): " +
                      on_run_error + off_run_error + "\n" + dump(fused.graph, on));
    }
    ++totals.graphs;

    // (b) every executed range is legal by the independent verifier.
    bool norm_ran = false;
    std::set<Range> executed(g_rec.executed.begin(), g_rec.executed.end());
    for (const Range & r : executed) {
        norm_ran = norm_ran || r.rule == kNormMul;
        const std::string why = illegal_because(fused.graph, r.nodes);
        if (!why.empty()) failure += "ILLEGAL fusion executed: " + names(r) + ": " + why + "\n";
    }
    // (c) count proposals; find the legal ones the runtime refused inside one split.
    std::set<Range> proposed(g_rec.proposals.begin(), g_rec.proposals.end());
    for (const Range & r : proposed) {
        ++totals.proposals;
        if (executed.count(r)) {
            ++totals.accepted;
            ++totals.accepted_by_rule[r.rule];
            continue;
        }
        ++totals.rejected;
        ++totals.rejected_by_rule[r.rule];
        if (!illegal_because(fused.graph, r.nodes).empty()) continue;
        bool one_split = true;  // every computing node on the device (copies are not in the caller's graph)
        for (const ggml_tensor * t : r.nodes)
            one_split = one_split &&
                        (is_layout(t->op) || ggml_backend_sched_get_tensor_backend(
                                                 on, const_cast<ggml_tensor *>(t)) == device.backend.get());
        if (!one_split) continue;
        ++totals.conservative;
        if (totals.conservative_examples.size() < 5)
            totals.conservative_examples.push_back("seed " + std::to_string(seed) + ": " + names(r));
    }
    for (const Range & r : g_rec.executed)
        if (std::find(g_rec.proposals.begin(), g_rec.proposals.end(), r) == g_rec.proposals.end())
            failure += "executed a range no rule proposed: " + names(r) + "\n";

    // (a) the same results with and without fusion. On a difference, a third run tells which side is
    // wrong: the same graph computed directly on the CPU backend, every tensor with storage of its
    // own (no scheduler, no allocator reuse, no fusion).
    const bool exact = !norm_ran;
    Case ref;
    Buffer ref_buf;
    const auto blame = [&](const std::vector<float> & on_values, const std::vector<float> & off_values,
                           bool is_cache, size_t i) -> std::string {
        if (!ref.graph) {
            Generator(graph_seed, ref, false, dev_buft).build();
            ref_buf.reset(ggml_backend_alloc_ctx_tensors(ref.ctx.get(), cpu_backend_1t()));
            for (ggml_tensor * t = ggml_get_first_tensor(ref.ctx.get()); t;
                 t = ggml_get_next_tensor(ref.ctx.get(), t))
                if (t->view_src && !t->data) ggml_backend_view_init(t);  // views of the caches
            fill(ref, graph_seed);
            if (!ref_buf || ggml_backend_graph_compute(cpu_backend_1t(), ref.graph) != GGML_STATUS_SUCCESS)
                return std::string(" (the direct CPU reference could not run: ") +
                       ggml_backend_get_last_error() + ")";
        }
        const std::vector<float> r = values_of(is_cache ? ref.caches[i] : ref.outputs[i]);
        const bool on_right = compare(on_values, r, exact).empty(),
                   off_right = compare(off_values, r, exact).empty();
        return on_right && !off_right ? " (the fused run agrees with a direct CPU computation: the UNFUSED "
                                        "scheduler run is wrong)"
               : !on_right && off_right
                   ? " (the unfused run agrees with a direct CPU computation: the FUSED run is wrong)"
                   : " (neither agrees with a direct CPU computation)";
    };
    for (size_t i = 0; i < fused.outputs.size() && i < native.outputs.size(); ++i) {
        const std::vector<float> a = values_of(fused.outputs[i]), b = values_of(native.outputs[i]);
        const std::string why = compare(a, b, exact);
        if (!why.empty())
            failure += "output '" + std::string(fused.outputs[i]->name) + "' differs: " + why +
                       blame(a, b, false, i) + "\n";
    }
    for (size_t i = 0; i < fused.caches.size(); ++i) {
        const std::vector<float> a = values_of(fused.caches[i]), b = values_of(native.caches[i]);
        const std::string why = compare(a, b, exact);
        if (!why.empty())
            failure += "cache '" + std::string(fused.caches[i]->name) + "' differs: " + why +
                       blame(a, b, true, i) + "\n";
    }
    if (!failure.empty()) {
        failure += "executed:";
        for (const Range & r : executed)
            failure += " " + names(r);
        failure += "\ngraph (device " + std::to_string(d) + "):\n" + dump(fused.graph, on);
    }
    return finish(failure);
}

TEST(FusionProperty, RandomGraphsFuseOnlyLegallyAndComputeTheSame) {
    const long n_graphs = env_or("GGX_FUSION_GRAPHS", 10000);
    const auto first_seed = static_cast<uint32_t>(env_or("GGX_FUSION_SEED", 1));
    Sched fused[kDevices], native[kDevices];
    for (int d = 0; d < kDevices; ++d) {
        ASSERT_NE(devices()[d].dev, nullptr) << ggml_backend_get_last_error();
        ggml_backend_t list[] = {devices()[d].backend.get(), cpu_backend_1t()};
        fused[d].reset(ggml_backend_sched_new(list, nullptr, 2, 1024, false, false));
        native[d].reset(ggml_backend_sched_new(list, nullptr, 2, 1024, false, false));
        ASSERT_TRUE(fused[d] && native[d]) << ggml_backend_get_last_error();
        ggml_backend_sched_set_eval_callback(native[d].get(), observe_nothing, nullptr);
    }
    Totals totals;
    int failures = 0;
    for (long k = 0; k < n_graphs; ++k) {
        const uint32_t seed = first_seed + static_cast<uint32_t>(k);
        const std::string failure = run_graph(seed, fused, native, totals);
        if (failure.empty()) continue;
        ADD_FAILURE() << "seed " << seed << " (replay: GGX_FUSION_SEED=" << seed << " GGX_FUSION_GRAPHS=1)\n"
                      << failure;
        if (++failures >= 5) break;
    }
    std::printf(
        "fusion property: %ld graphs computed (%ld skipped: not placeable), %ld proposals: %ld accepted, "
        "%ld rejected; legal by the verifier but refused inside one split: %ld\n",
        totals.graphs, totals.skipped, totals.proposals, totals.accepted, totals.rejected,
        totals.conservative);
    for (int r = 0; r < kRuleCount; ++r)
        std::printf("  %-9s accepted %ld, rejected %ld\n", kRuleNames[r], totals.accepted_by_rule[r],
                    totals.rejected_by_rule[r]);
    if (totals.skipped > 0) std::printf("  first graph not placeable: %s\n", totals.skipped_example.c_str());
    if (totals.unrunnable > 0)
        std::printf(
            "  %ld graphs allocated but failed to compute with and without fusion (scheduler), first: %s\n",
            totals.unrunnable, totals.unrunnable_example.c_str());
    for (const std::string & e : totals.conservative_examples)
        std::printf("  refused though legal: %s\n", e.c_str());
    if (n_graphs >= 100) {
        EXPECT_GT(totals.accepted, 0);
        EXPECT_GT(totals.rejected, 0);
        for (int r = 0; r < kRuleCount; ++r) {
            EXPECT_GT(totals.accepted_by_rule[r], 0) << kRuleNames[r];
            EXPECT_GT(totals.rejected_by_rule[r], 0) << kRuleNames[r];
        }
    }
}

}  // namespace
