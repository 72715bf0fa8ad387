// Every SDG operator kind, listed once. Adding a kind here makes the compiler point at every
// switch that must handle it (shape inference, backend lowering, gradients, ...).
#pragma once

#include <cstdint>

namespace tempo::ir {

// X(Name, inputs, outputs, differentiable, vectorization rule): inputs/outputs of -1 mean
// variadic; gradients flow through differentiable kinds only (not sources, user functions, integer
// or boolean results, or Detach). The vectorization rule (VecRule below) says how an op of the
// kind changes when a temporal dimension becomes a new leading spatial dimension (TEMPO §4.2).
// Attribute use is documented per kind (see Attrs in sdg.h). A random draw's values are a function
// of (seed, stream, point), so they do not depend on the schedule or on the passes; its stream is
// the op's id in the user's program.
#define TEMPO_OP_KINDS(X)                                                                          \
  /* sources */                                                                                    \
  X(Const, 0, 1, false, None)       /* fill exprs-shaped tensor with `scalar`, dtype */            \
  X(RandUniform, 0, 1, false, None) /* U[0,1) of shape exprs, dtype; ints[0]: stream */            \
  X(RandNormal, 0, 1, false, None)  /* N(0,1) of shape exprs, dtype; ints[0]: stream */            \
  X(Arange, 0, 1, false, None)      /* [0, exprs[0]) as dtype */                                   \
  X(EvalSymbol, 0, 1, false, None)  /* scalar int64 value of exprs[0] at the current point */      \
  X(Udf, -1, -1, false, None)       /* user function (udf) on host tensors */                      \
  X(Merge, -1, 1, true, None) /* first input whose edge condition holds is moved to the output */  \
  X(Identity, 1, 1, true, Elementwise)                                                             \
  X(Detach, 1, 1, false, Elementwise) /* identity whose gradient is zero */                        \
  /* elementwise unary */                                                                          \
  X(Neg, 1, 1, true, Elementwise)                                                                  \
  X(Exp, 1, 1, true, Elementwise)                                                                  \
  X(Log, 1, 1, true, Elementwise)                                                                  \
  X(Sqrt, 1, 1, true, Elementwise)                                                                 \
  X(Sin, 1, 1, true, Elementwise)                                                                  \
  X(Cos, 1, 1, true, Elementwise)                                                                  \
  X(Tanh, 1, 1, true, Elementwise)                                                                 \
  X(Sigmoid, 1, 1, true, Elementwise)                                                              \
  X(Relu, 1, 1, true, Elementwise)                                                                 \
  X(Abs, 1, 1, true, Elementwise)                                                                  \
  X(Sign, 1, 1, false, Elementwise)                                                                \
  X(Floor, 1, 1, false, Elementwise)                                                               \
  X(Ceil, 1, 1, false, Elementwise)                                                                \
  X(Not, 1, 1, false, Elementwise)                                                                 \
  X(Cast, 1, 1, true, Elementwise) /* to dtype */                                                  \
  /* elementwise binary (broadcasting) */                                                          \
  X(Add, 2, 1, true, Elementwise)                                                                  \
  X(Sub, 2, 1, true, Elementwise)                                                                  \
  X(Mul, 2, 1, true, Elementwise)                                                                  \
  X(Div, 2, 1, true, Elementwise)                                                                  \
  X(Pow, 2, 1, true, Elementwise)                                                                  \
  X(Maximum, 2, 1, true, Elementwise)                                                              \
  X(Minimum, 2, 1, true, Elementwise)                                                              \
  X(Eq, 2, 1, false, Elementwise)                                                                  \
  X(Ne, 2, 1, false, Elementwise)                                                                  \
  X(Lt, 2, 1, false, Elementwise)                                                                  \
  X(Le, 2, 1, false, Elementwise)                                                                  \
  X(Gt, 2, 1, false, Elementwise)                                                                  \
  X(Ge, 2, 1, false, Elementwise)                                                                  \
  X(And, 2, 1, false, Elementwise)                                                                 \
  X(Or, 2, 1, false, Elementwise)                                                                  \
  X(Where, 3, 1, true, Elementwise) /* cond, a, b */                                               \
  /* reductions and scans (DiscountedSum: alive(k) = no done[j] >= 0.5 for j < k, episode ends) */ \
  X(Sum, 1, 1, true, DimAttrs)       /* over dims `ints`, keepdim */                               \
  X(ReduceMax, 1, 2, true, DimAttrs) /* over dim ints[0], keepdim: values, int64 indices */        \
  X(TopK, 1, 2, false, DimAttrs) /* the exprs[0] largest along ints[0]: values, int64 indices */ \
  X(CumSum, 1, 1, true, DimAttrs)    /* along ints[0] */                                           \
  X(DiscountedSum, -1, 1, true,                                                                    \
    DimAttrs) /* x[, done]: sum_k scalar^k x[k] alive(k) along ints[0] */                          \
  /* x[, done] along ints[0]; exprs[0] = 1: y[k] = x[k] + scalar link(k) y[k + 1], else        */   \
  /* y[k] = x[k] + scalar link(k - 1) y[k - 1]; link(j) = done[j] < 0.5 (1 without done)      */   \
  X(DiscountedCumSum, -1, 1, true, DimAttrs)                                                       \
  /* movement and views */                                                                         \
  X(Reshape, 1, 1, true, ShapeAttr)  /* to shape exprs */                                          \
  X(Permute, 1, 1, true, Permute)    /* dims order ints */                                         \
  X(Expand, 1, 1, true, ShapeAttr)   /* to shape exprs (broadcast) */                              \
  X(Squeeze, 1, 1, true, DimAttrs)   /* dim ints[0] (size 1) */                                    \
  X(Unsqueeze, 1, 1, true, DimAttrs) /* new dim at ints[0] */                                      \
  X(Slice, 1, 1, true, DimAttrs)     /* dim ints[0], range exprs[0]:exprs[1] */                    \
  X(Pad, 1, 1, true, DimAttrs)  /* dim ints[0], exprs[0] before, exprs[1] after, value `scalar` */ \
  X(Flip, 1, 1, true, DimAttrs) /* dim ints[0] */                                                  \
  X(Cat, -1, 1, true, DimAttrs) /* along ints[0] */                                                \
  /* indexing */                                                                                   \
  X(Index, 1, 1, true, DimAttrs) /* select position exprs[0] of dim ints[0] (removes the dim) */   \
  X(IndexSelect, 2, 1, true, DimAttrs) /* src, int64 index [k]: along dim ints[0] */               \
  X(Gather, 2, 1, true, DimAttrs)      /* src, int64 index: along dim ints[0] */                   \
  X(ScatterAdd, 3, 1, true, None)      /* self, index, src: along dim ints[0] */                   \
  X(IndexAdd, 3, 1, true, None)        /* self, index [k], src: along dim ints[0] */               \
  /* linear algebra */                                                                             \
  X(MatMul, 2, 1, true, MatMul)                                                                    \
  X(Conv2d, 2, 1, true, None) /* input (N,C,H,W), weight (O,C,kh,kw); ints = stride, padding */ \
  /* dataflow regions (passes/fusion.cpp; after autodiff, so never differentiated) */            \
  X(Fused, -1, -1, false, None) /* runs attrs.region's body at each point of its domain */       \
  X(Param, 0, 1, false, None)   /* in a region's body: input ints[0] of the Fused op */          \
  /* collectives across the ranks of a data-parallel job (CompileOptions::communicator); every */ \
  /* rank runs the same schedule, so they meet in the same order; one process: the identity */   \
  X(AllReduce, 1, 1, false, None) /* the sum over ranks (ints[0] = 1: the mean), same type */     \
  X(Broadcast, 1, 1, false, None) /* rank ints[0]'s value on every rank */

enum class OpKind : uint8_t {
#define TEMPO_X(name, nin, nout, diff, vec) name,
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

const char* op_kind_name(OpKind k);
VecRule vec_rule(OpKind k);
int op_kind_inputs(OpKind k);   // -1: variadic
int op_kind_outputs(OpKind k);  // -1: variadic
bool is_differentiable(OpKind k);
bool is_elementwise(OpKind k);

}  // namespace tempo::ir
