// LibTorch lowering of reductions and scans.
#include "backend/torch_kernel_rules.h"

namespace tempo::backend::detail {

namespace {

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
std::unique_ptr<Kernel> sum(const KernelCtx& c) {
  std::vector<int64_t> dims = c.a.ints;
  const bool keep = c.a.keepdim;
  const torch::ScalarType st = c.st;
  return kernel(c.who, [dims, keep, st](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
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

std::unique_ptr<Kernel> discounted_sum(const KernelCtx& c) {
  const int64_t d = c.int_attr(0);
  const double gamma = c.a.scalar;
  return kernel(c.who, [d, gamma](const ValuePtr* in, size_t n, const int64_t*, ValuePtr* out) {
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

}  // namespace

std::unique_ptr<Kernel> reduction_kernel(const KernelCtx& c) {
  const std::string& who = c.who;
  const ir::Attrs& a = c.a;
  switch (c.op.kind) {
    case ir::OpKind::Sum:
      return sum(c);
    case ir::OpKind::ReduceMax: {
      const int64_t d = c.int_attr(0);
      const bool keep = a.keepdim;
      return kernel(who, [d, keep](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        auto r = tensor_of(in[0]).max(d, keep);
        out[0] = wrap(std::get<0>(r));
        out[1] = wrap(std::get<1>(r));
      });
    }
    case ir::OpKind::TopK: {
      TEMPO_ASSERT(a.exprs.size() == 1 && a.exprs[0].is_const(), who, " lacks its k");
      const int64_t d = c.int_attr(0), k = a.exprs[0].value();
      return kernel(who, [d, k](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        auto r = tensor_of(in[0]).topk(k, d, /*largest=*/true, /*sorted=*/true);
        out[0] = wrap(std::get<0>(r));
        out[1] = wrap(std::get<1>(r));
      });
    }
    case ir::OpKind::DiscountedSum:
      return discounted_sum(c);
    case ir::OpKind::DiscountedCumSum: {
      const int64_t d = c.int_attr(0);
      const double gamma = a.scalar;
      const bool reverse = a.exprs[0].value() != 0;
      return kernel(
          who, [d, gamma, reverse](const ValuePtr* in, size_t n, const int64_t*, ValuePtr* out) {
            const torch::Tensor* done = n == 2 ? &tensor_of(in[1]) : nullptr;
            out[0] = wrap(discounted_cumsum(tensor_of(in[0]), done, d, gamma, reverse));
          });
    }
    case ir::OpKind::CumSum: {
      const int64_t d = c.int_attr(0);
      const torch::ScalarType st = c.st;
      return kernel(who, [d, st](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        out[0] = wrap(as(tensor_of(in[0]).cumsum(d), st));
      });
    }
    default:
      c.unknown_kind();
  }
}

}  // namespace tempo::backend::detail
