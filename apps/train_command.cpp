// `tempo train <ppo|a2c|reinforce|dqn|sac|td3> --env NAME ...`: trains a policy on an
// environment with a recurrent-tensor RL program, writes its learning curve as it goes and
// saves the trained policy (--save DIR; `tempo eval --load DIR` runs it).
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "driver/compile.h"
#include "loops/schedule_model.h"
#include "mmap/placement.h"
#include "nn/safetensors.h"
#include "rewrite/program_rewrites.h"
#include "parse_args.h"
#include "rl/algorithms/algorithms.h"
#include "rl/algorithms/checkpoint.h"
#include "rl/algorithms/saved_policy.h"
#include "util/error.h"
#include "util/plot.h"

namespace {

using tempo::cat;
using tempo::UserError;
using tempo::cli::parse_double;
using tempo::cli::parse_int;

// The usage's first lines; each option's own lines follow (Option::help).
const char* kUsageHead =
    "usage: tempo train <ppo|a2c|reinforce|dqn|sac|td3> [--env NAME] [--seed S] [--iterations I]\n"
    "                   [--num-envs N] [--steps T] [--lr X] [--out DIR] [--save DIR]\n"
    "                   [--save-every K] [--resume DIR] [--verbose]\n";

// "3x64x64" -> {3, 64, 64} (separator 'x'), "120,84" -> {120, 84} (',').
std::vector<int64_t> parse_ints(const std::string& flag, const std::string& s, char separator) {
  std::vector<int64_t> out;
  size_t start = 0;
  for (size_t x = s.find(separator);; x = s.find(separator, start)) {
    out.push_back(parse_int(flag, s.substr(start, x == std::string::npos ? x : x - start)));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return out;
}

// --hidden W (every hidden layer) or W,W,... (the layers' widths).
void set_widths(tempo::rl::TrainConfig& cfg, const std::string& flag, const std::string& s) {
  std::vector<int64_t> widths = parse_ints(flag, s, ',');
  if (widths.size() == 1)
    cfg.set_hidden_width(widths[0]);
  else
    cfg.hidden = std::move(widths);
}

std::string fmt(double v, int prec = 2) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(prec);
  s << v;
  return s.str();
}

std::string curve_svg(const std::vector<tempo::rl::CurvePoint>& curve, const std::string& title) {
  tempo::PlotSeries s;
  for (const auto& p : curve)
    s.points.emplace_back(static_cast<double>(p.env_steps), p.mean_return);
  return tempo::line_plot_svg(title, "environment steps", "mean episodic return", {s});
}

// DIR/curve.csv and DIR/curve.svg for the curve so far.
void write_curve(const std::string& out, const std::vector<tempo::rl::CurvePoint>& curve,
                 const std::string& title) {
  std::ostringstream csv;
  csv << "env_steps,mean_return\n";
  for (const auto& p : curve)
    if (!std::isnan(p.mean_return)) csv << p.env_steps << "," << fmt(p.mean_return, 4) << "\n";
  tempo::nn::write_atomic((std::filesystem::path(out) / "curve.csv").string(), csv.str(), "curve");
  tempo::nn::write_atomic((std::filesystem::path(out) / "curve.svg").string(),
                          curve_svg(curve, title), "plot");
}

// What the command line sets: the training configuration and the output directory.
struct Args {
  tempo::rl::TrainConfig cfg;
  std::string out;
  std::string swap_policy = "largest";
  std::string rewrites = "none";
};

// "t=16" -> {"t", 16}.
std::pair<std::string, int64_t> parse_tile(const std::string& flag, const std::string& s) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UserError(cat(flag, " expects DIM=SIZE such as t=16, got '", s, "'"));
  return {s.substr(0, eq), parse_int(flag, s.substr(eq + 1))};
}

// Every option: its flag, whether it takes a value, how it sets the arguments (`set` gets the flag
// for errors) and its lines of the usage (indented there), in usage order (empty: covered by the
// lines of the option before it or by the usage's first lines).
struct Option {
  const char* flag;
  bool takes_value;
  std::function<void(Args&, const std::string& flag, const std::string& value)> set;
  const char* help;
};

