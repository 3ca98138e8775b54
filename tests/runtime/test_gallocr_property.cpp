// Property test of the graph allocator: thousands of seeded random graphs (element-wise ops with
// broadcasting, norms, softmax, rope, mul_mat, layout ops and views, explicit _inplace constructors,
// concat, get_rows, glu, reductions; odd and empty shapes; several consumers; random INPUT/OUTPUT
// flags; pre-allocated weights; graph views of a prefix) are placed with ggml_gallocr and checked by
// an exhaustive verifier written independently of the allocator:
//  (a) two storage owners whose byte ranges overlap are never live at the same step, except a node
//      placed in place over the source it replaces at the step where that source dies;
//  (b) the bytes a node writes never overlap a tensor of another storage that is live at that step
//      (still to be read at this step or later), except that allowed in-place source;
//  (c) for a subset of the graphs, computing on the CPU backend gives results bit-identical to an
//      allocation without any reuse (ggml_backend_alloc_ctx_tensors).
//
// GGX_GALLOCR_GRAPHS (default 10000) sets the number of graphs, GGX_GALLOCR_SEED (default 1) the
// seed of the first one (graph k uses seed + k), GGX_GALLOCR_COMPUTE_EVERY (default 1: all but the graph
// views) which graphs are also computed. A failure names the graph's seed; GGX_GALLOCR_SEED=<seed>
// GGX_GALLOCR_GRAPHS=1 replays it.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-graph.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "support/test_util.h"

namespace {

using ggx::test::Buffer;
using ggx::test::Context;
using ggx::test::Gallocr;
using ggx::test::Rng;

long env_or(const char * name, long fallback) {
    const char * value = std::getenv(name);
    return value && *value ? std::strtol(value, nullptr, 10) : fallback;
}

const ggml_tensor * root_of(const ggml_tensor * t) {
    while (t->view_src)
        t = t->view_src;
    return t;
}

// ---- random graphs ----------------------------------------------------------------------------------

// One random graph in a no-alloc context ctx, with pre-allocated weights declared in wctx.
class Generator {
public:
    Generator(uint32_t seed, ggml_context * ctx, ggml_context * wctx) : rng_(seed), ctx_(ctx), wctx_(wctx) {}

    // Builds the graph (nodes in creation order); weights are still unallocated.
    ggml_cgraph * build() {
        const int n_leafs = 1 + pick(3);
        for (int i = 0; i < n_leafs; ++i)
            pool_.push_back(leaf(random_shape(), chance(0.15) ? GGML_TYPE_F16 : GGML_TYPE_F32));
        const int n_ops = 3 + pick(28);
        for (int attempts = 0; attempts < 8 * n_ops && made_ < n_ops; ++attempts)
            step();
        ggml_cgraph * graph = ggml_new_graph(ctx_);
        for (ggml_tensor * t : made_tensors_) {
            if (chance(0.12)) ggml_set_output(t);
            if (chance(0.02) && !t->view_src) ggml_set_input(t);
            ggml_build_forward_expand(graph, t);
        }
        return graph;
    }

    // Values range of I32 leafs (indices in [0, range)).
    const std::unordered_map<const ggml_tensor *, int32_t> & index_ranges() const { return index_ranges_; }

private:
    using Shape = std::array<int64_t, 4>;

    int pick(int n) { return static_cast<int>(rng_.gen() % static_cast<uint32_t>(n)); }
    bool chance(double p) { return rng_.uniform(0.0, 1.0) < p; }
    int64_t dim() {
        static constexpr int64_t kDims[] = {1, 1, 2, 3, 4, 5, 7, 8, 8, 16, 33};
        return chance(0.03) ? 0 : kDims[pick(static_cast<int>(std::size(kDims)))];
    }
    Shape random_shape() {
        Shape s{dim(), 1, 1, 1};
        const int n_dims = 1 + pick(4);
        for (int i = 1; i < n_dims; ++i)
            s[i] = dim();
        if (s[0] * s[1] * s[2] * s[3] > 4096) s[2] = s[3] = 1;
        return s;
    }
    static Shape shape_of(const ggml_tensor * t) { return {t->ne[0], t->ne[1], t->ne[2], t->ne[3]}; }

