// sd_ggml_register_extensions: the pack's single registration entry point.
#include <mutex>

#include "common/pack.h"
#include "sd-ggml-ext.h"

extern "C" sd_ggml_ext_status sd_ggml_register_extensions(void) {
    static std::mutex mutex;
    static sd_ggml_ext_status state = SD_GGML_EXT_FAILED;
    static bool attempted = false;
    std::lock_guard lock(mutex);
    if (attempted && state == SD_GGML_EXT_REGISTERED) {
        ggml_ext_set_error("sd_ggml_register_extensions: already registered; nothing changed");
        return SD_GGML_EXT_ALREADY_REGISTERED;
    }
    attempted = true;
    state = sd::register_rope() && sd::register_int8() ? SD_GGML_EXT_REGISTERED : SD_GGML_EXT_FAILED;
    return state;
}
