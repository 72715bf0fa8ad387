// Tempo's RL training programs (rl::train) against an eager LibTorch actor-learner baseline with
// the same environments, networks, losses, hyperparameters and seeds, side by side.
//
// The baseline is written the way a careful CleanRL port to C++ would be: an acting loop that
// runs the policy under NoGradGuard and fills a preallocated rollout buffer, then a learner that
// recomputes the forward pass over the whole rollout (T x N) and takes one Adam step with
// global-norm gradient clipping. Returns / advantages use the same episode-boundary rules as
// rl::discounted_returns (a backward recursion here).
//
//   bench_rl_vs_eager [--quick] [--out FILE] [--algos a2c,ppo,reinforce] [--iterations N]
//                     [--warmup W] [--threads K] [--env NAME]
//
// Per configuration it prints the median seconds per iteration over iterations W..N-1 (Tempo:
// the time between consecutive per-iteration progress lines, compile time reported apart), env
// steps per second derived from it, peak RSS (VmHWM) of the run, each run being a fresh process
// (this executable with --child), and Tempo/eager ratios.
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "rl/algorithms/algorithms.h"
#include "rl/envs/env.h"

namespace {

using Clock = std::chrono::steady_clock;
using tempo::rl::TrainConfig;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- process memory -----------------------------------------------------------------------------

int64_t proc_status_kb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(key);
  while (std::getline(f, line))
    if (line.compare(0, n, key) == 0) return std::stoll(line.substr(n + 1));
  return -1;
}

// ---- eager baseline -----------------------------------------------------------------------------

struct MLPImpl : torch::nn::Module {
  MLPImpl(int64_t in, int64_t hidden, int64_t out)
      : l0(register_module("0", torch::nn::Linear(in, hidden))),
        l1(register_module("1", torch::nn::Linear(hidden, hidden))),
        l2(register_module("2", torch::nn::Linear(hidden, out))) {}
  torch::Tensor forward(const torch::Tensor& x) { return l2(torch::tanh(l1(torch::tanh(l0(x))))); }
  torch::nn::Linear l0, l1, l2;
};
TORCH_MODULE(MLP);

// As Tempo's normalized(): over all elements, population variance, eps inside the sqrt.
torch::Tensor normalized(const torch::Tensor& x) {
  torch::Tensor c = x - x.mean();
  return c / (c.square().mean() + 1e-8).sqrt();
}

// out[t] = x[t] + g * (1 - done[t]) * out[t + 1], out[T] = 0: discounted sums that stop at
// episode ends, for [T, N] float tensors (contiguous).
torch::Tensor discounted_returns(const torch::Tensor& x, const torch::Tensor& done, double g) {
  const int64_t T = x.size(0), N = x.size(1);
  torch::Tensor out = torch::empty_like(x);
  const float* px = x.data_ptr<float>();
  const float* pd = done.data_ptr<float>();
  float* po = out.data_ptr<float>();
  for (int64_t n = 0; n < N; ++n) {
    double acc = 0;
    for (int64_t t = T - 1; t >= 0; --t) {
      acc = px[t * N + n] + g * (1.0 - pd[t * N + n]) * acc;
      po[t * N + n] = static_cast<float>(acc);
    }
  }
  return out;
}

struct RunStats {
  std::vector<double> iter_seconds;  // measured iterations only
  double compile_seconds = 0;
  int64_t peak_rss_kb = -1;
  int64_t start_rss_kb = -1;  // VmRSS just before the run (memory kept from earlier runs)
  double final_return = std::nan("");
  bool mean_only = false;  // iter_seconds holds one mean over all iterations (warm-up included)
};

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

