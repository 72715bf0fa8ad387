// Scheduler step 3 (TEMPO §4.4): ops fused into groups scheduled as one isl statement.
#include "schedule/scheduler.h"

namespace tempo::schedule::detail {

// Without fusion every op is its own group, named as its op. With fusion, ops joined by
// identity edges over equal statement domains form one group, unless that would order a group
// both before and after an op outside it (a new cycle in the graph of groups).
void Scheduler::build_groups() {
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

bool Scheduler::same_dims(const Dims& a, const Dims& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!a[k].var.same(b[k].var) || !a[k].bound.same(b[k].bound)) return false;
  return true;
}

// phi reads the source at the sink's own point.
bool Scheduler::is_identity(const Edge& e) const {
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
Expr Scheduler::carried_dim(const Edge& e) const {
  const Dims& src = g_.op(e.source).domain;
  const Dims& snk = g_.op(e.sink).domain;
  if (!e.phi.is_seq() || e.phi.size() != src.size()) return Expr();
  for (size_t k = 0; k < src.size(); ++k) {
    const Expr& v = src[k].var;
    bool shared = std::any_of(snk.begin(), snk.end(), [&](const Dim& d) { return d.var.same(v); });
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

bool Scheduler::fusible(const Edge& e) {
  // A merge branch under a condition checked at run time joins its group like any same-point
  // read: the merge's statement picks the branch at each point.
  if (e.source == e.sink || (e.cond.defined() && !checked_at_run_time(e.cond)) ||
      !is_identity(e))
    return false;
  if (alone_.count(e.source) || alone_.count(e.sink)) return false;
  const OpNode& a = g_.op(e.source);
  const OpNode& b = g_.op(e.sink);
  bool same_cond =
      a.cond.defined() == b.cond.defined() && (!a.cond.defined() || a.cond.same(b.cond));
  // Merge ops execute only where a branch is active: compare the statement domains.
  if (!same_cond && a.kind != OpKind::Merge && b.kind != OpKind::Merge) return false;
  return with_name(stmt_domain_[a.id], "X").is_equal(with_name(stmt_domain_[b.id], "X"));
}

int Scheduler::find(int x) {
  while (group_of_[x] != x) x = group_of_[x] = group_of_[group_of_[x]];
  return x;
}

// Whether a path leaves group `from` and reaches group `to` through ops of neither. Reads
// carried in one of `dims` (the groups' own dimensions) move to an earlier point of the groups
// and cannot close a same-point cycle; reads carried in other dimensions can (x[t - 1] of a
// rollout, then read whole as x[i, 0:T]).
bool Scheduler::path_through_others(int from, int to, const std::vector<std::vector<Succ>>& succ,
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
bool Scheduler::internal_reads_ok(int a, int b) {
  for (const Edge& e : g_.edges()) {
    int s = find(e.source), k = find(e.sink);
    if (((s == a && k == b) || (s == b && k == a)) && !is_identity(e) && !is_carried(e))
      return false;
  }
  return true;
}

void Scheduler::fuse_groups() {
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
      if (path_through_others(a, b, succ, dims) || path_through_others(b, a, succ, dims)) continue;
      group_of_[std::max(a, b)] = std::min(a, b);
      changed = true;
    }
  }
  fuse_siblings(succ);
  for (OpId v = 0; v < n; ++v) group_of_[v] = find(v);
}

// Groups that differ only in what they hold run as one statement where no path joins them:
// Merge ops left alone (recurrent state: parameters, optimizer moments, a condition's choice
// between old and updated values) over equal statement domains, and what runs once before
// everything (initial values). They are most of an RL program's statements (SAC: ~340 of
// ~530), and isl's scheduling time grows fast with the number of statements.
void Scheduler::fuse_siblings(const std::vector<std::vector<Succ>>& succ) {
  const int n = static_cast<int>(g_.num_ops());
  std::vector<int> size(n, 0);
  std::vector<char> made_once(n, 1);  // per group root: every member has no dimensions
  for (OpId v = 0; v < n; ++v) {
    ++size[find(v)];
    if (!g_.op(v).domain.empty()) made_once[find(v)] = 0;
  }
  auto sibling = [&](OpId v) {
    if (find(v) != v || alone_.count(v)) return false;
    return made_once[v] || (g_.op(v).kind == OpKind::Merge && size[v] == 1);
  };
  // Per statement domain (equal as fusible compares them), the groups of siblings over it.
  std::vector<std::pair<isl::set, std::vector<int>>> siblings;
  for (OpId v = 0; v < n; ++v) {
    if (!sibling(v)) continue;
    const isl::set domain = with_name(stmt_domain_[v], "X");
    auto same = std::find_if(siblings.begin(), siblings.end(),
                             [&](const auto& d) { return d.first.is_equal(domain); });
    if (same == siblings.end()) same = siblings.insert(siblings.end(), {domain, {}});
    std::vector<int>& groups = same->second;
    const Dims& dims = g_.op(v).domain;
    auto joins = [&](int r) {
      return internal_reads_ok(r, v) && !path_through_others(r, v, succ, dims) &&
             !path_through_others(v, r, succ, dims);
    };
    if (auto it = std::find_if(groups.begin(), groups.end(), joins); it != groups.end())
      group_of_[v] = *it;  // v > *it: the smaller id stays the root
    else
      groups.push_back(v);
  }
}

// Members in a topological order of the identity reads inside the group, ties by op id. Udf
// ops keep ascending id order where no data dependence decides, so side effects stay
// deterministic.
void Scheduler::order_members(Group& grp) {
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
  if (order.size() != m) throw FuseFailed{{grp.members}};  // a same-point cycle
  grp.members = std::move(order);
}

std::vector<std::vector<OpId>> Scheduler::fused_groups() const {
  std::vector<std::vector<OpId>> out;
  for (const Group& grp : groups_)
    if (grp.members.size() > 1) out.push_back(grp.members);
  return out;
}

void Scheduler::add_group_statements() {
  for (Group& grp : groups_) {
    grp.domain = with_name(stmt_domain_[grp.members[0]], grp.name);
    add_domain(grp.domain);
    ++num_statements_;
  }
}

// A map between op statements, renamed to the statements of their groups.
isl::map Scheduler::to_groups(const isl::map& m, OpId in, OpId out) {
  isl_map* r = isl_map_set_tuple_name(m.copy(), isl_dim_in, groups_[group_of_[in]].name.c_str());
  r = isl_map_set_tuple_name(r, isl_dim_out, groups_[group_of_[out]].name.c_str());
  return isl::manage(r);
}

// A user function without outputs (progress, checkpoints) exists for its side effect at the
// time it runs: without proximity isl may put all its points in a loop after the whole
// program, so its reads get proximity constraints in any case.
bool Scheduler::is_effect(OpId id) const {
  const OpNode& op = g_.op(id);
  return op.kind == OpKind::Udf && op.outputs.empty();
}

void Scheduler::add_group_dependences() {
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

}  // namespace tempo::schedule::detail
