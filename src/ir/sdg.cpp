#include "ir/sdg.h"

#include <algorithm>
#include <sstream>

#include "symbolic/simplify.h"
#include "util/error.h"

namespace tempo::ir {

namespace {

std::string dims_list(const Dims& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i].name();
  return s + ")";
}

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string exprs_str(const std::vector<Expr>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i].str();
  return s + "]";
}

// The attributes an op kind uses, compactly, for dumps.
std::string attrs_str(const OpNode& op) {
  std::vector<std::string> parts;
  const Attrs& a = op.attrs;
  if (!a.ints.empty()) parts.push_back("ints=" + ints_str(a.ints));
  if (!a.exprs.empty()) parts.push_back("exprs=" + exprs_str(a.exprs));
  switch (op.kind) {
    case OpKind::Const:
    case OpKind::Pad:
    case OpKind::DiscountedSum:
    case OpKind::DiscountedCumSum: {
      std::ostringstream os;
      os << a.scalar;
      parts.push_back("scalar=" + os.str());
      break;
    }
    default: break;
  }
  switch (op.kind) {
    case OpKind::Const:
    case OpKind::Cast:
    case OpKind::RandUniform:
    case OpKind::RandNormal:
    case OpKind::Arange:
      parts.push_back(std::string("dtype=") + dtype_name(a.dtype));
      break;
    default: break;
  }
  if (a.keepdim) parts.push_back("keepdim");
  if (a.udf) parts.push_back("udf=" + a.udf->name);
  if (a.region) {
    std::string body;
    for (const OpNode& b : a.region->body.ops())
      if (b.kind != OpKind::Param) body += (body.empty() ? "" : " ") + std::string(op_kind_name(b.kind));
    parts.push_back("region=[" + body + "]");
  }
  if (parts.empty()) return "";
  std::string s = " {";
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
  return s + "}";
}

std::string types_str(const std::vector<TensorType>& ts) {
  if (ts.size() == 1) return ts[0].str();
  std::string s = "(";
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + ts[i].str();
  return s + ")";
}

std::string edge_ref(const Edge& e) {
  std::string s = cat("%", e.source);
  if (e.source_output != 0) s += cat(".", e.source_output);
  s += e.phi.defined() ? e.phi.str() : "[?]";
  return s;
}

std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

bool has_var(const Dims& dims, const Expr& v) {
  return std::any_of(dims.begin(), dims.end(), [&](const Dim& d) { return d.var.same(v); });
}

// Every variable of e is a variable of `dims` (bounds may appear freely).
void check_vars(const Expr& e, const Dims& dims, const OpNode& op, const char* what) {
  for (const Expr& s : sym::free_symbols(e))
    if (s.is_var() && !has_var(dims, s))
      throw UserError(cat(op.describe(), ": ", what, " `", e.str(), "` uses variable ", s.str(),
                          " which is not in its domain ", dims_list(dims)));
}

}  // namespace

bool same_type(const TensorType& a, const TensorType& b, const Dims& dims) {
  if (a.dtype != b.dtype || a.shape.rank() != b.shape.rank()) return false;
  for (size_t i = 0; i < a.shape.rank(); ++i) {
    if (a.shape[i].same(b.shape[i])) continue;
    if (!sym::simplify(a.shape[i], dims).same(sym::simplify(b.shape[i], dims))) return false;
  }
  return true;
}


std::string OpNode::describe() const {
  std::string at = loc.line ? where(loc) : std::string("<unknown>");
  return cat("RT '", name, "' (", op_kind_name(kind), ") created at ", at);
}

OpId Graph::add_op(OpNode op) {
  TEMPO_ASSERT(op.inputs.empty(), "add_op with inputs; use add_edge");
  op.id = static_cast<OpId>(ops_.size());
  ops_.push_back(std::move(op));
  return ops_.back().id;
}

