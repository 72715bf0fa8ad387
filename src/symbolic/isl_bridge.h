// Conversion between Tempo expressions and isl (the polyhedral library, via isl/cpp.h).
#pragma once

#include <isl/cpp.h>

#include <string>

#include "symbolic/expr.h"

namespace tempo::sym {

// All bounds (T, I, ...) are isl parameters, each constrained >= 1.
// A domain named `name` over dims: { name[t0, t1, ...] : 0 <= tk < Tk }.
isl::set domain_to_isl(isl::ctx ctx, const std::string& name, const Dims& dims);

// The dependence edge "sink[p] reads source[phi(p)] when cond(p)" as the isl map
// { sink[p] -> source[q] : q in phi(p), p in sink domain, q in source domain, cond(p) }.
// Slices, min, max, floor division and modulo by constants are supported exactly. A non-affine
// expression (e.g. t*t) is a UserError naming it. cond may be undefined (always active).
isl::map edge_to_isl(isl::ctx ctx, const std::string& sink_name, const Dims& sink,
                     const std::string& source_name, const Dims& source, const Expr& phi,
                     const Expr& cond = Expr());

// Expression (integer or boolean) to isl text fragments and objects over `dims` (vars are the
// set's dimensions, bounds the parameters).
isl::pw_aff expr_to_pw_aff(isl::ctx ctx, const Expr& e, const Dims& dims);
isl::set condition_to_isl(isl::ctx ctx, const Expr& cond, const Dims& dims);

// Back from isl. Variables of the pw_aff's domain map to dims[k].var in order, parameters to the
// bound symbols by name.
Expr pw_aff_to_expr(const isl::pw_aff& pa, const Dims& dims);
// An isl AST expression; `iterator_names` maps AST iterator ids (c0, c1, ...) to expressions.
Expr ast_expr_to_expr(const isl::ast_expr& e, const std::vector<std::pair<std::string, Expr>>& ids);

// Logical equality over the dims' ranges (for integers, slices and sequences alike).
bool logically_equal(const Expr& a, const Expr& b, const Dims& dims);
// Simplifies a boolean condition through isl: t%5==0 && t%3==0 -> t%15==0.
Expr simplify_condition(const Expr& cond, const Dims& dims);

}  // namespace tempo::sym
