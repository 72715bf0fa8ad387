// The shared part of the RL programs (TEMPO Alg. 1): acting, advantage estimation, and the
// training driver around each algorithm's loss (reinforce.cpp, a2c.cpp, ppo.cpp, dqn.cpp, sac.cpp,
// td3.cpp).
//
// Acting runs per (i, t): o[0, 0] = reset(), o[i, t + 1] = step(a[i, t]) and o[i + 1, 0] = the
// last observation of iteration i, so every env call is ordered by data dependences. Learning
// runs per iteration i on the whole rollout read as constant-range slices x[i, 0:T] (batched
// forward passes); returns and advantages read the future x[i, t:T] per timestep, which the
// lifting pass turns into one reverse scan per iteration. PPO's updates run per (i, u) on
// minibatches of that rollout, with parameters over (i, u); acting reads them at (i, 0).
#include "rl/algorithms/program.h"
#include "driver/compile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <numbers>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>

#include "api/distributed.h"
#include "api/random_offset.h"
#include "nn/distributions.h"
#include "nn/module.h"
#include "optim/optim.h"
#include "rl/algorithms/algorithms.h"
#include "rl/algorithms/checkpoint.h"
#include "rl/algorithms/saved_policy.h"
#include "rl/envs/env.h"
#include "rl/envs/normalize.h"
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
  std::optional<Clock::time_point> last_step_of_iteration;
  std::vector<double> iteration_seconds;
  std::optional<Clock::time_point> start;  // when the run's first program started running
  int64_t envs = 0, steps = 0;
  std::deque<double> recent;  // the last kRecentEpisodes finished episodes' returns
  std::vector<CurvePoint> curve;
  double last_mean = std::nan("");
  int64_t episodes = 0;
  std::ostream* log = nullptr;
  std::function<void(const std::vector<CurvePoint>&)> on_iteration;
  int64_t first = 0;  // the whole run's iteration at i = 0 (a resumed run's start)
  int64_t process_first = 0;  // the iteration this process started from (speeds count after it)
  // A progress line every log_every iterations and after the last (of `total`).
  int64_t log_every = 1, total = 0;
  std::shared_ptr<detail::CheckpointParts> parts;  // null: no training checkpoints
};

// A parameter after all of iteration i's updates: its update read at (i, U - 1) for nested
// steps (i, u), at i otherwise.
RT after_iteration(const RT& next, const Dim& i) {
  if (next.domain().size() == 1 && next.domain()[0] == i) return next;
  std::vector<Expr> at;
  for (const Dim& d : next.domain()) at.push_back(d == i ? d.var : d.bound - 1);
  return next[at.size() == 1 ? at[0] : seq(at)];
}

RT after_iteration(const nn::Parameter& p, const Dim& i) {
  if (!p.update().defined()) internal_error(cat("parameter '", p.param_name(), "' has no update"));
  return after_iteration(p.update(), i);
}

}  // namespace

namespace detail {

Expr index_with(const RT& x, const Dim& t, const Expr& entry) {
  std::vector<Expr> e;
  for (const Dim& d : x.domain()) e.push_back(d.var.same(t.var) ? entry : d.var);
  return e.size() == 1 ? e[0] : seq(e);
}

RT rollout(const RT& x, const Dim& t) {
  return x[index_with(x, t, slice(0, t.bound))];
}

// The mean over all elements; in a data-parallel program over every rank's elements (each rank
// holds as many), so that statistics are the whole job's batch's, as in one process.
RT job_mean(const RT& x) {
  RT m = x.mean();
  return x.ctx().data_parallel() ? all_reduce(m, true) : m;
}

// The standard deviation of a centered RT over all elements (population, eps inside the sqrt, as
// CleanRL's advantage normalization).
RT deviation(const RT& centered) {
  return (job_mean(centered.square()) + 1e-8).sqrt();
}

// Normalizes over all elements (per point of the domain).
RT normalized(const RT& x) {
  RT c = x - job_mean(x);
  return c / deviation(c);
}

std::vector<HostTensor> Carried::next_optimizer_states(size_t n) const {
  const size_t from = optimizer_states.size();
  if (from + n > resume->optimizer_states.size())
    throw UserError(cat("--resume: the checkpoint holds ", resume->optimizer_states.size(),
                        " optimizer states, the program has more"));
  const auto begin = resume->optimizer_states.begin() + static_cast<std::ptrdiff_t>(from);
  return {begin, begin + static_cast<std::ptrdiff_t>(n)};
}

HostTensor Carried::next_target(const nn::Parameter& p) const {
  const size_t k = targets.size();
  if (k >= resume->targets.size())
    throw UserError(cat("--resume: the checkpoint holds ", resume->targets.size(),
                        " target network tensors, the program has more"));
  const HostTensor& v = resume->targets[k];
  if (v.shape != p.type().shape.static_dims() || v.dtype != p.type().dtype)
    throw UserError(cat("--resume: the checkpoint's target tensor ", k, " is not of type ",
                        p.type().str(), " (that of '", p.param_name(), "')"));
  return v;
}

void add_optimizer(Acting& a, const std::vector<nn::Parameter>& params, const RT& loss, int64_t U) {
  const TrainConfig& cfg = a.cfg;
  const int64_t first = a.first_iteration;
  optim::LearningRate lr = cfg.lr;
  if (cfg.lr_decay)
    lr = first == 0
             ? optim::linear_decay(a.ctx, cfg.lr, 0.0, a.i.var, a.i.bound)
             : optim::linear_decay(a.ctx, cfg.lr, 0.0, a.i.var + first, Expr(cfg.iterations));
  std::unique_ptr<optim::Optimizer> opt;
  const bool dqn = cfg.algo == "dqn";
  if (cfg.optimizer == "sgd")
    opt = std::make_unique<optim::SGD>(params, lr);
  else  // PyTorch's eps in DQN, CleanRL's 1e-5 in the policy-gradient algorithms
    opt = std::make_unique<optim::Adam>(params, lr, 0.9, 0.999, dqn ? 1e-8 : 1e-5);
  if (a.carried.resume)
    opt->resume(first * U, a.carried.learned() ? a.carried.resume->optimizer_states
                                               : std::vector<HostTensor>{});
  // DQN acts learning_starts steps before its first update.
  if (dqn) opt->delay(iterations_of(cfg.learning_starts, cfg));
  optim::minimize(loss, *opt, cfg.max_grad_norm);
  const std::vector<optim::Optimizer::StateTensor>& states = opt->states();
  a.carried.optimizer_states.insert(a.carried.optimizer_states.end(), states.begin(), states.end());
}

}  // namespace detail

