// Properties of operators that layers above the core rely on without knowing any kernel.
#include <ggml.h>

extern "C" {

// The ops listed here compute each output element (or each row, for the row-wise ops) only from the
// same position of src[0] (plus other sources), reading that position completely before writing it.
// Every device's kernel for them must accept dst == src[0] exactly (same data, type, shape and
// strides); the CPU kernels do (elementwise.cpp: a chunk is loaded before it is stored; norm.cpp,
// softmax.cpp, rope.cpp: a row or a group of rows is read before it is written, by one thread).
// The graph allocator's property test checks the results bit for bit against out-of-place runs.
bool ggml_op_can_inplace(const ggml_tensor * node) {
    if (node == nullptr || node->src[0] == nullptr) return false;
    const ggml_tensor * a = node->src[0];
    if (node->type != a->type || !ggml_are_same_shape(node, a)) return false;
    switch (node->op) {
        case GGML_OP_ADD:
        case GGML_OP_SUB:
        case GGML_OP_MUL:
        case GGML_OP_DIV:
        case GGML_OP_SCALE:
        case GGML_OP_SQR:
        case GGML_OP_SQRT:
        case GGML_OP_CLAMP:
        case GGML_OP_UNARY:
        case GGML_OP_NORM:
        case GGML_OP_RMS_NORM:
        case GGML_OP_L2_NORM:
        case GGML_OP_GROUP_NORM:
        case GGML_OP_SOFT_MAX:
        case GGML_OP_ROPE:
            return true;
        case GGML_OP_GLU:
            return node->src[1] != nullptr;  // split form act(a) * b; the merged form halves each row
        default:
            return false;
    }
}

}  // extern "C"
