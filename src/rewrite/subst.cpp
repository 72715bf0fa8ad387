#include "rewrite/subst.h"

#include <map>
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

bool is_unary(Op op) { return op == Op::Relu || op == Op::Tanh || op == Op::Sigmoid; }

Act act_of(Op unary) {
  return unary == Op::Relu ? Act::Relu : unary == Op::Tanh ? Act::Tanh : Act::Sigmoid;
}

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

// Pairs (a, b), a < b, of nodes of kind `op` reading the same value in slot 0 whose slot-1
// operand is a constant (a weight, or computed from weights), and for which `ok(a, b)` holds.
template <typename Ok>
std::vector<Location> sibling_pairs(const Graph& g, const Uses& u, Op op, Ok ok) {
  std::vector<Location> locs;
  for (size_t p = 0; p < g.nodes.size(); ++p) {
    std::vector<int> readers;
    for (auto [n, slot] : u.consumers[p])
      if (slot == 0 && g.nodes[n].op == op && u.constant[g.nodes[n].inputs[1].node])
        readers.push_back(n);
    for (size_t i = 0; i < readers.size(); ++i)
      for (size_t j = i + 1; j < readers.size(); ++j) {
        int a = std::min(readers[i], readers[j]), b = std::max(readers[i], readers[j]);
        if (a != b && g.nodes[a].inputs[0] == g.nodes[b].inputs[0] && ok(a, b))
          locs.push_back({a, b});
      }
  }
  return locs;
}

bool same_conv_params(const Attrs& a, const Attrs& b) {
  return a.sh == b.sh && a.sw == b.sw && a.pad == b.pad && a.act == b.act;
}

Shape kernel(const Graph& g, int conv) {
  const Shape& w = g.shape(g.nodes[conv].inputs[1]);
  return {w[2], w[3]};
}

// ---- the rules ----

Rule fuse(Op producer, Op unary) {
  Rule r;
  r.name = cat("fuse_", op_name(producer), "_", op_name(unary));
  r.identity = cat(op_name(unary), "(", op_name(producer), "(x, w)) = ", op_name(producer),
                   "[act=", op_name(unary), "](x, w)");
  r.match = [=](const Graph& g, const Uses& u) {
    std::vector<Location> locs;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      if (g.nodes[n].op != unary) continue;
      int p = g.nodes[n].inputs[0].node;
      if (g.nodes[p].op == producer && g.nodes[p].attrs.act == Act::None && single_use(g, u, p))
        locs.push_back({p, static_cast<int>(n)});
    }
    return locs;
  };
  r.apply = [=](const Graph& g, const Location& l) {
    Rewriter w(g);
    Attrs a = g.nodes[l[0]].attrs;
    a.act = act_of(unary);
    w.replace({l[1], 0}, w.g.add1(producer, g.nodes[l[0]].inputs, a));
    return w.done();
  };
  r.example = [=] {
    Graph g;
    Ref y = producer == Op::MatMul
                ? g.matmul(g.input("x", {3, 5}), g.weight("w", {5, 4}))
                : g.conv(g.input("x", {1, 3, 6, 6}), g.weight("w", {4, 3, 3, 3}));
    g.outputs = {g.unary(unary, y)};
    return g;
  };
  return r;
}

Rule merge_matmuls() {
  Rule r;
  r.name = "merge_matmul_shared_input";
  r.identity = "(matmul(x, w1), matmul(x, w2)) = split(matmul(x, concat(w1, w2, axis=1)), axis=1)";
  r.match = [](const Graph& g, const Uses& u) {
    return sibling_pairs(g, u, Op::MatMul, [&](int a, int b) {
      return g.nodes[a].attrs.act == g.nodes[b].attrs.act &&
             g.shape(g.nodes[a].inputs[1]).size() == 2 && g.shape(g.nodes[b].inputs[1]).size() == 2;
    });
  };
  r.apply = [](const Graph& g, const Location& l) {
    Rewriter w(g);
    const Node &a = g.nodes[l[0]], &b = g.nodes[l[1]];
    Ref wc = w.g.concat(1, {a.inputs[1], b.inputs[1]});
    Ref y = w.g.matmul(a.inputs[0], wc, a.attrs.act);
    int64_t axis = static_cast<int64_t>(a.outputs[0].size()) - 1;
    auto parts = w.g.split(y, axis, {a.outputs[0].back(), b.outputs[0].back()});
    w.replace({l[0], 0}, parts[0]);
    w.replace({l[1], 0}, parts[1]);
    return w.done();
  };
  r.example = [] {
    Graph g;
    Ref x = g.input("x", {3, 5});
    g.outputs = {g.matmul(x, g.weight("w1", {5, 4}), Act::Relu),
                 g.matmul(x, g.weight("w2", {5, 2}), Act::Relu)};
    return g;
  };
  return r;
}

