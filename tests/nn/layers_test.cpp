// Layers' forward passes against LibTorch with the same weights (loaded through init_from).
#include <cmath>
#include <map>

#include "driver/compile.h"
#include "nn/init.h"
#include "nn/module.h"
#include "nn/nn_util.h"
#include "util/error.h"

namespace tempo {
namespace {

using nntest::eager;
using nntest::expect_close;
using nntest::host;

TEST(Layers, ParameterNamesAreStable) {
  Context ctx;
  Dim i = ctx.dim("i", "I");
  nn::MLP mlp(ctx, {3, 8, 8, 2}, i);
  auto named = mlp.named_parameters();
  std::vector<std::string> names;
  for (auto& [n, p] : named) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "2.weight",
                                             "2.bias"}));
  EXPECT_TRUE(named[0].second.trainable());
  EXPECT_EQ(named[0].second.domain().size(), 1u);
  EXPECT_EQ(named[0].second.shape().str(), "(8, 3)");
}

TEST(Layers, OutputDomainIsTheUnion) {
  Context ctx;
  Dim b = ctx.dim("b", "B"), i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
  nn::MLP mlp(ctx, {4, 8, 2}, i);
  RT obs = ctx.constant(0.5, {4}, DType::Float32, {b, t});
  RT y = mlp(obs);
  ASSERT_EQ(y.domain().size(), 3u);
  EXPECT_EQ(y.domain()[0].name(), "b");
  EXPECT_EQ(y.domain()[1].name(), "i");
  EXPECT_EQ(y.domain()[2].name(), "t");
  EXPECT_EQ(y.shape().str(), "(2)");
}

TEST(Layers, LinearMatchesTorchOverIterations) {
  torch::manual_seed(1);
  torch::nn::Linear ref(torch::nn::LinearOptions(3, 4));
  torch::Tensor x = torch::randn({5, 3});
  Context ctx;
  Dim i = ctx.dim("i", "I");
  nn::Linear lin(ctx, 3, 4, i);
  lin.init_from({{"weight", host(ref->weight)}, {"bias", host(ref->bias)}});
  RT y = lin(ctx.tensor(host(x))).retain();
  EXPECT_EQ(y.domain().size(), 1u);  // the input has no domain; the parameters vary in i
  Executable exe = compile(ctx, {{i.bound, 1}});
  exe.run();
  expect_close(eager(exe.get(y, {0})), ref->forward(x), "linear");
}

TEST(Layers, MlpMatchesTorch) {
  torch::manual_seed(2);
  torch::nn::Linear l0(4, 16), l1(16, 16), l2(16, 3);
  torch::Tensor x = torch::randn({7, 4});
  Context ctx;
  nn::MLP mlp(ctx, {4, 16, 16, 3}, std::nullopt, nn::relu, nn::tanh);
  mlp.init_from({{"0.weight", host(l0->weight)},
                 {"0.bias", host(l0->bias)},
                 {"1.weight", host(l1->weight)},
                 {"1.bias", host(l1->bias)},
                 {"2.weight", host(l2->weight)},
                 {"2.bias", host(l2->bias)}});
  RT y = mlp(ctx.tensor(host(x))).retain();
  Executable exe = compile(ctx, {});
  exe.run();
  torch::Tensor want = torch::tanh(l2(torch::relu(l1(torch::relu(l0(x))))));
  expect_close(eager(exe.get(y, {})), want, "mlp");
}

TEST(Layers, NormsMatchTorch) {
  torch::manual_seed(3);
  torch::Tensor x = torch::randn({2, 3, 6});
  torch::Tensor w = torch::randn({6}), b = torch::randn({6});
  Context ctx;
  nn::LayerNorm ln(ctx, 6, std::nullopt, 1e-5);
  ln.init_from({{"weight", host(w)}, {"bias", host(b)}});
  nn::RMSNorm rms(ctx, 6, std::nullopt, 1e-6);
  rms.init_from({{"weight", host(w)}});
  RT in = ctx.tensor(host(x));
  RT y1 = ln(in).retain();
  RT y2 = rms(in).retain();
  Executable exe = compile(ctx, {});
  exe.run();
  expect_close(eager(exe.get(y1, {})), torch::layer_norm(x, {6}, w, b, 1e-5), "layer norm");
  torch::Tensor want = x / torch::sqrt(x.pow(2).mean(-1, true) + 1e-6) * w;
  expect_close(eager(exe.get(y2, {})), want, "rms norm");
}

