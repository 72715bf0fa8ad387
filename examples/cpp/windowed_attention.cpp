// Attention over a sliding window of the past: at step t, the query q[t] attends to the keys
// and values of steps max(0, t - w) .. t (a window whose length grows to w + 1 and then slides):
//
//   K = k[max(0, t - w):t + 1]                 (n, d), n = min(t, w) + 1
//   p = softmax(K q[t] / sqrt(d))              (n)
//   out[t] = p V, V = v[max(0, t - w):t + 1]   (d)
//
// The result is checked against a direct computation. Run: ./windowed_attention [T] [w]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "api/tempo.h"
#include "driver/compile.h"

using namespace tempo;

namespace {

constexpr int64_t kDim = 8;  // d

// Query, key and value entries of step t (a stand-in for a model's projections).
double entry(int which, int64_t t, int64_t j) {
  return std::sin(0.37 * static_cast<double>(t * (which + 1)) + 0.11 * static_cast<double>(j) +
                  which);
}

// The reference: the attention of step t computed with plain loops.
std::vector<double> direct(int64_t t, int64_t w) {
  int64_t from = std::max<int64_t>(0, t - w);
  std::vector<double> scores;
  double top = -1e300;
  for (int64_t s = from; s <= t; ++s) {
    double dot = 0;
    for (int64_t j = 0; j < kDim; ++j) dot += entry(0, t, j) * entry(1, s, j);
    scores.push_back(dot / std::sqrt(static_cast<double>(kDim)));
    top = std::max(top, scores.back());
  }
  double total = 0;
  for (double& x : scores) total += x = std::exp(x - top);
  std::vector<double> out(kDim, 0.0);
  for (int64_t s = from; s <= t; ++s)
    for (int64_t j = 0; j < kDim; ++j) out[j] += scores[s - from] / total * entry(2, s, j);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t steps = argc > 1 ? std::atoll(argv[1]) : 64;
  const int64_t w = argc > 2 ? std::atoll(argv[2]) : 6;

  Context ctx;
  Dim t = ctx.dim("t", "T");
  // q[t], k[t], v[t]: one user function with three outputs, called at every step.
  auto qkv_fn = [](const std::vector<HostTensor>&, const std::vector<int64_t>& point) {
    std::vector<HostTensor> out(3, HostTensor(DType::Float32, {kDim}));
    for (int which = 0; which < 3; ++which)
      for (int64_t j = 0; j < kDim; ++j) out[which].set(j, entry(which, point[0], j));
    return out;
  };
  TensorType vec{DType::Float32, {kDim}};
  std::vector<RT> qkv = ctx.udf("qkv", qkv_fn, {}, {vec, vec, vec}, {t});
  RT q = qkv[0], k = qkv[1], v = qkv[2];

  // The window: a slice of the past along t; its length is a symbolic expression of t.
  Expr window = slice(max(0, t.var - w), t.var + 1);
  RT K = k[window], V = v[window];                                             // (n, d)
  RT p = ((K * q).sum(-1) / std::sqrt(static_cast<double>(kDim))).softmax(0);  // (n)
  RT out = (p.unsqueeze(1) * V).sum(0).named("attention").retain();            // (d)

  Executable exe = compile(ctx, {{t.bound, steps}});
  exe.run();

  double max_error = 0;
  for (int64_t s = 0; s < steps; ++s) {
    HostTensor got = exe.get(out, {s});
    std::vector<double> want = direct(s, w);
    for (int64_t j = 0; j < kDim; ++j)
      max_error = std::max(max_error, std::abs(got.at(j) - want[j]));
  }
  std::printf("attention over windows of %lld past steps, T = %lld: out[T-1][0] = %+.5f\n",
              static_cast<long long>(w), static_cast<long long>(steps),
              exe.get(out, {steps - 1}).at(0));
  std::printf("largest difference from the direct computation: %.2e\n", max_error);
  return max_error < 1e-4 ? 0 : 1;
}
