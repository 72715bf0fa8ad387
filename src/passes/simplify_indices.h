#pragma once

#include "passes/pipeline.h"

namespace tempo::passes {

// Simplifies every dependence expression and condition (and op conditions) over the domain they are
// written in; a condition that always holds is dropped.
bool simplify_indices(Program& p);

}  // namespace tempo::passes
