// The C++ side of tests/gguf/gguf_oracle.py, which checks ggx's gguf.h and row conversions against
// PyPI's gguf package. It uses only ggx's public API. Commands (files hold raw bytes; JSON on stdout):
//   types                      every ggml_type: name, block size and bytes, and whether ggx converts
//                              it (ggml_dequantize_row), quantizes it (ggml_quantize_row) and takes it
//                              as a GGUF tensor type (gguf_add_tensor)
//   dump FILE                  every key, value and tensor of FILE read through gguf.h; floats are
//                              given as their bit patterns, tensor data in hex; {"error": ...} when
//                              gguf_init_from_file refuses the file
//   dequantize TYPE N IN OUT   the N values of the rows of type id TYPE at IN, as F32, into OUT
//   quantize TYPE N IN OUT     N F32 values at IN as rows of type id TYPE into OUT
//   rewrite IN OUT             IN read through gguf.h and built again with its setters (one per value
//                              type, gguf_add_tensor), written to OUT with gguf_write_to_file
#include <ggml-backend.h>
#include <ggml-ext.h>
#include <ggml.h>
#include <gguf.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const std::string & message) {
    std::fprintf(stderr, "gguf_oracle: %s\n", message.c_str());
    std::exit(1);
}

std::vector<uint8_t> read_bytes(const char * path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) die(std::string("cannot read ") + path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const char * path, const void * data, size_t n) {
    std::ofstream out(path, std::ios::binary);
    out.write(static_cast<const char *>(data), static_cast<std::streamsize>(n));
    if (!out) die(std::string("cannot write ") + path);
}

std::string json_string(const char * s) {
    std::string out = "\"";
    for (const char * p = s; *p; ++p) {
        const auto c = static_cast<unsigned char>(*p);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += *p;
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += *p;  // UTF-8 bytes pass through
        }
    }
    return out + "\"";
}

std::string hex(const void * data, size_t n) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * n);
    for (size_t k = 0; k < n; ++k) {
        const uint8_t b = static_cast<const uint8_t *>(data)[k];
        out += digits[b >> 4];
        out += digits[b & 15];
    }
    return out;
}

