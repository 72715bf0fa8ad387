// The schedule cache (schedule/cache.h): the text form round-trips, entries are read back only
// for the same program and options, and a damaged entry is computed again.
#include "schedule/cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "api/tempo.h"
#include "schedule/sim.h"
#include "util/error.h"

namespace tempo::schedule {
namespace {

namespace fs = std::filesystem;
using testing::simulate;
using testing::Trace;

// Two levels of loops, a recurrence with its first point, windows of the past and the future
// and a retained result: For, If (the recurrence's branches), Exec and Dealloc statements.
struct Program {
  Context ctx;
  Program() {
    Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
    RT x = ctx.rand_normal({3}, {i, t});
    RT s = ctx.placeholder({DType::Float32, {3}}, {i, t}, "s");
    s[{i.var, 0}] = x[{i.var, 0}];
    s[{i.var, t.var + 1}] = s[{i.var, t.var}] * 0.5 + x;
    RT w = s[{i.var, slice(max(Expr(0), t.var - 2), t.var + 1)}].sum(0);
    RT f = x[{i.var, slice(t.var, t.bound)}].sum(0);
    (w + f).retain();
  }
  ScheduleOptions options(const std::string& cache_dir = "") const {
    ScheduleOptions o;
    o.retained = ctx.retained();
    o.cache_dir = cache_dir;
    return o;
  }
};

class ScheduleCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("tempo-schedule-cache-" + std::to_string(::getpid())))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<fs::path> entries() const {
    std::vector<fs::path> out;
    if (fs::exists(dir_))
      for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path());
    return out;
  }
  std::string dir_;
};

TEST_F(ScheduleCacheTest, TextFormRoundTrips) {
  Program p;
  for (bool fuse : {true, false}) {
    ScheduleOptions o = p.options();
    o.fuse = fuse;
    Schedule s = compute_schedule(p.ctx.graph(), o);
    s.swapped = {{2, 0}, {5, 1}};  // the header's lists too
    s.on_host = {7};
    const std::string text = schedule_text(s);
    const Schedule back = parse_schedule(text);
    EXPECT_EQ(back.str(p.ctx.graph()), s.str(p.ctx.graph()));
    EXPECT_EQ(schedule_text(back), text);
    EXPECT_EQ(back.num_statements, s.num_statements);
    EXPECT_EQ(back.fused, s.fused);
    EXPECT_EQ(back.bounded, s.bounded);
    EXPECT_EQ(back.swapped, s.swapped);
    EXPECT_EQ(back.on_host, s.on_host);
    EXPECT_EQ(sym::dims_str(back.iterators), sym::dims_str(s.iterators));
  }
  EXPECT_EQ(schedule_text(parse_schedule(schedule_text(Schedule()))), schedule_text(Schedule()));
}

TEST_F(ScheduleCacheTest, MalformedTextNamesTheLine) {
  Program p;
  std::string text = schedule_text(compute_schedule(p.ctx.graph(), p.options()));
  const size_t at = text.find("for\t");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 3, "fro");
  try {
    parse_schedule(text);
    ADD_FAILURE() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("expected a statement kind in `fro"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_schedule(text.substr(0, text.size() / 2)), UserError);  // truncated
  // Cut after the header: the statements are missing.
  EXPECT_THROW(parse_schedule(text.substr(0, text.find("\non_host") + 1) + "on_host \n"),
               UserError);
  EXPECT_THROW(parse_schedule(""), UserError);
}

TEST_F(ScheduleCacheTest, SecondScheduleIsReadBackAndRunsTheSame) {
  Program p;
  const Schedule computed = compute_schedule(p.ctx.graph(), p.options(dir_));
  EXPECT_FALSE(computed.from_cache);
  ASSERT_EQ(entries().size(), 1u);
  const Schedule cached = compute_schedule(p.ctx.graph(), p.options(dir_));
  EXPECT_TRUE(cached.from_cache);
  EXPECT_EQ(cached.str(p.ctx.graph()), computed.str(p.ctx.graph()));
  for (int64_t n : {1, 2, 5}) {
    Trace tr = simulate(p.ctx.graph(), cached, {{"I", 2}, {"T", n}}, p.options());
    EXPECT_TRUE(tr.errors.empty()) << tr.error_text();
  }
}

TEST_F(ScheduleCacheTest, OtherOptionsOrProgramsAreNotReadBack) {
  Program p;
  compute_schedule(p.ctx.graph(), p.options(dir_));
  ScheduleOptions unfused = p.options(dir_);
  unfused.fuse = false;
  EXPECT_FALSE(compute_schedule(p.ctx.graph(), unfused).from_cache);
  ScheduleOptions bounds = p.options(dir_);
  bounds.known_bounds = {{"T", 10}};
  EXPECT_FALSE(compute_schedule(p.ctx.graph(), bounds).from_cache);
  Program other;
  (other.ctx.rand_normal({3}, {other.ctx.dims()[0]}) * 2.0).retain();  // one more output
  EXPECT_FALSE(compute_schedule(other.ctx.graph(), other.options(dir_)).from_cache);
  EXPECT_EQ(entries().size(), 4u);
  EXPECT_TRUE(compute_schedule(p.ctx.graph(), unfused).from_cache);
}

TEST_F(ScheduleCacheTest, DamagedEntryIsComputedAgainAndReplaced) {
  Program p;
  const std::string expected = compute_schedule(p.ctx.graph(), p.options(dir_)).str(p.ctx.graph());
  ASSERT_EQ(entries().size(), 1u);
  const fs::path entry = entries()[0];
  std::string text;
  {
    std::ifstream in(entry);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (const std::string& damaged :
       {text.substr(0, text.size() - 20), text.substr(0, text.find('\n') + 1) + "garbage\n",
        std::string("another header\n") + text.substr(text.find('\n') + 1)}) {
    std::ofstream(entry) << damaged;
    const Schedule s = compute_schedule(p.ctx.graph(), p.options(dir_));
    EXPECT_FALSE(s.from_cache);
    EXPECT_EQ(s.str(p.ctx.graph()), expected);
    EXPECT_TRUE(compute_schedule(p.ctx.graph(), p.options(dir_)).from_cache);  // replaced
  }
}

TEST_F(ScheduleCacheTest, UnwritableFolderOnlySkipsTheCache) {
  Program p;
  const std::string file = dir_ + "-file";
  std::ofstream(file) << "a file where the folder would be";
  ScheduleOptions o = p.options(file + "/schedules");
  EXPECT_FALSE(compute_schedule(p.ctx.graph(), o).from_cache);
  EXPECT_FALSE(compute_schedule(p.ctx.graph(), o).from_cache);
  fs::remove(file);
}

}  // namespace
}  // namespace tempo::schedule
