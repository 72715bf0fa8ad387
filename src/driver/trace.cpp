// The trace of a compiled program from the executor's buffer events; copy times.
#include "driver/trace.h"
#include "driver/compile.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "backend/libtorch_backend.h"
#include "driver/memory_plan.h"
#include "runtime/tensor_store.h"

namespace tempo::driver {

struct TraceRecorder::Impl {
  runtime::BufferTrace events;
  std::vector<std::string> op_names;
  std::vector<std::vector<int64_t>> op_holders;
};

TraceRecorder::TraceRecorder() : impl_(std::make_unique<Impl>()) {}
TraceRecorder::~TraceRecorder() = default;

void TraceRecorder::attach(Executable& exe) {
  trace_buffers(exe, &impl_->events);
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
