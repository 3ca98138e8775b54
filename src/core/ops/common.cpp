// The node factory of the operator constructors.
#include <algorithm>

#include "core/ops/common.h"

namespace ggx::core {

ggml_tensor * make_node(ggml_context * ctx, const char * op_name, ggml_op op, ggml_type type,
                        const std::array<int64_t, 4> & ne, std::initializer_list<ggml_tensor *> srcs,
                        ggml_tensor * over) {
    ggml_tensor * result = nullptr;
    if (over) {
        ggml_tensor * owner = over->view_src ? over->view_src : over;
        result = new_tensor(ctx, op_name, over->type, over->ne, owner, over->view_src ? over->view_offs : 0);
        if (result) std::copy(std::begin(over->nb), std::end(over->nb), result->nb);
    } else {
        result = new_tensor(ctx, op_name, type, ne.data(), nullptr, 0);
    }
    if (!result) return nullptr;
    result->op = op;
    int i = 0;
    for (ggml_tensor * src : srcs)
        result->src[i++] = src;
    return result;
}

}  // namespace ggx::core
