// ggml_ext_check_kernel: one kernel run alone, case by case and layout by layout, inside guard bytes,
// against the device's native implementation or the caller's reference (ggml-ext.h, "Conformance
// check of a kernel").
#include <ggml-ext.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/internal.h"
#include "ext/registry.h"
#include "interface/backend-impl.h"
#include "runtime/plan.h"

namespace ggx::ext {
namespace {

// Guard bytes before and after every region (inputs, output, workspace), at least.
constexpr size_t kGuardBytes = 128;
constexpr size_t kContextTensors = 64;
constexpr uint8_t kUnwritten = 0xFF;  // output (NaN for float types) and second-run workspace filler
constexpr uint8_t kGapFiller = 0x5A;  // bytes of an input's storage outside its view

size_t align_up(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

uint8_t guard_pattern(size_t offset) { return static_cast<uint8_t>(((offset * 0x9E3779B1u) >> 11) ^ 0xC3); }

// splitmix64: the same seed gives the same values on every platform.
class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed) {}
    uint64_t next() {
        uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double uniform(double lo, double hi) {
        return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53;
    }

private:
    uint64_t state_;
};

int64_t n_elements(const int64_t ne[GGML_MAX_DIMS]) { return ne[0] * ne[1] * ne[2] * ne[3]; }

std::string shape_text(const int64_t ne[GGML_MAX_DIMS]) {
    char text[96];
    std::snprintf(text, sizeof text, "[%lld, %lld, %lld, %lld]", static_cast<long long>(ne[0]),
                  static_cast<long long>(ne[1]), static_cast<long long>(ne[2]),
                  static_cast<long long>(ne[3]));
    return text;
}

std::string coordinates(const int64_t ne[GGML_MAX_DIMS], int64_t index) {
    int64_t i[GGML_MAX_DIMS];
    for (int d = 0; d < GGML_MAX_DIMS; ++d) {
        i[d] = ne[d] > 0 ? index % ne[d] : 0;
        index = ne[d] > 0 ? index / ne[d] : 0;
    }
    return shape_text(i);
}

// Calls f(row byte offset from the tensor's data, row index) for every row of t (ne0 elements).
template <class F>
void for_each_row(const ggml_tensor * t, F && f) {
    int64_t row = 0;
    for (int64_t i3 = 0; i3 < t->ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < t->ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < t->ne[1]; ++i1)
                f(static_cast<size_t>(i1) * t->nb[1] + static_cast<size_t>(i2) * t->nb[2] +
                      static_cast<size_t>(i3) * t->nb[3],
                  row++);
}

// Writes values (logical order) into the bytes of t whose data starts at base, converting to t's type.
void write_values(uint8_t * base, const ggml_tensor * t, const std::vector<double> & values) {
    const int64_t ne0 = t->ne[0];
    const size_t esize = ggml_type_size(t->type);
    const bool dense_rows = ggml_is_quantized(t->type) || t->nb[0] == esize;
    std::vector<float> row_values(static_cast<size_t>(ne0));
    std::vector<uint8_t> one(esize);
    for_each_row(t, [&](size_t offset, int64_t row) {
        for (int64_t i = 0; i < ne0; ++i)
            row_values[static_cast<size_t>(i)] =
                static_cast<float>(values[static_cast<size_t>(row * ne0 + i)]);
        if (dense_rows) {
            ggml_quantize_row(t->type, row_values.data(), base + offset, ne0);
            return;
        }
        for (int64_t i = 0; i < ne0; ++i) {
            ggml_quantize_row(t->type, &row_values[static_cast<size_t>(i)], one.data(), 1);
            std::memcpy(base + offset + static_cast<size_t>(i) * t->nb[0], one.data(), esize);
        }
    });
}

// The values of t (logical order) from the bytes whose data starts at base.
std::vector<double> read_values(const uint8_t * base, const ggml_tensor * t) {
    const int64_t ne0 = t->ne[0];
    const size_t esize = ggml_type_size(t->type);
    const bool dense_rows = ggml_is_quantized(t->type) || t->nb[0] == esize;
    std::vector<double> values(static_cast<size_t>(std::max<int64_t>(n_elements(t->ne), 0)));
    std::vector<float> row_values(static_cast<size_t>(ne0));
    for_each_row(t, [&](size_t offset, int64_t row) {
        if (dense_rows) {
            ggml_dequantize_row(t->type, base + offset, row_values.data(), ne0);
        } else {
            for (int64_t i = 0; i < ne0; ++i)
                ggml_dequantize_row(t->type, base + offset + static_cast<size_t>(i) * t->nb[0],
                                    &row_values[static_cast<size_t>(i)], 1);
        }
        for (int64_t i = 0; i < ne0; ++i)
            values[static_cast<size_t>(row * ne0 + i)] = row_values[static_cast<size_t>(i)];
    });
    return values;
}

// "" when actual matches expected within max_nmse (0: exactly) with NaN/Inf positions agreeing.
std::string compare(const std::vector<double> & actual, const std::vector<double> & expected,
                    const int64_t ne[GGML_MAX_DIMS], double max_nmse) {
    double num = 0.0, den = 0.0, worst_diff = -1.0;
    size_t worst = 0;
    char text[256];
    for (size_t i = 0; i < actual.size(); ++i) {
        const double a = actual[i], e = expected[i];
        if (!std::isfinite(a) || !std::isfinite(e)) {
            if ((std::isnan(a) && std::isnan(e)) || a == e) continue;
            std::snprintf(text, sizeof text, "element %s is %.9g, expected %.9g (NaN/Inf must agree)",
                          coordinates(ne, static_cast<int64_t>(i)).c_str(), a, e);
            return text;
        }
        num += (a - e) * (a - e);
        den += e * e;
        if (std::fabs(a - e) > worst_diff) {
            worst_diff = std::fabs(a - e);
            worst = i;
        }
    }
    const double nmse = den > 0.0 ? num / den : (num > 0.0 ? INFINITY : 0.0);
    if (max_nmse == 0.0 ? num == 0.0 : nmse <= max_nmse) return "";
    std::snprintf(text, sizeof text, "nmse %.3g > max_nmse %.3g; worst element %s is %.9g, expected %.9g",
                  nmse, max_nmse, coordinates(ne, static_cast<int64_t>(worst)).c_str(), actual[worst],
                  expected[worst]);
    return text;
}

// How one input is laid out in memory.
enum class Layout { kContiguous, kPermuted, kStrided };

struct Variant {
    std::string name;
    std::vector<Layout> layouts;  // per input
};

std::vector<Variant> variants_of(const ggml_ext_check_case & c) {
    const size_t n = static_cast<size_t>(c.n_inputs);
    std::vector<Variant> variants{{"contiguous", std::vector<Layout>(n, Layout::kContiguous)}};
    if (!c.non_contiguous || n == 0) return variants;
    for (const auto & [layout, name] :
         {std::pair{Layout::kPermuted, "permuted"}, {Layout::kStrided, "strided"}}) {
        variants.push_back({std::string(name) + " (all inputs)", std::vector<Layout>(n, layout)});
        if (n == 1) continue;
        for (size_t i = 0; i < n; ++i) {
            Variant v{std::string(name) + " (input " + std::to_string(i) + " only)",
                      std::vector<Layout>(n, Layout::kContiguous)};
            v.layouts[i] = layout;
            variants.push_back(std::move(v));
        }
    }
    return variants;
}

// A leaf of logical shape ne laid out as layout: the leaf itself or a view of a larger/permuted leaf.
ggml_tensor * make_input(ggml_context * ctx, ggml_type type, const int64_t ne[GGML_MAX_DIMS], Layout layout,
                         int index) {
    ggml_tensor * storage = nullptr;
    ggml_tensor * input = nullptr;
    switch (layout) {
        case Layout::kContiguous:
            input = storage = ggml_new_tensor_4d(ctx, type, ne[0], ne[1], ne[2], ne[3]);
            break;
        case Layout::kPermuted:
            // Reverse the dimensions (quantized: keep dim 0, whose rows must stay dense).
            if (ggml_is_quantized(type)) {
                storage = ggml_new_tensor_4d(ctx, type, ne[0], ne[3], ne[2], ne[1]);
                input = storage ? ggml_permute(ctx, storage, 0, 3, 2, 1) : nullptr;
            } else {
                storage = ggml_new_tensor_4d(ctx, type, ne[3], ne[2], ne[1], ne[0]);
                input = storage ? ggml_permute(ctx, storage, 3, 2, 1, 0) : nullptr;
            }
            break;
        case Layout::kStrided: {
            // Gaps after every row and plane, and an offset of one row and one element (block).
            const int64_t pad = ggml_blck_size(type);
            storage = ggml_new_tensor_4d(ctx, type, ne[0] + pad, ne[1] + 1, ne[2] + 1, ne[3]);
            if (storage) {
                input = ggml_view_4d(ctx, storage, ne[0], ne[1], ne[2], ne[3], storage->nb[1], storage->nb[2],
                                     storage->nb[3], storage->nb[1] + ggml_row_size(type, pad));
            }
            break;
        }
    }
    if (storage) ggml_format_name(storage, input == storage ? "input%d" : "input%d storage", index);
    if (input && input != storage) ggml_format_name(input, "input%d", index);
    return input;
}

// One guarded device buffer: every storage owner of a context and the workspace, each between guards.
class Arena {
public:
    struct Region {
        const ggml_tensor * owner;  // nullptr: the workspace
        size_t offset, size;
    };

