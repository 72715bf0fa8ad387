// Memory planning (TEMPO §5.2): the device memory a schedule needs, measured by running it on a
// backend that only counts bytes, and swapping chosen from that measurement so that the program
// fits a budget (CompileOptions::memory_budget).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "driver/compile.h"
#include "driver/trace.h"  // pick_until_covered
#include "runtime/executor.h"
#include "schedule/schedule.h"

namespace tempo::driver {

struct MemoryEstimate {
  int64_t peak = 0;       // device bytes held by the stores at the fullest
  int64_t host_peak = 0;  // host bytes of swapped-out values at the fullest
  std::vector<runtime::Executor::StoreBytes>
      at_peak;  // the stores at the device peak, largest first
};

// The block stores of a program under a memory budget: no blocks for outputs read only whole,
// since the planner frees, evicts and loads those point by point.
inline runtime::Blocks budget_blocks(const CompileOptions& options) {
  return options.block_stores ? runtime::Blocks::Moving : runtime::Blocks::None;
}

// Runs `schedule` on the measuring backend with these bounds.
MemoryEstimate estimate_memory(const ir::Graph& g, const schedule::Schedule& schedule,
                               const Dims& dims, const Bounds& bounds, runtime::Blocks blocks);

// The loops enclosing each Exec statement of each op in a schedule, outermost first (an op can
// run in several statements: isl peels boundary iterations).
using OpLoops = std::map<ir::OpId, std::vector<std::vector<const schedule::Stmt*>>>;
OpLoops op_loops(const schedule::Schedule& schedule);

// The edges out of `op`'s output that the schedule (its `loops`) runs late: a loop encloses the
// producer but not (some run of) the reader, so each point waits in memory until that loop ends
// (a rollout read by a learner after the acting loop). These are what swapping serves from host
// memory.
std::vector<ir::EdgeId> late_edges(const ir::Graph& g, const OpLoops& loops, ir::OpId op,
                                   int output);

// The largest-first policy (SwapPolicy): the candidates by bytes at the peak, picked until the
// excess is covered. Every candidate waits across a whole loop, so the largest is also the one
// whose eviction frees the most for longest.
std::vector<size_t> largest_first(const std::vector<SwapCandidate>& candidates, int64_t excess);

// Schedules the graph under options.memory_budget, with proximity for deallocations and swaps
// (ScheduleOptions::memory_proximity): estimates the peak; while it is over the
// budget, swaps what `options.swap_policy` (default largest_first) picks among the outputs read
// late and schedules again. Returns the final schedule; `so` ends with the swaps. Throws a
// UserError naming the largest stores at the peak when the budget cannot be met. `log` receives
// a line per estimate and per swap (verbose output).
schedule::Schedule schedule_within_budget(const ir::Graph& g, schedule::ScheduleOptions& so,
                                          const Dims& dims, const Bounds& bounds,
                                          const CompileOptions& options,
                                          const std::function<void(const std::string&)>& log);

std::string bytes_str(int64_t bytes);  // "12.3 MiB"

// Writes a memory timeline: CSV (step, statement, op, device bytes, host bytes) and an SVG plot
// next to it (path with .svg). At most ~20000 rows: longer runs keep each bucket's maximum.
void write_memory_timeline(const std::string& path, const ir::Graph& g,
                           const std::vector<runtime::Executor::MemoryEvent>& events);

}  // namespace tempo::driver
