// The benchmarks of the Pearl evaluation (image processing, linear algebra, stencils) as loop-nest
// programs, each in a `small` size for tests and a `bench` size whose unoptimized run takes
// tens to hundreds of milliseconds.
#pragma once

#include <string>
#include <vector>

#include "loops/program.h"

namespace tempo::loops {

enum class Size { Small, Bench };

std::vector<std::string> benchmark_names();
// UserError for an unknown name (the message lists the known ones).
Program benchmark(const std::string& name, Size size);

}  // namespace tempo::loops
