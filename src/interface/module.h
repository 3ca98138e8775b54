// A backend built as a loadable module (GGX_BACKEND_DL) exports its registry under ggml's entry-point
// convention (ggml-backend-impl.h): `ggml_backend_reg_t ggml_backend_init(void)`, which
// ggml_backend_load looks up and calls. Built in, a backend exports nothing: the registry of backends
// calls its public entry point (ggml_backend_cpu_reg, ggml_backend_vk_reg) instead.
#pragma once

#include <ggml-backend.h>

typedef ggml_backend_reg_t (*ggml_backend_init_t)(void);

namespace ggx::backend {
inline constexpr char kModuleInitSymbol[] = "ggml_backend_init";
}

#ifdef GGX_BACKEND_DL
#define GGML_BACKEND_DL_IMPL(reg_fn) \
    extern "C" ggml_backend_reg_t ggml_backend_init(void) { return reg_fn(); }
#else
#define GGML_BACKEND_DL_IMPL(reg_fn)
#endif
