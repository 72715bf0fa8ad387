// A fire module of SqueezeNet, the small graph the rewrite tests search and train on: a 1x1
// squeeze conv, then 1x1 and 3x3 expand convs concatenated (TASO merges the two expand convs).
#pragma once

#include <string>

#include "rewrite/graph.h"

namespace tempo::rewrite::testing {

inline Ref fire(Graph& g, Ref x, int64_t squeeze, int64_t expand, const std::string& prefix = "") {
  Ref s = g.unary(Op::Relu, g.conv(x, g.weight(prefix + "s", {squeeze, g.shape(x)[1], 1, 1})));
  Ref e1 = g.unary(Op::Relu, g.conv(s, g.weight(prefix + "e1", {expand, squeeze, 1, 1})));
  Ref e3 = g.unary(Op::Relu, g.conv(s, g.weight(prefix + "e3", {expand, squeeze, 3, 3})));
  return g.concat(1, {e1, e3});
}

}  // namespace tempo::rewrite::testing
