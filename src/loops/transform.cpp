#include "loops/transform.h"

#include <isl/ctx.h>
#include <isl/map.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>

#include <algorithm>
#include <set>

#include "symbolic/isl_bridge.h"
#include "util/error.h"

namespace tempo::loops {
namespace {

std::string tuple(const Statement& s) {
  std::string out = s.name + "[";
  for (size_t k = 0; k < s.vars.size(); ++k) out += (k ? "," : "") + s.vars[k];
  return out + "]";
}

size_t max_rows(const Schedule& s) {
  size_t n = 0;
  for (const auto& r : s.rows) n = std::max(n, r.size());
  return n;
}

// Statements under the same loop as `stmt` at `level`: equal scalar rows up to that loop.
std::set<size_t> group(const Schedule& s, size_t stmt, int level) {
  std::set<size_t> out;
  size_t last = 2 * static_cast<size_t>(level) + 1;
  for (size_t t = 0; t < s.rows.size(); ++t) {
    if (s.rows[t].size() <= last) continue;
    bool same = true;
    for (size_t m = 0; m < last && same; m += 2) same = s.rows[t][m].expr == s.rows[stmt][m].expr;
    if (same) out.insert(t);
  }
  return out;
}

isl_union_map* parse_umap(isl_ctx* ctx, const std::string& str) {
  isl_union_map* u = isl_union_map_read_from_str(ctx, str.c_str());
  if (!u) internal_error(cat("isl could not parse `", str, "`"));
  return u;
}

}  // namespace

Schedule Schedule::original(const Program& p) {
  Schedule s;
  for (const Statement& st : p.statements) {
    std::vector<Row> rows;
    for (const std::string& e : st.schedule) rows.push_back({e});
    s.rows.push_back(std::move(rows));
  }
  return s;
}

std::string Schedule::to_isl(const Program& p) const {
  size_t n = max_rows(*this);
  std::string out = "{ ";
  for (size_t t = 0; t < rows.size(); ++t) {
    out += (t ? "; " : "") + tuple(p.statements[t]) + " -> [";
    for (size_t k = 0; k < n; ++k)
      out += (k ? ", " : "") + (k < rows[t].size() ? rows[t][k].expr : std::string("0"));
    out += "]";
  }
  return out + " }";
}

std::string Schedule::key(const Program& p) const {
  std::string marks;
  for (size_t t = 0; t < rows.size(); ++t)
    for (size_t k = 0; k < rows[t].size(); ++k) {
      if (rows[t][k].parallel) marks += cat(" P", t, ".", k);
      if (rows[t][k].unroll) marks += cat(" U", t, ".", k, "=", rows[t][k].unroll);
    }
  return p.name + " " + to_isl(p) + marks;
}

std::string Action::to_string() const {
  switch (kind) {
    case Kind::Interchange:
      return cat("interchange(", level, ",", level2, ")");
    case Kind::Reversal:
      return cat("reverse(", level, ")");
    case Kind::Skew:
      return cat("skew(", level, ",", level2, ",", factor, ")");
    case Kind::Tile:
      if (size3) return cat("tile(", level, ",", level + 1, ",", level2, ",", size1, "x", size2, "x", size3, ")");
      return cat("tile(", level, ",", level2, ",", size1, "x", size2, ")");
    case Kind::Parallelize:
      return cat("parallelize(", level, ")");
    case Kind::Unroll:
      return cat("unroll(innermost,", factor, ")");
    case Kind::Next:
      return "next";
  }
  return "?";
}

const std::vector<Action>& action_space() {
  static const std::vector<Action> space = [] {
    std::vector<Action> v;
    for (int i = 0; i < kMaxLevels; ++i)
      for (int j = i + 1; j < kMaxLevels; ++j) v.push_back({Kind::Interchange, i, j});
    for (int i = 0; i < kMaxLevels; ++i) v.push_back({Kind::Reversal, i, i});
    for (int i = 0; i + 1 < kMaxLevels; ++i)
      for (int f : {1, 2}) v.push_back({Kind::Skew, i, i + 1, f});
    for (int i = 0; i + 1 < kMaxLevels; ++i)
      for (int x : {32, 64, 128})
        for (int y : {32, 64, 128}) v.push_back({Kind::Tile, i, i + 1, 0, x, y});
    for (int i = 0; i < kMaxLevels; ++i) v.push_back({Kind::Parallelize, i, i});
    for (int f : {4, 8, 16}) v.push_back({Kind::Unroll, 0, 0, f});
    // 3-D tiles (cubes) after the rest: the earlier actions keep their indices.
    for (int i = 0; i + 2 < kMaxLevels; ++i)
      for (int x : {32, 64, 128}) v.push_back({Kind::Tile, i, i + 2, 0, x, x, x});
    v.push_back({Kind::Next});
    return v;
  }();
  return space;
}

int num_actions() {
  return static_cast<int>(action_space().size());
}

namespace {
// The parentheses of `e` pair up.
bool balanced(const std::string& e) {
  int depth = 0;
  for (char c : e) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (depth < 0) return false;
  }
  return depth == 0;
}
}  // namespace