RunStats run_eager(const TrainConfig& cfg, int64_t warmup) {
  torch::manual_seed(cfg.seed);
  const int64_t N = cfg.num_envs, T = cfg.steps;
  auto env = tempo::rl::make_env(cfg.env, N);
  const tempo::rl::Space& aspace = env->action_space();
  const bool discrete = aspace.discrete;
  const int64_t obs_dim = env->obs_numel();
  const int64_t act_dim = discrete ? aspace.n : aspace.numel();
  const bool use_value = cfg.algo != "reinforce";

  MLP pi(obs_dim, cfg.hidden, act_dim);
  std::vector<torch::Tensor> params = pi->parameters();
  MLP vf(nullptr);
  if (use_value) {
    vf = MLP(obs_dim, cfg.hidden, 1);
    for (const torch::Tensor& p : vf->parameters()) params.push_back(p);
  }
  torch::Tensor log_std;
  if (!discrete) {
    log_std = torch::zeros({act_dim}, torch::requires_grad());
    params.push_back(log_std);
  }
  torch::optim::Adam opt(params, torch::optim::AdamOptions(cfg.lr).betas({0.9, 0.999}).eps(1e-5));

  // Rollout buffer: T + 1 observations (the last one bootstraps and starts the next rollout).
  torch::Tensor obs_buf = torch::empty({T + 1, N, obs_dim});
  torch::Tensor act_buf =
      discrete ? torch::empty({T, N}, torch::kLong) : torch::empty({T, N, act_dim});
  torch::Tensor rew_buf = torch::empty({T, N});
  torch::Tensor done_buf = torch::empty({T, N});
  const size_t obs_bytes = static_cast<size_t>(N * obs_dim) * sizeof(float);
  {
    std::vector<float> o = env->reset(cfg.seed);
    std::memcpy(obs_buf[0].data_ptr<float>(), o.data(), obs_bytes);
  }
  std::vector<float> act(static_cast<size_t>(N * (discrete ? 1 : act_dim)));
  tempo::rl::StepResult sr;
  std::vector<double> recent;
  RunStats stats;
  const double half_log_2pi = 0.5 * std::log(2 * M_PI);

  for (int64_t it = 0; it < cfg.iterations; ++it) {
    const Clock::time_point t0 = Clock::now();
    std::vector<double> finished;
    {  // acting
      torch::NoGradGuard no_grad;
      for (int64_t t = 0; t < T; ++t) {
        torch::Tensor out = pi(obs_buf[t]);
        if (discrete) {
          torch::Tensor a = torch::multinomial(torch::softmax(out, -1), 1).squeeze(-1);
          act_buf[t].copy_(a);
          const int64_t* pa = a.data_ptr<int64_t>();
          for (int64_t n = 0; n < N; ++n) act[n] = static_cast<float>(pa[n]);
        } else {
          torch::Tensor a = out + log_std.exp() * torch::randn_like(out);
          act_buf[t].copy_(a);
          const float* pa = a.data_ptr<float>();
          for (int64_t k = 0; k < N * act_dim; ++k)
            act[k] = std::clamp(pa[k], aspace.low[k % act_dim], aspace.high[k % act_dim]);
        }
        env->step_into(act, sr);
        std::memcpy(obs_buf[t + 1].data_ptr<float>(), sr.obs.data(), obs_bytes);
        std::memcpy(rew_buf[t].data_ptr<float>(), sr.reward.data(), N * sizeof(float));
        float* pd = done_buf[t].data_ptr<float>();
        for (int64_t n = 0; n < N; ++n) {
          const bool d = sr.terminated[n] || sr.truncated[n];
          pd[n] = d ? 1.0f : 0.0f;
          if (d) finished.push_back(sr.episode_return[n]);
        }
      }
    }
    // learning: one forward pass over the whole rollout, one Adam step
    torch::Tensor O = obs_buf.slice(0, 0, T);
    torch::Tensor out = pi(O);
    torch::Tensor logp, ent;
    if (discrete) {
      torch::Tensor lp = torch::log_softmax(out, -1);
      logp = lp.gather(-1, act_buf.unsqueeze(-1)).squeeze(-1);
      ent = -(lp.exp() * lp).sum(-1);
    } else {
      torch::Tensor z = (act_buf - out) * (-log_std).exp();
      logp = -0.5 * z.square() - log_std - half_log_2pi;
      ent = (0.5 + half_log_2pi + log_std).expand_as(out);
    }
    torch::Tensor loss;
    if (!use_value) {
      torch::Tensor G = discounted_returns(rew_buf, done_buf, cfg.gamma);
      torch::Tensor w = normalized(G);
      if (!discrete) w = w.unsqueeze(-1);
      loss = -(logp * w).mean() - cfg.ent_coef * ent.mean();
    } else {
      torch::Tensor Vall = vf(obs_buf).squeeze(-1);  // [T + 1, N]
      torch::Tensor V = Vall.slice(0, 0, T);
      torch::Tensor Vn = Vall.slice(0, 1, T + 1).detach();
      torch::Tensor delta = (rew_buf + cfg.gamma * (1.0 - done_buf) * Vn - V.detach()).contiguous();
      const double lambda = cfg.algo == "ppo" ? cfg.gae_lambda : 1.0;
      torch::Tensor adv = discounted_returns(delta, done_buf, cfg.gamma * lambda);
      torch::Tensor ret = adv + V.detach();
      torch::Tensor nadv = normalized(adv);
      if (!discrete) nadv = nadv.unsqueeze(-1);
      torch::Tensor pg;
      if (cfg.algo == "ppo") {
        torch::Tensor ratio = (logp - logp.detach()).exp();
        pg = -torch::min(ratio * nadv, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * nadv).mean();
      } else {
        pg = -(logp * nadv).mean();
      }
      torch::Tensor vloss = 0.5 * (V - ret).square().mean();
      loss = pg + cfg.vf_coef * vloss - cfg.ent_coef * ent.mean();
    }
    opt.zero_grad();
    loss.backward();
    if (cfg.max_grad_norm > 0) torch::nn::utils::clip_grad_norm_(params, cfg.max_grad_norm);
    opt.step();
    // Next rollout starts where this one ended.
    obs_buf[0].copy_(obs_buf[T]);
    const double dt = seconds_since(t0);
    if (it >= warmup) stats.iter_seconds.push_back(dt);
    if (!finished.empty()) {
      double s = 0;
      for (double r : finished) s += r;
      recent.push_back(s / static_cast<double>(finished.size()));
    }
  }
  if (!recent.empty()) stats.final_return = recent.back();
  return stats;
}

