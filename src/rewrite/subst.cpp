#include "rewrite/subst.h"

#include <algorithm>
#include <memory>
#include <set>

#include "util/error.h"

namespace tempo::rewrite {

Uses::Uses(const Graph& g) : consumers(g.consumers()), constant(g.constant_nodes()) {
  output_reads.assign(g.nodes.size(), 0);
  for (const Ref& r : g.outputs) ++output_reads[r.node];
}

int Uses::reads(const Graph& g, Ref r) const {
  int k = 0;
  for (auto [n, slot] : consumers[r.node]) k += g.nodes[n].inputs[slot] == r;
  for (const Ref& o : g.outputs) k += o == r;
  return k;
}

namespace {

// A node with one output read exactly once, by a node: a pattern may absorb it.
bool single_use(const Graph& g, const Uses& u, int n) {
  return g.nodes[n].outputs.size() == 1 && u.output_reads[n] == 0 && u.consumers[n].size() == 1;
}

Act act_of(Op unary) {
  return unary == Op::Relu ? Act::Relu : unary == Op::Tanh ? Act::Tanh : Act::Sigmoid;
}

bool same_conv_params(const Attrs& a, const Attrs& b) {
  return a.sh == b.sh && a.sw == b.sw && a.pad == b.pad && a.act == b.act;
}

Shape kernel(const Graph& g, int conv) {
  const Shape& w = g.shape(g.nodes[conv].inputs[1]);
  return {w[2], w[3]};
}

int rank(const Graph& g, Ref r) { return static_cast<int>(g.shape(r).size()); }

// Builds a rewritten graph: new nodes are appended, reads of matched values are sent to their
// replacements, then the graph is rebuilt (dead nodes dropped, re-sorted) and validated.
struct Rewriter {
  Graph g;
  size_t first_new;
  explicit Rewriter(const Graph& src) : g(src), first_new(src.nodes.size()) {}
  void replace(Ref from, Ref to) {
    for (size_t n = 0; n < first_new; ++n)
      for (Ref& r : g.nodes[n].inputs)
        if (r == from) r = to;
    for (Ref& r : g.outputs)
      if (r == from) r = to;
  }
  Graph done() {
    Graph r = g.rebuilt();
    r.validate();
    return r;
  }
};

// ---- patterns and the one matcher ----

constexpr int kEveryInput = -1;

// Where a substitution matches, in one of two shapes:
//  - Tree: a root node of one of `roots` whose first `operands` inputs (kEveryInput: all) are
//    produced by distinct nodes of one of `operand_ops`. Location: the operand nodes in input
//    order, then the root.
//  - Siblings: two nodes of op `roots[0]` reading the same value in slot 0, each with a constant
//    (a weight, or computed from weights) in slot 1. Location {a, b}: a < b, or with `ordered`
//    both orders, one location per `one_per(b)` for each a.
struct Pattern {
  enum Kind { Tree, Siblings } kind = Tree;
  std::vector<Op> roots;
  int operands = 0;
  std::vector<Op> operand_ops;
  bool absorbs = false;  // tree: each operand is read only by the root (the rewrite drops it)
  bool ordered = false;
  std::function<Shape(const Graph&, int)> one_per;
  // Siblings: their second operands are computed from weights alone (folded before running).
  bool constant_second = true;
};

Pattern tree(std::vector<Op> roots, int operands = 0, std::vector<Op> operand_ops = {},
             bool absorbs = false) {
  Pattern p;
  p.roots = std::move(roots);
  p.operands = operands;
  p.operand_ops = std::move(operand_ops);
  p.absorbs = absorbs;
  return p;
}

Pattern siblings(Op op, bool ordered = false,
                 std::function<Shape(const Graph&, int)> one_per = nullptr) {
  Pattern p;
  p.kind = Pattern::Siblings;
  p.roots = {op};
  p.ordered = ordered;
  p.one_per = std::move(one_per);
  return p;
}

using Predicate = std::function<bool(const Graph&, const Uses&, const Location&)>;
using Replacement = std::function<void(const Graph&, const Location&, Rewriter&)>;

// A substitution: pattern -> replacement where the predicate holds, with the identity that makes
// them equal and a small graph on which it matches.
struct Row {
  std::string name, identity;
  Pattern pattern;
  Predicate when;
  Replacement replace;
  std::function<Graph()> example;
};

bool has(const std::vector<Op>& ops, Op op) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

// The predicate of the rows that apply wherever their pattern matches.
bool anywhere(const Graph&, const Uses&, const Location&) { return true; }

void match_tree(const Row& r, const Graph& g, const Uses& u, std::vector<Location>& locs) {
  const Pattern& p = r.pattern;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& root = g.nodes[n];
    if (!has(p.roots, root.op)) continue;
    size_t k = p.operands == kEveryInput ? root.inputs.size() : static_cast<size_t>(p.operands);
    if (root.inputs.size() < k) continue;
    Location l;
    bool ok = true;
    for (size_t s = 0; s < k && ok; ++s) {
      int m = root.inputs[s].node;
      ok = has(p.operand_ops, g.nodes[m].op) && std::find(l.begin(), l.end(), m) == l.end() &&
           (!p.absorbs || single_use(g, u, m));
      l.push_back(m);
    }
    l.push_back(static_cast<int>(n));
    if (ok && r.when(g, u, l)) locs.push_back(std::move(l));
  }
}

void match_siblings(const Row& r, const Graph& g, const Uses& u, std::vector<Location>& locs) {
  const Pattern& p = r.pattern;
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    std::vector<int> readers;
    for (auto [n, slot] : u.consumers[v])
      if (slot == 0 && g.nodes[n].op == p.roots[0] &&
          (!p.constant_second || u.constant[g.nodes[n].inputs[1].node]))
        readers.push_back(n);
    auto try_pair = [&](int a, int b) {
      Location l{a, b};
      if (a == b || g.nodes[a].inputs[0] != g.nodes[b].inputs[0] || !r.when(g, u, l))
        return false;
      locs.push_back(std::move(l));
      return true;
    };
    for (size_t i = 0; i < readers.size(); ++i) {
      if (!p.ordered) {
        for (size_t j = i + 1; j < readers.size(); ++j)
          try_pair(std::min(readers[i], readers[j]), std::max(readers[i], readers[j]));
        continue;
      }
      std::set<Shape> seen;
      for (int b : readers) {
        if (p.one_per && seen.count(p.one_per(g, b))) continue;
        if (try_pair(readers[i], b) && p.one_per) seen.insert(p.one_per(g, b));
      }
    }
  }
}

