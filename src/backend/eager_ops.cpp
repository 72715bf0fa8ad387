#include "backend/eager_ops.h"

#include <torch/torch.h>

namespace tempo::backend::eager {

struct Tensor::Impl {
  torch::Tensor t;
};

namespace {

Tensor wrap(torch::Tensor t) {
  return Tensor(std::make_shared<Tensor::Impl>(Tensor::Impl{std::move(t)}));
}

const torch::Tensor& raw(const Tensor& x) {
  return x.impl().t;
}

}  // namespace

Tensor from_values(const Dims& shape, const std::vector<double>& values, bool keep_double) {
  auto t = torch::from_blob(const_cast<double*>(values.data()),
                            {static_cast<int64_t>(values.size())}, torch::kFloat64)
               .clone()
               .reshape(shape);
  return wrap(keep_double ? t : t.to(torch::kFloat32));
}

Tensor randn(const Dims& shape) {
  return wrap(torch::randn(shape));
}

Dims shape(const Tensor& x) {
  return raw(x).sizes().vec();
}

std::vector<double> values(const Tensor& x) {
  auto t = raw(x).to(torch::kFloat64).contiguous();
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

Tensor activate(Tensor x, Activation a) {
  torch::Tensor t = raw(x);
  switch (a) {
    case Activation::None:
      break;
    case Activation::Relu:
      t.relu_();
      break;
    case Activation::Tanh:
      t.tanh_();
      break;
    case Activation::Sigmoid:
      t.sigmoid_();
      break;
  }
  return x;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  return wrap(torch::matmul(raw(a), raw(b)));
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Dims& stride, const Dims& padding) {
  return wrap(torch::conv2d(raw(x), raw(w), {}, stride, padding));
}

Tensor max_pool2d(const Tensor& x, const Dims& kernel, const Dims& stride, const Dims& padding) {
  return wrap(torch::max_pool2d(raw(x), kernel, stride, padding));
}

Tensor avg_pool2d(const Tensor& x, const Dims& kernel, const Dims& stride, const Dims& padding) {
  return wrap(torch::avg_pool2d(raw(x), kernel, stride, padding, /*ceil_mode=*/false,
                                /*count_include_pad=*/false));
}

Tensor relu(const Tensor& x) {
  return wrap(torch::relu(raw(x)));
}
Tensor tanh(const Tensor& x) {
  return wrap(torch::tanh(raw(x)));
}
Tensor sigmoid(const Tensor& x) {
  return wrap(torch::sigmoid(raw(x)));
}
Tensor add(const Tensor& a, const Tensor& b) {
  return wrap(raw(a) + raw(b));
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return wrap(raw(a) * raw(b));
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  std::vector<torch::Tensor> ts;
  ts.reserve(xs.size());
  for (const Tensor& x : xs) ts.push_back(raw(x));
  return wrap(torch::cat(ts, axis));
}

std::vector<Tensor> split(const Tensor& x, const Dims& sizes, int64_t axis) {
  std::vector<Tensor> parts;
  for (auto& p : torch::split_with_sizes(raw(x), sizes, axis))
    parts.push_back(wrap(p.contiguous()));
  return parts;
}

Tensor transpose(const Tensor& x, const Dims& perm) {
  return wrap(raw(x).permute(perm).contiguous());
}

Tensor reshape(const Tensor& x, const Dims& shape) {
  return wrap(raw(x).reshape(shape));
}

Tensor pad_zeros(const Tensor& x, const Dims& pads) {
  return wrap(torch::constant_pad_nd(raw(x), pads));
}

struct Scope::State {
  torch::NoGradGuard no_grad;
  int saved_threads = 0;  // 0: left as they were
};

Scope::Scope(int threads) : state_(std::make_unique<State>()) {
  if (threads <= 0) return;
  state_->saved_threads = torch::get_num_threads();
  torch::set_num_threads(threads);
}

Scope::~Scope() {
  if (state_->saved_threads > 0) torch::set_num_threads(state_->saved_threads);
}

}  // namespace tempo::backend::eager
