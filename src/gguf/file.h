// ggx's GGUF (version 2 and 3, little-endian) reader and writer, under the public gguf.h (api.cpp)
// and used directly by ggx's tools and tests. See docs/gguf.md.
//
// Reading: File::open maps a file read-only; File::parse reads a caller's buffer in place (no copy;
// the buffer must outlive the File). Every count, length, offset, size and type is validated against
// the file's size before it is used; a malformed file yields nullptr and an error naming the field
// and its byte offset ("gguf: offset 24: kv_count 18446744073709551615 ..."), never a crash or an
// out-of-bounds read. All string_views and data pointers returned point into the mapping/buffer and
// stay valid while the File lives; names and strings are not NUL-terminated.
//
// Writing: Writer collects metadata and tensors (pointers to the caller's data, which must stay valid
// until write) and writes a version 3 file with every tensor's data aligned to the alignment, or only
// its metadata (header, key/value pairs, tensor infos and the padding up to the data section).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ggml.h"

namespace ggx::gguf {

// GGUF metadata value types, numbered as in the file.
enum class ValueType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};

// "u8", "string", "array", ...; "unknown" for other values.
const char * value_type_name(ValueType type);
// Bytes of one element of a fixed-size value type (1 for BOOL); 0 for STRING, ARRAY and unknown types.
size_t value_type_size(ValueType type);

// GGUF tensor type ids; they are enum ggml_type's values.
inline constexpr uint32_t kGgufTypeF32 = 0;
inline constexpr uint32_t kGgufTypeF16 = 1;
inline constexpr uint32_t kGgufTypeQ4_0 = 2;
inline constexpr uint32_t kGgufTypeQ8_0 = 8;
inline constexpr uint32_t kGgufTypeI8 = 24;
inline constexpr uint32_t kGgufTypeI16 = 25;
inline constexpr uint32_t kGgufTypeI32 = 26;
inline constexpr uint32_t kGgufTypeBF16 = 30;

// The ggml type of a GGUF tensor type id (every type of enum ggml_type, whose ids GGUF uses; files
// hold tensors of types ggx does not convert too); nullopt for removed and unknown ids.
std::optional<ggml_type> type_from_gguf(uint32_t gguf_type);
// The GGUF tensor type id of a type: its enum value.
uint32_t type_to_gguf(ggml_type type);

// The default alignment of the data section and of each tensor's offset.
inline constexpr size_t kDefaultAlignment = 32;
// The metadata key that overrides the alignment (an integer, a nonzero power of two).
inline constexpr std::string_view kAlignmentKey = "general.alignment";
// Arrays may nest (arrays of arrays) at most this deep; a plain array has depth 1.
inline constexpr int kMaxArrayDepth = 8;

// One metadata value, a view into the file.
struct Value {
    ValueType type = ValueType::U8;
    // Scalars: integers (U8..I64, BOOL as 0/1) in i (signed types, and unsigned ones up to INT64_MAX)
    // and u (unsigned types, and signed ones >= 0); floats (F32, F64) in f; strings in str.
    int64_t i = 0;
    uint64_t u = 0;
    double f = 0;
    std::string_view str;
    // Arrays: the element type and count. Fixed-size elements are packed little-endian at raw
    // (count * value_type_size(element_type) bytes, not necessarily aligned); strings and nested
    // arrays have one Value each in items.
    ValueType element_type = ValueType::U8;
    uint64_t count = 0;
    const uint8_t * raw = nullptr;
    std::vector<Value> items;

    bool is_integer() const;  // U8..I64 (not BOOL)
    bool is_float() const;    // F32, F64
};

struct KeyValue {
    std::string_view key;
    Value value;
};

struct Tensor {
    std::string_view name;
    ggml_type type = GGML_TYPE_F32;
    int n_dims = 0;
    int64_t ne[GGML_MAX_DIMS] = {1, 1, 1, 1};  // dimensions past n_dims are 1
    uint64_t offset = 0;                       // relative to the data section
    const void * data = nullptr;               // into the mapping/buffer
    size_t bytes = 0;                          // from type and shape
    int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

class File {
public:
    // Maps path read-only and parses it; nullptr and *error on failure.
    static std::unique_ptr<File> open(const std::string & path, std::string * error);
    // Parses size bytes at data in place (no copy); nullptr and *error on failure.
    static std::unique_ptr<File> parse(const void * data, size_t size, std::string * error);

    ~File();
    File(const File &) = delete;
    File & operator=(const File &) = delete;

    uint32_t version() const { return version_; }
    size_t alignment() const { return alignment_; }
    size_t data_offset() const { return data_offset_; }  // start of the data section in the file
    size_t size() const { return size_; }
    const uint8_t * bytes() const { return base_; }

    const std::vector<Tensor> & tensors() const { return tensors_; }
    const Tensor * find(std::string_view name) const;  // nullptr if absent

    const std::vector<KeyValue> & metadata() const { return kvs_; }
    const Value * find_value(std::string_view key) const;  // nullptr if absent

