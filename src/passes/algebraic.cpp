#include "passes/algebraic.h"

#include <numeric>

#include "passes/graph_edit.h"

namespace tempo::passes {

namespace {

using ir::OpKind;
using ir::OpNode;

bool is_const(const ir::Graph& g, const OpNode& op, int input, double v) {
  std::optional<double> c = const_input(g, op, input);
  return c && *c == v;
}

// The op reads input `input` at its own point and that input is an op of kind `k`.
bool reads_kind(const ir::Graph& g, const OpNode& op, int input, OpKind k) {
  return reads_same_point(g, op.inputs[input]) && input_op(g, op, input).kind == k;
}

// Replaces `op` by the input of its input (f(g(x)) -> x).
bool forward_grand_input(Program& p, const OpNode& op) {
  const OpNode& inner = input_op(p.graph, op, 0);
  if (p.is_retained(op.id) || !reads_same_point(p.graph, op.inputs[0]) ||
      !reads_same_point(p.graph, inner.inputs[0]))
    return false;
  const ir::Edge& e = p.graph.edge(inner.inputs[0]);
  const ir::TensorType& x = p.graph.op(e.source).outputs[e.source_output];
  if (x.dtype != op.outputs[0].dtype || !x.shape.same(op.outputs[0].shape)) return false;
  return redirect_reads(p.graph, op.id, 0, e.source, e.source_output) > 0;
}

// Makes `op` read what its input op reads, where it reads it (f(g(x)) -> f'(x), the caller
// adjusts the attrs). `op` reads its input at its own point, so the inner read composes exactly.
void read_through(ir::Graph& g, const OpNode& op) {
  const ir::Edge inner = g.edge(input_op(g, op, 0).inputs[0]);
  ir::Edge& e = g.edge(op.inputs[0]);
  e.source = inner.source;
  e.source_output = inner.source_output;
  e.phi = inner.phi;
  e.cond = inner.cond;
}

std::vector<int64_t> compose(const std::vector<int64_t>& inner, const std::vector<int64_t>& outer) {
  std::vector<int64_t> out;
  for (int64_t d : outer) out.push_back(inner[d]);
  return out;
}

bool is_identity_perm(const std::vector<int64_t>& p) {
  for (size_t k = 0; k < p.size(); ++k)
    if (p[k] != static_cast<int64_t>(k)) return false;
  return true;
}

// A new op over `like`'s domain reading `inputs` (edges to copy: source, output, phi, cond),
// its output types inferred.
ir::OpId add_like(ir::Graph& g, ir::OpId like, OpKind kind, ir::Attrs attrs,
                  const std::vector<ir::Edge>& inputs) {
  OpNode n;
  n.kind = kind;
  n.attrs = std::move(attrs);
  n.domain = g.op(like).domain;
  n.name = g.op(like).name;
  n.loc = g.op(like).loc;
  ir::OpId id = g.add_op(std::move(n));
  std::vector<ir::TensorType> types;
  for (const ir::Edge& e : inputs)
    types.push_back(g.input_type(g.add_edge(id, e.source, e.source_output, e.phi, e.cond)));
  OpNode& op = g.op(id);
  op.outputs = ir::infer_types(kind, op.attrs, types, op.domain, op.describe());
  return id;
}

// sum_t A[t] @ B[t] = A' @ B' with A' = (A[0] | A[1] | ...) of shape (M, T*K) and B' = B viewed
// as (T*K, N): one matmul instead of T products and a sum over them (vectorized per-step weight
// gradients). When A is x transposed per t, A' is x viewed as (T*K, M) and transposed: no copy.
// A product transposed per t (a weight gradient as (g^T a)^T) sums to the transposed product.
bool sum_of_batched_matmul(Program& p, OpNode& sum) {
  ir::Graph& g = p.graph;
  if (sum.attrs.ints != std::vector<int64_t>{0} || sum.attrs.keepdim || p.is_retained(sum.id))
    return false;
  const bool transposed = reads_kind(g, sum, 0, OpKind::Permute) &&
                          input_op(g, sum, 0).attrs.ints == std::vector<int64_t>{0, 2, 1} &&
                          reads_kind(g, input_op(g, sum, 0), 0, OpKind::MatMul);
  if (!transposed && !reads_kind(g, sum, 0, OpKind::MatMul)) return false;
  bool read = false;
  for (const ir::Edge& e : g.edges()) read = read || e.source == sum.id;
  if (!read) return false;
  const OpNode& mm = transposed ? input_op(g, input_op(g, sum, 0), 0) : input_op(g, sum, 0);
  const ir::Shape a = g.input_type(mm.inputs[0]).shape, b = g.input_type(mm.inputs[1]).shape;
  if (a.rank() != 3 || b.rank() != 3 || !a[0].same(b[0])) return false;
  const ir::OpId at = sum.id;
  const ir::Edge ea = g.edge(mm.inputs[0]), eb = g.edge(mm.inputs[1]);
  auto here = [&](ir::OpId op) {  // a new op read at the current point
    ir::Edge e;
    e.source = op;
    e.phi = identity_phi(g.op(at).domain);
    return e;
  };
  const Expr rows = a[0] * a[2];  // T * K
  ir::Attrs flat_b, flat_x, t, swap, flat_a;
  flat_b.exprs = {rows, b[2]};
  const ir::OpId b2 = add_like(g, at, OpKind::Reshape, flat_b, {eb});
  ir::OpId a2;
  if (g.op(ea.source).kind == OpKind::Permute &&
      g.op(ea.source).attrs.ints == std::vector<int64_t>{0, 2, 1} &&
      reads_same_point(g, ea.id)) {
    flat_x.exprs = {rows, a[1]};
    t.ints = {1, 0};
    const ir::Edge ex = g.edge(g.op(ea.source).inputs[0]);
    a2 = add_like(g, at, OpKind::Permute, t, {here(add_like(g, at, OpKind::Reshape, flat_x, {ex}))});
  } else {
    swap.ints = {1, 0, 2};
    flat_a.exprs = {a[1], rows};
    a2 = add_like(g, at, OpKind::Reshape, flat_a, {here(add_like(g, at, OpKind::Permute, swap, {ea}))});
  }
  ir::OpId prod = add_like(g, at, OpKind::MatMul, {}, {here(a2), here(b2)});
  if (transposed) {
    ir::Attrs back;
    back.ints = {1, 0};
    prod = add_like(g, at, OpKind::Permute, back, {here(prod)});
  }
  return redirect_reads(g, at, 0, prod, 0) > 0;
}

struct Rule {
  OpKind kind;
  bool (*apply)(Program& p, OpNode& op);  // rewrites op if the identity applies
};

// Each rule states its identity. A rule that replaces an op by one of its inputs applies only
// where that is exact: the input is read at the op's own point and has the op's type (no
// broadcasting hidden in `x * 1`).
const Rule kRules[] = {
    // identity(x) = x
    {OpKind::Identity, [](Program& p, OpNode& op) { return forward_input(p, op.id, 0); }},
    // x + 0 = 0 + x = x
    {OpKind::Add,
     [](Program& p, OpNode& op) {
       return (is_const(p.graph, op, 1, 0) && forward_input(p, op.id, 0)) ||
              (is_const(p.graph, op, 0, 0) && forward_input(p, op.id, 1));
     }},
    // x - 0 = x
    {OpKind::Sub,
     [](Program& p, OpNode& op) {
       return is_const(p.graph, op, 1, 0) && forward_input(p, op.id, 0);
     }},
    // x * 1 = 1 * x = x
    {OpKind::Mul,
     [](Program& p, OpNode& op) {
       return (is_const(p.graph, op, 1, 1) && forward_input(p, op.id, 0)) ||
              (is_const(p.graph, op, 0, 1) && forward_input(p, op.id, 1));
     }},
    // x / 1 = x
    {OpKind::Div,
     [](Program& p, OpNode& op) {
       return is_const(p.graph, op, 1, 1) && forward_input(p, op.id, 0);
     }},
    // x ^ 1 = x
    {OpKind::Pow,
     [](Program& p, OpNode& op) {
       return is_const(p.graph, op, 1, 1) && forward_input(p, op.id, 0);
     }},
    // -(-x) = x
    {OpKind::Neg,
     [](Program& p, OpNode& op) {
       return reads_kind(p.graph, op, 0, OpKind::Neg) && forward_grand_input(p, op);
     }},
    // log(exp(x)) = x (exp(log(x)) = x holds only for x > 0 and is left alone)
    {OpKind::Log,
     [](Program& p, OpNode& op) {
       return reads_kind(p.graph, op, 0, OpKind::Exp) && forward_grand_input(p, op);
     }},
    // detach(detach(x)) = detach(x)
    {OpKind::Detach,
     [](Program& p, OpNode& op) {
       if (!reads_kind(p.graph, op, 0, OpKind::Detach) || p.is_retained(op.id)) return false;
       read_through(p.graph, op);
       return true;
     }},
    // cast(x, dtype of x) = x
    {OpKind::Cast, [](Program& p, OpNode& op) { return forward_input(p, op.id, 0); }},
    // reshape(x, shape of x) = x;  reshape(reshape(x, s1), s2) = reshape(x, s2)
    {OpKind::Reshape,
     [](Program& p, OpNode& op) {
       if (forward_input(p, op.id, 0)) return true;
       if (!reads_kind(p.graph, op, 0, OpKind::Reshape)) return false;
       read_through(p.graph, op);
       return true;
     }},
    // expand(x, shape of x) = x
    {OpKind::Expand, [](Program& p, OpNode& op) { return forward_input(p, op.id, 0); }},
    // permute(permute(x, p), q) = permute(x, p o q), and permute(x, identity) = x
    {OpKind::Permute,
     [](Program& p, OpNode& op) {
       if (is_identity_perm(op.attrs.ints)) return forward_input(p, op.id, 0);
       if (!reads_kind(p.graph, op, 0, OpKind::Permute)) return false;
       op.attrs.ints = compose(input_op(p.graph, op, 0).attrs.ints, op.attrs.ints);
       read_through(p.graph, op);
       return true;
     }},
    // squeeze(unsqueeze(x, d), d) = x
    {OpKind::Squeeze,
     [](Program& p, OpNode& op) {
       return reads_kind(p.graph, op, 0, OpKind::Unsqueeze) &&
              input_op(p.graph, op, 0).attrs.ints == op.attrs.ints && forward_grand_input(p, op);
     }},
    // index(slice(x, d, a:b), d, i) = index(x, d, a + i)
    {OpKind::Index,
     [](Program& p, OpNode& op) {
       if (!reads_kind(p.graph, op, 0, OpKind::Slice)) return false;
       const OpNode& s = input_op(p.graph, op, 0);
       if (s.attrs.ints != op.attrs.ints || !reads_same_point(p.graph, s.inputs[0])) return false;
       op.attrs.exprs[0] = s.attrs.exprs[0] + op.attrs.exprs[0];
       read_through(p.graph, op);
       return true;
     }},
    // sum over t of A[t] @ B[t] = (A[0] | ... | A[T-1]) @ (B[0]; ...; B[T-1])
    {OpKind::Sum, sum_of_batched_matmul},
    // slice(slice(x, d, a:b), d, c:e) = slice(x, d, a + c:a + e)
    {OpKind::Slice,
     [](Program& p, OpNode& op) {
       if (!reads_kind(p.graph, op, 0, OpKind::Slice)) return false;
       const OpNode& s = input_op(p.graph, op, 0);
       if (s.attrs.ints != op.attrs.ints || !reads_same_point(p.graph, s.inputs[0])) return false;
       const Expr a = s.attrs.exprs[0];
       op.attrs.exprs = {a + op.attrs.exprs[0], a + op.attrs.exprs[1]};
       read_through(p.graph, op);
       return true;
     }},
};

}  // namespace

bool simplify_algebra(Program& p) {
  bool changed = false;
  // A rewrite can expose another (-(-(-(-x)))): repeat until none applies.
  for (bool again = true; again;) {
    again = false;
    for (size_t k = 0; k < p.graph.num_ops(); ++k) {
      OpNode& op = p.graph.op(static_cast<ir::OpId>(k));
      if (op.cond.defined()) continue;
      for (const Rule& r : kRules) {
        if (r.kind != op.kind || !r.apply(p, op)) continue;
        again = changed = true;
        break;
      }
    }
  }
  return changed;
}

}  // namespace tempo::passes
