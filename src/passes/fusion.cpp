#include "passes/fusion.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_set>
#include <utility>

#include "passes/graph_edit.h"
#include "symbolic/simplify.h"
#include "util/error.h"

namespace tempo::passes {

namespace {

using ir::EdgeId;
using ir::Graph;
using ir::OpId;

bool fusible(const Program& p, const ir::OpNode& op) {
  switch (op.kind) {
    case ir::OpKind::Merge:  // moves values between stores; the executor does it
    case ir::OpKind::Udf:    // host code with external state
    case ir::OpKind::Fused:
    case ir::OpKind::Param:
      return false;
    default:
      return !op.outputs.empty() && !p.is_retained(op.id);
  }
}

bool same_cond(const Expr& a, const Expr& b) {
  return a.defined() == b.defined() && (!a.defined() || a.same(b));
}

// Ops grouped into regions, each group a list of ops (a singleton until merged).
struct Groups {
  std::vector<int> of;  // op -> group
  std::vector<std::vector<OpId>> members;

  explicit Groups(size_t n) : of(n), members(n) {
    for (size_t k = 0; k < n; ++k) {
      of[k] = static_cast<int>(k);
      members[k] = {static_cast<OpId>(k)};
    }
  }
  void merge(int a, int b) {
    if (members[a].size() < members[b].size()) std::swap(a, b);
    for (OpId id : members[b]) of[id] = a;
    members[a].insert(members[a].end(), members[b].begin(), members[b].end());
    members[b].clear();
  }
};

class Fuser {
 public:
  explicit Fuser(Program& p) : p_(p), g_(p.graph), cons_(consumers(g_)), groups_(g_.num_ops()) {
    for (size_t e = 0; e < g_.num_edges(); ++e) {
      shifts_.push_back(shifts(g_, static_cast<EdgeId>(e)));
      std::vector<std::optional<int64_t>> c;
      for (const Expr& x : g_.edge(static_cast<EdgeId>(e)).phi.args())
        c.push_back(x.is_const() ? std::optional<int64_t>(x.value()) : std::nullopt);
      consts_.push_back(std::move(c));
    }
    for (const ir::OpNode& op : g_.ops())
      for (const Dim& d : op.domain)
        if (std::none_of(dims_.begin(), dims_.end(), [&](const Dim& x) { return x == d; }))
          dims_.push_back(d);
    for (const ir::OpNode& op : g_.ops()) {
      std::vector<size_t> ids;
      for (const Dim& d : op.domain) ids.push_back(dim_index(d));
      dims_of_.push_back(std::move(ids));
    }
  }

  // Path states pack two bits per dimension (region and program) into 64 bits.
  bool trackable() const { return dims_.size() <= 16; }

  // Merges along every same-point edge between fusible ops where the region stays schedulable.
  void group() {
    for (const ir::OpNode& op : g_.ops()) {
      if (!fusible(p_, op)) continue;
      for (EdgeId e : op.inputs) {
        const ir::OpNode& src = g_.op(g_.edge(e).source);
        if (!reads_same_point(g_, e) || !fusible(p_, src) || !same_cond(src.cond, op.cond))
          continue;
        int a = groups_.of[src.id], b = groups_.of[op.id];
        if (a != b && only_same_point_edges_between(a, b) && !path_returns(a, b))
          groups_.merge(a, b);
      }
    }
  }

  // Replaces every group of two or more ops by a Fused op; returns whether any was.
  bool build() {
    std::vector<bool> keep(g_.num_ops(), true);
    const size_t n = groups_.members.size();
    bool changed = false;
    for (size_t k = 0; k < n; ++k)
      if (groups_.members[k].size() > 1 && build_region(static_cast<int>(k), keep)) changed = true;
    if (changed) {
      keep.resize(g_.num_ops(), true);
      compact(p_, keep);
    }
    return changed;
  }

 private:
  // Merging must not turn an edge between the two groups into a self-read at another point.
  bool only_same_point_edges_between(int a, int b) const {
    for (int x : {a, b})
      for (OpId m : groups_.members[x])
        for (EdgeId e : g_.op(m).inputs) {
          int s = groups_.of[g_.edge(e).source];
          if ((s == a || s == b) && s != x && !reads_same_point(g_, e)) return false;
        }
    return true;
  }