RT discounted_returns(const RT& x, const RT& done, double gamma, const Dim& t, int64_t n, Loc loc) {
  Expr future = n > 0 ? slice(t.var, tempo::min(t.var + n, t.bound)) : slice(t.var, t.bound);
  return x[detail::index_with(x, t, future)].discounted_sum(
      gamma, done[detail::index_with(done, t, future)], 0, loc);
}

CompileOptions default_train_compile() {
  CompileOptions o;
  o.proximity = false;
  o.seed = 1;
  return o;
}

std::vector<int64_t> mlp_layer_sizes(int64_t in, const std::vector<int64_t>& hidden, int64_t out) {
  std::vector<int64_t> sizes{in};
  sizes.insert(sizes.end(), hidden.begin(), hidden.end());
  sizes.push_back(out);
  return sizes;
}

void TrainConfig::set_hidden_width(int64_t width) {
  hidden.assign(hidden.size(), width);
}

void TrainConfig::set_hidden_layers(int64_t n) {
  if (n < 1) throw UserError(cat("--layers must be a positive number, got ", n));
  hidden.assign(static_cast<size_t>(n), hidden.empty() ? 64 : hidden.front());
}

TrainConfig TrainConfig::defaults(const std::string& algo) {
  TrainConfig c;
  c.algo = algo;
  if (algo == "ppo") {
    c.num_envs = 4;
    c.steps = 128;
    c.iterations = 976;  // 500k env steps
    c.lr = 2.5e-4;
  }
  if (algo == "dqn") {
    c.num_envs = 1;
    c.steps = 10;         // train_frequency
    c.iterations = 50000;  // 500k env steps
    c.lr = 2.5e-4;
    c.lr_decay = false;
    c.max_grad_norm = 0;
    c.hidden = {120, 84};
    c.orthogonal_init = false;
  }
  if (algo == "sac" || algo == "td3") {
    c.num_envs = 1;
    c.steps = 1;
    c.iterations = 20000;
    c.lr = 1e-3;
    c.lr_decay = false;
    c.max_grad_norm = 0;
    c.hidden = {256, 256};
    c.orthogonal_init = false;
    c.buffer_size = 1000000;
    c.batch_size = 256;
    c.learning_starts = 5000;
  }
  if (algo == "td3") c.lr = 3e-4;
  // TEMPO Alg. 1: REINFORCE learns from its acting forward pass (no recomputation); the passes
  // batch its per-step backward passes.
  c.per_step = algo == "reinforce";
  return c;
}

bool is_off_policy(const std::string& algo) {
  return algo == "dqn" || algo == "sac" || algo == "td3";
}

namespace {

// DQN acts on discrete actions, SAC and TD3 on continuous ones.
void check_action_space(const TrainConfig& c, bool discrete) {
  if (c.algo == "dqn" && !discrete)
    throw UserError(cat("dqn needs a discrete action space; ", c.env,
                        "'s actions are continuous (ppo, a2c, reinforce, sac and td3 handle "
                        "those)"));
  if ((c.algo == "sac" || c.algo == "td3") && discrete)
    throw UserError(cat(c.algo, " needs a continuous (box) action space; ", c.env,
                        "'s actions are discrete (ppo, a2c, reinforce and dqn handle those)"));
}

void validate_off_policy(const TrainConfig& c) {
  if (c.compile.communicator) throw UserError(cat(c.algo, " does not train data-parallel"));
  const int64_t per_iteration = c.num_envs * c.steps;
  auto whole = [&](const char* flag, int64_t v, bool zero_ok) {
    if (v < (zero_ok ? 0 : 1) || v % per_iteration != 0)
      throw UserError(cat(flag, " ", v, " must be a ", zero_ok ? "" : "positive ",
                          "multiple of num_envs x steps = ", per_iteration,
                          " (", c.algo, " learns once per iteration of that many env steps)"));
  };
  whole("--buffer-size", c.buffer_size, false);
  whole("--learning-starts", c.learning_starts, true);
  whole("--target-every", c.target_every, false);
  if (c.batch_size < 1) throw UserError(cat("--batch-size must be positive, got ", c.batch_size));
  auto probability = [](const char* flag, double v) {
    if (!(v >= 0 && v <= 1)) throw UserError(cat(flag, " must lie in [0, 1], got ", v));
  };
  probability("--eps-start", c.eps_start);
  probability("--eps-end", c.eps_end);
  probability("--exploration-fraction", c.exploration_fraction);
  probability("--tau", c.tau);
  // A built-in environment's action space is known before anything runs (validate() checked
  // its name first).
  if (!c.make_env)
    check_action_space(c, make_env(c.env, 1, c.env_options)->action_space().discrete);
  if (c.algo != "dqn" && c.optimizer != "adam")
    throw UserError(cat(c.algo, " trains with Adam (an optimizer per network), not --optimizer ",
                        c.optimizer));
  auto positive = [](const char* flag, double v) {
    if (!(v > 0) || !std::isfinite(v))
      throw UserError(cat(flag, " must be a positive number, got ", v));
  };
  positive("--policy-lr", c.policy_lr);
  for (auto [flag, v] : {std::pair{"--exploration-noise", c.exploration_noise},
                         {"--policy-noise", c.policy_noise}, {"--noise-clip", c.noise_clip}})
    if (!(v >= 0) || !std::isfinite(v))
      throw UserError(cat(flag, " must be a number >= 0, got ", v));
  if (c.policy_every < 1)
    throw UserError(cat("--policy-frequency must be positive, got ", c.policy_every));
}

}  // namespace

