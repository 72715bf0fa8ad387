#include "symbolic/isl_bridge.h"

#include <isl/ast.h>
#include <isl/ast_build.h>
#include <isl/constraint.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <memory>
#include <optional>

#include "util/error.h"

namespace tempo::sym {

IslContext::IslContext() : ctx_(isl_ctx_alloc()) {
  if (!ctx_) throw InternalError("isl: cannot allocate a context");
  isl_options_set_on_error(ctx_, ISL_ON_ERROR_CONTINUE);
}

IslContext::~IslContext() { isl_ctx_free(ctx_); }

namespace {

// ---- isl plumbing ----------------------------------------------------------------------------

// A null result of an isl C call becomes an InternalError carrying isl's own message.
template <typename T>
T* check(T* p, isl_ctx* c) {
  if (p) return p;
  const char* msg = isl_ctx_last_error_msg(c);
  std::string text = msg ? msg : "unknown isl error";
  isl_ctx_reset_error(c);
  throw InternalError("isl: " + text);
}

// Runs f, turning isl exceptions into InternalErrors that say what was being done.
template <typename F>
auto guarded(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const isl::exception& e) {
    throw InternalError(cat("isl failed while ", what, ": ", e.what()));
  }
}

isl::val int_val(isl_ctx* c, int64_t v) { return isl::manage(check(isl_val_int_from_si(c, v), c)); }

// The int64 value of an integer isl_val; overflow is a UserError.
int64_t to_int64(const isl::val& v) {
  if (!isl_val_is_int(v.get())) internal_error(cat("isl value ", cat(v), " is not an integer"));
  long n = isl_val_get_num_si(v.get());
  isl_val* back = isl_val_int_from_si(isl_val_get_ctx(v.get()), n);
  bool same = isl_val_eq(back, v.get()) == isl_bool_true;
  isl_val_free(back);
  if (!same) throw UserError(cat("integer ", cat(v), " does not fit in 64 bits"));
  return n;
}

std::string isl_str(const isl::pw_aff& x) { return cat(x); }

// ---- symbols and spaces ----------------------------------------------------------------------

// Where each symbol of an expression lives in an isl space: variables are set dimensions (or
// parameters, in "parameter mode"), bounds are parameters.
struct SymTab {
  std::vector<Expr> params;                      // isl parameter order
  std::vector<std::pair<Expr, int>> vars;        // variable -> set dimension
  std::optional<int> var_pos(const Expr& s) const {
    for (const auto& [v, pos] : vars)
      if (v.same(s)) return pos;
    return std::nullopt;
  }
  std::optional<int> param_pos(const Expr& s) const {
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].same(s)) return static_cast<int>(i);
    return std::nullopt;
  }
  void add_param(const Expr& s) {
    if (!param_pos(s)) params.push_back(s);
  }
};

isl_id* make_id(isl_ctx* c, const std::string& name) { return check(isl_id_alloc(c, name.c_str(), nullptr), c); }

isl_space* set_param_ids(isl_space* sp, isl_ctx* c, const std::vector<Expr>& params) {
  for (size_t i = 0; i < params.size(); ++i)
    sp = check(isl_space_set_dim_id(sp, isl_dim_param, i, make_id(c, params[i].name())), c);
  return sp;
}

// A set space with the given parameters and one named dimension per variable.
isl::space make_set_space(isl_ctx* c, const std::vector<Expr>& params, const Dims& dims,
                          const std::string& tuple = "") {
  isl_space* sp = check(isl_space_set_alloc(c, params.size(), dims.size()), c);
  sp = set_param_ids(sp, c, params);
  for (size_t i = 0; i < dims.size(); ++i)
    sp = check(isl_space_set_dim_id(sp, isl_dim_set, i, make_id(c, dims[i].name())), c);
  if (!tuple.empty()) sp = check(isl_space_set_tuple_id(sp, isl_dim_set, make_id(c, tuple)), c);
  return isl::manage(sp);
}

// The wrapped space [in[...] -> out[...]] of a relation between two domains.
isl::space make_wrapped_space(isl_ctx* c, const std::vector<Expr>& params, const std::string& in_name,
                              const Dims& in, const std::string& out_name, const Dims& out) {
  isl_space* sp = check(isl_space_alloc(c, params.size(), in.size(), out.size()), c);
  sp = set_param_ids(sp, c, params);
  for (size_t i = 0; i < in.size(); ++i)
    sp = check(isl_space_set_dim_id(sp, isl_dim_in, i, make_id(c, in[i].name())), c);
  for (size_t i = 0; i < out.size(); ++i)
    sp = check(isl_space_set_dim_id(sp, isl_dim_out, i, make_id(c, out[i].name())), c);
  if (!in_name.empty()) sp = check(isl_space_set_tuple_id(sp, isl_dim_in, make_id(c, in_name)), c);
  if (!out_name.empty()) sp = check(isl_space_set_tuple_id(sp, isl_dim_out, make_id(c, out_name)), c);
  return isl::manage(check(isl_space_wrap(sp), c));
}

// Bounds of the dims, each once, in order.
void add_bounds(SymTab& syms, const Dims& dims) {
  for (const Dim& d : dims) syms.add_param(d.bound);
}

// ---- Expr -> isl -----------------------------------------------------------------------------

const char* kind_name(Type t) {
  switch (t) {
    case Type::Int: return "an integer";
    case Type::Bool: return "a condition";
    case Type::Slice: return "a slice";
    case Type::Seq: return "a sequence";
  }
  return "?";
}