std::optional<Schedule> apply(const Schedule& s, int stmt, const Action& a) {
  if (stmt < 0 || stmt >= static_cast<int>(s.rows.size())) return std::nullopt;
  if (a.kind == Kind::Next) return s;
  int n = s.loops(stmt);
  int lo = a.level, hi = a.level2;
  if (a.kind == Kind::Unroll) lo = hi = n - 1;
  if (lo < 0 || hi >= n || lo > hi) return std::nullopt;
  std::set<size_t> g = group(s, stmt, hi);
  // Transforming two loops of which only the inner one is shared would split the outer loop.
  if (lo != hi && group(s, stmt, lo) != g) return std::nullopt;
  Schedule out = s;
  size_t ri = 2 * lo + 1, rj = 2 * hi + 1;
  for (size_t t : g) {
    std::vector<Row>& r = out.rows[t];
    switch (a.kind) {
      case Kind::Interchange:
        // A parallel loop moves out, never in: inside another loop it would start a parallel
        // region per iteration of that loop (measured: 0.03x on blur).
        if (r[ri].parallel) return std::nullopt;
        std::swap(r[ri], r[rj]);
        break;
      case Kind::Reversal: {
        // Reversing twice gives the loop back, with its key.
        std::string& e = r[ri].expr;
        const bool reversed = e.size() > 3 && e.compare(0, 2, "-(") == 0 && e.back() == ')' &&
                              balanced(e.substr(2, e.size() - 3));
        e = reversed ? e.substr(2, e.size() - 3) : "-(" + e + ")";
        break;
      }
      case Kind::Skew:
        r[rj].expr = cat("(", r[rj].expr, ") + ", a.factor, "*(", r[ri].expr, ")");
        break;
      case Kind::Parallelize:
        if (r[ri].parallel) return std::nullopt;
        r[ri].parallel = true;
        break;
      case Kind::Unroll:
        // Once per loop: changing the factor again would only let an agent mark time.
        if (r[ri].unroll != 0) return std::nullopt;
        r[ri].unroll = a.factor;
        break;
      case Kind::Tile: {
        // Once per statement: tiling again would tile the tile loops (8 to 64 iterations at
        // the sizes offered), a new schedule key for nearly the same code.
        for (const Row& row : r)
          if (row.expr.find("floor(") != std::string::npos) return std::nullopt;
        std::vector<int> sizes = {a.size1, a.size2};
        if (a.size3) sizes.push_back(a.size3);
        if (static_cast<int>(sizes.size()) != hi - lo + 1) return std::nullopt;
        // The tile loops, then the point loops; a parallel loop's mark goes to its tile loop.
        std::vector<Row> nr(r.begin(), r.begin() + ri);
        for (size_t k = 0; k < sizes.size(); ++k) {
          nr.push_back({cat("floor((", r[ri + 2 * k].expr, ")/", sizes[k], ")"),
                        r[ri + 2 * k].parallel});
          nr.push_back({"0"});
        }
        nr.insert(nr.end(), r.begin() + ri, r.end());
        for (size_t k = 0; k < sizes.size(); ++k) nr[ri + 2 * sizes.size() + 2 * k].parallel = false;
        r = std::move(nr);
        break;
      }
      case Kind::Next:
        break;
    }
  }
  return out;
}