  // Whether merging groups a and b would put the region on a cycle that no schedule satisfies:
  // a path of data flow that leaves the region at a point p and comes back at a point p' that is
  // not certainly lexicographically after p. Along a path the state holds, per dimension of the
  // region, the sign of the distance travelled (zero, positive, negative, unknown), and per other
  // dimension a lower bound of the coordinate, which rules out paths through points no edge
  // reads: a parameter updated along u (p[u] from p[u - 1], so u >= 1 there) and read by acting
  // at p[i, 0] does not carry the update of iteration i back to acting in iteration i. The
  // acting loop's path through the environment and x[t - 1] comes back one step later in t
  // (safe), while a learner that reads the whole rollout x[i, 0:T] and feeds the next step of
  // the same iteration does not.
  bool path_returns(int a, int b) const {
    enum Sign : uint8_t { Zero, Pos, Neg, Any };
    const Dims& region = g_.op(groups_.members[a][0]).domain;
    const size_t n = region.size();
    // Two bits per region dimension (signs), then two bits per dimension of the program (lower
    // bounds of the current op's coordinates, 0 or 1: whether a read of the first point is ruled
    // out; finer bounds multiplied the states searched by 5 for no merge on the RL programs).
    using State = uint64_t;
    auto sign = [](State s, size_t d) { return static_cast<Sign>((s >> (2 * d)) & 3); };
    auto low = [&](State s, size_t g) { return static_cast<int64_t>((s >> (2 * (n + g))) & 3); };
    auto add = [](Sign s, int64_t k) {
      Sign ks = k == 0 ? Zero : k > 0 ? Pos : Neg;
      if (s == Zero || ks == Zero) return s == Zero ? ks : s;
      return s == ks ? s : Any;
    };
    // The state at the sink of edge e, given the state at its source (nullopt: the edge reads
    // no point the path can be at).
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
          if (sink[k] == region[d] && shifts_[e][k]) v = add(sign(s, d), *shifts_[e][k]);
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
    auto later = [&](State s) {
      for (size_t d = 0; d < n; ++d)
        if (sign(s, d) != Zero) return sign(s, d) == Pos;
      return false;
    };
    std::vector<std::pair<OpId, State>> work;
    auto push_readers = [&](int grp, State s, bool leaving) {
      for (OpId m : groups_.members[grp])
        for (EdgeId e : cons_[m]) {
          OpId sink = g_.edge(e).sink;
          int gs = groups_.of[sink];
          if (leaving && (gs == a || gs == b)) continue;
          if (auto next = step(s, e)) work.emplace_back(sink, *next);
        }
    };
    push_readers(a, 0, true);
    push_readers(b, 0, true);
    struct Hash {
      size_t operator()(const std::pair<int, State>& k) const {
        return std::hash<State>()(k.second * 0x9e3779b97f4a7c15ULL + static_cast<State>(k.first));
      }
    };
    std::unordered_set<std::pair<int, State>, Hash> seen;
    while (!work.empty()) {
      auto [v, s] = work.back();
      work.pop_back();
      int gv = groups_.of[v];
      if (gv == a || gv == b) {
        if (!later(s)) return true;
        continue;
      }
      if (!seen.insert({gv, s}).second) continue;
      push_readers(gv, s, false);
    }
    return false;
  }

  size_t dim_index(const Dim& d) const {
    for (size_t k = 0; k < dims_.size(); ++k)
      if (dims_[k] == d) return k;
    internal_error(cat("fusion: unknown dimension ", d.var.str()));
  }

  // The group's ops in an order where each reads only earlier ones (empty if there is none).
  std::vector<OpId> execution_order(int grp) const {
    const std::vector<OpId>& ms = groups_.members[grp];
    std::vector<OpId> order;
    std::vector<char> done(g_.num_ops(), 0);
    while (order.size() < ms.size()) {
      bool progress = false;
      for (OpId m : ms) {
        if (done[m]) continue;
        bool ready = true;
        for (EdgeId e : g_.op(m).inputs) {
          OpId s = g_.edge(e).source;
          if (groups_.of[s] == grp && !done[s]) ready = false;
        }
        if (ready) {
          done[m] = 1;
          order.push_back(m);
          progress = true;
        }
      }
      if (!progress) return {};
    }
    return order;
  }

