// gguf.h on ggx's validating reader and writer (gguf/file.h): a gguf_context owns copies of a file's
// metadata and tensor infos; files are read by File (every bound checked) and written by Writer.
#include <ggml-ext.h>
#include <gguf.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "core/internal.h"
#include "core/log.h"
#include "gguf/file.h"
#include "interface/backend-impl.h"

namespace {

using ggx::gguf::File;
using ggx::gguf::Value;
using ggx::gguf::ValueType;

// One key/value pair. Fixed-size values and arrays of them keep their little-endian bytes in bytes;
// a string value is strings[0], an array of strings is strings.
struct Pair {
    std::string key;
    gguf_type type = GGUF_TYPE_UINT8;
    gguf_type element_type = GGUF_TYPE_UINT8;  // arrays only
    std::vector<uint8_t> bytes;
    std::vector<std::string> strings;

    bool is_array() const { return type == GGUF_TYPE_ARRAY; }
    size_t count() const {
        if (element_type == GGUF_TYPE_STRING) return strings.size();
        return bytes.size() / ggx::gguf::value_type_size(static_cast<ValueType>(element_type));
    }
};

struct TensorInfo {
    std::string name;
    ggml_type type = GGML_TYPE_F32;
    int n_dims = 1;
    int64_t ne[GGML_MAX_DIMS] = {1, 1, 1, 1};
    uint64_t offset = 0;          // in the data section
    size_t size = 0;              // bytes, from type and shape
    const void * data = nullptr;  // kept by pointer (gguf_add_tensor, gguf_set_tensor_data)
};

}  // namespace

struct gguf_context {
    uint32_t version = GGUF_VERSION;
    size_t alignment = GGUF_DEFAULT_ALIGNMENT;
    size_t data_offset = 0;
    std::vector<Pair> pairs;
    std::vector<TensorInfo> tensors;
};