// ---- Tempo --------------------------------------------------------------------------------------

// Records the time at which each progress line (one per iteration) is written.
class LineClock : public std::streambuf {
 public:
  std::vector<Clock::time_point> times;

 protected:
  int_type overflow(int_type c) override {
    if (c == '\n') times.push_back(Clock::now());
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize k = 0; k < n; ++k)
      if (s[k] == '\n') times.push_back(Clock::now());
    return n;
  }
};

RunStats run_tempo(const TrainConfig& cfg, int64_t warmup) {
  LineClock clock;
  std::ostream log(&clock);
  tempo::rl::TrainResult r = tempo::rl::train(cfg, &log);
  RunStats stats;
  stats.compile_seconds = r.compile_seconds;
  // Line k is written at the end of iteration k; the gap to line k - 1 is iteration k's time.
  for (size_t k = std::max<int64_t>(warmup, 1); k < clock.times.size(); ++k)
    stats.iter_seconds.push_back(
        std::chrono::duration<double>(clock.times[k] - clock.times[k - 1]).count());
  // If the schedule runs the progress sink late (all lines at the end of the run), the gaps say
  // nothing: fall back to the mean over all iterations of the run time.
  double gaps = 0;
  for (double g : stats.iter_seconds) gaps += g;
  const double expected = r.run_seconds * static_cast<double>(stats.iter_seconds.size()) /
                          static_cast<double>(cfg.iterations);
  if (stats.iter_seconds.empty() || gaps < 0.5 * expected) {
    stats.iter_seconds.assign(1, r.run_seconds / static_cast<double>(cfg.iterations));
    stats.mean_only = true;
  }
  if (!r.curve.empty()) stats.final_return = r.curve.back().mean_return;
  return stats;
}

// ---- driver -------------------------------------------------------------------------------------

struct Options {
  bool quick = false;
  std::string out;
  std::vector<std::string> algos;
  int64_t iterations = 0, warmup = 0;
  int threads = 1;
  std::string env = "CartPole-v1";
  // Internal: run one system on one configuration in this process and print a RESULT line.
  std::string child;  // "tempo" or "eager"
  std::string algo;
  int64_t envs = 0, steps = 0, hidden = 0;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, ','))
    if (!x.empty()) v.push_back(x);
  return v;
}

