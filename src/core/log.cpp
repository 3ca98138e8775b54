// The log and abort callbacks of ggml.h.
#include "core/log.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void log_to_stderr(ggml_log_level, const char * text, void *) {
    std::fputs(text, stderr);
    std::fflush(stderr);
}

ggml_log_callback log_callback = log_to_stderr;
void * log_user_data = nullptr;
ggml_abort_callback_t abort_callback = nullptr;

}  // namespace

namespace ggx::core {

void log(ggml_log_level level, const char * format, ...) {
    va_list args;
    va_start(args, format);
    va_list measure;
    va_copy(measure, args);
    const int length = std::vsnprintf(nullptr, 0, format, measure);
    va_end(measure);
    std::vector<char> text(length > 0 ? static_cast<size_t>(length) + 1 : 1, '\0');
    if (length > 0) std::vsnprintf(text.data(), text.size(), format, args);
    va_end(args);
    log_callback(level, text.data(), log_user_data);
}

void fatal(const std::string & message) {
    if (abort_callback) {
        abort_callback(message.c_str());
    } else {
        log(GGML_LOG_LEVEL_ERROR, "ggx: %s\n", message.c_str());
    }
    std::abort();
}

}  // namespace ggx::core

extern "C" {

void ggml_log_set(ggml_log_callback callback, void * user_data) {
    log_callback = callback ? callback : log_to_stderr;
    log_user_data = user_data;
}

void ggml_log_get(ggml_log_callback * callback, void ** user_data) {
    *callback = log_callback;
    *user_data = log_user_data;
}

ggml_abort_callback_t ggml_set_abort_callback(ggml_abort_callback_t callback) {
    const ggml_abort_callback_t previous = abort_callback;
    abort_callback = callback;
    return previous;
}

}  // extern "C"
