// The scheduler's private parts, shared by the files of its steps: statements and dependences
// (statements.cpp), groups of fused ops (groups.cpp), deallocations and swaps (memory_ops.cpp),
// isl's scheduler and the AST (solve.cpp); schedule.cpp ties them together (compute_schedule).
#pragma once

#include <sys/types.h>

#include <isl/ast_build.h>
#include <isl/ctx.h>
#include <isl/map.h>
#include <isl/options.h>
#include <isl/schedule.h>
#include <isl/set.h>
#include <isl/union_map.h>
#include <isl/union_set.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "schedule/schedule.h"
#include "symbolic/isl_bridge.h"
#include "util/error.h"

namespace tempo::schedule::detail {

using ir::Edge;
using ir::EdgeId;
using ir::Graph;
using ir::OpId;
using ir::OpKind;
using ir::OpNode;
using IdMap = std::vector<std::pair<std::string, Expr>>;

inline std::string stmt_name(OpId id) {
  return cat("S", id);
}
inline std::string dealloc_name(OpId id, int out) {
  return cat("D", id, "_", out);
}

inline isl::set with_name(isl::set s, const std::string& name) {
  return isl::manage(isl_set_set_tuple_name(s.release(), name.c_str()));
}
inline isl::map with_range_name(isl::map m, const std::string& name) {
  return isl::manage(isl_map_set_tuple_name(m.release(), isl_dim_out, name.c_str()));
}
inline isl::union_map to_union(const isl::map& m) {
  return isl::union_map(m);
}

// Whether a condition (an op's or a merge branch's) is checked by the executor at run time
// instead of entering isl's domains: one with an integer division or modulo (statements.cpp).
bool checked_at_run_time(const Expr& cond);

// A set of a statement's points, printed as a condition over the op's variables (t == T - 1), or
// in isl's notation over them where that fails.
inline std::string points_str(isl::set s, const Dims& dims) {
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

inline std::vector<Expr> phi_entries(const Expr& phi) {
  if (phi.is_seq()) return phi.args();
  return {phi};
}

// The sink points (over the sink's dims) at which phi reaches outside the source's box domain
// 0 <= q < Q: a point entry outside it, or a non-empty slice that starts or ends outside it.
inline Expr outside_box(const Expr& phi, const Dims& source) {
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
inline std::vector<std::vector<OpId>> cyclic_components(const Graph& g) {
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

// Scheduling the fused program failed: the groups of more than one op that it had.
struct FuseFailed {
  std::vector<std::vector<ir::OpId>> groups;
};
// Scheduling with bounded lifetimes failed: schedule without them.
struct BoundFailed {};

// acc = acc ∪ u in place: isl's C++ unite() copies its left side, which made accumulating
// thousands of dependence pieces quadratic. u's parameters are aligned to acc's first: a union
// otherwise realigns every map of acc to the parameters of a u that names fewer (or orders them
// differently), which made it quadratic again (2 s of SAC's deallocations).
inline void unite_into(isl::union_map& acc, isl::union_map u) {
  if (acc.is_null()) {
    acc = u;
    return;
  }
  isl_union_map* aligned =
      isl_union_map_align_params(u.release(), isl_union_map_get_space(acc.get()));
  acc = isl::manage(isl_union_map_union(acc.release(), aligned));
}
inline void unite_into(isl::union_set& acc, isl::union_set u) {
  if (acc.is_null()) {
    acc = u;
    return;
  }
  isl_union_set* aligned =
      isl_union_set_align_params(u.release(), isl_union_set_get_space(acc.get()));
  acc = isl::manage(isl_union_set_union(acc.release(), aligned));
}

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

  // `alone`: ops that fusion leaves in statements of their own.
  // bound_depth: lifetimes bounded over at most this many leading dimensions (0: none); with
  // windows_outermost, outputs read through a window only over the outermost one.
  Scheduler(const Graph& g, const ScheduleOptions& opt, isl::ctx ctx, CycleSearch search,
            size_t bound_depth, const std::set<OpId>& alone = {}, bool windows_outermost = false)
      : g_(g),
        opt_(opt),
        ctx_(ctx),
        search_(search),
        bound_depth_(bound_depth),
        windows_outermost_(windows_outermost),
        alone_(alone) {}

  // Steps 1 and 2 depend on the program alone: the tries of one program (fused or not,
  // lifetimes bounded or not) take them from the first, in the same isl context.
  void analyze();
  void analyzed_as(const Scheduler& first);

  Schedule run();
  // When every try of the program must have ended (ScheduleOptions::time_limit_s).
  void set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) {
    deadline_ = deadline;
  }
  // Steps 3-5 alone: the fused groups where isl finds no schedule, nullopt where it finds one.
  std::optional<std::vector<std::vector<OpId>>> fusion_failure();

 private:
  // ---- step 1: statements ------------------------------------------------------------------
  void build_statements();

  void collect_params(const Dims& dims);

  void add_domain(const isl::set& dom);

  // The condition of an edge over the sink's statement space (universe when undefined). A
  // condition checked at run time (statements.cpp) is the universe where `at_least` (where the
  // edge may be active), else empty (where it surely is).
  isl::set edge_cond(const Edge& e, bool at_least);

  static std::string s_name(const isl::set& s);

  // Where an edge is active: its cond, and for a Merge branch, no earlier branch's cond.
  isl::set active_where(const Edge& e);

  // ---- step 2: dependences -----------------------------------------------------------------
  void build_dependences();

  void check_in_domain(const Edge& e, const isl::set& where, const isl::map& m);

  // A condition over `dims` that may also mention the bounds of `other` (e.g. a slice 0:B read by
  // an op without b): those bounds enter through unconstrained extra dims, projected out again.
  isl::set condition_over(const Expr& cond, const Dims& dims, const Dims& other);

  // { : T = 10 and I = 3 } over the known bound values (built once: check_in_domain asks at
  // every edge).
  const isl::set& known_bounds_set();
  isl::set known_bounds_;

  static std::string where_of(const OpNode& op) { return tempo::where(op.loc); }

  void add_dep(const isl::map& before_after);

  void add_proximity(const isl::map& before_after);

  // ---- step 3: groups of ops scheduled as one statement (TEMPO §4.4) -------------------------
  // Without fusion every op is its own group, named as its op. With fusion, ops joined by
  // identity edges over equal statement domains form one group, unless that would order a group
  // both before and after an op outside it (a new cycle in the graph of groups).
  void build_groups();

  static bool same_dims(const Dims& a, const Dims& b);

  // phi reads the source at the sink's own point.
  bool is_identity(const Edge& e) const;

  // The sink reads an earlier point of a dimension it shares with the source (x[t - 1]) after
  // reading the same point in every earlier dimension of the source: a loop-carried read. Returns
  // that dimension's variable (undefined if the read is not loop-carried).
  Expr carried_dim(const Edge& e) const;
  bool is_carried(const Edge& e) const { return carried_dim(e).defined(); }

  bool fusible(const Edge& e);

  int find(int x);

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
                           const Dims& dims);

  // Reads between the two groups become reads inside one statement: only same-point and
  // loop-carried ones keep it schedulable as one forward loop (a window or a read of the future
  // inside a group would order its points both ways).
  bool internal_reads_ok(int a, int b);

  void fuse_groups();
  void fuse_siblings(const std::vector<std::vector<Succ>>& succ);
  isl::schedule solve_statements();  // steps 3-5
  std::vector<std::vector<OpId>> fused_groups() const;  // those of more than one op

  // Members in a topological order of the identity reads inside the group, ties by op id. Udf
  // ops keep ascending id order where no data dependence decides, so side effects stay
  // deterministic.
  void order_members(Group& grp);

  void add_group_statements();

  // A map between op statements, renamed to the statements of their groups.
  isl::map to_groups(const isl::map& m, OpId in, OpId out);

  // A user function without outputs (progress, checkpoints) exists for its side effect at the
  // time it runs: without proximity isl may put all its points in a loop after the whole
  // program, so its reads get proximity constraints in any case.
  bool is_effect(OpId id) const;

  void add_group_dependences();

  // ---- step 4: deallocations (TEMPO §5.2) --------------------------------------------------
  // Outputs read only at the same point inside their own group are freed as the group's last
  // steps. Others get a Dealloc statement, after the producer and after every reader of the point
  // through the reversed dependence; outputs of a group whose readers are the same share one.
  void build_deallocations();

  // Swapping (TEMPO §5.2, Fig. 15b). Each late reader's group statement loads the points it reads
  // just before its ops run (so the device holds one reader's points at a time, e.g. one tile of
  // a rollout). Where every other reader runs at the same point inside the producer's group (an
  // acting step), the producer's group statement evicts each point as its last step; otherwise an
  // Evict statement of its own is ordered after the producer and those readers. The
  // deallocations already follow every reader, loads included.
  void build_swap(Group& grp, const Swap& sw);

  // Without proximity constraints nothing keeps isl from freeing in a separate loop after the
  // whole run (memory growing with the outer dimension). So where every reader of the outputs
  // runs in the same leading dimensions d0..dk as their producer (k as deep as they all share),
  // the point p is freed before the producer runs at p with dk = (the last reader's dk) + 1: a
  // rollout step before the same step of the next iteration, PPO's parameters of update u before
  // update u + 2, a window's K/V step right after the last query that reads it. Where that makes
  // the program unschedulable, it is scheduled again without these constraints. A second,
  // deeper bound (where they share at least one) times the readers that do not share all of
  // them by the points they read: PPO's acting at (i, t) and the transposed weights at (i) read
  // the parameters of (i, 0), so without it every update's parameters would live to the end of
  // the iteration.
  //
  // shared_depth: how many leading dimensions every reader of `outputs` shares with them.
  // last_readers: R[p] -> [d0..dk] of the last reader of p at `depth`.
  size_t shared_depth(const Group& grp, const std::vector<std::pair<OpId, int>>& outputs) const;
  // bound_depth_, or 1 with windows_outermost_ where a reader reads `outputs` through a window
  // (an n-step learner's rewards r[t:t + n]): such a deep bound can make the program
  // unschedulable, and then the points read one by one (the next observation) keep theirs.
  size_t bound_depth(const std::vector<std::pair<OpId, int>>& outputs) const;
  isl::map last_readers(const Group& grp, const std::vector<isl::map>& pieces, size_t depth);

  void bound_lifetime(const Group& grp, const std::string& dealloc, const isl::map& last);
  // A value made once (no dimensions) that readers in a loop read only up to a fixed iteration
  // (a parameter's initial value, read at i = 0) is freed before the readers' next iteration;
  // nothing else keeps isl from freeing it after the loop.
  void bound_once_made(const isl::set& dealloc, const std::vector<isl::map>& pieces);

  // With proximity, a reader may wait for later points of the producer than those it reads (the
  // n-step learner at t reads o[t] but needs the rewards up to t + n - 1): the last reader's
  // bound then counts the latest producer point each reader depends on through any path, so
  // that o[t] is freed before o[t + n] instead of the bound failing and every o[t] living to the
  // end of the rollout (TEMPO Fig. 23).
  //
  // latest_dependence: X[x] -> [d0..dk], the lexmax over the points of group `producer` (its
  // first `depth` coordinates) that group x depends on through reads between groups; none where
  // it depends on none. Reads that close a cycle back to a group being visited are not followed
  // (a recurrence along a dimension reads earlier points); where that misses a later point, the
  // bound is unschedulable and the usual fallback applies.
  std::optional<isl::map> latest_dependence(int x, int producer, size_t depth,
                                            std::map<int, std::optional<isl::map>>& memo,
                                            std::vector<char>& visiting);

  void add_dealloc_dep(const isl::map& before_after);

  // ---- step 5: isl's scheduler -------------------------------------------------------------
  isl::schedule solve(const isl::union_set& domains, const isl::union_map& validity,
                      const isl::union_map& proximity);

  std::optional<std::string> solve_in_child(isl_ctx* raw, isl_schedule_constraints* sc);
  std::string read_reply(int fd, pid_t pid);
  // Past a limit: what the program's size is and what to try.
  [[noreturn]] void limit_exceeded(const std::string& what);
  std::string child_error_;  // isl's message from the child that found no schedule

  void check_quota(const char* phase);

  // No schedule: find the dependence cycle that cannot be satisfied by scheduling each cyclic
  // component of the SDG alone.
  [[noreturn]] void report_cycle();

  std::string isl_last_error_msg();

  // ---- step 6: AST -------------------------------------------------------------------------
  Schedule generate(const isl::schedule& sched);

  Expr to_expr(const isl::ast_expr& e) { return sym::ast_expr_to_expr(e, ids_); }

  static StmtPtr make_seq(std::vector<StmtPtr> body);

  StmtPtr convert(const isl::ast_node& node);

  StmtPtr convert_user(const isl::ast_expr& call);

  const Graph& g_;
  const ScheduleOptions& opt_;
  isl::ctx ctx_;
  std::vector<std::string> params_;
  std::vector<isl::set> stmt_domain_;
  std::vector<isl::map> deps_;  // per edge: sink point -> source point it reads
  std::vector<int> group_of_;   // op -> group index
  std::vector<Group> groups_;
  // Reads between groups, per reading group: source group -> X[x] -> Y[y] (built when needed).
  std::vector<std::map<int, isl::map>> group_reads_;
  // latest_dependence's results per (producer group, depth), per reading group.
  std::map<std::pair<int, size_t>, std::map<int, std::optional<isl::map>>> latest_memo_;
  std::map<OpId, size_t> position_;        // op -> position among its group's members
  std::map<std::string, int> exec_stmts_;  // statement name -> group
  std::map<std::string, std::vector<std::pair<OpId, int>>> dealloc_stmts_;
  std::map<std::string, std::pair<OpId, int>> swap_stmts_;  // Evict statements of their own
  int num_statements_ = 0;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  CycleSearch search_;
  // Bounded lifetimes (bound_lifetime) over at most this many leading dimensions; 0: none.
  size_t bound_depth_;
  bool windows_outermost_;
  std::set<OpId> alone_;
  isl::union_set domains_;
  isl::union_map validity_, proximity_;
  IdMap ids_;
  std::vector<std::string> iterator_names_;
};

}  // namespace tempo::schedule::detail