Rule merge_convs() {
  Rule r;
  r.name = "merge_conv_shared_input";
  r.identity = "(conv(x, w1), conv(x, w2)) = split(conv(x, concat(w1, w2, axis=0)), axis=1)";
  r.match = [](const Graph& g, const Uses& u) {
    return sibling_pairs(g, u, Op::Conv2d, [&](int a, int b) {
      return same_conv_params(g.nodes[a].attrs, g.nodes[b].attrs) && kernel(g, a) == kernel(g, b);
    });
  };
  r.apply = [](const Graph& g, const Location& l) {
    Rewriter w(g);
    const Node &a = g.nodes[l[0]], &b = g.nodes[l[1]];
    Ref wc = w.g.concat(0, {a.inputs[1], b.inputs[1]});
    Ref y = w.g.add1(Op::Conv2d, {a.inputs[0], wc}, a.attrs);
    auto parts = w.g.split(y, 1, {a.outputs[0][1], b.outputs[0][1]});
    w.replace({l[0], 0}, parts[0]);
    w.replace({l[1], 0}, parts[1]);
    return w.done();
  };
  r.example = [] {
    Graph g;
    Ref x = g.input("x", {1, 3, 6, 6});
    g.outputs = {g.conv(x, g.weight("w1", {4, 3, 3, 3}), 1, Pad::Same, Act::Relu),
                 g.conv(x, g.weight("w2", {2, 3, 3, 3}), 1, Pad::Same, Act::Relu)};
    return g;
  };
  return r;
}

// TASO's kernel enlarging: a Same convolution with a smaller kernel than a sibling's is the
// same convolution with its kernel zero-padded to the sibling's size; the two can then merge.
Rule enlarge_kernel() {
  Rule r;
  r.name = "enlarge_conv_kernel";
  r.identity = "conv[same](x, w) = conv[same](x, enlarge(w, kh, kw)) for odd kernels";
  r.match = [](const Graph& g, const Uses& u) {
    std::vector<Location> locs;
    for (size_t p = 0; p < g.nodes.size(); ++p) {
      std::vector<int> convs;
      for (auto [n, slot] : u.consumers[p])
        if (slot == 0 && g.nodes[n].op == Op::Conv2d && g.nodes[n].attrs.pad == Pad::Same &&
            u.constant[g.nodes[n].inputs[1].node])
          convs.push_back(n);
      for (int a : convs) {
        std::set<Shape> sizes;  // one location per target kernel size
        for (int b : convs) {
          Shape ka = kernel(g, a), kb = kernel(g, b);
          if (a == b || g.nodes[a].inputs[0] != g.nodes[b].inputs[0] || ka == kb) continue;
          if (g.nodes[a].attrs.sh != g.nodes[b].attrs.sh ||
              g.nodes[a].attrs.sw != g.nodes[b].attrs.sw)
            continue;
          if (kb[0] < ka[0] || kb[1] < ka[1] || (kb[0] - ka[0]) % 2 || (kb[1] - ka[1]) % 2)
            continue;
          if (sizes.insert(kb).second) locs.push_back({a, b});
        }
      }
    }
    return locs;
  };
  r.apply = [](const Graph& g, const Location& l) {
    Rewriter w(g);
    const Node& a = g.nodes[l[0]];
    Shape kb = kernel(g, l[1]);
    Ref big = w.g.enlarge(a.inputs[1], kb[0], kb[1]);
    w.replace({l[0], 0}, w.g.add1(Op::Conv2d, {a.inputs[0], big}, a.attrs));
    return w.done();
  };
  r.example = [] {
    Graph g;
    Ref x = g.input("x", {1, 3, 7, 7});
    g.outputs = {g.conv(x, g.weight("w1", {4, 3, 1, 1})), g.conv(x, g.weight("w3", {2, 3, 3, 3}))};
    return g;
  };
  return r;
}

