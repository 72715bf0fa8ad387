// Polyhedral scheduling of an SDG with isl (TEMPO §5.1-5.3): statements and dependences from the
// SDG, deallocation statements (§5.2), isl's scheduler, and conversion of isl's AST to ours.
#include "schedule/schedule.h"

#include <isl/ast_build.h>
#include <isl/ctx.h>
#include <isl/map.h>
#include <isl/options.h>
#include <isl/schedule.h>
#include <isl/set.h>
#include <isl/union_map.h>
#include <isl/union_set.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "symbolic/isl_bridge.h"
#include "util/error.h"

namespace tempo::schedule {
namespace {

using ir::Edge;
using ir::EdgeId;
using ir::Graph;
using ir::OpId;
using ir::OpKind;
using ir::OpNode;
using IdMap = std::vector<std::pair<std::string, Expr>>;

// Owns the isl context of one compute_schedule call; isl reports errors to the bindings.
struct OwnedCtx {
  isl_ctx* raw;
  OwnedCtx() : raw(isl_ctx_alloc()) {
    TEMPO_ASSERT(raw != nullptr, "isl_ctx_alloc failed");
    isl_options_set_on_error(raw, ISL_ON_ERROR_CONTINUE);
  }
  ~OwnedCtx() { isl_ctx_free(raw); }
  OwnedCtx(const OwnedCtx&) = delete;
  OwnedCtx& operator=(const OwnedCtx&) = delete;
};

std::string stmt_name(OpId id) {
  return cat("S", id);
}
std::string dealloc_name(OpId id, int out) {
  return cat("D", id, "_", out);
}

isl::set with_name(isl::set s, const std::string& name) {
  return isl::manage(isl_set_set_tuple_name(s.release(), name.c_str()));
}
isl::map with_range_name(isl::map m, const std::string& name) {
  return isl::manage(isl_map_set_tuple_name(m.release(), isl_dim_out, name.c_str()));
}
isl::union_map to_union(const isl::map& m) {
  return isl::union_map(m);
}

// A set of a statement's points, printed as a condition over the op's variables (t == T - 1), or
// in isl's notation over them where that fails.
std::string points_str(isl::set s, const Dims& dims) {
  s = s.coalesce();
  try {
    Expr cond = sym::set_to_condition(isl::manage(isl_set_reset_tuple_id(s.copy())), dims);
    if (cond.defined()) return cat("where ", cond.str());
  } catch (const Error&) {
  }
  isl_set* raw = isl_set_reset_tuple_id(s.release());
  for (size_t k = 0; k < dims.size(); ++k)
    raw = isl_set_set_dim_name(raw, isl_dim_set, static_cast<unsigned>(k), dims[k].name().c_str());
  isl::set named = isl::manage(raw);
  char* text = isl_set_to_str(named.get());
  std::string out = text ? text : "?";
  free(text);
  return out;
}

std::vector<Expr> phi_entries(const Expr& phi) {
  if (phi.is_seq()) return phi.args();
  return {phi};
}

// The sink points (over the sink's dims) at which phi reaches outside the source's box domain
// 0 <= q < Q: a point entry outside it, or a non-empty slice that starts or ends outside it.
Expr outside_box(const Expr& phi, const Dims& source) {
  std::vector<Expr> entries = phi_entries(phi);
  Expr bad = Expr::boolean(false);
  for (size_t k = 0; k < entries.size() && k < source.size(); ++k) {
    const Expr& e = entries[k];
    const Expr& bound = source[k].bound;
    if (e.is_slice()) {
      Expr start = e.arg(0), stop = e.arg(1), step = e.arg(2);
      Expr last = step.is_const(1) ? stop - 1 : start + ((stop - start - 1) / step) * step;
      bad = bad || ((start < stop) && ((start < 0) || (bound <= last)));
    } else {
      bad = bad || (e < 0) || (bound <= e);
    }
  }
  return bad;
}

// Strongly connected components of the op graph (edges source -> sink), Tarjan's algorithm.
std::vector<std::vector<OpId>> cyclic_components(const Graph& g) {
  int n = static_cast<int>(g.num_ops());
  std::vector<std::vector<OpId>> succ(n);
  std::vector<bool> self_loop(n, false);
  for (const Edge& e : g.edges()) {
    succ[e.source].push_back(e.sink);
    if (e.source == e.sink) self_loop[e.source] = true;
  }
  std::vector<int> index(n, -1), low(n, 0);
  std::vector<bool> on_stack(n, false);
  std::vector<OpId> stack;
  std::vector<std::vector<OpId>> out;
  int counter = 0;
  std::function<void(OpId)> visit = [&](OpId v) {
    index[v] = low[v] = counter++;
    stack.push_back(v);
    on_stack[v] = true;
    for (OpId w : succ[v]) {
      if (index[w] < 0) {
        visit(w);
        low[v] = std::min(low[v], low[w]);
      } else if (on_stack[w]) {
        low[v] = std::min(low[v], index[w]);
      }
    }
    if (low[v] == index[v]) {
      std::vector<OpId> comp;
      OpId w;
      do {
        w = stack.back();
        stack.pop_back();
        on_stack[w] = false;
        comp.push_back(w);
      } while (w != v);
      if (comp.size() > 1 || self_loop[v]) {
        std::sort(comp.begin(), comp.end());
        out.push_back(std::move(comp));
      }
    }
  };
  for (OpId v = 0; v < n; ++v)
    if (index[v] < 0) visit(v);
  return out;
}

// Scheduling the fused program failed: schedule it unfused instead.
struct FuseFailed {};
// Scheduling with bounded lifetimes failed: schedule without them.
struct BoundFailed {};

class Scheduler {
  // Ops scheduled as one isl statement.
  struct Group {
    std::string name;
    std::vector<OpId> members;  // in execution order
    isl::set domain;
    std::vector<std::pair<OpId, int>> local_frees;
    std::vector<std::pair<OpId, int>> evicts;  // swapped outputs evicted after the members
    struct Load {
      OpId op;
      int output;
      Expr phi;  // the points a member reads, over its domain
      OpId reader;
    };
    std::vector<Load> loads;  // swapped points loaded before the members run
  };

