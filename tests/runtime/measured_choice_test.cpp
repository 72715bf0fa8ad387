// The search behind LoopSchedules::Measured: the faster of two loops, per size, from timed calls.
#include "backend/measured_choice.h"

#include "backend/codegen.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <chrono>
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

TEST(MeasuredChoice, RunsTheFasterLoopAfterTimingBothAtEachSize) {
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

TEST(MeasuredChoice, LoopSchedulesByName) {
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
