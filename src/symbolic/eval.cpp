// Compilation of expressions into flat stack programs, and their evaluation.
#include "symbolic/eval.h"

#include <algorithm>

#include "util/error.h"

namespace tempo::sym {

int SymbolLayout::slot(const Expr& symbol) const {
  if (!symbol.is_symbol()) return -1;
  for (size_t k = 0; k < dims_.size(); ++k) {
    if (symbol.same(dims_[k].var)) return static_cast<int>(k);
    if (symbol.same(dims_[k].bound)) return static_cast<int>(dims_.size() + k);
  }
  return -1;
}

namespace {

// Instruction set. A binary operation `X` comes in three forms that differ in where the right
// operand comes from: X (popped from the stack), XImm (imm), XSlot (env[a] + imm). The left
// operand is the top of the stack, which the result replaces.
#define TEMPO_BINARY_OPS(X) \
  X(Add) X(Mul) X(Div) X(Mod) X(Min) X(Max) X(Eq) X(Ne) X(Lt) X(Le) X(Gt) X(Ge) X(And) X(Or)

enum Code : uint8_t {
  kPushImm,   // push imm
  kPushSlot,  // push env[a] + imm
  kNot,       // top = !top
#define TEMPO_X(name) k##name, k##name##Imm, k##name##Slot,
  TEMPO_BINARY_OPS(TEMPO_X)
#undef TEMPO_X
};

inline int64_t wrap_add(int64_t x, int64_t y) {
  return static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
}
inline int64_t wrap_mul(int64_t x, int64_t y) {
  return static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
}
// Floor division and modulo for a nonzero divisor (as in expr.cpp); INT64_MIN // -1 wraps.
inline int64_t floor_div(int64_t x, int64_t y) {
  if (y == -1) return wrap_mul(x, -1);
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  return q;
}
inline int64_t floor_mod(int64_t x, int64_t y) {
  if (y == -1) return 0;
  int64_t r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}

// Where the right operand of a binary operation comes from.
struct Operand {
  enum Mode { Stack, Imm, Slot } mode = Stack;
  int32_t slot = 0;
  int64_t imm = 0;
};

class Compiler {
 public:
  Compiler(const Expr& root, const SymbolLayout& layout, std::vector<CompiledExpr::Instr>& code,
           std::vector<Expr>& sites)
      : root_(root), layout_(layout), code_(code), sites_(sites) {}

  int max_depth() const { return max_depth_; }

  // Emits code that pushes the value of e.
  void emit(const Expr& e) {
    Operand leaf;
    if (as_leaf(e, leaf)) {
      push(leaf.mode == Operand::Imm ? kPushImm : kPushSlot, leaf.slot, 0, leaf.imm, +1);
      return;
    }
    switch (e.op()) {
      case Op::Const:
      case Op::Bool:
      case Op::Symbol:
        internal_error("leaf not recognized");
      case Op::Add: return nary(e, kAdd);
      case Op::Mul: return nary(e, kMul);
      case Op::Min: return nary(e, kMin);
      case Op::Max: return nary(e, kMax);
      case Op::And: return nary(e, kAnd);
      case Op::Or: return nary(e, kOr);
      case Op::FloorDiv: return binary(e, kDiv, e.arg(0), e.arg(1));
      case Op::Mod: return binary(e, kMod, e.arg(0), e.arg(1));
      case Op::Eq: return compare(e, kEq, kEq);
      case Op::Ne: return compare(e, kNe, kNe);
      case Op::Lt: return compare(e, kLt, kGt);
      case Op::Le: return compare(e, kLe, kGe);
      case Op::Not:
        emit(e.arg(0));
        push(kNot, 0, 0, 0, 0);
        return;
      case Op::Slice:
      case Op::Seq:
        throw UserError(cat("cannot evaluate the ", e.op() == Op::Slice ? "slice" : "sequence", " `",
                            e.str(), "` as a single value in \"", root_.str(), "\""));
    }
  }

 private:
  // A constant, a symbol, or symbol + constant: usable as an operand without a stack slot.
  bool as_leaf(const Expr& e, Operand& out) {
    if (e.is_const() || e.is_bool_const()) {
      out = {Operand::Imm, 0, e.value()};
      return true;
    }
    if (e.is_symbol()) {
      out = {Operand::Slot, slot_of(e), 0};
      return true;
    }
    if (e.op() == Op::Add && e.size() == 2 && e.arg(0).is_symbol() && e.arg(1).is_const()) {
      out = {Operand::Slot, slot_of(e.arg(0)), e.arg(1).value()};
      return true;
    }
    return false;
  }