const std::vector<Option>& all_options() {
  using A = Args;
  using S = const std::string&;
  static const std::vector<Option> options = {
      {"--env", true, [](A& a, S, S v) { a.cfg.env = v; },
       "--env         CartPole-v1 (default), Pendulum-v1, Acrobot-v1, MountainCar-v0,\n"
       "              MountainCarContinuous-v0, synthetic; built with MuJoCo also\n"
       "              HalfCheetah-v5, Hopper-v5, Walker2d-v5, Ant-v5, Humanoid-v5\n"},
      {"--obs-shape", true,
       [](A& a, S f, S v) { a.cfg.env_options.obs_shape = parse_ints(f, v, 'x'); },
       "--obs-shape CxHxW, --episode-length L  the synthetic env (default 3x4x4, 250)\n"},
      {"--episode-length", true,
       [](A& a, S f, S v) { a.cfg.env_options.episode_length = parse_int(f, v); }, ""},
      {"--iterations", true, [](A& a, S f, S v) { a.cfg.iterations = parse_int(f, v); },
       "--iterations  rollouts (default: ppo 976, a2c and reinforce 500, dqn 50000,\n"
       "              sac and td3 20000)\n"},
      {"--num-envs", true, [](A& a, S f, S v) { a.cfg.num_envs = parse_int(f, v); },
       "--num-envs    environments stepped together (default: ppo 4, dqn, sac and td3 1,\n"
       "              others 8)\n"},
      {"--steps", true, [](A& a, S f, S v) { a.cfg.steps = parse_int(f, v); },
       "--steps       timesteps per rollout (default: ppo 128, dqn 10, sac and td3 1,\n"
       "              others 64)\n"},
      {"--lr", true, [](A& a, S f, S v) { a.cfg.lr = parse_double(f, v); },
       "--lr          Adam learning rate (default: ppo and dqn 2.5e-4, sac's critics 1e-3,\n"
       "              td3's 3e-4, others 2.5e-3), decayed linearly to 0 (dqn, sac, td3:\n"
       "              constant);\n"
       "              --constant-lr keeps it constant\n"},
      {"--policy-lr", true, [](A& a, S f, S v) { a.cfg.policy_lr = parse_double(f, v); },
       "--policy-lr, --tau  sac, td3: the actor's learning rate and the targets' Polyak\n"
       "              factor (3e-4, 0.005)\n"},
      {"--tau", true, [](A& a, S f, S v) { a.cfg.tau = parse_double(f, v); }, ""},
      {"--exploration-noise", true,
       [](A& a, S f, S v) { a.cfg.exploration_noise = parse_double(f, v); },
       "--exploration-noise, --policy-noise, --noise-clip  td3: the acting noise's and the\n"
       "              target actions' noise's std in action half-widths, the latter\n"
       "              clipped to +-noise-clip (0.1, 0.2, 0.5)\n"},
      {"--policy-noise", true, [](A& a, S f, S v) { a.cfg.policy_noise = parse_double(f, v); },
       ""},
      {"--noise-clip", true, [](A& a, S f, S v) { a.cfg.noise_clip = parse_double(f, v); }, ""},
      {"--policy-frequency", true,
       [](A& a, S f, S v) { a.cfg.policy_every = parse_int(f, v); },
       "--policy-frequency K  td3: the actor and targets update every K-th step (2)\n"},
      {"--constant-lr", false, [](A& a, S, S) { a.cfg.lr_decay = false; }, ""},
      {"--epochs", true, [](A& a, S f, S v) { a.cfg.epochs = parse_int(f, v); },
       "--epochs, --minibatches  PPO updates per rollout (default 4 x 4)\n"},
      {"--minibatches", true, [](A& a, S f, S v) { a.cfg.minibatches = parse_int(f, v); }, ""},
      {"--buffer-size", true, [](A& a, S f, S v) { a.cfg.buffer_size = parse_int(f, v); },
       "--buffer-size, --batch-size  dqn, sac, td3: replay buffer transitions and\n"
       "              minibatch (dqn 10000, 128; sac, td3 1000000, 256)\n"},
      {"--batch-size", true, [](A& a, S f, S v) { a.cfg.batch_size = parse_int(f, v); }, ""},
      {"--learning-starts", true,
       [](A& a, S f, S v) { a.cfg.learning_starts = parse_int(f, v); },
       "--learning-starts, --target-every  env steps before the first update (dqn 10000,\n"
       "              sac, td3 5000) and between dqn's target network copies (500)\n"},
      {"--target-every", true, [](A& a, S f, S v) { a.cfg.target_every = parse_int(f, v); }, ""},
      {"--no-warm-up", false, [](A& a, S, S) { a.cfg.warm_up = false; },
       "--no-warm-up  sac, td3: act before learning starts in the learning program, its\n"
       "              updates computed and discarded (default: a program that only acts)\n"},
      {"--eps-start", true, [](A& a, S f, S v) { a.cfg.eps_start = parse_double(f, v); },
       "--eps-start, --eps-end, --exploration-fraction  dqn: epsilon linear from start to\n"
       "              end over that fraction of the run (1, 0.05, 0.5)\n"},
      {"--eps-end", true, [](A& a, S f, S v) { a.cfg.eps_end = parse_double(f, v); }, ""},
      {"--exploration-fraction", true,
       [](A& a, S f, S v) { a.cfg.exploration_fraction = parse_double(f, v); }, ""},
      {"--n-step", true, [](A& a, S f, S v) { a.cfg.n_step = parse_int(f, v); },
       "--n-step N    reinforce: n-step instead of Monte-Carlo returns; a2c: n-step\n"
       "              advantages per step instead of GAE (interleaves with --proximity)\n"},
      {"--per-step", false, [](A& a, S, S) { a.cfg.per_step = true; },
       "--per-step    reinforce: learn from the acting forward pass, per timestep (default)\n"},
      {"--recompute", false, [](A& a, S, S) { a.cfg.per_step = false; },
       "--recompute   reinforce: recompute the forward pass over the rollout to learn\n"},
      {"--no-normalize", false, [](A& a, S, S) { a.cfg.normalize_returns = false; },
       "--no-normalize  reinforce: do not normalize returns over the rollout\n"},
      {"--hidden", true, [](A& a, S f, S v) { set_widths(a.cfg, f, v); },
       "--hidden W[,W...], --layers N  every hidden layer W wide, or the layers' widths;\n"
       "              N layers (default: 64 x 2, tanh; dqn 120, 84; sac, td3 256 x 2)\n"},
      {"--layers", true, [](A& a, S f, S v) { a.cfg.set_hidden_layers(parse_int(f, v)); }, ""},
      {"--proximity", false, [](A& a, S, S) { a.cfg.compile.proximity = true; },
       "--proximity   schedule for memory: proximity constraints, and what reads the acting\n"
       "              loop a bounded number of steps ahead (n-step learning) interleaves\n"
       "              with it, freeing each observation n steps later (slower to compile)\n"},
      {"--no-pass", true, [](A& a, S, S v) { a.cfg.compile.passes.set(v, false); },
       "--no-pass P   turn compiler pass P off (repeatable; 'all' for every pass):\n"
       "              simplify-indices, fold-constants, algebraic, cse, domain-reduction,\n"
       "              lifting, recompute (on under --memory-budget), vectorize, tiling,\n"
       "              dce, fusion\n"},
      {"--tile", true,
       [](A& a, S f, S v) { a.cfg.compile.passes.tiles.push_back(parse_tile(f, v)); },
       "--tile D=Z    run windows along temporal dim D (t: the rollout's steps) in tiles of\n"
       "              Z steps; reductions over them accumulate per tile (repeatable)\n"},
      {"--tile-above", true,
       [](A& a, S f, S v) { a.cfg.compile.passes.tile_above_bytes = parse_int(f, v) << 20; },
       "--tile-above N  tile every dimension whose windows can exceed N MiB\n"},
      {"--static-tiles", false, [](A& a, S, S) { a.cfg.compile.passes.static_tiles = true; },
       "--static-tiles  pad the first and last tile to the tile size (one shape per tile)\n"},
      {"--memory-budget", true,
       [](A& a, S f, S v) { a.cfg.compile.memory_budget = tempo::parse_bytes(v, f); },
       "--memory-budget SIZE  keep tracked device memory under SIZE (e.g. 512MiB, 2GiB): tiles\n"
       "              and swaps rollouts to host memory as needed, or fails naming what does\n"
       "              not fit\n"},
      {"--schedule-memory", true,
       [](A& a, S f, S v) { a.cfg.compile.schedule_memory_limit = tempo::parse_bytes(v, f); },
       "--schedule-memory SIZE  memory limit of isl's scheduling process (default: half the\n"
       "              machine's memory); past it, compiling fails naming the program's size\n"},
      {"--schedule-time", true,
       [](A& a, S f, S v) { a.cfg.compile.schedule_time_limit = parse_double(f, v); },
       "--schedule-time S  time limit of scheduling in seconds (default 300; 0: none)\n"},
      {"--swap-policy", true, [](A& a, S, S v) { a.swap_policy = v; },
       "--swap-policy P  what to swap under --memory-budget: largest (default: the largest\n"
       "              outputs read late), heuristic (the placement of the XLA-style MMapGame\n"
       "              heuristic on this program's traced instance) or learned:NET (the placement\n"
       "              of an MMap-MuZero network from `tempo mmap train` on that instance)\n"},
      {"--loop-schedules", true,
       [](A& a, S f, S v) { tempo::loops::set_loop_schedules(a.cfg.compile, v, f); },
       "--loop-schedules S  the order of generated loops over narrow rows: measured (default:\n"
       "              both orders compiled, each loop's first calls time them), rows, columns or\n"
       "              learned:FILE (a cost model from `tempo loops schedules`: no timing)\n"},
      {"--rewrites", true, [](A& a, S, S v) { a.rewrites = v; },
       "--rewrites R  graph rewrites of the optimized program: none (default), search (TASO's\n"
       "              search under costs measured on this machine), learned (RLFlow's PPO\n"
       "              agent) or world-model (its model-based agent), agents trained on each\n"
       "              region as it compiles, or learned:FILE (a PPO agent saved by `tempo\n"
       "              rewrite train`, played without training); a region is replaced only\n"
       "              where its cost falls 5% or more and its outputs are checked equal\n"},
      {"--memory-timeline", true, [](A& a, S, S v) { a.cfg.compile.memory_timeline = v; },
       "--memory-timeline FILE  write device and host bytes per executed statement (CSV) and\n"
       "              a plot of them (FILE with .svg)\n"},
      {"--dump", true, [](A& a, S, S v) { a.cfg.compile.dump = v; },
       "--dump STAGES  write these compile stages' results to stderr (validate, passes,\n"
       "              schedule, memory-plan, donation, backend, executor, or all)\n"},
      {"--gae-lambda", true, [](A& a, S f, S v) { a.cfg.gae_lambda = parse_double(f, v); },
       "--gae-lambda  advantage lambda (default 0.95; 1: full bootstrapped returns)\n"},
      {"--ent-coef", true, [](A& a, S f, S v) { a.cfg.ent_coef = parse_double(f, v); },
       "--ent-coef    entropy bonus (default 0.01)   --vf-coef  value loss weight (default 0.5)\n"},
      {"--vf-coef", true, [](A& a, S f, S v) { a.cfg.vf_coef = parse_double(f, v); }, ""},
      {"--default-init", false, [](A& a, S, S) { a.cfg.orthogonal_init = false; },
       "--default-init  PyTorch's default init instead of orthogonal weights\n"},
      {"--truncation", true, [](A& a, S, S v) { a.cfg.truncation = v; },
       "--truncation M  a2c and ppo at a time-limit truncation: bootstrap (default: the value\n"
       "              of the episode's last observation) or terminate (no value after it,\n"
       "              as CleanRL's ppo.py)\n"},
      {"--normalize-obs", false, [](A& a, S, S) { a.cfg.normalize_observations = true; },
       "--normalize-obs, --normalize-reward  observations standardized by their running mean\n"
       "              and variance, rewards scaled by the running deviation of their discounted\n"
       "              sums, both clipped to +-10 (Gymnasium's wrappers, as CleanRL's PPO on\n"
       "              MuJoCo); a saved policy keeps the observation statistics\n"},
      {"--normalize-reward", false, [](A& a, S, S) { a.cfg.normalize_rewards = true; }, ""},
      {"--out", true, [](A& a, S, S v) { a.out = v; },
       "--out DIR     writes DIR/curve.csv and DIR/curve.svg during the run (at most once a\n"
       "              second) and at the end\n"},
      {"--save", true, [](A& a, S, S v) { a.cfg.save_dir = v; },
       "--save DIR    saves the trained policy in DIR (policy.safetensors + policy.json) at the\n"
       "              end; `tempo eval --load DIR` runs it\n"},
      {"--save-every", true, [](A& a, S f, S v) { a.cfg.save_every = parse_int(f, v); },
       "--save-every K  also saves it every K iterations; each save also writes a training\n"
       "              checkpoint in DIR (checkpoint.json + checkpoint-N.safetensors: parameters,\n"
       "              optimizer state, environments, curve so far)\n"},
      {"--resume", true, [](A& a, S, S v) { a.cfg.resume_dir = v; },
       "--resume DIR  continue the run whose training checkpoint is in DIR, with the same flags,\n"
       "              to the result of the uninterrupted run; saves go on in DIR unless --save\n"
       "              names another\n"},
      {"--device", true, [](A& a, S, S v) { a.cfg.compile.device = v; },
       "--device D    where the program runs: cpu, cuda or cuda:N (default: $TEMPO_DEVICE, else\n"
       "              cuda on a machine with a GPU and a CUDA build, else cpu)\n"},
      {"--profile", false, [](A& a, S, S) { a.cfg.compile.profile = true; },
       "--profile     time every launch; print where the run's time went\n"},
      {"--seed", true,
       [](A& a, S f, S v) { a.cfg.compile.seed = static_cast<uint64_t>(parse_int(f, v)); }, ""},
      {"--verbose", false, [](A& a, S, S) { a.cfg.compile.verbose = true; }, ""},
      {"--whole-component", false, [](A& a, S, S) { a.cfg.compile.whole_component = true; }, ""},
      {"--no-clip", false, [](A& a, S, S) { a.cfg.max_grad_norm = 0; }, ""},
      {"--optimizer", true, [](A& a, S, S v) { a.cfg.optimizer = v; }, ""},
  };
  return options;
}