    ~Arena() {
        ggml_backend_buffer_free(buffer_);
        ggml_free(whole_ctx_);
    }

    // "" on success, else why not.
    std::string place(ggml_backend_buffer_type_t buft, ggml_context * ctx, size_t workspace_bytes) {
        const size_t alignment = std::max<size_t>(ggml_backend_buft_get_alignment(buft), 1);
        size_t cursor = 0;
        const auto add = [&](const ggml_tensor * owner, size_t size) {
            const size_t offset = align_up(cursor + kGuardBytes, alignment);
            regions_.push_back({owner, offset, size});
            cursor = offset + size;
        };
        for (ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t))
            if (!t->view_src) add(t, ggml_backend_buft_get_alloc_size(buft, t));
        if (workspace_bytes > 0) add(nullptr, workspace_bytes);
        const size_t total = align_up(cursor + kGuardBytes, alignment);
        buffer_ = ggml_backend_buft_alloc_buffer(buft, total);
        if (!buffer_)
            return "cannot allocate " + std::to_string(total) + " bytes: " + ggml_backend_get_last_error();
        whole_ctx_ = ggml_init({ggml_tensor_overhead() + 256, nullptr, true});
        if (whole_ctx_) ggml_set_abort_on_error(whole_ctx_, false);
        whole_ =
            whole_ctx_ ? ggml_new_tensor_1d(whole_ctx_, GGML_TYPE_I8, static_cast<int64_t>(total)) : nullptr;
        auto * base = static_cast<char *>(ggml_backend_buffer_get_base(buffer_));
        if (!whole_ || ggml_backend_tensor_alloc(buffer_, whole_, base) != GGML_STATUS_SUCCESS)
            return std::string("cannot place the guarded buffer: ") + ggml_backend_get_last_error();
        for (const Region & r : regions_) {
            if (!r.owner) continue;
            if (ggml_backend_tensor_alloc(buffer_, const_cast<ggml_tensor *>(r.owner), base + r.offset) !=
                GGML_STATUS_SUCCESS)
                return std::string("cannot place '") + r.owner->name + "': " + ggml_backend_get_last_error();
        }
        for (ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
            if (t->view_src && ggml_backend_view_init(t) != GGML_STATUS_SUCCESS)
                return std::string("cannot place the view '") + t->name +
                       "': " + ggml_backend_get_last_error();
        }
        image_.assign(total, 0);
        for (size_t i = 0; i < total; ++i)
            image_[i] = guard_pattern(i);
        return "";
    }

