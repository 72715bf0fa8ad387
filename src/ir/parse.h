// Parser for the SDG's text form (Graph::str), so that passes can be tested as before/after pairs
// written as text.
#pragma once

#include <string>

#include "ir/sdg.h"

namespace tempo::ir {

// Parses Graph::str()'s form back into a Graph, one op per line:
//   %3 = Merge(%4[i, t - 1] if 0 < t, %0.1[i, 0:t]) {ints=[0], keepdim} : f32(4) over (i, t)
//        where t < T - 1  # name @ file.cpp:7
// `dims` are the temporal dimensions names resolve against (each Dim's var and bound); `over`
// lists domain dimensions by variable name. Ops must be numbered 0..n-1 in order; an input may
// refer to a later op (merges of recurrences). An index printed as `[?]` (undefined) stays
// undefined. The `# name @ file:line` comment is optional; the name is kept, the location is not.
// Attributes a kind does not print (scalar, dtype) are accepted on any kind. Blank lines and
// lines starting with `//` are ignored. Udf ops cannot be parsed (their function is not in the
// text). Output types are taken as printed (no inference); call validate() to check them. Any
// syntax error is a UserError naming the line number and its text.
Graph parse_graph(const std::string& text, const Dims& dims);

// Graph::str() without the ` @ file:line` locations, which parse_graph does not keep: the form to
// compare a pass's result with, e.g. EXPECT_EQ(str_without_locations(g), parse_graph(after,
// dims).str()).
std::string str_without_locations(const Graph& g);

}  // namespace tempo::ir
