// Tempo's RL training programs (rl::train) against an eager LibTorch actor-learner baseline
// (bench/eager_rl.h: CleanRL-style REINFORCE / A2C / PPO with the same environments, networks,
// initialization, losses, hyperparameters and seeds), side by side, over the configurations of
// TEMPO §7.3, plus Monte-Carlo against n-step REINFORCE at a large observation (§7.4).
//
//   bench_rl_vs_eager [--quick] [--only sweep|nstep|budget|profile] [--out FILE.md] [--plot
//   FILE.svg]
//                     [--algos reinforce,ppo] [--iterations N] [--warmup W] [--threads K]
//
// Every run is a fresh process (this executable with --child), so that its peak RSS is its own;
// the two systems alternate which runs first. Per run: median seconds per iteration over the
// iterations after warm-up, env steps per second, Tempo's tracked tensor-store peak, the eager
// baseline's sampled heap peak, peak RSS (VmHWM), Tempo's compile time and the final return.
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "backend/libtorch_backend.h"
#include "driver/compile.h"
#include "eager_rl.h"
#include "rl/algorithms/algorithms.h"
#include "rl/envs/env.h"
#include "sampling_profiler.h"

namespace {

using Clock = std::chrono::steady_clock;
using tempo::rl::TrainConfig;

int64_t proc_status_kb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(key);
  while (std::getline(f, line))
    if (line.compare(0, n, key) == 0) return std::stoll(line.substr(n + 1));
  return -1;
}

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, sep))
    if (!x.empty()) v.push_back(x);
  return v;
}

std::string fmt(double v, int prec) {
  if (std::isnan(v)) return "n/a";
  std::ostringstream s;
  s << std::fixed << std::setprecision(prec) << v;
  return s.str();
}

std::string mib(double bytes) {
  if (bytes < 0) return "n/a";
  const double m = bytes / (1024.0 * 1024.0);
  return fmt(m, m < 10 ? 1 : 0);
}

// ---- one configuration ----------------------------------------------------------------------

struct Case {
  std::string algo = "reinforce";
  std::string axis = "base";  // the swept axis, for the table and the plot
  std::string env = "CartPole-v1";
  std::string obs;  // synthetic env: "3x64x64"
  int64_t envs = 16, steps = 128, hidden = 64, layers = 2, n_step = 0;
  int64_t epochs = 0;  // PPO update epochs per rollout (0: TrainConfig's default)
  bool proximity = false;
  // Tempo's REINFORCE recomputing the forward pass over the rollout as the eager baseline does,
  // instead of learning from the acting pass per timestep (TrainConfig::per_step, its default).
  bool recompute = false;
  bool normalize = true;  // REINFORCE: returns normalized over the rollout (both systems)
  int64_t budget = 0;  // Tempo's CompileOptions::memory_budget (bytes; 0: none)

  std::string env_label() const { return obs.empty() ? env : env + " " + obs; }
};

TrainConfig config_of(const Case& c, int64_t iterations) {
  TrainConfig cfg = TrainConfig::defaults(c.algo);  // PPO: CleanRL's hyperparameters
  cfg.env = c.env;
  if (!c.obs.empty()) {
    cfg.env_options.obs_shape.clear();
    for (const std::string& d : split(c.obs, 'x'))
      cfg.env_options.obs_shape.push_back(std::stoll(d));
  }
  cfg.num_envs = c.envs;
  cfg.steps = c.steps;
  cfg.hidden.assign(static_cast<size_t>(c.layers), c.hidden);
  cfg.n_step = c.n_step;
  cfg.compile.proximity = c.proximity;
  if (c.epochs > 0) cfg.epochs = c.epochs;
  if (c.recompute) cfg.per_step = false;
  cfg.normalize_returns = c.normalize;
  cfg.iterations = iterations;
  cfg.compile.seed = 1;
  cfg.compile.memory_budget = c.budget;
  return cfg;
}

