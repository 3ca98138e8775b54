// For the sd pack's suites: the pack registered once for the whole program (the first call must
// register everything).
#pragma once

#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <gtest/gtest.h>

#include "sd-ggml-ext.h"

namespace ggx::test {

class SdPack : public ::testing::Environment {
public:
    void SetUp() override {
        ASSERT_EQ(sd_ggml_register_extensions(), SD_GGML_EXT_REGISTERED) << ggml_backend_get_last_error();
    }
};
inline const auto * const g_sd_pack = ::testing::AddGlobalTestEnvironment(new SdPack);

// The suites' CPU backend, with three threads: uneven row shares on the 2-core test machine too.
inline ggml_backend_t sd_cpu_backend() {
    static ggml_backend_t cpu = [] {
        ggml_backend_t b = ggml_backend_cpu_init();
        ggml_backend_cpu_set_n_threads(b, 3);
        return b;
    }();
    return cpu;
}

}  // namespace ggx::test
