#include "passes/fusion.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>

#include "passes/dataflow_paths.h"
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
  explicit Fuser(Program& p)
      : p_(p),
        g_(p.graph),
        cons_(consumers(g_)),
        groups_(g_.num_ops()),
        paths_(g_, groups_.of, groups_.members, cons_) {}

  bool trackable() const { return paths_.trackable(); }

  // Merges along every same-point edge between fusible ops where the region stays schedulable.
  void group() {
    for (const ir::OpNode& op : g_.ops()) {
      if (!fusible(p_, op)) continue;
      for (EdgeId e : op.inputs) {
        const ir::OpNode& src = g_.op(g_.edge(e).source);
        if (!reads_same_point(g_, e) || !fusible(p_, src) || !same_cond(src.cond, op.cond))
          continue;
        int a = groups_.of[src.id], b = groups_.of[op.id];
        if (a != b && only_same_point_edges_between(a, b) && !delays_step_readers(src, a, b) &&
            !paths_.comes_back_early({a, b}, {a, b}, op.domain))
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

  // A region's outputs all exist once the whole region has run. Where src's value is read
  // outside groups a and b at each step of a dimension src does not have (a weight's transpose
  // read by a per-step product, x[t] @ W^T), and a or b reads a whole range along that dimension
  // (a batch over the rollout, o[i, 0:T]), merging would make every step wait for the whole range
  // (and keep what that range holds alive until then).
  bool delays_step_readers(const ir::OpNode& src, int a, int b) const {
    std::vector<Dim> steps;
    for (EdgeId id : cons_[src.id]) {
      const ir::OpNode& r = g_.op(g_.edge(id).sink);
      if (groups_.of[r.id] == a || groups_.of[r.id] == b) continue;
      for (const Dim& d : r.domain)
        if (std::find(src.domain.begin(), src.domain.end(), d) == src.domain.end())
          steps.push_back(d);
    }
    if (steps.empty()) return false;
    for (int x : {a, b})
      for (OpId m : groups_.members[x])
        for (EdgeId id : g_.op(m).inputs) {
          const ir::Edge& e = g_.edge(id);
          const Dims& sd = g_.op(e.source).domain;
          for (size_t k = 0; k < e.phi.size() && k < sd.size(); ++k)
            if (e.phi.arg(k).is_slice() &&
                std::find(steps.begin(), steps.end(), sd[k]) != steps.end())
              return true;
        }
    return false;
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
    // Outputs: member values read outside the region. The region is named after the members
    // among them that the program named (RT::named: a K/V cache, "k_cache+v_cache"), else after
    // its last op, so that profiles and memory timelines say what it holds.
    std::vector<std::pair<EdgeId, int>> external;  // edge, region output
    std::vector<ir::TensorType> types;
    std::string name;
    for (OpId m : order)
      for (size_t k = 0; k < g_.op(m).outputs.size(); ++k) {
        int j = -1;
        for (EdgeId e : cons_[m]) {
          const ir::Edge& edge = g_.edge(e);
          if (edge.source != m || edge.source_output != static_cast<int>(k) ||
              groups_.of[edge.sink] == grp)
            continue;
          if (j < 0) {
            const ir::OpNode& op = g_.op(m);
            const bool first_of_op =
                region->outputs.empty() || region->outputs.back().first != in_body[m];
            if (first_of_op && op.name != ir::default_op_name(op.kind))
              name += (name.empty() ? "" : "+") + op.name;
            j = static_cast<int>(region->outputs.size());
            region->outputs.emplace_back(in_body[m], static_cast<int>(k));
            types.push_back(op.outputs[k]);
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
    fused.name = name.empty() ? root.name : name;
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
  // Merging a and b must not put the region on a cycle that no schedule satisfies: a path of
  // data flow that leaves it at a point p and comes back at a point not certainly after p. The
  // acting loop's path through the environment and x[t - 1] comes back one step later in t
  // (safe), while a learner that reads the whole rollout x[i, 0:T] and feeds the next step of
  // the same iteration does not.
  DataflowPaths paths_;  // over the graph as it is before regions are built
};

}  // namespace

bool fuse_dataflow(Program& p) {
  Fuser f(p);
  if (!f.trackable()) return false;  // more temporal dimensions than any program here has
  f.group();
  return f.build();
}

}  // namespace tempo::passes
