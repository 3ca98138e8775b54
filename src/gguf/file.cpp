// ggx's GGUF reader and writer: see gguf.h and docs/gguf.md.
#include "gguf/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

namespace ggx::gguf {

namespace {

template <typename... Args>
std::string cat(const Args &... args) {
    std::ostringstream s;
    (s << ... << args);
    return s.str();
}

// A name or key from the file, printable: quoted, non-printable bytes escaped, long ones cut.
std::string quote(std::string_view s) {
    std::string out = "'";
    const size_t limit = 80;
    for (size_t k = 0; k < s.size() && k < limit; ++k) {
        const unsigned char c = static_cast<unsigned char>(s[k]);
        if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
            out += static_cast<char>(c);
        } else {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\x%02x", c);
            out += buf;
        }
    }
    if (s.size() > limit) out += cat("...(", s.size(), " bytes)");
    out += "'";
    return out;
}

bool mul_overflow(uint64_t a, uint64_t b, uint64_t * out) { return __builtin_mul_overflow(a, b, out); }
bool add_overflow(uint64_t a, uint64_t b, uint64_t * out) { return __builtin_add_overflow(a, b, out); }

// Round x up to a multiple of the power of two a; false on overflow.
bool align_up(uint64_t x, uint64_t a, uint64_t * out) {
    uint64_t t;
    if (add_overflow(x, a - 1, &t)) return false;
    *out = t & ~(a - 1);
    return true;
}

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::F64); }

// Smallest encoding of one element of type t: fixed size, 8 (string length), 12 (array header).
size_t min_encoded_size(ValueType t) {
    if (t == ValueType::STRING) return 8;
    if (t == ValueType::ARRAY) return 12;
    return value_type_size(t);
}

bool is_signed_int(ValueType t) {
    return t == ValueType::I8 || t == ValueType::I16 || t == ValueType::I32 || t == ValueType::I64;
}
bool is_unsigned_int(ValueType t) {
    return t == ValueType::U8 || t == ValueType::U16 || t == ValueType::U32 || t == ValueType::U64;
}

// Decodes one fixed-size scalar of type t at p into v's i/u/f fields.
void decode_scalar(ValueType t, const uint8_t * p, Value * v) {
    auto load = [p](auto x) {
        std::memcpy(&x, p, sizeof(x));
        return x;
    };
    int64_t s = 0;
    uint64_t u = 0;
    switch (t) {
        case ValueType::U8:
            u = load(uint8_t{});
            break;
        case ValueType::BOOL:
            u = load(uint8_t{});
            break;
        case ValueType::U16:
            u = load(uint16_t{});
            break;
        case ValueType::U32:
            u = load(uint32_t{});
            break;
        case ValueType::U64:
            u = load(uint64_t{});
            break;
        case ValueType::I8:
            s = load(int8_t{});
            break;
        case ValueType::I16:
            s = load(int16_t{});
            break;
        case ValueType::I32:
            s = load(int32_t{});
            break;
        case ValueType::I64:
            s = load(int64_t{});
            break;
        case ValueType::F32:
            v->f = load(float{});
            return;
        case ValueType::F64:
            v->f = load(double{});
            return;
        default:
            return;
    }
    if (is_signed_int(t)) {
        v->i = s;
        v->u = s >= 0 ? static_cast<uint64_t>(s) : 0;
    } else {
        v->u = u;
        v->i = u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? static_cast<int64_t>(u) : 0;
    }
}

// Where a value sits, for error messages: "kv 3 'tokenizer.tokens'[17][2]", built only on failure.
struct Path {
    const Path * parent;
    size_t kv_index;
    std::string_view key;
    uint64_t element;
    std::string str() const {
        if (!parent) return cat("kv ", kv_index, " ", quote(key));
        return cat(parent->str(), "[", element, "]");
    }
};

// A field's name for an error message: a string, or a function that builds it (only on failure).
template <typename W>
std::string name_of(const W & what) {
    if constexpr (std::is_invocable_v<W>) {
        return what();
    } else {
        return std::string(what);
    }
}

class Cursor {
public:
    Cursor(const uint8_t * base, size_t size, std::string * error)
        : base_(base), size_(size), error_(error) {}

    size_t pos() const { return pos_; }
    size_t remaining() const { return size_ - pos_; }
    const uint8_t * here() const { return base_ + pos_; }
    void skip(size_t n) { pos_ += n; }  // n <= remaining(), checked by the caller

