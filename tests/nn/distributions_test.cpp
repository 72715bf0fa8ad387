// Categorical and Normal: log_prob and entropy against torch's formulas; sample frequencies.
#include "driver/compile.h"
#include "nn/distributions.h"

#include <cmath>

#include "nn/nn_util.h"

namespace tempo {
namespace {

using nntest::eager;
using nntest::expect_close;
using nntest::host;

TEST(Distributions, CategoricalLogProbEntropyProbs) {
  torch::manual_seed(11);
  torch::Tensor logits = torch::randn({6, 5}) * 2;
  torch::Tensor actions = torch::tensor({0, 4, 2, 1, 3, 4}, torch::kInt64);
  Context ctx;
  nn::Categorical d(ctx.tensor(host(logits)));
  RT lp = d.log_prob(ctx.tensor(HostTensor::from(std::vector<int64_t>{0, 4, 2, 1, 3, 4}, {6})))
              .retain();
  RT ent = d.entropy().retain();
  RT pr = d.probs().retain();
  Executable exe = compile(ctx, {});
  exe.run();
  torch::Tensor logp = torch::log_softmax(logits, -1);
  expect_close(eager(exe.get(lp, {})), logp.gather(-1, actions.unsqueeze(-1)).squeeze(-1),
               "log_prob");
  expect_close(eager(exe.get(ent, {})), -(logp.exp() * logp).sum(-1), "entropy");
  expect_close(eager(exe.get(pr, {})), torch::softmax(logits, -1), "probs");
}

TEST(Distributions, CategoricalSampleFrequencies) {
  const int64_t n = 20000;
  torch::Tensor p = torch::tensor({0.2f, 0.5f, 0.3f});
  Context ctx;
  RT logits = ctx.tensor(host(p.log())).unsqueeze(0).expand(Shape({n, 3}));
  RT s = nn::Categorical(logits).sample().retain();
  Executable exe = compile(ctx, {}, CompileOptions{.seed = 3});
  exe.run();
  torch::Tensor got = eager(exe.get(s, {}));
  ASSERT_EQ(got.sizes(), (std::vector<int64_t>{n}));
  for (int k = 0; k < 3; ++k) {
    double freq = (got == k).to(torch::kFloat64).mean().item<double>();
    EXPECT_NEAR(freq, p[k].item<double>(), 0.02) << "category " << k;
  }
}

TEST(Distributions, CategoricalSamplesDifferPerPoint) {
  Context ctx;
  Dim b = ctx.dim("b", "B");
  RT logits = ctx.constant(0.0, {8}, DType::Float32, {b});
  RT s = nn::Categorical(logits).sample().retain();
  Executable exe = compile(ctx, {{b.bound, 64}}, CompileOptions{.seed = 1});
  exe.run();
  std::set<int64_t> seen;
  for (int64_t k = 0; k < 64; ++k) seen.insert(static_cast<int64_t>(exe.get(s, {k}).at(0)));
  EXPECT_GE(seen.size(), 5u);  // 64 uniform draws over 8 categories
}

TEST(Distributions, NormalLogProbEntropy) {
  torch::manual_seed(12);
  torch::Tensor mean = torch::randn({4, 3}), log_std = torch::randn({3}) * 0.5;
  torch::Tensor x = torch::randn({4, 3});
  Context ctx;
  nn::Normal d(ctx.tensor(host(mean)), ctx.tensor(host(log_std)));
  RT lp = d.log_prob(ctx.tensor(host(x))).retain();
  RT ent = d.entropy().retain();
  Executable exe = compile(ctx, {});
  exe.run();
  torch::Tensor std = log_std.exp();
  torch::Tensor want_lp =
      (-(x - mean).pow(2) / (2 * std.pow(2)) - log_std - 0.5 * std::log(2 * M_PI)).sum(-1);
  torch::Tensor want_ent = (0.5 + 0.5 * std::log(2 * M_PI) + log_std).expand({4, 3}).sum(-1);
  expect_close(eager(exe.get(lp, {})), want_lp, "normal log_prob");
  expect_close(eager(exe.get(ent, {})), want_ent, "normal entropy");
}

TEST(Distributions, NormalSampleMoments) {
  const int64_t n = 20000;
  Context ctx;
  RT mean = ctx.constant(1.5, {n, 2});
  RT log_std = ctx.tensor(host(torch::tensor({std::log(0.5f), std::log(2.0f)})));
  RT s = nn::Normal(mean, log_std).sample().retain();
  Executable exe = compile(ctx, {}, CompileOptions{.seed = 4});
  exe.run();
  torch::Tensor got = eager(exe.get(s, {}));
  ASSERT_EQ(got.sizes(), (std::vector<int64_t>{n, 2}));
  torch::Tensor m = got.mean(0), sd = got.std(0);
  EXPECT_NEAR(m[0].item<double>(), 1.5, 0.03);
  EXPECT_NEAR(m[1].item<double>(), 1.5, 0.08);
  EXPECT_NEAR(sd[0].item<double>(), 0.5, 0.03);
  EXPECT_NEAR(sd[1].item<double>(), 2.0, 0.08);
}

}  // namespace
}  // namespace tempo
