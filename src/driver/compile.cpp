// The compiler driver: Context::compile and the Executable it returns.
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "backend/libtorch_backend.h"
#include "driver/distributed.h"
#include "driver/executable_impl.h"
#include "driver/memory_plan.h"
#include "passes/pipeline.h"
#include "schedule/donation.h"
#include "util/error.h"

namespace tempo {

namespace {

using Clock = std::chrono::steady_clock;

// Whether an environment switch is set (not empty, not 0). TEMPO_NO_<FEATURE>=1 turns a feature
// off in any program without recompiling it, e.g. to run a test suite with it off.
bool env_flag(const char* variable) {
  const char* v = std::getenv(variable);
  return v && *v && *v != '0';
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void add_bounds(const Expr& e, std::vector<Expr>& out) {
  if (!e.defined()) return;
  for (const Expr& s : sym::free_symbols(e))
    if (s.is_bound_symbol() &&
        std::none_of(out.begin(), out.end(), [&](const Expr& b) { return b.same(s); }))
      out.push_back(s);
}

// Bound symbols the program needs values for: those of op domains and those that its
// expressions (conditions, attributes, shapes, dependence expressions) mention.
std::vector<Expr> used_bounds(const ir::Graph& g) {
  std::vector<Expr> out;
  for (const ir::OpNode& op : g.ops()) {
    for (const Dim& d : op.domain) add_bounds(d.bound, out);
    add_bounds(op.cond, out);
    for (const Expr& e : op.attrs.exprs) add_bounds(e, out);
    for (const ir::TensorType& t : op.outputs)
      for (const Expr& e : t.shape.dims) add_bounds(e, out);
  }
  for (const ir::Edge& e : g.edges()) {
    add_bounds(e.phi, out);
    add_bounds(e.cond, out);
  }
  return out;
}

void check_bounds(const ir::Graph& g, const Bounds& bounds, const Loc& loc) {
  for (const auto& [b, v] : bounds) {
    if (!b.defined() || !b.is_bound_symbol())
      throw UserError(cat("compile at ", where(loc), ": `", b.defined() ? b.str() : "<undefined>",
                          "` is not a bound symbol; pass bounds such as {{T, 100}}"));
    if (v < 1)
      throw UserError(
          cat("compile at ", where(loc), ": bound ", b.str(), " = ", v, " must be at least 1"));
  }
  for (const Expr& b : used_bounds(g)) {
    bool given =
        std::any_of(bounds.begin(), bounds.end(), [&](const auto& p) { return p.first.same(b); });
    if (!given)
      throw UserError(cat("bound ", b.str(), " has no value; pass it to compile({{", b.str(),
                          ", ...}}) (compile at ", where(loc), ")"));
  }
}

// A tile larger than its dimension would be one partial tile: almost certainly a mistake.
void check_tiles(const Dims& dims, const PassOptions& po, const Bounds& bounds, const Loc& loc) {
  for (const auto& [name, size] : po.tiles)
    for (const Dim& d : dims)
      for (const auto& [b, v] : bounds)
        if (d.name() == name && b.same(d.bound) && size > v)
          throw UserError(cat("tile size ", size, " for ", name, " exceeds its bound ",
                              d.bound.name(), " = ", v, " (at ", where(loc), ")"));
}

}  // namespace

Executable Context::compile(const Bounds& bounds, const CompileOptions& options, Loc loc) {
  const auto t_start = Clock::now();
  auto log = [&](const char* phase, Clock::time_point t0) {
    if (options.verbose) std::cerr << "[tempo] " << phase << ": " << ms_since(t0) << " ms\n";
  };
  auto impl = std::make_unique<Executable::Impl>();
  impl->ctx = this;
  impl->dims = dims_;
  impl->bounds = bounds;
  impl->options = options;

  auto t0 = Clock::now();
  ir::validate(graph_);
  check_bounds(graph_, bounds, loc);
  check_tiles(dims_, options.passes, bounds, loc);
  log("validate", t0);
  if (options.verbose)
    std::cerr << "[tempo] SDG: " << graph_.num_ops() << " ops, " << graph_.num_edges()
              << " edges\n";

  if (options.memory_budget < 0)
    throw UserError(cat("compile at ", where(loc), ": memory_budget must be positive (bytes), got ",
                        options.memory_budget));
  // The pass pipeline, into impl; `tile_above` > 0 tiles windows above it where the options do
  // not say otherwise (tiling for memory), and `for_memory` interleaves what can run as a
  // recurrence goes and recomputes cheap activations (PassOptions::interleave, ::recompute).
  auto optimize = [&](int64_t tile_above, bool for_memory) {
    passes::Program program(graph_, retained_);
    for (const auto& [b, v] : bounds) program.bound_values.emplace_back(b.name(), v);
    passes::Options po = options.passes;
    po.verbose |= options.verbose;
    if (po.tile_above_bytes == 0) po.tile_above_bytes = tile_above;
    po.interleave |= for_memory;
    po.recompute |= for_memory;
    // TEMPO_NO_PASS=vectorize,lifting (or =all) turns passes off without recompiling the
    // program, e.g. to run a test suite with the pipeline on and off.
    if (const char* off = std::getenv("TEMPO_NO_PASS")) {
      std::stringstream names(off);
      for (std::string name; std::getline(names, name, ',');)
        if (!name.empty()) po.set(name, false);
    }
    passes::run_pipeline(program, po);
    // TEMPO_DUMP_SDG=FILE writes the optimized SDG's text form (what is scheduled).
    if (const char* path = std::getenv("TEMPO_DUMP_SDG")) {
      std::ofstream out(path);
      if (!out) throw UserError(cat("TEMPO_DUMP_SDG: cannot write '", path, "'"));
      out << program.graph.str();
    }
    impl->graph = std::move(program.graph);
    impl->retained = std::move(program.retained);
    impl->op_map = std::move(program.op_map);
  };
  t0 = Clock::now();
  optimize(0, false);
  log("passes", t0);

  t0 = Clock::now();
  schedule::ScheduleOptions so;
  so.retained = impl->retained;
  so.whole_component = options.whole_component;
  so.proximity = options.proximity;
  so.deallocate = options.deallocate;
  so.fuse = options.fuse;
  so.solve_in_child = !env_flag("TEMPO_SCHEDULE_IN_PROCESS");
  for (const auto& [b, v] : bounds) so.known_bounds.emplace_back(b.name(), v);
  impl->schedule = schedule::compute_schedule(impl->graph, so);
  if (options.memory_budget > 0) {
    // Under a budget: the program as it is when it fits; otherwise tiled for memory (windows
    // that could take a quarter of the budget) and scheduled with swapping.
    auto plan = [&](const std::string& line) {
      if (options.verbose) std::cerr << "[tempo] " << line << "\n";
    };
    const driver::MemoryEstimate est = driver::estimate_memory(
        impl->graph, impl->schedule, impl->dims, bounds, driver::budget_blocks(options));
    plan(cat("memory: estimated peak ", driver::bytes_str(est.peak), " as written (budget ",
             driver::bytes_str(options.memory_budget), ")"));
    if (est.peak > options.memory_budget) {
      optimize(std::max<int64_t>(1, options.memory_budget / 4), true);
      so.retained = impl->retained;
      try {
        impl->schedule =
            driver::schedule_within_budget(impl->graph, so, impl->dims, bounds, options, plan);
      } catch (const UserError& e) {
        throw UserError(cat(e.what(), " (compile at ", where(loc), ")"));
      }
    }
  }
  // Buffer donation (TEMPO §5.2): last readers take their inputs over, and generated loops
  // write into those buffers.
  const bool donation = options.donation && !env_flag("TEMPO_NO_DONATION");
  if (donation) impl->schedule = schedule::donate_buffers(impl->graph, impl->schedule);
  log("schedule", t0);
  if (options.verbose)
    std::cerr << "[tempo] isl statements: " << impl->schedule.num_statements
              << (impl->schedule.fused ? " (fused" : " (unfused")
              << (impl->schedule.bounded ? ", lifetimes bounded)" : ", lifetimes unbounded)")
              << "\n";
  if (options.verbose) std::cerr << impl->schedule.str(impl->graph);

  t0 = Clock::now();
  backend::BackendOptions bo;
  bo.codegen = options.codegen && !env_flag("TEMPO_NO_CODEGEN");
  bo.donation = donation;
  bo.check_cuda_kernels = env_flag("TEMPO_CHECK_CUDA_KERNELS");
  bo.process_group = driver::process_group_of(options.communicator);
  if (bo.process_group)
    driver::check_same_schedule(*bo.process_group, impl->schedule.str(impl->graph), where(loc));
  impl->backend = backend::make_libtorch_backend(backend::default_device(), bo);
  impl->backend->seed(options.seed);
  runtime::Blocks blocks = options.memory_budget > 0 ? driver::budget_blocks(options)
                                                     : runtime::Blocks::All;
  if (!options.block_stores || env_flag("TEMPO_NO_BLOCK_STORES"))
    blocks = runtime::Blocks::None;
  impl->executor = std::make_unique<runtime::Executor>(impl->graph, impl->schedule, *impl->backend,
                                                       impl->dims, blocks);
  impl->executor->set_profiling(options.profile);
  impl->executor->record_memory(!options.memory_timeline.empty());
  log("executor", t0);
  if (options.verbose && !impl->executor->prepare_report().empty())
    std::cerr << "[tempo] " << impl->executor->prepare_report() << "\n";
  if (options.verbose)
    std::cerr << "[tempo] compiled for " << impl->backend->device() << " in " << ms_since(t_start)
              << " ms\n";
  return Executable(std::move(impl));
}

Executable::Executable(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executable::Executable(Executable&&) noexcept = default;
Executable& Executable::operator=(Executable&&) noexcept = default;
Executable::~Executable() = default;

void Executable::run() {
  const auto t0 = Clock::now();
  impl_->executor->run(impl_->bounds);
  const CompileOptions& options = impl_->options;
  if (!options.memory_timeline.empty())
    driver::write_memory_timeline(options.memory_timeline, impl_->graph,
                                  impl_->executor->memory_events());
  if (options.memory_budget > 0 && impl_->executor->memory().peak_bytes > options.memory_budget)
    std::cerr << "[tempo] warning: the run's tracked device peak "
              << driver::bytes_str(impl_->executor->memory().peak_bytes)
              << " exceeded the memory budget " << driver::bytes_str(options.memory_budget)
              << " (the compile-time estimate differs from the run)\n";
  if (options.verbose) {
    const runtime::Executor& ex = *impl_->executor;
    std::cerr << "[tempo] run: " << ms_since(t0) << " ms, " << ex.ops_executed()
              << " launches, peak " << ex.memory().peak_bytes << " bytes, "
              << ex.memory().live_bytes << " bytes left in stores\n";
    // Values left at the end of a run (retained outputs, or deallocations the schedule misses)
    // and the stores that held the most memory.
    std::vector<std::pair<int64_t, std::string>> largest;
    for (const ir::OpNode& op : impl_->graph.ops())
      for (size_t k = 0; k < op.outputs.size(); ++k)
        if (const runtime::PointStore* st = ex.store(op.id, static_cast<int>(k))) {
          if (st->size() > 1)
            std::cerr << "[tempo]   " << st->size() << " values left of " << op.describe() << "\n";
          largest.emplace_back(st->peak_bytes(),
                               cat(op.describe(), " over (", dims_str(op.domain), ")"));
        }
    std::sort(largest.rbegin(), largest.rend());
    for (size_t k = 0; k < std::min<size_t>(8, largest.size()); ++k)
      std::cerr << "[tempo]   peak " << largest[k].first << " bytes in " << largest[k].second
                << "\n";
  }
}

HostTensor Executable::get(const RT& rt, const std::vector<int64_t>& point) const {
  if (!rt.defined()) throw UserError("Executable::get: the RT is undefined");
  if (&rt.ctx() != impl_->ctx || rt.op() < 0 ||
      static_cast<size_t>(rt.op()) >= impl_->op_map.size())
    throw UserError(cat("Executable::get: RT '", rt.name(),
                        "' does not belong to the program this executable was compiled from"));
  const ir::OpId id = impl_->op_map[rt.op()];
  bool retained = std::any_of(impl_->retained.begin(), impl_->retained.end(), [&](const auto& r) {
    return r.first == id && r.second == rt.output();
  });
  const ir::OpNode& op = impl_->ctx->graph().op(rt.op());
  if (!retained || rt.phi().defined())
    throw UserError(cat(op.describe(),
                        " is not retained; call .retain() on it before compile and pass the RT "
                        "that retain() returns to get()"));
  return impl_->backend->to_host(impl_->executor->read(id, rt.output(), point));
}

MemoryStats Executable::memory() const {
  const runtime::MemoryAccount& m = impl_->executor->memory();
  return MemoryStats{m.live_bytes, m.peak_bytes, impl_->executor->host_memory().peak_bytes};
}

std::string Executable::schedule_str() const {
  return impl_->schedule.str(impl_->graph);
}

int64_t Executable::ops_executed() const {
  return impl_->executor->ops_executed();
}

std::string Executable::profile_report(size_t top_ops) const {
  const runtime::Executor& ex = *impl_->executor;
  const auto& timings = ex.op_timings();
  if (timings.empty()) return "";
  using OpTiming = runtime::Executor::OpTiming;
  OpTiming sum;
  std::vector<std::pair<int64_t, ir::OpId>> by_time;
  for (size_t op = 0; op < timings.size(); ++op) {
    const OpTiming& t = timings[op];
    sum.launches += t.launches;
    sum.read_ns += t.read_ns;
    sum.kernel_ns += t.kernel_ns;
    sum.write_ns += t.write_ns;
    if (t.launches) by_time.emplace_back(t.read_ns + t.kernel_ns + t.write_ns, op);
  }
  std::sort(by_time.rbegin(), by_time.rend());
  const double run_ms = static_cast<double>(ex.profiled_run_ns()) / 1e6;
  auto ms = [](int64_t ns) { return static_cast<double>(ns) / 1e6; };
  auto share = [&](int64_t ns) { return run_ms > 0 ? 100.0 * ms(ns) / run_ms : 0.0; };
  const int64_t rest = ex.profiled_run_ns() - sum.read_ns - sum.kernel_ns - sum.write_ns;
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << "profile: " << run_ms << " ms, " << sum.launches
      << " launches\n"
      << "  kernels  " << ms(sum.kernel_ns) << " ms (" << share(sum.kernel_ns) << "%)\n"
      << "  reads    " << ms(sum.read_ns) << " ms (" << share(sum.read_ns)
      << "%)  input lookup and slice stacking\n"
      << "  writes   " << ms(sum.write_ns) << " ms (" << share(sum.write_ns)
      << "%)  output stores\n"
      << "  executor " << ms(rest) << " ms (" << share(rest)
      << "%)  loops, conditions, deallocation, timing\n"
      << "  overhead per launch (all but kernels): " << std::setprecision(2)
      << (sum.launches ? static_cast<double>(ex.profiled_run_ns() - sum.kernel_ns) / 1e3 /
                             static_cast<double>(sum.launches)
                       : 0.0)
      << " us\n  top ops:        ms      %  launches  us/launch\n";
  for (size_t k = 0; k < std::min(top_ops, by_time.size()); ++k) {
    const OpTiming& t = timings[by_time[k].second];
    out << std::setprecision(1) << "  " << std::setw(14) << ms(by_time[k].first) << std::setw(7)
        << share(by_time[k].first) << std::setw(10) << t.launches << std::setw(11)
        << std::setprecision(2) << static_cast<double>(by_time[k].first) / 1e3 / t.launches << "  "
        << impl_->graph.op(by_time[k].second).describe() << "\n";
  }
  return out.str();
}

}  // namespace tempo
