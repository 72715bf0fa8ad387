// Helpers shared by the pass tests.
#pragma once

#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "api/tempo.h"
#include "passes/pipeline.h"

namespace tempo::testing {

// The text form without names and source locations (they name the test file's lines).
inline std::string text(const ir::Graph& g) {
  return std::regex_replace(g.str(), std::regex("  #[^\n]*"), "");
}

// Runs one pass alone over the Context's program; the text after it (validated).
inline std::string after_pass(const Context& ctx, bool (*pass)(passes::Program&),
                              bool expect_change = true) {
  passes::Program p(ctx.graph(), ctx.retained());
  EXPECT_EQ(pass(p), expect_change);
  ir::validate(p.graph);
  return text(p.graph);
}

// Reads of a window that moves with d: O(D) values at each of D points.
inline int moving_windows(const ir::Graph& g, const Dim& d) {
  int n = 0;
  for (const ir::Edge& e : g.edges())
    for (const Expr& entry : e.phi.args()) n += entry.is_slice() && sym::depends_on(entry, d.var);
  return n;
}

}  // namespace tempo::testing