    bool fail(size_t at, const std::string & message) {
        if (error_) *error_ = cat("gguf: offset ", at, ": ", message);
        return false;
    }
    template <typename W>
    bool need(size_t n, const W & what) {
        if (n <= remaining()) return true;
        return fail(pos_, cat("truncated: ", name_of(what), " needs ", n, " bytes, the file has ",
                              remaining(), " left (file size ", size_, ")"));
    }
    template <typename T, typename W>
    bool read(T * v, const W & what) {
        if (!need(sizeof(T), what)) return false;
        std::memcpy(v, base_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return true;
    }
    template <typename W>
    bool read_string(std::string_view * s, const W & what) {
        const size_t at = pos_;
        uint64_t len = 0;
        if (!read(&len, [&] { return name_of(what) + " length"; })) return false;
        if (len > remaining()) {
            return fail(at, cat(name_of(what), " length ", len, " exceeds the ", remaining(),
                                " bytes left in the file (file size ", size_, ")"));
        }
        *s = std::string_view(reinterpret_cast<const char *>(base_ + pos_), static_cast<size_t>(len));
        pos_ += static_cast<size_t>(len);
        return true;
    }

private:
    const uint8_t * base_;
    size_t size_;
    size_t pos_ = 0;
    std::string * error_;
};

bool read_value(Cursor & c, ValueType type, int depth, const Path & path, Value * v) {
    v->type = type;
    const size_t at = c.pos();
    switch (type) {
        case ValueType::STRING:
            return c.read_string(&v->str, [&] { return path.str() + " string"; });
        case ValueType::ARRAY: {
            if (depth + 1 > kMaxArrayDepth) {
                return c.fail(at, cat(path.str(), ": arrays nested deeper than ", kMaxArrayDepth, " levels"));
            }
            uint32_t et = 0;
            if (!c.read(&et, [&] { return path.str() + " array element type"; })) return false;
            if (!valid_value_type(et))
                return c.fail(at, cat(path.str(), ": unknown array element type ", et));
            v->element_type = static_cast<ValueType>(et);
            const size_t count_at = c.pos();
            if (!c.read(&v->count, [&] { return path.str() + " array count"; })) return false;
            const size_t min_size = min_encoded_size(v->element_type);
            if (v->count > c.remaining() / min_size) {
                return c.fail(count_at, cat(path.str(), ": array count ", v->count, " of ",
                                            value_type_name(v->element_type), " needs at least ", min_size,
                                            " bytes each, the file has ", c.remaining(), " left"));
            }
            if (v->element_type != ValueType::STRING && v->element_type != ValueType::ARRAY) {
                v->raw = c.here();
                if (v->element_type == ValueType::BOOL) {
                    for (uint64_t k = 0; k < v->count; ++k) {
                        if (v->raw[k] > 1) {
                            return c.fail(at + 12 + k, cat(path.str(), "[", k, "]: bool value ",
                                                           int(v->raw[k]), " is neither 0 nor 1"));
                        }
                    }
                }
                c.skip(static_cast<size_t>(v->count * min_size));  // count * size <= remaining: checked
                return true;
            }
            v->items.resize(static_cast<size_t>(v->count));
            for (uint64_t k = 0; k < v->count; ++k) {
                const Path child{&path, 0, {}, k};
                if (!read_value(c, v->element_type, depth + 1, child, &v->items[k])) return false;
            }
            return true;
        }
        default: {
            const size_t n = value_type_size(type);
            if (n == 0)
                return c.fail(at, cat(path.str(), ": unknown value type ", static_cast<uint32_t>(type)));
            if (!c.need(n, [&] { return cat(path.str(), " ", value_type_name(type), " value"); }))
                return false;
            if (type == ValueType::BOOL && *c.here() > 1) {
                return c.fail(at, cat(path.str(), ": bool value ", int(*c.here()), " is neither 0 nor 1"));
            }
            decode_scalar(type, c.here(), v);
            c.skip(n);
            return true;
        }
    }
}

// Minimum bytes of one key/value pair (8-byte length, a 1-byte key, the type, a 1-byte value) and one
// tensor info (8-byte length, a 1-byte name, n_dims, one ne, the type, the offset).
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;

}  // namespace

const char * value_type_name(ValueType type) {
    switch (type) {
        case ValueType::U8:
            return "u8";
        case ValueType::I8:
            return "i8";
        case ValueType::U16:
            return "u16";
        case ValueType::I16:
            return "i16";
        case ValueType::U32:
            return "u32";
        case ValueType::I32:
            return "i32";
        case ValueType::F32:
            return "f32";
        case ValueType::BOOL:
            return "bool";
        case ValueType::STRING:
            return "string";
        case ValueType::ARRAY:
            return "array";
        case ValueType::U64:
            return "u64";
        case ValueType::I64:
            return "i64";
        case ValueType::F64:
            return "f64";
    }
    return "unknown";
}

size_t value_type_size(ValueType type) {
    switch (type) {
        case ValueType::U8:
        case ValueType::I8:
        case ValueType::BOOL:
            return 1;
        case ValueType::U16:
        case ValueType::I16:
            return 2;
        case ValueType::U32:
        case ValueType::I32:
        case ValueType::F32:
            return 4;
        case ValueType::U64:
        case ValueType::I64:
        case ValueType::F64:
            return 8;
        default:
            return 0;
    }
}