Dependences::Dependences(const Program& p) : p_(p), isl_(std::make_unique<sym::IslContext>()) {
  isl_ctx* ctx = isl_->get();
  isl_union_set* dom = isl_union_set_read_from_str(ctx, p.domains().c_str());
  isl_union_map* r =
      isl_union_map_intersect_domain(parse_umap(ctx, p.reads()), isl_union_set_copy(dom));
  isl_union_map* w =
      isl_union_map_intersect_domain(parse_umap(ctx, p.writes()), isl_union_set_copy(dom));
  isl_union_map* sched =
      isl_union_map_intersect_domain(parse_umap(ctx, Schedule::original(p).to_isl(p)), dom);
  // Pairs of instances touching one element, at least one of them writing.
  isl_union_map* raw = isl_union_map_apply_range(isl_union_map_copy(w),
                                                 isl_union_map_reverse(isl_union_map_copy(r)));
  isl_union_map* war = isl_union_map_apply_range(r, isl_union_map_reverse(isl_union_map_copy(w)));
  isl_union_map* w_rev = isl_union_map_reverse(isl_union_map_copy(w));
  isl_union_map* waw = isl_union_map_apply_range(w, w_rev);
  isl_union_map* conflicts = isl_union_map_union(isl_union_map_union(raw, war), waw);
  isl_union_map* before = isl_union_map_lex_lt_union_map(isl_union_map_copy(sched), sched);
  deps_ = isl_union_map_coalesce(isl_union_map_intersect(conflicts, before));
  if (!deps_) internal_error(cat("dependence analysis of ", p.name, " failed"));
}

Dependences::~Dependences() {
  isl_union_map_free(deps_);  // before its context
}

isl_ctx* Dependences::ctx() const {
  return isl_->get();
}

bool Dependences::legal(const Schedule& s, bool same_order) const {
  std::string str = s.to_isl(p_);
  if (!same_order && !order_ok(str, max_rows(s))) return false;
  std::set<int> dims;
  for (const auto& rows : s.rows)
    for (size_t k = 0; k < rows.size(); ++k)
      if (rows[k].parallel) dims.insert(static_cast<int>(k));
  for (int d : dims) {
    // The statements inside the parallel loops at d: those under the same tree position.
    std::vector<std::string> among;
    for (size_t t = 0; t < s.rows.size(); ++t) {
      bool inside = false;
      for (size_t f = 0; f < s.rows.size() && !inside; ++f) {
        if (static_cast<int>(s.rows[f].size()) <= d || !s.rows[f][d].parallel) continue;
        if (static_cast<int>(s.rows[t].size()) <= d) continue;
        inside = true;
        for (int m = 0; m < d && inside; m += 2) inside = s.rows[t][m].expr == s.rows[f][m].expr;
      }
      if (inside) among.push_back(p_.statements[t].name);
    }
    if (!parallel_ok(str, d, among)) return false;
  }
  return true;
}

bool Dependences::order_ok(const std::string& schedule_isl, int rows) const {
  isl_union_map* sched = parse_umap(ctx(), schedule_isl);
  // The dependences in schedule time (every statement maps into one space of `rows`
  // dimensions): a violation is a source at or after its sink. Mapping the few dependence
  // pieces is much cheaper than comparing the schedule with itself over whole domains.
  isl_union_map* times = isl_union_map_apply_range(
      isl_union_map_apply_domain(isl_union_map_copy(deps_), isl_union_map_copy(sched)), sched);
  isl_map* ge = isl_map_lex_ge(isl_space_set_alloc(ctx(), 0, static_cast<unsigned>(rows)));
  isl_union_map* violated = isl_union_map_intersect(times, isl_union_map_from_map(ge));
  isl_bool empty = isl_union_map_is_empty(violated);
  isl_union_map_free(violated);
  if (empty < 0) internal_error("isl failed checking a schedule's legality");
  return empty;
}

