#include "ir/op_kind.h"

#include <cctype>
#include <iterator>

namespace tempo::ir {

namespace {

// One row of TEMPO_OP_KINDS.
struct KindFacts {
  const char* name;
  int inputs, outputs;
  bool differentiable;
  VecRule vec;
  OpCategory category;
  ResultRule result;
};

constexpr KindFacts kFacts[] = {
#define TEMPO_X(name, nin, nout, diff, vec, category, result) \
  {#name, nin, nout, diff, VecRule::vec, OpCategory::category, ResultRule::result},
    TEMPO_OP_KINDS(TEMPO_X)
#undef TEMPO_X
};

// A kind outside the table (a corrupted value) reads as a source of nothing.
constexpr KindFacts kUnknown{
    "?", 0, 0, false, VecRule::None, OpCategory::Source, ResultRule::Plain};

const KindFacts& facts(OpKind k) {
  const auto i = static_cast<size_t>(k);
  return i < std::size(kFacts) ? kFacts[i] : kUnknown;
}

}  // namespace

const char* op_kind_name(OpKind k) { return facts(k).name; }

std::string default_op_name(OpKind k) {
  std::string out(op_kind_name(k));
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
int op_kind_inputs(OpKind k) { return facts(k).inputs; }
int op_kind_outputs(OpKind k) { return facts(k).outputs; }
bool is_differentiable(OpKind k) { return facts(k).differentiable; }
VecRule vec_rule(OpKind k) { return facts(k).vec; }
OpCategory op_kind_category(OpKind k) { return facts(k).category; }
ResultRule result_rule(OpKind k) { return facts(k).result; }

bool is_elementwise(OpKind k) {
  const OpCategory c = op_kind_category(k);
  return c == OpCategory::Unary || c == OpCategory::Binary;
}

bool is_logical(OpKind k) { return result_rule(k) == ResultRule::Logical; }
bool is_float_only(OpKind k) { return result_rule(k) == ResultRule::FloatOnly; }

}  // namespace tempo::ir