struct RunStats {
  bool ok = false;
  std::string error;
  double sec_per_iter = std::nan("");
  int64_t measured = 0;
  double compile_seconds = std::nan("");
  double mem_bytes = -1;  // Tempo: tracked tensor-store peak; eager: sampled heap peak
  int64_t peak_rss_kb = -1, start_rss_kb = -1;
  double final_return = std::nan("");
  double host_bytes = 0;  // Tempo: swapped-out values in host memory at their peak
};

// In the child: runs one system on one configuration and prints a RESULT line.
int child_main(const std::string& system, const Case& c, int64_t iterations, int64_t warmup,
               bool profile) {
  TrainConfig cfg = config_of(c, iterations);
  std::optional<bench::SamplingProfiler> prof;
  if (profile) {
    cfg.compile.verbose = system == "tempo";
    prof.emplace();
    prof->start();
  }
  const int64_t before = proc_status_kb("VmRSS:");
  std::vector<double> secs;
  double compile = std::nan(""), mem = -1, fin = std::nan(""), host = 0;
  const Clock::time_point t0 = Clock::now();
  if (system == "tempo") {
    tempo::rl::TrainResult r = tempo::rl::train(cfg, nullptr);
    // iteration_seconds[k] is the period that ends with iteration k + 1's last env step
    // (learning of iteration k, acting of iteration k + 1).
    for (size_t k = 0; k < r.iteration_seconds.size(); ++k)
      if (static_cast<int64_t>(k) + 1 >= warmup) secs.push_back(r.iteration_seconds[k]);
    compile = r.compile_seconds;
    mem = static_cast<double>(r.peak_tracked_bytes);
    host = static_cast<double>(r.peak_host_bytes);
    fin = r.final_mean_return;
  } else {
    bench::EagerResult r = bench::run_eager(cfg);
    for (size_t k = 0; k < r.iteration_seconds.size(); ++k)
      if (static_cast<int64_t>(k) >= warmup) secs.push_back(r.iteration_seconds[k]);
    mem = static_cast<double>(r.heap_peak_bytes);
    fin = r.final_mean_return;
  }
  if (prof) {
    prof->stop();
    std::cerr << "[profile] " << system << " total "
              << std::chrono::duration<double>(Clock::now() - t0).count() << " s wall\n";
    prof->report(std::cerr, 40);
  }
  std::cout << std::setprecision(9) << "RESULT " << median(secs) << " " << secs.size() << " "
            << compile << " " << mem << " " << proc_status_kb("VmHWM:") << " " << before << " "
            << fin << " " << host << "\n";
  return 0;
}

std::string child_command(const std::string& system, const Case& c, int64_t iterations,
                          int64_t warmup, int threads, bool profile) {
  std::ostringstream cmd;
  cmd << "/proc/" << getpid() << "/exe --child " << system << " --algo " << c.algo << " --env "
      << c.env << " --envs " << c.envs << " --steps " << c.steps << " --hidden " << c.hidden
      << " --layers " << c.layers << " --n-step " << c.n_step << " --iterations " << iterations
      << " --warmup " << warmup << " --threads " << threads << " --epochs " << c.epochs;
  if (!c.obs.empty()) cmd << " --obs " << c.obs;
  if (c.proximity) cmd << " --proximity";
  if (c.recompute) cmd << " --recompute";
  if (!c.normalize) cmd << " --no-normalize";
  if (c.budget > 0) cmd << " --memory-budget " << c.budget;
  if (profile) cmd << " --profile";
  cmd << (profile ? "" : " 2>&1");
  return cmd.str();
}

double parse_double(const std::string& s) {
  try {
    return std::stod(s);
  } catch (...) {
    return std::nan("");
  }
}