namespace {

std::string quoted(const char * s) { return s ? "'" + std::string(s) + "'" : std::string("NULL"); }

// A misuse of the API (docs/errors.md): recorded as the last error; aborts in the aborting mode.
template <typename T>
T misuse(T result, const std::string & message) {
    ggx::backend::set_last_error(message);
    if (ggml_ext_get_error_mode() == GGML_EXT_ERROR_ABORT) ggx::core::fatal(message);
    return result;
}
void misuse(const std::string & message) { misuse(0, message); }

// An input error (a malformed or unreadable file): logged and recorded, in every mode.
std::nullptr_t input_error(const char * function, const std::string & message) {
    ggx::core::log(GGML_LOG_LEVEL_ERROR, "%s: %s\n", function, message.c_str());
    ggx::backend::set_last_error(std::string(function) + ": " + message);
    return nullptr;
}

// The pair key_id of ctx, or nullptr after a misuse naming function.
const Pair * pair_at(const gguf_context * ctx, int64_t key_id, const char * function) {
    if (!ctx) return misuse<const Pair *>(nullptr, std::string(function) + ": ctx is NULL");
    if (key_id < 0 || key_id >= static_cast<int64_t>(ctx->pairs.size())) {
        return misuse<const Pair *>(nullptr, std::string(function) + ": key_id " + std::to_string(key_id) +
                                                 " is out of range (" + std::to_string(ctx->pairs.size()) +
                                                 " pairs)");
    }
    return &ctx->pairs[static_cast<size_t>(key_id)];
}

std::string type_text(const Pair & p) {
    if (!p.is_array()) return gguf_type_name(p.type);
    return std::string("arr of ") + gguf_type_name(p.element_type);
}

// The pair key_id when it has type (a scalar), or nullptr after a misuse.
const Pair * typed_pair(const gguf_context * ctx, int64_t key_id, gguf_type type, const char * function) {
    const Pair * p = pair_at(ctx, key_id, function);
    if (p && p->type != type) {
        return misuse<const Pair *>(nullptr, std::string(function) + ": key '" + p->key + "' has type " +
                                                 type_text(*p) + ", not " + gguf_type_name(type));
    }
    return p;
}

// The array pair key_id (with strings when strings is true, other elements otherwise; either when
// strings is unset), or nullptr after a misuse.
const Pair * array_pair(const gguf_context * ctx, int64_t key_id, const char * function, int strings = -1) {
    const Pair * p = pair_at(ctx, key_id, function);
    if (!p) return nullptr;
    const bool ok = p->is_array() && (strings < 0 || (p->element_type == GGUF_TYPE_STRING) == (strings == 1));
    if (ok) return p;
    const char * wanted = strings < 0    ? "an array"
                          : strings == 1 ? "an array of strings"
                                         : "an array of fixed-size values";
    return misuse<const Pair *>(nullptr, std::string(function) + ": key '" + p->key + "' has type " +
                                             type_text(*p) + ", not " + wanted);
}

template <typename T>
T scalar(const gguf_context * ctx, int64_t key_id, gguf_type type, const char * function) {
    const Pair * p = typed_pair(ctx, key_id, type, function);
    T v{};
    if (p) std::memcpy(&v, p->bytes.data(), sizeof v);
    return v;
}

const TensorInfo * tensor_at(const gguf_context * ctx, int64_t tensor_id, const char * function) {
    if (!ctx) return misuse<const TensorInfo *>(nullptr, std::string(function) + ": ctx is NULL");
    if (tensor_id < 0 || tensor_id >= static_cast<int64_t>(ctx->tensors.size())) {
        return misuse<const TensorInfo *>(nullptr, std::string(function) + ": tensor_id " +
                                                       std::to_string(tensor_id) + " is out of range (" +
                                                       std::to_string(ctx->tensors.size()) + " tensors)");
    }
    return &ctx->tensors[static_cast<size_t>(tensor_id)];
}

TensorInfo * tensor_named(gguf_context * ctx, const char * name, const char * function) {
    const int64_t id = ctx && name ? gguf_find_tensor(ctx, name) : -1;
    if (id < 0) {
        return misuse<TensorInfo *>(
            nullptr, std::string(function) + ": " + (ctx ? "no tensor " + quoted(name) : "ctx is NULL"));
    }
    return &ctx->tensors[static_cast<size_t>(id)];
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Lays the tensors from index first on out one after another, each at the next aligned offset.
void relayout(gguf_context * ctx, size_t first) {
    for (size_t k = std::max<size_t>(first, 1); k < ctx->tensors.size(); ++k) {
        const TensorInfo & prev = ctx->tensors[k - 1];
        ctx->tensors[k].offset = align_up(prev.offset + prev.size, ctx->alignment);
    }
    if (first == 0 && !ctx->tensors.empty()) ctx->tensors[0].offset = 0;
}

// The byte size of a tensor of type and shape, if ggx reads and writes the type and ne[0] fits its
// block; the reason otherwise.
bool tensor_size(ggml_type type, const int64_t * ne, size_t * size, std::string * why) {
    if (!ggx::gguf::type_from_gguf(ggx::gguf::type_to_gguf(type))) {
        *why = "type " + std::to_string(static_cast<int>(type)) + " is not a ggml type";
        return false;
    }
    if (ne[0] % ggml_blck_size(type) != 0) {
        *why = "ne[0] = " + std::to_string(ne[0]) + " is not a multiple of the block size " +
               std::to_string(ggml_blck_size(type)) + " of " + ggml_type_name(type);
        return false;
    }
    *size = ggml_row_size(type, ne[0]) * static_cast<size_t>(ne[1] * ne[2] * ne[3]);
    return true;
}

// The dimensions a tensor info lists: up to the last ne that is not 1 (ggml_n_dims also drops a
// last ne of 0, so a tensor of ne {4, 0} would be written as one of ne {4} and its 16 bytes).
int stored_dims(const ggml_tensor * tensor) {
    int n = GGML_MAX_DIMS;
    while (n > 1 && tensor->ne[n - 1] == 1)
        --n;
    return n;
}

// The alignment a pair general.alignment gives, or 0 when it is not a nonzero power of two integer.
size_t alignment_of(const Pair & p) {
    if (p.is_array() || p.type == GGUF_TYPE_BOOL || p.type == GGUF_TYPE_STRING ||
        p.type == GGUF_TYPE_FLOAT32 || p.type == GGUF_TYPE_FLOAT64)
        return 0;
    uint64_t u = 0;
    std::memcpy(&u, p.bytes.data(), p.bytes.size());
    const bool is_signed = p.type == GGUF_TYPE_INT8 || p.type == GGUF_TYPE_INT16 ||
                           p.type == GGUF_TYPE_INT32 || p.type == GGUF_TYPE_INT64;
    if (is_signed && p.bytes.size() < 8 && (u >> (8 * p.bytes.size() - 1)) != 0) return 0;  // negative
    if (is_signed && static_cast<int64_t>(u) < 0) return 0;
    return std::has_single_bit(u) ? static_cast<size_t>(u) : 0;
}

// Sets a pair: the old pair of its key goes, the new one goes last (general.alignment also sets the
// alignment and lays the tensors out again).
void set_pair(gguf_context * ctx, Pair p, const char * function) {
    if (!ctx) return misuse(std::string(function) + ": ctx is NULL");
    if (p.key.empty()) return misuse(std::string(function) + ": the key is NULL or empty");
    size_t alignment = 0;
    if (p.key == GGUF_KEY_GENERAL_ALIGNMENT && (alignment = alignment_of(p)) == 0) {
        return misuse(std::string(function) +
                      ": " GGUF_KEY_GENERAL_ALIGNMENT " must be an integer power of two, not " +
                      type_text(p) + (p.is_array() ? "" : " of that value"));
    }
    gguf_remove_key(ctx, p.key.c_str());
    ctx->pairs.push_back(std::move(p));
    if (alignment != 0) {
        ctx->alignment = alignment;
        relayout(ctx, 0);
    }
}

template <typename T>
void set_scalar(gguf_context * ctx, const char * key, gguf_type type, T value, const char * function) {
    Pair p{key ? key : "", type, GGUF_TYPE_UINT8, std::vector<uint8_t>(sizeof value), {}};
    std::memcpy(p.bytes.data(), &value, sizeof value);
    set_pair(ctx, std::move(p), function);
}

// The little-endian bytes of a fixed-size scalar the reader decoded.
std::vector<uint8_t> scalar_bytes(const Value & v) {
    std::vector<uint8_t> out(ggx::gguf::value_type_size(v.type));
    if (v.type == ValueType::F32) {
        const float f = static_cast<float>(v.f);
        std::memcpy(out.data(), &f, sizeof f);
    } else if (v.type == ValueType::F64) {
        std::memcpy(out.data(), &v.f, sizeof v.f);
    } else {
        const bool is_signed = v.type == ValueType::I8 || v.type == ValueType::I16 ||
                               v.type == ValueType::I32 || v.type == ValueType::I64;
        const uint64_t bits = is_signed ? static_cast<uint64_t>(v.i) : v.u;
        std::memcpy(out.data(), &bits, out.size());
    }
    return out;
}

// The pair of a key/value the reader read; false with the reason for one gguf.h cannot hold.
bool pair_from(const ggx::gguf::KeyValue & kv, size_t index, Pair * p, std::string * why) {
    p->key = std::string(kv.key);
    if (p->key.find('\0') != std::string::npos) {
        *why = "kv " + std::to_string(index) +
               ": the key contains a NUL byte, which gguf.h's C strings cannot hold";
        return false;
    }
    const Value & v = kv.value;
    p->type = static_cast<gguf_type>(v.type);
    if (v.type == ValueType::STRING) {
        p->strings.emplace_back(v.str);
    } else if (v.type != ValueType::ARRAY) {
        p->bytes = scalar_bytes(v);
    } else if (v.element_type == ValueType::ARRAY) {
        *why =
            "kv " + std::to_string(index) + " '" + p->key + "': arrays of arrays are not supported by gguf.h";
        return false;
    } else {
        p->element_type = static_cast<gguf_type>(v.element_type);
        if (v.element_type == ValueType::STRING) {
            for (const Value & e : v.items)
                p->strings.emplace_back(e.str);
        } else {
            p->bytes.assign(v.raw, v.raw + v.count * ggx::gguf::value_type_size(v.element_type));
        }
    }
    return true;
}

// A ggml_context with the file's tensors, with their data unless no_alloc; nullptr and why on failure.
ggml_context * tensor_context(const File & f, bool no_alloc, std::string * why) {
    size_t mem = (f.tensors().size() + 1) * ggml_tensor_overhead();
    for (const ggx::gguf::Tensor & t : f.tensors()) {
        // Each tensor is one arena block (its object, then its data) that starts at the arena's
        // alignment, so a block takes its data padded to that alignment.
        if (!no_alloc) mem += ggx::core::align_up(t.bytes, ggx::core::kArenaAlign);
    }
    ggml_context * ctx = ggml_init({mem, nullptr, no_alloc});
    if (!ctx) {
        *why = "cannot allocate a ggml_context of " + std::to_string(mem) + " bytes";
        return nullptr;
    }
    for (const ggx::gguf::Tensor & t : f.tensors()) {
        // The shapes and sizes are validated and the arena is sized for them: this cannot fail.
        ggml_tensor * tensor = ggml_new_tensor(ctx, t.type, t.n_dims, t.ne);
        ggml_set_name(tensor, std::string(t.name).c_str());
        if (!no_alloc && t.bytes > 0) std::memcpy(tensor->data, t.data, t.bytes);
    }
    return ctx;
}

// The gguf_context of a parsed file (and the ggml_context params ask for); nullptr after an input
// error naming function.
gguf_context * context_from(const File & f, gguf_init_params params, const char * function) {
    auto * ctx = new gguf_context;
    ctx->version = f.version();
    ctx->alignment = f.alignment();
    ctx->data_offset = f.data_offset();
    std::string why;
    ctx->pairs.resize(f.metadata().size());
    for (size_t k = 0; k < ctx->pairs.size(); ++k) {
        if (!pair_from(f.metadata()[k], k, &ctx->pairs[k], &why)) {
            delete ctx;
            return input_error(function, "gguf: " + why);
        }
    }
    for (size_t k = 0; k < f.tensors().size(); ++k) {
        const ggx::gguf::Tensor & t = f.tensors()[k];
        if (t.name.find('\0') != std::string_view::npos) {
            delete ctx;
            return input_error(function,
                               "gguf: tensor " + std::to_string(k) +
                                   ": the name contains a NUL byte, which gguf.h's C strings cannot hold");
        }
        if (t.name.size() >= GGML_MAX_NAME) {
            delete ctx;
            return input_error(function, "gguf: tensor " + std::to_string(k) + " '" + std::string(t.name) +
                                             "': the name has " + std::to_string(t.name.size()) +
                                             " bytes, a ggml tensor name at most " +
                                             std::to_string(GGML_MAX_NAME - 1));
        }
        TensorInfo info{std::string(t.name), t.type, t.n_dims, {}, t.offset, t.bytes, nullptr};
        std::copy(t.ne, t.ne + GGML_MAX_DIMS, info.ne);
        ctx->tensors.push_back(std::move(info));
    }
    if (params.ctx) {
        *params.ctx = tensor_context(f, params.no_alloc, &why);
        if (!*params.ctx) {
            delete ctx;
            return input_error(function, why);
        }
        if (!params.no_alloc) {
            int k = 0;
            for (ggml_tensor * t = ggml_get_first_tensor(*params.ctx); t;
                 t = ggml_get_next_tensor(*params.ctx, t))
                ctx->tensors[static_cast<size_t>(k++)].data = t->data;
        }
    }
    return ctx;
}

// Parses size bytes at data (or the error File::open gives) into a context; nullptr after an error.
gguf_context * init_from(std::unique_ptr<File> f, const std::string & error, gguf_init_params params,
                         const char * function) {
    if (params.ctx) *params.ctx = nullptr;
    if (!f) return input_error(function, error);
    try {
        return context_from(*f, params, function);
    } catch (const std::bad_alloc &) {
        return input_error(function, "out of memory");
    }
}

gguf_context * init_from_bytes(const std::vector<uint8_t> & bytes, gguf_init_params params,
                               const char * function) {
    std::string error;
    std::unique_ptr<File> f = File::parse(bytes.data(), bytes.size(), &error);
    return init_from(std::move(f), error, params, function);
}

// A Writer holding ctx's pairs and tensors, in order.
ggx::gguf::Writer writer_of(const gguf_context * ctx) {
    ggx::gguf::Writer w;
    for (const Pair & p : ctx->pairs) {
        if (p.type == GGUF_TYPE_STRING) {
            w.add_string(p.key, p.strings[0]);
        } else if (!p.is_array()) {
            w.add_raw(p.key, static_cast<ValueType>(p.type), p.bytes);
        } else if (p.element_type == GGUF_TYPE_STRING) {
            w.add_string_array(p.key, p.strings);
        } else {
            w.add_array(p.key, static_cast<ValueType>(p.element_type), p.bytes.data(), p.count());
        }
    }
    for (const TensorInfo & t : ctx->tensors)
        w.add_tensor(t.name, t.type, t.n_dims, t.ne, t.data, t.size);
    return w;
}

std::vector<uint8_t> meta_bytes(const gguf_context * ctx, const char * function) {
    std::vector<uint8_t> out;
    std::string error;
    if (!ctx) return misuse(out, std::string(function) + ": ctx is NULL");
    if (!writer_of(ctx).write_to(&out, &error, true))
        return misuse(std::vector<uint8_t>{}, function + std::string(": ") + error);
    return out;
}

}  // namespace

extern "C" {

gguf_context * gguf_init_empty(void) { return new gguf_context; }

gguf_context * gguf_init_from_file(const char * fname, gguf_init_params params) {
    if (!fname) return init_from(nullptr, "gguf: fname is NULL", params, __func__);
    std::string error;
    std::unique_ptr<File> f = File::open(fname, &error);
    return init_from(std::move(f), error, params, __func__);
}

gguf_context * gguf_init_from_buffer(const void * data, size_t size, gguf_init_params params) {
    std::string error;
    std::unique_ptr<File> f = File::parse(data, size, &error);
    return init_from(std::move(f), error, params, __func__);
}

gguf_context * gguf_init_from_file_ptr(FILE * file, gguf_init_params params) {
    if (params.ctx) *params.ctx = nullptr;
    if (!file) return input_error(__func__, "gguf: file is NULL");
    std::vector<uint8_t> bytes;
    try {
        constexpr size_t kChunk = size_t(1) << 20;
        size_t got = 0;
        do {
            bytes.resize(bytes.size() + kChunk);
            got = std::fread(bytes.data() + bytes.size() - kChunk, 1, kChunk, file);
            bytes.resize(bytes.size() - kChunk + got);
        } while (got == kChunk);
        if (std::ferror(file))
            return input_error(__func__, std::string("gguf: read failed: ") + std::strerror(errno));
    } catch (const std::bad_alloc &) {
        return input_error(__func__, "out of memory");
    }
    return init_from_bytes(bytes, params, __func__);
}

gguf_context * gguf_init_from_callback(gguf_reader_callback_t callback, void * userdata,
                                       size_t max_chunk_read, uint64_t max_expected_size,
                                       gguf_init_params params) {
    if (params.ctx) *params.ctx = nullptr;
    if (!callback) return input_error(__func__, "gguf: callback is NULL");
    // Reads of at most max_chunk_read bytes; without a limit, in 64 MiB steps, so that a large
    // max_expected_size costs memory only as the data arrives.
    const size_t chunk =
        max_chunk_read ? std::min<size_t>(max_chunk_read, size_t(64) << 20) : size_t(64) << 20;
    std::vector<uint8_t> bytes;
    try {
        for (uint64_t offset = 0; max_expected_size == 0 || offset < max_expected_size;) {
            const size_t want = static_cast<size_t>(
                max_expected_size == 0 ? chunk : std::min<uint64_t>(chunk, max_expected_size - offset));
            bytes.resize(static_cast<size_t>(offset) + want);
            const size_t got = callback(userdata, bytes.data() + offset, offset, want);
            if (got > want) {
                return input_error(__func__, "gguf: the callback returned " + std::to_string(got) +
                                                 " bytes for a read of " + std::to_string(want) +
                                                 " at offset " + std::to_string(offset));
            }
            offset += got;
            bytes.resize(static_cast<size_t>(offset));
            if (got < want) break;
        }
    } catch (const std::bad_alloc &) {
        return input_error(__func__, "out of memory");
    }
    return init_from_bytes(bytes, params, __func__);
}

void gguf_free(gguf_context * ctx) { delete ctx; }

const char * gguf_type_name(enum gguf_type type) {
    static const char * const names[GGUF_TYPE_COUNT] = {"u8",   "i8",  "u16", "i16", "u32", "i32", "f32",
                                                        "bool", "str", "arr", "u64", "i64", "f64"};
    return type >= 0 && type < GGUF_TYPE_COUNT ? names[type] : nullptr;
}

uint32_t gguf_get_version(const gguf_context * ctx) {
    return ctx ? ctx->version : misuse(0u, "gguf_get_version: ctx is NULL");
}
size_t gguf_get_alignment(const gguf_context * ctx) {
    return ctx ? ctx->alignment : misuse(size_t(0), "gguf_get_alignment: ctx is NULL");
}
size_t gguf_get_data_offset(const gguf_context * ctx) {
    return ctx ? ctx->data_offset : misuse(size_t(0), "gguf_get_data_offset: ctx is NULL");
}

int64_t gguf_get_n_kv(const gguf_context * ctx) {
    return ctx ? static_cast<int64_t>(ctx->pairs.size()) : misuse(int64_t(0), "gguf_get_n_kv: ctx is NULL");
}

int64_t gguf_find_key(const gguf_context * ctx, const char * key) {
    if (!ctx || !key)
        return misuse(int64_t(-1), std::string("gguf_find_key: ") + (ctx ? "key" : "ctx") + " is NULL");
    for (size_t k = 0; k < ctx->pairs.size(); ++k) {
        if (ctx->pairs[k].key == key) return static_cast<int64_t>(k);
    }
    return -1;
}

const char * gguf_get_key(const gguf_context * ctx, int64_t key_id) {
    const Pair * p = pair_at(ctx, key_id, __func__);
    return p ? p->key.c_str() : nullptr;
}

enum gguf_type gguf_get_kv_type(const gguf_context * ctx, int64_t key_id) {
    const Pair * p = pair_at(ctx, key_id, __func__);
    return p ? p->type : GGUF_TYPE_COUNT;
}

enum gguf_type gguf_get_arr_type(const gguf_context * ctx, int64_t key_id) {
    const Pair * p = array_pair(ctx, key_id, __func__);
    return p ? p->element_type : GGUF_TYPE_COUNT;
}

uint8_t gguf_get_val_u8(const gguf_context * ctx, int64_t key_id) {
    return scalar<uint8_t>(ctx, key_id, GGUF_TYPE_UINT8, __func__);
}
int8_t gguf_get_val_i8(const gguf_context * ctx, int64_t key_id) {
    return scalar<int8_t>(ctx, key_id, GGUF_TYPE_INT8, __func__);
}
uint16_t gguf_get_val_u16(const gguf_context * ctx, int64_t key_id) {
    return scalar<uint16_t>(ctx, key_id, GGUF_TYPE_UINT16, __func__);
}
int16_t gguf_get_val_i16(const gguf_context * ctx, int64_t key_id) {
    return scalar<int16_t>(ctx, key_id, GGUF_TYPE_INT16, __func__);
}
uint32_t gguf_get_val_u32(const gguf_context * ctx, int64_t key_id) {
    return scalar<uint32_t>(ctx, key_id, GGUF_TYPE_UINT32, __func__);
}
int32_t gguf_get_val_i32(const gguf_context * ctx, int64_t key_id) {
    return scalar<int32_t>(ctx, key_id, GGUF_TYPE_INT32, __func__);
}
float gguf_get_val_f32(const gguf_context * ctx, int64_t key_id) {
    return scalar<float>(ctx, key_id, GGUF_TYPE_FLOAT32, __func__);
}
uint64_t gguf_get_val_u64(const gguf_context * ctx, int64_t key_id) {
    return scalar<uint64_t>(ctx, key_id, GGUF_TYPE_UINT64, __func__);
}
int64_t gguf_get_val_i64(const gguf_context * ctx, int64_t key_id) {
    return scalar<int64_t>(ctx, key_id, GGUF_TYPE_INT64, __func__);
}
double gguf_get_val_f64(const gguf_context * ctx, int64_t key_id) {
    return scalar<double>(ctx, key_id, GGUF_TYPE_FLOAT64, __func__);
}
bool gguf_get_val_bool(const gguf_context * ctx, int64_t key_id) {
    return scalar<uint8_t>(ctx, key_id, GGUF_TYPE_BOOL, __func__) != 0;
}

const char * gguf_get_val_str(const gguf_context * ctx, int64_t key_id) {
    const Pair * p = typed_pair(ctx, key_id, GGUF_TYPE_STRING, __func__);
    return p ? p->strings[0].c_str() : nullptr;
}

const void * gguf_get_val_data(const gguf_context * ctx, int64_t key_id) {
    const Pair * p = pair_at(ctx, key_id, __func__);
    if (p && (p->is_array() || p->type == GGUF_TYPE_STRING)) {
        return misuse<const void *>(nullptr, "gguf_get_val_data: key '" + p->key + "' has type " +
                                                 type_text(*p) + ", not a fixed-size value");
    }
    return p ? p->bytes.data() : nullptr;
}

size_t gguf_get_arr_n(const gguf_context * ctx, int64_t key_id) {
    const Pair * p = array_pair(ctx, key_id, __func__);
    return p ? p->count() : 0;
}

const void * gguf_get_arr_data(const gguf_context * ctx, int64_t key_id) {
    const Pair * p = array_pair(ctx, key_id, __func__, 0);
    return p ? p->bytes.data() : nullptr;
}

const char * gguf_get_arr_str(const gguf_context * ctx, int64_t key_id, size_t i) {
    const Pair * p = array_pair(ctx, key_id, __func__, 1);
    if (p && i >= p->strings.size()) {
        return misuse<const char *>(nullptr, "gguf_get_arr_str: index " + std::to_string(i) +
                                                 " is out of range (key '" + p->key + "' has " +
                                                 std::to_string(p->strings.size()) + " strings)");
    }
    return p ? p->strings[i].c_str() : nullptr;
}

int64_t gguf_get_n_tensors(const gguf_context * ctx) {
    return ctx ? static_cast<int64_t>(ctx->tensors.size())
               : misuse(int64_t(0), "gguf_get_n_tensors: ctx is NULL");
}

int64_t gguf_find_tensor(const gguf_context * ctx, const char * name) {
    if (!ctx || !name)
        return misuse(int64_t(-1), std::string("gguf_find_tensor: ") + (ctx ? "name" : "ctx") + " is NULL");
    for (size_t k = 0; k < ctx->tensors.size(); ++k) {
        if (ctx->tensors[k].name == name) return static_cast<int64_t>(k);
    }
    return -1;
}

size_t gguf_get_tensor_offset(const gguf_context * ctx, int64_t tensor_id) {
    const TensorInfo * t = tensor_at(ctx, tensor_id, __func__);
    return t ? static_cast<size_t>(t->offset) : 0;
}
const char * gguf_get_tensor_name(const gguf_context * ctx, int64_t tensor_id) {
    const TensorInfo * t = tensor_at(ctx, tensor_id, __func__);
    return t ? t->name.c_str() : nullptr;
}
enum ggml_type gguf_get_tensor_type(const gguf_context * ctx, int64_t tensor_id) {
    const TensorInfo * t = tensor_at(ctx, tensor_id, __func__);
    return t ? t->type : GGML_TYPE_COUNT;
}
const int64_t * gguf_get_tensor_ne(const gguf_context * ctx, int64_t tensor_id) {
    const TensorInfo * t = tensor_at(ctx, tensor_id, __func__);
    return t ? t->ne : nullptr;
}
size_t gguf_get_tensor_size(const gguf_context * ctx, int64_t tensor_id) {
    const TensorInfo * t = tensor_at(ctx, tensor_id, __func__);
    return t ? t->size : 0;
}

int64_t gguf_remove_key(gguf_context * ctx, const char * key) {
    const int64_t id = gguf_find_key(ctx, key);
    if (id < 0) return id;
    ctx->pairs.erase(ctx->pairs.begin() + id);
    if (std::strcmp(key, GGUF_KEY_GENERAL_ALIGNMENT) == 0) {
        ctx->alignment = GGUF_DEFAULT_ALIGNMENT;
        relayout(ctx, 0);
    }
    return id;
}

void gguf_set_val_u8(gguf_context * ctx, const char * key, uint8_t val) {
    set_scalar(ctx, key, GGUF_TYPE_UINT8, val, __func__);
}
void gguf_set_val_i8(gguf_context * ctx, const char * key, int8_t val) {
    set_scalar(ctx, key, GGUF_TYPE_INT8, val, __func__);
}
void gguf_set_val_u16(gguf_context * ctx, const char * key, uint16_t val) {
    set_scalar(ctx, key, GGUF_TYPE_UINT16, val, __func__);
}
void gguf_set_val_i16(gguf_context * ctx, const char * key, int16_t val) {
    set_scalar(ctx, key, GGUF_TYPE_INT16, val, __func__);
}
void gguf_set_val_u32(gguf_context * ctx, const char * key, uint32_t val) {
    set_scalar(ctx, key, GGUF_TYPE_UINT32, val, __func__);
}
void gguf_set_val_i32(gguf_context * ctx, const char * key, int32_t val) {
    set_scalar(ctx, key, GGUF_TYPE_INT32, val, __func__);
}
void gguf_set_val_f32(gguf_context * ctx, const char * key, float val) {
    set_scalar(ctx, key, GGUF_TYPE_FLOAT32, val, __func__);
}
void gguf_set_val_u64(gguf_context * ctx, const char * key, uint64_t val) {
    set_scalar(ctx, key, GGUF_TYPE_UINT64, val, __func__);
}
void gguf_set_val_i64(gguf_context * ctx, const char * key, int64_t val) {
    set_scalar(ctx, key, GGUF_TYPE_INT64, val, __func__);
}
void gguf_set_val_f64(gguf_context * ctx, const char * key, double val) {
    set_scalar(ctx, key, GGUF_TYPE_FLOAT64, val, __func__);
}
void gguf_set_val_bool(gguf_context * ctx, const char * key, bool val) {
    set_scalar<uint8_t>(ctx, key, GGUF_TYPE_BOOL, val ? 1 : 0, __func__);
}

void gguf_set_val_str(gguf_context * ctx, const char * key, const char * val) {
    if (!val) return misuse("gguf_set_val_str: val is NULL");
    set_pair(ctx, Pair{key ? key : "", GGUF_TYPE_STRING, GGUF_TYPE_UINT8, {}, {val}}, __func__);
}

void gguf_set_arr_data(gguf_context * ctx, const char * key, enum gguf_type type, const void * data,
                       size_t n) {
    const size_t size =
        type >= 0 && type < GGUF_TYPE_COUNT ? ggx::gguf::value_type_size(static_cast<ValueType>(type)) : 0;
    if (size == 0)
        return misuse("gguf_set_arr_data: element type " + std::to_string(static_cast<int>(type)) +
                      " is not a fixed-size type");
    if (n > 0 && !data) return misuse("gguf_set_arr_data: data is NULL");
    if (n > std::numeric_limits<size_t>::max() / size) return misuse("gguf_set_arr_data: n overflows");
    const auto * bytes = static_cast<const uint8_t *>(data);
    set_pair(ctx,
             Pair{key ? key : "", GGUF_TYPE_ARRAY, type, std::vector<uint8_t>(bytes, bytes + n * size), {}},
             __func__);
}

void gguf_set_arr_str(gguf_context * ctx, const char * key, const char ** data, size_t n) {
    if (n > 0 && !data) return misuse("gguf_set_arr_str: data is NULL");
    Pair p{key ? key : "", GGUF_TYPE_ARRAY, GGUF_TYPE_STRING, {}, {}};
    for (size_t k = 0; k < n; ++k) {
        if (!data[k]) return misuse("gguf_set_arr_str: data[" + std::to_string(k) + "] is NULL");
        p.strings.emplace_back(data[k]);
    }
    set_pair(ctx, std::move(p), __func__);
}

void gguf_set_kv(gguf_context * ctx, const gguf_context * src) {
    if (!src) return misuse("gguf_set_kv: src is NULL");
    const std::vector<Pair> pairs = src->pairs;  // src may be ctx
    for (const Pair & p : pairs)
        set_pair(ctx, p, __func__);
}

void gguf_add_tensor(gguf_context * ctx, const ggml_tensor * tensor) {
    if (!ctx || !tensor)
        return misuse(std::string("gguf_add_tensor: ") + (ctx ? "tensor" : "ctx") + " is NULL");
    if (gguf_find_tensor(ctx, tensor->name) >= 0)
        return misuse("gguf_add_tensor: duplicate tensor name '" + std::string(tensor->name) + "'");
    if (tensor->name[0] == '\0') return misuse("gguf_add_tensor: the tensor has no name");
    TensorInfo info{tensor->name, tensor->type, stored_dims(tensor), {}, 0, 0, tensor->data};
    std::copy(tensor->ne, tensor->ne + GGML_MAX_DIMS, info.ne);
    std::string why;
    if (!tensor_size(info.type, info.ne, &info.size, &why))
        return misuse("gguf_add_tensor: tensor '" + info.name + "': " + why);
    ctx->tensors.push_back(std::move(info));
    relayout(ctx, ctx->tensors.size() - 1);
}

void gguf_set_tensor_type(gguf_context * ctx, const char * name, enum ggml_type type) {
    TensorInfo * t = tensor_named(ctx, name, __func__);
    if (!t) return;
    size_t size = 0;
    std::string why;
    if (!tensor_size(type, t->ne, &size, &why))
        return misuse("gguf_set_tensor_type: tensor '" + t->name + "': " + why);
    t->type = type;
    t->size = size;
    relayout(ctx, static_cast<size_t>(t - ctx->tensors.data()) + 1);
}

void gguf_set_tensor_data(gguf_context * ctx, const char * name, const void * data) {
    TensorInfo * t = tensor_named(ctx, name, __func__);
    if (t) t->data = data;
}

bool gguf_write_to_file_ptr(const gguf_context * ctx, FILE * file, bool only_meta) {
    if (!ctx || !file)
        return misuse(false, std::string("gguf_write_to_file_ptr: ") + (ctx ? "file" : "ctx") + " is NULL");
    std::string error;
    if (writer_of(ctx).write(file, &error, only_meta)) return true;
    input_error(__func__, error);
    return false;
}

bool gguf_write_to_file(const gguf_context * ctx, const char * fname, bool only_meta) {
    if (!ctx || !fname)
        return misuse(false, std::string("gguf_write_to_file: ") + (ctx ? "fname" : "ctx") + " is NULL");
    std::string error;
    if (writer_of(ctx).write(fname, &error, only_meta)) return true;
    input_error(__func__, error);
    return false;
}

size_t gguf_get_meta_size(const gguf_context * ctx) { return meta_bytes(ctx, __func__).size(); }

void gguf_get_meta_data(const gguf_context * ctx, void * data) {
    if (!data) return misuse("gguf_get_meta_data: data is NULL");
    const std::vector<uint8_t> meta = meta_bytes(ctx, __func__);
    std::memcpy(data, meta.data(), meta.size());
}

}  // extern "C"
