#pragma once

#include "passes/pipeline.h"

namespace tempo::passes {

// Applies the table of algebraic identities in algebraic.cpp (x * 1 -> x, log(exp(x)) -> x, ...).
bool simplify_algebra(Program& p);

}  // namespace tempo::passes
