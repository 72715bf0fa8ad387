// The interpreter and the cost model, on the backend's eager operations.
#include "rewrite/evaluate.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>

#include "backend/eager_ops.h"
#include "util/error.h"
#include "util/hash.h"

namespace tempo::rewrite {

namespace {

namespace eager = backend::eager;
using Clock = std::chrono::steady_clock;
using Values = std::vector<eager::Tensor>;

std::vector<int64_t> same_padding(const Node& n, int64_t kh, int64_t kw) {
  if (n.attrs.pad == Pad::Valid) return {0, 0};
  return {(kh - 1) / 2, (kw - 1) / 2};
}

eager::Activation activation(Act a) {
  switch (a) {
    case Act::None: return eager::Activation::None;
    case Act::Relu: return eager::Activation::Relu;
    case Act::Tanh: return eager::Activation::Tanh;
    case Act::Sigmoid: return eager::Activation::Sigmoid;
  }
  return eager::Activation::None;
}

// One node's outputs from its inputs' values (inputs and weights are bound by the caller).
Values run_node(const Node& n, const Values& in) {
  const Attrs& a = n.attrs;
  auto act = [&](eager::Tensor y) {
    return Values{eager::activate(std::move(y), activation(a.act))};
  };
  switch (n.op) {
    case Op::Input:
    case Op::Weight:
      internal_error("rewrite: inputs and weights are bound, not run");
    case Op::MatMul: return act(eager::matmul(in[0], in[1]));
    case Op::Conv2d: {
      auto w = eager::shape(in[1]);
      return act(eager::conv2d(in[0], in[1], {a.sh, a.sw}, same_padding(n, w[2], w[3])));
    }
    case Op::MaxPool:
      return act(
          eager::max_pool2d(in[0], {a.kh, a.kw}, {a.sh, a.sw}, same_padding(n, a.kh, a.kw)));
    case Op::AvgPool:
      return act(
          eager::avg_pool2d(in[0], {a.kh, a.kw}, {a.sh, a.sw}, same_padding(n, a.kh, a.kw)));
    case Op::Relu: return {eager::relu(in[0])};
    case Op::Tanh: return {eager::tanh(in[0])};
    case Op::Sigmoid: return {eager::sigmoid(in[0])};
    case Op::Add: return {eager::add(in[0], in[1])};
    case Op::Mul: return {eager::mul(in[0], in[1])};
    case Op::Concat: return {eager::concat(in, a.axis)};
    // Parts are copied out: consumers then see contiguous tensors, as the cost model measures
    // them, and the split pays for its copy in its own cost.
    case Op::Split: return eager::split(in[0], a.ints, a.axis);
    // A transpose moves data (TASO's transpose with shuffle), so it has a cost of its own.
    case Op::Transpose: return {eager::transpose(in[0], a.ints)};
    case Op::Reshape: return {eager::reshape(in[0], a.ints)};
    case Op::Enlarge: {
      auto w = eager::shape(in[0]);
      int64_t ph = (a.kh - w[2]) / 2, pw = (a.kw - w[3]) / 2;
      return {eager::pad_zeros(in[0], {pw, pw, ph, ph})};
    }
  }
  internal_error("rewrite: unknown op");
}

// The value of an input or weight: drawn from its name, so it survives rewrites.
eager::Tensor named_value(const Node& n, const EvalOptions& o) {
  const Shape& s = n.outputs[0];
  int64_t count = 1;
  for (int64_t d : s) count *= d;
  std::mt19937_64 rng(fnv1a(n.attrs.name) ^ (o.seed * 0x9e3779b97f4a7c15ULL));
  std::vector<double> v(count);
  if (o.integer_values) {
    std::uniform_int_distribution<int> d(-2, 2);
    for (auto& x : v) x = d(rng);
  } else {
    // Weights scaled by their fan-in keep deep models' activations of order one.
    double fan_in = 1;
    if (n.op == Op::Weight) fan_in = s.size() == 4 ? double(s[1] * s[2] * s[3]) : double(s[0]);
    std::uniform_real_distribution<double> d(-1, 1);
    double scale = std::sqrt(6.0 / fan_in);  // He's scaling: ReLU layers keep their variance
    if (n.op == Op::Weight) scale *= o.weight_scale;
    for (auto& x : v) x = d(rng) * scale;
  }
  return eager::from_values(s, v, o.integer_values);
}

// The values of node `n`'s inputs.
Values inputs_of(const Node& n, const std::vector<Values>& vals) {
  Values in;
  for (const Ref& r : n.inputs) in.push_back(vals[r.node][r.out]);
  return in;
}

// All values of the graph: bound inputs and weights, then each node in order.
std::vector<Values> run_graph(const Graph& g, const EvalOptions& o) {
  eager::Scope scope;
  std::vector<Values> vals(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (n.op == Op::Input || n.op == Op::Weight)
      vals[k] = {named_value(n, o)};
    else
      vals[k] = run_node(n, inputs_of(n, vals));
  }
  return vals;
}

}  // namespace

std::vector<HostValue> evaluate(const Graph& g, const EvalOptions& options) {
  auto vals = run_graph(g, options);
  std::vector<HostValue> out;
  for (const Ref& r : g.outputs) {
    const eager::Tensor& t = vals[r.node][r.out];
    out.push_back({eager::shape(t), eager::values(t)});
  }
  return out;
}

double max_difference(const std::vector<HostValue>& a, const std::vector<HostValue>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].shape != b[k].shape) return std::numeric_limits<double>::infinity();
    // Relative to the output's largest magnitude, so deep graphs with small or large
    // activations are compared alike.
    double scale = 1e-30;
    for (double v : b[k].data) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < a[k].data.size(); ++i) {
      double d = std::abs(a[k].data[i] - b[k].data[i]) / scale;
      if (!(d <= worst)) worst = std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
    }
  }
  return worst;
}

