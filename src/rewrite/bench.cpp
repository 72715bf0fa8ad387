#include "rewrite/bench.h"

#include <cmath>
#include <cstdio>

#include "util/error.h"

namespace tempo::rewrite {

BenchRow bench_model(const std::string& model, CostModel& cost, const BenchOptions& o) {
  int layers = o.bert_layers > 0 ? o.bert_layers : o.quick ? 2 : 12;
  Graph g = build_model(model, layers);
  BenchRow r;
  r.model = model == "bert" ? cat("bert-", layers) : model;
  r.ops = g.num_ops();
  r.cost = cost.graph_cost(g);
  r.measured = cost.measure_graph(g, o.reps);
  SearchOptions so;
  so.budget = o.budget > 0 ? o.budget : o.quick ? 40 : 200;
  so.max_seconds = o.max_seconds > 0 ? o.max_seconds : o.quick ? 30 : 120;
  SearchResult s = taso_search(g, cost, so);
  r.taso_ops = s.best.num_ops();
  r.taso_cost = s.best_cost;
  r.taso_seconds = s.seconds;
  r.taso_steps = static_cast<int64_t>(s.steps.size());
  r.taso_expanded = s.expanded;
  r.taso_measured = cost.measure_graph(s.best, o.reps);
  r.max_difference = max_difference(evaluate(s.best), evaluate(g));
  return r;
}

std::string bench_table(const std::vector<BenchRow>& rows) {
  std::string t =
      "| model | ops | cost ms | measured ms | cost err | TASO ops | TASO cost ms | TASO speedup "
      "(cost) | TASO measured ms | speedup (measured) | search s | steps | max diff |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  char line[512];
  for (const BenchRow& r : rows) {
    std::snprintf(line, sizeof line,
                  "| %s | %lld | %.2f | %.2f | %+.1f%% | %lld | %.2f | %.3fx | %.2f | %.3fx | %.1f | "
                  "%lld | %.1e |\n",
                  r.model.c_str(), static_cast<long long>(r.ops), r.cost, r.measured,
                  100 * (r.cost - r.measured) / r.measured, static_cast<long long>(r.taso_ops),
                  r.taso_cost, r.cost / r.taso_cost, r.taso_measured, r.measured / r.taso_measured,
                  r.taso_seconds, static_cast<long long>(r.taso_steps), r.max_difference);
    t += line;
  }
  return t;
}

}  // namespace tempo::rewrite
