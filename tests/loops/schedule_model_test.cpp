// The learned loop schedule: a cost model trained by a Tempo program on measured loop timings.
#include "loops/schedule_model.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "backend/loop_choice.h"
#include "driver/compile.h"
#include "util/error.h"

namespace tempo::loops {
namespace {

using backend::LoopFeatures;
using backend::LoopOrder;

// Timings of four clusters whose interchanged loop is 4x faster over at most 4 columns and 256 rows
// or more, and 2x slower otherwise (the shape of the measured ones: narrow rows, many of them).
std::vector<LoopTiming> synthetic(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<LoopTiming> out;
  for (int k = 0; k < n; ++k) {
    LoopTiming t;
    const int kind = static_cast<int>(rng() % 4);  // a few clusters, at many sizes
    for (int f = 0; f < LoopFeatures::kCount; ++f) t.cluster.values[f] = (kind + f) % 3;
    t.rows = int64_t{1} << (rng() % 14);
    t.cols = 1 + static_cast<int64_t>(rng() % 16);
    t.rows_outer_s = 1e-8 * static_cast<double>(t.rows * t.cols);
    const bool faster = t.cols <= 4 && t.rows >= 256;
    t.columns_outer_s = t.rows_outer_s * (faster ? 0.25 : 2.0);
    out.push_back(t);
  }
  return out;
}

TEST(ScheduleModel, LearnsWhichOrderIsFasterAndKeepsItWhenSaved) {
  const std::vector<LoopTiming> train = synthetic(400, 1), test = synthetic(200, 2);
  const ScheduleModelOptions o;
  std::vector<double> losses;
  const ScheduleModel m = ScheduleModel::train(train, o, &losses);
  ASSERT_EQ(losses.size(), static_cast<size_t>(o.steps));
  EXPECT_LT(losses.back(), 0.2 * losses.front());
  auto sure = [&](const LoopTiming& t) { return m.choose(t.cluster, t.rows, t.cols, 0.0); };
  const ScheduleScore s = score_schedules(test, sure);
  EXPECT_EQ(s.measured, 0);
  EXPECT_EQ(s.decisions, 200);
  EXPECT_GE(s.agreements, 190) << "held-out decisions the measurement made";
  // A sharp boundary (4 columns or 5) is learned smoothly: the misses are next to it.
  EXPECT_LT(s.chosen_s, 1.1 * s.best_s);
  EXPECT_LT(s.chosen_s, 0.97 * s.rows_outer_s);
  EXPECT_LT(s.chosen_s, 0.6 * s.columns_outer_s);
  // Near the threshold, where the misses are, the policy leaves the sizes to the measurement.
  auto learned = [&](const LoopTiming& t) { return m.choose(t.cluster, t.rows, t.cols); };
  const ScheduleScore u = score_schedules(test, learned);
  EXPECT_GT(u.measured, 0);
  EXPECT_LT(u.measured, 40);
  EXPECT_GE(u.agreements, s.agreements);

  const std::string path = ::testing::TempDir() + "schedule_model_test.safetensors";
  m.save(path);
  const ScheduleModel back = ScheduleModel::load(path);
  const backend::LoopSchedulePolicy policy = back.policy();
  for (const LoopTiming& t : test) {
    EXPECT_EQ(back.predict(t.cluster, t.rows, t.cols), m.predict(t.cluster, t.rows, t.cols));
    EXPECT_EQ(policy(t.cluster, t.rows, t.cols), learned(t));
    EXPECT_TRUE(back.knows(t.cluster));
  }
  // A cluster it was not trained on is measured, whatever the prediction.
  LoopFeatures unseen;
  unseen.values[0] = 99;
  EXPECT_FALSE(back.knows(unseen));
  EXPECT_EQ(back.choose(unseen, 4096, 2, 0.0), std::nullopt);
  EXPECT_EQ(policy(unseen, 4096, 2), std::nullopt);
  std::remove(path.c_str());
}

TEST(ScheduleModel, ReadsTheTimingsMeasuredLoopsWrite) {
  const std::string path = ::testing::TempDir() + "schedule_model_timings.csv";
  std::remove(path.c_str());
  LoopFeatures f;
  f.values[2] = 5;
  backend::append_loop_timing(path, f, 4096, 2, 8e-5, 1.5e-5);
  const std::vector<LoopTiming> t = read_loop_timings(path);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].cluster.values[2], 5);
  EXPECT_EQ(t[0].rows, 4096);
  EXPECT_EQ(t[0].cols, 2);
  EXPECT_DOUBLE_EQ(t[0].rows_outer_s, 8e-5);
  EXPECT_DOUBLE_EQ(t[0].columns_outer_s, 1.5e-5);
  EXPECT_EQ(t[0].source, path + ":2");