struct Case {
  std::string algo;
  int64_t envs, steps, hidden;
};

std::vector<Case> cases(const Options& o) {
  std::vector<Case> v;
  for (const std::string& a : o.algos) {
    if (o.quick) {
      v.push_back({a, 16, 128, 64});
      continue;
    }
    // One axis at a time around (128 envs, 128 steps, 64 hidden).
    for (int64_t n : {16, 128, 512}) v.push_back({a, n, 128, 64});
    for (int64_t t : {250, 500}) v.push_back({a, 128, t, 64});
    for (int64_t h : {16, 256}) v.push_back({a, 128, 128, h});
  }
  return v;
}

std::string fmt(double v, int prec) {
  if (std::isnan(v)) return "n/a";
  std::ostringstream s;
  s << std::fixed << std::setprecision(prec) << v;
  return s.str();
}

std::string mib(int64_t kb) {
  return kb < 0 ? "n/a" : fmt(static_cast<double>(kb) / 1024.0, 0);
}

// "peak (+growth over the RSS at the start of the run)".
std::string rss(const RunStats& s) {
  if (s.peak_rss_kb < 0 || s.start_rss_kb < 0) return mib(s.peak_rss_kb);
  // VmRSS may fall between the reset and the read, so the growth can come out negative.
  return mib(s.peak_rss_kb) + " (+" + mib(std::max<int64_t>(0, s.peak_rss_kb - s.start_rss_kb)) +
         ")";
}

