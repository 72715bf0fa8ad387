// Random loop-nest programs for training a loop-optimization agent (Pearl trains on generated
// programs and is evaluated on benchmarks it never saw). A program is one to three statements in
// one or more loop nests of depth 2 or 3, built from patterns whose accesses resemble the
// benchmarks' without copying them: element-wise maps (some through a transposed access),
// out-of-place and in-place stencils (with a time loop), matrix-vector and matrix-matrix
// products, and an initialize-then-accumulate pair sharing its outer loops. Later nests often
// read what earlier ones wrote. The original loop order is drawn at random, so that interchange
// has something to find. Sizes are chosen for unoptimized runs of about 1-20 ms here.
#pragma once

#include <cstdint>
#include <vector>

#include "loops/program.h"

namespace tempo::loops {

struct GeneratorOptions {
  bool small = false;  // test sizes (arrays of 8-16 per side): fast to compile and run
  int max_statements = 3;
};

// The program of a seed: the same seed gives the same program. Named "gen<seed>".
Program generate_program(uint64_t seed, const GeneratorOptions& o = {});
std::vector<Program> generate_programs(uint64_t first_seed, int count,
                                       const GeneratorOptions& o = {});

}  // namespace tempo::loops
