// Parser for the printed form of expressions (Expr::str). parse(e.str(), dims).same(e) holds.
#pragma once

#include <string>

#include "symbolic/expr.h"

namespace tempo::sym {

// Parses an expression, slice ("a:b", "a:b:c") or sequence ("[a, b:c]"). Names resolve against
// `dims` (each dim's variable and bound); any other name is a UserError naming it, as is a
// syntax error, e.g. `unknown symbol 'X' at column 5 in "t + X"` (columns count from 1).
// '>' and '>=' build the mirrored '<' and '<='; comparisons do not chain. Grammar, loosest first:
//   seq    := '[' (slice (',' slice)*)? ']' | slice
//   slice  := or (':' or (':' or)?)?
//   or := and ('||' and)*     and := cmp ('&&' cmp)*     cmp := add (('=='|'!='|'<'|'<='|'>'|'>=') add)?
//   add := mul (('+'|'-') mul)*     mul := unary (('*'|'//'|'/'|'%') unary)*
//   unary := ('-'|'!') unary | atom     atom := int | true | false | name | '(' or ')' | (min|max) '(' or (',' or)* ')'
// Every node is built with the operators of expr.h, which is what makes printing round-trip.
Expr parse(const std::string& text, const Dims& dims);

}  // namespace tempo::sym
