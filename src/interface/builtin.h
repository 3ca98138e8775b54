// The registries of the backends built into this library, in priority order.
#pragma once

#include <ggml-backend.h>

#include <vector>

namespace ggx::backend {
std::vector<ggml_backend_reg_t> builtin_registries();
}
