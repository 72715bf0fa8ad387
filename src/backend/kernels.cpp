// One LibTorch translation per op kind. Symbolic attributes are compiled against the executor's
// symbol layout when the kernel is made and evaluated at each launch.
#include <c10/util/SmallVector.h>

#include "backend/region_kernel.h"
#include "backend/torch_collectives.h"
#include "backend/torch_value.h"
#include "util/error.h"

namespace tempo::backend {

namespace {

// splitmix64's finalizer: decorrelates seeds that differ in a few bits.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

using runtime::Kernel;
using runtime::ValuePtr;

// y[k] = x[k] + gamma link y[k -/+ 1] along dim d (ir::OpKind::DiscountedCumSum): one pass over
// the positions, each a row of the other dims.
torch::Tensor discounted_cumsum(const torch::Tensor& x, const torch::Tensor* done, int64_t d,
                                double gamma, bool reverse) {
  torch::Tensor xs = x.movedim(d, 0).contiguous().cpu();
  torch::Tensor ended;
  if (done) ended = (done->movedim(d, 0) >= 0.5).contiguous().cpu();
  torch::Tensor y = torch::empty_like(xs);
  const int64_t n = xs.size(0), row = n ? xs.numel() / n : 0;
  const bool* cut = done ? ended.data_ptr<bool>() : nullptr;
  AT_DISPATCH_FLOATING_TYPES(xs.scalar_type(), "discounted_cumsum", [&] {
    const scalar_t* in = xs.data_ptr<scalar_t>();
    scalar_t* out = y.data_ptr<scalar_t>();
    const auto g = static_cast<scalar_t>(gamma);
    for (int64_t s = 0; s < n; ++s) {
      const int64_t k = reverse ? n - 1 - s : s;
      const int64_t prev = reverse ? k + 1 : k - 1;  // the position y[k] adds
      const int64_t link = reverse ? k : k - 1;      // whose done cuts the link
      for (int64_t m = 0; m < row; ++m) {
        scalar_t v = in[k * row + m];
        if (s > 0 && !(cut && cut[link * row + m])) v += g * out[prev * row + m];
        out[k * row + m] = v;
      }
    }
  });
  return y.to(x.device()).movedim(0, d);
}
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

bool integral(torch::ScalarType st) {
  return st != torch::kFloat32 && st != torch::kFloat64;
}

std::unique_ptr<Kernel> udf_kernel(const ir::Graph& g, const ir::OpNode& op,
                                   const sym::SymbolLayout& layout, TorchState& state) {
  const std::string who = op.describe();
  std::shared_ptr<const ir::Udf> udf = op.attrs.udf;
  TEMPO_ASSERT(udf != nullptr, who, " has no user function");
  std::vector<int32_t> slots;
  for (const Dim& d : op.domain) slots.push_back(layout.slot(d.var));
  std::vector<SymShape> shapes;
  std::vector<ir::DType> dtypes;
  for (const ir::TensorType& t : op.outputs) {
    shapes.emplace_back(t.shape.dims, layout);
    dtypes.push_back(t.dtype);
  }
  TorchState* st = &state;
  return kernel(who, [=](const ValuePtr* in, size_t n, const int64_t* env, ValuePtr* out) {
    std::vector<ir::HostTensor> inputs;
    inputs.reserve(n);
    for (size_t i = 0; i < n; ++i) inputs.push_back(torch_to_host(tensor_of(in[i])));
    std::vector<int64_t> point;
    point.reserve(slots.size());
    for (int32_t s : slots) point.push_back(env[s]);
    std::vector<ir::HostTensor> res = udf->fn(inputs, point);
    const std::string name = cat("UDF '", udf->name, "' (", who, ")");
    if (res.size() != shapes.size())
      throw UserError(
          cat(name, " returned ", res.size(), " tensors but declares ", shapes.size(), " outputs"));
    for (size_t k = 0; k < res.size(); ++k) {
      Sizes want = shapes[k].eval(env);
      bool same = res[k].shape.size() == want.size();
      for (size_t i = 0; same && i < want.size(); ++i) same = res[k].shape[i] == want[i];
      if (!same || res[k].dtype != dtypes[k]) {
        std::string got = ir::dtype_name(res[k].dtype) + std::string("(");
        for (size_t i = 0; i < res[k].shape.size(); ++i)
          got += (i ? ", " : "") + std::to_string(res[k].shape[i]);
        std::string exp = ir::dtype_name(dtypes[k]) + std::string("(");
        for (size_t i = 0; i < want.size(); ++i) exp += (i ? ", " : "") + std::to_string(want[i]);
        throw UserError(cat(
            name, " output ", k, " is ", got, ") but was declared ", exp, ") at point (",
            [&] {
              std::string p;
              for (size_t i = 0; i < point.size(); ++i)
                p += (i ? ", " : "") + std::to_string(point[i]);
              return p;
            }(),
            ")"));
      }
      out[k] = wrap(host_to_torch(std::move(res[k]), st->device));
    }
  });
}

// A cluster of a region (RegionPlan::Step) run by its generated loop.
std::unique_ptr<Kernel> cluster_kernel(const std::string& who, const ir::Graph& body,
                                       const RegionPlan::Step& step, ClusterFn loop,
                                       const sym::SymbolLayout& layout, bool donation,
                                       torch::Device device) {
  SymShape shape(step.shape.dims, layout);
  std::vector<SymShape> out_shapes;
  std::vector<torch::ScalarType> in_types, out_types;
  for (const auto& [id, k] : step.inputs)
    in_types.push_back(to_torch(body.op(id).outputs[k].dtype));
  for (const auto& [id, k] : step.outputs) {
    out_types.push_back(to_torch(body.op(id).outputs[k].dtype));
    out_shapes.emplace_back(body.op(id).outputs[k].shape.dims, layout);
  }
  const std::vector<Access> access = step.access;
  const size_t split = step.split;
  return kernel(who, [=](const ValuePtr* in, size_t, const int64_t* env, ValuePtr* out) {
    const Sizes sh = shape.eval(env);
    int64_t rows = 1, cols = 1;
    for (size_t d = 0; d < sh.size(); ++d) (d < split ? rows : cols) *= sh[d];
    c10::SmallVector<torch::Tensor, 8> inputs, outputs;
    c10::SmallVector<const void*, 8> in_ptrs;
    c10::SmallVector<void*, 8> out_ptrs;
    for (size_t k = 0; k < in_types.size(); ++k) {
      torch::Tensor t = as(tensor_of(in[k]), in_types[k]);
      if (t.device() != device) t = t.to(device);  // e.g. a value swapped to host memory
      t = access[k] == Access::Expand ? t.expand(sh).contiguous() : t.contiguous();
      const int64_t want = access[k] == Access::Scalar   ? 1
                           : access[k] == Access::Row    ? cols
                           : access[k] == Access::Column ? rows
                                                         : rows * cols;
      if (t.numel() != want)
        internal_error(cat(who, ": generated loop input ", k, " has ", t.numel(),
                           " elements, expected ", want));
      in_ptrs.push_back(t.data_ptr());
      inputs.push_back(std::move(t));
    }
    // Buffer donation (TEMPO §5.2): an element output takes over the buffer of a full input
    // that nothing else can see any more (the caller passed its last reference, no view shares
    // its storage); the loop reads each element before it writes it.
    c10::SmallVector<bool, 8> donated(in_types.size(), false);
    auto donor = [&](const Sizes& want, torch::ScalarType type) -> int {
      for (size_t j = 0; j < in_types.size(); ++j) {
        if (donated[j] || access[j] != Access::Full || in[j].use_count() != 1) continue;
        const torch::Tensor& t = tensor_of(in[j]);
        if (t.scalar_type() != type || !t.is_contiguous() || t.use_count() != 2 ||
            t.storage().use_count() != 1 || t.sizes() != c10::IntArrayRef(want) ||
            t.data_ptr() != inputs[j].data_ptr())
          continue;
        return static_cast<int>(j);
      }
      return -1;
    };
    for (size_t k = 0; k < out_types.size(); ++k) {
      const Sizes want = out_shapes[k].eval(env);
      const int j = donation ? donor(want, out_types[k]) : -1;
      if (j >= 0) {
        donated[j] = true;
        outputs.push_back(inputs[j]);
      } else {
        outputs.push_back(
            torch::empty(want, torch::TensorOptions().dtype(out_types[k]).device(device)));
      }
      out_ptrs.push_back(outputs.back().data_ptr());
    }
    loop(rows, cols, in_ptrs.data(), out_ptrs.data());
    for (size_t k = 0; k < outputs.size(); ++k) out[k] = wrap(std::move(outputs[k]));
  });
}

}  // namespace

std::unique_ptr<Kernel> make_torch_kernel(const ir::Graph& g, ir::OpId id,
                                          const sym::SymbolLayout& layout, TorchState& state) {
  const ir::OpNode& op = g.op(id);
  const std::string who = op.describe();
  const ir::Attrs& a = op.attrs;
  const torch::ScalarType st = op.outputs.empty() ? torch::kFloat32 : to_torch(op.outputs[0].dtype);
  const torch::TensorOptions opts = torch::TensorOptions().dtype(st).device(state.device);
  auto int_attr = [&](size_t i) {
    TEMPO_ASSERT(a.ints.size() > i, who, " lacks integer attribute ", i);
    return a.ints[i];
  };
  auto expr_attr = [&](size_t i) {
    TEMPO_ASSERT(a.exprs.size() > i, who, " lacks expression attribute ", i);
    return sym::CompiledExpr(a.exprs[i], layout);
  };
  auto out_shape = [&]() {
    TEMPO_ASSERT(!op.outputs.empty());
    return SymShape(op.outputs[0].shape.dims, layout);
  };
  TorchState* state_ptr = &state;

  switch (op.kind) {
    // ---- sources ----
    case ir::OpKind::Const: {
      SymShape shape(a.exprs, layout);
      const double v = a.scalar;
      if (shape.is_static()) {
        // Values are never mutated, so one tensor serves every point.
        ValuePtr cached = wrap(torch::full(shape.eval(nullptr), v, opts));
        return kernel(who, [cached](const ValuePtr*, size_t, const int64_t*, ValuePtr* out) {
          out[0] = cached;
        });
      }
      return kernel(who,
                    [shape, v, opts](const ValuePtr*, size_t, const int64_t* env, ValuePtr* out) {
                      out[0] = wrap(torch::full(shape.eval(env), v, opts));
                    });
    }
    case ir::OpKind::RandUniform:
    case ir::OpKind::RandNormal: {
      SymShape shape(a.exprs, layout);
      const bool normal = op.kind == ir::OpKind::RandNormal;
      const uint64_t stream = a.ints.empty() ? static_cast<uint64_t>(op.id) : a.ints[0];
      std::vector<int32_t> slots;
      for (const Dim& d : op.domain) slots.push_back(layout.slot(d.var));
      // A draw is a function of (seed, stream, point): values do not depend on the order in
      // which the schedule runs the draws, nor on the device (drawn on the CPU generator).
      const torch::ScalarType gen_st = integral(st) ? torch::kFloat32 : st;
      return kernel(who, [=](const ValuePtr*, size_t, const int64_t* env, ValuePtr* out) {
        uint64_t h = mix(state_ptr->seed ^ mix(stream));
        for (int32_t s : slots) h = mix(h ^ static_cast<uint64_t>(env[s]));
        auto o = torch::TensorOptions().dtype(gen_st);
        // The executor launches one kernel at a time (torch::rand locks the generator itself).
        state_ptr->generator.set_current_seed(h);
        torch::Tensor t = normal ? torch::randn(shape.eval(env), state_ptr->generator, o)
                                 : torch::rand(shape.eval(env), state_ptr->generator, o);
        out[0] = wrap(as(t, st).to(state_ptr->device));
      });
    }
    case ir::OpKind::Arange: {
      sym::CompiledExpr n = expr_attr(0);
      return kernel(who, [n, opts](const ValuePtr*, size_t, const int64_t* env, ValuePtr* out) {
        out[0] = wrap(torch::arange(n.eval(env), opts));
      });
    }
    case ir::OpKind::EvalSymbol: {
      sym::CompiledExpr e = expr_attr(0);
      auto o = torch::TensorOptions().dtype(torch::kInt64).device(state.device);
      return kernel(who, [e, o](const ValuePtr*, size_t, const int64_t* env, ValuePtr* out) {
        out[0] = wrap(torch::scalar_tensor(e.eval(env), o));
      });
    }
    case ir::OpKind::Udf:
      return udf_kernel(g, op, layout, state);
    case ir::OpKind::Merge:
      internal_error(cat("make_kernel called for the Merge ", who));
    case ir::OpKind::Identity:
    case ir::OpKind::Detach:
      return kernel(
          who, [](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) { out[0] = in[0]; });

    // ---- collectives (backend/distributed.h) ----
    case ir::OpKind::AllReduce: {
      std::shared_ptr<TorchProcessGroup> pg = state.process_group;
      const bool mean = int_attr(0) == 1;
      if (!pg || pg->world_size() == 1)
        return kernel(
            who, [](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) { out[0] = in[0]; });
      const torch::Device device = state.device;
      return kernel(who, [pg, mean, device](const ValuePtr* in, size_t, const int64_t*,
                                            ValuePtr* out) {
        // Values are immutable (others may hold the input): reduce a copy, on the CPU
        // (Gloo's transport).
        torch::Tensor t =
            tensor_of(in[0]).to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true).contiguous();
        pg->all_reduce_sum(t);
        if (mean) t.div_(pg->world_size());
        out[0] = wrap(t.to(device));
      });
    }
    case ir::OpKind::Broadcast: {
      std::shared_ptr<TorchProcessGroup> pg = state.process_group;
      const int64_t root = int_attr(0);
      if (pg && root >= pg->world_size())
        throw UserError(
            cat(who, ": broadcast from rank ", root, " in a job of ", pg->world_size(), " ranks"));
      if (!pg || pg->world_size() == 1)
        return kernel(
            who, [](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) { out[0] = in[0]; });
      const torch::Device device = state.device;
      return kernel(who,
                    [pg, root, device](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
                      torch::Tensor t = tensor_of(in[0]).to(torch::kCPU, false, true).contiguous();
                      pg->broadcast(t, static_cast<int>(root));
                      out[0] = wrap(t.to(device));
                    });
    }

    // ---- elementwise unary ----
    case ir::OpKind::Neg:
      return unary(who, st, [](const torch::Tensor& x) { return x.neg(); });
    case ir::OpKind::Exp:
      return unary_float(who, st, [](const torch::Tensor& x) { return x.exp(); });
    case ir::OpKind::Log:
      return unary_float(who, st, [](const torch::Tensor& x) { return x.log(); });
    case ir::OpKind::Sqrt:
      return unary_float(who, st, [](const torch::Tensor& x) { return x.sqrt(); });
    case ir::OpKind::Sin:
      return unary_float(who, st, [](const torch::Tensor& x) { return x.sin(); });
    case ir::OpKind::Cos:
      return unary_float(who, st, [](const torch::Tensor& x) { return x.cos(); });
    case ir::OpKind::Tanh:
      return unary_float(who, st, [](const torch::Tensor& x) { return x.tanh(); });
    case ir::OpKind::Sigmoid:
      return unary_float(who, st, [](const torch::Tensor& x) { return x.sigmoid(); });
    case ir::OpKind::Relu:
      return unary(who, st, [](const torch::Tensor& x) { return x.relu(); });
    case ir::OpKind::Abs:
      return unary(who, st, [](const torch::Tensor& x) { return x.abs(); });
    case ir::OpKind::Sign:
      return unary(who, st, [](const torch::Tensor& x) { return x.sign(); });
    case ir::OpKind::Floor:
      return unary(who, st, [](const torch::Tensor& x) {
        return integral(x.scalar_type()) ? x : x.floor();
      });
    case ir::OpKind::Ceil:
      return unary(who, st,
                   [](const torch::Tensor& x) { return integral(x.scalar_type()) ? x : x.ceil(); });
    case ir::OpKind::Not:
      return unary(who, st, [](const torch::Tensor& x) { return x.logical_not(); });
    case ir::OpKind::Cast:
      return unary(who, st, [](const torch::Tensor& x) { return x; });

    // ---- elementwise binary ----
    case ir::OpKind::Add:
      return arith(who, st, [](const torch::Tensor& x, const torch::Tensor& y) { return x + y; });
    case ir::OpKind::Sub:
      return arith(who, st, [](const torch::Tensor& x, const torch::Tensor& y) { return x - y; });
    case ir::OpKind::Mul:
      return arith(who, st, [](const torch::Tensor& x, const torch::Tensor& y) { return x * y; });
    case ir::OpKind::Div:
      return arith(who, st, [](const torch::Tensor& x, const torch::Tensor& y) { return x / y; });
    case ir::OpKind::Pow:
      return arith(who, st,
                   [](const torch::Tensor& x, const torch::Tensor& y) { return x.pow(y); });
    case ir::OpKind::Maximum:
      return arith(who, st, [](const torch::Tensor& x, const torch::Tensor& y) {
        return torch::maximum(x, y);
      });
    case ir::OpKind::Minimum:
      return arith(who, st, [](const torch::Tensor& x, const torch::Tensor& y) {
        return torch::minimum(x, y);
      });
    case ir::OpKind::Eq:
      return compare(who, [](const torch::Tensor& x, const torch::Tensor& y) { return x.eq(y); });
    case ir::OpKind::Ne:
      return compare(who, [](const torch::Tensor& x, const torch::Tensor& y) { return x.ne(y); });
    case ir::OpKind::Lt:
      return compare(who, [](const torch::Tensor& x, const torch::Tensor& y) { return x.lt(y); });
    case ir::OpKind::Le:
      return compare(who, [](const torch::Tensor& x, const torch::Tensor& y) { return x.le(y); });
    case ir::OpKind::Gt:
      return compare(who, [](const torch::Tensor& x, const torch::Tensor& y) { return x.gt(y); });
    case ir::OpKind::Ge:
      return compare(who, [](const torch::Tensor& x, const torch::Tensor& y) { return x.ge(y); });
    case ir::OpKind::And:
      return compare(
          who, [](const torch::Tensor& x, const torch::Tensor& y) { return x.logical_and(y); });
    case ir::OpKind::Or:
      return compare(
          who, [](const torch::Tensor& x, const torch::Tensor& y) { return x.logical_or(y); });
    case ir::OpKind::Where:
      return kernel(who, [st](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        out[0] = wrap(torch::where(as(tensor_of(in[0]), torch::kBool), as(tensor_of(in[1]), st),
                                   as(tensor_of(in[2]), st)));
      });

    // ---- reductions and scans ----
    case ir::OpKind::Sum: {
      std::vector<int64_t> dims = a.ints;
      const bool keep = a.keepdim;
      return kernel(who,
                    [dims, keep, st](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
                      const torch::Tensor& x = tensor_of(in[0]);
                      torch::Tensor r;
                      if (!dims.empty()) {
                        r = x.sum(dims, keep);
                      } else if (keep) {
                        std::vector<int64_t> all(x.dim());
                        for (int64_t i = 0; i < x.dim(); ++i) all[i] = i;
                        r = x.dim() ? x.sum(all, true) : x.sum();
                      } else {
                        r = x.sum();
                      }
                      out[0] = wrap(as(r, st));
                    });
    }
    case ir::OpKind::ReduceMax: {
      const int64_t d = int_attr(0);
      const bool keep = a.keepdim;
      return kernel(who, [d, keep](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        auto r = tensor_of(in[0]).max(d, keep);
        out[0] = wrap(std::get<0>(r));
        out[1] = wrap(std::get<1>(r));
      });
    }
    case ir::OpKind::TopK: {
      TEMPO_ASSERT(a.exprs.size() == 1 && a.exprs[0].is_const(), who, " lacks its k");
      const int64_t d = int_attr(0), k = a.exprs[0].value();
      return kernel(who, [d, k](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        auto r = tensor_of(in[0]).topk(k, d, /*largest=*/true, /*sorted=*/true);
        out[0] = wrap(std::get<0>(r));
        out[1] = wrap(std::get<1>(r));
      });
    }
    case ir::OpKind::DiscountedSum: {
      const int64_t d = int_attr(0);
      const double gamma = a.scalar;
      return kernel(who, [d, gamma](const ValuePtr* in, size_t n, const int64_t*, ValuePtr* out) {
        const torch::Tensor& x = tensor_of(in[0]);
        std::vector<int64_t> shape(x.dim(), 1);
        shape[d] = x.size(d);
        torch::Tensor w = torch::pow(gamma, torch::arange(x.size(d), x.options())).reshape(shape);
        if (n == 2) {  // zero from the step after the first episode end on
          torch::Tensor ended = (tensor_of(in[1]) >= 0.5).to(x.scalar_type());
          w = w * ((ended.cumsum(d) - ended) < 0.5).to(x.scalar_type());
        }
        out[0] = wrap((x * w).sum(d));
      });
    }
    case ir::OpKind::DiscountedCumSum: {
      const int64_t d = int_attr(0);
      const double gamma = a.scalar;
      const bool reverse = a.exprs[0].value() != 0;
      return kernel(
          who, [d, gamma, reverse](const ValuePtr* in, size_t n, const int64_t*, ValuePtr* out) {
            const torch::Tensor* done = n == 2 ? &tensor_of(in[1]) : nullptr;
            out[0] = wrap(discounted_cumsum(tensor_of(in[0]), done, d, gamma, reverse));
          });
    }
    case ir::OpKind::CumSum: {
      const int64_t d = int_attr(0);
      return kernel(who, [d, st](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        out[0] = wrap(as(tensor_of(in[0]).cumsum(d), st));
      });
    }

    // ---- movement ----
    case ir::OpKind::Reshape:
    case ir::OpKind::Expand: {
      // The inferred output shape has -1 sizes resolved.
      SymShape shape = out_shape();
      const bool expand = op.kind == ir::OpKind::Expand;
      return kernel(who,
                    [shape, expand](const ValuePtr* in, size_t, const int64_t* env, ValuePtr* out) {
                      const torch::Tensor& x = tensor_of(in[0]);
                      Sizes s = shape.eval(env);
                      out[0] = wrap(expand ? x.expand(s) : x.reshape(s));
                    });
    }
    case ir::OpKind::Permute: {
      std::vector<int64_t> perm = a.ints;
      return kernel(who, [perm](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        out[0] = wrap(tensor_of(in[0]).permute(perm));
      });
    }
    case ir::OpKind::Squeeze: {
      const int64_t d = int_attr(0);
      return kernel(who, [d](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        out[0] = wrap(tensor_of(in[0]).squeeze(d));
      });
    }
    case ir::OpKind::Unsqueeze: {
      const int64_t d = int_attr(0);
      return kernel(who, [d](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        out[0] = wrap(tensor_of(in[0]).unsqueeze(d));
      });
    }
    case ir::OpKind::Slice: {
      const int64_t d = int_attr(0);
      sym::CompiledExpr start = expr_attr(0), stop = expr_attr(1);
      return kernel(
          who, [d, start, stop](const ValuePtr* in, size_t, const int64_t* env, ValuePtr* out) {
            out[0] = wrap(tensor_of(in[0]).slice(d, start.eval(env), stop.eval(env)));
          });
    }
    case ir::OpKind::Pad: {
      const int64_t d = int_attr(0);
      sym::CompiledExpr before = expr_attr(0), after = expr_attr(1);
      const double v = a.scalar;
      return kernel(who, [d, before, after, v](const ValuePtr* in, size_t, const int64_t* env,
                                               ValuePtr* out) {
        const torch::Tensor& x = tensor_of(in[0]);
        // constant_pad_nd takes (before, after) pairs starting from the last dimension.
        const int64_t j = x.dim() - 1 - d;
        Sizes pad(2 * (j + 1), 0);
        pad[2 * j] = before.eval(env);
        pad[2 * j + 1] = after.eval(env);
        out[0] = wrap(torch::constant_pad_nd(x, pad, v));
      });
    }
    case ir::OpKind::Flip: {
      const int64_t d = int_attr(0);
      return kernel(who, [d](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        out[0] = wrap(tensor_of(in[0]).flip({d}));
      });
    }
    case ir::OpKind::Cat: {
      const int64_t d = int_attr(0);
      return kernel(who, [d, st](const ValuePtr* in, size_t n, const int64_t*, ValuePtr* out) {
        std::vector<torch::Tensor> ts;
        ts.reserve(n);
        for (size_t i = 0; i < n; ++i) ts.push_back(as(tensor_of(in[i]), st));
        out[0] = wrap(torch::cat(ts, d));
      });
    }

    // ---- indexing ----
    case ir::OpKind::Index: {
      const int64_t d = int_attr(0);
      sym::CompiledExpr pos = expr_attr(0);
      return kernel(who, [d, pos](const ValuePtr* in, size_t, const int64_t* env, ValuePtr* out) {
        out[0] = wrap(tensor_of(in[0]).select(d, pos.eval(env)));
      });
    }
    // A gather may read a value kept in host memory (a swapped rollout read where it is, e.g.
    // PPO's minibatch rows): it runs there and only the selected elements move to the device.
    case ir::OpKind::IndexSelect:
    case ir::OpKind::Gather: {
      const int64_t d = int_attr(0);
      const bool rows = op.kind == ir::OpKind::IndexSelect;
      const torch::Device device = state.device;
      return kernel(
          who, [d, rows, device](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
            const torch::Tensor& src = tensor_of(in[0]);
            torch::Tensor idx = as(tensor_of(in[1]), torch::kInt64).to(src.device());
            out[0] = wrap((rows ? src.index_select(d, idx) : src.gather(d, idx)).to(device));
          });
    }
    case ir::OpKind::ScatterAdd:
    case ir::OpKind::IndexAdd: {
      const int64_t d = int_attr(0);
      const bool scatter = op.kind == ir::OpKind::ScatterAdd;
      return kernel(
          who, [d, st, scatter](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
            torch::Tensor self = as(tensor_of(in[0]), st);
            torch::Tensor idx = as(tensor_of(in[1]), torch::kInt64);
            torch::Tensor src = as(tensor_of(in[2]), st);
            out[0] = wrap(scatter ? self.scatter_add(d, idx, src) : self.index_add(d, idx, src));
          });
    }

    // ---- linear algebra ----
    case ir::OpKind::MatMul:
      return arith(who, st, [](const torch::Tensor& x, const torch::Tensor& y) {
        return torch::matmul(x, y);
      });
    case ir::OpKind::Conv2d: {
      const int64_t stride = a.ints.size() > 0 ? a.ints[0] : 1;
      const int64_t padding = a.ints.size() > 1 ? a.ints[1] : 0;
      return kernel(
          who, [st, stride, padding](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
            out[0] = wrap(torch::conv2d(as(tensor_of(in[0]), st), as(tensor_of(in[1]), st), {},
                                        stride, padding));
          });
    }

    // ---- dataflow regions ----
    case ir::OpKind::Fused: {
      auto it = state.regions.find(id);
      const CompiledRegion* compiled = it == state.regions.end() ? nullptr : &it->second;
      const RegionPlan plan = compiled ? compiled->plan : plan_region(*a.region, false);
      return make_region_kernel(
          op, plan,
          [&](const ir::Graph& body, ir::OpId b) {
            return make_torch_kernel(body, b, layout, state);
          },
          [&](size_t k) -> std::unique_ptr<Kernel> {
            if (!compiled || !compiled->loops[k]) return nullptr;
            return cluster_kernel(who, a.region->body, plan.steps[k], compiled->loops[k], layout,
                                  state.donation, state.device);
          });
    }
    case ir::OpKind::Param:
      break;  // read by the region kernel itself
  }
  internal_error(cat("no LibTorch lowering for ", who));
}

}  // namespace tempo::backend