    ggml_tensor * leaf(const Shape & s, ggml_type type) {
        ggml_tensor * t = ggml_new_tensor_4d(ctx_, type, s[0], s[1], s[2], s[3]);
        if (t && chance(0.5)) ggml_set_input(t);
        return t;
    }
    ggml_tensor * weight(const Shape & s, ggml_type type) {
        return ggml_new_tensor_4d(wctx_, type, s[0], s[1], s[2], s[3]);
    }
    ggml_tensor * index_leaf(const Shape & s, int32_t range) {
        ggml_tensor * t = ggml_new_tensor_4d(ctx_, GGML_TYPE_I32, s[0], s[1], s[2], s[3]);
        if (t) index_ranges_[t] = std::max(range, 1);
        return t;
    }

    // A tensor from the pool, biased towards recent ones (chains) but any can be read again.
    ggml_tensor * any() {
        const int n = static_cast<int>(pool_.size());
        return chance(0.5) ? pool_[n - 1 - pick(std::min(n, 3))] : pool_[pick(n)];
    }
    ggml_tensor * any_f32() {
        for (int i = 0; i < 6; ++i) {
            ggml_tensor * t = any();
            if (t->type == GGML_TYPE_F32) return t;
        }
        return nullptr;
    }
    // A pool tensor or a new leaf / weight that can be tiled over a (b of ADD..DIV).
    ggml_tensor * broadcast_operand(const ggml_tensor * a) {
        for (int i = 0; i < 4; ++i) {
            ggml_tensor * b = any();
            if (b != a && ggml_can_repeat(b, a) && (b->type == GGML_TYPE_F32 || b->type == a->type)) return b;
        }
        Shape s = shape_of(a);
        for (int64_t & n : s)
            if (chance(0.4)) n = 1;
        return chance(0.3) ? weight(s, GGML_TYPE_F32) : leaf(s, GGML_TYPE_F32);
    }
    // A pool tensor of a's shape and type, or a new leaf.
    ggml_tensor * same_shape(const ggml_tensor * a) {
        for (int i = 0; i < 4; ++i) {
            ggml_tensor * b = any();
            if (ggml_are_same_shape(a, b) && b->type == a->type) return b;
        }
        return leaf(shape_of(a), a->type);
    }

