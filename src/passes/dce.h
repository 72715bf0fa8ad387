#pragma once

#include "passes/pipeline.h"

namespace tempo::passes {

// Removes ops whose values no retained output, user function or random draw needs, and renumbers
// the graph.
bool eliminate_dead_code(Program& p);

}  // namespace tempo::passes