 public:
  // Fusion searches cycles between groups either optimistically (every loop-carried read ends
  // a path) or exactly enough for rollouts (only reads carried in the groups' own dimensions
  // do, see path_through_others).
  enum class CycleSearch { Optimistic, Careful };

  Scheduler(const Graph& g, const ScheduleOptions& opt, isl::ctx ctx, CycleSearch search,
            size_t bound_depth)
      : g_(g), opt_(opt), ctx_(ctx), search_(search), bound_depth_(bound_depth) {}

  Schedule run() {
    build_statements();
    build_dependences();
    build_groups();
    add_group_statements();
    add_group_dependences();
    if (opt_.deallocate) build_deallocations();
    isl::schedule sched = solve(domains_, validity_, proximity_);
    if (sched.is_null()) {
      if (bound_depth_ > 0) throw BoundFailed();
      // Fusion only adds orderings inside a group; where those make the program unschedulable,
      // scheduling it unfused finds a schedule or reports the cycle over the RTs.
      if (opt_.fuse) throw FuseFailed();
      report_cycle();
    }
    Schedule out = generate(sched);
    out.num_statements = num_statements_;
    out.fused = opt_.fuse;
    out.bounded = bound_depth_ > 0;
    if (opt_.deallocate)
      for (const Swap& sw : opt_.swaps) out.swapped.emplace_back(sw.op, sw.output);
    return out;
  }

 private:
  // ---- step 1: statements ------------------------------------------------------------------
  void build_statements() {
    for (const OpNode& op : g_.ops()) collect_params(op.domain);
    domains_ = isl::union_set();
    for (const OpNode& op : g_.ops()) {
      std::string name = stmt_name(op.id);
      isl::set dom = sym::domain_to_isl(ctx_, name, op.domain);
      if (op.cond.defined())
        dom = dom.intersect(with_name(sym::condition_to_isl(ctx_, op.cond, op.domain), name));
      if (op.kind == OpKind::Merge && !op.inputs.empty()) {
        isl::set any = with_name(isl::set::empty(dom.space()), name);
        for (ir::EdgeId e : op.inputs) any = any.unite(edge_cond(g_.edge(e)));
        dom = dom.intersect(any);
      }
      stmt_domain_.push_back(dom);
    }
  }

  void collect_params(const Dims& dims) {
    for (const Dim& d : dims) {
      if (std::find(params_.begin(), params_.end(), d.bound.name()) == params_.end())
        params_.push_back(d.bound.name());
    }
  }

  void add_domain(const isl::set& dom) {
    domains_ = domains_.is_null() ? isl::union_set(dom) : domains_.unite(isl::union_set(dom));
  }

  // The condition of an edge over the sink's statement space (universe when undefined).
  isl::set edge_cond(const Edge& e) {
    const OpNode& sink = g_.op(e.sink);
    isl::set s = sym::domain_to_isl(ctx_, stmt_name(sink.id), sink.domain);
    if (e.cond.defined())
      s = s.intersect(with_name(sym::condition_to_isl(ctx_, e.cond, sink.domain), s_name(s)));
    return s;
  }

  static std::string s_name(const isl::set& s) {
    const char* n = isl_set_get_tuple_name(s.get());
    return n ? n : "";
  }

  // Where an edge is active: its cond, and for a Merge branch, no earlier branch's cond.
  isl::set active_where(const Edge& e) {
    const OpNode& sink = g_.op(e.sink);
    isl::set where = edge_cond(e);
    if (sink.kind == OpKind::Merge) {
      for (ir::EdgeId prior : sink.inputs) {
        if (prior == e.id) break;
        where = where.subtract(edge_cond(g_.edge(prior)));
      }
    }
    return where.intersect(stmt_domain_[sink.id]);
  }

  // ---- step 2: dependences -----------------------------------------------------------------
  void build_dependences() {
    deps_.resize(g_.num_edges());
    for (const Edge& e : g_.edges()) {
      const OpNode& sink = g_.op(e.sink);
      const OpNode& source = g_.op(e.source);
      isl::set where = active_where(e);
      isl::map m = sym::edge_to_isl(ctx_, stmt_name(sink.id), sink.domain, stmt_name(source.id),
                                    source.domain, e.phi, Expr());
      m = m.intersect_domain(where);
      check_in_domain(e, where, m);
      deps_[e.id] = m;
    }
  }

  void check_in_domain(const Edge& e, const isl::set& where, const isl::map& m) {
    const OpNode& sink = g_.op(e.sink);
    const OpNode& source = g_.op(e.source);
    isl::set outside = where.intersect(
        with_name(condition_over(outside_box(e.phi, source.domain), sink.domain, source.domain),
                  stmt_name(sink.id)));
    // Inside the box but where the source does not execute (its cond).
    isl::map unexecuted =
        isl::manage(isl_map_subtract_range(m.copy(), stmt_domain_[source.id].copy()));
    outside = outside.unite(unexecuted.domain());
    if (!opt_.known_bounds.empty()) outside = outside.intersect_params(known_bounds_set());
    if (outside.is_empty()) return;
    std::string src_desc = cat("'", source.name, "' (created at ", where_of(source), ")");
    throw UserError(cat(sink.describe(), " reads ", src_desc, " outside its domain, at points ",
                        points_str(outside, sink.domain)));
  }

  // A condition over `dims` that may also mention the bounds of `other` (e.g. a slice 0:B read by
  // an op without b): those bounds enter through unconstrained extra dims, projected out again.
  isl::set condition_over(const Expr& cond, const Dims& dims, const Dims& other) {
    Dims all = dims;
    for (const Dim& d : other) {
      bool known = false;
      for (const Dim& a : all) known = known || a.bound.same(d.bound);
      if (!known) all.push_back(Dim(cat("q__", all.size()), d.bound.name()));
    }
    isl::set s = sym::condition_to_isl(ctx_, cond, all);
    unsigned extra = static_cast<unsigned>(all.size() - dims.size());
    if (extra == 0) return s;
    return isl::manage(
        isl_set_project_out(s.release(), isl_dim_set, static_cast<unsigned>(dims.size()), extra));
  }

