// Context: dimensions, the generic op builder, sources, placeholders and UDFs.
#include "api/context.h"

#include <algorithm>
#include <cctype>

#include "symbolic/simplify.h"
#include "util/error.h"

namespace tempo {

namespace {

std::string dims_list(const Dims& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i].name();
  return s + ")";
}

}  // namespace

Dim Context::dim(const std::string& var, const std::string& bound, Loc loc) {
  if (var.empty() || bound.empty())
    throw UserError(cat("dimension names must not be empty (at ", where(loc), ")"));
  if (var == bound)
    throw UserError(
        cat("dimension ", var, " and its bound need different names (at ", where(loc), ")"));
  for (const Dim& d : dims_)
    for (const std::string& n : {var, bound})
      if (d.var.name() == n || d.bound.name() == n)
        throw UserError(cat("dimension name '", n, "' is already used by dimension ", d.name(), ":",
                            d.bound.name(), " (at ", where(loc), ")"));
  dims_.emplace_back(var, bound);
  return dims_.back();
}

Dims Context::ordered(const Dims& dims) const {
  for (const Dim& d : dims)
    if (std::find(dims_.begin(), dims_.end(), d) == dims_.end())
      throw UserError(cat("dimension ", d.var.defined() ? d.name() : "<undefined>",
                          " is not declared in this context (declared: ", dims_list(dims_), ")"));
  Dims out;
  for (const Dim& d : dims_)
    if (std::find(dims.begin(), dims.end(), d) != dims.end()) out.push_back(d);
  return out;
}

Dims Context::domain_union(const Dims& a, const Dims& b) const {
  Dims all = a;
  all.insert(all.end(), b.begin(), b.end());
  return ordered(all);
}

ReadSubstitution::ReadSubstitution(Context& ctx, std::vector<std::pair<RT, RT>> pairs)
    : ctx_(&ctx), count_(pairs.size()) {
  for (auto& [from, to] : pairs) {
    if (!from.defined() || !to.defined())
      throw UserError("read substitution of or by an undefined RT");
    if (&from.ctx() != &ctx || &to.ctx() != &ctx)
      throw UserError("read substitution across Contexts");
    if (from.dtype() != to.dtype() || !from.shape().same(to.shape()))
      throw UserError(cat("read substitution: ", ctx.graph().op(to.op()).describe(), " of type ",
                          TensorType{to.dtype(), to.shape()}.str(), " cannot replace ",
                          ctx.graph().op(from.op()).describe(), " of type ",
                          TensorType{from.dtype(), from.shape()}.str()));
    ctx.substitutions_.emplace_back(std::move(from), std::move(to));
  }
}

ReadSubstitution::~ReadSubstitution() {
  ctx_->substitutions_.resize(ctx_->substitutions_.size() - count_);
}

const RT& Context::substituted(const RT& in) const {
  if (in.has_pending_index()) return in;
  for (auto it = substitutions_.rbegin(); it != substitutions_.rend(); ++it)
    if (it->first.op() == in.op() && it->first.output() == in.output()) return it->second;
  return in;
}

std::vector<RT> Context::add_op(ir::OpKind kind, ir::Attrs attrs,
                                const std::vector<RT>& given_inputs, Loc loc, Dims extra_domain) {
  std::vector<RT> inputs;
  for (const RT& in : given_inputs) inputs.push_back(in.defined() ? substituted(in) : in);
  ir::OpNode op;
  op.kind = kind;
  op.name = ir::default_op_name(kind);
  op.loc = loc;
  op.attrs = std::move(attrs);
  Dims domain = ordered(extra_domain);
  std::vector<TensorType> in_types;
  for (const RT& in : inputs) {
    if (!in.defined())
      throw UserError(cat(op_kind_name(kind), " at ", where(loc), ": an input is an undefined RT"));
    if (&in.ctx() != this)
      throw UserError(cat(op_kind_name(kind), " at ", where(loc), ": input ",
                          graph_.op(in.op()).describe(), " belongs to another Context"));
    domain = domain_union(domain, in.domain());
    if (in.cond().defined()) op.cond = op.cond.defined() ? (op.cond && in.cond()) : in.cond();
    in_types.push_back(TensorType{in.dtype(), in.shape()});
  }
  op.domain = domain;
  op.outputs = ir::infer_types(kind, op.attrs, in_types, domain, op.describe());
  ir::OpId id = graph_.add_op(std::move(op));
  for (const RT& in : inputs) graph_.add_edge(id, in.op(), in.output(), in.read_phi());
  const ir::OpNode& node = graph_.op(id);
  std::vector<RT> out;
  for (size_t k = 0; k < node.outputs.size(); ++k)
    out.emplace_back(this, id, static_cast<int>(k), node.domain, Expr(), node.cond);
  return out;
}

// ---- sources ---------------------------------------------------------------------------------

