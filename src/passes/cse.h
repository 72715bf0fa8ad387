#pragma once

#include "passes/pipeline.h"

namespace tempo::passes {

// Merges ops of the same kind, attributes, domain and inputs (same sources, outputs, dependence
// expressions and conditions). User functions, random draws and merges are never merged.
bool eliminate_common_subexpressions(Program& p);

}  // namespace tempo::passes
