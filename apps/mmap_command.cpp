// `tempo mmap`: memory-mapping instances (MMapGame, src/mmap) and the baselines that play them.
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
#include "parse_args.h"
#include "util/error.h"

namespace {

using namespace tempo;
using namespace tempo::mmap;

const char* kUsage =
    "usage: tempo mmap <bench|extract|generate|solve> [options]\n"
    "Memory placement as the MMapGame (which buffers live in fast memory, when, at which\n"
    "offset) and its solvers: random legal play, evolutionary search, an XLA-style heuristic,\n"
    "and MCTS (MuZero-style search planning with the game itself, Drop-backup).\n\n"
    "  tempo mmap bench [--quick] [--seconds S] [--no-extracted]\n"
    "      runs the solvers on 16 synthetic instances (16 to 2048 buffers, two memory\n"
    "      pressures) and 5 traced from Tempo's RL programs; S seconds per search and instance\n"
    "      (default 1, --quick 0.1) for random play, evolution and MCTS\n"
    "  tempo mmap extract --out FILE [--algo reinforce|a2c|ppo] [--env E] [--obs-shape 3x16x16]\n"
    "      [--iterations N] [--num-envs N] [--steps T] [--seed S] [--capacity F]\n"
    "      traces a few iterations of an RL program and saves its instance; the fast memory is\n"
    "      F (default 0.5) times the program's device peak\n"
    "  tempo mmap generate --out FILE [--buffers N] [--pressure P] [--seed S]\n"
    "      saves a synthetic instance\n"
    "  tempo mmap solve FILE [--seconds S] [--seed S] [--simulations N]\n"
    "      runs the solvers on an instance file; MCTS makes up to N simulations per move\n"
    "      (default 400) within the S seconds\n";

struct Args {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> options;
  bool has(const std::string& k) const {
    for (const auto& [a, b] : options)
      if (a == k) return true;
    return false;
  }
  std::string get(const std::string& k, const std::string& dflt) const {
    for (const auto& [a, b] : options)
      if (a == k) return b;
    return dflt;
  }
};

// Flags in `flags` take no value; every other --option takes one.
Args parse(int argc, char** argv, int first, const std::vector<std::string>& valued,
           const std::vector<std::string>& flags) {
  Args a;
  for (int k = first; k < argc; ++k) {
    std::string s = argv[k];
    if (s.rfind("--", 0) != 0) {
      a.positional.push_back(s);
      continue;
    }
    bool flag = false, value = false;
    for (const auto& f : flags) flag |= f == s;
    for (const auto& v : valued) value |= v == s;
    if (flag) {
      a.options.emplace_back(s, "");
    } else if (value) {
      if (k + 1 >= argc) throw UserError(cat(s, " needs a value"));
      a.options.emplace_back(s, argv[++k]);
    } else {
      throw UserError(cat("unknown option ", s, " (try `tempo mmap --help`)"));
    }
  }
  return a;
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

double positive_seconds(const std::string& s) {
  double v = cli::parse_double("--seconds", s);
  if (v <= 0) throw UserError(cat("--seconds expects a positive number, got '", s, "'"));
  return v;
}

struct Row {
  std::string name;
  size_t buffers;
  int64_t steps;
  double total, random, evolution, heuristic, mcts;
  double heuristic_seconds, mcts_seconds;
  bool random_lost;  // every random game was lost (an alias group left without a place)
};

Row run_baselines(const std::shared_ptr<const Instance>& inst, double seconds, uint64_t seed,
                  int64_t simulations = 400) {
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
  return r;
}

void print_header() {
  std::printf("%-30s %7s %6s %11s %11s %11s %11s %7s %11s %7s %9s %9s\n", "instance", "buffers",
              "steps", "upper bound", "random", "evolution", "heuristic", "heur s", "mcts",
              "mcts s", "evo/heur", "mcts/heur");
}

void print_row(const Row& r) {
  auto rel = [&](double v) { return r.heuristic > 0 ? 100.0 * (v / r.heuristic - 1.0) : 0.0; };
  std::printf(
      "%-30s %7zu %6lld %11.1f %10.1f%s %11.1f %11.1f %7.3f %11.1f %7.2f %+8.2f%% %+8.2f%%\n",
      r.name.c_str(), r.buffers, static_cast<long long>(r.steps), r.total, r.random,
      r.random_lost ? "*" : " ", r.evolution, r.heuristic, r.heuristic_seconds, r.mcts,
      r.mcts_seconds, rel(r.evolution), rel(r.mcts));
  std::fflush(stdout);
}

int bench(const Args& a) {
  const bool quick = a.has("--quick");
  const double seconds =
      a.has("--seconds") ? positive_seconds(a.get("--seconds", "1")) : (quick ? 0.1 : 1.0);
  std::printf(
      "MMapGame solvers: best return (sum of benefits placed in fast memory) per "
      "instance;\nrandom legal play, evolutionary search and MCTS (up to 400 simulations per "
      "move) get %.2f s of wall time each, the heuristic runs once.\n",
      seconds);
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
  }
  std::printf("\n");
  print_header();
  double sum_improvement = 0, sum_mcts = 0;
  int improved = 0, mcts_improved = 0, counted = 0;
  for (const auto& inst : instances) {
    Row r = run_baselines(inst, seconds, 1);
    print_row(r);
    if (r.heuristic > 0) {
      sum_improvement += r.evolution / r.heuristic - 1.0;
      improved += r.evolution > r.heuristic * (1 + 1e-9);
      sum_mcts += r.mcts / r.heuristic - 1.0;
      mcts_improved += r.mcts > r.heuristic * (1 + 1e-9);
      ++counted;
    }
  }
  std::printf("\nevolution vs heuristic: mean %+.2f%%, better on %d of %d instances\n",
              counted ? 100.0 * sum_improvement / counted : 0.0, improved, counted);
  std::printf("mcts vs heuristic: mean %+.2f%%, better on %d of %d instances\n",
              counted ? 100.0 * sum_mcts / counted : 0.0, mcts_improved, counted);
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
  auto positive = [&](const char* flag, int64_t dflt) {
    if (!a.has(flag)) return dflt;
    int64_t v = cli::parse_int(flag, a.get(flag, ""));
    if (v < 1) throw UserError(cat(flag, " expects a positive integer, got ", v));
    return v;
  };
  p.iterations = positive("--iterations", p.iterations);
  p.num_envs = positive("--num-envs", p.num_envs);
  p.steps = positive("--steps", p.steps);
  p.seed = static_cast<uint64_t>(positive("--seed", static_cast<int64_t>(p.seed)));
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
  int64_t simulations = 400;
  if (a.has("--simulations")) {
    simulations = cli::parse_int("--simulations", a.get("--simulations", ""));
    if (simulations < 1)
      throw UserError(cat("--simulations expects a positive integer, got ", simulations));
  }
  std::printf("%.2f s per search\n", seconds);
  print_header();
  print_row(run_baselines(inst, seconds, seed, simulations));
  return 0;
}

}  // namespace

int run_mmap_command(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string sub = argv[1];
  for (int k = 2; k < argc; ++k)
    if (std::string(argv[k]) == "--help" || std::string(argv[k]) == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  if (sub == "bench")
    return bench(parse(argc, argv, 2, {"--seconds"}, {"--quick", "--no-extracted"}));
  if (sub == "extract")
    return extract(parse(argc, argv, 2,
                         {"--out", "--algo", "--env", "--obs-shape", "--iterations", "--num-envs",
                          "--steps", "--seed", "--capacity"},
                         {}));
  if (sub == "generate")
    return generate(parse(argc, argv, 2, {"--out", "--buffers", "--pressure", "--seed"}, {}));
  if (sub == "solve")
    return solve(parse(argc, argv, 2, {"--seconds", "--seed", "--simulations"}, {}));
  throw UserError(cat("unknown mmap command '", sub, "' (bench, extract, generate or solve)"));
}
