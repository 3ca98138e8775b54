// libFuzzer target for ggx's GGUF reader: parses the input in place and touches everything every
// accessor returns (every metadata value, every typed lookup, every tensor's data byte), so that any
// out-of-bounds pointer or overflowing size the reader let through shows up under ASan/UBSan.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "gguf.h"

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    std::string error;
    std::unique_ptr<ggx::gguf::File> f = ggx::gguf::File::parse(data, size, &error);
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
    volatile uint64_t sink = h;
    (void)sink;
    return 0;
}
