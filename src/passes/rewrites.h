// Graph rewrites chosen by a policy (passes/rewrite_region.h): the optimized SDG's same-point
// regions of matmuls, elementwise and movement ops with constant shapes go to
// Options::rewrite_policy one domain at a time; a graph it returns replaces the region's ops
// (their readers read the new ops, DCE removes the old ones).
#pragma once

#include "passes/pipeline.h"

namespace tempo::passes {

bool apply_rewrites(Program& p);

}  // namespace tempo::passes
