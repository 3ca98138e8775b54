// Guarded placement of a case's tensors.
#include "guarded.h"

#include <ggml-ext.h>

#include <algorithm>

namespace ggx::ops {

namespace {

size_t align_up(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

std::string name_of(const ggml_tensor * t) {
    return t->name[0] ? std::string(t->name) : std::string(t->op == GGML_OP_NONE ? "leaf" : ggml_op_desc(t));
}

}  // namespace

uint8_t GuardedBuffer::pattern(size_t offset) {
    return static_cast<uint8_t>(((offset * 0x9E3779B1u) >> 13) ^ 0xA5);
}

GuardedBuffer::GuardedBuffer(ggml_backend_buffer_type_t buft, ggml_context * ctx) {
    if (!place(ctx, buft)) return;
    for (ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (t->view_src && ggml_backend_view_init(t) != GGML_STATUS_SUCCESS) {
            error_ = ggml_backend_get_last_error();
            return;
        }
    }
}

GuardedBuffer::~GuardedBuffer() {
    ggml_backend_buffer_free(buffer_);
    ggml_free(whole_ctx_);
}

bool GuardedBuffer::place(ggml_context * ctx, ggml_backend_buffer_type_t buft) {
    const size_t alignment = ggml_backend_buft_get_alignment(buft);
    size_t cursor = 0;
    for (ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (t->view_src) continue;
        const size_t offset = align_up(cursor + kGuardBytes, alignment);
        regions_.push_back({t, offset, ggml_backend_buft_get_alloc_size(buft, t)});
        cursor = offset + regions_.back().size;
    }
    const size_t total = align_up(cursor + kGuardBytes, alignment);
    buffer_ = ggml_backend_buft_alloc_buffer(buft, total);
    whole_ctx_ = ggml_init({ggml_tensor_overhead() + 1024, nullptr, true});
    whole_ = buffer_ && whole_ctx_ ? ggml_new_tensor_1d(whole_ctx_, GGML_TYPE_I8, static_cast<int64_t>(total))
                                   : nullptr;
    if (!whole_) {
        error_ = "cannot allocate a guarded buffer of " + std::to_string(total) +
                 " bytes: " + ggml_backend_get_last_error();
        return false;
    }
    auto * base = static_cast<char *>(ggml_backend_buffer_get_base(buffer_));
    if (ggml_backend_tensor_alloc(buffer_, whole_, base) != GGML_STATUS_SUCCESS) {
        error_ = ggml_backend_get_last_error();
        return false;
    }
    for (const Region & r : regions_) {
        if (ggml_backend_tensor_alloc(buffer_, const_cast<ggml_tensor *>(r.owner), base + r.offset) !=
            GGML_STATUS_SUCCESS) {
            error_ = ggml_backend_get_last_error();
            return false;
        }
    }
    image_.assign(total, 0);
    return true;
}

bool GuardedBuffer::upload() {
    return ggml_ext_backend_tensor_set(whole_, image_.data(), 0, image_.size()) == GGML_STATUS_SUCCESS;
}

bool GuardedBuffer::download() {
    return ggml_ext_backend_tensor_get(whole_, image_.data(), 0, image_.size()) == GGML_STATUS_SUCCESS;
}

size_t GuardedBuffer::offset_of(const ggml_tensor * owner) const {
    for (const Region & r : regions_) {
        if (r.owner == owner) return r.offset;
    }
    return 0;
}

ggml_tensor GuardedBuffer::host(const ggml_tensor * t) {
    const ggml_tensor * owner = t->view_src ? t->view_src : t;
    ggml_tensor copy = *t;
    copy.data = image_.data() + offset_of(owner) + (t->view_src ? t->view_offs : 0);
    copy.buffer = nullptr;
    return copy;
}

void GuardedBuffer::prefill() {
    for (size_t i = 0; i < image_.size(); ++i)
        image_[i] = pattern(i);
    for (const Region & r : regions_) {
        std::fill_n(image_.begin() + static_cast<std::ptrdiff_t>(r.offset), r.size,
                    r.owner->op == GGML_OP_NONE ? 0 : 0xFF);
    }
}

std::string GuardedBuffer::check_guards() const {
    const Region * prev = nullptr;
    size_t begin = 0;  // first byte of the current guard gap
    auto check = [&](size_t end, const Region * next) -> std::string {
        for (size_t i = begin; i < end; ++i) {
            if (image_[i] == pattern(i)) continue;
            std::string where =
                prev ? std::to_string(i - begin) + " bytes after the end of '" + name_of(prev->owner) + "'"
                     : "at the start of the buffer";
            if (next)
                where +=
                    ", " + std::to_string(next->offset - i) + " bytes before '" + name_of(next->owner) + "'";
            return "guard byte at offset " + std::to_string(i) + " (" + where + ") was overwritten";
        }
        return "";
    };
    for (const Region & r : regions_) {
        if (std::string bad = check(r.offset, &r); !bad.empty()) return bad;
        prev = &r;
        begin = r.offset + r.size;
    }
    return check(image_.size(), nullptr);
}

}  // namespace ggx::ops