// Every location of `r` in `g`, in node order.
std::vector<Location> match(const Row& r, const Graph& g, const Uses& u) {
  std::vector<Location> locs;
  if (r.pattern.kind == Pattern::Tree)
    match_tree(r, g, u, locs);
  else
    match_siblings(r, g, u, locs);
  return locs;
}

// ---- the rows ----

// The replacement of patterns equal to the input of their first node: the root's readers read it.
void to_first_input(const Graph& g, const Location& l, Rewriter& w) {
  w.replace({l.back(), 0}, g.nodes[l[0]].inputs[0]);
}

Row fuse(Op producer, Op unary) {
  return {
      .name = cat("fuse_", op_name(producer), "_", op_name(unary)),
      .identity = cat(op_name(unary), "(", op_name(producer), "(x, w)) = ", op_name(producer),
                      "[act=", op_name(unary), "](x, w)"),
      .pattern = tree({unary}, 1, {producer}, /*absorbs=*/true),
      .when =
          [](const Graph& g, const Uses&, const Location& l) {
            return g.nodes[l[0]].attrs.act == Act::None;
          },
      .replace =
          [=](const Graph& g, const Location& l, Rewriter& w) {
            Attrs a = g.nodes[l[0]].attrs;
            a.act = act_of(unary);
            w.replace({l[1], 0}, w.g.add1(producer, g.nodes[l[0]].inputs, a));
          },
      .example =
          [=] {
            Graph g;
            Ref y = producer == Op::MatMul
                        ? g.matmul(g.input("x", {3, 5}), g.weight("w", {5, 4}))
                        : g.conv(g.input("x", {1, 3, 6, 6}), g.weight("w", {4, 3, 3, 3}));
            g.outputs = {g.unary(unary, y)};
            return g;
          },
  };
}

