#include "passes/conditional_execution.h"

#include <cmath>
#include <optional>

#include "passes/graph_edit.h"
#include "symbolic/simplify.h"

namespace tempo::passes {

namespace {

using ir::EdgeId;
using ir::OpId;
using ir::OpKind;

// The entries of an edge's phi, one per dimension of its source.
std::vector<Expr> phi_entries(const Expr& phi) {
  if (!phi.defined()) return {};
  return phi.is_seq() ? phi.args() : std::vector<Expr>{phi};
}

// Values that are functions of the point alone, as integer or boolean expressions in each op's
// own domain variables: symbols, integral constants and what integer arithmetic, comparisons and
// logic make of them. A comparison folded here is exact; the kernel it replaces compares in the
// operands' floating type, which is exact for integers below 2^24 (float32): any step counter.
class PointFunctions {
 public:
  explicit PointFunctions(const ir::Graph& g) : g_(g), value_(g.num_ops()), done_(g.num_ops()) {}

  // The value input edge `e` delivers at its sink's point.
  std::optional<Expr> through(EdgeId id) {
    const ir::Edge& e = g_.edge(id);
    std::optional<Expr> v = of(e.source);
    if (!v || e.cond.defined()) return std::nullopt;
    const Dims& domain = g_.op(e.source).domain;
    if (!e.phi.defined()) return v;
    const std::vector<Expr> entries = phi_entries(e.phi);
    if (entries.size() != domain.size()) return std::nullopt;
    std::vector<std::pair<Expr, Expr>> repl;
    for (size_t k = 0; k < entries.size(); ++k) {
      if (entries[k].is_slice()) return std::nullopt;
      repl.emplace_back(domain[k].var, entries[k]);
    }
    return sym::substitute(*v, repl);
  }

 private:
  std::optional<Expr> of(OpId id) {
    if (!done_[id]) {
      done_[id] = true;  // a cycle reads an earlier point, which is not a function of this one
      value_[id] = compute(g_.op(id));
    }
    return value_[id];
  }

  std::optional<Expr> compute(const ir::OpNode& op) {
    if (op.cond.defined() || op.outputs.size() != 1) return std::nullopt;
    const ir::DType dt = op.outputs[0].dtype;
    std::vector<Expr> x;
    for (EdgeId e : op.inputs) {
      std::optional<Expr> v = through(e);
      if (!v) return std::nullopt;
      x.push_back(*v);
    }
    auto ints = [&] {
      return std::all_of(x.begin(), x.end(),
                         [](const Expr& e) { return e.type() == sym::Type::Int; });
    };
    auto bools = [&] {
      return std::all_of(x.begin(), x.end(),
                         [](const Expr& e) { return e.type() == sym::Type::Bool; });
    };
    switch (op.kind) {
      case OpKind::EvalSymbol:
        return op.attrs.exprs.at(0);
      case OpKind::Const: {
        const double v = op.attrs.scalar;
        if (dt == ir::DType::Bool) return Expr::boolean(v != 0);
        if (!std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 9.0e15) return std::nullopt;
        return Expr(static_cast<int64_t>(v));
      }
      case OpKind::Identity:
      case OpKind::Detach:
        return x[0];
      case OpKind::Cast:  // an integer keeps its value in any numeric type; a bool stays a bool
        if ((x[0].type() == sym::Type::Bool) != (dt == ir::DType::Bool)) return std::nullopt;
        return x[0];
      case OpKind::Neg:
        if (!ints()) return std::nullopt;
        return -x[0];
      case OpKind::Add:
      case OpKind::Sub:
      case OpKind::Mul:
        if (!ints()) return std::nullopt;
        return op.kind == OpKind::Add ? x[0] + x[1]
               : op.kind == OpKind::Sub ? x[0] - x[1]
                                        : x[0] * x[1];
      case OpKind::Eq:
      case OpKind::Ne:
      case OpKind::Lt:
      case OpKind::Le:
      case OpKind::Gt:
      case OpKind::Ge:
        if (!ints()) return std::nullopt;
        switch (op.kind) {
          case OpKind::Eq: return x[0] == x[1];
          case OpKind::Ne: return x[0] != x[1];
          case OpKind::Lt: return x[0] < x[1];
          case OpKind::Le: return x[0] <= x[1];
          case OpKind::Gt: return x[0] > x[1];
          default: return x[0] >= x[1];
        }
      case OpKind::And:
      case OpKind::Or:
        if (!bools()) return std::nullopt;
        return op.kind == OpKind::And ? (x[0] && x[1]) : (x[0] || x[1]);
      case OpKind::Not:
        if (!bools()) return std::nullopt;
        return !x[0];
      default:
        return std::nullopt;
    }
  }

