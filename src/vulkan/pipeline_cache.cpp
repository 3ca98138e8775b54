#include "vulkan/pipeline_cache.h"

#include <algorithm>
#include <functional>
#include <string_view>

namespace ggx::vulkan {

uint64_t PipelineCache::hash_words(std::span<const uint32_t> words) {
    return std::hash<std::string_view>{}(
        std::string_view(reinterpret_cast<const char *>(words.data()), words.size_bytes()));
}

PipelineCache::Module & PipelineCache::module(std::span<const uint32_t> words) {
    std::vector<std::unique_ptr<Module>> & bucket = buckets_[hash_(words)];
    for (const std::unique_ptr<Module> & m : bucket)
        if (std::ranges::equal(m->words, words)) return *m;
    auto added = std::make_unique<Module>();
    added->words.assign(words.begin(), words.end());
    return *bucket.emplace_back(std::move(added));
}

size_t PipelineCache::n_modules() const {
    size_t n = 0;
    for (const auto & [hash, bucket] : buckets_)
        n += bucket.size();
    return n;
}

size_t PipelineCache::n_pipelines() const {
    size_t n = 0;
    for (const auto & [hash, bucket] : buckets_)
        for (const std::unique_ptr<Module> & m : bucket)
            n += m->pipelines.size();
    return n;
}

}  // namespace ggx::vulkan
