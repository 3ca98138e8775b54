// Constructors of the indexing family added for ggml's API: ggml_get_rows_back.
#include "core/ops_test_support.h"

namespace {

class OpsIndexing : public ggx::test::OpsTest {};

TEST_F(OpsIndexing, GetRowsBackTakesCsShape) {
    ggml_tensor *grad = f32(8, 3), *rows = tensor(GGML_TYPE_I32, 3), *data = tensor(GGML_TYPE_F16, 8, 10);
    ggml_tensor * r = ggml_get_rows_back(ctx(), grad, rows, data);
    expect_node(r, GGML_OP_GET_ROWS_BACK, GGML_TYPE_F32, {8, 10, 1, 1}, {grad, rows});
    EXPECT_TRUE(ggml_backend_supports_op(ggx::test::cpu_backend(), r));
    expect_error(ggml_get_rows_back(ctx(), grad, tensor(GGML_TYPE_I32, 4), data), "ggml_get_rows_back",
                 "b must be an i32 vector of a.ne1 indices");
    expect_error(ggml_get_rows_back(ctx(), grad, rows, f32(7, 10)), "ggml_get_rows_back",
                 "c must be a matrix with a's ne0");
    expect_error(ggml_get_rows_back(ctx(), f32(8, 3, 2), rows, data), "ggml_get_rows_back",
                 "a must be an f32 matrix");
}

}  // namespace
