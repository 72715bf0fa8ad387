#include "examples.h"

#include "driver/compile.h"
#include "util/error.h"

namespace tempo::apps {
namespace {

// A deterministic source over `domain` (values depend on the point), standing in for data.
RT source(Context& ctx, const Dims& domain, int64_t size) {
  auto fn = [size](const std::vector<HostTensor>&, const std::vector<int64_t>& point) {
    HostTensor out(DType::Float32, {size});
    double base = 0;
    for (int64_t p : point) base = base * 31 + static_cast<double>(p);
    for (int64_t k = 0; k < size; ++k) out.set(k, 0.01 * base + 0.1 * static_cast<double>(k));
    return std::vector<HostTensor>{out};
  };
  return ctx.udf("source", fn, {}, {TensorType{DType::Float32, {size}}}, domain)[0];
}

void sink(Context& ctx, const RT& x, const Dims& domain) {
  ctx.udf("sink", [](auto&, auto&) { return std::vector<HostTensor>{}; }, {x}, {}, domain);
}

Bounds recurrence(Context& ctx) {
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, 4);
  RT s = ctx.placeholder({DType::Float32, {4}}, {t}, "s");
  s[0] = x[0];
  s[t.var + 1] = s[t.var] * 0.5 + x;
  sink(ctx, s, {t});
  return {{t.bound, 100}};
}

Bounds past_window(Context& ctx) {
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, 4);
  RT y = x[slice(max(0, t.var - 3), t.var + 1)].sum(0).named("y");
  sink(ctx, y, {t});
  return {{t.bound, 100}};
}

Bounds future_window(Context& ctx) {
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, 4);
  RT y = x[slice(t.var, min(t.var + 3, t.bound))].sum(0).named("y");
  sink(ctx, y, {t});
  return {{t.bound, 100}};
}

Bounds counter(Context& ctx) {
  Dim i = ctx.dim("i", "I");
  RT c = ctx.placeholder({DType::Float32, {}}, {i}, "c");
  c[0] = ctx.zeros({});
  c[i.var + 1] = c[i.var] + 1.0;
  sink(ctx, c[(i.var + 1) % 5 == 0], {i});
  return {{i.bound, 20}};
}

// REINFORCE-shaped: per iteration, an acting loop over t and Monte-Carlo returns r[t:T].
Bounds returns(Context& ctx, bool n_step) {
  Dim i = ctx.dim("i", "I");
  Dim t = ctx.dim("t", "T");
  RT w = ctx.placeholder({DType::Float32, {4}}, {i}, "w");
  w[0] = ctx.zeros({4});
  RT obs = source(ctx, {i, t}, 4).named("obs");
  RT act = (obs * w).sum({0}).tanh().named("act");
  RT r = (act * act).named("reward");
  Expr window = n_step ? slice(t.var, min(t.var + 8, t.bound)) : slice(t.var, t.bound);
  RT g = r[{i.var, window}].discounted_sum(0.99).named("return");
  RT loss = (g * act).named("loss");
  RT total = loss[{i.var, slice(0, t.bound)}].sum(0).named("total");
  w[i.var + 1] = w[i.var] + total * 0.001;
  return {{i.bound, 5}, {t.bound, 50}};
}

}  // namespace

const std::vector<Example>& examples() {
  static const std::vector<Example> all = {
      {"recurrence", "s[t+1] = 0.5 * s[t] + x[t] with an initial branch s[0] = x[0]", recurrence},
      {"past-window", "y[t] = sum(x[max(0, t-3):t+1]): a sliding window over the past",
       past_window},
      {"future-window", "y[t] = sum(x[t:min(t+3, T)]): y waits for x[t+2] (TEMPO Fig. 14)",
       future_window},
      {"counter", "a counter over iterations, checkpointed when (i + 1) % 5 == 0", counter},
      {"mc-returns", "REINFORCE-shaped program with Monte-Carlo returns r[t:T]",
       [](Context& c) { return returns(c, false); }},
      {"nstep-returns", "REINFORCE-shaped program with 8-step returns r[t:min(t+8, T)]",
       [](Context& c) { return returns(c, true); }},
  };
  return all;
}

const Example& find_example(const std::string& name) {
  for (const Example& e : examples())
    if (e.name == name) return e;
  std::string names;
  for (const Example& e : examples()) names += (names.empty() ? "" : ", ") + e.name;
  throw UserError(cat("unknown example '", name, "'; known examples: ", names));
}

}  // namespace tempo::apps
