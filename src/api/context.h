// The Context owns a program: its temporal dimensions and its SDG (no global state).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/pass_options.h"
#include "api/rt.h"
#include "ir/sdg.h"

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
  // Elementwise parts of fused regions run as generated C++ loops, compiled once per program and
  // cached on disk ($TEMPO_CACHE_DIR, else ~/.cache/tempo); CPU only. TEMPO_NO_CODEGEN=1 turns
  // it off without recompiling the program.
  bool codegen = true;
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
  uint64_t seed = 0;     // random number generation
  // The process group of a data-parallel job (api/distributed.h): the program's collective ops
  // (AllReduce, Broadcast) run over it. Null: one process, where collectives are identities.
  std::shared_ptr<Communicator> communicator;
  bool verbose = false;  // print compile phases and timings to stderr
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

// A compiled program (made by Context::compile, implemented by the compiler driver).
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
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

class Context;

// While alive, ops built in the context read `to` wherever they would read `from` at the current
// point (no pending index of its own). This runs a forward pass with its parameters read at
// another point, e.g. an acting policy with the parameters of the start of the iteration
// (nn::Module::forward_at). Guards nest; the innermost wins.
class ReadSubstitution {
 public:
  ReadSubstitution(Context& ctx, std::vector<std::pair<RT, RT>> pairs);
  ~ReadSubstitution();
  ReadSubstitution(const ReadSubstitution&) = delete;
  ReadSubstitution& operator=(const ReadSubstitution&) = delete;

 private:
  Context* ctx_;
  size_t count_;
};

class Context {
 public:
  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Creates a temporal dimension (variable, bound), e.g. auto [t, T] = ctx.dim("t", "T").
  Dim dim(const std::string& var, const std::string& bound, Loc loc = Loc::current());
  const Dims& dims() const { return dims_; }
  // Orders a set of dimensions as the context declared them (the canonical domain order).
  Dims ordered(const Dims& dims) const;
  Dims domain_union(const Dims& a, const Dims& b) const;

  // A data-parallel program (api/distributed.h): parameters made from now on (nn::Parameter)
  // start from rank 0's initial value (a Broadcast) and optim::minimize averages gradients
  // across ranks (an AllReduce) before the optimizer. The program is the same for every world
  // size, so one process and several compute the same thing.
  void set_data_parallel(bool on) { data_parallel_ = on; }
  bool data_parallel() const { return data_parallel_; }

  ir::Graph& graph() { return graph_; }
  const ir::Graph& graph() const { return graph_; }

  // ---- sources ----
  RT constant(double value, Shape shape = {}, DType dtype = DType::Float32, Dims domain = {},
              Loc loc = Loc::current());
  RT zeros(Shape shape, DType dtype = DType::Float32, Loc loc = Loc::current());
  RT ones(Shape shape, DType dtype = DType::Float32, Loc loc = Loc::current());
  RT rand_uniform(Shape shape, Dims domain = {}, DType dtype = DType::Float32,
                  Loc loc = Loc::current());
  RT rand_normal(Shape shape, Dims domain = {}, DType dtype = DType::Float32,
                 Loc loc = Loc::current());
  RT arange(const Expr& n, DType dtype = DType::Int64, Loc loc = Loc::current());
  // The value of a symbolic expression (e.g. t, or T - t) as an int64 scalar RT.
  RT symbol(const Expr& e, Loc loc = Loc::current());
  // A constant tensor with the given contents.
  RT tensor(const HostTensor& value, Loc loc = Loc::current());
  // A branching RT over `domain`, defined by assigning to its indexed forms (TEMPO Alg. 1).
  RT placeholder(TensorType type, Dims domain, const std::string& name = "",
                 Loc loc = Loc::current());

  // ---- user-defined functions (external state) ----
  // Runs fn at every point of `domain` (where all inputs exist); outputs have `outputs` types.
  // A UDF with no outputs is a sink (logging, checkpoints); with no inputs, a source.
  std::vector<RT> udf(const std::string& name, ir::Udf::fn_type fn, const std::vector<RT>& inputs,
                      std::vector<TensorType> outputs, Dims domain, Loc loc = Loc::current());

  // ---- compile ----
  Executable compile(const Bounds& bounds, const CompileOptions& options = {},
                     Loc loc = Loc::current());

  // Internal: adds an op reading `inputs` (each through its pending index) over the union of
  // their domains (plus `extra_domain`), inferring output types. Used by every RT operation.
  std::vector<RT> add_op(ir::OpKind kind, ir::Attrs attrs, const std::vector<RT>& inputs, Loc loc,
                         Dims extra_domain = {});
  RT add_op1(ir::OpKind kind, ir::Attrs attrs, const std::vector<RT>& inputs, Loc loc,
             Dims extra_domain = {}) {
    return add_op(kind, std::move(attrs), inputs, loc, std::move(extra_domain))[0];
  }
  const std::vector<std::pair<ir::OpId, int>>& retained() const { return retained_; }
  void mark_retained(ir::OpId op, int output) { retained_.emplace_back(op, output); }

 private:
  friend class ReadSubstitution;
  // The reads an op input is replaced by (see ReadSubstitution), innermost last.
  const RT& substituted(const RT& in) const;

  Dims dims_;
  ir::Graph graph_;
  std::vector<std::pair<RT, RT>> substitutions_;
  std::vector<std::pair<ir::OpId, int>> retained_;
  bool data_parallel_ = false;
};

}  // namespace tempo
