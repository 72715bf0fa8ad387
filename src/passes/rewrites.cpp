#include "passes/rewrites.h"

#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "passes/graph_edit.h"

namespace tempo::passes {

namespace {

using ir::EdgeId;
using ir::OpId;
using ir::OpKind;
using ir::OpNode;
using Shape = std::vector<int64_t>;

// The region operator of each op kind a region may hold (split comes back as slices).
const char* region_op(OpKind k) {
  switch (k) {
    case OpKind::MatMul: return "matmul";
    case OpKind::Add: return "add";
    case OpKind::Mul: return "mul";
    case OpKind::Relu: return "relu";
    case OpKind::Tanh: return "tanh";
    case OpKind::Sigmoid: return "sigmoid";
    case OpKind::Cat: return "concat";
    case OpKind::Permute: return "transpose";
    case OpKind::Reshape: return "reshape";
    default: return nullptr;
  }
}

std::optional<OpKind> op_kind(const std::string& name) {
  for (OpKind k : {OpKind::MatMul, OpKind::Add, OpKind::Mul, OpKind::Relu, OpKind::Tanh,
                   OpKind::Sigmoid, OpKind::Cat, OpKind::Permute, OpKind::Reshape})
    if (name == region_op(k)) return k;
  return std::nullopt;
}

// The sizes of a float32 type with the program's bound values (T -> 128), if they are constants.
std::optional<Shape> static_shape(const ir::TensorType& t, const Program& p) {
  if (t.dtype != ir::DType::Float32) return std::nullopt;
  Shape s;
  for (const Expr& d : t.shape.dims) {
    const std::optional<int64_t> size = bound_size(d, p);
    if (!size) return std::nullopt;
    s.push_back(*size);
  }
  return s;
}

// Whether `op` can be a node of a region: a kind the region operators express with the same
// meaning (no broadcasting adds, matmuls whose batch dims match), float32 of constant shapes.
bool joins_region(const Program& p, const OpNode& op) {
  if (!region_op(op.kind) || op.cond.defined() || op.outputs.size() != 1 ||
      p.is_retained(op.id) || !static_shape(op.outputs[0], p) ||
      // A reshape comes back with constant sizes: only where it had them.
      (op.kind == OpKind::Reshape && !op.outputs[0].shape.is_static()))
    return false;
  std::vector<Shape> in;
  for (EdgeId e : op.inputs) {
    std::optional<Shape> s = static_shape(p.graph.input_type(e), p);
    if (!s) return false;
    in.push_back(*s);
  }
  switch (op.kind) {
    case OpKind::Add:
    case OpKind::Mul:
      return in[0] == in[1] && in[0] == *static_shape(op.outputs[0], p);
    case OpKind::MatMul:
      return in[0].size() >= 2 &&
             (in[1].size() == 2 ||
              (in[0].size() == in[1].size() &&
               std::equal(in[0].begin(), in[0].end() - 2, in[1].begin())));
    default:
      return true;
  }
}

// A region with what its nodes stand for in the SDG.
struct Built {
  RewriteRegion region;
  Dims domain;
  std::vector<ir::Edge> reads;  // per node: the read an input or weight stands for
  std::vector<std::pair<OpId, int>> outputs;  // per region output: the SDG value
  OpId first = -1;                            // names and lines for the new ops
};

// The region of the ops in `members` (one domain), nodes in topological order.
Built build_region(const Program& p, const std::vector<OpId>& members) {
  const ir::Graph& g = p.graph;
  Built b;
  b.domain = g.op(members.front()).domain;
  b.first = members.front();
  std::map<OpId, int> node_of;
  std::map<std::tuple<OpId, int, std::string, std::string>, int> input_of;
  auto is_member = [&](OpId id) {
    return std::binary_search(members.begin(), members.end(), id);
  };
  auto internal = [&](EdgeId e) { return is_member(g.edge(e).source) && reads_same_point(g, e); };
  // Depth first from each member: inputs before the ops that read them.
  std::vector<int> state(g.num_ops(), 0);
  std::vector<OpId> order;
  std::function<void(OpId)> visit = [&](OpId id) {
    if (state[id]) return;
    state[id] = 1;
    for (EdgeId e : g.op(id).inputs)
      if (internal(e)) visit(g.edge(e).source);
    order.push_back(id);
  };
  for (OpId id : members) visit(id);
  for (OpId id : order) {
    const OpNode& op = g.op(id);
    RewriteRegion::Node n;
    n.op = region_op(op.kind);
    if (op.kind == OpKind::Cat) {
      n.axis = op.attrs.ints.at(0);
      if (n.axis < 0) n.axis += static_cast<int64_t>(op.outputs[0].shape.rank());
    }
    if (op.kind == OpKind::Permute) n.ints = op.attrs.ints;
    if (op.kind == OpKind::Reshape) n.ints = *static_shape(op.outputs[0], p);
    for (EdgeId id_e : op.inputs) {
      const ir::Edge& e = g.edge(id_e);
      if (internal(id_e)) {
        n.inputs.push_back({node_of.at(e.source), e.source_output});
        continue;
      }
      auto key = std::make_tuple(e.source, e.source_output, expr_key(e.phi), expr_key(e.cond));
      auto [it, fresh] = input_of.emplace(key, static_cast<int>(b.region.nodes.size()));
      if (fresh) {
        RewriteRegion::Node in;
        const bool varies = std::all_of(b.domain.begin(), b.domain.end(), [&](const Dim& d) {
          return mentions(e.phi, d) || mentions(e.cond, d);
        });
        in.op = varies ? "input" : "weight";
        in.ints = *static_shape(g.input_type(id_e), p);
        in.name = cat("r", it->second);
        b.region.nodes.push_back(in);
        b.reads.push_back(e);
      }
      n.inputs.push_back({it->second, 0});
    }
    node_of[id] = static_cast<int>(b.region.nodes.size());
    b.region.nodes.push_back(n);
    b.reads.emplace_back();
  }
  // Outputs: values read outside the region (or not at the same point).
  for (const OpNode& reader : g.ops())
    for (EdgeId id_e : reader.inputs) {
      const ir::Edge& e = g.edge(id_e);
      if (!is_member(e.source) || (is_member(reader.id) && internal(id_e))) continue;
      std::pair<OpId, int> v{e.source, e.source_output};
      if (std::find(b.outputs.begin(), b.outputs.end(), v) != b.outputs.end()) continue;
      b.outputs.push_back(v);
      b.region.outputs.push_back({node_of.at(e.source), e.source_output});
    }
  b.region.where = cat("the ops over (", dims_str(b.domain), ") from ", g.op(b.first).describe());
  return b;
}

// The regions of the program: per domain, the ops that join one, if there are two or more.
std::vector<Built> regions(const Program& p) {
  std::map<std::string, std::vector<OpId>> by_domain;
  std::vector<std::string> order;
  const std::vector<bool> needed = needed_ops(p);
  for (const OpNode& op : p.graph.ops()) {
    if (!needed[op.id] || !joins_region(p, op)) continue;
    std::string key = dims_str(op.domain);
    if (!by_domain.count(key)) order.push_back(key);
    by_domain[key].push_back(op.id);
  }
  std::vector<Built> out;
  for (const std::string& key : order)
    if (by_domain[key].size() >= 2) out.push_back(build_region(p, by_domain[key]));
  return out;
}

// Whether ops that read each other at the same point form a cycle.
bool same_point_cycle(const ir::Graph& g) {
  std::vector<int> state(g.num_ops(), 0);  // 1: on the path, 2: done
  std::function<bool(OpId)> cyclic = [&](OpId id) {
    if (state[id]) return state[id] == 1;
    state[id] = 1;
    for (EdgeId e : g.op(id).inputs)
      if (reads_same_point(g, e) && cyclic(g.edge(e).source)) return true;
    state[id] = 2;
    return false;
  };
  for (size_t id = 0; id < g.num_ops(); ++id)
    if (cyclic(static_cast<OpId>(id))) return true;
  return false;
}

// Puts `r` (the policy's graph for `b`) in place of b's ops. Returns false, changing nothing
// that any op reads, where an output of `r` is not computed at the region's every point (an
// input or a weight-only value) or where reading it would close a cycle; the new ops are then
// left unread.
bool replace(Program& p, const Built& b, const RewriteRegion& r) {
  ir::Graph& g = p.graph;
  const std::string who = cat("the rewrite policy's graph for ", b.region.where);
  if (r.outputs.size() != b.outputs.size())
    internal_error(cat(who, " has ", r.outputs.size(), " outputs, not ", b.outputs.size()));
  std::map<std::string, int> read_of;
  for (size_t k = 0; k < b.region.nodes.size(); ++k)
    if (!b.region.nodes[k].name.empty()) read_of[b.region.nodes[k].name] = static_cast<int>(k);
  // Per node: its values (SDG op, output) or its read, and the region dims it varies along.
  struct Value {
    std::vector<std::pair<OpId, int>> outs;
    const ir::Edge* read = nullptr;
    std::vector<bool> dims;
  };
  std::vector<Value> values(r.nodes.size());
  const size_t rank = b.domain.size();
  auto sub_domain = [&](const std::vector<bool>& dims) {
    Dims d;
    for (size_t k = 0; k < rank; ++k)
      if (dims[k]) d.push_back(b.domain[k]);
    return d;
  };
  for (size_t k = 0; k < r.nodes.size(); ++k) {
    const RewriteRegion::Node& n = r.nodes[k];
    Value& v = values[k];
    v.dims.assign(rank, false);
    if (n.op == "input" || n.op == "weight") {
      auto it = read_of.find(n.name);
      if (it == read_of.end()) internal_error(cat(who, " reads an unknown input '", n.name, "'"));
      v.read = &b.reads[it->second];
      for (size_t d = 0; d < rank; ++d)
        v.dims[d] = mentions(v.read->phi, b.domain[d]) || mentions(v.read->cond, b.domain[d]);
      continue;
    }
    for (auto [j, out] : n.inputs) {
      if (j < 0 || j >= static_cast<int>(k))
        internal_error(cat(who, " is not in topological order"));
      for (size_t d = 0; d < rank; ++d) v.dims[d] = v.dims[d] || values[j].dims[d];
    }
    // A node of weights alone runs over the dims they vary along (once per layer, not per step).
    const Dims domain = sub_domain(v.dims);
    // Adds one op over `domain` reading the node's inputs; returns it.
    auto add = [&](OpKind kind, ir::Attrs attrs) {
      OpNode op;
      op.kind = kind;
      op.attrs = std::move(attrs);
      op.domain = domain;
      op.name = g.op(b.first).name;
      op.loc = g.op(b.first).loc;
      const OpId id = g.add_op(std::move(op));
      std::vector<ir::TensorType> types;
      for (auto [j, out] : n.inputs) {
        const Value& in = values[j];
        EdgeId e = in.read ? g.add_edge(id, in.read->source, in.read->source_output,
                                        in.read->phi, in.read->cond)
                           : g.add_edge(id, in.outs.at(out).first, in.outs.at(out).second,
                                        identity_phi(sub_domain(in.dims)));
        types.push_back(g.input_type(e));
      }
      OpNode& made = g.op(id);
      made.outputs = ir::infer_types(kind, made.attrs, types, made.domain, who);
      return id;
    };
    if (n.op == "split") {
      if (n.inputs.size() != 1) internal_error(cat(who, " has a split of ", n.inputs.size()));
      int64_t start = 0;
      for (int64_t size : n.ints) {
        ir::Attrs a;
        a.ints = {n.axis};
        a.exprs = {Expr(start), Expr(start + size)};
        v.outs.push_back({add(OpKind::Slice, a), 0});
        start += size;
      }
      continue;
    }
    std::optional<OpKind> kind = op_kind(n.op);
    if (!kind) internal_error(cat(who, " has an unknown operator '", n.op, "'"));
    ir::Attrs a;
    if (*kind == OpKind::Cat) a.ints = {n.axis};
    if (*kind == OpKind::Permute) a.ints = n.ints;
    if (*kind == OpKind::Reshape)
      for (int64_t s : n.ints) a.exprs.emplace_back(s);
    v.outs.push_back({add(*kind, a), 0});
  }
  // Every output must be a new op over the whole domain, of the type the old one had.
  std::vector<std::pair<OpId, int>> now;
  for (size_t j = 0; j < r.outputs.size(); ++j) {
    const Value& v = values.at(r.outputs[j].first);
    if (v.read || v.dims != std::vector<bool>(rank, true)) return false;
    now.push_back(v.outs.at(r.outputs[j].second));
    const auto [old_op, old_out] = b.outputs[j];
    if (!ir::same_type(g.op(now.back().first).outputs[now.back().second],
                       g.op(old_op).outputs[old_out], b.domain))
      internal_error(cat(who, ": output ", j, " is ", g.op(now.back().first).outputs[0].str(),
                         ", not ", g.op(old_op).outputs[old_out].str()));
  }
  // The readers move to the new ops, unless that closes a cycle: an input of the region (a
  // softmax outside it) computed from one of its outputs, which a new op now reads first.
  std::vector<std::tuple<EdgeId, OpId, int>> moved;
  for (size_t j = 0; j < now.size(); ++j)
    for (size_t id = 0; id < g.num_edges(); ++id) {
      ir::Edge& e = g.edge(static_cast<EdgeId>(id));
      if (std::make_pair(e.source, e.source_output) != b.outputs[j]) continue;
      moved.emplace_back(e.id, e.source, e.source_output);
      std::tie(e.source, e.source_output) = now[j];
    }
  if (!same_point_cycle(g)) return true;
  for (auto [id, source, out] : moved) std::tie(g.edge(id).source, g.edge(id).source_output) =
      std::make_pair(source, out);
  return false;
}

}  // namespace

bool apply_rewrites(Program& p) {
  if (!p.options.rewrite_policy) return false;
  bool changed = false;
  for (const Built& b : regions(p)) {
    const RewriteChoice c = p.options.rewrite_policy(b.region);
    const bool done = c.graph && replace(p, b, *c.graph);
    if (p.options.verbose)
      std::cerr << "[tempo] rewrites: " << b.region.where << ": " << c.why
                << (done        ? ": replaced"
                    : c.graph ? ": kept (the graph cannot replace it in place)"
                              : ": kept")
                << "\n";
    changed |= done;
  }
  return changed;
}

}  // namespace tempo::passes