    // Typed lookups: nullopt (and *error, if given, saying "absent" or naming both types) when the key
    // is absent or its value does not have the type asked for (or does not fit it).
    std::optional<std::string_view> get_string(std::string_view key, std::string * error = nullptr) const;
    // Any integer type whose value fits int64_t (resp. uint64_t).
    std::optional<int64_t> get_int(std::string_view key, std::string * error = nullptr) const;
    std::optional<uint64_t> get_uint(std::string_view key, std::string * error = nullptr) const;
    // F32 or F64.
    std::optional<double> get_float(std::string_view key, std::string * error = nullptr) const;
    std::optional<bool> get_bool(std::string_view key, std::string * error = nullptr) const;
    // Arrays of any integer type (values fitting int64_t), of F32/F64, of strings.
    std::optional<std::vector<int64_t>> get_int_array(std::string_view key,
                                                      std::string * error = nullptr) const;
    std::optional<std::vector<double>> get_float_array(std::string_view key,
                                                       std::string * error = nullptr) const;
    std::optional<std::vector<std::string_view>> get_string_array(std::string_view key,
                                                                  std::string * error = nullptr) const;

private:
    File() = default;
    bool parse_all(std::string * error);

    const uint8_t * base_ = nullptr;
    size_t size_ = 0;
    void * map_ = nullptr;  // mmap'd region (open) or nullptr (parse)
    size_t map_size_ = 0;
    int fd_ = -1;
    uint32_t version_ = 0;
    size_t alignment_ = kDefaultAlignment;
    size_t data_offset_ = 0;
    std::vector<KeyValue> kvs_;
    std::vector<Tensor> tensors_;
    std::unordered_map<std::string_view, size_t> kv_index_;      // key -> index in kvs_
    std::unordered_map<std::string_view, size_t> tensor_index_;  // name -> index in tensors_
};

class Writer {
public:
    explicit Writer(size_t alignment = kDefaultAlignment);

    // Alignment of the data section and each tensor (a nonzero power of two). A value other than the
    // default is written first as the u32 kv general.alignment, unless that key was added as an
    // integer (then it is written in its place and sets the alignment, as set_alignment does).
    void set_alignment(size_t alignment);

    // Metadata, written in the order added. A duplicate or empty key is an error reported by write.
    void add_u8(std::string_view key, uint8_t v);
    void add_i8(std::string_view key, int8_t v);
    void add_u16(std::string_view key, uint16_t v);
    void add_i16(std::string_view key, int16_t v);
    void add_u32(std::string_view key, uint32_t v);
    void add_i32(std::string_view key, int32_t v);
    void add_u64(std::string_view key, uint64_t v);
    void add_i64(std::string_view key, int64_t v);
    void add_f32(std::string_view key, float v);
    void add_f64(std::string_view key, double v);
    void add_bool(std::string_view key, bool v);
    void add_string(std::string_view key, std::string_view v);
    // An array of fixed-size elements (element_type neither STRING nor ARRAY), count elements packed at
    // data in host (little-endian) order.
    void add_array(std::string_view key, ValueType element_type, const void * data, size_t count);
    void add_array(std::string_view key, std::span<const int32_t> v) {
        add_array(key, ValueType::I32, v.data(), v.size());
    }
    void add_array(std::string_view key, std::span<const int64_t> v) {
        add_array(key, ValueType::I64, v.data(), v.size());
    }
    void add_array(std::string_view key, std::span<const float> v) {
        add_array(key, ValueType::F32, v.data(), v.size());
    }
    void add_array(std::string_view key, std::span<const double> v) {
        add_array(key, ValueType::F64, v.data(), v.size());
    }
    void add_string_array(std::string_view key, std::span<const std::string> v);
    // A value given already encoded (the bytes after the u32 value type), e.g. nested arrays. Not checked.
    void add_raw(std::string_view key, ValueType type, std::vector<uint8_t> encoded);

    // A tensor of type and shape ne[0..n_dims) (1 <= n_dims <= 4) whose data (bytes, which must equal
    // the size the type and shape imply) stays valid until write. Names must be unique and non-empty.
    // data may be nullptr for a file written with only_meta; writing its data is then an error.
    void add_tensor(std::string_view name, ggml_type type, int n_dims, const int64_t * ne, const void * data,
                    size_t bytes);

    // Writes the file (version 3), or only its metadata; false and *error on a recorded add error, a
    // tensor without data or an I/O error (the file is then removed).
    bool write(const std::string & path, std::string * error, bool only_meta = false) const;
    // The same bytes to an open stream, from its current position (offsets are relative to it).
    bool write(std::FILE * file, std::string * error, bool only_meta = false) const;
    // The same bytes into memory.
    bool write_to(std::vector<uint8_t> * out, std::string * error, bool only_meta = false) const;

private:
    struct PendingTensor {
        std::string name;
        ggml_type type;
        int n_dims;
        int64_t ne[GGML_MAX_DIMS];
        const void * data;
        size_t bytes;
    };
    void add_kv(std::string_view key, ValueType type, std::vector<uint8_t> encoded);
    template <typename Sink>
    bool emit(Sink & sink, bool only_meta, std::string * error) const;
    bool check(bool only_meta, std::string * error) const;
    // Validates an added general.alignment and takes its value; the error, or empty.
    std::string add_alignment_key(ValueType type, const std::vector<uint8_t> & encoded);

    size_t alignment_;
    std::vector<uint8_t> kv_bytes_;  // encoded key/value pairs
    uint64_t kv_count_ = 0;
    std::vector<std::string> keys_;
    std::vector<PendingTensor> tensors_;
    bool alignment_key_added_ = false;  // general.alignment is among the added pairs
    std::string error_;                 // the first add error
};

}  // namespace ggx::gguf
