// Symbolic automatic differentiation (TEMPO §3, Fig. 7): builds the gradient program in the SDG.
#pragma once

#include <vector>

#include "api/rt.h"

namespace tempo {

// Gradients of `loss` with respect to each RT in `wrt`, as new RTs in the same program.
// The gradient of x has x's type and domain and sums the contributions of every point that read
// it, found through the inverse of each dependence expression (sym::invert); a constant-index
// read is recovered by indexing the reader's gradient with the source's variable. Merges (branches
// and state cycles) route each branch's gradient back under its condition; `detach()` stops
// gradients. `loss` must be a scalar per point of its domain (UserError otherwise, naming it);
// its seed gradient is 1 at every point. An RT in `wrt` that the loss does not depend on gets a
// zero gradient.
std::vector<RT> grad(const RT& loss, const std::vector<RT>& wrt, Loc loc = Loc::current());

}  // namespace tempo
