// Every SDG operator kind, listed once. Adding a kind here makes the compiler point at every
// switch that must handle it (shape inference, backend lowering, gradients, ...).
#pragma once

#include <cstdint>

namespace tempo::ir {

// X(Name, inputs, outputs): inputs/outputs of -1 mean variadic.
// Attribute use is documented per kind (see Attrs in sdg.h).
#define TEMPO_OP_KINDS(X)                                                                     \
  /* sources */                                                                               \
  X(Const, 0, 1)      /* fill exprs-shaped tensor with `scalar`, dtype */                       \
  X(RandUniform, 0, 1) /* U[0,1) of shape exprs, dtype */                                     \
  X(RandNormal, 0, 1) /* N(0,1) of shape exprs, dtype */                                       \
  X(Arange, 0, 1)     /* [0, exprs[0]) as dtype */                                             \
  X(EvalSymbol, 0, 1) /* scalar int64 value of exprs[0] at the current point */               \
  X(Udf, -1, -1)      /* user function (udf) on host tensors */                                \
  X(Merge, -1, 1)     /* first input whose edge condition holds is moved to the output */      \
  X(Identity, 1, 1)                                                                           \
  X(Detach, 1, 1) /* identity whose gradient is zero */                                       \
  /* elementwise unary */                                                                     \
  X(Neg, 1, 1)                                                                                \
  X(Exp, 1, 1)                                                                                \
  X(Log, 1, 1)                                                                                \
  X(Sqrt, 1, 1)                                                                               \
  X(Sin, 1, 1)                                                                                \
  X(Cos, 1, 1)                                                                                \
  X(Tanh, 1, 1)                                                                               \
  X(Sigmoid, 1, 1)                                                                            \
  X(Relu, 1, 1)                                                                               \
  X(Abs, 1, 1)                                                                                \
  X(Sign, 1, 1)                                                                               \
  X(Floor, 1, 1)                                                                              \
  X(Ceil, 1, 1)                                                                               \
  X(Not, 1, 1)                                                                                \
  X(Cast, 1, 1) /* to dtype */                                                                \
  /* elementwise binary (broadcasting) */                                                     \
  X(Add, 2, 1)                                                                                \
  X(Sub, 2, 1)                                                                                \
  X(Mul, 2, 1)                                                                                \
  X(Div, 2, 1)                                                                                \
  X(Pow, 2, 1)                                                                                \
  X(Maximum, 2, 1)                                                                            \
  X(Minimum, 2, 1)                                                                            \
  X(Eq, 2, 1)                                                                                 \
  X(Ne, 2, 1)                                                                                 \
  X(Lt, 2, 1)                                                                                 \
  X(Le, 2, 1)                                                                                 \
  X(Gt, 2, 1)                                                                                 \
  X(Ge, 2, 1)                                                                                 \
  X(And, 2, 1)                                                                                \
  X(Or, 2, 1)                                                                                 \
  X(Where, 3, 1) /* cond, a, b */                                                             \
  /* reductions and scans */                                                                  \
  X(Sum, 1, 1)       /* over dims `ints`, keepdim */                                          \
  X(ReduceMax, 1, 2) /* over dim ints[0], keepdim: values, int64 indices */                   \
  X(CumSum, 1, 1)    /* along ints[0] */                                                      \
  /* movement and views */                                                                    \
  X(Reshape, 1, 1)   /* to shape exprs */                                                     \
  X(Permute, 1, 1)   /* dims order ints */                                                    \
  X(Expand, 1, 1)    /* to shape exprs (broadcast) */                                         \
  X(Squeeze, 1, 1)   /* dim ints[0] (size 1) */                                               \
  X(Unsqueeze, 1, 1) /* new dim at ints[0] */                                                 \
  X(Slice, 1, 1)     /* dim ints[0], range exprs[0]:exprs[1] */                                \
  X(Pad, 1, 1)       /* dim ints[0], exprs[0] before, exprs[1] after, value `scalar` */       \
  X(Flip, 1, 1)      /* dim ints[0] */                                                        \
  X(Cat, -1, 1)      /* along ints[0] */                                                      \
  /* indexing */                                                                              \
  X(Index, 1, 1)       /* select position exprs[0] of dim ints[0] (removes the dim) */        \
  X(IndexSelect, 2, 1) /* src, int64 index [k]: along dim ints[0] */                          \
  X(Gather, 2, 1)      /* src, int64 index: along dim ints[0] */                              \
  X(ScatterAdd, 3, 1)  /* self, index, src: along dim ints[0] */                              \
  X(IndexAdd, 3, 1)    /* self, index [k], src: along dim ints[0] */                          \
  /* linear algebra */                                                                        \
  X(MatMul, 2, 1)                                                                             \
  X(Conv2d, 2, 1) /* input (N,C,H,W), weight (O,C,kh,kw); ints = stride, padding */

enum class OpKind : uint8_t {
#define TEMPO_X(name, nin, nout) name,
  TEMPO_OP_KINDS(TEMPO_X)
#undef TEMPO_X
};

const char* op_kind_name(OpKind k);
int op_kind_inputs(OpKind k);   // -1: variadic
int op_kind_outputs(OpKind k);  // -1: variadic
bool is_elementwise(OpKind k);

}  // namespace tempo::ir
