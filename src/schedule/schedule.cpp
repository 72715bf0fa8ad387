// Polyhedral scheduling of an SDG with isl (TEMPO §5.1-5.3): compute_schedule runs the Scheduler's
// steps (scheduler.h; each step in its own file) and falls back from fused to unfused statements
// and from bounded to unbounded lifetimes where isl finds no schedule.
#include <unistd.h>

#include "schedule/cache.h"
#include "schedule/scheduler.h"

namespace tempo::schedule {

namespace detail {

void Scheduler::analyze() {
  build_statements();
  build_dependences();
}

void Scheduler::analyzed_as(const Scheduler& first) {
  params_ = first.params_;
  stmt_domain_ = first.stmt_domain_;
  deps_ = first.deps_;
}

isl::schedule Scheduler::solve_statements() {
  build_groups();
  add_group_statements();
  add_group_dependences();
  if (opt_.deallocate) build_deallocations();
  return solve(domains_, validity_, proximity_);
}

std::optional<std::vector<std::vector<OpId>>> Scheduler::fusion_failure() {
  if (solve_statements().is_null()) return fused_groups();
  return std::nullopt;
}

Schedule Scheduler::run() {
  isl::schedule sched = solve_statements();
  if (sched.is_null()) {
    if (bound_depth_ > 0) throw BoundFailed();
    // Fusion only adds orderings inside a group; where those make the program unschedulable,
    // scheduling it unfused finds a schedule or reports the cycle over the RTs.
    if (opt_.fuse) throw FuseFailed{fused_groups()};
    report_cycle();
  }
  Schedule out = generate(sched);
  out.num_statements = num_statements_;
  out.fused = opt_.fuse;
  out.bounded = bound_depth_ > 0;
  if (opt_.deallocate)
    for (const Swap& sw : opt_.swaps) {
      out.swapped.emplace_back(sw.op, sw.output);
      out.on_host.insert(out.on_host.end(), sw.on_host.begin(), sw.on_host.end());
    }
  return out;
}

}  // namespace detail

namespace {

using detail::BoundFailed;
using detail::FuseFailed;
using detail::Scheduler;
using ir::Graph;

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

// The tries of scheduling one program: fused (two cycle searches, then with a group
// dissolved), then unfused; each with lifetimes bounded deep, then outermost, then not at all.
// They share one isl context and the program's statements and dependences.
class Tries {
 public:
  Tries(const Graph& g, const ScheduleOptions& options)
      : g_(g),
        options_(options),
        first_(g, options, isl::ctx(owned_.raw), Scheduler::CycleSearch::Careful, 0) {
    if (options.time_limit_s > 0)
      deadline_ = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(options.time_limit_s));
    guard([&] { first_.analyze(); });
  }

  Schedule fused_or_unfused(const ScheduleOptions& options);

 private:
  using Groups = std::vector<std::vector<ir::OpId>>;  // the members of fused groups
  Schedule bounded(const ScheduleOptions& options, Scheduler::CycleSearch search,
                   const std::set<ir::OpId>& alone = {});
  std::optional<std::set<ir::OpId>> group_to_dissolve(const ScheduleOptions& options,
                                                      Groups groups);
  std::optional<Groups> unschedulable(const ScheduleOptions& options,
                                      const std::set<ir::OpId>& alone,
                                      Scheduler::CycleSearch search);
  Schedule attempt(const ScheduleOptions& options, Scheduler::CycleSearch search,
                   size_t bound_depth, const std::set<ir::OpId>& alone,
                   bool windows_outermost = false) {
    return guard([&] {
      Scheduler s(g_, options, isl::ctx(owned_.raw), search, bound_depth, alone,
                  windows_outermost);
      prepare(s);
      return s.run();
    });
  }
  void prepare(Scheduler& s) const {
    s.analyzed_as(first_);
    s.set_deadline(deadline_);
  }
  // isl's exceptions as Tempo's errors.
  template <typename F>
  auto guard(F&& f) -> decltype(f());

  const Graph& g_;
  const ScheduleOptions& options_;
  OwnedCtx owned_;
  Scheduler first_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
};

template <typename F>
auto Tries::guard(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const isl::exception& e) {
    if (dynamic_cast<const isl::exception_quota*>(&e) ||
        isl_ctx_last_error(owned_.raw) == isl_error_quota)
      throw UserError(cat("schedule: exceeded the bound of ", options_.max_isl_operations,
                          " isl operations (ScheduleOptions::max_isl_operations); the program's ",
                          "dependences are too complex to schedule within it"));
    throw InternalError(cat("schedule: isl failed: ", e.what()));
  }
}

