// Nanoseconds per evaluation of typical dependence expressions: the compiled form used by the
// runtime (CompiledSeq) against a recursive walk over the expression tree, for contrast.
#include <benchmark/benchmark.h>

#include <vector>

#include "symbolic/eval.h"
#include "symbolic/parse.h"

namespace {

using namespace tempo::sym;

// The straightforward alternative: walk the tree, looking each symbol's slot up in the layout.
int64_t tree_eval(const Expr& e, const SymbolLayout& layout, const int64_t* env) {
  switch (e.op()) {
    case Op::Const:
    case Op::Bool: return e.value();
    case Op::Symbol: return env[layout.slot(e)];
    case Op::Add: {
      int64_t s = 0;
      for (const Expr& a : e.args()) s += tree_eval(a, layout, env);
      return s;
    }
    case Op::Mul: {
      int64_t p = 1;
      for (const Expr& a : e.args()) p *= tree_eval(a, layout, env);
      return p;
    }
    case Op::Min:
    case Op::Max: {
      int64_t r = tree_eval(e.arg(0), layout, env);
      for (size_t i = 1; i < e.size(); ++i) {
        int64_t v = tree_eval(e.arg(i), layout, env);
        r = e.op() == Op::Min ? std::min(r, v) : std::max(r, v);
      }
      return r;
    }
    default: return 0;  // the benchmarked expressions use only the operations above
  }
}

void tree_eval_seq(const Expr& e, const SymbolLayout& layout, const int64_t* env, IndexRange* out) {
  auto one = [&](const Expr& x, IndexRange& r) {
    if (x.is_slice()) {
      r = {tree_eval(x.arg(0), layout, env), tree_eval(x.arg(1), layout, env),
           tree_eval(x.arg(2), layout, env), false};
    } else {
      int64_t v = tree_eval(x, layout, env);
      r = {v, v + 1, 1, true};
    }
  };
  if (e.is_seq())
    for (size_t i = 0; i < e.size(); ++i) one(e.arg(i), out[i]);
  else
    one(e, out[0]);
}

const Dims kDims = parse_dims("b:B,i:I,t:T");
const SymbolLayout kLayout(kDims);
const char* kWindow = "max(0, t - 3):t + 1";
const char* kThree = "[b, max(0, i - 1), t:min(t + 3, T)]";

// Cycles t through [0, T) so that min/max take both branches.
template <typename F>
void run(benchmark::State& state, F&& eval) {
  std::vector<int64_t> env = {1, 5, 0, 4, 8, 1000};  // b i t B I T
  IndexRange out[3];
  for (auto _ : state) {
    env[2] = env[2] + 1 == env[5] ? 0 : env[2] + 1;
    benchmark::DoNotOptimize(env.data());
    eval(env.data(), out);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
}

void BM_Compiled_Window(benchmark::State& state) {
  CompiledSeq c(parse(kWindow, kDims), kLayout);
  run(state, [&](const int64_t* env, IndexRange* out) { c.eval(env, out); });
}
void BM_Compiled_ThreeDims(benchmark::State& state) {
  CompiledSeq c(parse(kThree, kDims), kLayout);
  run(state, [&](const int64_t* env, IndexRange* out) { c.eval(env, out); });
}
void BM_TreeWalk_Window(benchmark::State& state) {
  Expr e = parse(kWindow, kDims);
  run(state, [&](const int64_t* env, IndexRange* out) { tree_eval_seq(e, kLayout, env, out); });
}
void BM_TreeWalk_ThreeDims(benchmark::State& state) {
  Expr e = parse(kThree, kDims);
  run(state, [&](const int64_t* env, IndexRange* out) { tree_eval_seq(e, kLayout, env, out); });
}
void BM_Compiled_GeneralProgram(benchmark::State& state) {
  // A shape with no special case: nested min/max, a product and a floor division.
  CompiledExpr c(parse("min(max(2*t - b, 0) // 3, T - 1 - i)", kDims), kLayout);
  run(state, [&](const int64_t* env, IndexRange* out) { out[0].start = c.eval(env); });
}

BENCHMARK(BM_Compiled_Window);
BENCHMARK(BM_Compiled_ThreeDims);
BENCHMARK(BM_TreeWalk_Window);
BENCHMARK(BM_TreeWalk_ThreeDims);
BENCHMARK(BM_Compiled_GeneralProgram);

}  // namespace

BENCHMARK_MAIN();
