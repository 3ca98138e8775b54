// Case registry, input layouts and name formatting.
#include "case.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace ggx::ops {

const char * layout_name(Layout layout) {
    switch (layout) {
        case Layout::Contiguous:
            return "contiguous";
        case Layout::Transposed:
            return "transposed";
        case Layout::Permuted:
            return "permuted";
        case Layout::Strided:
            return "strided";
    }
    return "?";
}

std::vector<Layout> layouts_for(ggml_type type) {
    if (ggml_is_quantized(type)) return {Layout::Contiguous, Layout::Strided};
    return {std::begin(kAllLayouts), std::end(kAllLayouts)};
}

namespace {

// ggml_dequantize_row refuses a type ggx has no conversion for.
bool converts(ggml_type type) {
    std::vector<unsigned char> block(ggml_type_size(type));
    std::vector<float> values(static_cast<size_t>(ggml_blck_size(type)));
    return ggml_dequantize_row(type, block.data(), values.data(), ggml_blck_size(type));
}

}  // namespace

const std::vector<ggml_type> & more_block_types() {
    static const std::vector<ggml_type> types = [] {
        std::vector<ggml_type> found;
        for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
            const auto type = static_cast<ggml_type>(t);
            if (ggml_is_quantized(type) && std::ranges::find(kQuantTypes, type) == std::end(kQuantTypes) &&
                kFormatRow % ggml_blck_size(type) == 0 && converts(type))
                found.push_back(type);
        }
        return found;
    }();
    return types;
}

namespace {

// The permuted layout moves every dim: leaf dim i becomes logical dim kAxes[i].
constexpr int kAxes[4] = {2, 0, 3, 1};

ggml_tensor * new_leaf(ggml_context * ctx, ggml_type type, const Shape & ne) {
    return ggml_new_tensor_4d(ctx, type, ne[0], ne[1], ne[2], ne[3]);
}

// A view of a larger leaf: starts one row and one element (or block) in, with a padded row
// length and one spare row per plane, so rows and planes are separated by gaps. An empty view
// starts at the beginning (its owner may be empty too).
ggml_tensor * strided_view(ggml_context * ctx, ggml_tensor * leaf, const Shape & ne) {
    const bool empty = ne[0] * ne[1] * ne[2] * ne[3] == 0;
    const size_t offset = empty ? 0 : leaf->nb[1] + ggml_type_size(leaf->type);  // a row and an element/block
    return ggml_view_4d(ctx, leaf, ne[0], ne[1], ne[2], ne[3], leaf->nb[1], leaf->nb[2], leaf->nb[3], offset);
}

}  // namespace

ggml_tensor * Graph::input(ggml_type type, Shape ne, Layout layout, Gen gen) {
    Shape storage = ne;
    if (layout == Layout::Transposed) storage = {ne[1], ne[0], ne[2], ne[3]};
    if (layout == Layout::Permuted) {
        for (int i = 0; i < 4; ++i)
            storage[i] = ne[kAxes[i]];
    }
    if (layout == Layout::Strided) {
        const int64_t block = ggml_blck_size(type);
        storage = {ne[0] + (block > 1 ? 2 * block : 3), ne[1] + 1, ne[2], ne[3]};
    }
    ggml_tensor * leaf = new_leaf(ctx_, type, storage);
    if (!leaf) return nullptr;
    gens_[leaf] = gen;
    switch (layout) {
        case Layout::Contiguous:
            return leaf;
        case Layout::Transposed:
            return ggml_transpose(ctx_, leaf);
        case Layout::Permuted:
            return ggml_permute(ctx_, leaf, kAxes[0], kAxes[1], kAxes[2], kAxes[3]);
        case Layout::Strided:
            return strided_view(ctx_, leaf, ne);
    }
    return nullptr;
}

Gen Graph::gen_of(const ggml_tensor * leaf) const {
    const auto it = gens_.find(leaf);
    return it == gens_.end() ? Gen{} : it->second;
}

namespace {

Case make_case(std::string name, ggml_op op, std::string sub, Builder build) {
    Case c;
    c.name = std::move(name);
    c.op = op;
    c.sub = std::move(sub);
    c.build = std::move(build);
    return c;
}

}  // namespace

void CaseList::add(ggml_op op, const std::string & detail, Builder build) {
    cases_.push_back(make_case(std::string(ggml_op_name(op)) + " " + detail, op, "", std::move(build)));
}

void CaseList::add_sub(ggml_op op, const std::string & sub, const std::string & detail, Builder build) {
    cases_.push_back(make_case(sub + " " + detail, op, sub, std::move(build)));
}

void CaseList::add_ext(const std::string & ext_op, const std::string & detail, Builder build) {
    Case c = make_case(ext_op + " " + detail, GGML_OP_CUSTOM, "", std::move(build));
    c.ext_op = ext_op;
    cases_.push_back(std::move(c));
}

void CaseList::add_fusion(ggml_op op, const std::string & detail, Builder build) {
    Case c = make_case("fusion " + detail, op, "", std::move(build));
    c.sched = true;
    cases_.push_back(std::move(c));
}

void CaseList::add_perf(ggml_op op, const std::string & detail, double flops, Builder build) {
    Case c = make_case(std::string(ggml_op_name(op)) + " " + detail, op, "", std::move(build));
    c.perf = true;
    c.flops = flops;
    cases_.push_back(std::move(c));
}

void CaseList::add_perf_ext(const std::string & ext_op, const std::string & detail, double flops,
                            Builder build) {
    Case c = make_case(ext_op + " " + detail, GGML_OP_CUSTOM, "", std::move(build));
    c.ext_op = ext_op;
    c.perf = true;
    c.flops = flops;
    cases_.push_back(std::move(c));
}

std::string format(const char * fmt, ...) {
    char buf[512];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, args);
    va_end(args);
    return buf;
}

std::string str(const Shape & ne) {
    return format("[%lld,%lld,%lld,%lld]", static_cast<long long>(ne[0]), static_cast<long long>(ne[1]),
                  static_cast<long long>(ne[2]), static_cast<long long>(ne[3]));
}

std::string str(ggml_type type) { return ggml_type_name(type); }

std::string str(double value) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", value);
    return buf;
}

std::vector<Case> all_cases() {
    CaseList list;
    for (auto add :
         {add_copy_cases, add_elementwise_cases, add_reduce_cases, add_shape_cases, add_norm_cases,
          add_matmul_cases, add_softmax_cases, add_rope_cases, add_attention_cases, add_recurrent_cases,
          add_indexing_cases, add_conv_cases, add_custom_cases, add_sd_cases}) {
        add(list);
    }
    return list.cases();
}

}  // namespace ggx::ops