// Builds isl objects over one set space from expressions whose symbols are resolved by a SymTab.
class ToIsl {
 public:
  ToIsl(isl::space space, SymTab syms, Expr whole)
      : space_(std::move(space)), syms_(std::move(syms)), whole_(std::move(whole)) {
    c_ = isl_space_get_ctx(space_.get());
  }

  void set_whole(const Expr& e) { whole_ = e; }

  isl::pw_aff constant(int64_t v) const {
    isl_local_space* ls = check(isl_local_space_from_space(space_.copy()), c_);
    isl_aff* a = check(isl_aff_val_on_domain(ls, isl_val_int_from_si(c_, v)), c_);
    return isl::manage(check(isl_pw_aff_from_aff(a), c_));
  }
  isl::pw_aff dim(int pos) const { return var_on_domain(isl_dim_set, pos); }
  isl::pw_aff param(int pos) const { return var_on_domain(isl_dim_param, pos); }
  isl::set universe() const { return isl::manage(check(isl_set_universe(space_.copy()), c_)); }
  isl::set empty() const { return isl::manage(check(isl_set_empty(space_.copy()), c_)); }

  // 0 <= var < bound for the variable at set dimension `pos` (or a parameter variable), and
  // bound >= 1.
  isl::set range(const isl::pw_aff& var, const Expr& bound) const {
    isl::pw_aff b = symbol(bound);
    return var.ge_set(constant(0)).intersect(var.lt_set(b)).intersect(b.ge_set(constant(1)));
  }
  // Every bound parameter >= 1.
  isl::set bounds_positive() const {
    isl::set s = universe();
    for (size_t i = 0; i < syms_.params.size(); ++i)
      if (syms_.params[i].is_bound_symbol()) s = s.intersect(param(i).ge_set(constant(1)));
    return s;
  }

  // The ranges of the set dimensions offset.. (dims[k].var at offset + k) and every bound >= 1:
  // bounds_positive() and range() for each, built as one basic set of inequalities instead of a
  // set operation per comparison (the scheduler builds these for every statement and edge).
  isl::set ranges(const Dims& dims, int offset) const {
    isl_local_space* ls = check(isl_local_space_from_space(space_.copy()), c_);
    isl_basic_set* bs = check(isl_basic_set_universe(space_.copy()), c_);
    // [c * variable] + [param] + constant >= 0
    auto add = [&](std::optional<std::pair<int, int>> var, int param, int constant) {
      isl_constraint* k = isl_constraint_alloc_inequality(isl_local_space_copy(ls));
      if (var) k = isl_constraint_set_coefficient_si(k, isl_dim_set, var->first, var->second);
      if (param >= 0) k = isl_constraint_set_coefficient_si(k, isl_dim_param, param, 1);
      k = isl_constraint_set_constant_si(k, constant);
      bs = isl_basic_set_add_constraint(bs, k);
    };
    for (size_t i = 0; i < syms_.params.size(); ++i)
      if (syms_.params[i].is_bound_symbol()) add(std::nullopt, static_cast<int>(i), -1);
    std::vector<size_t> variable_bounds;
    for (size_t i = 0; i < dims.size(); ++i) {
      const int pos = offset + static_cast<int>(i);
      std::optional<int> b = syms_.param_pos(dims[i].bound);
      if (!b || syms_.var_pos(dims[i].bound)) {
        variable_bounds.push_back(i);
        continue;
      }
      add(std::pair{pos, 1}, -1, 0);    // var >= 0
      add(std::pair{pos, -1}, *b, -1);  // bound - var - 1 >= 0
      add(std::nullopt, *b, -1);        // bound >= 1
    }
    isl_local_space_free(ls);
    isl::set s = isl::manage(check(isl_set_from_basic_set(check(bs, c_)), c_));
    for (size_t i : variable_bounds)  // a bound that is a variable of this space
      s = s.intersect(range(dim(offset + static_cast<int>(i)), dims[i].bound));
    return s;
  }

  isl::pw_aff symbol(const Expr& s) const {
    if (auto p = syms_.var_pos(s)) return dim(*p);
    if (auto p = syms_.param_pos(s)) return param(*p);
    throw UserError(cat("unbound symbol `", s.name(), "` in `", whole_.str(), "`"));
  }

  isl::pw_aff integer(const Expr& e) const {
    if (!e.defined()) throw UserError("undefined expression where an integer is expected");
    if (e.type() != Type::Int)
      throw UserError(cat("`", e.str(), "` is ", kind_name(e.type()), " where an integer is expected (in `",
                          whole_.str(), "`)"));
    switch (e.op()) {
      case Op::Const: return constant(e.value());
      case Op::Symbol: return symbol(e);
      case Op::Add: {
        isl::pw_aff acc = integer(e.arg(0));
        for (size_t i = 1; i < e.size(); ++i) acc = acc.add(integer(e.arg(i)));
        return acc;
      }
      case Op::Mul: {
        isl::pw_aff acc = integer(e.arg(0));
        for (size_t i = 1; i < e.size(); ++i) {
          isl::pw_aff f = integer(e.arg(i));
          if (!is_cst(acc) && !is_cst(f))
            throw UserError(cat("`", e.str(), "` is not affine (in `", whole_.str(),
                                "`): a product needs all but one factor constant"));
          acc = acc.mul(f);
        }
        return acc;
      }
      case Op::FloorDiv: {
        int64_t d = constant_divisor(e);
        return integer(e.arg(0)).div(constant(d)).floor();
      }
      case Op::Mod: {
        int64_t d = constant_divisor(e);
        isl::pw_aff a = integer(e.arg(0));
        // Floor modulo (the sign of the divisor): a - d*floor(a/d).
        return a.sub(a.div(constant(d)).floor().mul(constant(d)));
      }
      case Op::Min:
      case Op::Max: {
        isl::pw_aff acc = integer(e.arg(0));
        for (size_t i = 1; i < e.size(); ++i)
          acc = e.op() == Op::Min ? acc.min(integer(e.arg(i))) : acc.max(integer(e.arg(i)));
        return acc;
      }
      default: break;
    }
    internal_error(cat("unexpected integer node ", op_name(e.op()), " in `", e.str(), "`"));
  }