std::string usage() {
  std::string text = kUsageHead;
  for (const Option& o : all_options()) {
    std::istringstream lines(o.help);
    for (std::string line; std::getline(lines, line);) text += "  " + line + "\n";
  }
  return text;
}

// The command line: the algorithm (it picks the defaults, so options apply once it is known),
// then the options in order. Empty with --help (the usage printed).
std::optional<Args> parse_command_line(int argc, char** argv) {
  std::string algo;
  std::vector<std::pair<const Option*, std::string>> given;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (a == "--help" || a == "-h") {
      std::fputs(usage().c_str(), stdout);
      return std::nullopt;
    }
    if (a.rfind("--", 0) == 0) {
      const Option* opt = nullptr;
      for (const Option& o : all_options())
        if (a == o.flag) opt = &o;
      if (!opt) throw UserError(cat("unknown option ", a, " (try `tempo train --help`)"));
      if (opt->takes_value && k + 1 >= argc) throw UserError(cat(a, " expects a value"));
      given.emplace_back(opt, opt->takes_value ? argv[++k] : "");
    } else if (algo.empty()) {
      algo = a;
    } else {
      throw UserError(cat("unexpected argument '", a, "'"));
    }
  }
  if (algo.empty())
    throw UserError(
        "missing algorithm (ppo, a2c, reinforce, dqn, sac or td3); see `tempo train --help`");
  Args args{tempo::rl::TrainConfig::defaults(algo), ""};
  for (const auto& [opt, value] : given) opt->set(args, opt->flag, value);
  return args;
}

