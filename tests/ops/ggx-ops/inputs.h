// Seeded input values for ggx-ops cases.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "case.h"

namespace ggx::ops {

// A small, fast, portable generator (splitmix64), so a seed means the same data everywhere.
class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed) {}
    uint64_t next();
    // Uniform in [lo, hi).
    double uniform(double lo, double hi);
    // Uniform integer in [0, n) (n > 0).
    int64_t below(int64_t n);

private:
    uint64_t state_;
};

// The seed of one case: the run's seed mixed with the case name, so filtering keeps the data.
uint64_t case_seed(uint64_t seed, const std::string & name);

// Values of row number row (n elements) drawn by gen into out.
void generate_row(const Gen & gen, Rng & rng, int64_t row, double * out, int64_t n);
// Values of every element of a tensor of shape ne, ne0 fastest.
std::vector<double> generate(const Gen & gen, Rng & rng, const int64_t ne[4]);

}  // namespace ggx::ops
