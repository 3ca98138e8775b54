// ggx's GGUF reader and writer (src/gguf/file.h): round trips of every tensor and value type, and the
// malformed-file corpus: one named case (Corpus/GgufMalformed.FailsWithItsError/NAME) per way a file
// can be wrong (truncated at each field, huge counts, bad alignments, overflowing shapes and offsets,
// overlaps, unknown types, duplicates, nesting), each failing with its own message and byte offset,
// through File::parse and gguf.h alike; plus truncation at every byte and every byte flipped.
#include <ggml-backend.h>
#include <gguf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "support/test_util.h"

namespace {

using ggx::gguf::File;
using ggx::gguf::ValueType;
using ggx::gguf::Writer;

// A GGUF file written byte by byte, for files the Writer would refuse to produce.
struct Bytes {
    std::vector<uint8_t> b;
    Bytes & raw(const void * p, size_t n) {
        const uint8_t * q = static_cast<const uint8_t *>(p);
        b.insert(b.end(), q, q + n);
        return *this;
    }
    Bytes & u8(uint8_t v) { return raw(&v, 1); }
    Bytes & u32(uint32_t v) { return raw(&v, 4); }
    Bytes & u64(uint64_t v) { return raw(&v, 8); }
    Bytes & str(std::string_view s) {
        u64(s.size());
        return raw(s.data(), s.size());
    }
    Bytes & header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        raw("GGUF", 4);
        u32(version);
        u64(n_tensors);
        return u64(n_kv);
    }
    Bytes & kv_u32(std::string_view key, uint32_t v) {
        str(key);
        u32(uint32_t(ValueType::U32));
        return u32(v);
    }
    Bytes & tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t gguf_type, uint64_t offset) {
        str(name);
        u32(uint32_t(ne.size()));
        for (uint64_t n : ne)
            u64(n);
        u32(gguf_type);
        return u64(offset);
    }
    Bytes & pad(size_t alignment = 32) {
        while (b.size() % alignment)
            b.push_back(0);
        return *this;
    }
    Bytes & zeros(size_t n) {
        b.resize(b.size() + n, 0);
        return *this;
    }
    // Names the current size: where the next field starts.
    Bytes & mark(const std::string & field) {
        marks[field] = b.size();
        return *this;
    }
    size_t at(const std::string & field) const { return marks.at(field); }
    std::vector<uint8_t> prefix(size_t n) const { return {b.begin(), b.begin() + std::ptrdiff_t(n)}; }
    std::map<std::string, size_t> marks;
};

// Parses a private heap copy of exactly the given bytes (so ASan sees any read past the end).
std::unique_ptr<File> parse_copy(const std::vector<uint8_t> & bytes, size_t n, std::string * error) {
    std::unique_ptr<uint8_t[]> copy(new uint8_t[n > 0 ? n : 1]);
    if (n > 0) std::memcpy(copy.get(), bytes.data(), n);
    std::unique_ptr<File> f = File::parse(copy.get(), n, error);
    EXPECT_EQ(f, nullptr) << "parse of a copy is only used for files expected to fail";
    return f;
}

std::unique_ptr<File> expect_ok(const std::vector<uint8_t> & bytes) {
    std::string error;
    std::unique_ptr<File> f = File::parse(bytes.data(), bytes.size(), &error);
    EXPECT_NE(f, nullptr) << error;
    return f;
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t k = 0; k < n; ++k)
        v[k] = uint8_t(seed + k * 7);
    return v;
}

struct TensorSpec {
    const char * name;
    ggml_type type;
    std::vector<int64_t> ne;
};

const std::vector<TensorSpec> & all_type_tensors() {
    static const std::vector<TensorSpec> specs = {
        {"t.f32", GGML_TYPE_F32, {5, 3}},      {"t.f16", GGML_TYPE_F16, {7}},
        {"t.bf16", GGML_TYPE_BF16, {3, 2, 2}}, {"t.i8", GGML_TYPE_I8, {9, 1, 1, 2}},
        {"t.i16", GGML_TYPE_I16, {4, 4}},      {"t.i32", GGML_TYPE_I32, {6}},
        {"t.q8_0", GGML_TYPE_Q8_0, {64, 2}},   {"t.q4_0", GGML_TYPE_Q4_0, {32, 3, 2}},
        {"t.empty", GGML_TYPE_F32, {0, 4}},
    };
    return specs;
}

size_t spec_bytes(const TensorSpec & s) {
    size_t n = ggml_row_size(s.type, s.ne[0]);
    for (size_t d = 1; d < s.ne.size(); ++d)
        n *= size_t(s.ne[d]);
    return n;
}

// Adds every ggx tensor type to w; the data lives in storage.
void add_all_tensors(Writer & w, std::vector<std::vector<uint8_t>> & storage) {
    storage.clear();
    for (const TensorSpec & s : all_type_tensors()) {
        storage.push_back(pattern(spec_bytes(s), uint8_t(storage.size() * 31 + 1)));
        w.add_tensor(s.name, s.type, int(s.ne.size()), s.ne.data(), storage.back().data(),
                     storage.back().size());
    }
}

void check_all_tensors(const File & f, const std::vector<std::vector<uint8_t>> & storage) {
    const auto & specs = all_type_tensors();
    ASSERT_EQ(f.tensors().size(), specs.size());
    for (size_t k = 0; k < specs.size(); ++k) {
        const ggx::gguf::Tensor * t = f.find(specs[k].name);
        ASSERT_NE(t, nullptr) << specs[k].name;
        EXPECT_EQ(t, &f.tensors()[k]);
        EXPECT_EQ(t->type, specs[k].type);
        EXPECT_EQ(t->n_dims, int(specs[k].ne.size()));
        for (int d = 0; d < GGML_MAX_DIMS; ++d) {
            EXPECT_EQ(t->ne[d], d < t->n_dims ? specs[k].ne[d] : 1) << specs[k].name << " ne[" << d << "]";
        }
        EXPECT_EQ(t->bytes, storage[k].size());
        EXPECT_EQ(t->offset % f.alignment(), 0u);
        EXPECT_EQ((static_cast<const uint8_t *>(t->data) - f.bytes()) % f.alignment(), 0);
        if (t->bytes > 0) {
            EXPECT_EQ(std::memcmp(t->data, storage[k].data(), t->bytes), 0) << specs[k].name;
        }
    }
    EXPECT_EQ(f.find("t.absent"), nullptr);
}

// A small valid file with a few kinds of metadata and three tensors (the last one ends the file).
std::vector<uint8_t> small_valid_file() {
    Writer w;
    w.add_string("general.name", "small");
    w.add_u32("n", 7);
    const std::vector<std::string> words = {"a", "bc", ""};
    w.add_string_array("words", words);
    const float fs[] = {1.5f, -2.0f};
    w.add_array("fs", std::span<const float>(fs));
    static const std::vector<uint8_t> a = pattern(5 * 4, 1), b = pattern(34, 2), c = pattern(3 * 2, 3);
    const int64_t ne_a[] = {5}, ne_b[] = {32}, ne_c[] = {3};
    w.add_tensor("a", GGML_TYPE_F32, 1, ne_a, a.data(), a.size());
    w.add_tensor("b", GGML_TYPE_Q8_0, 1, ne_b, b.data(), b.size());
    w.add_tensor("c", GGML_TYPE_F16, 1, ne_c, c.data(), c.size());
    std::vector<uint8_t> out;
    std::string error;
    EXPECT_TRUE(w.write_to(&out, &error)) << error;
    return out;
}

