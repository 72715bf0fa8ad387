// The compiler driver: compile() as a list of stages, and the Executable it returns.
#include "driver/compile.h"

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
#include "util/env.h"
#include "util/error.h"

namespace tempo {

namespace {

using Clock = std::chrono::steady_clock;

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

// What a compilation runs with: the caller's options overridden by the environment. Every
// TEMPO_* switch of compilation is read here: TEMPO_NO_<FEATURE>=1 turns a feature off in any
// program without recompiling it (e.g. to run the test suite with it off).
struct Settings {
  CompileOptions options;
  bool schedule_in_child = true;    // TEMPO_SCHEDULE_IN_PROCESS=1: isl solves in this process
  bool check_cuda_kernels = false;  // TEMPO_CHECK_CUDA_KERNELS=1 (backend::BackendOptions)
};

// The non-empty names of a comma-separated list ("vectorize,lifting").
std::vector<std::string> names_in(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');)
    if (!name.empty()) out.push_back(name);
  return out;
}

Settings settings_from(const CompileOptions& options) {
  Settings s{options};
  CompileOptions& o = s.options;
  // TEMPO_NO_PASS=vectorize,lifting (or =all)
  if (const char* off = std::getenv("TEMPO_NO_PASS"))
    for (const std::string& name : names_in(off)) o.passes.set(name, false);
  o.codegen &= !env_flag("TEMPO_NO_CODEGEN");
  if (const char* l = std::getenv("TEMPO_LOOP_SCHEDULES"); l && *l)
    o.loop_schedules = backend::parse_loop_schedules(l, "TEMPO_LOOP_SCHEDULES");
  if (const char* l = std::getenv("TEMPO_LOOP_TIMINGS"); l && *l) o.loop_timings = l;
  o.block_stores &= !env_flag("TEMPO_NO_BLOCK_STORES");
  o.donation &= !env_flag("TEMPO_NO_DONATION");
  o.schedule_cache &= !env_flag("TEMPO_NO_SCHEDULE_CACHE");
  if (const char* d = std::getenv("TEMPO_DUMP"); d && *d) o.dump = d;
  if (const char* d = std::getenv("TEMPO_DUMP_DIR"); d && *d) o.dump_dir = d;
  if (o.verbose && o.dump.empty()) o.dump = "donation";  // verbose shows the final schedule
  s.schedule_in_child = !env_flag("TEMPO_SCHEDULE_IN_PROCESS");
  s.check_cuda_kernels = env_flag("TEMPO_CHECK_CUDA_KERNELS");
  return s;
}

// A compilation in progress: what the stages read, and the executable they fill in.
struct Compilation {
  const Context& ctx;
  const Bounds& bounds;
  Settings settings;
  const CompileOptions& options;  // settings.options
  Loc loc;
  std::unique_ptr<Executable::Impl> impl;
  schedule::ScheduleOptions schedule_options;

