/* GGUF model files (ggml's gguf.h): read a file's metadata and tensor infos, build a ggml_context of
 * its tensors, edit metadata and tensors, and write files. See docs/gguf.md.
 *
 * A file is: magic "GGUF", u32 version, i64 tensor count, i64 key/value count, the key/value pairs
 * (string key, u32 gguf_type, value), the tensor infos (string name, u32 n_dims, i64 ne per
 * dimension, u32 ggml_type, u64 offset into the data section), then the data section, aligned to
 * general.alignment (default GGUF_DEFAULT_ALIGNMENT). Strings are a u64 length and the bytes, without
 * a terminator; all numbers are little-endian.
 *
 * Errors: a malformed or unreadable file makes gguf_init_* return NULL, with the reason logged
 * (ggml_log_set's callback) and in ggml_backend_get_last_error, in every error mode. A misused
 * accessor (a key or tensor id out of range, a getter of the wrong type, a setter given a bad
 * argument) is a misuse (docs/errors.md): it aborts by default, as ggml's asserts do; in the returning
 * mode it returns 0 / NULL / -1 / false (or changes nothing) with the message in
 * ggml_backend_get_last_error. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ggml.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_VERSION 3

#define GGUF_KEY_GENERAL_ALIGNMENT "general.alignment"

#define GGUF_DEFAULT_ALIGNMENT 32

#ifdef __cplusplus
extern "C" {
#endif

/* The types of metadata values, numbered as in the file. */
enum gguf_type {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
    GGUF_TYPE_COUNT, /* the number of types */
};

struct gguf_context;

struct gguf_init_params {
    /* true: tensors in *ctx get no data (data == NULL); false: *ctx holds every tensor's data. */
    bool no_alloc;
    /* If not NULL, receives a new ggml_context with one tensor per tensor info, in file order. */
    struct ggml_context ** ctx;
};

/* Reads size bytes at offset of the source into dst; returns the bytes read (fewer: end or error). */
typedef size_t (*gguf_reader_callback_t)(void * userdata, void * dst, uint64_t offset, size_t size);

/* An empty context (version 3, default alignment) to fill and write. */
GGML_API struct gguf_context * gguf_init_empty(void);
/* Reads a file from file's current position to its end; NULL for a malformed or unreadable file. */
GGML_API struct gguf_context * gguf_init_from_file_ptr(FILE * file, struct gguf_init_params params);
/* Reads the file fname (mapped, not copied, while it is read); NULL for a malformed or missing file. */
GGML_API struct gguf_context * gguf_init_from_file(const char * fname, struct gguf_init_params params);
/* Reads a file held in memory (size bytes at data, only read during the call); NULL if malformed. */
GGML_API struct gguf_context * gguf_init_from_buffer(const void * data, size_t size,
                                                     struct gguf_init_params params);
/* Reads a file through callback, in reads of at most max_chunk_read bytes (0: no limit), up to
 * max_expected_size bytes (0: until a read returns fewer bytes than asked); NULL if malformed. */
GGML_API struct gguf_context * gguf_init_from_callback(gguf_reader_callback_t callback, void * userdata,
                                                       size_t max_chunk_read, uint64_t max_expected_size,
                                                       struct gguf_init_params params);

/* Frees ctx (not the ggml_context made by gguf_init_*, which the caller frees); NULL is a no-op. */
GGML_API void gguf_free(struct gguf_context * ctx);

/* "u8", "i8", ..., "str", "arr"; NULL for a value outside the enum. */
GGML_API const char * gguf_type_name(enum gguf_type type);

/* The file's version (GGUF_VERSION for a context made by gguf_init_empty). */
GGML_API uint32_t gguf_get_version(const struct gguf_context * ctx);
/* The alignment of the data section and of every tensor's offset. */
GGML_API size_t gguf_get_alignment(const struct gguf_context * ctx);
/* The data section's offset in the file read (0 for a context made by gguf_init_empty). */
GGML_API size_t gguf_get_data_offset(const struct gguf_context * ctx);

