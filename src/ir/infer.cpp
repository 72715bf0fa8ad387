// Shape and dtype inference: one switch over the op kinds.
#include <algorithm>

#include "ir/sdg.h"
#include "symbolic/simplify.h"
#include "util/error.h"

namespace tempo::ir {

namespace {

struct Ctx {
  OpKind kind;
  const Attrs& attrs;
  const std::vector<TensorType>& in;
  const Dims& domain;
  const std::string& who;

  [[noreturn]] void fail(const std::string& msg) const {
    throw UserError(cat(who, ": ", op_kind_name(kind), ": ", msg));
  }
  Expr simp(const Expr& e) const { return sym::simplify(e, domain); }
  bool same_size(const Expr& a, const Expr& b) const { return a.same(b) || simp(a).same(simp(b)); }
  // A dim attribute checked against a rank (ints[i], already normalized by the api).
  int64_t dim(size_t i, size_t rank, bool allow_end = false) const {
    if (attrs.ints.size() <= i) fail(cat("missing dimension attribute ", i));
    int64_t d = attrs.ints[i];
    int64_t hi = static_cast<int64_t>(rank) + (allow_end ? 1 : 0);
    if (d < 0 || d >= hi) fail(cat("dimension ", d, " out of range for a tensor of rank ", rank));
    return d;
  }
  const Expr& expr(size_t i) const {
    if (attrs.exprs.size() <= i) fail(cat("missing expression attribute ", i));
    return attrs.exprs[i];
  }
  void need_int(const TensorType& t, const char* what) const {
    if (t.dtype != DType::Int64 && t.dtype != DType::Int32)
      fail(cat(what, " must be an integer tensor, not ", t.str()));
  }
};

std::string shapes_str(const std::vector<TensorType>& in) {
  std::string s;
  for (size_t i = 0; i < in.size(); ++i) s += (i ? " and " : "") + in[i].str();
  return s;
}

// numpy broadcasting; sizes are compared structurally after simplification.
Shape broadcast(const Ctx& c, const std::vector<const Shape*>& shapes) {
  size_t rank = 0;
  for (const Shape* s : shapes) rank = std::max(rank, s->rank());
  std::vector<Expr> out(rank, Expr(1));
  for (const Shape* s : shapes) {
    size_t off = rank - s->rank();
    for (size_t i = 0; i < s->rank(); ++i) {
      const Expr& d = (*s)[i];
      Expr& o = out[off + i];
      if (d.is_const(1)) continue;
      if (o.is_const(1)) {
        o = c.simp(d);
        continue;
      }
      if (!c.same_size(o, d))
        c.fail(cat("cannot broadcast shapes ", shapes_str(c.in), ": size ", o.str(), " vs ",
                   d.str(), " in dimension ", off + i));
    }
  }
  return Shape(std::move(out));
}

Expr product(const Shape& s) {
  Expr p(1);
  for (const Expr& d : s.dims) p = p * d;
  return p;
}

bool float_only(OpKind k) {
  switch (k) {
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Sqrt:
    case OpKind::Sin:
    case OpKind::Cos:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
      return true;
    default:
      return false;
  }
}

TensorType reduce_shape(const Ctx& c, const TensorType& x, const std::vector<int64_t>& dims,
                        bool keepdim) {
  std::vector<bool> reduced(x.shape.rank(), dims.empty());
  for (int64_t d : dims) {
    if (d < 0 || d >= static_cast<int64_t>(x.shape.rank()))
      c.fail(cat("dimension ", d, " out of range for ", x.str()));
    reduced[d] = true;
  }
  TensorType out = x;
  out.shape.dims.clear();
  for (size_t i = 0; i < x.shape.rank(); ++i) {
    if (!reduced[i])
      out.shape.dims.push_back(x.shape[i]);
    else if (keepdim)
      out.shape.dims.emplace_back(1);
  }
  return out;
}

// The inputs of the discounted sums and scans: a floating x and an optional done of x's shape.
void check_discounted(const Ctx& c, const std::vector<TensorType>& in) {
  if (in.empty() || in.size() > 2) c.fail("takes x and an optional done");
  if (!is_floating(in[0].dtype)) c.fail(cat("needs a floating tensor, got ", in[0].str()));
  if (in.size() == 2) {
    bool same = in[1].shape.rank() == in[0].shape.rank();
    for (size_t k = 0; same && k < in[0].shape.rank(); ++k)
      same = c.same_size(in[0].shape[k], in[1].shape[k]);
    if (!same) c.fail(cat("done must have x's shape: ", shapes_str(in)));
  }
}

TensorType matmul(const Ctx& c, const TensorType& a, const TensorType& b) {
  if (a.shape.rank() == 0 || b.shape.rank() == 0)
    c.fail(cat("operands must have at least one dimension, got ", shapes_str(c.in)));
  DType dt = promote(a.dtype, b.dtype);
  Shape sa = a.shape, sb = b.shape;
  bool va = sa.rank() == 1, vb = sb.rank() == 1;
  if (va) sa.dims.insert(sa.dims.begin(), Expr(1));
  if (vb) sb.dims.emplace_back(1);
  const Expr& k1 = sa[sa.rank() - 1];
  const Expr& k2 = sb[sb.rank() - 2];
  if (!c.same_size(k1, k2))
    c.fail(cat("inner sizes differ: ", shapes_str(c.in), " (", k1.str(), " vs ", k2.str(), ")"));
  Shape ba(std::vector<Expr>(sa.dims.begin(), sa.dims.end() - 2));
  Shape bb(std::vector<Expr>(sb.dims.begin(), sb.dims.end() - 2));
  Shape batch = broadcast(c, {&ba, &bb});
  if (!va) batch.dims.push_back(sa[sa.rank() - 2]);
  if (!vb) batch.dims.push_back(sb[sb.rank() - 1]);
  return TensorType{dt, batch};
}

std::vector<TensorType> infer(const Ctx& c) {
  const auto& in = c.in;
  const Attrs& a = c.attrs;
  int nin = op_kind_inputs(c.kind);
  if (nin >= 0 && static_cast<int>(in.size()) != nin)
    c.fail(cat("takes ", nin, " inputs, got ", in.size()));

  switch (c.kind) {
    case OpKind::Const:
    case OpKind::RandUniform:
    case OpKind::RandNormal:
      for (const Expr& d : a.exprs)
        if (d.is_const() && d.value() < 0) c.fail(cat("negative size ", d.value()));
      return {TensorType{a.dtype, Shape(a.exprs)}};
    case OpKind::Arange:
      return {TensorType{a.dtype, Shape({c.simp(c.expr(0))})}};
    case OpKind::EvalSymbol:
      c.expr(0);
      return {TensorType{DType::Int64, Shape()}};
    case OpKind::Udf:
      if (!a.udf) c.fail("no user function");
      return a.udf->outputs;
    case OpKind::Fused: {
      if (!a.region) c.fail("no region");
      const Graph& body = a.region->body;
      for (const OpNode& op : body.ops())
        if (op.kind == OpKind::Param) {
          const int64_t k = op.attrs.ints.empty() ? -1 : op.attrs.ints[0];
          if (k < 0 || static_cast<size_t>(k) >= in.size())
            c.fail(cat("body parameter ", k, " out of range for ", in.size(), " inputs"));
          if (!same_type(in[k], op.outputs[0], c.domain))
            c.fail(cat("input ", k, " is ", in[k].str(), " but the body reads ",
                       op.outputs[0].str()));
        }
      std::vector<TensorType> out;
      for (const auto& [id, k] : a.region->outputs) out.push_back(body.op(id).outputs.at(k));
      return out;
    }
    case OpKind::Param:
      c.fail("a Param exists only in the body of a fused region");
    case OpKind::Merge:
      if (in.empty()) c.fail("a merge needs at least one branch");
      for (size_t i = 1; i < in.size(); ++i)
        if (in[i].dtype != in[0].dtype || in[i].shape.rank() != in[0].shape.rank())
          c.fail(cat("branches disagree: ", in[0].str(), " vs ", in[i].str()));
      return {in[0]};
    case OpKind::Identity:
    case OpKind::Detach:
      return {in[0]};
    case OpKind::AllReduce:
      if (in[0].dtype == DType::Bool) c.fail("cannot all-reduce a boolean tensor");
      if (!a.ints.empty() && a.ints[0] == 1 && !is_floating(in[0].dtype))
        c.fail(cat("the mean over ranks needs a floating-point tensor, got ", in[0].str()));
      return {in[0]};
    case OpKind::Broadcast:
      if (a.ints.size() != 1 || a.ints[0] < 0) c.fail("a broadcast needs a root rank >= 0");
      return {in[0]};

    case OpKind::Neg:
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Sqrt:
    case OpKind::Sin:
    case OpKind::Cos:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::Relu:
    case OpKind::Abs:
    case OpKind::Sign:
    case OpKind::Floor:
    case OpKind::Ceil: {
      TensorType t = in[0];
      if (float_only(c.kind) && !is_floating(t.dtype)) t.dtype = DType::Float32;
      return {t};
    }
    case OpKind::Not:
      return {TensorType{DType::Bool, in[0].shape}};
    case OpKind::Cast:
      return {TensorType{a.dtype, in[0].shape}};

    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Pow:
    case OpKind::Maximum:
    case OpKind::Minimum: {
      Shape s = broadcast(c, {&in[0].shape, &in[1].shape});
      DType dt = promote(in[0].dtype, in[1].dtype);
      if (c.kind == OpKind::Div && !is_floating(dt)) dt = DType::Float32;  // true division
      if (dt == DType::Bool && c.kind != OpKind::Maximum && c.kind != OpKind::Minimum)
        dt = DType::Int64;
      return {TensorType{dt, s}};
    }
    case OpKind::Eq:
    case OpKind::Ne:
    case OpKind::Lt:
    case OpKind::Le:
    case OpKind::Gt:
    case OpKind::Ge:
    case OpKind::And:
    case OpKind::Or:
      return {TensorType{DType::Bool, broadcast(c, {&in[0].shape, &in[1].shape})}};
    case OpKind::Where: {
      if (in[0].dtype != DType::Bool) c.fail(cat("condition must be bool, not ", in[0].str()));
      Shape s = broadcast(c, {&in[0].shape, &in[1].shape, &in[2].shape});
      return {TensorType{promote(in[1].dtype, in[2].dtype), s}};
    }

    case OpKind::Sum: {
      TensorType t = reduce_shape(c, in[0], a.ints, a.keepdim);
      if (!is_floating(t.dtype)) t.dtype = DType::Int64;
      return {t};
    }
    case OpKind::ReduceMax: {
      if (in[0].shape.rank() == 0) c.fail("cannot reduce a scalar");
      int64_t d = c.dim(0, in[0].shape.rank());
      TensorType v = reduce_shape(c, in[0], {d}, a.keepdim);
      return {v, TensorType{DType::Int64, v.shape}};
    }
    case OpKind::TopK: {
      if (in[0].shape.rank() == 0) c.fail("cannot take the top k of a scalar");
      int64_t d = c.dim(0, in[0].shape.rank());
      const Expr& k = c.expr(0);
      if (!k.is_const() || k.value() < 1)
        c.fail(cat("k must be a positive integer, got ", k.str()));
      Expr n = c.simp(in[0].shape[d]);
      if (n.is_const() && k.value() > n.value())
        c.fail(cat("k = ", k.value(), " is larger than dimension ", d, " of ", in[0].str()));
      TensorType v = in[0];
      v.shape.dims[d] = k;
      return {v, TensorType{DType::Int64, v.shape}};
    }
    case OpKind::DiscountedSum: {
      check_discounted(c, in);
      int64_t d = c.dim(0, in[0].shape.rank());
      return {reduce_shape(c, in[0], {d}, false)};
    }
    case OpKind::DiscountedCumSum: {
      check_discounted(c, in);
      c.dim(0, in[0].shape.rank());
      if (a.exprs.size() != 1 || !a.exprs[0].is_const())
        c.fail("needs its direction (1: reverse, 0: forward) as exprs[0]");
      return {in[0]};
    }
    case OpKind::CumSum: {
      c.dim(0, in[0].shape.rank());
      TensorType t = in[0];
      if (!is_floating(t.dtype)) t.dtype = DType::Int64;
      return {t};
    }

    case OpKind::Reshape: {
      Shape target(a.exprs);
      int infer_at = -1;
      for (size_t i = 0; i < target.rank(); ++i)
        if (target[i].is_const(-1)) {
          if (infer_at >= 0) c.fail("at most one size may be -1");
          infer_at = static_cast<int>(i);
        }
      Expr total = c.simp(product(in[0].shape));
      if (infer_at >= 0) {
        Shape rest = target;
        rest.dims.erase(rest.dims.begin() + infer_at);
        Expr r = c.simp(product(rest));
        if (total.is_const() && r.is_const()) {
          if (r.value() == 0 || total.value() % r.value() != 0)
            c.fail(cat("cannot reshape ", in[0].str(), " to ", target.str()));
          target.dims[infer_at] = Expr(total.value() / r.value());
        } else {
          target.dims[infer_at] = c.simp(total / r);
        }
      }
      Expr want = c.simp(product(target));
      if (total.is_const() && want.is_const() && total.value() != want.value())
        c.fail(cat("cannot reshape ", in[0].str(), " (", total.value(), " elements) to ",
                   target.str(), " (", want.value(), " elements)"));
      return {TensorType{in[0].dtype, target}};
    }
    case OpKind::Permute: {
      size_t r = in[0].shape.rank();
      if (a.ints.size() != r) c.fail(cat("permutation ", a.ints.size(), " dims for rank ", r));
      std::vector<bool> seen(r, false);
      TensorType t{in[0].dtype, {}};
      for (int64_t d : a.ints) {
        if (d < 0 || d >= static_cast<int64_t>(r) || seen[d])
          c.fail(cat("invalid permutation of a rank-", r, " tensor"));
        seen[d] = true;
        t.shape.dims.push_back(in[0].shape[d]);
      }
      return {t};
    }
    case OpKind::Expand: {
      Shape target(a.exprs);
      const Shape& s = in[0].shape;
      if (target.rank() < s.rank())
        c.fail(cat("cannot expand ", in[0].str(), " to fewer dimensions ", target.str()));
      size_t off = target.rank() - s.rank();
      for (size_t i = 0; i < target.rank(); ++i) {
        if (target[i].is_const(-1)) {
          if (i < off) c.fail("-1 is only allowed for existing dimensions");
          target.dims[i] = s[i - off];
          continue;
        }
        if (i < off) continue;
        const Expr& d = s[i - off];
        if (!d.is_const(1) && !c.same_size(d, target[i]))
          c.fail(cat("cannot expand ", in[0].str(), " to ", target.str()));
      }
      return {TensorType{in[0].dtype, target}};
    }
    case OpKind::Squeeze: {
      int64_t d = c.dim(0, in[0].shape.rank());
      if (!c.simp(in[0].shape[d]).is_const(1))
        c.fail(cat("dimension ", d, " of ", in[0].str(), " is not of size 1"));
      TensorType t = in[0];
      t.shape.dims.erase(t.shape.dims.begin() + d);
      return {t};
    }
    case OpKind::Unsqueeze: {
      int64_t d = c.dim(0, in[0].shape.rank(), true);
      TensorType t = in[0];
      t.shape.dims.insert(t.shape.dims.begin() + d, Expr(1));
      return {t};
    }
    case OpKind::Slice: {
      int64_t d = c.dim(0, in[0].shape.rank());
      TensorType t = in[0];
      Expr size = c.simp(c.expr(1) - c.expr(0));
      if (size.is_const() && size.value() < 0)
        c.fail(cat("slice ", c.expr(0).str(), ":", c.expr(1).str(), " has negative length"));
      const Expr& n = c.simp(in[0].shape[d]);
      if (n.is_const() && c.simp(c.expr(1)).is_const() && c.simp(c.expr(1)).value() > n.value())
        c.fail(cat("slice ", c.expr(0).str(), ":", c.expr(1).str(), " out of range for size ",
                   n.value()));
      t.shape.dims[d] = size;
      return {t};
    }
    case OpKind::Pad: {
      int64_t d = c.dim(0, in[0].shape.rank());
      TensorType t = in[0];
      t.shape.dims[d] = c.simp(t.shape[d] + c.expr(0) + c.expr(1));
      return {t};
    }
    case OpKind::Flip:
      c.dim(0, in[0].shape.rank());
      return {in[0]};
    case OpKind::Cat: {
      if (in.empty()) c.fail("needs at least one input");
      int64_t d = c.dim(0, in[0].shape.rank());
      TensorType t = in[0];
      Expr total = in[0].shape[d];
      for (size_t i = 1; i < in.size(); ++i) {
        if (in[i].shape.rank() != t.shape.rank())
          c.fail(cat("inputs differ in rank: ", shapes_str(in)));
        for (size_t k = 0; k < t.shape.rank(); ++k)
          if (static_cast<int64_t>(k) != d && !c.same_size(t.shape[k], in[i].shape[k]))
            c.fail(cat("inputs differ in dimension ", k, ": ", shapes_str(in)));
        total = total + in[i].shape[d];
        t.dtype = promote(t.dtype, in[i].dtype);
      }
      t.shape.dims[d] = c.simp(total);
      return {t};
    }

    case OpKind::Index: {
      int64_t d = c.dim(0, in[0].shape.rank());
      c.expr(0);
      TensorType t = in[0];
      t.shape.dims.erase(t.shape.dims.begin() + d);
      return {t};
    }
    case OpKind::IndexSelect: {
      int64_t d = c.dim(0, in[0].shape.rank());
      c.need_int(in[1], "index");
      if (in[1].shape.rank() != 1) c.fail(cat("index must be 1-D, got ", in[1].str()));
      TensorType t = in[0];
      t.shape.dims[d] = in[1].shape[0];
      return {t};
    }
    case OpKind::Gather: {
      c.dim(0, in[0].shape.rank());
      c.need_int(in[1], "index");
      if (in[1].shape.rank() != in[0].shape.rank())
        c.fail(cat("index rank differs from the source: ", shapes_str(in)));
      return {TensorType{in[0].dtype, in[1].shape}};
    }
    case OpKind::ScatterAdd: {
      c.dim(0, in[0].shape.rank());
      c.need_int(in[1], "index");
      if (in[1].shape.rank() != in[0].shape.rank() || in[2].shape.rank() != in[0].shape.rank())
        c.fail(cat("self, index and src must have the same rank: ", shapes_str(in)));
      return {in[0]};
    }
    case OpKind::IndexAdd: {
      int64_t d = c.dim(0, in[0].shape.rank());
      c.need_int(in[1], "index");
      if (in[1].shape.rank() != 1) c.fail(cat("index must be 1-D, got ", in[1].str()));
      if (in[2].shape.rank() != in[0].shape.rank())
        c.fail(cat("self and src must have the same rank: ", shapes_str(in)));
      if (!c.same_size(in[2].shape[d], in[1].shape[0]))
        c.fail(cat("src size along dim ", d, " must equal the index length: ", shapes_str(in)));
      return {in[0]};
    }

    case OpKind::MatMul:
      return {matmul(c, in[0], in[1])};
    case OpKind::Conv2d: {
      const Shape &x = in[0].shape, &w = in[1].shape;
      if (x.rank() != 4 || w.rank() != 4)
        c.fail(cat("expects input (N, C, H, W) and weight (O, C, kh, kw), got ", shapes_str(in)));
      if (!c.same_size(x[1], w[1])) c.fail(cat("input channels differ: ", shapes_str(in)));
      int64_t stride = a.ints.size() > 0 ? a.ints[0] : 1;
      int64_t pad = a.ints.size() > 1 ? a.ints[1] : 0;
      if (stride <= 0 || pad < 0) c.fail(cat("bad stride ", stride, " or padding ", pad));
      auto out = [&](const Expr& n, const Expr& k) {
        Expr o = c.simp((n + Expr(2 * pad) - k) / Expr(stride) + 1);
        if (o.is_const() && o.value() <= 0)
          c.fail(cat("kernel larger than the padded input: ", shapes_str(in)));
        return o;
      };
      return {TensorType{promote(in[0].dtype, in[1].dtype),
                         Shape({x[0], w[0], out(x[2], w[2]), out(x[3], w[3])})}};
    }
  }
  c.fail("unknown op kind");
}

}  // namespace

std::vector<TensorType> infer_types(OpKind kind, const Attrs& attrs,
                                    const std::vector<TensorType>& inputs, const Dims& domain,
                                    const std::string& who) {
  return infer(Ctx{kind, attrs, inputs, domain, who});
}

}  // namespace tempo::ir