// add(f(x, w1), f(x, w2)) = f(x, w1 + w2) for f linear in its weight (matmul, conv).
Row linear_add(Op f) {
  return {
      .name = cat(op_name(f), "_add_weights"),
      .identity = cat("add(", op_name(f), "(x, w1), ", op_name(f), "(x, w2)) = ", op_name(f),
                      "(x, add(w1, w2))"),
      .pattern = tree({Op::Add}, 2, {f}, /*absorbs=*/true),
      .when =
          [=](const Graph& g, const Uses&, const Location& l) {
            const Node &a = g.nodes[l[0]], &b = g.nodes[l[1]];
            return a.attrs.act == Act::None && b.attrs.act == Act::None &&
                   a.inputs[0] == b.inputs[0] && g.shape(a.inputs[1]) == g.shape(b.inputs[1]) &&
                   (f != Op::Conv2d || same_conv_params(a.attrs, b.attrs));
          },
      .replace =
          [=](const Graph& g, const Location& l, Rewriter& w) {
            const Node &a = g.nodes[l[0]], &b = g.nodes[l[1]];
            Ref ws = w.g.binary(Op::Add, a.inputs[1], b.inputs[1]);
            w.replace({l[2], 0}, w.g.add1(f, {a.inputs[0], ws}, a.attrs));
          },
      .example =
          [=] {
            Graph g;
            if (f == Op::MatMul) {
              Ref x = g.input("x", {3, 5});
              g.outputs = {g.binary(Op::Add, g.matmul(x, g.weight("w1", {5, 4})),
                                    g.matmul(x, g.weight("w2", {5, 4})))};
            } else {
              Ref x = g.input("x", {1, 3, 6, 6});
              g.outputs = {g.binary(Op::Add, g.conv(x, g.weight("w1", {4, 3, 3, 3})),
                                    g.conv(x, g.weight("w2", {4, 3, 3, 3})))};
            }
            return g;
          },
  };
}

// Two siblings reading one input become one op over concatenated weights, split afterwards.
std::vector<Row> merge_rows() {
  return {
      {
          .name = "merge_matmul_shared_input",
          .identity = "(matmul(x, w1), matmul(x, w2)) = split(matmul(x, concat(w1, w2, axis=1)), "
                      "axis=1)",
          // Also where the second operands change at every run (a Tempo program's parameters
          // inside its training loop): concatenating them is then a cost the model counts.
          .pattern =
              [] {
                Pattern p = siblings(Op::MatMul);
                p.constant_second = false;
                return p;
              }(),
          .when =
              [](const Graph& g, const Uses&, const Location& l) {
                const Node &a = g.nodes[l[0]], &b = g.nodes[l[1]];
                return a.attrs.act == b.attrs.act && rank(g, a.inputs[1]) == 2 &&
                       rank(g, b.inputs[1]) == 2;
              },
          .replace =
              [](const Graph& g, const Location& l, Rewriter& w) {
                const Node &a = g.nodes[l[0]], &b = g.nodes[l[1]];
                Ref wc = w.g.concat(1, {a.inputs[1], b.inputs[1]});
                Ref y = w.g.matmul(a.inputs[0], wc, a.attrs.act);
                int64_t axis = static_cast<int64_t>(a.outputs[0].size()) - 1;
                auto parts = w.g.split(y, axis, {a.outputs[0].back(), b.outputs[0].back()});
                w.replace({l[0], 0}, parts[0]);
                w.replace({l[1], 0}, parts[1]);
              },
          .example =
              [] {
                Graph g;
                Ref x = g.input("x", {3, 5});
                g.outputs = {g.matmul(x, g.weight("w1", {5, 4}), Act::Relu),
                             g.matmul(x, g.weight("w2", {5, 2}), Act::Relu)};
                return g;
              },
      },
      {
          .name = "merge_conv_shared_input",
          .identity = "(conv(x, w1), conv(x, w2)) = split(conv(x, concat(w1, w2, axis=0)), "
                      "axis=1)",
          .pattern = siblings(Op::Conv2d),
          .when =
              [](const Graph& g, const Uses&, const Location& l) {
                return same_conv_params(g.nodes[l[0]].attrs, g.nodes[l[1]].attrs) &&
                       kernel(g, l[0]) == kernel(g, l[1]);
              },
          .replace =
              [](const Graph& g, const Location& l, Rewriter& w) {
                const Node &a = g.nodes[l[0]], &b = g.nodes[l[1]];
                Ref wc = w.g.concat(0, {a.inputs[1], b.inputs[1]});
                Ref y = w.g.add1(Op::Conv2d, {a.inputs[0], wc}, a.attrs);
                auto parts = w.g.split(y, 1, {a.outputs[0][1], b.outputs[0][1]});
                w.replace({l[0], 0}, parts[0]);
                w.replace({l[1], 0}, parts[1]);
              },
          .example =
              [] {
                Graph g;
                Ref x = g.input("x", {1, 3, 6, 6});
                g.outputs = {g.conv(x, g.weight("w1", {4, 3, 3, 3}), 1, Pad::Same, Act::Relu),
                             g.conv(x, g.weight("w2", {2, 3, 3, 3}), 1, Pad::Same, Act::Relu)};
                return g;
              },
      },
      // TASO's kernel enlarging: a Same convolution with a smaller kernel than a sibling's is
      // the same convolution with its kernel zero-padded to the sibling's size; the two can then
      // merge. One location per target kernel size.
      {
          .name = "enlarge_conv_kernel",
          .identity = "conv[same](x, w) = conv[same](x, enlarge(w, kh, kw)) for odd kernels",
          .pattern = siblings(Op::Conv2d, /*ordered=*/true, /*one_per=*/kernel),
          .when =
              [](const Graph& g, const Uses&, const Location& l) {
                const Attrs &a = g.nodes[l[0]].attrs, &b = g.nodes[l[1]].attrs;
                Shape ka = kernel(g, l[0]), kb = kernel(g, l[1]);
                return a.pad == Pad::Same && b.pad == Pad::Same && ka != kb && a.sh == b.sh &&
                       a.sw == b.sw && kb[0] >= ka[0] && kb[1] >= ka[1] &&
                       (kb[0] - ka[0]) % 2 == 0 && (kb[1] - ka[1]) % 2 == 0;
              },
          .replace =
              [](const Graph& g, const Location& l, Rewriter& w) {
                const Node& a = g.nodes[l[0]];
                Shape kb = kernel(g, l[1]);
                Ref big = w.g.enlarge(a.inputs[1], kb[0], kb[1]);
                w.replace({l[0], 0}, w.g.add1(Op::Conv2d, {a.inputs[0], big}, a.attrs));
              },
          .example =
              [] {
                Graph g;
                Ref x = g.input("x", {1, 3, 7, 7});
                g.outputs = {g.conv(x, g.weight("w1", {4, 3, 1, 1})),
                             g.conv(x, g.weight("w3", {2, 3, 3, 3}))};
                return g;
              },
      },
  };
}

