#include "rewrite/graph.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <sstream>

#include "util/error.h"

namespace tempo::rewrite {

const char* op_name(Op op) {
  switch (op) {
#define TEMPO_REWRITE_NAME(e, s) \
  case Op::e:                    \
    return s;
    TEMPO_REWRITE_OPS(TEMPO_REWRITE_NAME)
#undef TEMPO_REWRITE_NAME
  }
  return "?";
}

const char* act_name(Act a) {
  switch (a) {
    case Act::None: return "none";
    case Act::Relu: return "relu";
    case Act::Tanh: return "tanh";
    case Act::Sigmoid: return "sigmoid";
  }
  return "?";
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

namespace {

int64_t numel(const Shape& s) {
  return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
}

[[noreturn]] void mismatch(Op op, const std::vector<Shape>& in, const std::string& why) {
  std::string shapes;
  for (const auto& s : in) shapes += (shapes.empty() ? "" : ", ") + shape_str(s);
  throw UserError(cat("rewrite graph: shape mismatch in ", op_name(op), "(", shapes, "): ", why));
}

void need_inputs(Op op, const std::vector<Shape>& in, size_t n) {
  if (in.size() != n) mismatch(op, in, cat("expects ", n, " inputs, got ", in.size()));
}

// Output extent of a window of k with stride s over n (Same pads (k - 1) / 2 on each side).
int64_t window_out(Op op, const std::vector<Shape>& in, int64_t n, int64_t k, int64_t s, Pad pad) {
  if (k <= 0 || s <= 0) mismatch(op, in, "kernel and stride must be positive");
  if (pad == Pad::Same && k % 2 == 0) mismatch(op, in, "Same padding needs an odd kernel");
  int64_t p = pad == Pad::Same ? (k - 1) / 2 : 0;
  if (n + 2 * p < k) mismatch(op, in, cat("window ", k, " larger than the input extent ", n));
  return (n + 2 * p - k) / s + 1;
}

}  // namespace

std::vector<Shape> infer_shapes(Op op, const Attrs& a, const std::vector<Shape>& in) {
  switch (op) {
    case Op::Input:
    case Op::Weight:
      need_inputs(op, in, 0);
      for (int64_t d : a.ints)
        if (d <= 0) mismatch(op, in, cat("non-positive dimension in ", shape_str(a.ints)));
      return {a.ints};
    case Op::MatMul: {
      need_inputs(op, in, 2);
      const Shape &x = in[0], &w = in[1];
      if (x.size() < 2 || w.size() < 2) mismatch(op, in, "operands need at least 2 dimensions");
      if (x.back() != w[w.size() - 2])
        mismatch(op, in, cat("inner dimensions differ (", x.back(), " vs ", w[w.size() - 2], ")"));
      if (w.size() > 2 && !std::equal(x.begin(), x.end() - 2, w.begin(), w.end() - 2))
        mismatch(op, in, "batch dimensions differ");
      Shape out = x;
      out.back() = w.back();
      return {out};
    }
    case Op::Conv2d: {
      need_inputs(op, in, 2);
      const Shape &x = in[0], &w = in[1];
      if (x.size() != 4 || w.size() != 4) mismatch(op, in, "expects NCHW input and OIHW weight");
      if (x[1] != w[1]) mismatch(op, in, cat("input channels ", x[1], " vs weight's ", w[1]));
      return {{x[0], w[0], window_out(op, in, x[2], w[2], a.sh, a.pad),
               window_out(op, in, x[3], w[3], a.sw, a.pad)}};
    }
    case Op::MaxPool:
    case Op::AvgPool: {
      need_inputs(op, in, 1);
      const Shape& x = in[0];
      if (x.size() != 4) mismatch(op, in, "expects an NCHW input");
      return {{x[0], x[1], window_out(op, in, x[2], a.kh, a.sh, a.pad),
               window_out(op, in, x[3], a.kw, a.sw, a.pad)}};
    }
    case Op::Relu:
    case Op::Tanh:
    case Op::Sigmoid:
      need_inputs(op, in, 1);
      return {in[0]};
    case Op::Add:
    case Op::Mul:
      need_inputs(op, in, 2);
      if (in[0] != in[1]) mismatch(op, in, "operands must have the same shape");
      return {in[0]};
    case Op::Concat: {
      if (in.empty()) mismatch(op, in, "expects at least one input");
      Shape out = in[0];
      if (a.axis < 0 || a.axis >= static_cast<int64_t>(out.size())) mismatch(op, in, "bad axis");
      for (size_t k = 1; k < in.size(); ++k) {
        if (in[k].size() != out.size()) mismatch(op, in, "ranks differ");
        for (size_t d = 0; d < out.size(); ++d)
          if (static_cast<int64_t>(d) != a.axis && in[k][d] != out[d])
            mismatch(op, in, cat("dimension ", d, " differs"));
        out[a.axis] += in[k][a.axis];
      }
      return {out};
    }
    case Op::Split: {
      need_inputs(op, in, 1);
      const Shape& x = in[0];
      if (a.axis < 0 || a.axis >= static_cast<int64_t>(x.size())) mismatch(op, in, "bad axis");
      int64_t sum = 0;
      std::vector<Shape> outs;
      for (int64_t s : a.ints) {
        if (s <= 0) mismatch(op, in, "split sizes must be positive");
        sum += s;
        Shape o = x;
        o[a.axis] = s;
        outs.push_back(o);
      }
      if (sum != x[a.axis]) mismatch(op, in, cat("split sizes sum to ", sum, ", not ", x[a.axis]));
      return outs;
    }
    case Op::Transpose: {
      need_inputs(op, in, 1);
      const Shape& x = in[0];
      std::vector<int64_t> p = a.ints, sorted = a.ints;
      std::sort(sorted.begin(), sorted.end());
      std::vector<int64_t> iota(x.size());
      std::iota(iota.begin(), iota.end(), 0);
      if (sorted != iota) mismatch(op, in, cat("perm ", shape_str(p), " is not a permutation"));
      Shape out(x.size());
      for (size_t d = 0; d < x.size(); ++d) out[d] = x[p[d]];
      return {out};
    }
    case Op::Reshape:
      need_inputs(op, in, 1);
      if (numel(in[0]) != numel(a.ints) || a.ints.empty())
        mismatch(op, in, cat("cannot reshape to ", shape_str(a.ints)));
      return {a.ints};
    case Op::Enlarge: {
      need_inputs(op, in, 1);
      const Shape& w = in[0];
      if (w.size() != 4) mismatch(op, in, "expects an OIHW weight");
      // Zero-padding a kernel centred keeps a Same convolution's result only for odd sizes.
      if (a.kh < w[2] || a.kw < w[3] || (a.kh - w[2]) % 2 || (a.kw - w[3]) % 2)
        mismatch(op, in, cat("cannot enlarge a ", w[2], "x", w[3], " kernel to ", a.kh, "x", a.kw));
      return {{w[0], w[1], a.kh, a.kw}};
    }
  }
  internal_error("unknown rewrite op");
}

Ref Graph::input(const std::string& name, Shape shape) {
  Attrs a;
  a.name = name;
  a.ints = std::move(shape);
  return add1(Op::Input, {}, a);
}

Ref Graph::weight(const std::string& name, Shape shape) {
  Attrs a;
  a.name = name;
  a.ints = std::move(shape);
  return add1(Op::Weight, {}, a);
}

std::vector<Ref> Graph::add(Op op, std::vector<Ref> inputs, Attrs attrs) {
  std::vector<Shape> in;
  for (const Ref& r : inputs) {
    if (r.node < 0 || r.node >= static_cast<int>(nodes.size()) ||
        r.out >= static_cast<int>(nodes[r.node].outputs.size()))
      throw UserError(cat("rewrite graph: ", op_name(op), " reads a value that does not exist"));
    in.push_back(shape(r));
  }
  Node n{op, std::move(attrs), std::move(inputs), {}};
  n.outputs = infer_shapes(op, n.attrs, in);
  nodes.push_back(std::move(n));
  std::vector<Ref> refs;
  for (size_t k = 0; k < nodes.back().outputs.size(); ++k)
    refs.push_back({static_cast<int>(nodes.size()) - 1, static_cast<int>(k)});
  return refs;
}

Ref Graph::matmul(Ref a, Ref b, Act act) {
  Attrs at;
  at.act = act;
  return add1(Op::MatMul, {a, b}, at);
}

Ref Graph::conv(Ref x, Ref w, int64_t stride, Pad pad, Act act) {
  Attrs at;
  at.sh = at.sw = stride;
  at.pad = pad;
  at.act = act;
  return add1(Op::Conv2d, {x, w}, at);
}

Ref Graph::pool(Op kind, Ref x, int64_t k, int64_t stride, Pad pad) {
  Attrs at;
  at.kh = at.kw = k;
  at.sh = at.sw = stride;
  at.pad = pad;
  return add1(kind, {x}, at);
}

Ref Graph::unary(Op kind, Ref x) { return add1(kind, {x}); }
Ref Graph::binary(Op kind, Ref a, Ref b) { return add1(kind, {a, b}); }

Ref Graph::concat(int64_t axis, std::vector<Ref> xs) {
  Attrs at;
  at.axis = axis;
  return add1(Op::Concat, std::move(xs), at);
}

std::vector<Ref> Graph::split(Ref x, int64_t axis, std::vector<int64_t> sizes) {
  Attrs at;
  at.axis = axis;
  at.ints = std::move(sizes);
  return add(Op::Split, {x}, at);
}

Ref Graph::transpose(Ref x, std::vector<int64_t> perm) {
  Attrs at;
  at.ints = std::move(perm);
  return add1(Op::Transpose, {x}, at);
}

Ref Graph::reshape(Ref x, Shape shape) {
  Attrs at;
  at.ints = std::move(shape);
  return add1(Op::Reshape, {x}, at);
}

Ref Graph::enlarge(Ref w, int64_t kh, int64_t kw) {
  Attrs at;
  at.kh = kh;
  at.kw = kw;
  return add1(Op::Enlarge, {w}, at);
}

std::vector<std::vector<std::pair<int, int>>> Graph::consumers() const {
  std::vector<std::vector<std::pair<int, int>>> c(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n)
    for (size_t k = 0; k < nodes[n].inputs.size(); ++k)
      c[nodes[n].inputs[k].node].push_back({static_cast<int>(n), static_cast<int>(k)});
  return c;
}

std::vector<bool> Graph::constant_nodes() const {
  std::vector<bool> c(nodes.size(), false);
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].op == Op::Input) continue;
    bool all = true;
    for (const Ref& r : nodes[n].inputs) all = all && c[r.node];
    c[n] = all;  // a weight has no inputs: constant
  }
  return c;
}