  int32_t slot_of(const Expr& sym) {
    int s = layout_.slot(sym);
    if (s < 0)
      throw UserError(cat("unbound symbol ", sym.name(), " in \"", root_.str(),
                          "\" (the layout has dims [", dims_str(layout_.dims()), "])"));
    return s;
  }

  void push(uint8_t op, int32_t a, int32_t b, int64_t imm, int delta) {
    code_.push_back({op, a, b, imm});
    depth_ += delta;
    max_depth_ = std::max(max_depth_, depth_);
  }

  // Applies `base` (the stack form of an operation) to the top of the stack and `rhs`.
  void apply(uint8_t base, const Expr& rhs, const Expr& site) {
    Operand o;
    if (as_leaf(rhs, o)) {
      bool is_div = base == kDiv || base == kMod;
      if (is_div && o.mode == Operand::Imm && o.imm == 0)
        throw UserError(cat("division by zero in `", site.str(), "` of \"", root_.str(), "\""));
      if (o.mode == Operand::Imm) {
        push(base + 1, 0, 0, o.imm, 0);
      } else {
        int32_t s = is_div ? register_site(site) : 0;
        push(base + 2, o.slot, s, o.imm, 0);
      }
      return;
    }
    emit(rhs);
    int32_t s = (base == kDiv || base == kMod) ? register_site(site) : 0;
    push(base, 0, s, 0, -1);
  }

  int32_t register_site(const Expr& site) {
    sites_.push_back(site);
    return static_cast<int32_t>(sites_.size() - 1);
  }

  void nary(const Expr& e, uint8_t base) {
    // Start from a non-leaf operand if there is one, so that leaves become immediate operands.
    // Otherwise start from a symbol, which makes min(3, t) the two-instruction shape.
    size_t first = e.size(), first_slot = e.size();
    Operand tmp;
    for (size_t i = 0; i < e.size() && first == e.size(); ++i) {
      if (!as_leaf(e.arg(i), tmp))
        first = i;
      else if (tmp.mode == Operand::Slot && first_slot == e.size())
        first_slot = i;
    }
    if (first == e.size()) first = first_slot == e.size() ? 0 : first_slot;
    emit(e.arg(first));
    for (size_t i = 0; i < e.size(); ++i)
      if (i != first) apply(base, e.arg(i), e);
  }

  void binary(const Expr& e, uint8_t base, const Expr& l, const Expr& r) {
    emit(l);
    apply(base, r, e);
  }

  // l OP r; when only l is a leaf, evaluates r OP' l with the mirrored operation instead.
  void compare(const Expr& e, uint8_t base, uint8_t mirrored) {
    Operand tmp;
    if (as_leaf(e.arg(0), tmp) && !as_leaf(e.arg(1), tmp))
      return binary(e, mirrored, e.arg(1), e.arg(0));
    binary(e, base, e.arg(0), e.arg(1));
  }

