// A2C (Mnih et al. 2016, synchronous): the policy gradient with normalized GAE advantages, a
// value loss against the returns and an entropy bonus; one update per iteration on the rollout.
#include "rl/algorithms/program.h"

namespace tempo::rl::detail {

RT a2c_loss(Acting& a) {
  const TrainConfig& cfg = a.cfg;
  const Advantages adv = advantages(a);
  RT O = rollout(a.obs, a.t);
  const Policy learner(a.discrete, a.pi(O), a.log_std);
  RT V = adv.vf(O).squeeze(-1);
  RT vloss = 0.5 * (V - adv.returns).square().mean();
  return -(learner.log_prob(rollout(a.actions, a.t)) * normalized(adv.advantages)).mean() +
         cfg.vf_coef * vloss - cfg.ent_coef * learner.entropy().mean();
}

}  // namespace tempo::rl::detail
