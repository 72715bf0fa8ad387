// Candidate substitutions found the way TASO found its 151: enumerate every small graph over an
// operator set, fingerprint each by evaluating it on random integer inputs (exact arithmetic),
// group graphs with equal fingerprints, and keep a pair only when the two graphs also agree when
// run by the LibTorch interpreter on fresh random float inputs.
//
// The operator set here is matmul, add, mul, relu and transpose over three 4x4 tensors (two
// inputs and a weight), graphs of up to `max_ops` operators; add and mul are enumerated with
// ordered operands only (commutativity is not counted as a substitution).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rewrite/graph.h"

namespace tempo::rewrite {

struct EnumerationResult {
  int64_t graphs = 0;           // distinct expressions enumerated
  int64_t classes = 0;          // fingerprint classes with more than one graph
  int64_t candidates = 0;       // (graph, smallest equivalent graph) pairs by fingerprint
  int64_t verified = 0;         // of those, equal on random inputs under LibTorch
  std::vector<std::pair<std::string, std::string>> examples;  // a few verified pairs
};

EnumerationResult enumerate_substitutions(int max_ops = 2, int examples = 8);

}  // namespace tempo::rewrite