  // { : T = 10 and I = 3 } over the known bound values.
  isl::set known_bounds_set() {
    std::string names, constraints;
    for (const auto& [name, value] : opt_.known_bounds) {
      names += (names.empty() ? "" : ", ") + name;
      constraints += cat(constraints.empty() ? "" : " and ", name, " = ", value);
    }
    return isl::set(ctx_, cat("[", names, "] -> { : ", constraints, " }"));
  }

  static std::string where_of(const OpNode& op) { return tempo::where(op.loc); }

  void add_dep(const isl::map& before_after) {
    isl::union_map u = to_union(before_after);
    validity_ = validity_.is_null() ? u : validity_.unite(u);
    if (opt_.proximity) add_proximity(before_after);
  }

  void add_proximity(const isl::map& before_after) {
    isl::union_map u = to_union(before_after);
    proximity_ = proximity_.is_null() ? u : proximity_.unite(u);
    // For a window read, being close to the window's upper end is what lets acting and learning
    // interleave (NOTES-isl.md): the lexmax of each sink's read set. Point reads already are.
    isl::map reads = before_after.reverse();
    if (reads.is_single_valued()) return;
    isl::map upper = reads.lexmax().reverse();
    proximity_ = proximity_.is_null() ? to_union(upper) : proximity_.unite(to_union(upper));
  }

  // ---- step 3: groups of ops scheduled as one statement (TEMPO §4.4) -------------------------
  // Without fusion every op is its own group, named as its op. With fusion, ops joined by
  // identity edges over equal statement domains form one group, unless that would order a group
  // both before and after an op outside it (a new cycle in the graph of groups).
  void build_groups() {
    const int n = static_cast<int>(g_.num_ops());
    group_of_.resize(n);
    for (OpId id = 0; id < n; ++id) group_of_[id] = id;
    if (opt_.fuse) fuse_groups();
    std::vector<int> index(n, -1);
    groups_.reserve(n);  // Group holds isl objects that must not be copied while null
    for (OpId id = 0; id < n; ++id) {
      int root = group_of_[id];
      if (index[root] < 0) {
        index[root] = static_cast<int>(groups_.size());
        groups_.emplace_back();
      }
      group_of_[id] = index[root];
      groups_[index[root]].members.push_back(id);
    }
    for (int k = 0; k < static_cast<int>(groups_.size()); ++k) {
      Group& grp = groups_[k];
      grp.name = opt_.fuse ? cat("F", k) : stmt_name(grp.members[0]);
      if (grp.members.size() > 1) order_members(grp);
      for (size_t pos = 0; pos < grp.members.size(); ++pos) position_[grp.members[pos]] = pos;
      exec_stmts_[grp.name] = k;
    }
  }

  static bool same_dims(const Dims& a, const Dims& b) {
    if (a.size() != b.size()) return false;
    for (size_t k = 0; k < a.size(); ++k)
      if (!a[k].var.same(b[k].var) || !a[k].bound.same(b[k].bound)) return false;
    return true;
  }

  // phi reads the source at the sink's own point.
  bool is_identity(const Edge& e) const {
    const Dims& src = g_.op(e.source).domain;
    if (!same_dims(src, g_.op(e.sink).domain) || !e.phi.is_seq() || e.phi.size() != src.size())
      return false;
    for (size_t k = 0; k < src.size(); ++k)
      if (!e.phi.arg(k).same(src[k].var)) return false;
    return true;
  }

  // The sink reads an earlier point of a dimension it shares with the source (x[t - 1]) after
  // reading the same point in every earlier dimension of the source: a loop-carried read. Returns
  // that dimension's variable (undefined if the read is not loop-carried).
  Expr carried_dim(const Edge& e) const {
    const Dims& src = g_.op(e.source).domain;
    const Dims& snk = g_.op(e.sink).domain;
    if (!e.phi.is_seq() || e.phi.size() != src.size()) return Expr();
    for (size_t k = 0; k < src.size(); ++k) {
      const Expr& v = src[k].var;
      bool shared =
          std::any_of(snk.begin(), snk.end(), [&](const Dim& d) { return d.var.same(v); });
      if (!shared) return Expr();
      const Expr& entry = e.phi.arg(k);
      if (entry.same(v)) continue;
      if (entry.op() != sym::Op::Add || entry.size() != 2) return Expr();
      for (int a = 0; a < 2; ++a)
        if (entry.arg(a).same(v) && entry.arg(1 - a).is_const() && entry.arg(1 - a).value() < 0)
          return v;
      return Expr();
    }
    return Expr();
  }
  bool is_carried(const Edge& e) const { return carried_dim(e).defined(); }

  bool fusible(const Edge& e) {
    if (e.source == e.sink || e.cond.defined() || !is_identity(e)) return false;
    const OpNode& a = g_.op(e.source);
    const OpNode& b = g_.op(e.sink);
    bool same_cond =
        a.cond.defined() == b.cond.defined() && (!a.cond.defined() || a.cond.same(b.cond));
    // Merge ops execute only where a branch is active: compare the statement domains.
    if (!same_cond && a.kind != OpKind::Merge && b.kind != OpKind::Merge) return false;
    return with_name(stmt_domain_[a.id], "X").is_equal(with_name(stmt_domain_[b.id], "X"));
  }

  int find(int x) {
    while (group_of_[x] != x) x = group_of_[x] = group_of_[group_of_[x]];
    return x;
  }

  // A successor in the op graph, with the dimension its read is carried in (if any).
  struct Succ {
    OpId op;
    Expr carried;
  };

  // Whether a path leaves group `from` and reaches group `to` through ops of neither. Reads
  // carried in one of `dims` (the groups' own dimensions) move to an earlier point of the groups
  // and cannot close a same-point cycle; reads carried in other dimensions can (x[t - 1] of a
  // rollout, then read whole as x[i, 0:T]).
  bool path_through_others(int from, int to, const std::vector<std::vector<Succ>>& succ,
                           const Dims& dims) {
    auto followed = [&](const Succ& s) {
      if (!s.carried.defined()) return true;
      if (search_ == CycleSearch::Optimistic) return false;
      return std::none_of(dims.begin(), dims.end(),
                          [&](const Dim& d) { return d.var.same(s.carried); });
    };
    const int n = static_cast<int>(g_.num_ops());
    std::vector<char> seen(n, 0);
    std::vector<OpId> stack;
    for (OpId v = 0; v < n; ++v) {
      if (find(v) != from) continue;
      for (const Succ& s : succ[v]) {
        int gw = find(s.op);
        if (followed(s) && gw != from && gw != to && !seen[s.op]) {
          seen[s.op] = 1;
          stack.push_back(s.op);
        }
      }
    }
    while (!stack.empty()) {
      OpId v = stack.back();
      stack.pop_back();
      for (const Succ& s : succ[v]) {
        if (!followed(s)) continue;
        const OpId w = s.op;
        int gw = find(w);
        if (gw == to) return true;
        if (gw != from && !seen[w]) {
          seen[w] = 1;
          stack.push_back(w);
        }
      }
    }
    return false;
  }