// Encodes depth nested arrays around an empty u8 array (depth 1: a plain empty array).
std::vector<uint8_t> nested_array(int depth) {
    Bytes v;
    for (int d = 1; d < depth; ++d)
        v.u32(uint32_t(ValueType::ARRAY)).u64(1);
    v.u32(uint32_t(ValueType::U8)).u64(0);
    return v.b;
}

std::string temp_path(const std::string & name) {
    return (std::filesystem::temp_directory_path() /
            ("ggx_test_gguf_" + std::to_string(getpid()) + "_" + name))
        .string();
}

TEST(Gguf, TypeMapping) {
    // The ids are the enum values: every supported id maps to itself, both ways.
    for (uint32_t id = 0; id < GGML_TYPE_COUNT; ++id) {
        const auto type = ggx::gguf::type_from_gguf(id);
        if (!type) continue;
        EXPECT_EQ(static_cast<uint32_t>(*type), id) << ggml_type_name(*type);
        EXPECT_EQ(ggx::gguf::type_to_gguf(*type), id) << ggml_type_name(*type);
    }
    EXPECT_EQ(ggx::gguf::type_to_gguf(GGML_TYPE_F32), 0u);
    EXPECT_EQ(ggx::gguf::type_to_gguf(GGML_TYPE_F16), 1u);
    EXPECT_EQ(ggx::gguf::type_to_gguf(GGML_TYPE_Q4_0), 2u);
    EXPECT_EQ(ggx::gguf::type_to_gguf(GGML_TYPE_Q8_0), 8u);
    EXPECT_EQ(ggx::gguf::type_to_gguf(GGML_TYPE_I8), 24u);
    EXPECT_EQ(ggx::gguf::type_to_gguf(GGML_TYPE_I16), 25u);
    EXPECT_EQ(ggx::gguf::type_to_gguf(GGML_TYPE_I32), 26u);
    EXPECT_EQ(ggx::gguf::type_to_gguf(GGML_TYPE_BF16), 30u);
    for (uint32_t id : {3u, 12u, 23u, 27u, 28u, 39u, 42u}) {  // every other known type too
        const auto type = ggx::gguf::type_from_gguf(id);
        ASSERT_TRUE(type) << id;
        EXPECT_EQ(static_cast<uint32_t>(*type), id);
    }
    for (uint32_t id : {4u, 5u, 31u, 32u, 33u, static_cast<uint32_t>(GGML_TYPE_COUNT), 1000u, UINT32_MAX}) {
        EXPECT_FALSE(ggx::gguf::type_from_gguf(id).has_value()) << id;
    }
}

TEST(Gguf, RoundTripEveryTensorTypeInMemoryAndMapped) {
    Writer w;
    std::vector<std::vector<uint8_t>> storage;
    add_all_tensors(w, storage);
    std::vector<uint8_t> bytes;
    std::string error;
    ASSERT_TRUE(w.write_to(&bytes, &error)) << error;
    std::unique_ptr<File> f = expect_ok(bytes);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->alignment(), 32u);
    EXPECT_EQ(f->data_offset() % 32, 0u);
    check_all_tensors(*f, storage);

    const std::string path = temp_path("roundtrip.gguf");
    ASSERT_TRUE(w.write(path, &error)) << error;
    std::unique_ptr<File> m = File::open(path, &error);
    ASSERT_NE(m, nullptr) << error;
    EXPECT_EQ(m->size(), bytes.size());
    EXPECT_EQ(std::memcmp(m->bytes(), bytes.data(), bytes.size()), 0);
    check_all_tensors(*m, storage);
    std::filesystem::remove(path);
}

TEST(Gguf, RoundTripAlignment) {
    for (size_t alignment : {1u, 8u, 64u, 4096u}) {
        Writer w(alignment);
        std::vector<std::vector<uint8_t>> storage;
        add_all_tensors(w, storage);
        std::vector<uint8_t> bytes;
        std::string error;
        ASSERT_TRUE(w.write_to(&bytes, &error)) << error;
        std::unique_ptr<File> f = expect_ok(bytes);
        ASSERT_NE(f, nullptr);
        EXPECT_EQ(f->alignment(), alignment);
        EXPECT_EQ(f->data_offset() % alignment, 0u);
        check_all_tensors(*f, storage);
        EXPECT_EQ(f->get_uint("general.alignment").value_or(0), alignment == 32 ? 0 : alignment);
    }
}

// general.alignment added as a pair is written in its place and sets the alignment.
TEST(Gguf, AlignmentKeyKeepsItsPlace) {
    Writer w;
    w.add_string("a", "x");
    w.add_u64("general.alignment", 64);
    const std::vector<uint8_t> data = pattern(16, 1);
    const int64_t ne[] = {4};
    w.add_tensor("t", GGML_TYPE_F32, 1, ne, data.data(), data.size());
    std::vector<uint8_t> bytes;
    std::string error;
    ASSERT_TRUE(w.write_to(&bytes, &error)) << error;
    std::unique_ptr<File> f = expect_ok(bytes);
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(f->metadata().size(), 2u);
    EXPECT_EQ(f->metadata()[1].key, "general.alignment");
    EXPECT_EQ(f->alignment(), 64u);
    EXPECT_EQ(f->data_offset() % 64, 0u);
}

// only_meta writes the bytes before the data section: a prefix of the whole file, up to its data.
TEST(Gguf, OnlyMetaIsThePrefixBeforeTheData) {
    Writer w;
    std::vector<std::vector<uint8_t>> storage;
    add_all_tensors(w, storage);
    std::vector<uint8_t> full, meta;
    std::string error;
    ASSERT_TRUE(w.write_to(&full, &error)) << error;
    ASSERT_TRUE(w.write_to(&meta, &error, true)) << error;
    std::unique_ptr<File> f = expect_ok(full);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(meta.size(), f->data_offset());
    EXPECT_TRUE(std::equal(meta.begin(), meta.end(), full.begin()));
}

