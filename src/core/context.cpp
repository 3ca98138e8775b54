// Contexts: the metadata arena, tensor iteration, the per-context error state and the process's
// error mode.
#include <ggml-ext.h>

#include "core/log.h"

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <new>

#include "core/internal.h"

namespace ggx::core {
namespace {

std::atomic<ggml_ext_error_mode> process_error_mode{GGML_EXT_ERROR_ABORT};

bool aborts_on_error(const ggml_context * ctx) {
    return ctx->abort_on_error.value_or(process_error_mode.load(std::memory_order_relaxed) ==
                                        GGML_EXT_ERROR_ABORT);
}

}  // namespace

void report_error(ggml_context * ctx, std::string message) {
    if (ctx->error_callback) ctx->error_callback(message.c_str(), ctx->error_user_data);
    if (aborts_on_error(ctx)) fatal(message);
    if (!ctx->has_error) {
        ctx->error = std::move(message);
        ctx->has_error = true;
    }
}

void * arena_alloc(ggml_context * ctx, size_t bytes, ggml_object_type type, const char * what) {
    const auto base = reinterpret_cast<uintptr_t>(ctx->mem);
    const size_t offset = align_up(base + ctx->used, kArenaAlign) - base;
    if (offset > ctx->mem_size || bytes > ctx->mem_size - offset) {
        report_error(ctx, std::string(what) + ": context arena full: need " + std::to_string(bytes) +
                              " bytes, " + std::to_string(ctx->used) + " of " +
                              std::to_string(ctx->mem_size) + " used");
        return nullptr;
    }
    ctx->used = offset + bytes;
    ctx->objects.push_back({type, offset, bytes});
    return ctx->mem + offset;
}

}  // namespace ggx::core

using namespace ggx::core;

extern "C" {

ggml_context * ggml_init(ggml_init_params params) {
    if (params.mem_size == 0) params = {GGML_MEM_ALIGN, nullptr, params.no_alloc};
    auto * ctx = new (std::nothrow) ggml_context;
    if (!ctx) return nullptr;
    ctx->mem_size = params.mem_size;
    ctx->no_alloc = params.no_alloc;
    ctx->mem = static_cast<unsigned char *>(params.mem_buffer);
    if (!ctx->mem) {
        ctx->mem = static_cast<unsigned char *>(
            ::operator new (params.mem_size, std::align_val_t{kArenaAlign}, std::nothrow));
        ctx->owns_mem = true;
        if (!ctx->mem) {
            delete ctx;
            return nullptr;
        }
    }
    return ctx;
}

void ggml_free(ggml_context * ctx) {
    if (!ctx) return;
    if (ctx->owns_mem) ::operator delete (ctx->mem, std::align_val_t{kArenaAlign});
    delete ctx;
}

size_t ggml_used_mem(const ggml_context * ctx) { return ctx->used; }
size_t ggml_get_mem_size(const ggml_context * ctx) { return ctx->mem_size; }
bool ggml_get_no_alloc(const ggml_context * ctx) { return ctx->no_alloc; }
void ggml_set_no_alloc(ggml_context * ctx, bool no_alloc) { ctx->no_alloc = no_alloc; }

const char * ggml_get_error(const ggml_context * ctx) {
    return ctx->has_error ? ctx->error.c_str() : nullptr;
}

void ggml_clear_error(ggml_context * ctx) {
    ctx->error.clear();
    ctx->has_error = false;
}

void ggml_set_error_callback(ggml_context * ctx, ggml_error_callback cb, void * user_data) {
    ctx->error_callback = cb;
    ctx->error_user_data = user_data;
}

void ggml_set_abort_on_error(ggml_context * ctx, bool abort_on_error) {
    ctx->abort_on_error = abort_on_error;
}

void ggml_ext_set_error_mode(ggml_ext_error_mode mode) {
    if (mode == GGML_EXT_ERROR_ABORT || mode == GGML_EXT_ERROR_RETURN)
        process_error_mode.store(mode, std::memory_order_relaxed);
}

ggml_ext_error_mode ggml_ext_get_error_mode(void) {
    return process_error_mode.load(std::memory_order_relaxed);
}

ggml_tensor * ggml_get_first_tensor(const ggml_context * ctx) { return ctx->first_tensor; }

ggml_tensor * ggml_get_tensor(ggml_context * ctx, const char * name) {
    for (ggml_tensor * t = ctx->first_tensor; t; t = ggml_get_next_tensor(ctx, t)) {
        if (std::strcmp(t->name, name) == 0) return t;
    }
    return nullptr;
}

void ggml_reset(ggml_context * ctx) {
    ctx->used = 0;
    ctx->first_tensor = ctx->last_tensor = nullptr;
    ctx->objects.clear();
}

void * ggml_get_mem_buffer(const ggml_context * ctx) { return ctx->mem; }

void * ggml_new_buffer(ggml_context * ctx, size_t nbytes) {
    return arena_alloc(ctx, nbytes, GGML_OBJECT_TYPE_WORK_BUFFER, "ggml_new_buffer");
}

void ggml_print_object(const ggml_object * obj) {
    static constexpr const char * kTypeNames[] = {"tensor", "graph", "work buffer"};
    log(GGML_LOG_LEVEL_INFO, " - ggml_object: type = %s, offs = %zu, size = %zu\n", kTypeNames[obj->type],
        obj->offs, obj->size);
}

void ggml_print_objects(const ggml_context * ctx) {
    log(GGML_LOG_LEVEL_INFO, "ggml_print_objects: %zu objects, %zu of %zu bytes used\n", ctx->objects.size(),
        ctx->used, ctx->mem_size);
    for (const ggml_object & object : ctx->objects)
        ggml_print_object(&object);
}

size_t ggml_get_max_tensor_size(const ggml_context * ctx) {
    size_t max_size = 0;
    for (ggml_tensor * t = ctx->first_tensor; t; t = ggml_get_next_tensor(ctx, t)) {
        max_size = std::max(max_size, ggml_nbytes(t));
    }
    return max_size;
}

void ggml_abort(const char * file, int line, const char * fmt, ...) {
    std::fflush(stdout);  // what the program printed so far comes before the message
    va_list args;
    va_start(args, fmt);
    va_list measure;
    va_copy(measure, args);
    const int length = std::vsnprintf(nullptr, 0, fmt, measure);
    va_end(measure);
    std::string text(length > 0 ? static_cast<size_t>(length) : 0, '\0');
    if (length > 0) std::vsnprintf(text.data(), text.size() + 1, fmt, args);
    va_end(args);
    fatal(std::string(file) + ":" + std::to_string(line) + ": " + text);
}

}  // extern "C"