    const Region * region_of(const ggml_tensor * owner) const {
        for (const Region & r : regions_)
            if (r.owner == owner) return &r;
        return nullptr;
    }
    uint8_t * host_data(const ggml_tensor * t) {
        const ggml_tensor * owner = t->view_src ? t->view_src : t;
        return image_.data() + region_of(owner)->offset + (t->view_src ? t->view_offs : 0);
    }
    void fill(const ggml_tensor * owner, uint8_t value) {
        if (const Region * r = region_of(owner))
            std::fill_n(image_.begin() + static_cast<long>(r->offset), r->size, value);
    }
    std::vector<uint8_t> bytes_of(const ggml_tensor * owner) const {
        const Region * r = region_of(owner);
        return {image_.begin() + static_cast<long>(r->offset),
                image_.begin() + static_cast<long>(r->offset + r->size)};
    }
    ggml_backend_buffer_t buffer() const { return buffer_; }
    void * workspace_data() const {
        const Region * r = region_of(nullptr);
        return r ? static_cast<char *>(ggml_backend_buffer_get_base(buffer_)) + r->offset : nullptr;
    }

    bool upload() {
        return ggml_ext_backend_tensor_set(whole_, image_.data(), 0, image_.size()) == GGML_STATUS_SUCCESS;
    }
    bool download() {
        return ggml_ext_backend_tensor_get(whole_, image_.data(), 0, image_.size()) == GGML_STATUS_SUCCESS;
    }

