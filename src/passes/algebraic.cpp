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

// Makes `op` read what its input op reads (f(g(x)) -> f'(x), the caller adjusts the attrs).
void read_through(ir::Graph& g, const OpNode& op) {
  const ir::Edge& inner = g.edge(input_op(g, op, 0).inputs[0]);
  ir::Edge& e = g.edge(op.inputs[0]);
  e.source = inner.source;
  e.source_output = inner.source_output;
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
