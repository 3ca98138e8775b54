// The one error-bound table of ggx-ops: the largest normalised mean squared error a node may show
// against the oracle, per op and dtype; 0 means the result must be exact.
#pragma once

#include <ggml.h>

namespace ggx::ops {

// The bound for a computed node. Integer results are always exact. Otherwise the dtype column is
// the least precise of the node's type and its float/quantized sources' types (F32 < F16 < BF16
// < Q8_0 < Q4_0), since kernels may compute in that precision.
double nmse_bound(const ggml_tensor * node);

// A packed ConvRot quantization (sd.quantize_i8_convrot.v1) is exact for exact inputs. When its
// input carries rounding error (a computed node), a value a rounding boundary away may take the
// neighbouring code and the row scale may move by an ulp: the result is then compared dequantized
// (code * scale) under at least this bound, which allows a few such codes per thousand values.
inline constexpr double kRequantizeNmse = 1e-5;

}  // namespace ggx::ops
