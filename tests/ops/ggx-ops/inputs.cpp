// Seeded input values for ggx-ops cases.
#include "inputs.h"

#include <cmath>
#include <limits>
#include <numeric>

namespace ggx::ops {

uint64_t Rng::next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double Rng::uniform(double lo, double hi) {
    const double unit = static_cast<double>(next() >> 11) * 0x1.0p-53;
    return lo + (hi - lo) * unit;
}

int64_t Rng::below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }

uint64_t case_seed(uint64_t seed, const std::string & name) {
    uint64_t hash = 0xCBF29CE484222325ull;  // FNV-1a
    for (unsigned char c : name)
        hash = (hash ^ c) * 0x100000001B3ull;
    return Rng(seed ^ hash).next();
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One random permutation of [0, hi) repeated along the row: any hi consecutive elements are
// distinct, so a strided view into the row (which starts past its first element) is too.
void distinct_row(const Gen & gen, Rng & rng, double * out, int64_t n) {
    const int64_t range = static_cast<int64_t>(gen.hi);
    if (range <= 0) return;
    std::vector<int64_t> pool(static_cast<size_t>(range));
    std::iota(pool.begin(), pool.end(), 0);
    for (int64_t k = 0; k + 1 < range; ++k)
        std::swap(pool[k], pool[k + rng.below(range - k)]);
    for (int64_t i = 0; i < n; ++i)
        out[i] = static_cast<double>(pool[i % range]);
}

double special_value(Rng & rng) {
    static constexpr double kSpecials[] = {
        kInf, -kInf, std::numeric_limits<double>::quiet_NaN(), 0.0, -0.0, 1e6, -1e6, 1e-40};
    return kSpecials[rng.below(std::size(kSpecials))];
}

}  // namespace

void generate_row(const Gen & gen, Rng & rng, int64_t row, double * out, int64_t n) {
    switch (gen.kind) {
        case Gen::Kind::Uniform:
            for (int64_t i = 0; i < n; ++i)
                out[i] = rng.uniform(gen.lo, gen.hi);
            return;
        case Gen::Kind::Integer:
            for (int64_t i = 0; i < n; ++i)
                out[i] = std::floor(rng.uniform(gen.lo, gen.hi));
            return;
        case Gen::Kind::Distinct:
            distinct_row(gen, rng, out, n);
            return;
        case Gen::Kind::Mask:
            for (int64_t i = 0; i < n; ++i) {
                const bool keep = i == row % n || rng.below(3) != 0;
                out[i] = keep ? rng.uniform(gen.lo, gen.hi) : -kInf;
            }
            return;
        case Gen::Kind::Special:
            for (int64_t i = 0; i < n; ++i)
                out[i] = rng.below(6) == 0 ? special_value(rng) : rng.uniform(gen.lo, gen.hi);
            return;
    }
}

std::vector<double> generate(const Gen & gen, Rng & rng, const int64_t ne[4]) {
    const int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
    std::vector<double> values(static_cast<size_t>(n));
    for (int64_t row = 0; ne[0] > 0 && row < n / ne[0]; ++row) {
        generate_row(gen, rng, row, values.data() + row * ne[0], ne[0]);
    }
    return values;
}

}  // namespace ggx::ops