TEST(Layers, EmbeddingAndConvMatchTorch) {
  torch::manual_seed(4);
  torch::Tensor table = torch::randn({10, 4});
  torch::Tensor idx = torch::tensor({{1, 7, 3}, {0, 9, 1}}, torch::kInt64);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(2, 3, 3).stride(1).padding(1));
  torch::Tensor img = torch::randn({2, 2, 5, 5});
  Context ctx;
  nn::Embedding emb(ctx, 10, 4, std::nullopt);
  emb.init_from({{"weight", host(table)}});
  nn::Conv2d c(ctx, 2, 3, 3, std::nullopt, 1, 1);
  c.init_from({{"weight", host(conv->weight)}, {"bias", host(conv->bias)}});
  RT e = emb(ctx.tensor(HostTensor::from(std::vector<int64_t>{1, 7, 3, 0, 9, 1}, {2, 3}))).retain();
  RT y = c(ctx.tensor(host(img))).retain();
  Executable exe = compile(ctx, {});
  exe.run();
  expect_close(eager(exe.get(e, {})), table.index_select(0, idx.flatten()).reshape({2, 3, 4}),
               "embedding");
  expect_close(eager(exe.get(y, {})), conv(img), "conv2d");
}

TEST(Layers, ActivationsMatchTorch) {
  torch::Tensor x = torch::linspace(-4, 4, 33);
  Context ctx;
  RT in = ctx.tensor(host(x));
  RT g = nn::gelu(in).retain(), s = nn::silu(in).retain(), r = nn::relu(in).retain(),
     sg = nn::sigmoid(in).retain(), t = nn::tanh(in).retain();
  Executable exe = compile(ctx, {});
  exe.run();
  expect_close(eager(exe.get(g, {})), torch::gelu(x, "tanh"), "gelu");
  expect_close(eager(exe.get(s, {})), torch::silu(x), "silu");
  expect_close(eager(exe.get(r, {})), torch::relu(x), "relu");
  expect_close(eager(exe.get(sg, {})), torch::sigmoid(x), "sigmoid");
  expect_close(eager(exe.get(t, {})), torch::tanh(x), "tanh");
}

TEST(Layers, DefaultInitRangesAndOrthogonal) {
  Context ctx;
  nn::Linear lin(ctx, 16, 8, std::nullopt);
  nn::Linear orth(ctx, 6, 4, std::nullopt, true, nn::Linear::Init::Orthogonal, 2.0);
  RT x = nn::init::xavier_uniform(ctx, {50, 40}).retain();
  RT w = RT(lin.weight()).retain(), b = RT(lin.bias()).retain();
  RT o = RT(orth.weight()).retain(), ob = RT(orth.bias()).retain();
  Executable exe = compile(ctx, {}, CompileOptions{.seed = 7});
  exe.run();
  torch::Tensor tw = eager(exe.get(w, {})), tb = eager(exe.get(b, {}));
  EXPECT_LE(tw.abs().max().item<double>(), 0.25);
  EXPECT_LE(tb.abs().max().item<double>(), 0.25);
  EXPECT_GT(tw.abs().max().item<double>(), 0.15);  // really spread over the range
  torch::Tensor tx = eager(exe.get(x, {}));
  EXPECT_LE(tx.abs().max().item<double>(), std::sqrt(6.0 / 90.0) + 1e-6);
  torch::Tensor to = eager(exe.get(o, {}));  // (4, 6): orthonormal rows times gain 2
  expect_close(to.matmul(to.t()), 4.0 * torch::eye(4), "orthogonal rows", 1e-4);
  expect_close(eager(exe.get(ob, {})), torch::zeros({4}), "orthogonal bias");
}

TEST(Layers, WrongInputSizeIsUserError) {
  Context ctx;
  nn::Linear lin(ctx, 3, 2, std::nullopt);
  RT x = ctx.zeros({4, 5});
  try {
    lin(x);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("(..., 3)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("layers_test.cpp"), std::string::npos) << e.what();
  }
}

TEST(Layers, InitFromWrongShapeNamesParameter) {
  Context ctx;
  nn::Linear lin(ctx, 3, 2, std::nullopt);
  try {
    lin.init_from({{"weight", HostTensor(DType::Float32, {3, 2})},
                   {"bias", HostTensor(DType::Float32, {2})}});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'weight'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(lin.init_from({{"weight", HostTensor(DType::Float32, {2, 3})}}), UserError);
}

}  // namespace
}  // namespace tempo
