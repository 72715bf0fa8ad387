#pragma once

#include "passes/pipeline.h"

namespace tempo::passes {

// Elementwise ops whose inputs are all constant fills become constant fills.
bool fold_constants(Program& p);

}  // namespace tempo::passes
