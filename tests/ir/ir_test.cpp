// Types, shape inference, validation and dumps of the SDG.
#include <gtest/gtest.h>

#include "expect_error.h"
#include "ir/sdg.h"
#include "util/error.h"
#include "util/huge_pages.h"

namespace tempo::ir {
namespace {

TensorType f32(std::vector<Expr> s) {
  return TensorType{DType::Float32, Shape(std::move(s))};
}
TensorType i64(std::vector<Expr> s) {
  return TensorType{DType::Int64, Shape(std::move(s))};
}

std::vector<TensorType> infer(OpKind k, const std::vector<TensorType>& in, Attrs a = {},
                              Dims dims = {}) {
  return infer_types(k, a, in, dims, "RT 'x' (test) created at here.cpp:1");
}
TensorType infer1(OpKind k, const std::vector<TensorType>& in, Attrs a = {}, Dims dims = {}) {
  return infer(k, in, std::move(a), std::move(dims)).at(0);
}
Attrs ints(std::vector<int64_t> v) {
  Attrs a;
  a.ints = std::move(v);
  return a;
}
Attrs exprs(std::vector<Expr> v, std::vector<int64_t> iv = {}) {
  Attrs a;
  a.exprs = std::move(v);
  a.ints = std::move(iv);
  return a;
}

using testing::expect_user_error;

TEST(Types, Basics) {
  EXPECT_EQ(promote(DType::Int32, DType::Float32), DType::Float32);
  EXPECT_EQ(promote(DType::Float64, DType::Int64), DType::Float64);
  EXPECT_EQ(promote(DType::Bool, DType::Int32), DType::Int32);
  EXPECT_EQ(dtype_size(DType::Int64), 8u);
  EXPECT_TRUE(is_floating(DType::Float64));
  EXPECT_FALSE(is_floating(DType::Int32));
  Expr t = Expr::var("t"), T = Expr::bound("T");
  Shape s({Expr(3), T - t});
  EXPECT_EQ(s.str(), "(3, T - t)");
  EXPECT_EQ((TensorType{DType::Float32, s}.str()), "f32(3, T - t)");
  EXPECT_FALSE(s.is_static());
  Shape st{2, 3};
  EXPECT_TRUE(st.is_static());
  EXPECT_EQ(st.static_dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(st.same(Shape{2, 3}));
  EXPECT_EQ(Shape().str(), "()");
}

TEST(Types, HostTensor) {
  HostTensor h = HostTensor::from(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(h.numel(), 6);
  EXPECT_EQ(h.data.size(), 24u);
  EXPECT_DOUBLE_EQ(h.at(4), 5.0);
  h.set(4, 7.5);
  EXPECT_DOUBLE_EQ(h.to_vector()[4], 7.5);
  HostTensor s = HostTensor::scalar(3, DType::Int64);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.ptr<int64_t>()[0], 3);
  HostTensor z(DType::Bool, {4});
  EXPECT_DOUBLE_EQ(z.at(3), 0.0);
  EXPECT_THROW(HostTensor::from(std::vector<int64_t>{1, 2}, {3}), UserError);
}

// The half types: promotion, and conversions that round to nearest even and read back exactly.
TEST(Types, HalfTypes) {
  EXPECT_EQ(promote(DType::Float16, DType::Float32), DType::Float32);
  EXPECT_EQ(promote(DType::Int64, DType::BFloat16), DType::BFloat16);
  EXPECT_EQ(promote(DType::Float16, DType::BFloat16), DType::Float32);
  EXPECT_TRUE(is_floating(DType::BFloat16) && is_half(DType::Float16));
  EXPECT_EQ(dtype_size(DType::BFloat16), 2u);
  EXPECT_EQ(float_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(float_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(float_to_f16(65504.0f), 0x7BFF);   // the largest half
  EXPECT_EQ(float_to_f16(65520.0f), 0x7C00);   // halfway to the next: rounds (to even) to inf
  EXPECT_EQ(float_to_f16(0x1p-24f), 0x0001);   // the smallest subnormal
  EXPECT_EQ(float_to_f16(0x1p-25f), 0x0000);   // halfway to it: rounds to even, zero
  EXPECT_EQ(float_to_f16(1.0f + 0x1p-11f), 0x3C00);  // a tie: to even
  EXPECT_EQ(float_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3F80);  // a tie: to even
  EXPECT_EQ(float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);
  // Every finite half and bfloat16 value reads back as itself.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    if ((bits & 0x7C00) != 0x7C00) {
      ASSERT_EQ(float_to_f16(f16_to_float(bits)), bits) << h;
    }
    if ((bits & 0x7F80) != 0x7F80) {
      ASSERT_EQ(float_to_bf16(bf16_to_float(bits)), bits) << h;
    }
  }
  HostTensor x = HostTensor::from(std::vector<float>{1.0f, 0.1f, -3.0f}, {3});
  HostTensor h = x.to(DType::BFloat16);
  EXPECT_EQ(h.data.size(), 6u);
  EXPECT_DOUBLE_EQ(h.at(0), 1.0);
  EXPECT_NEAR(h.at(1), 0.1, 0.1 / 256);
  EXPECT_DOUBLE_EQ(h.to(DType::Float32).at(2), -3.0);
  EXPECT_EQ(x.to(DType::Float16).to(DType::Float64).dtype, DType::Float64);
}

TEST(OpKinds, Table) {
  EXPECT_STREQ(op_kind_name(OpKind::MatMul), "MatMul");
  EXPECT_EQ(op_kind_inputs(OpKind::Where), 3);
  EXPECT_EQ(op_kind_outputs(OpKind::ReduceMax), 2);
  EXPECT_EQ(op_kind_inputs(OpKind::Cat), -1);
  EXPECT_TRUE(is_elementwise(OpKind::Add));
  EXPECT_FALSE(is_elementwise(OpKind::Sum));
}

TEST(Infer, Broadcasting) {
  EXPECT_EQ(infer1(OpKind::Add, {f32({3, 1}), f32({4})}).str(), "f32(3, 4)");
  EXPECT_EQ(infer1(OpKind::Mul, {f32({}), f32({2, 5})}).str(), "f32(2, 5)");
  EXPECT_EQ(infer1(OpKind::Add, {i64({2}), f32({2})}).str(), "f32(2)");
  EXPECT_EQ(infer1(OpKind::Div, {i64({2}), i64({2})}).dtype, DType::Float32);
  EXPECT_EQ(infer1(OpKind::Lt, {f32({2}), f32({2})}).str(), "bool(2)");
  expect_user_error(
      [] {
        infer(OpKind::Add, {f32({3}), f32({4})});
      },
      {"RT 'x'", "here.cpp:1", "broadcast", "(3)", "(4)"});
}

TEST(Infer, SymbolicBroadcasting) {
  Dims dims = sym::parse_dims("t:T");
  Expr t = dims[0].var, T = dims[0].bound;
  // (T - t) and (T - t + 0) agree after simplification.
  EXPECT_EQ(infer1(OpKind::Add, {f32({T - t, 3}), f32({T - t + 0, 1})}, {}, dims).str(),
            "f32(T - t, 3)");
  EXPECT_EQ(infer1(OpKind::Add, {f32({T - t}), f32({1})}, {}, dims).str(), "f32(T - t)");
  EXPECT_THROW(infer(OpKind::Add, {f32({T - t}), f32({T})}, {}, dims), UserError);
}

TEST(Infer, Reductions) {
  EXPECT_EQ(infer1(OpKind::Sum, {f32({2, 3, 4})}, ints({0, 2})).str(), "f32(3)");
  Attrs k = ints({1});
  k.keepdim = true;
  EXPECT_EQ(infer1(OpKind::Sum, {f32({2, 3})}, k).str(), "f32(2, 1)");
  EXPECT_EQ(infer1(OpKind::Sum, {f32({2, 3})}).str(), "f32()");
  auto mx = infer(OpKind::ReduceMax, {f32({2, 3})}, ints({1}));
  ASSERT_EQ(mx.size(), 2u);
  EXPECT_EQ(mx[0].str(), "f32(2)");
  EXPECT_EQ(mx[1].str(), "i64(2)");
  EXPECT_EQ(infer1(OpKind::CumSum, {f32({5})}, ints({0})).str(), "f32(5)");
  EXPECT_THROW(infer(OpKind::Sum, {f32({2})}, ints({3})), UserError);
}

TEST(Infer, Movement) {
  Dims dims = sym::parse_dims("t:T");
  Expr t = dims[0].var, T = dims[0].bound;
  EXPECT_EQ(infer1(OpKind::Reshape, {f32({2, 6})}, exprs({3, 4})).str(), "f32(3, 4)");
  EXPECT_EQ(infer1(OpKind::Reshape, {f32({2, 6})}, exprs({-1, 3})).str(), "f32(4, 3)");
  expect_user_error(
      [] {
        infer(OpKind::Reshape, {f32({2, 6})}, exprs({5}));
      },
      {"12 elements", "5 elements"});
  EXPECT_EQ(infer1(OpKind::Permute, {f32({2, 3, 4})}, ints({2, 0, 1})).str(), "f32(4, 2, 3)");
  EXPECT_THROW(infer(OpKind::Permute, {f32({2, 3})}, ints({0, 0})), UserError);
  EXPECT_EQ(infer1(OpKind::Expand, {f32({1, 3})}, exprs({2, 5, 3})).str(), "f32(2, 5, 3)");
  EXPECT_THROW(infer(OpKind::Expand, {f32({2, 3})}, exprs({4, 3})), UserError);
  EXPECT_EQ(infer1(OpKind::Squeeze, {f32({2, 1})}, ints({1})).str(), "f32(2)");
  EXPECT_THROW(infer(OpKind::Squeeze, {f32({2, 3})}, ints({1})), UserError);
  EXPECT_EQ(infer1(OpKind::Unsqueeze, {f32({2})}, ints({1})).str(), "f32(2, 1)");
  EXPECT_EQ(infer1(OpKind::Slice, {f32({10, 2})}, exprs({2, 7}, {0})).str(), "f32(5, 2)");
  EXPECT_EQ(infer1(OpKind::Slice, {f32({T})}, exprs({t, T}, {0}), dims).str(), "f32(T - t)");
  EXPECT_EQ(infer1(OpKind::Pad, {f32({3})}, exprs({1, 2}, {0})).str(), "f32(6)");
  EXPECT_EQ(infer1(OpKind::Flip, {f32({3})}, ints({0})).str(), "f32(3)");
  EXPECT_EQ(infer1(OpKind::Cat, {f32({2, 3}), f32({4, 3})}, ints({0})).str(), "f32(6, 3)");
  EXPECT_EQ(infer1(OpKind::Cat, {f32({t, 3}), f32({1, 3})}, ints({0}), dims).str(),
            "f32(t + 1, 3)");
  EXPECT_THROW(infer(OpKind::Cat, {f32({2, 3}), f32({2, 4})}, ints({0})), UserError);
}

TEST(Infer, Indexing) {
  Expr t = Expr::var("t");
  EXPECT_EQ(infer1(OpKind::Index, {f32({5, 3})}, exprs({t}, {0})).str(), "f32(3)");
  EXPECT_EQ(infer1(OpKind::IndexSelect, {f32({5, 3}), i64({7})}, ints({0})).str(), "f32(7, 3)");
  EXPECT_THROW(infer(OpKind::IndexSelect, {f32({5, 3}), f32({7})}, ints({0})), UserError);
  EXPECT_EQ(infer1(OpKind::Gather, {f32({5, 3}), i64({5, 1})}, ints({1})).str(), "f32(5, 1)");
  EXPECT_EQ(infer1(OpKind::ScatterAdd, {f32({5, 3}), i64({5, 1}), f32({5, 1})}, ints({1})).str(),
            "f32(5, 3)");
  EXPECT_EQ(infer1(OpKind::IndexAdd, {f32({5, 3}), i64({2}), f32({2, 3})}, ints({0})).str(),
            "f32(5, 3)");
}

TEST(Infer, MatMulAndConv) {
  EXPECT_EQ(infer1(OpKind::MatMul, {f32({2, 3}), f32({3, 4})}).str(), "f32(2, 4)");
  EXPECT_EQ(infer1(OpKind::MatMul, {f32({3}), f32({3, 4})}).str(), "f32(4)");
  EXPECT_EQ(infer1(OpKind::MatMul, {f32({2, 3}), f32({3})}).str(), "f32(2)");
  EXPECT_EQ(infer1(OpKind::MatMul, {f32({3}), f32({3})}).str(), "f32()");
  EXPECT_EQ(infer1(OpKind::MatMul, {f32({5, 2, 3}), f32({3, 4})}).str(), "f32(5, 2, 4)");
  EXPECT_EQ(infer1(OpKind::MatMul, {f32({5, 1, 2, 3}), f32({7, 3, 4})}).str(), "f32(5, 7, 2, 4)");
  expect_user_error([] { infer(OpKind::MatMul, {f32({2, 3}), f32({4, 5})}); }, {"inner"});
  EXPECT_EQ(infer1(OpKind::Conv2d, {f32({1, 3, 8, 8}), f32({6, 3, 3, 3})}, ints({1, 1})).str(),
            "f32(1, 6, 8, 8)");
  EXPECT_EQ(infer1(OpKind::Conv2d, {f32({1, 3, 9, 9}), f32({6, 3, 3, 3})}, ints({2, 0})).str(),
            "f32(1, 6, 4, 4)");
  EXPECT_THROW(infer(OpKind::Conv2d, {f32({1, 4, 8, 8}), f32({6, 3, 3, 3})}, ints({1, 0})),
               UserError);
}

TEST(Infer, Sources) {
  Dims dims = sym::parse_dims("t:T");
  Expr t = dims[0].var, T = dims[0].bound;
  Attrs c = exprs({2, 3});
  c.dtype = DType::Int32;
  EXPECT_EQ(infer1(OpKind::Const, {}, c).str(), "i32(2, 3)");
  Attrs ar = exprs({T - t});
  ar.dtype = DType::Int64;
  EXPECT_EQ(infer1(OpKind::Arange, {}, ar, dims).str(), "i64(T - t)");
  EXPECT_EQ(infer1(OpKind::EvalSymbol, {}, exprs({t})).str(), "i64()");
  Attrs u;
  auto udf = std::make_shared<Udf>();
  udf->outputs = {f32({2}), i64({})};
  u.udf = udf;
  EXPECT_EQ(infer(OpKind::Udf, {f32({1})}, u).size(), 2u);
  EXPECT_EQ(infer1(OpKind::Merge, {f32({2}), f32({2})}).str(), "f32(2)");
  EXPECT_EQ(infer1(OpKind::Identity, {f32({2})}).str(), "f32(2)");
  EXPECT_EQ((infer1(OpKind::Where, {TensorType{DType::Bool, {2}}, f32({2}), f32({})}).str()),
            "f32(2)");
  EXPECT_THROW(infer(OpKind::Add, {f32({2})}), UserError);  // arity
}

// A counter c over (i): c = Merge(zero if i == 0, add[i - 1] if i >= 1); add = c[i] + one.
struct Counter {
  Graph g;
  Dims dims = sym::parse_dims("i:I");
  OpId zero, one, merge, add;
  Counter() {
    Expr i = dims[0].var;
    OpNode z;
    z.kind = OpKind::Const;
    z.outputs = {f32({})};
    z.name = "zero";
    zero = g.add_op(z);
    z.name = "one";
    one = g.add_op(z);
    OpNode m;
    m.kind = OpKind::Merge;
    m.domain = dims;
    m.outputs = {f32({})};
    m.name = "c";
    merge = g.add_op(m);
    OpNode a;
    a.kind = OpKind::Add;
    a.domain = dims;
    a.outputs = {f32({})};
    a.name = "add";
    add = g.add_op(a);
    g.add_edge(merge, zero, 0, sym::seq({}), i == 0);
    g.add_edge(merge, add, 0, sym::seq({i - 1}), i >= 1);
    g.add_edge(add, merge, 0, sym::seq({i}));
    g.add_edge(add, one, 0, sym::seq({}));
  }
};

TEST(Graph, StrAndDot) {
  Counter c;
  EXPECT_EQ(c.g.out_edges(c.merge).size(), 1u);
  std::string s = c.g.str();
  EXPECT_NE(s.find("%2 = Merge(%0[] if i == 0, %3[i - 1] if 1 <= i) : f32() over (i)  # c"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("%3 = Add(%2[i], %1[])"), std::string::npos) << s;
  std::string d = c.g.dot();
  EXPECT_NE(d.find("digraph"), std::string::npos);
  EXPECT_NE(d.find("[i - 1]"), std::string::npos);
  EXPECT_NO_THROW(validate(c.g));
}

TEST(Graph, InputTypeStacksSlices) {
  Graph g;
  Dims dims = sym::parse_dims("t:T");
  Expr t = dims[0].var, T = dims[0].bound;
  OpNode x;
  x.kind = OpKind::RandUniform;
  x.attrs.exprs = {4};
  x.domain = dims;
  x.outputs = {f32({4})};
  OpId xi = g.add_op(x);
  OpNode s;
  s.kind = OpKind::Sum;
  s.attrs.ints = {0};
  s.domain = dims;
  s.outputs = {f32({4})};
  OpId si = g.add_op(s);
  EdgeId e = g.add_edge(si, xi, 0, sym::seq({slice(t, T)}));
  EXPECT_EQ(g.input_type(e).str(), "f32(T - t, 4)");
  EXPECT_NO_THROW(validate(g));
  g.edge(e).phi = sym::seq({slice(0, T, 2)});
  EXPECT_EQ(g.input_type(e).shape.rank(), 2u);
}

TEST(Validate, Errors) {
  {
    Counter c;
    c.g.edge(2).phi = sym::seq({Expr::var("i"), Expr(0)});  // wrong arity
    expect_user_error([&] { validate(c.g); }, {"RT 'add'", "2 entries"});
  }
  {
    Counter c;
    c.g.edge(2).phi = sym::seq({Expr::var("j")});  // not a sink variable
    expect_user_error([&] { validate(c.g); }, {"RT 'add'", "variable j"});
  }
  {
    Counter c;
    c.g.op(c.add).outputs = {f32({3})};  // recorded type inconsistent
    expect_user_error([&] { validate(c.g); }, {"f32(3)"});
  }
  {
    Counter c;
    c.g.op(c.zero).outputs = {f32({2})};  // a branch of another type
    c.g.op(c.zero).attrs.exprs = {2};
    expect_user_error([&] { validate(c.g); }, {"RT 'c'", "branch 0"});
  }
  {
    Graph g;
    OpNode m;
    m.kind = OpKind::Merge;
    m.outputs = {f32({})};
    m.name = "o";
    m.loc = tempo::SourceLoc::current();
    g.add_op(m);
    expect_user_error([&] { validate(g); },
                      {"RT 'o' (Merge) created at ir_test.cpp:", "never defined"});
  }
  {
    Counter c;
    OpNode a;
    a.kind = OpKind::Neg;
    a.outputs = {f32({})};
    a.name = "neg";
    c.g.add_op(a);  // no input
    expect_user_error([&] { validate(c.g); }, {"RT 'neg'", "takes 1"});
  }
}

TEST(Describe, NamesLine) {
  OpNode op;
  op.kind = OpKind::Add;
  op.name = "x";
  op.loc = tempo::SourceLoc::current();
  EXPECT_EQ(op.describe(), "RT 'x' (Add) created at ir_test.cpp:" + std::to_string(op.loc.line));
}

// Large host tensors, and their copies, ask for huge pages (util/huge_pages.h): where the kernel
// gives them only on request, a plain allocation gets none.
TEST(Types, LargeHostTensorsLieInHugePages) {
  const std::string mode = huge_pages_mode();
  if (mode != "madvise" && mode != "always")
    GTEST_SKIP() << "transparent huge pages are " << (mode.empty() ? "unknown" : mode);
  if (env_flag("TEMPO_NO_HUGE_PAGES")) GTEST_SKIP() << "TEMPO_NO_HUGE_PAGES is set";
  HostTensor big(DType::Float32, {int64_t{16} << 20});  // 64 MiB
  HostTensor copy = big;
  EXPECT_GT(huge_page_bytes_at(big.data.data() + big.data.size() / 2), 0);
  EXPECT_GT(huge_page_bytes_at(copy.data.data() + copy.data.size() / 2), 0);
  EXPECT_EQ(copy.data, big.data);
}

}  // namespace
}  // namespace tempo::ir
