// MMapGame instances from Tempo's own compiled programs, through the trace of their runs
// (driver/trace.h). Each device storage held from statement s to statement e is one tensor with
// live range [s, e] (the value of one point of an op output, or the block of a block or window
// store, which holds many points): a buffer for its write at s (an output) and one for each later
// statement that reads it (inputs). Logical time steps are the executed statements (the steps of
// the memory timeline, CompileOptions::memory_timeline) plus one final step at the end of the
// program, where the storages still held at the end are released.
// Benefit and demand: the time a copy of the buffer's bytes between host and device takes on
// this machine (a CopyModel measured with driver::median_copy_us); supply: each statement's
// measured wall time in the same run. Times are in microseconds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "driver/trace.h"
#include "mmap/instance.h"

namespace tempo::mmap {

// A copy of n bytes takes latency_us + n * us_per_byte.
struct CopyModel {
  double latency_us = 1.0;
  double us_per_byte = 1.0 / 4096.0;  // 4 GB/s
  double time_us(int64_t bytes) const {
    return latency_us + us_per_byte * static_cast<double>(bytes);
  }
  std::string str() const;  // "2.1 us + 5.3 GB/s"
};
// Times device-to-host copies (a real copy on the CPU) on the default device: the bandwidth
// from copies of 4 and 32 MiB, the latency from copies of 4 KiB (about 0.2 s).
CopyModel measure_copy_model();

struct TraceOptions {
  // The fast memory: this fraction of the program's device peak.
  double capacity_fraction = 0.5;
  int64_t min_bytes = 1;  // smaller storages are left out (0-d scalars, flags)
};
struct TraceSummary {
  int64_t tensors = 0, peak_bytes = 0;
  int64_t too_large = 0;  // tensors left out: larger than the fast memory (never placeable)
  int64_t too_small = 0;  // tensors left out: under min_bytes
  // Per tensor (Buffer::tensor_id): the op of the statement that acquired its storage (its
  // producer, or the op a Load statement brings back): how a placement maps back to the
  // program's stores (e.g. for CompileOptions::swap_policy, whose candidates name op outputs).
  std::vector<int64_t> tensor_op;
  // Per op id of the traced program: what it computes, as SwapCandidate::rt names it (the RT
  // and the line that created it), from driver::ProgramTrace::op_names.
  std::vector<std::string> op_names;
  // Per op id: the other ops whose stores may hold its storages (ProgramTrace::op_holders).
  std::vector<std::vector<int64_t>> op_holders;
};
// The instance of one traced run. Throws a UserError if the trace is empty.
Instance instance_from_trace(const driver::ProgramTrace& trace, const CopyModel& copy,
                             const TraceOptions& options, const std::string& name,
                             TraceSummary* summary = nullptr);

// An RL training program (rl::train) run for a few iterations on a built-in environment, traced.
struct RlProgram {
  std::string algo = "reinforce";  // reinforce, a2c, ppo
  std::string env = "synthetic";
  std::vector<int64_t> obs_shape = {3, 16, 16};  // the synthetic environment's observations
  int64_t iterations = 2, num_envs = 4, steps = 16;
  uint64_t seed = 1;
  std::string name() const;  // e.g. "reinforce-synthetic-3x16x16"
};
// Runs the program with a driver::TraceRecorder attached (rl::TrainConfig::on_compiled).
driver::ProgramTrace trace_rl_program(const RlProgram& program);
Instance extract_rl_instance(const RlProgram& program, const CopyModel& copy,
                             const TraceOptions& options = {}, TraceSummary* summary = nullptr);

// LLM decoding (llm::decode_tokens, token by token over steps t and layers l) with a Llama
// decoder of random weights, traced: its K/V caches, activations and weights as buffers.
struct LlmProgram {
  std::string config = "tiny";  // tiny, 1b or 3b (llm::LlamaConfig's shapes)
  int64_t tokens = 32, batch = 4;
  std::string attention = "causal";  // as `tempo generate --attention`: causal, window:W, ...
  uint64_t seed = 1;
  std::string name() const;  // e.g. "llm-tiny-causal-32x4"
};
driver::ProgramTrace trace_llm_program(const LlmProgram& program);
Instance extract_llm_instance(const LlmProgram& program, const CopyModel& copy,
                              const TraceOptions& options = {}, TraceSummary* summary = nullptr);

}  // namespace tempo::mmap
