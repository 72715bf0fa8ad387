#include "ir/op_kind.h"

namespace tempo::ir {

const char* op_kind_name(OpKind k) {
  switch (k) {
#define TEMPO_X(name, nin, nout, diff, vec) \
  case OpKind::name:                        \
    return #name;
    TEMPO_OP_KINDS(TEMPO_X)
#undef TEMPO_X
  }
  return "?";
}

int op_kind_inputs(OpKind k) {
  switch (k) {
#define TEMPO_X(name, nin, nout, diff, vec) \
  case OpKind::name:                        \
    return nin;
    TEMPO_OP_KINDS(TEMPO_X)
#undef TEMPO_X
  }
  return 0;
}

int op_kind_outputs(OpKind k) {
  switch (k) {
#define TEMPO_X(name, nin, nout, diff, vec) \
  case OpKind::name:                        \
    return nout;
    TEMPO_OP_KINDS(TEMPO_X)
#undef TEMPO_X
  }
  return 0;
}

bool is_differentiable(OpKind k) {
  switch (k) {
#define TEMPO_X(name, nin, nout, diff, vec) \
  case OpKind::name:                        \
    return diff;
    TEMPO_OP_KINDS(TEMPO_X)
#undef TEMPO_X
  }
  return false;
}

VecRule vec_rule(OpKind k) {
  switch (k) {
#define TEMPO_X(name, nin, nout, diff, vec) \
  case OpKind::name:                        \
    return VecRule::vec;
    TEMPO_OP_KINDS(TEMPO_X)
#undef TEMPO_X
  }
  return VecRule::None;
}

bool is_elementwise(OpKind k) {
  switch (k) {
    case OpKind::Neg:
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Sqrt:
    case OpKind::Sin:
    case OpKind::Cos:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::Relu:
    case OpKind::Abs:
    case OpKind::Sign:
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Not:
    case OpKind::Cast:
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Pow:
    case OpKind::Maximum:
    case OpKind::Minimum:
    case OpKind::Eq:
    case OpKind::Ne:
    case OpKind::Lt:
    case OpKind::Le:
    case OpKind::Gt:
    case OpKind::Ge:
    case OpKind::And:
    case OpKind::Or:
    case OpKind::Where:
      return true;
    default:
      return false;
  }
}

}  // namespace tempo::ir
