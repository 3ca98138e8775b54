// ggml-cpp.h: each unique_ptr alias frees its object with the matching ggml function.
#include <ggml-cpp.h>
#include <ggml-cpu.h>
#include <gtest/gtest.h>

#include <type_traits>
#include <utility>

namespace {

TEST(GgmlCpp, PointersOwnAndFreeTheirObjects) {
    ggml_context_ptr ctx(ggml_init({1 << 16, nullptr, true}));
    ASSERT_NE(ctx, nullptr);
    ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 16);
    ggml_backend_ptr backend(ggml_backend_cpu_init());
    ggml_backend_buffer_ptr buffer(ggml_backend_alloc_ctx_tensors(ctx.get(), backend.get()));
    ASSERT_NE(buffer, nullptr);
    ggml_gallocr_ptr galloc(ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend.get())));
    ASSERT_NE(galloc, nullptr);
    ggml_backend_t backends[] = {backend.get()};
    ggml_backend_sched_ptr sched(ggml_backend_sched_new(backends, nullptr, 1, 64, false, false));
    ASSERT_NE(sched, nullptr);
    ggml_backend_event_ptr event(ggml_backend_event_new(ggml_backend_get_device(backend.get())));
    EXPECT_EQ(event, nullptr);  // the CPU device has no events; the alias still holds NULL

    ggml_backend_buffer_ptr moved = std::move(buffer);
    EXPECT_EQ(buffer, nullptr);
    EXPECT_NE(moved, nullptr);
    sched.reset();  // freed before the backend it uses
    static_assert(std::is_same_v<ggml_context_ptr::element_type, ggml_context>);
    static_assert(std::is_same_v<ggml_backend_ptr::pointer, ggml_backend_t>);
    static_assert(std::is_same_v<ggml_gallocr_ptr::pointer, ggml_gallocr_t>);
}

}  // namespace