EdgeId Graph::add_edge(OpId sink, OpId source, int source_output, Expr phi, Expr cond) {
  TEMPO_ASSERT(sink >= 0 && sink < static_cast<OpId>(ops_.size()), "bad sink ", sink);
  TEMPO_ASSERT(source >= 0 && source < static_cast<OpId>(ops_.size()), "bad source ", source);
  Edge e;
  e.id = static_cast<EdgeId>(edges_.size());
  e.sink = sink;
  e.source = source;
  e.source_output = source_output;
  e.phi = std::move(phi);
  e.cond = std::move(cond);
  edges_.push_back(e);
  ops_[sink].inputs.push_back(e.id);
  return e.id;
}

std::vector<EdgeId> Graph::out_edges(OpId id) const {
  std::vector<EdgeId> out;
  for (const Edge& e : edges_)
    if (e.source == id) out.push_back(e.id);
  return out;
}

TensorType Graph::input_type(EdgeId id) const {
  const Edge& e = edges_[id];
  const OpNode& src = ops_[e.source];
  TEMPO_ASSERT(e.source_output >= 0 && e.source_output < static_cast<int>(src.outputs.size()),
               "edge ", id, " reads output ", e.source_output, " of ", src.describe());
  TensorType t = src.outputs[e.source_output];
  if (!e.phi.defined() || !e.phi.is_seq()) return t;
  const Dims& dims = ops_[e.sink].domain;
  std::vector<Expr> lead;
  for (const Expr& entry : e.phi.args()) {
    if (!entry.is_slice()) continue;
    const Expr &start = entry.arg(0), &stop = entry.arg(1), &step = entry.arg(2);
    Expr size = step.is_const(1) ? stop - start : (stop - start + step - 1) / step;
    lead.push_back(sym::simplify(size, dims));
  }
  if (!lead.empty()) t.shape.dims.insert(t.shape.dims.begin(), lead.begin(), lead.end());
  return t;
}

std::string Graph::str() const {
  std::string s;
  for (const OpNode& op : ops_) {
    s += cat("%", op.id, " = ", op_kind_name(op.kind), "(");
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const Edge& e = edges_[op.inputs[i]];
      s += (i ? ", " : "") + edge_ref(e);
      if (e.cond.defined()) s += " if " + e.cond.str();
    }
    s += ")" + attrs_str(op) + " : " + types_str(op.outputs);
    if (!op.domain.empty()) s += " over " + dims_list(op.domain);
    if (op.cond.defined()) s += " where " + op.cond.str();
    s += "  # " + op.name;
    if (op.loc.line) s += " @ " + where(op.loc);
    s += "\n";
  }
  return s;
}

std::string Graph::dot() const {
  std::string s = "digraph sdg {\n  node [shape=box, fontname=\"monospace\"];\n";
  for (const OpNode& op : ops_) {
    std::string label = cat("%", op.id, " ", op_kind_name(op.kind));
    if (!op.name.empty()) label += " '" + op.name + "'";
    label += "\n" + types_str(op.outputs);
    if (!op.domain.empty()) label += " over " + dims_list(op.domain);
    if (op.cond.defined()) label += "\nwhere " + op.cond.str();
    s += "  n" + std::to_string(op.id) + " [label=\"" + dot_escape(label) + "\"];\n";
  }
  for (const Edge& e : edges_) {
    std::string label = e.phi.defined() ? e.phi.str() : "";
    if (e.source_output) label = "out " + std::to_string(e.source_output) + ": " + label;
    if (e.cond.defined()) label += "\nif " + e.cond.str();
    s += "  n" + std::to_string(e.source) + " -> n" + std::to_string(e.sink) + " [label=\"" +
         dot_escape(label) + "\"];\n";
  }
  return s + "}\n";
}

