// The op-kind table's facts (category, result rule) agree with what the kinds do.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "ir/sdg.h"
#include "util/error.h"

namespace tempo::ir {
namespace {

const std::vector<OpKind>& all_kinds() {
  static const std::vector<OpKind> kinds = {
#define TEMPO_X(name, ...) OpKind::name,
      TEMPO_OP_KINDS(TEMPO_X)
#undef TEMPO_X
  };
  return kinds;
}

std::vector<TensorType> inputs(OpKind k, DType dt) {
  const int n = op_kind_inputs(k) >= 0 ? op_kind_inputs(k) : 1;
  return std::vector<TensorType>(n, TensorType{dt, Shape({Expr(2), Expr(3)})});
}

TEST(OpKinds, CategoriesAgreeWithTheOtherFacts) {
  std::set<std::string> names;
  for (OpKind k : all_kinds()) {
    SCOPED_TRACE(op_kind_name(k));
    EXPECT_TRUE(names.insert(op_kind_name(k)).second);
    const OpCategory c = op_kind_category(k);
    const bool elementwise = c == OpCategory::Unary || c == OpCategory::Binary;
    const int n = op_kind_inputs(k);
    EXPECT_EQ(is_elementwise(k), elementwise);
    EXPECT_TRUE(!elementwise || vec_rule(k) == VecRule::Elementwise);
    EXPECT_TRUE(elementwise || result_rule(k) == ResultRule::Plain);
    EXPECT_TRUE(c != OpCategory::Source || n == 0);
    EXPECT_TRUE(c != OpCategory::Unary || n == 1);
    EXPECT_TRUE(c != OpCategory::Binary || n == 2 || n == 3);
    const bool never_differentiated =
        c == OpCategory::Source || c == OpCategory::Region || c == OpCategory::Collective;
    EXPECT_TRUE(!never_differentiated || !is_differentiable(k));
    EXPECT_EQ(is_logical(k), result_rule(k) == ResultRule::Logical);
    EXPECT_EQ(is_float_only(k), result_rule(k) == ResultRule::FloatOnly);
    EXPECT_TRUE(!is_logical(k) || !is_differentiable(k));  // boolean results have no gradient
  }
}

// The result rule is the type inference gives integer operands.
TEST(OpKinds, ResultRulesAreInferred) {
  for (OpKind k : all_kinds()) {
    if (!is_elementwise(k) || k == OpKind::Cast || k == OpKind::Where) continue;
    SCOPED_TRACE(op_kind_name(k));
    const DType out = infer_types(k, {}, inputs(k, DType::Int64), {}, "test").at(0).dtype;
    switch (result_rule(k)) {
      case ResultRule::Logical:
        EXPECT_EQ(out, DType::Bool);
        break;
      case ResultRule::FloatOnly:
        EXPECT_EQ(out, DType::Float32);
        break;
      case ResultRule::Plain:
        EXPECT_EQ(out, DType::Int64);
        break;
    }
  }
}

// Every kind reaches a rule of its category: inference may reject the (attribute-less) op, but
// never as a kind its category's rule does not know.
TEST(OpKinds, EveryKindHasAnInferenceRule) {
  for (OpKind k : all_kinds()) {
    SCOPED_TRACE(op_kind_name(k));
    try {
      infer_types(k, {}, inputs(k, DType::Float32), {}, "test");
    } catch (const std::exception& e) {
      EXPECT_EQ(std::string(e.what()).find("unknown op kind"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tempo::ir
