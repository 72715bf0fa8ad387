#include "passes/graph_edit.h"

#include <algorithm>

#include "symbolic/simplify.h"
#include "util/error.h"

namespace tempo::passes {

using ir::EdgeId;
using ir::Graph;
using ir::OpId;

std::vector<std::vector<EdgeId>> consumers(const Graph& g) {
  std::vector<std::vector<EdgeId>> out(g.num_ops());
  for (const ir::OpNode& op : g.ops())
    for (EdgeId e : op.inputs) out[g.edge(e).source].push_back(e);
  return out;
}

bool has_effect(const ir::OpNode& op) {
  if (op.kind == ir::OpKind::Fused)
    return std::any_of(op.attrs.region->body.ops().begin(), op.attrs.region->body.ops().end(),
                       [](const ir::OpNode& b) { return has_effect(b); });
  return op.kind == ir::OpKind::Udf || op.kind == ir::OpKind::RandUniform ||
         op.kind == ir::OpKind::RandNormal;
}

std::vector<bool> needed_ops(const Program& p) {
  const Graph& g = p.graph;
  std::vector<bool> live(g.num_ops(), false);
  std::vector<OpId> work;
  auto mark = [&](OpId id) {
    if (!live[id]) {
      live[id] = true;
      work.push_back(id);
    }
  };
  for (const ir::OpNode& op : g.ops())
    if (has_effect(op) || p.is_retained(op.id)) mark(op.id);
  while (!work.empty()) {
    OpId id = work.back();
    work.pop_back();
    for (EdgeId e : g.op(id).inputs) mark(g.edge(e).source);
  }
  return live;
}

std::string expr_key(const Expr& e) { return e.defined() ? e.str() : "-"; }

bool mentions(const Expr& e, const Dim& d) {
  return e.defined() && sym::depends_on(e, d.var);
}

Expr identity_phi(const Dims& domain) {
  std::vector<Expr> entries;
  for (const Dim& d : domain) entries.push_back(d.var);
  return seq(entries);
}

bool reads_same_point(const Graph& g, EdgeId id) {
  const ir::Edge& e = g.edge(id);
  const Dims& sink = g.op(e.sink).domain;
  const Dims& source = g.op(e.source).domain;
  if (e.cond.defined() || sink.size() != source.size()) return false;
  for (size_t k = 0; k < sink.size(); ++k)
    if (!(sink[k] == source[k]) || !e.phi.arg(k).same(sink[k].var)) return false;
  return true;
}

int redirect_reads(Graph& g, OpId from, int out, OpId to, int to_out) {
  int n = 0;
  for (const ir::OpNode& op : g.ops())
    for (EdgeId id : op.inputs) {
      ir::Edge& e = g.edge(id);
      if (e.source == from && e.source_output == out) {
        e.source = to;
        e.source_output = to_out;
        ++n;
      }
    }
  return n;
}

bool forward_input(Program& p, OpId op, int input) {
  Graph& g = p.graph;
  const ir::OpNode& node = g.op(op);
  if (p.is_retained(op) || node.cond.defined() || node.outputs.size() != 1) return false;
  EdgeId id = node.inputs[input];
  if (!reads_same_point(g, id)) return false;
  const ir::Edge& e = g.edge(id);
  const ir::TensorType &from = node.outputs[0], &to = g.op(e.source).outputs[e.source_output];
  if (from.dtype != to.dtype || !from.shape.same(to.shape)) return false;
  return redirect_reads(g, op, 0, e.source, e.source_output) > 0;
}

std::vector<std::optional<int64_t>> shifts(const Graph& g, EdgeId id) {
  const ir::Edge& e = g.edge(id);
  const Dims& sink = g.op(e.sink).domain;
  const Dims& source = g.op(e.source).domain;
  std::vector<std::optional<int64_t>> out(sink.size());
  for (size_t k = 0; k < sink.size(); ++k)
    for (size_t j = 0; j < source.size(); ++j) {
      if (!(source[j] == sink[k])) continue;
      const Expr& x = e.phi.arg(j);
      if (x.is_slice()) break;
      Expr back = x.same(sink[k].var) ? Expr(0) : sym::simplify(sink[k].var - x, sink);
      if (back.is_const()) out[k] = back.value();
    }
  return out;
}

std::optional<double> const_input(const Graph& g, const ir::OpNode& op, int input) {
  const ir::OpNode& src = input_op(g, op, input);
  if (src.kind != ir::OpKind::Const) return std::nullopt;
  return src.attrs.scalar;
}

const ir::OpNode& input_op(const Graph& g, const ir::OpNode& op, int input) {
  return g.op(g.edge(op.inputs[input]).source);
}

void compact(Program& p, const std::vector<bool>& keep) {
  const Graph& old = p.graph;
  std::vector<OpId> renum(old.num_ops(), -1);
  Graph g;
  for (const ir::OpNode& op : old.ops()) {
    if (!keep[op.id]) continue;
    ir::OpNode copy = op;
    copy.inputs.clear();
    renum[op.id] = g.add_op(std::move(copy));
  }
  for (const ir::OpNode& op : old.ops()) {
    if (!keep[op.id]) continue;
    for (EdgeId id : op.inputs) {
      const ir::Edge& e = old.edge(id);
      TEMPO_ASSERT(keep[e.source], "compact: ", op.describe(), " reads a removed op");
      g.add_edge(renum[op.id], renum[e.source], e.source_output, e.phi, e.cond);
    }
  }
  for (auto& [op, out] : p.retained) {
    TEMPO_ASSERT(renum[op] >= 0, "compact removed a retained op");
    op = renum[op];
  }
  for (OpId& id : p.op_map)
    if (id >= 0) id = renum[id];
  p.graph = std::move(g);
}

std::optional<int64_t> bound_size(const Expr& size, const Program& p) {
  std::vector<std::pair<Expr, Expr>> values;
  for (const auto& [name, v] : p.bound_values) values.emplace_back(Expr::bound(name), Expr(v));
  const Expr d = sym::simplify(sym::substitute(size, values), {});
  if (!d.is_const()) return std::nullopt;
  return d.value();
}

std::optional<int64_t> bytes_of(const ir::TensorType& t, size_t from_dim, const Program& p) {
  int64_t n = static_cast<int64_t>(ir::dtype_size(t.dtype));
  for (size_t k = from_dim; k < t.shape.rank(); ++k) {
    const std::optional<int64_t> d = bound_size(t.shape[k], p);
    if (!d) return std::nullopt;
    n *= *d;
  }
  return n;
}

}  // namespace tempo::passes