void validate(const TrainConfig& c) {
  if (c.algo != "reinforce" && c.algo != "a2c" && c.algo != "ppo" && !is_off_policy(c.algo))
    throw UserError(
        cat("unknown algorithm '", c.algo, "' (expected ppo, a2c, reinforce, dqn, sac or td3)"));
  std::vector<std::string> envs = env_names();
  if (!c.make_env && std::find(envs.begin(), envs.end(), c.env) == envs.end()) {
    std::string names;
    for (const std::string& e : envs) names += (names.empty() ? "" : ", ") + e;
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
  if (c.hidden.empty()) throw UserError("the networks have no hidden layer (--layers)");
  for (int64_t w : c.hidden) positive("--hidden", static_cast<double>(w));
  positive("--epochs", static_cast<double>(c.epochs));
  positive("--minibatches", static_cast<double>(c.minibatches));
  if (c.steps < 2 && !is_off_policy(c.algo))  // returns need a rollout
    throw UserError(cat("--steps must be at least 2, got ", c.steps));
  if (!(c.gamma > 0 && c.gamma <= 1))
    throw UserError(cat("gamma must be in (0, 1], got ", c.gamma));
  if (c.n_step < 0) throw UserError(cat("--n-step must be 0 (Monte-Carlo) or positive"));
  if (c.n_step > 0 && c.algo == "ppo")
    throw UserError("--n-step applies to reinforce and a2c (PPO uses GAE, see --gae-lambda)");
  if (c.per_step && c.algo != "reinforce") throw UserError("--per-step applies to reinforce");
  if (c.algo == "ppo" && (c.num_envs * c.steps) % c.minibatches != 0)
    throw UserError(cat("--minibatches ", c.minibatches,
                        " must divide num_envs x steps = ", c.num_envs * c.steps));
  if (c.optimizer != "adam" && c.optimizer != "sgd")
    throw UserError(cat("unknown optimizer '", c.optimizer, "' (expected adam or sgd)"));
  if (c.truncation != "bootstrap" && c.truncation != "terminate")
    throw UserError(
        cat("unknown truncation '", c.truncation, "' (expected bootstrap or terminate)"));
  if (c.save_every < 0)
    throw UserError(
        cat("--save-every must be 0 (at the end only) or positive, got ", c.save_every));
  if (c.save_every > 0 && c.save_dir.empty() && c.resume_dir.empty())
    throw UserError("--save-every needs a directory to save in (--save DIR)");
  if (!c.resume_dir.empty() && c.compile.communicator)
    throw UserError("--resume is not supported in a data-parallel run");
  if (is_off_policy(c.algo)) validate_off_policy(c);
}

namespace detail {

Policy::Policy(bool discrete, const RT& out, const RT& log_std) {
  if (discrete)
    categorical_.emplace(out);
  else
    normal_.emplace(out, log_std);
}
RT Policy::sample(const nn::Shard* shard) const {
  if (shard) return categorical_ ? categorical_->sample(*shard) : normal_->sample(*shard);
  return categorical_ ? categorical_->sample() : normal_->sample();
}
RT Policy::log_prob(const RT& actions) const {
  return categorical_ ? categorical_->log_prob(actions) : normal_->log_prob(actions);
}
RT Policy::entropy() const {
  return categorical_ ? categorical_->entropy() : normal_->entropy();
}

Advantages advantages(Acting& a) {
  const TrainConfig& cfg = a.cfg;
  nn::MLP vf(a.ctx, a.mlp_sizes(1), a.steps, nn::tanh, nn::identity, true, a.init, 1.0);
  for (const nn::Parameter& p : vf.parameters()) a.params.push_back(p);
  // With the acting parameters, written per step as CleanRL computes them while acting: the
  // vectorize pass batches them over the rollout, and under interleaving (a memory budget) they
  // run in the acting loop, so no reader of the whole rollout needs it on the device.
  auto values = [&](const RT& x) {
    return rollout(vf.forward_at(a.start, x).squeeze(-1).detach(), a.t);  // (T, N)
  };
  RT V0 = values(a.obs), Vn = values(a.final_obs);
  RT R = rollout(a.reward, a.t);
  RT TERM = rollout(a.terminated, a.t);
  RT delta = R + cfg.gamma * (1.0 - TERM) * Vn - V0;  // (T, N)
  // GAE: the per-timestep TD errors discounted by gamma * lambda within episodes.
  RT adv_t = discounted_returns(delta.index(0, a.t.var), a.done, cfg.gamma * cfg.gae_lambda, a.t);
  RT ADV = rollout(adv_t, a.t).detach();
  return Advantages{vf, V0, ADV, ADV + V0};
}

}  // namespace detail

namespace {

// The environment and this rank's place in a data-parallel job of `world` ranks.
struct Job {
  int64_t N, T, I, U;  // envs, steps, iterations and PPO's updates per iteration
  std::shared_ptr<BatchedEnv> env;
  const NormalizedEnv* normalized = nullptr;  // env, where it normalizes
  // The observation statistics at the end of each save point's iteration not yet saved.
  std::shared_ptr<std::map<int64_t, ObservationNormalization>> obs_statistics;
  int64_t save_every = 0;
  Space aspace;
  bool discrete;
  int64_t obs_dim, act_dim;
  std::shared_ptr<Communicator> comm;
  int64_t world, rank;
};

Job make_job(const TrainConfig& cfg) {
  Job job;
  job.N = cfg.num_envs;
  job.T = cfg.steps;
  job.I = cfg.iterations;
  job.U = cfg.algo == "ppo" ? cfg.epochs * cfg.minibatches : 1;
  std::unique_ptr<BatchedEnv> env =
      cfg.make_env ? cfg.make_env(job.N) : make_env(cfg.env, job.N, cfg.env_options);
  if (!env) throw UserError(cat("the environment factory of '", cfg.env, "' returned no env"));
  job.env = normalize(std::move(env),
                      {cfg.normalize_observations, cfg.normalize_rewards, cfg.gamma});
  job.normalized = dynamic_cast<const NormalizedEnv*>(job.env.get());
  if (cfg.normalize_observations && !cfg.save_dir.empty())
    job.obs_statistics = std::make_shared<std::map<int64_t, ObservationNormalization>>();
  job.save_every = cfg.save_every;
  job.aspace = job.env->action_space();
  job.discrete = job.aspace.discrete;
  job.obs_dim = job.env->obs_numel();
  job.act_dim = job.discrete ? job.aspace.n : job.aspace.numel();
  job.comm = cfg.compile.communicator;
  job.world = job.comm ? job.comm->world_size() : 1;
  job.rank = job.comm ? job.comm->rank() : 0;
  return job;
}

// What the env_step UDF returns per (i, t). done ends an episode (terminated or truncated); only
// `terminated` stops bootstrapping, from the episode's own last observation (final_obs) rather
// than the reset one. With TrainConfig::truncation "terminate" it holds truncations too.
struct EnvStep {
  RT next_obs, reward, done, terminated, final_obs;  // final_obs: where values bootstrap only
};

// Steps the environments with actions `a` at every (i, t), recording finished episodes and step
// times in `stats`.
EnvStep step_env(Context& ctx, const Job& job, const std::shared_ptr<Stats>& stats, const RT& a,
                 const Dim& i, const Dim& t, bool bootstraps, bool truncation_terminates) {
  auto result = std::make_shared<StepResult>();  // reused: no allocation per step
  const int64_t N = job.N, obs_dim = job.obs_dim, act_dim = job.act_dim;
  auto step_fn = [env = job.env, stats, result, discrete = job.discrete, N, obs_dim, act_dim,
                  aspace = job.aspace, normalized = job.normalized, kept = job.obs_statistics,
                  I = job.I, save_every = job.save_every,
                  bootstraps, truncation_terminates](const std::vector<HostTensor>& in,
                                                     const std::vector<int64_t>& p) {
    std::vector<float> act(static_cast<size_t>(in[0].numel()));
    for (size_t k = 0; k < act.size(); ++k) {
      double v = in[0].at(static_cast<int64_t>(k));
      if (!discrete) {
        size_t e = k % static_cast<size_t>(act_dim);
        v = std::clamp<double>(v, aspace.low[e], aspace.high[e]);
      }
      act[k] = static_cast<float>(v);
    }
    env->step_into(act, *result);
    const StepResult& r = *result;
    Clock::time_point now = Clock::now();
    if (p[0] > 0 && p[1] + 1 == stats->steps && stats->last_step_of_iteration)
      stats->iteration_seconds.push_back(
          std::chrono::duration<double>(now - *stats->last_step_of_iteration).count());
    if (p[1] + 1 == stats->steps) {
      stats->last_step_of_iteration = now;
      // At the save points (save_points()), for the saved policy.
      if (kept && (p[0] + 1 == I ||
                   (save_every > 0 && (stats->first + p[0] + 1) % save_every == 0)))
        (*kept)[p[0]] = normalized->observation_normalization();
    }
    stats->stepped[p[0]] = now;
    const int64_t after = stats->first + p[0] + 1;  // iterations done after this one
    if (stats->parts && p[1] + 1 == stats->steps && stats->parts->wanted(after))
      stats->parts->env(after, HostTensor::from(r.obs, {N, obs_dim}), env->state());
    std::vector<float> done(static_cast<size_t>(N)), term(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) {
      done[n] = (r.terminated[n] || r.truncated[n]) ? 1.0f : 0.0f;
      term[n] = (r.terminated[n] || (truncation_terminates && r.truncated[n])) ? 1.0f : 0.0f;
      if (done[n] > 0) stats->returns[p[0]].push_back(r.episode_return[n]);
    }
    std::vector<HostTensor> out{HostTensor::from(r.obs, {N, obs_dim}),
                                HostTensor::from(r.reward, {N}), HostTensor::from(done, {N}),
                                HostTensor::from(term, {N})};
    if (bootstraps)  // a second copy of the observations: only where values bootstrap from it
      out.push_back(HostTensor::from(r.final_obs.empty() ? r.obs : r.final_obs, {N, obs_dim}));
    return out;
  };
  std::vector<TensorType> step_types{
      TensorType{DType::Float32, {N, obs_dim}}, TensorType{DType::Float32, {N}},
      TensorType{DType::Float32, {N}}, TensorType{DType::Float32, {N}}};
  if (bootstraps) step_types.push_back(TensorType{DType::Float32, {N, obs_dim}});
  std::vector<RT> st = ctx.udf("env_step", step_fn, {a}, step_types, {i, t});
  return EnvStep{st[0], st[1], st[2], st[3], bootstraps ? st[4] : RT()};
}

// A sink per iteration reading its last loss: the learning curve and a progress line, which shows
// `after` as the loss from the whole run's iteration `loss_from` on ("-" before it: DQN computes
// no loss before its first update). A program that only acts (the warm-up) has no loss: `after`
// is then a value of the iteration's last step, read so that the sink runs after that step.
void add_progress(Context& ctx, const std::shared_ptr<Stats>& stats, const RT& after,
                  const Dim& i, int64_t loss_from = 0) {
  auto log_fn = [stats, loss_from](const std::vector<HostTensor>& in,
                                  const std::vector<int64_t>& p) {
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
    const int64_t done = stats->first + it + 1;  // iterations of the whole run
    int64_t env_steps = done * stats->envs * stats->steps;
    const int64_t here = (done - stats->process_first) * stats->envs * stats->steps;  // speed
    auto when = stats->stepped.find(it);
    Clock::time_point now = when != stats->stepped.end() ? when->second : Clock::now();
    if (when != stats->stepped.end()) stats->stepped.erase(when);
    double secs = std::chrono::duration<double>(now - *stats->start).count();
    stats->curve.push_back({env_steps, stats->last_mean});
    if (stats->log && (done % stats->log_every == 0 || done == stats->total)) {
      std::ostringstream line;
      line << "iteration " << done << "  env_steps " << env_steps << "  mean_return "
           << std::fixed << std::setprecision(2) << stats->last_mean << "  loss ";
      if (done > loss_from)
        line << std::setprecision(4) << in[0].at(0);
      else
        line << "-";
      line << "  sps " << std::setprecision(0)
           << static_cast<double>(here) / std::max(secs, 1e-9) << "  time "
           << std::setprecision(1) << secs << "s\n";
      *stats->log << line.str() << std::flush;
    }
    if (stats->parts && stats->parts->wanted(done))
      stats->parts->stats(done, stats->curve, {stats->recent.begin(), stats->recent.end()},
                          stats->last_mean, stats->episodes);
    if (stats->on_iteration) stats->on_iteration(stats->curve);
    return std::vector<HostTensor>{};
  };
  ctx.udf("progress", log_fn, {after}, {}, {i});
}

// Where the run saves: after the last iteration and every save_every iterations of the whole run.
Expr save_points(const TrainConfig& cfg, const Dim& i, int64_t first) {
  Expr when = i.var == i.bound - 1;
  if (cfg.save_every > 0) when = when || (i.var + (1 + first)) % cfg.save_every == 0;
  return when;
}

// The training checkpoint's tensors at the save points: every parameter, optimizer state and
// target after the iteration, and the replay buffer (stats->parts assembles and writes the
// checkpoint).
void add_train_checkpoints(Context& ctx, const TrainConfig& cfg, const Stats& stats,
                           const std::vector<nn::Parameter>& params,
                           const detail::Carried& carried, const Dim& i) {
  const Expr when = save_points(cfg, i, stats.first);
  std::vector<RT> saved;
  for (const nn::Parameter& p : params) saved.push_back(after_iteration(p, i)[when]);
  for (const auto* states : {&carried.optimizer_states, &carried.targets})
    for (const optim::Optimizer::StateTensor& s : *states) {
      if (!s.next.defined()) internal_error(cat("state '", s.name, "' has no update"));
      saved.push_back(after_iteration(s.next, i)[when]);
    }
  for (const RT& field : carried.replay) saved.push_back(field[when]);
  const size_t P = params.size(), S = carried.optimizer_states.size(),
               G = carried.targets.size();
  // A resumed run's buffer starts with the checkpoint's transitions (the checkpoint outlives the
  // program's runs).
  const std::vector<HostTensor>* before =
      carried.resume && !carried.resume->replay.empty() ? &carried.resume->replay : nullptr;
  const int64_t buffer_rows = cfg.buffer_size;
  auto fn = [parts = stats.parts, first = stats.first, P, S, G, before, buffer_rows](
                const std::vector<HostTensor>& in, const std::vector<int64_t>& p) {
    auto range = [&](size_t from, size_t n) {
      const auto begin = in.begin() + static_cast<std::ptrdiff_t>(from);
      return std::vector<HostTensor>(begin, begin + static_cast<std::ptrdiff_t>(n));
    };
    TrainCheckpoint part;
    part.parameters = range(0, P);
    part.optimizer_states = range(P, S);
    part.targets = range(P + S, G);
    for (size_t k = P + S + G; k < in.size(); ++k) {
      const HostTensor none, &old = before ? (*before)[k - P - S - G] : none;
      part.replay.push_back(detail::latest_rows(old, in[k], buffer_rows));
    }
    parts->tensors(first + p[0] + 1, std::move(part));
    return std::vector<HostTensor>{};
  };
  ctx.udf("save_checkpoint", fn, saved, {}, {i});
}

// Saves the policy after iteration i, every save_every iterations and at the end.
void add_checkpoints(Context& ctx, const TrainConfig& cfg, const Job& job, const nn::MLP& pi,
                     const nn::Parameter& log_std, const Dim& i, int64_t first) {
  std::vector<std::pair<std::string, nn::Parameter>> policy = pi.named_parameters();
  if (log_std.defined()) policy.emplace_back("log_std", log_std);
  const Expr when = save_points(cfg, i, first);
  std::vector<RT> trained;
  std::vector<std::string> names;
  for (const auto& [name, p] : policy) {
    trained.push_back(after_iteration(p, i)[when]);
    names.push_back(name);
  }
  SavedPolicy meta;
  meta.algo = cfg.algo;
  meta.env = cfg.env;
  meta.env_options = cfg.env_options;
  meta.hidden = cfg.hidden;
  meta.observation_space = job.env->observation_space();
  meta.action_space = job.aspace;
  meta.seed = cfg.compile.seed;
  auto save_fn = [meta, names, dir = cfg.save_dir, N = job.N, T = job.T, first,
                  kept = job.obs_statistics](const std::vector<HostTensor>& in,
                                             const std::vector<int64_t>& p) {
    SavedPolicy saved = meta;
    if (kept) {  // the statistics the policy's last rollout was normalized with
      auto it = kept->find(p[0]);
      TEMPO_ASSERT(it != kept->end(), "no observation statistics of iteration ", p[0]);
      saved.obs_normalization = it->second;
      kept->erase(kept->begin(), std::next(it));
    }
    saved.iterations = first + p[0] + 1;
    saved.env_steps = saved.iterations * N * T;
    for (size_t k = 0; k < in.size(); ++k) saved.tensors[names[k]] = in[k];
    save_policy(dir, saved);
    return std::vector<HostTensor>{};
  };
  ctx.udf("save_policy", save_fn, trained, {}, {i});
}

// Every parameter after the last iteration, filled in when the program runs.
std::shared_ptr<std::vector<HostTensor>> keep_parameters(Context& ctx,
                                                         const std::vector<nn::Parameter>& params,
                                                         const Dim& i) {
  auto kept = std::make_shared<std::vector<HostTensor>>();
  std::vector<RT> trained;
  for (const nn::Parameter& p : params)
    trained.push_back(after_iteration(p, i)[i.var == i.bound - 1]);
  auto keep_fn = [kept](const std::vector<HostTensor>& in, const std::vector<int64_t>&) {
    *kept = in;
    return std::vector<HostTensor>{};
  };
  ctx.udf("keep_parameters", keep_fn, trained, {}, {i});
  return kept;
}

// The mean over the last (up to) 10% of iterations that saw an episode end.
double final_mean_return(const std::vector<CurvePoint>& curve) {
  size_t tail = std::max<size_t>(1, curve.size() / 10);
  double sum = 0;
  size_t n = 0;
  for (size_t k = curve.size() - std::min(tail, curve.size()); k < curve.size(); ++k)
    if (!std::isnan(curve[k].mean_return)) {
      sum += curve[k].mean_return;
      ++n;
    }
  return n ? sum / static_cast<double>(n) : std::nan("");
}

// Compiles and runs the program; the result with what its sinks recorded. `learning`: the
// learning program (not the warm-up), the one TrainConfig::on_compiled sees. `near`: scheduled
// with proximity constraints where isl can (a program too large for them within isl's bounds,
// e.g. with every pass off, is scheduled without).
TrainResult compile_and_run(Context& ctx, const TrainConfig& cfg, const Bounds& bounds,
                            Stats& stats, const std::vector<HostTensor>& kept, bool learning,
                            bool near = false) {
  CompileOptions co = cfg.compile;
  co.passes.interleave |= co.proximity;
  Clock::time_point c0 = Clock::now();
  std::optional<Executable> compiled;
  if (near && !co.proximity) {
    CompileOptions with = co;
    with.proximity = with.passes.interleave = true;
    try {
      compiled.emplace(compile(ctx, bounds, with));
    } catch (const UserError&) {
    }
  }
  if (!compiled) compiled.emplace(compile(ctx, bounds, co));
  Executable& exe = *compiled;
  TrainResult res;
  res.compile_seconds = std::chrono::duration<double>(Clock::now() - c0).count();
  if (cfg.on_compiled && learning) cfg.on_compiled(exe);
  const Clock::time_point run_start = Clock::now();
  if (!stats.start) stats.start = run_start;
  exe.run();
  res.run_seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
  if (const std::shared_ptr<Communicator>& comm = co.communicator) {
    res.collectives = comm->collectives();
    res.collective_seconds = comm->collective_seconds();
    comm->barrier();  // rank 0 serves the rendezvous store: it leaves last
  }
  res.curve = stats.curve;
  res.iteration_seconds = stats.iteration_seconds;
  res.peak_tracked_bytes = exe.memory().peak_bytes;
  res.peak_host_bytes = exe.memory().host_peak_bytes;
  res.launches = exe.ops_executed();
  res.episodes = stats.episodes;
  res.profile = exe.profile_report();
  res.parameters = kept;
  res.final_mean_return = final_mean_return(res.curve);
  return res;
}

}  // namespace

namespace {

// The checkpoint a run resumes from (checked against its flags and environment), if any.
std::optional<TrainCheckpoint> load_resume(const TrainConfig& cfg, const Job& job) {
  if (cfg.resume_dir.empty()) return std::nullopt;
  TrainCheckpoint c = load_checkpoint(cfg.resume_dir);
  check_resumable(cfg, c, cfg.resume_dir);
  if (c.obs.dtype != DType::Float32 || c.obs.shape != std::vector<int64_t>{job.N, job.obs_dim})
    throw UserError(cat("--resume ", cfg.resume_dir, ": the checkpoint's observations are not (",
                        job.N, ", ", job.obs_dim, ") float32"));
  if (job.env->state().empty())
    throw UserError(cat("--resume: environment '", cfg.env, "' cannot restore a saved state"));
  return c;
}

// The checkpoint's parameters become the initial values (in the program's order).
void restore_parameters(const std::vector<nn::Parameter>& params, const TrainCheckpoint& c,
                        const std::string& dir) {
  if (c.parameters.size() != params.size())
    throw UserError(cat("--resume ", dir, ": the checkpoint holds ", c.parameters.size(),
                        " parameters, the program has ", params.size()));
  for (size_t k = 0; k < params.size(); ++k)
    params[k].set_initial(c.parameters[k], cat("the checkpoint in ", dir, " (parameter ", k, ")"));
}

// Every state the checkpoint carries was taken by the program (restore_parameters checks the
// parameters).
void check_carried(const detail::Carried& carried, const TrainCheckpoint& c,
                   const std::string& dir) {
  auto check = [&](const char* what, size_t held, size_t used) {
    if (held != used)
      throw UserError(cat("--resume ", dir, ": the checkpoint holds ", held, " ", what,
                          ", the program has ", used));
  };
  if (carried.learned()) {
    check("optimizer states", c.optimizer_states.size(), carried.optimizer_states.size());
    check("target network tensors", c.targets.size(), carried.targets.size());
  }
  check("replay buffer fields", c.replay.size(), carried.replay.size());
}

// A resumed run whose checkpoint already holds every iteration: its result.
TrainResult finished_run(const TrainConfig& cfg, const TrainCheckpoint& c, std::ostream* log) {
  if (log)
    *log << "the checkpoint in " << cfg.resume_dir << " holds all " << c.iterations
         << " iterations: nothing to train\n";
  TrainResult res;
  res.curve = c.curve;
  res.episodes = c.episodes;
  res.final_mean_return = final_mean_return(res.curve);
  if (cfg.keep_parameters) res.parameters = c.parameters;
  return res;
}

// What the progress sink carries over from the checkpoint: the curve and the episodes' window.
void restore_stats(Stats& stats, const TrainCheckpoint& c) {
  stats.first = stats.process_first = c.iterations;
  stats.curve = c.curve;
  stats.recent.assign(c.recent.begin(), c.recent.end());
  stats.last_mean = c.last_mean;
  stats.episodes = c.episodes;
}

// The iterations SAC and TD3 act at random before their first update, run as a program of their
// own (TrainConfig::warm_up); 0 when there are none to run so. DQN's update is cheap next to its
// acting: a second program cost more than the updates it saved (1.11x the wall time).
int64_t warm_up_iterations(const TrainConfig& cfg, bool resumed) {
  if (!cfg.warm_up || (cfg.algo != "sac" && cfg.algo != "td3") || resumed) return 0;
  const int64_t D = detail::iterations_of(cfg.learning_starts, cfg);
  return D < cfg.iterations ? D : 0;
}

// The second result added into the first: a run of two programs.
void add_into(TrainResult& total, const TrainResult& more) {
  total.compile_seconds += more.compile_seconds;
  total.run_seconds += more.run_seconds;
  total.launches += more.launches;
  total.peak_tracked_bytes = std::max(total.peak_tracked_bytes, more.peak_tracked_bytes);
  total.peak_host_bytes = std::max(total.peak_host_bytes, more.peak_host_bytes);
}

// One compiled program of the run: acting over job.I iterations after `from`'s (if any), and
// when `learn` the algorithm's learning, the saves and the kept parameters. `from`: a checkpoint
// to continue (a resumed run's, or the warm-up's).
TrainResult run_program(const TrainConfig& cfg, const Job& job,
                        const std::shared_ptr<Stats>& stats, const TrainCheckpoint* from,
                        bool learn) {
  const int64_t first = from ? from->iterations : 0;
  const int64_t N = job.N, obs_dim = job.obs_dim;
  const bool ppo = cfg.algo == "ppo";
  Context ctx;
  // With a communicator the program has the same ops for every world size (one rank and two
  // compute the same thing): parameters broadcast from rank 0, gradients averaged.
  ctx.set_data_parallel(job.comm != nullptr);
  Dim i = ctx.dim("i", "I");
  Dim t = ctx.dim("t", "T");
  // PPO's parameters change U times per iteration: state over (i, u).
  std::optional<Dim> u;
  if (ppo) u = ctx.dim("u", "U");
  const nn::Steps steps = u ? nn::Steps{i, *u} : nn::Steps{i};
  // The parameters that act in iteration i (the warm-up's never change: their initial values).
  const Expr start = learn ? steps.start_of(i) : Expr(0);

  // ---- acting ----
  // Env copy k is seeded seed + k (rl/envs/env.h): this rank's copies are the job's copies
  // rank*N .. rank*N + N - 1.
  const uint64_t seed = cfg.compile.seed + static_cast<uint64_t>(job.rank * N);
  // A resumed run restores the environments and starts from the checkpoint's observations.
  std::optional<std::pair<HostTensor, std::string>> restart;
  if (from) restart.emplace(from->obs, from->env_state);
  auto reset_fn = [env = job.env, seed, N, obs_dim, restart](const std::vector<HostTensor>&,
                                                             const std::vector<int64_t>&) {
    if (restart) {
      // Empty: an environment that saves no state, continued by the warm-up's learning program.
      if (!restart->second.empty()) env->set_state(restart->second);
      return std::vector<HostTensor>{restart->first};
    }
    return std::vector<HostTensor>{HostTensor::from(env->reset(seed), {N, obs_dim})};
  };
  RT reset = ctx.udf("reset", reset_fn, {}, {TensorType{DType::Float32, {N, obs_dim}}}, {})[0];
  RT o = ctx.placeholder(TensorType{DType::Float32, {N, obs_dim}}, {i, t}, "obs");

  const nn::Linear::Init init =
      cfg.orthogonal_init ? nn::Linear::Init::Orthogonal : nn::Linear::Init::Default;
  auto mlp_sizes = [&](int64_t out) { return mlp_layer_sizes(obs_dim, cfg.hidden, out); };
  const bool dqn = cfg.algo == "dqn", sac = cfg.algo == "sac", td3 = cfg.algo == "td3";
  check_action_space(cfg, job.discrete);
  // CleanRL's gains: sqrt(2) for the hidden layers, 0.01 for the logits (or mean), which start
  // the policy near uniform (or near the zero mean). DQN's Q-network and SAC's (mean and
  // log-std) and TD3's actors: ReLU layers.
  const bool relu = dqn || sac || td3;
  nn::MLP pi(ctx, mlp_sizes(sac ? 2 * job.act_dim : job.act_dim), steps,
             relu ? nn::relu : nn::tanh, nn::identity, true, init,
             relu ? std::numbers::sqrt2 : 0.01);
  std::vector<nn::Parameter> params = pi.parameters();
  nn::Parameter log_std;
  if (!job.discrete && !sac && !td3) {
    log_std = nn::Parameter(ctx.zeros({job.act_dim}), steps, "log_std");
    params.push_back(log_std);
  }
  // One distribution for acting: PPO and per-step REINFORCE also read its log-probabilities.
  std::optional<detail::Policy> acting;
  RT a;
  if (dqn) {
    a = detail::epsilon_greedy(ctx, cfg, pi.forward_at(start, o), job.act_dim, i, t, first);
  } else if (sac) {
    a = detail::sac_actions(ctx, cfg, pi.forward_at(start, o), job.aspace, i, t, first);
  } else if (td3) {
    a = detail::td3_actions(ctx, cfg, pi.forward_at(start, o), job.aspace, i, t, first);
  } else {
    acting.emplace(job.discrete, pi.forward_at(start, o),
                   job.discrete ? RT() : RT(log_std[start]));
    const nn::Shard shard{job.rank, job.world};
    a = acting->sample(job.comm ? &shard : nullptr);
  }
  // A2C and PPO bootstrap values from the last observation of an episode that ended.
  const EnvStep st =
      step_env(ctx, job, stats, a, i, t, cfg.algo != "reinforce", cfg.truncation == "terminate");
  o[{Expr(0), Expr(0)}] = reset;
  o[{i.var, t.var + 1}] = st.next_obs;
  o[{i.var + 1, Expr(0)}] = st.next_obs[{i.var, t.bound - 1}];

  // ---- learning: each algorithm's loss (reinforce.cpp ... sac.cpp, td3.cpp) ----
  detail::Carried carried{from, {}, {}, {}};
  detail::Acting acting_program{
      ctx, cfg, i, t, u, steps, start, job.discrete, mlp_sizes, init, pi, log_std, params,
      acting, o, a, st.reward, st.done, st.terminated, st.final_obs, first, &job.aspace,
      carried};
  Bounds bounds{{i.bound, job.I}, {t.bound, job.T}};
  if (u) bounds.emplace_back(u->bound, job.U);
  if (!learn) {  // the warm-up: the replay buffer and the curve
    detail::add_replay_windows(acting_program);
    add_progress(ctx, stats, st.done[{i.var, t.bound - 1}], i,
                 std::numeric_limits<int64_t>::max());
    add_train_checkpoints(ctx, cfg, *stats, {}, carried, i);
    return compile_and_run(ctx, cfg, bounds, *stats, {}, false);
  }
  RT loss = ppo                       ? detail::ppo_loss(acting_program)
            : dqn                     ? detail::dqn_loss(acting_program)
            : sac                     ? detail::sac_loss(acting_program)
            : td3                     ? detail::td3_loss(acting_program)
            : cfg.algo != "reinforce" ? detail::a2c_loss(acting_program)
                                      : detail::reinforce_loss(acting_program);
  params = acting_program.params;
  if (carried.learned()) restore_parameters(params, *from, cfg.resume_dir);
  loss = loss.named("loss");
  // The off-policy algorithms' optimizers are their losses' own.
  if (!dqn && !sac && !td3) detail::add_optimizer(acting_program, params, loss, job.U);
  if (from) check_carried(carried, *from, cfg.resume_dir);

  add_progress(ctx, stats, ppo ? RT(loss[{i.var, u->bound - 1}]) : loss, i,
               dqn ? detail::iterations_of(cfg.learning_starts, cfg) : 0);
  if (!cfg.save_dir.empty() && job.rank == 0)
    add_checkpoints(ctx, cfg, job, pi, log_std, i, first);
  if (stats->parts) add_train_checkpoints(ctx, cfg, *stats, params, carried, i);
  auto kept = cfg.keep_parameters ? keep_parameters(ctx, params, i)
                                  : std::make_shared<std::vector<HostTensor>>();
  // A resumed program's i counts from 0 again: its draws are those of the whole run's i + first.
  if (first > 0) offset_random_draws(ctx, i, first);
  // Reading a checkpoint's replay rows, isl's default schedule left the deallocation of every
  // iteration's updates after the loop (SAC, 300 iterations: a 567 MiB peak, not 4 MiB);
  // proximity constraints keep it in the loop.
  const bool near = !carried.replay.empty() && from;
  return compile_and_run(ctx, cfg, bounds, *stats, *kept, true, near);
}

}  // namespace

TrainResult train(const TrainConfig& given, std::ostream* log) {
  validate(given);
  TrainConfig cfg = given;
  if (cfg.save_dir.empty()) cfg.save_dir = cfg.resume_dir;  // a resumed run keeps saving there
  Job job = make_job(cfg);
  const std::optional<TrainCheckpoint> resume = load_resume(cfg, job);
  const int64_t first = resume ? resume->iterations : 0;  // iterations done before this process
  if (resume && first == cfg.iterations) return finished_run(cfg, *resume, log);
  if (resume && log)
    *log << "resuming from " << cfg.resume_dir << " after iteration " << first << "\n";
  if (job.rank != 0) log = nullptr;  // rank 0 reports
  auto stats = std::make_shared<Stats>();
  stats->envs = job.N * job.world;  // env steps count every rank's
  stats->steps = job.T;
  stats->log = log;
  stats->on_iteration = cfg.on_iteration;
  stats->total = cfg.iterations;
  stats->log_every = std::max<int64_t>(1, cfg.iterations / 1000);  // DQN's many short ones
  if (resume) restore_stats(*stats, *resume);
  // Before compiling: a run whose results cannot be kept fails now, not at its end.
  if (!cfg.save_dir.empty()) check_writable_dir(cfg.save_dir, "--save");

  // The warm-up: acting only, up to the first update; the learning program continues from it as
  // from a checkpoint (its replay buffer, environments and curve), its learners' states fresh.
  std::optional<TrainCheckpoint> warm;
  TrainResult warm_result;
  if (const int64_t D = warm_up_iterations(cfg, resume.has_value())) {
    stats->parts = std::make_shared<detail::CheckpointParts>(
        D, [&warm](TrainCheckpoint c) { warm = std::move(c); });
    TrainConfig acting = cfg;
    acting.save_every = 0;  // its one checkpoint is the warm-up's end
    job.I = D;
    warm_result = run_program(acting, job, stats, nullptr, false);
    if (!warm) internal_error("the warm-up program ended without its checkpoint");
    warm->acting_only = true;
    stats->first = D;
  }
  // Training checkpoints: one process, an environment that can save its state.
  stats->parts = nullptr;
  if (!cfg.save_dir.empty() && !job.comm && !job.env->state().empty())
    stats->parts = std::make_shared<detail::CheckpointParts>(cfg, cfg.save_dir);
  const TrainCheckpoint* from = warm ? &*warm : resume ? &*resume : nullptr;
  job.I = cfg.iterations - (from ? from->iterations : 0);
  TrainResult res = run_program(cfg, job, stats, from, true);
  if (warm) add_into(res, warm_result);
  return res;
}

}  // namespace tempo::rl