// A split and a concat along the same axis, with as many parts as inputs, and `agree(k)` for
// each part k.
template <typename Agree>
bool parts_agree(const Node& split, const Node& concat, Agree agree) {
  if (split.attrs.axis != concat.attrs.axis || split.outputs.size() != concat.inputs.size())
    return false;
  for (size_t k = 0; k < concat.inputs.size(); ++k)
    if (!agree(k)) return false;
  return true;
}

// Splits and concatenations that cancel or compose.
std::vector<Row> split_rows() {
  return {
      {
          .name = "concat_of_split",
          .identity = "concat(split(x, axis), axis) = x when every part is concatenated in order",
          .pattern = tree({Op::Concat}, 1, {Op::Split}),
          .when =
              [](const Graph& g, const Uses&, const Location& l) {
                return parts_agree(g.nodes[l[0]], g.nodes[l[1]], [&](size_t k) {
                  return g.nodes[l[1]].inputs[k] == Ref{l[0], static_cast<int>(k)};
                });
              },
          .replace = to_first_input,
          .example =
              [] {
                Graph g;
                auto p = g.split(g.input("x", {2, 6}), 1, {2, 4});
                g.outputs = {g.concat(1, {p[0], p[1]})};
                return g;
              },
      },
      {
          .name = "split_of_concat",
          .identity = "split(concat(a, b, axis), axis, sizes of a and b) = (a, b)",
          .pattern = tree({Op::Split}, 1, {Op::Concat}),
          .when =
              [](const Graph& g, const Uses&, const Location& l) {
                return parts_agree(g.nodes[l[1]], g.nodes[l[0]], [&](size_t k) {
                  return g.shape(g.nodes[l[0]].inputs[k]) == g.nodes[l[1]].outputs[k];
                });
              },
          .replace =
              [](const Graph& g, const Location& l, Rewriter& w) {
                for (size_t k = 0; k < g.nodes[l[1]].outputs.size(); ++k)
                  w.replace({l[1], static_cast<int>(k)}, g.nodes[l[0]].inputs[k]);
              },
          .example =
              [] {
                Graph g;
                Ref a = g.input("a", {2, 3}), b = g.input("b", {2, 5});
                auto p = g.split(g.concat(1, {a, b}), 1, {3, 5});
                g.outputs = {g.unary(Op::Relu, p[0]), p[1]};
                return g;
              },
      },
      {
          .name = "split_of_split",
          .identity = "split(split(x, axis)[j], axis) = one split of x with part j divided",
          .pattern = tree({Op::Split}, 1, {Op::Split}),
          .when =
              [](const Graph& g, const Uses& u, const Location& l) {
                const Node &s1 = g.nodes[l[0]], &s2 = g.nodes[l[1]];
                return s1.attrs.axis == s2.attrs.axis && u.reads(g, s2.inputs[0]) == 1;
              },
          .replace =
              [](const Graph& g, const Location& l, Rewriter& w) {
                const Node &s1 = g.nodes[l[0]], &s2 = g.nodes[l[1]];
                int j = s2.inputs[0].out;
                int m = static_cast<int>(s2.attrs.ints.size());
                std::vector<int64_t> sizes = s1.attrs.ints;
                sizes.erase(sizes.begin() + j);
                sizes.insert(sizes.begin() + j, s2.attrs.ints.begin(), s2.attrs.ints.end());
                auto parts = w.g.split(s1.inputs[0], s1.attrs.axis, sizes);
                for (int k = 0; k < static_cast<int>(s1.attrs.ints.size()); ++k) {
                  if (k == j) {
                    for (int q = 0; q < m; ++q) w.replace({l[1], q}, parts[j + q]);
                  } else {
                    w.replace({l[0], k}, parts[k < j ? k : k + m - 1]);
                  }
                }
              },
          .example =
              [] {
                Graph g;
                auto p = g.split(g.input("x", {2, 9}), 1, {2, 7});
                auto q = g.split(p[1], 1, {3, 4});
                g.outputs = {p[0], q[0], q[1]};
                return g;
              },
      },
  };
}