    // "" when every guard byte still holds its pattern, else which region's guard was overwritten.
    std::string check_guards(const ggml_tensor * output) const {
        size_t begin = 0;
        const Region * prev = nullptr;
        const auto describe_region = [&](const Region * r) {
            if (!r->owner) return "the workspace request (" + std::to_string(r->size) + " bytes)";
            if (r->owner == output) return std::string("the output '") + r->owner->name + "'";
            return std::string("input storage '") + r->owner->name + "'";
        };
        const auto scan = [&](size_t end, const Region * next) -> std::string {
            for (size_t i = begin; i < end; ++i) {
                if (image_[i] == guard_pattern(i)) continue;
                // Name the nearer neighbour: past the end of prev, or before the start of next.
                if (prev && (!next || i - begin < next->offset - i))
                    return "wrote past the end of " + describe_region(prev) + ": the guard byte at end + " +
                           std::to_string(i - begin) + " was overwritten";
                if (next)
                    return "wrote before the start of " + describe_region(next) +
                           ": the guard byte at start - " + std::to_string(next->offset - i) +
                           " was overwritten";
                return "overwrote guard byte " + std::to_string(i) + " of the check's buffer";
            }
            return "";
        };
        for (const Region & r : regions_) {
            if (std::string bad = scan(r.offset, &r); !bad.empty()) return bad;
            prev = &r;
            begin = r.offset + r.size;
        }
        return scan(image_.size(), nullptr);
    }

private:
    std::vector<Region> regions_;
    std::vector<uint8_t> image_;
    ggml_backend_buffer_t buffer_ = nullptr;
    ggml_context * whole_ctx_ = nullptr;  // one I8 tensor spanning the buffer, for transfers
    ggml_tensor * whole_ = nullptr;
};

struct ContextDeleter {
    void operator()(ggml_context * ctx) const { ggml_free(ctx); }
};

class Checker {
public:
    Checker(const ggml_ext_check_params & p, ggml_backend_t backend, const ext::KernelRegistration & kernel)
        : p_(p), backend_(backend), kernel_(kernel) {}

    // Runs case index; true when it passed. Failures go to failure().
    bool run_case(int index) {
        const ggml_ext_check_case & c = p_.cases[index];
        case_name_ = c.name ? std::string(c.name) : "case " + std::to_string(index);
        if (std::string bad = validate(c); !bad.empty()) return failure("", bad);
        // Logical input values: the same in every layout.
        Rng rng(Rng(p_.seed ^ (0xD1B54A32D192ED03ull * static_cast<uint64_t>(index + 1))).next());
        values_.assign(static_cast<size_t>(c.n_inputs), {});
        for (int i = 0; i < c.n_inputs; ++i) {
            double lo = c.range[i][0], hi = c.range[i][1];
            if (lo == 0.0 && hi == 0.0) lo = -1.0, hi = 1.0;
            values_[i].resize(static_cast<size_t>(n_elements(c.ne[i])));
            for (double & v : values_[i])
                v = rng.uniform(lo, hi);
        }
        expected_.reset();
        bool passed = true;
        for (const Variant & v : variants_of(c)) {
            if (!run_variant(c, v)) {
                passed = false;
                if (v.name == "contiguous") break;  // the other layouts would fail the same way
            }
        }
        return passed;
    }

