// The process group of a data-parallel job: LibTorch's c10d (the engine under PyTorch's
// DistributedDataParallel) over Gloo, with a TCPStore rendezvous. This header does not include
// LibTorch; the kernels of the collective ops use the torch-facing side (torch_collectives.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace tempo::backend {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual int64_t collectives() const = 0;        // run so far
  virtual double collective_seconds() const = 0;  // wall time spent in them
  virtual void barrier() = 0;
  // Rank `root`'s v on every rank (e.g. to check that the ranks agree on something).
  virtual int64_t broadcast_value(int64_t v, int root) = 0;
};

struct ProcessGroupConfig {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  double timeout_seconds = 60.0;
};

// Joins the job (rank 0 serves the store). UserError naming the address when it cannot be
// reached, or the ranks that did not join within the timeout.
std::shared_ptr<ProcessGroup> make_process_group(const ProcessGroupConfig& config);

}  // namespace tempo::backend