RunStats run_child(const std::string& cmd) {
  RunStats s;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    s.error = "cannot start " + cmd;
    return s;
  }
  std::string text;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) text.append(buf, n);
  const int rc = pclose(p);
  const size_t at = text.rfind("RESULT ");
  if (rc != 0 || at == std::string::npos) {
    s.error = text.size() > 600 ? text.substr(text.size() - 600) : text;
    return s;
  }
  std::istringstream in(text.substr(at + 7));
  std::string med, n, comp, mem, hwm, before, fin, host;
  in >> med >> n >> comp >> mem >> hwm >> before >> fin >> host;
  s.ok = true;
  s.sec_per_iter = parse_double(med);
  s.measured = std::stoll(n);
  s.compile_seconds = parse_double(comp);
  s.mem_bytes = parse_double(mem);
  s.peak_rss_kb = std::stoll(hwm);
  s.start_rss_kb = std::stoll(before);
  s.final_return = parse_double(fin);
  s.host_bytes = parse_double(host);
  return s;
}

// ---- the sets of configurations -------------------------------------------------------------

// One axis at a time around the base (16 envs, T = 128, 2 x 64 hidden, CartPole-v1); everything
// else from TrainConfig::defaults(algo).
std::vector<Case> sweep_cases(const std::vector<std::string>& algos, bool quick) {
  std::vector<Case> v;
  for (const std::string& a : algos) {
    Case base;
    base.algo = a;
    v.push_back(base);
    if (quick) continue;
    auto sweep = [&](const char* axis, int64_t Case::*field,
                     std::initializer_list<int64_t> values) {
      for (int64_t x : values) {
        Case c = base;
        c.axis = axis;
        c.*field = x;
        v.push_back(c);
      }
    };
    sweep("envs", &Case::envs, {128, 512});
    sweep("T", &Case::steps, {250, 500});
    sweep("hidden", &Case::hidden, {16, 256});
    sweep("layers", &Case::layers, {1, 4});
    for (const char* o : {"3x4x4", "3x16x16", "3x64x64"}) {
      Case c = base;
      c.axis = "obs";
      c.env = "synthetic";
      c.obs = o;
      v.push_back(c);
    }
  }
  return v;
}

struct Row {
  Case c;
  RunStats tempo, eager;
};

std::string rss_cell(const RunStats& s) {
  if (s.peak_rss_kb < 0) return "n/a";
  return mib(static_cast<double>(s.peak_rss_kb) * 1024.0) + " (+" +
         mib(static_cast<double>(std::max<int64_t>(0, s.peak_rss_kb - s.start_rss_kb)) * 1024.0) +
         ")";
}

double ratio(double a, double b) {
  return (a > 0 && b > 0) ? a / b : std::nan("");
}

std::string axis_value(const Case& c) {
  if (c.axis == "envs") return "envs=" + std::to_string(c.envs);
  if (c.axis == "T") return "T=" + std::to_string(c.steps);
  if (c.axis == "hidden") return "hidden=" + std::to_string(c.hidden);
  if (c.axis == "layers") return "layers=" + std::to_string(c.layers);
  if (c.axis == "obs") return "obs=" + c.obs;
  return "base";
}

const char* kSweepHeader =
    "| algo | config | env | envs | T | hidden x layers | Tempo s/iter | eager s/iter | time "
    "Tempo/eager | Tempo steps/s | eager steps/s | Tempo tracked peak MiB | eager heap peak MiB | "
    "Tempo peak RSS MiB (+growth) | eager peak RSS MiB (+growth) | RSS Tempo/eager | Tempo "
    "compile s | final return Tempo / eager |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";

std::string sweep_row(const Row& r) {
  const Case& c = r.c;
  const double steps = static_cast<double>(c.envs * c.steps);
  const double ts = r.tempo.sec_per_iter, es = r.eager.sec_per_iter;
  std::ostringstream o;
  o << "| " << c.algo << " | " << axis_value(c) << " | " << c.env_label() << " | " << c.envs
    << " | " << c.steps << " | " << c.hidden << " x " << c.layers << " | ";
  if (!r.tempo.ok || !r.eager.ok) {
    o << (r.tempo.ok ? fmt(ts, 4) : "failed") << " | " << (r.eager.ok ? fmt(es, 4) : "failed")
      << " | | | | | | | | | | |\n";
    return o.str();
  }
  o << fmt(ts, 4) << " | " << fmt(es, 4) << " | " << fmt(ratio(ts, es), 2) << " | "
    << fmt(steps / ts, 0) << " | " << fmt(steps / es, 0) << " | " << mib(r.tempo.mem_bytes) << " | "
    << mib(r.eager.mem_bytes) << " | " << rss_cell(r.tempo) << " | " << rss_cell(r.eager) << " | "
    << fmt(ratio(static_cast<double>(r.tempo.peak_rss_kb),
                 static_cast<double>(r.eager.peak_rss_kb)),
           2)
    << " | " << fmt(r.tempo.compile_seconds, 1) << " | " << fmt(r.tempo.final_return, 1) << " / "
    << fmt(r.eager.final_return, 1) << " |\n";
  return o.str();
}