    const std::string & first_failure() const { return first_failure_; }
    int n_runs() const { return n_runs_; }
    int n_skipped() const { return n_skipped_; }

private:
    std::string validate(const ggml_ext_check_case & c) const {
        if (c.struct_size < sizeof(ggml_ext_check_case) || c.version < GGML_EXT_CHECK_CASE_VERSION)
            return "the case's struct_size/version is older than this runtime's";
        if (c.n_inputs < 0 || c.n_inputs > GGML_MAX_SRC)
            return "n_inputs " + std::to_string(c.n_inputs) + " is not in [0, " +
                   std::to_string(GGML_MAX_SRC) + "]";
        for (int i = 0; i < c.n_inputs; ++i) {
            const std::string where = "input " + std::to_string(i) + ": ";
            if (c.types[i] < 0 || c.types[i] >= GGML_TYPE_COUNT || ggml_type_size(c.types[i]) == 0)
                return where + "not a ggml_type";
            if (std::any_of(c.ne[i], c.ne[i] + GGML_MAX_DIMS, [](int64_t n) { return n < 1; }))
                return where + "every dimension must be at least 1, got " + shape_text(c.ne[i]);
            if (c.ne[i][0] % ggml_blck_size(c.types[i]) != 0)
                return where + "ne0 " + std::to_string(c.ne[i][0]) +
                       " is not a multiple of the block size of " + ggml_type_name(c.types[i]);
            if (!(c.range[i][0] <= c.range[i][1])) return where + "range must satisfy lo <= hi";
        }
        if (!c.build && kernel_.desc.op != GGML_OP_CUSTOM)
            return std::string("an override of ") + ggml_op_name(kernel_.desc.op) +
                   " needs the case's build callback";
        return "";
    }

    bool failure(const std::string & variant, const std::string & message) {
        std::string text = "kernel '" + kernel_.name + "', " + case_name_ +
                           (variant.empty() ? "" : ", " + variant) + ": " + message;
        if (first_failure_.empty()) first_failure_ = text;
        if (p_.log) p_.log(text.c_str(), p_.log_user_data);
        return false;
    }

    // The node of the case with inputs laid out as v; "" or why it could not be built.
    std::string build_node(const ggml_ext_check_case & c, const Variant & v, ggml_context * ctx,
                           std::vector<ggml_tensor *> & inputs, ggml_tensor *& node) {
        inputs.assign(static_cast<size_t>(c.n_inputs), nullptr);
        for (int i = 0; i < c.n_inputs; ++i) {
            inputs[i] = make_input(ctx, c.types[i], c.ne[i], v.layouts[i], i);
            if (!inputs[i] || !std::equal(inputs[i]->ne, inputs[i]->ne + GGML_MAX_DIMS, c.ne[i]))
                return std::string("cannot lay out input ") + std::to_string(i) + ": " +
                       (ggml_get_error(ctx) ? ggml_get_error(ctx) : "wrong shape");
        }
        if (c.build) {
            node = c.build(ctx, inputs.data(), c.n_inputs, c.build_user_data);
        } else {
            node = ggml_ext_op_create(ctx, kernel_.desc.custom_op, inputs.data(), c.n_inputs, c.attrs,
                                      c.attr_size);
        }
        if (!node) {
            const char * error = ggml_get_error(ctx);
            return std::string("building the node failed: ") +
                   (error ? error : "the build callback returned NULL");
        }
        if (!node->name[0]) ggml_set_name(node, "output");
        return "";
    }

