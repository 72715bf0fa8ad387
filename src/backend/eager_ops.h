// Eager tensor operations for code outside the backend that computes with tensors directly
// rather than through a compiled program: the graph-rewrite layer's reference interpreter and its
// cost model, which times single operators. The tensors are LibTorch's, held opaquely: this header
// includes no LibTorch header, and nothing here knows the callers' types.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace tempo::backend::eager {

using Dims = std::vector<int64_t>;

// A tensor (float32 or float64). Copies share the data, as LibTorch's tensors do.
class Tensor {
 public:
  struct Impl;
  Tensor() = default;
  explicit Tensor(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  const Impl& impl() const { return *impl_; }
  bool defined() const { return impl_ != nullptr; }

 private:
  std::shared_ptr<Impl> impl_;
};

// `values` (row-major) as a tensor of `shape`: float64 if `keep_double`, else float32.
Tensor from_values(const Dims& shape, const std::vector<double>& values, bool keep_double);
// Standard normal float32 values.
Tensor randn(const Dims& shape);
Dims shape(const Tensor& x);
// The values as float64, row-major.
std::vector<double> values(const Tensor& x);

enum class Activation { None, Relu, Tanh, Sigmoid };
// Applies `a` in place to a tensor that nothing else reads yet and returns it.
Tensor activate(Tensor x, Activation a);

Tensor matmul(const Tensor& a, const Tensor& b);
// 2-d convolution without bias (NCHW input, OIHW weight); `stride` and `padding`: {h, w}.
Tensor conv2d(const Tensor& x, const Tensor& w, const Dims& stride, const Dims& padding);
Tensor max_pool2d(const Tensor& x, const Dims& kernel, const Dims& stride, const Dims& padding);
// Padding excluded from the average.
Tensor avg_pool2d(const Tensor& x, const Dims& kernel, const Dims& stride, const Dims& padding);
Tensor relu(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor add(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
// The parts, each copied into contiguous memory.
std::vector<Tensor> split(const Tensor& x, const Dims& sizes, int64_t axis);
// The permuted tensor in contiguous memory (the data moves).
Tensor transpose(const Tensor& x, const Dims& perm);
Tensor reshape(const Tensor& x, const Dims& shape);
// Zero padding of the last two dimensions: {left, right, top, bottom}.
Tensor pad_zeros(const Tensor& x, const Dims& pads);

// No gradient recording, and LibTorch's intra-op threads set to `threads` (> 0) while it lives.
class Scope {
 public:
  explicit Scope(int threads = 0);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tempo::backend::eager
