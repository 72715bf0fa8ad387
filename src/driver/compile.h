// Compilation (TEMPO §3-§6): a Context's program, its bounds and options in; an Executable out.
// The stages it runs are listed once, in driver/compile.cpp (compile_stages() names them).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/context.h"
#include "backend/codegen.h"
#include "passes/options.h"

namespace tempo {

class Communicator;  // api/distributed.h

// An op output that swapping could keep in host memory under a memory budget: its readers run
// after a loop that produced it, so its points wait in memory across that loop.
struct SwapCandidate {
  std::string rt;     // the RT it holds: name and the line that created it
  int64_t bytes = 0;  // device bytes its store holds at the estimated peak
  ir::OpId op = -1;   // in the optimized SDG
  int output = 0;
};
// Chooses candidates to swap so that at least `excess` bytes leave the device at the peak;
// returns their indices. The placement policy of the compiler's memory planning: a learned
// policy replaces the default (largest first) through this one interface.
using SwapPolicy = std::function<std::vector<size_t>(const std::vector<SwapCandidate>& candidates,
                                                     int64_t excess)>;

// Compile options: one typed struct, passed by value (ARCHITECTURE.md).
struct CompileOptions {
  bool deallocate = true;  // schedule deallocations (TEMPO §5.2)
  bool proximity = true;   // proximity constraints in scheduling (TEMPO §5.1)
  // isl schedule_whole_component: with deallocations scheduled, clustering (false) keeps memory
  // bounded and interleaves acting with learning; true frees loop-carried state late.
  bool whole_component = false;
  // Schedule static islands (ops joined by same-point reads over one domain) as one statement
  // each (TEMPO §4.4): isl's scheduling time grows fast with the number of statements.
  bool fuse = true;
  PassOptions passes;  // the optimization pipeline (PassOptions::none() turns it off)
  // Elementwise parts of fused regions run as generated code, C++ loops on the CPU and CUDA
  // kernels (NVRTC) on a GPU, compiled once per program and cached on disk ($TEMPO_CACHE_DIR,
  // else ~/.cache/tempo). TEMPO_NO_CODEGEN=1 turns it off without recompiling the program.
  bool codegen = true;
  // The loop order of generated CPU loops over narrow rows (a softmax over two actions): rows
  // outer, columns outer (interchanged, vectorized across rows), measured, where both are
  // compiled and the program's first calls of each loop pick the faster, or policy, where
  // `loop_schedule_policy` picks per loop and size without timing (a learned one:
  // loops::ScheduleModel, `learned:FILE` on the command line and in Python). The values are the
  // same in every order. TEMPO_LOOP_SCHEDULES=rows|measured|columns.
  backend::LoopSchedules loop_schedules = backend::LoopSchedules::Measured;
  backend::LoopSchedulePolicy loop_schedule_policy;
  // With measured loop schedules: each loop's measured times at each size are appended to this
  // CSV file (backend/loop_choice.h), the data `tempo loops schedules` trains a policy on.
  // TEMPO_LOOP_TIMINGS=FILE.
  std::string loop_timings;
  // Outputs read as x[0:t+1] or x[t:T] along their last dimension live in one block per run of
  // that dimension (TEMPO §6), so those reads are views, not copies. TEMPO_NO_BLOCK_STORES=1
  // turns it off without recompiling the program.
  bool block_stores = true;
  // An op that reads a point last takes it over from its store, and a generated loop may write
  // its output into the buffer of an input that is dead after it (TEMPO §5.2's buffer donation:
  // parameters and optimizer state update in place); TEMPO_NO_DONATION=1 turns it off.
  bool donation = true;
  // A device-memory budget in bytes (0: none). Compile measures the tracked peak of the schedule
  // (running it on a backend that only counts bytes); over the budget, windows above a quarter
  // of it are tiled (unless passes.tile_above_bytes is set) and outputs read late are swapped to
  // host memory (TEMPO §5.2) as `swap_policy` picks, until it fits; otherwise compile fails
  // naming the largest stores at the peak.
  int64_t memory_budget = 0;
  SwapPolicy swap_policy;  // empty: the largest first
  // Writes the stores' live device and host bytes after every statement of each run to this
  // CSV file, and a plot of them next to it (.svg).
  std::string memory_timeline;
  // Bounds on isl's scheduling process: its memory in bytes (0: half the machine's physical
  // memory) and the seconds scheduling may take (0: none). Going past either fails the compile
  // with the program's size and what to try, instead of the machine running out of memory.
  int64_t schedule_memory_limit = 0;
  double schedule_time_limit = 300;
  // Keep computed schedules in the cache folder ($TEMPO_CACHE_DIR, else ~/.cache/tempo) and read
  // them back when the same optimized program is compiled again with the same options and build
  // (schedule/cache.h): the next run skips isl. $TEMPO_NO_SCHEDULE_CACHE=1 turns it off.
  bool schedule_cache = true;
  uint64_t seed = 0;  // random number generation
  // The device the program runs on: "cpu", "cuda" or "cuda:N". Empty: $TEMPO_DEVICE, else
  // "cuda" in a CUDA build on a machine with a GPU, else "cpu".
  std::string device;
  // The process group of a data-parallel job (api/distributed.h): the program's collective ops
  // (AllReduce, Broadcast) run over it. Null: one process, where collectives are identities.
  std::shared_ptr<Communicator> communicator;
  bool verbose = false;  // print each stage's time (and the passes') to stderr
  // Stages whose result is written after they run: names from compile_stages(), comma-separated,
  // or "all" (TEMPO_DUMP overrides it). To stderr, or with `dump_dir` (TEMPO_DUMP_DIR) to
  // DIR/<k>-<stage>.txt, e.g. "passes" for the optimized SDG or "schedule" for the isl AST.
  std::string dump;
  std::string dump_dir;
  // Time every launch (Executable::profile_report): where the run's time goes, per op.
  bool profile = false;
};

// A memory size as users write it: "512MiB", "1.5GiB", "800MB", "64k" or a number of bytes.
// UserError naming `what` (e.g. the option) where it does not parse or is not positive.
int64_t parse_bytes(const std::string& text, const std::string& what);

// A bound value per bound symbol, e.g. {{T, 200}, {I, 10}}.
using Bounds = std::vector<std::pair<Expr, int64_t>>;

struct MemoryStats {
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t host_peak_bytes = 0;  // swapped-out values (CompileOptions::memory_budget)
};

// A compiled program (made by compile()).
class Executable {
 public:
  class Impl;
  explicit Executable(std::unique_ptr<Impl> impl);
  Executable(Executable&&) noexcept;
  Executable& operator=(Executable&&) noexcept;
  ~Executable();

