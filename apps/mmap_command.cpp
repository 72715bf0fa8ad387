// `tempo mmap`: memory-mapping instances (MMapGame, src/mmap) and the baselines that play them.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "mmap/baselines.h"
#include "mmap/extract.h"
#include "mmap/instance.h"
#include "mmap/mcts.h"
#include "mmap/muzero.h"
#include "nn/safetensors.h"
#include "parse_args.h"
#include "util/error.h"
#include "util/plot.h"

namespace {

using namespace tempo;
using namespace tempo::mmap;

const char* kUsage =
    "usage: tempo mmap <bench|extract|generate|solve|train> [options]\n"
    "Memory placement as the MMapGame (which buffers live in fast memory, when, at which\n"
    "offset) and its solvers: random legal play, evolutionary search, an XLA-style heuristic,\n"
    "MCTS (MuZero-style search planning with the game itself, Drop-backup) and the\n"
    "MMap-MuZero agent (networks trained per instance by self-play).\n\n"
    "  tempo mmap bench [--quick] [--seconds S] [--no-extracted] [--train-seconds S]\n"
    "      [--no-agent] [--no-hint] [--planning latent|game] [--plot FILE.svg]\n"
    "      runs the solvers on 16 synthetic instances (16 to 2048 buffers, two memory\n"
    "      pressures), 5 traced from Tempo's RL programs and 2 from LLM decoding (a tiny Llama\n"
    "      decoder, causal and windowed attention); S seconds per search and instance\n"
    "      (default 1, --quick 0.1) for random play, evolution, MCTS and the trained MMap-MuZero\n"
    "      agent, which first trains on each instance for about --train-seconds (default 20,\n"
    "      --quick 2); --plot draws its self-play return over training time (the paper's Fig. 5)\n"
    "      --no-hint: the agent's observation and prior leave out the heuristic's choice\n"
    "  tempo mmap train FILE --out NET [--train-seconds S] [--rounds N] [--simulations N]\n"
    "      [--planning latent|game] [--no-hint] [--seed S] [--plot FILE.svg]\n"
    "      trains MMap-MuZero on an instance (self-play, learner written as a Tempo program) and\n"
    "      saves the network; the search plans on the game with the networks' prior and value\n"
    "      (default) or in the learned latent space with the dynamics and reward networks\n"
    "  tempo mmap extract --out FILE [--algo reinforce|a2c|ppo] [--env E] [--obs-shape 3x16x16]\n"
    "      [--iterations N] [--num-envs N] [--steps T] [--seed S] [--capacity F]\n"
    "      traces a few iterations of an RL program and saves its instance; the fast memory is\n"
    "      F (default 0.5) times the program's device peak\n"
    "  tempo mmap generate --out FILE [--buffers N] [--pressure P] [--seed S]\n"
    "      saves a synthetic instance\n"
    "  tempo mmap solve FILE [--seconds S] [--seed S] [--simulations N] [--agent NET]\n"
    "      runs the solvers on an instance file; MCTS makes up to N simulations per move\n"
    "      (default 400) within the S seconds; with a network from `tempo mmap train`, the\n"
    "      agent plays too\n";

using cli::Args;

// The value of integer option `flag` (dflt when absent), which must be positive.
int64_t positive_int(const Args& a, const char* flag, int64_t dflt) {
  if (!a.has(flag)) return dflt;
  const int64_t v = cli::parse_int(flag, a.get(flag, ""));
  if (v < 1) throw UserError(cat(flag, " expects a positive integer, got ", v));
  return v;
}

std::vector<int64_t> parse_shape(const std::string& s) {
  std::vector<int64_t> out;
  size_t p = 0;
  while (p <= s.size()) {
    size_t q = s.find('x', p);
    if (q == std::string::npos) q = s.size();
    int64_t v = cli::parse_int("--obs-shape", s.substr(p, q - p));
    if (v < 1)
      throw UserError(cat("--obs-shape expects positive sizes like 3x16x16, got '", s, "'"));
    out.push_back(v);
    p = q + 1;
  }
  return out;
}

double positive_seconds(const std::string& s, const char* flag = "--seconds") {
  const double v = cli::parse_double(flag, s);
  if (!(v > 0)) throw UserError(cat(flag, " expects a positive number, got '", s, "'"));
  return v;
}

struct Row {
  std::string name;
  size_t buffers;
  int64_t steps;
  double total, random, evolution, heuristic, mcts;
  double heuristic_seconds, mcts_seconds;
  bool random_lost;  // every random game was lost (an alias group left without a place)
  bool agent = false;
  double muzero = 0, prod = 0, train_seconds = 0;
};

// MMap-MuZero trained on each instance within a time budget (or a given network).
struct AgentSetup {
  bool enabled = false;
  double train_seconds = 20;
  Planning planning = Planning::Game;
  bool hint = true;
  std::shared_ptr<MuZeroNetwork> network;  // set: play it instead of training
};

Planning parse_planning(const std::string& s) {
  if (s == "latent") return Planning::Latent;
  if (s == "game") return Planning::Game;
  throw UserError(cat("--planning expects latent or game, got '", s, "'"));
}

// Training options sized to a wall-time budget: self-play games dominate (their cost grows with
// the buffers and simulations), so the rounds are what fits, between 2 and 100.
MuZeroOptions budget_options(const Instance& inst, double seconds, Planning planning, bool hint,
                             uint64_t seed) {
  MuZeroOptions o;
  o.planning = planning;
  o.heuristic_hint = hint;
  o.seed = seed;
  o.simulations = 16;
  o.games_per_round = 2;
  o.steps_per_round = 50;
  const double round = static_cast<double>(o.games_per_round * o.simulations) *
                           static_cast<double>(inst.buffers.size()) * 25e-6 +
                       static_cast<double>(o.steps_per_round) * 4e-3;
  o.rounds = std::clamp<int64_t>(static_cast<int64_t>(seconds / round), 2, 100);
  o.max_seconds = seconds;
  return o;
}

Row run_baselines(const std::shared_ptr<const Instance>& inst, double seconds, uint64_t seed,
                  int64_t simulations = 400, const AgentSetup& agent = {},
                  std::vector<CurvePoint>* curve = nullptr) {
  Row r{inst->name, inst->buffers.size(), inst->steps(), inst->total_benefit(), 0, 0, 0, 0, 0, 0,
        false};
  const SearchResult random = random_search(inst, seconds, seed);
  r.random = random.best_return;
  r.random_lost = random.lost;
  r.evolution = evolutionary_search(inst, seconds, seed).best_return;
  const SearchResult h = heuristic(inst);
  r.heuristic = h.best_return;
  r.heuristic_seconds = h.seconds;
  MctsOptions m;
  m.simulations = simulations;
  m.seconds = seconds;
  m.seed = seed;
  const MctsResult mc = search_game(inst, m);
  r.mcts = mc.best_return;
  r.mcts_seconds = mc.seconds;
  if (!agent.enabled) return r;
  std::shared_ptr<MuZeroNetwork> net = agent.network;
  if (!net) {
    const MuZeroTraining t =
        train_muzero(inst, budget_options(*inst, agent.train_seconds, agent.planning, agent.hint, seed));
    net = t.network;
    r.train_seconds = t.seconds;
    if (curve) *curve = t.curve;
  }
  const MctsResult mz = play_muzero(inst, net, m);
  r.agent = true;
  r.muzero = mz.best_return;
  r.prod = std::max(r.muzero, r.heuristic);
  return r;
}

void print_header(bool agent) {
  std::printf("%-30s %7s %6s %11s %11s %11s %11s %7s %11s %7s %9s %9s", "instance", "buffers",
              "steps", "upper bound", "random", "evolution", "heuristic", "heur s", "mcts",
              "mcts s", "evo/heur", "mcts/heur");
  if (agent) std::printf(" %11s %7s %9s %9s", "muzero", "train s", "mz/heur", "prod/heur");
  std::printf("\n");
}

void print_row(const Row& r) {
  auto rel = [&](double v) { return r.heuristic > 0 ? 100.0 * (v / r.heuristic - 1.0) : 0.0; };
  std::printf("%-30s %7zu %6lld %11.1f %10.1f%s %11.1f %11.1f %7.3f %11.1f %7.2f %+8.2f%% %+8.2f%%",
              r.name.c_str(), r.buffers, static_cast<long long>(r.steps), r.total, r.random,
              r.random_lost ? "*" : " ", r.evolution, r.heuristic, r.heuristic_seconds, r.mcts,
              r.mcts_seconds, rel(r.evolution), rel(r.mcts));
  if (r.agent)
    std::printf(" %11.1f %7.1f %+8.2f%% %+8.2f%%", r.muzero, r.train_seconds, rel(r.muzero),
                rel(r.prod));
  std::printf("\n");
  std::fflush(stdout);
}

int bench(const Args& a) {
  const bool quick = a.has("--quick");
  const double seconds =
      a.has("--seconds") ? positive_seconds(a.get("--seconds", "1")) : (quick ? 0.1 : 1.0);
  AgentSetup agent;
  agent.enabled = !a.has("--no-agent");
  agent.train_seconds = a.has("--train-seconds")
                            ? positive_seconds(a.get("--train-seconds", ""), "--train-seconds")
                            : (quick ? 2.0 : 20.0);
  agent.planning = parse_planning(a.get("--planning", "game"));
  agent.hint = !a.has("--no-hint");
  const std::string plot = a.get("--plot", "");
  std::printf(
      "MMapGame solvers: best return (sum of benefits placed in fast memory) per "
      "instance;\nrandom legal play, evolutionary search, MCTS (up to 400 simulations per "
      "move) and MMap-MuZero get %.2f s of wall time each, the heuristic runs once.\n",
      seconds);
  if (agent.enabled)
    std::printf(
        "MMap-MuZero trains on each instance first (about %.0f s; planning %s%s), then plays "
        "with the same search budget; prod = the better of it and the heuristic.\n",
        agent.train_seconds, agent.planning == Planning::Latent ? "in latent space" : "on the game",
        agent.hint ? "; it sees the heuristic's choice" : "");
  std::vector<std::shared_ptr<const Instance>> instances;
  for (int64_t n : {16, 32, 64, 128, 256, 512, 1024, 2048})
    for (double pressure : {1.5, 3.0}) {
      SyntheticOptions o;
      o.buffers = n;
      o.pressure = pressure;
      o.seed = static_cast<uint64_t>(n);
      instances.push_back(std::make_shared<const Instance>(generate_instance(o)));
    }
  if (!a.has("--no-extracted")) {
    const CopyModel copy = measure_copy_model();
    std::printf(
        "extracted instances: benefit = demand = copy time on this machine (%s), supply "
        "= measured statement times (us); fast memory = half the device peak\n",
        copy.str().c_str());
    std::vector<RlProgram> programs;
    for (int64_t side : {16, 32, 64}) {
      RlProgram p;
      p.obs_shape = {3, side, side};
      programs.push_back(p);
    }
    for (int64_t side : {16, 32}) {
      RlProgram p;
      p.algo = "ppo";
      p.obs_shape = {3, side, side};
      programs.push_back(p);
    }
    for (const RlProgram& p : programs)
      instances.push_back(std::make_shared<const Instance>(extract_rl_instance(p, copy)));
    for (const char* attention : {"causal", "window:8"}) {
      LlmProgram p;
      p.attention = attention;
      p.tokens = quick ? 16 : 48;  // 15k buffers at 48 tokens: minutes of search
      instances.push_back(std::make_shared<const Instance>(extract_llm_instance(p, copy)));
    }
  }
  std::printf("\n");
  print_header(agent.enabled);
  // Per solver: the sum of relative returns over the heuristic and the instances improved.
  struct Tally {
    const char* name;
    double sum = 0;
    int improved = 0;
    void add(double v, double heuristic) {
      sum += v / heuristic - 1.0;
      improved += v > heuristic * (1 + 1e-9);
    }
  };
  Tally evo{"evolution"}, mcts{"mcts"}, mz{"mmap-muzero"}, prod{"mmap-muzero-prod"};
  int counted = 0;
  std::vector<PlotSeries> curves;
  const size_t plotted = 6;  // instances drawn, spread over the set
  for (size_t k = 0; k < instances.size(); ++k) {
    const auto& inst = instances[k];
    std::vector<CurvePoint> curve;
    Row r = run_baselines(inst, seconds, 1, 400, agent, &curve);
    print_row(r);
    if (r.heuristic > 0) {
      evo.add(r.evolution, r.heuristic);
      mcts.add(r.mcts, r.heuristic);
      mz.add(r.muzero, r.heuristic);
      prod.add(r.prod, r.heuristic);
      ++counted;
      if (k % std::max<size_t>(1, instances.size() / plotted) == 0 && !curve.empty()) {
        PlotSeries s{inst->name, {}};
        for (const CurvePoint& c : curve)
          s.points.emplace_back(c.seconds, c.best_return / r.heuristic);
        curves.push_back(std::move(s));
      }
    }
  }
  std::printf("\n");
  for (const Tally* t : {&evo, &mcts, &mz, &prod}) {
    if (!agent.enabled && (t == &mz || t == &prod)) continue;
    std::printf("%s vs heuristic: mean %+.2f%%, better on %d of %d instances\n", t->name,
                counted ? 100.0 * t->sum / counted : 0.0, t->improved, counted);
  }
  if (!plot.empty()) {
    nn::write_atomic(plot, line_plot_svg("MMap-MuZero self-play: best return / heuristic",
                                         "training time (s)", "return / heuristic", curves));
    std::printf("plot: %s\n", plot.c_str());
  }
  std::printf(
      "upper bound: every benefit; *: every random game was lost (an alias group left "
      "without a place: return 0)\n");
  return 0;
}

int extract(const Args& a) {
  const std::string out = a.get("--out", "");
  if (out.empty()) throw UserError("tempo mmap extract needs --out FILE");
  RlProgram p;
  p.algo = a.get("--algo", p.algo);
  p.env = a.get("--env", p.env);
  if (a.has("--obs-shape")) p.obs_shape = parse_shape(a.get("--obs-shape", ""));
  p.iterations = positive_int(a, "--iterations", p.iterations);
  p.num_envs = positive_int(a, "--num-envs", p.num_envs);
  p.steps = positive_int(a, "--steps", p.steps);
  p.seed = static_cast<uint64_t>(positive_int(a, "--seed", static_cast<int64_t>(p.seed)));
  TraceOptions t;
  if (a.has("--capacity")) {
    t.capacity_fraction = cli::parse_double("--capacity", a.get("--capacity", ""));
    if (t.capacity_fraction <= 0)
      throw UserError(
          cat("--capacity expects a fraction > 0 of the device peak, got ", t.capacity_fraction));
  }
  const CopyModel copy = measure_copy_model();
  TraceSummary s;
  Instance inst = extract_rl_instance(p, copy, t, &s);
  save_instance(inst, out);
  std::printf(
      "%s: %zu buffers of %lld tensors over %lld steps; fast memory %lld of a %lld-byte "
      "peak; %lld tensors larger than it left out; copies: %s\n",
      out.c_str(), inst.buffers.size(), static_cast<long long>(s.tensors),
      static_cast<long long>(inst.steps()), static_cast<long long>(inst.capacity),
      static_cast<long long>(s.peak_bytes), static_cast<long long>(s.too_large),
      copy.str().c_str());
  return 0;
}

int generate(const Args& a) {
  const std::string out = a.get("--out", "");
  if (out.empty()) throw UserError("tempo mmap generate needs --out FILE");
  SyntheticOptions o;
  if (a.has("--buffers")) o.buffers = cli::parse_int("--buffers", a.get("--buffers", ""));
  if (a.has("--pressure")) o.pressure = cli::parse_double("--pressure", a.get("--pressure", ""));
  if (a.has("--seed"))
    o.seed = static_cast<uint64_t>(cli::parse_int("--seed", a.get("--seed", "")));
  Instance inst = generate_instance(o);
  save_instance(inst, out);
  std::printf("%s: %zu buffers over %lld steps, capacity %lld\n", out.c_str(), inst.buffers.size(),
              static_cast<long long>(inst.steps()), static_cast<long long>(inst.capacity));
  return 0;
}

int solve(const Args& a) {
  if (a.positional.size() != 1) throw UserError("tempo mmap solve needs one instance FILE");
  auto inst = std::make_shared<const Instance>(load_instance(a.positional[0]));
  const double seconds = positive_seconds(a.get("--seconds", "1"));
  const uint64_t seed = static_cast<uint64_t>(cli::parse_int("--seed", a.get("--seed", "1")));
  const int64_t simulations = positive_int(a, "--simulations", 400);
  AgentSetup agent;
  if (a.has("--agent")) {
    agent.enabled = true;
    agent.network = std::make_shared<MuZeroNetwork>(MuZeroNetwork::load(a.get("--agent", "")));
  }
  std::printf("%.2f s per search\n", seconds);
  print_header(agent.enabled);
  print_row(run_baselines(inst, seconds, seed, simulations, agent));
  return 0;
}

int train(const Args& a) {
  if (a.positional.size() != 1) throw UserError("tempo mmap train needs one instance FILE");
  const std::string out = a.get("--out", "");
  if (out.empty()) throw UserError("tempo mmap train needs --out NET (the network file)");
  auto inst = std::make_shared<const Instance>(load_instance(a.positional[0]));
  const uint64_t seed = static_cast<uint64_t>(cli::parse_int("--seed", a.get("--seed", "1")));
  MuZeroOptions o =
      budget_options(*inst, positive_seconds(a.get("--train-seconds", "20"), "--train-seconds"),
                     parse_planning(a.get("--planning", "game")), !a.has("--no-hint"), seed);
  o.rounds = positive_int(a, "--rounds", o.rounds);
  o.simulations = positive_int(a, "--simulations", o.simulations);
  const double heuristic_return = heuristic(inst).best_return;
  std::printf(
      "%s: %zu buffers; heuristic %.1f; %lld rounds of %lld self-play games and %lld "
      "learner steps\n",
      inst->name.c_str(), inst->buffers.size(), heuristic_return, static_cast<long long>(o.rounds),
      static_cast<long long>(o.games_per_round), static_cast<long long>(o.steps_per_round));
  const MuZeroTraining t = train_muzero(inst, o, [](const MuZeroTraining& r) {
    const CurvePoint& c = r.curve.back();
    std::printf("  %6.1f s  game %3lld  return %.1f  best %.1f\n", c.seconds,
                static_cast<long long>(r.games), c.game_return, c.best_return);
    std::fflush(stdout);
  });
  std::printf("learner loss by round:");
  for (double l : t.round_loss) std::printf(" %.3f", l);
  std::printf("\n");
  t.network->save(out);
  MctsOptions m;
  m.simulations = 400;
  m.seconds = 1.0;
  const MctsResult r = play_muzero(inst, t.network, m);
  std::printf("saved %s; the agent plays %.1f (%+.2f%% vs the heuristic) in %.2f s\n", out.c_str(),
              r.best_return,
              heuristic_return > 0 ? 100.0 * (r.best_return / heuristic_return - 1) : 0.0,
              r.seconds);
  if (a.has("--plot")) {
    PlotSeries games{"self-play game", {}}, best{"best so far", {}};
    for (const CurvePoint& c : t.curve) {
      games.points.emplace_back(c.seconds, c.game_return);
      best.points.emplace_back(c.seconds, c.best_return);
    }
    PlotSeries h{"heuristic", {{0, heuristic_return}, {t.seconds, heuristic_return}}};
    nn::write_atomic(a.get("--plot", ""),
                     line_plot_svg(cat("MMap-MuZero on ", inst->name), "training time (s)",
                                   "return", {games, best, h}));
  }
  return 0;
}

}  // namespace

int run_mmap_command(int argc, char** argv) {
  return cli::run_subcommand(
      argc, argv, "mmap", kUsage,
      {{"bench",
        {"--seconds", "--train-seconds", "--planning", "--plot"},
        {"--quick", "--no-extracted", "--no-agent", "--no-hint"},
        bench},
       {"extract",
        {"--out", "--algo", "--env", "--obs-shape", "--iterations", "--num-envs", "--steps",
         "--seed", "--capacity"},
        {},
        extract},
       {"generate", {"--out", "--buffers", "--pressure", "--seed"}, {}, generate},
       {"solve", {"--seconds", "--seed", "--simulations", "--agent"}, {}, solve},
       {"train",
        {"--out", "--train-seconds", "--rounds", "--simulations", "--planning", "--seed",
         "--plot"},
        {"--no-hint"},
        train}});
}
