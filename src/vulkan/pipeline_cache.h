// The shader modules and compute pipelines of one device. A pipeline of ours depends on its module's
// SPIR-V words and its specialisation constants alone (every pipeline of a device has the device's
// one pipeline layout, the compute stage and entry point "main"), so those are the key, and both are
// compared in full: a hash of the words only chooses the bucket, so two modules whose hashes collide
// stay two entries with their own pipelines.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace ggx::vulkan {

struct Pipeline {
    VkPipeline handle = VK_NULL_HANDLE;
};

class PipelineCache {
public:
    struct Module {
        std::vector<uint32_t> words;
        VkShaderModule handle = VK_NULL_HANDLE;               // created by the owner on first use
        std::map<std::vector<uint32_t>, Pipeline> pipelines;  // by specialisation constants
    };
    using Hash = uint64_t (*)(std::span<const uint32_t> words);

    // hash chooses a module's bucket (tests give one that collides).
    explicit PipelineCache(Hash hash = hash_words) : hash_(hash) {}

    // The module with exactly these words, added (with no handle and no pipelines) on first use.
    // Entries are never moved: references stay valid for the cache's lifetime.
    Module & module(std::span<const uint32_t> words);
    size_t n_modules() const;
    size_t n_pipelines() const;
    // f(module) for every module (to release their handles).
    template <class F>
    void for_each(F f) {
        for (auto & [hash, bucket] : buckets_)
            for (const std::unique_ptr<Module> & m : bucket)
                f(*m);
    }

    static uint64_t hash_words(std::span<const uint32_t> words);

private:
    Hash hash_;
    std::unordered_map<uint64_t, std::vector<std::unique_ptr<Module>>> buckets_;
};

}  // namespace ggx::vulkan
