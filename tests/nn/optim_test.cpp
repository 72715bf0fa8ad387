// Optimizers as recurrences over iterations against torch::optim on a fixed quadratic loss;
// learning-rate schedules; gradient clipping.
#include "driver/compile.h"
#include "optim/optim.h"

#include <cmath>

#include "api/autodiff.h"
#include "nn/module.h"
#include "nn/nn_util.h"
#include "util/error.h"

namespace tempo {
namespace {

using nntest::eager;
using nntest::expect_close;
using nntest::host;

constexpr int kSteps = 5;

const torch::Tensor& w_init() {
  static const torch::Tensor t = torch::tensor({0.5f, -1.0f, 2.0f, 0.25f});
  return t;
}
const torch::Tensor& target() {
  static const torch::Tensor t = torch::tensor({1.0f, 2.0f, -1.0f, 0.0f});
  return t;
}
const torch::Tensor& coeff() {
  static const torch::Tensor t = torch::tensor({1.0f, 0.5f, 2.0f, 3.0f});
  return t;
}

// loss(w) = sum(c * (w - target)^2)
torch::Tensor eager_loss(const torch::Tensor& w) {
  return (coeff() * (w - target()).pow(2)).sum();
}

// The torch trajectory w_0 .. w_kSteps; set_lr(k) is called before step k.
template <typename Opt>
std::vector<torch::Tensor> torch_trajectory(Opt& opt, torch::Tensor& w,
                                            std::function<void(int)> set_lr = nullptr) {
  std::vector<torch::Tensor> out{w.detach().clone()};
  for (int k = 0; k < kSteps; ++k) {
    if (set_lr) set_lr(k);
    opt.zero_grad();
    eager_loss(w).backward();
    opt.step();
    out.push_back(w.detach().clone());
  }
  return out;
}

enum class GradSource { ByHand, Autodiff };

// The tempo trajectory: make_opt builds the optimizer over the parameter. With a delay and
// updates every `every` steps (Optimizer::delay), the trajectory is delay + kSteps * every steps
// long.
std::vector<torch::Tensor> tempo_trajectory(
    const std::function<std::unique_ptr<optim::Optimizer>(Context&, const Dim&,
                                                          std::vector<nn::Parameter>)>& make_opt,
    GradSource source, int delay = 0, int every = 1) {
  Context ctx;
  Dim i = ctx.dim("i", "I");
  nn::Parameter w(ctx.tensor(host(w_init())), i, "w");
  RT c = ctx.tensor(host(coeff())), tgt = ctx.tensor(host(target()));
  auto opt = make_opt(ctx, i, {w});
  if (delay > 0 || every > 1) opt->delay(delay, every);
  if (source == GradSource::ByHand) {
    opt->step({(w - tgt) * c * 2.0});
  } else {
    RT loss = ((w - tgt).square() * c).sum();
    optim::minimize(loss, *opt);
  }
  RT out = RT(w).retain();
  const int steps = delay + kSteps * every;
  Executable exe = compile(ctx, {{i.bound, steps + 1}});
  exe.run();
  std::vector<torch::Tensor> traj;
  for (int k = 0; k <= steps; ++k) traj.push_back(eager(exe.get(out, {k})));
  return traj;
}

void expect_same(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k)
    expect_close(got[k], want[k], what + " w[" + std::to_string(k) + "]", 1e-5);
}

class OptimTest : public ::testing::TestWithParam<GradSource> {};

TEST_P(OptimTest, SgdMatchesTorch) {
  torch::Tensor w = w_init().clone().requires_grad_(true);
  torch::optim::SGD ref({w}, torch::optim::SGDOptions(0.05));
  auto want = torch_trajectory(ref, w);
  auto got = tempo_trajectory(
      [](Context&, const Dim&, std::vector<nn::Parameter> ps) {
        return std::make_unique<optim::SGD>(ps, 0.05);
      },
      GetParam());
  expect_same(got, want, "sgd");
}

TEST_P(OptimTest, SgdMomentumNesterovWeightDecayMatchesTorch) {
  torch::Tensor w = w_init().clone().requires_grad_(true);
  torch::optim::SGD ref(
      {w}, torch::optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(0.1));
  auto want = torch_trajectory(ref, w);
  auto got = tempo_trajectory(
      [](Context&, const Dim&, std::vector<nn::Parameter> ps) {
        return std::make_unique<optim::SGD>(ps, 0.05, 0.9, 0.1, true);
      },
      GetParam());
  expect_same(got, want, "sgd nesterov");
}

TEST_P(OptimTest, AdamMatchesTorch) {
  torch::Tensor w = w_init().clone().requires_grad_(true);
  torch::optim::Adam ref({w}, torch::optim::AdamOptions(0.1).betas({0.8, 0.95}).eps(1e-6));
  auto want = torch_trajectory(ref, w);
  auto got = tempo_trajectory(
      [](Context&, const Dim&, std::vector<nn::Parameter> ps) {
        return std::make_unique<optim::Adam>(ps, 0.1, 0.8, 0.95, 1e-6);
      },
      GetParam());
  expect_same(got, want, "adam");
}

// DQN's warm-up: w stays as it is for the delay, then follows torch's trajectory from its first
// step (the bias corrections count from the first update).
TEST_P(OptimTest, DelayedAdamStartsAsTorchAfterTheDelay) {
  torch::Tensor w = w_init().clone().requires_grad_(true);
  torch::optim::Adam ref({w}, torch::optim::AdamOptions(0.1).betas({0.8, 0.95}).eps(1e-6));
  std::vector<torch::Tensor> want = torch_trajectory(ref, w);
  want.insert(want.begin(), 3, want[0]);
  auto got = tempo_trajectory(
      [](Context&, const Dim&, std::vector<nn::Parameter> ps) {
        return std::make_unique<optim::Adam>(ps, 0.1, 0.8, 0.95, 1e-6);
      },
      GetParam(), 3);
  expect_same(got, want, "delayed adam");
}

// TD3's delayed policy updates: after the warm-up, every third step updates, and the bias
// corrections count the updates.
TEST_P(OptimTest, AdamEveryThirdStepIsTorchsTrajectorySpreadOut) {
  torch::Tensor w = w_init().clone().requires_grad_(true);
  torch::optim::Adam ref({w}, torch::optim::AdamOptions(0.1).betas({0.8, 0.95}).eps(1e-6));
  const std::vector<torch::Tensor> steps = torch_trajectory(ref, w);
  constexpr int kDelay = 2, kEvery = 3;
  std::vector<torch::Tensor> want;
  for (int n = 0; n <= kDelay + kSteps * kEvery; ++n)
    want.push_back(steps[n < kDelay ? 0 : (n - kDelay) / kEvery]);
  auto got = tempo_trajectory(
      [](Context&, const Dim&, std::vector<nn::Parameter> ps) {
        return std::make_unique<optim::Adam>(ps, 0.1, 0.8, 0.95, 1e-6);
      },
      GetParam(), kDelay, kEvery);
  expect_same(got, want, "adam every third step");
}

TEST_P(OptimTest, AdamWithDecayingLearningRateMatchesTorch) {
  torch::Tensor w = w_init().clone().requires_grad_(true);
  torch::optim::AdamW ref({w}, torch::optim::AdamWOptions(0.1).weight_decay(0.05));
  auto want = torch_trajectory(ref, w, [&](int k) {
    static_cast<torch::optim::AdamWOptions&>(ref.param_groups()[0].options())
        .lr(0.1 * std::pow(0.9, k));
  });
  auto got = tempo_trajectory(
      [](Context& ctx, const Dim& i, std::vector<nn::Parameter> ps) {
        RT lr = optim::exponential_decay(ctx, 0.1, 0.9, i.var);
        return std::make_unique<optim::AdamW>(ps, lr, 0.9, 0.999, 1e-8, 0.05);
      },
      GetParam());
  expect_same(got, want, "adamw with exponential decay");
}

INSTANTIATE_TEST_SUITE_P(Grads, OptimTest,
                         ::testing::Values(GradSource::ByHand, GradSource::Autodiff),
                         [](const auto& info) {
                           return info.param == GradSource::ByHand ? std::string("ByHand")
                                                                   : std::string("Autodiff");
                         });

TEST(Schedules, ValuesPerIteration) {
  Context ctx;
  Dim i = ctx.dim("i", "I");
  RT e = optim::exponential_decay(ctx, 1e-3, 0.99, i.var).retain();
  RT l = optim::linear_decay(ctx, 1.0, 0.1, i.var, i.bound).retain();
  RT l2 = optim::linear_decay(ctx, 1.0, 0.0, i.var, Expr(4)).retain();
  Executable exe = compile(ctx, {{i.bound, 10}});
  exe.run();
  for (int64_t k = 0; k < 10; ++k) {
    EXPECT_NEAR(exe.get(e, {k}).at(0), 1e-3 * std::pow(0.99, k), 1e-9) << k;
    EXPECT_NEAR(exe.get(l, {k}).at(0), 1.0 + (0.1 - 1.0) * k / 10.0, 1e-6) << k;
    EXPECT_NEAR(exe.get(l2, {k}).at(0), std::max(0.0, 1.0 - k / 4.0), 1e-6) << k;
  }
}

TEST(Clip, GlobalNormMatchesTorch) {
  torch::manual_seed(9);
  for (double max_norm : {0.5, 100.0}) {
    torch::Tensor a = torch::randn({3, 4}), b = torch::randn({5});
    Context ctx;
    RT norm;
    auto clipped =
        optim::clip_grad_norm({ctx.tensor(host(a)), ctx.tensor(host(b))}, max_norm, &norm);
    RT ca = clipped[0].retain(), cb = clipped[1].retain(), n = norm.retain();
    Executable exe = compile(ctx, {});
    exe.run();
    torch::Tensor pa = a.clone().requires_grad_(true), pb = b.clone().requires_grad_(true);
    pa.mutable_grad() = a.clone();
    pb.mutable_grad() = b.clone();
    double total = torch::nn::utils::clip_grad_norm_({pa, pb}, max_norm);
    EXPECT_NEAR(exe.get(n, {}).at(0), total, 1e-4);
    expect_close(eager(exe.get(ca, {})), pa.grad(), "clipped a", 1e-5);
    expect_close(eager(exe.get(cb, {})), pb.grad(), "clipped b", 1e-5);
  }
}

TEST(OptimErrors, ConstantParameterAndBadGradients) {
  Context ctx;
  Dim i = ctx.dim("i", "I");
  Dim t = ctx.dim("t", "T");
  nn::Linear frozen(ctx, 2, 2, std::nullopt);
  EXPECT_THROW(optim::SGD(frozen.parameters(), 0.1), UserError);
  nn::Linear lin(ctx, 2, 2, i);
  optim::SGD opt(lin.parameters(), 0.1);
  EXPECT_THROW(opt.step({ctx.ones({2, 2})}), UserError);  // one gradient for two parameters
  RT over_t = ctx.constant(1.0, {2, 2}, DType::Float32, {t});
  try {
    opt.step({over_t, ctx.ones({2})});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("varies in t"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tempo