    // Adds one random op (or nothing, when the draw is invalid or the CPU cannot run it).
    void step() {
        ggml_tensor * a = any();
        ggml_tensor * r = nullptr;
        ggml_context * c = ctx_;
        const bool inplace = chance(0.2);
        switch (pick(20)) {
            case 0:
            case 1: {
                const ggml_unary_op op =
                    ggx::test::kUnaryOps[pick(static_cast<int>(std::size(ggx::test::kUnaryOps)))];
                r = inplace ? ggml_unary_inplace(c, a, op) : ggml_unary(c, a, op);
                break;
            }
            case 2:
            case 3:
            case 4: {
                ggml_tensor * b = broadcast_operand(a);
                // Sometimes b reads a's own storage (a itself, or its first row tiled over it).
                if (!inplace && chance(0.15))
                    b = chance(0.5) || a->nb[0] != ggml_type_size(a->type) ? a
                                                                           : ggml_view_1d(c, a, a->ne[0], 0);
                if (inplace && root_of(b) == root_of(a)) break;  // a race in the kernel, not a test
                using Fn = ggml_tensor * (*)(ggml_context *, ggml_tensor *, ggml_tensor *);
                static constexpr Fn kOps[] = {ggml_add, ggml_sub, ggml_mul, ggml_div};
                static constexpr Fn kInplace[] = {ggml_add_inplace, ggml_sub_inplace, ggml_mul_inplace,
                                                  ggml_div_inplace};
                const int k = pick(4);
                r = (inplace ? kInplace[k] : kOps[k])(c, a, b);
                break;
            }
            case 5:
                switch (pick(5)) {
                    case 0:
                        r = inplace ? ggml_scale_inplace(c, a, 0.75f) : ggml_scale(c, a, -1.5f);
                        break;
                    case 1:
                        r = inplace ? ggml_scale_bias_inplace(c, a, 2.0f, 0.5f)
                                    : ggml_scale_bias(c, a, 0.5f, -1.0f);
                        break;
                    case 2:
                        r = inplace ? ggml_sqr_inplace(c, a) : ggml_sqr(c, a);
                        break;
                    case 3:
                        r = inplace ? ggml_sqrt_inplace(c, a) : ggml_sqrt(c, a);
                        break;
                    default:
                        r = inplace ? ggml_clamp_inplace(c, a, -0.5f, 0.5f) : ggml_clamp(c, a, -1.0f, 2.0f);
                        break;
                }
                break;
            case 6:
                switch (pick(5)) {
                    case 0:
                        r = inplace ? ggml_norm_inplace(c, a, 1e-5f) : ggml_norm(c, a, 1e-5f);
                        break;
                    case 1:
                        r = inplace ? ggml_rms_norm_inplace(c, a, 1e-6f) : ggml_rms_norm(c, a, 1e-6f);
                        break;
                    case 2:
                        r = ggml_l2_norm(c, a, 1e-6f);
                        break;
                    default:
                        r = ggml_group_norm(c, a, 1 + pick(3), 1e-5f);
                        break;
                }
                break;
            case 7: {
                if (inplace) {
                    r = ggml_soft_max_inplace(c, a);
                } else if (chance(0.5)) {
                    r = ggml_soft_max(c, a);
                } else {
                    ggml_tensor * mask =
                        leaf({a->ne[0], a->ne[1], 1, 1}, chance(0.5) ? GGML_TYPE_F16 : GGML_TYPE_F32);
                    r = ggml_soft_max_ext(c, a, mask, 0.125f, chance(0.3) ? 8.0f : 0.0f);
                }
                break;
            }
            case 8:
            case 9: {
                // b [K, N, B2, B3] from the pool; a: a weight, a leaf or a pool tensor with ne0 = K.
                ggml_tensor * b = a;
                ggml_tensor * w = nullptr;
                for (int i = 0; i < 4 && !w; ++i) {
                    ggml_tensor * t = any();
                    if (t != b && t->ne[0] == b->ne[0] && t->ne[2] > 0 && t->ne[3] > 0 &&
                        b->ne[2] % t->ne[2] == 0 && b->ne[3] % t->ne[3] == 0)
                        w = t;
                }
                if (!w || chance(0.5)) {
                    const Shape s{b->ne[0], dim(), 1, 1};
                    w = chance(0.5) ? weight(s, chance(0.5) ? GGML_TYPE_F16 : GGML_TYPE_F32)
                                    : leaf(s, GGML_TYPE_F32);
                }
                r = ggml_mul_mat(c, w, b);
                break;
            }
            case 10:
                switch (pick(4)) {
                    case 0:
                        r = ggml_cont(c, a);
                        break;
                    case 1:
                        r = ggml_dup(c, a);
                        break;
                    case 2:
                        r = ggml_cast(c, a,
                                      a->type == GGML_TYPE_F32
                                          ? (chance(0.5) ? GGML_TYPE_F16 : GGML_TYPE_BF16)
                                          : GGML_TYPE_F32);
                        break;
                    default: {  // into a leaf, or a node, of the same element count in another shape
                        const int64_t n = ggml_nelements(a);
                        ggml_tensor * dst = nullptr;
                        for (int i = 0; i < 4 && !dst; ++i) {
                            ggml_tensor * t = any();
                            if (t != a && ggml_nelements(t) == n && t->op != GGML_OP_NONE && !t->view_src)
                                dst = t;
                        }
                        if (!dst) dst = leaf({n, 1, 1, 1}, GGML_TYPE_F32);
                        if (root_of(dst) == root_of(a)) break;  // copying a tensor onto itself races
                        r = ggml_cpy(c, a, dst);
                        break;
                    }
                }
                break;
            case 11: {
                int axes[4] = {0, 1, 2, 3};
                for (int i = 3; i > 0; --i)
                    std::swap(axes[i], axes[pick(i + 1)]);
                r = chance(0.3) ? ggml_transpose(c, a)
                                : ggml_permute(c, a, axes[0], axes[1], axes[2], axes[3]);
                break;
            }
            case 12:
                if (!ggml_is_contiguous(a)) break;
                r = chance(0.5) ? ggml_reshape_1d(c, a, ggml_nelements(a))
                                : ggml_reshape_3d(c, a, a->ne[0], a->ne[1] * a->ne[2], a->ne[3]);
                break;
            case 13: {
                // A box of a's own index space (views take nb0 = the element size: a must have it).
                if (a->ne[1] < 1 || a->nb[0] != ggml_type_size(a->type)) break;
                const int64_t rows = 1 + pick(static_cast<int>(a->ne[1]));
                const int64_t first = pick(static_cast<int>(a->ne[1] - rows + 1));
                r = chance(0.5)
                        ? ggml_view_2d(c, a, a->ne[0], rows, a->nb[1], first * a->nb[1])
                        : ggml_view_3d(c, a, a->ne[0], rows, a->ne[2], a->nb[1], a->nb[2], first * a->nb[1]);
                break;
            }
            case 14: {
                const int d = pick(4);
                ggml_tensor * b = nullptr;
                for (int i = 0; i < 4 && !b; ++i) {
                    ggml_tensor * t = any();
                    bool ok = t->type == a->type;
                    for (int k = 0; k < 4; ++k)
                        ok = ok && (k == d || t->ne[k] == a->ne[k]);
                    if (ok) b = t;
                }
                if (!b) {
                    Shape s = shape_of(a);
                    s[d] = dim();
                    b = leaf(s, a->type);
                }
                r = ggml_concat(c, a, b, d);
                break;
            }
            case 15: {
                const int64_t n = 1 + pick(6);
                ggml_tensor * idx = index_leaf({n, a->ne[2], a->ne[3], 1}, static_cast<int32_t>(a->ne[1]));
                if (a->ne[1] < 1) break;
                r = ggml_get_rows(c, a, idx);
                break;
            }
            case 16: {
                if (a->ne[0] < 2 || a->ne[0] % 2 != 0) break;
                ggml_tensor * pos = index_leaf({a->ne[2], 1, 1, 1}, 100);
                const int64_t n_dims = chance(0.5) ? a->ne[0] : std::max<int64_t>(2, a->ne[0] / 2 / 2 * 2);
                const int mode = chance(0.5) ? GGML_ROPE_TYPE_NORMAL : GGML_ROPE_TYPE_NEOX;
                r = ggml_rope_ext(c, a, pos, nullptr, static_cast<int>(n_dims), mode, 0, 10000.0f, 1.0f, 0.0f,
                                  1.0f, 32.0f, 1.0f);
                break;
            }
            case 17: {
                const ggml_glu_op op =
                    ggx::test::kGluOps[pick(static_cast<int>(std::size(ggx::test::kGluOps)))];
                ggml_tensor * b = same_shape(a);
                r = chance(0.5) ? ggml_glu_split(c, a, b, op) : ggml_glu(c, a, op, chance(0.5));
                break;
            }
            case 18:
                switch (pick(4)) {
                    case 0:
                        r = ggml_sum_rows(c, a);
                        break;
                    case 1:
                        r = ggml_mean(c, a);
                        break;
                    case 2:
                        r = ggml_sum(c, a);
                        break;
                    default: {
                        ggml_tensor * shape =
                            ggml_new_tensor_4d(c, a->type, a->ne[0] * (1 + pick(2)), a->ne[1],
                                               a->ne[2] * (1 + pick(2)), a->ne[3]);
                        r = ggml_repeat(c, a, shape);
                        break;
                    }
                }
                break;
            default:
                r = ggml_pad(c, a, pick(3), pick(2), 0, 0);
                break;
        }
        if (r == nullptr) {
            ggml_clear_error(ctx_);
            return;
        }
        if (!ggml_backend_supports_op(ggx::test::cpu_backend(), r)) return;
        pool_.push_back(r);
        made_tensors_.push_back(r);
        ++made_;
    }

