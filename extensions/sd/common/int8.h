// Internal pieces of sd.quantize_i8_convrot.v1 and sd.linear_i8.v1 shared by the schemas
// (common/int8_ops.cpp), the CPU implementation (cpu/int8.cpp) and the tests.
#pragma once

#include <ggml-backend.h>
#include <ggml-ext.h>

#include <cstdint>
#include <cstring>

namespace sd::int8 {

inline constexpr const char * kQuantizeOpName = "sd.quantize_i8_convrot.v1";
inline constexpr const char * kLinearOpName = "sd.linear_i8.v1";

// Largest K whose int32 dot products of codes in [-127, 127] cannot overflow (127^2 * K < 2^31).
inline constexpr int64_t kMaxK = 133143;

// Attributes of a sd.quantize_i8_convrot.v1 node.
struct QuantizeAttrs {
    int32_t group;  // G in {1, 4, 16, 64, 256}; 1: no rotation
};

// How a sd.linear_i8.v1 node receives its activations (inputs[1]).
enum InputKind : int32_t {
    kInputF32 = 0,     // F32 [K, M, ...]: quantized inside the op (rotation `group`, 0: none)
    kInputPacked = 1,  // the packed I8 output of sd.quantize_i8_convrot.v1 (its G in `group`)
    kInputI8 = 2,      // ordinary I8 [K, M, ...] codes, scales in the optional input_scale
};

enum LinearFlags : int32_t {
    kHasWeightScale = 1,  // an F32 weight_scale input follows the activations
    kHasBias = 2,         // then an F32 bias input
    kHasInputScale = 4,   // then an F32 input_scale (kInputI8 only)
};

// Attributes of a sd.linear_i8.v1 node. Inputs: weight, activations, then the optional
// weight_scale, bias, input_scale in that order, as flags say.
struct LinearAttrs {
    int32_t kind;       // InputKind
    int32_t group;      // kInputF32: rotation (0 or 1: none); kInputPacked: G of the packed input
    int32_t requested;  // the constructor's convrot_group_size (kInputPacked must agree with group)
    int32_t flags;      // LinearFlags
    int64_t ne[3];      // ne1..ne3 of the logical activations ([K, ne1, ne2, ne3] F32 before packing)
};

// Rows of the packed layout: round_up(rows, 4) code rows, then ceil(4 rows / K) rows holding the
// F32 row scales (sd-ops.md 3.3).
inline int64_t packed_rows_pad(int64_t rows) { return (rows + 3) / 4 * 4; }
inline int64_t packed_scale_rows(int64_t rows, int64_t k) { return (rows * 4 + k - 1) / k; }
// Bytes of the packed tensor of rows activation rows of k codes.
inline size_t packed_bytes(int64_t k, int64_t rows) {
    return static_cast<size_t>(k * (packed_rows_pad(rows) + packed_scale_rows(rows, k)));
}

// Zeroes the padding rows of a packed tensor of `bytes` bytes and the tail after its row scales
// (deterministic output).
inline void zero_packed_padding(int8_t * packed, int64_t k, int64_t rows, size_t bytes) {
    const int64_t rows_pad = packed_rows_pad(rows);
    std::memset(packed + k * rows, 0, static_cast<size_t>(k * (rows_pad - rows)));
    const size_t used = static_cast<size_t>(k * rows_pad) + sizeof(float) * static_cast<size_t>(rows);
    std::memset(packed + used, 0, bytes - used);
}

// The operators, registered on first use (by a constructor or by sd_ggml_register_extensions);
// NULL with the registry's message in ggml_backend_get_last_error when that failed.
ggml_ext_op_t quantize_op();
ggml_ext_op_t linear_op();

QuantizeAttrs quantize_attrs_of(const ggml_tensor * node);
LinearAttrs linear_attrs_of(const ggml_tensor * node);

// The inputs of a linear node by role (NULL where the flags have none) and its sizes.
struct LinearShape {
    LinearAttrs attrs;
    int64_t k, n, rows;
    const ggml_tensor *w, *x, *ws, *bias, *xs;
};
LinearShape linear_shape(const ggml_tensor * node);

// The CPU kernels (descriptors for ggml_ext_register_kernel and ggml_ext_check_kernel):
// "sd.quantize_i8_convrot.cpu" and "sd.linear_i8.cpu". NULL when the CPU thread-pool service is
// missing (message set).
const ggml_ext_kernel_desc * cpu_quantize_kernel();
const ggml_ext_kernel_desc * cpu_linear_kernel();

// The CPU quantization of one row of k contiguous F32 values (rotation `group`, 1: none) into k codes
// and its scale: exactly what "sd.quantize_i8_convrot.cpu" computes for the row (cpu/int8.cpp).
namespace cpu {
void convrot_row(const float * src, int64_t k, int group, int8_t * codes, float * scale);
}

// Registers both CPU kernels on device. false with the registry's message when that fails.
bool register_cpu(ggml_backend_dev_t device);
// Registers the CPU fusions ending in ConvRot on device (cpu/convrot_fusions.cpp):
// "sd.scale_convrot.cpu", "sd.swiglu_convrot.cpu" and "sd.activation_mul_convrot.cpu".
bool register_cpu_convrot_fusions(ggml_backend_dev_t device);

}  // namespace sd::int8