namespace {
// The context dims whose variables occur in the expressions.
Dims dims_in(const Context& ctx, const std::vector<Expr>& es, Loc loc) {
  Dims out;
  for (const Expr& e : es) {
    if (!e.defined()) continue;
    for (const Expr& s : sym::free_symbols(e)) {
      bool found = false;
      for (const Dim& d : ctx.dims()) {
        if (d.var.same(s)) {
          out.push_back(d);
          found = true;
        } else if (d.bound.same(s)) {
          found = true;
        }
      }
      if (!found)
        throw UserError(cat("symbol ", s.str(), " in `", e.str(), "` at ", where(loc),
                            " is not a dimension of this context"));
    }
  }
  return ctx.ordered(out);
}
}  // namespace

RT Context::constant(double value, Shape shape, DType dtype, Dims domain, Loc loc) {
  ir::Attrs a;
  a.exprs = shape.dims;
  a.scalar = value;
  a.dtype = dtype;
  Dims extra = domain_union(domain, dims_in(*this, shape.dims, loc));
  return add_op1(ir::OpKind::Const, std::move(a), {}, loc, extra);
}

RT Context::zeros(Shape shape, DType dtype, Loc loc) {
  return constant(0.0, std::move(shape), dtype, {}, loc);
}

RT Context::ones(Shape shape, DType dtype, Loc loc) {
  return constant(1.0, std::move(shape), dtype, {}, loc);
}

RT Context::rand_uniform(Shape shape, Dims domain, DType dtype, Loc loc) {
  ir::Attrs a;
  a.exprs = shape.dims;
  a.dtype = dtype;
  a.ints = {random_streams_++};  // its stream
  Dims extra = domain_union(domain, dims_in(*this, shape.dims, loc));
  return add_op1(ir::OpKind::RandUniform, std::move(a), {}, loc, extra);
}

RT Context::rand_normal(Shape shape, Dims domain, DType dtype, Loc loc) {
  ir::Attrs a;
  a.exprs = shape.dims;
  a.dtype = dtype;
  a.ints = {random_streams_++};  // its stream
  Dims extra = domain_union(domain, dims_in(*this, shape.dims, loc));
  return add_op1(ir::OpKind::RandNormal, std::move(a), {}, loc, extra);
}

RT Context::arange(const Expr& n, DType dtype, Loc loc) {
  if (!n.defined() || n.type() != sym::Type::Int)
    throw UserError(cat("arange at ", where(loc), " needs an integer size"));
  ir::Attrs a;
  a.exprs = {n};
  a.dtype = dtype;
  return add_op1(ir::OpKind::Arange, std::move(a), {}, loc, dims_in(*this, {n}, loc));
}

RT Context::symbol(const Expr& e, Loc loc) {
  if (!e.defined() || e.type() != sym::Type::Int)
    throw UserError(cat("symbol() at ", where(loc), " needs an integer expression"));
  ir::Attrs a;
  a.exprs = {e};
  a.dtype = DType::Int64;
  return add_op1(ir::OpKind::EvalSymbol, std::move(a), {}, loc, dims_in(*this, {e}, loc));
}

RT Context::tensor(HostTensor value, Loc loc) {
  TensorType type{value.dtype, {}};
  for (int64_t d : value.shape) type.shape.dims.emplace_back(d);
  auto udf = std::make_shared<ir::Udf>();
  udf->name = "tensor";
  udf->outputs = {type};
  udf->constant = std::make_shared<const HostTensor>(std::move(value));
  udf->fn = [constant = udf->constant](const std::vector<HostTensor>&,
                                       const std::vector<int64_t>&) {
    return std::vector<HostTensor>{*constant};
  };
  ir::Attrs a;
  a.udf = std::move(udf);
  return add_op1(ir::OpKind::Udf, std::move(a), {}, loc);
}

RT Context::placeholder(TensorType type, Dims domain, const std::string& name, Loc loc) {
  ir::OpNode op;
  op.kind = ir::OpKind::Merge;
  op.domain = ordered(domain);
  op.outputs = {std::move(type)};
  op.name = name.empty() ? "placeholder" : name;
  op.loc = loc;
  ir::OpId id = graph_.add_op(std::move(op));
  return RT(this, id, 0, graph_.op(id).domain);
}

std::vector<RT> Context::udf(const std::string& name, ir::Udf::fn_type fn,
                             const std::vector<RT>& inputs, std::vector<TensorType> outputs,
                             Dims domain, Loc loc) {
  if (!fn) throw UserError(cat("udf '", name, "' at ", where(loc), " has no function"));
  auto u = std::make_shared<ir::Udf>();
  u->name = name;
  u->fn = std::move(fn);
  u->outputs = std::move(outputs);
  ir::Attrs a;
  a.udf = std::move(u);
  std::vector<RT> out = add_op(ir::OpKind::Udf, std::move(a), inputs, loc, std::move(domain));
  // add_op returns no RT for a sink; find the op it added to name it.
  graph_.op(static_cast<ir::OpId>(graph_.num_ops()) - 1).name = name.empty() ? "udf" : name;
  return out;
}

}  // namespace tempo