  bool build_region(int grp, std::vector<bool>& keep) {
    const std::vector<OpId> order = execution_order(grp);
    if (order.empty()) return false;
    const ir::OpNode& root = g_.op(order.back());
    const Dims domain = root.domain;
    const Expr cond = root.cond;
    auto region = std::make_shared<ir::Region>();
    Graph& body = region->body;
    std::vector<OpId> in_body(g_.num_ops(), -1);
    struct Input {
      OpId source;
      int output;
      Expr phi;
      OpId param;
    };
    std::vector<Input> inputs;
    auto body_op = [&](const ir::OpNode& op) {
      ir::OpNode copy = op;
      copy.inputs.clear();
      copy.domain = domain;
      copy.cond = Expr();
      return body.add_op(std::move(copy));
    };
    // The body op output that a member's input edge reads.
    auto body_source = [&](EdgeId id) -> std::pair<OpId, int> {
      const ir::Edge& e = g_.edge(id);
      const ir::OpNode& src = g_.op(e.source);
      if (groups_.of[e.source] == grp) return {in_body[e.source], e.source_output};
      // A constant fill has the same value at every point: the body makes its own.
      bool stacked = g_.input_type(id).shape.rank() != src.outputs[0].shape.rank();
      if (src.kind == ir::OpKind::Const && !stacked) {
        if (in_body[src.id] < 0) in_body[src.id] = body_op(src);
        return {in_body[src.id], 0};
      }
      for (const Input& in : inputs)
        if (in.source == e.source && in.output == e.source_output && in.phi.same(e.phi))
          return {in.param, 0};
      ir::OpNode param;
      param.kind = ir::OpKind::Param;
      param.attrs.ints = {static_cast<int64_t>(inputs.size())};
      param.outputs = {g_.input_type(id)};
      param.name = src.name;
      param.loc = src.loc;
      param.domain = domain;
      OpId pid = body.add_op(std::move(param));
      inputs.push_back(Input{e.source, e.source_output, e.phi, pid});
      return {pid, 0};
    };
    for (OpId m : order) {
      std::vector<std::pair<OpId, int>> reads;
      for (EdgeId e : g_.op(m).inputs) reads.push_back(body_source(e));
      in_body[m] = body_op(g_.op(m));
      for (const auto& [src, out] : reads)
        body.add_edge(in_body[m], src, out, identity_phi(domain));
    }
    // Outputs: member values read outside the region.
    std::vector<std::pair<EdgeId, int>> external;  // edge, region output
    std::vector<ir::TensorType> types;
    for (OpId m : order)
      for (size_t k = 0; k < g_.op(m).outputs.size(); ++k) {
        int j = -1;
        for (EdgeId e : cons_[m]) {
          const ir::Edge& edge = g_.edge(e);
          if (edge.source != m || edge.source_output != static_cast<int>(k) ||
              groups_.of[edge.sink] == grp)
            continue;
          if (j < 0) {
            j = static_cast<int>(region->outputs.size());
            region->outputs.emplace_back(in_body[m], static_cast<int>(k));
            types.push_back(g_.op(m).outputs[k]);
          }
          external.emplace_back(e, j);
        }
      }
    if (region->outputs.empty()) return false;  // nothing reads it (only DCE-kept draws)

    ir::OpNode fused;
    fused.kind = ir::OpKind::Fused;
    fused.domain = domain;
    fused.cond = cond;
    fused.outputs = types;
    fused.name = root.name;
    fused.loc = root.loc;
    fused.attrs.region = std::move(region);
    const OpId f = g_.add_op(std::move(fused));
    for (const Input& in : inputs) {
      // A later region may own the source: it must see this read when choosing its outputs.
      EdgeId e = g_.add_edge(f, in.source, in.output, in.phi);
      if (static_cast<size_t>(in.source) < cons_.size()) cons_[in.source].push_back(e);
    }
    for (const auto& [e, j] : external) {
      g_.edge(e).source = f;
      g_.edge(e).source_output = j;
    }
    groups_.of.push_back(-1);
    for (OpId m : order) keep[m] = false;
    return true;
  }

  Program& p_;
  Graph& g_;
  std::vector<std::vector<EdgeId>> cons_;
  Groups groups_;
  std::vector<std::vector<std::optional<int64_t>>> shifts_;  // per edge (at grouping time)
  std::vector<std::vector<std::optional<int64_t>>> consts_;  // per edge: constant phi entries
  Dims dims_;                                                // every dimension of the program
  std::vector<std::vector<size_t>> dims_of_;  // per op: its domain's indices in dims_
};

}  // namespace

bool fuse_dataflow(Program& p) {
  Fuser f(p);
  if (!f.trackable()) return false;  // more temporal dimensions than any program here has
  f.group();
  return f.build();
}

}  // namespace tempo::passes