// ---- the plot -------------------------------------------------------------------------------

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '<')
      o += "&lt;";
    else if (ch == '>')
      o += "&gt;";
    else if (ch == '&')
      o += "&amp;";
    else
      o += ch;
  }
  return o;
}

// Grouped bars per configuration: Tempo/eager time and peak RSS ratios on a log2 axis, bars
// growing from the line at 1.0.
std::string svg_plot(const std::vector<Row>& rows, const std::string& title) {
  std::vector<const Row*> ok;
  for (const Row& r : rows)
    if (r.tempo.ok && r.eager.ok) ok.push_back(&r);
  const double lo = -2, hi = 6;  // log2 range: 0.25x .. 64x
  const int left = 60, top = 40, plot_h = 320, group_w = 44, bottom = 150;
  const int width = left + static_cast<int>(ok.size()) * group_w + 200;
  const int height = top + plot_h + bottom;
  auto y_of = [&](double r) {
    const double l = std::clamp(std::log2(r), lo, hi);
    return top + plot_h * (hi - l) / (hi - lo);
  };
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
    << "' font-family='sans-serif' font-size='11'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n"
    << "<text x='" << left << "' y='20' font-size='14'>" << xml_escape(title) << "</text>\n";
  for (int e = static_cast<int>(lo); e <= static_cast<int>(hi); ++e) {
    const double y = y_of(std::pow(2.0, e));
    s << "<line x1='" << left << "' x2='" << width - 200 << "' y1='" << y << "' y2='" << y
      << "' stroke='" << (e == 0 ? "black" : "#ddd") << "' stroke-width='" << (e == 0 ? 1.5 : 1)
      << "'/>\n<text x='" << left - 6 << "' y='" << y + 4 << "' text-anchor='end'>"
      << fmt(std::pow(2.0, e), e < 0 ? 2 : 0) << "x</text>\n";
  }
  const char* colors[2] = {"#1f77b4", "#ff7f0e"};
  for (size_t g = 0; g < ok.size(); ++g) {
    const Row& r = *ok[g];
    const double vals[2] = {
        ratio(r.tempo.sec_per_iter, r.eager.sec_per_iter),
        ratio(static_cast<double>(r.tempo.peak_rss_kb), static_cast<double>(r.eager.peak_rss_kb))};
    const double x0 = left + static_cast<double>(g) * group_w + 6;
    for (int b = 0; b < 2; ++b) {
      if (std::isnan(vals[b])) continue;
      const double y1 = y_of(1.0), y2 = y_of(vals[b]);
      s << "<rect x='" << x0 + b * 16 << "' y='" << std::min(y1, y2) << "' width='15' height='"
        << std::max(1.0, std::abs(y2 - y1)) << "' fill='" << colors[b] << "'><title>"
        << fmt(vals[b], 2) << "</title></rect>\n";
    }
    const double lx = x0 + 16, ly = top + plot_h + 8;
    s << "<text transform='translate(" << lx << "," << ly << ") rotate(60)'>"
      << xml_escape(r.c.algo + " " + axis_value(r.c)) << "</text>\n";
  }
  const int lx = width - 190;
  s << "<rect x='" << lx << "' y='" << top << "' width='12' height='12' fill='" << colors[0]
    << "'/><text x='" << lx + 18 << "' y='" << top + 10 << "'>s/iter Tempo/eager</text>\n"
    << "<rect x='" << lx << "' y='" << top + 20 << "' width='12' height='12' fill='" << colors[1]
    << "'/><text x='" << lx + 18 << "' y='" << top + 30 << "'>peak RSS Tempo/eager</text>\n"
    << "<text x='" << lx << "' y='" << top + 50 << "'>above 1: Tempo slower / larger</text>\n"
    << "</svg>\n";
  return s.str();
}

