// Builds, compiles and runs two small recurrent-tensor programs against an installed Tempo:
// a recurrence over t (the api) and a parameter fit by SGD over iterations (nn + optim).
// Exits 0 when both give the values computed by hand.
#include <cmath>
#include <cstdio>

#include "api/tempo.h"
#include "driver/compile.h"
#include "nn/module.h"
#include "optim/optim.h"

using namespace tempo;

namespace {

bool check(const char* what, double got, double want, double tol) {
  bool ok = std::abs(got - want) <= tol;
  std::printf("%s: %.6f (expected %.6f)%s\n", what, got, want, ok ? "" : "  MISMATCH");
  return ok;
}

}  // namespace

int main() {
  bool ok = true;
  {
    // s[0] = 1, s[t + 1] = 0.5 s[t] + 1: s[k] = 2 - 2^-k.
    Context ctx;
    Dim t = ctx.dim("t", "T");
    RT s = ctx.placeholder({DType::Float32, {3}}, {t}, "s");
    s[0] = ctx.ones({3});
    s[t.var + 1] = s[t.var] * 0.5 + 1.0;
    RT kept = s.retain();
    Executable exe = compile(ctx, {{t.bound, 12}});
    exe.run();
    ok &= check("s[11]", exe.get(kept, {11}).at(2), 2.0 - std::pow(2.0, -11), 1e-5);
  }
  {
    // Minimizes (w - 3)^2 by SGD with lr 0.25: w[i + 1] - 3 = 0.5 (w[i] - 3) from w[0] = 0.
    Context ctx;
    Dim i = ctx.dim("i", "I");
    nn::Parameter w(ctx.zeros({}), i, "w");
    RT loss = (RT(w) - 3.0).square();
    optim::SGD opt({w}, 0.25);
    optim::minimize(loss, opt);
    RT kept = RT(w).retain();
    Executable exe = compile(ctx, {{i.bound, 10}});
    exe.run();
    ok &= check("w[9]", exe.get(kept, {9}).at(0), 3.0 - 3.0 * std::pow(0.5, 9), 1e-5);
  }
  std::puts(ok ? "downstream: ok" : "downstream: FAILED");
  return ok ? 0 : 1;
}