/* The number of key/value pairs. */
GGML_API int64_t gguf_get_n_kv(const struct gguf_context * ctx);
/* The id of key, or -1 if absent. */
GGML_API int64_t gguf_find_key(const struct gguf_context * ctx, const char * key);
/* The key of pair key_id (0 <= key_id < gguf_get_n_kv). */
GGML_API const char * gguf_get_key(const struct gguf_context * ctx, int64_t key_id);

/* The type of pair key_id's value. */
GGML_API enum gguf_type gguf_get_kv_type(const struct gguf_context * ctx, int64_t key_id);
/* The element type of pair key_id's array (a misuse if the value is not an array). */
GGML_API enum gguf_type gguf_get_arr_type(const struct gguf_context * ctx, int64_t key_id);

/* Pair key_id's value; a misuse when the value has another type (no conversion is made). */
GGML_API uint8_t gguf_get_val_u8(const struct gguf_context * ctx, int64_t key_id);
GGML_API int8_t gguf_get_val_i8(const struct gguf_context * ctx, int64_t key_id);
GGML_API uint16_t gguf_get_val_u16(const struct gguf_context * ctx, int64_t key_id);
GGML_API int16_t gguf_get_val_i16(const struct gguf_context * ctx, int64_t key_id);
GGML_API uint32_t gguf_get_val_u32(const struct gguf_context * ctx, int64_t key_id);
GGML_API int32_t gguf_get_val_i32(const struct gguf_context * ctx, int64_t key_id);
GGML_API float gguf_get_val_f32(const struct gguf_context * ctx, int64_t key_id);
GGML_API uint64_t gguf_get_val_u64(const struct gguf_context * ctx, int64_t key_id);
GGML_API int64_t gguf_get_val_i64(const struct gguf_context * ctx, int64_t key_id);
GGML_API double gguf_get_val_f64(const struct gguf_context * ctx, int64_t key_id);
GGML_API bool gguf_get_val_bool(const struct gguf_context * ctx, int64_t key_id);
/* A NUL-terminated copy owned by ctx (valid until the pair changes or ctx is freed). */
GGML_API const char * gguf_get_val_str(const struct gguf_context * ctx, int64_t key_id);
/* The bytes of a value that is neither a string nor an array. */
GGML_API const void * gguf_get_val_data(const struct gguf_context * ctx, int64_t key_id);
/* The element count of pair key_id's array. */
GGML_API size_t gguf_get_arr_n(const struct gguf_context * ctx, int64_t key_id);

/* The packed elements of an array that is not of strings (bools are one byte, 0 or 1). */
GGML_API const void * gguf_get_arr_data(const struct gguf_context * ctx, int64_t key_id);

/* Element i of an array of strings, NUL-terminated, owned by ctx. */
GGML_API const char * gguf_get_arr_str(const struct gguf_context * ctx, int64_t key_id, size_t i);

/* The number of tensor infos. */
GGML_API int64_t gguf_get_n_tensors(const struct gguf_context * ctx);
/* The id of the tensor named name, or -1 if absent. */
GGML_API int64_t gguf_find_tensor(const struct gguf_context * ctx, const char * name);
/* Tensor tensor_id's offset in the data section. */
GGML_API size_t gguf_get_tensor_offset(const struct gguf_context * ctx, int64_t tensor_id);
/* Tensor tensor_id's name. */
GGML_API const char * gguf_get_tensor_name(const struct gguf_context * ctx, int64_t tensor_id);
/* Tensor tensor_id's type. */
GGML_API enum ggml_type gguf_get_tensor_type(const struct gguf_context * ctx, int64_t tensor_id);
/* Tensor tensor_id's shape: GGML_MAX_DIMS values, 1 past its dimensions (owned by ctx). */
GGML_API const int64_t * gguf_get_tensor_ne(const struct gguf_context * ctx, int64_t tensor_id);
/* Tensor tensor_id's data size in bytes. */
GGML_API size_t gguf_get_tensor_size(const struct gguf_context * ctx, int64_t tensor_id);