TEST(Gguf, RoundTripEveryValueType) {
    Writer w;
    w.add_u8("u8", 200);
    w.add_i8("i8", -100);
    w.add_u16("u16", 60000);
    w.add_i16("i16", -30000);
    w.add_u32("u32", 4000000000u);
    w.add_i32("i32", -2000000000);
    w.add_u64("u64", UINT64_MAX);
    w.add_i64("i64", INT64_MIN);
    w.add_f32("f32", 0.25f);
    w.add_f64("f64", -1e300);
    w.add_bool("bool.t", true);
    w.add_bool("bool.f", false);
    w.add_string("str", "hello, gguf");
    w.add_string("str.empty", "");
    const uint8_t au8[] = {1, 2, 255};
    const int8_t ai8[] = {-1, 2};
    const uint16_t au16[] = {65535};
    const int16_t ai16[] = {-5, 5};
    const uint32_t au32[] = {1, 4000000000u};
    const int32_t ai32[] = {-7, 8, 9};
    const uint64_t au64[] = {0, uint64_t(INT64_MAX)};
    const int64_t ai64[] = {INT64_MIN, INT64_MAX};
    const float af32[] = {1.0f, -0.5f};
    const double af64[] = {3.25};
    const uint8_t abool[] = {1, 0, 1};
    w.add_array("a.u8", ValueType::U8, au8, 3);
    w.add_array("a.i8", ValueType::I8, ai8, 2);
    w.add_array("a.u16", ValueType::U16, au16, 1);
    w.add_array("a.i16", ValueType::I16, ai16, 2);
    w.add_array("a.u32", ValueType::U32, au32, 2);
    w.add_array("a.i32", std::span<const int32_t>(ai32));
    w.add_array("a.u64", ValueType::U64, au64, 2);
    w.add_array("a.i64", std::span<const int64_t>(ai64));
    w.add_array("a.f32", std::span<const float>(af32));
    w.add_array("a.f64", std::span<const double>(af64));
    w.add_array("a.bool", ValueType::BOOL, abool, 3);
    w.add_array("a.empty", ValueType::F32, nullptr, 0);
    const uint64_t big[] = {UINT64_MAX};
    w.add_array("a.u64.big", ValueType::U64, big, 1);
    const std::vector<std::string> strs = {"x", "", "yz"};
    w.add_string_array("a.str", strs);
    w.add_raw("a.nested", ValueType::ARRAY, nested_array(ggx::gguf::kMaxArrayDepth));
    Bytes two;  // [[1, 2], [3]] as arrays of i32
    two.u32(uint32_t(ValueType::ARRAY)).u64(2);
    two.u32(uint32_t(ValueType::I32)).u64(2).u32(1).u32(2);
    two.u32(uint32_t(ValueType::I32)).u64(1).u32(3);
    w.add_raw("a.a.i32", ValueType::ARRAY, two.b);

    std::vector<uint8_t> bytes;
    std::string error;
    ASSERT_TRUE(w.write_to(&bytes, &error)) << error;
    std::unique_ptr<File> f = expect_ok(bytes);
    ASSERT_NE(f, nullptr);
    const File & file = *f;
    EXPECT_EQ(file.metadata().size(), 30u);
    EXPECT_EQ(file.metadata()[0].key, "u8");
    EXPECT_EQ(file.get_int("u8"), 200);
    EXPECT_EQ(file.get_int("i8"), -100);
    EXPECT_EQ(file.get_int("u16"), 60000);
    EXPECT_EQ(file.get_int("i16"), -30000);
    EXPECT_EQ(file.get_uint("u32"), 4000000000u);
    EXPECT_EQ(file.get_int("i32"), -2000000000);
    EXPECT_EQ(file.get_uint("u64"), UINT64_MAX);
    EXPECT_EQ(file.get_int("i64"), INT64_MIN);
    EXPECT_EQ(file.get_float("f32"), 0.25);
    EXPECT_EQ(file.get_float("f64"), -1e300);
    EXPECT_EQ(file.get_bool("bool.t"), true);
    EXPECT_EQ(file.get_bool("bool.f"), false);
    EXPECT_EQ(file.get_string("str"), "hello, gguf");
    EXPECT_EQ(file.get_string("str.empty"), "");
    EXPECT_EQ(file.get_int_array("a.u8"), (std::vector<int64_t>{1, 2, 255}));
    EXPECT_EQ(file.get_int_array("a.i8"), (std::vector<int64_t>{-1, 2}));
    EXPECT_EQ(file.get_int_array("a.u16"), (std::vector<int64_t>{65535}));
    EXPECT_EQ(file.get_int_array("a.i16"), (std::vector<int64_t>{-5, 5}));
    EXPECT_EQ(file.get_int_array("a.u32"), (std::vector<int64_t>{1, 4000000000}));
    EXPECT_EQ(file.get_int_array("a.i32"), (std::vector<int64_t>{-7, 8, 9}));
    EXPECT_EQ(file.get_int_array("a.u64"), (std::vector<int64_t>{0, INT64_MAX}));
    EXPECT_EQ(file.get_int_array("a.i64"), (std::vector<int64_t>{INT64_MIN, INT64_MAX}));
    EXPECT_EQ(file.get_float_array("a.f32"), (std::vector<double>{1.0, -0.5}));
    EXPECT_EQ(file.get_float_array("a.f64"), (std::vector<double>{3.25}));
    EXPECT_EQ(file.get_float_array("a.empty"), (std::vector<double>{}));
    EXPECT_EQ(file.get_string_array("a.str"), (std::vector<std::string_view>{"x", "", "yz"}));
    const ggx::gguf::Value * b = file.find_value("a.bool");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->element_type, ValueType::BOOL);
    ASSERT_EQ(b->count, 3u);
    EXPECT_EQ(std::memcmp(b->raw, abool, 3), 0);
    const ggx::gguf::Value * n = file.find_value("a.nested");
    ASSERT_NE(n, nullptr);
    int depth = 0;
    while (n->type == ValueType::ARRAY && n->element_type == ValueType::ARRAY) {
        ASSERT_EQ(n->items.size(), 1u);
        n = &n->items[0];
        ++depth;
    }
    EXPECT_EQ(depth + 1, ggx::gguf::kMaxArrayDepth);
    EXPECT_EQ(n->element_type, ValueType::U8);
    EXPECT_EQ(n->count, 0u);
    const ggx::gguf::Value * aa = file.find_value("a.a.i32");
    ASSERT_NE(aa, nullptr);
    ASSERT_EQ(aa->items.size(), 2u);
    EXPECT_EQ(aa->items[0].count, 2u);
    EXPECT_EQ(aa->items[1].count, 1u);
    int32_t three = 0;
    std::memcpy(&three, aa->items[1].raw, 4);
    EXPECT_EQ(three, 3);

    // Type checks: absent keys, wrong types, values out of range.
    std::string e;
    EXPECT_FALSE(file.get_int("nope", &e));
    EXPECT_NE(e.find("'nope' is absent"), std::string::npos) << e;
    EXPECT_FALSE(file.get_string("u32", &e));
    EXPECT_NE(e.find("'u32' has type u32, expected string"), std::string::npos) << e;
    EXPECT_FALSE(file.get_int("f32", &e));
    EXPECT_NE(e.find("has type f32, expected an integer"), std::string::npos) << e;
    EXPECT_FALSE(file.get_float("i32", &e));
    EXPECT_NE(e.find("expected f32 or f64"), std::string::npos) << e;
    EXPECT_FALSE(file.get_bool("u8", &e));
    EXPECT_NE(e.find("expected bool"), std::string::npos) << e;
    EXPECT_FALSE(file.get_int("bool.t", &e));
    EXPECT_FALSE(file.get_int("u64", &e));
    EXPECT_NE(e.find("does not fit int64"), std::string::npos) << e;
    EXPECT_FALSE(file.get_uint("i64", &e));
    EXPECT_NE(e.find("does not fit uint64"), std::string::npos) << e;
    EXPECT_FALSE(file.get_int_array("a.u64.big", &e));
    EXPECT_NE(e.find("does not fit int64"), std::string::npos) << e;
    EXPECT_FALSE(file.get_int_array("a.f32", &e));
    EXPECT_NE(e.find("has type array of f32, expected an array of integers"), std::string::npos) << e;
    EXPECT_FALSE(file.get_float_array("a.str", &e));
    EXPECT_NE(e.find("array of string"), std::string::npos) << e;
    EXPECT_FALSE(file.get_string_array("str", &e));
    EXPECT_NE(e.find("expected an array of strings"), std::string::npos) << e;
    EXPECT_FALSE(file.get_int_array("u32", &e));
}

