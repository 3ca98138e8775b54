// Backend modules: ggml_backend_load opens a shared module and registers the registry its
// ggml_backend_init returns (interface/module.h); ggml_backend_unload unregisters and closes it.
// ggml_backend_load_all finds ggx's own modules when they are built as such (GGX_BACKEND_DL); with
// the backends built in there is nothing to find, so it loads only GGML_BACKEND_PATH's module.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "interface/backend-impl.h"
#include "interface/module.h"
#include "registry/registry.h"

namespace {

ggml_backend_reg_t fail_to_load(const std::string & why) {
    ggx::backend::set_last_error("ggml_backend_load: " + why);
    return nullptr;
}

void load_or_report(const char * path) {
    if (!ggml_backend_load(path)) std::fprintf(stderr, "ggx: %s\n", ggml_backend_get_last_error());
}

#ifdef GGX_BACKEND_DL
// The backends ggx can build as modules, in load order: GPU backends first, the CPU last.
constexpr const char * kModules[] = {"vulkan", "cpu"};

// Where ggml_backend_load_all looks for modules: the folder it is given; else beside this library
// (where they are built and installed), beside the executable and in the current directory.
std::vector<std::filesystem::path> search_dirs(const char * dir_path) {
    if (dir_path) return {dir_path};
    std::vector<std::filesystem::path> dirs;
    Dl_info library{};
    if (dladdr(reinterpret_cast<void *>(&ggml_backend_load_all), &library) && library.dli_fname)
        dirs.push_back(std::filesystem::path(library.dli_fname).parent_path());
    std::error_code error;
    const std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe", error);
    if (!error) dirs.push_back(executable.parent_path());
    dirs.emplace_back(".");
    return dirs;
}

// Loads libggml-<name>.so from the first search folder that has it; a module found nowhere is not
// built (or not installed) and is skipped quietly.
void load_module(const char * name, const char * dir_path) {
    const std::string file = "libggml-" + std::string(name) + ".so";
    for (const std::filesystem::path & dir : search_dirs(dir_path)) {
        std::error_code error;
        if (!std::filesystem::exists(dir / file, error)) continue;
        load_or_report((dir / file).c_str());
        return;
    }
}
#endif

}  // namespace

extern "C" {

ggml_backend_reg_t ggml_backend_load(const char * path) {
    if (!path) return fail_to_load("no path given");
    void * module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!module) return fail_to_load(dlerror());  // names the path
    auto init = reinterpret_cast<ggml_backend_init_t>(dlsym(module, ggx::backend::kModuleInitSymbol));
    ggml_backend_reg_t reg = init ? init() : nullptr;
    if (!reg) {
        dlclose(module);
        return fail_to_load(path +
                            std::string(init ? ": its ggml_backend_init returned NULL"
                                             : ": not a backend module (it exports no ggml_backend_init)"));
    }
    const std::string refused = ggx::registry::add(reg, module);
    if (refused.empty()) return reg;
    dlclose(module);
    // Loaded before: this dlopen only took another reference to the module, now given back.
    return ggx::registry::contains(reg) ? reg : fail_to_load(path + (": " + refused));
}

void ggml_backend_unload(ggml_backend_reg_t reg) {
    void * module = nullptr;
    if (!reg || !ggx::registry::remove(reg, module)) {
        ggx::backend::set_last_error("ggml_backend_unload: the registry is NULL or not registered");
        return;
    }
    if (module) dlclose(module);
}

void ggml_backend_load_all(void) { ggml_backend_load_all_from_path(nullptr); }

void ggml_backend_load_all_from_path(const char * dir_path) {
#ifdef GGX_BACKEND_DL
    for (const char * name : kModules) {
        if (!ggml_backend_reg_by_name(name)) load_module(name, dir_path);
    }
#endif
    if (const char * path = std::getenv("GGML_BACKEND_PATH")) load_or_report(path);
}

}  // extern "C"
