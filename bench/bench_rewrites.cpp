// Graph rewrites of Tempo programs (passes/rewrites.h, rewrite/program_rewrites.h): the same
// program compiled with rewrites none, with TASO's merge of matmuls that share an input applied
// wherever it matches, and with the search under the measured cost model, run side by side in
// one process. The cost model's prediction for each region is checked against the measured
// time of the compiled program.
//
//   bench_rewrites [--quick]
//
// The program: an actor-critic's heads as users write them (CleanRL's PPO keeps its actor and
// critic apart): per step t of iteration i, h = tanh(x[t] @ W1), then the policy's logits
// h @ Wpi and the value h @ Wv, with weights that change per iteration. N rows per step.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "api/tempo.h"
#include "driver/compile.h"
#include "rewrite/program_rewrites.h"
#include "rewrite/subst.h"

namespace {

using namespace tempo;
using Clock = std::chrono::steady_clock;

// TASO's merge of two matmuls reading one input, wherever it first matches in a region.
RewritePolicy merge_everywhere() {
  return [](const RewriteRegion& region) {
    rewrite::Graph g = rewrite::to_graph(region);
    bool merged = false;
    for (bool again = true; again;) {
      again = false;
      for (const rewrite::Match& m : rewrite::all_matches(g))
        if (m.rule == rewrite::rule_index("merge_matmul_shared_input")) {
          g = rewrite::apply(g, m);
          merged = again = true;
          break;
        }
    }
    RewriteChoice c;
    if (merged) c.graph = rewrite::to_region(g.rebuilt());
    return c;
  };
}

struct Result {
  double seconds = 0;  // per run, the fastest of the runs
  int64_t launches = 0;
  double checksum = 0;
};

Result run(int64_t rows, int64_t hidden, int64_t actions, int64_t I, int64_t T, int runs,
           const RewritePolicy& policy) {
  Context ctx;
  Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
  RT x = ctx.rand_normal({rows, 8}, {i, t});
  RT w1 = ctx.rand_normal({8, hidden}, {i}) * 0.3;
  RT wpi = ctx.rand_normal({hidden, actions}, {i}) * 0.1;
  RT wv = ctx.rand_normal({hidden, 1}, {i}) * 0.1;
  RT h = x.matmul(w1).tanh();
  RT logits = h.matmul(wpi), value = h.matmul(wv);
  RT out = (logits.softmax(-1).max(-1).sum() + value.sum()).retain();
  CompileOptions o;
  o.passes.vectorize = false;  // acting: one step at a time, as with an environment
  o.passes.rewrite_policy = policy;
  Executable exe = compile(ctx, {{i.bound, I}, {t.bound, T}}, o);
  Result r;
  r.seconds = 1e30;
  for (int k = 0; k < runs; ++k) {
    auto t0 = Clock::now();
    exe.run();
    r.seconds =
        std::min(r.seconds, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  r.launches = exe.ops_executed();
  for (int64_t a = 0; a < I; ++a) r.checksum += exe.get(out, {a, T - 1}).to_vector().at(0);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int64_t I = quick ? 10 : 40, T = 200;
  const int runs = quick ? 3 : 7;
  // The search's figures for each region, to stderr.
  const RewritePolicy searched = [policy = rewrite::program_rewrite_policy()](
                                     const RewriteRegion& region) {
    RewriteChoice c = policy(region);
    std::fprintf(stderr, "search: %s: %s\n", region.where.c_str(), c.why.c_str());
    return c;
  };
  std::printf("actor-critic heads per step, %lld iterations x %lld steps, fastest of %d runs\n\n",
              static_cast<long long>(I), static_cast<long long>(T), runs);
  std::printf("| rows x hidden -> actions | none us/step | merged us/step | merged/none | "
              "search us/step | search/none | launches/step none, merged | same values |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  std::vector<std::vector<int64_t>> shapes = {{1, 64, 2}, {4, 64, 2}, {64, 64, 6}, {1024, 256, 6}};
  if (quick) shapes.resize(3);
  for (const auto& s : shapes) {
    const Result none = run(s[0], s[1], s[2], I, T, runs, nullptr);
    const Result merged = run(s[0], s[1], s[2], I, T, runs, merge_everywhere());
    const Result found = run(s[0], s[1], s[2], I, T, runs, searched);
    const double steps = static_cast<double>(I * T);
    auto same = [&](const Result& r) {
      return std::abs(r.checksum - none.checksum) <= 1e-4 * (1 + std::abs(none.checksum));
    };
    std::printf("| %lld x %lld -> %lld | %.2f | %.2f | %.3f | %.2f | %.3f | %.1f, %.1f | %s |\n",
                static_cast<long long>(s[0]), static_cast<long long>(s[1]),
                static_cast<long long>(s[2]), none.seconds / steps * 1e6,
                merged.seconds / steps * 1e6, merged.seconds / none.seconds,
                found.seconds / steps * 1e6, found.seconds / none.seconds,
                static_cast<double>(none.launches) / steps,
                static_cast<double>(merged.launches) / steps,
                same(merged) && same(found) ? "yes" : "NO");
    std::fflush(stdout);
  }
  return 0;
}