  isl::set condition(const Expr& e) const {
    if (!e.defined()) return universe();
    if (e.type() != Type::Bool)
      throw UserError(cat("`", e.str(), "` is ", kind_name(e.type()), " where a condition is expected (in `",
                          whole_.str(), "`)"));
    switch (e.op()) {
      case Op::Bool: return e.value() ? universe() : empty();
      case Op::Eq: return integer(e.arg(0)).eq_set(integer(e.arg(1)));
      case Op::Ne: return integer(e.arg(0)).ne_set(integer(e.arg(1)));
      case Op::Lt: return integer(e.arg(0)).lt_set(integer(e.arg(1)));
      case Op::Le: return integer(e.arg(0)).le_set(integer(e.arg(1)));
      case Op::And: {
        isl::set s = condition(e.arg(0));
        for (size_t i = 1; i < e.size(); ++i) s = s.intersect(condition(e.arg(i)));
        return s;
      }
      case Op::Or: {
        isl::set s = condition(e.arg(0));
        for (size_t i = 1; i < e.size(); ++i) s = s.unite(condition(e.arg(i)));
        return s;
      }
      case Op::Not: return universe().subtract(condition(e.arg(0)));
      default: break;
    }
    internal_error(cat("unexpected boolean node ", op_name(e.op()), " in `", e.str(), "`"));
  }

  // The points q (a pw_aff of this space, usually a dimension) that an index entry (a point or
  // a slice) denotes: q == e, or start <= q < stop with q - start a multiple of step.
  isl::set member(const isl::pw_aff& q, const Expr& entry) const {
    if (!entry.defined()) throw UserError("undefined index entry");
    if (entry.type() == Type::Int) return q.eq_set(integer(entry));
    if (entry.type() != Type::Slice)
      throw UserError(cat("index entry `", entry.str(), "` is ", kind_name(entry.type()),
                          ", not an integer or a slice (in `", whole_.str(), "`)"));
    const Expr& step = entry.arg(2);
    if (!step.is_const())
      throw UserError(cat("slice step `", step.str(), "` is not a constant (in `", whole_.str(),
                          "`): strides must be known integers"));
    isl::pw_aff start = integer(entry.arg(0));
    isl::set s = q.ge_set(start).intersect(q.lt_set(integer(entry.arg(1))));
    if (step.value() != 1) {
      isl::pw_aff off = q.sub(start);
      isl::pw_aff k = constant(step.value());
      s = s.intersect(off.sub(off.div(k).floor().mul(k)).eq_set(constant(0)));
    }
    return s;
  }

 private:
  isl::pw_aff var_on_domain(isl_dim_type type, int pos) const {
    isl_local_space* ls = check(isl_local_space_from_space(space_.copy()), c_);
    isl_aff* a = check(isl_aff_var_on_domain(ls, type, pos), c_);
    return isl::manage(check(isl_pw_aff_from_aff(a), c_));
  }
  static bool is_cst(const isl::pw_aff& p) { return isl_pw_aff_is_cst(p.get()) == isl_bool_true; }
  int64_t constant_divisor(const Expr& e) const {
    const Expr& d = e.arg(1);
    if (!d.is_const())
      throw UserError(cat("`", e.str(), "` is not affine (in `", whole_.str(), "`): the divisor `", d.str(),
                          "` must be a constant integer"));
    if (d.value() == 0) throw UserError(cat("division by zero in `", e.str(), "`"));
    return d.value();
  }

  isl::space space_;
  SymTab syms_;
  Expr whole_;
  isl_ctx* c_;
};

std::vector<Expr> entries_of(const Expr& phi) {
  if (phi.is_seq()) return phi.args();
  return {phi};
}

// Translator over the dims of one domain (variables as set dimensions).
ToIsl over_dims(isl_ctx* c, const Dims& dims, const Expr& whole, const std::string& tuple = "") {
  SymTab syms;
  add_bounds(syms, dims);
  for (size_t i = 0; i < dims.size(); ++i) syms.vars.emplace_back(dims[i].var, static_cast<int>(i));
  isl::space sp = make_set_space(c, syms.params, dims, tuple);
  return ToIsl(sp, syms, whole);
}

// ---- isl -> Expr -----------------------------------------------------------------------------

// A sum of integer multiples of atoms plus a constant.
struct Linear {
  std::vector<std::pair<Expr, int64_t>> terms;
  int64_t constant = 0;

  int64_t coef(const Expr& atom) const {
    for (const auto& [a, k] : terms)
      if (a.same(atom)) return k;
    return 0;
  }
  void add(const Expr& atom, int64_t k) {
    for (auto it = terms.begin(); it != terms.end(); ++it) {
      if (it->first.same(atom)) {
        it->second += k;
        if (it->second == 0) terms.erase(it);
        return;
      }
    }
    if (k != 0) terms.emplace_back(atom, k);
  }
  // Positive terms first (in order), then negative ones, the constant last: T - t - 1.
  Expr to_expr() const {
    std::vector<Expr> parts;
    for (int pass = 0; pass < 2; ++pass)
      for (const auto& [a, k] : terms) {
        if ((k > 0) != (pass == 0)) continue;
        parts.push_back(k == 1 ? a : k == -1 ? -a : Expr(k) * a);
      }
    if (parts.empty()) return Expr(constant);
    Expr sum = parts[0];
    for (size_t i = 1; i < parts.size(); ++i) sum = sum + parts[i];
    return constant == 0 ? sum : sum + Expr(constant);
  }
};

