// Helpers for nn/optim tests: conversions between LibTorch tensors and host tensors.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <string>

#include "api/tempo.h"

namespace tempo::nntest {

inline HostTensor host(const torch::Tensor& t) {
  torch::Tensor c = t.detach().to(torch::kFloat32).contiguous();
  HostTensor h(DType::Float32, c.sizes().vec());
  if (!h.data.empty()) std::memcpy(h.data.data(), c.data_ptr(), h.data.size());
  return h;
}

inline torch::Tensor eager(const HostTensor& h) {
  torch::Tensor t = torch::empty(h.shape, torch::kFloat64);
  auto v = h.to_vector();
  for (size_t k = 0; k < v.size(); ++k) t.view({-1})[static_cast<int64_t>(k)] = v[k];
  return t.to(torch::kFloat32);
}

inline void expect_close(const torch::Tensor& actual, const torch::Tensor& expected,
                         const std::string& what, double tol = 1e-4) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  EXPECT_TRUE(torch::allclose(actual, expected.to(actual.dtype()), tol, tol))
      << what << "\nactual:\n"
      << actual << "\nexpected:\n"
      << expected;
}

}  // namespace tempo::nntest
