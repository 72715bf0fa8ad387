// Inference for the kinds without elementwise arithmetic: sources, values passed on (merges,
// identities, user functions), fused regions and collectives.
#include "ir/infer_rules.h"

namespace tempo::ir::detail {

Types infer_source(const InferCtx& c) {
  const Attrs& a = c.attrs;
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
    default:
      c.unknown_kind();
  }
}

Types infer_flow(const InferCtx& c) {
  const Types& in = c.in;
  switch (c.kind) {
    case OpKind::Udf:
      if (!c.attrs.udf) c.fail("no user function");
      return c.attrs.udf->outputs;
    case OpKind::Merge:
      if (in.empty()) c.fail("a merge needs at least one branch");
      for (size_t i = 1; i < in.size(); ++i)
        if (in[i].dtype != in[0].dtype || in[i].shape.rank() != in[0].shape.rank())
          c.fail(cat("branches disagree: ", in[0].str(), " vs ", in[i].str()));
      return {in[0]};
    case OpKind::Identity:
    case OpKind::Detach:
      return {in[0]};
    default:
      c.unknown_kind();
  }
}

Types infer_region(const InferCtx& c) {
  const Types& in = c.in;
  const Attrs& a = c.attrs;
  if (c.kind == OpKind::Param) c.fail("a Param exists only in the body of a fused region");
  if (c.kind != OpKind::Fused) c.unknown_kind();
  if (!a.region) c.fail("no region");
  const Graph& body = a.region->body;
  for (const OpNode& op : body.ops())
    if (op.kind == OpKind::Param) {
      const int64_t k = op.attrs.ints.empty() ? -1 : op.attrs.ints[0];
      if (k < 0 || static_cast<size_t>(k) >= in.size())
        c.fail(cat("body parameter ", k, " out of range for ", in.size(), " inputs"));
      if (!same_type(in[k], op.outputs[0], c.domain))
        c.fail(cat("input ", k, " is ", in[k].str(), " but the body reads ", op.outputs[0].str()));
    }
  Types out;
  for (const auto& [id, k] : a.region->outputs) out.push_back(body.op(id).outputs.at(k));
  return out;
}

Types infer_collective(const InferCtx& c) {
  const Types& in = c.in;
  const Attrs& a = c.attrs;
  switch (c.kind) {
    case OpKind::AllReduce:
      if (in[0].dtype == DType::Bool) c.fail("cannot all-reduce a boolean tensor");
      if (!a.ints.empty() && a.ints[0] == 1 && !is_floating(in[0].dtype))
        c.fail(cat("the mean over ranks needs a floating-point tensor, got ", in[0].str()));
      return {in[0]};
    case OpKind::Broadcast:
      if (a.ints.size() != 1 || a.ints[0] < 0) c.fail("a broadcast needs a root rank >= 0");
      return {in[0]};
    default:
      c.unknown_kind();
  }
}

}  // namespace tempo::ir::detail
