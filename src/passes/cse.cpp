#include "passes/cse.h"

#include <sstream>
#include <unordered_map>

#include "passes/graph_edit.h"

namespace tempo::passes {

namespace {

// Placeholders (merges) keep their identity: their branches may still be rewired.
bool mergeable(const ir::OpNode& op) {
  return !has_effect(op) && op.kind != ir::OpKind::Merge;
}

// Everything that determines an op's value, as a string (op ids of inputs included, so equal
// keys mean equal values once the inputs have been merged).
std::string key(const ir::Graph& g, const ir::OpNode& op) {
  std::ostringstream os;
  const ir::Attrs& a = op.attrs;
  os.precision(17);
  os << static_cast<int>(op.kind) << '|' << expr_key(op.cond) << '|' << static_cast<int>(a.dtype)
     << '|' << a.keepdim << '|' << a.scalar << '|';
  for (const Dim& d : op.domain) os << d.name() << ',';
  os << '|';
  for (int64_t v : a.ints) os << v << ',';
  os << '|';
  for (const Expr& e : a.exprs) os << e.str() << ',';
  os << '|';
  for (const ir::TensorType& t : op.outputs) os << t.str() << ',';
  for (ir::EdgeId id : op.inputs) {
    const ir::Edge& e = g.edge(id);
    os << "|%" << e.source << '.' << e.source_output << expr_key(e.phi) << expr_key(e.cond);
  }
  return os.str();
}

}  // namespace

bool eliminate_common_subexpressions(Program& p) {
  ir::Graph& g = p.graph;
  bool changed = false;
  std::vector<bool> merged(g.num_ops(), false);  // left unread for DCE
  // Merging an op can make its readers equal: repeat until nothing merges.
  for (bool again = true; again;) {
    again = false;
    std::unordered_map<std::string, ir::OpId> seen;
    for (size_t k = 0; k < g.num_ops(); ++k) {
      const ir::OpNode& op = g.op(static_cast<ir::OpId>(k));
      if (merged[k] || !mergeable(op)) continue;
      auto [it, fresh] = seen.emplace(key(g, op), op.id);
      if (fresh || p.is_retained(op.id)) continue;
      for (size_t out = 0; out < op.outputs.size(); ++out)
        redirect_reads(g, op.id, static_cast<int>(out), it->second, static_cast<int>(out));
      merged[k] = again = changed = true;
    }
  }
  return changed;
}

}  // namespace tempo::passes
