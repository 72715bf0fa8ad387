// LibTorch lowering of the elementwise kinds.
#include "backend/torch_kernel_rules.h"

namespace tempo::backend::detail {

namespace {

using T = torch::Tensor;

template <typename Op>
std::unique_ptr<Kernel> unary(const std::string& who, torch::ScalarType st, Op f) {
  return kernel(who, [st, f](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
    out[0] = wrap(as(f(tensor_of(in[0])), st));
  });
}

// Float-only unary functions compute in the output type (integers are promoted first).
template <typename Op>
std::unique_ptr<Kernel> unary_float(const std::string& who, torch::ScalarType st, Op f) {
  return kernel(who, [st, f](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
    out[0] = wrap(f(as(tensor_of(in[0]), st)));
  });
}

// Arithmetic: both operands are converted to the output type first (the IR's promotion rules).
template <typename Op>
std::unique_ptr<Kernel> arith(const std::string& who, torch::ScalarType st, Op f) {
  return kernel(who, [st, f](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
    out[0] = wrap(as(f(as(tensor_of(in[0]), st), as(tensor_of(in[1]), st)), st));
  });
}

// Comparisons and logic: LibTorch promotes the operands itself; the result is bool.
template <typename Op>
std::unique_ptr<Kernel> compare(const std::string& who, Op f) {
  return kernel(who, [f](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
    out[0] = wrap(f(tensor_of(in[0]), tensor_of(in[1])));
  });
}

// The float-only functions (ResultRule::FloatOnly).
std::unique_ptr<Kernel> float_function(const KernelCtx& c) {
  const std::string& who = c.who;
  const torch::ScalarType st = c.st;
  switch (c.op.kind) {
    case ir::OpKind::Exp:
      return unary_float(who, st, [](const T& x) { return x.exp(); });
    case ir::OpKind::Log:
      return unary_float(who, st, [](const T& x) { return x.log(); });
    case ir::OpKind::Sqrt:
      return unary_float(who, st, [](const T& x) { return x.sqrt(); });
    case ir::OpKind::Sin:
      return unary_float(who, st, [](const T& x) { return x.sin(); });
    case ir::OpKind::Cos:
      return unary_float(who, st, [](const T& x) { return x.cos(); });
    case ir::OpKind::Tanh:
      return unary_float(who, st, [](const T& x) { return x.tanh(); });
    case ir::OpKind::Sigmoid:
      return unary_float(who, st, [](const T& x) { return x.sigmoid(); });
    default:
      c.unknown_kind();
  }
}

// Comparisons and logic (ResultRule::Logical).
std::unique_ptr<Kernel> comparison(const KernelCtx& c) {
  const std::string& who = c.who;
  switch (c.op.kind) {
    case ir::OpKind::Eq:
      return compare(who, [](const T& x, const T& y) { return x.eq(y); });
    case ir::OpKind::Ne:
      return compare(who, [](const T& x, const T& y) { return x.ne(y); });
    case ir::OpKind::Lt:
      return compare(who, [](const T& x, const T& y) { return x.lt(y); });
    case ir::OpKind::Le:
      return compare(who, [](const T& x, const T& y) { return x.le(y); });
    case ir::OpKind::Gt:
      return compare(who, [](const T& x, const T& y) { return x.gt(y); });
    case ir::OpKind::Ge:
      return compare(who, [](const T& x, const T& y) { return x.ge(y); });
    case ir::OpKind::And:
      return compare(who, [](const T& x, const T& y) { return x.logical_and(y); });
    case ir::OpKind::Or:
      return compare(who, [](const T& x, const T& y) { return x.logical_or(y); });
    default:
      c.unknown_kind();
  }
}

}  // namespace

std::unique_ptr<Kernel> unary_kernel(const KernelCtx& c) {
  if (ir::is_float_only(c.op.kind)) return float_function(c);
  const std::string& who = c.who;
  const torch::ScalarType st = c.st;
  switch (c.op.kind) {
    case ir::OpKind::Neg:
      return unary(who, st, [](const T& x) { return x.neg(); });
    case ir::OpKind::Relu:
      return unary(who, st, [](const T& x) { return x.relu(); });
    case ir::OpKind::Abs:
      return unary(who, st, [](const T& x) { return x.abs(); });
    case ir::OpKind::Sign:
      return unary(who, st, [](const T& x) { return x.sign(); });
    case ir::OpKind::Floor:
      return unary(who, st, [](const T& x) { return integral(x.scalar_type()) ? x : x.floor(); });
    case ir::OpKind::Ceil:
      return unary(who, st, [](const T& x) { return integral(x.scalar_type()) ? x : x.ceil(); });
    case ir::OpKind::Not:
      return unary(who, st, [](const T& x) { return x.logical_not(); });
    case ir::OpKind::Cast:
      return unary(who, st, [](const T& x) { return x; });
    default:
      c.unknown_kind();
  }
}

std::unique_ptr<Kernel> binary_kernel(const KernelCtx& c) {
  if (ir::is_logical(c.op.kind)) return comparison(c);
  const std::string& who = c.who;
  const torch::ScalarType st = c.st;
  switch (c.op.kind) {
    case ir::OpKind::Add:
      return arith(who, st, [](const T& x, const T& y) { return x + y; });
    case ir::OpKind::Sub:
      return arith(who, st, [](const T& x, const T& y) { return x - y; });
    case ir::OpKind::Mul:
      return arith(who, st, [](const T& x, const T& y) { return x * y; });
    case ir::OpKind::Div:
      return arith(who, st, [](const T& x, const T& y) { return x / y; });
    case ir::OpKind::Pow:
      return arith(who, st, [](const T& x, const T& y) { return x.pow(y); });
    case ir::OpKind::Maximum:
      return arith(who, st, [](const T& x, const T& y) { return torch::maximum(x, y); });
    case ir::OpKind::Minimum:
      return arith(who, st, [](const T& x, const T& y) { return torch::minimum(x, y); });
    case ir::OpKind::Where:
      return kernel(who, [st](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        out[0] = wrap(torch::where(as(tensor_of(in[0]), torch::kBool), as(tensor_of(in[1]), st),
                                   as(tensor_of(in[2]), st)));
      });
    default:
      c.unknown_kind();
  }
}

}  // namespace tempo::backend::detail
