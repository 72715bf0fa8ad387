// Gradient rules of the elementwise kinds.
#include "api/grad_rules_detail.h"
#include "util/error.h"

namespace tempo::autodiff::detail {

using ir::OpKind;

namespace {

RT as_float(const RT& m, DType dt, Loc loc) {
  return m.cast(dt, loc);
}

}  // namespace

// d/dx f(x).
void unary_grads(const GradCtx& c, std::vector<RT>& out) {
  const auto& [r, a, ctx, loc, x, g, y] = c;
  switch (r.op.kind) {
    case OpKind::Cast:
      if (ir::is_floating(x[0].dtype())) out[0] = g.cast(x[0].dtype(), loc);
      break;
    case OpKind::Neg:
      out[0] = -g;
      break;
    case OpKind::Exp:  // e^x
      out[0] = g * y;
      break;
    case OpKind::Log:  // 1 / x
      out[0] = g / x[0];
      break;
    case OpKind::Sqrt:  // 1 / (2 sqrt(x))
      out[0] = g / (y * 2.0);
      break;
    case OpKind::Sin:
      out[0] = g * x[0].cos(loc);
      break;
    case OpKind::Cos:
      out[0] = -(g * x[0].sin(loc));
      break;
    case OpKind::Tanh:  // 1 - tanh^2
      out[0] = g * (1.0 - y * y);
      break;
    case OpKind::Sigmoid:  // s (1 - s)
      out[0] = g * y * (1.0 - y);
      break;
    case OpKind::Relu:
      out[0] = g * as_float(x[0] > 0.0, g.dtype(), loc);
      break;
    case OpKind::Abs:
      out[0] = g * x[0].sign(loc);
      break;
    default:
      throw InternalError(cat("no gradient rule for differentiable op ", r.op.describe()));
  }
}

// Broadcasting: each gradient is reduced back to its operand's shape.
void binary_grads(const GradCtx& c, std::vector<RT>& out) {
  const auto& [r, a, ctx, loc, x, g, y] = c;
  const OpKind kind = r.op.kind;
  switch (kind) {
    case OpKind::Add:
      if (c.need(0)) out[0] = unbroadcast(g, x[0].shape(), loc);
      if (c.need(1)) out[1] = unbroadcast(g, x[1].shape(), loc);
      break;
    case OpKind::Sub:
      if (c.need(0)) out[0] = unbroadcast(g, x[0].shape(), loc);
      if (c.need(1)) out[1] = unbroadcast(-g, x[1].shape(), loc);
      break;
    case OpKind::Mul:
      if (c.need(0)) out[0] = unbroadcast(g * x[1], x[0].shape(), loc);
      if (c.need(1)) out[1] = unbroadcast(g * x[0], x[1].shape(), loc);
      break;
    case OpKind::Div:  // a / b: 1 / b and -a / b^2 = -y / b
      if (c.need(0)) out[0] = unbroadcast(g / x[1], x[0].shape(), loc);
      if (c.need(1)) out[1] = unbroadcast(-(g * y / x[1]), x[1].shape(), loc);
      break;
    case OpKind::Pow:  // a^b: b a^(b-1) and a^b log(a)
      if (c.need(0)) out[0] = unbroadcast(g * x[1] * x[0].pow(x[1] - 1.0, loc), x[0].shape(), loc);
      if (c.need(1)) out[1] = unbroadcast(g * y * x[0].log(loc), x[1].shape(), loc);
      break;
    case OpKind::Maximum:
    case OpKind::Minimum: {
      // As LibTorch: the winner gets the gradient, ties split it evenly.
      RT win_a = kind == OpKind::Maximum ? x[0] > x[1] : x[0] < x[1];
      RT tie = as_float(x[0] == x[1], g.dtype(), loc) * 0.5;
      RT wa = as_float(win_a, g.dtype(), loc) + tie;
      if (c.need(0)) out[0] = unbroadcast(g * wa, x[0].shape(), loc);
      if (c.need(1)) out[1] = unbroadcast(g * (1.0 - wa), x[1].shape(), loc);
      break;
    }
    case OpKind::Where:
      if (c.need(1)) out[1] = unbroadcast(where(x[0], g, 0.0, loc), x[1].shape(), loc);
      if (c.need(2)) out[2] = unbroadcast(where(x[0], 0.0, g, loc), x[2].shape(), loc);
      break;
    default:
      throw InternalError(cat("no gradient rule for differentiable op ", r.op.describe()));
  }
}

}  // namespace tempo::autodiff::detail