// Symbols of an isl object's dimensions: set dims by position, parameters by name.
struct BackNames {
  std::vector<Expr> in;      // domain dimension k
  std::vector<Expr> params;  // parameter k
};

Expr param_symbol(const std::string& name, const Dims& dims) {
  for (const Dim& d : dims) {
    if (d.bound.name() == name) return d.bound;
    if (d.var.name() == name) return d.var;
  }
  return Expr::bound(name);
}

// Converts an integral isl_aff (possibly with integer divisions) into a Linear.
Linear aff_to_linear(isl_aff* aff, const BackNames& names);

Expr div_expr(isl_aff* aff, int i, const BackNames& names, Linear* inner, int64_t* den) {
  isl_ctx* c = isl_aff_get_ctx(aff);
  isl_aff* d = check(isl_aff_get_div(aff, i), c);
  isl::val dv = isl::manage(check(isl_aff_get_denominator_val(d), c));
  *den = to_int64(dv);
  d = check(isl_aff_scale_val(d, dv.copy()), c);
  *inner = aff_to_linear(d, names);
  isl_aff_free(d);
  return floordiv(inner->to_expr(), Expr(*den));
}

Linear aff_to_linear(isl_aff* aff, const BackNames& names) {
  isl_ctx* c = isl_aff_get_ctx(aff);
  isl::val den = isl::manage(check(isl_aff_get_denominator_val(aff), c));
  if (!isl_val_is_one(den.get()))
    throw UserError(cat("isl expression `", cat(isl::manage(isl_aff_copy(aff))),
                        "` is not integral (it divides by ", cat(den), ")"));
  auto coef = [&](isl_dim_type t, int k) {
    return to_int64(isl::manage(check(isl_aff_get_coefficient_val(aff, t, k), c)));
  };
  Linear lin;
  int n_in = isl_aff_dim(aff, isl_dim_in);
  for (int k = 0; k < n_in; ++k) {
    int64_t v = coef(isl_dim_in, k);
    if (v == 0) continue;
    if (k >= static_cast<int>(names.in.size())) internal_error("isl expression has more dimensions than dims");
    lin.add(names.in[k], v);
  }
  int n_par = isl_aff_dim(aff, isl_dim_param);
  for (int k = 0; k < n_par; ++k) {
    int64_t v = coef(isl_dim_param, k);
    if (v == 0) continue;
    lin.add(names.params[k], v);
  }
  lin.constant = to_int64(isl::manage(check(isl_aff_get_constant_val(aff), c)));
  int n_div = isl_aff_dim(aff, isl_dim_div);
  for (int i = 0; i < n_div; ++i) {
    int64_t v = coef(isl_dim_div, i);
    if (v == 0) continue;
    Linear g;
    int64_t d = 0;
    Expr fl = div_expr(aff, i, names, &g, &d);
    // v*floor(g/d) next to m*g with v == -m*d is m*(g % d).
    bool as_mod = false;
    if (v % d == 0 && !g.terms.empty()) {
      int64_t m = -v / d;
      as_mod = std::all_of(g.terms.begin(), g.terms.end(),
                           [&](const auto& t) { return lin.coef(t.first) == m * t.second; });
      if (as_mod) {
        for (const auto& [a, k] : g.terms) lin.add(a, -m * k);
        lin.constant -= m * g.constant;
        lin.add(g.to_expr() % Expr(d), m);
      }
    }
    if (!as_mod) lin.add(fl, v);
  }
  return lin;
}

BackNames back_names_for(isl_space* space, const Dims& dims) {
  BackNames names;
  int n_in = isl_space_dim(space, isl_space_is_set(space) ? isl_dim_set : isl_dim_in);
  if (n_in != static_cast<int>(dims.size()))
    internal_error(cat("isl object has ", n_in, " dimensions but ", dims.size(), " dims were given (",
                       dims_str(dims), ")"));
  for (const Dim& d : dims) names.in.push_back(d.var);
  int n_par = isl_space_dim(space, isl_dim_param);
  for (int k = 0; k < n_par; ++k) {
    const char* nm = isl_space_get_dim_name(space, isl_dim_param, k);
    names.params.push_back(param_symbol(nm ? nm : cat("p", k), dims));
  }
  return names;
}

// The ranges of dims over a set space whose set dimension k is dims[k].var and whose parameters
// are found by name (a bound the space lacks is left unconstrained).
isl::set ranges_in_space(const isl::space& set_space, const Dims& dims) {
  isl_ctx* c = isl_space_get_ctx(set_space.get());
  isl::set s = isl::manage(check(isl_set_universe(set_space.copy()), c));
  auto on = [&](isl_dim_type t, int pos) {
    isl_local_space* ls = check(isl_local_space_from_space(set_space.copy()), c);
    return isl::manage(check(isl_pw_aff_from_aff(check(isl_aff_var_on_domain(ls, t, pos), c)), c));
  };
  auto cst = [&](int64_t v) {
    isl_local_space* ls = check(isl_local_space_from_space(set_space.copy()), c);
    return isl::manage(
        check(isl_pw_aff_from_aff(check(isl_aff_val_on_domain(ls, isl_val_int_from_si(c, v)), c)), c));
  };
  for (size_t k = 0; k < dims.size(); ++k) {
    isl::pw_aff v = on(isl_dim_set, k);
    s = s.intersect(v.ge_set(cst(0)));
    int bp = isl_space_find_dim_by_name(set_space.get(), isl_dim_param, dims[k].bound.name().c_str());
    if (bp >= 0) {
      isl::pw_aff b = on(isl_dim_param, bp);
      s = s.intersect(v.lt_set(b)).intersect(b.ge_set(cst(1)));
    }
  }
  return s;
}

