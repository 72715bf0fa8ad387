// compile()'s stages: each one's dump, and the option's errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "driver/compile.h"
#include "e2e/e2e_util.h"
#include "expect_error.h"

namespace tempo {
namespace {

using testing::expect_user_error;

// s[t + 1] = 0.5 s[t] + x[t], with x read whole by a sum: a recurrence, a batched op and a block.
struct Recurrence {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT total;
  Recurrence() {
    RT x = testing::source(ctx, {t}, {4});
    RT s = ctx.placeholder({DType::Float32, {4}}, {t}, "s");
    s[0] = x[0];
    s[t.var + 1] = s[t.var] * 0.5 + x;
    total = (x[slice(0, t.bound)].sum(0) + s[t.bound - 1]).named("total").retain();
  }
};

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CompileStages, EveryStageDumpsItsResult) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tempo_dump_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Recurrence p;
  CompileOptions o;
  o.dump = "all";
  o.dump_dir = dir.string();
  Executable exe = compile(p.ctx, {{p.t.bound, 8}}, o);
  exe.run();
  const std::vector<std::string> stages = compile_stages();
  ASSERT_EQ(stages.size(), 7u);
  for (size_t k = 0; k < stages.size(); ++k) {
    const auto path = dir / (std::to_string(k) + "-" + stages[k] + ".txt");
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    EXPECT_FALSE(read(path).empty()) << stages[k];
  }
  // The user's SDG names the placeholder; the schedule runs statements; the executor lists
  // each output's store.
  EXPECT_NE(read(dir / "0-validate.txt").find("total"), std::string::npos)
      << read(dir / "0-validate.txt");
  EXPECT_NE(read(dir / "2-schedule.txt").find("exec"), std::string::npos);
  EXPECT_NE(read(dir / "6-executor.txt").find("store"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(CompileStages, DumpingChangesNothing) {
  Recurrence a, b;
  CompileOptions o;
  o.dump = "passes,schedule";
  o.dump_dir = std::filesystem::temp_directory_path().string();
  Executable plain = compile(a.ctx, {{a.t.bound, 8}});
  Executable dumped = compile(b.ctx, {{b.t.bound, 8}}, o);
  plain.run();
  dumped.run();
  EXPECT_EQ(plain.schedule_str(), dumped.schedule_str());
  const HostTensor x = plain.get(a.total, {}), y = dumped.get(b.total, {});
  for (int64_t k = 0; k < x.numel(); ++k) EXPECT_EQ(x.ptr<float>()[k], y.ptr<float>()[k]);
}

TEST(CompileStages, UnknownStageOrUnwritableFolderIsAUserError) {
  Recurrence p;
  CompileOptions o;
  o.dump = "passes,shedule";
  expect_user_error(
      [&] {
        compile(p.ctx, {{p.t.bound, 8}}, o);
      },
      {"unknown compile stage 'shedule'", "validate", "memory-plan", "executor"});
  o.dump = "passes";
  o.dump_dir = "/nonexistent/folder";
  expect_user_error(
      [&] {
        compile(p.ctx, {{p.t.bound, 8}}, o);
      },
      {"cannot write '/nonexistent/folder/1-passes.txt'"});
}

// The second compile of a program reads its schedule back from the cache (schedule/cache.h)
// and runs the same; with the cache off nothing is read or written.
TEST(CompileStages, ScheduleCacheGivesTheSameProgram) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tempo_cache_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  setenv("TEMPO_CACHE_DIR", dir.c_str(), 1);
  auto compile_and_run = [](const CompileOptions& o, bool* from_cache) {
    Recurrence p;
    CompileOptions verbose = o;
    verbose.verbose = true;
    ::testing::internal::CaptureStderr();
    Executable exe = compile(p.ctx, {{p.t.bound, 8}}, verbose);
    *from_cache = ::testing::internal::GetCapturedStderr().find(
                      "from the schedule cache") != std::string::npos;
    exe.run();
    return std::make_pair(exe.schedule_str(), exe.get(p.total, {}).to_vector());
  };
  CompileOptions off;
  off.schedule_cache = false;
  bool cached = true;
  const auto uncached = compile_and_run(off, &cached);
  EXPECT_FALSE(cached);
  EXPECT_FALSE(std::filesystem::exists(dir / "schedules"));
  const auto first = compile_and_run({}, &cached);
  EXPECT_FALSE(cached);
  const auto second = compile_and_run({}, &cached);
  EXPECT_TRUE(cached);
  EXPECT_EQ(second, first);
  EXPECT_EQ(first, uncached);
  unsetenv("TEMPO_CACHE_DIR");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tempo