TEST(Gguf, WriterRefusesBadInput) {
    const std::vector<uint8_t> data(64);
    const int64_t ne[] = {16};
    const int64_t ne_q[] = {31};
    const int64_t ne_neg[] = {-1};
    struct Case {
        const char * needle;
        void (*add)(Writer &, const uint8_t *, const int64_t *, const int64_t *, const int64_t *);
    };
    const Case cases[] = {
        {"empty key", [](Writer & w, auto, auto, auto, auto) { w.add_u32("", 1); }},
        {"duplicate key 'k'",
         [](Writer & w, auto, auto, auto, auto) {
             w.add_u32("k", 1);
             w.add_string("k", "x");
         }},
        {"general.alignment 48 is not a nonzero power of two",
         [](Writer & w, auto, auto, auto, auto) { w.add_u32("general.alignment", 48); }},
        {"general.alignment must be an integer, not string",
         [](Writer & w, auto, auto, auto, auto) { w.add_string("general.alignment", "64"); }},
        {"alignment 16 differs from the general.alignment added, 64",
         [](Writer & w, auto, auto, auto, auto) {
             w.add_u32("general.alignment", 64);
             w.set_alignment(16);
         }},
        {"tensor 't' has no data", [](Writer & w, auto, const int64_t * n, auto,
                                      auto) { w.add_tensor("t", GGML_TYPE_F32, 1, n, nullptr, 64); }},
        {"alignment 3", [](Writer & w, auto, auto, auto, auto) { w.set_alignment(3); }},
        {"alignment 0", [](Writer & w, auto, auto, auto, auto) { w.set_alignment(0); }},
        {"fixed-size elements, not string",
         [](Writer & w, const uint8_t * d, auto, auto, auto) { w.add_array("a", ValueType::STRING, d, 1); }},
        {"empty name", [](Writer & w, const uint8_t * d, const int64_t * n, auto,
                          auto) { w.add_tensor("", GGML_TYPE_F32, 1, n, d, 64); }},
        {"duplicate name",
         [](Writer & w, const uint8_t * d, const int64_t * n, auto, auto) {
             w.add_tensor("t", GGML_TYPE_F32, 1, n, d, 64);
             w.add_tensor("t", GGML_TYPE_F32, 1, n, d, 64);
         }},
        {"63 bytes given, the type and shape need 64",
         [](Writer & w, const uint8_t * d, const int64_t * n, auto, auto) {
             w.add_tensor("t", GGML_TYPE_F32, 1, n, d, 63);
         }},
        {"not a multiple of the block size 32", [](Writer & w, const uint8_t * d, auto, const int64_t * q,
                                                   auto) { w.add_tensor("t", GGML_TYPE_Q8_0, 1, q, d, 34); }},
        {"is negative", [](Writer & w, const uint8_t * d, auto, auto,
                           const int64_t * neg) { w.add_tensor("t", GGML_TYPE_F32, 1, neg, d, 0); }},
        {"n_dims 5", [](Writer & w, const uint8_t * d, const int64_t * n, auto,
                        auto) { w.add_tensor("t", GGML_TYPE_F32, 5, n, d, 64); }},
    };
    for (const Case & c : cases) {
        Writer w;
        c.add(w, data.data(), ne, ne_q, ne_neg);
        std::vector<uint8_t> out;
        std::string error;
        EXPECT_FALSE(w.write_to(&out, &error)) << c.needle;
        EXPECT_NE(error.find(c.needle), std::string::npos)
            << "error: " << error << "\nexpected: " << c.needle;
        EXPECT_FALSE(w.write(temp_path("refused.gguf"), &error));
        EXPECT_FALSE(std::filesystem::exists(temp_path("refused.gguf")));
    }
    std::string error;
    Writer ok;
    EXPECT_FALSE(ok.write("/nonexistent-dir/x.gguf", &error));
    EXPECT_NE(error.find("cannot create"), std::string::npos) << error;
}

TEST(Gguf, OpenErrors) {
    std::string error;
    EXPECT_EQ(File::open("/nonexistent-dir/x.gguf", &error), nullptr);
    EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
    EXPECT_EQ(File::open(std::filesystem::temp_directory_path().string(), &error), nullptr);
    EXPECT_NE(error.find("not a regular file"), std::string::npos) << error;
    const std::string empty = temp_path("empty.gguf");
    std::ofstream(empty).close();
    EXPECT_EQ(File::open(empty, &error), nullptr);
    EXPECT_NE(error.find("magic"), std::string::npos) << error;
    EXPECT_NE(error.find(empty), std::string::npos) << error;
    std::filesystem::remove(empty);
    EXPECT_EQ(File::parse(nullptr, 0, &error), nullptr);
    EXPECT_NE(error.find("magic"), std::string::npos) << error;
}

TEST(Gguf, TruncatedAtEveryByteFails) {
    // Untrusted input: an error, never an abort, also in the default, aborting error mode.
    ggx::test::ScopedErrorMode aborting(GGML_EXT_ERROR_ABORT);
    const std::vector<uint8_t> file = small_valid_file();
    ASSERT_NE(expect_ok(file), nullptr);
    for (size_t n = 0; n < file.size(); ++n) {
        std::string error;
        parse_copy(file, n, &error);
        EXPECT_EQ(error.rfind("gguf: offset ", 0), 0u) << "truncated to " << n << " bytes: " << error;
    }
}

TEST(Gguf, EveryByteFlippedNeverCrashes) {
    // Not every corruption is detectable (tensor data, padding), but none may crash or read out of
    // bounds, or abort in the default error mode.
    ggx::test::ScopedErrorMode aborting(GGML_EXT_ERROR_ABORT);
    const std::vector<uint8_t> file = small_valid_file();
    for (size_t n = 0; n < file.size(); ++n) {
        for (uint8_t x : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xff)}) {
            std::vector<uint8_t> bad = file;
            bad[n] ^= x;
            std::string error;
            std::unique_ptr<File> f = File::parse(bad.data(), bad.size(), &error);
            if (!f) {
                EXPECT_FALSE(error.empty());
            }
        }
    }
}

