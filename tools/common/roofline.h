// Reading the one-line JSON that ../shared/tools/roofline prints, for ggx-ops and the benchmarks.
#pragma once

#include <cstdlib>
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

}  // namespace ggx::tools
