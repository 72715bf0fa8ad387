// Whole-program optimization of the SDG (TEMPO §4): the pass pipeline the compiler driver runs
// between validation and scheduling.
#pragma once

#include <utility>
#include <vector>

#include "passes/options.h"
#include "ir/sdg.h"

namespace tempo::passes {

using Options = PassOptions;  // the switches (passes/options.h)

// The program the passes transform. Passes keep op ids stable and leave unread ops behind; DCE
// (and the final clean-up) renumbers the graph and keeps `op_map` up to date.
struct Program {
  ir::Graph graph;
  // Outputs the user reads after a run (RT::retain): never removed, merged or vectorized.
  std::vector<std::pair<ir::OpId, int>> retained;
  // For each op id the user's program had, its id in `graph` now (-1: removed).
  std::vector<ir::OpId> op_map;
  // The switches and settings the pipeline runs with (tile sizes, verbosity).
  Options options;
  // The value of each bound symbol the program is compiled for, by name (T -> 128).
  std::vector<std::pair<std::string, int64_t>> bound_values;

  Program(ir::Graph g, std::vector<std::pair<ir::OpId, int>> r);
  bool is_retained(ir::OpId op) const;
};

// Runs every enabled pass in pipeline order, then removes unread edges and renumbers.
void run_pipeline(Program& program, const Options& options);

// A pass: reads and rewrites the program; returns whether it changed anything.
using PassFn = bool (*)(Program&);

}  // namespace tempo::passes
