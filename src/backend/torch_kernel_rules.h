// Internal to the backend layer (includes LibTorch): what the LibTorch lowering rules share, and
// one rule per op category (kernels_<category>.cpp), which make_torch_kernel (kernels.cpp)
// dispatches to. Symbolic attributes are compiled against the executor's symbol layout when the
// kernel is made and evaluated at each launch.
#pragma once

#include <c10/util/SmallVector.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/torch_value.h"
#include "util/error.h"

namespace tempo::backend::detail {

using runtime::Kernel;
using runtime::ValuePtr;
using Sizes = c10::SmallVector<int64_t, 6>;

// A kernel from a callable; LibTorch errors become UserErrors naming the op.
template <typename F>
class FnKernel final : public Kernel {
 public:
  FnKernel(std::string who, F f) : who_(std::move(who)), f_(std::move(f)) {}
  void run(ValuePtr* in, size_t n, const int64_t* env, ValuePtr* out) override {
    try {
      f_(in, n, env, out);
    } catch (const c10::Error& e) {
      throw UserError(cat(who_, ": ", e.what_without_backtrace()));
    }
  }

 private:
  std::string who_;
  F f_;
};

template <typename F>
std::unique_ptr<Kernel> kernel(const std::string& who, F f) {
  return std::make_unique<FnKernel<F>>(who, std::move(f));
}

// A symbolic shape compiled for evaluation at launch.
struct SymShape {
  std::vector<sym::CompiledExpr> dims;
  SymShape(const std::vector<Expr>& shape, const sym::SymbolLayout& layout) {
    for (const Expr& d : shape) dims.emplace_back(d, layout);
  }
  bool is_static() const {
    for (const auto& d : dims)
      if (!d.is_constant()) return false;
    return true;
  }
  Sizes eval(const int64_t* env) const {
    Sizes s;
    for (const auto& d : dims) s.push_back(d.eval(env));
    return s;
  }
};

inline torch::Tensor as(const torch::Tensor& t, torch::ScalarType st) {
  return t.scalar_type() == st ? t : t.to(st);
}

inline bool integral(torch::ScalarType st) {
  return st != torch::kFloat32 && st != torch::kFloat64;
}

// A kernel that passes its input on.
inline std::unique_ptr<Kernel> pass_on(const std::string& who) {
  return kernel(who,
                [](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) { out[0] = in[0]; });
}

// The op being lowered, with the attribute accessors the rules share.
struct KernelCtx {
  const ir::Graph& g;
  const ir::OpNode& op;
  const std::string who;
  const ir::Attrs& a;
  const torch::ScalarType st;       // the first output's type (float32 without outputs)
  const torch::TensorOptions opts;  // st on the backend's device
  const sym::SymbolLayout& layout;
  TorchState& state;

  int64_t int_attr(size_t i) const {
    TEMPO_ASSERT(a.ints.size() > i, who, " lacks integer attribute ", i);
    return a.ints[i];
  }
  sym::CompiledExpr expr_attr(size_t i) const {
    TEMPO_ASSERT(a.exprs.size() > i, who, " lacks expression attribute ", i);
    return sym::CompiledExpr(a.exprs[i], layout);
  }
  // The inferred output shape (-1 sizes resolved).
  SymShape out_shape() const {
    TEMPO_ASSERT(!op.outputs.empty());
    return SymShape(op.outputs[0].shape.dims, layout);
  }
  // A category's rule reached with a kind it lacks (the table and the rules disagree).
  [[noreturn]] void unknown_kind() const { internal_error(cat("no LibTorch lowering for ", who)); }
};

std::unique_ptr<Kernel> source_kernel(const KernelCtx& c);      // kernels.cpp
std::unique_ptr<Kernel> flow_kernel(const KernelCtx& c);        // kernels.cpp
std::unique_ptr<Kernel> collective_kernel(const KernelCtx& c);  // kernels.cpp
std::unique_ptr<Kernel> unary_kernel(const KernelCtx& c);       // kernels_elementwise.cpp
std::unique_ptr<Kernel> binary_kernel(const KernelCtx& c);      // kernels_elementwise.cpp
std::unique_ptr<Kernel> reduction_kernel(const KernelCtx& c);   // kernels_reduction.cpp
std::unique_ptr<Kernel> movement_kernel(const KernelCtx& c);    // kernels_movement.cpp
std::unique_ptr<Kernel> indexing_kernel(const KernelCtx& c);    // kernels_indexing.cpp
std::unique_ptr<Kernel> linalg_kernel(const KernelCtx& c);      // kernels_indexing.cpp
std::unique_ptr<Kernel> region_kernel(const KernelCtx& c);      // kernels_region.cpp

}  // namespace tempo::backend::detail