  const ir::Graph& g_;
  std::vector<std::optional<Expr>> value_;
  std::vector<bool> done_;
};

// where(c, a, b) with c a function of the point becomes Merge(a if c, b): a is read only where c
// holds, b (the first branch whose condition holds wins) elsewhere.
bool where_to_merge(ir::Graph& g, ir::OpNode& op, const std::vector<EdgeId>& reads,
                    PointFunctions& points) {
  if (op.kind != OpKind::Where || op.cond.defined()) return false;
  // A value read as a window (a replay buffer's actions) stays a where: a merge passes its
  // branches' tensors on, which a block store would copy into its rows at every point.
  for (EdgeId e : reads)
    for (const Expr& entry : phi_entries(g.edge(e).phi))
      if (entry.is_slice()) return false;
  const EdgeId c = op.inputs[0], a = op.inputs[1], b = op.inputs[2];
  if (g.edge(a).cond.defined() || g.edge(b).cond.defined()) return false;
  for (EdgeId e : {a, b})
    if (!ir::same_type(g.input_type(e), op.outputs[0], op.domain)) return false;
  std::optional<Expr> cond = points.through(c);
  if (!cond || cond->type() != sym::Type::Bool) return false;
  const Expr when = sym::simplify(*cond, op.domain);
  if (when.is_bool_const()) return false;  // the algebraic pass's case, not a condition
  op.kind = OpKind::Merge;
  op.attrs = ir::Attrs();
  g.edge(a).cond = when;
  op.inputs = {a, b};  // the condition's edge is left unread; run_pipeline drops it
  return true;
}

// The conjuncts of a condition that mention only the dimensions of `domain` (bounds aside): a
// condition that holds wherever the original holds, in fewer variables. Undefined when none is
// left (everywhere).
Expr within(const Expr& cond, const Dims& domain) {
  std::vector<Expr> parts = cond.op() == sym::Op::And ? cond.args() : std::vector<Expr>{cond};
  Expr kept;
  for (const Expr& part : parts) {
    bool inside = true;
    for (const Expr& s : sym::free_symbols(part))
      inside = inside && (s.is_bound_symbol() ||
                          std::any_of(domain.begin(), domain.end(),
                                      [&](const Dim& d) { return d.var.same(s); }));
    if (inside) kept = kept.defined() ? (kept && part) : part;
  }
  return kept;
}

// Whether edge `e` reads its source at the sink's own coordinates of the source's dimensions.
bool reads_own_coordinates(const ir::Graph& g, const ir::Edge& e) {
  return !e.phi.defined() || e.phi.same(identity_phi(g.op(e.source).domain));
}

// Where some reader needs op `id`'s value: the union of its reads' conditions, in its own
// dimensions. Undefined: everywhere.
Expr needed(const ir::Graph& g, OpId id, const std::vector<EdgeId>& reads,
            const std::vector<bool>& live) {
  const Dims& domain = g.op(id).domain;
  std::vector<Expr> terms;
  for (EdgeId eid : reads) {
    const ir::Edge& e = g.edge(eid);
    const ir::OpNode& sink = g.op(e.sink);
    if (!live[sink.id]) continue;  // unread (the autodiff's forward pass of a loss): DCE's op
    Expr term = sink.cond;
    if (sink.kind == OpKind::Merge && e.cond.defined())
      term = term.defined() ? (term && e.cond) : e.cond;
    if (!term.defined() || !reads_own_coordinates(g, e)) return Expr();
    term = within(sym::simplify(term, sink.domain), domain);
    if (!term.defined()) return Expr();
    if (std::none_of(terms.begin(), terms.end(), [&](const Expr& t) { return t.same(term); }))
      terms.push_back(term);
  }
  if (terms.empty()) return Expr();
  Expr any = terms[0];
  for (size_t k = 1; k < terms.size(); ++k) any = any || terms[k];
  any = sym::simplify(any, domain);
  return any.is_bool_const() && any.value() ? Expr() : any;
}

}  // namespace

bool execute_conditionally(Program& p) {
  ir::Graph& g = p.graph;
  PointFunctions points(g);
  bool merged = false;
  {
    const std::vector<std::vector<EdgeId>> reads = consumers(g);
    for (size_t k = 0; k < g.num_ops(); ++k)
      merged |= where_to_merge(g, g.op(static_cast<OpId>(k)), reads[k], points);
  }
  if (!merged) return false;

  // Ops that keep every point: user functions (their effects), the user's reads, and ops whose
  // condition is the program's own.
  std::vector<bool> movable(g.num_ops());
  for (const ir::OpNode& op : g.ops())
    movable[op.id] = !(op.kind == OpKind::Udf || (op.kind == OpKind::Fused && has_effect(op)) ||
                       p.is_retained(op.id) || op.cond.defined());
  const std::vector<std::vector<EdgeId>> reads = consumers(g);
  // An op DCE removes later counts for nothing as a reader; without DCE it runs, and reads, at
  // every point.
  const std::vector<bool> live =
      p.options.dce ? needed_ops(p) : std::vector<bool>(g.num_ops(), true);
  // Readers come after what they read in most graphs, so one sweep from the end settles most
  // conditions; readers' conditions only narrow from sweep to sweep, so each op's condition
  // always covers what its readers need, and a few sweeps reach the fixed point.
  for (int sweep = 0; sweep < 8; ++sweep) {
    bool changed = false;
    for (size_t k = g.num_ops(); k-- > 0;) {
      if (!movable[k]) continue;
      ir::OpNode& op = g.op(static_cast<OpId>(k));
      Expr cond = needed(g, op.id, reads[k], live);
      if (cond.defined() == op.cond.defined() && (!cond.defined() || cond.same(op.cond)))
        continue;
      op.cond = cond;
      changed = true;
    }
    if (!changed) break;
  }
  return true;
}

}  // namespace tempo::passes
