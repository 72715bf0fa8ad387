// SAC (Haarnoja et al. 2018) with CleanRL's details (sac_continuous_action.py): a tanh-squashed
// Gaussian actor with a state-dependent log-std in [-5, 2], two Q-networks and their Polyak-
// averaged targets (twin_q.cpp), the clipped double-Q target with the entropy term, the entropy
// coefficient tuned towards -|A|, and random actions until learning starts. Each iteration acts
// T steps and makes one update of the critics, the actor and the coefficient, each with its own
// Adam, from the same parameters (CleanRL updates the actor twice every second step, after the
// critics).
#include <cmath>

#include "rl/algorithms/program.h"

namespace tempo::rl::detail {

namespace {

constexpr double kLogStdMin = -5, kLogStdMax = 2;

// An action of the squashed Gaussian the actor's output (B, 2A) parameterizes, scaled into the
// action box, and its log-probability (B): reparameterized, so gradients reach the actor.
struct Squashed {
  RT action, log_prob;
};
Squashed squashed_sample(const RT& out, const ActionBox& box) {
  const int64_t A = box.A;
  RT mean = out.slice(1, 0, A);
  RT log_std = kLogStdMin + 0.5 * (kLogStdMax - kLogStdMin) * (out.slice(1, A, 2 * A).tanh() + 1);
  const nn::Normal normal(mean, log_std);
  RT x = normal.rsample();
  RT y = x.tanh();
  RT log_prob = normal.log_prob(x) - (box.scale * (1.0 - y.square()) + 1e-6).log().sum({1});
  return Squashed{y * box.scale + box.bias, log_prob};
}

}  // namespace

RT sac_actions(Context& ctx, const TrainConfig& cfg, const RT& actor_out, const Space& space,
               const Dim& i, const Dim& t, int64_t first) {
  const ActionBox box(ctx, space);
  RT sampled = squashed_sample(actor_out, box).action.detach();  // data, as in CleanRL
  return random_until_learning(ctx, cfg, box, sampled, i, t, first);
}

RT sac_loss(Acting& a) {
  const TrainConfig& cfg = a.cfg;
  const int64_t delay = iterations_of(cfg.learning_starts, cfg);
  const TwinQ q(a);
  nn::Parameter log_alpha(a.ctx.zeros({}), a.steps, "log_alpha");
  const ActionBox box(a.ctx, *a.action_space);
  const Replay batch = replay_batch(a);
  RT alpha = log_alpha.exp().detach();

  // The critics: towards r + gamma (1 - terminated) (min of the targets' Q - alpha log pi) at a
  // fresh action of the current actor in the next state.
  const Squashed next = squashed_sample(a.pi(batch.next_obs), box);
  RT target = (batch.reward + cfg.gamma * (1.0 - batch.terminated) *
                                  (q.target_min(batch.next_obs, next.action) -
                                   alpha * next.log_prob))
                  .detach();
  RT q_loss = q.loss(batch.obs, batch.actions, target);
  const std::vector<nn::Parameter> critics = q.parameters();
  RT critics_update = minimize_after(a, q_loss, critics, cfg.lr, delay);

  // The actor: the entropy-regularized value of a fresh reparameterized action.
  const Squashed now = squashed_sample(a.pi(batch.obs), box);
  RT now_in = cat({batch.obs, now.action}, 1);
  RT actor_loss = (alpha * now.log_prob - q.q1(now_in).minimum(q.q2(now_in)).squeeze(1)).mean();
  minimize_after(a, actor_loss, a.pi.parameters(), cfg.policy_lr, delay);

  // The entropy coefficient, towards an entropy of -|A|.
  RT alpha_loss =
      (-log_alpha.exp() * (now.log_prob.detach() - static_cast<double>(box.A))).mean();
  minimize_after(a, alpha_loss, {log_alpha}, cfg.lr, delay);

  // The targets follow the critics' updates only: before learning starts they stay as they are.
  q.target1.advance(cfg.tau, critics_update);
  q.target2.advance(cfg.tau, critics_update);
  for (const nn::Parameter& p : critics) a.params.push_back(p);
  a.params.push_back(log_alpha);
  return q_loss;
}

}  // namespace tempo::rl::detail
