// Instances from traced runs of Tempo programs; the copy-time model.
#include "mmap/extract.h"
#include "driver/compile.h"

#include <algorithm>
#include <cstdio>

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
  // The median time of 9 copies of each size: the bandwidth from the large copies (whose
  // latency is negligible; a slope between two sizes came out near zero on a loaded machine,
  // where noise in one median cancels the difference), the latency from the smallest.
  const int64_t small = int64_t{4} << 10, large = int64_t{32} << 20;
  const std::vector<double> t = driver::median_copy_us({small, large}, 9);
  CopyModel m;
  m.us_per_byte = t[1] / static_cast<double>(large);
  m.latency_us = std::max(0.0, t[0] - m.us_per_byte * static_cast<double>(small));
  return m;
}

Instance instance_from_trace(const driver::ProgramTrace& trace, const CopyModel& copy,
                             const TraceOptions& options, const std::string& name,
                             TraceSummary* summary) {
  const size_t statements = trace.statements.size();
  if (statements == 0) throw UserError(cat("the trace of ", name, " has no statements"));
  const std::vector<driver::TracedStorage>& tensors = trace.storages;
  TraceSummary sum;
  sum.tensors = static_cast<int64_t>(tensors.size());
  for (const driver::TracedStatement& s : trace.statements)
    sum.peak_bytes = std::max(sum.peak_bytes, s.device_bytes);
  for (const driver::TracedStorage& t : tensors) sum.tensor_op.push_back(t.op);
  sum.op_names = trace.op_names;
  sum.op_holders = trace.op_holders;
  Instance inst;
  inst.name = name;
  inst.capacity = std::max<int64_t>(
      1, static_cast<int64_t>(options.capacity_fraction * static_cast<double>(sum.peak_bytes)));
  inst.supply.resize(statements + 1, 0.0);
  for (size_t k = 0; k < statements; ++k)
    inst.supply[k] = static_cast<double>(trace.statements[k].ns) * 1e-3;
  int64_t alias = 0;
  for (size_t j = 0; j < tensors.size(); ++j) {
    const driver::TracedStorage& t = tensors[j];
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

std::string RlProgram::name() const {
  std::string shape;
  for (size_t k = 0; k < obs_shape.size(); ++k) shape += cat(k ? "x" : "", obs_shape[k]);
  return cat(algo, "-", env, env == "synthetic" ? cat("-", shape) : std::string());
}

driver::ProgramTrace trace_rl_program(const RlProgram& program) {
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
  driver::TraceRecorder recorder;
  cfg.on_compiled = [&](Executable& exe) { recorder.attach(exe); };
  rl::train(cfg, nullptr);
  return recorder.trace();
}

Instance extract_rl_instance(const RlProgram& program, const CopyModel& copy,
                             const TraceOptions& options, TraceSummary* summary) {
  return instance_from_trace(trace_rl_program(program), copy, options, program.name(), summary);
}

std::string LlmProgram::name() const {
  std::string a = attention;
  std::replace(a.begin(), a.end(), ':', '-');
  return cat("llm-", config, "-", a, "-", tokens, "x", batch);
}

driver::ProgramTrace trace_llm_program(const LlmProgram& program) {
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
  driver::TraceRecorder recorder;  // outlives the executable
  Executable exe = compile(ctx, {{t.bound, program.tokens}, {l.bound, c.layers}}, o);
  recorder.attach(exe);
  exe.run();
  return recorder.trace();
}

Instance extract_llm_instance(const LlmProgram& program, const CopyModel& copy,
                              const TraceOptions& options, TraceSummary* summary) {
  return instance_from_trace(trace_llm_program(program), copy, options, program.name(), summary);
}

}  // namespace tempo::mmap
