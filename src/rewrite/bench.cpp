#include "rewrite/bench.h"

#include <cmath>
#include <cstdio>

#include "util/error.h"
#include "util/plot.h"

namespace tempo::rewrite {

namespace {

// What a row records of each method's best graph (TASO's, PPO's, the world model's): its size and
// cost, the search, its runtime end to end and its outputs' difference from the original.
struct Outcome {
  const std::string& model;
  const Graph& original;
  CostModel& cost;
  int reps;
  // `Result`: a SearchResult, AgentResult or WorldModelResult.
  template <typename Result>
  void record(const Result& res, int64_t& ops, double& cost_ms, double& seconds, int64_t& steps,
              double& measured, double& max_difference) const {
    ops = res.best.num_ops();
    cost_ms = res.best_cost;
    seconds = res.seconds;
    steps = static_cast<int64_t>(res.steps.size());
    measured = cost.measure_graph(res.best, reps);
    max_difference = verify(model, original, res.best);
  }
};

}  // namespace

BenchRow bench_model(const std::string& model, CostModel& cost, const BenchOptions& o) {
  int layers = o.bert_layers > 0 ? o.bert_layers : o.quick ? 2 : 12;
  Graph g = build_model(model, layers);
  BenchRow r;
  r.model = model == "bert" ? cat("bert-", layers) : model;
  r.ops = g.num_ops();
  r.cost = cost.graph_cost(g);
  r.measured = cost.measure_graph(g, o.reps, &r.ops_in_graph);
  SearchOptions so;
  so.budget = o.budget > 0 ? o.budget : o.quick ? 40 : 200;
  so.max_seconds = o.max_seconds > 0 ? o.max_seconds : o.quick ? 30 : 120;
  SearchResult s = taso_search(g, cost, so);
  const Outcome outcome{model, g, cost, o.reps};
  outcome.record(s, r.taso_ops, r.taso_cost, r.taso_seconds, r.taso_steps, r.taso_measured,
                 r.max_difference);
  r.taso_expanded = s.expanded;
  if (o.agents) {
    AgentResult a = train_ppo(g, cost, bench_ppo_options(model, o.quick));
    r.has_ppo = true;
    outcome.record(a, r.ppo_ops, r.ppo_cost, r.ppo_seconds, r.ppo_steps, r.ppo_measured,
                   r.ppo_max_difference);
    r.ppo_env_steps = a.env_steps;
    r.ppo_env_seconds = a.env_seconds;
    r.ppo_curve = a.curve;
    WorldModelResult w = train_world_model(g, cost, bench_world_model_options(model, o));
    r.has_wm = true;
    outcome.record(w, r.wm_ops, r.wm_cost, r.wm_seconds, r.wm_steps, r.wm_measured,
                   r.wm_max_difference);
    r.wm_real_steps = w.real_steps;
    r.wm_dream_steps = w.dream_steps;
    r.wm_real_seconds = w.real_seconds;
    r.wm_dream_seconds = w.dream_seconds;
    r.wm_curve = w.dream_curve;
  }
  if (o.agent) {
    AgentResult a = play_agent(g, cost, *o.agent);
    r.has_saved = true;
    outcome.record(a, r.saved_ops, r.saved_cost, r.saved_seconds, r.saved_steps,
                   r.saved_measured, r.saved_max_difference);
  }
  return r;
}

PpoOptions bench_ppo_options(const std::string& model, bool quick) {
  PpoOptions p;
  p.max_steps = model == "bert" && !quick ? 64 : 40;  // BERT-12 has 4 useful steps per layer
  if (quick) {
    p.rollouts = 8;
    p.episodes_per_rollout = 4;
    p.updates_per_rollout = 4;
    p.batch = 16;
    p.max_steps = 24;
    p.max_seconds = 20;
  } else {
    p.rollouts = 30;
    p.episodes_per_rollout = 8;
    p.updates_per_rollout = 4;
    p.batch = 24;
    p.max_seconds = 120;
  }
  return p;
}

WorldModelOptions bench_world_model_options(const std::string& model, const BenchOptions& o) {
  const bool quick = o.quick;
  WorldModelOptions w;
  w.tau = o.tau;
  w.iterations = o.wm_iterations;
  w.max_steps = model == "bert" && !quick ? 64 : 40;
  if (quick) {
    w.random_episodes = 8;
    w.wm_steps = 100;
    w.rollouts = 8;
    w.episodes_per_rollout = 8;
    w.max_steps = 24;
  }
  return w;
}

double verify(const std::string& model, const Graph& original, const Graph& optimized) {
  EvalOptions e;
  if (model == "bert") e.weight_scale = 0.1;
  return max_difference(evaluate(optimized, e), evaluate(original, e));
}

std::string agent_table(const std::vector<BenchRow>& rows) {
  std::string t =
      "| model | original ms | TASO ms | PPO ms | world model ms | PPO vs TASO | WM vs TASO | "
      "TASO s | PPO s | WM s | PPO env steps | WM real / dream steps | real ms/step | dream "
      "ms/step | max diff (TASO, PPO, WM) |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  char line[768];
  for (const BenchRow& r : rows) {
    if (!r.has_ppo) continue;
    std::snprintf(
        line, sizeof line,
        "| %s | %.2f | %.2f | %.2f | %.2f | %+.1f%% | %+.1f%% | %.1f | %.1f | %.1f | %lld | %lld "
        "/ %lld | %.3f | %.4f | %.0e, %.0e, %.0e |\n",
        r.model.c_str(), r.cost, r.taso_cost, r.ppo_cost, r.wm_cost,
        100 * (r.ppo_cost - r.taso_cost) / r.taso_cost,
        100 * (r.wm_cost - r.taso_cost) / r.taso_cost, r.taso_seconds, r.ppo_seconds, r.wm_seconds,
        static_cast<long long>(r.ppo_env_steps), static_cast<long long>(r.wm_real_steps),
        static_cast<long long>(r.wm_dream_steps),
        1e3 * r.wm_real_seconds / std::max<int64_t>(1, r.wm_real_steps),
        1e3 * r.wm_dream_seconds / std::max<int64_t>(1, r.wm_dream_steps), r.max_difference,
        r.ppo_max_difference, r.wm_max_difference);
    t += line;
  }
  t += "\n(ms: runtime by the cost model; PPO/WM vs TASO: + is slower than TASO's graph)\n";
  return t;
}

std::string saved_agent_table(const std::vector<BenchRow>& rows) {
  std::string t =
      "| model | original ms | TASO ms | saved agent ms | saved vs TASO | steps | play s | max "
      "diff |\n|---|---|---|---|---|---|---|---|\n";
  char line[256];
  for (const BenchRow& r : rows) {
    if (!r.has_saved) continue;
    std::snprintf(line, sizeof line, "| %s | %.2f | %.2f | %.2f | %+.1f%% | %lld | %.1f | %.0e |\n",
                  r.model.c_str(), r.cost, r.taso_cost, r.saved_cost,
                  100 * (r.saved_cost - r.taso_cost) / r.taso_cost,
                  static_cast<long long>(r.saved_steps), r.saved_seconds, r.saved_max_difference);
    t += line;
  }
  t += "\n(the saved agent's greedy and 4 sampled episodes, without training; ms: cost model)\n";
  return t;
}

namespace {

// One series per model that has the curve `curve` (a member of BenchRow) where `has` is set.
std::vector<PlotSeries> curves(const std::vector<BenchRow>& rows, bool BenchRow::*has,
                               std::vector<CurvePoint> BenchRow::*curve) {
  std::vector<PlotSeries> series;
  for (const BenchRow& r : rows) {
    if (!(r.*has)) continue;
    PlotSeries s{r.model, {}};
    for (const CurvePoint& c : r.*curve)
      s.points.push_back({static_cast<double>(c.episode), c.improvement});
    series.push_back(std::move(s));
  }
  return series;
}

}  // namespace

std::string curve_plot(const std::vector<BenchRow>& rows) {
  return line_plot_svg("PPO on the rewrite environment", "episode",
                       "runtime decrease (% of original, cost model)",
                       curves(rows, &BenchRow::has_ppo, &BenchRow::ppo_curve));
}

std::string dream_plot(const std::vector<BenchRow>& rows) {
  return line_plot_svg("Controller in the world model (imagined episodes)", "episode",
                       "predicted runtime decrease (% of original)",
                       curves(rows, &BenchRow::has_wm, &BenchRow::wm_curve));
}

std::string bench_table(const std::vector<BenchRow>& rows) {
  std::string t =
      "| model | ops | cost ms | measured ms | cost err | ops in graph ms | cost err (ops) | TASO "
      "ops | TASO cost ms | TASO speedup (cost) | TASO measured ms | speedup (measured) | search "
      "s | steps | max diff |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  char line[512];
  for (const BenchRow& r : rows) {
    std::snprintf(
        line, sizeof line,
        "| %s | %lld | %.2f | %.2f | %+.1f%% | %.2f | %+.1f%% | %lld | %.2f | %.3fx | %.2f | "
        "%.3fx | %.1f | %lld | %.1e |\n",
        r.model.c_str(), static_cast<long long>(r.ops), r.cost, r.measured,
        100 * (r.cost - r.measured) / r.measured, r.ops_in_graph,
        100 * (r.cost - r.ops_in_graph) / r.ops_in_graph, static_cast<long long>(r.taso_ops),
        r.taso_cost, r.cost / r.taso_cost, r.taso_measured, r.measured / r.taso_measured,
        r.taso_seconds, static_cast<long long>(r.taso_steps), r.max_difference);
    t += line;
  }
  return t;
}

}  // namespace tempo::rewrite