    Rng rng_;
    ggml_context * ctx_;
    ggml_context * wctx_;
    std::vector<ggml_tensor *> pool_;
    std::vector<ggml_tensor *> made_tensors_;
    int made_ = 0;
    std::unordered_map<const ggml_tensor *, int32_t> index_ranges_;
};

// Deterministic data for every leaf of graph (weights included), in leaf order.
void fill_leafs(ggml_cgraph * graph, const std::unordered_map<const ggml_tensor *, int32_t> & ranges,
                uint32_t seed) {
    Rng rng(seed ^ 0x5bd1e995u);
    for (int i = 0; i < ggml_graph_n_leafs(graph); ++i) {
        ggml_tensor * t = ggml_graph_leaf(graph, i);
        const int64_t n = ggml_nelements(t);
        if (n == 0 || !t->data) continue;
        std::vector<char> bytes(ggml_nbytes(t));
        if (t->type == GGML_TYPE_I32) {
            const int32_t range = ranges.count(t) ? ranges.at(t) : 1;
            std::vector<int32_t> v(n);
            for (int32_t & x : v)
                x = static_cast<int32_t>(rng.gen() % static_cast<uint32_t>(range));
            std::memcpy(bytes.data(), v.data(), bytes.size());
        } else {
            std::vector<float> v(n);
            for (float & x : v)
                x = static_cast<float>(rng.uniform(-2.0, 2.0));
            ggml_quantize_row(t->type, v.data(), bytes.data(), n);
        }
        ASSERT_EQ(ggml_ext_backend_tensor_set(t, bytes.data(), 0, bytes.size()), GGML_STATUS_SUCCESS);
    }
}

// The bytes of each element of t, in index order (t placed in host memory).
std::string elements(const ggml_tensor * t) {
    std::string out;
    const size_t size = ggml_type_size(t->type);
    for (int64_t i3 = 0; i3 < t->ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < t->ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < t->ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < t->ne[0]; ++i0)
                    out.append(static_cast<const char *>(t->data) + i0 * t->nb[0] + i1 * t->nb[1] +
                                   i2 * t->nb[2] + i3 * t->nb[3],
                               size);
    return out;
}

// The results of a computed graph: OUTPUT tensors and nodes nobody consumes, by node index.
std::vector<std::pair<int, std::string>> results(ggml_cgraph * graph) {
    std::vector<std::pair<int, std::string>> out;
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        const ggml_tensor * t = ggml_graph_node(graph, i);
        if ((t->flags & GGML_TENSOR_FLAG_OUTPUT) || ggml_graph_get_use_count(graph, t) == 0)
            out.emplace_back(i, elements(t));
    }
    return out;
}

