// Scheduling programs written with the user API: the SDGs the api layer really builds.
#include <gtest/gtest.h>

#include <iostream>

#include "api/tempo.h"
#include "schedule/schedule.h"
#include "schedule/sim.h"
#include "util/error.h"

namespace tempo::schedule {
namespace {

using testing::Env;
using testing::simulate;
using testing::Trace;

ScheduleOptions options_of(const Context& ctx, bool fuse) {
  ScheduleOptions opt;
  opt.retained = ctx.retained();
  opt.fuse = fuse;
  return opt;
}

// Schedules and simulates for every bound value in [lo, hi] (all bounds equal).
Schedule check_all(const Context& ctx, int64_t lo, int64_t hi, bool fuse) {
  ScheduleOptions opt = options_of(ctx, fuse);
  Schedule s = compute_schedule(ctx.graph(), opt);
  for (int64_t n = lo; n <= hi; ++n) {
    Env env;
    for (const Dim& d : ctx.dims()) env[d.bound.name()] = n;
    Trace tr = simulate(ctx.graph(), s, env, opt);
    EXPECT_TRUE(tr.errors.empty()) << "bound " << n << ":\n"
                                   << tr.error_text() << s.str(ctx.graph()) << ctx.graph().str();
  }
  return s;
}

class ApiSchedule : public ::testing::TestWithParam<bool> {};  // fuse on / off

TEST_P(ApiSchedule, RecurrenceWithInitialBranch) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = ctx.rand_normal({4}, {t});
  RT s = ctx.placeholder({DType::Float32, {4}}, {t}, "s");
  s[0] = x[0];
  s[t.var + 1] = s[t.var] * 0.5 + x;
  s.retain();
  Schedule sch = check_all(ctx, 1, 8, GetParam());
  std::cout << sch.str(ctx.graph());
}

TEST_P(ApiSchedule, CounterKeepsBoundedMemory) {
  Context ctx;
  Dim i = ctx.dim("i", "I");
  RT c = ctx.placeholder({DType::Float32, {}}, {i}, "c");
  c[0] = ctx.zeros({});
  c[i.var + 1] = c[i.var] + 1.0;
  ScheduleOptions opt = options_of(ctx, GetParam());
  Schedule s = check_all(ctx, 1, 8, GetParam());
  std::cout << s.str(ctx.graph());
  Trace small = simulate(ctx.graph(), s, {{"I", 10}}, opt);
  Trace large = simulate(ctx.graph(), s, {{"I", 100}}, opt);
  EXPECT_EQ(small.max_live, large.max_live) << s.str(ctx.graph());
}

TEST_P(ApiSchedule, WindowAndFutureReads) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = ctx.rand_normal({}, {t});
  RT w = x[slice(t.var, min(t.var + 3, t.bound))].sum(0);
  RT f = x[slice(t.var, t.bound)].sum(0);
  (w + f).retain();
  Schedule s = check_all(ctx, 1, 8, GetParam());
  std::cout << s.str(ctx.graph());
}

TEST_P(ApiSchedule, OutOfDomainReadNamesTheLine) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = ctx.rand_normal({}, {t});
  Loc here = Loc::current();
  RT y = (x[t.var + 1] * 2.0).named("y");
  try {
    compute_schedule(ctx.graph(), options_of(ctx, GetParam()));
    ADD_FAILURE() << "expected a UserError\n" << ctx.graph().str();
  } catch (const UserError& e) {
    std::string msg = e.what();
    std::cout << msg << "\n";
    EXPECT_NE(msg.find("outside its domain"), std::string::npos) << msg;
    std::string file_line = where(here);
    std::string next_line =
        file_line.substr(0, file_line.find(':') + 1) + std::to_string(here.line + 1);
    EXPECT_NE(msg.find(next_line), std::string::npos) << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(Fuse, ApiSchedule, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "fused" : "unfused"; });

}  // namespace
}  // namespace tempo::schedule
