// SAC (Haarnoja et al. 2018) with CleanRL's details (sac_continuous_action.py): a tanh-squashed
// Gaussian actor with a state-dependent log-std in [-5, 2], two Q-networks and their Polyak-
// averaged targets, the clipped double-Q target with the entropy term, the entropy coefficient
// tuned towards -|A|, and random actions until learning starts. Each iteration acts T steps and
// makes one update of the critics, the actor and the coefficient, each with its own Adam, from
// the same parameters (CleanRL updates the actor twice every second step, after the critics).
#include <cmath>

#include "optim/optim.h"
#include "rl/algorithms/program.h"

namespace tempo::rl::detail {

namespace {

constexpr double kLogStdMin = -5, kLogStdMax = 2;

// An action of the squashed Gaussian the actor's output (B, 2A) parameterizes, scaled into the
// action box, and its log-probability (B): reparameterized, so gradients reach the actor.
struct Squashed {
  RT action, log_prob;
};
Squashed squashed_sample(const RT& out, int64_t A, const RT& scale, const RT& bias) {
  RT mean = out.slice(1, 0, A);
  RT log_std = kLogStdMin + 0.5 * (kLogStdMax - kLogStdMin) * (out.slice(1, A, 2 * A).tanh() + 1);
  const nn::Normal normal(mean, log_std);
  RT x = normal.rsample();
  RT y = x.tanh();
  RT log_prob = normal.log_prob(x) - (scale * (1.0 - y.square()) + 1e-6).log().sum({1});
  return Squashed{y * scale + bias, log_prob};
}

// The action box's half-width and centre, (A) each.
std::pair<RT, RT> box(Context& ctx, const Space& space) {
  const int64_t A = space.numel();
  std::vector<float> scale(A), bias(A);
  for (int64_t k = 0; k < A; ++k) {
    scale[k] = (space.high[k] - space.low[k]) / 2.0f;
    bias[k] = (space.high[k] + space.low[k]) / 2.0f;
  }
  return {ctx.tensor(HostTensor::from(scale, {A})), ctx.tensor(HostTensor::from(bias, {A}))};
}

// A ReLU MLP's forward pass with the given weights and biases, in nn::Linear's layout.
RT mlp_with(const std::vector<RT>& weights_and_biases, RT x) {
  for (size_t k = 0; k < weights_and_biases.size(); k += 2) {
    x = x.matmul(weights_and_biases[k].transpose(0, 1)) + weights_and_biases[k + 1];
    if (k + 2 < weights_and_biases.size()) x = x.relu();
  }
  return x;
}

// A Q-network's Polyak-averaged copy: states over the parameters' steps that start as the
// network's initial values; advance() defines them after the network's update.
struct Target {
  std::vector<nn::Parameter> params;
  std::vector<RT> values;
  void advance(double tau) const {
    for (size_t k = 0; k < params.size(); ++k)
      params[k].steps().advance(values[k], tau * params[k].update() + (1 - tau) * values[k]);
  }
};
Target target_of(const nn::MLP& q) {
  Target t;
  for (const auto& [name, p] : q.named_parameters()) {
    t.params.push_back(p);
    t.values.push_back(p.steps().state(RT(p[Expr(0)]), "target." + name));
  }
  return t;
}

// A delayed Adam (learning starts after `delay` iterations) minimizing `loss` over `params`.
void minimize_after(const RT& loss, const std::vector<nn::Parameter>& params, double lr,
                    int64_t delay) {
  optim::Adam opt(params, lr);
  opt.delay(delay);
  optim::minimize(loss, opt);
}

}  // namespace

RT sac_actions(Context& ctx, const TrainConfig& cfg, const RT& actor_out, const Space& space,
               const Dim& i, const Dim& t, int64_t first) {
  const int64_t N = cfg.num_envs, A = space.numel();
  const auto [scale, bias] = box(ctx, space);
  RT sampled = squashed_sample(actor_out, A, scale, bias).action.detach();  // data, as in CleanRL
  RT random = (ctx.rand_uniform({N, A}, {i, t}) * 2.0 - 1.0) * scale + bias;
  const double learning = static_cast<double>(iterations_of(cfg.learning_starts, cfg) * cfg.steps);
  return where(ctx.symbol((i.var + first) * cfg.steps + t.var) < learning, random, sampled);
}

RT sac_loss(Acting& a) {
  const TrainConfig& cfg = a.cfg;
  Context& ctx = a.ctx;
  const int64_t A = a.action_space->numel();
  const int64_t delay = iterations_of(cfg.learning_starts, cfg);
  const std::vector<int64_t> q_sizes = [&] {
    std::vector<int64_t> s = a.mlp_sizes(1);
    s[0] += A;
    return s;
  }();
  nn::MLP q1(ctx, q_sizes, a.steps, nn::relu, nn::identity, true, a.init);
  nn::MLP q2(ctx, q_sizes, a.steps, nn::relu, nn::identity, true, a.init);
  nn::Parameter log_alpha(ctx.zeros({}), a.steps, "log_alpha");
  const Target target1 = target_of(q1), target2 = target_of(q2);
  const auto [scale, bias] = box(ctx, *a.action_space);
  const Replay batch = replay_batch(a);
  RT alpha = log_alpha.exp().detach();

  // The critics: towards r + gamma (1 - terminated) (min of the targets' Q - alpha log pi) at a
  // fresh action of the current actor in the next state.
  const Squashed next = squashed_sample(a.pi(batch.next_obs), A, scale, bias);
  RT next_in = cat({batch.next_obs, next.action}, 1);
  RT next_q = mlp_with(target1.values, next_in).minimum(mlp_with(target2.values, next_in));
  RT target = (batch.reward + cfg.gamma * (1.0 - batch.terminated) *
                                  (next_q.squeeze(1) - alpha * next.log_prob))
                  .detach();
  RT in = cat({batch.obs, batch.actions}, 1);
  RT q_loss = (q1(in).squeeze(1) - target).square().mean() +
              (q2(in).squeeze(1) - target).square().mean();
  std::vector<nn::Parameter> critics = q1.parameters();
  for (const nn::Parameter& p : q2.parameters()) critics.push_back(p);
  minimize_after(q_loss, critics, cfg.lr, delay);

  // The actor: the entropy-regularized value of a fresh reparameterized action.
  const Squashed now = squashed_sample(a.pi(batch.obs), A, scale, bias);
  RT now_in = cat({batch.obs, now.action}, 1);
  RT actor_loss = (alpha * now.log_prob - q1(now_in).minimum(q2(now_in)).squeeze(1)).mean();
  minimize_after(actor_loss, a.pi.parameters(), cfg.policy_lr, delay);

  // The entropy coefficient, towards an entropy of -|A|.
  RT alpha_loss =
      (-log_alpha.exp() * (now.log_prob.detach() - static_cast<double>(A))).mean();
  minimize_after(alpha_loss, {log_alpha}, cfg.lr, delay);

  target1.advance(cfg.tau);
  target2.advance(cfg.tau);
  for (const nn::Parameter& p : critics) a.params.push_back(p);
  a.params.push_back(log_alpha);
  return q_loss;
}

}  // namespace tempo::rl::detail
