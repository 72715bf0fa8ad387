// Exploration: the decoder's tracked memory per T.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <cstdlib>

#include "api/tempo.h"
#include "llm/llama.h"

namespace tempo::llm {
namespace {

void explore(const AttentionPattern& p, int64_t T, bool layers_first) {
  LlamaConfig c = LlamaConfig::tiny();
  LlamaWeights w = LlamaWeights::random(c, 3);
  Context ctx;
  Dim l = layers_first ? ctx.dim("l", "L") : Dim(), t = ctx.dim("t", "T");
  if (!layers_first) l = ctx.dim("l", "L");
  HostTensor prompt(DType::Int64, {1, 1});
  prompt.ptr<int64_t>()[0] = 1;
  decode_tokens(ctx, c, w, prompt, t, l, p).retain();
  CompileOptions o;
  std::string path = cat("/tmp/tl_", p.str(), "_", T, layers_first ? "_lt" : "_tl", ".csv");
  o.memory_timeline = path;
  Executable exe = ctx.compile({{t.bound, T}, {l.bound, c.layers}}, o);
  exe.run();
  if (std::getenv("SCHED")) std::printf("%s\n", exe.schedule_str().c_str());
  std::printf("%s T=%lld %s peak=%lld live=%lld\n", p.str().c_str(), (long long)T,
              layers_first ? "(l,t)" : "(t,l)", (long long)exe.memory().peak_bytes,
              (long long)exe.memory().live_bytes);
}

TEST(LlamaMemoryExplore, Peaks) {
  for (bool lf : {false, true})
    for (auto p : {AttentionPattern::sliding(8), AttentionPattern::causal()})
      for (int64_t T : {32, 64}) explore(p, T, lf);
  explore(AttentionPattern::sliding(40), 8, false);
  explore(AttentionPattern::sliding(40), 8, true);
}

}  // namespace
}  // namespace tempo::llm
