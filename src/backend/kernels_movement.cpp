// LibTorch lowering of the kinds that move elements: reshapes, views, pads and concatenations.
#include "backend/torch_kernel_rules.h"

namespace tempo::backend::detail {

namespace {

std::unique_ptr<Kernel> pad(const KernelCtx& c) {
  const int64_t d = c.int_attr(0);
  sym::CompiledExpr before = c.expr_attr(0), after = c.expr_attr(1);
  const double v = c.a.scalar;
  return kernel(
      c.who, [d, before, after, v](const ValuePtr* in, size_t, const int64_t* env, ValuePtr* out) {
        const torch::Tensor& x = tensor_of(in[0]);
        // constant_pad_nd takes (before, after) pairs starting from the last dimension.
        const int64_t j = x.dim() - 1 - d;
        Sizes pad(2 * (j + 1), 0);
        pad[2 * j] = before.eval(env);
        pad[2 * j + 1] = after.eval(env);
        out[0] = wrap(torch::constant_pad_nd(x, pad, v));
      });
}

}  // namespace

std::unique_ptr<Kernel> movement_kernel(const KernelCtx& c) {
  const std::string& who = c.who;
  switch (c.op.kind) {
    case ir::OpKind::Reshape:
    case ir::OpKind::Expand: {
      // The inferred output shape has -1 sizes resolved.
      SymShape shape = c.out_shape();
      const bool expand = c.op.kind == ir::OpKind::Expand;
      return kernel(who,
                    [shape, expand](const ValuePtr* in, size_t, const int64_t* env, ValuePtr* out) {
                      const torch::Tensor& x = tensor_of(in[0]);
                      Sizes s = shape.eval(env);
                      out[0] = wrap(expand ? x.expand(s) : x.reshape(s));
                    });
    }
    case ir::OpKind::Permute: {
      std::vector<int64_t> perm = c.a.ints;
      return kernel(who, [perm](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        out[0] = wrap(tensor_of(in[0]).permute(perm));
      });
    }
    case ir::OpKind::Squeeze: {
      const int64_t d = c.int_attr(0);
      return kernel(who, [d](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        out[0] = wrap(tensor_of(in[0]).squeeze(d));
      });
    }
    case ir::OpKind::Unsqueeze: {
      const int64_t d = c.int_attr(0);
      return kernel(who, [d](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        out[0] = wrap(tensor_of(in[0]).unsqueeze(d));
      });
    }
    case ir::OpKind::Slice: {
      const int64_t d = c.int_attr(0);
      sym::CompiledExpr start = c.expr_attr(0), stop = c.expr_attr(1);
      return kernel(
          who, [d, start, stop](const ValuePtr* in, size_t, const int64_t* env, ValuePtr* out) {
            out[0] = wrap(tensor_of(in[0]).slice(d, start.eval(env), stop.eval(env)));
          });
    }
    case ir::OpKind::Pad:
      return pad(c);
    case ir::OpKind::Flip: {
      const int64_t d = c.int_attr(0);
      return kernel(who, [d](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        out[0] = wrap(tensor_of(in[0]).flip({d}));
      });
    }
    case ir::OpKind::Cat: {
      const int64_t d = c.int_attr(0);
      const torch::ScalarType st = c.st;
      return kernel(who, [d, st](const ValuePtr* in, size_t n, const int64_t*, ValuePtr* out) {
        std::vector<torch::Tensor> ts;
        ts.reserve(n);
        for (size_t i = 0; i < n; ++i) ts.push_back(as(tensor_of(in[i]), st));
        out[0] = wrap(torch::cat(ts, d));
      });
    }
    default:
      c.unknown_kind();
  }
}

}  // namespace tempo::backend::detail
