#include "rewrite/enumerate.h"

#include <array>
#include <map>
#include <random>

#include "rewrite/evaluate.h"
#include "util/error.h"

namespace tempo::rewrite {

namespace {

constexpr int kN = 4;
using Mat = std::array<double, kN * kN>;

enum class E { Leaf, MatMul, Add, Mul, Relu, Transpose };

struct Expr {
  E kind;
  int leaf = 0, a = -1, b = -1;  // children: indices into the expression list
  int ops = 0;
  std::vector<Mat> values;  // one per fingerprint assignment
};

const char* leaf_name(int k) { return k == 0 ? "x" : k == 1 ? "y" : "w"; }

std::string text(const std::vector<Expr>& es, int i) {
  const Expr& e = es[i];
  switch (e.kind) {
    case E::Leaf: return leaf_name(e.leaf);
    case E::MatMul: return "matmul(" + text(es, e.a) + ", " + text(es, e.b) + ")";
    case E::Add: return "add(" + text(es, e.a) + ", " + text(es, e.b) + ")";
    case E::Mul: return "mul(" + text(es, e.a) + ", " + text(es, e.b) + ")";
    case E::Relu: return "relu(" + text(es, e.a) + ")";
    case E::Transpose: return "transpose(" + text(es, e.a) + ")";
  }
  return "?";
}

Mat compute(E kind, const Mat& x, const Mat& y) {
  Mat r{};
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j) {
      double& o = r[i * kN + j];
      switch (kind) {
        case E::MatMul:
          for (int k = 0; k < kN; ++k) o += x[i * kN + k] * y[k * kN + j];
          break;
        case E::Add: o = x[i * kN + j] + y[i * kN + j]; break;
        case E::Mul: o = x[i * kN + j] * y[i * kN + j]; break;
        case E::Relu: o = std::max(0.0, x[i * kN + j]); break;
        case E::Transpose: o = x[j * kN + i]; break;
        case E::Leaf: break;
      }
    }
  return r;
}

// The expression as a rewrite graph (for verification under LibTorch).
Ref to_graph(const std::vector<Expr>& es, int i, Graph& g, std::map<int, Ref>& leaves) {
  const Expr& e = es[i];
  switch (e.kind) {
    case E::Leaf: {
      auto it = leaves.find(e.leaf);
      if (it != leaves.end()) return it->second;
      Ref r = e.leaf == 2 ? g.weight("w", {kN, kN}) : g.input(leaf_name(e.leaf), {kN, kN});
      return leaves[e.leaf] = r;
    }
    case E::MatMul: return g.matmul(to_graph(es, e.a, g, leaves), to_graph(es, e.b, g, leaves));
    case E::Add:
      return g.binary(Op::Add, to_graph(es, e.a, g, leaves), to_graph(es, e.b, g, leaves));
    case E::Mul:
      return g.binary(Op::Mul, to_graph(es, e.a, g, leaves), to_graph(es, e.b, g, leaves));
    case E::Relu: return g.unary(Op::Relu, to_graph(es, e.a, g, leaves));
    case E::Transpose: return g.transpose(to_graph(es, e.a, g, leaves), {1, 0});
  }
  internal_error("enumerate: bad expression");
}

Graph graph_of(const std::vector<Expr>& es, int i) {
  Graph g;
  std::map<int, Ref> leaves;
  // Every graph has all three leaves as values so that equal graphs read the same inputs.
  for (int k = 0; k < 3; ++k)
    leaves[k] = k == 2 ? g.weight("w", {kN, kN}) : g.input(leaf_name(k), {kN, kN});
  g.outputs = {to_graph(es, i, g, leaves)};
  return g.rebuilt();
}

}  // namespace

EnumerationResult enumerate_substitutions(int max_ops, int examples) {
  if (max_ops < 1 || max_ops > 3) throw UserError("rewrite: enumerate up to 1..3 operators");
  constexpr int kAssignments = 2;
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<int> small(-3, 3);
  std::vector<Expr> es;
  for (int k = 0; k < 3; ++k) {
    Expr e{E::Leaf, k};
    for (int s = 0; s < kAssignments; ++s) {
      Mat m;
      for (double& v : m) v = small(rng);
      e.values.push_back(m);
    }
    es.push_back(e);
  }
  auto add = [&](E kind, int a, int b) {
    Expr e{kind, 0, a, b};
    e.ops = 1 + es[a].ops + (b >= 0 ? es[b].ops : 0);
    for (int s = 0; s < kAssignments; ++s)
      e.values.push_back(compute(kind, es[a].values[s], b >= 0 ? es[b].values[s] : es[a].values[s]));
    es.push_back(std::move(e));
  };
  // Bottom-up by operator count: expressions of n operators from smaller ones.
  std::vector<std::vector<int>> by_ops(max_ops + 1);
  by_ops[0] = {0, 1, 2};
  for (int n = 1; n <= max_ops; ++n) {
    for (int a : by_ops[n - 1]) {
      add(E::Relu, a, -1);
      by_ops[n].push_back(static_cast<int>(es.size()) - 1);
      add(E::Transpose, a, -1);
      by_ops[n].push_back(static_cast<int>(es.size()) - 1);
    }
    for (int na = 0; na <= n - 1; ++na)
      for (int a : by_ops[na])
        for (int b : by_ops[n - 1 - na]) {
          add(E::MatMul, a, b);
          by_ops[n].push_back(static_cast<int>(es.size()) - 1);
          if (a <= b) {
            for (E k : {E::Add, E::Mul}) {
              add(k, a, b);
              by_ops[n].push_back(static_cast<int>(es.size()) - 1);
            }
          }
        }
  }
  // Fingerprint classes (values are exact: small integers, sums and products).
  std::map<std::vector<double>, std::vector<int>> classes;
  for (int i = 0; i < static_cast<int>(es.size()); ++i) {
    std::vector<double> key;
    for (const Mat& m : es[i].values) key.insert(key.end(), m.begin(), m.end());
    classes[key].push_back(i);
  }
  EnumerationResult r;
  r.graphs = static_cast<int64_t>(es.size());
  for (const auto& [key, members] : classes) {
    if (members.size() < 2) continue;
    ++r.classes;
    // The smallest member is the target of every other member.
    int best = members[0];
    for (int m : members)
      if (es[m].ops < es[best].ops) best = m;
    Graph target = graph_of(es, best);
    for (int m : members) {
      if (m == best) continue;
      ++r.candidates;
      Graph source = graph_of(es, m);
      bool same = true;
      for (uint64_t seed : {101, 202, 303}) {
        EvalOptions o;
        o.seed = seed;
        same = same && max_difference(evaluate(source, o), evaluate(target, o)) < 1e-5;
      }
      if (!same) continue;
      ++r.verified;
      if (static_cast<int>(r.examples.size()) < examples)
        r.examples.push_back({text(es, m), text(es, best)});
    }
  }
  return r;
}

}  // namespace tempo::rewrite