    // "" when node is one the kernel serves, built as the runtime requires; else what is wrong.
    std::string check_node(const ggml_tensor * node, ggml_cgraph * graph) const {
        const ggml_ext_op * custom = ggml_ext_node_op(node);
        if (kernel_.desc.op == GGML_OP_CUSTOM ? custom != kernel_.desc.custom_op
                                              : node->op != kernel_.desc.op)
            return "the case's node " + describe(node) + " is not an op the kernel computes (" +
                   (kernel_.desc.op == GGML_OP_CUSTOM ? kernel_.desc.custom_op->name
                                                      : ggml_op_name(kernel_.desc.op)) +
                   ")";
        if (node->view_src)
            return "the node " + describe(node) + " is a view or in-place: never dispatched to kernels";
        for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
            const ggml_tensor * other = ggml_graph_node(graph, i);
            if (other != node && !core::is_layout_op(other->op))
                return "the case's build callback added another computing node " + describe(other);
        }
        if (!custom) return "";
        if (!ggml_is_contiguous(node)) return "the custom node is not contiguous";
        ggml_type type = GGML_TYPE_COUNT;
        int64_t ne[GGML_MAX_DIMS] = {1, 1, 1, 1};
        char why[256] = "";
        size_t attr_size = 0;
        const void * attrs = ggml_ext_node_attrs(node, &attr_size);
        ggml_tensor * srcs[GGML_MAX_SRC] = {};
        int n_src = 0;
        while (n_src < GGML_MAX_SRC && node->src[n_src]) {
            srcs[n_src] = node->src[n_src];
            ++n_src;
        }
        if (!custom->desc.infer(srcs, n_src, attrs, attr_size, &type, ne, why, sizeof why,
                                custom->desc.user_data))
            return "the operator's inference rejected the inputs of a node it had accepted";
        if (type != node->type || !std::equal(ne, ne + GGML_MAX_DIMS, node->ne))
            return std::string("the node is ") + ggml_type_name(node->type) + " " + shape_text(node->ne) +
                   " but the operator's inference now gives " + ggml_type_name(type) + " " + shape_text(ne);
        return "";
    }

    // Expected output values from the reference callback, fed the inputs as stored.
    std::string reference_values(const ggml_tensor * node, const std::vector<ggml_tensor *> & inputs,
                                 Arena & arena) {
        std::vector<std::vector<double>> stored;
        std::vector<const double *> pointers;
        for (const ggml_tensor * input : inputs)
            stored.push_back(read_values(arena.host_data(input), input));
        for (const auto & s : stored)
            pointers.push_back(s.data());
        std::vector<double> out(static_cast<size_t>(n_elements(node->ne)), 0.0);
        if (!p_.reference(node, pointers.data(), out.data(), p_.reference_user_data))
            return "the reference callback failed";
        expected_ = std::move(out);
        return "";
    }

