// Which of two loops runs per size: timed (LoopSchedules::Measured) or chosen (::Policy).
#include "backend/loop_choice.h"

#include "backend/codegen.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <thread>
#include <vector>

namespace tempo::backend {
namespace {

int fast_calls = 0, slow_calls = 0;

// out[0] counts the calls; the slow one sleeps 2 ms per row.
void fast(int64_t, int64_t, const void* const*, void* const* out) {
  ++fast_calls;
  ++*static_cast<int*>(out[0]);
}
void slow(int64_t rows, int64_t, const void* const*, void* const* out) {
  ++slow_calls;
  std::this_thread::sleep_for(std::chrono::milliseconds(2 * rows));
  ++*static_cast<int*>(out[0]);
}

TEST(LoopChoice, MeasuredRunsTheFasterLoopAfterTimingBothAtEachSize) {
  struct Decision {
    int64_t rows, cols;
    bool second;
  };
  std::vector<Decision> decisions;
  for (bool slow_first : {true, false}) {
    fast_calls = slow_calls = 0;
    decisions.clear();
    LoopCall call = measured_choice(slow_first ? slow : fast, slow_first ? fast : slow,
                                    [&](int64_t rows, int64_t cols, double, double, bool second) {
                                      decisions.push_back({rows, cols, second});
                                    });
    int count = 0;
    void* out[1] = {&count};
    for (int k = 0; k < 20; ++k) call(1, 2, nullptr, out);
    EXPECT_EQ(count, 20);  // every call runs one of the two
    EXPECT_EQ(slow_calls, kTrials);
    EXPECT_EQ(fast_calls, 20 - kTrials);
    ASSERT_EQ(decisions.size(), 1u);
    EXPECT_EQ(decisions[0].second, slow_first);
    for (int k = 0; k < 2 * kTrials; ++k) call(3, 2, nullptr, out);  // a new size: timed again
    EXPECT_EQ(slow_calls, 2 * kTrials);
    EXPECT_EQ(decisions.size(), 2u);
  }
}

// A policy decides each size once without timing; where it is not sure the size is timed.
TEST(LoopChoice, PolicyDecidesEachSizeOnceAndLeavesTheUnsureToTheMeasurement) {
  fast_calls = slow_calls = 0;
  std::vector<std::pair<int64_t, int64_t>> asked;
  int reports = 0;
  LoopCall call = measured_choice(
      fast, slow, [&](int64_t, int64_t, double, double, bool second) {
        ++reports;
        EXPECT_FALSE(second);
      },
      [&](int64_t rows, int64_t cols) -> std::optional<bool> {
        asked.emplace_back(rows, cols);
        if (rows == 3) return std::nullopt;  // not sure
        return rows > 1;
      });
  int count = 0;
  void* out[1] = {&count};
  for (int k = 0; k < 5; ++k) call(1, 2, nullptr, out);
  call(2, 2, nullptr, out);
  call(2, 2, nullptr, out);
  call(1, 2, nullptr, out);  // decided before: not asked again
  EXPECT_EQ(count, 8);
  EXPECT_EQ(fast_calls, 6);
  EXPECT_EQ(slow_calls, 2);
  EXPECT_EQ(reports, 0);  // nothing timed
  for (int k = 0; k < 10; ++k) call(3, 2, nullptr, out);
  EXPECT_EQ(slow_calls, 2 + kTrials);  // timed at 3 rows, then the faster
  EXPECT_EQ(fast_calls, 6 + 10 - kTrials);
  EXPECT_EQ(reports, 1);
  EXPECT_EQ(asked, (std::vector<std::pair<int64_t, int64_t>>{{1, 2}, {2, 2}, {3, 2}}));
}

TEST(LoopChoice, TimingsAreAppendedWithTheirHeader) {
  const std::string path = ::testing::TempDir() + "loop_timings_test.csv";
  std::remove(path.c_str());
  LoopFeatures f;
  f.values[0] = 2;
  append_loop_timing(path, f, 4096, 2, 1e-5, 2e-6);
  append_loop_timing(path, f, 64, 2, 3e-7, 4e-7);
  std::ifstream in(path);
  std::string header, first, second, extra;
  std::getline(in, header);
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_FALSE(std::getline(in, extra));
  EXPECT_EQ(header.rfind("sums,maxima,", 0), 0u) << header;
  EXPECT_NE(header.find(",rows,cols,rows_outer_s,columns_outer_s"), std::string::npos);
  EXPECT_EQ(first, "2,0,0,0,0,0,0,0,0,0,4096,2,1e-05,2e-06");
  EXPECT_EQ(second.substr(0, 25), "2,0,0,0,0,0,0,0,0,0,64,2,");
  std::remove(path.c_str());
}

TEST(LoopChoice, LoopSchedulesByName) {
  for (LoopSchedules s :
       {LoopSchedules::RowsOuter, LoopSchedules::Measured, LoopSchedules::ColumnsOuter})
    EXPECT_EQ(parse_loop_schedules(loop_schedules_name(s), "x"), s);
  try {
    parse_loop_schedules("fastest", "TEMPO_LOOP_SCHEDULES");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "TEMPO_LOOP_SCHEDULES 'fastest': expected rows, measured or columns");
  }
}

}  // namespace
}  // namespace tempo::backend