static_assert(kGgufTypeF32 == GGML_TYPE_F32 && kGgufTypeF16 == GGML_TYPE_F16 &&
              kGgufTypeQ4_0 == GGML_TYPE_Q4_0 && kGgufTypeQ8_0 == GGML_TYPE_Q8_0 &&
              kGgufTypeI8 == GGML_TYPE_I8 && kGgufTypeI16 == GGML_TYPE_I16 && kGgufTypeI32 == GGML_TYPE_I32 &&
              kGgufTypeBF16 == GGML_TYPE_BF16);

// Every type of enum ggml_type (GGUF uses its ids); removed ids have no size.
std::optional<ggml_type> type_from_gguf(uint32_t gguf_type) {
    if (gguf_type >= static_cast<uint32_t>(GGML_TYPE_COUNT)) return std::nullopt;
    const auto type = static_cast<ggml_type>(gguf_type);
    if (ggml_type_size(type) == 0) return std::nullopt;
    return type;
}

uint32_t type_to_gguf(ggml_type type) { return static_cast<uint32_t>(type); }

bool Value::is_integer() const { return is_signed_int(type) || is_unsigned_int(type); }
bool Value::is_float() const { return type == ValueType::F32 || type == ValueType::F64; }

// ---------------------------------------------------------------------------------------------------
// File

File::~File() {
    if (map_) munmap(map_, map_size_);
    if (fd_ >= 0) close(fd_);
}

std::unique_ptr<File> File::open(const std::string & path, std::string * error) {
    std::unique_ptr<File> f(new File());
    f->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (f->fd_ < 0) {
        if (error) *error = cat("gguf: cannot open '", path, "': ", std::strerror(errno));
        return nullptr;
    }
    struct stat st {};
    if (fstat(f->fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (error) *error = cat("gguf: '", path, "' is not a regular file");
        return nullptr;
    }
    const size_t size = static_cast<size_t>(st.st_size);
    if (size > 0) {
        void * m = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, f->fd_, 0);
        if (m == MAP_FAILED) {
            if (error)
                *error = cat("gguf: cannot map '", path, "' (", size, " bytes): ", std::strerror(errno));
            return nullptr;
        }
        f->map_ = m;
        f->map_size_ = size;
        f->base_ = static_cast<const uint8_t *>(m);
    }
    f->size_ = size;
    std::string e;
    if (!f->parse_all(&e)) {
        if (error) *error = cat(e, " (in '", path, "')");
        return nullptr;
    }
    return f;
}

std::unique_ptr<File> File::parse(const void * data, size_t size, std::string * error) {
    std::unique_ptr<File> f(new File());
    f->base_ = static_cast<const uint8_t *>(data);
    f->size_ = data ? size : 0;
    if (!f->parse_all(error)) return nullptr;
    return f;
}