// ---- the verifier -----------------------------------------------------------------------------------

bool same_layout(const ggml_tensor * a, const ggml_tensor * b) {
    return a->type == b->type && ggml_are_same_shape(a, b) && ggml_are_same_stride(a, b);
}

struct Range {
    uintptr_t begin = 0, end = 0;
    bool empty() const { return begin == end; }
    bool overlaps(const Range & o) const { return !empty() && !o.empty() && begin < o.end && o.begin < end; }
};

Range range_of(const ggml_tensor * t) {
    const auto begin = reinterpret_cast<uintptr_t>(t->data);
    return {begin, begin + ggml_nbytes(t)};
}

// Checks the placement of nodes [0, n) of graph (n < all nodes: a graph view of that prefix).
// placed: tensors that had no storage before the allocation.
class Verifier {
public:
    Verifier(ggml_cgraph * graph, int n, const std::unordered_set<const ggml_tensor *> & placed)
        : graph_(graph), n_(n), placed_(placed) {}

    std::string run() {
        constexpr int kForever = std::numeric_limits<int>::max();
        std::unordered_map<const ggml_tensor *, int> pos;
        for (int i = 0; i < n_; ++i)
            pos[ggml_graph_node(graph_, i)] = i;
        // Every tensor the prefix touches: its nodes, their sources, and their storage roots.
        std::vector<const ggml_tensor *> all;
        std::unordered_map<const ggml_tensor *, std::vector<int>> consumers;
        const auto add = [&](const ggml_tensor * t) {
            for (; t; t = t->view_src) {
                if (!lifetime_.count(t)) {
                    lifetime_[t] = {};
                    all.push_back(t);
                }
            }
        };
        for (int i = 0; i < n_; ++i) {
            const ggml_tensor * node = ggml_graph_node(graph_, i);
            add(node);
            for (const ggml_tensor * s : node->src) {
                if (!s) continue;
                add(s);
                consumers[s].push_back(i);
            }
        }
        for (const ggml_tensor * t : all) {
            const auto at = pos.find(t);
            const bool node = at != pos.end();
            const int uses = ggml_graph_get_use_count(graph_, t);
            const auto & mine = consumers[t];
            const bool pinned = !node || (t->flags & (GGML_TENSOR_FLAG_INPUT | GGML_TENSOR_FLAG_OUTPUT)) ||
                                uses == 0 || static_cast<int>(mine.size()) < uses;
            Life & life = lifetime_[t];
            life.birth = node && !(t->flags & GGML_TENSOR_FLAG_INPUT) ? at->second : -1;
            life.death = pinned ? kForever : *std::max_element(mine.begin(), mine.end());
            if (placed_.count(t)) {
                if (!t->data || !t->buffer) return describe(t) + " was not allocated";
                const auto base = reinterpret_cast<uintptr_t>(ggml_backend_buffer_get_base(t->buffer));
                const Range r = range_of(t);
                if (r.begin < base || r.end > base + ggml_backend_buffer_get_size(t->buffer))
                    return describe(t) + " lies outside its buffer";
                if (!t->view_src && (r.begin - base) % ggml_backend_buffer_get_alignment(t->buffer) != 0)
                    return describe(t) + " is misaligned";
            }
        }
        // Storage owners: lifetime and extent over the owner and its views.
        std::unordered_map<const ggml_tensor *, Life> storage_life;
        std::unordered_map<const ggml_tensor *, Range> extent;
        for (const ggml_tensor * t : all) {
            const ggml_tensor * root = root_of(t);
            const Life & l = lifetime_[t];
            auto [it, fresh] = storage_life.try_emplace(root, l);
            if (!fresh)
                it->second = {std::min(it->second.birth, l.birth), std::max(it->second.death, l.death)};
            const Range r = range_of(t);
            if (r.empty() || !t->data) continue;
            auto [e, first] = extent.try_emplace(root, r);
            if (!first) e->second = {std::min(e->second.begin, r.begin), std::max(e->second.end, r.end)};
        }
        // (a) owners overlapping in memory are never live together (except an allowed in-place).
        std::vector<const ggml_tensor *> owners;
        for (const auto & [root, unused] : extent)
            if (placed_.count(root)) owners.push_back(root);
        std::sort(owners.begin(), owners.end(),
                  [&](auto x, auto y) { return extent[x].begin < extent[y].begin; });
        for (size_t i = 0; i < owners.size(); ++i) {
            for (size_t j = i + 1; j < owners.size(); ++j) {
                const ggml_tensor *x = owners[i], *y = owners[j];
                if (!extent[x].overlaps(extent[y])) continue;
                const Life &lx = storage_life[x], &ly = storage_life[y];
                if (lx.death < ly.birth || ly.death < lx.birth) continue;
                if ((lx.death == ly.birth && allowed_inplace(y, x)) ||
                    (ly.death == lx.birth && allowed_inplace(x, y)))
                    continue;
                return "(a) " + describe(x) + " and " + describe(y) +
                       " overlap in memory and are live together";
            }
        }
        // (b) what a node writes overlaps no tensor of another storage that is live at its step.
        for (int i = 0; i < n_; ++i) {
            const ggml_tensor * node = ggml_graph_node(graph_, i);
            if (!node->data) return describe(node) + " has no data";
            const Range w = range_of(node);
            for (const ggml_tensor * t : all) {
                if (t == node || !t->data || root_of(t) == root_of(node)) continue;
                const Life & l = lifetime_[t];
                if (l.birth > i || l.death < i || !w.overlaps(range_of(t))) continue;
                if (l.death == i && allowed_inplace(node, root_of(t))) continue;
                return "(b) node " + std::to_string(i) + " " + describe(node) + " writes over " +
                       describe(t) + ", still live at that step";
            }
        }
        return {};
    }

private:
    struct Life {
        int birth = 0, death = 0;
    };

