// LibTorch lowering: a dispatch on the op kind's category (op_kind.h) to its rule
// (kernels_<category>.cpp); the rules of sources, values passed on and collectives are here.
#include <cmath>
#include <limits>

#include "backend/torch_collectives.h"
#include "backend/torch_kernel_rules.h"

namespace tempo::backend {

namespace detail {

namespace {

// splitmix64's finalizer: decorrelates seeds that differ in a few bits.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// n values of the draw keyed h: splitmix64's sequence from state h (element k is mix(h + k
// golden), a counter-based generator: no state to seed), as uniforms in [0, 1) of the type's
// precision, or as standard normals by Box-Muller from the two uniforms (2k, 2k + 1).
template <typename T>
void draw(uint64_t h, bool normal, T* out, int64_t n) {
  constexpr int bits = std::numeric_limits<T>::digits;  // 24 for float, 53 for double
  constexpr double ulp = 1.0 / static_cast<double>(uint64_t{1} << bits);
  auto uniform = [h](uint64_t k) {  // in [0, 1)
    return static_cast<double>(mix(h + k * 0x9e3779b97f4a7c15ULL) >> (64 - bits)) * ulp;
  };
  for (int64_t k = 0; k < n; ++k) {
    const auto u = static_cast<uint64_t>(k);
    if (!normal) {
      out[k] = static_cast<T>(uniform(u));
      continue;
    }
    const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform(2 * u)));  // 1 - u in (0, 1]
    out[k] = static_cast<T>(radius * std::cos(2.0 * M_PI * uniform(2 * u + 1)));
  }
}

std::unique_ptr<Kernel> udf_kernel(const KernelCtx& c) {
  const ir::OpNode& op = c.op;
  const std::string& who = c.who;
  const sym::SymbolLayout& layout = c.layout;
  std::shared_ptr<const ir::Udf> udf = op.attrs.udf;
  TEMPO_ASSERT(udf != nullptr, who, " has no user function");
  TorchState* st = &c.state;
  if (udf->constant) {  // made once per run, or once for every run (TorchState::keep_constants)
    if (!st->keep_constants)
      return kernel(who, [udf, st](const ValuePtr*, size_t, const int64_t*, ValuePtr* out) {
        out[0] = wrap(host_to_torch(*udf->constant, st->device));
      });
    return kernel(who, [udf, st, kept = ValuePtr()](const ValuePtr*, size_t, const int64_t*,
                                                    ValuePtr* out) mutable {
      // Values are never mutated, so one tensor serves every run (on the CPU, the constant's own
      // bytes); the kernel's reference keeps it from being donated.
      if (!kept) kept = wrap(host_to_torch(udf->constant, st->device));
      out[0] = kept;
    });
  }
  std::vector<int32_t> slots;
  for (const Dim& d : op.domain) slots.push_back(layout.slot(d.var));
  std::vector<SymShape> shapes;
  std::vector<ir::DType> dtypes;
  for (const ir::TensorType& t : op.outputs) {
    shapes.emplace_back(t.shape.dims, layout);
    dtypes.push_back(t.dtype);
  }
  return kernel(who, [=](const ValuePtr* in, size_t n, const int64_t* env, ValuePtr* out) {
    std::vector<ir::HostTensor> inputs;
    inputs.reserve(n);
    for (size_t i = 0; i < n; ++i) inputs.push_back(torch_to_host(tensor_of(in[i])));
    std::vector<int64_t> point;
    point.reserve(slots.size());
    for (int32_t s : slots) point.push_back(env[s]);
    std::vector<ir::HostTensor> res = udf->fn(inputs, point);
    auto name = [&] { return cat("UDF '", udf->name, "' (", who, ")"); };  // for errors only
    if (res.size() != shapes.size())
      throw UserError(
          cat(name(), " returned ", res.size(), " tensors but declares ", shapes.size(),
              " outputs"));
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
            name(), " output ", k, " is ", got, ") but was declared ", exp, ") at point (",
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

}  // namespace

std::unique_ptr<Kernel> source_kernel(const KernelCtx& c) {
  const ir::OpNode& op = c.op;
  const ir::Attrs& a = c.a;
  const std::string& who = c.who;
  const torch::ScalarType st = c.st;
  const torch::TensorOptions opts = c.opts;
  switch (op.kind) {
    case ir::OpKind::Const: {
      SymShape shape(a.exprs, c.layout);
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
      SymShape shape(a.exprs, c.layout);
      const bool normal = op.kind == ir::OpKind::RandNormal;
      // Each key dim's coordinate: a slot of the point, or an axis of the leading ones
      // (vectorization drew the points of those dims at once: ir::DrawKey).
      const ir::DrawKey key = ir::draw_key(op);
      const size_t leading = key.leading_axes();
      std::vector<int32_t> slots;
      for (int64_t s : key.sources)
        slots.push_back(s < 0 ? c.layout.slot(op.domain[static_cast<size_t>(-1 - s)].var) : 0);
      // A draw is a function of (seed, stream, point): values do not depend on the order in
      // which the schedule runs the draws, on the device, nor on LibTorch's version.
      const torch::ScalarType gen_st = st == torch::kFloat64 ? st : torch::kFloat32;
      TorchState* state_ptr = &c.state;
      return kernel(who, [=](const ValuePtr*, size_t, const int64_t* env, ValuePtr* out) {
        const Sizes sizes = shape.eval(env);
        torch::Tensor t = torch::empty(sizes, torch::TensorOptions().dtype(gen_st));
        int64_t points = 1;
        for (size_t k = 0; k < leading; ++k) points *= sizes[k];
        const int64_t per_point = points == 0 ? 0 : t.numel() / points;
        std::vector<int64_t> index(leading, 0);  // the point's leading axes, row-major
        const uint64_t stream = mix(state_ptr->seed ^ mix(static_cast<uint64_t>(key.stream)));
        for (int64_t p = 0; p < points; ++p) {
          uint64_t h = stream;
          for (size_t j = 0; j < slots.size(); ++j) {
            const int64_t x = key.sources[j] < 0 ? env[slots[j]] : index[key.sources[j]];
            h = mix(h ^ (static_cast<uint64_t>(x) + static_cast<uint64_t>(key.offsets[j])));
          }
          if (gen_st == torch::kFloat64)
            draw(h, normal, t.data_ptr<double>() + p * per_point, per_point);
          else
            draw(h, normal, t.data_ptr<float>() + p * per_point, per_point);
          for (size_t k = leading; k-- > 0;) {
            if (++index[k] < sizes[k]) break;
            index[k] = 0;
          }
        }
        out[0] = wrap(as(t, st).to(state_ptr->device));
      });
    }
    case ir::OpKind::Arange: {
      sym::CompiledExpr n = c.expr_attr(0);
      return kernel(who, [n, opts](const ValuePtr*, size_t, const int64_t* env, ValuePtr* out) {
        out[0] = wrap(torch::arange(n.eval(env), opts));
      });
    }
    case ir::OpKind::EvalSymbol: {
      sym::CompiledExpr e = c.expr_attr(0);
      auto o = torch::TensorOptions().dtype(torch::kInt64).device(c.state.device);
      return kernel(who, [e, o](const ValuePtr*, size_t, const int64_t* env, ValuePtr* out) {
        out[0] = wrap(torch::scalar_tensor(e.eval(env), o));
      });
    }
    default:
      c.unknown_kind();
  }
}

std::unique_ptr<Kernel> flow_kernel(const KernelCtx& c) {
  switch (c.op.kind) {
    case ir::OpKind::Udf:
      return udf_kernel(c);
    case ir::OpKind::Merge:
      internal_error(cat("make_kernel called for the Merge ", c.who));
    case ir::OpKind::Identity:
    case ir::OpKind::Detach:
      return pass_on(c.who);
    default:
      c.unknown_kind();
  }
}

// Collectives (backend/distributed.h).
std::unique_ptr<Kernel> collective_kernel(const KernelCtx& c) {
  const std::string& who = c.who;
  std::shared_ptr<TorchProcessGroup> pg = c.state.process_group;
  const torch::Device device = c.state.device;
  switch (c.op.kind) {
    case ir::OpKind::AllReduce: {
      const bool mean = c.int_attr(0) == 1;
      if (!pg || pg->world_size() == 1) return pass_on(who);
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
      const int64_t root = c.int_attr(0);
      if (pg && root >= pg->world_size())
        throw UserError(
            cat(who, ": broadcast from rank ", root, " in a job of ", pg->world_size(), " ranks"));
      if (!pg || pg->world_size() == 1) return pass_on(who);
      return kernel(who,
                    [pg, root, device](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
                      torch::Tensor t = tensor_of(in[0]).to(torch::kCPU, false, true).contiguous();
                      pg->broadcast(t, static_cast<int>(root));
                      out[0] = wrap(t.to(device));
                    });
    }
    default:
      c.unknown_kind();
  }
}

}  // namespace detail

std::unique_ptr<runtime::Kernel> make_torch_kernel(const ir::Graph& g, ir::OpId id,
                                                   const sym::SymbolLayout& layout,
                                                   TorchState& state) {
  const ir::OpNode& op = g.op(id);
  const torch::ScalarType st = op.outputs.empty() ? torch::kFloat32 : to_torch(op.outputs[0].dtype);
  const torch::TensorOptions opts = torch::TensorOptions().dtype(st).device(state.device);
  const detail::KernelCtx c{g, op, op.describe(), op.attrs, st, opts, layout, state};
  switch (ir::op_kind_category(op.kind)) {
    case ir::OpCategory::Source:
      return detail::source_kernel(c);
    case ir::OpCategory::Flow:
      return detail::flow_kernel(c);
    case ir::OpCategory::Unary:
      return detail::unary_kernel(c);
    case ir::OpCategory::Binary:
      return detail::binary_kernel(c);
    case ir::OpCategory::Reduction:
      return detail::reduction_kernel(c);
    case ir::OpCategory::Movement:
      return detail::movement_kernel(c);
    case ir::OpCategory::Indexing:
      return detail::indexing_kernel(c);
    case ir::OpCategory::LinearAlgebra:
      return detail::linalg_kernel(c);
    case ir::OpCategory::Region:
      return detail::region_kernel(c);
    case ir::OpCategory::Collective:
      return detail::collective_kernel(c);
  }
  c.unknown_kind();
}

}  // namespace tempo::backend
