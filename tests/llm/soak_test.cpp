// Soak: decoding 6,000 tokens with a sliding window keeps resident memory flat after warm-up:
// the window's K/V store holds the last W steps, and nothing else grows per token.
#include <gtest/gtest.h>

#include <cstdlib>

#include "api/tempo.h"
#include "driver/compile.h"
#include "llm/llama.h"
#include "util/resident.h"

namespace tempo::llm {
namespace {

TEST(Soak, WindowDecodingResidentMemoryIsFlat) {
  // Memory over a long run, not the passes: the pass-off rerun would take minutes.
  if (std::getenv("TEMPO_NO_PASS")) GTEST_SKIP() << "a soak test, run with the passes on";
  if (!kResidentMemoryIsTheProgram) GTEST_SKIP() << "AddressSanitizer's quarantine grows";
  const LlamaConfig c = LlamaConfig::tiny();
  const LlamaWeights w = LlamaWeights::random(c, 3);
  Context ctx;
  Dim t = ctx.dim("t", "T"), l = ctx.dim("l", "L");
  HostTensor prompt(DType::Int64, {1, 1});
  prompt.ptr<int64_t>()[0] = 5;
  RT tokens = decode_tokens(ctx, c, w, prompt, t, l, AttentionPattern::sliding(64));
  tokens.retain();
  const int64_t T = 6000;  // bench_soak runs 20,000
  Executable exe = compile(ctx, {{t.bound, T}, {l.bound, c.layers}});
  ResidentSampler rss;
  exe.run();
  rss.stop();
  EXPECT_EQ(exe.get(tokens, {T - 1}).numel(), 1);  // the last step ran
  EXPECT_LT(rss.growth_after_warmup(), int64_t{1} << 20)
      << "after warm-up " << rss.peak_between(0.2, 0.4) << " B, at the end "
      << rss.peak_between(0.8, 1.0) << " B";
}

}  // namespace
}  // namespace tempo::llm