// One fixed-size value at p as JSON: integers as numbers, floats as their bit patterns, bools.
std::string json_scalar(enum gguf_type type, const void * p) {
    auto load = [p](auto v) {
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    switch (type) {
        case GGUF_TYPE_UINT8:
            return std::to_string(load(uint8_t{}));
        case GGUF_TYPE_INT8:
            return std::to_string(load(int8_t{}));
        case GGUF_TYPE_UINT16:
            return std::to_string(load(uint16_t{}));
        case GGUF_TYPE_INT16:
            return std::to_string(load(int16_t{}));
        case GGUF_TYPE_UINT32:
        case GGUF_TYPE_FLOAT32:
            return std::to_string(load(uint32_t{}));
        case GGUF_TYPE_INT32:
            return std::to_string(load(int32_t{}));
        case GGUF_TYPE_UINT64:
        case GGUF_TYPE_FLOAT64:
            return std::to_string(load(uint64_t{}));
        case GGUF_TYPE_INT64:
            return std::to_string(load(int64_t{}));
        case GGUF_TYPE_BOOL:
            return load(uint8_t{}) ? "true" : "false";
        default:
            die("not a fixed-size type: " + std::to_string(type));
    }
}

size_t scalar_size(enum gguf_type type) {
    switch (type) {
        case GGUF_TYPE_UINT8:
        case GGUF_TYPE_INT8:
        case GGUF_TYPE_BOOL:
            return 1;
        case GGUF_TYPE_UINT16:
        case GGUF_TYPE_INT16:
            return 2;
        case GGUF_TYPE_UINT32:
        case GGUF_TYPE_INT32:
        case GGUF_TYPE_FLOAT32:
            return 4;
        default:
            return 8;
    }
}

std::string json_value(const gguf_context * g, int64_t k) {
    const enum gguf_type type = gguf_get_kv_type(g, k);
    if (type == GGUF_TYPE_STRING) return json_string(gguf_get_val_str(g, k));
    if (type != GGUF_TYPE_ARRAY) return json_scalar(type, gguf_get_val_data(g, k));
    const enum gguf_type element = gguf_get_arr_type(g, k);
    const size_t n = gguf_get_arr_n(g, k);
    std::string out = "[";
    for (size_t i = 0; i < n; ++i) {
        if (i > 0) out += ", ";
        if (element == GGUF_TYPE_STRING) {
            out += json_string(gguf_get_arr_str(g, k, i));
        } else {
            out += json_scalar(
                element, static_cast<const uint8_t *>(gguf_get_arr_data(g, k)) + i * scalar_size(element));
        }
    }
    return out + "]";
}

struct Opened {
    gguf_context * gguf = nullptr;
    ggml_context * tensors = nullptr;
    ~Opened() {
        gguf_free(gguf);
        if (tensors) ggml_free(tensors);
    }
};

// Opens path with its tensor data; false (the reader's message printed as {"error": ...}) if refused.
bool open_with_data(const char * path, Opened * f) {
    f->gguf = gguf_init_from_file(path, {/*no_alloc=*/false, &f->tensors});
    if (f->gguf) return true;
    std::printf("{\"error\": %s}\n", json_string(ggml_backend_get_last_error()).c_str());
    return false;
}

// The tensor of the ggml_context that the gguf_context's tensor k describes, with its name, type
// and shape.
const ggml_tensor * context_tensor(const Opened & f, int64_t k) {
    const char * name = gguf_get_tensor_name(f.gguf, k);
    const ggml_tensor * t = ggml_get_tensor(f.tensors, name);
    if (!t || t->type != gguf_get_tensor_type(f.gguf, k) ||
        std::memcmp(t->ne, gguf_get_tensor_ne(f.gguf, k), sizeof t->ne) != 0 ||
        ggml_nbytes(t) != gguf_get_tensor_size(f.gguf, k)) {
        die(std::string("the ggml_context's tensor '") + name + "' differs from its tensor info");
    }
    return t;
}

int dump(const char * path) {
    Opened f;
    if (!open_with_data(path, &f)) return 0;
    const gguf_context * g = f.gguf;
    std::printf("{\"version\": %u, \"alignment\": %zu, \"data_offset\": %zu,\n \"kv\": [",
                gguf_get_version(g), gguf_get_alignment(g), gguf_get_data_offset(g));
    for (int64_t k = 0; k < gguf_get_n_kv(g); ++k) {
        const enum gguf_type type = gguf_get_kv_type(g, k);
        std::printf("%s\n  {\"key\": %s, \"type\": \"%s\"", k ? "," : "",
                    json_string(gguf_get_key(g, k)).c_str(), gguf_type_name(type));
        if (type == GGUF_TYPE_ARRAY)
            std::printf(", \"arr_type\": \"%s\"", gguf_type_name(gguf_get_arr_type(g, k)));
        std::printf(", \"value\": %s}", json_value(g, k).c_str());
    }
    std::printf("],\n \"tensors\": [");
    for (int64_t k = 0; k < gguf_get_n_tensors(g); ++k) {
        const ggml_tensor * t = context_tensor(f, k);
        const int64_t * ne = gguf_get_tensor_ne(g, k);
        std::printf(
            "%s\n  {\"name\": %s, \"type\": %d, \"ne\": [%lld, %lld, %lld, %lld], \"offset\": %zu, "
            "\"size\": %zu, \"data\": \"%s\"}",
            k ? "," : "", json_string(gguf_get_tensor_name(g, k)).c_str(), int(gguf_get_tensor_type(g, k)),
            (long long)ne[0], (long long)ne[1], (long long)ne[2], (long long)ne[3],
            gguf_get_tensor_offset(g, k), gguf_get_tensor_size(g, k), hex(t->data, ggml_nbytes(t)).c_str());
    }
    std::printf("]}\n");
    return 0;
}

// Whether gguf_add_tensor takes a tensor of type (a misuse otherwise, made to return).
bool gguf_takes(enum ggml_type type) {
    ggml_init_params params = {/*mem_size=*/ggml_tensor_overhead(), /*mem_buffer=*/nullptr,
                               /*no_alloc=*/true};
    ggml_context * ctx = ggml_init(params);
    ggml_tensor * t = ggml_new_tensor_1d(ctx, type, ggml_blck_size(type));
    ggml_set_name(t, "t");
    gguf_context * g = gguf_init_empty();
    const enum ggml_ext_error_mode mode = ggml_ext_get_error_mode();
    ggml_ext_set_error_mode(GGML_EXT_ERROR_RETURN);
    gguf_add_tensor(g, t);
    ggml_ext_set_error_mode(mode);
    const bool taken = gguf_get_n_tensors(g) == 1;
    gguf_free(g);
    ggml_free(ctx);
    return taken;
}

int types() {
    std::printf("[");
    bool first = true;
    for (int id = 0; id < GGML_TYPE_COUNT; ++id) {
        const auto type = static_cast<enum ggml_type>(id);
        if (ggml_type_size(type) == 0) continue;  // a removed id
        const auto n = ggml_blck_size(type);
        std::vector<float> values(static_cast<size_t>(n));
        std::vector<uint8_t> row(ggml_row_size(type, n));
        const bool converts = ggml_dequantize_row(type, row.data(), values.data(), n);
        const bool quantizes = ggml_quantize_row(type, values.data(), row.data(), n) != 0;
        std::printf(
            "%s\n {\"id\": %d, \"name\": \"%s\", \"block\": %lld, \"bytes\": %zu, \"converts\": %s, "
            "\"quantizes\": %s, \"gguf\": %s}",
            first ? "" : ",", id, ggml_type_name(type), (long long)n, ggml_type_size(type),
            converts ? "true" : "false", quantizes ? "true" : "false", gguf_takes(type) ? "true" : "false");
        first = false;
    }
    std::printf("]\n");
    return 0;
}

enum ggml_type parse_type(const char * s) {
    const int id = std::atoi(s);
    if (id < 0 || id >= GGML_TYPE_COUNT || ggml_type_size(static_cast<enum ggml_type>(id)) == 0)
        die(std::string("no type ") + s);
    return static_cast<enum ggml_type>(id);
}

int convert(bool to_float, const char * type_arg, const char * n_arg, const char * in, const char * out) {
    const enum ggml_type type = parse_type(type_arg);
    const int64_t n = std::atoll(n_arg);
    const std::vector<uint8_t> input = read_bytes(in);
    const size_t row_bytes = ggml_row_size(type, n);
    if (n <= 0 || n % ggml_blck_size(type) != 0 || input.size() != (to_float ? row_bytes : n * sizeof(float)))
        die(std::string("bad input size for ") + in);
    std::vector<uint8_t> result(to_float ? n * sizeof(float) : row_bytes);
    const bool ok = to_float
                        ? ggml_dequantize_row(type, input.data(), reinterpret_cast<float *>(result.data()), n)
                        : ggml_quantize_row(type, reinterpret_cast<const float *>(input.data()),
                                            result.data(), n) == row_bytes;
    if (!ok) die(std::string("no conversion for ") + ggml_type_name(type));
    write_bytes(out, result.data(), result.size());
    return 0;
}

// Sets pair k of src in dst with the setter of its type.
void copy_pair(gguf_context * dst, const gguf_context * src, int64_t k) {
    const char * key = gguf_get_key(src, k);
    switch (gguf_get_kv_type(src, k)) {
        case GGUF_TYPE_UINT8:
            return gguf_set_val_u8(dst, key, gguf_get_val_u8(src, k));
        case GGUF_TYPE_INT8:
            return gguf_set_val_i8(dst, key, gguf_get_val_i8(src, k));
        case GGUF_TYPE_UINT16:
            return gguf_set_val_u16(dst, key, gguf_get_val_u16(src, k));
        case GGUF_TYPE_INT16:
            return gguf_set_val_i16(dst, key, gguf_get_val_i16(src, k));
        case GGUF_TYPE_UINT32:
            return gguf_set_val_u32(dst, key, gguf_get_val_u32(src, k));
        case GGUF_TYPE_INT32:
            return gguf_set_val_i32(dst, key, gguf_get_val_i32(src, k));
        case GGUF_TYPE_FLOAT32:
            return gguf_set_val_f32(dst, key, gguf_get_val_f32(src, k));
        case GGUF_TYPE_UINT64:
            return gguf_set_val_u64(dst, key, gguf_get_val_u64(src, k));
        case GGUF_TYPE_INT64:
            return gguf_set_val_i64(dst, key, gguf_get_val_i64(src, k));
        case GGUF_TYPE_FLOAT64:
            return gguf_set_val_f64(dst, key, gguf_get_val_f64(src, k));
        case GGUF_TYPE_BOOL:
            return gguf_set_val_bool(dst, key, gguf_get_val_bool(src, k));
        case GGUF_TYPE_STRING:
            return gguf_set_val_str(dst, key, gguf_get_val_str(src, k));
        case GGUF_TYPE_ARRAY: {
            const enum gguf_type element = gguf_get_arr_type(src, k);
            const size_t n = gguf_get_arr_n(src, k);
            if (element != GGUF_TYPE_STRING)
                return gguf_set_arr_data(dst, key, element, gguf_get_arr_data(src, k), n);
            std::vector<const char *> strings(n);
            for (size_t i = 0; i < n; ++i)
                strings[i] = gguf_get_arr_str(src, k, i);
            return gguf_set_arr_str(dst, key, strings.data(), n);
        }
        default:
            die(std::string("key ") + key + " has no type");
    }
}

int rewrite(const char * in, const char * out) {
    Opened f;
    if (!open_with_data(in, &f)) return 1;
    gguf_context * g = gguf_init_empty();
    for (int64_t k = 0; k < gguf_get_n_kv(f.gguf); ++k)
        copy_pair(g, f.gguf, k);
    for (int64_t k = 0; k < gguf_get_n_tensors(f.gguf); ++k)
        gguf_add_tensor(g, context_tensor(f, k));
    const bool ok = gguf_write_to_file(g, out, /*only_meta=*/false);
    gguf_free(g);
    if (!ok) die(std::string("gguf_write_to_file: ") + ggml_backend_get_last_error());
    return 0;
}

}  // namespace

int main(int argc, char ** argv) {
    const std::string command = argc > 1 ? argv[1] : "";
    if (command == "types" && argc == 2) return types();
    if (command == "dump" && argc == 3) return dump(argv[2]);
    if ((command == "dequantize" || command == "quantize") && argc == 6)
        return convert(command == "dequantize", argv[2], argv[3], argv[4], argv[5]);
    if (command == "rewrite" && argc == 4) return rewrite(argv[2], argv[3]);
    std::fprintf(stderr,
                 "usage: gguf_oracle types | dump FILE | dequantize TYPE N IN OUT | quantize TYPE N IN OUT"
                 " | rewrite IN OUT\n");
    return 2;
}
