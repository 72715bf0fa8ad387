// TD3 (Fujimoto et al. 2018) with CleanRL's details (td3_continuous_action.py): a deterministic
// tanh actor with Gaussian exploration noise, two Q-networks trained towards the smaller of
// their targets' values at the target actor's smoothed action (clipped noise), and delayed
// policy updates: the actor and the three targets update every policy_every-th critic update.
// Random actions until learning starts. The actor's loss reads the critic after its update of
// the same iteration, as CleanRL's order of steps does.
#include "rl/algorithms/program.h"

namespace tempo::rl::detail {

namespace {

// The actor's action for its output (B, A), in the box.
RT deterministic(const RT& out, const ActionBox& box) { return out.tanh() * box.scale + box.bias; }

}  // namespace

RT td3_actions(Context& ctx, const TrainConfig& cfg, const RT& actor_out, const Space& space,
               const Dim& i, const Dim& t, int64_t first) {
  const ActionBox box(ctx, space);
  RT noise = ctx.rand_normal({cfg.num_envs, box.A}, {i, t}) * (box.scale * cfg.exploration_noise);
  RT explored = box.clip(deterministic(actor_out, box) + noise).detach();
  return random_until_learning(ctx, cfg, box, explored, i, t, first);
}

RT td3_loss(Acting& a) {
  const TrainConfig& cfg = a.cfg;
  const int64_t delay = iterations_of(cfg.learning_starts, cfg);
  const TwinQ q(a);
  const Target actor_target(a.pi, a.carried);
  const ActionBox box(a.ctx, *a.action_space);
  const Replay batch = replay_batch(a);

  // The critics: towards r + gamma (1 - terminated) min of the targets' Q at the target actor's
  // action with clipped noise (target policy smoothing).
  RT smoothing = (a.ctx.rand_normal({cfg.batch_size, box.A}, {a.i}) * cfg.policy_noise)
                     .clamp(-cfg.noise_clip, cfg.noise_clip) *
                 box.scale;
  RT next_action =
      box.clip(deterministic(mlp_with(actor_target.values, batch.next_obs), box) + smoothing);
  RT target = (batch.reward + cfg.gamma * (1.0 - batch.terminated) *
                                  q.target_min(batch.next_obs, next_action))
                  .detach();
  RT q_loss = q.loss(batch.obs, batch.actions, target);
  const std::vector<nn::Parameter> critics = q.parameters();
  minimize_after(a, q_loss, critics, cfg.lr, delay);

  // The actor: ascends the first critic, as updated this iteration, at its own action.
  std::vector<RT> q1_updated;
  for (const nn::Parameter& p : q.q1.parameters()) q1_updated.push_back(p.update());
  RT actor_loss =
      -mlp_with(q1_updated, cat({batch.obs, deterministic(a.pi(batch.obs), box)}, 1)).mean();
  RT policy_updates =
      minimize_after(a, actor_loss, a.pi.parameters(), cfg.policy_lr, delay, cfg.policy_every);

  q.target1.advance(cfg.tau, policy_updates);
  q.target2.advance(cfg.tau, policy_updates);
  actor_target.advance(cfg.tau, policy_updates);
  for (const nn::Parameter& p : critics) a.params.push_back(p);
  return q_loss;
}

}  // namespace tempo::rl::detail