  const Expr& root_;
  const SymbolLayout& layout_;
  std::vector<CompiledExpr::Instr>& code_;
  std::vector<Expr>& sites_;
  int depth_ = 0;
  int max_depth_ = 0;
};

constexpr int kInlineStack = 32;

}  // namespace

CompiledExpr::CompiledExpr(const Expr& e, const SymbolLayout& layout) : expr_(e) {
  if (!e.defined()) throw UserError("cannot compile an undefined expression");
  Compiler c(e, layout, code_, sites_);
  c.emit(e);
  num_regs_ = c.max_depth();
  TEMPO_ASSERT(num_regs_ >= 1, "empty program for ", e.str());
  // The common shapes skip the program.
  const auto& c0 = code_[0];
  if (code_.size() == 1 && c0.op == kPushImm) {
    kind_ = Kind::Const;
    imm_ = c0.imm;
  } else if (code_.size() == 1 && c0.op == kPushSlot) {
    kind_ = Kind::SlotPlus;
    slot_ = c0.a;
    imm_ = c0.imm;
  } else if (code_.size() == 2 && c0.op == kPushSlot &&
             (code_[1].op == kMinImm || code_[1].op == kMaxImm || code_[1].op == kMinSlot ||
              code_[1].op == kMaxSlot)) {
    const auto& c1 = code_[1];
    slot_ = c0.a;
    imm_ = c0.imm;
    slot2_ = c1.a;
    imm2_ = c1.imm;
    switch (c1.op) {
      case kMinImm: kind_ = Kind::MinSlotImm; break;
      case kMaxImm: kind_ = Kind::MaxSlotImm; break;
      case kMinSlot: kind_ = Kind::MinSlotSlot; break;
      default: kind_ = Kind::MaxSlotSlot; break;
    }
  } else {
    kind_ = Kind::Program;
  }
}

void CompiledExpr::division_by_zero(int32_t site) const {
  const Expr& s = sites_[site];
  throw UserError(cat(s.op() == Op::Mod ? "modulo" : "division", " by zero: the divisor `",
                      s.arg(1).str(), "` of `", s.str(), "` is 0 while evaluating \"", expr_.str(),
                      "\""));
}

int64_t CompiledExpr::run(const int64_t* env) const {
  if (num_regs_ <= kInlineStack) {
    int64_t stack[kInlineStack];
    return run_on(env, stack);
  }
  std::vector<int64_t> stack(num_regs_);  // only for programs nested deeper than kInlineStack
  return run_on(env, stack.data());
}

int64_t CompiledExpr::run_on(const int64_t* env, int64_t* base) const {
  int64_t* sp = base - 1;  // points at the top of the stack
  for (const Instr& in : code_) {
    switch (in.op) {
      case kPushImm: *++sp = in.imm; break;
      case kPushSlot: *++sp = wrap_add(env[in.a], in.imm); break;
      case kNot: *sp = !*sp; break;
#define TEMPO_CASES(name, rhs_stack, rhs_imm, rhs_slot, EXPR) \
  case k##name: {                                              \
    int64_t y = rhs_stack;                                     \
    --sp;                                                      \
    int64_t x = *sp;                                           \
    *sp = (EXPR);                                              \
    break;                                                     \
  }                                                            \
  case k##name##Imm: {                                         \
    int64_t y = rhs_imm;                                       \
    int64_t x = *sp;                                           \
    *sp = (EXPR);                                              \
    break;                                                     \
  }                                                            \
  case k##name##Slot: {                                        \
    int64_t y = rhs_slot;                                      \
    int64_t x = *sp;                                           \
    *sp = (EXPR);                                              \
    break;                                                     \
  }
#define TEMPO_OP(name, EXPR) TEMPO_CASES(name, *sp, in.imm, wrap_add(env[in.a], in.imm), EXPR)
      TEMPO_OP(Add, wrap_add(x, y))
      TEMPO_OP(Mul, wrap_mul(x, y))
      TEMPO_OP(Min, x < y ? x : y)
      TEMPO_OP(Max, x < y ? y : x)
      TEMPO_OP(Eq, x == y)
      TEMPO_OP(Ne, x != y)
      TEMPO_OP(Lt, x < y)
      TEMPO_OP(Le, x <= y)
      TEMPO_OP(Gt, x > y)
      TEMPO_OP(Ge, x >= y)
      TEMPO_OP(And, x && y)
      TEMPO_OP(Or, x || y)
      // A constant divisor is nonzero (expr.h rejects `// 0`); others are checked.
      TEMPO_OP(Div, y == 0 ? (division_by_zero(in.b), 0) : floor_div(x, y))
      TEMPO_OP(Mod, y == 0 ? (division_by_zero(in.b), 0) : floor_mod(x, y))
#undef TEMPO_OP
#undef TEMPO_CASES
      default:
        internal_error(cat("bad instruction ", int(in.op)));
    }
  }
  return *sp;
}

CompiledSeq::CompiledSeq(const Expr& e, const SymbolLayout& layout) : expr_(e) {
  if (!e.defined()) throw UserError("cannot compile an undefined sequence");
  auto add = [&](const Expr& x) {
    Entry en;
    if (x.is_slice()) {
      en.start = CompiledExpr(x.arg(0), layout);
      en.stop = CompiledExpr(x.arg(1), layout);
      en.step = CompiledExpr(x.arg(2), layout);
      en.point = false;
      en.check_step = !en.step.is_constant();
    } else if (x.type() == Type::Int) {
      en.start = CompiledExpr(x, layout);
      en.stop = CompiledExpr(Expr(1), layout);  // unused
      en.step = CompiledExpr(Expr(1), layout);
      en.point = true;
      en.check_step = false;
    } else {
      throw UserError(cat("sequence entry `", x.str(), "` in \"", e.str(),
                          "\" must be an integer or a slice"));
    }
    entries_.push_back(std::move(en));
  };
  if (e.is_seq())
    for (const Expr& x : e.args()) add(x);
  else
    add(e);
}

void CompiledSeq::eval(const int64_t* env, IndexRange* out) const {
  for (const Entry& en : entries_) {
    int64_t start = en.start.eval(env);
    out->start = start;
    if (en.point) {
      out->stop = static_cast<int64_t>(static_cast<uint64_t>(start) + 1);
      out->step = 1;
      out->point = true;
    } else {
      out->stop = en.stop.eval(env);
      int64_t step = en.step.eval(env);
      if (en.check_step && step <= 0)
        throw UserError(cat("slice step `", en.step.expr().str(), "` evaluated to ", step,
                            " (must be positive) in \"", expr_.str(), "\""));
      out->step = step;
      out->point = false;
    }
    ++out;
  }
}

}  // namespace tempo::sym
