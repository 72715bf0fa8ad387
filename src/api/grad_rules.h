// Per-op-kind local gradient rules (internal to the api layer; used by autodiff.cpp).
#pragma once

#include <vector>

#include "api/context.h"

namespace tempo::autodiff {

// What a rule sees of one op at a point of its domain.
struct RuleInput {
  Context& ctx;
  const ir::OpNode& op;
  std::vector<RT> in;    // the inputs as the op receives them (with leading slice dims)
  std::vector<RT> out;   // the op's outputs
  std::vector<RT> g;     // gradient of each output (undefined: none flows)
  std::vector<bool> need;  // which inputs want a gradient
  Loc loc;
};

// The gradient of each input (same type as `in[k]`; undefined: none). Merge is not handled
// here (its branches are routed by autodiff.cpp). Non-differentiable kinds give no gradient.
std::vector<RT> local_grads(const RuleInput& r);

// Sums `g` down to `shape` over broadcast dims (leading extra dims, and dims of size 1).
RT unbroadcast(const RT& g, const Shape& shape, Loc loc);

}  // namespace tempo::autodiff
