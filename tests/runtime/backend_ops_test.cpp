// Each op kind's LibTorch kernel against the eager LibTorch function, on random inputs. Kernels
// are made from a tiny hand-built graph; no scheduling is involved.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backend/libtorch_backend.h"
#include "ir/sdg.h"
#include "util/error.h"

namespace tempo {
namespace {

using ir::Attrs;
using ir::DType;
using ir::HostTensor;
using ir::OpKind;
using runtime::ValuePtr;

DType dtype_of(torch::ScalarType s) {
  switch (s) {
    case torch::kBool:
      return DType::Bool;
    case torch::kInt32:
      return DType::Int32;
    case torch::kInt64:
      return DType::Int64;
    case torch::kFloat64:
      return DType::Float64;
    default:
      return DType::Float32;
  }
}

HostTensor host(const torch::Tensor& t) {
  torch::Tensor c = t.contiguous();
  HostTensor h(dtype_of(c.scalar_type()), c.sizes().vec());
  if (!h.data.empty()) std::memcpy(h.data.data(), c.data_ptr(), h.data.size());
  return h;
}

torch::ScalarType scalar_type(DType d) {
  switch (d) {
    case DType::Bool:
      return torch::kBool;
    case DType::Int32:
      return torch::kInt32;
    case DType::Int64:
      return torch::kInt64;
    case DType::Float64:
      return torch::kFloat64;
    default:
      return torch::kFloat32;
  }
}

torch::Tensor eager(const HostTensor& h) {
  torch::Tensor t = torch::empty(h.shape, scalar_type(h.dtype));
  if (!h.data.empty()) std::memcpy(t.data_ptr(), h.data.data(), h.data.size());
  return t;
}

// Runs one op of `kind` on `inputs` at the point t = 1 (bound T = 5).
class OpRunner {
 public:
  std::vector<torch::Tensor> run(OpKind kind, Attrs attrs, const std::vector<torch::Tensor>& inputs,
                                 bool over_t = false) {
    ir::Graph g;
    std::vector<ir::TensorType> in_types;
    for (const torch::Tensor& x : inputs) {
      ir::OpNode src;
      src.kind = OpKind::Const;
      ir::TensorType type{dtype_of(x.scalar_type()), {}};
      for (int64_t s : x.sizes()) type.shape.dims.emplace_back(s);
      src.outputs = {type};
      in_types.push_back(type);
      g.add_op(src);
    }
    ir::OpNode op;
    op.kind = kind;
    op.name = "op";
    op.attrs = attrs;
    if (over_t) op.domain = {t_};
    op.outputs = ir::infer_types(kind, attrs, in_types, op.domain, "op");
    ir::OpId id = g.add_op(op);
    for (size_t i = 0; i < inputs.size(); ++i) g.add_edge(id, static_cast<int>(i), 0, sym::seq({}));
    sym::SymbolLayout layout({t_});
    auto k = backend_->make_kernel(g, id, layout);
    std::vector<ValuePtr> in;
    for (const torch::Tensor& x : inputs) in.push_back(backend_->from_host(host(x)));
    std::vector<ValuePtr> out(g.op(id).outputs.size());
    int64_t env[] = {1, 5};
    k->run(in.data(), in.size(), env, out.data());
    std::vector<torch::Tensor> res;
    for (size_t i = 0; i < out.size(); ++i) {
      torch::Tensor r = eager(backend_->to_host(out[i]));
      EXPECT_EQ(r.scalar_type(), scalar_type(g.op(id).outputs[i].dtype))
          << ir::op_kind_name(kind) << " output " << i;
      res.push_back(r);
    }
    return res;
  }
  torch::Tensor run1(OpKind kind, Attrs attrs, const std::vector<torch::Tensor>& inputs,
                     bool over_t = false) {
    return run(kind, std::move(attrs), inputs, over_t)[0];
  }
  Dim t_{"t", "T"};
  std::unique_ptr<runtime::Backend> backend_ = backend::make_libtorch_backend("cpu");
};

void expect_same(const torch::Tensor& got, const torch::Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  if (got.is_floating_point())
    EXPECT_TRUE(torch::allclose(got, want.to(got.scalar_type()), 1e-5, 1e-6)) << what << "\n"
                                                                              << got << "\n"
                                                                              << want;
  else
    EXPECT_TRUE(torch::equal(got, want.to(got.scalar_type()))) << what << "\n"
                                                               << got << "\n"
                                                               << want;
}

Attrs ints(std::vector<int64_t> v, bool keepdim = false) {
  Attrs a;
  a.ints = std::move(v);
  a.keepdim = keepdim;
  return a;
}

class BackendOps : public ::testing::Test, public OpRunner {
 protected:
  void SetUp() override { torch::manual_seed(0); }
};

TEST_F(BackendOps, Unary) {
  torch::Tensor x = torch::randn({3, 4});
  torch::Tensor pos = torch::rand({3, 4}) + 0.1;
  struct Case {
    OpKind kind;
    torch::Tensor in;
    std::function<torch::Tensor(const torch::Tensor&)> ref;
  };
  std::vector<Case> cases = {
      {OpKind::Neg, x, [](auto& a) { return -a; }},
      {OpKind::Exp, x, [](auto& a) { return a.exp(); }},
      {OpKind::Log, pos, [](auto& a) { return a.log(); }},
      {OpKind::Sqrt, pos, [](auto& a) { return a.sqrt(); }},
      {OpKind::Sin, x, [](auto& a) { return a.sin(); }},
      {OpKind::Cos, x, [](auto& a) { return a.cos(); }},
      {OpKind::Tanh, x, [](auto& a) { return a.tanh(); }},
      {OpKind::Sigmoid, x, [](auto& a) { return a.sigmoid(); }},
      {OpKind::Relu, x, [](auto& a) { return a.relu(); }},
      {OpKind::Abs, x, [](auto& a) { return a.abs(); }},
      {OpKind::Sign, x, [](auto& a) { return a.sign(); }},
      {OpKind::Floor, x, [](auto& a) { return a.floor(); }},
      {OpKind::Ceil, x, [](auto& a) { return a.ceil(); }},
      {OpKind::Not, x > 0, [](auto& a) { return a.logical_not(); }},
      {OpKind::Identity, x, [](auto& a) { return a; }},
      {OpKind::Detach, x, [](auto& a) { return a; }},
      // Float-only functions promote integers.
      {OpKind::Exp, torch::arange(4), [](auto& a) { return a.to(torch::kFloat32).exp(); }},
  };
  for (auto& c : cases)
    expect_same(run1(c.kind, {}, {c.in}), c.ref(c.in), ir::op_kind_name(c.kind));
  Attrs cast;
  cast.dtype = DType::Int64;
  expect_same(run1(OpKind::Cast, cast, {x * 3}), (x * 3).to(torch::kInt64), "Cast");
}

TEST_F(BackendOps, Binary) {
  torch::Tensor a = torch::randn({3, 4}), b = torch::randn({4});
  torch::Tensor pos = torch::rand({3, 4}) + 0.5;
  using F = std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>;
  std::vector<std::pair<OpKind, F>> cases = {
      {OpKind::Add, [](auto& x, auto& y) { return x + y; }},
      {OpKind::Sub, [](auto& x, auto& y) { return x - y; }},
      {OpKind::Mul, [](auto& x, auto& y) { return x * y; }},
      {OpKind::Div, [](auto& x, auto& y) { return x / y; }},
      {OpKind::Maximum, [](auto& x, auto& y) { return torch::maximum(x, y); }},
      {OpKind::Minimum, [](auto& x, auto& y) { return torch::minimum(x, y); }},
      {OpKind::Eq, [](auto& x, auto& y) { return x == y; }},
      {OpKind::Ne, [](auto& x, auto& y) { return x != y; }},
      {OpKind::Lt, [](auto& x, auto& y) { return x < y; }},
      {OpKind::Le, [](auto& x, auto& y) { return x <= y; }},
      {OpKind::Gt, [](auto& x, auto& y) { return x > y; }},
      {OpKind::Ge, [](auto& x, auto& y) { return x >= y; }},
  };
  for (auto& [k, f] : cases) expect_same(run1(k, {}, {a, b}), f(a, b), ir::op_kind_name(k));
  expect_same(run1(OpKind::Pow, {}, {pos, b}), pos.pow(b), "Pow");
  expect_same(run1(OpKind::And, {}, {a > 0, b > 0}), (a > 0).logical_and(b > 0), "And");
  expect_same(run1(OpKind::Or, {}, {a > 0, b > 0}), (a > 0).logical_or(b > 0), "Or");
  expect_same(run1(OpKind::Where, {}, {a > 0, a, b}), torch::where(a > 0, a, b), "Where");
  // Integer division is true division (float32); int32 + int64 promotes to int64.
  torch::Tensor i = torch::arange(1, 7).reshape({2, 3});
  expect_same(run1(OpKind::Div, {}, {i, i + 1}), i.to(torch::kFloat32) / (i + 1), "int Div");
  expect_same(run1(OpKind::Add, {}, {i.to(torch::kInt32), i}), i * 2, "int32 + int64");
  // Scalar (rank 0) operands broadcast.
  expect_same(run1(OpKind::Mul, {}, {a, torch::tensor(2.0f)}), a * 2, "scalar Mul");
}

TEST_F(BackendOps, ReductionsAndScans) {
  torch::Tensor x = torch::randn({3, 4, 5});
  expect_same(run1(OpKind::Sum, ints({1}), {x}), x.sum(1), "Sum dim 1");
  expect_same(run1(OpKind::Sum, ints({0, 2}, true), {x}), x.sum(std::vector<int64_t>{0, 2}, true),
              "Sum keepdim");
  expect_same(run1(OpKind::Sum, ints({}), {x}), x.sum(), "Sum all");
  expect_same(run1(OpKind::Sum, ints({}, true), {x}), x.sum(std::vector<int64_t>{0, 1, 2}, true),
              "Sum all keepdim");
  torch::Tensor i = torch::randint(0, 10, {4, 3}, torch::kInt64);
  expect_same(run1(OpKind::Sum, ints({0}), {i > 4}), (i > 4).sum(0), "bool Sum is int64");
  auto mx = run(OpKind::ReduceMax, ints({2}), {x});
  auto ref = x.max(2);
  expect_same(mx[0], std::get<0>(ref), "ReduceMax values");
  expect_same(mx[1], std::get<1>(ref), "ReduceMax indices");
  expect_same(run1(OpKind::CumSum, ints({1}), {x}), x.cumsum(1), "CumSum");
  expect_same(run1(OpKind::CumSum, ints({0}), {i}), i.cumsum(0), "int CumSum");
}

TEST_F(BackendOps, Movement) {
  torch::Tensor x = torch::randn({3, 4});
  Attrs reshape;
  reshape.exprs = {Expr(2), Expr(-1)};
  expect_same(run1(OpKind::Reshape, reshape, {x}), x.reshape({2, 6}), "Reshape");
  expect_same(run1(OpKind::Permute, ints({1, 0}), {x}), x.permute({1, 0}), "Permute");
  Attrs expand;
  expand.exprs = {Expr(2), Expr(3), Expr(4)};
  expect_same(run1(OpKind::Expand, expand, {x}), x.expand({2, 3, 4}), "Expand");
  expect_same(run1(OpKind::Squeeze, ints({1}), {x.unsqueeze(1)}), x, "Squeeze");
  expect_same(run1(OpKind::Unsqueeze, ints({2}), {x}), x.unsqueeze(2), "Unsqueeze");
  // Symbolic slice bounds: t:t + 2 at t = 1.
  Dim t = t_;
  Attrs sl = ints({1});
  sl.exprs = {t.var, t.var + 2};
  expect_same(run1(OpKind::Slice, sl, {x}, true), x.slice(1, 1, 3), "Slice");
  Attrs pad = ints({0});
  pad.exprs = {Expr(1), t.var + 1};
  pad.scalar = 7.0;
  expect_same(run1(OpKind::Pad, pad, {x}, true), torch::constant_pad_nd(x, {0, 0, 1, 2}, 7.0),
              "Pad dim 0");
  Attrs pad1 = ints({1});
  pad1.exprs = {Expr(2), Expr(0)};
  expect_same(run1(OpKind::Pad, pad1, {x}), torch::constant_pad_nd(x, {2, 0}), "Pad dim 1");
  expect_same(run1(OpKind::Flip, ints({1}), {x}), x.flip({1}), "Flip");
  torch::Tensor y = torch::randn({3, 2});
  expect_same(run1(OpKind::Cat, ints({1}), {x, y, x}), torch::cat({x, y, x}, 1), "Cat");
}

TEST_F(BackendOps, Indexing) {
  torch::Tensor x = torch::randn({4, 5});
  Attrs index = ints({0});
  index.exprs = {t_.bound - t_.var - 1};  // 3 at t = 1, T = 5
  expect_same(run1(OpKind::Index, index, {x}, true), x.select(0, 3), "Index");
  torch::Tensor idx = torch::tensor({2, 0, 2}, torch::kInt64);
  expect_same(run1(OpKind::IndexSelect, ints({1}), {x, idx}), x.index_select(1, idx),
              "IndexSelect");
  torch::Tensor gidx = torch::randint(0, 5, {4, 2}, torch::kInt64);
  expect_same(run1(OpKind::Gather, ints({1}), {x, gidx}), x.gather(1, gidx), "Gather");
  torch::Tensor src = torch::randn({4, 2});
  expect_same(run1(OpKind::ScatterAdd, ints({1}), {x, gidx, src}), x.scatter_add(1, gidx, src),
              "ScatterAdd");
  torch::Tensor rows = torch::randn({3, 5});
  torch::Tensor ridx = torch::tensor({1, 1, 3}, torch::kInt64);
  expect_same(run1(OpKind::IndexAdd, ints({0}), {x, ridx, rows}), x.index_add(0, ridx, rows),
              "IndexAdd");
}

TEST_F(BackendOps, LinearAlgebra) {
  torch::Tensor a = torch::randn({2, 3, 4}), b = torch::randn({4, 5}), v = torch::randn({4});
  expect_same(run1(OpKind::MatMul, {}, {a, b}), torch::matmul(a, b), "MatMul batched");
  expect_same(run1(OpKind::MatMul, {}, {a, v}), torch::matmul(a, v), "MatMul vector");
  torch::Tensor img = torch::randn({2, 3, 8, 8}), w = torch::randn({4, 3, 3, 3});
  expect_same(run1(OpKind::Conv2d, ints({2, 1}), {img, w}), torch::conv2d(img, w, {}, 2, 1),
              "Conv2d");
}

TEST_F(BackendOps, Sources) {
  Attrs c;
  c.exprs = {Expr(2), t_.bound};
  c.scalar = 1.5;
  expect_same(run1(OpKind::Const, c, {}, true), torch::full({2, 5}, 1.5), "Const");
  c.dtype = DType::Int64;
  expect_same(run1(OpKind::Const, c, {}, true), torch::full({2, 5}, 1, torch::kInt64), "int Const");
  Attrs ar;
  ar.exprs = {t_.bound + 1};
  ar.dtype = DType::Int64;
  expect_same(run1(OpKind::Arange, ar, {}, true), torch::arange(6), "Arange");
  Attrs ev;
  ev.exprs = {t_.bound - t_.var};
  expect_same(run1(OpKind::EvalSymbol, ev, {}, true), torch::tensor(4, torch::kInt64),
              "EvalSymbol");
  Attrs r;
  r.exprs = {Expr(1000)};
  backend_->seed(3);
  torch::Tensor u1 = run1(OpKind::RandUniform, r, {});
  backend_->seed(3);
  torch::Tensor u2 = run1(OpKind::RandUniform, r, {});
  EXPECT_TRUE(torch::equal(u1, u2));
  EXPECT_GE(u1.min().item<float>(), 0.0f);
  EXPECT_LT(u1.max().item<float>(), 1.0f);
  torch::Tensor n = run1(OpKind::RandNormal, r, {});
  EXPECT_NEAR(n.mean().item<float>(), 0.0, 0.15);
  EXPECT_NEAR(n.std().item<float>(), 1.0, 0.15);
}

// Tempo's own counter-based draws: uniform in [0, 1) and standard normal in distribution, in
// float32 and float64, different for different seeds and the same for the same one.
TEST_F(BackendOps, DrawsHaveTheirDistributions) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Attrs r;
    r.exprs = {Expr(200000)};
    r.dtype = dtype;
    backend_->seed(11);
    torch::Tensor u = run1(OpKind::RandUniform, r, {}).to(torch::kFloat64);
    torch::Tensor n = run1(OpKind::RandNormal, r, {}).to(torch::kFloat64);
    EXPECT_GE(u.min().item<double>(), 0.0);
    EXPECT_LT(u.max().item<double>(), 1.0);
    EXPECT_NEAR(u.mean().item<double>(), 0.5, 0.003);
    EXPECT_NEAR(u.var().item<double>(), 1.0 / 12, 0.002);
    // Each tenth of [0, 1) holds a tenth of the draws (within 4 standard deviations).
    torch::Tensor bins = torch::histc(u, 10, 0.0, 1.0);
    EXPECT_LT((bins - 20000).abs().max().item<double>(), 4 * std::sqrt(20000 * 0.9));
    EXPECT_NEAR(n.mean().item<double>(), 0.0, 0.01);
    EXPECT_NEAR(n.std().item<double>(), 1.0, 0.01);
    EXPECT_NEAR((n.abs() < 1).to(torch::kFloat64).mean().item<double>(), 0.6827, 0.005);
    EXPECT_NEAR((n.abs() < 2).to(torch::kFloat64).mean().item<double>(), 0.9545, 0.003);
    // Neighbouring draws are uncorrelated.
    torch::Tensor c = u.slice(0, 1) - 0.5, d = u.slice(0, 0, -1) - 0.5;
    EXPECT_NEAR((c * d).mean().item<double>(), 0.0, 0.001);
    backend_->seed(12);
    EXPECT_FALSE(torch::equal(run1(OpKind::RandUniform, r, {}).to(torch::kFloat64), u));
    backend_->seed(11);
    EXPECT_TRUE(torch::equal(run1(OpKind::RandUniform, r, {}).to(torch::kFloat64), u));
  }
}

