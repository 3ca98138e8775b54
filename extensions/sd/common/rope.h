// Internal pieces of sd.rope_apply.v1 shared by the schema (common/rope_ops.cpp) and the CPU
// implementation (cpu/rope.cpp).
#pragma once

#include <ggml-backend.h>
#include <ggml-ext.h>

#include <cstdint>

namespace sd::rope {

inline constexpr const char * kOpName = "sd.rope_apply.v1";

// The attributes of a sd.rope_apply.v1 node (op_params; read them with memcpy).
struct Attrs {
    int32_t interleaved;  // 1: pairs (2j, 2j+1); 0: split halves (j, j + rot/2)
};

// The operator, registered on first use (by the constructor or by sd_ggml_register_extensions);
// NULL with the registry's message in ggml_backend_get_last_error when that failed.
ggml_ext_op_t op();

// The node's attributes (node must be a sd.rope_apply.v1 node).
Attrs attrs_of(const ggml_tensor * node);

// Registers the CPU kernel "sd.rope_apply.cpu" and the fusion rule "sd.rms_norm_mul_rope.cpu" on
// device (a CPU-kernel device). false with the registry's message when a registration fails.
bool register_cpu(ggml_backend_dev_t device, ggml_ext_op_t rope_op);

// The CPU kernel's descriptor (the one register_cpu registers), for ggml_ext_check_kernel in tests;
// its callbacks work once register_cpu has run.
const ggml_ext_kernel_desc * cpu_kernel_desc();

}  // namespace sd::rope