void validate(const Graph& g) {
  for (const OpNode& op : g.ops()) {
    int nin = op_kind_inputs(op.kind), nout = op_kind_outputs(op.kind);
    if (nin >= 0 && static_cast<int>(op.inputs.size()) != nin)
      throw UserError(cat(op.describe(), " has ", op.inputs.size(), " inputs; ",
                          op_kind_name(op.kind), " takes ", nin));
    if (op.kind == OpKind::Udf) {
      if (!op.attrs.udf) throw UserError(cat(op.describe(), " has no user function"));
      nout = static_cast<int>(op.attrs.udf->outputs.size());
    }
    if (nout >= 0 && static_cast<int>(op.outputs.size()) != nout)
      throw UserError(cat(op.describe(), " has ", op.outputs.size(), " outputs; expected ", nout));
    if (op.cond.defined()) check_vars(op.cond, op.domain, op, "condition");

    std::vector<TensorType> in_types;
    for (EdgeId eid : op.inputs) {
      const Edge& e = g.edge(eid);
      if (e.sink != op.id) internal_error(cat("edge ", eid, " listed as input of %", op.id));
      const OpNode& src = g.op(e.source);
      if (!e.phi.defined() || !e.phi.is_seq())
        throw UserError(cat(op.describe(), " reads ", src.describe(), " without an index"));
      if (e.phi.size() != src.domain.size())
        throw UserError(cat(op.describe(), " reads ", src.describe(), " at ", e.phi.str(), " (",
                            e.phi.size(), " entries) but its domain ", dims_list(src.domain),
                            " has ", src.domain.size(), " dimensions"));
      check_vars(e.phi, op.domain, op, "index");
      if (e.cond.defined()) {
        if (op.kind != OpKind::Merge)
          throw UserError(cat(op.describe(), ": only branches of a merge have a condition"));
        check_vars(e.cond, op.domain, op, "branch condition");
      }
      if (e.source_output < 0 || e.source_output >= static_cast<int>(src.outputs.size()))
        throw UserError(cat(op.describe(), " reads output ", e.source_output, " of ",
                            src.describe(), " which has ", src.outputs.size()));
      in_types.push_back(g.input_type(eid));
    }

    if (op.kind == OpKind::Param) continue;  // typed by its region's Fused op
    if (op.kind == OpKind::Merge) {
      if (op.inputs.empty()) throw UserError(cat(op.describe(), " is never defined"));
      for (size_t i = 0; i < op.inputs.size(); ++i)
        if (!same_type(in_types[i], op.outputs[0], op.domain))
          throw UserError(cat(op.describe(), " has type ", op.outputs[0].str(), " but branch ", i,
                              " (", g.op(g.edge(op.inputs[i]).source).describe(), ") has type ",
                              in_types[i].str()));
      continue;
    }
    std::vector<TensorType> want = infer_types(op.kind, op.attrs, in_types, op.domain,
                                               op.describe());
    bool ok = want.size() == op.outputs.size();
    for (size_t i = 0; ok && i < want.size(); ++i) ok = same_type(want[i], op.outputs[i], op.domain);
    if (!ok)
      throw UserError(cat(op.describe(), " records output type ", types_str(op.outputs),
                          " but its inputs give ", types_str(want)));
  }
}

size_t DrawKey::leading_axes() const {
  return static_cast<size_t>(std::count_if(sources.begin(), sources.end(),
                                           [](int64_t s) { return s >= 0; }));
}

DrawKey draw_key(const OpNode& draw) {
  const std::vector<int64_t>& ints = draw.attrs.ints;
  const size_t dims = draw.domain.size(), m = ints.empty() ? 0 : ints.size() - 1;
  DrawKey key;
  key.stream = ints.empty() ? draw.id : ints[0];
  // Vectorized, its n key dims are more than the domain's: 2n entries, never `dims` of them.
  if (m > dims && m % 2 == 0) {
    const auto n = static_cast<ptrdiff_t>(m / 2);
    key.offsets.assign(ints.begin() + 1, ints.begin() + 1 + n);
    key.sources.assign(ints.begin() + 1 + n, ints.end());
    return key;
  }
  if (m != 0 && m != dims)
    internal_error(cat(draw.describe(), ": ", m, " random offsets for ", dims, " dims"));
  key.offsets.assign(dims, 0);
  if (m > 0) std::copy(ints.begin() + 1, ints.end(), key.offsets.begin());
  for (size_t k = 0; k < dims; ++k) key.sources.push_back(-1 - static_cast<int64_t>(k));
  return key;
}

void set_draw_key(Attrs& attrs, const DrawKey& key) {
  attrs.ints = {key.stream};
  attrs.ints.insert(attrs.ints.end(), key.offsets.begin(), key.offsets.end());
  attrs.ints.insert(attrs.ints.end(), key.sources.begin(), key.sources.end());
}

}  // namespace tempo::ir
