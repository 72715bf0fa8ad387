// Compiled evaluation of expressions and index sequences: no allocation, no tree walk on the hot
// path. Symbols are read from an array of int64 values laid out by a SymbolLayout.
#pragma once

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
class CompiledExpr {
 public:
  CompiledExpr() = default;
  CompiledExpr(const Expr& e, const SymbolLayout& layout);
  int64_t eval(const int64_t* env) const;
  const Expr& expr() const { return expr_; }
  bool is_constant() const;

  struct Instr {
    uint8_t op;
    int32_t a, b;  // operand registers / slot / count, depending on op
    int64_t imm;
  };

 private:
  Expr expr_;
  std::vector<Instr> code_;
  int num_regs_ = 0;
};

// A sequence (or a single expression or slice, treated as a one-entry sequence) compiled once.
class CompiledSeq {
 public:
  CompiledSeq() = default;
  CompiledSeq(const Expr& seq, const SymbolLayout& layout);
  size_t size() const { return entries_.size(); }
  // Writes size() entries into out.
  void eval(const int64_t* env, IndexRange* out) const;

 private:
  struct Entry {
    CompiledExpr start, stop, step;
    bool point;
  };
  std::vector<Entry> entries_;
};

}  // namespace tempo::sym
