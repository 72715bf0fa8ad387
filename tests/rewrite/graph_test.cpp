// The graph IR (shape inference and its errors), the five models, the interpreter and the cost
// model's cache.
#include "rewrite/graph.h"

#include <gtest/gtest.h>

#include "rewrite/evaluate.h"
#include "util/error.h"

namespace tempo::rewrite {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(rewrite_graph, ShapeInference) {
  Graph g;
  Ref x = g.input("x", {1, 3, 9, 9});
  Ref c = g.conv(x, g.weight("w", {8, 3, 3, 3}), 2, Pad::Valid);
  EXPECT_EQ(g.shape(c), (Shape{1, 8, 4, 4}));
  Ref s = g.conv(x, g.weight("w2", {8, 3, 1, 7}));
  EXPECT_EQ(g.shape(s), (Shape{1, 8, 9, 9}));
  auto parts = g.split(s, 1, {3, 5});
  EXPECT_EQ(g.shape(parts[1]), (Shape{1, 5, 9, 9}));
  EXPECT_EQ(g.shape(g.transpose(parts[0], {0, 2, 3, 1})), (Shape{1, 9, 9, 3}));
  EXPECT_EQ(g.shape(g.enlarge(g.weight("w3", {4, 3, 1, 1}), 3, 3)), (Shape{4, 3, 3, 3}));
}

TEST(rewrite_graph, ShapeMismatchIsAClearError) {
  Graph g;
  Ref a = g.input("a", {4, 5}), b = g.weight("b", {6, 7});
  std::string e = error_of([&] { g.matmul(a, b); });
  EXPECT_NE(e.find("shape mismatch in matmul([4,5], [6,7])"), std::string::npos) << e;
  EXPECT_NE(e.find("inner dimensions differ (5 vs 6)"), std::string::npos) << e;
  e = error_of([&] { g.binary(Op::Add, a, g.input("c", {5, 4})); });
  EXPECT_NE(e.find("add([4,5], [5,4])"), std::string::npos) << e;
  e = error_of([&] { g.split(a, 1, {2, 2}); });
  EXPECT_NE(e.find("split sizes sum to 4, not 5"), std::string::npos) << e;
  e = error_of([&] { g.reshape(a, {3, 7}); });
  EXPECT_NE(e.find("cannot reshape to [3,7]"), std::string::npos) << e;
  e = error_of([&] { g.conv(g.input("x", {1, 3, 8, 8}), g.weight("w", {4, 2, 3, 3})); });
  EXPECT_NE(e.find("input channels 3 vs weight's 2"), std::string::npos) << e;
}

TEST(rewrite_graph, UnknownModelNamesTheKnownOnes) {
  std::string e = error_of([] { build_model("vgg16"); });
  EXPECT_NE(e.find("unknown model 'vgg16'"), std::string::npos) << e;
  EXPECT_NE(e.find("resnet50"), std::string::npos) << e;
}

TEST(rewrite_graph, ModelsHaveTheirPublishedShapes) {
  Graph r18 = build_model("resnet18");
  EXPECT_EQ(r18.shape(r18.outputs[0]), (Shape{1, 1000}));
  Graph r50 = build_model("resnet50");
  EXPECT_EQ(r50.shape(r50.outputs[0]), (Shape{1, 1000}));
  int convs = 0;
  for (const Node& n : r50.nodes) convs += n.op == Op::Conv2d;
  EXPECT_EQ(convs, 53);  // 49 in the blocks' paths, 4 projection shortcuts
  Graph inc = build_model("inceptionv3");
  EXPECT_EQ(inc.shape(inc.outputs[0]), (Shape{1, 1000}));
  convs = 0;
  for (const Node& n : inc.nodes) convs += n.op == Op::Conv2d;
  EXPECT_EQ(convs, 94);
  Graph sq = build_model("squeezenet");
  EXPECT_EQ(sq.shape(sq.outputs[0]), (Shape{1, 1000}));
  Graph bert = build_model("bert", 2);
  EXPECT_EQ(bert.shape(bert.outputs[0]), (Shape{64, 768}));
  for (const Graph* g : {&r18, &r50, &inc, &sq, &bert}) EXPECT_NO_THROW(g->validate());
}

TEST(rewrite_graph, RebuiltDropsDeadNodesAndKeepsHash) {
  Graph g;
  Ref x = g.input("x", {2, 3});
  g.unary(Op::Tanh, x);  // dead
  g.outputs = {g.unary(Op::Relu, x)};
  Graph r = g.rebuilt();
  EXPECT_EQ(r.nodes.size(), 2u);
  EXPECT_EQ(r.hash(), g.hash());
  EXPECT_EQ(evaluate(r)[0].data, evaluate(g)[0].data);
}

TEST(rewrite_cost, MeasuredOncePerKeyAndCachedOnDisk) {
  std::string file = ::testing::TempDir() + "rewrite_costs.txt";
  std::remove(file.c_str());
  Graph g;
  Ref x = g.input("x", {64, 64});
  Ref a = g.matmul(x, g.weight("w1", {64, 64}));
  Ref b = g.matmul(x, g.weight("w2", {64, 64}));  // same key as a
  g.outputs = {g.binary(Op::Add, a, b)};
  CostOptions o;
  o.cache_file = file;
  o.min_ms = 0.2;
  CostModel m(o);
  double c = m.graph_cost(g);
  EXPECT_GT(c, 0);
  EXPECT_EQ(m.measurements(), 2);  // one matmul key, one add key
  CostModel again(o);
  EXPECT_DOUBLE_EQ(again.graph_cost(g), c);
  EXPECT_EQ(again.measurements(), 0);
}

TEST(rewrite_cost, WeightOnlyNodesAreFolded) {
  Graph g;
  Ref w = g.binary(Op::Add, g.weight("w1", {32, 32}), g.weight("w2", {32, 32}));
  g.outputs = {g.matmul(g.input("x", {8, 32}), w)};
  CostOptions o;
  o.min_ms = 0.2;
  CostModel m(o);
  m.graph_cost(g);
  EXPECT_EQ(m.measurements(), 1);  // the matmul only
}

}  // namespace
}  // namespace tempo::rewrite
