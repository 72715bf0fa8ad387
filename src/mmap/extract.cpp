// Instances from traced runs of Tempo programs; the copy-time model.
#include "mmap/extract.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unordered_map>

#include "backend/libtorch_backend.h"
#include "driver/memory_plan.h"
#include "llm/llama.h"
#include "rl/algorithms/algorithms.h"
#include "util/error.h"

namespace tempo::mmap {

std::string CopyModel::str() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.2f us + %.2f GB/s", latency_us,
                us_per_byte > 0 ? 1e-3 / us_per_byte : 0.0);
  return buf;
}

CopyModel measure_copy_model() {
  using Clock = std::chrono::steady_clock;
  auto backend = backend::make_libtorch_backend(backend::default_device());
  // The median time of 9 copies of each size.
  auto time_us = [&](int64_t bytes) {
    runtime::ValuePtr v = backend->from_host(ir::HostTensor(ir::DType::Float32, {bytes / 4}));
    std::vector<double> times;
    for (int rep = 0; rep < 9; ++rep) {
      const auto t0 = Clock::now();
      runtime::ValuePtr copy = backend->evict(*v);
      times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  // The bandwidth from the large copies, the latency from the smallest.
  const int64_t small = int64_t{4} << 10, mid = int64_t{4} << 20, large = int64_t{32} << 20;
  const double t_small = time_us(small), t_mid = time_us(mid), t_large = time_us(large);
  CopyModel m;
  m.us_per_byte = (t_large - t_mid) / static_cast<double>(large - mid);
  if (!(m.us_per_byte > 0)) m.us_per_byte = t_large / static_cast<double>(large);
  m.latency_us = std::max(0.0, t_small - m.us_per_byte * static_cast<double>(small));
  return m;
}

Instance instance_from_trace(const runtime::BufferTrace& trace, const CopyModel& copy,
                             const TraceOptions& options, const std::string& name,
                             TraceSummary* summary) {
  using Kind = runtime::BufferTrace::Kind;
  const size_t statements = trace.ends.size();
  if (statements == 0) throw UserError(cat("the trace of ", name, " has no statements"));
  struct Tensor {
    int64_t bytes = 0, start = 0, end = -1;
    std::vector<int64_t> reads;
    int64_t op = -1;
  };
  std::vector<Tensor> tensors;
  std::unordered_map<const void*, size_t> live;
  size_t e = 0;
  for (size_t k = 0; k < statements; ++k) {
    const int64_t step = static_cast<int64_t>(k);
    for (; e < trace.ends[k]; ++e) {
      const runtime::BufferTrace::Event& ev = trace.events[e];
      switch (ev.kind) {
        case Kind::Acquire:
          live[ev.storage] = tensors.size();
          tensors.push_back({ev.bytes, step, -1, {}, k < trace.ops.size() ? trace.ops[k] : -1});
          break;
        case Kind::Use:
          if (auto it = live.find(ev.storage); it != live.end()) {
            Tensor& t = tensors[it->second];
            if (step > t.start && (t.reads.empty() || t.reads.back() != step))
              t.reads.push_back(step);
          }
          break;
        case Kind::Release:
          if (auto it = live.find(ev.storage); it != live.end()) {
            tensors[it->second].end = step;
            live.erase(it);
          }
          break;
      }
    }
  }
  const int64_t last = static_cast<int64_t>(statements);  // the end of the program
  for (auto& [storage, index] : live) tensors[index].end = last;

  TraceSummary sum;
  sum.tensors = static_cast<int64_t>(tensors.size());
  for (int64_t b : trace.device_bytes) sum.peak_bytes = std::max(sum.peak_bytes, b);
  for (const Tensor& t : tensors) sum.tensor_op.push_back(t.op);
  Instance inst;
  inst.name = name;
  inst.capacity = std::max<int64_t>(
      1, static_cast<int64_t>(options.capacity_fraction * static_cast<double>(sum.peak_bytes)));
  inst.supply.resize(statements + 1, 0.0);
  for (size_t k = 0; k < statements; ++k) inst.supply[k] = static_cast<double>(trace.ns[k]) * 1e-3;
  int64_t alias = 0;
  for (size_t j = 0; j < tensors.size(); ++j) {
    const Tensor& t = tensors[j];
    if (t.bytes < options.min_bytes) {
      ++sum.too_small;
      continue;
    }
    if (t.bytes > inst.capacity) {
      ++sum.too_large;
      continue;
    }
    const double cost = copy.time_us(t.bytes);
    auto add = [&](int64_t time, bool out) {
      Buffer b;
      b.size = t.bytes;
      b.time = time;
      b.start = t.start;
      b.end = std::max(t.end, t.start);
      b.is_output = out;
      b.tensor_id = static_cast<int64_t>(j);
      b.alias_id = alias++;  // Tempo's stores alias nothing across tensors: one group each
      b.benefit = cost;
      b.demand = cost;
      inst.buffers.push_back(b);
    };
    add(t.start, true);
    for (int64_t r : t.reads) add(r, false);
  }
  std::stable_sort(inst.buffers.begin(), inst.buffers.end(), [](const Buffer& a, const Buffer& b) {
    if (a.time != b.time) return a.time < b.time;
    return a.is_output < b.is_output;
  });
  if (summary) *summary = sum;
  inst.validate();
  return inst;
}

namespace {

// Turns the trace on and records what the summary says of the program's ops.
void start_trace(Executable& exe, runtime::BufferTrace& trace, TraceSummary* ops) {
  driver::trace_buffers(exe, &trace);
  if (!ops) return;
  ops->op_names = driver::describe_ops(exe);
  ops->op_holders.clear();
  for (const auto& h : driver::storage_holders(exe))
    ops->op_holders.emplace_back(h.begin(), h.end());
}

// The instance of a trace, with the ops' names and holders recorded when it started.
Instance traced_instance(const runtime::BufferTrace& trace, TraceSummary&& ops,
                         const CopyModel& copy, const TraceOptions& options,
                         const std::string& name, TraceSummary* summary) {
  Instance inst = instance_from_trace(trace, copy, options, name, summary);
  if (summary) {
    summary->op_names = std::move(ops.op_names);
    summary->op_holders = std::move(ops.op_holders);
  }
  return inst;
}

}  // namespace

std::string RlProgram::name() const {
  std::string shape;
  for (size_t k = 0; k < obs_shape.size(); ++k) shape += cat(k ? "x" : "", obs_shape[k]);
  return cat(algo, "-", env, env == "synthetic" ? cat("-", shape) : std::string());
}

runtime::BufferTrace trace_rl_program(const RlProgram& program, TraceSummary* ops) {
  rl::TrainConfig cfg = rl::TrainConfig::defaults(program.algo);
  cfg.env = program.env;
  cfg.env_options.obs_shape = program.obs_shape;
  cfg.iterations = program.iterations;
  cfg.num_envs = program.num_envs;
  cfg.steps = program.steps;
  cfg.compile.seed = program.seed;
  if (cfg.algo == "ppo") {
    cfg.epochs = 1;
    cfg.minibatches = 2;
  }
  runtime::BufferTrace trace;
  cfg.on_compiled = [&](Executable& exe) { start_trace(exe, trace, ops); };
  rl::train(cfg, nullptr);
  return trace;
}

Instance extract_rl_instance(const RlProgram& program, const CopyModel& copy,
                             const TraceOptions& options, TraceSummary* summary) {
  TraceSummary ops;
  const runtime::BufferTrace trace = trace_rl_program(program, &ops);
  return traced_instance(trace, std::move(ops), copy, options, program.name(), summary);
}

std::string LlmProgram::name() const {
  std::string a = attention;
  std::replace(a.begin(), a.end(), ':', '-');
  return cat("llm-", config, "-", a, "-", tokens, "x", batch);
}

runtime::BufferTrace trace_llm_program(const LlmProgram& program, TraceSummary* ops) {
  llm::LlamaConfig c;
  if (program.config == "tiny") {
    c = llm::LlamaConfig::tiny();
  } else if (program.config == "1b") {
    c = llm::LlamaConfig::llama_3_2_1b();
  } else if (program.config == "3b") {
    c = llm::LlamaConfig::llama_3_2_3b();
  } else {
    throw UserError(cat("LLM config '", program.config, "': expected tiny, 1b or 3b"));
  }
  const llm::AttentionPattern pattern = llm::AttentionPattern::parse(program.attention);
  llm::check_lengths(c, pattern, 1, program.tokens);
  HostTensor prompt(DType::Int64, {1, program.batch});  // token 0 starts every sequence
  Context ctx;
  Dim t = ctx.dim("t", "T"), l = ctx.dim("l", "L");
  llm::decode_tokens(ctx, c, llm::LlamaWeights::random(c, program.seed), prompt, t, l, pattern)
      .retain();
  CompileOptions o;
  o.seed = program.seed;
  Executable exe = ctx.compile({{t.bound, program.tokens}, {l.bound, c.layers}}, o);
  runtime::BufferTrace trace;
  start_trace(exe, trace, ops);
  exe.run();
  return trace;
}

Instance extract_llm_instance(const LlmProgram& program, const CopyModel& copy,
                              const TraceOptions& options, TraceSummary* summary) {
  TraceSummary ops;
  const runtime::BufferTrace trace = trace_llm_program(program, &ops);
  return traced_instance(trace, std::move(ops), copy, options, program.name(), summary);
}

}  // namespace tempo::mmap