Expr aff_to_expr(const isl::aff& a, const BackNames& names) {
  return aff_to_linear(a.get(), names).to_expr();
}

bool has_var(const Expr& e) {
  bool found = false;
  visit(e, [&](const Expr& x) { found = found || x.is_var(); });
  return found;
}

// Orders operands of a min/max readably: expressions with variables first.
std::vector<Expr> readable_order(std::vector<Expr> v) {
  std::stable_sort(v.begin(), v.end(), [](const Expr& a, const Expr& b) { return has_var(a) && !has_var(b); });
  return v;
}

// ---- AST expressions -------------------------------------------------------------------------

using AstPtr = std::unique_ptr<isl_ast_expr, decltype(&isl_ast_expr_free)>;

Expr from_ast(isl_ast_expr* e, const std::vector<std::pair<std::string, Expr>>& ids, bool want_bool);

bool ast_is_bool(isl_ast_expr* e) {
  if (isl_ast_expr_get_type(e) != isl_ast_expr_op) return false;
  switch (isl_ast_expr_op_get_type(e)) {
    case isl_ast_expr_op_and:
    case isl_ast_expr_op_and_then:
    case isl_ast_expr_op_or:
    case isl_ast_expr_op_or_else:
    case isl_ast_expr_op_eq:
    case isl_ast_expr_op_le:
    case isl_ast_expr_op_lt:
    case isl_ast_expr_op_ge:
    case isl_ast_expr_op_gt:
      return true;
    default:
      return false;
  }
}

std::string ast_str(isl_ast_expr* e) {
  char* s = isl_ast_expr_to_C_str(e);
  std::string out = s ? s : "?";
  free(s);
  return out;
}

Expr from_ast(isl_ast_expr* e, const std::vector<std::pair<std::string, Expr>>& ids, bool want_bool) {
  isl_ctx* c = isl_ast_expr_get_ctx(e);
  switch (isl_ast_expr_get_type(e)) {
    case isl_ast_expr_int: {
      int64_t v = to_int64(isl::manage(check(isl_ast_expr_int_get_val(e), c)));
      return want_bool ? Expr::boolean(v != 0) : Expr(v);
    }
    case isl_ast_expr_id: {
      isl_id* id = check(isl_ast_expr_id_get_id(e), c);
      std::string name = isl_id_get_name(id) ? isl_id_get_name(id) : "";
      isl_id_free(id);
      for (const auto& [n, x] : ids)
        if (n == name) return want_bool && x.type() == Type::Int ? x != Expr(0) : x;
      throw UserError(cat("unknown identifier `", name, "` in isl expression `", ast_str(e), "`"));
    }
    case isl_ast_expr_op: break;
    default: internal_error("isl AST expression of unknown kind");
  }
  int n = isl_ast_expr_op_get_n_arg(e);
  auto arg = [&](int i, bool b) {
    AstPtr a(check(isl_ast_expr_op_get_arg(e, i), c), isl_ast_expr_free);
    return from_ast(a.get(), ids, b);
  };
  auto ints = [&]() {
    std::vector<Expr> v;
    for (int i = 0; i < n; ++i) v.push_back(arg(i, false));
    return v;
  };
  Expr out;
  switch (isl_ast_expr_op_get_type(e)) {
    case isl_ast_expr_op_and:
    case isl_ast_expr_op_and_then:
      out = arg(0, true);
      for (int i = 1; i < n; ++i) out = out && arg(i, true);
      return out;
    case isl_ast_expr_op_or:
    case isl_ast_expr_op_or_else:
      out = arg(0, true);
      for (int i = 1; i < n; ++i) out = out || arg(i, true);
      break;
    case isl_ast_expr_op_max: out = max(ints()); break;
    case isl_ast_expr_op_min: out = min(ints()); break;
    case isl_ast_expr_op_minus: out = -arg(0, false); break;
    case isl_ast_expr_op_add: out = arg(0, false) + arg(1, false); break;
    case isl_ast_expr_op_sub: out = arg(0, false) - arg(1, false); break;
    case isl_ast_expr_op_mul: out = arg(0, false) * arg(1, false); break;
    case isl_ast_expr_op_div:     // exact division
    case isl_ast_expr_op_fdiv_q:  // floor division
    case isl_ast_expr_op_pdiv_q:  // division of a non-negative dividend
      out = floordiv(arg(0, false), arg(1, false));
      break;
    case isl_ast_expr_op_pdiv_r:  // remainder of a non-negative dividend
    case isl_ast_expr_op_zdiv_r:  // remainder, only ever compared with zero
      out = arg(0, false) % arg(1, false);
      break;
    case isl_ast_expr_op_eq: out = arg(0, false) == arg(1, false); break;
    case isl_ast_expr_op_le: out = arg(0, false) <= arg(1, false); break;
    case isl_ast_expr_op_lt: out = arg(0, false) < arg(1, false); break;
    case isl_ast_expr_op_ge: out = arg(0, false) >= arg(1, false); break;
    case isl_ast_expr_op_gt: out = arg(0, false) > arg(1, false); break;
    case isl_ast_expr_op_cond:
    case isl_ast_expr_op_select:
      if (want_bool) {
        Expr cnd = arg(0, true);
        out = (cnd && arg(1, true)) || (!cnd && arg(2, true));
        break;
      }
      throw UserError(cat("isl expression `", ast_str(e),
                          "` needs a conditional (?:), which Tempo expressions cannot write"));
    default:
      throw UserError(cat("isl expression `", ast_str(e), "` uses an operation Tempo expressions cannot write"));
  }
  if (want_bool && out.type() == Type::Int) return out != Expr(0);
  return out;
}