  // Reads between the two groups become reads inside one statement: only same-point and
  // loop-carried ones keep it schedulable as one forward loop (a window or a read of the future
  // inside a group would order its points both ways).
  bool internal_reads_ok(int a, int b) {
    for (const Edge& e : g_.edges()) {
      int s = find(e.source), k = find(e.sink);
      if (((s == a && k == b) || (s == b && k == a)) && !is_identity(e) && !is_carried(e))
        return false;
    }
    return true;
  }

  void fuse_groups() {
    const int n = static_cast<int>(g_.num_ops());
    // Paths through a read carried in the groups' own dimensions cannot bring a group back to
    // the same point, so the search leaves them out; where that is wrong (a later read of the
    // future cancels the carry), isl finds no schedule and the program is scheduled unfused.
    std::vector<std::vector<Succ>> succ(n);
    for (const Edge& e : g_.edges()) succ[e.source].push_back({e.sink, carried_dim(e)});
    std::vector<EdgeId> candidates;
    for (const Edge& e : g_.edges())
      if (fusible(e)) candidates.push_back(e.id);
    // A merge refused because of a path through a third group may become possible once that
    // group has joined one of the two: repeat until nothing changes.
    for (bool changed = true; changed;) {
      changed = false;
      for (EdgeId id : candidates) {
        const Edge& e = g_.edge(id);
        int a = find(e.source), b = find(e.sink);
        if (a == b) continue;
        if (!internal_reads_ok(a, b)) continue;
        const Dims& dims = g_.op(e.source).domain;  // fused ops share their domain
        if (path_through_others(a, b, succ, dims) || path_through_others(b, a, succ, dims))
          continue;
        group_of_[std::max(a, b)] = std::min(a, b);
        changed = true;
      }
    }
    for (OpId v = 0; v < n; ++v) group_of_[v] = find(v);
  }

  // Members in a topological order of the identity reads inside the group, ties by op id. Udf
  // ops keep ascending id order where no data dependence decides, so side effects stay
  // deterministic.
  void order_members(Group& grp) {
    const size_t m = grp.members.size();
    std::map<OpId, size_t> local;
    for (size_t k = 0; k < m; ++k) local[grp.members[k]] = k;
    std::vector<std::set<size_t>> succ(m);
    for (OpId v : grp.members)
      for (EdgeId eid : g_.op(v).inputs) {
        const Edge& e = g_.edge(eid);
        auto it = local.find(e.source);
        if (it != local.end() && e.source != e.sink && is_identity(e))
          succ[it->second].insert(local[v]);
      }
    auto reaches = [&](size_t from, size_t to) {
      std::vector<char> seen(m, 0);
      std::vector<size_t> stack{from};
      seen[from] = 1;
      while (!stack.empty()) {
        size_t v = stack.back();
        stack.pop_back();
        if (v == to) return true;
        for (size_t w : succ[v])
          if (!seen[w]) {
            seen[w] = 1;
            stack.push_back(w);
          }
      }
      return false;
    };
    std::vector<size_t> udfs;
    for (size_t k = 0; k < m; ++k)
      if (g_.op(grp.members[k]).kind == OpKind::Udf) udfs.push_back(k);
    for (size_t x = 0; x < udfs.size(); ++x)
      for (size_t y = x + 1; y < udfs.size(); ++y)
        if (!reaches(udfs[y], udfs[x])) succ[udfs[x]].insert(udfs[y]);
    std::vector<int> indegree(m, 0);
    for (size_t v = 0; v < m; ++v)
      for (size_t w : succ[v]) ++indegree[w];
    std::set<size_t> ready;  // members are in ascending op id, so the smallest index first
    for (size_t v = 0; v < m; ++v)
      if (indegree[v] == 0) ready.insert(v);
    std::vector<OpId> order;
    while (!ready.empty()) {
      size_t v = *ready.begin();
      ready.erase(ready.begin());
      order.push_back(grp.members[v]);
      for (size_t w : succ[v])
        if (--indegree[w] == 0) ready.insert(w);
    }
    if (order.size() != m) throw FuseFailed();  // a same-point cycle: reported unfused
    grp.members = std::move(order);
  }

  void add_group_statements() {
    for (Group& grp : groups_) {
      grp.domain = with_name(stmt_domain_[grp.members[0]], grp.name);
      add_domain(grp.domain);
      ++num_statements_;
    }
  }

  // A map between op statements, renamed to the statements of their groups.
  isl::map to_groups(const isl::map& m, OpId in, OpId out) {
    isl_map* r = isl_map_set_tuple_name(m.copy(), isl_dim_in, groups_[group_of_[in]].name.c_str());
    r = isl_map_set_tuple_name(r, isl_dim_out, groups_[group_of_[out]].name.c_str());
    return isl::manage(r);
  }

  // A user function without outputs (progress, checkpoints) exists for its side effect at the
  // time it runs: without proximity isl may put all its points in a loop after the whole
  // program, so its reads get proximity constraints in any case.
  bool is_effect(OpId id) const {
    const OpNode& op = g_.op(id);
    return op.kind == OpKind::Udf && op.outputs.empty();
  }

  void add_group_dependences() {
    for (const Edge& e : g_.edges()) {
      isl::map before_after = deps_[e.id].reverse();
      const bool near = !opt_.proximity && is_effect(e.sink);
      if (!opt_.fuse) {
        add_dep(before_after);
        if (near) add_proximity(before_after);
        continue;
      }
      before_after = to_groups(before_after, e.source, e.sink);
      if (group_of_[e.source] == group_of_[e.sink]) {
        if (is_identity(e)) continue;  // ordered inside the group
        // The same-point pairs are ordered inside the group when the source comes first.
        if (e.source != e.sink && position_[e.source] < position_[e.sink]) {
          isl::map same = isl::manage(isl_map_identity(
              isl_space_map_from_set(isl_set_get_space(groups_[group_of_[e.sink]].domain.get()))));
          before_after = before_after.subtract(same);
        }
        if (before_after.is_empty()) continue;
      }
      add_dep(before_after);
      if (near) add_proximity(before_after);
    }
  }

