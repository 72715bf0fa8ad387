// DQN (Mnih et al. 2015) with CleanRL's details: epsilon-greedy acting, one update per iteration
// (every T env steps) on a minibatch sampled with replacement from a replay buffer, the TD target
// from a target network, and a mean squared TD error.
//
// The replay buffer is replay.cpp's; the target network is a copy of the Q-network taken after
// every K-th iteration of the whole run (twin_q.cpp's Target with tau 1), so that it is the
// Q-network of the last multiple of K iterations.
#include "rl/algorithms/program.h"

namespace tempo::rl::detail {

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
  const int64_t K = iterations_of(cfg.target_every, cfg);
  const Replay batch = replay_batch(a);
  const Target target(a.pi, a.carried);
  RT q = a.pi(batch.obs).gather(1, batch.actions.unsqueeze(1)).squeeze(1);
  RT next_q = mlp_with(target.values, batch.next_obs).max(1).detach();
  RT td_target = (batch.reward + cfg.gamma * (1.0 - batch.terminated) * next_q).detach();
  RT loss = (q - td_target).square().mean();
  add_optimizer(a, a.params, loss, 1);
  target.advance(1, a.ctx.symbol((a.i.var + (1 + a.first_iteration)) % K) == 0.0);
  // The loss the progress line reads exists from the first update on: read at every iteration,
  // it was computed (and discarded) at every one of the acting-only start's too.
  const int64_t D = iterations_of(cfg.learning_starts, cfg);
  return where(a.ctx.symbol(a.i.var + a.first_iteration) >= static_cast<double>(D), loss, 0.0);
}

}  // namespace tempo::rl::detail
