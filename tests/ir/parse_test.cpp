// The SDG text parser: round trips through Graph::str(), hand-written text, and its errors.
#include "ir/parse.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>

#include "expect_error.h"
#include "util/error.h"

namespace tempo::ir {
namespace {

const Expr i = Expr::var("i"), t = Expr::var("t"), I = Expr::bound("I"), T = Expr::bound("T");
const Dim di("i", "I"), dt("t", "T");
const Dims dims = {di, dt};

using testing::expect_user_error;

void expect_parse_error(const std::string& text, std::vector<std::string> fragments) {
  expect_user_error([&] { parse_graph(text, dims); }, std::move(fragments));
}

// Graph::str() minus the ` @ file:line` locations, which the parser drops.
std::string strip_locations(const std::string& text) {
  return std::regex_replace(text, std::regex(R"( @ [^ \n]+:[0-9]+)"), "");
}

struct In {
  OpId source;
  Expr phi;
  int output = 0;
};

Attrs attrs(std::vector<int64_t> ints, std::vector<Expr> exprs = {}) {
  Attrs a;
  a.ints = std::move(ints);
  a.exprs = std::move(exprs);
  return a;
}

// Adds an op reading `ins`, with output types inferred as the api would.
OpId add(Graph& g, OpKind kind, Attrs a, Dims domain, const std::string& name,
         std::vector<In> ins = {}, Expr cond = Expr(),
         tempo::SourceLoc loc = tempo::SourceLoc::current()) {
  OpNode n;
  n.kind = kind;
  n.attrs = a;
  n.domain = domain;
  n.name = name;
  n.cond = cond;
  n.loc = loc;
  OpId id = g.add_op(n);
  std::vector<TensorType> in_types;
  for (const In& in : ins)
    in_types.push_back(g.input_type(g.add_edge(id, in.source, in.output, in.phi)));
  g.op(id).outputs = infer_types(kind, a, in_types, domain, n.describe());
  return id;
}

// A merge whose branches are added later (they may read ops added after it).
OpId add_merge(Graph& g, TensorType type, Dims domain, const std::string& name) {
  OpNode n;
  n.kind = OpKind::Merge;
  n.domain = domain;
  n.name = name;
  n.outputs = {type};
  n.loc = tempo::SourceLoc::current();
  return g.add_op(n);
}

// Several op kinds, slices, conditions, merges (one reading forward), multiple outputs and
// every attribute the printer writes.
Graph sample_graph() {
  Graph g;
  Dims it = {di, dt}, only_t = {dt};
  Attrs ca = attrs({}, {4});
  ca.scalar = 0.5;
  OpId c = add(g, OpKind::Const, ca, it, "c");
  Attrs ara = attrs({}, {T});
  ara.dtype = DType::Int64;
  OpId ar = add(g, OpKind::Arange, ara, {}, "steps");
  OpId h = add_merge(g, TensorType{DType::Float32, Shape{4}}, it, "h");
  OpId nx = add(g, OpKind::Mul, {}, it, "h next", {{h, seq({i, t})}, {c, seq({i, t})}});
  g.add_edge(h, nx, 0, seq({i, t - 1}), t > 0);
  g.add_edge(h, c, 0, seq({i, t}));
  OpId s = add(g, OpKind::Sum, attrs({0}), it, "window", {{nx, seq({i, slice(0, t + 1)})}});
  Attrs ma = attrs({0});
  ma.keepdim = true;
  OpId mx = add(g, OpKind::ReduceMax, ma, it, "mx", {{s, seq({i, t})}}, t % 2 == 0);
  Attrs casta;
  casta.dtype = DType::Float64;
  OpId cs = add(g, OpKind::Cast, casta, it, "idx", {{mx, seq({i, t}), 1}});
  Attrs pa = attrs({0}, {1, 2});
  pa.scalar = -std::numeric_limits<double>::infinity();
  OpId pd = add(g, OpKind::Pad, pa, it, "padded", {{cs, seq({i, t})}});
  OpId sl = add(g, OpKind::Slice, attrs({0}, {t, T}), only_t, "rest", {{ar, seq({})}});
  OpId ev = add(g, OpKind::EvalSymbol, attrs({}, {T - t}), only_t, "");
  g.op(ev).loc = {};  // printed without a location
  Attrs fa;
  fa.scalar = 1e-8;
  fa.dtype = DType::Bool;
  OpId fl = add(g, OpKind::Const, fa, {}, "flag");
  add(g, OpKind::Where, {}, it, "w",
      {{fl, seq({})}, {pd, seq({i, t})}, {pd, seq({i, max(0, t - 1)})}});
  OpId m = add_merge(g, TensorType{DType::Int64, Shape({T - t})}, only_t, "pick");
  g.add_edge(m, sl, 0, seq({t}), t < min(T - 1, 3));
  g.add_edge(m, sl, 0, seq({(t + 1) % 5}), (t + 1) % 5 == 0 || t == 3);
  g.add_edge(m, sl, 0, seq({t}));
  add(g, OpKind::Sum, attrs({0, 1}), {}, "total", {{c, seq({slice(0, I), slice(0, T)})}});
  return g;
}

TEST(ParseGraph, RoundTrip) {
  Graph g = sample_graph();
  ASSERT_NO_THROW(validate(g));
  std::string text = g.str();
  // The sample exercises what it should.
  for (const char* bit : {" if 0 < t", "(f32(1), i64(1))", "%5.1[i, t]", "keepdim", "scalar=-inf",
                          "dtype=bool", "i64()", "[i, 0:t + 1]", " where ", " @ parse_test.cpp:"})
    EXPECT_NE(text.find(bit), std::string::npos) << bit << " not in\n" << text;

  Graph p = parse_graph(text, dims);
  EXPECT_EQ(p.str(), strip_locations(text));
  EXPECT_EQ(p.str(), str_without_locations(g));
  EXPECT_NO_THROW(validate(p));
  // Edge ids are not printed: the parser numbers edges by sink, so compare input by input.
  ASSERT_EQ(p.num_edges(), g.num_edges());
  for (const OpNode& op : p.ops()) {
    ASSERT_EQ(op.inputs.size(), g.op(op.id).inputs.size());
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const Edge &a = g.edge(g.op(op.id).inputs[k]), &b = p.edge(op.inputs[k]);
      EXPECT_EQ(a.sink, b.sink);
      EXPECT_EQ(a.source, b.source);
      EXPECT_EQ(a.source_output, b.source_output);
      EXPECT_TRUE(a.phi.same(b.phi)) << a.phi.str();
      EXPECT_EQ(a.cond.defined(), b.cond.defined());
      if (a.cond.defined()) {
        EXPECT_TRUE(a.cond.same(b.cond)) << a.cond.str();
      }
    }
  }
  for (const OpNode& op : p.ops()) {
    EXPECT_EQ(op.name, g.op(op.id).name);
    EXPECT_EQ(op.loc.line, 0u);
  }
  // A parsed graph prints what it parsed from.
  EXPECT_EQ(parse_graph(p.str(), dims).str(), p.str());
}

TEST(ParseGraph, HandWritten) {
  const std::string text = R"(
    // a running product
    %0 = Const() {exprs=[4], scalar=1, dtype=f32} : f32(4) over (t)  # one

    %1 = Merge(%2[t - 1] if t > 0, %0[t]) : f32(4) over (t)  # h
    %2 = Mul( %1[t] , %0[t] ) : f32(4)   over (t) where t<T-1  # next step @ prog.cpp:12
    %3 = Sum(%2[0:T - 1]) {ints = [0, 1]} : f32()
  )";
  Graph g = parse_graph(text, dims);
  ASSERT_EQ(g.num_ops(), 4u);
  ASSERT_EQ(g.num_edges(), 5u);
  const OpNode& h = g.op(1);
  ASSERT_EQ(h.inputs.size(), 2u);
  const Edge& back = g.edge(h.inputs[0]);
  EXPECT_EQ(back.source, 2);
  EXPECT_TRUE(back.phi.same(seq({t - 1})));
  EXPECT_TRUE(back.cond.same(t > 0));
  EXPECT_FALSE(g.edge(h.inputs[1]).cond.defined());
  EXPECT_EQ(h.domain, (Dims{dt}));
  EXPECT_EQ(g.op(2).name, "next step");
  EXPECT_EQ(g.op(2).loc.line, 0u);
  EXPECT_TRUE(g.op(2).cond.same(t < T - 1));
  EXPECT_EQ(g.op(3).name, "");
  EXPECT_TRUE(g.op(3).domain.empty());
  EXPECT_EQ(g.op(3).outputs[0].str(), "f32()");
  EXPECT_EQ(g.op(3).attrs.ints, (std::vector<int64_t>{0, 1}));
  EXPECT_NO_THROW(validate(g));
  // The canonical form: what a pass's result is compared with.
  EXPECT_EQ(g.str(),
            "%0 = Const() {exprs=[4], scalar=1, dtype=f32} : f32(4) over (t)  # one\n"
            "%1 = Merge(%2[t - 1] if 0 < t, %0[t]) : f32(4) over (t)  # h\n"
            "%2 = Mul(%1[t], %0[t]) : f32(4) over (t) where t < T - 1  # next step\n"
            "%3 = Sum(%2[0:T - 1]) {ints=[0, 1]} : f32()  # \n");
}