    // node may take over owner's storage: the op allows it, src[0] is (a view at offset 0 of) owner
    // with node's exact layout, no other source reads owner, and node sits where src[0] is.
    bool allowed_inplace(const ggml_tensor * node, const ggml_tensor * owner) const {
        if (node->view_src || !ggml_op_can_inplace(node)) return false;
        const ggml_tensor * src = node->src[0];
        if (root_of(src) != owner || !same_layout(node, src) || node->data != src->data) return false;
        for (int j = 1; j < GGML_MAX_SRC; ++j)
            if (node->src[j] && root_of(node->src[j]) == owner) return false;
        return true;
    }

    std::string describe(const ggml_tensor * t) const {
        std::ostringstream s;
        s << "'" << t->name << "' (" << ggml_op_desc(t) << " " << ggml_type_name(t->type) << " [" << t->ne[0]
          << "," << t->ne[1] << "," << t->ne[2] << "," << t->ne[3] << "], " << ggml_nbytes(t) << " bytes";
        if (const auto it = lifetime_.find(t); it != lifetime_.end())
            s << ", live " << it->second.birth << ".." << it->second.death;
        s << ")";
        return s.str();
    }

    ggml_cgraph * graph_;
    int n_;
    const std::unordered_set<const ggml_tensor *> & placed_;
    std::unordered_map<const ggml_tensor *, Life> lifetime_;
};

// ---- one graph ----------------------------------------------------------------------------------

struct Outcome {
    std::string failure;
    int n_nodes = 0;
    int n_inplace = 0;  // nodes the allocator placed over their src[0]
    bool computed = false;
};

