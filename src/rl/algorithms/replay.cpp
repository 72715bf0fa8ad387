// The replay buffer of the off-policy algorithms (DQN, SAC). It is no data structure of its own:
// it is the window of the latest W iterations of each per-step RT, x[max(0, i - W + 1):i + 1,
// 0:T], which the executor keeps in a window store (TEMPO §6): O(W) memory, and each read a
// view. A buffer that outlasts the run is the prefix x[0:i + 1], which a block store serves.
#include <random>

#include "rl/algorithms/program.h"

namespace tempo::rl::detail {

namespace {

// x over (i, t), of shape (N, ...), read over the buffer's window of iterations and flattened to
// one row per transition: (rows, ...) with rows = min(i + 1, W) * T * N. Each iteration's
// transitions are first one value over i, so that the window is one dimension's, which a window
// store serves as a view (a window over (i, t) would stack its points at every read).
RT replay_window(const RT& x, const Acting& a, int64_t W) {
  RT per_iteration = rollout(x, a.t).named(x.name() + "_rollout");  // (T, N, ...) over i
  const Expr from = W >= a.cfg.iterations ? Expr(0) : tempo::max(Expr(0), a.i.var - (W - 1));
  RT w = per_iteration[slice(from, a.i.var + 1)];
  std::vector<Expr> dims = w.shape().dims;  // (len, T, N, ...)
  dims[2] = dims[0] * dims[1] * dims[2];
  dims.erase(dims.begin(), dims.begin() + 2);
  return w.reshape(Shape(dims));
}

}  // namespace

int64_t iterations_of(int64_t env_steps, const TrainConfig& cfg) {
  return env_steps / (cfg.num_envs * cfg.steps);
}

Replay replay_batch(const Acting& a) {
  const TrainConfig& cfg = a.cfg;
  const int64_t N = cfg.num_envs, T = cfg.steps, B = cfg.batch_size;
  const int64_t W = iterations_of(cfg.buffer_size, cfg);
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
  return Replay{sampled(a.obs), sampled(a.actions), sampled(a.reward), sampled(a.final_obs),
                sampled(a.terminated)};
}

}  // namespace tempo::rl::detail