Rule concat_of_split() {
  Rule r;
  r.name = "concat_of_split";
  r.identity = "concat(split(x, axis), axis) = x when every part is concatenated in order";
  r.match = [](const Graph& g, const Uses&) {
    std::vector<Location> locs;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& c = g.nodes[n];
      if (c.op != Op::Concat) continue;
      int s = c.inputs[0].node;
      const Node& sp = g.nodes[s];
      if (sp.op != Op::Split || sp.attrs.axis != c.attrs.axis ||
          sp.outputs.size() != c.inputs.size())
        continue;
      bool all = true;
      for (size_t k = 0; k < c.inputs.size(); ++k)
        all = all && c.inputs[k] == Ref{s, static_cast<int>(k)};
      if (all) locs.push_back({s, static_cast<int>(n)});
    }
    return locs;
  };
  r.apply = [](const Graph& g, const Location& l) {
    Rewriter w(g);
    w.replace({l[1], 0}, g.nodes[l[0]].inputs[0]);
    return w.done();
  };
  r.example = [] {
    Graph g;
    auto p = g.split(g.input("x", {2, 6}), 1, {2, 4});
    g.outputs = {g.concat(1, {p[0], p[1]})};
    return g;
  };
  return r;
}

Rule split_of_concat() {
  Rule r;
  r.name = "split_of_concat";
  r.identity = "split(concat(a, b, axis), axis, sizes of a and b) = (a, b)";
  r.match = [](const Graph& g, const Uses&) {
    std::vector<Location> locs;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& s = g.nodes[n];
      if (s.op != Op::Split) continue;
      int c = s.inputs[0].node;
      const Node& cc = g.nodes[c];
      if (cc.op != Op::Concat || cc.attrs.axis != s.attrs.axis ||
          cc.inputs.size() != s.outputs.size())
        continue;
      bool same = true;
      for (size_t k = 0; k < cc.inputs.size(); ++k)
        same = same && g.shape(cc.inputs[k]) == s.outputs[k];
      if (same) locs.push_back({c, static_cast<int>(n)});
    }
    return locs;
  };
  r.apply = [](const Graph& g, const Location& l) {
    Rewriter w(g);
    for (size_t k = 0; k < g.nodes[l[1]].outputs.size(); ++k)
      w.replace({l[1], static_cast<int>(k)}, g.nodes[l[0]].inputs[k]);
    return w.done();
  };
  r.example = [] {
    Graph g;
    Ref a = g.input("a", {2, 3}), b = g.input("b", {2, 5});
    auto p = g.split(g.concat(1, {a, b}), 1, {3, 5});
    g.outputs = {g.unary(Op::Relu, p[0]), p[1]};
    return g;
  };
  return r;
}

Rule split_of_split() {
  Rule r;
  r.name = "split_of_split";
  r.identity = "split(split(x, axis)[j], axis) = one split of x with part j divided";
  r.match = [](const Graph& g, const Uses& u) {
    std::vector<Location> locs;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& s2 = g.nodes[n];
      if (s2.op != Op::Split) continue;
      Ref in = s2.inputs[0];
      const Node& s1 = g.nodes[in.node];
      if (s1.op == Op::Split && s1.attrs.axis == s2.attrs.axis && u.reads(g, in) == 1)
        locs.push_back({in.node, static_cast<int>(n)});
    }
    return locs;
  };
  r.apply = [](const Graph& g, const Location& l) {
    Rewriter w(g);
    const Node &s1 = g.nodes[l[0]], &s2 = g.nodes[l[1]];
    int j = s2.inputs[0].out;
    std::vector<int64_t> sizes;
    for (int k = 0; k < static_cast<int>(s1.attrs.ints.size()); ++k) {
      if (k == j)
        sizes.insert(sizes.end(), s2.attrs.ints.begin(), s2.attrs.ints.end());
      else
        sizes.push_back(s1.attrs.ints[k]);
    }
    auto parts = w.g.split(s1.inputs[0], s1.attrs.axis, sizes);
    int m = static_cast<int>(s2.attrs.ints.size());
    for (int k = 0; k < static_cast<int>(s1.attrs.ints.size()); ++k) {
      int first = k < j ? k : k == j ? j : k + m - 1;
      if (k == j) {
        for (int q = 0; q < m; ++q) w.replace({l[1], q}, parts[j + q]);
      } else {
        w.replace({l[0], k}, parts[first]);
      }
    }
    return w.done();
  };
  r.example = [] {
    Graph g;
    auto p = g.split(g.input("x", {2, 9}), 1, {2, 7});
    auto q = g.split(p[1], 1, {3, 4});
    g.outputs = {p[0], q[0], q[1]};
    return g;
  };
  return r;
}

