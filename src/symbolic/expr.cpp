#include "symbolic/expr.h"

#include <algorithm>
#include <ostream>
#include <unordered_set>

#include "util/error.h"

namespace tempo::sym {

const char* op_name(Op op) {
  switch (op) {
#define TEMPO_X(name, str) \
  case Op::name:           \
    return #name;
    TEMPO_EXPR_OPS(TEMPO_X)
#undef TEMPO_X
  }
  return "?";
}

namespace {

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

Type type_of(Op op) {
  switch (op) {
    case Op::Bool:
    case Op::Eq:
    case Op::Ne:
    case Op::Lt:
    case Op::Le:
    case Op::And:
    case Op::Or:
    case Op::Not:
      return Type::Bool;
    case Op::Slice:
      return Type::Slice;
    case Op::Seq:
      return Type::Seq;
    default:
      return Type::Int;
  }
}

const char* type_name(Type t) {
  switch (t) {
    case Type::Int:
      return "integer";
    case Type::Bool:
      return "boolean";
    case Type::Slice:
      return "slice";
    case Type::Seq:
      return "sequence";
  }
  return "?";
}

void require(const Expr& e, Type t, Op op) {
  if (!e.defined()) throw UserError(cat("operand of ", op_name(op), " is an undefined expression"));
  if (e.type() != t)
    throw UserError(cat("operand `", e.str(), "` of ", op_name(op), " must be ", type_name(t),
                        ", not ", type_name(e.type())));
}

// Constant folding wraps around on overflow, as the evaluator (eval.cpp) and simplify do: an
// expression folds to the value it evaluates to.
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t floordiv_i(int64_t a, int64_t b) {
  if (b == -1) return wrap_mul(a, -1);  // INT64_MIN // -1 wraps
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
// The remainder takes the divisor's sign; r + b cannot overflow (their signs differ).
int64_t floormod_i(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Builds an n-ary associative node: flattens same-op operands, folds constants into one operand.
Expr nary(Op op, const std::vector<Expr>& in) {
  Type want = (op == Op::And || op == Op::Or) ? Type::Bool : Type::Int;
  std::vector<Expr> flat;
  for (const Expr& a : in) {
    require(a, want, op);
    if (a.op() == op)
      flat.insert(flat.end(), a.args().begin(), a.args().end());
    else
      flat.push_back(a);
  }
  bool have_const = false;
  int64_t acc = 0;
  std::vector<Expr> rest;
  for (const Expr& a : flat) {
    bool c = want == Type::Bool ? a.is_bool_const() : a.is_const();
    if (!c) {
      rest.push_back(a);
      continue;
    }
    int64_t v = a.value();
    if (!have_const) {
      acc = v;
      have_const = true;
      continue;
    }
    switch (op) {
      case Op::Add: acc = wrap_add(acc, v); break;
      case Op::Mul: acc = wrap_mul(acc, v); break;
      case Op::Min: acc = std::min(acc, v); break;
      case Op::Max: acc = std::max(acc, v); break;
      case Op::And: acc = acc && v; break;
      case Op::Or: acc = acc || v; break;
      default: break;
    }
  }
  if (have_const) {
    // Identity and absorbing elements.
    if (op == Op::Add && acc == 0) have_const = false;
    if (op == Op::Mul && acc == 1) have_const = false;
    if (op == Op::Mul && acc == 0) return Expr(0);
    if (op == Op::And && acc) have_const = false;
    if (op == Op::And && !acc) return Expr::boolean(false);
    if (op == Op::Or && !acc) have_const = false;
    if (op == Op::Or && acc) return Expr::boolean(true);
  }
  if (have_const) {
    Expr c = want == Type::Bool ? Expr::boolean(acc) : Expr(acc);
    // The constant goes first in a product (a coefficient), last elsewhere.
    if (op == Op::Mul)
      rest.insert(rest.begin(), c);
    else
      rest.push_back(c);
  }
  if (rest.empty()) {
    if (op == Op::Add) return Expr(0);
    if (op == Op::Mul) return Expr(1);
    if (op == Op::And) return Expr::boolean(true);
    if (op == Op::Or) return Expr::boolean(false);
  }
  if (rest.size() == 1) return rest[0];
  return Expr::make(op, std::move(rest));
}

Expr compare_op(Op op, const Expr& a, const Expr& b) {
  require(a, Type::Int, op);
  require(b, Type::Int, op);
  if (a.is_const() && b.is_const()) {
    int64_t x = a.value(), y = b.value();
    switch (op) {
      case Op::Eq: return Expr::boolean(x == y);
      case Op::Ne: return Expr::boolean(x != y);
      case Op::Lt: return Expr::boolean(x < y);
      case Op::Le: return Expr::boolean(x <= y);
      default: break;
    }
  }
  return Expr::make(op, {a, b});
}

}  // namespace

// ---- nodes ---------------------------------------------------------------------------------

Expr make_node(Node&& n) {
  size_t h = mix(static_cast<size_t>(n.op), static_cast<size_t>(n.value));
  h = mix(h, n.is_bound);
  if (!n.name.empty()) h = mix(h, std::hash<std::string>{}(n.name));
  for (const Expr& a : n.args) {
    h = mix(h, a.hash());
    if (a.defined()) n.depth = std::max(n.depth, a.node().depth + 1);
  }
  if (n.depth > kMaxExprDepth)
    throw UserError(cat("expression nested more than ", kMaxExprDepth, " levels deep"));
  n.hash = h;
  n.type = type_of(n.op);
  return Expr(std::make_shared<const Node>(std::move(n)));
}

Expr::Expr(int64_t v) {
  Node n;
  n.op = Op::Const;
  n.value = v;
  *this = make_node(std::move(n));
}

Expr Expr::boolean(bool b) {
  Node n;
  n.op = Op::Bool;
  n.value = b;
  return make_node(std::move(n));
}

Expr Expr::var(const std::string& name) {
  Node n;
  n.op = Op::Symbol;
  n.name = name;
  return make_node(std::move(n));
}

Expr Expr::bound(const std::string& name) {
  Node n;
  n.op = Op::Symbol;
  n.name = name;
  n.is_bound = true;
  return make_node(std::move(n));
}

Expr Expr::make(Op op, std::vector<Expr> args) {
  Node n;
  n.op = op;
  n.args = std::move(args);
  return make_node(std::move(n));
}

bool Expr::same(const Expr& o) const {
  if (n_ == o.n_) return true;
  if (!n_ || !o.n_) return false;
  if (n_->hash != o.n_->hash) return false;
  return compare(*this, o) == 0;
}

int Expr::compare(const Expr& a, const Expr& b) {
  if (a.n_ == b.n_) return 0;
  if (!a.n_) return -1;
  if (!b.n_) return 1;
  const Node &x = *a.n_, &y = *b.n_;
  if (x.op != y.op) return x.op < y.op ? -1 : 1;
  if (x.value != y.value) return x.value < y.value ? -1 : 1;
  if (x.is_bound != y.is_bound) return x.is_bound < y.is_bound ? -1 : 1;
  if (int c = x.name.compare(y.name)) return c < 0 ? -1 : 1;
  if (x.args.size() != y.args.size()) return x.args.size() < y.args.size() ? -1 : 1;
  for (size_t i = 0; i < x.args.size(); ++i)
    if (int c = compare(x.args[i], y.args[i])) return c;
  return 0;
}

// ---- dims ----------------------------------------------------------------------------------

Dims parse_dims(const std::string& text) {
  Dims dims;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(pos, comma - pos);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    size_t colon = item.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size())
      throw UserError(cat("bad dimension `", item, "` in `", text,
                          "`: expected var:Bound, e.g. t:T (list: b:B,i:I,t:T)"));
    dims.emplace_back(item.substr(0, colon), item.substr(colon + 1));
    pos = comma + 1;
  }
  return dims;
}

std::string dims_str(const Dims& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + dims[i].var.name() + ":" + dims[i].bound.name();
  return s;
}

// ---- construction --------------------------------------------------------------------------

Expr operator+(const Expr& a, const Expr& b) { return nary(Op::Add, {a, b}); }

Expr operator-(const Expr& a) {
  require(a, Type::Int, Op::Mul);
  if (a.is_const()) return Expr(wrap_mul(a.value(), -1));
  if (a.op() == Op::Mul && a.arg(0).is_const()) {
    std::vector<Expr> args = a.args();
    args[0] = Expr(wrap_mul(args[0].value(), -1));
    return nary(Op::Mul, args);
  }
  return nary(Op::Mul, {Expr(-1), a});
}

Expr operator-(const Expr& a, const Expr& b) { return a + (-b); }
Expr operator*(const Expr& a, const Expr& b) { return nary(Op::Mul, {a, b}); }

Expr floordiv(const Expr& a, const Expr& b) {
  require(a, Type::Int, Op::FloorDiv);
  require(b, Type::Int, Op::FloorDiv);
  if (b.is_const(0)) throw UserError(cat("division by zero in `", a.str(), " // 0`"));
  if (b.is_const(1)) return a;
  if (a.is_const() && b.is_const()) return Expr(floordiv_i(a.value(), b.value()));
  return Expr::make(Op::FloorDiv, {a, b});
}
Expr operator/(const Expr& a, const Expr& b) { return floordiv(a, b); }

Expr operator%(const Expr& a, const Expr& b) {
  require(a, Type::Int, Op::Mod);
  require(b, Type::Int, Op::Mod);
  if (b.is_const(0)) throw UserError(cat("modulo by zero in `", a.str(), " % 0`"));
  if (a.is_const() && b.is_const()) return Expr(floormod_i(a.value(), b.value()));
  return Expr::make(Op::Mod, {a, b});
}

Expr min(const Expr& a, const Expr& b) { return nary(Op::Min, {a, b}); }
Expr max(const Expr& a, const Expr& b) { return nary(Op::Max, {a, b}); }
Expr min(std::vector<Expr> args) {
  if (args.empty()) throw UserError("min() needs at least one operand");
  return nary(Op::Min, args);
}
Expr max(std::vector<Expr> args) {
  if (args.empty()) throw UserError("max() needs at least one operand");
  return nary(Op::Max, args);
}

Expr operator==(const Expr& a, const Expr& b) { return compare_op(Op::Eq, a, b); }
Expr operator!=(const Expr& a, const Expr& b) { return compare_op(Op::Ne, a, b); }
Expr operator<(const Expr& a, const Expr& b) { return compare_op(Op::Lt, a, b); }
Expr operator<=(const Expr& a, const Expr& b) { return compare_op(Op::Le, a, b); }
Expr operator>(const Expr& a, const Expr& b) { return compare_op(Op::Lt, b, a); }
Expr operator>=(const Expr& a, const Expr& b) { return compare_op(Op::Le, b, a); }
Expr operator&&(const Expr& a, const Expr& b) { return nary(Op::And, {a, b}); }
Expr operator||(const Expr& a, const Expr& b) { return nary(Op::Or, {a, b}); }

Expr operator!(const Expr& a) {
  require(a, Type::Bool, Op::Not);
  if (a.is_bool_const()) return Expr::boolean(!a.value());
  if (a.op() == Op::Not) return a.arg(0);
  return Expr::make(Op::Not, {a});
}

Expr slice(const Expr& start, const Expr& stop, const Expr& step) {
  require(start, Type::Int, Op::Slice);
  require(stop, Type::Int, Op::Slice);
  require(step, Type::Int, Op::Slice);
  if (step.is_const() && step.value() <= 0)
    throw UserError(cat("slice step must be positive, got ", step.value()));
  return Expr::make(Op::Slice, {start, stop, step});
}

Expr seq(std::vector<Expr> entries) {
  for (const Expr& e : entries) {
    if (!e.defined()) throw UserError("sequence entry is an undefined expression");
    if (e.type() != Type::Int && e.type() != Type::Slice)
      throw UserError(cat("sequence entry `", e.str(), "` must be an integer or a slice"));
  }
  return Expr::make(Op::Seq, std::move(entries));
}

// ---- queries -------------------------------------------------------------------------------

void visit(const Expr& e, const std::function<void(const Expr&)>& f) {
  f(e);
  for (const Expr& a : e.args()) visit(a, f);
}

bool has_slice(const Expr& seq) {
  if (!seq.defined()) return false;
  const std::vector<Expr>& entries = seq.args();
  return std::any_of(entries.begin(), entries.end(), [](const Expr& e) { return e.is_slice(); });
}

std::vector<Expr> free_symbols(const Expr& e) {
  std::vector<Expr> out;
  visit(e, [&](const Expr& x) {
    if (x.is_symbol() && std::none_of(out.begin(), out.end(), [&](const Expr& y) { return y.same(x); }))
      out.push_back(x);
  });
  return out;
}

bool depends_on(const Expr& e, const Expr& symbol) {
  bool found = false;
  visit(e, [&](const Expr& x) { found = found || x.same(symbol); });
  return found;
}

Expr rebuild(const Expr& e, std::vector<Expr> a) {
  switch (e.op()) {
    case Op::Const:
    case Op::Bool:
    case Op::Symbol:
      return e;
    case Op::Add:
    case Op::Mul:
    case Op::Min:
    case Op::Max:
    case Op::And:
    case Op::Or:
      return nary(e.op(), a);
    case Op::FloorDiv: return floordiv(a[0], a[1]);
    case Op::Mod: return a[0] % a[1];
    case Op::Eq: return a[0] == a[1];
    case Op::Ne: return a[0] != a[1];
    case Op::Lt: return a[0] < a[1];
    case Op::Le: return a[0] <= a[1];
    case Op::Not: return !a[0];
    case Op::Slice: return slice(a[0], a[1], a[2]);
    case Op::Seq: return seq(std::move(a));
  }
  internal_error("unknown op");
}

Expr substitute(const Expr& e, const std::vector<std::pair<Expr, Expr>>& repl) {
  for (const auto& [from, to] : repl)
    if (e.same(from)) return to;
  if (e.args().empty()) return e;
  std::vector<Expr> args;
  args.reserve(e.size());
  bool changed = false;
  for (const Expr& a : e.args()) {
    args.push_back(substitute(a, repl));
    changed = changed || args.back().node().hash != a.hash() || !args.back().same(a);
  }
  return changed ? rebuild(e, std::move(args)) : e;
}

// ---- printing ------------------------------------------------------------------------------
namespace {

// Binding strength, loosest first; an operand looser than its context is parenthesized.
enum Prec { kSlice = 0, kOr, kAnd, kCmp, kAdd, kMul, kUnary, kAtom };

Prec prec_of(const Expr& e) {
  switch (e.op()) {
    case Op::Slice: return kSlice;
    case Op::Or: return kOr;
    case Op::And: return kAnd;
    case Op::Eq:
    case Op::Ne:
    case Op::Lt:
    case Op::Le:
      return kCmp;
    case Op::Add: return kAdd;
    case Op::Mul:
      return e.arg(0).is_const(-1) ? kUnary : kMul;
    case Op::FloorDiv:
    case Op::Mod:
      return kMul;
    case Op::Not: return kUnary;
    case Op::Const: return e.value() < 0 ? kUnary : kAtom;
    default: return kAtom;
  }
}

void print(std::string& s, const Expr& e, int ctx);

void print_operand(std::string& s, const Expr& e, int ctx) {
  bool paren = prec_of(e) < ctx;
  if (paren) s += '(';
  print(s, e, paren ? kSlice : ctx);
  if (paren) s += ')';
}

bool is_negative_term(const Expr& e) {
  return (e.is_const() && e.value() < 0) || (e.op() == Op::Mul && e.arg(0).is_const() && e.arg(0).value() < 0);
}

void print(std::string& s, const Expr& e, int ctx) {
  const Node& n = e.node();
  switch (n.op) {
    case Op::Const: s += std::to_string(n.value); return;
    case Op::Bool: s += n.value ? "true" : "false"; return;
    case Op::Symbol: s += n.name; return;
    case Op::Add:
      for (size_t i = 0; i < n.args.size(); ++i) {
        const Expr& a = n.args[i];
        if (i > 0 && is_negative_term(a)) {
          s += " - ";
          print_operand(s, -a, kMul);
        } else {
          if (i > 0) s += " + ";
          // The first operand of a sum may be negative; it then prints with its unary minus.
          print_operand(s, a, i == 0 ? kAdd : kMul);
        }
      }
      return;
    case Op::Mul: {
      size_t first = 0;
      if (n.args[0].is_const(-1)) {
        s += '-';
        first = 1;
      }
      for (size_t i = first; i < n.args.size(); ++i) {
        if (i > first) s += '*';
        // Operands of * bind tighter than * itself so that n-ary products stay flat.
        print_operand(s, n.args[i], (i == first && first == 0) ? kUnary : kUnary + 1);
      }
      return;
    }
    case Op::FloorDiv:
    case Op::Mod:
      print_operand(s, n.args[0], kMul);
      s += n.op == Op::Mod ? " % " : " // ";
      print_operand(s, n.args[1], kUnary);
      return;
    case Op::Min:
    case Op::Max:
      s += n.op == Op::Min ? "min(" : "max(";
      for (size_t i = 0; i < n.args.size(); ++i) {
        if (i) s += ", ";
        print(s, n.args[i], kOr);
      }
      s += ')';
      return;
    case Op::Eq:
    case Op::Ne:
    case Op::Lt:
    case Op::Le: {
      static const char* sym[] = {" == ", " != ", " < ", " <= "};
      print_operand(s, n.args[0], kAdd);
      s += sym[static_cast<int>(n.op) - static_cast<int>(Op::Eq)];
      print_operand(s, n.args[1], kAdd);
      return;
    }
    case Op::And:
    case Op::Or:
      for (size_t i = 0; i < n.args.size(); ++i) {
        if (i) s += n.op == Op::And ? " && " : " || ";
        print_operand(s, n.args[i], n.op == Op::And ? kCmp : kAnd);
      }
      return;
    case Op::Not:
      s += '!';
      print_operand(s, n.args[0], kAtom);
      return;
    case Op::Slice:
      print_operand(s, n.args[0], kOr);
      s += ':';
      print_operand(s, n.args[1], kOr);
      if (!n.args[2].is_const(1)) {
        s += ':';
        print_operand(s, n.args[2], kOr);
      }
      return;
    case Op::Seq:
      s += '[';
      for (size_t i = 0; i < n.args.size(); ++i) {
        if (i) s += ", ";
        print(s, n.args[i], kSlice);
      }
      s += ']';
      return;
  }
}

}  // namespace

std::string Expr::str() const {
  if (!n_) return "<undefined>";
  std::string s;
  print(s, *this, kSlice);
  return s;
}

std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << e.str(); }

}  // namespace tempo::sym
