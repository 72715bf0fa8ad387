// Symbolic expressions: the language of temporal dependencies (TEMPO §3).
//
// An Expr is an immutable, hashed, cheaply copied handle to a node. Integer and boolean
// expressions, slices (start:stop:step) and sequences ([e0, e1, ...], one entry per temporal
// dimension) share one node type so that a dependence expression is just an Expr.
//
// Construction through the operators below performs only *local* canonicalization (constant
// folding of constant operands, flattening of n-ary +, *, min, max, &&, ||, folding of unary minus
// into constants and coefficients). Range-aware simplification is `simplify` (simplify.h).
// Because the printer and parser use the same constructors, parse(print(e)) is structurally e.
//
// Comparison operators build expressions (`(i + 1) % 5 == 0` is an Expr); structural equality is
// `a.same(b)`.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace tempo::sym {

// Every node kind, listed once. X(name, printed-operator-or-function-name)
#define TEMPO_EXPR_OPS(X) \
  X(Const, "")            \
  X(Bool, "")             \
  X(Symbol, "")           \
  X(Add, "+")             \
  X(Mul, "*")             \
  X(FloorDiv, "//")       \
  X(Mod, "%")             \
  X(Min, "min")           \
  X(Max, "max")           \
  X(Eq, "==")             \
  X(Ne, "!=")             \
  X(Lt, "<")              \
  X(Le, "<=")             \
  X(And, "&&")            \
  X(Or, "||")             \
  X(Not, "!")             \
  X(Slice, ":")           \
  X(Seq, ",")

enum class Op : uint8_t {
#define TEMPO_X(name, str) name,
  TEMPO_EXPR_OPS(TEMPO_X)
#undef TEMPO_X
};

const char* op_name(Op op);

class Expr;

// What kind of value an expression denotes.
enum class Type : uint8_t { Int, Bool, Slice, Seq };

struct Node {
  Op op;
  bool is_bound = false;     // Symbol: true for an upper bound (T), false for a variable (t)
  int64_t value = 0;         // Const / Bool value
  std::string name;          // Symbol name
  std::vector<Expr> args;    // operands (Slice: start, stop, step; Seq: entries)
  size_t hash = 0;
  Type type = Type::Int;
  uint32_t depth = 1;  // levels of the tree below and including this node
};

// The deepest expression tree any constructor builds: the rewriters walk trees recursively, so
// a chain that does not flatten (`t // 2 // 2 // ...`) is refused before it can exhaust the stack.
inline constexpr uint32_t kMaxExprDepth = 1000;

class Expr {
 public:
  Expr() = default;  // a null expression; most operations reject it
  Expr(int64_t v);   // NOLINT: implicit so that `t + 1` reads like the paper
  Expr(int v) : Expr(static_cast<int64_t>(v)) {}  // NOLINT

  static Expr boolean(bool b);
  static Expr var(const std::string& name);    // a temporal variable such as t
  static Expr bound(const std::string& name);  // an upper bound such as T
  // Builds a node exactly as given (no canonicalization); used by rewriters.
  static Expr make(Op op, std::vector<Expr> args);

  bool defined() const { return n_ != nullptr; }
  const Node& node() const { return *n_; }
  Op op() const { return n_->op; }
  Type type() const { return n_->type; }
  const std::vector<Expr>& args() const { return n_->args; }
  const Expr& arg(size_t i) const { return n_->args[i]; }
  size_t size() const { return n_->args.size(); }
  size_t hash() const { return n_ ? n_->hash : 0; }

  bool is_const() const { return n_ && n_->op == Op::Const; }
  bool is_const(int64_t v) const { return is_const() && n_->value == v; }
  bool is_bool_const() const { return n_ && n_->op == Op::Bool; }
  bool is_symbol() const { return n_ && n_->op == Op::Symbol; }
  bool is_var() const { return is_symbol() && !n_->is_bound; }
  bool is_bound_symbol() const { return is_symbol() && n_->is_bound; }
  bool is_slice() const { return n_ && n_->op == Op::Slice; }
  bool is_seq() const { return n_ && n_->op == Op::Seq; }
  int64_t value() const { return n_->value; }
  const std::string& name() const { return n_->name; }