bool File::parse_all(std::string * error) {
    Cursor c(base_, size_, error);

    // Header.
    if (!c.need(4, "magic")) return false;
    if (std::memcmp(c.here(), "GGUF", 4) != 0) {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "bad magic %02x %02x %02x %02x (expected 'GGUF')", c.here()[0],
                      c.here()[1], c.here()[2], c.here()[3]);
        return c.fail(0, buf);
    }
    c.skip(4);
    if (!c.read(&version_, "version")) return false;
    if (version_ != 2 && version_ != 3)
        return c.fail(4, cat("unsupported version ", version_, " (2 and 3 are read)"));
    uint64_t tensor_count = 0, kv_count = 0;
    if (!c.read(&tensor_count, "tensor_count")) return false;
    if (!c.read(&kv_count, "kv_count")) return false;
    if (tensor_count > c.remaining() / kMinTensorInfoBytes) {
        return c.fail(
            8, cat("tensor_count ", tensor_count, " cannot fit: a tensor info takes at least ",
                   kMinTensorInfoBytes, " bytes and the file has ", c.remaining(), " after the header"));
    }
    if (kv_count > c.remaining() / kMinKvBytes) {
        return c.fail(16, cat("kv_count ", kv_count, " cannot fit: a key/value pair takes at least ",
                              kMinKvBytes, " bytes and the file has ", c.remaining(), " after the header"));
    }

    // Key/value pairs.
    kvs_.resize(static_cast<size_t>(kv_count));
    std::unordered_map<std::string_view, size_t> & keys = kv_index_;
    keys.reserve(kvs_.size());
    for (size_t k = 0; k < kvs_.size(); ++k) {
        const size_t at = c.pos();
        KeyValue & kv = kvs_[k];
        if (!c.read_string(&kv.key, [&] { return cat("key of kv ", k); })) return false;
        if (kv.key.empty()) return c.fail(at, cat("kv ", k, ": empty key"));
        if (auto [it, inserted] = keys.emplace(kv.key, k); !inserted) {
            return c.fail(at,
                          cat("kv ", k, ": duplicate key ", quote(kv.key), " (also kv ", it->second, ")"));
        }
        const Path path{nullptr, k, kv.key, 0};
        const size_t type_at = c.pos();
        uint32_t type = 0;
        if (!c.read(&type, [&] { return path.str() + " value type"; })) return false;
        if (!valid_value_type(type)) return c.fail(type_at, cat(path.str(), ": unknown value type ", type));
        if (!read_value(c, static_cast<ValueType>(type), 0, path, &kv.value)) return false;
        if (kv.key == kAlignmentKey) {
            const Value & v = kv.value;
            if (!v.is_integer()) {
                return c.fail(type_at, cat(kAlignmentKey, " has type ", value_type_name(v.type),
                                           ", expected an integer"));
            }
            if ((is_signed_int(v.type) && v.i <= 0) || v.u == 0 || !std::has_single_bit(v.u)) {
                return c.fail(
                    type_at + 4,
                    cat(kAlignmentKey, " ", is_signed_int(v.type) ? std::to_string(v.i) : std::to_string(v.u),
                        " is not a nonzero power of two"));
            }
            alignment_ = static_cast<size_t>(v.u);
        }
    }

    // Tensor infos.
    if (tensor_count > c.remaining() / kMinTensorInfoBytes) {
        return c.fail(
            8, cat("tensor_count ", tensor_count, " cannot fit: a tensor info takes at least ",
                   kMinTensorInfoBytes, " bytes and the file has ", c.remaining(), " after the metadata"));
    }
    tensors_.resize(static_cast<size_t>(tensor_count));
    std::vector<size_t> offset_at(tensors_.size());
    std::unordered_map<std::string_view, size_t> & names = tensor_index_;
    names.reserve(tensors_.size());
    for (size_t k = 0; k < tensors_.size(); ++k) {
        Tensor & t = tensors_[k];
        const size_t at = c.pos();
        if (!c.read_string(&t.name, [&] { return cat("name of tensor ", k); })) return false;
        if (t.name.empty()) return c.fail(at, cat("tensor ", k, ": empty name"));
        if (auto [it, inserted] = names.emplace(t.name, k); !inserted) {
            return c.fail(
                at, cat("tensor ", k, ": duplicate name ", quote(t.name), " (also tensor ", it->second, ")"));
        }
        auto what = [&] { return cat("tensor ", k, " ", quote(t.name)); };
        const size_t dims_at = c.pos();
        uint32_t n_dims = 0;
        if (!c.read(&n_dims, [&] { return what() + " n_dims"; })) return false;
        if (n_dims < 1 || n_dims > GGML_MAX_DIMS) {
            return c.fail(dims_at, cat(what(), ": n_dims ", n_dims, " is not in 1..", GGML_MAX_DIMS));
        }
        t.n_dims = static_cast<int>(n_dims);
        int64_t nelements = 1;  // the product of the nonzero ne: so no product of any of them overflows
        for (uint32_t d = 0; d < n_dims; ++d) {
            const size_t ne_at = c.pos();
            uint64_t ne = 0;
            if (!c.read(&ne, [&] { return cat(what(), " ne[", d, "]"); })) return false;
            if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
                return c.fail(ne_at,
                              cat(what(), ": ne[", d, "] = ", static_cast<int64_t>(ne), " is negative"));
            }
            t.ne[d] = static_cast<int64_t>(ne);
            if (__builtin_mul_overflow(nelements, std::max<int64_t>(t.ne[d], 1), &nelements)) {
                return c.fail(ne_at, cat(what(), ": element count overflows at ne[", d, "] = ", ne));
            }
        }
        const size_t type_at = c.pos();
        uint32_t gtype = 0;
        if (!c.read(&gtype, [&] { return what() + " type"; })) return false;
        const std::optional<ggml_type> type = type_from_gguf(gtype);
        if (!type) return c.fail(type_at, cat(what(), ": unknown tensor type id ", gtype));
        t.type = *type;
        offset_at[k] = c.pos();
        if (!c.read(&t.offset, [&] { return what() + " offset"; })) return false;

        const int64_t blck = ggml_blck_size(t.type);
        if (t.ne[0] % blck != 0) {
            return c.fail(dims_at + 4,
                          cat(what(), ": ne[0] = ", t.ne[0], " is not a multiple of the block size ", blck,
                              " of ", ggml_type_name(t.type)));
        }
        uint64_t bytes = 0;
        bool overflow = mul_overflow(static_cast<uint64_t>(t.ne[0] / blck), ggml_type_size(t.type), &bytes);
        for (int d = 1; d < GGML_MAX_DIMS && !overflow; ++d)
            overflow = mul_overflow(bytes, t.ne[d], &bytes);
        if (overflow) {
            return c.fail(dims_at, cat(what(), ": byte size of a ", ggml_type_name(t.type),
                                       " tensor of this shape overflows"));
        }
        t.bytes = static_cast<size_t>(bytes);
        if (t.offset % alignment_ != 0) {
            return c.fail(offset_at[k], cat(what(), ": offset ", t.offset,
                                            " is not a multiple of the alignment ", alignment_));
        }
    }

    // The data section.
    uint64_t data_offset = 0;
    if (!align_up(c.pos(), alignment_, &data_offset)) {
        return c.fail(c.pos(), cat("data section offset overflows with alignment ", alignment_));
    }
    if (!tensors_.empty() && data_offset > size_) {
        return c.fail(c.pos(), cat("truncated: the data section would start at ", data_offset,
                                   ", past the end of the file (size ", size_, ")"));
    }
    data_offset_ = static_cast<size_t>(std::min<uint64_t>(data_offset, size_));
    const uint64_t data_size = size_ - data_offset_;
    for (size_t k = 0; k < tensors_.size(); ++k) {
        Tensor & t = tensors_[k];
        if (t.offset > data_size || t.bytes > data_size - t.offset) {
            return c.fail(offset_at[k], cat("tensor ", k, " ", quote(t.name), ": data [", t.offset, ", +",
                                            t.bytes, ") lies outside the data section (", data_size,
                                            " bytes at file offset ", data_offset_, ")"));
        }
        t.data = base_ + data_offset_ + t.offset;
    }
    // No two tensors with data may overlap.
    std::vector<size_t> order;
    order.reserve(tensors_.size());
    for (size_t k = 0; k < tensors_.size(); ++k) {
        if (tensors_[k].bytes > 0) order.push_back(k);
    }
    std::sort(order.begin(), order.end(), [this](size_t a, size_t b) {
        return tensors_[a].offset != tensors_[b].offset ? tensors_[a].offset < tensors_[b].offset : a < b;
    });
    for (size_t k = 1; k < order.size(); ++k) {
        const Tensor & a = tensors_[order[k - 1]];
        const Tensor & b = tensors_[order[k]];
        if (a.offset + a.bytes > b.offset) {
            return c.fail(offset_at[order[k]],
                          cat("tensor ", order[k], " ", quote(b.name), ": data [", b.offset, ", +", b.bytes,
                              ") overlaps tensor ", order[k - 1], " ", quote(a.name), " [", a.offset, ", +",
                              a.bytes, ")"));
        }
    }
    return true;
}

