// The decoder's K/V memory against the sequence length, from the memory timeline
// (CompileOptions::memory_timeline): window attention keeps the last W steps of k[t, l] and
// v[t, l], so its peak does not grow with T; causal attention keeps every step.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "api/tempo.h"
#include "driver/compile.h"
#include "llm/llama.h"

namespace tempo::llm {
namespace {

namespace fs = std::filesystem;

struct Timeline {
  int64_t peak = 0;         // the largest device_bytes of the CSV
  int64_t tracked = 0;      // Executable::memory().peak_bytes
  bool names_cache = false;  // rows of the op holding the K/V cache (a region "k_cache+...")
};

// Greedy decoding of T steps (a one-token prompt, batch 4) with the timeline written.
Timeline decode_timeline(const AttentionPattern& p, int64_t T) {
  const LlamaConfig c = LlamaConfig::tiny();
  const LlamaWeights w = LlamaWeights::random(c, 3);
  Context ctx;
  Dim t = ctx.dim("t", "T"), l = ctx.dim("l", "L");
  HostTensor prompt(DType::Int64, {1, 4});
  for (int64_t b = 0; b < 4; ++b) prompt.ptr<int64_t>()[b] = 5 + b;
  decode_tokens(ctx, c, w, prompt, t, l, p).retain();
  const fs::path csv = fs::temp_directory_path() /
                       cat("tempo_llm_timeline_", ::getpid(), "_", p.kind == AttentionPattern::Kind::Causal
                                                                       ? "causal"
                                                                       : "window",
                           "_", T, ".csv");
  CompileOptions o;
  o.memory_timeline = csv.string();
  Executable exe = compile(ctx, {{t.bound, T}, {l.bound, c.layers}}, o);
  exe.run();
  Timeline out;
  out.tracked = exe.memory().peak_bytes;
  std::ifstream in(csv);
  std::string line;
  EXPECT_TRUE(std::getline(in, line) && line == "step,statement,op,device_bytes,host_bytes") << line;
  while (std::getline(in, line)) {  // step,statement,op,device_bytes,host_bytes
    size_t a = line.find(','), b = line.find(',', a + 1), d = line.find(',', b + 1);
    out.names_cache |= line.substr(b + 1, d - b - 1).find("k_cache") != std::string::npos;
    out.peak = std::max<int64_t>(out.peak, std::stoll(line.substr(d + 1, line.find(',', d + 1) - d - 1)));
  }
  EXPECT_TRUE(fs::exists(csv.string().substr(0, csv.string().size() - 4) + ".svg"));
  fs::remove(csv);
  fs::remove(csv.string().substr(0, csv.string().size() - 4) + ".svg");
  return out;
}

TEST(LlamaMemory, WindowCacheIsFlatInTheSequenceLengthCausalGrows) {
  const LlamaConfig c = LlamaConfig::tiny();
  // The K/V bytes one step adds to a cache that keeps every step: all layers, batch 4.
  const int64_t kv_step = c.layers * 2 * 4 * c.kv_heads * c.head_dim() * 4;
  const int64_t T1 = 64, T2 = 256;
  Timeline w1 = decode_timeline(AttentionPattern::sliding(8), T1);
  Timeline w2 = decode_timeline(AttentionPattern::sliding(8), T2);
  Timeline c1 = decode_timeline(AttentionPattern::causal(), T1);
  Timeline c2 = decode_timeline(AttentionPattern::causal(), T2);
  for (const Timeline* x : {&w1, &w2, &c1, &c2}) {
    EXPECT_TRUE(x->names_cache);
    EXPECT_GT(x->peak, 0);
    EXPECT_LE(x->peak, x->tracked);  // the timeline samples after statements; the peak is inside
  }
  // Causal: every step's K/V stays until the end.
  EXPECT_GE(c2.peak - c1.peak, (T2 - T1) * kv_step) << c1.peak << " -> " << c2.peak;
  // Window: what still grows is not the cache: the retained tokens (8 bytes per sequence and
  // step) and, with the passes on, the rotation angles of every position computed in one
  // vectorized op (2 x head_dim floats per step).
  EXPECT_LT(w2.peak - w1.peak, (T2 - T1) * kv_step / 4) << w1.peak << " -> " << w2.peak;
  EXPECT_LT(w2.tracked - w1.tracked, (T2 - T1) * kv_step / 4) << w1.tracked << " -> " << w2.tracked;
  EXPECT_LT(w2.peak, c2.peak / 2);
}

}  // namespace
}  // namespace tempo::llm
