// Every substitution verified on random inputs: on its example graph at every location, and on
// the models wherever it matches.
#include "rewrite/subst.h"

#include <gtest/gtest.h>

#include "rewrite/evaluate.h"

namespace tempo::rewrite {
namespace {

void expect_same(const Graph& a, const Graph& b, const std::string& what) {
  for (uint64_t seed : {1, 2}) {
    EvalOptions o;
    o.seed = seed;
    EXPECT_LT(max_difference(evaluate(b, o), evaluate(a, o)), 1e-4) << what;
  }
}

TEST(rewrite_subst, EveryRuleVerifiedOnItsExample) {
  ASSERT_GE(rules().size(), 20u);
  for (size_t k = 0; k < rules().size(); ++k) {
    const Rule& r = rules()[k];
    Graph g = r.example();
    auto locs = r.match(g, Uses(g));
    ASSERT_FALSE(locs.empty()) << r.name << " does not match its example";
    for (const auto& l : locs) {
      Graph h = apply(g, {static_cast<int>(k), l});
      EXPECT_NE(h.hash(), g.hash()) << r.name;
      expect_same(g, h, r.name);
    }
  }
}

TEST(rewrite_subst, RulesVerifiedOnModelLocations) {
  // Small stand-ins of the models' patterns: a fire module and an attention layer.
  Graph sq;
  {
    Ref x = sq.input("x", {1, 8, 9, 9});
    Ref s = sq.unary(Op::Relu, sq.conv(x, sq.weight("s", {4, 8, 1, 1})));
    Ref e1 = sq.unary(Op::Relu, sq.conv(s, sq.weight("e1", {6, 4, 1, 1})));
    Ref e3 = sq.unary(Op::Relu, sq.conv(s, sq.weight("e3", {6, 4, 3, 3})));
    sq.outputs = {sq.concat(1, {e1, e3})};
  }
  Graph bert = build_model("bert", 1);
  for (const Graph* g : {&sq, &bert}) {
    auto ms = all_matches(*g);
    EXPECT_FALSE(ms.empty());
    for (const Match& m : ms) expect_same(*g, apply(*g, m), rules()[m.rule].name);
  }
}

TEST(rewrite_subst, RandomSequencesKeepOutputs) {
  Graph g0;
  {
    Ref x = g0.input("x", {1, 8, 9, 9});
    Ref s = g0.unary(Op::Relu, g0.conv(x, g0.weight("s", {4, 8, 1, 1})));
    Ref e1 = g0.unary(Op::Relu, g0.conv(s, g0.weight("e1", {6, 4, 1, 1})));
    Ref e3 = g0.unary(Op::Relu, g0.conv(s, g0.weight("e3", {6, 4, 3, 3})));
    Ref e5 = g0.unary(Op::Relu, g0.conv(s, g0.weight("e5", {2, 4, 5, 5})));
    g0.outputs = {g0.concat(1, {e1, e3, e5})};
  }
  uint64_t state = 7;
  for (int trial = 0; trial < 6; ++trial) {
    Graph g = g0;
    for (int step = 0; step < 8; ++step) {
      auto ms = all_matches(g);
      if (ms.empty()) break;
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      g = apply(g, ms[(state >> 33) % ms.size()]);
    }
    expect_same(g0, g, "random sequence");
  }
}

}  // namespace
}  // namespace tempo::rewrite
