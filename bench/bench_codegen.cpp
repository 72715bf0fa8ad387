// bench_codegen: the cost of one fused region per call, by region kind, with the region's ops
// launched one by one (no fusion), run by the region kernel on LibTorch ops (fusion, no code
// generation), and with its elementwise clusters as generated loops (fusion + code generation);
// and the time code generation adds to a cold compile. Each program runs the region at T points
// of a dimension t (per-timestep, vectorization off), so the time per point is the time per call.
// The generated loops run rows outer and in the default loop order (measured: narrow rows that
// reduce may run interchanged, columns outer, when that is faster; backend/codegen.h).
//
//   ./bench_codegen [--quick]
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "api/tempo.h"
#include "backend/libtorch_backend.h"
#include "driver/compile.h"

namespace {

using namespace tempo;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A region kind: builds the region's ops at each point of t on inputs of shape (B, H).
struct Kind {
  const char* name;
  std::function<RT(Context&, const RT& x, const RT& t)> build;
};

const std::vector<Kind> kKinds = {
    {"elementwise chain (6 ops)",
     [](Context&, const RT& x, const RT&) {
       return ((x * 0.5 + 1.0).tanh() * x - x.sigmoid()).relu();
     }},
    {"log-softmax",
     [](Context&, const RT& x, const RT&) { return x.log_softmax(1); }},
    {"Adam update",
     [](Context& ctx, const RT& x, const RT& t) {
       RT g = x * 0.1, m = x * 0.01 + t, v = x * x * 0.001 + t;
       RT m2 = m * 0.9 + g * 0.1, v2 = v * 0.999 + g * g * 0.001;
       RT p = x - (m2 / 0.1) * 0.001 / ((v2 / 0.001).sqrt() + 1e-8);
       return p + m2 + v2;  // all three results are read
     }},
    {"MLP layer (tanh(x W + b))",
     [](Context& ctx, const RT& x, const RT&) {
       RT W = ctx.rand_normal({x.shape()[1].value(), 64}) * 0.1;
       RT b = ctx.rand_normal({64}) * 0.1;
       return (x.matmul(W) + b).tanh();
     }},
};

struct Measure {
  double us_per_call = 0;
  double compile_s = 0;
  int64_t launches = 0;
};

Measure measure(const Kind& kind, int64_t B, int64_t H, int64_t T, bool fusion, bool codegen,
                int repeats, backend::LoopSchedules loops = backend::LoopSchedules::Measured) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  // A per-point input: the same values at every t, but an op of t's domain.
  RT tv = ctx.symbol(t.var).cast(DType::Float32) * 1e-6;
  RT x = ctx.rand_normal({B, H}) + tv;
  RT y = kind.build(ctx, x, tv);
  RT sink = y.sum().retain();
  CompileOptions o;
  o.passes = PassOptions::none();  // only the pass under test: no vectorization or rewrites
  o.passes.fusion = fusion;
  o.codegen = codegen;
  o.loop_schedules = loops;
  auto t0 = Clock::now();
  Executable exe = compile(ctx, {{t.bound, T}}, o);
  Measure m;
  m.compile_s = seconds_since(t0);
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto t1 = Clock::now();
    exe.run();
    best = std::min(best, seconds_since(t1));
  }
  m.us_per_call = best / static_cast<double>(T) * 1e6;
  m.launches = exe.ops_executed() / T;
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("TEMPO_NO_SCHEDULE_CACHE", "1", 1);  // compile times include scheduling
  bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  backend::set_num_threads(1);
  const int64_t T = quick ? 200 : 1000;
  const int repeats = quick ? 3 : 5;
  // A fresh kernel cache, so that the first compile with code generation is cold.
  const std::string cache =
      (std::filesystem::temp_directory_path() / ("tempo-bench-codegen-" + std::to_string(getpid())))
          .string();
  setenv("TEMPO_CACHE_DIR", cache.c_str(), 1);

  std::cout << "## Fused regions per call (us), 1 thread, best of " << repeats << " runs of " << T
            << " points\n\n"
            << "| region | shape | unfused us | launches | fused (LibTorch ops) us | fused + "
               "generated, rows outer us | fused + generated us | launches | generated / "
               "unfused | codegen compile s |\n"
            << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Kind& k : kKinds)
    for (auto [B, H] : {std::pair<int64_t, int64_t>{16, 64}, {2048, 64}, {4096, 2}}) {
      Measure off = measure(k, B, H, T, false, false, repeats);
      Measure fused = measure(k, B, H, T, true, false, repeats);
      Measure rows =
          measure(k, B, H, T, true, true, repeats, backend::LoopSchedules::RowsOuter);
      Measure cold = measure(k, B, H, T, true, true, repeats);  // compiles the loops
      Measure warm = measure(k, B, H, T, true, true, repeats);  // loads them from the cache
      std::cout << std::fixed << std::setprecision(2) << "| " << k.name << " | " << B << "x" << H
                << " | " << off.us_per_call << " | " << off.launches << " | "
                << fused.us_per_call << " | " << rows.us_per_call << " | " << warm.us_per_call
                << " | " << warm.launches << " | " << warm.us_per_call / off.us_per_call << " | "
                << std::setprecision(3) << std::max(0.0, cold.compile_s - warm.compile_s)
                << " |\n";
    }
  std::filesystem::remove_all(cache);
  return 0;
}
