// A recurrence over time: an exponential moving average of a signal, written as a recurrent
// tensor with an initial branch and a recurrent branch, then the sum of all future values of
// the signal at every step (a slice whose length depends on t).
//
//   ema[0]     = 0
//   ema[t + 1] = 0.9 * ema[t] + 0.1 * x[t]     (ema[t] averages the inputs before step t)
//   future[t]  = sum(x[t:T])
//
// Both are checked against plain loops. Run: ./recurrence
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "api/tempo.h"
#include "driver/compile.h"

using namespace tempo;

namespace {

constexpr int64_t kSteps = 50;  // T
constexpr int64_t kSize = 3;    // values per step

// The signal at step t, element j (what a sensor or a data loader would give).
double signal(int64_t t, int64_t j) {
  return std::sin(0.2 * static_cast<double>(t) + static_cast<double>(j));
}

}  // namespace

int main() {
  Context ctx;                // owns the program
  Dim t = ctx.dim("t", "T");  // the timestep t and its bound T (given at compile time)

  // A source over t: a user function called once per step with the point (t) it runs at.
  auto read_signal = [](const std::vector<HostTensor>&, const std::vector<int64_t>& point) {
    HostTensor x(DType::Float32, {kSize});
    for (int64_t j = 0; j < kSize; ++j) x.set(j, signal(point[0], j));
    return std::vector<HostTensor>{x};
  };
  RT x = ctx.udf("signal", read_signal, {}, {TensorType{DType::Float32, {kSize}}}, {t})[0];

  // A placeholder is defined by its branches: here t == 0 and t >= 1.
  RT ema = ctx.placeholder({DType::Float32, {kSize}}, {t}, "ema");
  ema[0] = ctx.zeros({kSize});
  ema[t.var + 1] = ema[t.var] * 0.9 + x * 0.1;  // x, ema: read at the current step t

  // x[t:T] has T - t rows at step t; Tempo computes all of them with one reverse scan.
  RT future = x[slice(t.var, t.bound)].sum(0);

  // retain() keeps every step's value for Executable::get after the run.
  RT ema_kept = ema.retain(), future_kept = future.retain();
  Executable exe = compile(ctx, {{t.bound, kSteps}});
  exe.run();

  // The same computations as plain loops.
  double max_error = 0;
  std::vector<double> e(kSize);
  for (int64_t k = 0; k < kSteps; ++k) {
    HostTensor got_ema = exe.get(ema_kept, {k}), got_future = exe.get(future_kept, {k});
    for (int64_t j = 0; j < kSize; ++j) {
      e[j] = k == 0 ? 0.0 : 0.9 * e[j] + 0.1 * signal(k - 1, j);
      double f = 0;
      for (int64_t m = k; m < kSteps; ++m) f += signal(m, j);
      max_error = std::max(max_error, std::abs(got_ema.at(j) - e[j]));
      max_error = std::max(max_error, std::abs(got_future.at(j) - f));
    }
    if (k % 10 == 0)
      std::printf("t = %2lld  ema = %+.4f  future = %+.4f  (element 0)\n",
                  static_cast<long long>(k), got_ema.at(0), got_future.at(0));
  }
  std::printf("largest difference from the plain loops: %.2e\n", max_error);
  return max_error < 1e-4 ? 0 : 1;
}
