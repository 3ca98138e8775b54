// Places every tensor of a case into one device buffer with guard bytes around each storage owner,
// keeps a host image of the whole buffer, and finds guard bytes a computation overwrote.
#pragma once

#include <ggml-backend.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ggx::ops {

class GuardedBuffer {
public:
    // At least this many guard bytes precede and follow every storage owner.
    static constexpr size_t kGuardBytes = 64;

    // Allocates a buffer of buft holding every tensor of ctx (owners at aligned offsets between
    // guards, views through ggml_backend_view_init). error() says why when it fails.
    GuardedBuffer(ggml_backend_buffer_type_t buft, ggml_context * ctx);
    ~GuardedBuffer();
    GuardedBuffer(const GuardedBuffer &) = delete;
    GuardedBuffer & operator=(const GuardedBuffer &) = delete;

    const std::string & error() const { return error_; }
    // The host image of the whole buffer; upload() writes it to the device, download() reads it.
    std::vector<uint8_t> & image() { return image_; }
    bool upload();
    bool download();
    // A copy of t's metadata whose data points into the host image (for the oracle's I/O helpers).
    ggml_tensor host(const ggml_tensor * t);
    // Fills guards with their pattern and every computed owner's storage with 0xFF bytes (NaN for
    // float types), so unwritten results show.
    void prefill();
    // "" when every guard byte in the image still holds its pattern, else where the first is not.
    std::string check_guards() const;

private:
    struct Region {
        const ggml_tensor * owner;
        size_t offset, size;
    };
    static uint8_t pattern(size_t offset);
    bool place(ggml_context * ctx, ggml_backend_buffer_type_t buft);
    size_t offset_of(const ggml_tensor * owner) const;

    std::string error_;
    std::vector<Region> regions_;
    std::vector<uint8_t> image_;
    ggml_backend_buffer_t buffer_ = nullptr;
    ggml_context * whole_ctx_ = nullptr;  // holds one I8 tensor spanning the buffer, for transfers
    ggml_tensor * whole_ = nullptr;
};

}  // namespace ggx::ops
