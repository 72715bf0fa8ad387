#include "passes/lookahead.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "passes/graph_edit.h"
#include "symbolic/simplify.h"

namespace tempo::passes {

namespace {

using ir::EdgeId;
using ir::Graph;
using ir::OpId;
using ir::OpNode;

int position(const Dims& domain, const Dim& d) {
  for (size_t k = 0; k < domain.size(); ++k)
    if (domain[k] == d) return static_cast<int>(k);
  return -1;
}

}  // namespace

bool carried_outside(const Graph& g, const ir::Edge& e, const Dims& outer) {
  const Dims& sink = g.op(e.sink).domain;
  const Dims& source = g.op(e.source).domain;
  for (size_t k = 0; k < source.size(); ++k) {
    const Dim& o = source[k];
    if (position(outer, o) < 0 || position(sink, o) < 0 || e.phi.arg(k).is_slice()) continue;
    Expr dist = sym::simplify(o.var - e.phi.arg(k), sink);
    if (dist.is_const() && dist.value() > 0) return true;
  }
  return false;
}

namespace {

// Strongly connected components (Tarjan, iterative) of the graph of edges `keep` accepts.
std::vector<int> components(const Graph& g, const std::function<bool(const ir::Edge&)>& keep) {
  const int n = static_cast<int>(g.num_ops());
  std::vector<std::vector<OpId>> succ(n);
  for (const OpNode& op : g.ops())
    for (EdgeId id : op.inputs)
      if (keep(g.edge(id))) succ[g.edge(id).source].push_back(op.id);
  std::vector<int> index(n, -1), low(n, 0), comp(n, -1);
  std::vector<bool> on_stack(n, false);
  std::vector<OpId> stack;
  int next = 0, ncomp = 0;
  for (OpId root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    std::vector<std::pair<OpId, size_t>> call{{root, 0}};
    index[root] = low[root] = next++;
    stack.push_back(root);
    on_stack[root] = true;
    while (!call.empty()) {
      auto& [v, i] = call.back();
      if (i < succ[v].size()) {
        OpId w = succ[v][i++];
        if (index[w] < 0) {
          index[w] = low[w] = next++;
          stack.push_back(w);
          on_stack[w] = true;
          call.emplace_back(w, 0);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        for (OpId w = -1; w != v;) {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          comp[w] = ncomp;
        }
        ++ncomp;
      }
      OpId done = v;
      call.pop_back();
      if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[done]);
    }
  }
  return comp;
}

}  // namespace

std::vector<bool> recurrent_along(const Graph& g, const Dims& outer) {
  auto ordered = [&](const ir::Edge& e) { return carried_outside(g, e, outer); };
  std::vector<int> comp = components(g, [&](const ir::Edge& e) { return !ordered(e); });
  std::vector<bool> cyclic(g.num_ops(), false);
  for (const OpNode& op : g.ops())
    for (EdgeId id : op.inputs) {
      const ir::Edge& e = g.edge(id);
      if (comp[e.source] == comp[e.sink] && !ordered(e)) cyclic[comp[e.sink]] = true;
    }
  std::vector<bool> out(g.num_ops(), false);
  for (const OpNode& op : g.ops()) out[op.id] = cyclic[comp[op.id]];
  return out;
}

namespace {

// The last point along d that edge e reads, as steps ahead of the sink's own point: x[t + c]
// reads c ahead, x[a:t + c] and x[a:min(t + c, T)] read c - 1 ahead; anything else (x[t:T], a
// fixed point) is kWhole.
int64_t reads_ahead(const Graph& g, const ir::Edge& e, const Dim& d) {
  const int at = position(g.op(e.source).domain, d);
  const Dims& sink = g.op(e.sink).domain;
  if (at < 0 || !e.phi.is_seq() || at >= static_cast<int>(e.phi.size()) ||
      position(sink, d) < 0)
    return kWhole;
  auto offset = [&](const Expr& x) -> std::optional<int64_t> {
    if (!mentions(x, d)) return std::nullopt;
    Expr c = sym::simplify(x - d.var, sink);
    if (!c.is_const()) return std::nullopt;
    return c.value();
  };
  const Expr& entry = e.phi.arg(static_cast<size_t>(at));
  if (!entry.is_slice()) return offset(entry).value_or(kWhole);
  const Expr& stop = entry.arg(1);
  std::optional<int64_t> last = offset(stop);
  if (!last && stop.op() == sym::Op::Min)  // min(t + c, T) <= t + c
    for (const Expr& arg : stop.args())
      if (auto c = offset(arg)) last = last ? std::min(*last, *c) : *c;
  return last ? *last - 1 : kWhole;
}

}  // namespace

std::vector<int64_t> recurrence_lookahead(const Graph& g, const Dim& d, const Dims& outer) {
  // The recurrences along d: cycles (not ordered by an outer dimension) through a read of another
  // point of d, s[t - 1]. A cycle along another dimension (the steps of a rollout, when d is the
  // iteration) is read at the same point of d, as any op is.
  auto ordered = [&](const ir::Edge& e) { return carried_outside(g, e, outer); };
  std::vector<int> comp = components(g, [&](const ir::Edge& e) { return !ordered(e); });
  std::vector<bool> cycle_along_d(g.num_ops(), false);  // per component
  for (const ir::Edge& e : g.edges()) {
    if (comp[e.source] != comp[e.sink] || ordered(e)) continue;
    const int at = position(g.op(e.source).domain, d);
    if (at >= 0 && position(g.op(e.sink).domain, d) >= 0 && e.phi.is_seq() &&
        !e.phi.arg(static_cast<size_t>(at)).same(d.var))
      cycle_along_d[static_cast<size_t>(comp[e.sink])] = true;
  }
  std::vector<bool> recurrent(g.num_ops(), false);
  std::vector<int64_t> ahead(g.num_ops(), kNoRecurrence);
  for (const OpNode& op : g.ops())
    if (cycle_along_d[static_cast<size_t>(comp[op.id])]) {
      recurrent[op.id] = true;
      ahead[op.id] = 0;
    }
  // A fixed point: look-aheads only grow; other ops are acyclic along d (a cycle along another
  // dimension reads the same point of d, so it adds nothing), so this ends, and a value that
  // would keep growing is capped at kWhole.
  const int64_t cap = static_cast<int64_t>(g.num_ops()) + 1;
  for (bool changed = true; changed;) {
    changed = false;
    for (const OpNode& op : g.ops()) {
      if (recurrent[op.id]) continue;
      const bool along = position(op.domain, d) >= 0;
      int64_t need = kNoRecurrence;
      for (EdgeId id : op.inputs) {
        const ir::Edge& e = g.edge(id);
        const int64_t src = ahead[e.source];
        if (src == kNoRecurrence || carried_outside(g, e, outer)) continue;
        int64_t here = kWhole;
        if (along && src != kWhole) {
          const int64_t r = reads_ahead(g, e, d);
          if (r != kWhole && src + r < cap) here = src + r;
        }
        need = std::max(need, here);
      }
      if (need > ahead[op.id]) {
        ahead[op.id] = need;
        changed = true;
      }
    }
  }
  return ahead;
}

}  // namespace tempo::passes
