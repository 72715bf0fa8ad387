// TASO's cost-based backtracking search (Jia et al., SOSP'19, Algorithm 2): a priority queue of
// graphs ordered by cost; each popped graph's rewrites (every substitution at every location)
// are costed, and kept when cheaper than alpha times the best graph found so far, so the search
// can pass through slightly worse graphs (alpha = 1.05) on its way to better ones.
#pragma once

#include <cstdint>
#include <vector>

#include "rewrite/graph.h"
#include "rewrite/subst.h"
#include "rewrite/evaluate.h"

namespace tempo::rewrite {

struct SearchOptions {
  double alpha = 1.05;
  int64_t budget = 200;       // graphs popped from the queue
  double max_seconds = 0;     // > 0: stop after this long as well
  int64_t max_queue = 1000;  // the queue keeps at most this many graphs (the cheapest)
};

struct SearchResult {
  Graph best;
  double initial_cost = 0, best_cost = 0;  // ms, by the cost model
  int64_t expanded = 0, generated = 0;
  double seconds = 0;
  std::vector<Match> steps;  // the substitutions from the original graph to the best
};

SearchResult taso_search(const Graph& g, CostModel& cost, const SearchOptions& options = {});

}  // namespace tempo::rewrite
