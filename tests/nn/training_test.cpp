// Whole training loops: an MLP over iterations fit with minimize() against the same loop in
// LibTorch, with per-iteration data (domain union of data over (i) and parameters over (i)).
#include "api/autodiff.h"
#include "driver/compile.h"
#include "nn/distributions.h"
#include "nn/module.h"
#include "nn/nn_util.h"
#include "optim/optim.h"

namespace tempo {
namespace {

using nntest::eager;
using nntest::expect_close;
using nntest::host;

// Per-iteration inputs: batch k of a fixed data set.
torch::Tensor batch(int64_t k) {
  torch::Tensor x = torch::arange(24, torch::kFloat32).reshape({8, 3});
  return torch::sin(x * 0.37 + static_cast<double>(k) * 0.5);
}

TEST(Training, MlpRegressionMatchesTorch) {
  const int64_t iters = 4;
  torch::manual_seed(21);
  torch::nn::Linear l0(3, 8), l1(8, 1);
  std::map<std::string, HostTensor> init = {{"0.weight", host(l0->weight)},
                                            {"0.bias", host(l0->bias)},
                                            {"1.weight", host(l1->weight)},
                                            {"1.bias", host(l1->bias)}};
  // Torch reference.
  torch::optim::Adam ref(std::vector<torch::Tensor>{l0->weight, l0->bias, l1->weight, l1->bias},
                         torch::optim::AdamOptions(0.05));
  std::vector<torch::Tensor> losses, w_after;
  for (int64_t k = 0; k < iters; ++k) {
    torch::Tensor x = batch(k);
    torch::Tensor y = x.sum(-1, true).cos();
    torch::Tensor loss = (l1(torch::tanh(l0(x))) - y).pow(2).mean();
    losses.push_back(loss.detach().clone());
    ref.zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(ref.parameters(), 1.0);
    ref.step();
    w_after.push_back(l0->weight.detach().clone());
  }

  Context ctx;
  Dim i = ctx.dim("i", "I");
  auto fn = [](const std::vector<HostTensor>&, const std::vector<int64_t>& p) {
    return std::vector<HostTensor>{host(batch(p[0]))};
  };
  RT x = ctx.udf("batch", fn, {}, {TensorType{DType::Float32, {8, 3}}}, {i})[0];
  RT y = x.sum(-1, true).cos();
  nn::MLP mlp(ctx, {3, 8, 1}, i, nn::tanh);
  mlp.init_from(init);
  RT loss = (mlp(x) - y).square().mean();
  optim::Adam opt(mlp.parameters(), 0.05);
  optim::minimize(loss, mlp, opt, /*max_grad_norm=*/1.0);
  RT l = loss.retain();
  RT w = RT(mlp.parameters()[0]).retain();
  // The program has ~240 ops; scheduling it with proximity constraints and whole-component
  // isl scheduling takes minutes today, so this numerics test uses the fast settings.
  CompileOptions co;
  co.whole_component = false;
  co.proximity = false;
  Executable exe = compile(ctx, {{i.bound, iters + 1}}, co);
  exe.run();
  for (int64_t k = 0; k < iters; ++k) {
    EXPECT_NEAR(exe.get(l, {k}).at(0), losses[k].item<double>(), 1e-5) << "loss at " << k;
    expect_close(eager(exe.get(w, {k + 1})), w_after[k], "weight after step " + std::to_string(k),
                 1e-5);
  }
}

// REINFORCE-style: the gradient of -log_prob(a) * advantage flows through the categorical.
TEST(Training, CategoricalPolicyGradientMatchesTorch) {
  torch::manual_seed(22);
  torch::Tensor obs = torch::randn({6, 4});
  torch::Tensor act = torch::tensor({0, 2, 1, 1, 0, 2}, torch::kInt64);
  torch::Tensor adv = torch::randn({6});
  torch::nn::Linear pi(4, 3);
  std::map<std::string, HostTensor> init = {{"weight", host(pi->weight)}, {"bias", host(pi->bias)}};
  torch::Tensor logp = torch::log_softmax(pi(obs), -1).gather(-1, act.unsqueeze(-1)).squeeze(-1);
  torch::Tensor loss = -(logp * adv).mean();
  loss.backward();

  Context ctx;
  Dim i = ctx.dim("i", "I");
  nn::Linear lin(ctx, 4, 3, i);
  lin.init_from(init);
  nn::Categorical d(lin(ctx.tensor(host(obs))));
  RT a = ctx.tensor(HostTensor::from(std::vector<int64_t>{0, 2, 1, 1, 0, 2}, {6}));
  RT l = -((d.log_prob(a) * ctx.tensor(host(adv))).mean());
  std::vector<RT> g = tempo::grad(l, nn::as_rts(lin.parameters()));
  RT gw = g[0].retain(), gb = g[1].retain();
  Executable exe = compile(ctx, {{i.bound, 1}});
  exe.run();
  expect_close(eager(exe.get(gw, {0})), pi->weight.grad(), "grad weight", 1e-5);
  expect_close(eager(exe.get(gb, {0})), pi->bias.grad(), "grad bias", 1e-5);
}

// PPO-shaped: U updates per iteration with parameters over (i, u). Per iteration, "acting"
// outputs come from the parameters at the iteration's start (forward_at), then U Adam steps fit
// minibatches against them; Adam's step count runs on across iterations, the learning rate
// decays per iteration.
TEST(Training, NestedUpdateStepsMatchTorch) {
  const int64_t iters = 3, updates = 2;
  torch::manual_seed(23);
  torch::nn::Linear l0(3, 8), l1(8, 1);
  std::map<std::string, HostTensor> init = {{"0.weight", host(l0->weight)},
                                            {"0.bias", host(l0->bias)},
                                            {"1.weight", host(l1->weight)},
                                            {"1.bias", host(l1->bias)}};
  auto net = [&](const torch::Tensor& x) { return l1(torch::tanh(l0(x))); };
  torch::optim::Adam ref(std::vector<torch::Tensor>{l0->weight, l0->bias, l1->weight, l1->bias},
                         torch::optim::AdamOptions(0.05));
  std::vector<torch::Tensor> losses, w_after;
  for (int64_t k = 0; k < iters; ++k) {
    static_cast<torch::optim::AdamOptions&>(ref.param_groups()[0].options())
        .lr(0.05 * std::pow(0.5, k));
    torch::Tensor acted = net(batch(k)).detach().mean();
    for (int64_t v = 0; v < updates; ++v) {
      torch::Tensor x = batch(100 + k * updates + v);
      torch::Tensor loss = (net(x) - acted).pow(2).mean();
      losses.push_back(loss.detach().clone());
      ref.zero_grad();
      loss.backward();
      ref.step();
      w_after.push_back(l0->weight.detach().clone());
    }
  }

  Context ctx;
  Dim i = ctx.dim("i", "I");
  Dim u = ctx.dim("u", "U");
  nn::Steps steps{i, u};
  auto acting_fn = [](const std::vector<HostTensor>&, const std::vector<int64_t>& p) {
    return std::vector<HostTensor>{host(batch(p[0]))};
  };
  auto update_fn = [updates](const std::vector<HostTensor>&, const std::vector<int64_t>& p) {
    return std::vector<HostTensor>{host(batch(100 + p[0] * updates + p[1]))};
  };
  const TensorType rows{DType::Float32, {8, 3}};
  RT xa = ctx.udf("acting_batch", acting_fn, {}, {rows}, {i})[0];
  RT xu = ctx.udf("update_batch", update_fn, {}, {rows}, {i, u})[0];
  nn::MLP mlp(ctx, {3, 8, 1}, steps, nn::tanh);
  mlp.init_from(init);
  RT acted = mlp.forward_at(steps.start_of(i), xa).mean().detach();
  EXPECT_EQ(acted.domain().size(), 1u) << "acting varies in i only";
  RT loss = (mlp(xu) - acted).square().mean();
  optim::Adam opt(mlp.parameters(), optim::exponential_decay(ctx, 0.05, 0.5, i.var));
  optim::minimize(loss, mlp, opt);
  RT l = loss.retain();
  RT w = RT(mlp.parameters()[0]).retain();
  CompileOptions co;
  co.proximity = false;
  Executable exe = compile(ctx, {{i.bound, iters}, {u.bound, updates}}, co);
  exe.run();
  for (int64_t k = 0; k < iters * updates; ++k) {
    const int64_t it = k / updates, v = k % updates;
    const std::string at = "(" + std::to_string(it) + ", " + std::to_string(v) + ")";
    EXPECT_NEAR(exe.get(l, {it, v}).at(0), losses[k].item<double>(), 1e-5) << "loss at " << at;
    if (k + 1 < iters * updates) {  // the weight after step k is w at the next step
      const int64_t n = k + 1;
      expect_close(eager(exe.get(w, {n / updates, n % updates})), w_after[k],
                   "weight after step " + at, 1e-5);
    }
  }
}

}  // namespace
}  // namespace tempo
