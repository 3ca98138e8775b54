// ggx's diagnostics: every message goes through the ggml_log_set callback (stderr by default), and
// fatal errors through the ggml_set_abort_callback callback before the process aborts.
#pragma once

#include <ggml.h>

#include <string>

namespace ggx::core {

// printf-style message to the log callback.
[[gnu::format(printf, 2, 3)]] void log(ggml_log_level level, const char * format, ...);
// Hands message to the abort callback, or logs it as an error, then aborts the process.
[[noreturn]] void fatal(const std::string & message);

}  // namespace ggx::core