Rule transpose_transpose() {
  Rule r;
  r.name = "transpose_transpose";
  r.identity = "transpose(transpose(x, p), q) = transpose(x, p o q) (x itself for the identity)";
  r.match = [](const Graph& g, const Uses&) {
    std::vector<Location> locs;
    for (size_t n = 0; n < g.nodes.size(); ++n)
      if (g.nodes[n].op == Op::Transpose && g.nodes[g.nodes[n].inputs[0].node].op == Op::Transpose)
        locs.push_back({g.nodes[n].inputs[0].node, static_cast<int>(n)});
    return locs;
  };
  r.apply = [](const Graph& g, const Location& l) {
    Rewriter w(g);
    const auto &p = g.nodes[l[0]].attrs.ints, &q = g.nodes[l[1]].attrs.ints;
    std::vector<int64_t> composed(q.size());
    bool identity = true;
    for (size_t d = 0; d < q.size(); ++d) {
      composed[d] = p[q[d]];
      identity = identity && composed[d] == static_cast<int64_t>(d);
    }
    Ref x = g.nodes[l[0]].inputs[0];
    w.replace({l[1], 0}, identity ? x : w.g.transpose(x, composed));
    return w.done();
  };
  r.example = [] {
    Graph g;
    Ref x = g.input("x", {2, 3, 4});
    Ref t = g.transpose(x, {1, 0, 2});
    g.outputs = {g.transpose(t, {1, 0, 2}), g.transpose(t, {2, 0, 1})};
    return g;
  };
  return r;
}

Rule reshape_reshape() {
  Rule r;
  r.name = "reshape_reshape";
  r.identity = "reshape(reshape(x, s1), s2) = reshape(x, s2) (x itself if x has shape s2)";
  r.match = [](const Graph& g, const Uses&) {
    std::vector<Location> locs;
    for (size_t n = 0; n < g.nodes.size(); ++n)
      if (g.nodes[n].op == Op::Reshape && g.nodes[g.nodes[n].inputs[0].node].op == Op::Reshape)
        locs.push_back({g.nodes[n].inputs[0].node, static_cast<int>(n)});
    return locs;
  };
  r.apply = [](const Graph& g, const Location& l) {
    Rewriter w(g);
    Ref x = g.nodes[l[0]].inputs[0];
    const Shape& s = g.nodes[l[1]].outputs[0];
    w.replace({l[1], 0}, g.shape(x) == s ? x : w.g.reshape(x, s));
    return w.done();
  };
  r.example = [] {
    Graph g;
    Ref x = g.input("x", {2, 6});
    Ref a = g.reshape(x, {3, 4});
    g.outputs = {g.reshape(a, {12}), g.reshape(a, {2, 6})};
    return g;
  };
  return r;
}

Rule remove_identity() {
  Rule r;
  r.name = "remove_identity";
  r.identity = "transpose(x, identity) = reshape(x, shape of x) = x";
  r.match = [](const Graph& g, const Uses&) {
    std::vector<Location> locs;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& x = g.nodes[n];
      bool id = false;
      if (x.op == Op::Reshape) id = g.shape(x.inputs[0]) == x.outputs[0];
      if (x.op == Op::Transpose) {
        id = true;
        for (size_t d = 0; d < x.attrs.ints.size(); ++d)
          id = id && x.attrs.ints[d] == static_cast<int64_t>(d);
      }
      if (id) locs.push_back({static_cast<int>(n)});
    }
    return locs;
  };
  r.apply = [](const Graph& g, const Location& l) {
    Rewriter w(g);
    w.replace({l[0], 0}, g.nodes[l[0]].inputs[0]);
    return w.done();
  };
  r.example = [] {
    Graph g;
    Ref x = g.input("x", {2, 3});
    g.outputs = {g.unary(Op::Relu, g.transpose(g.reshape(x, {2, 3}), {0, 1}))};
    return g;
  };
  return r;
}

