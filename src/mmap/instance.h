// Memory-mapping problems (the MMapGame's input; Optimizing Memory Mapping Using Deep RL, §4.1
// and Appendix A): the buffers of a program in chronological order, a fast memory of fixed
// capacity, and the copy supply of each logical time step. Instances come from files, from the
// synthetic generator below, or from Tempo's own compiled programs (mmap/extract.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tempo::mmap {

// One use of a tensor by one instruction (Table 1 of the paper). Times are logical steps of the
// program (indices into Instance::supply).
struct Buffer {
  int64_t size = 0;            // bytes
  int64_t time = 0;            // target_time: the step of the instruction that uses it
  int64_t start = 0, end = 0;  // live_range: the steps the tensor exists, start <= time <= end
  bool is_output = false;      // written by the instruction (else read)
  int64_t tensor_id = 0;       // buffers of one tensor: NoCopy extends a previous allocation
  int64_t alias_id = 0;        // buffers of one alias group: all in fast memory at one offset,
                               // or all in slow memory (Appendix A, Eq. 4)
  double benefit = 0.0;        // the reward of placing it in fast memory
  double demand = 0.0;         // copy time between the memories (the unit of `supply`)
};

struct Instance {
  std::string name;
  int64_t capacity = 0;         // fast-memory bytes
  std::vector<double> supply;   // per step: time available to overlap copies (the copy supply)
  std::vector<Buffer> buffers;  // by time (inputs and outputs of one step in any order)

  int64_t steps() const { return static_cast<int64_t>(supply.size()); }
  double total_benefit() const;
  // Throws a one-line UserError naming the first problem: a capacity <= 0, no steps, a negative
  // supply, a buffer of size <= 0 or larger than the capacity, a time outside its live range or
  // the steps, buffers out of chronological order, a negative benefit or demand.
  void validate() const;
};

// The text format (one instance per file; '#' starts a comment line):
//   mmap-instance 1
//   name <word>
//   capacity <bytes>
//   supply <steps> <s_0> ... <s_{steps-1}>
//   buffers <n>
//   <size> <time> <start> <end> <in|out> <tensor_id> <alias_id> <benefit> <demand>   (n lines)
// Numbers may wrap across lines; load checks the format and validate()s the result.
void save_instance(const Instance& inst, const std::string& path);
Instance load_instance(const std::string& path);  // UserError naming the file and line
std::string instance_to_string(const Instance& inst);
Instance instance_from_string(const std::string& text, const std::string& where = "instance");

// Synthetic instances: tensors produced at random steps, each read 1..max_uses times within a
// span, sizes log-uniform in [min_size, max_size]; in-place updates put a tensor's last read and
// the next tensor's output in one alias group. `pressure` is the peak bytes live at one step
// over the capacity (> 1: not everything fits; the capacity is at least the largest buffer).
// Copying a buffer of the mean size takes about `copy_steps` steps of supply. The same options and
// seed give the same instance.
struct SyntheticOptions {
  int64_t buffers = 64;
  int64_t min_size = 1 << 10, max_size = 1 << 20;
  double pressure = 2.0;
  int64_t max_uses = 4;
  int64_t span = 16;  // mean steps between a tensor's output and its last read
  double copy_steps = 3.0;
  double alias_fraction = 0.1;  // tensors updated in place
  uint64_t seed = 1;
};
Instance generate_instance(const SyntheticOptions& options);

}  // namespace tempo::mmap
