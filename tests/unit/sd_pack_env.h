// For the sd pack's suites: the pack registered once for the whole program (the first call must
// register everything), and a substring check for error and explain messages.
#pragma once

#include <ggml-backend.h>
#include <gtest/gtest.h>

#include <string>

#include "sd-ggml-ext.h"

namespace ggx::test {

class SdPack : public ::testing::Environment {
public:
    void SetUp() override {
        ASSERT_EQ(sd_ggml_register_extensions(), SD_GGML_EXT_REGISTERED) << ggml_backend_get_last_error();
    }
};
inline const auto * const g_sd_pack = ::testing::AddGlobalTestEnvironment(new SdPack);

inline bool contains(const std::string & text, const std::string & part) {
    return text.find(part) != std::string::npos;
}

}  // namespace ggx::test
