// The registry of backends (libggml): the process-wide list of registries (registry.cpp), the
// backends built into the library (builtin.cpp) and the loader of backend modules (loader.cpp).
#pragma once

#include <ggml-backend.h>

#include <string>
#include <vector>

namespace ggx::registry {

// The registries of the backends built into this library: GPU backends first, the CPU last.
std::vector<ggml_backend_reg_t> builtin_registries();

// Adds reg, loaded from module (a dlopen handle; nullptr for a registry linked in). Returns why it
// was refused (reg, or another registry of its name, is registered already), or "" when added.
std::string add(ggml_backend_reg_t reg, void * module);
// Whether reg is registered.
bool contains(ggml_backend_reg_t reg);
// Removes reg and sets module to the handle it was loaded from (nullptr if linked in); false when
// reg is not registered.
bool remove(ggml_backend_reg_t reg, void *& module);

}  // namespace ggx::registry
