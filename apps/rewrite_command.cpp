// `tempo rewrite`: learned graph rewrites (src/rewrite): TASO's substitutions and cost-based
// search over the evaluation models, with the runtimes by the cost model and measured.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "parse_args.h"
#include "rewrite/agent.h"
#include "rewrite/bench.h"
#include "rewrite/enumerate.h"
#include "rewrite/subst.h"
#include "nn/safetensors.h"
#include "util/error.h"

namespace {

using namespace tempo;
using namespace tempo::rewrite;

const char* kUsage =
    "usage: tempo rewrite <bench|train|substitutions> [options]\n"
    "TASO-style graph substitutions over InceptionV3, ResNet-18/50, SqueezeNet 1.1 and BERT-base,\n"
    "costed by per-operator LibTorch runtimes measured on this machine (one thread).\n\n"
    "  tempo rewrite bench [--model NAME] [--quick] [--budget N] [--seconds S]\n"
    "                      [--bert-layers L] [--cost-cache FILE] [--reps N] [--no-agents]\n"
    "                      [--plot PREFIX] [--tau T] [--wm-iterations N] [--agent FILE]\n"
    "      per model: the runtime of the original graph and after TASO's backtracking search\n"
    "      (alpha 1.05, N expanded graphs, default 200; at most S seconds, default 120), by the\n"
    "      cost model and measured end to end (the fastest of N runs, default 10), and the largest\n"
    "      output difference of the optimized graph; --quick: budget 40, 30 s, BERT with 2 layers\n"
    "      (default 12); then trains the PPO agent and the world-model agent per model (unless\n"
    "      --no-agents) and prints their table; --plot writes their training curves to\n"
    "      PREFIX_ppo.svg and PREFIX_dream.svg; --tau: the dream's temperature (default 1);\n"
    "      --wm-iterations: world model and controller trained N times, each time also on\n"
    "      the last controller's real episodes (default 3); --agent: also plays the agent saved\n"
    "      in FILE on each model without training it (its own table)\n"
    "  tempo rewrite train --out FILE [--models A,B,...] [--quick] [--seconds S]\n"
    "                      [--cost-cache FILE] [--seed N]\n"
    "      trains one PPO agent on the models' graphs, their episodes in turn (default all five;\n"
    "      BERT with 2 layers), for at most S seconds (default 600, quick 60), prints what it\n"
    "      reaches on each (its greedy and 4 sampled episodes, as when it is played) and saves\n"
    "      it to FILE, for `--rewrites learned:FILE` (tempo train, tempo generate) and\n"
    "      `bench --agent FILE`\n"
    "  tempo rewrite substitutions [--enumerate N]\n"
    "      lists the substitution library and enumerates graphs of up to N operators (default\n"
    "      2, at most 3) for verified equivalent pairs\n\n"
    "models: inceptionv3 resnet18 resnet50 squeezenet bert\n";

using cli::Args;

int get_int(const Args& a, const std::string& k, int dflt, int lo, int hi) {
  if (!a.has(k)) return dflt;
  int64_t v = cli::parse_int(k, a.get(k, ""));
  if (v < lo || v > hi) throw UserError(cat(k, " must be between ", lo, " and ", hi));
  return static_cast<int>(v);
}

int bench(const Args& a) {
  if (!a.positional.empty()) throw UserError(cat("unexpected argument '", a.positional[0], "'"));
  BenchOptions o;
  o.quick = a.has("--quick");
  o.budget = get_int(a, "--budget", 0, 1, 1000000);
  o.bert_layers = get_int(a, "--bert-layers", 0, 1, 48);
  o.reps = get_int(a, "--reps", 10, 1, 1000);
  if (a.has("--seconds")) o.max_seconds = cli::parse_double("--seconds", a.get("--seconds", ""));
  o.cost_cache = a.get("--cost-cache", "");
  o.agents = !a.has("--no-agents");
  if (a.has("--tau")) {
    o.tau = cli::parse_double("--tau", a.get("--tau", ""));
    if (o.tau <= 0) throw UserError("--tau must be positive");
  }
  o.wm_iterations = get_int(a, "--wm-iterations", 3, 1, 100);
  if (a.has("--agent"))  // read once, before the models run
    o.agent = std::make_shared<const RewriteAgent>(RewriteAgent::load(a.get("--agent", "")));
  std::vector<std::string> models = model_names();
  if (a.has("--model")) {
    std::string m = a.get("--model", "");
    build_model(m, 1);  // an unknown name fails here, listing the known ones
    models = {m};
  }
  CostOptions co;
  co.cache_file = o.cost_cache;
  CostModel cost(co);
  std::vector<BenchRow> rows;
  for (const auto& m : models) {
    std::fprintf(stderr, "rewrite bench: %s ...\n", m.c_str());
    rows.push_back(bench_model(m, cost, o));
  }
  std::printf("%s", bench_table(rows).c_str());
  if (o.agents) std::printf("\n%s", agent_table(rows).c_str());
  if (o.agent) std::printf("\n%s", saved_agent_table(rows).c_str());
  std::printf("\n%zu operator configurations measured\n", cost.measured());
  if (a.has("--plot") && o.agents) {
    std::string prefix = a.get("--plot", "");
    nn::write_atomic(prefix + "_ppo.svg", curve_plot(rows));
    nn::write_atomic(prefix + "_dream.svg", dream_plot(rows));
    std::printf("training curves: %s_ppo.svg %s_dream.svg\n", prefix.c_str(), prefix.c_str());
  }
  return 0;
}

int train(const Args& a) {
  if (!a.positional.empty()) throw UserError(cat("unexpected argument '", a.positional[0], "'"));
  const std::string out = a.get("--out", "");
  if (out.empty()) throw UserError("tempo rewrite train needs --out FILE");
  const bool quick = a.has("--quick");
  const std::vector<std::string> models =
      cli::split_commas(a.get("--models", "inceptionv3,resnet18,resnet50,squeezenet,bert"));
  if (models.empty()) throw UserError("--models needs at least one model name");
  std::vector<Graph> graphs;
  for (const std::string& m : models) graphs.push_back(build_model(m, 2));
  PpoOptions o = bench_ppo_options("", quick);
  o.max_seconds = a.has("--seconds") ? cli::parse_double("--seconds", a.get("--seconds", ""))
                                     : quick ? 60 : 600;
  if (o.max_seconds <= 0) throw UserError("--seconds must be positive");
  o.rollouts *= static_cast<int64_t>(graphs.size());  // the bench's training per graph
  o.seed = static_cast<uint64_t>(get_int(a, "--seed", 1, 0, 1 << 30));
  // More exploration and smaller steps than one graph's training: the episodes of graphs with
  // little to gain otherwise teach the no-op to all of them.
  o.entropy = 0.05;
  o.learning_rate = 1e-3;
  CostOptions co;
  co.cache_file = a.get("--cost-cache", "");
  CostModel cost(co);
  std::fprintf(stderr, "rewrite train: %zu graphs, at most %.0f s ...\n", graphs.size(),
               o.max_seconds);
  AgentTraining t = train_agent(graphs, cost, o);
  std::printf("trained in %.1f s: %zu episodes, %zu rollouts; mean decrease per episode by "
              "tenths of the training (%% of the original, cost model):",
              t.seconds, t.curve.size(), t.losses.size());
  const size_t tenth = std::max<size_t>(1, t.curve.size() / 10);
  for (size_t k = 0; k + tenth <= t.curve.size(); k += tenth) {
    double sum = 0;
    for (size_t j = k; j < k + tenth; ++j) sum += t.curve[j].improvement;
    std::printf(" %.2f", sum / static_cast<double>(tenth));
  }
  std::printf("\n");
  std::printf("| model | ops | original ms | agent ms | decrease | steps |\n"
              "|---|---|---|---|---|---|\n");
  for (size_t k = 0; k < graphs.size(); ++k) {
    AgentResult r = play_agent(graphs[k], cost, t.agent);
    std::printf("| %s | %lld | %.2f | %.2f | %.2f%% | %zu |\n", models[k].c_str(),
                static_cast<long long>(graphs[k].num_ops()), r.initial_cost, r.best_cost,
                100 * (r.initial_cost - r.best_cost) / r.initial_cost, r.steps.size());
  }
  t.agent.save(out);
  std::printf("saved to %s\n", out.c_str());
  return 0;
}

int substitutions(const Args& a) {
  if (!a.positional.empty()) throw UserError(cat("unexpected argument '", a.positional[0], "'"));
  int n = get_int(a, "--enumerate", 2, 1, 3);
  std::printf("%zu substitutions in the library:\n", rules().size());
  for (const Rule& r : rules()) std::printf("  %-28s %s\n", r.name.c_str(), r.identity.c_str());
  EnumerationResult e = enumerate_substitutions(n);
  std::printf(
      "\nenumerated %lld graphs of up to %d operators over {matmul, add, mul, relu, transpose}:\n"
      "%lld fingerprint classes with equivalent graphs, %lld candidate substitutions, %lld "
      "verified on random inputs, e.g.\n",
      static_cast<long long>(e.graphs), n, static_cast<long long>(e.classes),
      static_cast<long long>(e.candidates), static_cast<long long>(e.verified));
  for (const auto& [src, dst] : e.examples) std::printf("  %s  =>  %s\n", src.c_str(), dst.c_str());
  return 0;
}

}  // namespace

int run_rewrite_command(int argc, char** argv) {
  return cli::run_subcommand(argc, argv, "rewrite", kUsage,
                             {{"bench",
                               {"--model", "--budget", "--seconds", "--bert-layers", "--cost-cache",
                                "--reps", "--plot", "--tau", "--wm-iterations", "--agent"},
                               {"--quick", "--no-agents"},
                               bench},
                              {"train",
                               {"--out", "--models", "--seconds", "--cost-cache", "--seed"},
                               {"--quick"},
                               train},
                              {"substitutions", {"--enumerate"}, {}, substitutions}});
}