Graph Graph::rebuilt() const {
  // Reachable from the outputs.
  std::vector<bool> live(nodes.size(), false);
  std::vector<int> stack;
  for (const Ref& r : outputs) stack.push_back(r.node);
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    if (live[n]) continue;
    live[n] = true;
    for (const Ref& r : nodes[n].inputs) stack.push_back(r.node);
  }
  // Depth-first post-order from the outputs keeps producers before consumers even where a
  // rewrite appended a node that earlier nodes now read.
  std::vector<int> order, state(nodes.size(), 0);
  std::function<void(int)> visit = [&](int n) {
    if (state[n] == 2) return;
    if (state[n] == 1) throw InternalError("rewrite graph: cycle");
    state[n] = 1;
    for (const Ref& r : nodes[n].inputs) visit(r.node);
    state[n] = 2;
    order.push_back(n);
  };
  // Visit in the old order first, so an unchanged graph keeps its numbering.
  for (size_t n = 0; n < nodes.size(); ++n)
    if (live[n]) visit(static_cast<int>(n));
  std::vector<int> renum(nodes.size(), -1);
  Graph g;
  for (int n : order) {
    renum[n] = static_cast<int>(g.nodes.size());
    Node m = nodes[n];
    for (Ref& r : m.inputs) r.node = renum[r.node];
    g.nodes.push_back(std::move(m));
  }
  for (Ref r : outputs) g.outputs.push_back({renum[r.node], r.out});
  return g;
}

