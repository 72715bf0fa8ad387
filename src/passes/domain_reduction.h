#pragma once

#include "passes/pipeline.h"

namespace tempo::passes {

// Removes from an op's domain every dimension its value does not vary along (no input, condition,
// attribute or shape mentions it), so it runs once instead of once per point.
bool reduce_domains(Program& p);

}  // namespace tempo::passes