    // One layout of the case; true when it passed or the kernel's supports rejected it.
    bool run_variant(const ggml_ext_check_case & c, const Variant & v) {
        const bool contiguous = v.name == "contiguous";
        std::unique_ptr<ggml_context, ContextDeleter> ctx(
            ggml_init({ggml_tensor_overhead() * kContextTensors + ggml_graph_overhead_custom(kContextTensors, false),
                       nullptr, true}));
        if (!ctx) return failure(v.name, "cannot create a context");
        // A case the operator rejects is a skip or a failure of the check, never an abort.
        ggml_set_abort_on_error(ctx.get(), false);
        std::vector<ggml_tensor *> inputs;
        ggml_tensor * node = nullptr;
        if (std::string bad = build_node(c, v, ctx.get(), inputs, node); !bad.empty()) {
            if (contiguous || c.build) return failure(v.name, bad);
            ++n_skipped_;  // the operator's inference rejects this layout
            return true;
        }
        ggml_cgraph * graph = ggml_new_graph_custom(ctx.get(), kContextTensors, false);
        if (graph) ggml_build_forward_expand(graph, node);
        if (!graph || !ggml_graph_is_valid(graph)) return failure(v.name, "cannot build the graph");
        if (std::string bad = check_node(node, graph); !bad.empty()) return failure(v.name, bad);

        ggml_backend_dev_t device = p_.device;
        if (!kernel_.desc.supports(device, node, kernel_.desc.user_data)) {
            if (contiguous) return failure(v.name, "supports rejects the case's node " + describe(node));
            ++n_skipped_;
            return true;
        }
        const std::string liar =
            contiguous
                ? ""
                : " (supports accepted this layout, so the kernel must handle it or supports reject it)";

        // Prepared before any tensor has an address: every data pointer is NULL here.
        backend::ExecutionPlan plan;
        const int n_nodes = ggml_graph_n_nodes(graph);
        if (!plan.build_with_kernel(backend_, graph, 0, n_nodes, node, kernel_.kernel))
            return failure(v.name, std::string("prepare failed: ") + ggml_backend_get_last_error());
        const size_t workspace_bytes = plan.workspace_bytes();

        Arena arena;
        if (std::string bad =
                arena.place(ggml_backend_get_default_buffer_type(backend_), ctx.get(), workspace_bytes);
            !bad.empty())
            return failure(v.name, bad);
        for (size_t i = 0; i < inputs.size(); ++i) {
            const ggml_tensor * owner = inputs[i]->view_src ? inputs[i]->view_src : inputs[i];
            arena.fill(owner, kGapFiller);
            write_values(arena.host_data(inputs[i]), inputs[i], values_[i]);
        }
        arena.fill(node, kUnwritten);
        arena.fill(nullptr, 0);
        if (!arena.upload()) return failure(v.name, std::string("upload: ") + ggml_backend_get_last_error());

        if (!expected_) {
            if (ggml_ext_dev_supports_native_op(device, node)) {
                if (backend::compute_native_range(backend_, graph, 0, n_nodes) != GGML_STATUS_SUCCESS)
                    return failure(v.name, std::string("the native computation failed: ") +
                                               ggml_backend_get_last_error());
                ggml_backend_synchronize(backend_);
                if (!arena.download())
                    return failure(v.name, std::string("download: ") + ggml_backend_get_last_error());
                expected_ = read_values(arena.host_data(node), node);
                expected_from_ = "native";
                arena.fill(node, kUnwritten);
                if (!arena.upload())
                    return failure(v.name, std::string("upload: ") + ggml_backend_get_last_error());
            } else if (p_.reference) {
                if (std::string bad = reference_values(node, inputs, arena); !bad.empty())
                    return failure(v.name, bad);
                expected_from_ = "the reference";
            } else {
                return failure(v.name,
                               "no expected values: the device's native implementation does not support " +
                                   describe(node) + " and no reference callback was given");
            }
        }

        std::vector<std::vector<uint8_t>> input_bytes;
        std::vector<const ggml_tensor *> owners;
        for (const ggml_tensor * input : inputs) {
            const ggml_tensor * owner = input->view_src ? input->view_src : input;
            if (std::find(owners.begin(), owners.end(), owner) != owners.end()) continue;
            owners.push_back(owner);
            input_bytes.push_back(arena.bytes_of(owner));
        }

        for (int run = 0; run < 2; ++run) {
            const std::string when =
                run == 0 ? "" : " on the second execution (workspace overwritten with 0xFF bytes before it)";
            if (run == 1) {
                arena.fill(node, kUnwritten);
                arena.fill(nullptr, kUnwritten);
                if (!arena.upload())
                    return failure(v.name, std::string("upload: ") + ggml_backend_get_last_error());
            }
            const ggml_status status = plan.run(
                0, n_nodes,
                {workspace_bytes ? arena.buffer() : nullptr, arena.workspace_data(), workspace_bytes});
            ggml_backend_synchronize(backend_);
            if (status != GGML_STATUS_SUCCESS)
                return failure(v.name, "execute failed" + when + ": " + ggml_backend_get_last_error() + liar);
            if (!arena.download())
                return failure(v.name, std::string("download: ") + ggml_backend_get_last_error());
            if (std::string bad = arena.check_guards(node); !bad.empty())
                return failure(v.name, "out-of-bounds write" + when + ": the kernel " + bad);
            for (size_t i = 0; i < owners.size(); ++i) {
                const std::vector<uint8_t> now = arena.bytes_of(owners[i]);
                const auto diff = std::mismatch(now.begin(), now.end(), input_bytes[i].begin());
                if (diff.first != now.end())
                    return failure(v.name, "modified input storage '" + std::string(owners[i]->name) + "'" +
                                               when + " (first changed byte at offset " +
                                               std::to_string(diff.first - now.begin()) +
                                               "); inputs are read-only");
            }
            const std::vector<double> actual = read_values(arena.host_data(node), node);
            if (std::string bad = compare(actual, *expected_, node->ne, p_.max_nmse); !bad.empty()) {
                return failure(v.name,
                               "wrong result" + when + " against " + expected_from_ + ": " + bad +
                                   (run == 1 ? "; the kernel depends on workspace contents, which are "
                                               "not preserved between calls"
                                             : "") +
                                   liar);
            }
        }
        ++n_runs_;
        return true;
    }

    const ggml_ext_check_params & p_;
    ggml_backend_t backend_;
    const ext::KernelRegistration & kernel_;
    std::string case_name_;
    std::vector<std::vector<double>> values_;
    std::optional<std::vector<double>> expected_;
    std::string expected_from_;
    std::string first_failure_;
    int n_runs_ = 0, n_skipped_ = 0;
};

