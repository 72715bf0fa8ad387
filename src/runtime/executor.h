// The executor (TEMPO §6): walks a schedule AST, launching each op at each scheduled point.
// Everything is compiled when the executor is built (index expressions, loop bounds, kernels,
// store pointers), so that run() is a tight loop over precomputed tables.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/sdg.h"
#include "runtime/backend.h"
#include "runtime/tensor_store.h"
#include "schedule/ast.h"
#include "symbolic/eval.h"

namespace tempo::runtime {

// Which op outputs live in block and window stores (TEMPO §6).
enum class Blocks {
  None,    // point stores only
  Moving,  // outputs read as prefixes or suffixes that move (x[0:t+1], x[t:T]) or windows
  All,     // also outputs of large points read only whole (x[i, 0:T])
};

class Executor {
 public:
  // `graph` and `backend` must outlive the executor. `dims` lists temporal dimensions to lay out
  // first (e.g. the Context's, in declaration order); every dimension of an op domain and every
  // schedule iterator is added after them.
  // `blocks` says which outputs are kept in blocks (PointStore), so that reads of consecutive
  // points are views instead of stacked copies.
  Executor(const ir::Graph& graph, const schedule::Schedule& schedule, Backend& backend,
           const Dims& dims = {}, Blocks blocks = Blocks::All);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs the whole schedule once. Every bound the graph uses must be given (values >= 1);
  // stores are emptied first.
  void run(const std::vector<std::pair<Expr, int64_t>>& bounds);

  const sym::SymbolLayout& layout() const { return layout_; }
  // Bound symbols that the graph uses (each must be given to run()).
  const std::vector<Expr>& required_bounds() const { return required_bounds_; }
  // The stored value of an op output at a point of the op's domain (after a run).
  // A point outside the domain or not stored is a UserError.
  ValuePtr read(ir::OpId op, int output, const std::vector<int64_t>& point) const;
  const PointStore* store(ir::OpId op, int output) const;
  const MemoryAccount& memory() const { return memory_; }            // device memory held by stores
  const MemoryAccount& host_memory() const { return host_memory_; }  // swapped-out values

  // Records the stores' device and host bytes after every statement of the following runs (a
  // memory timeline), from the next run on; off by default.
  struct MemoryEvent {
    int64_t device = 0, host = 0;
    ir::OpId op = -1;
    schedule::StmtKind kind = schedule::StmtKind::Exec;
  };
  void record_memory(bool on);
  const std::vector<MemoryEvent>& memory_events() const { return memory_events_; }
  // In the next runs, the bytes each store holds (those holding any, as (op, output, bytes)) when
  // the device memory is highest between statements.
  struct StoreBytes {
    ir::OpId op = -1;
    int output = 0;
    int64_t bytes = 0;
  };
  void snapshot_peak(bool on);
  const std::vector<StoreBytes>& snapshot() const { return snapshot_; }
  int64_t ops_executed() const { return ops_executed_; }
  // Records the device storages of the following runs into `sink` (null: stop), cleared at the
  // start of each run; `sink` must outlive those runs. Costs a clock read per statement.
  void trace_buffers(BufferTrace* sink);

  // Per-op timings of the runs since profiling was switched on (TEMPO §6's launch cost): where
  // a launch's time goes, split into reading its inputs (stacking slices), the kernel, and
  // storing its outputs, and the bytes of its inputs and outputs (the least memory traffic its
  // kernel can have). Costs two clock reads per phase and launch; off by default.
  struct OpTiming {
    int64_t launches = 0;
    int64_t read_ns = 0, kernel_ns = 0, write_ns = 0;
    int64_t in_bytes = 0, out_bytes = 0;
  };
  void set_profiling(bool on);
  const std::vector<OpTiming>& op_timings() const { return op_timings_; }  // by op id
  int64_t profiled_run_ns() const { return profiled_run_ns_; }  // wall time of profiled runs
  const std::string& prepare_report() const { return prepare_report_; }  // Backend::prepare

  struct Launcher;
  struct Node;
  struct MemoryOp;

 private:
  void exec(uint32_t node);
  void launch(Launcher& l);
  template <bool kProfile>
  void launch_impl(Launcher& l);
  void count_traffic(const Launcher& l, int64_t in_bytes);  // after l's kernel ran
  void free_or_move(MemoryOp& d);
  void observe(schedule::StmtKind kind, ir::OpId op);

  // Construction, in order: the symbol layout and the bounds a run needs, the stores, then the
  // schedule AST compiled into nodes_, launchers_ and memory_ops_.
  void lay_out_symbols(const Dims& dims, const schedule::Schedule& schedule);
  void make_stores(const schedule::Schedule& schedule, Blocks blocks);
  void use_block_stores(const schedule::Schedule& schedule, Blocks blocks);
  uint32_t compile(const schedule::StmtPtr& s);  // returns its node
  void compile_list(const std::vector<schedule::StmtPtr>& list, uint32_t& begin, uint32_t& end);
  uint32_t compile_exec(const schedule::Stmt& s);       // returns its launcher
  uint32_t compile_memory_op(const schedule::Stmt& s);  // returns its memory op

  const ir::Graph& graph_;
  Backend& backend_;
  sym::SymbolLayout layout_;
  std::vector<Expr> required_bounds_;
  std::vector<int64_t> env_;
  MemoryAccount memory_, host_memory_;
  // stores_[store_index_[op] + output]
  std::vector<std::unique_ptr<PointStore>> stores_;
  std::vector<size_t> store_index_;
  std::vector<std::vector<int32_t>> store_bound_slots_;  // per store: bound slot per domain dim
  std::vector<int> block_dims_;  // per store: the dimension its slice reads slice (-1: none)
  std::vector<Node> nodes_;
  std::vector<uint32_t> children_;
  std::vector<std::unique_ptr<Kernel>> kernels_;  // per op (null for Merge and unscheduled ops)
  std::vector<std::unique_ptr<Launcher>> launchers_;
  std::vector<std::unique_ptr<MemoryOp>> memory_ops_;  // Dealloc, Evict, Load
  bool observing_ = false;  // recording memory events, waiting for a snapshot or tracing
  void update_observing();
  bool record_memory_ = false;
  std::vector<MemoryEvent> memory_events_;
  BufferTrace* trace_ = nullptr;
  int64_t trace_clock_ns_ = 0;  // when the traced run's previous statement ended
  bool snapshot_peak_ = false;
  int64_t snapshot_bytes_ = -1;  // the device bytes when snapshot_ was taken
  std::vector<StoreBytes> snapshot_;
  int64_t ops_executed_ = 0;
  std::vector<OpTiming> op_timings_;  // empty: not profiling
  int64_t profiled_run_ns_ = 0;
  bool has_run_ = false;
  std::string prepare_report_;
};

}  // namespace tempo::runtime
