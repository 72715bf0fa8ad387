// Conversion between Tempo expressions and isl (the polyhedral library, via isl/cpp.h).
//
// Expressions become Presburger formulas exactly (TimeRL §5): a slice start:stop:step is the range
// start <= q < stop with q - start a multiple of step; min and max are isl's own piecewise
// minimum and maximum; floor division and modulo by constants are isl's integer divisions.
// Everything else that is not affine (t*t, t*T, division by a symbol) is a UserError naming the
// sub-expression. isl failures are InternalErrors; no isl exception escapes this interface.
#pragma once

#include <isl/cpp.h>

#include <string>
#include <utility>
#include <vector>

#include "symbolic/expr.h"

namespace tempo::sym {

// Owns an isl context set up for Tempo: isl reports errors to the bindings (as exceptions that
// this module turns into Tempo errors) instead of printing them. One per compilation or thread;
// every isl object made with it must be destroyed before it.
class IslContext {
 public:
  IslContext();
  ~IslContext();
  IslContext(const IslContext&) = delete;
  IslContext& operator=(const IslContext&) = delete;
  isl::ctx ctx() const { return isl::ctx(ctx_); }
  isl_ctx* get() const { return ctx_; }        // for isl's C interface
  operator isl::ctx() const { return ctx(); }  // NOLINT: pass an IslContext where isl::ctx is asked

 private:
  isl_ctx* ctx_;
};

// All bounds (T, I, ...) are isl parameters, each constrained >= 1.
// A domain named `name` over dims: [T, ...] -> { name[t0, t1, ...] : 0 <= tk < Tk, Tk >= 1 }.
isl::set domain_to_isl(isl::ctx ctx, const std::string& name, const Dims& dims);

// The dependence edge "sink[p] reads source[phi(p)] when cond(p)" as the isl map
// { sink[p] -> source[q] : q in phi(p), p in sink domain, q in source domain, cond(p) }.
// phi is a sequence with one entry per source dimension (a lone integer or slice counts as a
// one-entry sequence), written in the sink's variables and any bound of either domain.
// Slices, min, max, floor division and modulo by constants are supported exactly. A non-affine
// expression (e.g. t*t) is a UserError naming it, as is an unbound symbol or an entry count that
// differs from the source's dimensions. cond may be undefined (always active).
isl::map edge_to_isl(isl::ctx ctx, const std::string& sink_name, const Dims& sink,
                     const std::string& source_name, const Dims& source, const Expr& phi,
                     const Expr& cond = Expr());

// Expression (integer or boolean) to isl objects over `dims` (the vars are the set's dimensions in
// order, the bounds the parameters). The result is not intersected with the dims' ranges.
isl::pw_aff expr_to_pw_aff(isl::ctx ctx, const Expr& e, const Dims& dims);
isl::set condition_to_isl(isl::ctx ctx, const Expr& cond, const Dims& dims);

// Back from isl. Variables of the pw_aff's domain map to dims[k].var in order, parameters to the
// bound symbols by name. Only the values on the pw_aff's domain (within the dims' ranges) matter:
// several pieces become one min/max (nested at most once) of their affine expressions where they
// form one; otherwise a UserError shows the pw_aff. Floor divisions come back as `//`, and the
// pattern a - c*(a // c) as `a % c`.
Expr pw_aff_to_expr(const isl::pw_aff& pa, const Dims& dims);
// A set over dims (dimensions = the dims' vars in order) as a boolean condition, simplified
// within the dims' ranges (isl's AST generator does the gist): `true` for the whole range.
Expr set_to_condition(const isl::set& s, const Dims& dims);
// An isl AST expression; `ids` maps AST identifiers (c0, c1, ..., or parameter names) to
// expressions. Integer constants in a boolean position (isl writes `1` for true) become booleans.
Expr ast_expr_to_expr(const isl::ast_expr& e, const std::vector<std::pair<std::string, Expr>>& ids);

// Logical equality over the dims' ranges (for every value of the bounds >= 1): integers and
// booleans by value; slices as the sets of integers they denote; sequences entry by entry.
// Expressions of different types are never equal.
bool logically_equal(const Expr& a, const Expr& b, const Dims& dims);
// Simplifies a boolean condition through isl within the dims' ranges: t%5==0 && t%3==0 ->
// t % 15 == 0, t < T -> true.
Expr simplify_condition(const Expr& cond, const Dims& dims);

}  // namespace tempo::sym