// "" when the parameters can be checked, else why not.
std::string validate_params(const ggml_ext_check_params * p) {
    if (!p) return "the parameters are NULL";
    if (p->struct_size < sizeof(ggml_ext_check_params) || p->version < GGML_EXT_CHECK_PARAMS_VERSION)
        return "params struct_size " + std::to_string(p->struct_size) + " / version " +
               std::to_string(p->version) + " is older than this runtime's (" +
               std::to_string(sizeof(ggml_ext_check_params)) + " / " +
               std::to_string(GGML_EXT_CHECK_PARAMS_VERSION) + ")";
    if (!p->device) return "the device is NULL";
    if (p->backend && ggml_backend_get_device(p->backend) != p->device)
        return std::string("the backend '") + ggml_backend_name(p->backend) + "' is not on the device '" +
               ggml_backend_dev_name(p->device) + "'";
    const ggml_ext_kernel_desc * k = p->kernel;
    if (!k) return "the kernel descriptor is NULL";
    if (k->struct_size < sizeof(ggml_ext_kernel_desc) || k->version < GGML_EXT_KERNEL_DESC_VERSION)
        return "the kernel descriptor's struct_size/version is older than this runtime's";
    if (!k->name || !k->name[0]) return "the kernel has no name";
    if (!k->supports || !k->execute)
        return std::string("kernel '") + k->name + "': supports and execute are required";
    if (k->op < 0 || k->op >= GGML_OP_COUNT)
        return std::string("kernel '") + k->name + "': op is not a ggml_op";
    if ((k->op == GGML_OP_CUSTOM) != (k->custom_op != nullptr))
        return std::string("kernel '") + k->name +
               "': custom_op must be set exactly when op is GGML_OP_CUSTOM";
    if (p->n_cases < 1 || !p->cases) return "no cases";
    if (!(p->max_nmse >= 0.0)) return "max_nmse must be >= 0";
    return "";
}

void copy_message(char (&to)[512], const std::string & from) {
    const size_t n = std::min(from.size(), sizeof to - 1);
    std::memcpy(to, from.data(), n);
    to[n] = '\0';
}

}  // namespace
}  // namespace ggx::ext

extern "C" bool ggml_ext_check_kernel(const ggml_ext_check_params * params, ggml_ext_check_report * report) {
    using namespace ggx::ext;
    ggml_ext_check_report local{};
    ggml_ext_check_report & r =
        report && report->struct_size >= sizeof(ggml_ext_check_report) ? *report : local;
    r.n_cases = r.n_passed = r.n_runs = r.n_skipped = 0;
    r.first_failure[0] = '\0';
    const auto refuse = [&](const std::string & message) {
        const std::string text = "ggml_ext_check_kernel: " + message;
        copy_message(r.first_failure, text);
        ggx::backend::set_last_error(text);
        if (params && params->struct_size >= sizeof(ggml_ext_check_params) && params->log)
            params->log(text.c_str(), params->log_user_data);
        return false;
    };
    if (report && report->struct_size < sizeof(ggml_ext_check_report))
        return refuse("the report's struct_size is older than this runtime's");
    if (std::string bad = validate_params(params); !bad.empty()) return refuse(bad);
    try {
        const ggx::ext::KernelRegistration kernel(*params->kernel, 0);
        std::unique_ptr<ggml_backend, decltype(&ggml_backend_free)> owned(nullptr, &ggml_backend_free);
        ggml_backend_t backend = params->backend;
        if (!backend) {
            owned.reset(ggml_backend_dev_init(params->device, nullptr));
            if (!owned)
                return refuse(std::string("cannot create a backend on '") +
                              ggml_backend_dev_name(params->device) + "': " + ggml_backend_get_last_error());
            backend = owned.get();
        }
        Checker checker(*params, backend, kernel);
        for (int i = 0; i < params->n_cases; ++i) {
            ++r.n_cases;
            if (checker.run_case(i)) ++r.n_passed;
        }
        r.n_runs = checker.n_runs();
        r.n_skipped = checker.n_skipped();
        copy_message(r.first_failure, checker.first_failure());
    } catch (const std::exception & e) {
        return refuse(std::string("exception: ") + e.what());
    }
    return r.n_passed == r.n_cases;
}