// Identifiers of AST expressions built over "parameter mode" sets: every var and bound by name.
std::vector<std::pair<std::string, Expr>> dim_ids(const Dims& dims) {
  std::vector<std::pair<std::string, Expr>> ids;
  for (const Dim& d : dims) {
    ids.emplace_back(d.var.name(), d.var);
    ids.emplace_back(d.bound.name(), d.bound);
  }
  return ids;
}

// A set without set dimensions (vars are parameters) as a condition, simplified within context.
Expr params_set_to_condition(const isl::set& s, const isl::set& context, const Dims& dims) {
  isl::set in = s.intersect(context).coalesce();
  if (in.is_empty()) return Expr::boolean(false);
  if (context.is_subset(in)) return Expr::boolean(true);
  isl::ast_build build = isl::ast_build::from_context(context);
  isl::ast_expr ae = build.expr_from(in);
  auto ids = dim_ids(dims);
  // Bounds not among dims (e.g. another domain's) resolve by name too.
  int n_par = isl_set_dim(in.get(), isl_dim_param);
  for (int k = 0; k < n_par; ++k) {
    const char* nm = isl_set_get_dim_name(in.get(), isl_dim_param, k);
    if (nm) ids.emplace_back(nm, param_symbol(nm, dims));
  }
  return from_ast(ae.get(), ids, true);
}

// Moves a set's dimensions to parameters named after dims' vars.
isl::set dims_to_params(const isl::set& s, const Dims& dims) {
  isl_ctx* c = isl_set_get_ctx(s.get());
  isl_set* x = s.copy();
  int n = isl_set_dim(x, isl_dim_set);
  for (int k = 0; k < n; ++k) x = check(isl_set_set_dim_id(x, isl_dim_set, k, make_id(c, dims[k].name())), c);
  int np = isl_set_dim(x, isl_dim_param);
  x = check(isl_set_move_dims(x, isl_dim_param, np, isl_dim_set, 0, n), c);
  return isl::manage(x);
}

// A context (params-only-dimension set, vars as parameters) with the dims' ranges in the space of s.
isl::set param_ranges(const isl::set& s, const Dims& dims) {
  isl_ctx* c = isl_set_get_ctx(s.get());
  isl::space sp = isl::manage(check(isl_set_get_space(s.get()), c));
  isl::set r = isl::manage(check(isl_set_universe(sp.copy()), c));
  auto on_param = [&](const std::string& name) -> std::optional<isl::pw_aff> {
    int p = isl_space_find_dim_by_name(sp.get(), isl_dim_param, name.c_str());
    if (p < 0) return std::nullopt;
    isl_local_space* ls = check(isl_local_space_from_space(sp.copy()), c);
    return isl::manage(check(isl_pw_aff_from_aff(check(isl_aff_var_on_domain(ls, isl_dim_param, p), c)), c));
  };
  isl_local_space* ls0 = check(isl_local_space_from_space(sp.copy()), c);
  isl::pw_aff zero = isl::manage(check(isl_pw_aff_from_aff(check(isl_aff_zero_on_domain(ls0), c)), c));
  isl::pw_aff one = zero.add_constant(int_val(c, 1));
  for (const Dim& d : dims) {
    auto b = on_param(d.bound.name());
    if (b) r = r.intersect(b->ge_set(one));
    auto v = on_param(d.var.name());
    if (v) {
      r = r.intersect(v->ge_set(zero));
      if (b) r = r.intersect(v->lt_set(*b));
    }
  }
  return r;
}

}  // namespace

// ---- public: Expr -> isl ----------------------------------------------------------------------

isl::set domain_to_isl(isl::ctx ctx, const std::string& name, const Dims& dims) {
  return guarded(cat("building the domain ", name, "[", dims_str(dims), "]"), [&] {
    ToIsl tr = over_dims(ctx.get(), dims, Expr(), name);
    return tr.ranges(dims, 0).coalesce();
  });
}

isl::map edge_to_isl(isl::ctx ctx, const std::string& sink_name, const Dims& sink,
                     const std::string& source_name, const Dims& source, const Expr& phi,
                     const Expr& cond) {
  if (!phi.defined()) throw UserError("dependence expression is undefined");
  return guarded(cat("building the edge ", sink_name, " -> ", source_name, " for `", phi.str(), "`"), [&] {
    isl_ctx* c = ctx.get();
    SymTab syms;
    add_bounds(syms, sink);
    add_bounds(syms, source);
    for (size_t i = 0; i < sink.size(); ++i) syms.vars.emplace_back(sink[i].var, static_cast<int>(i));
    isl::space sp = make_wrapped_space(c, syms.params, sink_name, sink, source_name, source);
    ToIsl tr(sp, syms, phi);
    std::vector<Expr> entries = entries_of(phi);
    if (entries.size() != source.size())
      throw UserError(cat("dependence expression `", phi.str(), "` has ", entries.size(), " entr",
                          entries.size() == 1 ? "y" : "ies", " but the source domain [", dims_str(source),
                          "] has ", source.size(), " dimension", source.size() == 1 ? "" : "s"));
    isl::set s =
        tr.ranges(sink, 0).intersect(tr.ranges(source, static_cast<int>(sink.size())));
    for (size_t k = 0; k < entries.size(); ++k) s = s.intersect(tr.member(tr.dim(sink.size() + k), entries[k]));
    if (cond.defined()) {
      tr.set_whole(cond);
      s = s.intersect(tr.condition(cond));
    }
    return s.unwrap().coalesce();
  });
}

