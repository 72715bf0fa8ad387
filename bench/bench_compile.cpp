// Time of compute_schedule (isl scheduling + AST generation) on REINFORCE-shaped SDGs over
// (b, i, t) with a policy of L layers: about 6 ops per layer plus the environment loop, so L = 8
// is a ~50-op program. Arguments: layers, n-step window (0: Monte-Carlo returns).
#include <benchmark/benchmark.h>

#include <string>

#include "ir/sdg.h"
#include "schedule/schedule.h"

namespace {

using namespace tempo;
using ir::OpId;
using ir::OpKind;

struct Builder {
  ir::Graph g;
  OpId op(const std::string& name, const Dims& domain, OpKind kind) {
    ir::OpNode n;
    n.kind = kind;
    n.domain = domain;
    n.name = name;
    n.outputs.assign(1, ir::TensorType{});
    return g.add_op(std::move(n));
  }
  void read(OpId sink, OpId source, Expr phi, Expr cond = Expr()) {
    g.add_edge(sink, source, 0, std::move(phi), std::move(cond));
  }
};

ir::Graph reinforce(int layers, int n_step) {
  Builder b;
  Dim bd("b", "B"), id("i", "I"), td("t", "T");
  Expr bv = bd.var, B = bd.bound, i = id.var, t = td.var, T = td.bound;
  Dims bit = {bd, id, td};
  OpId reset = b.op("reset", {bd, id}, OpKind::Udf);
  OpId obs = b.op("obs", bit, OpKind::Merge);
  OpId step = b.op("step", bit, OpKind::Udf);
  OpId ret = b.op("ret", bit, OpKind::Sum);
  OpId loss = b.op("loss", bit, OpKind::Mul);
  std::vector<OpId> P, h, grad;
  OpId prev = obs;
  for (int k = 0; k < layers; ++k) {
    std::string s = std::to_string(k);
    OpId init = b.op("init" + s, {}, OpKind::RandNormal);
    OpId p = b.op("P" + s, {id}, OpKind::Merge);
    OpId hk = b.op("h" + s, bit, OpKind::MatMul);
    b.read(p, init, sym::seq({}), i == 0);
    b.read(hk, prev, sym::seq({bv, i, t}));
    b.read(hk, p, sym::seq({i}));
    P.push_back(p);
    h.push_back(hk);
    prev = hk;
  }
  b.read(obs, reset, sym::seq({bv, i}), t == 0);
  b.read(obs, step, sym::seq({bv, i, t - 1}), t >= 1);
  b.read(step, prev, sym::seq({bv, i, t}));
  Expr stop = n_step > 0 ? sym::min(t + n_step, T) : T;
  b.read(ret, step, sym::seq({bv, i, sym::slice(t, stop)}));
  b.read(loss, ret, sym::seq({bv, i, t}));
  b.read(loss, prev, sym::seq({bv, i, t}));
  OpId upstream = loss;
  for (int k = layers - 1; k >= 0; --k) {
    std::string s = std::to_string(k);
    OpId gk = b.op("g" + s, bit, OpKind::MatMul);
    b.read(gk, upstream, sym::seq({bv, i, t}));
    b.read(gk, h[k], sym::seq({bv, i, t}));
    OpId G = b.op("G" + s, {id}, OpKind::Sum);
    b.read(G, gk, sym::seq({sym::slice(0, B), i, sym::slice(0, T)}));
    OpId U = b.op("U" + s, {id}, OpKind::Sub);
    b.read(U, P[k], sym::seq({i}));
    b.read(U, G, sym::seq({i}));
    b.read(P[k], U, sym::seq({i - 1}), i >= 1);
    upstream = gk;
  }
  return std::move(b.g);
}

void BM_ComputeSchedule(benchmark::State& state) {
  ir::Graph g = reinforce(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  schedule::ScheduleOptions opt;
  opt.whole_component = state.range(2) != 0;
  opt.fuse = state.range(3) != 0;
  int statements = 0;
  for (auto _ : state) {
    schedule::Schedule s = schedule::compute_schedule(g, opt);
    statements = s.num_statements;
    benchmark::DoNotOptimize(s.root);
  }
  state.counters["ops"] = static_cast<double>(g.num_ops());
  state.counters["edges"] = static_cast<double>(g.num_edges());
  state.counters["statements"] = statements;
}

BENCHMARK(BM_ComputeSchedule)
    ->ArgNames({"layers", "nstep", "whole", "fuse"})
    ->Args({1, 0, 0, 0})
    ->Args({1, 0, 0, 1})
    ->Args({1, 5, 0, 0})
    ->Args({1, 5, 0, 1})
    ->Args({4, 5, 0, 0})
    ->Args({4, 5, 0, 1})
    ->Args({8, 0, 0, 0})
    ->Args({8, 0, 0, 1})
    ->Args({8, 5, 0, 0})
    ->Args({8, 5, 0, 1})
    ->Args({8, 5, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