  // ---- step 4: deallocations (TEMPO §5.2) --------------------------------------------------
  // Outputs read only at the same point inside their own group are freed as the group's last
  // steps. Others get a Dealloc statement, after the producer and after every reader of the point
  // through the reversed dependence; outputs of a group whose readers are the same share one.
  void build_deallocations() {
    std::set<std::pair<OpId, int>> retained(opt_.retained.begin(), opt_.retained.end());
    std::map<std::pair<OpId, int>, const Swap*> swapped;
    for (const Swap& sw : opt_.swaps) swapped[{sw.op, sw.output}] = &sw;
    struct Bundle {
      std::vector<std::pair<OpId, int>> outputs;
      isl::union_map readers;  // group of the reader -> "R" point of the producer's group
      std::vector<isl::map> pieces;
      isl::set carried;  // "R" points read at a later point of the outermost dimension
    };
    for (int k = 0; k < static_cast<int>(groups_.size()); ++k) {
      Group& grp = groups_[k];
      std::vector<Bundle> bundles;
      for (OpId id : grp.members) {
        const OpNode& op = g_.op(id);
        if (op.kind == OpKind::Udf && op.outputs.empty()) continue;
        for (int out = 0; out < static_cast<int>(op.outputs.size()); ++out) {
          if (retained.count({id, out})) continue;
          std::vector<isl::map> pieces;
          bool local = opt_.fuse;
          isl::set carried = with_name(isl::set::empty(grp.domain.space()), "R");
          for (ir::EdgeId eid : g_.out_edges(id)) {
            const Edge& e = g_.edge(eid);
            if (e.source_output != out) continue;
            local = local && group_of_[e.sink] == k && is_identity(e);
            pieces.push_back(with_range_name(to_groups(deps_[eid], e.sink, id), "R"));
            const Dims& reader = g_.op(e.sink).domain;
            if (!op.domain.empty() && !reader.empty() && reader[0].var.same(op.domain[0].var))
              carried = carried.unite(
                  isl::manage(isl_map_order_gt(pieces.back().copy(), isl_dim_in, 0, isl_dim_out, 0))
                      .range());
          }
          const bool swap = swapped.count({id, out}) > 0;
          if (local && !swap) {
            grp.local_frees.emplace_back(id, out);
            continue;
          }
          isl::union_map readers = isl::manage(isl_union_map_empty_ctx(ctx_.get()));
          for (const auto& p : pieces) readers = readers.unite(to_union(p));
          Bundle* same = nullptr;
          if (opt_.fuse && !swap)
            for (Bundle& b : bundles)
              if (b.readers.is_equal(readers)) same = &b;
          if (same) {
            same->outputs.emplace_back(id, out);
          } else {
            bundles.push_back(Bundle{{{id, out}}, readers, pieces, carried});
          }
        }
      }
      for (size_t b = 0; b < bundles.size(); ++b) {
        const Bundle& bundle = bundles[b];
        const auto& [first_op, first_out] = bundle.outputs[0];
        const std::string base =
            opt_.fuse ? cat("E", k, "_", b) : dealloc_name(first_op, first_out);
        // The points read again in a later step of the outermost dimension (a rollout's last
        // observation, read by the next iteration) are freed by a statement of their own: one
        // affine schedule for all points would delay every point's free by that distance.
        std::vector<std::pair<std::string, isl::set>> parts;
        isl::set all = with_name(grp.domain, "R");
        if (bundle.carried.is_empty() || bundle.carried.is_equal(all)) {
          parts.emplace_back(base, all);
        } else {
          parts.emplace_back(base, all.subtract(bundle.carried));
          parts.emplace_back(base + "c", bundle.carried);
        }
        isl::map last;
        if (bound_depth_ > 0) last = last_readers(grp, bundle.outputs, bundle.pieces);
        for (const auto& [name, points] : parts) {
          dealloc_stmts_[name] = bundle.outputs;
          isl::set dom = with_name(points, name);
          add_domain(dom);
          ++num_statements_;
          // After the producer...
          add_dealloc_dep(with_range_name(grp.domain.identity(), name).intersect_range(dom));
          // ...and after every reader of that point.
          for (const isl::map& m : bundle.pieces)
            add_dealloc_dep(with_range_name(m, name).intersect_range(dom));
          if (!last.is_null()) bound_lifetime(grp, name, last.intersect_domain(points));
        }
        if (auto sw = swapped.find(bundle.outputs[0]); sw != swapped.end())
          build_swap(grp, *sw->second);
      }
    }
  }

  // Swapping (TEMPO §5.2, Fig. 15b). Each late reader's group statement loads the points it reads
  // just before its ops run (so the device holds one reader's points at a time, e.g. one tile of
  // a rollout). Where every other reader runs at the same point inside the producer's group (an
  // acting step), the producer's group statement evicts each point as its last step; otherwise an
  // Evict statement of its own is ordered after the producer and those readers. The
  // deallocations already follow every reader, loads included.
  void build_swap(Group& grp, const Swap& sw) {
    bool in_group = opt_.fuse;
    std::vector<isl::map> early;
    for (ir::EdgeId eid : g_.out_edges(sw.op)) {
      const Edge& e = g_.edge(eid);
      if (e.source_output != sw.output) continue;
      if (std::find(sw.late.begin(), sw.late.end(), eid) != sw.late.end()) {
        groups_[group_of_[e.sink]].loads.push_back({sw.op, sw.output, e.phi, e.sink});
        continue;
      }
      in_group = in_group && &groups_[group_of_[e.sink]] == &grp && is_identity(e);
      early.push_back(to_groups(deps_[eid], e.sink, sw.op));  // reader point -> produced point
    }
    if (in_group) {
      grp.evicts.emplace_back(sw.op, sw.output);
      return;
    }
    const std::string evict = cat("V", sw.op, "_", sw.output);
    swap_stmts_[evict] = {sw.op, sw.output};
    add_domain(with_name(grp.domain, evict));
    ++num_statements_;
    add_dealloc_dep(with_range_name(grp.domain.identity(), evict));
    for (const isl::map& m : early) add_dealloc_dep(with_range_name(m, evict));
    // A late reader's load comes after the eviction of what it reads.
    for (ir::EdgeId eid : sw.late) {
      const Edge& e = g_.edge(eid);
      isl::map m = with_range_name(to_groups(deps_[eid], e.sink, sw.op), evict).reverse();
      isl::union_map u = to_union(m);
      validity_ = validity_.is_null() ? u : validity_.unite(u);
    }
  }