TEST(Gguf, HandMadeValidFile) {
    Bytes f;
    f.header(2, 1).kv_u32("general.alignment", 16);
    f.tensor("x", {4}, ggx::gguf::kGgufTypeF32, 0).tensor("z", {0, 3}, ggx::gguf::kGgufTypeF32, 16);
    f.pad(16).zeros(16);
    std::unique_ptr<File> file = expect_ok(f.b);
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(file->alignment(), 16u);
    EXPECT_EQ(file->tensors()[1].bytes, 0u);
    EXPECT_EQ(file->tensors()[1].nelements(), 0);

    Bytes v2;  // version 2 has the same layout
    v2.header(0, 1, 2).kv_u32("k", 1);
    ASSERT_NE(expect_ok(v2.b), nullptr);
    Bytes zero_sized;  // two empty tensors at the same offset do not overlap
    zero_sized.header(2, 0).tensor("a", {0}, 0, 0).tensor("b", {0}, 0, 0).pad();
    ASSERT_NE(expect_ok(zero_sized.b), nullptr);
    Bytes empty_inside;  // nor does an empty tensor inside another one
    empty_inside.header(2, 0).tensor("a", {16}, 0, 0).tensor("e", {0}, 0, 32).pad().zeros(64);
    ASSERT_NE(expect_ok(empty_inside.b), nullptr);
    Bytes exact;  // the last tensor may end the file
    exact.header(1, 0).tensor("t", {16}, 0, 0).pad().zeros(64);
    ASSERT_NE(expect_ok(exact.b), nullptr);
    Bytes deepest;  // kMaxArrayDepth levels of nesting
    deepest.header(0, 1).str("deep").u32(uint32_t(ValueType::ARRAY));
    const std::vector<uint8_t> v = nested_array(ggx::gguf::kMaxArrayDepth);
    deepest.raw(v.data(), v.size());
    ASSERT_NE(expect_ok(deepest.b), nullptr);
    Bytes u8;  // general.alignment of any integer type
    u8.header(0, 1).str("general.alignment").u32(uint32_t(ValueType::U8)).u8(8);
    std::unique_ptr<File> aligned = expect_ok(u8.b);
    ASSERT_NE(aligned, nullptr);
    EXPECT_EQ(aligned->alignment(), 8u);
}

// The malformed-file corpus: one named case per way a file can be wrong, each with the message (and
// the byte offset) the reader gives for it, through File::parse and through gguf.h.
struct Malformed {
    std::string name;
    std::vector<uint8_t> file;
    std::string error;  // a part of the message
};

void PrintTo(const Malformed & m, std::ostream * os) { *os << m.name; }

std::string at(size_t offset, const std::string & message) {
    return "gguf: offset " + std::to_string(offset) + ": " + message;
}

// A valid file whose every field the truncation cases cut: a long first pair and a long first tensor
// name, so that the counts still fit in what is left when a later field is cut.
Bytes truncation_base() {
    Bytes f;
    f.header(2, 4);
    f.str("pad").u32(uint32_t(ValueType::STRING)).str(std::string(300, 'x'));
    f.mark("kv1").str("key.u32").mark("kv1.type").u32(uint32_t(ValueType::U32)).mark("kv1.value").u32(7);
    f.str("key.arr").u32(uint32_t(ValueType::ARRAY)).mark("kv2.element_type").u32(uint32_t(ValueType::U16));
    f.mark("kv2.count").u64(3).mark("kv2.elements").zeros(6);
    f.str("key.strs").u32(uint32_t(ValueType::ARRAY)).u32(uint32_t(ValueType::STRING)).u64(2).str("ab");
    f.mark("kv3.element1").str("cde");
    f.mark("infos").tensor("t0." + std::string(97, 'a'), {8}, ggx::gguf::kGgufTypeF32, 0);
    f.mark("t1").str("t1").mark("t1.n_dims").u32(2).u64(8).mark("t1.ne1").u64(2);
    f.mark("t1.type").u32(ggx::gguf::kGgufTypeF16).mark("t1.offset").u64(32);
    f.mark("padding").pad().mark("data").zeros(64);
    return f;
}

void add_truncations(std::vector<Malformed> & out) {
    const Bytes f = truncation_base();
    auto cut = [&](const char * name, size_t size, const std::string & error) {
        out.push_back({std::string("truncated_") + name, f.prefix(size), error});
    };
    cut("magic", 2, at(0, "truncated: magic needs 4 bytes, the file has 2 left (file size 2)"));
    cut("version", 6, at(4, "truncated: version needs 4 bytes, the file has 2 left"));
    cut("tensor_count", 12, at(8, "truncated: tensor_count needs 8 bytes, the file has 4 left"));
    cut("kv_count", 20, at(16, "truncated: kv_count needs 8 bytes, the file has 4 left"));
    const size_t kv1 = f.at("kv1");
    cut("key_length", kv1 + 3, at(kv1, "truncated: key of kv 1 length needs 8 bytes, the file has 3 left"));
    cut("key_bytes", kv1 + 11, at(kv1, "key of kv 1 length 7 exceeds the 3 bytes left in the file"));
    cut("value_type", f.at("kv1.type") + 2,
        at(f.at("kv1.type"), "truncated: kv 1 'key.u32' value type needs 4 bytes, the file has 2 left"));
    cut("value", f.at("kv1.value") + 2,
        at(f.at("kv1.value"), "truncated: kv 1 'key.u32' u32 value needs 4 bytes, the file has 2 left"));
    cut("array_element_type", f.at("kv2.element_type") + 2,
        at(f.at("kv2.element_type"), "truncated: kv 2 'key.arr' array element type needs 4 bytes"));
    cut("array_count", f.at("kv2.count") + 5,
        at(f.at("kv2.count"), "truncated: kv 2 'key.arr' array count needs 8 bytes, the file has 5 left"));
    cut("array_elements", f.at("kv2.elements") + 3,
        at(f.at("kv2.count"),
           "kv 2 'key.arr': array count 3 of u16 needs at least 2 bytes each, the file has 3 left"));
    cut("array_string_element", f.at("kv3.element1") + 9,
        at(f.at("kv3.element1"), "kv 3 'key.strs'[1] string length 3 exceeds the 1 bytes left"));
    cut("tensor_infos", f.at("infos") + 10,
        at(8,
           "tensor_count 2 cannot fit: a tensor info takes at least 33 bytes and the file has 10 after the "
           "metadata"));
    const size_t t1 = f.at("t1");
    cut("tensor_name_length", t1 + 3,
        at(t1, "truncated: name of tensor 1 length needs 8 bytes, the file has 3 left"));
    cut("tensor_name_bytes", t1 + 9, at(t1, "name of tensor 1 length 2 exceeds the 1 bytes left"));
    cut("tensor_n_dims", f.at("t1.n_dims") + 2,
        at(f.at("t1.n_dims"), "truncated: tensor 1 't1' n_dims needs 4 bytes, the file has 2 left"));
    cut("tensor_ne", f.at("t1.ne1") + 4,
        at(f.at("t1.ne1"), "truncated: tensor 1 't1' ne[1] needs 8 bytes, the file has 4 left"));
    cut("tensor_type", f.at("t1.type") + 1,
        at(f.at("t1.type"), "truncated: tensor 1 't1' type needs 4 bytes, the file has 1 left"));
    cut("tensor_offset", f.at("t1.offset") + 7,
        at(f.at("t1.offset"), "truncated: tensor 1 't1' offset needs 8 bytes, the file has 7 left"));
    const size_t padding = f.at("padding"), data = f.at("data");
    cut("alignment_padding", padding + 3,
        at(padding, "truncated: the data section would start at " + std::to_string(data) +
                        ", past the end of the file (size " + std::to_string(padding + 3) + ")"));
    cut("data_section", data + 40,
        at(f.at("t1.offset"),
           "tensor 1 't1': data [32, +32) lies outside the data section (40 bytes at file offset " +
               std::to_string(data) + ")"));
}