TEST(ParseGraph, OddCorners) {
  // An undefined index, no outputs, a name with an '@' that is not a location, CRLF line ends.
  Graph g = parse_graph(
      "%0 = Const() {exprs=[], scalar=nan, dtype=i32} : i32()  # a@b @ x\r\n"
      "%1 = Identity(%0[?]) : ()\r\n",
      dims);
  EXPECT_FALSE(g.edge(0).phi.defined());
  EXPECT_TRUE(g.op(1).outputs.empty());
  EXPECT_EQ(g.op(0).name, "a@b @ x");
  EXPECT_TRUE(std::isnan(g.op(0).attrs.scalar));
  EXPECT_EQ(g.op(0).attrs.dtype, DType::Int32);
  EXPECT_EQ(g.str(),
            "%0 = Const() {scalar=nan, dtype=i32} : i32()  # a@b @ x\n"
            "%1 = Identity(%0[?]) : ()  # \n");
  // Types are taken as printed; validate() checks them.
  Graph wrong = parse_graph("%0 = Const() {exprs=[4], dtype=f32} : f64(4)", dims);
  EXPECT_EQ(wrong.op(0).outputs[0].str(), "f64(4)");
  EXPECT_THROW(validate(wrong), UserError);
  EXPECT_EQ(parse_graph("\n  // nothing\n\n", dims).num_ops(), 0u);
}

