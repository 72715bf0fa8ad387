// Polyhedral scheduling of an SDG with isl (TEMPO §5.1-5.3).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/sdg.h"
#include "schedule/ast.h"

namespace tempo::schedule {

// A swapped op output (TEMPO §5.2, Fig. 15b): each point is evicted to host memory after its
// producer and the readers not listed here, and loaded back before the `late` readers (edges out
// of the op) that read it; it is freed on the device after them as before.
struct Swap {
  ir::OpId op = -1;
  int output = 0;
  std::vector<ir::EdgeId> late;
  // Late readers that read the host copies where they are instead of loading them (a subset of
  // `late`): gathers, whose selected elements alone move to the device, and views read only by
  // gathers, whose outputs stay in host memory (`on_host`).
  std::vector<ir::EdgeId> host_reads;
  std::vector<ir::OpId> on_host;
};

struct ScheduleOptions {
  // Op outputs that must outlive the run (read back by the user): no deallocation is scheduled.
  std::vector<std::pair<ir::OpId, int>> retained;
  // Bound values known at compile time (name, value): reads are checked against these values, so
  // that e.g. x[0:8] is valid when T = 10 even though it is not for every T. The schedule itself
  // stays parametric.
  std::vector<std::pair<std::string, int64_t>> known_bounds;
  // isl scheduler options (see NOTES-isl.md). Measured on our programs with deallocations
  // scheduled (tests/schedule): isl's clustering (false) fuses acting, learning and freeing
  // (n-step REINFORCE interleaves; counters free each step); whole-component scheduling (true)
  // splits deallocations of loop-carried state into separate loops (memory grows with I).
  bool whole_component = false;
  bool proximity = true;  // add proximity constraints (TEMPO §5.1)
  // Proximity for deallocations and swaps only (implied by `proximity`): frees each point soon
  // after its last reader, at a fraction of full proximity's scheduling time.
  bool memory_proximity = false;
  bool deallocate = true;  // schedule deallocations (TEMPO §5.2)
  // Schedule static islands as one statement each (TEMPO §4.4): ops joined by identity reads
  // over the same domain and condition run back to back at each point, in data order, and their
  // temporaries read only there are freed right after. isl's work grows fast with the number of
  // statements; this keeps it small. false: one statement per op (and per freed output).
  bool fuse = true;
  std::vector<Swap> swaps;               // needs `deallocate`
  long max_isl_operations = 20'000'000;  // bound on isl work; exceeding it is a clear error
  // Run isl's scheduler in a forked child process (its ILPs' ~100 MiB stay out of this process;
  // a fault in isl is an error), in this process where no child can be started or when false.
  bool solve_in_child = true;
  // Bounds on isl's child: the memory it may take beyond what it inherits (0: half the machine's
  // physical memory), and the seconds every try of one compute_schedule may take together (0:
  // none). Going past either is a UserError naming the program's size, instead of the machine
  // swapping or an OOM kill of this process, or a wait of many minutes.
  int64_t child_memory_limit = 0;
  double time_limit_s = 300;
  // Where computed schedules are kept and read back (schedule/cache.h); empty: no cache.
  std::string cache_dir;
};

// The child's memory limit that child_memory_limit = 0 stands for.
int64_t default_child_memory_limit();

// Builds validity constraints from every edge (source before sink), proximity constraints,
// a Dealloc statement per stored op output (after its producer and after the last consumer
// through the reversed dependence), computes the schedule, and generates the AST. With `fuse`,
// statements are groups of ops (expanded into a Seq of Exec, then Dealloc, in the AST) and
// outputs of a group with the same readers share a deallocation statement; where the fused
// program has no schedule, the unfused one is scheduled instead. Each swap adds an Evict and a
// Load statement over the producer's domain, ordered Producer -> Evict -> Load -> late readers,
// the other readers before Evict, and the deallocation after Load.
// Errors: an edge reading outside its source's domain (UserError naming the sink RT, its line and
// the offending points), an unsatisfiable dependence cycle (UserError naming the ops involved).
Schedule compute_schedule(const ir::Graph& g, const ScheduleOptions& options);

}  // namespace tempo::schedule
