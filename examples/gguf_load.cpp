// Loading weights from a GGUF file as stable-diffusion.cpp and llama.cpp do: open the file with
// no_alloc, read the metadata, enumerate the tensors, place them in a backend buffer, copy each
// tensor's bytes from the file, then compute with them. The file is written first through gguf.h.
#include <ggml-alloc.h>
#include <ggml-cpu.h>
#include <gguf.h>

#include <cstdio>
#include <vector>

namespace {

// A two-tensor model: y = W x + b, W 2 x 3 (F16), b (F32), and one metadata key.
bool write_model(const char * path) {
    ggml_context * ctx = ggml_init({.mem_size = 1 << 16, .mem_buffer = nullptr, .no_alloc = false});
    ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 3, 2);
    ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2);
    ggml_set_name(w, "linear.weight");
    ggml_set_name(b, "linear.bias");
    const float w_data[] = {1, 2, 3, 4, 5, 6};
    for (int i = 0; i < 6; ++i)
        static_cast<ggml_fp16_t *>(w->data)[i] = ggml_fp32_to_fp16(w_data[i]);
    static_cast<float *>(b->data)[0] = 0.5f;
    static_cast<float *>(b->data)[1] = -0.5f;

    gguf_context * out = gguf_init_empty();
    gguf_set_val_str(out, "general.architecture", "example");
    gguf_set_val_u32(out, "example.inputs", 3);
    gguf_add_tensor(out, w);
    gguf_add_tensor(out, b);
    const bool ok = gguf_write_to_file(out, path, false);
    gguf_free(out);
    ggml_free(ctx);
    return ok;
}

// Copies every tensor of meta from the file into its place in the backend buffer.
bool read_tensor_data(const char * path, const gguf_context * gguf, ggml_context * meta) {
    std::FILE * f = std::fopen(path, "rb");
    if (!f) return false;
    std::vector<unsigned char> bytes;
    bool ok = true;
    for (int64_t i = 0; ok && i < gguf_get_n_tensors(gguf); ++i) {
        ggml_tensor * t = ggml_get_tensor(meta, gguf_get_tensor_name(gguf, i));
        bytes.resize(gguf_get_tensor_size(gguf, i));
        const long at = static_cast<long>(gguf_get_data_offset(gguf) + gguf_get_tensor_offset(gguf, i));
        ok = t && std::fseek(f, at, SEEK_SET) == 0 &&
             std::fread(bytes.data(), 1, bytes.size(), f) == bytes.size();
        if (ok) ggml_backend_tensor_set(t, bytes.data(), 0, bytes.size());
    }
    std::fclose(f);
    return ok;
}

}  // namespace

int main(int argc, char ** argv) {
    const char * path = argc > 1 ? argv[1] : "gguf_load_example.gguf";
    if (!write_model(path)) return 1;

    ggml_context * meta = nullptr;
    gguf_context * gguf = gguf_init_from_file(path, {.no_alloc = true, .ctx = &meta});
    if (!gguf) {
        std::fprintf(stderr, "%s\n", ggml_backend_get_last_error());
        return 1;
    }
    const int64_t arch = gguf_find_key(gguf, "general.architecture");
    std::printf("architecture: %s, %lld tensors\n", arch >= 0 ? gguf_get_val_str(gguf, arch) : "?",
                static_cast<long long>(gguf_get_n_tensors(gguf)));
    for (ggml_tensor * t = ggml_get_first_tensor(meta); t; t = ggml_get_next_tensor(meta, t))
        std::printf("  %s: %s [%lld, %lld]\n", t->name, ggml_type_name(t->type),
                    static_cast<long long>(t->ne[0]), static_cast<long long>(t->ne[1]));

    ggml_backend_t backend = ggml_backend_cpu_init();
    ggml_backend_buffer_t weights = ggml_backend_alloc_ctx_tensors(meta, backend);
    if (!weights || !read_tensor_data(path, gguf, meta)) return 1;

    ggml_context * ctx = ggml_init({.mem_size = 1 << 20, .mem_buffer = nullptr, .no_alloc = true});
    ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
    ggml_tensor * y = ggml_add(ctx, ggml_mul_mat(ctx, ggml_get_tensor(meta, "linear.weight"), x),
                               ggml_get_tensor(meta, "linear.bias"));
    ggml_cgraph * graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, y);
    ggml_backend_buffer_t activations = ggml_backend_alloc_ctx_tensors(ctx, backend);
    const float x_data[] = {1, 0, -1};
    ggml_backend_tensor_set(x, x_data, 0, sizeof x_data);
    if (ggml_backend_graph_compute(backend, graph) != GGML_STATUS_SUCCESS) return 1;
    float result[2];
    ggml_backend_tensor_get(y, result, 0, sizeof result);
    std::printf("result: [%.1f, %.1f]\n", result[0], result[1]);  // [1 - 3 + 0.5, 4 - 6 - 0.5]

    ggml_backend_buffer_free(activations);
    ggml_free(ctx);
    ggml_backend_buffer_free(weights);
    ggml_backend_free(backend);
    ggml_free(meta);
    gguf_free(gguf);
    std::remove(path);
}