TEST_F(BackendOps, StackAndHostRoundTrip) {
  torch::Tensor a = torch::randn({2, 3}), b = torch::randn({2, 3});
  std::vector<ValuePtr> vs = {backend_->from_host(host(a)), backend_->from_host(host(b))};
  torch::Tensor s = eager(backend_->to_host(backend_->stack(vs.data(), 2, DType::Float32, {2, 3})));
  expect_same(s, torch::stack({a, b}), "stack");
  HostTensor e = backend_->to_host(backend_->stack(nullptr, 0, DType::Int64, {4}));
  EXPECT_EQ(e.shape, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(e.dtype, DType::Int64);
  HostTensor bad(DType::Float32, {2});
  bad.data.resize(3);
  EXPECT_THROW(backend_->from_host(bad), UserError);
}

TEST_F(BackendOps, TorchErrorsNameTheOp) {
  try {
    run1(OpKind::IndexSelect, ints({0}), {torch::randn({3}), torch::tensor({7}, torch::kInt64)});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("RT 'op'"), std::string::npos) << e.what();
  }
}

// A constant tensor (Context::tensor's user function) is made once and the same value serves
// every later run; with BackendOptions::keep_constants off (under a memory budget) each run
// makes its own.
TEST(Backend, ConstantTensorsAreKeptAcrossRuns) {
  for (bool keep : {true, false}) {
    backend::BackendOptions options;
    options.keep_constants = keep;
    std::unique_ptr<runtime::Backend> b = backend::make_libtorch_backend("cpu", options);
    torch::Tensor value = torch::randn({3, 4});
    auto udf = std::make_shared<ir::Udf>();
    udf->name = "tensor";
    udf->constant = std::make_shared<const HostTensor>(host(value));
    udf->outputs = {{DType::Float32, {Expr(3), Expr(4)}}};
    udf->fn = [](const std::vector<HostTensor>&, const std::vector<int64_t>&) {
      ADD_FAILURE() << "a constant's function is not called";
      return std::vector<HostTensor>{};
    };
    ir::Graph g;
    ir::OpNode op;
    op.kind = OpKind::Udf;
    op.name = "weights";
    op.attrs.udf = udf;
    op.outputs = udf->outputs;
    const ir::OpId id = g.add_op(op);
    auto k = b->make_kernel(g, id, sym::SymbolLayout{});
    ValuePtr first, second;
    k->run(nullptr, 0, nullptr, &first);
    k->run(nullptr, 0, nullptr, &second);
    EXPECT_EQ(first == second, keep);
    expect_same(eager(b->to_host(second)), value, "the constant");
  }
}