isl::pw_aff expr_to_pw_aff(isl::ctx ctx, const Expr& e, const Dims& dims) {
  return guarded(cat("translating `", e.str(), "`"), [&] { return over_dims(ctx.get(), dims, e).integer(e); });
}

isl::set condition_to_isl(isl::ctx ctx, const Expr& cond, const Dims& dims) {
  return guarded(cat("translating `", cond.str(), "`"),
                 [&] { return over_dims(ctx.get(), dims, cond).condition(cond).coalesce(); });
}

// ---- public: isl -> Expr ----------------------------------------------------------------------

Expr pw_aff_to_expr(const isl::pw_aff& pa_in, const Dims& dims) {
  return guarded(cat("converting ", isl_str(pa_in)), [&]() -> Expr {
    isl_ctx* c = isl_pw_aff_get_ctx(pa_in.get());
    isl::pw_aff pa = pa_in.coalesce();
    isl::space pw_space = isl::manage(check(isl_pw_aff_get_space(pa.get()), c));
    BackNames names = back_names_for(pw_space.get(), dims);
    isl::space dom_space = isl::manage(check(isl_space_domain(pw_space.copy()), c));
    isl::set dom = pa.domain().intersect(ranges_in_space(dom_space, dims)).coalesce();
    if (dom.is_empty()) throw UserError(cat("isl expression ", isl_str(pa_in), " is defined nowhere in [", dims_str(dims), "]"));

    // The distinct affine pieces, each simplified within its own piece.
    std::vector<isl::aff> affs;
    pa.foreach_piece([&](isl::set piece, isl::multi_aff ma) {
      isl::aff a = ma.at(0);
      isl::set where = piece.intersect(dom);
      if (where.is_empty()) return;
      isl::aff g = isl::manage(check(isl_aff_gist(a.copy(), where.copy()), c));
      // A rational piece (t/2 where t is even) that is integral where it applies is its floor.
      isl::val den = isl::manage(check(isl_aff_get_denominator_val(g.get()), c));
      if (!isl_val_is_one(den.get())) {
        isl::aff fl = isl::manage(check(isl_aff_floor(g.copy()), c));
        if (!where.is_subset(isl::pw_aff(g).eq_set(isl::pw_aff(fl))))
          throw UserError(cat("isl expression ", isl_str(pa_in), " is not integral: its piece ", cat(g),
                              " divides by ", cat(den)));
        g = fl;
      }
      for (const isl::aff& x : affs)
        if (isl_aff_plain_is_equal(x.get(), g.get()) == isl_bool_true) return;
      affs.push_back(g);
    });
    if (affs.empty()) internal_error("pw_aff without pieces on a non-empty domain");

    auto agrees = [&](const isl::pw_aff& cand) { return dom.is_subset(cand.eq_set(pa)); };
    auto exprs = [&](const std::vector<isl::aff>& v) {
      std::vector<Expr> out;
      for (const isl::aff& a : v) out.push_back(aff_to_expr(a, names));
      return readable_order(out);
    };
    auto fold = [&](const std::vector<isl::aff>& v, bool is_min) {
      isl::pw_aff acc = isl::pw_aff(v[0]);
      for (size_t i = 1; i < v.size(); ++i) acc = is_min ? acc.min(isl::pw_aff(v[i])) : acc.max(isl::pw_aff(v[i]));
      return acc;
    };
    // min(S) equals pa on a domain iff every member of S is >= pa there and at each point one of
    // them equals pa; so the only candidate is the min of all such upper pieces, made minimal by
    // dropping members that are not needed (and dually for max).
    auto bounding = [&](const isl::set& where, bool upper) {
      std::vector<isl::aff> v;
      for (const isl::aff& a : affs) {
        isl::pw_aff pwa(a);
        if (where.is_subset(upper ? pwa.ge_set(pa) : pwa.le_set(pa))) v.push_back(a);
      }
      return v;
    };
    auto agrees_on = [&](const isl::set& where, const isl::pw_aff& cand) { return where.is_subset(cand.eq_set(pa)); };
    auto minimal = [&](std::vector<isl::aff> v, const isl::set& where, bool is_min) -> std::optional<std::vector<isl::aff>> {
      if (v.empty() || !agrees_on(where, fold(v, is_min))) return std::nullopt;
      for (size_t i = v.size(); i-- > 0 && v.size() > 1;) {
        std::vector<isl::aff> w = v;
        w.erase(w.begin() + i);
        if (agrees_on(where, fold(w, is_min))) v = w;
      }
      return v;
    };
    auto as_expr = [&](const std::vector<isl::aff>& v, bool is_min) {
      return v.size() == 1 ? aff_to_expr(v[0], names) : is_min ? min(exprs(v)) : max(exprs(v));
    };
    for (bool is_min : {true, false})
      if (auto v = minimal(bounding(dom, is_min), dom, is_min)) return as_expr(*v, is_min);
    // A clamp max(a, min(S)) (or min(a, max(S))): a <= pa everywhere, and min(S) is pa where a < pa.
    for (bool outer_max : {true, false})
      for (const isl::aff& a : bounding(dom, !outer_max)) {
        isl::pw_aff pwa(a);
        isl::set rest = dom.intersect(outer_max ? pwa.lt_set(pa) : pwa.gt_set(pa));
        if (rest.is_empty()) continue;
        auto v = minimal(bounding(rest, outer_max), rest, outer_max);
        if (!v) continue;
        isl::pw_aff inner = fold(*v, outer_max);
        if (!agrees(outer_max ? pwa.max(inner) : pwa.min(inner))) continue;
        Expr ie = as_expr(*v, outer_max), ae = aff_to_expr(a, names);
        return outer_max ? max(ie, ae) : min(ie, ae);
      }
    // Last resort: isl's own AST expression generator, with the variables as parameters.
    isl_pw_aff* x = pa.copy();
    int nd = isl_pw_aff_dim(x, isl_dim_in);
    for (int k = 0; k < nd; ++k) x = check(isl_pw_aff_set_dim_id(x, isl_dim_in, k, make_id(c, dims[k].name())), c);
    x = check(isl_pw_aff_move_dims(x, isl_dim_param, isl_pw_aff_dim(x, isl_dim_param), isl_dim_in, 0, nd), c);
    isl::pw_aff px = isl::manage(x);
    isl::set pdom = px.domain();
    isl::set context = param_ranges(pdom, dims).intersect(pdom);
    isl::ast_build build = isl::ast_build::from_context(context);
    isl::ast_expr ae = build.expr_from(px);
    auto ids = dim_ids(dims);
    for (size_t k = 0; k < names.params.size(); ++k) ids.emplace_back(names.params[k].name(), names.params[k]);
    try {
      return from_ast(ae.get(), ids, false);
    } catch (const UserError&) {
      throw UserError(cat("isl expression ", isl_str(pa_in), " cannot be written with min and max"));
    }
  });
}