// A file of one pair: key, value type, then the encoded value.
Bytes one_pair(std::string_view key, uint32_t type, const Bytes & value) {
    Bytes f;
    f.header(0, 1).str(key).u32(type);
    return f.raw(value.b.data(), value.b.size());
}

Bytes array_of(uint32_t element_type, uint64_t count, size_t trailing) {
    Bytes v;
    v.u32(element_type).u64(count).zeros(trailing);
    return one_pair("arr", uint32_t(ValueType::ARRAY), v);
}

void add_huge_counts(std::vector<Malformed> & out) {
    const uint64_t max = UINT64_MAX;
    Bytes f;
    out.push_back(
        {"huge_tensor_count", f.header(max, 0).zeros(100).b,
         at(8,
            "tensor_count 18446744073709551615 cannot fit: a tensor info takes at least 33 bytes and the "
            "file has 100 after the header")});
    f = {};
    out.push_back(
        {"tensor_count_one_too_many", f.header(2, 0).zeros(65).b,
         at(8, "tensor_count 2 cannot fit: a tensor info takes at least 33 bytes and the file has 65")});
    f = {};
    out.push_back(
        {"huge_kv_count", f.header(0, max).zeros(50).b,
         at(16,
            "kv_count 18446744073709551615 cannot fit: a key/value pair takes at least 14 bytes and the "
            "file has 50 after the header")});
    f = {};
    out.push_back({"kv_count_one_too_many", f.header(0, 4).zeros(55).b, at(16, "kv_count 4 cannot fit")});
    f = {};
    out.push_back(
        {"huge_key_length", f.header(0, 1).u64(max).zeros(20).b,
         at(24,
            "key of kv 0 length 18446744073709551615 exceeds the 20 bytes left in the file (file size 52)")});
    Bytes s;
    s.u64(max - 3).zeros(8);
    out.push_back({"huge_string_length", one_pair("name", uint32_t(ValueType::STRING), s).b,
                   at(40, "kv 0 'name' string length 18446744073709551612 exceeds the 8 bytes left")});
    out.push_back(
        {"huge_array_count", array_of(uint32_t(ValueType::U8), max, 64).b,
         at(43,
            "kv 0 'arr': array count 18446744073709551615 of u8 needs at least 1 bytes each, the file "
            "has 64 left")});
    out.push_back({"array_count_one_too_many", array_of(uint32_t(ValueType::U8), 65, 64).b,
                   at(43, "kv 0 'arr': array count 65 of u8")});
    // Counts whose byte size would wrap around to a small number.
    out.push_back({"array_count_size_wraps", array_of(uint32_t(ValueType::U64), max / 8 + 1, 64).b,
                   at(43, "kv 0 'arr': array count 2305843009213693952 of u64 needs at least 8 bytes each")});
    out.push_back(
        {"huge_array_count_of_strings", array_of(uint32_t(ValueType::STRING), uint64_t(1) << 61, 64).b,
         at(43, "kv 0 'arr': array count 2305843009213693952 of string needs at least 8 bytes each")});
    out.push_back(
        {"huge_array_count_of_arrays", array_of(uint32_t(ValueType::ARRAY), max, 64).b,
         at(43, "kv 0 'arr': array count 18446744073709551615 of array needs at least 12 bytes each")});
    Bytes inner;
    inner.u32(uint32_t(ValueType::ARRAY)).u64(1).u32(uint32_t(ValueType::U32)).u64(max / 2).zeros(16);
    out.push_back({"huge_nested_array_count", one_pair("n", uint32_t(ValueType::ARRAY), inner).b,
                   at(53, "kv 0 'n'[0]: array count 9223372036854775807 of u32")});
    Bytes strings;
    strings.u32(uint32_t(ValueType::STRING)).u64(2).str("ok").u64(max).zeros(8);
    out.push_back({"huge_string_element_length", one_pair("arr", uint32_t(ValueType::ARRAY), strings).b,
                   at(61, "kv 0 'arr'[1] string length 18446744073709551615 exceeds the 8 bytes left")});
    f = {};
    out.push_back({"huge_tensor_name_length", f.header(1, 0).u64(max).zeros(40).b,
                   at(24, "name of tensor 0 length 18446744073709551615 exceeds the 40 bytes left")});
}

// A file of one general.alignment pair, of type and value, and a tensor at offset.
Bytes aligned(uint32_t type, const Bytes & value, uint64_t offset = 0) {
    Bytes f;
    f.header(1, 1).str("general.alignment").u32(type).raw(value.b.data(), value.b.size());
    return f.tensor("t", {4}, ggx::gguf::kGgufTypeF32, offset).pad(64).zeros(128);
}

void add_alignments(std::vector<Malformed> & out) {
    for (uint32_t a : {0u, 3u, 48u, 0x80000001u}) {
        Bytes v;
        out.push_back({"alignment_" + std::to_string(a), aligned(uint32_t(ValueType::U32), v.u32(a)).b,
                       at(53, "general.alignment " + std::to_string(a) + " is not a nonzero power of two")});
    }
    Bytes v;
    out.push_back({"alignment_negative", aligned(uint32_t(ValueType::I32), v.u32(uint32_t(-32))).b,
                   at(53, "general.alignment -32 is not a nonzero power of two")});
    v = {};
    out.push_back({"alignment_of_type_string", aligned(uint32_t(ValueType::STRING), v.str("32")).b,
                   at(49, "general.alignment has type string, expected an integer")});
    v = {};
    const float f32 = 32.0f;
    out.push_back({"alignment_of_type_f32", aligned(uint32_t(ValueType::F32), v.raw(&f32, 4)).b,
                   at(49, "general.alignment has type f32, expected an integer")});
    v = {};
    out.push_back({"alignment_of_type_bool", aligned(uint32_t(ValueType::BOOL), v.u8(1)).b,
                   at(49, "general.alignment has type bool, expected an integer")});
    v = {};
    v.u32(uint32_t(ValueType::U32)).u64(1).u32(32);
    out.push_back({"alignment_of_type_array", aligned(uint32_t(ValueType::ARRAY), v).b,
                   at(49, "general.alignment has type array, expected an integer")});
    v = {};
    out.push_back(
        {"alignment_huge", aligned(uint32_t(ValueType::U64), v.u64(uint64_t(1) << 63)).b,
         "truncated: the data section would start at 9223372036854775808, past the end of the file"});
    v = {};
    out.push_back({"tensor_offset_unaligned_custom", aligned(uint32_t(ValueType::U32), v.u32(64), 32).b,
                   "tensor 0 't': offset 32 is not a multiple of the alignment 64"});
    Bytes f;
    out.push_back({"tensor_offset_unaligned", f.header(1, 0).tensor("t", {4}, 0, 1).pad().zeros(64).b,
                   at(49, "tensor 0 't': offset 1 is not a multiple of the alignment 32")});
}