  // Without proximity constraints nothing keeps isl from freeing in a separate loop after the
  // whole run (memory growing with the outer dimension). So where every reader of the outputs
  // runs in the same leading dimensions d0..dk as their producer (k as deep as they all share),
  // the point p is freed before the producer runs at p with dk = (the last reader's dk) + 1: a
  // rollout step before the same step of the next iteration, PPO's parameters of update u before
  // update u + 2, a window's K/V step right after the last query that reads it. Where that makes
  // the program unschedulable, it is scheduled again without these constraints.
  //
  // last_readers: R[p] -> [d0..dk] of the last reader of p (null where no bound applies).
  isl::map last_readers(const Group& grp, const std::vector<std::pair<OpId, int>>& outputs,
                        const std::vector<isl::map>& pieces) {
    const Dims& dims = g_.op(grp.members[0]).domain;
    size_t depth = dims.size();
    for (const auto& [id, out] : outputs)
      for (ir::EdgeId eid : g_.out_edges(id)) {
        const Edge& e = g_.edge(eid);
        if (e.source_output != out) continue;
        const Dims& reader = g_.op(e.sink).domain;
        size_t shared = 0;
        while (shared < std::min(depth, reader.size()) && reader[shared].var.same(dims[shared].var))
          ++shared;
        depth = shared;
      }
    depth = std::min(depth, bound_depth_);
    if (depth == 0) return isl::map();
    auto prefix = [depth](isl::map m) {  // R[p] -> X[x0, ...] to R[p] -> [x0..xk]
      isl_size n = isl_map_dim(m.get(), isl_dim_out);
      isl_map* r = isl_map_project_out(m.release(), isl_dim_out, static_cast<unsigned>(depth),
                                       static_cast<unsigned>(n) - static_cast<unsigned>(depth));
      return isl::manage(isl_map_reset_tuple_id(r, isl_dim_out));
    };
    isl::map self = with_range_name(grp.domain.identity(), "R");
    self = isl::manage(isl_map_set_tuple_name(self.release(), isl_dim_in, "R"));
    isl::map last = prefix(self);
    for (const isl::map& m : pieces) last = last.unite(prefix(m.reverse()));
    return last.lexmax();
  }

  void bound_lifetime(const Group& grp, const std::string& dealloc, const isl::map& last) {
    const size_t depth = static_cast<size_t>(isl_map_dim(last.get(), isl_dim_out));
    std::string vars, bumped;
    for (size_t k = 0; k < depth; ++k) {
      vars += cat(k ? ", " : "", "d", k);
      bumped += cat(k ? ", " : "", "d", k, k + 1 == depth ? " + 1" : "");
    }
    isl::map next(ctx_, cat("{ [", vars, "] -> [", bumped, "] }"));
    isl::map self = with_range_name(grp.domain.identity(), "R");
    self = isl::manage(isl_map_set_tuple_name(self.release(), isl_dim_in, "R"));
    isl_size n = isl_map_dim(self.get(), isl_dim_out);
    isl::map rest =
        isl::manage(isl_map_project_out(self.copy(), isl_dim_out, 0, static_cast<unsigned>(depth)));
    isl::map before =
        isl::manage(isl_map_flat_range_product(last.apply_range(next).release(), rest.release()));
    if (isl_map_dim(before.get(), isl_dim_out) != n) return;
    before = isl::manage(isl_map_set_tuple_name(before.release(), isl_dim_in, dealloc.c_str()));
    before = isl::manage(isl_map_set_tuple_name(before.release(), isl_dim_out, grp.name.c_str()));
    before = before.intersect_range(grp.domain);
    isl::union_map u = to_union(before);
    validity_ = validity_.is_null() ? u : validity_.unite(u);
  }

  void add_dealloc_dep(const isl::map& before_after) {
    isl::union_map u = to_union(before_after);
    validity_ = validity_.is_null() ? u : validity_.unite(u);
    if (opt_.proximity || opt_.memory_proximity)
      proximity_ = proximity_.is_null() ? u : proximity_.unite(u);
  }

  // ---- step 5: isl's scheduler -------------------------------------------------------------
  isl::schedule solve(const isl::union_set& domains, const isl::union_map& validity,
                      const isl::union_map& proximity) {
    isl_ctx* raw = ctx_.get();
    isl_options_set_schedule_whole_component(raw, opt_.whole_component ? 1 : 0);
    isl_options_set_schedule_serialize_sccs(raw, 0);
    isl_options_set_schedule_maximize_coincidence(raw, 0);
    isl_options_set_schedule_treat_coalescing(raw, 0);
    isl_options_set_schedule_separate_components(raw, 1);
    isl_ctx_set_max_operations(raw, opt_.max_isl_operations);
    isl_ctx_reset_operations(raw);
    isl_ctx_reset_error(raw);
    isl_schedule_constraints* sc = isl_schedule_constraints_on_domain(domains.copy());
    // Coalescing merges the many identical or adjacent pieces; it makes isl's ILPs smaller.
    if (!validity.is_null())
      sc = isl_schedule_constraints_set_validity(sc, validity.coalesce().release());
    if (!proximity.is_null())
      sc = isl_schedule_constraints_set_proximity(sc, proximity.coalesce().release());
    isl_schedule* s = isl_schedule_constraints_compute_schedule(sc);
    check_quota("scheduling");
    return s ? isl::manage(s) : isl::schedule();
  }