Expr set_to_condition(const isl::set& s, const Dims& dims) {
  return guarded(cat("converting ", cat(s), " to a condition"), [&] {
    isl_ctx* c = isl_set_get_ctx(s.get());
    isl::space sp = isl::manage(check(isl_set_get_space(s.get()), c));
    back_names_for(sp.get(), dims);  // checks the dimension count
    isl::set p = dims_to_params(s, dims);
    return params_set_to_condition(p, param_ranges(p, dims), dims);
  });
}

Expr ast_expr_to_expr(const isl::ast_expr& e, const std::vector<std::pair<std::string, Expr>>& ids) {
  return guarded("converting an isl AST expression", [&] { return from_ast(e.get(), ids, ast_is_bool(e.get())); });
}

// ---- public: comparisons ----------------------------------------------------------------------

namespace {

// Parameter-mode translator: vars and bounds are all parameters, the set has no dimension.
ToIsl in_param_mode(isl_ctx* c, const Dims& dims, const Expr& whole) {
  SymTab syms;
  add_bounds(syms, dims);
  for (const Dim& d : dims) syms.add_param(d.var);
  return ToIsl(make_set_space(c, syms.params, {}), syms, whole);
}

isl::set param_mode_ranges(const ToIsl& tr, const Dims& dims) {
  isl::set s = tr.bounds_positive();
  for (const Dim& d : dims) s = s.intersect(tr.range(tr.symbol(d.var), d.bound));
  return s;
}

bool equal_in(isl::ctx ctx, const Expr& a, const Expr& b, const Dims& dims) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  if (a.type() != b.type()) return false;
  isl_ctx* c = ctx.get();
  switch (a.type()) {
    case Type::Int: {
      ToIsl tr = in_param_mode(c, dims, a);
      isl::pw_aff pa = tr.integer(a);
      tr.set_whole(b);
      isl::pw_aff pb = tr.integer(b);
      return pa.ne_set(pb).intersect(param_mode_ranges(tr, dims)).is_empty();
    }
    case Type::Bool: {
      ToIsl tr = in_param_mode(c, dims, a);
      isl::set sa = tr.condition(a);
      tr.set_whole(b);
      isl::set sb = tr.condition(b);
      isl::set r = param_mode_ranges(tr, dims);
      return sa.intersect(r).is_equal(sb.intersect(r));
    }
    case Type::Slice: {
      // The sets {(vars, q) : q in slice}, with q the only set dimension.
      SymTab syms;
      add_bounds(syms, dims);
      for (const Dim& d : dims) syms.add_param(d.var);
      Dims q_dim = {Dim("q__", "Q__")};
      ToIsl tr(make_set_space(c, syms.params, q_dim), syms, a);
      isl::set r = param_mode_ranges(tr, dims);
      isl::set sa = tr.member(tr.dim(0), a).intersect(r);
      tr.set_whole(b);
      isl::set sb = tr.member(tr.dim(0), b).intersect(r);
      return sa.is_equal(sb);
    }
    case Type::Seq: {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (!equal_in(ctx, a.arg(i), b.arg(i), dims)) return false;
      return true;
    }
  }
  return false;
}

}  // namespace

bool logically_equal(const Expr& a, const Expr& b, const Dims& dims) {
  IslContext ictx;
  return guarded(cat("comparing `", a.str(), "` and `", b.str(), "`"), [&] { return equal_in(ictx, a, b, dims); });
}

Expr simplify_condition(const Expr& cond, const Dims& dims) {
  if (!cond.defined()) throw UserError("cannot simplify an undefined condition");
  if (cond.type() != Type::Bool)
    throw UserError(cat("`", cond.str(), "` is ", kind_name(cond.type()), ", not a condition"));
  IslContext ictx;
  return guarded(cat("simplifying `", cond.str(), "`"), [&] {
    ToIsl tr = in_param_mode(ictx.ctx().get(), dims, cond);
    isl::set s = tr.condition(cond);
    return params_set_to_condition(s, param_mode_ranges(tr, dims), dims);
  });
}

}  // namespace tempo::sym