Schedule Tries::fused_or_unfused(const ScheduleOptions& options) {
  if (!options.fuse) return bounded(options, Scheduler::CycleSearch::Careful);
  // The optimistic search fuses more (smaller, faster schedules) but may create a cycle, e.g.
  // through a rollout read whole after a step-to-step carry; the careful one rarely does.
  Groups groups;
  for (auto search : {Scheduler::CycleSearch::Optimistic, Scheduler::CycleSearch::Careful}) {
    try {
      return bounded(options, search);
    } catch (const FuseFailed& failed) {
      groups = failed.groups;
    }
  }
  if (auto alone = group_to_dissolve(options, std::move(groups)))
    return bounded(options, Scheduler::CycleSearch::Careful, *alone);
  ScheduleOptions unfused = options;
  unfused.fuse = false;
  return bounded(unfused, Scheduler::CycleSearch::Careful);
}

Schedule Tries::bounded(const ScheduleOptions& options, Scheduler::CycleSearch search,
                        const std::set<ir::OpId>& alone) {
  // Lifetimes bounded over every dimension the readers share; then so except for the outputs
  // read through windows, bounded over the outermost one only (a window read across an inner
  // dimension can make the deeper bound unschedulable: isl gives each statement one affine
  // schedule); then every output over the outermost one; then not at all.
  if (options.deallocate) {
    const size_t deep = std::numeric_limits<size_t>::max();
    for (auto [depth, windows_outermost] :
         {std::pair{deep, false}, std::pair{deep, true}, std::pair{size_t{1}, false}}) {
      try {
        return attempt(options, search, depth, alone, windows_outermost);
      } catch (const BoundFailed&) {
      }
      // Where fusion makes the data dependences unschedulable, no lifetime bound helps: checked
      // once, without deallocations (a fraction of a full try).
      if (depth > 1 && !windows_outermost && options.fuse)
        if (auto failed = unschedulable(options, alone, search)) throw FuseFailed{*failed};
    }
  }
  return attempt(options, search, 0, alone);
}

// The careful search misses a cycle closed by a read of the future after a loop-carried one
// (isl finds it); scheduling every op alone instead costs isl minutes on an unoptimized RL
// program (over a thousand statements). So fused groups are dissolved, smallest first: a
// binary search finds the shortest run of them whose ops alone make the data dependences
// schedulable, and the last group of that run alone is kept where it suffices. Each try
// schedules the program without deallocations, a fraction of a second.
std::optional<std::set<ir::OpId>> Tries::group_to_dissolve(const ScheduleOptions& options,
                                                           Groups groups) {
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.size() < b.size(); });
  auto alone_in = [&](size_t from, size_t to) {
    std::set<ir::OpId> alone;
    for (size_t k = from; k < to; ++k) alone.insert(groups[k].begin(), groups[k].end());
    return alone;
  };
  auto schedulable = [&](const std::set<ir::OpId>& alone) {
    return !unschedulable(options, alone, Scheduler::CycleSearch::Careful);
  };
  size_t lo = 0, hi = groups.size();  // the first hi groups alone suffice (checked last); lo do not
  while (hi - lo > 1) {
    const size_t mid = (lo + hi) / 2;
    (schedulable(alone_in(0, mid)) ? hi : lo) = mid;
  }
  std::set<ir::OpId> last = alone_in(hi - 1, hi);
  if (schedulable(last)) return last;
  if (schedulable(alone_in(0, hi))) return alone_in(0, hi);
  return std::nullopt;
}

// Whether the data dependences alone fail to schedule, fused with these ops left alone: the
// fused groups of the failure.
std::optional<Tries::Groups> Tries::unschedulable(const ScheduleOptions& options,
                                                  const std::set<ir::OpId>& alone,
                                                  Scheduler::CycleSearch search) {
  ScheduleOptions data_only = options;
  data_only.deallocate = false;
  data_only.swaps.clear();
  return guard([&] {
    Scheduler s(g_, data_only, isl::ctx(owned_.raw), search, 0, alone);
    prepare(s);
    try {
      return s.fusion_failure();
    } catch (const FuseFailed& failed) {  // a same-point cycle inside a group
      return std::optional<Groups>(failed.groups);
    }
  });
}

}  // namespace

int64_t default_child_memory_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || size <= 0) return int64_t{8} << 30;
  return static_cast<int64_t>(pages) * size / 2;
}

Schedule compute_schedule(const Graph& g, const ScheduleOptions& options) {
  if (g.num_ops() == 0) return Schedule();  // nothing to run (e.g. nothing retained)
  if (options.cache_dir.empty()) return Tries(g, options).fused_or_unfused(options);
  const ScheduleCache cache(options.cache_dir, g, options);
  if (std::optional<Schedule> cached = cache.load()) return std::move(*cached);
  Schedule s = Tries(g, options).fused_or_unfused(options);
  cache.store(s);
  return s;
}

}  // namespace tempo::schedule
