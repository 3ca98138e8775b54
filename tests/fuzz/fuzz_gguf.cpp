// libFuzzer target for ggx's GGUF reader and gguf.h: parses the input in place and touches everything
// every accessor returns (every metadata value, every typed lookup, every tensor's data byte); then
// reads it through gguf.h with tensor data, gets every value with its type's getter, writes the context
// back to memory and reads that again, so that any out-of-bounds pointer, overflowing size or
// misuse the reader let through shows up under ASan/UBSan (a misuse aborts: the default error mode).
#include <ggml-backend.h>
#include <gguf.h>
#include <stdio.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gguf/file.h"

namespace {

using ggx::gguf::Value;
using ggx::gguf::ValueType;

uint64_t touch_value(const Value & v) {
    uint64_t h = uint64_t(v.type) + v.u + uint64_t(v.i) + uint64_t(v.f != v.f ? 1 : 0);
    for (char c : v.str)
        h = h * 31 + uint8_t(c);
    if (v.type == ValueType::ARRAY) {
        const size_t n = ggx::gguf::value_type_size(v.element_type);
        if (n > 0) {
            for (uint64_t k = 0; k < v.count * n; ++k)
                h = h * 31 + v.raw[k];
        } else if (v.items.size() != v.count) {
            std::abort();
        }
        for (const Value & e : v.items)
            h += touch_value(e);
    }
    return h;
}

uint64_t touch_bytes(const void * p, size_t n) {
    uint64_t h = 0;
    for (size_t k = 0; k < n; ++k)
        h = h * 31 + static_cast<const uint8_t *>(p)[k];
    return h;
}

uint64_t touch_string(const char * s) { return touch_bytes(s, std::strlen(s)); }

// Pair key_id through the getter of its type.
uint64_t touch_pair(const gguf_context * ctx, int64_t key_id) {
    uint64_t h = touch_string(gguf_get_key(ctx, key_id));
    const gguf_type type = gguf_get_kv_type(ctx, key_id);
    switch (type) {
        case GGUF_TYPE_UINT8:
            return h + gguf_get_val_u8(ctx, key_id);
        case GGUF_TYPE_INT8:
            return h + uint64_t(gguf_get_val_i8(ctx, key_id));
        case GGUF_TYPE_UINT16:
            return h + gguf_get_val_u16(ctx, key_id);
        case GGUF_TYPE_INT16:
            return h + uint64_t(gguf_get_val_i16(ctx, key_id));
        case GGUF_TYPE_UINT32:
            return h + gguf_get_val_u32(ctx, key_id);
        case GGUF_TYPE_INT32:
            return h + uint64_t(gguf_get_val_i32(ctx, key_id));
        case GGUF_TYPE_FLOAT32:
            return h + uint64_t(gguf_get_val_f32(ctx, key_id) != 0);
        case GGUF_TYPE_UINT64:
            return h + gguf_get_val_u64(ctx, key_id);
        case GGUF_TYPE_INT64:
            return h + uint64_t(gguf_get_val_i64(ctx, key_id));
        case GGUF_TYPE_FLOAT64:
            return h + uint64_t(gguf_get_val_f64(ctx, key_id) != 0);
        case GGUF_TYPE_BOOL:
            return h + gguf_get_val_bool(ctx, key_id);
        case GGUF_TYPE_STRING:
            return h + touch_string(gguf_get_val_str(ctx, key_id));
        case GGUF_TYPE_ARRAY:
            break;
        default:
            std::abort();
    }
    const gguf_type element = gguf_get_arr_type(ctx, key_id);
    const size_t n = gguf_get_arr_n(ctx, key_id);
    if (element == GGUF_TYPE_STRING) {
        for (size_t k = 0; k < n; ++k)
            h += touch_string(gguf_get_arr_str(ctx, key_id, k));
        return h;
    }
    const size_t element_size = ggx::gguf::value_type_size(static_cast<ValueType>(element));
    if (element_size == 0) std::abort();
    return h + touch_bytes(gguf_get_arr_data(ctx, key_id), n * element_size);
}

// Everything a gguf.h context and its ggml_context hold.
uint64_t touch_context(const gguf_context * ctx, ggml_context * tensors) {
    uint64_t h = gguf_get_version(ctx) + gguf_get_alignment(ctx) + gguf_get_data_offset(ctx);
    for (int64_t k = 0; k < gguf_get_n_kv(ctx); ++k) {
        if (gguf_find_key(ctx, gguf_get_key(ctx, k)) != k) std::abort();
        h += touch_pair(ctx, k);
    }
    ggml_tensor * t = tensors ? ggml_get_first_tensor(tensors) : nullptr;
    for (int64_t k = 0; k < gguf_get_n_tensors(ctx); ++k) {
        const char * name = gguf_get_tensor_name(ctx, k);
        if (gguf_find_tensor(ctx, name) != k) std::abort();
        h += touch_string(name) + gguf_get_tensor_offset(ctx, k) + uint64_t(gguf_get_tensor_type(ctx, k));
        h += touch_bytes(gguf_get_tensor_ne(ctx, k), GGML_MAX_DIMS * sizeof(int64_t));
        if (tensors) {
            if (!t || std::strcmp(t->name, name) != 0 || ggml_nbytes(t) != gguf_get_tensor_size(ctx, k) ||
                std::memcmp(t->ne, gguf_get_tensor_ne(ctx, k), sizeof t->ne) != 0)
                std::abort();
            h += touch_bytes(t->data, ggml_nbytes(t));
            t = ggml_get_next_tensor(tensors, t);
        }
    }
    return h;
}

void discard_log(ggml_log_level, const char *, void *) {}

// The input through gguf.h; write it back to memory (metadata, then the whole file) and read it again.
uint64_t fuzz_public_api(const uint8_t * data, size_t size, bool file_parsed) {
    ggml_log_set(discard_log, nullptr);  // every malformed input logs its error
    ggml_context * tensors = nullptr;
    gguf_context * ctx = gguf_init_from_buffer(data, size, {false, &tensors});
    if (!ctx) {
        if (tensors) std::abort();
        // The reader's errors, and the files gguf.h cannot hold though the reader accepts them.
        const std::string e = ggml_backend_get_last_error();
        const bool reason = !file_parsed || e.find("arrays of arrays") != std::string::npos ||
                            e.find("a ggml tensor name at most") != std::string::npos ||
                            e.find("contains a NUL byte") != std::string::npos;
        if (!reason) std::abort();
        return e.size();
    }
    if (!file_parsed || !tensors) std::abort();
    uint64_t h = touch_context(ctx, tensors);
    std::string meta(gguf_get_meta_size(ctx), '\0');
    gguf_get_meta_data(ctx, meta.data());
    char * written = nullptr;
    size_t written_size = 0;
    FILE * out = open_memstream(&written, &written_size);
    if (!out || !gguf_write_to_file_ptr(ctx, out, false)) std::abort();
    std::fclose(out);
    if (written_size < meta.size() || std::memcmp(written, meta.data(), meta.size()) != 0) std::abort();
    gguf_context * again = gguf_init_from_buffer(written, written_size, {true, nullptr});
    if (!again || gguf_get_n_kv(again) != gguf_get_n_kv(ctx) ||
        gguf_get_n_tensors(again) != gguf_get_n_tensors(ctx))
        std::abort();
    h += touch_context(again, nullptr);
    gguf_free(again);
    std::free(written);
    gguf_free(ctx);
    ggml_free(tensors);
    return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    std::string error;
    std::unique_ptr<ggx::gguf::File> f = ggx::gguf::File::parse(data, size, &error);
    const uint64_t api = fuzz_public_api(data, size, f != nullptr);
    if (!f) {
        if (error.rfind("gguf: offset ", 0) != 0) std::abort();  // every failure names an offset
        return 0;
    }
    uint64_t h = f->version() + f->alignment() + f->data_offset();
    if (f->data_offset() > size) std::abort();
    for (const ggx::gguf::KeyValue & kv : f->metadata()) {
        if (f->find_value(kv.key) != &kv.value) std::abort();
        h += touch_value(kv.value);
        std::string e;
        h += f->get_string(kv.key, &e).has_value() + f->get_int(kv.key, &e).has_value() +
             f->get_uint(kv.key, &e).has_value() + f->get_float(kv.key, &e).has_value() +
             f->get_bool(kv.key, &e).has_value();
        if (auto a = f->get_int_array(kv.key, &e)) h += a->size();
        if (auto a = f->get_float_array(kv.key, &e)) h += a->size();
        if (auto a = f->get_string_array(kv.key, &e)) h += a->size();
        h += e.size();
    }
    for (const ggx::gguf::Tensor & t : f->tensors()) {
        if (f->find(t.name) != &t) std::abort();
        const uint8_t * p = static_cast<const uint8_t *>(t.data);
        if (p < data || t.bytes > size_t(data + size - p)) std::abort();
        h += uint64_t(t.nelements()) + uint64_t(t.type) + uint64_t(t.n_dims) + t.offset;
        if (ggml_row_size(t.type, t.ne[0]) * size_t(t.ne[1] * t.ne[2] * t.ne[3]) != t.bytes) std::abort();
        for (size_t k = 0; k < t.bytes; ++k)
            h += p[k];
    }
    volatile uint64_t sink = h + api;
    (void)sink;
    return 0;
}