bool Dependences::parallel_ok(const std::string& schedule_isl, int dim,
                              const std::vector<std::string>& among) const {
  isl_union_map* sched = parse_umap(ctx(), schedule_isl);
  isl_union_map* deps = isl_union_map_copy(deps_);
  if (!among.empty()) {
    std::string set = "{ ";
    for (size_t k = 0; k < among.size(); ++k)
      set += (k ? "; " : "") + tuple(p_.statement(among[k]));
    set += " }";
    isl_union_set* u = isl_union_set_read_from_str(ctx(), set.c_str());
    deps = isl_union_map_intersect_range(
        isl_union_map_intersect_domain(deps, isl_union_set_copy(u)), u);
  }
  isl_union_map* times =
      isl_union_map_apply_range(isl_union_map_apply_domain(deps, isl_union_map_copy(sched)), sched);
  // The schedule's length: every statement maps into one space.
  int n = 0;
  isl_union_map_foreach_map(
      times,
      [](isl_map* m, void* user) -> isl_stat {
        *static_cast<int*>(user) = isl_map_dim(m, isl_dim_in);
        isl_map_free(m);
        return isl_stat_ok;
      },
      &n);
  if (n == 0) {  // no dependences at all
    isl_union_map_free(times);
    return true;
  }
  std::string in, out, cond;
  for (int k = 0; k < n; ++k) {
    in += cat(k ? "," : "", "c", k);
    out += cat(k ? "," : "", "e", k);
    if (k < dim) cond += cat("c", k, " = e", k, " and ");
  }
  cond += cat("(c", dim, " < e", dim, " or c", dim, " > e", dim, ")");
  isl_union_map* carried = parse_umap(ctx(), cat("{ [", in, "] -> [", out, "] : ", cond, " }"));
  isl_union_map* bad = isl_union_map_intersect(times, carried);
  isl_bool empty = isl_union_map_is_empty(bad);
  isl_union_map_free(bad);
  if (empty < 0) internal_error("isl failed checking a parallel loop");
  return empty;
}

LoopEnv::LoopEnv(Program p)
    : deps_(std::make_shared<Dependences>(p)), schedule_(Schedule::original(p)) {
  visited_.insert(schedule_.key(program()));
}

void LoopEnv::reset() {
  schedule_ = Schedule::original(program());
  branch_ = 0;
  done_ = false;
  history_.clear();
  visited_ = {schedule_.key(program())};
}

bool LoopEnv::legal(const Schedule& s, bool same_order) {
  if (!memoize_) {
    ++stats_.legality_misses;
    return deps_->legal(s, same_order);
  }
  std::string key = s.key(program());
  auto it = legal_memo_.find(key);
  if (it != legal_memo_.end()) {
    ++stats_.legality_hits;
    return it->second;
  }
  ++stats_.legality_misses;
  bool ok = deps_->legal(s, same_order);
  legal_memo_.emplace(key, ok);
  return ok;
}

std::optional<Schedule> LoopEnv::try_action(const Action& a) {
  if (done_) return std::nullopt;
  std::optional<Schedule> s = apply(schedule_, branch_, a);
  if (!s || a.kind == Kind::Next) return s;
  if (visited_.count(s->key(program()))) return std::nullopt;
  // Unrolling changes no order and no parallel loop: legal as the current schedule is.
  if (a.kind == Kind::Unroll) return s;
  if (memoize_ && a.kind == Kind::Tile &&
      (a.size1 != 32 || a.size2 != 32 || (a.size3 != 0 && a.size3 != 32))) {
    // Part of the canonical key: a tiling legal with the smallest sizes offered (32) is legal
    // with larger ones (fewer tile boundaries for a dependence to cross backwards), so the
    // nine sizes of a loop pair cost one check. A larger tile judged illegal this way may be
    // legal (degenerate, past the loop's extent): the mask only errs on the safe side.
    Action small = a;
    small.size1 = small.size2 = 32;
    if (small.size3) small.size3 = 32;
    std::optional<Schedule> r = apply(schedule_, branch_, small);
    if (!r || !legal(*r)) return std::nullopt;
    return s;
  }
  // Parallelizing changes no order: the current schedule's is legal.
  if (!legal(*s, a.kind == Kind::Parallelize)) return std::nullopt;
  return s;
}

std::vector<bool> LoopEnv::legal_mask() {
  std::vector<bool> mask;
  for (const Action& a : action_space()) mask.push_back(try_action(a).has_value());
  return mask;
}

bool LoopEnv::step(int index) {
  if (index < 0 || index >= num_actions())
    throw UserError(cat("loop action ", index, " is outside 0..", num_actions() - 1));
  const Action& a = action_space()[index];
  std::optional<Schedule> s = try_action(a);
  if (!s) return false;
  history_.push_back(a);
  if (a.kind == Kind::Next) {
    if (++branch_ >= static_cast<int>(schedule_.rows.size())) done_ = true;
    return true;
  }
  schedule_ = std::move(*s);
  visited_.insert(schedule_.key(program()));
  return true;
}

}  // namespace tempo::loops