// A file of one tensor, with room for its data when the shape is small.
Bytes one_tensor(std::vector<uint64_t> ne, uint32_t type = ggx::gguf::kGgufTypeF32, uint64_t offset = 0,
                 size_t data_bytes = 256) {
    Bytes f;
    return f.header(1, 0).tensor("t", std::move(ne), type, offset).pad().zeros(data_bytes);
}

void add_shapes_and_offsets(std::vector<Malformed> & out) {
    const uint64_t big = uint64_t(1) << 32;
    Bytes f;
    f.header(1, 0).str("t").u32(0).u32(0).u64(0).zeros(64);
    out.push_back({"n_dims_0", f.b, at(33, "tensor 0 't': n_dims 0 is not in 1..4")});
    out.push_back(
        {"n_dims_5", one_tensor({1, 1, 1, 1, 1}).b, at(33, "tensor 0 't': n_dims 5 is not in 1..4")});
    f = {};
    f.header(1, 0).str("t").u32(UINT32_MAX).zeros(64);
    out.push_back({"n_dims_huge", f.b, at(33, "tensor 0 't': n_dims 4294967295 is not in 1..4")});
    out.push_back(
        {"ne_negative", one_tensor({4, UINT64_MAX}).b, at(45, "tensor 0 't': ne[1] = -1 is negative")});
    out.push_back({"ne_int64_min", one_tensor({uint64_t(1) << 63}).b,
                   at(37, "tensor 0 't': ne[0] = -9223372036854775808 is negative")});
    out.push_back({"ne_product_overflows", one_tensor({big, big, 0}).b,
                   at(45, "tensor 0 't': element count overflows at ne[1] = 4294967296")});
    out.push_back({"ne_product_overflows_past_a_zero", one_tensor({0, big, big}).b,
                   at(53, "tensor 0 't': element count overflows at ne[2] = 4294967296")});
    out.push_back({"byte_size_overflows", one_tensor({uint64_t(1) << 62}).b,
                   at(33, "tensor 0 't': byte size of a f32 tensor of this shape overflows")});
    out.push_back({"byte_size_overflows_4d", one_tensor({uint64_t(1) << 30, uint64_t(1) << 30, 4}).b,
                   at(33, "tensor 0 't': byte size of a f32 tensor of this shape overflows")});
    out.push_back({"ne0_not_a_block_multiple_q8_0", one_tensor({33}, ggx::gguf::kGgufTypeQ8_0).b,
                   at(37, "tensor 0 't': ne[0] = 33 is not a multiple of the block size 32 of q8_0")});
    out.push_back({"ne0_not_a_block_multiple_q4_0", one_tensor({16, 2}, ggx::gguf::kGgufTypeQ4_0).b,
                   at(37, "tensor 0 't': ne[0] = 16 is not a multiple of the block size 32 of q4_0")});
    out.push_back(
        {"data_past_the_end", one_tensor({16}, 0, 0, 63).b,
         at(49, "tensor 0 't': data [0, +64) lies outside the data section (63 bytes at file offset 64)")});
    out.push_back({"offset_past_the_end", one_tensor({16}, 0, uint64_t(1) << 40, 64).b,
                   at(49, "tensor 0 't': data [1099511627776, +64) lies outside the data section")});
    out.push_back({"offset_plus_size_wraps", one_tensor({16}, 0, UINT64_MAX - 31, 64).b,
                   at(49, "tensor 0 't': data [18446744073709551584, +64) lies outside the data section")});
    out.push_back({"shape_past_the_end", one_tensor({uint64_t(1) << 40, 1024}, 0, 0, 64).b,
                   at(57, "tensor 0 't': data [0, +4503599627370496) lies outside the data section")});
    f = {};  // b starts inside a
    f.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).pad().zeros(128);
    out.push_back(
        {"tensors_overlap", f.b, at(82, "tensor 1 'b': data [32, +32) overlaps tensor 0 'a' [0, +64)")});
    f = {};  // the same offset
    f.header(2, 0).tensor("a", {8}, 0, 64).tensor("b", {8}, 0, 64).pad().zeros(128);
    out.push_back({"tensors_at_one_offset", f.b,
                   at(82, "tensor 1 'b': data [64, +32) overlaps tensor 0 'a' [64, +32)")});
    f = {};  // c inside a, with b (after both) listed first
    f.header(3, 0).tensor("b", {8}, 0, 128).tensor("a", {32}, 0, 0).tensor("c", {8}, 0, 64).pad().zeros(256);
    out.push_back({"tensor_inside_another", f.b,
                   at(115, "tensor 2 'c': data [64, +32) overlaps tensor 1 'a' [0, +128)")});
}

void add_unknown_types(std::vector<Malformed> & out) {
    for (uint32_t t : {13u, UINT32_MAX}) {
        out.push_back({"value_type_" + std::to_string(t), one_pair("k", t, Bytes().zeros(8)).b,
                       at(33, "kv 0 'k': unknown value type " + std::to_string(t))});
    }
    out.push_back(
        {"array_element_type_13", array_of(13, 1, 8).b, at(39, "kv 0 'arr': unknown array element type 13")});
    // Past the enum, and the ids of removed types (Q4_2, Q4_3, Q4_0_4_4, IQ4_NL_4_4).
    for (uint32_t t : {uint32_t(GGML_TYPE_COUNT), 1000u, UINT32_MAX, 4u, 5u, 31u, 36u}) {
        out.push_back({"tensor_type_" + std::to_string(t), one_tensor({32}, t).b,
                       at(45, "tensor 0 't': unknown tensor type id " + std::to_string(t))});
    }
    out.push_back({"bool_value_2", one_pair("b", uint32_t(ValueType::BOOL), Bytes().u8(2)).b,
                   at(37, "kv 0 'b': bool value 2 is neither 0 nor 1")});
    Bytes bools;
    bools.u32(uint32_t(ValueType::BOOL)).u64(2).u8(1).u8(7);
    out.push_back({"bool_array_element_7", one_pair("b", uint32_t(ValueType::ARRAY), bools).b,
                   at(50, "kv 0 'b'[1]: bool value 7 is neither 0 nor 1")});
}