// add(f(x, w1), f(x, w2)) = f(x, w1 + w2) for f linear in its weight (matmul, conv).
Rule linear_add(Op f) {
  Rule r;
  r.name = cat(op_name(f), "_add_weights");
  r.identity = cat("add(", op_name(f), "(x, w1), ", op_name(f), "(x, w2)) = ", op_name(f),
                   "(x, add(w1, w2))");
  r.match = [=](const Graph& g, const Uses& u) {
    std::vector<Location> locs;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& s = g.nodes[n];
      if (s.op != Op::Add) continue;
      int a = s.inputs[0].node, b = s.inputs[1].node;
      if (a == b || g.nodes[a].op != f || g.nodes[b].op != f) continue;
      const Node &na = g.nodes[a], &nb = g.nodes[b];
      if (na.attrs.act != Act::None || nb.attrs.act != Act::None || na.inputs[0] != nb.inputs[0])
        continue;
      if (!single_use(g, u, a) || !single_use(g, u, b)) continue;
      if (g.shape(na.inputs[1]) != g.shape(nb.inputs[1])) continue;
      if (f == Op::Conv2d && !same_conv_params(na.attrs, nb.attrs)) continue;
      locs.push_back({a, b, static_cast<int>(n)});
    }
    return locs;
  };
  r.apply = [=](const Graph& g, const Location& l) {
    Rewriter w(g);
    const Node &a = g.nodes[l[0]], &b = g.nodes[l[1]];
    Ref ws = w.g.binary(Op::Add, a.inputs[1], b.inputs[1]);
    w.replace({l[2], 0}, w.g.add1(f, {a.inputs[0], ws}, a.attrs));
    return w.done();
  };
  r.example = [=] {
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
  };
  return r;
}

Rule matmul_concat_inputs() {
  Rule r;
  r.name = "matmul_concat_inputs";
  r.identity = "add(matmul(x, w1), matmul(y, w2)) = matmul(concat(x, y, axis=1), concat(w1, w2, axis=0))";
  r.match = [](const Graph& g, const Uses& u) {
    std::vector<Location> locs;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& s = g.nodes[n];
      if (s.op != Op::Add) continue;
      int a = s.inputs[0].node, b = s.inputs[1].node;
      if (a == b || g.nodes[a].op != Op::MatMul || g.nodes[b].op != Op::MatMul) continue;
      const Node &na = g.nodes[a], &nb = g.nodes[b];
      if (na.attrs.act != Act::None || nb.attrs.act != Act::None || na.inputs[0] == nb.inputs[0])
        continue;
      if (g.shape(na.inputs[0]).size() != 2 || g.shape(nb.inputs[0]).size() != 2 ||
          g.shape(na.inputs[1]).size() != 2 || g.shape(nb.inputs[1]).size() != 2)
        continue;
      if (single_use(g, u, a) && single_use(g, u, b)) locs.push_back({a, b, static_cast<int>(n)});
    }
    return locs;
  };
  r.apply = [](const Graph& g, const Location& l) {
    Rewriter w(g);
    const Node &a = g.nodes[l[0]], &b = g.nodes[l[1]];
    Ref x = w.g.concat(1, {a.inputs[0], b.inputs[0]});
    Ref ws = w.g.concat(0, {a.inputs[1], b.inputs[1]});
    w.replace({l[2], 0}, w.g.matmul(x, ws));
    return w.done();
  };
  r.example = [] {
    Graph g;
    g.outputs = {g.binary(Op::Add, g.matmul(g.input("x", {3, 5}), g.weight("w1", {5, 4})),
                          g.matmul(g.input("y", {3, 2}), g.weight("w2", {2, 4})))};
    return g;
  };
  return r;
}

Rule unary_concat() {
  Rule r;
  r.name = "unary_concat";
  r.identity = "concat(f(a), f(b), ...) = f(concat(a, b, ...)) for elementwise f";
  r.match = [](const Graph& g, const Uses& u) {
    std::vector<Location> locs;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& c = g.nodes[n];
      if (c.op != Op::Concat || c.inputs.size() < 2) continue;
      Op f = g.nodes[c.inputs[0].node].op;
      Location l{static_cast<int>(n)};
      bool ok = is_unary(f);
      for (const Ref& in : c.inputs) {
        ok = ok && g.nodes[in.node].op == f && single_use(g, u, in.node);
        l.push_back(in.node);
      }
      if (ok) locs.push_back(l);
    }
    return locs;
  };
  r.apply = [](const Graph& g, const Location& l) {
    Rewriter w(g);
    std::vector<Ref> ins;
    for (size_t k = 1; k < l.size(); ++k) ins.push_back(g.nodes[l[k]].inputs[0]);
    Ref c = w.g.concat(g.nodes[l[0]].attrs.axis, ins);
    w.replace({l[0], 0}, w.g.unary(g.nodes[l[1]].op, c));
    return w.done();
  };
  r.example = [] {
    Graph g;
    g.outputs = {g.concat(1, {g.unary(Op::Relu, g.input("a", {2, 3})),
                              g.unary(Op::Relu, g.input("b", {2, 4}))})};
    return g;
  };
  return r;
}

