// Paths of data flow between groups of ops, for the passes that must not create a cycle no
// schedule satisfies: fusion (a region must not wait for itself) and lifting (a scan must not
// wait for the sums that read it).
#pragma once

#include <optional>
#include <vector>

#include "ir/sdg.h"

namespace tempo::passes {

class DataflowPaths {
 public:
  // Ops of one group run at the same point (a fused region, or one op alone): a path that reaches
  // one member reaches the group. `group_of` maps ops to groups and `members` lists each group's
  // ops; `consumers` lists each op's readers (passes/graph_edit.h). All three may change between
  // queries (regions merge); the graph's ops and edges may not.
  DataflowPaths(const ir::Graph& g, const std::vector<int>& group_of,
                const std::vector<std::vector<ir::OpId>>& members,
                const std::vector<std::vector<ir::EdgeId>>& consumers);

  // Path states pack two bits per dimension of `dims` and of the program into 64 bits.
  bool trackable() const { return dims_.size() <= 16; }

  // Whether a path of reads that leaves the groups `from` at a point p (not through an edge into
  // `from`) reaches a group of `to` at a point not certainly lexicographically after p along
  // `dims`. Along a path the state holds, per dimension of `dims`, the sign of the distance
  // travelled (zero, positive, negative, unknown), and per other dimension a lower bound of the
  // coordinate, which rules out paths through points no edge reads: a parameter updated along u
  // (p[u] from p[u - 1], so u >= 1 there) and read by acting at p[i, 0] does not carry the update
  // of iteration i back to acting in iteration i. A path ends at the first group of `to` or
  // `from` it meets.
  bool comes_back_early(const std::vector<int>& from, const std::vector<int>& to,
                        const Dims& dims) const;

 private:
  size_t dim_index(const Dim& d) const;
  static std::vector<std::optional<int64_t>> slice_distances(const ir::Graph& g, ir::EdgeId id);

  const ir::Graph& g_;
  const std::vector<int>& group_of_;
  const std::vector<std::vector<ir::OpId>>& members_;
  const std::vector<std::vector<ir::EdgeId>>& consumers_;
  std::vector<std::vector<std::optional<int64_t>>> shifts_;  // per edge (passes/graph_edit.h)
  std::vector<std::vector<std::optional<int64_t>>> consts_;  // per edge: constant phi entries
  std::vector<std::vector<std::optional<int64_t>>> at_least_;  // per edge: slice_distances
  Dims dims_;                                 // every dimension of the program
  std::vector<std::vector<size_t>> dims_of_;  // per op: its domain's indices in dims_
};

}  // namespace tempo::passes