// --swap-policy heuristic or learned:NET: the placement an MMapGame solver finds on the
// program's traced instance becomes the compile's swap policy.
void place_swaps(tempo::rl::TrainConfig& cfg, const std::string& solver) {
  if (cfg.compile.memory_budget <= 0) throw UserError("--swap-policy needs --memory-budget");
  if (cfg.make_env) throw UserError("--swap-policy works with built-in environments only");
  tempo::mmap::RlProgram program;
  program.algo = cfg.algo;
  program.env = cfg.env;
  program.obs_shape = cfg.env_options.obs_shape;
  program.num_envs = cfg.num_envs;
  program.steps = cfg.steps;
  program.seed = cfg.compile.seed;
  const tempo::mmap::ProgramPlacement p = tempo::mmap::place_rl_program(program, solver);
  std::cout << "swap policy " << p.solver << ": placement of return " << fmt(p.game_return, 1)
            << " (heuristic " << fmt(p.heuristic_return, 1) << ") on the traced instance; "
            << p.slow_share.size() << " outputs placed; the largest: " << p.largest(3) << std::endl;
  cfg.compile.swap_policy = tempo::mmap::swap_policy(p);
}

// The run's summary after training.
void print_summary(std::ostream& print, const tempo::rl::TrainConfig& cfg,
                   const tempo::rl::TrainResult& res, int world) {
  print << "compile time: " << fmt(res.compile_seconds) << " s, run time: " << fmt(res.run_seconds)
        << " s, episodes: " << res.episodes << ", peak tensor memory: "
        << fmt(static_cast<double>(res.peak_tracked_bytes) / (1 << 20), 1) << " MiB"
        << (res.peak_host_bytes > 0
                ? " (+ " + fmt(static_cast<double>(res.peak_host_bytes) / (1 << 20), 1) +
                      " MiB swapped to host)"
                : std::string())
        << ", launches per iteration: " << res.launches / std::max<int64_t>(1, cfg.iterations)
        << "\n";
  print << res.profile;
  if (world > 1)
    print << "data parallel: " << world << " ranks, " << res.collectives
          << " collectives on rank 0 taking " << fmt(res.collective_seconds) << " s\n";
}

}  // namespace