void Graph::validate() const {
  for (size_t n = 0; n < nodes.size(); ++n) {
    std::vector<Shape> in;
    for (const Ref& r : nodes[n].inputs) {
      if (r.node < 0 || r.node >= static_cast<int>(n))
        throw UserError(cat("rewrite graph: node ", n, " reads a later node"));
      in.push_back(shape(r));
    }
    if (infer_shapes(nodes[n].op, nodes[n].attrs, in) != nodes[n].outputs)
      throw UserError(cat("rewrite graph: node ", n, " (", op_name(nodes[n].op),
                          ") has stale output shapes"));
  }
}

int64_t Graph::num_ops() const {
  int64_t k = 0;
  for (const Node& n : nodes) k += n.op != Op::Input && n.op != Op::Weight;
  return k;
}

namespace {
uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 1099511628211ULL;
}
}  // namespace

uint64_t Graph::hash() const {
  std::vector<uint64_t> h(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& x = nodes[n];
    const Attrs& a = x.attrs;
    uint64_t v = mix(static_cast<uint64_t>(x.op), static_cast<uint64_t>(a.act));
    for (int64_t i : {a.kh, a.kw, a.sh, a.sw, static_cast<int64_t>(a.pad), a.axis}) v = mix(v, i);
    for (int64_t i : a.ints) v = mix(v, i);
    for (char c : a.name) v = mix(v, static_cast<unsigned char>(c));
    for (const Ref& r : x.inputs) v = mix(mix(v, h[r.node]), r.out);
    h[n] = v;
  }
  uint64_t g = 17;
  for (const Ref& r : outputs) g = mix(mix(g, h[r.node]), r.out);
  return g;
}

