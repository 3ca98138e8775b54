// Runs LLVMFuzzerTestOneInput over every file of the directories (or files) given: the fuzz corpus as a
// regression test in builds without libFuzzer.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size);

int main(int argc, char ** argv) {
    size_t n = 0;
    for (int a = 1; a < argc; ++a) {
        std::vector<std::filesystem::path> files;
        if (std::filesystem::is_directory(argv[a])) {
            for (const auto & e : std::filesystem::directory_iterator(argv[a]))
                files.push_back(e.path());
        } else {
            files.emplace_back(argv[a]);
        }
        for (const auto & p : files) {
            std::ifstream in(p, std::ios::binary);
            std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                       std::istreambuf_iterator<char>());
            // An exact-size heap copy, so sanitizers see reads past the end.
            std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.size() + 1]);
            std::copy(bytes.begin(), bytes.end(), copy.get());
            LLVMFuzzerTestOneInput(copy.get(), bytes.size());
            ++n;
        }
    }
    std::printf("replayed %zu inputs\n", n);
    return n > 0 ? 0 : 1;
}