int run_train_command(int argc, char** argv) {
  std::optional<Args> parsed = parse_command_line(argc, argv);
  if (!parsed) return 0;
  Args& args = *parsed;
  tempo::rl::TrainConfig& cfg = args.cfg;
  std::string out = args.out;
  tempo::rl::validate(cfg);
  // Started by `tempo launch` (or torchrun): one rank of a data-parallel job. Rank 0 alone
  // prints, writes the curve and saves the policy.
  int rank = 0, world = 1;
  if (tempo::DistributedConfig::launched()) {
    tempo::DistributedConfig dc = tempo::DistributedConfig::from_env();
    if (args.swap_policy != "largest")
      throw UserError("--swap-policy is not supported in a data-parallel run");
    rank = dc.rank;
    world = dc.world_size;
    if (rank != 0) out.clear();
    cfg.compile.communicator = tempo::connect(dc);
  }
  // Other ranks stay quiet: their errors still reach stderr.
  std::ostringstream discard;
  std::ostream& print = rank == 0 ? std::cout : discard;
  // Where results go is checked before anything compiles or runs.
  if (!out.empty()) tempo::rl::check_writable_dir(out, "--out");
  if (!cfg.save_dir.empty()) tempo::rl::check_writable_dir(cfg.save_dir, "--save");
  if (!cfg.resume_dir.empty())
    tempo::rl::check_resumable(cfg, tempo::rl::load_checkpoint(cfg.resume_dir), cfg.resume_dir);
  if (args.swap_policy != "largest") place_swaps(cfg, args.swap_policy);
  tempo::rewrite::set_rewrites(cfg.compile, args.rewrites, "--rewrites");
  const std::string title = cat(cfg.algo, " on ", cfg.env);
  if (!out.empty()) {
    // The curve so far, at most once a second: an interrupted run keeps it.
    auto last = std::make_shared<std::chrono::steady_clock::time_point>();
    cfg.on_iteration = [out, title, last](const std::vector<tempo::rl::CurvePoint>& curve) {
      auto now = std::chrono::steady_clock::now();
      if (curve.size() > 1 && now - *last < std::chrono::seconds(1)) return;
      *last = now;
      write_curve(out, curve, title);
    };
  }
  print << "training " << cfg.algo << " on " << cfg.env << ": " << cfg.iterations
        << " iterations x " << cfg.num_envs << " envs x " << cfg.steps << " steps";
  if (world > 1) print << " on each of " << world << " ranks";
  if (cfg.algo == "ppo")
    print << ", " << cfg.epochs << " epochs x " << cfg.minibatches << " minibatches";
  if (tempo::rl::is_off_policy(cfg.algo))
    print << ", buffer " << cfg.buffer_size << ", batch " << cfg.batch_size << ", learning from "
          << cfg.learning_starts << " steps";
  print << ", lr " << cfg.lr << ", seed " << cfg.compile.seed << std::endl;
  tempo::rl::TrainResult res = tempo::rl::train(cfg, &std::cout);
  print_summary(print, cfg, res, world);
  if (!out.empty()) write_curve(out, res.curve, title);
  if (!cfg.save_dir.empty()) print << "saved the policy in " << cfg.save_dir << "\n";
  print << "final mean return: " << fmt(res.final_mean_return);
  if (std::isnan(res.final_mean_return)) print << " (no episode finished; run more iterations)";
  print << std::endl;
  return 0;
}