// Runs one measurement in a fresh process, so that peak RSS belongs to that run alone.
RunStats run_child(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot start " + cmd);
  std::string text;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) text.append(buf, n);
  const int rc = pclose(p);
  const size_t at = text.rfind("RESULT ");
  if (rc != 0 || at == std::string::npos)
    throw std::runtime_error("child run failed (" + cmd + "):\n" + text);
  std::istringstream in(text.substr(at + 7));
  RunStats s;
  double med = 0, fin = 0;
  int mean_only = 0;
  std::string fin_s;
  in >> med >> mean_only >> s.compile_seconds >> s.peak_rss_kb >> s.start_rss_kb >> fin_s;
  s.iter_seconds = {med};
  s.mean_only = mean_only != 0;
  try {
    fin = std::stod(fin_s);
  } catch (...) {
    fin = std::nan("");
  }
  s.final_return = fin;
  return s;
}

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
    else if (a == "--out")
      o.out = next();
    else if (a == "--algos")
      o.algos = split(next());
    else if (a == "--iterations")
      o.iterations = std::stoll(next());
    else if (a == "--warmup")
      o.warmup = std::stoll(next());
    else if (a == "--threads")
      o.threads = std::stoi(next());
    else if (a == "--env")
      o.env = next();
    else if (a == "--child")
      o.child = next();
    else if (a == "--algo")
      o.algo = next();
    else if (a == "--envs")
      o.envs = std::stoll(next());
    else if (a == "--steps")
      o.steps = std::stoll(next());
    else if (a == "--hidden")
      o.hidden = std::stoll(next());
    else {
      std::cerr << "usage: bench_rl_vs_eager [--quick] [--out FILE] [--algos a2c,ppo,reinforce]"
                   " [--iterations N] [--warmup W] [--threads K] [--env NAME]\n";
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  if (o.algos.empty()) o.algos = {"reinforce", "a2c", "ppo"};
  if (o.warmup <= 0) o.warmup = 2;
  if (o.iterations <= 0) o.iterations = o.quick ? 7 : 10;
  if (o.iterations - o.warmup < 5)
    throw std::runtime_error("need at least 5 measured iterations (iterations - warmup >= 5)");
  torch::set_num_threads(o.threads);

  if (!o.child.empty()) {
    TrainConfig cfg;
    cfg.algo = o.algo;
    cfg.env = o.env;
    cfg.num_envs = o.envs;
    cfg.steps = o.steps;
    cfg.hidden = o.hidden;
    cfg.iterations = o.iterations;
    cfg.seed = 1;
    const int64_t before = proc_status_kb("VmRSS:");
    RunStats r = o.child == "tempo" ? run_tempo(cfg, o.warmup) : run_eager(cfg, o.warmup);
    std::cout << std::setprecision(9) << "RESULT " << median(r.iter_seconds) << " "
              << (r.mean_only ? 1 : 0) << " " << r.compile_seconds << " "
              << proc_status_kb("VmHWM:") << " " << before << " " << r.final_return << "\n";
    return 0;
  }

  const int64_t base_rss = proc_status_kb("VmRSS:");  // as a child's at its start
  std::ostringstream md;
  md << "Tempo vs eager LibTorch (" << o.env << ", " << o.iterations << " iterations, first "
     << o.warmup << " not measured, " << o.threads << " intra-op thread(s))\n\n"
     << "Every run is a fresh process (this executable with --child). Peak RSS: VmHWM of that "
        "process, LibTorch included (about "
     << mib(base_rss)
     << " MiB at its start); the growth in parentheses is peak minus VmRSS before the run."
     << " Tempo's tracked tensor-store peak (Executable::memory()) is not reachable through "
        "rl::train and is not reported.\n\n"
     << "| algo | envs | T | hidden | Tempo s/iter | eager s/iter | Tempo/eager | "
        "Tempo steps/s | eager steps/s | Tempo compile s | Tempo peak RSS MiB (+growth) | "
        "eager peak RSS MiB (+growth) | final return Tempo / eager |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::cout << md.str() << std::flush;

  std::vector<Case> cs = cases(o);
  for (size_t c = 0; c < cs.size(); ++c) {
    TrainConfig cfg;
    cfg.algo = cs[c].algo;
    cfg.env = o.env;
    cfg.num_envs = cs[c].envs;
    cfg.steps = cs[c].steps;
    cfg.hidden = cs[c].hidden;
    cfg.iterations = o.iterations;
    cfg.seed = 1;
    RunStats tempo_s, eager_s;
    auto measure = [&](bool tempo_run) {
      std::ostringstream cmd;
      cmd << "/proc/" << getpid() << "/exe --child " << (tempo_run ? "tempo" : "eager")
          << " --algo " << cfg.algo << " --env " << cfg.env << " --envs " << cfg.num_envs
          << " --steps " << cfg.steps << " --hidden " << cfg.hidden << " --iterations "
          << o.iterations << " --warmup " << o.warmup << " --threads " << o.threads;
      (tempo_run ? tempo_s : eager_s) = run_child(cmd.str());
    };
    // Alternate which system runs first, so that neither always sees a warm (or cold) process.
    const bool tempo_first = c % 2 == 0;
    measure(tempo_first);
    measure(!tempo_first);
    const double ts = median(tempo_s.iter_seconds), es = median(eager_s.iter_seconds);
    const double steps = static_cast<double>(cfg.num_envs * cfg.steps);
    std::ostringstream row;
    row << "| " << cfg.algo << " | " << cfg.num_envs << " | " << cfg.steps << " | " << cfg.hidden
        << " | " << fmt(ts, 4) << (tempo_s.mean_only ? "*" : "") << " | " << fmt(es, 4) << " | "
        << fmt(ts / es, 2) << " | " << fmt(steps / ts, 0) << " | " << fmt(steps / es, 0) << " | "
        << fmt(tempo_s.compile_seconds, 2) << " | " << rss(tempo_s) << " | " << rss(eager_s)
        << " | " << fmt(tempo_s.final_return, 1) << " / " << fmt(eager_s.final_return, 1) << " |\n";
    std::cout << row.str() << std::flush;
    md << row.str();
  }
  const std::string notes =
      "\n* Tempo s/iter marked * is run_seconds / iterations (warm-up included): the schedule "
      "runs the per-iteration progress sink after the whole run, so per-iteration times are not "
      "observable through rl::train.\n"
      "Hidden layers are fixed at 2 in rl::TrainConfig (no knob), so that axis is not swept.\n";
  md << notes;
  std::cout << notes;
  if (!o.out.empty()) {
    std::ofstream f(o.out);
    f << md.str();
    if (!f) throw std::runtime_error("cannot write " + o.out);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return main_impl(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "bench_rl_vs_eager: " << e.what() << "\n";
    return 1;
  }
}
