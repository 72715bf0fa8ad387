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

std::string stmt_name(OpId id) { return cat("S", id); }
std::string dealloc_name(OpId id, int out) { return cat("D", id, "_", out); }

isl::set with_name(isl::set s, const std::string& name) {
  return isl::manage(isl_set_set_tuple_name(s.release(), name.c_str()));
}
isl::map with_range_name(isl::map m, const std::string& name) {
  return isl::manage(isl_map_set_tuple_name(m.release(), isl_dim_out, name.c_str()));
}
isl::union_map to_union(const isl::map& m) { return isl::union_map(m); }

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

class Scheduler {
 public:
  Scheduler(const Graph& g, const ScheduleOptions& opt, isl::ctx ctx)
      : g_(g), opt_(opt), ctx_(ctx) {}

  Schedule run() {
    build_statements();
    build_dependences();
    if (opt_.deallocate) build_deallocations();
    isl::schedule sched = solve(domains_, validity_, proximity_);
    if (sched.is_null()) report_cycle();
    return generate(sched);
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
      add_domain(dom);
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
      add_dep(m.reverse());
    }
  }

  void check_in_domain(const Edge& e, const isl::set& where, const isl::map& m) {
    const OpNode& sink = g_.op(e.sink);
    const OpNode& source = g_.op(e.source);
    isl::set outside = where.intersect(
        with_name(condition_over(outside_box(e.phi, source.domain), sink.domain, source.domain),
                  stmt_name(sink.id)));
    // Inside the box but where the source does not execute (its cond).
    isl::map unexecuted = isl::manage(isl_map_subtract_range(m.copy(), stmt_domain_[source.id].copy()));
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
    return isl::manage(isl_set_project_out(s.release(), isl_dim_set,
                                           static_cast<unsigned>(dims.size()), extra));
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

  // ---- step 3: deallocations (TEMPO §5.2) --------------------------------------------------
  void build_deallocations() {
    std::set<std::pair<OpId, int>> retained(opt_.retained.begin(), opt_.retained.end());
    for (const OpNode& op : g_.ops()) {
      if (op.kind == OpKind::Udf && op.outputs.empty()) continue;
      for (int out = 0; out < static_cast<int>(op.outputs.size()); ++out) {
        if (retained.count({op.id, out})) continue;
        std::string name = dealloc_name(op.id, out);
        isl::set dom = with_name(stmt_domain_[op.id], name);
        add_domain(dom);
        // After the producer...
        isl::map produced = with_range_name(stmt_domain_[op.id].identity(), name);
        add_dealloc_dep(produced);
        // ...and after every reader of that point.
        for (ir::EdgeId eid : g_.out_edges(op.id)) {
          const Edge& e = g_.edge(eid);
          if (e.source_output != out) continue;
          add_dealloc_dep(with_range_name(deps_[eid], name));
        }
      }
    }
  }

  void add_dealloc_dep(const isl::map& before_after) {
    isl::union_map u = to_union(before_after);
    validity_ = validity_.is_null() ? u : validity_.unite(u);
    if (opt_.proximity) proximity_ = proximity_.is_null() ? u : proximity_.unite(u);
  }

  // ---- step 4: isl's scheduler -------------------------------------------------------------
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

  // ---- step 5: AST -------------------------------------------------------------------------
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
    if (!node) throw InternalError(cat("schedule: isl AST generation failed: ", isl_last_error_msg()));
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
    auto s = std::make_shared<Stmt>();
    if (name[0] == 'S') {
      s->kind = StmtKind::Exec;
      s->op = std::stoi(name.substr(1));
    } else {
      TEMPO_ASSERT(name[0] == 'D', "unknown statement ", name);
      auto us = name.find('_');
      s->kind = StmtKind::Dealloc;
      s->op = std::stoi(name.substr(1, us - 1));
      s->output = std::stoi(name.substr(us + 1));
    }
    for (unsigned k = 1; k < op.n_arg(); ++k) s->point.push_back(to_expr(op.arg(k)));
    TEMPO_ASSERT(s->point.size() == g_.op(s->op).domain.size(), "point arity of ", name);
    return s;
  }

  const Graph& g_;
  const ScheduleOptions& opt_;
  isl::ctx ctx_;
  std::vector<std::string> params_;
  std::vector<isl::set> stmt_domain_;
  std::vector<isl::map> deps_;  // per edge: sink point -> source point it reads
  isl::union_set domains_;
  isl::union_map validity_, proximity_;
  IdMap ids_;
  std::vector<std::string> iterator_names_;
};

}  // namespace

Schedule compute_schedule(const Graph& g, const ScheduleOptions& options) {
  OwnedCtx owned;
  try {
    Scheduler s(g, options, isl::ctx(owned.raw));
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

}  // namespace tempo::schedule