  // Structural equality (pointer equality is a fast path).
  bool same(const Expr& o) const;
  // Total order consistent with `same`, used to sort operands canonically.
  static int compare(const Expr& a, const Expr& b);

  std::string str() const;  // the parseable printed form

 private:
  explicit Expr(std::shared_ptr<const Node> n) : n_(std::move(n)) {}
  std::shared_ptr<const Node> n_;
  friend Expr make_node(Node&&);
};

// Hash and equality functors for unordered containers keyed by expressions.
struct ExprHash {
  size_t operator()(const Expr& e) const { return e.hash(); }
};
struct ExprEq {
  bool operator()(const Expr& a, const Expr& b) const { return a.same(b); }
};

// A temporal dimension: a variable and its exclusive upper bound, 0 <= var < bound, bound >= 1.
struct Dim {
  Expr var;
  Expr bound;
  Dim() = default;
  Dim(const std::string& var_name, const std::string& bound_name)
      : var(Expr::var(var_name)), bound(Expr::bound(bound_name)) {}
  const std::string& name() const { return var.name(); }
  bool operator==(const Dim& o) const { return var.same(o.var); }
};
using Dims = std::vector<Dim>;

// Parses "b:B,i:I,t:T" into dimensions.
Dims parse_dims(const std::string& text);
std::string dims_str(const Dims& dims);

// ---- construction -------------------------------------------------------------------------
Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator-(const Expr& a);
Expr operator*(const Expr& a, const Expr& b);
Expr floordiv(const Expr& a, const Expr& b);  // rounds toward -infinity
Expr operator/(const Expr& a, const Expr& b);  // same as floordiv
Expr operator%(const Expr& a, const Expr& b);  // floor modulo: sign of the divisor
Expr min(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);
Expr min(std::vector<Expr> args);
Expr max(std::vector<Expr> args);
Expr operator==(const Expr& a, const Expr& b);
Expr operator!=(const Expr& a, const Expr& b);
Expr operator<(const Expr& a, const Expr& b);
Expr operator<=(const Expr& a, const Expr& b);
Expr operator>(const Expr& a, const Expr& b);   // built as b < a
Expr operator>=(const Expr& a, const Expr& b);  // built as b <= a
Expr operator&&(const Expr& a, const Expr& b);
Expr operator||(const Expr& a, const Expr& b);
Expr operator!(const Expr& a);
Expr slice(const Expr& start, const Expr& stop, const Expr& step = Expr(1));
Expr seq(std::vector<Expr> entries);

inline Expr& operator+=(Expr& a, const Expr& b) { return a = a + b; }
inline Expr& operator-=(Expr& a, const Expr& b) { return a = a - b; }
inline Expr& operator*=(Expr& a, const Expr& b) { return a = a * b; }

// ---- queries -------------------------------------------------------------------------------
// Calls f on every node, parents before children.
void visit(const Expr& e, const std::function<void(const Expr&)>& f);
// Symbols (variables and bounds) that occur in e, each once, in order of first occurrence.
std::vector<Expr> free_symbols(const Expr& e);
// Whether a sequence (a dependence's phi) has a slice entry: it reads a range, not a point.
bool has_slice(const Expr& seq);
bool depends_on(const Expr& e, const Expr& symbol);
// Replaces symbols (or any subexpression) by other expressions, rebuilding with the operators.
Expr substitute(const Expr& e, const std::vector<std::pair<Expr, Expr>>& replacements);
// Rebuilds e from its node kind and new operands through the canonicalizing constructors.
Expr rebuild(const Expr& e, std::vector<Expr> args);

std::ostream& operator<<(std::ostream& os, const Expr& e);

}  // namespace tempo::sym

namespace tempo {
using sym::Dim;
using sym::Dims;
using sym::Expr;
// So that user code reads like the paper: slice(t, T), max(0, t - 3), seq({b, i, t}).
using sym::max;
using sym::min;
using sym::seq;
using sym::slice;
}  // namespace tempo
