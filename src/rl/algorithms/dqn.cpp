// DQN (Mnih et al. 2015) with CleanRL's details: epsilon-greedy acting, one update per iteration
// (every T env steps) on a minibatch sampled with replacement from a replay buffer, the TD target
// from a target network, and a mean squared TD error.
//
// The replay buffer is no data structure of its own: it is the window of the latest W
// iterations of each per-step RT, x[max(0, i - W + 1):i + 1, 0:T], which the executor keeps in a
// window store (TEMPO §6): O(W) memory, and each read a view. The target network is the Q-network's
// parameters read at the last multiple of K iterations, q[(i / K) * K].
#include <random>

#include "rl/algorithms/program.h"

namespace tempo::rl::detail {

namespace {

// The iterations a size in env steps spans (validate() checked that it divides).
int64_t iterations_of(int64_t env_steps, const TrainConfig& cfg) {
  return env_steps / (cfg.num_envs * cfg.steps);
}

// x over (i, t), of shape (N, ...), read over the buffer's window of iterations and flattened to
// one row per transition: (rows, ...) with rows = min(i + 1, W) * T * N. Each iteration's
// transitions are first one value over i, so that the window is one dimension's, which a window
// store serves as a view (a window over (i, t) would stack its points at every read).
RT replay_window(const RT& x, const Acting& a, int64_t W) {
  RT per_iteration = rollout(x, a.t).named(x.name() + "_rollout");  // (T, N, ...) over i
  RT w = per_iteration[slice(tempo::max(Expr(0), a.i.var - (W - 1)), a.i.var + 1)];
  std::vector<Expr> dims = w.shape().dims;  // (len, T, N, ...)
  dims[2] = dims[0] * dims[1] * dims[2];
  dims.erase(dims.begin(), dims.begin() + 2);
  return w.reshape(Shape(dims));
}

}  // namespace

RT epsilon_greedy(Context& ctx, const TrainConfig& cfg, const RT& q, int64_t n, const Dim& i,
                  const Dim& t, int64_t first) {
  const int64_t N = cfg.num_envs, T = cfg.steps;
  // Vector steps of the whole run so far, and epsilon linear in them down to eps_end.
  const double duration = cfg.exploration_fraction * static_cast<double>(cfg.iterations * T);
  RT step = ctx.symbol((i.var + first) * T + t.var).cast(DType::Float64);
  RT eps = (cfg.eps_start + (cfg.eps_end - cfg.eps_start) / std::max(duration, 1.0) * step)
               .maximum(cfg.eps_end)
               .cast(DType::Float32);
  RT explore = ctx.rand_uniform({N}, {i, t}) < eps;
  RT random = (ctx.rand_uniform({N}, {i, t}) * static_cast<double>(n))
                  .floor()
                  .minimum(static_cast<double>(n - 1))
                  .cast(DType::Int64);
  return where(explore, random, q.argmax(-1));
}

RT dqn_loss(Acting& a) {
  const TrainConfig& cfg = a.cfg;
  const int64_t N = cfg.num_envs, T = cfg.steps, B = cfg.batch_size;
  const int64_t W = iterations_of(cfg.buffer_size, cfg), K = iterations_of(cfg.target_every, cfg);
  const uint64_t seed = cfg.compile.seed;
  const int64_t first = a.first_iteration;
  // Minibatch rows drawn uniformly, with replacement, among the transitions in the buffer.
  auto sample_fn = [seed, N, T, W, B, first](const std::vector<HostTensor>&,
                                             const std::vector<int64_t>& p) {
    const uint64_t rows = static_cast<uint64_t>(std::min(p[0] + 1, W) * T * N);
    std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(p[0] + first) * 7919 + 17);
    HostTensor idx(DType::Int64, {B});
    for (int64_t k = 0; k < B; ++k) {
      const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
      idx.set(k, static_cast<double>(static_cast<uint64_t>(u * static_cast<double>(rows))));
    }
    return std::vector<HostTensor>{idx};
  };
  RT idx = a.ctx.udf("replay_sample", sample_fn, {}, {TensorType{DType::Int64, {B}}}, {a.i})[0];
  auto sampled = [&](const RT& x) { return replay_window(x, a, W).index_select(0, idx); };
  RT obs = sampled(a.obs), actions = sampled(a.actions), reward = sampled(a.reward);
  RT next_obs = sampled(a.final_obs), terminated = sampled(a.terminated);
  RT q = a.pi(obs).gather(1, actions.unsqueeze(1)).squeeze(1);
  // The target network: the Q-network as it was at the last multiple of K iterations (DQN runs
  // are not resumed: i counts the whole run's iterations).
  RT next_q = a.pi.forward_at(a.i.var / K * K, next_obs).max(1).detach();
  RT target = (reward + cfg.gamma * (1.0 - terminated) * next_q).detach();
  return (q - target).square().mean();
}

}  // namespace tempo::rl::detail
