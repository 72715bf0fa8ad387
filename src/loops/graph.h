// The agent's view of a loop nest (Pearl §4.1): a graph of loop, statement and access nodes,
// each a fixed-size feature vector. Loops are the nodes of the loop tree under the current
// schedule (a loop shared by several statements is one node), each statement hangs under its
// innermost loop, and each of its accesses under it. Edges follow the tree, in both directions,
// plus a self loop per node (as GATv2 adds them). Graphs are padded to kMaxNodes; a padded node
// has only its self loop and a zero node mask.
//
// Features (kFeatures floats): node type (3); loops: level, log2 of the trip count (isl computes
// the row's range over the domain), parallel, unroll factor, tile loop (a floor row), skewed
// (a row over two iterators), reversed, in the agent's current branch, innermost; statements:
// depth, reads, log2 of the instance count, current branch, position; accesses: write, for each
// of three array dimensions the loop level of the iterator that indexes it, contiguous
// (the innermost loop's iterator indexes the last dimension), strided (it indexes another),
// offset (a non-zero constant, as in a stencil).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loops/program.h"
#include "loops/transform.h"

namespace tempo::loops {

constexpr int kMaxNodes = 48;
constexpr int kFeatures = 24;

struct LoopGraph {
  int nodes = 0;                // real nodes (the rest is padding)
  std::vector<float> x;         // kMaxNodes x kFeatures
  std::vector<float> adjacency; // kMaxNodes x kMaxNodes: 1 where j is a neighbour of i (or i)
  std::vector<float> mask;      // kMaxNodes: 1 for real nodes
};

// Encodes the states of one program; caches the isl work per schedule row. The program's
// accesses must be affine (UserError naming the access otherwise).
class GraphEncoder {
 public:
  explicit GraphEncoder(const Program& p);
  ~GraphEncoder();
  GraphEncoder(const GraphEncoder&) = delete;
  GraphEncoder& operator=(const GraphEncoder&) = delete;

  // The graph of `s` with the agent at branch `branch` (its loops and statement tagged).
  LoopGraph encode(const Schedule& s, int branch);

 private:
  struct Access {
    bool write = false;
    std::vector<std::vector<long>> coef;  // per array dimension, per statement iterator
    std::vector<long> constant;
  };
  double trip_log2(size_t stmt, const std::string& expr);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Program p_;
  std::vector<std::vector<Access>> accesses_;  // per statement
  std::vector<double> instances_log2_;         // per statement
  std::map<std::pair<size_t, std::string>, double> trips_;
};

}  // namespace tempo::loops
