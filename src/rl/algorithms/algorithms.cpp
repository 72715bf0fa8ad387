// REINFORCE, A2C and PPO as one recurrent-tensor program family (TEMPO Alg. 1).
//
// Acting runs per (i, t): o[0, 0] = reset(), o[i, t + 1] = step(a[i, t]) and o[i + 1, 0] = the
// last observation of iteration i, so every env call is ordered by data dependences. Learning
// runs per iteration i on the whole rollout read as constant-range slices x[i, 0:T] (batched
// forward passes), except the returns, which read the future x[i, t:T] per timestep.
#include "rl/algorithms/algorithms.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>

#include "nn/distributions.h"
#include "nn/module.h"
#include "optim/optim.h"
#include "rl/envs/env.h"
#include "util/error.h"

namespace tempo::rl {

namespace {

using Clock = std::chrono::steady_clock;

// The reported mean return averages this many latest episodes: with long episodes only one or
// two end per iteration, so a per-iteration mean would mostly reflect a single episode.
constexpr size_t kRecentEpisodes = 20;

// Shared between the step UDF (which records finished episodes) and the logging sink.
struct Stats {
  std::map<int64_t, std::vector<double>> returns;  // by iteration
  // When each iteration's last env step ran: the progress sink may be scheduled late.
  std::map<int64_t, Clock::time_point> stepped;
  Clock::time_point start;
  int64_t envs = 0, steps = 0;
  std::deque<double> recent;  // the last kRecentEpisodes finished episodes' returns
  std::vector<CurvePoint> curve;
  double last_mean = std::nan("");
  int64_t episodes = 0;
  std::ostream* log = nullptr;
};

// The index reading all of x's temporal dims at the current point, with t replaced by `entry`.
Expr index_with(const RT& x, const Dim& t, const Expr& entry) {
  std::vector<Expr> e;
  for (const Dim& d : x.domain()) e.push_back(d.var.same(t.var) ? entry : d.var);
  return e.size() == 1 ? e[0] : seq(e);
}

RT rollout(const RT& x, const Dim& t) {
  return x[index_with(x, t, slice(0, t.bound))];
}

// Normalizes over all elements (per point of the domain).
RT normalized(const RT& x) {
  RT m = x.mean();
  RT c = x - m;
  return c / ((c.square().mean() + 1e-8).sqrt());
}

}  // namespace

RT discounted_returns(const RT& x, const RT& done, double gamma, const Dim& t, Loc loc) {
  Expr future = slice(t.var, t.bound);
  RT xw = x[index_with(x, t, future)];
  RT dw = done[index_with(done, t, future)];
  // Dones in [t, k): an exclusive cumulative sum along the window.
  RT before = dw.cumsum(0, loc) - dw;
  return where(before < 0.5, xw, 0.0, loc).discounted_sum(gamma, 0, loc);
}

void validate(const TrainConfig& c) {
  if (c.algo != "reinforce" && c.algo != "a2c" && c.algo != "ppo")
    throw UserError(cat("unknown algorithm '", c.algo, "' (expected ppo, a2c or reinforce)"));
  std::vector<std::string> envs = env_names();
  if (std::find(envs.begin(), envs.end(), c.env) == envs.end() || c.env == "synthetic") {
    std::string names;
    for (const std::string& e : envs)
      if (e != "synthetic") names += (names.empty() ? "" : ", ") + e;
    throw UserError(cat("unknown environment '", c.env, "' (expected one of ", names, ")"));
  }
  auto positive = [](const char* what, double v) {
    if (!(v > 0) || !std::isfinite(v))
      throw UserError(cat(what, " must be a positive number, got ", v));
  };
  positive("--iterations", static_cast<double>(c.iterations));
  positive("--num-envs", static_cast<double>(c.num_envs));
  positive("--steps", static_cast<double>(c.steps));
  positive("--lr", c.lr);
  if (c.steps < 2) throw UserError(cat("--steps must be at least 2, got ", c.steps));
  if (!(c.gamma > 0 && c.gamma <= 1))
    throw UserError(cat("gamma must be in (0, 1], got ", c.gamma));
}

TrainResult train(const TrainConfig& cfg, std::ostream* log) {
  validate(cfg);
  const int64_t N = cfg.num_envs, T = cfg.steps, I = cfg.iterations;
  std::shared_ptr<BatchedEnv> env = make_env(cfg.env, N);
  const Space& aspace = env->action_space();
  const bool discrete = aspace.discrete;
  const int64_t obs_dim = env->obs_numel();
  const int64_t act_dim = discrete ? aspace.n : aspace.numel();
  const bool use_value = cfg.algo != "reinforce";
  auto stats = std::make_shared<Stats>();
  stats->envs = N;
  stats->steps = T;
  stats->log = log;

  Context ctx;
  Dim i = ctx.dim("i", "I");
  Dim t = ctx.dim("t", "T");

  // ---- acting ----
  const uint64_t seed = cfg.seed;
  auto reset_fn = [env, seed, N, obs_dim](const std::vector<HostTensor>&,
                                          const std::vector<int64_t>&) {
    return std::vector<HostTensor>{HostTensor::from(env->reset(seed), {N, obs_dim})};
  };
  RT reset = ctx.udf("reset", reset_fn, {}, {TensorType{DType::Float32, {N, obs_dim}}}, {})[0];
  RT o = ctx.placeholder(TensorType{DType::Float32, {N, obs_dim}}, {i, t}, "obs");

  const nn::Linear::Init init =
      cfg.orthogonal_init ? nn::Linear::Init::Orthogonal : nn::Linear::Init::Default;
  nn::MLP pi(ctx, {obs_dim, cfg.hidden, cfg.hidden, act_dim}, i, nn::tanh, nn::identity, true,
             init);
  std::vector<nn::Parameter> params = pi.parameters();
  nn::Parameter log_std;
  if (!discrete) {
    log_std = nn::Parameter(ctx.zeros({act_dim}), i, "log_std");
    params.push_back(log_std);
  }
  RT a;
  if (discrete) {
    a = nn::Categorical(pi(o)).sample();
  } else {
    a = nn::Normal(pi(o), log_std).sample();
  }

  auto step_fn = [env, stats, discrete, N, obs_dim, act_dim, aspace](
                     const std::vector<HostTensor>& in, const std::vector<int64_t>& p) {
    std::vector<float> act(static_cast<size_t>(in[0].numel()));
    for (size_t k = 0; k < act.size(); ++k) {
      double v = in[0].at(static_cast<int64_t>(k));
      if (!discrete) {
        size_t e = k % static_cast<size_t>(act_dim);
        v = std::clamp<double>(v, aspace.low[e], aspace.high[e]);
      }
      act[k] = static_cast<float>(v);
    }
    StepResult r = env->step(act);
    stats->stepped[p[0]] = Clock::now();
    std::vector<float> done(static_cast<size_t>(N)), term(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) {
      done[n] = (r.terminated[n] || r.truncated[n]) ? 1.0f : 0.0f;
      term[n] = r.terminated[n] ? 1.0f : 0.0f;
      if (done[n] > 0) stats->returns[p[0]].push_back(r.episode_return[n]);
    }
    const std::vector<float>& last = r.final_obs.empty() ? r.obs : r.final_obs;
    return std::vector<HostTensor>{HostTensor::from(r.obs, {N, obs_dim}),
                                   HostTensor::from(r.reward, {N}), HostTensor::from(done, {N}),
                                   HostTensor::from(term, {N}),
                                   HostTensor::from(last, {N, obs_dim})};
  };
  std::vector<RT> st =
      ctx.udf("env_step", step_fn, {a},
              {TensorType{DType::Float32, {N, obs_dim}}, TensorType{DType::Float32, {N}},
               TensorType{DType::Float32, {N}}, TensorType{DType::Float32, {N}},
               TensorType{DType::Float32, {N, obs_dim}}},
              {i, t});
  // done ends an episode (terminated or truncated); only termination stops bootstrapping, from
  // the episode's own last observation (final_obs) rather than the reset one.
  RT next_obs = st[0], reward = st[1], done = st[2], terminated = st[3], final_obs = st[4];
  o[{Expr(0), Expr(0)}] = reset;
  o[{i.var, t.var + 1}] = next_obs;
  o[{i.var + 1, Expr(0)}] = next_obs[{i.var, t.bound - 1}];

  // ---- learning (per iteration, on the whole rollout) ----
  RT O = rollout(o, t);  // (T, N, obs)
  RT A = rollout(a, t);  // (T, N) or (T, N, act)
  RT logp, ent;
  if (discrete) {
    nn::Categorical d(pi(O));
    logp = d.log_prob(A);
    ent = d.entropy();
  } else {
    nn::Normal d(pi(O), log_std);
    logp = d.log_prob(A);
    ent = d.entropy();
  }

  RT loss;
  if (!use_value) {
    RT G = rollout(discounted_returns(reward, done, cfg.gamma, t), t);
    loss = -(logp * normalized(G).detach()).mean() - cfg.ent_coef * ent.mean();
  } else {
    nn::MLP vf(ctx, {obs_dim, cfg.hidden, cfg.hidden, 1}, i, nn::tanh, nn::identity, true, init);
    for (const nn::Parameter& p : vf.parameters()) params.push_back(p);
    RT V = vf(O).squeeze(-1);                                // (T, N)
    RT Vn = vf(rollout(final_obs, t)).squeeze(-1).detach();  // (T, N)
    RT R = rollout(reward, t);
    RT TERM = rollout(terminated, t);
    RT delta = R + cfg.gamma * (1.0 - TERM) * Vn - V.detach();  // (T, N)
    double lambda = cfg.gae_lambda;
    // GAE: the per-timestep TD errors discounted by gamma * lambda within episodes.
    RT adv_t = discounted_returns(delta.index(0, t.var), done, cfg.gamma * lambda, t);
    RT adv = rollout(adv_t, t);
    RT ret = (adv + V.detach()).detach();
    RT nadv = normalized(adv).detach();
    RT pg;
    if (cfg.algo == "ppo") {
      // One clipped-objective step per rollout: the ratio is against the acting policy's
      // log-probs (equal parameters, so ratio = 1 at this single step).
      RT ratio = (logp - logp.detach()).exp();
      pg = -((ratio * nadv).minimum(ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * nadv)).mean();
    } else {
      pg = -(logp * nadv).mean();
    }
    RT vloss = 0.5 * (V - ret).square().mean();
    loss = pg + cfg.vf_coef * vloss - cfg.ent_coef * ent.mean();
  }
  loss = loss.named("loss");

  optim::LearningRate lr = cfg.lr;
  if (cfg.lr_decay) lr = optim::linear_decay(ctx, cfg.lr, 0.0, i.var, i.bound);
  std::unique_ptr<optim::Optimizer> opt;
  if (cfg.optimizer == "sgd")
    opt = std::make_unique<optim::SGD>(params, lr);
  else
    opt = std::make_unique<optim::Adam>(params, lr, 0.9, 0.999, 1e-5);
  optim::minimize(loss, *opt, cfg.max_grad_norm);
  if (cfg.verbose) {
    std::map<std::string, int> kinds;
    for (const ir::OpNode& op : ctx.graph().ops()) ++kinds[ir::op_kind_name(op.kind)];
    for (auto& [k, n] : kinds) std::cerr << k << " " << n << "\n";
  }

  // ---- progress: a sink per iteration ----
  auto log_fn = [stats](const std::vector<HostTensor>& in, const std::vector<int64_t>& p) {
    int64_t it = p[0];
    auto found = stats->returns.find(it);
    if (found != stats->returns.end() && !found->second.empty()) {
      const std::vector<double>& r = found->second;
      stats->recent.insert(stats->recent.end(), r.begin(), r.end());
      while (stats->recent.size() > kRecentEpisodes) stats->recent.pop_front();
      stats->last_mean = std::accumulate(stats->recent.begin(), stats->recent.end(), 0.0) /
                         static_cast<double>(stats->recent.size());
      stats->episodes += static_cast<int64_t>(r.size());
      stats->returns.erase(found);
    }
    int64_t env_steps = (it + 1) * stats->envs * stats->steps;
    auto when = stats->stepped.find(it);
    Clock::time_point now = when != stats->stepped.end() ? when->second : Clock::now();
    if (when != stats->stepped.end()) stats->stepped.erase(when);
    double secs = std::chrono::duration<double>(now - stats->start).count();
    stats->curve.push_back({env_steps, stats->last_mean});
    if (stats->log) {
      std::ostringstream line;
      line << "iteration " << it + 1 << "  env_steps " << env_steps << "  mean_return "
           << std::fixed << std::setprecision(2) << stats->last_mean << "  loss "
           << std::setprecision(4) << in[0].at(0) << "  sps " << std::setprecision(0)
           << static_cast<double>(env_steps) / std::max(secs, 1e-9) << "\n";
      *stats->log << line.str() << std::flush;
    }
    return std::vector<HostTensor>{};
  };
  ctx.udf("progress", log_fn, {loss}, {}, {i});

  CompileOptions co;
  co.seed = cfg.seed;
  co.verbose = cfg.verbose;
  co.whole_component = cfg.whole_component;
  co.proximity = false;
  Clock::time_point c0 = Clock::now();
  Executable exe = ctx.compile({{i.bound, I}, {t.bound, T}}, co);
  TrainResult res;
  res.compile_seconds = std::chrono::duration<double>(Clock::now() - c0).count();
  stats->start = Clock::now();
  exe.run();
  res.run_seconds = std::chrono::duration<double>(Clock::now() - stats->start).count();
  res.curve = stats->curve;
  res.episodes = stats->episodes;
  // The final return: the mean over the last (up to) 10% of iterations that saw an episode end.
  size_t tail = std::max<size_t>(1, res.curve.size() / 10);
  double sum = 0;
  size_t n = 0;
  for (size_t k = res.curve.size() - std::min(tail, res.curve.size()); k < res.curve.size(); ++k)
    if (!std::isnan(res.curve[k].mean_return)) {
      sum += res.curve[k].mean_return;
      ++n;
    }
  res.final_mean_return = n ? sum / static_cast<double>(n) : std::nan("");
  return res;
}

}  // namespace tempo::rl