  // Runs the whole schedule once with the compile-time bounds.
  void run();
  // The value of a retained RT (RT::retain) at a point of its domain (one value per dimension).
  HostTensor get(const RT& rt, const std::vector<int64_t>& point) const;
  MemoryStats memory() const;        // tracked device memory of tensor stores
  std::string schedule_str() const;  // the schedule AST, C-like
  int64_t ops_executed() const;      // launches in the last run (for overhead benchmarks)
  // With CompileOptions::profile: the runs' wall time split into kernels, input reads, output
  // stores and the executor's own work, and the ops that took longest. Empty otherwise.
  std::string profile_report(size_t top_ops = 12) const;
  // With CompileOptions::profile: the runs' launches and the bytes of their inputs and outputs
  // (the least memory traffic of their kernels).
  struct Traffic {
    int64_t launches = 0, in_bytes = 0, out_bytes = 0;
  };
  Traffic profile_traffic() const;
  Impl& impl() { return *impl_; }  // the driver's view (driver/executable_impl.h)

 private:
  std::unique_ptr<Impl> impl_;
};

// Compiles the Context's program for these bounds: validate -> passes -> schedule -> memory
// plan -> donation -> backend -> executor. UserErrors name the line of `loc` (the caller's).
Executable compile(Context& ctx, const Bounds& bounds, const CompileOptions& options = {},
                   Loc loc = Loc::current());

// The names of the stages, in the order compile() runs them (CompileOptions::dump).
std::vector<std::string> compile_stages();

}  // namespace tempo
