// A2C (Mnih et al. 2016, synchronous): the policy gradient with normalized GAE advantages (or
// n-step advantages, per step), a value loss against the returns and an entropy bonus; one update
// per iteration on the rollout.
#include <cmath>

#include "rl/algorithms/program.h"

namespace tempo::rl::detail {

namespace {

// n-step A2C (TrainConfig::n_step; Mnih et al.'s returns): the value of each step is learned
// towards r[t] + ... + gamma^(n-1) r[t+n-1] + gamma^n V(o[t+n]) from the acting forward pass, per
// step, and the policy from that target's advantage (not normalized: statistics of the whole
// rollout would make every step wait for its end). A step's loss needs the rollout only n steps
// ahead, so with interleaving (--proximity) learning runs n steps behind acting and each
// observation is freed then (TEMPO Fig. 23). As with n-step REINFORCE, an episode that ends in
// the window ends the return there, and so does the rollout: no bootstrap then.
RT nstep_loss(Acting& a) {
  const TrainConfig& cfg = a.cfg;
  const Dim& t = a.t;
  const int64_t n = cfg.n_step;
  nn::MLP vf(a.ctx, a.mlp_sizes(1), a.steps, nn::tanh, nn::identity, true, a.init, 1.0);
  for (const nn::Parameter& p : vf.parameters()) a.params.push_back(p);
  RT V = vf.forward_at(a.start, a.obs).squeeze(-1);  // (N) at each step
  RT G = discounted_returns(a.reward, a.done, cfg.gamma, t, n);
  const Expr window = slice(t.var, tempo::min(t.var + n, t.bound));
  RT ends = a.done[index_with(a.done, t, window)].sum(0);  // episodes ended in the window
  // V(o[t + n]) as a window of one step, empty past the rollout's end (its sum is then 0): a read
  // clamped to T - 1 would make every step wait for the rollout's end.
  const Expr next = tempo::min(t.var + n, t.bound);
  RT ahead = V[index_with(V, t, slice(next, tempo::min(t.var + n + 1, t.bound)))].sum(0).detach();
  RT target = (G + where(ends == 0.0, std::pow(cfg.gamma, static_cast<double>(n)) * ahead, 0.0))
                  .detach();
  RT step_loss = -(a.policy->log_prob(a.actions) * (target - V.detach())).mean() +
                 cfg.vf_coef * 0.5 * (V - target).square().mean() -
                 cfg.ent_coef * a.policy->entropy().mean();
  return rollout(step_loss, t).mean();
}

}  // namespace

RT a2c_loss(Acting& a) {
  const TrainConfig& cfg = a.cfg;
  if (cfg.n_step > 0) return nstep_loss(a);
  const Advantages adv = advantages(a);
  RT O = rollout(a.obs, a.t);
  const Policy learner(a.discrete, a.pi(O), a.log_std);
  RT V = adv.vf(O).squeeze(-1);
  RT vloss = 0.5 * (V - adv.returns).square().mean();
  return -(learner.log_prob(rollout(a.actions, a.t)) * normalized(adv.advantages)).mean() +
         cfg.vf_coef * vloss - cfg.ent_coef * learner.entropy().mean();
}

}  // namespace tempo::rl::detail
