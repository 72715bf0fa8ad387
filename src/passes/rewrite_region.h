// The rewrite choice: the one interface through which a graph-rewrite policy (src/rewrite: TASO's
// search, the RLFlow agents) changes Tempo's programs. The pass (passes/rewrites.h) hands the
// policy each region of the optimized SDG that is written in the operators TASO's substitutions
// rewrite, and puts back the graph the policy returns.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tempo {

// Ops of one domain that read each other at the same point, as a graph in topological order.
// Every other value they read is an "input" node (a "weight" where the read does not vary along
// some dimension of the region: computed from weights only, a node then runs at fewer points).
struct RewriteRegion {
  struct Node {
    // input, weight, matmul, add, mul, relu, tanh, sigmoid, concat, split, transpose, reshape.
    std::string op;
    std::vector<std::pair<int, int>> inputs;  // (node, output) of earlier nodes
    // input and weight: the shape; transpose: the permutation; reshape: the shape; split: sizes.
    std::vector<int64_t> ints;
    int64_t axis = 0;  // concat, split
    std::string name;  // input and weight: the read they stand for, kept by a rewrite
  };
  std::vector<Node> nodes;
  std::vector<std::pair<int, int>> outputs;  // the values read outside the region
  std::string where;                         // the domain and its first op, for messages
};

// A policy's answer for a region: a graph with the region's inputs (by name) and outputs (in
// order) that computes the same values, or nothing to keep the region as it is; and why (sizes,
// costs), which the pass prints when the compile is verbose.
struct RewriteChoice {
  std::optional<RewriteRegion> graph;
  std::string why;
};
using RewritePolicy = std::function<RewriteChoice(const RewriteRegion&)>;

}  // namespace tempo
