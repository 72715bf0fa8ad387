// What SAC and TD3 share (CleanRL's continuous-action details): the action box, random actions
// until learning starts, two Q-networks over (observation, action) trained towards one target,
// and Polyak-averaged copies of networks.
#include "optim/optim.h"
#include "rl/algorithms/program.h"

namespace tempo::rl::detail {

ActionBox::ActionBox(Context& ctx, const Space& space) : A(space.numel()) {
  std::vector<float> half(A), centre(A);
  for (int64_t k = 0; k < A; ++k) {
    half[k] = (space.high[k] - space.low[k]) / 2.0f;
    centre[k] = (space.high[k] + space.low[k]) / 2.0f;
  }
  auto rt = [&](const std::vector<float>& v) { return ctx.tensor(HostTensor::from(v, {A})); };
  scale = rt(half);
  bias = rt(centre);
  low = rt(space.low);
  high = rt(space.high);
}

RT ActionBox::clip(const RT& a) const { return a.maximum(low).minimum(high); }

RT random_until_learning(Context& ctx, const TrainConfig& cfg, const ActionBox& box,
                         const RT& policy_actions, const Dim& i, const Dim& t, int64_t first) {
  RT random = (ctx.rand_uniform({cfg.num_envs, box.A}, {i, t}) * 2.0 - 1.0) * box.scale + box.bias;
  const double learning = static_cast<double>(iterations_of(cfg.learning_starts, cfg) * cfg.steps);
  return where(ctx.symbol((i.var + first) * cfg.steps + t.var) < learning, random,
               policy_actions);
}

RT mlp_with(const std::vector<RT>& weights_and_biases, RT x) {
  for (size_t k = 0; k < weights_and_biases.size(); k += 2) {
    x = x.matmul(weights_and_biases[k].transpose(0, 1)) + weights_and_biases[k + 1];
    if (k + 2 < weights_and_biases.size()) x = x.relu();
  }
  return x;
}

Target::Target(const nn::MLP& net, Carried& carried) : carried_(&carried) {
  for (const auto& [name, p] : net.named_parameters()) {
    const std::string full = "target." + name;
    RT initial = carried.learned() ? p.ctx().tensor(carried.next_target(p)) : RT(p[Expr(0)]);
    params.push_back(p);
    values.push_back(p.steps().state(initial, full));
    carried.targets.push_back({full, values.back(), RT()});
  }
}

void Target::advance(double tau, const RT& when) const {
  for (size_t k = 0; k < params.size(); ++k) {
    RT averaged = tau == 1 ? params[k].update() : tau * params[k].update() + (1 - tau) * values[k];
    RT next = when.defined() ? where(when, averaged, values[k]) : averaged;
    params[k].steps().advance(values[k], next);
    for (optim::Optimizer::StateTensor& s : carried_->targets)
      if (s.state.op() == values[k].op()) s.next = next;
  }
}

namespace {

nn::MLP q_network(const Acting& a) {
  std::vector<int64_t> sizes = a.mlp_sizes(1);
  sizes[0] += a.action_space->numel();
  return nn::MLP(a.ctx, sizes, a.steps, nn::relu, nn::identity, true, a.init);
}

}  // namespace

TwinQ::TwinQ(Acting& a)
    : q1(q_network(a)), q2(q_network(a)), target1(q1, a.carried), target2(q2, a.carried) {}

RT TwinQ::loss(const RT& obs, const RT& actions, const RT& target) const {
  RT in = cat({obs, actions}, 1);
  return (q1(in).squeeze(1) - target).square().mean() +
         (q2(in).squeeze(1) - target).square().mean();
}

RT TwinQ::target_min(const RT& obs, const RT& actions) const {
  RT in = cat({obs, actions}, 1);
  return mlp_with(target1.values, in).minimum(mlp_with(target2.values, in)).squeeze(1);
}

std::vector<nn::Parameter> TwinQ::parameters() const {
  std::vector<nn::Parameter> all = q1.parameters();
  for (const nn::Parameter& p : q2.parameters()) all.push_back(p);
  return all;
}

RT minimize_after(Acting& a, const RT& loss, const std::vector<nn::Parameter>& params, double lr,
                  int64_t delay, int64_t every) {
  optim::Adam opt(params, lr);
  opt.delay(delay, every);
  // One step an iteration; Adam keeps two states a parameter.
  if (a.carried.resume)
    opt.resume(a.first_iteration, a.carried.learned()
                                      ? a.carried.next_optimizer_states(2 * params.size())
                                      : std::vector<HostTensor>{});
  optim::minimize(loss, opt);
  const std::vector<optim::Optimizer::StateTensor>& states = opt.states();
  a.carried.optimizer_states.insert(a.carried.optimizer_states.end(), states.begin(), states.end());
  return opt.updating(params.front());
}

}  // namespace tempo::rl::detail
