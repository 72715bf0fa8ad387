#include "passes/dataflow_paths.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "passes/graph_edit.h"
#include "symbolic/simplify.h"
#include "util/error.h"

namespace tempo::passes {

using ir::EdgeId;
using ir::OpId;

DataflowPaths::DataflowPaths(const ir::Graph& g, const std::vector<int>& group_of,
                             const std::vector<std::vector<OpId>>& members,
                             const std::vector<std::vector<EdgeId>>& consumers)
    : g_(g), group_of_(group_of), members_(members), consumers_(consumers) {
  for (size_t e = 0; e < g.num_edges(); ++e) {
    shifts_.push_back(shifts(g, static_cast<EdgeId>(e)));
    std::vector<std::optional<int64_t>> c;
    for (const Expr& x : g.edge(static_cast<EdgeId>(e)).phi.args())
      c.push_back(x.is_const() ? std::optional<int64_t>(x.value()) : std::nullopt);
    consts_.push_back(std::move(c));
    at_least_.push_back(slice_distances(g, static_cast<EdgeId>(e)));
  }
  for (const ir::OpNode& op : g.ops())
    for (const Dim& d : op.domain)
      if (std::none_of(dims_.begin(), dims_.end(), [&](const Dim& x) { return x == d; }))
        dims_.push_back(d);
  for (const ir::OpNode& op : g.ops()) {
    std::vector<size_t> ids;
    for (const Dim& d : op.domain) ids.push_back(dim_index(d));
    dims_of_.push_back(std::move(ids));
  }
}

// Per dimension of the sink: for a slice read along it whose last point is a constant distance
// c behind the sink's coordinate (k[0:t + 1] at t: c = 0), c, the least distance travelled.
std::vector<std::optional<int64_t>> DataflowPaths::slice_distances(const ir::Graph& g,
                                                                   EdgeId id) {
  const ir::Edge& e = g.edge(id);
  const Dims& sink = g.op(e.sink).domain;
  const Dims& source = g.op(e.source).domain;
  std::vector<std::optional<int64_t>> out(sink.size());
  for (size_t k = 0; k < sink.size(); ++k)
    for (size_t j = 0; j < source.size() && j < e.phi.size(); ++j) {
      const Expr& x = e.phi.arg(j);
      if (!(source[j] == sink[k]) || !x.is_slice()) continue;
      const Expr least = sym::simplify(sink[k].var - x.arg(1) + 1, sink);
      if (least.is_const()) out[k] = least.value();
    }
  return out;
}

size_t DataflowPaths::dim_index(const Dim& d) const {
  for (size_t k = 0; k < dims_.size(); ++k)
    if (dims_[k] == d) return k;
  internal_error(cat("dataflow paths: unknown dimension ", d.var.str()));
}

bool DataflowPaths::comes_back_early(const std::vector<int>& from, const std::vector<int>& to,
                                     const Dims& dims) const {
  TEMPO_ASSERT(trackable() && dims.size() <= dims_.size());
  // The distance travelled along a dimension: 0, >= 1, >= 0 (a slice read up to the reader's
  // own point, a K/V cache's k[0:t + 1]) or unknown. A negative one can never make a path later,
  // so it is unknown too.
  enum Sign : uint8_t { Zero, Pos, NonNeg, Any };
  const size_t n = dims.size();
  // Two bits per dimension of `dims` (signs), then two bits per dimension of the program (lower
  // bounds of the current op's coordinates, 0 or 1: whether a read of the first point is ruled
  // out; finer bounds multiplied the states searched by 5 for no more fusion on the RL programs).
  using State = uint64_t;
  auto sign = [](State s, size_t d) { return static_cast<Sign>((s >> (2 * d)) & 3); };
  auto low = [&](State s, size_t g) { return static_cast<int64_t>((s >> (2 * (n + g))) & 3); };
  // s plus a distance of exactly k, or of at least k.
  auto add = [](Sign s, int64_t k, bool exact) {
    if (s == Any) return Any;
    const int64_t least = (s == Pos ? 1 : 0) + k;
    if (least < 0) return Any;
    if (least > 0) return Pos;
    return s == Zero && exact ? Zero : NonNeg;
  };
  // The state at the sink of edge e, given the state at its source (nullopt: the edge reads no
  // point the path can be at).
  auto step = [&](State s, EdgeId e) -> std::optional<State> {
    const ir::Edge& edge = g_.edge(e);
    const Dims& source = g_.op(edge.source).domain;
    const Dims& sink = g_.op(edge.sink).domain;
    for (size_t j = 0; j < source.size(); ++j)
      if (consts_[e][j] && *consts_[e][j] < low(s, dims_of_[edge.source][j])) return std::nullopt;
    State out = 0;
    for (size_t d = 0; d < n; ++d) {
      Sign v = Any;
      for (size_t k = 0; k < sink.size(); ++k)
        if (sink[k] == dims[d] && shifts_[e][k]) v = add(sign(s, d), *shifts_[e][k], true);
        else if (sink[k] == dims[d] && at_least_[e][k]) v = add(sign(s, d), *at_least_[e][k], false);
      out |= static_cast<State>(v) << (2 * d);
    }
    for (size_t k = 0; k < sink.size(); ++k) {
      if (!shifts_[e][k]) continue;
      const size_t g = dims_of_[edge.sink][k];
      const int64_t lo = std::clamp<int64_t>(low(s, g) + *shifts_[e][k], 0, 1);
      out |= static_cast<State>(lo) << (2 * (n + g));
    }
    return out;
  };
  // Lexicographically after: the first dimension travelled is certainly ahead, or may be level
  // (NonNeg) with the following ones certainly after.
  auto later = [&](State s) {
    for (size_t d = 0; d < n; ++d) {
      if (sign(s, d) == Pos) return true;
      if (sign(s, d) == Any) return false;
    }
    return false;
  };
  auto in = [](const std::vector<int>& set, int grp) {
    return std::find(set.begin(), set.end(), grp) != set.end();
  };
  std::vector<std::pair<OpId, State>> work;
  auto push_readers = [&](int grp, State s, bool leaving) {
    for (OpId m : members_[grp])
      for (EdgeId e : consumers_[m]) {
        OpId sink = g_.edge(e).sink;
        if (leaving && in(from, group_of_[sink])) continue;
        if (auto next = step(s, e)) work.emplace_back(sink, *next);
      }
  };
  for (int grp : from) push_readers(grp, 0, true);
  struct Hash {
    size_t operator()(const std::pair<int, State>& k) const {
      return std::hash<State>()(k.second * 0x9e3779b97f4a7c15ULL + static_cast<State>(k.first));
    }
  };
  std::unordered_set<std::pair<int, State>, Hash> seen;
  while (!work.empty()) {
    auto [v, s] = work.back();
    work.pop_back();
    const int gv = group_of_[v];
    if (in(to, gv)) {
      if (!later(s)) return true;
      continue;
    }
    if (in(from, gv)) continue;
    if (!seen.insert({gv, s}).second) continue;
    push_readers(gv, s, false);
  }
  return false;
}

}  // namespace tempo::passes
