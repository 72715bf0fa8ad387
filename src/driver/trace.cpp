// The trace of a compiled program from the executor's buffer events; copy times.
#include "driver/trace.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "backend/libtorch_backend.h"
#include "backend/measure_backend.h"
#include "driver/executable_impl.h"
#include "runtime/tensor_store.h"

namespace tempo::driver {

namespace {

// Per op id: the ops whose stores may hold the same storage as its output without a copy (a
// Merge choosing it, a view of it, and so on transitively). A trace names a storage by the op
// that first stored it; these are the other names it has.
std::vector<std::vector<ir::OpId>> storage_holders(Executable& exe) {
  const ir::Graph& g = exe.impl().graph;
  std::vector<std::vector<ir::OpId>> direct(g.num_ops()), out(g.num_ops());
  for (const ir::OpNode& op : g.ops()) {
    const bool merge = op.kind == ir::OpKind::Merge;
    if (!merge && !backend::is_view(op.kind)) continue;
    for (size_t k = 0; k < op.inputs.size() && (merge || k == 0); ++k)
      direct[static_cast<size_t>(g.edge(op.inputs[k]).source)].push_back(op.id);
  }
  for (size_t x = 0; x < direct.size(); ++x) {
    std::vector<ir::OpId> todo = direct[x];
    std::vector<bool> seen(g.num_ops(), false);
    while (!todo.empty()) {
      const ir::OpId y = todo.back();
      todo.pop_back();
      if (seen[static_cast<size_t>(y)]) continue;
      seen[static_cast<size_t>(y)] = true;
      out[x].push_back(y);
      for (ir::OpId z : direct[static_cast<size_t>(y)]) todo.push_back(z);
    }
  }
  return out;
}

// Per op id of the compiled (optimized) program: the op's description, the RT and the line that
// created it, as SwapCandidate::rt and the trace's op ids refer to them.
std::vector<std::string> describe_ops(Executable& exe) {
  const ir::Graph& g = exe.impl().graph;
  std::vector<std::string> out;
  for (ir::OpId op = 0; op < static_cast<ir::OpId>(g.num_ops()); ++op)
    out.push_back(g.op(op).describe());
  return out;
}

}  // namespace

struct TraceRecorder::Impl {
  runtime::BufferTrace events;
  std::vector<std::string> op_names;
  std::vector<std::vector<int64_t>> op_holders;
};

TraceRecorder::TraceRecorder() : impl_(std::make_unique<Impl>()) {}
TraceRecorder::~TraceRecorder() = default;

void TraceRecorder::attach(Executable& exe) {
  exe.impl().executor->trace_buffers(&impl_->events);
  impl_->op_names = describe_ops(exe);
  impl_->op_holders.clear();
  for (const auto& h : storage_holders(exe)) impl_->op_holders.emplace_back(h.begin(), h.end());
}

namespace {

// The storages of a buffer trace: its addresses are identities only while held, so each
// Acquire starts a new storage. Reads in the acquiring statement are not reads of the storage
// (the statement writes it); Uses and Releases of storages acquired before the trace started are
// left out.
std::vector<TracedStorage> storages_of(const runtime::BufferTrace& trace) {
  using Kind = runtime::BufferTrace::Kind;
  std::vector<TracedStorage> out;
  std::unordered_map<const void*, size_t> live;
  size_t e = 0;
  for (size_t k = 0; k < trace.ends.size(); ++k) {
    const int64_t step = static_cast<int64_t>(k);
    for (; e < trace.ends[k]; ++e) {
      const runtime::BufferTrace::Event& ev = trace.events[e];
      auto it = live.find(ev.storage);
      switch (ev.kind) {
        case Kind::Acquire:
          live[ev.storage] = out.size();
          out.push_back({ev.bytes, step, -1, {}, k < trace.ops.size() ? trace.ops[k] : -1});
          break;
        case Kind::Use:
          if (it != live.end()) {
            TracedStorage& s = out[it->second];
            if (step > s.start && (s.reads.empty() || s.reads.back() != step))
              s.reads.push_back(step);
          }
          break;
        case Kind::Release:
          if (it != live.end()) {
            out[it->second].end = step;
            live.erase(it);
          }
          break;
      }
    }
  }
  const int64_t last = static_cast<int64_t>(trace.ends.size());  // the end of the program
  for (const auto& [storage, index] : live) out[index].end = last;
  return out;
}

}  // namespace

ProgramTrace TraceRecorder::trace() const {
  const runtime::BufferTrace& events = impl_->events;
  ProgramTrace out;
  out.statements.resize(events.ends.size());
  for (size_t k = 0; k < out.statements.size(); ++k)
    out.statements[k] = {events.ns[k], events.ops[k], events.device_bytes[k]};
  out.storages = storages_of(events);
  out.op_names = impl_->op_names;
  out.op_holders = impl_->op_holders;
  return out;
}

std::vector<double> median_copy_us(const std::vector<int64_t>& sizes, int repetitions) {
  using Clock = std::chrono::steady_clock;
  auto backend = backend::make_libtorch_backend(backend::default_device());
  std::vector<double> out;
  for (int64_t bytes : sizes) {
    runtime::ValuePtr v = backend->from_host(ir::HostTensor(ir::DType::Float32, {bytes / 4}));
    std::vector<double> times;
    for (int rep = 0; rep < repetitions; ++rep) {
      const auto t0 = Clock::now();
      runtime::ValuePtr copy = backend->evict(*v);
      times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    out.push_back(times[times.size() / 2]);
  }
  return out;
}

}  // namespace tempo::driver
