// Polyhedral scheduling of an SDG with isl (TEMPO §5.1-5.3): compute_schedule runs the Scheduler's
// steps (scheduler.h; each step in its own file) and falls back from fused to unfused statements
// and from bounded to unbounded lifetimes where isl finds no schedule.
#include "schedule/scheduler.h"

namespace tempo::schedule {

namespace detail {

Schedule Scheduler::run() {
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