  auto error_of = [&](const std::string& text) {
    std::ofstream(path) << text;
    try {
      read_loop_timings(path);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("a,b\n1,2\n").find("not a file of loop timings"), std::string::npos);
  std::string header;
  for (const char* n : LoopFeatures::kNames) header += std::string(n) + ",";
  header += "rows,cols,rows_outer_s,columns_outer_s\n";
  EXPECT_NE(error_of(header + "0,0,0,0,0,0,0,0,0,0,64,2,1e-6\n").find(":2: 13 fields where"),
            std::string::npos);
  EXPECT_NE(error_of(header + "0,0,0,0,0,0,0,0,0,0,64,2,1e-6,x\n").find("not a number"),
            std::string::npos);
  EXPECT_NE(error_of(header + "0,0,0,0,0,0,0,0,0,0,64,2,1e-6,0\n").find("must be positive"),
            std::string::npos);
  std::remove(path.c_str());
}

TEST(ScheduleModel, GeneratedProgramsGiveTimingsOfNarrowLoops) {
  const std::string path = ::testing::TempDir() + "schedule_model_generated.csv";
  std::remove(path.c_str());
  const int64_t decisions = generate_loop_timings(3, 7, path);
  const std::vector<LoopTiming> t = read_loop_timings(path);
  EXPECT_GE(decisions, 3);  // every program reduces rows of at most 16 columns
  EXPECT_EQ(static_cast<int64_t>(t.size()), decisions);
  for (const LoopTiming& x : t) {
    EXPECT_GE(x.cols, 1);
    EXPECT_LE(x.cols, backend::kNarrowColumns);
    EXPECT_GT(x.cluster.values[0] + x.cluster.values[1], 0);  // a sum or a maximum
  }
  const int64_t more = generate_loop_timings(1, 8, path);  // appended after the others
  EXPECT_EQ(static_cast<int64_t>(read_loop_timings(path).size()), decisions + more);
  std::remove(path.c_str());
}

TEST(ScheduleModel, NamedSchedulesAndBadModelFiles) {
  CompileOptions o;
  set_loop_schedules(o, "columns", "--loop-schedules");
  EXPECT_EQ(o.loop_schedules, backend::LoopSchedules::ColumnsOuter);
  auto error_of = [&](const std::string& name) {
    try {
      set_loop_schedules(o, name, "--loop-schedules");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("fastest"),
            "--loop-schedules 'fastest': expected rows, measured, columns or learned:FILE (a "
            "model from tempo loops schedules)");
  EXPECT_EQ(error_of("learned:"), "--loop-schedules learned:FILE needs the model's file");
  const std::string path = ::testing::TempDir() + "schedule_model_bad.safetensors";
  std::ofstream(path) << "not a model";
  EXPECT_NE(error_of("learned:" + path).find("not a loop schedule model"), std::string::npos);
  std::remove(path.c_str());
  EXPECT_THROW(ScheduleModel::train({}, {}), UserError);
}

}  // namespace
}  // namespace tempo::loops