CostModel::CostModel(CostOptions options) : options_(std::move(options)) {
  if (options_.cache_file.empty()) return;
  std::ifstream in(options_.cache_file);
  std::string line;
  while (std::getline(in, line)) {
    auto tab = line.rfind('\t');
    if (tab == std::string::npos) continue;
    try {
      costs_[line.substr(0, tab)] = std::stod(line.substr(tab + 1));
    } catch (const std::exception&) {
      // a torn last line from an interrupted run: measured again
    }
  }
}

std::string CostModel::key(const Graph& g, int n) {
  const Node& x = g.nodes[n];
  const Attrs& a = x.attrs;
  std::string k = cat(op_name(x.op), " act=", act_name(a.act), " k=", a.kh, "x", a.kw, " s=", a.sh,
                      "x", a.sw, " pad=", a.pad == Pad::Same ? "same" : "valid", " axis=", a.axis,
                      " ints=", shape_str(a.ints), " in=");
  for (const Ref& r : x.inputs) k += shape_str(g.shape(r));
  return k;
}

double CostModel::op_cost(const Graph& g, int n) {
  Op op = g.nodes[n].op;
  if (op == Op::Input || op == Op::Weight) return 0;
  if (g.nodes[n].cost >= 0) return g.nodes[n].cost;
  std::string k = key(g, n);
  auto it = costs_.find(k);
  if (it != costs_.end()) return g.nodes[n].cost = it->second;
  double ms = measure_op(g, n);
  g.nodes[n].cost = ms;
  costs_[k] = ms;
  ++measurements_;
  if (!options_.cache_file.empty()) {
    std::ofstream out(options_.cache_file, std::ios::app);
    out << k << '\t' << ms << '\n';
  }
  return ms;
}

double CostModel::graph_cost(const Graph& g) {
  std::vector<bool> folded = g.constant_nodes();
  double total = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (!folded[n]) total += op_cost(g, static_cast<int>(n));
  return total;
}

double CostModel::measure_op(const Graph& g, int n) {
  eager::Scope scope(options_.threads);
  const Node& node = g.nodes[n];
  Values in;
  for (const Ref& r : node.inputs) in.push_back(eager::randn(g.shape(r)));
  run_node(node, in);  // warm-up
  double best = std::numeric_limits<double>::infinity();
  for (int round = 0; round < options_.rounds; ++round) {
    auto start = Clock::now();
    int calls = 0;
    double ms = 0;
    do {
      run_node(node, in);
      ++calls;
      ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    } while (ms < options_.min_ms);
    best = std::min(best, ms / calls);
  }
  return best;
}

double CostModel::measure_graph(const Graph& g, int reps, double* ops_in_graph_ms) {
  eager::Scope scope(options_.threads);
  // Inputs, weights and everything computed only from weights, once, before timing.
  std::vector<bool> folded = g.constant_nodes();
  EvalOptions o;
  std::vector<Values> vals(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (n.op == Op::Input || n.op == Op::Weight)
      vals[k] = {named_value(n, o)};
    else if (folded[k])
      vals[k] = run_node(n, inputs_of(n, vals));
  }
  // Each value is released after its last reader, as an executor would: the run's memory is
  // then reused from one op to the next instead of growing with the graph.
  std::vector<int> last_use(g.nodes.size(), -1);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (const Ref& r : g.nodes[k].inputs) last_use[r.node] = static_cast<int>(k);
  for (const Ref& r : g.outputs) last_use[r.node] = static_cast<int>(g.nodes.size());
  double best = std::numeric_limits<double>::infinity();
  std::vector<double> op_best(g.nodes.size(), std::numeric_limits<double>::infinity());
  for (int rep = 0; rep <= reps; ++rep) {  // the first run warms up
    std::vector<Values> run = vals;
    auto start = Clock::now();
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const Node& n = g.nodes[k];
      if (folded[k] || n.op == Op::Input) continue;
      Values in = inputs_of(n, run);
      auto op_start = Clock::now();
      run[k] = run_node(n, in);
      if (rep > 0)
        op_best[k] = std::min(
            op_best[k], std::chrono::duration<double, std::milli>(Clock::now() - op_start).count());
      in.clear();
      for (const Ref& r : n.inputs)
        if (last_use[r.node] == static_cast<int>(k) && !folded[r.node] &&
            g.nodes[r.node].op != Op::Input)
          run[r.node].clear();
    }
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (rep > 0) best = std::min(best, ms);
  }
  if (ops_in_graph_ms) {
    *ops_in_graph_ms = 0;
    for (size_t k = 0; k < g.nodes.size(); ++k)
      if (!folded[k] && g.nodes[k].op != Op::Input) *ops_in_graph_ms += op_best[k];
  }
  return best;
}

}  // namespace tempo::rewrite