// ---- driver ---------------------------------------------------------------------------------

struct Options {
  bool quick = false;
  std::string only;  // "", "sweep", "nstep", "budget" or "profile"
  std::string out, plot;
  std::vector<std::string> algos;
  int64_t iterations = 0, warmup = 2;
  int threads = 1;
  // Internal (--child): one system on one configuration in this process.
  std::string child;
  bool profile = false;
  Case c;
};

int main_impl(int argc, char** argv) {
  Options o;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    auto next = [&]() -> std::string {
      if (k + 1 >= argc) throw std::runtime_error("missing value after " + a);
      return argv[++k];
    };
    if (a == "--quick")
      o.quick = true;
    else if (a == "--only")
      o.only = next();
    else if (a == "--out")
      o.out = next();
    else if (a == "--plot")
      o.plot = next();
    else if (a == "--algos")
      o.algos = split(next(), ',');
    else if (a == "--iterations")
      o.iterations = std::stoll(next());
    else if (a == "--warmup")
      o.warmup = std::stoll(next());
    else if (a == "--threads")
      o.threads = std::stoi(next());
    else if (a == "--child")
      o.child = next();
    else if (a == "--profile")
      o.profile = true;
    else if (a == "--algo")
      o.c.algo = next();
    else if (a == "--env")
      o.c.env = next();
    else if (a == "--obs")
      o.c.obs = next();
    else if (a == "--envs")
      o.c.envs = std::stoll(next());
    else if (a == "--steps")
      o.c.steps = std::stoll(next());
    else if (a == "--hidden")
      o.c.hidden = std::stoll(next());
    else if (a == "--layers")
      o.c.layers = std::stoll(next());
    else if (a == "--n-step")
      o.c.n_step = std::stoll(next());
    else if (a == "--epochs")
      o.c.epochs = std::stoll(next());
    else if (a == "--proximity")
      o.c.proximity = true;
    else if (a == "--recompute")
      o.c.recompute = true;
    else if (a == "--no-normalize")
      o.c.normalize = false;
    else if (a == "--memory-budget")
      o.c.budget = tempo::parse_bytes(next(), "--memory-budget");
    else {
      std::cerr << "usage: bench_rl_vs_eager [--quick] [--only sweep|nstep|budget|profile] [--out "
                   "FILE.md] [--plot FILE.svg] [--algos reinforce,ppo] [--iterations N] "
                   "[--warmup W] [--threads K]\n"
                   "  profile: --only profile [--algo A --envs N --steps T --hidden H --layers L"
                   " --env E --obs CxHxW --n-step n --epochs E --proximity --memory-budget B]\n";
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  if (o.algos.empty()) o.algos = {"reinforce", "ppo"};
  const bool budget_only = o.only == "budget" && o.child.empty();
  if (o.iterations <= 0) o.iterations = budget_only ? 4 : 7;
  if (budget_only && o.warmup == 2) o.warmup = 1;  // runs of up to a minute per iteration
  if (o.child.empty() && o.iterations - o.warmup < (budget_only ? 3 : 5))
    throw std::runtime_error("need at least 5 measured iterations (3 with --only budget)");
  tempo::backend::set_num_threads(o.threads);  // LibTorch's and the BLAS's, in both systems
  if (!o.child.empty()) return child_main(o.child, o.c, o.iterations, o.warmup, o.profile);

  if (o.only == "profile") {  // both systems under the sampling profiler, reports on stderr
    for (const char* sys : {"tempo", "eager"}) {
      RunStats s = run_child(child_command(sys, o.c, o.iterations, o.warmup, o.threads, true));
      std::cerr << sys << ": " << (s.ok ? fmt(s.sec_per_iter, 4) + " s/iter" : s.error) << "\n";
    }
    return 0;
  }

  const Clock::time_point start = Clock::now();
  std::ostringstream md;
  auto emit = [&](const std::string& s) {
    std::cout << s << std::flush;
    md << s;
  };
  {
    std::ostringstream h;
    h << "## Tempo vs eager LibTorch actor-learner (" << (o.quick ? "--quick" : "default set")
      << ", " << o.iterations << " iterations per run, the first " << o.warmup << " not measured, "
      << o.threads << " LibTorch and BLAS thread(s))\n\n";
    emit(h.str());
  }
  std::vector<Row> rows;
  if (o.only.empty() || o.only == "sweep") {
    emit(kSweepHeader);
    std::vector<Case> cs = sweep_cases(o.algos, o.quick);
    for (size_t k = 0; k < cs.size(); ++k) {
      Row r{cs[k], {}, {}};
      const bool tempo_first = k % 2 == 0;  // alternate which system runs first
      for (int s = 0; s < 2; ++s) {
        const bool tempo = (s == 0) == tempo_first;
        (tempo ? r.tempo : r.eager) = run_child(child_command(
            tempo ? "tempo" : "eager", cs[k], o.iterations, o.warmup, o.threads, false));
      }
      emit(sweep_row(r));
      for (const RunStats* s : {&r.tempo, &r.eager})
        if (!s->ok) emit("\nfailed run: " + s->error + "\n\n");
      rows.push_back(r);
    }
  }

  if (o.only.empty() || o.only == "nstep") {
    // REINFORCE at a large observation: Monte-Carlo returns (n = 0) against n-step returns
    // (not normalized, in both systems: statistics of the whole rollout would make every step
    // wait for its end). With proximity Tempo interleaves n-step learning with acting (TEMPO
    // Fig. 23): its peak stays flat in T while the eager actor-learner keeps the rollout.
    // --quick: a smaller observation and T = 128 only, so that the set stays within minutes.
    const std::string obs = o.quick ? "3x16x16" : "3x64x64";
    std::vector<int64_t> lengths = {128, 1024};
    if (o.quick) lengths = {128};
    emit("\n### Monte-Carlo vs n-step REINFORCE (synthetic " + obs +
         ", 16 envs, 2 x 64 hidden)\n\n"
         "| T | returns | system | s/iter | steps/s | tracked / heap peak MiB | Tempo / eager peak "
         "| peak RSS MiB (+growth) | compile s |\n|---|---|---|---|---|---|---|---|---|\n");
    int order = 0;
    for (int64_t T : lengths)
      for (int64_t n : {0, 8, 64}) {
        Case c;
        c.env = "synthetic";
        c.obs = obs;
        c.steps = T;
        c.n_step = n;
        c.normalize = n == 0;
        std::vector<std::pair<std::string, Case>> runs;
        Case prox = c;
        prox.proximity = true;
        Case recompute = c;
        recompute.recompute = true;
        if (T == lengths[0]) {
          runs.push_back({"Tempo", c});
          runs.push_back({"Tempo, recompute", recompute});
        }
        runs.push_back({"Tempo, proximity", prox});
        runs.push_back({"eager", c});
        if (order++ % 2) std::reverse(runs.begin(), runs.end());
        std::vector<std::pair<std::string, RunStats>> results;
        double eager_peak = std::nan("");
        for (const auto& [label, rc] : runs) {
          const bool tempo = label != "eager";
          results.push_back({label, run_child(child_command(tempo ? "tempo" : "eager", rc,
                                                            o.iterations, o.warmup, o.threads,
                                                            false))});
          if (!tempo && results.back().second.ok) eager_peak = results.back().second.mem_bytes;
        }
        std::vector<std::string> lines;
        for (const auto& [label, s] : results) {
          const bool tempo = label != "eager";
          std::ostringstream l;
          l << "| " << T << " | " << (n == 0 ? "Monte-Carlo" : "n-step, n = " + std::to_string(n))
            << " | " << label << " | ";
          if (!s.ok) {
            l << "failed | | | | | |\n";
            lines.push_back(l.str() + "\nfailed run: " + s.error + "\n\n");
            continue;
          }
          l << fmt(s.sec_per_iter, 4) << " | " << fmt(16.0 * T / s.sec_per_iter, 0) << " | "
            << mib(s.mem_bytes) << (tempo ? " (tracked)" : " (heap)") << " | "
            << (tempo ? fmt(ratio(s.mem_bytes, eager_peak), 3) : "-") << " | " << rss_cell(s)
            << " | " << (tempo ? fmt(s.compile_seconds, 1) : "-") << " |\n";
          lines.push_back(l.str());
        }
        std::sort(lines.begin(), lines.end());  // same order for every row, whoever ran first
        for (const std::string& l : lines) emit(l);
      }
  }

  if (o.only == "budget") {
    // TEMPO Fig. 21: growing observations under a 1 GiB device-memory budget. The eager baseline
    // keeps its rollout and autograd graph in memory; Tempo tiles and swaps to fit.
    const int64_t budget = int64_t{1} << 30;
    emit(
        "\n### Growing observations under a 1 GiB device-memory budget (synthetic env, 16 envs, "
        "T = 128, 2 x 64 hidden)\n\n"
        "| algo | obs | rollout MiB | Tempo s/iter | Tempo tracked peak MiB | swapped to host "
        "MiB | Tempo compile s | eager s/iter | eager heap peak MiB | Tempo/eager time |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n");
    std::vector<std::string> sizes = {"3x16x16", "3x32x32", "3x64x64", "3x128x128", "3x256x256"};
    if (o.quick) sizes = {"3x16x16", "3x64x64"};
    for (const std::string& a : o.algos)
      for (const std::string& obs : sizes) {
        Case c;
        c.algo = a;
        c.env = "synthetic";
        c.obs = obs;
        double elems = 1;
        for (const std::string& d : split(obs, 'x')) elems *= std::stod(d);
        const double rollout = 16.0 * 129.0 * elems * 4.0;
        Case tc = c;
        tc.budget = budget;
        RunStats t =
            run_child(child_command("tempo", tc, o.iterations, o.warmup, o.threads, false));
        RunStats e = run_child(child_command("eager", c, o.iterations, o.warmup, o.threads, false));
        std::ostringstream l;
        l << "| " << a << " | " << obs << " | " << mib(rollout) << " | ";
        if (t.ok)
          l << fmt(t.sec_per_iter, 3) << " | " << mib(t.mem_bytes) << " | " << mib(t.host_bytes)
            << " | " << fmt(t.compile_seconds, 1) << " | ";
        else
          l << "failed | | | | ";
        if (e.ok)
          l << fmt(e.sec_per_iter, 3) << " | " << mib(e.mem_bytes)
            << (e.mem_bytes > static_cast<double>(budget) ? " (exceeds budget)" : "") << " | ";
        else
          l << "failed | | ";
        l << (t.ok && e.ok ? fmt(ratio(t.sec_per_iter, e.sec_per_iter), 2) : "") << " |\n";
        emit(l.str());
        for (const RunStats* s : {&t, &e})
          if (!s->ok) emit("\nfailed run: " + s->error + "\n\n");
      }
  }

  {
    std::ostringstream f;
    f << "\nTotal wall time " << fmt(std::chrono::duration<double>(Clock::now() - start).count(), 0)
      << " s.\n";
    emit(f.str());
  }
  if (!o.out.empty()) {
    std::ofstream f(o.out);
    f << md.str();
    if (!f) throw std::runtime_error("cannot write " + o.out);
  }
  if (!o.plot.empty() && !rows.empty()) {
    std::ofstream f(o.plot);
    f << svg_plot(rows, "Tempo / eager per configuration (log scale; 1.0 = parity)");
    if (!f) throw std::runtime_error("cannot write " + o.plot);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("TEMPO_NO_SCHEDULE_CACHE", "1", 1);  // compile times include scheduling
  try {
    return main_impl(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "bench_rl_vs_eager: " << e.what() << "\n";
    return 1;
  }
}
