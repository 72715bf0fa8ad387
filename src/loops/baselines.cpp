#include "loops/baselines.h"

#include <isl/ctx.h>
#include <isl/options.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "util/error.h"

namespace tempo::loops {

void record(Result& r, const Measurement& m) {
  r.ok = !m.timed_out;
  if (m.timed_out) r.note = "timed out (its schedule ran past RunOptions::time_limit_s)";
  r.ms = m.ms;
  r.checksum = m.checksum;
}

Result run_unoptimized(const Program& p, Evaluator& ev) {
  Result r;
  r.method = "unoptimized";
  Schedule s = Schedule::original(p);
  r.code = kernel_code(p, s);
  record(r, ev.measure(p, s));
  if (!r.ok)
    throw UserError(cat(p.name, ": the unoptimized program runs past the time limit of ",
                        ev.options().time_limit_s, " s"));
  return r;
}

namespace {

// Tiles every permutable band of two or more loops (as ppcg and Pluto do), `user` the size.
isl_schedule_node* tile_band(isl_schedule_node* node, void* user) {
  if (isl_schedule_node_get_type(node) != isl_schedule_node_band) return node;
  isl_size n = isl_schedule_node_band_n_member(node);
  if (n < 2 || isl_schedule_node_band_get_permutable(node) != isl_bool_true) return node;
  isl_ctx* ctx = isl_schedule_node_get_ctx(node);
  isl_multi_val* sizes = isl_multi_val_zero(isl_schedule_node_band_get_space(node));
  for (int k = 0; k < n; ++k)
    sizes = isl_multi_val_set_val(sizes, k, isl_val_int_from_si(ctx, *static_cast<int*>(user)));
  return isl_schedule_node_band_tile(node, sizes);
}

}  // namespace

Result run_isl_scheduler(const Program& p, const Dependences& deps, Evaluator& ev, int tile_size) {
  Result r;
  r.method = "isl";
  isl_ctx* ctx = deps.ctx();
  isl_union_set* dom = isl_union_set_read_from_str(ctx, p.domains().c_str());
  isl_schedule_constraints* sc = isl_schedule_constraints_on_domain(dom);
  sc = isl_schedule_constraints_set_validity(sc, isl_union_map_copy(deps.deps()));
  sc = isl_schedule_constraints_set_proximity(sc, isl_union_map_copy(deps.deps()));
  // As ppcg does: ask for loops that carry no dependence (coincident), outermost first.
  sc = isl_schedule_constraints_set_coincidence(sc, isl_union_map_copy(deps.deps()));
  isl_options_set_schedule_outer_coincidence(ctx, 1);
  isl_schedule* sched = isl_schedule_constraints_compute_schedule(sc);
  if (!sched) {
    r.note = "isl found no schedule";
    return r;
  }
  if (tile_size > 0) sched = isl_schedule_map_schedule_node_bottom_up(sched, tile_band, &tile_size);
  if (!sched) {
    r.note = "isl could not tile its schedule";
    return r;
  }
  isl_union_map* map = isl_schedule_get_map(sched);
  isl_schedule_free(sched);
  char* str = isl_union_map_to_str(map);
  isl_union_map_free(map);
  std::string sched_isl = str ? str : "";
  free(str);
  // Statements under one loop share it: a dependence between others does not serialize it.
  MarkFn marks = [&](int dim, const std::set<std::string>& stmts) {
    return LoopMark{deps.parallel_ok(sched_isl, dim, {stmts.begin(), stmts.end()}), 0};
  };
  r.code = kernel_code(p, sched_isl, marks);
  record(r, ev.measure(p.name + " isl " + sched_isl, [&] { return c_file(p, r.code); }));
  return r;
}

namespace {

struct Candidate {
  Schedule s;
  std::vector<std::pair<int, Action>> actions;
  double ms = 0.0;
  double checksum = 0.0;
};

std::string describe(const std::vector<std::pair<int, Action>>& actions) {
  if (actions.empty()) return "(none)";
  std::string out;
  for (const auto& [b, a] : actions) out += cat(out.empty() ? "" : " ", "S", b, ":", a.to_string());
  return out;
}

}  // namespace

Result run_beam(LoopEnv& env, Evaluator& ev, const BeamOptions& o, double reference) {
  const Program& p = env.program();
  // Shortened or killed runs stay out of `ev`'s memo, which other methods read back.
  RunOptions co = ev.options();
  if (o.candidate_reps > 0) co.reps = o.candidate_reps;
  Evaluator own(co);
  Evaluator& cand = o.candidate_reps > 0 || o.max_slowdown > 0 ? own : ev;
  Candidate start;
  start.s = Schedule::original(p);
  Measurement m0 = cand.measure(p, start.s);
  const double limit_s =
      o.max_slowdown > 0 ? 0.5 + co.reps * m0.ms * o.max_slowdown / 1e3 : 0.0;
  start.ms = m0.ms;
  start.checksum = m0.checksum;
  std::vector<Candidate> beam{start};
  Candidate best = start;
  std::set<std::string> seen{start.s.key(p)};
  for (int d = 0; d < o.depth; ++d) {
    std::vector<Candidate> legal, next;
    for (const Candidate& c : beam)
      for (int b = 0; b < static_cast<int>(p.statements.size()); ++b)
        for (const Action& a : action_space()) {
          if (a.kind == Kind::Next) continue;
          if (o.square_tiles && a.kind == Kind::Tile && a.size1 != a.size2) continue;
          std::optional<Schedule> s = apply(c.s, b, a);
          if (!s || !seen.insert(s->key(p)).second || !env.legal(*s)) continue;
          legal.push_back(Candidate{std::move(*s), c.actions});
          legal.back().actions.emplace_back(b, a);
        }
    // Compiled side by side first, then run one at a time.
    std::vector<std::string> sources;
    for (const Candidate& c : legal) sources.push_back(c_file(p, kernel_code(p, c.s)));
    precompile(sources, co, o.compile_jobs);
    for (Candidate& c : legal) {
      Measurement m = cand.measure(p, c.s, limit_s);
      if (m.timed_out || !same_checksum(m.checksum, reference)) continue;
      c.ms = m.ms;
      c.checksum = m.checksum;
      next.push_back(std::move(c));
    }
    if (next.empty()) break;
    std::sort(next.begin(), next.end(),
              [](const Candidate& x, const Candidate& y) { return x.ms < y.ms; });
    if (static_cast<int>(next.size()) > o.width) next.resize(o.width);
    if (next.front().ms < best.ms) best = next.front();
    beam = std::move(next);
  }
  Result r;
  r.method = "beam";
  r.code = kernel_code(p, best.s);
  // Timed again: the fastest of many noisy measurements is biased low.
  record(r, compile_and_run(c_file(p, r.code), ev.options()));
  r.actions = best.actions;
  if (r.ok) r.note = describe(best.actions);
  return r;
}

namespace {
const char* kPollyFlags =
    "-O3 -march=native -fopenmp -mllvm -polly -mllvm -polly-parallel -mllvm -polly-tiling";
}

bool polly_available() {
  static const bool ok = [] {
    std::string cmd = cat("echo 'int main(void){return 0;}' | clang-14 ", kPollyFlags,
                          " -x c - -o /dev/null > /dev/null 2>&1");
    return std::system(cmd.c_str()) == 0;
  }();
  return ok;
}

Result run_polly(const Program& p, const RunOptions& o) {
  Result r;
  r.method = "polly";
  if (!polly_available()) {
    r.note =
        "clang-14 with Polly and OpenMP is not installed (apt-get install clang-14 libpolly-14-dev "
        "libomp-14-dev)";
    return r;
  }
  RunOptions po = o;
  po.compiler = "clang-14";
  po.flags = kPollyFlags;
  r.code = kernel_code(p, Schedule::original(p));
  record(r, compile_and_run(c_file(p, r.code), po));
  return r;
}

}  // namespace tempo::loops