TEST(ParseGraph, Errors) {
  const std::string c = "%0 = Const() {exprs=[4], dtype=f32} : f32(4)\n";
  expect_parse_error("%0 = Foo() : f32()", {"line 1 `", "unknown op kind 'Foo'", "%0 = Foo()"});
  expect_parse_error(c + "%1 = Exp(%9[]) : f32(4)", {"line 2 `", "%9", "refers to no op", "2 ops"});
  expect_parse_error(c + "%1 = Exp(%0.1[]) : f32(4) over (s)",
                     {"line 2 `", "unknown dimension 's'", "i:I,t:T"});
  expect_parse_error(c + "%1 = Exp(%0[]) : f32(4) over (t, t)", {"'t' listed twice"});
  expect_parse_error("hello world", {"line 1 `", "expected an op such as", "hello world"});
  expect_parse_error("%0 = Const() : f32(X)", {"line 1 `", "unknown symbol 'X'"});
  expect_parse_error("\n// c\n" + c + "%1 = Exp(%0[]) : f32(4) extra", {"line 4 `", "'extra'"});
  expect_parse_error(c + "%2 = Exp(%0[]) : f32(4)", {"line 2 `", "expected %1"});
  expect_parse_error("%0 = Udf() : f32()", {"Udf ops cannot be parsed"});
  expect_parse_error("%0 = Const() {udf=env} : f32()", {"Udf ops cannot be parsed"});
  expect_parse_error("%0 = Const() : f8(4)", {"unknown dtype 'f8'"});
  expect_parse_error("%0 = Const() {dtype=f8} : f32(4)", {"unknown dtype 'f8'"});
  expect_parse_error("%0 = Const() {foo=1} : f32()", {"unknown attribute 'foo'"});
  expect_parse_error("%0 = Const() {keepdim, keepdim} : f32()", {"'keepdim' given twice"});
  expect_parse_error("%0 = Sum() {ints=[a]} : f32()", {"'a' is not an integer"});
  expect_parse_error("%0 = Sum() {ints=3} : f32()", {"must be a list"});
  expect_parse_error("%0 = Const() {scalar=x} : f32()", {"'x' is not a number"});
  expect_parse_error(c + "%1 = Exp(%0[t) : f32(4)", {"line 2 `", "unbalanced ')'"});
  expect_parse_error(c + "%1 = Exp(%0) : f32(4)", {"expected an index"});
  expect_parse_error(c + "%1 = Exp(%0[] when t) : f32(4)", {"unexpected 'when t'"});
  expect_parse_error(c + "%1 = Add(%0[], ) : f32(4)", {"empty entry"});
  expect_parse_error("%0 = Const()", {"expected ':' before the output types"});
  expect_parse_error("%0 = Const() : f32(4", {"unclosed '('"});
  expect_parse_error("%0 = Const() : f32(4) where t <", {"line 1 `", "unexpected end of input"});
}

}  // namespace
}  // namespace tempo::ir
