// Instances from Tempo programs: the traced buffers of a small recurrent program agree with its
// memory timeline (CompileOptions::memory_timeline) step by step; an RL program gives a valid
// instance; the copy model is measured.
#include "driver/compile.h"
#include "mmap/extract.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "api/tempo.h"
#include "driver/trace.h"
#include "expect_error.h"
#include "mmap/baselines.h"

namespace tempo::mmap {
namespace {

namespace fs = std::filesystem;

// o[t] from a source (4 KiB per step), a running state s[t + 1] = 0.5 s[t] + o[t], and a
// learner that reads the whole rollout o[0:T] after the loop.
struct Program {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT learned;
  Program() {
    auto fn = [](const std::vector<ir::HostTensor>&, const std::vector<int64_t>& p) {
      ir::HostTensor h(DType::Float32, {1024});
      for (int64_t k = 0; k < 1024; ++k) h.set(k, static_cast<double>(p[0] + k));
      return std::vector<ir::HostTensor>{h};
    };
    RT o = ctx.udf("obs", fn, {}, {{DType::Float32, {1024}}}, {t})[0];
    RT s = ctx.placeholder({DType::Float32, {1024}}, {t}, "s");
    s[0] = o[0];
    s[t.var + 1] = s[t.var] * 0.5 + o;
    RT last = s[t.bound - 1];
    learned = (o[slice(0, t.bound)].sum(0) * last).named("learned").retain();
  }
};

std::vector<int64_t> timeline_device_bytes(const std::string& csv) {
  std::ifstream f(csv);
  std::string line;
  std::getline(f, line);  // header
  std::vector<int64_t> out;
  while (std::getline(f, line)) {
    std::vector<std::string> cols;
    std::stringstream ss(line);
    std::string c;
    while (std::getline(ss, c, ',')) cols.push_back(c);
    out.push_back(std::stoll(cols.at(3)));
  }
  return out;
}

TEST(Extract, BuffersMatchTheMemoryTimeline) {
  const fs::path csv = fs::temp_directory_path() / "tempo_mmap_extract_timeline.csv";
  Program p;
  CompileOptions co;
  co.memory_timeline = csv.string();
  driver::TraceRecorder recorder;
  Executable exe = compile(p.ctx, {{p.t.bound, 24}}, co);
  recorder.attach(exe);
  exe.run();
  const driver::ProgramTrace trace = recorder.trace();
  const std::vector<int64_t> timeline = timeline_device_bytes(csv.string());
  ASSERT_EQ(trace.statements.size(), timeline.size());
  ASSERT_GT(timeline.size(), 24u);

  TraceOptions to;
  to.capacity_fraction = 1.0;  // the whole peak: no tensor is left out
  to.min_bytes = 0;
  TraceSummary sum;
  CopyModel copy;  // the default model: 1 us + 4 GB/s
  const Instance inst = instance_from_trace(trace, copy, to, "recurrence", &sum);
  EXPECT_EQ(inst.steps(), static_cast<int64_t>(timeline.size()) + 1);
  EXPECT_EQ(sum.too_large, 0);
  EXPECT_EQ(sum.peak_bytes, *std::max_element(timeline.begin(), timeline.end()));
  EXPECT_EQ(inst.capacity, sum.peak_bytes);
  // Each tensor (its output buffer) is live from its write to its release: summed over the
  // tensors live after each statement, the sizes are the timeline's device bytes.
  const int64_t end = inst.steps() - 1;
  std::vector<int64_t> live(timeline.size(), 0);
  int64_t tensors = 0, reads = 0;
  for (const Buffer& b : inst.buffers) {
    if (!b.is_output) {
      ++reads;
      EXPECT_GT(b.time, b.start);
      EXPECT_LE(b.time, b.end);
      continue;
    }
    ++tensors;
    EXPECT_EQ(b.time, b.start);
    for (int64_t k = b.start;
         k < static_cast<int64_t>(timeline.size()) && (k < b.end || b.end == end); ++k)
      live[static_cast<size_t>(k)] += b.size;
    EXPECT_DOUBLE_EQ(b.benefit, copy.time_us(b.size));
  }
  EXPECT_EQ(tensors, sum.tensors);
  ASSERT_EQ(sum.tensor_op.size(), static_cast<size_t>(sum.tensors));
  for (int64_t op : sum.tensor_op)
    EXPECT_GE(op, 0);    // each storage acquired by some op's statement
  EXPECT_GT(reads, 24);  // the state and the rollout are read
  for (size_t k = 0; k < timeline.size(); ++k)
    ASSERT_EQ(live[k], timeline[k]) << "after statement " << k;
  // The observation rows (4 KiB each) are among the tensors, each read by the learner.
  int64_t rows = 0;
  for (const Buffer& b : inst.buffers) rows += b.is_output && b.size == 4096;
  EXPECT_GE(rows, 24);
  // Supply: the statements' measured times.
  for (size_t k = 0; k < trace.statements.size(); ++k)
    EXPECT_DOUBLE_EQ(inst.supply[k], static_cast<double>(trace.statements[k].ns) * 1e-3);
  fs::remove(csv);
  fs::remove(fs::path(csv).replace_extension(".svg"));
}

TEST(Extract, HalfTheMemoryMakesAGame) {
  Program p;
  driver::TraceRecorder recorder;
  Executable exe = compile(p.ctx, {{p.t.bound, 24}});
  recorder.attach(exe);
  exe.run();
  const driver::ProgramTrace trace = recorder.trace();
  // Copies too slow for any statement's time to hide: tensors stay in fast memory only by being
  // kept there (NoCopy), and half the peak cannot keep them all.
  CopyModel slow;
  slow.latency_us = 1e9;
  auto inst = std::make_shared<const Instance>(instance_from_trace(trace, slow, {}, "half"));
  const SearchResult h = heuristic(inst);
  EXPECT_FALSE(h.lost);
  EXPECT_GT(h.best_return, 0.0);
  EXPECT_LT(h.best_return, inst->total_benefit());  // not everything fits in half the peak
}

TEST(Extract, ReinforceProgramGivesAnInstance) {
  RlProgram p;
  p.obs_shape = {3, 8, 8};
  p.iterations = 2;
  p.num_envs = 2;
  p.steps = 8;
  TraceSummary sum;
  const Instance inst = extract_rl_instance(p, CopyModel{}, {}, &sum);
  EXPECT_EQ(inst.name, "reinforce-synthetic-3x8x8");
  EXPECT_GT(inst.buffers.size(), 100u);
  EXPECT_GT(sum.peak_bytes, 0);
  EXPECT_NO_THROW(inst.validate());
  MMapGame g(inst);
  EXPECT_FALSE(g.done());
}

TEST(Extract, CopyModelIsMeasured) {
  const CopyModel m = measure_copy_model();
  EXPECT_GE(m.latency_us, 0.0);
  EXPECT_GT(m.us_per_byte, 0.0);
  // A copy of 1 MiB takes between 1 us and 100 ms on any machine this runs on.
  EXPECT_GT(m.time_us(1 << 20), 1.0);
  EXPECT_LT(m.time_us(1 << 20), 1e5);
}

TEST(Extract, LlmDecodingGivesAnInstance) {
  LlmProgram p;
  p.tokens = 12;
  p.batch = 2;
  p.attention = "window:4";
  TraceSummary sum;
  const Instance inst = extract_llm_instance(p, CopyModel{}, {}, &sum);
  EXPECT_EQ(inst.name, "llm-tiny-window-4-12x2");
  EXPECT_GT(inst.buffers.size(), 100u);
  EXPECT_NO_THROW(inst.validate());
  bool cache = false;  // the K/V cache's points are among the traced tensors
  for (int64_t op : sum.tensor_op)
    if (op >= 0)
      cache |= sum.op_names[static_cast<size_t>(op)].find("llama.cpp") != std::string::npos;
  EXPECT_TRUE(cache);
  const SearchResult h = heuristic(std::make_shared<const Instance>(inst));
  EXPECT_FALSE(h.lost);
  EXPECT_GT(h.best_return, 0.0);
  testing::expect_user_error(
      [&] {
        LlmProgram bad;
        bad.config = "7b";
        extract_llm_instance(bad, CopyModel{});
      },
      {"expected tiny, 1b or 3b"});
}

}  // namespace
}  // namespace tempo::mmap
