// `tempo rewrite bench`: per model, the original graph's runtime, TASO's search and (when
// trained) the agents, by the cost model and measured end to end; the optimized graphs are
// checked against the original on random inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rewrite/search.h"

namespace tempo::rewrite {

struct BenchOptions {
  bool quick = false;          // smaller budgets, BERT with 2 layers
  int64_t budget = 0;          // TASO's budget (0: 200, quick 40)
  double max_seconds = 0;      // TASO's time limit per model (0: 120 s, quick 30 s)
  int bert_layers = 0;         // 0: 12, quick 2
  std::string cost_cache;      // the cost model's on-disk cache
  int reps = 5;                // end-to-end measurements: the fastest of reps runs
};

struct BenchRow {
  std::string model;
  int64_t ops = 0, taso_ops = 0;
  double cost = 0, measured = 0;            // original: cost model, end to end (ms)
  double taso_cost = 0, taso_measured = 0;  // after TASO's search
  double taso_seconds = 0;
  int64_t taso_steps = 0, taso_expanded = 0;
  double max_difference = 0;  // optimized vs original outputs
};

BenchRow bench_model(const std::string& model, CostModel& cost, const BenchOptions& options);
// A markdown table of the rows.
std::string bench_table(const std::vector<BenchRow>& rows);

}  // namespace tempo::rewrite