void add_names(std::vector<Malformed> & out) {
    Bytes f;
    f.header(0, 2).kv_u32("k", 1).kv_u32("k", 2);
    out.push_back({"duplicate_key", f.b, at(41, "kv 1: duplicate key 'k' (also kv 0)")});
    f = {};
    f.header(0, 2).kv_u32("general.alignment", 32).kv_u32("general.alignment", 64);
    out.push_back(
        {"duplicate_alignment_key", f.b, at(57, "kv 1: duplicate key 'general.alignment' (also kv 0)")});
    f = {};
    f.header(0, 1).str("").u32(0).u8(0).zeros(2);
    out.push_back({"empty_key", f.b, at(24, "kv 0: empty key")});
    f = {};
    f.header(2, 0).tensor("w", {4}, 0, 0).tensor("w", {4}, 0, 32).pad().zeros(64);
    out.push_back({"duplicate_tensor_name", f.b, at(57, "tensor 1: duplicate name 'w' (also tensor 0)")});
    f = {};
    f.header(1, 0).tensor("", {4}, 0, 0).pad().zeros(64);
    out.push_back({"empty_tensor_name", f.b, at(24, "tensor 0: empty name")});
    f = {};
    f.header(0, 1).str(std::string("a\x01'", 3)).u32(99).zeros(8);
    out.push_back({"key_printed_escaped", f.b, at(35, "kv 0 'a\\x01\\x27': unknown value type 99")});
    for (int depth : {ggx::gguf::kMaxArrayDepth + 1, 1000}) {
        Bytes v;
        const std::vector<uint8_t> nested = nested_array(depth);
        v.raw(nested.data(), nested.size());
        out.push_back({"arrays_nested_" + std::to_string(depth),
                       one_pair("deep", uint32_t(ValueType::ARRAY), v).b,
                       "kv 0 'deep'[0][0][0][0][0][0][0][0]: arrays nested deeper than 8 levels"});
    }
}

void add_header(std::vector<Malformed> & out) {
    Bytes f;
    f.raw("GGUG", 4).u32(3).u64(0).u64(0);
    out.push_back({"bad_magic", f.b, at(0, "bad magic 47 47 55 47 (expected 'GGUF')")});
    for (uint32_t version : {0u, 1u, 4u, UINT32_MAX}) {
        f = {};
        out.push_back({"version_" + std::to_string(version), f.header(0, 0, version).b,
                       at(4, "unsupported version " + std::to_string(version) + " (2 and 3 are read)")});
    }
}

std::vector<Malformed> malformed_corpus() {
    std::vector<Malformed> out;
    add_header(out);
    add_truncations(out);
    add_huge_counts(out);
    add_alignments(out);
    add_shapes_and_offsets(out);
    add_unknown_types(out);
    add_names(out);
    return out;
}

class GgufMalformed : public testing::TestWithParam<Malformed> {};

TEST_P(GgufMalformed, FailsWithItsError) {
    // Untrusted input: an error, never an abort, also in the default, aborting error mode.
    ggx::test::ScopedErrorMode aborting(GGML_EXT_ERROR_ABORT);
    const Malformed & m = GetParam();
    std::string error;
    parse_copy(m.file, m.file.size(), &error);
    EXPECT_NE(error.find(m.error), std::string::npos)
        << "error: " << error << "\nexpected to contain: " << m.error;
    ggml_context * tensors = nullptr;
    EXPECT_EQ(gguf_init_from_buffer(m.file.data(), m.file.size(), {false, &tensors}), nullptr);
    EXPECT_EQ(tensors, nullptr);
    const std::string api_error = ggml_backend_get_last_error();
    EXPECT_EQ(api_error, "gguf_init_from_buffer: " + error);
}

INSTANTIATE_TEST_SUITE_P(Corpus, GgufMalformed, testing::ValuesIn(malformed_corpus()),
                         [](const testing::TestParamInfo<Malformed> & param) { return param.param.name; });

// Writes the fuzz seed corpus to $GGX_GGUF_CORPUS_OUT (run with --gtest_also_run_disabled_tests).
TEST(Gguf, DISABLED_WriteCorpus) {
    const char * dir = std::getenv("GGX_GGUF_CORPUS_OUT");
    ASSERT_NE(dir, nullptr);
    auto save = [dir](const std::string & name, const std::vector<uint8_t> & bytes) {
        std::ofstream(std::filesystem::path(dir) / name, std::ios::binary)
            .write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
    };
    save("valid_small.gguf", small_valid_file());
    {
        Writer w(64);
        std::vector<std::vector<uint8_t>> storage;
        add_all_tensors(w, storage);
        w.add_string("general.architecture", "ggx-dit");
        w.add_raw("nested", ValueType::ARRAY, nested_array(3));
        std::vector<uint8_t> out;
        w.write_to(&out, nullptr);
        save("valid_all_types.gguf", out);
    }
    {
        // Every tensor type and scalar value type, without the nesting gguf.h refuses: the public
        // API's read, get and write-back path.
        Writer w(64);
        std::vector<std::vector<uint8_t>> storage;
        add_all_tensors(w, storage);
        w.add_i8("i8", -1);
        w.add_u16("u16", 2);
        w.add_u32("u32", 3);
        w.add_i32("i32", -4);
        w.add_i64("i64", -5);
        w.add_f32("f32", 0.25f);
        const std::vector<std::string> s = {"a", "bc"};
        w.add_string_array("strings", s);
        const float f[] = {1.0f, -2.0f};
        w.add_array("f32s", std::span<const float>(f));
        std::vector<uint8_t> out;
        w.write_to(&out, nullptr);
        save("valid_public_api.gguf", out);
    }
    {
        Writer w;
        w.add_u8("u8", 1);
        w.add_i16("i16", -2);
        w.add_u64("u64", 3);
        w.add_f64("f64", 0.5);
        w.add_bool("b", true);
        const std::vector<std::string> s = {"tok", "", "x"};
        w.add_string_array("tokens", s);
        const int64_t i[] = {1, -1};
        w.add_array("i64s", std::span<const int64_t>(i));
        std::vector<uint8_t> out;
        w.write_to(&out, nullptr);
        save("valid_metadata_only.gguf", out);
    }
    Bytes overlap;
    overlap.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).pad().zeros(128);
    save("invalid_overlap.gguf", overlap.b);
    Bytes huge;
    huge.header(1, 1)
        .str("arr")
        .u32(uint32_t(ValueType::ARRAY))
        .u32(uint32_t(ValueType::STRING))
        .u64(UINT64_MAX);
    save("invalid_huge_array.gguf", huge.b);
    Bytes deep;
    deep.header(0, 1).str("deep").u32(uint32_t(ValueType::ARRAY));
    const std::vector<uint8_t> v = nested_array(ggx::gguf::kMaxArrayDepth + 1);
    deep.raw(v.data(), v.size());
    save("invalid_deep_nesting.gguf", deep.b);
    Bytes q;
    q.header(1, 1).kv_u32("general.alignment", 16).tensor("q", {33, 2}, 8, 16).pad(16).zeros(128);
    save("invalid_block_shape.gguf", q.b);
    const std::vector<uint8_t> full = small_valid_file();
    save("invalid_truncated.gguf",
         std::vector<uint8_t>(full.begin(), full.begin() + std::ptrdiff_t(full.size() / 2)));
}

}  // namespace