void name_all(ggml_context * ctx) {
    int i = 0;
    for (ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t), ++i)
        if (!t->name[0]) ggml_format_name(t, "t%d", i);
}

// Prints nodes [0, n) with their sources, flags and placement (GGX_GALLOCR_DUMP=1).
void dump(ggml_cgraph * graph, int n) {
    const auto where = [](const ggml_tensor * t) {
        if (!t->data) return std::string("-");
        if (!t->buffer) return std::string("host");
        return std::to_string(static_cast<const char *>(t->data) -
                              static_cast<const char *>(ggml_backend_buffer_get_base(t->buffer))) +
               (ggml_backend_buffer_get_usage(t->buffer) == GGML_BACKEND_BUFFER_USAGE_COMPUTE ? "" : "w");
    };
    for (int i = 0; i < n; ++i) {
        const ggml_tensor * t = ggml_graph_node(graph, i);
        std::printf("%3d %-6s %-10s %-5s [%lld,%lld,%lld,%lld] @%s +%zu flags=%d uses=%d view_of=%s <-", i,
                    t->name, ggml_op_desc(t), ggml_type_name(t->type), (long long)t->ne[0],
                    (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], where(t).c_str(),
                    ggml_nbytes(t), t->flags, ggml_graph_get_use_count(graph, t),
                    t->view_src ? t->view_src->name : "");
        for (const ggml_tensor * s : t->src)
            if (s) std::printf(" %s@%s", s->name, where(s).c_str());
        std::printf("\n");
    }
}

// Computes the graph of seed with every tensor in its own memory; the results, or a failure.
std::string reference(uint32_t seed, std::vector<std::pair<int, std::string>> & out) {
    Context ctx(ggml_init({4 << 20, nullptr, true}));
    Context wctx(ggml_init({1 << 20, nullptr, true}));
    Generator gen(seed, ctx.get(), wctx.get());
    ggml_cgraph * graph = gen.build();
    Buffer weights(ggml_get_first_tensor(wctx.get())
                       ? ggml_backend_alloc_ctx_tensors(wctx.get(), ggx::test::cpu_backend())
                       : nullptr);
    Buffer buffer(ggml_backend_alloc_ctx_tensors(ctx.get(), ggx::test::cpu_backend()));
    if (!buffer) return std::string("reference allocation failed: ") + ggml_backend_get_last_error();
    for (ggml_tensor * t = ggml_get_first_tensor(ctx.get()); t; t = ggml_get_next_tensor(ctx.get(), t)) {
        if (t->view_src && !t->data) ggml_backend_view_init(t);  // views of the weights
    }
    fill_leafs(graph, gen.index_ranges(), seed);
    if (ggml_backend_graph_compute(ggx::test::cpu_backend(), graph) != GGML_STATUS_SUCCESS)
        return std::string("reference compute failed: ") + ggml_backend_get_last_error();
    out = results(graph);
    return {};
}

