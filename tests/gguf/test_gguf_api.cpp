// gguf.h: every function, on files written through the API and read back through each entry point
// (file, FILE *, buffer, callback), with and without tensor data; malformed files give NULL and the
// reader's error; misused accessors abort in the default mode and report in the returning mode.
#include <gguf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml-cpp.h"
#include "support/test_util.h"

namespace {

using Gguf = gguf_context_ptr;
using Context = std::unique_ptr<ggml_context, ggx::test::ContextDeleter>;

std::string temp_file(const std::string & name) {
    return (std::filesystem::temp_directory_path() /
            ("ggx_test_gguf_api_" + std::to_string(getpid()) + "_" + name))
        .string();
}

std::string last_error() { return ggml_backend_get_last_error(); }

// Tensors of every type ggx reads and writes, with their data, in a context of their own.
struct Tensors {
    Context ctx{ggml_init({1 << 20, nullptr, false})};
    std::vector<ggml_tensor *> list;

    Tensors() {
        add(GGML_TYPE_F32, {5, 3}, "w.f32");
        add(GGML_TYPE_F16, {7}, "w.f16");
        add(GGML_TYPE_BF16, {3, 2, 2}, "w.bf16");
        add(GGML_TYPE_I8, {9, 1, 1, 2}, "w.i8");
        add(GGML_TYPE_I16, {4, 4}, "w.i16");
        add(GGML_TYPE_I32, {6}, "w.i32");
        add(GGML_TYPE_Q8_0, {64, 2}, "w.q8_0");
        add(GGML_TYPE_Q4_0, {32, 3}, "w.q4_0");
    }
    void add(ggml_type type, std::vector<int64_t> ne, const char * name) {
        ggml_tensor * t = ggml_new_tensor(ctx.get(), type, int(ne.size()), ne.data());
        ggml_set_name(t, name);
        auto * bytes = static_cast<uint8_t *>(t->data);
        for (size_t k = 0; k < ggml_nbytes(t); ++k)
            bytes[k] = uint8_t(k * 13 + list.size());
        list.push_back(t);
    }
};

// A context with a pair of every type and every tensor of tensors.
Gguf full_context(const Tensors & tensors) {
    Gguf ctx(gguf_init_empty());
    gguf_set_val_u8(ctx.get(), "u8", 200);
    gguf_set_val_i8(ctx.get(), "i8", -100);
    gguf_set_val_u16(ctx.get(), "u16", 60000);
    gguf_set_val_i16(ctx.get(), "i16", -30000);
    gguf_set_val_u32(ctx.get(), "u32", 4000000000u);
    gguf_set_val_i32(ctx.get(), "i32", -2000000000);
    gguf_set_val_f32(ctx.get(), "f32", 1.5f);
    gguf_set_val_u64(ctx.get(), "u64", UINT64_MAX);
    gguf_set_val_i64(ctx.get(), "i64", INT64_MIN);
    gguf_set_val_f64(ctx.get(), "f64", -0.25);
    gguf_set_val_bool(ctx.get(), "bool", true);
    gguf_set_val_str(ctx.get(), "str", "hello");
    const int32_t ints[] = {1, -2, 3};
    gguf_set_arr_data(ctx.get(), "arr.i32", GGUF_TYPE_INT32, ints, 3);
    const char * strs[] = {"a", "", "ccc"};
    gguf_set_arr_str(ctx.get(), "arr.str", strs, 3);
    for (const ggml_tensor * t : tensors.list)
        gguf_add_tensor(ctx.get(), t);
    return ctx;
}

// Every pair and tensor info full_context wrote, as read back in ctx.
void expect_full_metadata(const gguf_context * ctx) {
    ASSERT_EQ(gguf_get_n_kv(ctx), 14);
    EXPECT_EQ(gguf_get_version(ctx), 3u);
    EXPECT_EQ(gguf_get_alignment(ctx), size_t(GGUF_DEFAULT_ALIGNMENT));
    EXPECT_EQ(gguf_get_val_u8(ctx, gguf_find_key(ctx, "u8")), 200);
    EXPECT_EQ(gguf_get_val_i8(ctx, gguf_find_key(ctx, "i8")), -100);
    EXPECT_EQ(gguf_get_val_u16(ctx, gguf_find_key(ctx, "u16")), 60000);
    EXPECT_EQ(gguf_get_val_i16(ctx, gguf_find_key(ctx, "i16")), -30000);
    EXPECT_EQ(gguf_get_val_u32(ctx, gguf_find_key(ctx, "u32")), 4000000000u);
    EXPECT_EQ(gguf_get_val_i32(ctx, gguf_find_key(ctx, "i32")), -2000000000);
    EXPECT_EQ(gguf_get_val_f32(ctx, gguf_find_key(ctx, "f32")), 1.5f);
    EXPECT_EQ(gguf_get_val_u64(ctx, gguf_find_key(ctx, "u64")), UINT64_MAX);
    EXPECT_EQ(gguf_get_val_i64(ctx, gguf_find_key(ctx, "i64")), INT64_MIN);
    EXPECT_EQ(gguf_get_val_f64(ctx, gguf_find_key(ctx, "f64")), -0.25);
    EXPECT_TRUE(gguf_get_val_bool(ctx, gguf_find_key(ctx, "bool")));
    EXPECT_STREQ(gguf_get_val_str(ctx, gguf_find_key(ctx, "str")), "hello");
    uint16_t u16 = 0;
    std::memcpy(&u16, gguf_get_val_data(ctx, gguf_find_key(ctx, "u16")), sizeof u16);
    EXPECT_EQ(u16, 60000);
    const int64_t ints = gguf_find_key(ctx, "arr.i32");
    EXPECT_EQ(gguf_get_kv_type(ctx, ints), GGUF_TYPE_ARRAY);
    EXPECT_EQ(gguf_get_arr_type(ctx, ints), GGUF_TYPE_INT32);
    ASSERT_EQ(gguf_get_arr_n(ctx, ints), 3u);
    EXPECT_EQ(static_cast<const int32_t *>(gguf_get_arr_data(ctx, ints))[1], -2);
    const int64_t strs = gguf_find_key(ctx, "arr.str");
    EXPECT_EQ(gguf_get_arr_type(ctx, strs), GGUF_TYPE_STRING);
    ASSERT_EQ(gguf_get_arr_n(ctx, strs), 3u);
    EXPECT_STREQ(gguf_get_arr_str(ctx, strs, 0), "a");
    EXPECT_STREQ(gguf_get_arr_str(ctx, strs, 1), "");
    EXPECT_STREQ(gguf_get_arr_str(ctx, strs, 2), "ccc");
    for (int64_t k = 0; k < gguf_get_n_kv(ctx); ++k)
        EXPECT_EQ(gguf_find_key(ctx, gguf_get_key(ctx, k)), k);
    EXPECT_EQ(gguf_find_key(ctx, "absent"), -1);
    EXPECT_EQ(gguf_get_n_tensors(ctx), 8);
    EXPECT_EQ(gguf_find_tensor(ctx, "absent"), -1);
}

// The tensor infos of ctx describe tensors.list, laid out one after another, aligned.
void expect_tensor_infos(const gguf_context * ctx, const Tensors & tensors) {
    ASSERT_EQ(gguf_get_n_tensors(ctx), int64_t(tensors.list.size()));
    size_t offset = 0;
    for (size_t k = 0; k < tensors.list.size(); ++k) {
        const ggml_tensor * t = tensors.list[k];
        const int64_t id = gguf_find_tensor(ctx, t->name);
        EXPECT_EQ(id, int64_t(k));
        EXPECT_STREQ(gguf_get_tensor_name(ctx, id), t->name);
        EXPECT_EQ(gguf_get_tensor_type(ctx, id), t->type);
        EXPECT_EQ(gguf_get_tensor_size(ctx, id), ggml_nbytes(t));
        for (int d = 0; d < GGML_MAX_DIMS; ++d)
            EXPECT_EQ(gguf_get_tensor_ne(ctx, id)[d], t->ne[d]);
        EXPECT_EQ(gguf_get_tensor_offset(ctx, id), offset) << t->name;
        offset = GGML_PAD(offset + ggml_nbytes(t), GGUF_DEFAULT_ALIGNMENT);
    }
}

// The tensors of a ggml_context made by gguf_init_*: names, types, shapes and (with data) the bytes.
void expect_tensors(ggml_context * made, const Tensors & tensors, bool with_data) {
    ASSERT_NE(made, nullptr);
    size_t k = 0;
    for (ggml_tensor * t = ggml_get_first_tensor(made); t; t = ggml_get_next_tensor(made, t), ++k) {
        ASSERT_LT(k, tensors.list.size());
        const ggml_tensor * want = tensors.list[k];
        EXPECT_STREQ(t->name, want->name);
        EXPECT_EQ(t->type, want->type);
        for (int d = 0; d < GGML_MAX_DIMS; ++d)
            EXPECT_EQ(t->ne[d], want->ne[d]);
        if (with_data) {
            ASSERT_NE(t->data, nullptr);
            EXPECT_EQ(std::memcmp(t->data, want->data, ggml_nbytes(want)), 0) << want->name;
        } else {
            EXPECT_EQ(t->data, nullptr);
        }
    }
    EXPECT_EQ(k, tensors.list.size());
    EXPECT_NE(ggml_get_tensor(made, "w.q8_0"), nullptr);
}

std::vector<uint8_t> read_all(const std::string & path) {
    std::vector<uint8_t> bytes(std::filesystem::file_size(path));
    std::FILE * f = std::fopen(path.c_str(), "rb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(std::fread(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
    return bytes;
}

TEST(GgufApi, TypeNames) {
    const char * names[] = {"u8",   "i8",  "u16", "i16", "u32", "i32", "f32",
                            "bool", "str", "arr", "u64", "i64", "f64"};
    for (int t = 0; t < GGUF_TYPE_COUNT; ++t)
        EXPECT_STREQ(gguf_type_name(gguf_type(t)), names[t]);
    EXPECT_EQ(gguf_type_name(GGUF_TYPE_COUNT), nullptr);
}

TEST(GgufApi, EmptyContext) {
    Gguf ctx(gguf_init_empty());
    EXPECT_EQ(gguf_get_version(ctx.get()), uint32_t(GGUF_VERSION));
    EXPECT_EQ(gguf_get_alignment(ctx.get()), size_t(GGUF_DEFAULT_ALIGNMENT));
    EXPECT_EQ(gguf_get_data_offset(ctx.get()), 0u);
    EXPECT_EQ(gguf_get_n_kv(ctx.get()), 0);
    EXPECT_EQ(gguf_get_n_tensors(ctx.get()), 0);
    EXPECT_EQ(gguf_get_meta_size(ctx.get()), 24u);  // the header only
    gguf_free(nullptr);
}

// Written to a file and read back through gguf_init_from_file, with and without data.
TEST(GgufApi, WriteAndReadEveryValueAndTensor) {
    const Tensors tensors;
    Gguf out = full_context(tensors);
    expect_full_metadata(out.get());
    expect_tensor_infos(out.get(), tensors);
    const std::string path = temp_file("full.gguf");
    ASSERT_TRUE(gguf_write_to_file(out.get(), path.c_str(), false)) << last_error();
    for (bool no_alloc : {true, false}) {
        ggml_context * made = nullptr;
        Gguf in(gguf_init_from_file(path.c_str(), {no_alloc, &made}));
        ASSERT_NE(in, nullptr) << last_error();
        Context owned(made);
        expect_full_metadata(in.get());
        expect_tensor_infos(in.get(), tensors);
        EXPECT_EQ(gguf_get_data_offset(in.get()), gguf_get_meta_size(out.get()));
        expect_tensors(made, tensors, !no_alloc);
        // The data of a tensor in the file, where gguf_get_data_offset + gguf_get_tensor_offset say.
        const std::vector<uint8_t> bytes = read_all(path);
        const int64_t id = gguf_find_tensor(in.get(), "w.i16");
        EXPECT_EQ(
            std::memcmp(bytes.data() + gguf_get_data_offset(in.get()) + gguf_get_tensor_offset(in.get(), id),
                        tensors.list[4]->data, ggml_nbytes(tensors.list[4])),
            0);
    }
    Gguf bare(gguf_init_from_file(path.c_str(), {true, nullptr}));
    ASSERT_NE(bare, nullptr);
    expect_full_metadata(bare.get());
    std::filesystem::remove(path);
}

// The other entry points read the same bytes to the same context.
TEST(GgufApi, BufferFilePtrAndCallbackAgree) {
    const Tensors tensors;
    Gguf out = full_context(tensors);
    const std::string path = temp_file("entry.gguf");
    std::FILE * w = std::fopen(path.c_str(), "wb");
    ASSERT_NE(w, nullptr);
    ASSERT_TRUE(gguf_write_to_file_ptr(out.get(), w, false));
    std::fclose(w);
    const std::vector<uint8_t> bytes = read_all(path);

    ggml_context * made = nullptr;
    Gguf from_buffer(gguf_init_from_buffer(bytes.data(), bytes.size(), {false, &made}));
    ASSERT_NE(from_buffer, nullptr) << last_error();
    Context owned_buffer(made);
    expect_full_metadata(from_buffer.get());
    expect_tensors(made, tensors, true);

    std::FILE * r = std::fopen(path.c_str(), "rb");
    Gguf from_file_ptr(gguf_init_from_file_ptr(r, {false, &made}));
    std::fclose(r);
    ASSERT_NE(from_file_ptr, nullptr) << last_error();
    Context owned_file_ptr(made);
    expect_tensors(made, tensors, true);

    struct Source {
        const std::vector<uint8_t> * bytes;
        size_t largest_read = 0;
    } source{&bytes};
    const gguf_reader_callback_t read = [](void * user, void * dst, uint64_t offset, size_t size) -> size_t {
        auto * s = static_cast<Source *>(user);
        s->largest_read = std::max(s->largest_read, size);
        if (offset > s->bytes->size()) return 0;
        const size_t n = std::min<size_t>(size, s->bytes->size() - offset);
        std::memcpy(dst, s->bytes->data() + offset, n);
        return n;
    };
    for (uint64_t expected : {uint64_t(bytes.size()), uint64_t(0)}) {
        source.largest_read = 0;
        Gguf from_callback(gguf_init_from_callback(read, &source, 100, expected, {false, &made}));
        ASSERT_NE(from_callback, nullptr) << last_error();
        Context owned_callback(made);
        EXPECT_EQ(source.largest_read, 100u);
        expect_full_metadata(from_callback.get());
        expect_tensors(made, tensors, true);
    }
    std::filesystem::remove(path);
}

// only_meta, gguf_get_meta_size and gguf_get_meta_data give the bytes before the data section, and a
// file completed by appending the data reads back whole.
TEST(GgufApi, MetadataOnlyThenData) {
    const Tensors tensors;
    Gguf out = full_context(tensors);
    const size_t meta_size = gguf_get_meta_size(out.get());
    std::vector<uint8_t> meta(meta_size);
    gguf_get_meta_data(out.get(), meta.data());
    const std::string full = temp_file("whole.gguf"), meta_path = temp_file("meta.gguf");
    ASSERT_TRUE(gguf_write_to_file(out.get(), full.c_str(), false));
    ASSERT_TRUE(gguf_write_to_file(out.get(), meta_path.c_str(), true));
    const std::vector<uint8_t> whole = read_all(full);
    EXPECT_EQ(read_all(meta_path), meta);
    ASSERT_GE(whole.size(), meta_size);
    EXPECT_TRUE(std::equal(meta.begin(), meta.end(), whole.begin()));
    std::FILE * f = std::fopen(meta_path.c_str(), "ab");
    std::fwrite(whole.data() + meta_size, 1, whole.size() - meta_size, f);
    std::fclose(f);
    EXPECT_EQ(read_all(meta_path), whole);
    std::filesystem::remove(full);
    std::filesystem::remove(meta_path);
}

TEST(GgufApi, SetReplacesAndRemoveReports) {
    Gguf ctx(gguf_init_empty());
    gguf_set_val_u32(ctx.get(), "a", 1);
    gguf_set_val_str(ctx.get(), "b", "x");
    gguf_set_val_f32(ctx.get(), "a", 2.0f);  // replaced, and now last
    ASSERT_EQ(gguf_get_n_kv(ctx.get()), 2);
    EXPECT_EQ(gguf_find_key(ctx.get(), "a"), 1);
    EXPECT_EQ(gguf_get_kv_type(ctx.get(), 1), GGUF_TYPE_FLOAT32);
    EXPECT_EQ(gguf_remove_key(ctx.get(), "b"), 0);
    EXPECT_EQ(gguf_remove_key(ctx.get(), "b"), -1);
    EXPECT_EQ(gguf_find_key(ctx.get(), "a"), 0);

    Gguf src(gguf_init_empty());
    gguf_set_val_i64(src.get(), "a", -5);
    gguf_set_val_bool(src.get(), "c", false);
    gguf_set_kv(ctx.get(), src.get());
    ASSERT_EQ(gguf_get_n_kv(ctx.get()), 2);
    EXPECT_EQ(gguf_get_val_i64(ctx.get(), gguf_find_key(ctx.get(), "a")), -5);
    EXPECT_FALSE(gguf_get_val_bool(ctx.get(), gguf_find_key(ctx.get(), "c")));
    gguf_set_kv(ctx.get(), ctx.get());
    EXPECT_EQ(gguf_get_n_kv(ctx.get()), 2);
}

// general.alignment sets the alignment the offsets follow; removing it restores the default.
TEST(GgufApi, AlignmentKey) {
    const Tensors tensors;
    Gguf ctx(gguf_init_empty());
    gguf_add_tensor(ctx.get(), tensors.list[0]);  // 60 bytes
    gguf_add_tensor(ctx.get(), tensors.list[1]);
    EXPECT_EQ(gguf_get_tensor_offset(ctx.get(), 1), 64u);
    gguf_set_val_u32(ctx.get(), GGUF_KEY_GENERAL_ALIGNMENT, 128);
    EXPECT_EQ(gguf_get_alignment(ctx.get()), 128u);
    EXPECT_EQ(gguf_get_tensor_offset(ctx.get(), 1), 128u);
    const std::string path = temp_file("aligned.gguf");
    ASSERT_TRUE(gguf_write_to_file(ctx.get(), path.c_str(), false)) << last_error();
    Gguf in(gguf_init_from_file(path.c_str(), {true, nullptr}));
    ASSERT_NE(in, nullptr);
    EXPECT_EQ(gguf_get_alignment(in.get()), 128u);
    EXPECT_EQ(gguf_get_data_offset(in.get()) % 128, 0u);
    EXPECT_EQ(gguf_get_tensor_offset(in.get(), 1), 128u);
    gguf_remove_key(ctx.get(), GGUF_KEY_GENERAL_ALIGNMENT);
    EXPECT_EQ(gguf_get_alignment(ctx.get()), 32u);
    EXPECT_EQ(gguf_get_tensor_offset(ctx.get(), 1), 64u);
    std::filesystem::remove(path);
}

// gguf_set_tensor_type lays the later tensors out again; gguf_set_tensor_data gives the bytes written.
TEST(GgufApi, SetTensorTypeAndData) {
    const Tensors tensors;
    Gguf ctx(gguf_init_empty());
    gguf_add_tensor(ctx.get(), tensors.list[6]);  // q8_0 [64, 2]: 136 bytes
    gguf_add_tensor(ctx.get(), tensors.list[1]);
    EXPECT_EQ(gguf_get_tensor_offset(ctx.get(), 1), 160u);
    gguf_set_tensor_type(ctx.get(), "w.q8_0", GGML_TYPE_F32);
    EXPECT_EQ(gguf_get_tensor_type(ctx.get(), 0), GGML_TYPE_F32);
    EXPECT_EQ(gguf_get_tensor_size(ctx.get(), 0), 512u);
    EXPECT_EQ(gguf_get_tensor_offset(ctx.get(), 1), 512u);
    std::vector<float> values(128, 0.5f);
    gguf_set_tensor_data(ctx.get(), "w.q8_0", values.data());
    const std::string path = temp_file("retyped.gguf");
    ASSERT_TRUE(gguf_write_to_file(ctx.get(), path.c_str(), false));
    ggml_context * made = nullptr;
    Gguf in(gguf_init_from_file(path.c_str(), {false, &made}));
    ASSERT_NE(in, nullptr) << last_error();
    Context owned(made);
    const ggml_tensor * t = ggml_get_tensor(made, "w.q8_0");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->type, GGML_TYPE_F32);
    EXPECT_EQ(static_cast<const float *>(t->data)[127], 0.5f);
    std::filesystem::remove(path);
}

// A file that ggx's reader rejects, and one gguf.h cannot hold, give NULL and the reason, and leave
// *ctx NULL.
TEST(GgufApi, MalformedFilesReturnNull) {
    struct Case {
        std::vector<uint8_t> bytes;
        const char * needle;
    };
    std::vector<uint8_t> nested = {'G', 'G', 'U', 'F', 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,   1,
                                   0,   0,   0,   0,   0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 'k', 9,
                                   0,   0,   0,   9,   0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    std::vector<uint8_t> long_name = {'G', 'G', 'U', 'F', 3, 0, 0, 0, 1,  0, 0, 0, 0, 0, 0, 0,
                                      0,   0,   0,   0,   0, 0, 0, 0, 70, 0, 0, 0, 0, 0, 0, 0};
    long_name.resize(long_name.size() + 70, 'n');
    const uint8_t info[] = {1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    long_name.insert(long_name.end(), info, info + sizeof info);  // n_dims 1, ne 1, F32, offset 0
    while (long_name.size() % 32)
        long_name.push_back(0);
    long_name.resize(long_name.size() + 4, 0);
    const std::vector<uint8_t> nul_key = {'G', 'G', 'U', 'F', 3,   0, 0,   0, 0, 0, 0, 0, 0, 0,
                                          0,   0,   1,   0,   0,   0, 0,   0, 0, 0, 3, 0, 0, 0,
                                          0,   0,   0,   0,   'a', 0, 'b', 0, 0, 0, 0, 7};  // u8 7
    const Case cases[] = {
        {{'G', 'G', 'U'}, "truncated: magic"},
        {{'G', 'G', 'U', 'X', 3, 0, 0, 0}, "bad magic"},
        {{'G', 'G', 'U', 'F', 9, 0, 0, 0}, "unsupported version 9"},
        {nested, "arrays of arrays are not supported by gguf.h"},
        {long_name, "the name has 70 bytes, a ggml tensor name at most 63"},
        {nul_key, "kv 0: the key contains a NUL byte"},
    };
    for (const Case & c : cases) {
        ggml_context * made = reinterpret_cast<ggml_context *>(1);
        EXPECT_EQ(gguf_init_from_buffer(c.bytes.data(), c.bytes.size(), {false, &made}), nullptr) << c.needle;
        EXPECT_EQ(made, nullptr);
        EXPECT_NE(last_error().find(c.needle), std::string::npos) << last_error();
        EXPECT_EQ(last_error().rfind("gguf_init_from_buffer: ", 0), 0u) << last_error();
    }
    EXPECT_EQ(gguf_init_from_file(temp_file("missing.gguf").c_str(), {true, nullptr}), nullptr);
    EXPECT_NE(last_error().find("cannot open"), std::string::npos) << last_error();
    const gguf_reader_callback_t too_much = [](void *, void *, uint64_t, size_t size) -> size_t {
        return size + 1;
    };
    EXPECT_EQ(gguf_init_from_callback(too_much, nullptr, 0, 0, {true, nullptr}), nullptr);
    EXPECT_NE(last_error().find("the callback returned"), std::string::npos) << last_error();
    EXPECT_EQ(gguf_init_from_callback(nullptr, nullptr, 0, 0, {true, nullptr}), nullptr);
    EXPECT_EQ(gguf_init_from_file_ptr(nullptr, {true, nullptr}), nullptr);
}

// A tensor with a zero past ne[0] lists that dimension (ggml_n_dims would drop it, and the writer
// then found 0 bytes for a shape of 16).
TEST(GgufApi, ZeroDimensionPastTheFirstIsWritten) {
    Context tensors(ggml_init({ggml_tensor_overhead(), nullptr, /*no_alloc=*/true}));
    ggml_tensor * empty = ggml_new_tensor_3d(tensors.get(), GGML_TYPE_F32, 4, 0, 1);
    ggml_set_name(empty, "empty");
    Gguf out(gguf_init_empty());
    gguf_add_tensor(out.get(), empty);
    const std::string path = temp_file("zero_dimension.gguf");
    ASSERT_TRUE(gguf_write_to_file(out.get(), path.c_str(), false)) << last_error();
    Gguf in(gguf_init_from_file(path.c_str(), {true, nullptr}));
    ASSERT_NE(in, nullptr) << last_error();
    const int64_t * ne = gguf_get_tensor_ne(in.get(), 0);
    EXPECT_EQ(std::vector<int64_t>(ne, ne + GGML_MAX_DIMS), (std::vector<int64_t>{4, 0, 1, 1}));
    EXPECT_EQ(gguf_get_tensor_size(in.get(), 0), 0u);
    std::filesystem::remove(path);
}

// A file of many tensors whose sizes are not multiples of the arena's alignment (64) is read with its
// data: the ggml_context is sized for each tensor's padded block (it was sized for 16-byte padding,
// and gguf_init_* aborted with "context arena full").
TEST(GgufApi, ManySmallTensorsFitTheirContext) {
    Context tensors(ggml_init({40 * ggml_tensor_overhead(), nullptr, /*no_alloc=*/true}));
    Gguf out(gguf_init_empty());
    const float value = 1.5f;
    for (int k = 0; k < 40; ++k) {
        ggml_tensor * t = ggml_new_tensor_1d(tensors.get(), GGML_TYPE_F32, 1);
        ggml_format_name(t, "t%d", k);
        t->data = const_cast<float *>(&value);
        gguf_add_tensor(out.get(), t);
    }
    const std::string path = temp_file("many_small.gguf");
    ASSERT_TRUE(gguf_write_to_file(out.get(), path.c_str(), false)) << last_error();
    ggml_context * read = nullptr;
    Gguf in(gguf_init_from_file(path.c_str(), {/*no_alloc=*/false, &read}));
    ASSERT_NE(in, nullptr) << last_error();
    Context owned(read);
    EXPECT_EQ(*static_cast<const float *>(ggml_get_tensor(read, "t39")->data), value);
    std::filesystem::remove(path);
}

TEST(GgufApi, WriteFailuresReturnFalse) {
    const Tensors tensors;
    Gguf ctx(gguf_init_empty());
    gguf_add_tensor(ctx.get(), tensors.list[0]);
    gguf_set_tensor_data(ctx.get(), "w.f32", nullptr);
    EXPECT_FALSE(gguf_write_to_file(ctx.get(), temp_file("nodata.gguf").c_str(), false));
    EXPECT_NE(last_error().find("tensor 'w.f32' has no data"), std::string::npos) << last_error();
    EXPECT_FALSE(std::filesystem::exists(temp_file("nodata.gguf")));
    EXPECT_TRUE(
        gguf_write_to_file(ctx.get(), temp_file("nodata.gguf").c_str(), true));  // metadata needs none
    std::filesystem::remove(temp_file("nodata.gguf"));
    EXPECT_FALSE(gguf_write_to_file(ctx.get(), "/nonexistent-dir/x.gguf", true));
    EXPECT_NE(last_error().find("cannot create"), std::string::npos) << last_error();
}

// In the returning mode a misuse returns a neutral value and says why.
TEST(GgufApi, MisuseReportsInTheReturningMode) {
    const Tensors tensors;
    Gguf ctx = full_context(tensors);
    gguf_context * c = ctx.get();
    const int64_t u8 = gguf_find_key(c, "u8"), str = gguf_find_key(c, "str"),
                  arr = gguf_find_key(c, "arr.i32"), strs = gguf_find_key(c, "arr.str");
    struct Case {
        bool (*call)(gguf_context *, int64_t, int64_t, int64_t, int64_t);
        const char * needle;
    };
    const Case cases[] = {
        {[](gguf_context * x, int64_t k, auto, auto, auto) { return gguf_get_val_i8(x, k) == 0; },
         "gguf_get_val_i8: key 'u8' has type u8, not i8"},
        {[](gguf_context * x, auto, auto, auto, auto) { return gguf_get_val_u8(x, 99) == 0; },
         "gguf_get_val_u8: key_id 99 is out of range (14 pairs)"},
        {[](gguf_context * x, auto, auto, auto, auto) { return gguf_get_key(x, -1) == nullptr; },
         "key_id -1"},
        {[](gguf_context * x, auto, auto, auto, auto) { return gguf_get_kv_type(x, 14) == GGUF_TYPE_COUNT; },
         "gguf_get_kv_type: key_id 14"},
        {[](gguf_context * x, auto, int64_t s, auto, auto) { return gguf_get_val_data(x, s) == nullptr; },
         "gguf_get_val_data: key 'str' has type str, not a fixed-size value"},
        {[](gguf_context * x, auto, auto, int64_t a, auto) { return gguf_get_val_str(x, a) == nullptr; },
         "key 'arr.i32' has type arr of i32, not str"},
        {[](gguf_context * x, int64_t k, auto, auto, auto) { return gguf_get_arr_n(x, k) == 0; },
         "gguf_get_arr_n: key 'u8' has type u8, not an array"},
        {[](gguf_context * x, int64_t k, auto, auto, auto) {
             return gguf_get_arr_type(x, k) == GGUF_TYPE_COUNT;
         },
         "gguf_get_arr_type: key 'u8'"},
        {[](gguf_context * x, auto, auto, auto, int64_t s) { return gguf_get_arr_data(x, s) == nullptr; },
         "has type arr of str, not an array of fixed-size values"},
        {[](gguf_context * x, auto, auto, int64_t a, auto) { return gguf_get_arr_str(x, a, 0) == nullptr; },
         "not an array of strings"},
        {[](gguf_context * x, auto, auto, auto, int64_t s) { return gguf_get_arr_str(x, s, 3) == nullptr; },
         "gguf_get_arr_str: index 3 is out of range (key 'arr.str' has 3 strings)"},
        {[](gguf_context * x, auto, auto, auto, auto) { return gguf_get_tensor_name(x, 8) == nullptr; },
         "gguf_get_tensor_name: tensor_id 8 is out of range (8 tensors)"},
        {[](gguf_context * x, auto, auto, auto, auto) { return gguf_get_tensor_offset(x, -1) == 0; },
         "tensor_id -1"},
        {[](gguf_context * x, auto, auto, auto, auto) {
             return gguf_get_tensor_type(x, 9) == GGML_TYPE_COUNT;
         },
         "gguf_get_tensor_type: tensor_id 9"},
        {[](gguf_context * x, auto, auto, auto, auto) { return gguf_get_tensor_ne(x, 8) == nullptr; },
         "gguf_get_tensor_ne: tensor_id 8"},
        {[](gguf_context * x, auto, auto, auto, auto) { return gguf_get_tensor_size(x, 9) == 0; },
         "gguf_get_tensor_size: tensor_id 9"},
        {[](gguf_context * x, auto, auto, auto, auto) { return gguf_find_key(x, nullptr) == -1; },
         "gguf_find_key: key is NULL"},
        {[](gguf_context * x, auto, auto, auto, auto) { return gguf_find_tensor(x, nullptr) == -1; },
         "gguf_find_tensor: name is NULL"},
        {[](gguf_context *, auto, auto, auto, auto) { return gguf_get_n_kv(nullptr) == 0; },
         "gguf_get_n_kv: ctx is NULL"},
    };
    for (const Case & k : cases) {
        EXPECT_TRUE(k.call(c, u8, str, arr, strs)) << k.needle;
        EXPECT_NE(last_error().find(k.needle), std::string::npos)
            << last_error() << "\nexpected: " << k.needle;
    }
    struct Change {
        void (*call)(gguf_context *, const ggml_tensor *);
        const char * needle;
    };
    const Change changes[] = {
        {[](gguf_context * x, const ggml_tensor * t) { gguf_add_tensor(x, t); },
         "gguf_add_tensor: duplicate tensor name 'w.f32'"},
        {[](gguf_context * x, const ggml_tensor *) { gguf_set_val_u32(x, GGUF_KEY_GENERAL_ALIGNMENT, 48); },
         "general.alignment must be an integer power of two"},
        {[](gguf_context * x, const ggml_tensor *) {
             gguf_set_val_f32(x, GGUF_KEY_GENERAL_ALIGNMENT, 32.0f);
         },
         "general.alignment must be an integer power of two, not f32"},
        {[](gguf_context * x, const ggml_tensor *) { gguf_set_val_u32(x, "", 1); },
         "the key is NULL or empty"},
        {[](gguf_context * x, const ggml_tensor *) { gguf_set_val_str(x, "s", nullptr); },
         "gguf_set_val_str: val is NULL"},
        {[](gguf_context * x, const ggml_tensor *) { gguf_set_arr_data(x, "a", GGUF_TYPE_STRING, "", 1); },
         "element type 8 is not a fixed-size type"},
        {[](gguf_context * x, const ggml_tensor *) {
             const char * s[] = {"a", nullptr};
             gguf_set_arr_str(x, "a", s, 2);
         },
         "gguf_set_arr_str: data[1] is NULL"},
        {[](gguf_context * x, const ggml_tensor *) { gguf_set_tensor_type(x, "w.f16", GGML_TYPE_Q8_0); },
         "gguf_set_tensor_type: tensor 'w.f16': ne[0] = 7 is not a multiple of the block size 32 of q8_0"},
        {[](gguf_context * x, const ggml_tensor *) { gguf_set_tensor_type(x, "w.f16", static_cast<ggml_type>(4)); },
         "type 4 is not a ggml type"},
        {[](gguf_context * x, const ggml_tensor *) { gguf_set_tensor_data(x, "nope", nullptr); },
         "gguf_set_tensor_data: no tensor 'nope'"},
        {[](gguf_context * x, const ggml_tensor *) { gguf_set_kv(x, nullptr); }, "gguf_set_kv: src is NULL"},
        {[](gguf_context *, const ggml_tensor *) { gguf_get_meta_data(nullptr, nullptr); },
         "gguf_get_meta_data: data is NULL"},
    };
    const int64_t n_kv = gguf_get_n_kv(c), n_tensors = gguf_get_n_tensors(c);
    for (const Change & k : changes) {
        k.call(c, tensors.list[0]);
        EXPECT_NE(last_error().find(k.needle), std::string::npos)
            << last_error() << "\nexpected: " << k.needle;
        EXPECT_EQ(gguf_get_n_kv(c), n_kv) << k.needle;
        EXPECT_EQ(gguf_get_n_tensors(c), n_tensors) << k.needle;
    }
    expect_full_metadata(c);
    expect_tensor_infos(c, tensors);
}

// In the default mode a misuse aborts with the message, as ggml's asserts do; a malformed file does not.
TEST(GgufApiDeathTest, MisuseAbortsByDefault) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    ggx::test::ScopedErrorMode abort_mode(GGML_EXT_ERROR_ABORT);
    Gguf ctx(gguf_init_empty());
    gguf_set_val_u8(ctx.get(), "u8", 1);
    EXPECT_DEATH(gguf_get_val_f32(ctx.get(), 0), "gguf_get_val_f32: key 'u8' has type u8, not f32");
    EXPECT_DEATH(gguf_get_key(ctx.get(), 5), "key_id 5 is out of range");
    const uint8_t junk[] = {'G', 'G', 'U', 'F', 7, 0, 0, 0};
    EXPECT_EQ(gguf_init_from_buffer(junk, sizeof junk, {true, nullptr}), nullptr);
}

}  // namespace
