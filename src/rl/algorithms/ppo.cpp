// PPO (Schulman et al. 2017) with CleanRL's details: epochs x minibatches updates per rollout
// (update u is minibatch u % M of epoch u / M, rows of the flattened rollout in a random order
// drawn once per (iteration, epoch)), the clipped ratio objective on normalized GAE advantages,
// a clipped value loss and an entropy bonus. The parameters are state over (i, u).
#include <algorithm>
#include <numeric>
#include <random>

#include "rl/algorithms/program.h"

namespace tempo::rl::detail {

namespace {

// (T, N, ...) -> (T * N, ...).
RT flat(const RT& x) {
  std::vector<Expr> dims = x.shape().dims;
  dims[1] = dims[0] * dims[1];
  dims.erase(dims.begin());
  return x.reshape(Shape(dims));
}

}  // namespace

RT ppo_loss(Acting& a) {
  const TrainConfig& cfg = a.cfg;
  const Advantages adv = advantages(a);
  const int64_t rows = cfg.steps * cfg.num_envs, M = cfg.minibatches, B = rows / M;
  const uint64_t seed = cfg.compile.seed;
  const int64_t first = a.first_iteration;
  auto batch_fn = [seed, rows, M, B, first](const std::vector<HostTensor>&,
                                            const std::vector<int64_t>& p) {
    std::vector<int64_t> perm(static_cast<size_t>(rows));
    std::iota(perm.begin(), perm.end(), 0);
    std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(p[0] + first) * 7919 +
                        static_cast<uint64_t>(p[1] / M));
    std::shuffle(perm.begin(), perm.end(), rng);
    HostTensor idx(DType::Int64, {B});
    for (int64_t k = 0; k < B; ++k) idx.set(k, static_cast<double>(perm[(p[1] % M) * B + k]));
    return std::vector<HostTensor>{idx};
  };
  RT idx = a.ctx.udf("minibatch", batch_fn, {}, {TensorType{DType::Int64, {B}}}, {a.i, *a.u})[0];
  auto mb = [&](const RT& x) { return flat(x).index_select(0, idx); };
  // The acting policy's log-probabilities, fixed during the updates.
  RT old_logp = rollout(a.policy->log_prob(a.actions), a.t).detach();
  RT Ob = mb(rollout(a.obs, a.t));
  const Policy learner(a.discrete, a.pi(Ob), a.log_std);
  RT ratio = (learner.log_prob(mb(rollout(a.actions, a.t))) - mb(old_logp)).exp();
  RT nadv = normalized(mb(adv.advantages));
  RT pg = -((ratio * nadv).minimum(ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * nadv)).mean();
  RT V = adv.vf(Ob).squeeze(-1), V0b = mb(adv.values), RETb = mb(adv.returns);
  RT Vclipped = V0b + (V - V0b).clamp(-cfg.clip, cfg.clip);
  RT vloss = 0.5 * (V - RETb).square().maximum((Vclipped - RETb).square()).mean();
  return pg + cfg.vf_coef * vloss - cfg.ent_coef * learner.entropy().mean();
}

}  // namespace tempo::rl::detail