Outcome check_graph(uint32_t seed, bool compute) {
    Outcome outcome;
    Context ctx(ggml_init({4 << 20, nullptr, true}));
    Context wctx(ggml_init({1 << 20, nullptr, true}));
    Generator gen(seed, ctx.get(), wctx.get());
    ggml_cgraph * graph = gen.build();
    name_all(ctx.get());
    if (!ggml_graph_is_valid(graph)) return {std::string("invalid graph: ") + ggml_get_error(ctx.get())};
    Buffer weights(ggml_get_first_tensor(wctx.get())
                       ? ggml_backend_alloc_ctx_tensors(wctx.get(), ggx::test::cpu_backend())
                       : nullptr);
    const int n_nodes = ggml_graph_n_nodes(graph);
    outcome.n_nodes = n_nodes;

    // Every 10th graph is allocated as a graph view of a prefix (consumers after it keep tensors alive).
    Rng shape_rng(seed * 2654435761u);
    const bool prefix = seed % 10 == 3 && n_nodes > 1;
    const int n =
        prefix ? 1 + static_cast<int>(shape_rng.gen() % static_cast<uint32_t>(n_nodes - 1)) : n_nodes;
    ggml_cgraph * target = prefix ? ggml_graph_view(ctx.get(), graph, 0, n) : graph;

    std::unordered_set<const ggml_tensor *> placed;
    std::unordered_map<const ggml_tensor *, void *> before;
    for (ggml_tensor * t = ggml_get_first_tensor(ctx.get()); t; t = ggml_get_next_tensor(ctx.get(), t))
        if (!t->data && !t->buffer) placed.insert(t);
    for (ggml_tensor * t = ggml_get_first_tensor(wctx.get()); t; t = ggml_get_next_tensor(wctx.get(), t))
        before[t] = t->data;

    Gallocr galloc(ggml_gallocr_new(ggml_backend_cpu_buffer_type()));
    size_t measured = 0;
    ggml_gallocr_measure_n(galloc.get(), target, nullptr, nullptr, &measured);
    if (!ggml_gallocr_alloc_graph(galloc.get(), target))
        return {std::string("ggml_gallocr_alloc_graph failed: ") + ggml_backend_get_last_error()};
    if (ggml_gallocr_get_buffer_size(galloc.get(), 0) != measured)
        return {"buffer size " + std::to_string(ggml_gallocr_get_buffer_size(galloc.get(), 0)) +
                " differs from the measured " + std::to_string(measured)};
    for (const auto & [t, data] : before)
        if (t->data != data) return {"weight '" + std::string(t->name) + "' was moved"};
    // Only tensors the allocated nodes reach are expected to get storage.
    std::unordered_set<const ggml_tensor *> reached;
    for (int i = 0; i < n; ++i) {
        const ggml_tensor * node = ggml_graph_node(graph, i);
        for (const ggml_tensor * t = node; t; t = t->view_src)
            reached.insert(t);
        for (const ggml_tensor * s : node->src)
            for (const ggml_tensor * t = s; t; t = t->view_src)
                reached.insert(t);
    }
    std::erase_if(placed, [&](const ggml_tensor * t) { return !reached.count(t); });
    outcome.failure = Verifier(graph, n, placed).run();
    for (int i = 0; i < n; ++i) {
        const ggml_tensor * t = ggml_graph_node(graph, i);
        outcome.n_inplace += !t->view_src && t->src[0] && ggml_nbytes(t) > 0 && t->data == t->src[0]->data;
    }
    if (env_or("GGX_GALLOCR_DUMP", 0)) dump(graph, n);
    if (!outcome.failure.empty() || !compute || prefix) return outcome;

    std::vector<std::pair<int, std::string>> expected;
    if (std::string why = reference(seed, expected); !why.empty()) return {why};
    fill_leafs(graph, gen.index_ranges(), seed);
    if (ggml_backend_graph_compute(ggx::test::cpu_backend(), graph) != GGML_STATUS_SUCCESS)
        return {std::string("compute failed: ") + ggml_backend_get_last_error()};
    const auto actual = results(graph);
    if (actual.size() != expected.size()) return {"different result sets"};
    for (size_t i = 0; i < actual.size(); ++i) {
        if (actual[i] != expected[i]) {
            const ggml_tensor * t = ggml_graph_node(graph, actual[i].first);
            return {"(c) result node " + std::to_string(actual[i].first) + " '" + t->name + "' (" +
                    ggml_op_desc(t) + ") differs from the allocation without reuse"};
        }
    }
    outcome.computed = true;
    return outcome;
}

TEST(GallocrProperty, RandomGraphsNeverOverlapLiveTensorsAndComputeTheSame) {
    const long n_graphs = env_or("GGX_GALLOCR_GRAPHS", 10000);
    const auto first_seed = static_cast<uint32_t>(env_or("GGX_GALLOCR_SEED", 1));
    const long compute_every = std::max(1L, env_or("GGX_GALLOCR_COMPUTE_EVERY", 1));
    long nodes = 0, inplace = 0, computed = 0, failures = 0;
    for (long k = 0; k < n_graphs && failures < 5; ++k) {
        const uint32_t seed = first_seed + static_cast<uint32_t>(k);
        const Outcome outcome = check_graph(seed, k % compute_every == 0);
        nodes += outcome.n_nodes;
        inplace += outcome.n_inplace;
        computed += outcome.computed;
        if (!outcome.failure.empty()) {
            ++failures;
            ADD_FAILURE() << Rng(seed).trace() << ": " << outcome.failure
                          << " (replay: GGX_GALLOCR_SEED=" << seed << " GGX_GALLOCR_GRAPHS=1)";
        }
    }
    std::printf("%ld graphs, %ld nodes (%ld placed in place), %ld computed and compared\n", n_graphs, nodes,
                inplace, computed);
    EXPECT_GE(computed, n_graphs / compute_every / 2);
    EXPECT_GT(inplace, n_graphs / 10);  // the in-place path is exercised
}

}  // namespace
