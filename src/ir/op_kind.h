// Every SDG operator kind, listed once. Adding a kind here makes the compiler point at every
// switch that must handle it (shape inference, backend lowering, gradients, ...).
#pragma once

#include <cstdint>

namespace tempo::ir {

// X(Name, inputs, outputs, differentiable): inputs/outputs of -1 mean variadic; gradients flow
// through differentiable kinds only (not sources, user functions, integer or boolean results, or
// Detach).
// Attribute use is documented per kind (see Attrs in sdg.h).
#define TEMPO_OP_KINDS(X)                                                                         \
  /* sources */                                                                                   \
  X(Const, 0, 1, false)       /* fill exprs-shaped tensor with `scalar`, dtype */                 \
  X(RandUniform, 0, 1, false) /* U[0,1) of shape exprs, dtype */                                  \
  X(RandNormal, 0, 1, false)  /* N(0,1) of shape exprs, dtype */                                  \
  X(Arange, 0, 1, false)      /* [0, exprs[0]) as dtype */                                        \
  X(EvalSymbol, 0, 1, false)  /* scalar int64 value of exprs[0] at the current point */           \
  X(Udf, -1, -1, false)       /* user function (udf) on host tensors */                           \
  X(Merge, -1, 1, true)       /* first input whose edge condition holds is moved to the output */ \
  X(Identity, 1, 1, true)                                                                         \
  X(Detach, 1, 1, false) /* identity whose gradient is zero */                                    \
  /* elementwise unary */                                                                         \
  X(Neg, 1, 1, true)                                                                              \
  X(Exp, 1, 1, true)                                                                              \
  X(Log, 1, 1, true)                                                                              \
  X(Sqrt, 1, 1, true)                                                                             \
  X(Sin, 1, 1, true)                                                                              \
  X(Cos, 1, 1, true)                                                                              \
  X(Tanh, 1, 1, true)                                                                             \
  X(Sigmoid, 1, 1, true)                                                                          \
  X(Relu, 1, 1, true)                                                                             \
  X(Abs, 1, 1, true)                                                                              \
  X(Sign, 1, 1, false)                                                                            \
  X(Floor, 1, 1, false)                                                                           \
  X(Ceil, 1, 1, false)                                                                            \
  X(Not, 1, 1, false)                                                                             \
  X(Cast, 1, 1, true) /* to dtype */                                                              \
  /* elementwise binary (broadcasting) */                                                         \
  X(Add, 2, 1, true)                                                                              \
  X(Sub, 2, 1, true)                                                                              \
  X(Mul, 2, 1, true)                                                                              \
  X(Div, 2, 1, true)                                                                              \
  X(Pow, 2, 1, true)                                                                              \
  X(Maximum, 2, 1, true)                                                                          \
  X(Minimum, 2, 1, true)                                                                          \
  X(Eq, 2, 1, false)                                                                              \
  X(Ne, 2, 1, false)                                                                              \
  X(Lt, 2, 1, false)                                                                              \
  X(Le, 2, 1, false)                                                                              \
  X(Gt, 2, 1, false)                                                                              \
  X(Ge, 2, 1, false)                                                                              \
  X(And, 2, 1, false)                                                                             \
  X(Or, 2, 1, false)                                                                              \
  X(Where, 3, 1, true) /* cond, a, b */                                                           \
  /* reductions and scans */                                                                      \
  X(Sum, 1, 1, true)       /* over dims `ints`, keepdim */                                        \
  X(ReduceMax, 1, 2, true) /* over dim ints[0], keepdim: values, int64 indices */                 \
  X(CumSum, 1, 1, true)    /* along ints[0] */                                                    \
  /* movement and views */                                                                        \
  X(Reshape, 1, 1, true)   /* to shape exprs */                                                   \
  X(Permute, 1, 1, true)   /* dims order ints */                                                  \
  X(Expand, 1, 1, true)    /* to shape exprs (broadcast) */                                       \
  X(Squeeze, 1, 1, true)   /* dim ints[0] (size 1) */                                             \
  X(Unsqueeze, 1, 1, true) /* new dim at ints[0] */                                               \
  X(Slice, 1, 1, true)     /* dim ints[0], range exprs[0]:exprs[1] */                             \
  X(Pad, 1, 1, true)       /* dim ints[0], exprs[0] before, exprs[1] after, value `scalar` */     \
  X(Flip, 1, 1, true)      /* dim ints[0] */                                                      \
  X(Cat, -1, 1, true)      /* along ints[0] */                                                    \
  /* indexing */                                                                                  \
  X(Index, 1, 1, true)       /* select position exprs[0] of dim ints[0] (removes the dim) */      \
  X(IndexSelect, 2, 1, true) /* src, int64 index [k]: along dim ints[0] */                        \
  X(Gather, 2, 1, true)      /* src, int64 index: along dim ints[0] */                            \
  X(ScatterAdd, 3, 1, true)  /* self, index, src: along dim ints[0] */                            \
  X(IndexAdd, 3, 1, true)    /* self, index [k], src: along dim ints[0] */                        \
  /* linear algebra */                                                                            \
  X(MatMul, 2, 1, true)                                                                           \
  X(Conv2d, 2, 1, true) /* input (N,C,H,W), weight (O,C,kh,kw); ints = stride, padding */

enum class OpKind : uint8_t {
#define TEMPO_X(name, nin, nout, diff) name,
  TEMPO_OP_KINDS(TEMPO_X)
#undef TEMPO_X
};

const char* op_kind_name(OpKind k);
int op_kind_inputs(OpKind k);   // -1: variadic
int op_kind_outputs(OpKind k);  // -1: variadic
bool is_differentiable(OpKind k);
bool is_elementwise(OpKind k);

}  // namespace tempo::ir