  void check_quota(const char* phase) {
    if (isl_ctx_last_error(ctx_.get()) == isl_error_quota) {
      isl_ctx_reset_error(ctx_.get());
      throw UserError(cat("schedule: ", phase, " exceeded the bound of ", opt_.max_isl_operations,
                          " isl operations (ScheduleOptions::max_isl_operations); the program's ",
                          "dependences are too complex to schedule within it"));
    }
  }

  // No schedule: find the dependence cycle that cannot be satisfied by scheduling each cyclic
  // component of the SDG alone.
  [[noreturn]] void report_cycle() {
    std::string detail = isl_last_error_msg();
    auto comps = cyclic_components(g_);
    for (const auto& comp : comps) {
      std::set<OpId> in(comp.begin(), comp.end());
      isl::union_set doms;
      isl::union_map val;
      for (OpId id : comp)
        doms = doms.is_null() ? isl::union_set(stmt_domain_[id])
                              : doms.unite(isl::union_set(stmt_domain_[id]));
      for (const Edge& e : g_.edges()) {
        if (!in.count(e.sink) || !in.count(e.source)) continue;
        isl::union_map u = to_union(deps_[e.id].reverse());
        val = val.is_null() ? u : val.unite(u);
      }
      if (!solve(doms, val, isl::union_map()).is_null()) continue;
      std::string ops;
      for (OpId id : comp) ops += cat("\n  ", g_.op(id).describe());
      throw UserError(cat("schedule: the dependences of these RTs form a cycle that no execution ",
                          "order satisfies (a point depends on itself through them):", ops));
    }
    std::string all;
    for (const auto& comp : comps)
      for (OpId id : comp) all += cat("\n  ", g_.op(id).describe());
    throw UserError(cat("schedule: isl found no schedule for the program",
                        detail.empty() ? "" : cat(" (", detail, ")"),
                        all.empty() ? "" : cat("; RTs in dependence cycles:", all)));
  }

  std::string isl_last_error_msg() {
    const char* m = isl_ctx_last_error_msg(ctx_.get());
    return m ? m : "";
  }

  // ---- step 6: AST -------------------------------------------------------------------------
  Schedule generate(const isl::schedule& sched) {
    isl_ctx* raw = ctx_.get();
    isl_ctx_reset_operations(raw);
    isl_options_set_ast_build_atomic_upper_bound(raw, 1);
    isl_options_set_ast_build_detect_min_max(raw, 1);
    // The context: every bound is at least 1.
    std::string ctx_text = "[";
    for (size_t k = 0; k < params_.size(); ++k) ctx_text += (k ? ", " : "") + params_[k];
    ctx_text += "] -> { : ";
    for (size_t k = 0; k < params_.size(); ++k)
      ctx_text += (k ? " and " : "") + params_[k] + " >= 1";
    if (params_.empty()) ctx_text += "true";
    ctx_text += " }";
    isl::set context(ctx_, ctx_text);
    isl_ast_build* build = isl_ast_build_from_context(context.release());
    isl_ast_node* node = isl_ast_build_node_from_schedule(build, sched.copy());
    isl_ast_build_free(build);
    check_quota("generating the loop nest");
    if (!node)
      throw InternalError(cat("schedule: isl AST generation failed: ", isl_last_error_msg()));
    isl::ast_node ast = isl::manage(node);
    for (const auto& p : params_) ids_.emplace_back(p, Expr::bound(p));
    Schedule out;
    out.root = convert(ast);
    for (const auto& name : iterator_names_) {
      std::string bound = name;
      bound[0] = 'C';
      out.iterators.push_back(Dim(name, bound));
    }
    return out;
  }

  Expr to_expr(const isl::ast_expr& e) { return sym::ast_expr_to_expr(e, ids_); }

  static StmtPtr make_seq(std::vector<StmtPtr> body) {
    if (body.size() == 1) return body[0];
    auto s = std::make_shared<Stmt>();
    s->kind = StmtKind::Seq;
    for (auto& b : body) {
      if (b->kind == StmtKind::Seq) {
        s->body.insert(s->body.end(), b->body.begin(), b->body.end());
      } else {
        s->body.push_back(b);
      }
    }
    return s;
  }

  StmtPtr convert(const isl::ast_node& node) {
    switch (isl_ast_node_get_type(node.get())) {
      case isl_ast_node_block: {
        isl::ast_node_list kids = node.as<isl::ast_node_block>().children();
        std::vector<StmtPtr> body;
        for (int k = 0; k < static_cast<int>(kids.size()); ++k) body.push_back(convert(kids.at(k)));
        return make_seq(std::move(body));
      }
      case isl_ast_node_for: {
        auto f = node.as<isl::ast_node_for>();
        std::string it = f.iterator().as<isl::ast_expr_id>().id().name();
        Expr init = to_expr(f.init());
        if (f.is_degenerate()) {
          // A single iteration: substitute the iterator's value instead of looping.
          ids_.emplace_back(it, init);
          StmtPtr body = convert(f.body());
          ids_.pop_back();
          return body;
        }
        if (std::find(iterator_names_.begin(), iterator_names_.end(), it) == iterator_names_.end())
          iterator_names_.push_back(it);
        auto s = std::make_shared<Stmt>();
        s->kind = StmtKind::For;
        s->iterator = Expr::var(it);
        s->init = init;
        ids_.emplace_back(it, s->iterator);
        s->cond = to_expr(f.cond());
        s->step = to_expr(f.inc());
        StmtPtr body = convert(f.body());
        ids_.pop_back();
        if (body->kind == StmtKind::Seq) {
          s->body = body->body;
        } else {
          s->body.push_back(body);
        }
        return s;
      }
      case isl_ast_node_if: {
        auto i = node.as<isl::ast_node_if>();
        auto s = std::make_shared<Stmt>();
        s->kind = StmtKind::If;
        s->cond = to_expr(i.cond());
        StmtPtr then = convert(i.then_node());
        s->body = then->kind == StmtKind::Seq ? then->body : std::vector<StmtPtr>{then};
        if (i.has_else_node()) {
          StmtPtr other = convert(i.else_node());
          s->else_body = other->kind == StmtKind::Seq ? other->body : std::vector<StmtPtr>{other};
        }
        return s;
      }
      case isl_ast_node_mark:
        return convert(node.as<isl::ast_node_mark>().node());
      case isl_ast_node_user:
        return convert_user(node.as<isl::ast_node_user>().expr());
      default:
        throw InternalError("schedule: unexpected isl AST node");
    }
  }