// Transposes and reshapes that compose, and those that do nothing.
std::vector<Row> layout_rows() {
  return {
      {
          .name = "transpose_transpose",
          .identity =
              "transpose(transpose(x, p), q) = transpose(x, p o q) (x itself for the identity)",
          .pattern = tree({Op::Transpose}, 1, {Op::Transpose}),
          .when = anywhere,
          .replace =
              [](const Graph& g, const Location& l, Rewriter& w) {
                const auto &p = g.nodes[l[0]].attrs.ints, &q = g.nodes[l[1]].attrs.ints;
                std::vector<int64_t> composed(q.size());
                bool identity = true;
                for (size_t d = 0; d < q.size(); ++d) {
                  composed[d] = p[q[d]];
                  identity = identity && composed[d] == static_cast<int64_t>(d);
                }
                Ref x = g.nodes[l[0]].inputs[0];
                w.replace({l[1], 0}, identity ? x : w.g.transpose(x, composed));
              },
          .example =
              [] {
                Graph g;
                Ref x = g.input("x", {2, 3, 4});
                Ref t = g.transpose(x, {1, 0, 2});
                g.outputs = {g.transpose(t, {1, 0, 2}), g.transpose(t, {2, 0, 1})};
                return g;
              },
      },
      {
          .name = "reshape_reshape",
          .identity = "reshape(reshape(x, s1), s2) = reshape(x, s2) (x itself if x has shape s2)",
          .pattern = tree({Op::Reshape}, 1, {Op::Reshape}),
          .when = anywhere,
          .replace =
              [](const Graph& g, const Location& l, Rewriter& w) {
                Ref x = g.nodes[l[0]].inputs[0];
                const Shape& s = g.nodes[l[1]].outputs[0];
                w.replace({l[1], 0}, g.shape(x) == s ? x : w.g.reshape(x, s));
              },
          .example =
              [] {
                Graph g;
                Ref x = g.input("x", {2, 6});
                Ref a = g.reshape(x, {3, 4});
                g.outputs = {g.reshape(a, {12}), g.reshape(a, {2, 6})};
                return g;
              },
      },
      {
          .name = "remove_identity",
          .identity = "transpose(x, identity) = reshape(x, shape of x) = x",
          .pattern = tree({Op::Reshape, Op::Transpose}),
          .when =
              [](const Graph& g, const Uses&, const Location& l) {
                const Node& x = g.nodes[l[0]];
                if (x.op == Op::Reshape) return g.shape(x.inputs[0]) == x.outputs[0];
                for (size_t d = 0; d < x.attrs.ints.size(); ++d)
                  if (x.attrs.ints[d] != static_cast<int64_t>(d)) return false;
                return true;
              },
          .replace = to_first_input,
          .example =
              [] {
                Graph g;
                Ref x = g.input("x", {2, 3});
                g.outputs = {g.unary(Op::Relu, g.transpose(g.reshape(x, {2, 3}), {0, 1}))};
                return g;
              },
      },
  };
}

