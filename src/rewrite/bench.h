// `tempo rewrite bench`: per model, the original graph's runtime, TASO's search and (when
// trained) the agents, by the cost model and measured end to end; the optimized graphs are
// checked against the original on random inputs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rewrite/agent.h"
#include "rewrite/world_model.h"
#include "rewrite/search.h"

namespace tempo::rewrite {

struct BenchOptions {
  bool quick = false;          // smaller budgets, BERT with 2 layers
  int64_t budget = 0;          // TASO's budget (0: 200, quick 40)
  double max_seconds = 0;      // TASO's time limit per model (0: 120 s, quick 30 s)
  int bert_layers = 0;         // 0: 12, quick 2
  std::string cost_cache;      // the cost model's on-disk cache
  int reps = 10;               // end-to-end measurements: the fastest of reps runs
  bool agents = true;          // train the PPO and world-model agents per model
  double tau = 1.0;            // the world model's temperature in the dream
  int wm_iterations = 3;       // the world model's training iterations (WorldModelOptions)
  std::shared_ptr<const RewriteAgent> agent;  // a saved PPO agent to play on each model
};

// The PPO agent's settings in the bench (smaller with quick).
PpoOptions bench_ppo_options(const std::string& model, bool quick);
WorldModelOptions bench_world_model_options(const std::string& model, const BenchOptions& o);
// The largest output difference of `optimized` from `original` (values suited to the model).
double verify(const std::string& model, const Graph& original, const Graph& optimized);

struct BenchRow {
  std::string model;
  int64_t ops = 0, taso_ops = 0;
  double cost = 0, measured = 0;            // original: cost model, end to end (ms)
  double ops_in_graph = 0;                  // original: its ops' fastest times within runs
  double taso_cost = 0, taso_measured = 0;  // after TASO's search
  double taso_seconds = 0;
  int64_t taso_steps = 0, taso_expanded = 0;
  double max_difference = 0;  // optimized vs original outputs
  bool has_ppo = false;
  int64_t ppo_ops = 0, ppo_steps = 0, ppo_env_steps = 0;
  double ppo_cost = 0, ppo_measured = 0, ppo_seconds = 0, ppo_env_seconds = 0;
  double ppo_max_difference = 0;
  std::vector<CurvePoint> ppo_curve;
  bool has_wm = false;
  int64_t wm_ops = 0, wm_steps = 0, wm_real_steps = 0, wm_dream_steps = 0;
  double wm_cost = 0, wm_measured = 0, wm_seconds = 0, wm_max_difference = 0;
  double wm_real_seconds = 0, wm_dream_seconds = 0;
  std::vector<CurvePoint> wm_curve;
  bool has_saved = false;  // the saved agent played without training
  int64_t saved_ops = 0, saved_steps = 0;
  double saved_cost = 0, saved_measured = 0, saved_seconds = 0, saved_max_difference = 0;
};

BenchRow bench_model(const std::string& model, CostModel& cost, const BenchOptions& options);
// A markdown table of the rows.
std::string bench_table(const std::vector<BenchRow>& rows);
// The agents' table (runtime after each method, optimization wall time) when trained.
std::string agent_table(const std::vector<BenchRow>& rows);
// The saved agent's table (runtime after it and after TASO, its play time) when played.
std::string saved_agent_table(const std::vector<BenchRow>& rows);
// The training curves as SVG line plots: PPO's real episodes, the controller's dream episodes.
std::string curve_plot(const std::vector<BenchRow>& rows);
std::string dream_plot(const std::vector<BenchRow>& rows);

}  // namespace tempo::rewrite
