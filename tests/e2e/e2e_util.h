// Helpers for end-to-end tests: deterministic source RTs and their LibTorch eager twins.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "api/tempo.h"

namespace tempo::testing {

// The value a source produces at a point: a deterministic function of the point and the element
// index, so that every point's tensor differs.
inline float source_value(const std::vector<int64_t>& point, int64_t element, uint64_t salt) {
  uint64_t h = 1469598103934665603ULL ^ salt;
  for (int64_t p : point) h = (h ^ static_cast<uint64_t>(p + 17)) * 1099511628211ULL;
  h = (h ^ static_cast<uint64_t>(element + 3)) * 1099511628211ULL;
  return static_cast<float>(h % 2001) / 1000.0f - 1.0f;  // in [-1, 1]
}

inline torch::Tensor eager_source(const std::vector<int64_t>& point, std::vector<int64_t> shape,
                                  uint64_t salt = 0) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  torch::Tensor t = torch::empty({n}, torch::kFloat32);
  for (int64_t k = 0; k < n; ++k) t[k] = source_value(point, k, salt);
  return t.reshape(shape);
}

// A source UDF over `domain` producing eager_source(point, shape, salt) at every point.
inline RT source(Context& ctx, const Dims& domain, std::vector<int64_t> shape, uint64_t salt = 0,
                 Loc loc = Loc::current()) {
  auto fn = [shape, salt](const std::vector<HostTensor>&, const std::vector<int64_t>& point) {
    HostTensor out(DType::Float32, shape);
    for (int64_t k = 0; k < out.numel(); ++k) out.ptr<float>()[k] = source_value(point, k, salt);
    return std::vector<HostTensor>{out};
  };
  Shape s;
  for (int64_t d : shape) s.dims.emplace_back(d);
  return ctx.udf("source", fn, {}, {TensorType{DType::Float32, s}}, domain, loc)[0];
}

inline torch::Tensor to_torch(const HostTensor& h) {
  std::vector<int64_t> shape(h.shape.begin(), h.shape.end());
  torch::Tensor t = torch::empty(shape, torch::kFloat64);
  auto v = h.to_vector();
  for (size_t k = 0; k < v.size(); ++k) t.view({-1})[k] = v[k];
  return t.to(torch::kFloat32);
}

inline void expect_close(const torch::Tensor& actual, const torch::Tensor& expected,
                         const std::string& what, double tol = 1e-4) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  EXPECT_TRUE(torch::allclose(actual, expected.to(actual.dtype()), tol, tol))
      << what << "\nactual:\n" << actual << "\nexpected:\n" << expected;
}

}  // namespace tempo::testing
