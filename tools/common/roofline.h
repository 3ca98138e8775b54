// Reading the one-line JSON that ../shared/tools/roofline prints, for ggx-ops and the benchmarks,
// and which of its units the CPU backend uses.
#pragma once

#include <ggml-backend.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace ggx::tools {

// The JSON itself when text holds an object, otherwise the contents of the file text names.
inline std::string roofline_json(const std::string & text) {
    if (text.find('{') != std::string::npos) return text;
    std::ifstream file(text);
    std::stringstream contents;
    contents << file.rdbuf();
    return contents.str();
}

// The number following "key": in json, or 0 when it is absent.
inline double roofline_number(const std::string & json, const std::string & key) {
    const size_t at = json.find("\"" + key + "\"");
    if (at == std::string::npos) return 0.0;
    const size_t colon = json.find(':', at);
    return colon == std::string::npos ? 0.0 : std::strtod(json.c_str() + colon + 1, nullptr);
}

// roofline_number of the JSON in the GGX_ROOFLINE environment variable (text or file), or 0.
inline double roofline_from_env(const std::string & key) {
    const char * env = std::getenv("GGX_ROOFLINE");
    return env ? roofline_number(roofline_json(env), key) : 0.0;
}

// Whether the CPU registry's "ggml_backend_get_features" lists feature (e.g. "AMX_INT8"): the
// units whose kernels the CPU backend runs.
inline bool cpu_has_feature(const char * feature) {
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("CPU");
    auto get = reinterpret_cast<ggml_backend_get_features_t>(
        reg ? ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features") : nullptr);
    for (const ggml_backend_feature * f = get ? get(reg) : nullptr; f && f->name; ++f)
        if (std::strcmp(f->name, feature) == 0) return true;
    return false;
}

}  // namespace ggx::tools