TEST(Backend, UnknownDeviceIsUserError) {
  EXPECT_THROW(backend::make_libtorch_backend("tpu"), UserError);
#ifndef TEMPO_CUDA
  EXPECT_THROW(backend::make_libtorch_backend("cuda"), UserError);
#endif
}

// OpenBLAS falls back to its SSE3 kernels (Prescott) on a CPU model it does not know; the backend
// replaces them with those of the CPU's instruction set, and products stay right.
TEST(Blas, KernelsOfTheCpusInstructionSet) {
  const bool user_chose = std::getenv("OPENBLAS_CORETYPE") != nullptr;  // before Tempo sets it
  backend::set_num_threads(1);
  const std::string kernels = backend::blas_kernels();
  if (kernels.empty()) GTEST_SKIP() << "the BLAS is not OpenBLAS";
  if (user_chose) GTEST_SKIP() << "OPENBLAS_CORETYPE chooses the kernels";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_NE(kernels, "OpenBLAS Prescott");
  }
  torch::manual_seed(0);
  torch::Tensor a = torch::randn({67, 45}), b = torch::randn({45, 33});
  torch::Tensor by_sums = (a.unsqueeze(2) * b.unsqueeze(0)).sum(1);
  EXPECT_TRUE(torch::allclose(torch::matmul(a, b), by_sums, 1e-4, 1e-4)) << kernels;
}

}  // namespace
}  // namespace tempo
