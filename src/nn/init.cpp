// Parameter initializers.
#include "nn/init.h"

#include <cmath>

#include "util/error.h"

namespace tempo::nn::init {

namespace {

Shape to_shape(const std::vector<int64_t>& s) {
  Shape out;
  for (int64_t d : s) out.dims.emplace_back(d);
  return out;
}

int64_t receptive(const std::vector<int64_t>& shape) {
  int64_t r = 1;
  for (size_t k = 2; k < shape.size(); ++k) r *= shape[k];
  return r;
}

void need_2d(const std::vector<int64_t>& shape, const char* what, Loc loc) {
  if (shape.size() < 2)
    throw UserError(cat(what, " at ", where(loc), " needs a shape with at least 2 dimensions"));
}

}  // namespace

RT uniform(Context& ctx, const std::vector<int64_t>& shape, double lo, double hi, Loc loc) {
  RT u = ctx.rand_uniform(to_shape(shape), {}, DType::Float32, loc);
  return u * (hi - lo) + lo;
}

RT normal(Context& ctx, const std::vector<int64_t>& shape, double mean, double std, Loc loc) {
  RT z = ctx.rand_normal(to_shape(shape), {}, DType::Float32, loc);
  if (mean == 0.0 && std == 1.0) return z;
  return z * std + mean;
}

RT zeros(Context& ctx, const std::vector<int64_t>& shape, Loc loc) {
  return ctx.constant(0.0, to_shape(shape), DType::Float32, {}, loc);
}

RT ones(Context& ctx, const std::vector<int64_t>& shape, Loc loc) {
  return ctx.constant(1.0, to_shape(shape), DType::Float32, {}, loc);
}

int64_t fan_in(const std::vector<int64_t>& shape) {
  if (shape.size() < 2) return shape.empty() ? 1 : shape[0];
  return shape[1] * receptive(shape);
}

int64_t fan_out(const std::vector<int64_t>& shape) {
  if (shape.empty()) return 1;
  return shape[0] * receptive(shape);
}

RT xavier_uniform(Context& ctx, const std::vector<int64_t>& shape, double gain, Loc loc) {
  need_2d(shape, "xavier_uniform", loc);
  double b = gain * std::sqrt(6.0 / static_cast<double>(fan_in(shape) + fan_out(shape)));
  return uniform(ctx, shape, -b, b, loc);
}

RT kaiming_uniform(Context& ctx, const std::vector<int64_t>& shape, double a, Loc loc) {
  double gain = std::sqrt(2.0 / (1.0 + a * a));
  double b = gain * std::sqrt(3.0 / static_cast<double>(fan_in(shape)));
  return uniform(ctx, shape, -b, b, loc);
}

RT orthogonal(Context& ctx, const std::vector<int64_t>& shape, double gain, Loc loc) {
  need_2d(shape, "orthogonal", loc);
  const int64_t rows = shape[0];
  int64_t c = 1;  // prod(shape[1:])
  for (size_t k = 1; k < shape.size(); ++k) c *= shape[k];
  RT z = ctx.rand_normal(Shape({rows, c}), {}, DType::Float32, loc);
  // QR of the tall orientation by modified Gram-Schmidt (double precision): Q's columns are
  // orthonormal, and scaling by sign(diag(R)) makes the result unique as in PyTorch.
  auto fn = [shape, rows, c, gain](const std::vector<HostTensor>& in, const std::vector<int64_t>&) {
    const bool transpose = rows < c;
    const int64_t m = transpose ? c : rows, n = transpose ? rows : c;  // m >= n
    std::vector<double> a(static_cast<size_t>(m * n));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < c; ++k) {
        double v = in[0].at(r * c + k);
        if (transpose)
          a[k * n + r] = v;
        else
          a[r * n + k] = v;
      }
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t p = 0; p < j; ++p) {
        double dot = 0;
        for (int64_t r = 0; r < m; ++r) dot += a[r * n + p] * a[r * n + j];
        for (int64_t r = 0; r < m; ++r) a[r * n + j] -= dot * a[r * n + p];
      }
      double norm = 0;
      for (int64_t r = 0; r < m; ++r) norm += a[r * n + j] * a[r * n + j];
      norm = std::sqrt(norm);
      // R's diagonal entry is the norm (positive), so no sign flip is needed: MGS already gives
      // the positive-diagonal factorization that PyTorch normalizes to.
      for (int64_t r = 0; r < m; ++r) a[r * n + j] = norm > 0 ? a[r * n + j] / norm : 0.0;
    }
    HostTensor out(DType::Float32, shape);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < c; ++k)
        out.set(r * c + k, gain * (transpose ? a[k * n + r] : a[r * n + k]));
    return std::vector<HostTensor>{out};
  };
  return ctx.udf("orthogonal_init", fn, {z}, {TensorType{DType::Float32, to_shape(shape)}}, {},
                 loc)[0];
}

}  // namespace tempo::nn::init
