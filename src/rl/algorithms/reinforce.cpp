// REINFORCE (Williams 1992) as a recurrent-tensor program: the policy gradient with the
// discounted returns of the rollout (Monte-Carlo, or n-step with TrainConfig::n_step),
// normalized over the rollout, plus an entropy bonus; one update per iteration.
#include "rl/algorithms/program.h"

namespace tempo::rl::detail {

RT reinforce_loss(Acting& a) {
  const TrainConfig& cfg = a.cfg;
  const Dim& t = a.t;
  RT G = discounted_returns(a.reward, a.done, cfg.gamma, t, cfg.n_step);
  if (cfg.per_step) {
    // TEMPO Alg. 1: the loss of each timestep from the acting forward pass itself (no
    // recomputation); its backward pass can run as soon as the returns of that step exist.
    if (cfg.normalize_returns) {
      // Statistics of the whole rollout: every step waits for its end.
      RT all = rollout(G, t);
      RT mean = job_mean(all);
      G = (G - mean) / deviation(all - mean);
    }
    RT step_loss = -(a.policy->log_prob(a.actions) * G.detach()).mean() -
                   cfg.ent_coef * a.policy->entropy().mean();
    return rollout(step_loss, t).mean();
  }
  // The forward pass again, batched over the whole rollout.
  const Policy learner(a.discrete, a.pi(rollout(a.obs, t)), a.log_std);
  RT returns = rollout(G, t);
  if (cfg.normalize_returns) returns = normalized(returns);
  return -(learner.log_prob(rollout(a.actions, t)) * returns.detach()).mean() -
         cfg.ent_coef * learner.entropy().mean();
}

}  // namespace tempo::rl::detail
