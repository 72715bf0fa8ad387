// Scheduler steps 1 and 2: a statement per op (its domain) and the dependences of its reads.
#include "schedule/scheduler.h"

namespace tempo::schedule::detail {

// Conditions with an integer division or modulo (`(i + 1) % 2 == 0`, every second iteration:
// passes/conditional_execution.h) are checked by the executor at run time instead of entering
// the statements' domains (or keeping a merge from its branches' groups): the lattices they
// make slowed isl's scheduling of TD3 from 3 s to 22 s. isl then sees every point, so
// dependences and lifetimes are those of the program that computes at every point, and a
// statement at a point where its condition fails does nothing.
bool checked_at_run_time(const Expr& cond) {
  if (cond.op() == sym::Op::Mod || cond.op() == sym::Op::FloorDiv) return true;
  return std::any_of(cond.args().begin(), cond.args().end(), checked_at_run_time);
}

void Scheduler::build_statements() {
  for (const OpNode& op : g_.ops()) collect_params(op.domain);
  domains_ = isl::union_set();
  for (const OpNode& op : g_.ops()) {
    std::string name = stmt_name(op.id);
    isl::set dom = sym::domain_to_isl(ctx_, name, op.domain);
    if (op.cond.defined() && !checked_at_run_time(op.cond))
      dom = dom.intersect(with_name(sym::condition_to_isl(ctx_, op.cond, op.domain), name));
    if (op.kind == OpKind::Merge && !op.inputs.empty()) {
      isl::set any = with_name(isl::set::empty(dom.space()), name);
      for (ir::EdgeId e : op.inputs) any = any.unite(edge_cond(g_.edge(e), true));
      dom = dom.intersect(any);
    }
    stmt_domain_.push_back(dom);
  }
}

void Scheduler::collect_params(const Dims& dims) {
  for (const Dim& d : dims) {
    if (std::find(params_.begin(), params_.end(), d.bound.name()) == params_.end())
      params_.push_back(d.bound.name());
  }
}

void Scheduler::add_domain(const isl::set& dom) {
  unite_into(domains_, isl::union_set(dom));
}

isl::set Scheduler::edge_cond(const Edge& e, bool at_least) {
  const OpNode& sink = g_.op(e.sink);
  isl::set s = sym::domain_to_isl(ctx_, stmt_name(sink.id), sink.domain);
  if (e.cond.defined() && checked_at_run_time(e.cond))
    return at_least ? s : with_name(isl::set::empty(s.space()), s_name(s));
  if (e.cond.defined())
    s = s.intersect(with_name(sym::condition_to_isl(ctx_, e.cond, sink.domain), s_name(s)));
  return s;
}

std::string Scheduler::s_name(const isl::set& s) {
  const char* n = isl_set_get_tuple_name(s.get());
  return n ? n : "";
}

// Where an edge is active: its cond, and for a Merge branch, no earlier branch's cond.
isl::set Scheduler::active_where(const Edge& e) {
  const OpNode& sink = g_.op(e.sink);
  isl::set where = edge_cond(e, true);
  if (sink.kind == OpKind::Merge) {
    for (ir::EdgeId prior : sink.inputs) {
      if (prior == e.id) break;
      where = where.subtract(edge_cond(g_.edge(prior), false));
    }
  }
  return where.intersect(stmt_domain_[sink.id]);
}

void Scheduler::build_dependences() {
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

void Scheduler::check_in_domain(const Edge& e, const isl::set& where, const isl::map& m) {
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
isl::set Scheduler::condition_over(const Expr& cond, const Dims& dims, const Dims& other) {
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
const isl::set& Scheduler::known_bounds_set() {
  if (!known_bounds_.is_null()) return known_bounds_;
  std::string names, constraints;
  for (const auto& [name, value] : opt_.known_bounds) {
    names += (names.empty() ? "" : ", ") + name;
    constraints += cat(constraints.empty() ? "" : " and ", name, " = ", value);
  }
  known_bounds_ = isl::set(ctx_, cat("[", names, "] -> { : ", constraints, " }"));
  return known_bounds_;
}

void Scheduler::add_dep(const isl::map& before_after) {
  isl::union_map u = to_union(before_after);
  unite_into(validity_, u);
  if (opt_.proximity) add_proximity(before_after);
}

void Scheduler::add_proximity(const isl::map& before_after) {
  isl::union_map u = to_union(before_after);
  unite_into(proximity_, u);
  // For a window read, being close to the window's upper end is what lets acting and learning
  // interleave (NOTES-isl.md): the lexmax of each sink's read set. Point reads already are.
  isl::map reads = before_after.reverse();
  if (reads.is_single_valued()) return;
  isl::map upper = reads.lexmax().reverse();
  unite_into(proximity_, to_union(upper));
}

}  // namespace tempo::schedule::detail
