#pragma once

#include "passes/pipeline.h"

namespace tempo::passes {

// Conditional execution: a `where` whose condition is a function of the point alone (symbols and
// constants: `where(i % 2 == 0, update, old)`, an optimizer's delayed or every-k-th step) becomes
// a Merge whose first branch is read only where that condition holds; then every op gets the
// condition under which some reader needs its value, so that it runs at those points only
// (TD3's actor update and target networks every second iteration instead of computed and
// discarded). User functions, retained outputs and ops with a condition of their own keep
// their points.
bool execute_conditionally(Program& p);

}  // namespace tempo::passes
