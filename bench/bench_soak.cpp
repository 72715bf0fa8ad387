// Soak: resident memory over long runs, sampled on a thread (util/resident.h). PPO on
// CartPole-v1 with CleanRL's settings for 2,000 iterations, and greedy decoding of 20,000 tokens
// with a sliding window of 64 (the tiny Llama configuration, random weights): after warm-up,
// memory should stay flat. Prints one table row per run.
//   bench_soak [--iterations N] [--tokens N] [--window W]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>

#include "api/tempo.h"
#include "driver/compile.h"
#include "llm/llama.h"
#include "rl/algorithms/algorithms.h"
#include "util/resident.h"

namespace {

using namespace tempo;

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

void row(const char* run, const std::string& length, double seconds, const ResidentSampler& rss) {
  const int64_t warm = rss.peak_between(0.2, 0.4), end = rss.peak_between(0.8, 1.0);
  std::printf("| %s | %s | %.1f | %.1f | %.1f | %+.2f |\n", run, length.c_str(), seconds,
              mib(warm), mib(end), mib(end - warm));
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void soak_ppo(int64_t iterations) {
  rl::TrainConfig c = rl::TrainConfig::defaults("ppo");
  c.iterations = iterations;
  std::ostringstream log;
  const auto start = std::chrono::steady_clock::now();
  ResidentSampler rss;
  rl::TrainResult res = rl::train(c, &log);
  rss.stop();
  row("PPO CartPole-v1, 4 x 128 steps", cat(res.curve.size(), " iterations"),
      seconds_since(start), rss);
}

void soak_decode(int64_t tokens, int64_t window) {
  const llm::LlamaConfig c = llm::LlamaConfig::tiny();
  const llm::LlamaWeights w = llm::LlamaWeights::random(c, 3);
  Context ctx;
  Dim t = ctx.dim("t", "T"), l = ctx.dim("l", "L");
  HostTensor prompt(DType::Int64, {1, 1});
  prompt.ptr<int64_t>()[0] = 5;
  llm::decode_tokens(ctx, c, w, prompt, t, l, llm::AttentionPattern::sliding(window)).retain();
  const auto start = std::chrono::steady_clock::now();
  ResidentSampler rss;
  Executable exe = compile(ctx, {{t.bound, tokens}, {l.bound, c.layers}});
  exe.run();
  rss.stop();
  row(cat("decoding, window ", window, ", tiny Llama").c_str(), cat(tokens, " tokens"),
      seconds_since(start), rss);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t iterations = 2000, tokens = 20000, window = 64;
  for (int k = 1; k + 1 < argc; k += 2) {
    const int64_t v = std::stoll(argv[k + 1]);
    if (!std::strcmp(argv[k], "--iterations")) iterations = v;
    else if (!std::strcmp(argv[k], "--tokens")) tokens = v;
    else if (!std::strcmp(argv[k], "--window")) window = v;
  }
  std::printf("| run | length | s | RSS after warm-up MiB | RSS at the end MiB | growth MiB |\n");
  std::printf("|---|---|---|---|---|---|\n");
  soak_ppo(iterations);
  soak_decode(tokens, window);
  return 0;
}