  Compilation(const Context& c, const Bounds& b, const CompileOptions& o, Loc l)
      : ctx(c),
        bounds(b),
        settings(settings_from(o)),
        options(settings.options),
        loc(l),
        impl(std::make_unique<Executable::Impl>()) {}
  void log(const std::string& line) const {
    if (options.verbose) std::cerr << "[tempo] " << line << "\n";
  }
};

void validate(Compilation& c) {
  const ir::Graph& g = c.ctx.graph();
  ir::validate(g);
  check_bounds(g, c.bounds, c.loc);
  check_tiles(c.ctx.dims(), c.options.passes, c.bounds, c.loc);
  if (c.options.memory_budget < 0)
    throw UserError(cat("compile at ", where(c.loc),
                        ": memory_budget must be positive (bytes), got ", c.options.memory_budget));
  if (c.options.schedule_memory_limit < 0 || !(c.options.schedule_time_limit >= 0))
    throw UserError(cat("compile at ", where(c.loc), ": schedule_memory_limit (bytes) and ",
                        "schedule_time_limit (seconds) must not be negative (0: the default ",
                        "memory limit, no time limit), got ", c.options.schedule_memory_limit,
                        " and ", c.options.schedule_time_limit));
  c.log(cat("SDG: ", g.num_ops(), " ops, ", g.num_edges(), " edges"));
  Executable::Impl& impl = *c.impl;
  impl.ctx = &c.ctx;
  impl.dims = c.ctx.dims();
  impl.bounds = c.bounds;
  impl.options = c.options;
}

// The pass pipeline (passes/pipeline.cpp) over the user's SDG, into the executable. `tile_above`
// > 0 tiles windows above it where the options do not say otherwise (tiling for memory), and
// `for_memory` interleaves what can run as a recurrence goes and recomputes cheap activations
// (PassOptions::interleave, ::recompute).
void run_passes(Compilation& c, int64_t tile_above, bool for_memory) {
  passes::Program program(c.ctx.graph(), c.ctx.retained());
  for (const auto& [b, v] : c.bounds) program.bound_values.emplace_back(b.name(), v);
  passes::Options po = c.options.passes;
  po.verbose |= c.options.verbose;
  if (po.tile_above_bytes == 0) po.tile_above_bytes = tile_above;
  po.interleave |= for_memory;
  po.recompute |= for_memory;
  passes::run_pipeline(program, po);
  c.impl->graph = std::move(program.graph);
  c.impl->retained = std::move(program.retained);
  c.impl->op_map = std::move(program.op_map);
}

void optimize(Compilation& c) {
  run_passes(c, 0, false);
}

void schedule_program(Compilation& c) {
  Executable::Impl& impl = *c.impl;
  schedule::ScheduleOptions& so = c.schedule_options;
  so.retained = impl.retained;
  so.whole_component = c.options.whole_component;
  so.proximity = c.options.proximity;
  so.deallocate = c.options.deallocate;
  so.fuse = c.options.fuse;
  so.solve_in_child = c.settings.schedule_in_child;
  so.child_memory_limit = c.options.schedule_memory_limit;
  so.time_limit_s = c.options.schedule_time_limit;
  if (c.options.schedule_cache) so.cache_dir = cache_dir() + "/schedules";
  for (const auto& [b, v] : c.bounds) so.known_bounds.emplace_back(b.name(), v);
  impl.schedule = schedule::compute_schedule(impl.graph, so);
  c.log(cat(impl.schedule.from_cache ? "from the schedule cache: " : "",
            "isl statements: ", impl.schedule.num_statements,
            impl.schedule.fused ? " (fused" : " (unfused",
            impl.schedule.bounded ? ", lifetimes bounded)" : ", lifetimes unbounded)"));
}

// Under a budget (TEMPO §5.2): the program as it is when it fits; otherwise tiled for memory
// (windows that could take a quarter of the budget), re-optimized and scheduled with swapping.
void plan_memory(Compilation& c) {
  const CompileOptions& o = c.options;
  if (o.memory_budget <= 0) return;
  Executable::Impl& impl = *c.impl;
  auto log = [&](const std::string& line) { c.log(line); };
  const driver::MemoryEstimate est = driver::estimate_memory(impl.graph, impl.schedule, impl.dims,
                                                             c.bounds, driver::budget_blocks(o));
  log(cat("memory: estimated peak ", driver::bytes_str(est.peak), " as written (budget ",
          driver::bytes_str(o.memory_budget), ")"));
  if (est.peak <= o.memory_budget) return;
  run_passes(c, std::max<int64_t>(1, o.memory_budget / 4), true);
  c.schedule_options.retained = impl.retained;
  try {
    impl.schedule =
        driver::schedule_within_budget(impl.graph, c.schedule_options, impl.dims, c.bounds, o, log);
  } catch (const UserError& e) {
    throw UserError(cat(e.what(), " (compile at ", where(c.loc), ")"));
  }
}

// Buffer donation (TEMPO §5.2): last readers take their inputs over, and generated loops write
// into those buffers.
void donate(Compilation& c) {
  if (c.options.donation)
    c.impl->schedule = schedule::donate_buffers(c.impl->graph, c.impl->schedule);
}

void make_backend(Compilation& c) {
  Executable::Impl& impl = *c.impl;
  backend::BackendOptions bo;
  bo.codegen = c.options.codegen;
  bo.loop_schedules = c.options.loop_schedules;
  bo.loop_schedule_policy = c.options.loop_schedule_policy;
  bo.loop_timings = c.options.loop_timings;
  if (c.options.verbose)  // also at run time, where measured choices are made
    bo.log = [](const std::string& line) { std::cerr << "[tempo] " << line << "\n"; };
  bo.donation = c.options.donation;
  bo.keep_constants = c.options.memory_budget <= 0;
  bo.check_cuda_kernels = c.settings.check_cuda_kernels;
  bo.process_group = driver::process_group_of(c.options.communicator);
  if (bo.process_group)
    driver::check_same_schedule(*bo.process_group, impl.schedule.str(impl.graph), where(c.loc));
  const std::string device =
      c.options.device.empty() ? backend::default_device() : c.options.device;
  impl.backend = backend::make_libtorch_backend(device, bo);
  impl.backend->seed(c.options.seed);
  if (const std::string blas = backend::blas_kernels(); !blas.empty())
    c.log(cat("backend: ", device, ", BLAS ", blas));
}

void make_executor(Compilation& c) {
  Executable::Impl& impl = *c.impl;
  runtime::Blocks blocks =
      c.options.memory_budget > 0 ? driver::budget_blocks(c.options) : runtime::Blocks::All;
  if (!c.options.block_stores) blocks = runtime::Blocks::None;
  impl.executor = std::make_unique<runtime::Executor>(impl.graph, impl.schedule, *impl.backend,
                                                      impl.dims, blocks);
  impl.executor->set_profiling(c.options.profile);
  impl.executor->record_memory(!c.options.memory_timeline.empty());
  if (!impl.executor->prepare_report().empty()) c.log(impl.executor->prepare_report());
}

// ---- what each stage's dump shows ----
std::string user_graph_str(const Compilation& c) {
  return c.ctx.graph().str();
}
std::string graph_str(const Compilation& c) {
  return c.impl->graph.str();
}
std::string schedule_str(const Compilation& c) {
  return c.impl->schedule.str(c.impl->graph);
}
// Under a budget the program may have been optimized again for memory: its graph, then schedule.
std::string memory_plan_str(const Compilation& c) {
  return graph_str(c) + schedule_str(c);
}
std::string backend_str(const Compilation& c) {
  return cat("device ", c.impl->backend->device(), ", generated code ",
             c.options.codegen ? "on" : "off", ", donation ", c.options.donation ? "on" : "off",
             "\n");
}
// Each op output's store (TEMPO §6) and what preparing the backend made of the regions.
std::string executor_str(const Compilation& c) {
  const runtime::Executor& ex = *c.impl->executor;
  std::ostringstream out;
  for (const ir::OpNode& op : c.impl->graph.ops())
    for (size_t k = 0; k < op.outputs.size(); ++k)
      if (const runtime::PointStore* st = ex.store(op.id, static_cast<int>(k))) {
        out << op.describe() << " output " << k << ": ";
        if (!st->blocked())
          out << "point store\n";
        else if (st->window() > 0)
          out << "window store (" << st->window() << " points)\n";
        else
          out << "block store\n";
      }
  out << ex.prepare_report() << "\n";
  return out.str();
}

struct Stage {
  const char* name;
  void (*run)(Compilation&);
  std::string (*dump)(const Compilation&);  // its result as text (CompileOptions::dump)
};

// The outer lowering, in order: each stage reads what the stages before it made.
constexpr Stage kStages[] = {
    // The user's SDG, bounds and options checked before anything is derived from them.
    {"validate", validate, user_graph_str},
    // The whole-program optimizations (TEMPO §4; passes/pipeline.cpp lists them).
    {"passes", optimize, graph_str},
    // isl's schedule and its AST, with deallocations (TEMPO §5; schedule/).
    {"schedule", schedule_program, schedule_str},
    // Under CompileOptions::memory_budget: measured, then re-optimized and swapped until it fits;
    // before donation, which must see the final lifetimes.
    {"memory-plan", plan_memory, memory_plan_str},
    {"donation", donate, schedule_str},
    {"backend", make_backend, backend_str},
    // Stores, launchers and generated kernels: everything run() needs, built once (TEMPO §6).
    {"executor", make_executor, executor_str},
};

// The stages named by CompileOptions::dump ("all" or comma-separated names).
std::vector<bool> stages_to_dump(const std::string& spec) {
  std::vector<bool> on(std::size(kStages), false);
  for (const std::string& name : names_in(spec)) {
    bool found = false;
    for (size_t k = 0; k < on.size(); ++k)
      if (name == "all" || name == kStages[k].name) on[k] = found = true;
    if (!found) {
      std::string all = "all";
      for (const Stage& s : kStages) all += cat(", ", s.name);
      throw UserError(cat("unknown compile stage '", name, "' to dump; the stages are ", all));
    }
  }
  return on;
}

void dump_stage(const Compilation& c, size_t k) {
  const std::string text = kStages[k].dump(c);
  if (c.options.dump_dir.empty()) {
    std::cerr << "[tempo] ---- after " << kStages[k].name << " ----\n" << text;
    return;
  }
  const std::string path = cat(c.options.dump_dir, "/", k, "-", kStages[k].name, ".txt");
  std::ofstream out(path);
  if (!(out << text))
    throw UserError(cat("dump of compile stage ", kStages[k].name, ": cannot write '", path,
                        "' (CompileOptions::dump_dir / TEMPO_DUMP_DIR)"));
}

}  // namespace

std::vector<std::string> compile_stages() {
  std::vector<std::string> names;
  for (const Stage& s : kStages) names.emplace_back(s.name);
  return names;
}

Executable compile(Context& ctx, const Bounds& bounds, const CompileOptions& options, Loc loc) {
  const auto t_start = Clock::now();
  Compilation c(ctx, bounds, options, loc);
  const std::vector<bool> dump = stages_to_dump(c.options.dump);
  for (size_t k = 0; k < std::size(kStages); ++k) {
    const auto t0 = Clock::now();
    kStages[k].run(c);
    c.log(cat(kStages[k].name, ": ", ms_since(t0), " ms"));
    if (dump[k]) dump_stage(c, k);
  }
  c.log(cat("compiled for ", c.impl->backend->device(), " in ", ms_since(t_start), " ms"));
  return Executable(std::move(c.impl));
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

Executable::Traffic Executable::profile_traffic() const {
  Traffic sum;
  for (const runtime::Executor::OpTiming& t : impl_->executor->op_timings()) {
    sum.launches += t.launches;
    sum.in_bytes += t.in_bytes;
    sum.out_bytes += t.out_bytes;
  }
  return sum;
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
    sum.in_bytes += t.in_bytes;
    sum.out_bytes += t.out_bytes;
    if (t.launches) by_time.emplace_back(t.read_ns + t.kernel_ns + t.write_ns, op);
  }
  std::sort(by_time.rbegin(), by_time.rend());
  const double run_ms = static_cast<double>(ex.profiled_run_ns()) / 1e6;
  auto ms = [](int64_t ns) { return static_cast<double>(ns) / 1e6; };
  auto share = [&](int64_t ns) { return run_ms > 0 ? 100.0 * ms(ns) / run_ms : 0.0; };
  auto mb = [](int64_t bytes) { return static_cast<double>(bytes) / 1e6; };
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
      << " us\n" << std::setprecision(1) << "  traffic  " << mb(sum.in_bytes) << " MB read, "
      << mb(sum.out_bytes)
      << " MB written: the launches' inputs and outputs, the least their kernels move\n"
      << "  top ops:        ms      %  launches  us/launch  MB in+out\n";
  for (size_t k = 0; k < std::min(top_ops, by_time.size()); ++k) {
    const OpTiming& t = timings[by_time[k].second];
    out << std::setprecision(1) << "  " << std::setw(14) << ms(by_time[k].first) << std::setw(7)
        << share(by_time[k].first) << std::setw(10) << t.launches << std::setw(11)
        << std::setprecision(2) << static_cast<double>(by_time[k].first) / 1e3 / t.launches
        << std::setw(11) << std::setprecision(1) << mb(t.in_bytes + t.out_bytes) << "  "
        << impl_->graph.op(by_time[k].second).describe() << "\n";
  }
  return out.str();
}

}  // namespace tempo