std::string Graph::to_string() const {
  std::ostringstream os;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& x = nodes[n];
    os << "%" << n << " = " << op_name(x.op);
    if (!x.attrs.name.empty()) os << " " << x.attrs.name;
    if (x.attrs.act != Act::None) os << " act=" << act_name(x.attrs.act);
    os << "(";
    for (size_t k = 0; k < x.inputs.size(); ++k)
      os << (k ? ", " : "") << "%" << x.inputs[k].node << "." << x.inputs[k].out;
    os << ") ->";
    for (const Shape& s : x.outputs) os << " " << shape_str(s);
    os << "\n";
  }
  return os.str();
}

// ---- the evaluation models ----

namespace {

// A builder that names weights w0, w1, ... and adds conv + ReLU units (BatchNorm folded).
struct Builder {
  Graph g;
  int next = 0;
  Ref w(Shape s) { return g.weight(cat("w", next++), std::move(s)); }
  int64_t channels(Ref x) const { return g.shape(x)[1]; }
  Ref conv(Ref x, int64_t out, int64_t kh, int64_t kw, int64_t stride = 1, Pad pad = Pad::Same,
           bool relu = true) {
    Ref c = g.conv(x, w({out, channels(x), kh, kw}), stride, pad);
    return relu ? g.unary(Op::Relu, c) : c;
  }
  Ref linear(Ref x, int64_t out) { return g.matmul(x, w({g.shape(x).back(), out})); }
  Ref classifier(Ref x, int64_t classes) {  // global average pooling, flatten, linear
    const Shape& s = g.shape(x);
    Ref p = g.pool(Op::AvgPool, x, s[2], 1, Pad::Valid);
    return linear(g.reshape(p, {s[0], s[1]}), classes);
  }
};

Graph resnet(bool bottleneck, std::vector<int> blocks) {
  Builder b;
  Ref x = b.g.input("image", {1, 3, 224, 224});
  x = b.conv(x, 64, 7, 7, 2);
  x = b.g.pool(Op::MaxPool, x, 3, 2, Pad::Same);
  int64_t width = 64;
  for (size_t stage = 0; stage < blocks.size(); ++stage, width *= 2) {
    for (int k = 0; k < blocks[stage]; ++k) {
      int64_t stride = (stage > 0 && k == 0) ? 2 : 1;
      int64_t out = bottleneck ? width * 4 : width;
      Ref y = x;
      if (bottleneck) {
        y = b.conv(y, width, 1, 1);
        y = b.conv(y, width, 3, 3, stride);
        y = b.conv(y, out, 1, 1, 1, Pad::Same, false);
      } else {
        y = b.conv(y, width, 3, 3, stride);
        y = b.conv(y, out, 3, 3, 1, Pad::Same, false);
      }
      Ref shortcut = x;
      if (stride != 1 || b.channels(x) != out) shortcut = b.conv(x, out, 1, 1, stride, Pad::Same, false);
      x = b.g.unary(Op::Relu, b.g.binary(Op::Add, y, shortcut));
    }
  }
  b.g.outputs = {b.classifier(x, 1000)};
  return b.g;
}

Graph squeezenet() {
  Builder b;
  Ref x = b.g.input("image", {1, 3, 224, 224});
  x = b.conv(x, 64, 3, 3, 2, Pad::Valid);
  x = b.g.pool(Op::MaxPool, x, 3, 2);
  auto fire = [&](Ref in, int64_t squeeze, int64_t expand) {
    Ref s = b.conv(in, squeeze, 1, 1);
    return b.g.concat(1, {b.conv(s, expand, 1, 1), b.conv(s, expand, 3, 3)});
  };
  x = fire(x, 16, 64);
  x = fire(x, 16, 64);
  x = b.g.pool(Op::MaxPool, x, 3, 2);
  x = fire(x, 32, 128);
  x = fire(x, 32, 128);
  x = b.g.pool(Op::MaxPool, x, 3, 2);
  x = fire(x, 48, 192);
  x = fire(x, 48, 192);
  x = fire(x, 64, 256);
  x = fire(x, 64, 256);
  x = b.conv(x, 1000, 1, 1);
  const Shape& s = b.g.shape(x);
  Ref p = b.g.pool(Op::AvgPool, x, s[2], 1, Pad::Valid);
  b.g.outputs = {b.g.reshape(p, {s[0], s[1]})};
  return b.g;
}

Graph inception_v3() {
  Builder b;
  Graph& g = b.g;
  Ref x = g.input("image", {1, 3, 299, 299});
  x = b.conv(x, 32, 3, 3, 2, Pad::Valid);
  x = b.conv(x, 32, 3, 3, 1, Pad::Valid);
  x = b.conv(x, 64, 3, 3);
  x = g.pool(Op::MaxPool, x, 3, 2);
  x = b.conv(x, 80, 1, 1);
  x = b.conv(x, 192, 3, 3, 1, Pad::Valid);
  x = g.pool(Op::MaxPool, x, 3, 2);
  auto avg = [&](Ref in) { return g.pool(Op::AvgPool, in, 3, 1, Pad::Same); };
  auto block_a = [&](Ref in, int64_t pool_features) {
    Ref b1 = b.conv(in, 64, 1, 1);
    Ref b5 = b.conv(b.conv(in, 48, 1, 1), 64, 5, 5);
    Ref b3 = b.conv(b.conv(b.conv(in, 64, 1, 1), 96, 3, 3), 96, 3, 3);
    Ref bp = b.conv(avg(in), pool_features, 1, 1);
    return g.concat(1, {b1, b5, b3, bp});
  };
  x = block_a(x, 32);
  x = block_a(x, 64);
  x = block_a(x, 64);
  {  // B: grid reduction to 17x17
    Ref b3 = b.conv(x, 384, 3, 3, 2, Pad::Valid);
    Ref bd = b.conv(b.conv(b.conv(x, 64, 1, 1), 96, 3, 3), 96, 3, 3, 2, Pad::Valid);
    x = g.concat(1, {b3, bd, g.pool(Op::MaxPool, x, 3, 2)});
  }
  auto block_c = [&](Ref in, int64_t c7) {
    Ref b1 = b.conv(in, 192, 1, 1);
    Ref b7 = b.conv(b.conv(b.conv(in, c7, 1, 1), c7, 1, 7), 192, 7, 1);
    Ref bd = b.conv(in, c7, 1, 1);
    bd = b.conv(b.conv(bd, c7, 7, 1), c7, 1, 7);
    bd = b.conv(b.conv(bd, c7, 7, 1), 192, 1, 7);
    Ref bp = b.conv(avg(in), 192, 1, 1);
    return g.concat(1, {b1, b7, bd, bp});
  };
  x = block_c(x, 128);
  x = block_c(x, 160);
  x = block_c(x, 160);
  x = block_c(x, 192);
  {  // D: grid reduction to 8x8
    Ref b3 = b.conv(b.conv(x, 192, 1, 1), 320, 3, 3, 2, Pad::Valid);
    Ref b7 = b.conv(b.conv(b.conv(x, 192, 1, 1), 192, 1, 7), 192, 7, 1);
    b7 = b.conv(b7, 192, 3, 3, 2, Pad::Valid);
    x = g.concat(1, {b3, b7, g.pool(Op::MaxPool, x, 3, 2)});
  }
  auto block_e = [&](Ref in) {
    Ref b1 = b.conv(in, 320, 1, 1);
    Ref b3 = b.conv(in, 384, 1, 1);
    b3 = g.concat(1, {b.conv(b3, 384, 1, 3), b.conv(b3, 384, 3, 1)});
    Ref bd = b.conv(b.conv(in, 448, 1, 1), 384, 3, 3);
    bd = g.concat(1, {b.conv(bd, 384, 1, 3), b.conv(bd, 384, 3, 1)});
    Ref bp = b.conv(avg(in), 192, 1, 1);
    return g.concat(1, {b1, b3, bd, bp});
  };
  x = block_e(x);
  x = block_e(x);
  g.outputs = {b.classifier(x, 1000)};
  return g;
}

// BERT-base encoder layers as TASO writes attention (q, k, v projections, heads by reshape and
// transpose, two batched matmuls), plus the output projection, the feed-forward block and the
// residual additions; no softmax or layer norm (not in the operator set).
Graph bert(int layers) {
  const int64_t seq = 64, hidden = 768, heads = 12, dk = hidden / heads, ffn = 3072;
  Builder b;
  Graph& g = b.g;
  Ref x = g.input("tokens", {seq, hidden});
  for (int l = 0; l < layers; ++l) {
    Ref q = b.linear(x, hidden), k = b.linear(x, hidden), v = b.linear(x, hidden);
    q = g.transpose(g.reshape(q, {seq, heads, dk}), {1, 0, 2});  // [heads, seq, dk]
    k = g.transpose(g.reshape(k, {seq, heads, dk}), {1, 2, 0});  // [heads, dk, seq]
    v = g.transpose(g.reshape(v, {seq, heads, dk}), {1, 0, 2});
    Ref att = g.matmul(g.matmul(q, k), v);                        // [heads, seq, dk]
    att = g.reshape(g.transpose(att, {1, 0, 2}), {seq, hidden});
    x = g.binary(Op::Add, x, b.linear(att, hidden));
    Ref h = g.unary(Op::Relu, b.linear(x, ffn));
    x = g.binary(Op::Add, x, b.linear(h, hidden));
  }
  g.outputs = {x};
  return g;
}

}  // namespace

std::vector<std::string> model_names() {
  return {"inceptionv3", "resnet18", "resnet50", "squeezenet", "bert"};
}

Graph build_model(const std::string& name, int bert_layers) {
  if (name == "inceptionv3") return inception_v3();
  if (name == "resnet18") return resnet(false, {2, 2, 2, 2});
  if (name == "resnet50") return resnet(true, {3, 4, 6, 3});
  if (name == "squeezenet") return squeezenet();
  if (name == "bert") {
    if (bert_layers < 1) throw UserError("rewrite: BERT needs at least one layer");
    return bert(bert_layers);
  }
  std::string known;
  for (const auto& n : model_names()) known += " " + n;
  throw UserError(cat("rewrite: unknown model '", name, "' (known:", known, ")"));
}

}  // namespace tempo::rewrite
