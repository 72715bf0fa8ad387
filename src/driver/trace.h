// The one interface of learned memory placement (src/mmap) to the compiler: what a policy sees of
// a compiled program (its trace) and how its decisions come back (a swap policy).
//
// Trace. A TraceRecorder attached to an Executable records its next runs: per executed statement
// (the steps of CompileOptions::memory_timeline) its wall time, its op and the device bytes the
// tensor stores hold after it; per device storage that the stores hold, its size, the statement
// that acquired it, the statements that read it and the one that released it. A storage is the
// value of one point of an op output, or the block of a block or window store (many points); a
// Merge or a view holds its input's storage without a copy, so one storage may have several
// holders (ProgramTrace::op_holders). Machine costs that a policy weighs the trace with (the time
// of a copy between device and host) come from median_copy_us.
//
//   driver::TraceRecorder recorder;            // outlives exe
//   recorder.attach(exe);                      // e.g. in rl::TrainConfig::on_compiled
//   exe.run();
//   driver::ProgramTrace trace = recorder.trace();
//
// Decision. A policy acts on the program it was trained on by compiling it again under a device
// memory budget (CompileOptions::memory_budget) with its own CompileOptions::swap_policy (a
// SwapPolicy, api/context.h): whenever the memory plan's estimated peak is over the budget, the
// policy is shown the SwapCandidates (op outputs read after the loop that produced them; their
// `rt` is the op's description, as ProgramTrace::op_names has it) and the excess bytes, and returns
// the candidates to keep in host memory. A policy that has ranked the candidates hands its order
// to pick_until_covered, so that it keeps the default policy's rules for small candidates.
//
// Plain data only: no runtime or backend types cross this interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "driver/compile.h"

namespace tempo::driver {

// One device storage of a traced run. Statements are indices into ProgramTrace::statements.
struct TracedStorage {
  int64_t bytes = 0;
  int64_t start = 0;  // the statement that acquired it
  // The statement that released it; statements.size() (the end of the program) for a storage
  // still held when the trace was taken.
  int64_t end = -1;
  std::vector<int64_t> reads;  // the later statements that read it, ascending, each once
  int64_t op = -1;             // the op of the acquiring statement: its producer, or a Load's op
};

struct TracedStatement {
  int64_t ns = 0;            // wall time
  int64_t op = -1;           // the op it executes (or stores, frees, swaps)
  int64_t device_bytes = 0;  // held by the tensor stores after it
};

struct ProgramTrace {
  std::vector<TracedStatement> statements;  // in execution order, over all recorded runs
  std::vector<TracedStorage> storages;      // in order of acquisition
  // Per op id of the compiled (optimized) program: its description, the RT and the line that
  // created it (as SwapCandidate::rt names it).
  std::vector<std::string> op_names;
  // Per op id: the other ops whose stores may hold the same storage as its output without a copy
  // (a Merge choosing it, a view of it, and so on transitively).
  std::vector<std::vector<int64_t>> op_holders;
};

// Records the runs of the executables it is attached to, from attachment on. It must outlive
// them: an executable records into it until destroyed (what its destruction releases comes after
// the last statement, and the trace leaves it out).
class TraceRecorder {
 public:
  TraceRecorder();
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // Starts recording exe's runs into this trace (after what is already recorded) and takes the
  // names and holders of its ops.
  void attach(Executable& exe);
  // The storages and statements recorded so far.
  ProgramTrace trace() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The median wall time (microseconds) of `repetitions` device-to-host copies of each of these
// sizes (bytes) on the default device.
std::vector<double> median_copy_us(const std::vector<int64_t>& sizes, int repetitions);

// Candidates taken in `order` until `excess` is covered, skipping those under 1% of it (or
// 64 KiB): each swap costs copies and statements. What a swap policy returns, once it has ranked
// the candidates (defined with the memory plan, whose default policy uses it too).
std::vector<size_t> pick_until_covered(const std::vector<SwapCandidate>& candidates,
                                       const std::vector<size_t>& order, int64_t excess);

}  // namespace tempo::driver
