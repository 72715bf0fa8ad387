// REINFORCE on CartPole, written from scratch against Tempo's public API: the whole training
// loop is one recurrent-tensor program over iterations i and timesteps t (TEMPO Alg. 1).
//
//   o[0, 0] = reset()             o[i, t + 1] = step(a[i, t])      o[i + 1, 0] = o[i, T]
//   a[i, t] ~ softmax(pi_i(o[i, t]))
//   G[i, t] = sum_{k >= t} 0.99^(k - t) r[i, k]   (within an episode: r[i, t:T])
//   loss[i] = -mean_t(log pi_i(a[i, t] | o[i, t]) * normalized G[i, t])
//   pi_{i + 1} = Adam(pi_i, grad loss[i])
//
// Run: ./reinforce_cartpole [iterations]   (default 150; the mean return rises toward 500)
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <numeric>
#include <vector>

#include "api/tempo.h"
#include "driver/compile.h"
#include "nn/distributions.h"
#include "nn/module.h"
#include "optim/optim.h"
#include "rl/envs/env.h"

using namespace tempo;

int main(int argc, char** argv) {
  const int64_t iterations = argc > 1 ? std::atoll(argv[1]) : 150, N = 16, T = 64;
  std::shared_ptr<rl::BatchedEnv> env = rl::make_env("CartPole-v1", N);        // 16 copies, batched
  auto finished = std::make_shared<std::map<int64_t, std::vector<double>>>();  // by iteration

  Context ctx;
  Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
  const TensorType obs_type{DType::Float32, {N, 4}}, per_env{DType::Float32, {N}};

  // The environment as user functions: a source (reset) and a step at every (i, t).
  auto reset = [env, N](auto&, auto&) {
    return std::vector<HostTensor>{HostTensor::from(env->reset(/*seed=*/1), {N, 4})};
  };
  auto step = [env, finished, N](const std::vector<HostTensor>& in, const std::vector<int64_t>& p) {
    std::vector<float> actions(N);
    for (int64_t n = 0; n < N; ++n) actions[n] = static_cast<float>(in[0].at(n));
    rl::StepResult r = env->step(actions);  // envs whose episode ended reset themselves
    std::vector<float> done(N);
    for (int64_t n = 0; n < N; ++n) {
      done[n] = r.terminated[n] || r.truncated[n];
      if (done[n]) (*finished)[p[0]].push_back(r.episode_return[n]);
    }
    return std::vector<HostTensor>{HostTensor::from(r.obs, {N, 4}), HostTensor::from(r.reward, {N}),
                                   HostTensor::from(done, {N})};
  };

  // The policy: an MLP whose parameters are state over i (updated once per iteration).
  nn::MLP pi(ctx, {4, 32, 2}, i, nn::tanh);
  RT o = ctx.placeholder(obs_type, {i, t}, "obs");
  nn::Categorical policy(pi(o));
  RT a = policy.sample();  // (N) actions at (i, t)
  std::vector<RT> st = ctx.udf("step", step, {a}, {obs_type, per_env, per_env}, {i, t});
  RT next = st[0], reward = st[1], done = st[2];
  o[{Expr(0), Expr(0)}] = ctx.udf("reset", reset, {}, {obs_type}, {})[0];
  o[{i.var, t.var + 1}] = next;
  o[{i.var + 1, Expr(0)}] = next[{i.var, t.bound - 1}];  // the next rollout goes on from here

  // Returns over the future of the rollout, cut at episode ends, normalized over the rollout.
  Expr future = seq({i.var, slice(t.var, t.bound)}), rollout = seq({i.var, slice(0, t.bound)});
  RT G = reward[future].discounted_sum(0.99, done[future]);  // (N) at (i, t)
  RT mean = G[rollout].mean();
  RT std = ((G[rollout] - mean).square().mean() + 1e-8).sqrt();
  RT step_loss = -(policy.log_prob(a) * ((G - mean) / std).detach()).mean();
  RT loss = step_loss[rollout].mean();  // at i: the mean over the rollout's T steps

  optim::Adam adam(pi.parameters(), 1e-2);
  optim::minimize(loss, adam);  // symbolic gradients; defines pi_{i + 1}

  // Progress: a sink at every iteration, after its loss (and so its rollout) exists.
  auto recent = std::make_shared<std::deque<double>>();  // the last 20 episodes' returns
  auto first = std::make_shared<double>(-1), last = std::make_shared<double>(0);
  auto progress = [finished, recent, first, last](const std::vector<HostTensor>& in,
                                                  const std::vector<int64_t>& p) {
    for (double r : (*finished)[p[0]]) recent->push_back(r);
    while (recent->size() > 20) recent->pop_front();
    if (recent->empty()) return std::vector<HostTensor>{};
    *last = std::accumulate(recent->begin(), recent->end(), 0.0) / recent->size();
    if (*first < 0) *first = *last;
    if (p[0] % 10 == 9)
      std::printf("iteration %3lld  mean return %6.1f  loss %+.4f\n",
                  static_cast<long long>(p[0] + 1), *last, in[0].at(0));
    return std::vector<HostTensor>{};
  };
  ctx.udf("progress", progress, {loss}, {}, {i});

  CompileOptions options;
  options.seed = 1;  // the policy's samples are a function of (seed, op, point)
  Executable exe = compile(ctx, {{i.bound, iterations}, {t.bound, T}}, options);
  exe.run();
  std::printf("mean return: %.1f at the start, %.1f at the end\n", *first, *last);
  return *last > *first ? 0 : 1;  // learning made the policy better
}
