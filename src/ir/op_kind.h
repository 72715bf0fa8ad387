// Every SDG operator kind, listed once with its facts. Adding a kind here makes the compiler point
// at every switch over the kinds or their categories; the per-category rules (shape inference,
// backend lowering, gradients, ...) then fail at run time on a kind they do not know.
#pragma once

#include <cstdint>
#include <string>

namespace tempo::ir {

// X(Name, inputs, outputs, differentiable, vectorization rule, category, result rule):
// inputs/outputs of -1 mean variadic; gradients flow through differentiable kinds only (not
// sources, user functions, integer or boolean results, or Detach). The vectorization rule (VecRule
// below) says how an op of the kind changes when a temporal dimension becomes a new leading
// spatial dimension (TEMPO §4.2). The category (OpCategory) groups the kinds whose rules are
// written together; the result rule (ResultRule) is the elementwise kinds' result type.
// Attribute use is documented per kind (see Attrs in sdg.h). A random draw's values are a function
// of (seed, stream, point), so they do not depend on the schedule or on the passes; its stream is
// the op's id in the user's program.
#define TEMPO_OP_KINDS(X)                                                                          \
  /* sources */                                                                                    \
  X(Const, 0, 1, false, None, Source, Plain) /* fill exprs-shaped tensor with `scalar`, dtype */   \
  /* U[0,1) of shape exprs, dtype; ints[0]: stream */                                              \
  X(RandUniform, 0, 1, false, None, Source, Plain)                                                 \
  /* N(0,1) of shape exprs, dtype; ints[0]: stream */                                              \
  X(RandNormal, 0, 1, false, None, Source, Plain)                                                  \
  X(Arange, 0, 1, false, None, Source, Plain) /* [0, exprs[0]) as dtype */                         \
  /* scalar int64 value of exprs[0] at the current point */                                        \
  X(EvalSymbol, 0, 1, false, None, Source, Plain)                                                  \
  /* values passed on, or to a user function */                                                    \
  X(Udf, -1, -1, false, None, Flow, Plain) /* user function (udf) on host tensors */               \
  /* first input whose edge condition holds is moved to the output */                              \
  X(Merge, -1, 1, true, None, Flow, Plain)                                                         \
  X(Identity, 1, 1, true, Elementwise, Flow, Plain)                                                \
  X(Detach, 1, 1, false, Elementwise, Flow, Plain) /* identity whose gradient is zero */           \
  /* elementwise unary */                                                                          \
  X(Neg, 1, 1, true, Elementwise, Unary, Plain)                                                    \
  X(Exp, 1, 1, true, Elementwise, Unary, FloatOnly)                                                \
  X(Log, 1, 1, true, Elementwise, Unary, FloatOnly)                                                \
  X(Sqrt, 1, 1, true, Elementwise, Unary, FloatOnly)                                               \
  X(Sin, 1, 1, true, Elementwise, Unary, FloatOnly)                                                \
  X(Cos, 1, 1, true, Elementwise, Unary, FloatOnly)                                                \
  X(Tanh, 1, 1, true, Elementwise, Unary, FloatOnly)                                               \
  X(Sigmoid, 1, 1, true, Elementwise, Unary, FloatOnly)                                            \
  X(Relu, 1, 1, true, Elementwise, Unary, Plain)                                                   \
  X(Abs, 1, 1, true, Elementwise, Unary, Plain)                                                    \
  X(Sign, 1, 1, false, Elementwise, Unary, Plain)                                                  \
  X(Floor, 1, 1, false, Elementwise, Unary, Plain)                                                 \
  X(Ceil, 1, 1, false, Elementwise, Unary, Plain)                                                  \
  X(Not, 1, 1, false, Elementwise, Unary, Logical)                                                 \
  X(Cast, 1, 1, true, Elementwise, Unary, Plain) /* to dtype */                                    \
  /* elementwise binary (broadcasting) */                                                          \
  X(Add, 2, 1, true, Elementwise, Binary, Plain)                                                   \
  X(Sub, 2, 1, true, Elementwise, Binary, Plain)                                                   \
  X(Mul, 2, 1, true, Elementwise, Binary, Plain)                                                   \
  X(Div, 2, 1, true, Elementwise, Binary, FloatOnly) /* true division */                           \
  X(Pow, 2, 1, true, Elementwise, Binary, Plain)                                                   \
  X(Maximum, 2, 1, true, Elementwise, Binary, Plain)                                               \
  X(Minimum, 2, 1, true, Elementwise, Binary, Plain)                                               \
  X(Eq, 2, 1, false, Elementwise, Binary, Logical)                                                 \
  X(Ne, 2, 1, false, Elementwise, Binary, Logical)                                                 \
  X(Lt, 2, 1, false, Elementwise, Binary, Logical)                                                 \
  X(Le, 2, 1, false, Elementwise, Binary, Logical)                                                 \
  X(Gt, 2, 1, false, Elementwise, Binary, Logical)                                                 \
  X(Ge, 2, 1, false, Elementwise, Binary, Logical)                                                 \
  X(And, 2, 1, false, Elementwise, Binary, Logical)                                                \
  X(Or, 2, 1, false, Elementwise, Binary, Logical)                                                 \
  X(Where, 3, 1, true, Elementwise, Binary, Plain) /* cond, a, b */                                \
  /* reductions and scans (DiscountedSum: alive(k) = no done[j] >= 0.5 for j < k, episode ends) */ \
  X(Sum, 1, 1, true, DimAttrs, Reduction, Plain) /* over dims `ints`, keepdim */                   \
  /* over dim ints[0], keepdim: values, int64 indices */                                           \
  X(ReduceMax, 1, 2, true, DimAttrs, Reduction, Plain)                                             \
  /* the exprs[0] largest along ints[0]: values, int64 indices */                                  \
  X(TopK, 1, 2, false, DimAttrs, Reduction, Plain)                                                 \
  X(CumSum, 1, 1, true, DimAttrs, Reduction, Plain) /* along ints[0] */                            \
  /* x[, done]: sum_k scalar^k x[k] alive(k) along ints[0] */                                      \
  X(DiscountedSum, -1, 1, true, DimAttrs, Reduction, Plain)                                        \
  /* x[, done] along ints[0]; exprs[0] = 1: y[k] = x[k] + scalar link(k) y[k + 1], else */         \
  /* y[k] = x[k] + scalar link(k - 1) y[k - 1]; link(j) = done[j] < 0.5 (1 without done) */        \
  X(DiscountedCumSum, -1, 1, true, DimAttrs, Reduction, Plain)                                     \
  /* movement and views */                                                                         \
  X(Reshape, 1, 1, true, ShapeAttr, Movement, Plain)  /* to shape exprs */                         \
  X(Permute, 1, 1, true, Permute, Movement, Plain)    /* dims order ints */                        \
  X(Expand, 1, 1, true, ShapeAttr, Movement, Plain)   /* to shape exprs (broadcast) */             \
  X(Squeeze, 1, 1, true, DimAttrs, Movement, Plain)   /* dim ints[0] (size 1) */                   \
  X(Unsqueeze, 1, 1, true, DimAttrs, Movement, Plain) /* new dim at ints[0] */                     \
  X(Slice, 1, 1, true, DimAttrs, Movement, Plain)     /* dim ints[0], range exprs[0]:exprs[1] */   \
  /* dim ints[0], exprs[0] before, exprs[1] after, value `scalar` */                               \
  X(Pad, 1, 1, true, DimAttrs, Movement, Plain)                                                    \
  X(Flip, 1, 1, true, DimAttrs, Movement, Plain) /* dim ints[0] */                                 \
  X(Cat, -1, 1, true, DimAttrs, Movement, Plain) /* along ints[0] */                               \
  /* indexing */                                                                                   \
  /* select position exprs[0] of dim ints[0] (removes the dim) */                                  \
  X(Index, 1, 1, true, DimAttrs, Indexing, Plain)                                                  \
  /* src, int64 index [k]: along dim ints[0] */                                                    \
  X(IndexSelect, 2, 1, true, DimAttrs, Indexing, Plain)                                            \
  X(Gather, 2, 1, true, DimAttrs, Indexing, Plain) /* src, int64 index: along dim ints[0] */       \
  X(ScatterAdd, 3, 1, true, None, Indexing, Plain) /* self, index, src: along dim ints[0] */       \
  X(IndexAdd, 3, 1, true, None, Indexing, Plain)   /* self, index [k], src: along dim ints[0] */   \
  /* linear algebra */                                                                             \
  X(MatMul, 2, 1, true, MatMul, LinearAlgebra, Plain)                                              \
  /* input (N,C,H,W), weight (O,C,kh,kw); ints = stride, padding */                                \
  X(Conv2d, 2, 1, true, None, LinearAlgebra, Plain)                                                \
  /* dataflow regions (passes/fusion.cpp; after autodiff, so never differentiated) */              \
  /* runs attrs.region's body at each point of its domain */                                       \
  X(Fused, -1, -1, false, None, Region, Plain)                                                     \
  /* in a region's body: input ints[0] of the Fused op */                                          \
  X(Param, 0, 1, false, None, Region, Plain)                                                       \
  /* collectives across the ranks of a data-parallel job (CompileOptions::communicator); every */  \
  /* rank runs the same schedule, so they meet in the same order; one process: the identity */     \
  /* the sum over ranks (ints[0] = 1: the mean), same type */                                      \
  X(AllReduce, 1, 1, false, None, Collective, Plain)                                               \
  X(Broadcast, 1, 1, false, None, Collective, Plain) /* rank ints[0]'s value on every rank */

enum class OpKind : uint8_t {
#define TEMPO_X(name, ...) name,
  TEMPO_OP_KINDS(TEMPO_X)
#undef TEMPO_X
};

// How an op kind is vectorized along a temporal dimension (passes/vectorize.cpp applies it): its
// output gains a leading dimension of the temporal bound, and its attributes change as follows.
enum class VecRule : uint8_t {
  None,         // not vectorized (sources, user functions, merges, random draws, scatters)
  Elementwise,  // broadcasting: vectorized inputs of lower rank get unit dims after the new one
  DimAttrs,   // ints are dims of the first input: each shifts by one (Sum over all: made explicit)
  Permute,    // ints is a permutation: [0] + (ints + 1)
  ShapeAttr,  // exprs is the output shape: the bound is prepended
  MatMul,     // batched matmul broadcasting, for the operand ranks where it holds
};

// The groups of kinds whose rules (inference, lowering, gradients) are written together.
enum class OpCategory : uint8_t {
  Source,         // no inputs: constants, random draws, ranges, symbol values
  Flow,           // values passed on as they are (merges, identities) or to a user function
  Unary,          // elementwise, one input
  Binary,         // elementwise, broadcasting operands (Where's three included)
  Reduction,      // reductions and scans along dimensions
  Movement,       // reshapes, views and copies that move elements
  Indexing,       // selections and scatters by position or index tensor
  LinearAlgebra,  // matrix products and convolutions
  Region,         // fused regions and their bodies' parameters
  Collective,     // across the ranks of a data-parallel job
};

// The result type of an elementwise kind (Plain for every other kind).
enum class ResultRule : uint8_t {
  Plain,      // the operands' promoted type (or the kind's own rule: Cast, Where)
  Logical,    // bool, from operands of any type (comparisons and logic)
  FloatOnly,  // a floating type: integer operands give float32 (e.g. exp, true division)
};

const char* op_kind_name(OpKind k);
// The name an RT made by an op of kind k has until RT::named gives it one: the kind, lower case.
std::string default_op_name(OpKind k);
VecRule vec_rule(OpKind k);
OpCategory op_kind_category(OpKind k);
ResultRule result_rule(OpKind k);
int op_kind_inputs(OpKind k);   // -1: variadic
int op_kind_outputs(OpKind k);  // -1: variadic
bool is_differentiable(OpKind k);
bool is_elementwise(OpKind k);  // Unary or Binary
bool is_logical(OpKind k);      // ResultRule::Logical
bool is_float_only(OpKind k);   // ResultRule::FloatOnly

}  // namespace tempo::ir