// Sums and products of matmuls, elementwise ops and multiplications rearranged.
std::vector<Row> algebra_rows() {
  return {
      linear_add(Op::MatMul),
      linear_add(Op::Conv2d),
      {
          .name = "matmul_concat_inputs",
          .identity = "add(matmul(x, w1), matmul(y, w2)) = matmul(concat(x, y, axis=1), "
                      "concat(w1, w2, axis=0))",
          .pattern = tree({Op::Add}, 2, {Op::MatMul}, /*absorbs=*/true),
          .when =
              [](const Graph& g, const Uses&, const Location& l) {
                const Node &a = g.nodes[l[0]], &b = g.nodes[l[1]];
                return a.attrs.act == Act::None && b.attrs.act == Act::None &&
                       a.inputs[0] != b.inputs[0] && rank(g, a.inputs[0]) == 2 &&
                       rank(g, b.inputs[0]) == 2 && rank(g, a.inputs[1]) == 2 &&
                       rank(g, b.inputs[1]) == 2;
              },
          .replace =
              [](const Graph& g, const Location& l, Rewriter& w) {
                const Node &a = g.nodes[l[0]], &b = g.nodes[l[1]];
                Ref x = w.g.concat(1, {a.inputs[0], b.inputs[0]});
                Ref ws = w.g.concat(0, {a.inputs[1], b.inputs[1]});
                w.replace({l[2], 0}, w.g.matmul(x, ws));
              },
          .example =
              [] {
                Graph g;
                g.outputs = {
                    g.binary(Op::Add, g.matmul(g.input("x", {3, 5}), g.weight("w1", {5, 4})),
                             g.matmul(g.input("y", {3, 2}), g.weight("w2", {2, 4})))};
                return g;
              },
      },
      {
          .name = "unary_concat",
          .identity = "concat(f(a), f(b), ...) = f(concat(a, b, ...)) for elementwise f",
          .pattern = tree({Op::Concat}, kEveryInput, {Op::Relu, Op::Tanh, Op::Sigmoid},
                          /*absorbs=*/true),
          .when =
              [](const Graph& g, const Uses&, const Location& l) {
                bool same = l.size() >= 3;  // two operands and the concat
                for (size_t k = 1; same && k + 1 < l.size(); ++k)
                  same = g.nodes[l[k]].op == g.nodes[l[0]].op;
                return same;
              },
          .replace =
              [](const Graph& g, const Location& l, Rewriter& w) {
                std::vector<Ref> ins;
                for (size_t k = 0; k + 1 < l.size(); ++k) ins.push_back(g.nodes[l[k]].inputs[0]);
                Ref c = w.g.concat(g.nodes[l.back()].attrs.axis, ins);
                w.replace({l.back(), 0}, w.g.unary(g.nodes[l[0]].op, c));
              },
          .example =
              [] {
                Graph g;
                g.outputs = {g.concat(1, {g.unary(Op::Relu, g.input("a", {2, 3})),
                                          g.unary(Op::Relu, g.input("b", {2, 4}))})};
                return g;
              },
      },
      {
          .name = "matmul_weights_assoc",
          .identity = "matmul(matmul(x, w1), w2) = matmul(x, matmul(w1, w2))",
          .pattern = tree({Op::MatMul}, 1, {Op::MatMul}, /*absorbs=*/true),
          .when =
              [](const Graph& g, const Uses& u, const Location& l) {
                const Node &a = g.nodes[l[0]], &b = g.nodes[l[1]];
                return u.constant[b.inputs[1].node] && a.attrs.act == Act::None &&
                       u.constant[a.inputs[1].node] && !u.constant[l[0]] &&
                       rank(g, a.inputs[1]) == 2 && rank(g, b.inputs[1]) == 2;
              },
          .replace =
              [](const Graph& g, const Location& l, Rewriter& w) {
                const Node &a = g.nodes[l[0]], &b = g.nodes[l[1]];
                Ref ww = w.g.matmul(a.inputs[1], b.inputs[1]);
                w.replace({l[1], 0}, w.g.matmul(a.inputs[0], ww, b.attrs.act));
              },
          .example =
              [] {
                Graph g;
                Ref h = g.matmul(g.input("x", {3, 5}), g.weight("w1", {5, 4}));
                g.outputs = {g.matmul(h, g.weight("w2", {4, 2}), Act::Tanh)};
                return g;
              },
      },
      {
          .name = "mul_distribute",
          .identity = "add(mul(a, c), mul(b, c)) = mul(add(a, b), c)",
          .pattern = tree({Op::Add}, 2, {Op::Mul}, /*absorbs=*/true),
          .when =
              [](const Graph& g, const Uses&, const Location& l) {
                bool shared = false;
                for (const Ref& x : g.nodes[l[0]].inputs)
                  for (const Ref& y : g.nodes[l[1]].inputs) shared = shared || x == y;
                return shared;
              },
          .replace =
              [](const Graph& g, const Location& l, Rewriter& w) {
                const auto &ia = g.nodes[l[0]].inputs, &ib = g.nodes[l[1]].inputs;
                Ref c = ia[0];  // the shared factor
                for (const Ref& x : ia)
                  for (const Ref& y : ib)
                    if (x == y) c = x;
                Ref a = ia[0] == c ? ia[1] : ia[0], b = ib[0] == c ? ib[1] : ib[0];
                w.replace({l[2], 0}, w.g.binary(Op::Mul, w.g.binary(Op::Add, a, b), c));
              },
          .example =
              [] {
                Graph g;
                Ref a = g.input("a", {2, 3}), b = g.input("b", {2, 3}), c = g.input("c", {2, 3});
                g.outputs = {g.binary(Op::Add, g.binary(Op::Mul, c, a), g.binary(Op::Mul, b, c))};
                return g;
              },
      },
  };
}

