// Compiled evaluation of expressions and index sequences: no allocation, no tree walk on the hot
// path. Symbols are read from an array of int64 values laid out by a SymbolLayout.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "symbolic/expr.h"

namespace tempo::sym {

// Slot of each symbol in the runtime's value array: the variable of dims[k] at slot k and its
// bound at slot dims.size() + k.
class SymbolLayout {
 public:
  SymbolLayout() = default;
  explicit SymbolLayout(Dims dims) : dims_(std::move(dims)) {}
  const Dims& dims() const { return dims_; }
  size_t num_slots() const { return 2 * dims_.size(); }
  // Slot of a variable or bound symbol; -1 if the symbol is not in the layout.
  int slot(const Expr& symbol) const;

 private:
  Dims dims_;
};

// One evaluated entry of a sequence: a point (start only, point == true) or a half-open slice.
struct IndexRange {
  int64_t start = 0;
  int64_t stop = 0;
  int64_t step = 1;
  bool point = true;
  int64_t length() const { return point ? 1 : (stop > start ? (stop - start + step - 1) / step : 0); }
};

// An integer or boolean expression compiled to a flat program (booleans evaluate to 0/1).
// Compilation throws UserError for a symbol missing from the layout ("unbound symbol T in ...").
// Evaluation throws UserError for division or modulo by zero, naming the expression.
// Semantics match expr.h: floor division and floor modulo; + - * wrap around on overflow;
// && and || evaluate both operands (expressions have no side effects, but a division by zero in
// either operand is reported even where the other operand decides the result).
//
// The common shapes of index expressions (a constant, a symbol, symbol + constant, min or max of
// two of those) are evaluated without running the program; others run a stack program whose binary operations may take their
// right operand from an immediate or a symbol slot (plus an immediate), so that e.g.
// max(0, t - 3) is two instructions.
class CompiledExpr {
 public:
  CompiledExpr() = default;
  CompiledExpr(const Expr& e, const SymbolLayout& layout);
  int64_t eval(const int64_t* env) const {
    switch (kind_) {
      case Kind::Const: return imm_;
      case Kind::SlotPlus: return leaf(env);
      case Kind::MinSlotImm: return std::min(leaf(env), imm2_);
      case Kind::MaxSlotImm: return std::max(leaf(env), imm2_);
      case Kind::MinSlotSlot: return std::min(leaf(env), leaf2(env));
      case Kind::MaxSlotSlot: return std::max(leaf(env), leaf2(env));
      case Kind::Program: break;
    }
    return run(env);
  }
  const Expr& expr() const { return expr_; }
  bool is_constant() const { return kind_ == Kind::Const; }

  struct Instr {
    uint8_t op;
    int32_t a, b;  // operand registers / slot / count, depending on op
    int64_t imm;
  };

 private:
  // Shapes evaluated without the program: a constant (imm_), s = env[slot_] + imm_, min/max of s
  // and a constant (imm2_), min/max of s and env[slot2_] + imm2_.
  enum class Kind : uint8_t { Const, SlotPlus, MinSlotImm, MaxSlotImm, MinSlotSlot, MaxSlotSlot, Program };
  static int64_t wrap_add(int64_t x, int64_t y) {
    return static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
  }
  int64_t leaf(const int64_t* env) const { return wrap_add(env[slot_], imm_); }
  int64_t leaf2(const int64_t* env) const { return wrap_add(env[slot2_], imm2_); }
  int64_t run(const int64_t* env) const;
  int64_t run_on(const int64_t* env, int64_t* stack) const;
  [[noreturn]] void division_by_zero(int32_t site) const;

  Expr expr_;
  Kind kind_ = Kind::Const;
  int32_t slot_ = 0, slot2_ = 0;
  int64_t imm_ = 0, imm2_ = 0;
  std::vector<Instr> code_;
  std::vector<Expr> sites_;  // divisions with a non-constant divisor, for error messages
  int num_regs_ = 0;         // stack depth the program needs
};

// A sequence (or a single expression or slice, treated as a one-entry sequence) compiled once.
class CompiledSeq {
 public:
  CompiledSeq() = default;
  CompiledSeq(const Expr& seq, const SymbolLayout& layout);
  size_t size() const { return entries_.size(); }
  const Expr& expr() const { return expr_; }
  // Writes size() entries into out.
  void eval(const int64_t* env, IndexRange* out) const;

 private:
  struct Entry {
    CompiledExpr start, stop, step;
    bool point;
    bool check_step;  // the step is not a constant: checked to be positive at evaluation
  };
  Expr expr_;
  std::vector<Entry> entries_;
};

}  // namespace tempo::sym
