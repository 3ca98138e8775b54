// For the sd pack's suites: the pack registered once for the whole program (the first call must
// register everything).
#pragma once

#include <ggml-backend.h>
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

}  // namespace ggx::test
