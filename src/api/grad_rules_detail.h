// Internal to the gradient rules (grad_rules*.cpp): what the rules share, and one rule per op
// category, which local_grads (grad_rules.cpp) dispatches to.
#pragma once

#include <vector>

#include "api/grad_rules.h"

namespace tempo::autodiff::detail {

// One op's rule input with the names the rules use (bound by `const auto& [r, a, ctx, loc, x,
// g, y] = c;`).
struct GradCtx {
  const RuleInput& r;
  const ir::Attrs& a;
  Context& ctx;
  Loc loc;
  const std::vector<RT>& x;  // the inputs
  const RT& g;               // the gradient of output 0
  const RT& y;               // output 0 (g where the op has none)
  bool need(size_t k) const { return k < r.need.size() && r.need[k]; }
};

RT zeros_like(Context& ctx, const RT& x, Loc loc);
// The gradient of picking elements of x along d at `index` (gather, a max's argmax).
RT pick_grad(Context& ctx, const RT& x, int64_t d, const RT& index, const RT& g, Loc loc);

// Each sets the gradients of the inputs (out has one entry per input).
void flow_grads(const GradCtx& c, std::vector<RT>& out);       // grad_rules.cpp
void unary_grads(const GradCtx& c, std::vector<RT>& out);      // grad_rules_elementwise.cpp
void binary_grads(const GradCtx& c, std::vector<RT>& out);     // grad_rules_elementwise.cpp
void reduction_grads(const GradCtx& c, std::vector<RT>& out);  // grad_rules_reduction.cpp
void movement_grads(const GradCtx& c, std::vector<RT>& out);   // grad_rules_movement.cpp
void indexing_grads(const GradCtx& c, std::vector<RT>& out);   // grad_rules_movement.cpp
void linalg_grads(const GradCtx& c, std::vector<RT>& out);     // grad_rules_linalg.cpp

}  // namespace tempo::autodiff::detail
