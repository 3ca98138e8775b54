// Internal pieces of sd.sage_attn.v1 and sd.sol_attn.v1 shared by the schemas
// (common/attention_ops.cpp), the CPU kernels (cpu/attention.cpp) and the tests.
#pragma once

#include <ggml-backend.h>
#include <ggml-ext.h>

#include <cstdint>

namespace sd::attention {

inline constexpr const char * kSageOpName = "sd.sage_attn.v1";
inline constexpr const char * kSolOpName = "sd.sol_attn.v1";

// Sage: tokens per quantization block of Q and of K (one absmax scale each).
inline constexpr int64_t kSageBlock = 64;
// Sol: tokens per KV tile and per query block; the head dimension it takes.
inline constexpr int64_t kSolTile = 64;
inline constexpr int64_t kSolDim = 128;
// Sol: sequences of at most this many tiles are computed densely whatever tau says.
inline constexpr int64_t kSolDenseTiles = 2;

// Attributes of both operators' nodes, in op_params order (sd-ops.md 5): {scale, mode} for Sage
// (mode an enum ggml_sage_attn_mode), {scale, tau} for Sol.
struct SageAttrs {
    float scale;
    int32_t mode;
};
struct SolAttrs {
    float scale;
    float tau;
};

// The operators, registered on first use (by a constructor or by sd_ggml_register_extensions);
// NULL with the registry's message in ggml_backend_get_last_error when that failed.
ggml_ext_op_t sage_op();
ggml_ext_op_t sol_op();

SageAttrs sage_attrs_of(const ggml_tensor * node);
SolAttrs sol_attrs_of(const ggml_tensor * node);

// The CPU kernels "sd.sage_attn.cpu" and "sd.sol_attn.cpu" (descriptors for ggml_ext_register_kernel
// and ggml_ext_check_kernel); their callbacks work once register_cpu has run.
const ggml_ext_kernel_desc * cpu_sage_kernel();
const ggml_ext_kernel_desc * cpu_sol_kernel();

// Registers both CPU kernels on device. false with the registry's message when that fails.
bool register_cpu(ggml_backend_dev_t device);

}  // namespace sd::attention
