// The TopK op kind through the api: its lowering, output types, and errors for a bad k or dim.
#include <gtest/gtest.h>

#include "api/tempo.h"
#include "util/error.h"

namespace tempo {
namespace {

TEST(TopK, LowersToOneOpWithValuesAndIndices) {
  Context ctx;
  RT x = ctx.zeros({2, 3, 7});
  auto [v, i] = x.topk(4);
  EXPECT_EQ(v.op(), i.op());
  const ir::OpNode& op = ctx.graph().op(v.op());
  EXPECT_EQ(op.kind, ir::OpKind::TopK);
  EXPECT_EQ(op.attrs.ints, std::vector<int64_t>{2});
  ASSERT_EQ(op.attrs.exprs.size(), 1u);
  EXPECT_TRUE(op.attrs.exprs[0].is_const(4));
  EXPECT_EQ(v.shape().str(), "(2, 3, 4)");
  EXPECT_EQ(v.dtype(), DType::Float32);
  EXPECT_EQ(i.shape().str(), "(2, 3, 4)");
  EXPECT_EQ(i.dtype(), DType::Int64);
  auto [v0, i0] = x.topk(2, 0);  // along another dim: only that dim's size changes
  EXPECT_EQ(v0.shape().str(), "(2, 3, 7)");
  EXPECT_EQ(x.topk(7, -1).first.shape().str(), "(2, 3, 7)");
  EXPECT_FALSE(ir::is_differentiable(ir::OpKind::TopK));
  EXPECT_EQ(ir::vec_rule(ir::OpKind::TopK), ir::VecRule::DimAttrs);
}

TEST(TopK, BadKOrDimIsAUserError) {
  Context ctx;
  RT x = ctx.zeros({2, 5});
  EXPECT_THROW(x.topk(0), UserError);
  EXPECT_THROW(x.topk(6), UserError);  // more than the dim holds
  EXPECT_THROW(x.topk(1, 2), UserError);
  EXPECT_THROW(ctx.zeros({}).topk(1), UserError);
}

}  // namespace
}  // namespace tempo
