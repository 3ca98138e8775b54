// The main of every GoogleTest suite (ggx_add_test). The suites check NULL results and
// ggml_get_error, so they run in the returning error mode; a test of the default, aborting mode
// switches to it for one scope with ggx::test::ScopedErrorMode (support/test_util.h).
#include <ggml-ext.h>
#include <gtest/gtest.h>

int main(int argc, char ** argv) {
    ggml_ext_set_error_mode(GGML_EXT_ERROR_RETURN);
    testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
