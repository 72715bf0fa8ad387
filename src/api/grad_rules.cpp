// Local gradient rules: one case per op kind (ARCHITECTURE.md "one table per op kind"). Each rule
// builds the input gradients with ordinary RT operations, so the gradient program is itself an RT
// program that the normal pipeline optimizes and schedules.
#include "api/grad_rules.h"

#include <numeric>

#include "util/error.h"

namespace tempo::autodiff {

using ir::OpKind;

namespace {

bool is_one(const Expr& e) {
  return e.is_const(1);
}

RT zeros_like(Context& ctx, const RT& x, Loc loc) {
  return ctx.constant(0.0, x.shape(), x.dtype(), {}, loc);
}

// Broadcasts g (the gradient of a reduction without its reduced dims) back to x's shape.
RT expand_to(const RT& g, const RT& x, Loc loc) {
  if (g.shape().same(x.shape())) return g;
  return g.expand(x.shape(), loc);
}

RT as_float(const RT& m, DType dt, Loc loc) {
  return m.cast(dt, loc);
}

// The gradient of picking elements of x along d (gather, a max's argmax): g scattered into zeros
// at `index`. Where the index picks one element per position of the other dims (size 1 along
// d), it is g where the position along d equals the index, else 0: elementwise ops that
// vectorize over temporal dims and fuse, where a scatter does neither.
RT pick_grad(Context& ctx, const RT& x, int64_t d, const RT& index, const RT& g, Loc loc) {
  const Shape &xs = x.shape(), &is = index.shape();
  bool one = is.rank() == xs.rank() && is[d].is_const(1) && g.shape().same(is);
  for (size_t k = 0; one && k < xs.rank(); ++k)
    one = static_cast<int64_t>(k) == d || is[k].same(xs[k]);
  if (!one) return zeros_like(ctx, x, loc).scatter_add(d, index, g, loc);
  RT position = ctx.arange(xs[d], DType::Int64, loc);
  for (size_t k = static_cast<size_t>(d) + 1; k < xs.rank(); ++k)
    position = position.unsqueeze(-1, loc);
  return where(position == index, g, 0.0, loc);
}

std::vector<RT> matmul_grads(const RuleInput& r) {
  const RT &a = r.in[0], &b = r.in[1], &g = r.g[0];
  Loc loc = r.loc;
  std::vector<RT> out(2);
  size_t ra = a.rank(), rb = b.rank();
  if (ra == 1 && rb == 1) {  // dot product
    if (r.need[0]) out[0] = g * b;
    if (r.need[1]) out[1] = g * a;
  } else if (ra == 1) {  // [k] @ (..., k, n) -> (..., n)
    if (r.need[0])
      out[0] = unbroadcast(b.matmul(g.unsqueeze(-1, loc), loc).squeeze(-1, loc), a.shape(), loc);
    if (r.need[1])
      out[1] = unbroadcast(a.unsqueeze(-1, loc) * g.unsqueeze(-2, loc), b.shape(), loc);
  } else if (rb == 1) {  // (..., m, k) @ [k] -> (..., m)
    if (r.need[0]) out[0] = unbroadcast(g.unsqueeze(-1, loc) * b, a.shape(), loc);
    if (r.need[1])
      out[1] =
          unbroadcast(a.transpose(-1, -2, loc).matmul(g.unsqueeze(-1, loc), loc).squeeze(-1, loc),
                      b.shape(), loc);
  } else {
    if (r.need[0]) out[0] = unbroadcast(g.matmul(b.transpose(-1, -2, loc), loc), a.shape(), loc);
    if (r.need[1] && rb == 2) {
      // A matrix applied to rows (a Linear layer's weight): a batch's rows flattened into one
      // (k, B m) @ (B m, n) product instead of B products of (k, n) summed afterwards, as
      // (g^T a)^T, torch's own Linear backward order: a faster BLAS layout than a^T g, and a
      // weight read transposed gets a contiguous gradient.
      auto rows = [&](const RT& x) {
        if (x.rank() == 2) return x;
        Expr n = x.shape()[0];
        for (size_t d = 1; d + 1 < x.rank(); ++d) n = n * x.shape()[d];
        return x.reshape(Shape(std::vector<Expr>{n, x.shape()[x.rank() - 1]}), loc);
      };
      out[1] = rows(g).transpose(0, 1, loc).matmul(rows(a), loc).transpose(0, 1, loc);
    } else if (r.need[1]) {
      out[1] = unbroadcast(a.transpose(-1, -2, loc).matmul(g, loc), b.shape(), loc);
    }
  }
  return out;
}

}  // namespace

RT unbroadcast(const RT& g, const Shape& shape, Loc loc) {
  RT out = g;
  size_t rg = g.rank(), rt = shape.rank();
  if (rg > rt) {
    std::vector<int64_t> lead(rg - rt);
    std::iota(lead.begin(), lead.end(), 0);
    out = out.sum(lead, false, loc);
  }
  std::vector<int64_t> ones;
  for (size_t i = 0; i < rt; ++i)
    if (is_one(shape[i]) && !is_one(out.shape()[i])) ones.push_back(static_cast<int64_t>(i));
  if (!ones.empty()) out = out.sum(ones, true, loc);
  return out;
}

std::vector<RT> local_grads(const RuleInput& r) {
  const ir::OpNode& op = r.op;
  const ir::Attrs& a = op.attrs;
  Context& ctx = r.ctx;
  Loc loc = r.loc;
  const std::vector<RT>& x = r.in;
  std::vector<RT> out(x.size());
  if (r.g.empty() || !r.g[0].defined()) return out;
  const RT& g = r.g[0];
  const RT& y = r.out.empty() ? g : r.out[0];
  auto need = [&](size_t k) { return k < r.need.size() && r.need[k]; };

  if (!ir::is_differentiable(op.kind)) return out;
  switch (op.kind) {
    case OpKind::Merge:
      throw InternalError("local_grads called for a Merge (routed by autodiff)");

    case OpKind::Identity:
      out[0] = g;
      break;
    case OpKind::Cast:
      if (ir::is_floating(x[0].dtype())) out[0] = g.cast(x[0].dtype(), loc);
      break;

    // ---- elementwise unary: d/dx f(x) ----
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

    // ---- elementwise binary (broadcasting: reduce back to each operand's shape) ----
    case OpKind::Add:
      if (need(0)) out[0] = unbroadcast(g, x[0].shape(), loc);
      if (need(1)) out[1] = unbroadcast(g, x[1].shape(), loc);
      break;
    case OpKind::Sub:
      if (need(0)) out[0] = unbroadcast(g, x[0].shape(), loc);
      if (need(1)) out[1] = unbroadcast(-g, x[1].shape(), loc);
      break;
    case OpKind::Mul:
      if (need(0)) out[0] = unbroadcast(g * x[1], x[0].shape(), loc);
      if (need(1)) out[1] = unbroadcast(g * x[0], x[1].shape(), loc);
      break;
    case OpKind::Div:  // a / b: 1 / b and -a / b^2 = -y / b
      if (need(0)) out[0] = unbroadcast(g / x[1], x[0].shape(), loc);
      if (need(1)) out[1] = unbroadcast(-(g * y / x[1]), x[1].shape(), loc);
      break;
    case OpKind::Pow:  // a^b: b a^(b-1) and a^b log(a)
      if (need(0)) out[0] = unbroadcast(g * x[1] * x[0].pow(x[1] - 1.0, loc), x[0].shape(), loc);
      if (need(1)) out[1] = unbroadcast(g * y * x[0].log(loc), x[1].shape(), loc);
      break;
    case OpKind::Maximum:
    case OpKind::Minimum: {
      // As LibTorch: the winner gets the gradient, ties split it evenly.
      RT win_a = op.kind == OpKind::Maximum ? x[0] > x[1] : x[0] < x[1];
      RT tie = as_float(x[0] == x[1], g.dtype(), loc) * 0.5;
      RT wa = as_float(win_a, g.dtype(), loc) + tie;
      if (need(0)) out[0] = unbroadcast(g * wa, x[0].shape(), loc);
      if (need(1)) out[1] = unbroadcast(g * (1.0 - wa), x[1].shape(), loc);
      break;
    }
    case OpKind::Where:
      if (need(1)) out[1] = unbroadcast(where(x[0], g, 0.0, loc), x[1].shape(), loc);
      if (need(2)) out[2] = unbroadcast(where(x[0], 0.0, g, loc), x[2].shape(), loc);
      break;

    // ---- reductions and scans ----
    case OpKind::Sum: {
      RT gk = g;
      if (!a.keepdim) {
        std::vector<int64_t> dims = a.ints;
        if (dims.empty()) {
          dims.resize(x[0].rank());
          std::iota(dims.begin(), dims.end(), 0);
        }
        for (int64_t d : dims) gk = gk.unsqueeze(d, loc);  // ascending: positions stay right
      }
      out[0] = expand_to(gk, x[0], loc);
      break;
    }
    case OpKind::ReduceMax: {  // the gradient goes to the selected element (as LibTorch)
      int64_t d = a.ints[0];
      RT gk = a.keepdim ? g : g.unsqueeze(d, loc);
      RT ik = a.keepdim ? r.out[1] : r.out[1].unsqueeze(d, loc);
      out[0] = pick_grad(ctx, x[0], d, ik, gk, loc);
      break;
    }
    case OpKind::DiscountedSum: {  // the weight of each x[k]: gamma^k alive(k)
      int64_t d = a.ints[0];
      DType dt = x[0].dtype();
      RT w = ctx.constant(a.scalar, Shape(), dt, {}, loc)
                 .pow(ctx.arange(x[0].shape()[d], dt, loc), loc);
      for (int64_t k = d + 1; k < static_cast<int64_t>(x[0].rank()); ++k) w = w.unsqueeze(-1, loc);
      if (x.size() == 2) {
        RT ended = as_float(x[1] >= 0.5, dt, loc);
        w = where(ended.cumsum(d, loc) - ended < 0.5, w, 0.0, loc);
      }
      if (need(0)) out[0] = expand_to(g.unsqueeze(d, loc), x[0], loc) * w;
      break;
    }
    case OpKind::DiscountedCumSum: {  // the same links, in the other direction
      int64_t d = a.ints[0];
      bool reverse = a.exprs[0].value() != 0;
      if (need(0))
        out[0] = x.size() == 2 ? g.discounted_cumsum(a.scalar, x[1], d, !reverse, loc)
                               : g.discounted_cumsum(a.scalar, d, !reverse, loc);
      break;
    }
    case OpKind::CumSum: {  // reverse cumulative sum
      int64_t d = a.ints[0];
      out[0] = g.flip(d, loc).cumsum(d, loc).flip(d, loc);
      break;
    }

    // ---- movement: the inverse movement ----
    case OpKind::Reshape:
      out[0] = g.reshape(x[0].shape(), loc);
      break;
    case OpKind::Permute: {
      std::vector<int64_t> inv(a.ints.size());
      for (size_t i = 0; i < a.ints.size(); ++i) inv[a.ints[i]] = static_cast<int64_t>(i);
      out[0] = g.permute(inv, loc);
      break;
    }
    case OpKind::Expand:
      out[0] = unbroadcast(g, x[0].shape(), loc);
      break;
    case OpKind::Squeeze:
      out[0] = g.unsqueeze(a.ints[0], loc);
      break;
    case OpKind::Unsqueeze:
      out[0] = g.squeeze(a.ints[0], loc);
      break;
    case OpKind::Slice: {  // pad back with zeros around start:stop
      int64_t d = a.ints[0];
      out[0] = g.pad(d, a.exprs[0], x[0].shape()[d] - a.exprs[1], 0.0, loc);
      break;
    }
    case OpKind::Pad: {  // cut the padding off
      int64_t d = a.ints[0];
      out[0] = g.slice(d, a.exprs[0], a.exprs[0] + x[0].shape()[d], loc);
      break;
    }
    case OpKind::Flip:
      out[0] = g.flip(a.ints[0], loc);
      break;
    case OpKind::Cat: {
      int64_t d = a.ints[0];
      Expr off(0);
      for (size_t k = 0; k < x.size(); ++k) {
        Expr end = off + x[k].shape()[d];
        if (need(k)) out[k] = g.slice(d, off, end, loc);
        off = end;
      }
      break;
    }

    // ---- indexing ----
    case OpKind::Index: {  // a one-hot slot along d
      int64_t d = a.ints[0];
      const Expr& pos = a.exprs[0];
      out[0] = g.unsqueeze(d, loc).pad(d, pos, x[0].shape()[d] - pos - 1, 0.0, loc);
      break;
    }
    case OpKind::IndexSelect:
      if (need(0)) out[0] = zeros_like(ctx, x[0], loc).index_add(a.ints[0], x[1], g, loc);
      break;
    case OpKind::Gather:
      if (need(0)) out[0] = pick_grad(ctx, x[0], a.ints[0], x[1], g, loc);
      break;
    case OpKind::ScatterAdd:
      if (need(0)) out[0] = g;
      if (need(2)) out[2] = g.gather(a.ints[0], x[1], loc);
      break;
    case OpKind::IndexAdd:
      if (need(0)) out[0] = g;
      if (need(2)) out[2] = g.index_select(a.ints[0], x[1], loc);
      break;

    // ---- linear algebra ----
    case OpKind::MatMul:
      out = matmul_grads(r);
      break;
    case OpKind::Conv2d:
      throw UserError(cat("no gradient for Conv2d yet: ", op.describe()));
    default:
      throw InternalError(cat("no gradient rule for differentiable op ", op.describe()));
  }

  // Gradients keep their input's floating dtype (e.g. f32 * f64 -> f64 back to f32).
  for (size_t k = 0; k < out.size(); ++k) {
    if (!out[k].defined()) continue;
    if (!need(k) || !ir::is_floating(x[k].dtype())) {
      out[k] = RT();
      continue;
    }
    if (out[k].dtype() != x[k].dtype()) out[k] = out[k].cast(x[k].dtype(), loc);
  }
  return out;
}

}  // namespace tempo::autodiff