  StmtPtr convert_user(const isl::ast_expr& call) {
    auto op = call.as<isl::ast_expr_op>();
    std::string name = op.arg(0).as<isl::ast_expr_id>().id().name();
    std::vector<Expr> point;
    for (unsigned k = 1; k < op.n_arg(); ++k) point.push_back(to_expr(op.arg(k)));
    std::vector<StmtPtr> body;
    auto add = [&](StmtKind kind, OpId id, int out) {
      TEMPO_ASSERT(point.size() == g_.op(id).domain.size(), "point arity of ", name);
      auto s = std::make_shared<Stmt>();
      s->kind = kind;
      s->op = id;
      s->output = out;
      s->point = point;
      body.push_back(s);
    };
    if (auto it = exec_stmts_.find(name); it != exec_stmts_.end()) {
      const Group& grp = groups_[it->second];
      for (const Group::Load& l : grp.loads) {
        // The read points in the statement's iterators: phi over the reader's domain variables.
        std::vector<std::pair<Expr, Expr>> at;
        const Dims& dims = g_.op(l.reader).domain;
        for (size_t k = 0; k < dims.size(); ++k) at.emplace_back(dims[k].var, point[k]);
        auto s = std::make_shared<Stmt>();
        s->kind = StmtKind::Load;
        s->op = l.op;
        s->output = l.output;
        for (const Expr& x : phi_entries(l.phi)) s->point.push_back(sym::substitute(x, at));
        body.push_back(s);
      }
      const size_t num_loads = body.size();
      for (OpId id : grp.members) add(StmtKind::Exec, id, 0);
      for (const auto& [id, out] : grp.local_frees) add(StmtKind::Dealloc, id, out);
      for (const auto& [id, out] : grp.evicts) add(StmtKind::Evict, id, out);
      // What was loaded goes back (its host copy is kept: no copy), so that the device holds one
      // reader's points at a time (TEMPO's second eviction).
      for (size_t k = 0; k < num_loads; ++k) {
        auto s = std::make_shared<Stmt>(*body[k]);
        s->kind = StmtKind::Evict;
        body.push_back(s);
      }
    } else if (auto sw = swap_stmts_.find(name); sw != swap_stmts_.end()) {
      add(StmtKind::Evict, sw->second.first, sw->second.second);
    } else {
      auto d = dealloc_stmts_.find(name);
      TEMPO_ASSERT(d != dealloc_stmts_.end(), "unknown statement ", name);
      for (const auto& [id, out] : d->second) add(StmtKind::Dealloc, id, out);
    }
    return make_seq(std::move(body));
  }

  const Graph& g_;
  const ScheduleOptions& opt_;
  isl::ctx ctx_;
  std::vector<std::string> params_;
  std::vector<isl::set> stmt_domain_;
  std::vector<isl::map> deps_;  // per edge: sink point -> source point it reads
  std::vector<int> group_of_;   // op -> group index
  std::vector<Group> groups_;
  std::map<OpId, size_t> position_;        // op -> position among its group's members
  std::map<std::string, int> exec_stmts_;  // statement name -> group
  std::map<std::string, std::vector<std::pair<OpId, int>>> dealloc_stmts_;
  std::map<std::string, std::pair<OpId, int>> swap_stmts_;  // Evict statements of their own
  int num_statements_ = 0;
  CycleSearch search_;
  // Bounded lifetimes (bound_lifetime) over at most this many leading dimensions; 0: none.
  size_t bound_depth_;
  isl::union_set domains_;
  isl::union_map validity_, proximity_;
  IdMap ids_;
  std::vector<std::string> iterator_names_;
};

Schedule schedule_with(const Graph& g, const ScheduleOptions& options,
                       Scheduler::CycleSearch search, size_t bound_depth);
// With bounded lifetimes first (deep, then outermost), then without.
Schedule schedule_bounded(const Graph& g, const ScheduleOptions& options,
                          Scheduler::CycleSearch search = Scheduler::CycleSearch::Careful);

}  // namespace

Schedule compute_schedule(const Graph& g, const ScheduleOptions& options) {
  if (options.fuse) {
    // The optimistic search fuses more (smaller, faster schedules) but may create a cycle, e.g.
    // through a rollout read whole after a step-to-step carry; the careful one rarely does.
    for (auto search : {Scheduler::CycleSearch::Optimistic, Scheduler::CycleSearch::Careful}) {
      try {
        return schedule_bounded(g, options, search);
      } catch (const FuseFailed&) {
      }
    }
    ScheduleOptions unfused = options;
    unfused.fuse = false;
    return schedule_bounded(g, unfused);
  }
  return schedule_bounded(g, options);
}

namespace {

Schedule schedule_bounded(const Graph& g, const ScheduleOptions& options,
                          Scheduler::CycleSearch search) {
  // Lifetimes bounded over every dimension the readers share, then over the outermost one only
  // (a window read across an inner dimension can make the deeper bound unschedulable: isl gives
  // each statement one affine schedule), then not at all.
  if (options.deallocate) {
    for (size_t depth : {std::numeric_limits<size_t>::max(), size_t{1}}) {
      try {
        return schedule_with(g, options, search, depth);
      } catch (const BoundFailed&) {
      }
    }
  }
  return schedule_with(g, options, search, 0);
}

Schedule schedule_with(const Graph& g, const ScheduleOptions& options,
                       Scheduler::CycleSearch search, size_t bound_depth) {
  OwnedCtx owned;
  try {
    Scheduler s(g, options, isl::ctx(owned.raw), search, bound_depth);
    return s.run();
  } catch (const isl::exception& e) {
    if (dynamic_cast<const isl::exception_quota*>(&e) ||
        isl_ctx_last_error(owned.raw) == isl_error_quota)
      throw UserError(cat("schedule: exceeded the bound of ", options.max_isl_operations,
                          " isl operations (ScheduleOptions::max_isl_operations); the program's ",
                          "dependences are too complex to schedule within it"));
    throw InternalError(cat("schedule: isl failed: ", e.what()));
  }
}

}  // namespace

}  // namespace tempo::schedule
