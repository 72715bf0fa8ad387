// Data-parallel programs: every rank of a job runs the same program on its own data (its own
// environments, its own share of a batch); collective ops in the SDG average gradients and
// broadcast initial parameters so that parameters stay identical on every rank.
//
//   tempo::DistributedConfig dc = tempo::DistributedConfig::from_env();  // torchrun's variables
//   std::shared_ptr<tempo::Communicator> comm = tempo::connect(dc);      // rendezvous (c10d)
//   ctx.set_data_parallel(true);      // before the modules: parameters broadcast from rank 0,
//   ...                               // optim::minimize averages gradients across ranks
//   CompileOptions o; o.communicator = comm;
//
// Collectives meet because every rank compiles the same program to the same schedule, so each
// rank issues them in the same order. Without a communicator (one process) they are identities.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "api/rt.h"

namespace tempo {

// Where this process stands in a job, as torchrun describes it: RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR and MASTER_PORT.
struct DistributedConfig {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // Bounds the rendezvous and every collective: a rank that died or never came makes the others
  // fail after this long instead of waiting forever.
  double timeout_seconds = 60.0;

  // Reads the variables (RANK and WORLD_SIZE required; LOCAL_RANK defaults to RANK, MASTER_ADDR
  // to 127.0.0.1, MASTER_PORT to 29500; TEMPO_DIST_TIMEOUT in seconds to 60). UserError naming
  // the variable that is missing or wrong (e.g. RANK outside [0, WORLD_SIZE)).
  static DistributedConfig from_env();
  // Whether WORLD_SIZE is set: the process was started by a launcher.
  static bool launched();
  void validate() const;  // UserError on a bad rank, world size, port or timeout
};

// A process group: how the collectives of a compiled program reach the other ranks. Made by
// connect(); the backend implements it (LibTorch's c10d over Gloo).
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Collectives run so far and the wall time spent in them (for benchmarks).
  virtual int64_t collectives() const = 0;
  virtual double collective_seconds() const = 0;
  // Waits until every rank has called it (bounded by the timeout), e.g. before exiting.
  virtual void barrier() = 0;
};

// Joins the job: rank 0 serves the rendezvous store at master_addr:master_port, the others
// connect to it; returns once all world_size ranks have joined. UserError when the address
// cannot be reached or the other ranks do not join within the timeout. Defined by the compiler
// driver (the backend owns the process group).
std::shared_ptr<Communicator> connect(const DistributedConfig& config);

// A TCP port on `addr` that nothing listens on now (the kernel's choice), for a rendezvous
// when MASTER_PORT is not given. UserError when no socket can be bound there.
int pick_free_port(const std::string& addr = "127.0.0.1");

// ---- collective ops (OpKind::AllReduce, OpKind::Broadcast) ----
// x summed over the ranks, or averaged (mean = true: floating-point x only).
RT all_reduce(const RT& x, bool mean, Loc loc = Loc::current());
// Rank `root`'s x on every rank.
RT broadcast(const RT& x, int root = 0, Loc loc = Loc::current());
// The mean over the ranks of each tensor, as one collective: the tensors (all of one dtype and
// domain) are flattened into one buffer, averaged, and split back (one round trip instead of one
// per tensor).
std::vector<RT> all_reduce_mean(const std::vector<RT>& xs, Loc loc = Loc::current());

}  // namespace tempo