const Tensor * File::find(std::string_view name) const {
    const auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const Value * File::find_value(std::string_view key) const {
    const auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

namespace {

const Value * lookup(const File & f, std::string_view key, std::string * error) {
    const Value * v = f.find_value(key);
    if (!v && error) *error = cat("gguf: key ", quote(key), " is absent");
    return v;
}

template <typename T>
std::optional<T> wrong_type(std::string_view key, const Value & v, const char * expected,
                            std::string * error) {
    if (error) {
        std::string type = value_type_name(v.type);
        if (v.type == ValueType::ARRAY) type = cat("array of ", value_type_name(v.element_type));
        *error = cat("gguf: key ", quote(key), " has type ", type, ", expected ", expected);
    }
    return std::nullopt;
}

template <typename T>
std::optional<T> out_of_range(std::string_view key, const std::string & value, const char * target,
                              std::string * error) {
    if (error) *error = cat("gguf: key ", quote(key), ": value ", value, " does not fit ", target);
    return std::nullopt;
}

// Element k of a fixed-size array.
Value element(const Value & array, uint64_t k) {
    Value e;
    e.type = array.element_type;
    decode_scalar(e.type, array.raw + k * value_type_size(e.type), &e);
    return e;
}

}  // namespace

std::optional<std::string_view> File::get_string(std::string_view key, std::string * error) const {
    const Value * v = lookup(*this, key, error);
    if (!v) return std::nullopt;
    if (v->type != ValueType::STRING) return wrong_type<std::string_view>(key, *v, "string", error);
    return v->str;
}

std::optional<int64_t> File::get_int(std::string_view key, std::string * error) const {
    const Value * v = lookup(*this, key, error);
    if (!v) return std::nullopt;
    if (!v->is_integer()) return wrong_type<int64_t>(key, *v, "an integer", error);
    if (is_unsigned_int(v->type) && v->u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return out_of_range<int64_t>(key, std::to_string(v->u), "int64", error);
    }
    return v->i;
}

std::optional<uint64_t> File::get_uint(std::string_view key, std::string * error) const {
    const Value * v = lookup(*this, key, error);
    if (!v) return std::nullopt;
    if (!v->is_integer()) return wrong_type<uint64_t>(key, *v, "an integer", error);
    if (is_signed_int(v->type) && v->i < 0)
        return out_of_range<uint64_t>(key, std::to_string(v->i), "uint64", error);
    return v->u;
}

std::optional<double> File::get_float(std::string_view key, std::string * error) const {
    const Value * v = lookup(*this, key, error);
    if (!v) return std::nullopt;
    if (!v->is_float()) return wrong_type<double>(key, *v, "f32 or f64", error);
    return v->f;
}

std::optional<bool> File::get_bool(std::string_view key, std::string * error) const {
    const Value * v = lookup(*this, key, error);
    if (!v) return std::nullopt;
    if (v->type != ValueType::BOOL) return wrong_type<bool>(key, *v, "bool", error);
    return v->u != 0;
}

std::optional<std::vector<int64_t>> File::get_int_array(std::string_view key, std::string * error) const {
    const Value * v = lookup(*this, key, error);
    if (!v) return std::nullopt;
    if (v->type != ValueType::ARRAY ||
        !(is_signed_int(v->element_type) || is_unsigned_int(v->element_type))) {
        return wrong_type<std::vector<int64_t>>(key, *v, "an array of integers", error);
    }
    std::vector<int64_t> out(static_cast<size_t>(v->count));
    for (uint64_t k = 0; k < v->count; ++k) {
        const Value e = element(*v, k);
        if (is_unsigned_int(e.type) && e.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return out_of_range<std::vector<int64_t>>(key, cat("[", k, "] = ", e.u), "int64", error);
        }
        out[k] = e.i;
    }
    return out;
}

std::optional<std::vector<double>> File::get_float_array(std::string_view key, std::string * error) const {
    const Value * v = lookup(*this, key, error);
    if (!v) return std::nullopt;
    if (v->type != ValueType::ARRAY ||
        !(v->element_type == ValueType::F32 || v->element_type == ValueType::F64)) {
        return wrong_type<std::vector<double>>(key, *v, "an array of f32 or f64", error);
    }
    std::vector<double> out(static_cast<size_t>(v->count));
    for (uint64_t k = 0; k < v->count; ++k)
        out[k] = element(*v, k).f;
    return out;
}

std::optional<std::vector<std::string_view>> File::get_string_array(std::string_view key,
                                                                    std::string * error) const {
    const Value * v = lookup(*this, key, error);
    if (!v) return std::nullopt;
    if (v->type != ValueType::ARRAY || v->element_type != ValueType::STRING) {
        return wrong_type<std::vector<std::string_view>>(key, *v, "an array of strings", error);
    }
    std::vector<std::string_view> out;
    out.reserve(v->items.size());
    for (const Value & e : v->items)
        out.push_back(e.str);
    return out;
}

// ---------------------------------------------------------------------------------------------------
// Writer

namespace {

template <typename T>
void put(std::vector<uint8_t> & out, T v) {
    const size_t n = out.size();
    out.resize(n + sizeof(T));
    std::memcpy(out.data() + n, &v, sizeof(T));
}

void put_string(std::vector<uint8_t> & out, std::string_view s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

template <typename T>
std::vector<uint8_t> encode(T v) {
    std::vector<uint8_t> out;
    put(out, v);
    return out;
}

struct MemorySink {
    std::vector<uint8_t> * out;
    bool write(const void * p, size_t n) {
        const uint8_t * b = static_cast<const uint8_t *>(p);
        out->insert(out->end(), b, b + n);
        return true;
    }
    uint64_t written() const { return out->size(); }
};

struct FileSink {
    std::FILE * f;
    uint64_t n = 0;
    bool write(const void * p, size_t bytes) {
        if (bytes == 0) return true;
        if (std::fwrite(p, 1, bytes, f) != bytes) return false;
        n += bytes;
        return true;
    }
    uint64_t written() const { return n; }
};

template <typename Sink>
bool pad_to(Sink & sink, uint64_t offset) {
    static const uint8_t zeros[256] = {};
    while (sink.written() < offset) {
        const uint64_t n = std::min<uint64_t>(sizeof(zeros), offset - sink.written());
        if (!sink.write(zeros, static_cast<size_t>(n))) return false;
    }
    return true;
}

}  // namespace

Writer::Writer(size_t alignment) : alignment_(kDefaultAlignment) { set_alignment(alignment); }

std::string Writer::add_alignment_key(ValueType type, const std::vector<uint8_t> & encoded) {
    Value v;
    if (value_type_size(type) == encoded.size()) decode_scalar(type, encoded.data(), &v);
    v.type = type;
    if (!v.is_integer())
        return cat("gguf writer: ", kAlignmentKey, " must be an integer, not ", value_type_name(type));
    if ((is_signed_int(type) && v.i <= 0) || v.u == 0 || !std::has_single_bit(v.u))
        return cat("gguf writer: ", kAlignmentKey, " ",
                   is_signed_int(type) ? std::to_string(v.i) : std::to_string(v.u),
                   " is not a nonzero power of two");
    alignment_ = static_cast<size_t>(v.u);
    alignment_key_added_ = true;
    return {};
}

void Writer::set_alignment(size_t alignment) {
    std::string e;
    if (alignment == 0 || !std::has_single_bit(alignment) || alignment > UINT32_MAX) {
        e = cat("gguf writer: alignment ", alignment, " is not a nonzero power of two");
    } else if (alignment_key_added_ && alignment != alignment_) {
        e = cat("gguf writer: alignment ", alignment, " differs from the ", kAlignmentKey, " added, ",
                alignment_);
    }
    if (!e.empty()) {
        if (error_.empty()) error_ = e;
        return;
    }
    alignment_ = alignment;
}

void Writer::add_kv(std::string_view key, ValueType type, std::vector<uint8_t> encoded) {
    std::string e;
    if (key.empty()) {
        e = "gguf writer: empty key";
    } else if (std::find(keys_.begin(), keys_.end(), key) != keys_.end()) {
        e = cat("gguf writer: duplicate key ", quote(key));
    } else if (key == kAlignmentKey) {
        e = add_alignment_key(type, encoded);
    }
    if (!e.empty()) {
        if (error_.empty()) error_ = e;
        return;
    }
    keys_.emplace_back(key);
    put_string(kv_bytes_, key);
    put<uint32_t>(kv_bytes_, static_cast<uint32_t>(type));
    kv_bytes_.insert(kv_bytes_.end(), encoded.begin(), encoded.end());
    ++kv_count_;
}

void Writer::add_u8(std::string_view key, uint8_t v) { add_kv(key, ValueType::U8, encode(v)); }
void Writer::add_i8(std::string_view key, int8_t v) { add_kv(key, ValueType::I8, encode(v)); }
void Writer::add_u16(std::string_view key, uint16_t v) { add_kv(key, ValueType::U16, encode(v)); }
void Writer::add_i16(std::string_view key, int16_t v) { add_kv(key, ValueType::I16, encode(v)); }
void Writer::add_u32(std::string_view key, uint32_t v) { add_kv(key, ValueType::U32, encode(v)); }
void Writer::add_i32(std::string_view key, int32_t v) { add_kv(key, ValueType::I32, encode(v)); }
void Writer::add_u64(std::string_view key, uint64_t v) { add_kv(key, ValueType::U64, encode(v)); }
void Writer::add_i64(std::string_view key, int64_t v) { add_kv(key, ValueType::I64, encode(v)); }
void Writer::add_f32(std::string_view key, float v) { add_kv(key, ValueType::F32, encode(v)); }
void Writer::add_f64(std::string_view key, double v) { add_kv(key, ValueType::F64, encode(v)); }
void Writer::add_bool(std::string_view key, bool v) {
    add_kv(key, ValueType::BOOL, encode<uint8_t>(v ? 1 : 0));
}

void Writer::add_string(std::string_view key, std::string_view v) {
    std::vector<uint8_t> e;
    put_string(e, v);
    add_kv(key, ValueType::STRING, std::move(e));
}

void Writer::add_array(std::string_view key, ValueType element_type, const void * data, size_t count) {
    const size_t n = value_type_size(element_type);
    if (n == 0) {
        if (error_.empty()) {
            error_ = cat("gguf writer: key ", quote(key), ": add_array takes fixed-size elements, not ",
                         value_type_name(element_type));
        }
        return;
    }
    std::vector<uint8_t> e;
    put<uint32_t>(e, static_cast<uint32_t>(element_type));
    put<uint64_t>(e, count);
    const uint8_t * b = static_cast<const uint8_t *>(data);
    if (count > 0) e.insert(e.end(), b, b + count * n);
    add_kv(key, ValueType::ARRAY, std::move(e));
}

void Writer::add_string_array(std::string_view key, std::span<const std::string> v) {
    std::vector<uint8_t> e;
    put<uint32_t>(e, static_cast<uint32_t>(ValueType::STRING));
    put<uint64_t>(e, v.size());
    for (const std::string & s : v)
        put_string(e, s);
    add_kv(key, ValueType::ARRAY, std::move(e));
}

void Writer::add_raw(std::string_view key, ValueType type, std::vector<uint8_t> encoded) {
    add_kv(key, type, std::move(encoded));
}

void Writer::add_tensor(std::string_view name, ggml_type type, int n_dims, const int64_t * ne,
                        const void * data, size_t bytes) {
    auto fail = [&](const std::string & m) {
        if (error_.empty()) error_ = cat("gguf writer: tensor ", quote(name), ": ", m);
    };
    if (name.empty()) return fail("empty name");
    for (const PendingTensor & t : tensors_) {
        if (t.name == name) return fail("duplicate name");
    }
    if (!type_from_gguf(type_to_gguf(type))) return fail(cat("unknown or unsupported type ", int(type)));
    if (n_dims < 1 || n_dims > GGML_MAX_DIMS)
        return fail(cat("n_dims ", n_dims, " is not in 1..", GGML_MAX_DIMS));
    PendingTensor t{std::string(name), type, n_dims, {1, 1, 1, 1}, data, bytes};
    for (int d = 0; d < n_dims; ++d) {
        if (ne[d] < 0) return fail(cat("ne[", d, "] = ", ne[d], " is negative"));
        t.ne[d] = ne[d];
    }
    const int64_t blck = ggml_blck_size(type);
    if (t.ne[0] % blck != 0)
        return fail(cat("ne[0] = ", t.ne[0], " is not a multiple of the block size ", blck));
    uint64_t expect = 0;
    bool overflow = mul_overflow(static_cast<uint64_t>(t.ne[0] / blck), ggml_type_size(type), &expect);
    for (int d = 1; d < GGML_MAX_DIMS && !overflow; ++d)
        overflow = mul_overflow(expect, t.ne[d], &expect);
    if (overflow) return fail("byte size overflows");
    if (expect != bytes) return fail(cat(bytes, " bytes given, the type and shape need ", expect));
    tensors_.push_back(std::move(t));
}

bool Writer::check(bool only_meta, std::string * error) const {
    std::string e = error_;
    for (size_t k = 0; e.empty() && !only_meta && k < tensors_.size(); ++k) {
        if (tensors_[k].bytes > 0 && !tensors_[k].data)
            e = cat("gguf writer: tensor ", quote(tensors_[k].name), " has no data");
    }
    if (e.empty()) return true;
    if (error) *error = e;
    return false;
}

template <typename Sink>
bool Writer::emit(Sink & sink, bool only_meta, std::string * error) const {
    auto io_fail = [error]() {
        if (error) *error = cat("gguf writer: write failed: ", std::strerror(errno));
        return false;
    };
    const bool write_alignment = !alignment_key_added_ && alignment_ != kDefaultAlignment;
    std::vector<uint8_t> head;
    head.insert(head.end(), {'G', 'G', 'U', 'F'});
    put<uint32_t>(head, 3);
    put<uint64_t>(head, tensors_.size());
    put<uint64_t>(head, kv_count_ + (write_alignment ? 1 : 0));
    if (write_alignment) {
        put_string(head, kAlignmentKey);
        put<uint32_t>(head, static_cast<uint32_t>(ValueType::U32));
        put<uint32_t>(head, static_cast<uint32_t>(alignment_));
    }
    if (!sink.write(head.data(), head.size()) || !sink.write(kv_bytes_.data(), kv_bytes_.size()))
        return io_fail();

    std::vector<uint8_t> infos;
    std::vector<uint64_t> offsets;
    uint64_t offset = 0;
    for (const PendingTensor & t : tensors_) {
        align_up(offset, alignment_, &offset);
        offsets.push_back(offset);
        put_string(infos, t.name);
        put<uint32_t>(infos, static_cast<uint32_t>(t.n_dims));
        for (int d = 0; d < t.n_dims; ++d)
            put<uint64_t>(infos, static_cast<uint64_t>(t.ne[d]));
        put<uint32_t>(infos, type_to_gguf(t.type));
        put<uint64_t>(infos, offset);
        offset += t.bytes;
    }
    if (!sink.write(infos.data(), infos.size())) return io_fail();
    uint64_t data_offset = 0;
    align_up(sink.written(), alignment_, &data_offset);
    if (!tensors_.empty() && !pad_to(sink, data_offset)) return io_fail();
    if (only_meta) return true;
    for (size_t k = 0; k < tensors_.size(); ++k) {
        if (!pad_to(sink, data_offset + offsets[k])) return io_fail();
        if (!sink.write(tensors_[k].data, tensors_[k].bytes)) return io_fail();
    }
    return true;
}

bool Writer::write_to(std::vector<uint8_t> * out, std::string * error, bool only_meta) const {
    if (!check(only_meta, error)) return false;
    out->clear();
    MemorySink sink{out};
    return emit(sink, only_meta, error);
}

bool Writer::write(std::FILE * file, std::string * error, bool only_meta) const {
    if (!check(only_meta, error)) return false;
    FileSink sink{file};
    return emit(sink, only_meta, error);
}

bool Writer::write(const std::string & path, std::string * error, bool only_meta) const {
    if (!check(only_meta, error)) return false;
    std::FILE * f = std::fopen(path.c_str(), "wb");
    if (!f) {
        if (error) *error = cat("gguf writer: cannot create '", path, "': ", std::strerror(errno));
        return false;
    }
    bool ok = write(f, error, only_meta);
    if (std::fclose(f) != 0 && ok) {
        ok = false;
        if (error) *error = cat("gguf writer: closing '", path, "' failed: ", std::strerror(errno));
    }
    if (!ok) std::remove(path.c_str());
    return ok;
}

}  // namespace ggx::gguf