/* Removes key; returns the id it had, or -1 if absent (later pairs move down by one). */
GGML_API int64_t gguf_remove_key(struct gguf_context * ctx, const char * key);

/* Sets key to a value: an existing pair of that key is removed, the new pair goes last. */
GGML_API void gguf_set_val_u8(struct gguf_context * ctx, const char * key, uint8_t val);
GGML_API void gguf_set_val_i8(struct gguf_context * ctx, const char * key, int8_t val);
GGML_API void gguf_set_val_u16(struct gguf_context * ctx, const char * key, uint16_t val);
GGML_API void gguf_set_val_i16(struct gguf_context * ctx, const char * key, int16_t val);
GGML_API void gguf_set_val_u32(struct gguf_context * ctx, const char * key, uint32_t val);
GGML_API void gguf_set_val_i32(struct gguf_context * ctx, const char * key, int32_t val);
GGML_API void gguf_set_val_f32(struct gguf_context * ctx, const char * key, float val);
GGML_API void gguf_set_val_u64(struct gguf_context * ctx, const char * key, uint64_t val);
GGML_API void gguf_set_val_i64(struct gguf_context * ctx, const char * key, int64_t val);
GGML_API void gguf_set_val_f64(struct gguf_context * ctx, const char * key, double val);
GGML_API void gguf_set_val_bool(struct gguf_context * ctx, const char * key, bool val);
GGML_API void gguf_set_val_str(struct gguf_context * ctx, const char * key, const char * val);

/* Sets key to an array of n elements of type (neither string nor array), copied from data. */
GGML_API void gguf_set_arr_data(struct gguf_context * ctx, const char * key, enum gguf_type type,
                                const void * data, size_t n);

/* Sets key to an array of the n strings data[0..n), copied. */
GGML_API void gguf_set_arr_str(struct gguf_context * ctx, const char * key, const char ** data, size_t n);

/* Sets every pair of src in ctx, in src's order (as the setters do). */
GGML_API void gguf_set_kv(struct gguf_context * ctx, const struct gguf_context * src);

/* Appends a tensor info for tensor (name, type, shape; its data pointer is kept, not copied), at the
 * next aligned offset; the name must be new. */
GGML_API void gguf_add_tensor(struct gguf_context * ctx, const struct ggml_tensor * tensor);

/* Changes a tensor's type (its shape must fit the type's block size); the offsets of the tensors after
 * it are recomputed, so the data stays one contiguous, aligned sequence. */
GGML_API void gguf_set_tensor_type(struct gguf_context * ctx, const char * name, enum ggml_type type);

/* Points a tensor's data at data (gguf_get_tensor_size bytes, kept by pointer until written). */
GGML_API void gguf_set_tensor_data(struct gguf_context * ctx, const char * name, const void * data);

/* Writes ctx to file at its current position: the metadata and, unless only_meta, the padded data of
 * every tensor (which then needs data). false (message logged and in ggml_backend_get_last_error) on
 * an I/O error or a tensor without data. */
GGML_API bool gguf_write_to_file_ptr(const struct gguf_context * ctx, FILE * file, bool only_meta);
/* The same, into a new file fname (removed again on failure). */
GGML_API bool gguf_write_to_file(const struct gguf_context * ctx, const char * fname, bool only_meta);

/* The size of the metadata (header, pairs, tensor infos and the padding up to the data section). */
GGML_API size_t gguf_get_meta_size(const struct gguf_context * ctx);

/* Writes the metadata (gguf_get_meta_size bytes) to data. */
GGML_API void gguf_get_meta_data(const struct gguf_context * ctx, void * data);

#ifdef __cplusplus
}
#endif