std::vector<Rule> make_rules() {
  std::vector<Row> rows;
  for (Op p : {Op::Conv2d, Op::MatMul})
    for (Op f : {Op::Relu, Op::Tanh, Op::Sigmoid}) rows.push_back(fuse(p, f));
  for (auto group : {merge_rows, split_rows, layout_rows, algebra_rows})
    for (Row& r : group()) rows.push_back(std::move(r));
  std::vector<Rule> rs;
  for (Row& row : rows) {
    auto r = std::make_shared<const Row>(std::move(row));
    rs.push_back({
        .name = r->name,
        .identity = r->identity,
        .match = [r](const Graph& g, const Uses& u) { return match(*r, g, u); },
        .apply =
            [r](const Graph& g, const Location& l) {
              Rewriter w(g);
              r->replace(g, l, w);
              return w.done();
            },
        .example = r->example,
    });
  }
  return rs;
}

}  // namespace

const std::vector<Rule>& rules() {
  static const std::vector<Rule> rs = make_rules();
  return rs;
}

int rule_index(const std::string& name) {
  std::string known;
  for (size_t k = 0; k < rules().size(); ++k) {
    if (rules()[k].name == name) return static_cast<int>(k);
    known += " " + rules()[k].name;
  }
  throw UserError(cat("rewrite: unknown substitution '", name, "' (known:", known, ")"));
}

std::vector<Match> all_matches(const Graph& g) {
  Uses u(g);
  std::vector<Match> ms;
  for (size_t k = 0; k < rules().size(); ++k)
    for (auto& l : rules()[k].match(g, u)) ms.push_back({static_cast<int>(k), std::move(l)});
  return ms;
}

Graph apply(const Graph& g, const Match& m) {
  if (m.rule < 0 || m.rule >= static_cast<int>(rules().size()))
    throw UserError(cat("rewrite: no substitution ", m.rule));
  return rules()[m.rule].apply(g, m.location);
}

}  // namespace tempo::rewrite
