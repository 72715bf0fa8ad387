// Block and window stores against point stores (TEMPO §6) on programs whose reads move with t,
// run side by side in one process: a running maximum over the past, y[t] = x[0:t+1].max(0), and
// over the future, y[t] = x[t:T].max(0) (maxima are not lifted to scans, so every step reads its
// whole window), and a sliding maximum y[t] = x[max(0, t-w+1):t+1].max(0). From point stores each
// read stacks O(t) (O(w)) copies; from a block or window store it is one view.
// The rows come from a user function, so no pass batches them.
// Usage: bench_stores [D]   (row width, default 256 floats)
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "api/tempo.h"
#include "backend/libtorch_backend.h"
#include "driver/compile.h"

namespace {

using namespace tempo;

struct Result {
  double seconds;
  double peak_mib;
};

// kind: 0 past, 1 future, 2 sliding window of w points.
Result run(int kind, int64_t T, int64_t D, bool blocks, int64_t w = 64) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  // x[t] = t + (0, 1, ..., D - 1) / D, one row per step from a user function (as observations
  // come from an environment: nothing batches them).
  auto row = [D](const std::vector<HostTensor>&, const std::vector<int64_t>& p) {
    HostTensor h(DType::Float32, {D});
    for (int64_t k = 0; k < D; ++k) h.set(k, static_cast<double>(p[0]) + double(k) / double(D));
    return std::vector<HostTensor>{h};
  };
  RT x = ctx.udf("row", row, {}, {TensorType{DType::Float32, {D}}}, {t})[0];
  Expr window = kind == 1   ? slice(t.var, t.bound)
                : kind == 0 ? slice(0, t.var + 1)
                            : slice(max(0, t.var - (w - 1)), t.var + 1);
  RT y = x[window].max(0);
  ctx.udf("keep", [](auto&, auto&) { return std::vector<HostTensor>{}; }, {y[t.bound - 1]}, {},
          {});
  CompileOptions o;
  o.block_stores = blocks;
  Executable exe = compile(ctx, {{t.bound, T}}, o);
  exe.run();  // warm up
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    exe.run();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return {best, static_cast<double>(exe.memory().peak_bytes) / (1 << 20)};
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t D = argc > 1 ? std::atoll(argv[1]) : 256;
  backend::set_num_threads(1);
  std::printf("## Block and window vs point stores: maxima over windows that move with t (D = "
              "%lld, 1 thread, best of 3 runs)\n\n",
              static_cast<long long>(D));
  std::printf("| window | T | point store ms | block/window store ms | time ratio | point peak "
              "MiB | block/window peak MiB |\n|---|---|---|---|---|---|---|\n");
  for (int kind : {0, 1, 2})
    for (int64_t T : {250, 500, 1000, 2000}) {
      Result p = run(kind, T, D, false), b = run(kind, T, D, true);
      const char* name = kind == 0 ? "x[0:t+1]" : kind == 1 ? "x[t:T]" : "x[t-63:t+1] (window)";
      std::printf("| %s | %lld | %.1f | %.1f | %.2f | %.1f | %.1f |\n", name,
                  static_cast<long long>(T), 1e3 * p.seconds, 1e3 * b.seconds,
                  b.seconds / p.seconds, p.peak_mib, b.peak_mib);
    }
  return 0;
}
