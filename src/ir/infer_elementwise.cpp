// Inference for the elementwise kinds: the result type follows the kind's ResultRule (op_kind.h).
#include "ir/infer_rules.h"

namespace tempo::ir::detail {

Types infer_unary(const InferCtx& c) {
  const TensorType& x = c.in[0];
  if (c.kind == OpKind::Cast) return {TensorType{c.attrs.dtype, x.shape}};
  switch (result_rule(c.kind)) {
    case ResultRule::Logical:
      return {TensorType{DType::Bool, x.shape}};
    case ResultRule::FloatOnly:
      return {TensorType{is_floating(x.dtype) ? x.dtype : DType::Float32, x.shape}};
    case ResultRule::Plain:
      return {x};
  }
  c.unknown_kind();
}

Types infer_binary(const InferCtx& c) {
  const Types& in = c.in;
  if (c.kind == OpKind::Where) {
    if (in[0].dtype != DType::Bool) c.fail(cat("condition must be bool, not ", in[0].str()));
    Shape s = broadcast(c, {&in[0].shape, &in[1].shape, &in[2].shape});
    return {TensorType{promote(in[1].dtype, in[2].dtype), s}};
  }
  Shape s = broadcast(c, {&in[0].shape, &in[1].shape});
  if (is_logical(c.kind)) return {TensorType{DType::Bool, s}};
  DType dt = promote(in[0].dtype, in[1].dtype);
  if (is_float_only(c.kind) && !is_floating(dt)) dt = DType::Float32;
  // Arithmetic on booleans counts; the extrema of booleans stay boolean.
  if (dt == DType::Bool && c.kind != OpKind::Maximum && c.kind != OpKind::Minimum)
    dt = DType::Int64;
  return {TensorType{dt, s}};
}

}  // namespace tempo::ir::detail