Rule matmul_assoc() {
  Rule r;
  r.name = "matmul_weights_assoc";
  r.identity = "matmul(matmul(x, w1), w2) = matmul(x, matmul(w1, w2))";
  r.match = [](const Graph& g, const Uses& u) {
    std::vector<Location> locs;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& m2 = g.nodes[n];
      if (m2.op != Op::MatMul || !u.constant[m2.inputs[1].node]) continue;
      int m1 = m2.inputs[0].node;
      const Node& a = g.nodes[m1];
      if (a.op != Op::MatMul || a.attrs.act != Act::None || !u.constant[a.inputs[1].node] ||
          u.constant[m1] || !single_use(g, u, m1))
        continue;
      if (g.shape(a.inputs[1]).size() == 2 && g.shape(m2.inputs[1]).size() == 2)
        locs.push_back({m1, static_cast<int>(n)});
    }
    return locs;
  };
  r.apply = [](const Graph& g, const Location& l) {
    Rewriter w(g);
    const Node &a = g.nodes[l[0]], &b = g.nodes[l[1]];
    Ref ww = w.g.matmul(a.inputs[1], b.inputs[1]);
    w.replace({l[1], 0}, w.g.matmul(a.inputs[0], ww, b.attrs.act));
    return w.done();
  };
  r.example = [] {
    Graph g;
    Ref h = g.matmul(g.input("x", {3, 5}), g.weight("w1", {5, 4}));
    g.outputs = {g.matmul(h, g.weight("w2", {4, 2}), Act::Tanh)};
    return g;
  };
  return r;
}

Rule mul_distribute() {
  Rule r;
  r.name = "mul_distribute";
  r.identity = "add(mul(a, c), mul(b, c)) = mul(add(a, b), c)";
  r.match = [](const Graph& g, const Uses& u) {
    std::vector<Location> locs;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& s = g.nodes[n];
      if (s.op != Op::Add) continue;
      int a = s.inputs[0].node, b = s.inputs[1].node;
      if (a == b || g.nodes[a].op != Op::Mul || g.nodes[b].op != Op::Mul) continue;
      if (!single_use(g, u, a) || !single_use(g, u, b)) continue;
      const auto &ia = g.nodes[a].inputs, &ib = g.nodes[b].inputs;
      bool shared = false;
      for (const Ref& x : ia)
        for (const Ref& y : ib) shared = shared || x == y;
      if (shared) locs.push_back({a, b, static_cast<int>(n)});
    }
    return locs;
  };
  r.apply = [](const Graph& g, const Location& l) {
    Rewriter w(g);
    const auto &ia = g.nodes[l[0]].inputs, &ib = g.nodes[l[1]].inputs;
    Ref c = ia[0];  // the shared factor
    for (const Ref& x : ia)
      for (const Ref& y : ib)
        if (x == y) c = x;
    Ref a = ia[0] == c ? ia[1] : ia[0], b = ib[0] == c ? ib[1] : ib[0];
    w.replace({l[2], 0}, w.g.binary(Op::Mul, w.g.binary(Op::Add, a, b), c));
    return w.done();
  };
  r.example = [] {
    Graph g;
    Ref a = g.input("a", {2, 3}), b = g.input("b", {2, 3}), c = g.input("c", {2, 3});
    g.outputs = {g.binary(Op::Add, g.binary(Op::Mul, c, a), g.binary(Op::Mul, b, c))};
    return g;
  };
  return r;
}

std::vector<Rule> make_rules() {
  std::vector<Rule> rs;
  for (Op p : {Op::Conv2d, Op::MatMul})
    for (Op f : {Op::Relu, Op::Tanh, Op::Sigmoid}) rs.push_back(fuse(p, f));
  rs.push_back(merge_matmuls());
  rs.push_back(merge_convs());
  rs.push_back(enlarge_kernel());
  rs.push_back(concat_of_split());
  rs.push_back(split_of_concat());
  rs.push_back(split_of_split());
  rs.push_back(transpose_transpose());
  rs.push_back(reshape_reshape());
  rs.push_back(remove_identity());
  rs.push_back(linear_add(Op::MatMul));
  rs.push_back(linear_add(Op::Conv2d));
  rs.push_back(matmul_concat_inputs());
  rs.push_back(unary_concat());
  rs.push_back(matmul_assoc());
  rs.push_back(mul_distribute());
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
