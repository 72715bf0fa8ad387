// Soak: a long PPO run keeps its resident memory flat after warm-up (no growth per iteration
// from the executor, the stores, the environments or the logs). bench_soak runs the 2,000
// iterations of bench/README; this is a shorter run of the same program.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <sstream>

#include "rl/algorithms/algorithms.h"
#include "util/resident.h"

namespace tempo::rl {
namespace {

TEST(Soak, PpoResidentMemoryIsFlatAfterWarmup) {
  // Memory over a long run, not the passes: the pass-off rerun would take minutes.
  if (std::getenv("TEMPO_NO_PASS")) GTEST_SKIP() << "a soak test, run with the passes on";
  if (!kResidentMemoryIsTheProgram) GTEST_SKIP() << "AddressSanitizer's quarantine grows";
  TrainConfig c = TrainConfig::defaults("ppo");
  c.iterations = 300;
  std::ostringstream log;
  // Sampled from the end of compilation: on a loaded machine compiling can take half the wall
  // time, and its lower memory would then pass for the run's warm-up.
  std::optional<ResidentSampler> rss;
  c.on_compiled = [&](Executable&) { rss.emplace(); };
  TrainResult res = train(c, &log);
  ASSERT_TRUE(rss.has_value());
  rss->stop();
  ASSERT_EQ(res.curve.size(), 300u);
  // The point stores' old growth (~45 KB per iteration) put ~8 MiB between those fifths.
  EXPECT_LT(rss->growth_after_warmup(), int64_t{1} << 20)
      << "after warm-up " << rss->peak_between(0.2, 0.4) << " B, at the end "
      << rss->peak_between(0.8, 1.0) << " B";
}

}  // namespace
}  // namespace tempo::rl
