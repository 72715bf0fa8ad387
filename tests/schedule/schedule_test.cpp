#include "schedule/schedule.h"

#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <source_location>

#include "schedule/sim.h"
#include "util/error.h"

namespace tempo::schedule {
namespace {

using ir::OpId;
using ir::OpKind;
using sym::min;
using sym::seq;
using sym::slice;
using testing::Env;
using testing::simulate;
using testing::Trace;

// Builds SDGs by hand: ops with domains and edges with dependence expressions.
struct Builder {
  ir::Graph g;
  OpId op(const std::string& name, const Dims& domain, OpKind kind = OpKind::Identity,
          Expr cond = Expr(), int outputs = 1, tempo::SourceLoc loc = tempo::SourceLoc::current()) {
    ir::OpNode n;
    n.kind = kind;
    n.domain = domain;
    n.cond = cond;
    n.name = name;
    n.loc = loc;
    n.outputs.assign(outputs, ir::TensorType{});
    return g.add_op(std::move(n));
  }
  void read(OpId sink, OpId source, Expr phi, Expr cond = Expr()) {
    g.add_edge(sink, source, 0, std::move(phi), std::move(cond));
  }
};

const Dim t_dim("t", "T");
const Dim i_dim("i", "I");
const Expr t = Expr::var("t"), T = Expr::bound("T");
const Expr i = Expr::var("i"), I = Expr::bound("I");

// Schedules g and simulates the schedule for each bound value in [lo, hi] (all bounds equal).
Schedule check_all(const ir::Graph& g, int64_t lo, int64_t hi, const ScheduleOptions& opt,
                   const std::vector<std::string>& bounds = {"T"}) {
  Schedule s = compute_schedule(g, opt);
  for (int64_t n = lo; n <= hi; ++n) {
    Env env;
    for (const auto& b : bounds) env[b] = n;
    Trace tr = simulate(g, s, env, opt);
    EXPECT_TRUE(tr.errors.empty()) << "bound " << n << ":\n" << tr.error_text() << s.str(g);
  }
  return s;
}

// Every test runs with fusion of static islands on and off.
class Schedule_ : public ::testing::TestWithParam<bool> {
 protected:
  ScheduleOptions base() const {
    ScheduleOptions opt;
    opt.fuse = GetParam();
    return opt;
  }
};

TEST_P(Schedule_, IdentityChainIsOneLoop) {
  Builder b;
  OpId x = b.op("x", {t_dim}, OpKind::RandNormal);
  OpId y = b.op("y", {t_dim});
  b.read(y, x, seq({t}));
  Schedule s = check_all(b.g, 1, 8, base());
  std::cout << s.str(b.g);
  ASSERT_EQ(s.root->kind, StmtKind::For);
  // x runs before y in each iteration.
  Trace tr = simulate(b.g, s, {{"T", 5}}, base());
  for (int64_t k = 0; k < 5; ++k) EXPECT_LT(tr.when(x, {k}), tr.when(y, {k}));
  // Each point of x is freed right after y reads it: one or two live points.
  EXPECT_LE(tr.max_live, 2u);
}

TEST_P(Schedule_, WithoutDeallocationOnlyExecs) {
  Builder b;
  OpId x = b.op("x", {t_dim}, OpKind::RandNormal);
  OpId y = b.op("y", {t_dim});
  b.read(y, x, seq({t}));
  ScheduleOptions opt = base();
  opt.deallocate = false;
  Schedule s = check_all(b.g, 1, 6, opt);
  EXPECT_EQ(s.str(b.g).find("dealloc"), std::string::npos) << s.str(b.g);
}

// c[0] = zero; c[i] = c[i-1] + one (TEMPO Fig. 8's state cycle).
struct Counter {
  Builder b;
  OpId zero, one, c, add;
  explicit Counter(const Dim& d) {
    Expr v = d.var;
    zero = b.op("zero", {}, OpKind::Const);
    one = b.op("one", {}, OpKind::Const);
    c = b.op("c", {d}, OpKind::Merge);
    add = b.op("add", {d}, OpKind::Add);
    b.read(c, zero, seq({}), v == 0);
    b.read(c, add, seq({v - 1}), v >= 1);
    b.read(add, c, seq({v}));
    b.read(add, one, seq({}));
  }
};

TEST_P(Schedule_, RecurrenceWithInitialBranch) {
  Counter k(i_dim);
  Schedule s = check_all(k.b.g, 1, 8, base(), {"I"});
  std::cout << s.str(k.b.g);
  Trace tr = simulate(k.b.g, s, {{"I", 4}}, base());
  for (int64_t n = 1; n < 4; ++n) EXPECT_LT(tr.when(k.add, {n - 1}), tr.when(k.c, {n}));
}

TEST_P(Schedule_, IterativeProgramKeepsBoundedLiveMemory) {
  Counter k(i_dim);
  ScheduleOptions opt = base();
  Schedule s = compute_schedule(k.b.g, opt);
  Trace small = simulate(k.b.g, s, {{"I", 10}}, opt);
  Trace large = simulate(k.b.g, s, {{"I", 100}}, opt);
  EXPECT_TRUE(small.errors.empty()) << small.error_text();
  EXPECT_TRUE(large.errors.empty()) << large.error_text();
  EXPECT_EQ(small.max_live, large.max_live) << s.str(k.b.g);
  // `one` lives throughout; c[i] and add[i] are freed as soon as the next step has read them.
  EXPECT_LE(large.max_live, 4u) << s.str(k.b.g);
}

TEST_P(Schedule_, RetainedOutputsAreNotFreed) {
  Counter k(i_dim);
  ScheduleOptions opt = base();
  opt.retained = {{k.c, 0}};
  Schedule s = check_all(k.b.g, 1, 6, opt, {"I"});
  Trace tr = simulate(k.b.g, s, {{"I", 6}}, opt);
  for (const auto& e : tr.events) EXPECT_FALSE(e.dealloc && e.op == k.c);
}

TEST_P(Schedule_, WindowReadDelaysTheConsumer) {
  // y[t] = f(x[t:min(t+3,T)]): y at t runs after x at t+2 (TEMPO Fig. 14).
  Builder b;
  OpId x = b.op("x", {t_dim}, OpKind::RandNormal);
  OpId y = b.op("y", {t_dim}, OpKind::Sum);
  b.read(y, x, seq({slice(t, min(t + 3, T))}));
  Schedule s = check_all(b.g, 1, 8, base());
  std::cout << s.str(b.g);
  for (int64_t n = 1; n <= 8; ++n) {
    Trace tr = simulate(b.g, s, {{"T", n}}, base());
    for (int64_t k = 0; k < n; ++k)
      EXPECT_GT(tr.when(y, {k}), tr.when(x, {std::min(k + 2, n - 1)})) << s.str(b.g);
    EXPECT_LE(tr.max_live, 5u) << "T=" << n << "\n" << s.str(b.g);
  }
}

TEST_P(Schedule_, FutureOnlyDependences) {
  // y[t] = sum(x[t:T]): every y waits for the whole of x.
  Builder b;
  OpId x = b.op("x", {t_dim}, OpKind::RandNormal);
  OpId y = b.op("y", {t_dim}, OpKind::Sum);
  b.read(y, x, seq({slice(t, T)}));
  Schedule s = check_all(b.g, 1, 8, base());
  std::cout << s.str(b.g);
  // A backward recurrence: z[t] = z[t+1] + x[t], z[T-1] = x[T-1].
  Builder c;
  OpId xs = c.op("x", {t_dim}, OpKind::RandNormal);
  OpId z = c.op("z", {t_dim}, OpKind::Merge);
  OpId zadd = c.op("zadd", {t_dim}, OpKind::Add);
  c.read(z, xs, seq({t}), t == T - 1);
  c.read(z, zadd, seq({t}), t < T - 1);
  c.read(zadd, z, seq({t + 1}), t < T - 1);
  c.read(zadd, xs, seq({t}), t < T - 1);
  c.g.op(zadd).cond = t < T - 1;
  Schedule s2 = check_all(c.g, 1, 8, base());
  std::cout << s2.str(c.g);
}

TEST_P(Schedule_, OutOfDomainReadNamesTheRTAndLine) {
  Builder b;
  b.op("x", {t_dim}, OpKind::RandNormal);
  int line = std::source_location::current().line() + 1;
  OpId y = b.op("y", {t_dim});
  b.read(y, 0, seq({t + 1}));
  try {
    compute_schedule(b.g, base());
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    std::string msg = e.what();
    std::cout << msg << "\n";
    EXPECT_NE(msg.find("'y'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("schedule_test.cpp:" + std::to_string(line)), std::string::npos) << msg;
    // The offending point t = T - 1.
    EXPECT_TRUE(msg.find("t + 1 == T") != std::string::npos ||
                msg.find("t == T - 1") != std::string::npos)
        << msg;
  }
}

TEST_P(Schedule_, ReadWhereTheSourceDoesNotExecuteIsOutOfDomain) {
  Builder b;
  OpId x = b.op("x", {t_dim}, OpKind::RandNormal, t >= 1);
  OpId y = b.op("y", {t_dim});
  b.read(y, x, seq({t}));
  EXPECT_THROW(compute_schedule(b.g, base()), UserError);
}

TEST_P(Schedule_, UnsatisfiableCycleNamesTheOps) {
  // x[t] reads y[t + 1] and y[t] reads x[t - 1]: x[t] depends on itself.
  Builder b;
  OpId other = b.op("bystander", {t_dim}, OpKind::RandNormal);
  OpId zero = b.op("zero", {}, OpKind::Const);
  OpId x = b.op("x", {t_dim}, OpKind::Merge);
  OpId y = b.op("y", {t_dim}, OpKind::Merge);
  b.read(x, y, seq({t + 1}), t < T - 1);
  b.read(x, zero, seq({}), t >= T - 1);
  b.read(y, x, seq({t - 1}), t >= 1);
  b.read(y, other, seq({t}), t < 1);
  try {
    Schedule s = compute_schedule(b.g, base());
    FAIL() << "expected a UserError:\n" << s.str(b.g);
  } catch (const UserError& e) {
    std::string msg = e.what();
    std::cout << msg << "\n";
    EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'y'"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("bystander"), std::string::npos) << msg;
    EXPECT_NE(msg.find("schedule_test.cpp:"), std::string::npos) << msg;
  }
}

TEST_P(Schedule_, SamePointCycleIsAnError) {
  Builder b;
  OpId x = b.op("x", {t_dim});
  OpId y = b.op("y", {t_dim});
  b.read(x, y, seq({t}));
  b.read(y, x, seq({t}));
  EXPECT_THROW(compute_schedule(b.g, base()), UserError);
}

// A REINFORCE-shaped program over (b, i, t) (NOTES-isl.md): parameters P[i], observations
// O[b,i,t], actions A, environment steps S, returns Ret reading S[b,i,t:T] (Monte-Carlo) or
// S[b,i,t:min(t+n,T)] (n-step), losses L, gradient G[i] reading L[0:B,i,0:T], update U[i].
// With `learn_from_obs`, L also reads O[b,i,t], as a per-step backward pass reads the step's
// observation.
struct Reinforce {
  Builder b;
  OpId p0, reset, P, U, O, A, S, Ret, L, G;
  Reinforce(int n_step, bool learn_from_obs = false) {
    Dim bd("b", "B");
    Expr bv = bd.var, B = bd.bound;
    Dims bit = {bd, i_dim, t_dim};
    p0 = b.op("p0", {}, OpKind::RandNormal);
    P = b.op("P", {i_dim}, OpKind::Merge);
    U = b.op("U", {i_dim}, OpKind::Sub);
    reset = b.op("reset", {bd, i_dim}, OpKind::Udf);
    O = b.op("O", bit, OpKind::Merge);
    A = b.op("A", bit, OpKind::MatMul);
    S = b.op("S", bit, OpKind::Udf);
    Ret = b.op("Ret", bit, OpKind::Sum);
    L = b.op("L", bit, OpKind::Mul);
    G = b.op("G", {i_dim}, OpKind::Sum);
    b.read(P, p0, seq({}), i == 0);
    b.read(P, U, seq({i - 1}), i >= 1);
    b.read(U, P, seq({i}));
    b.read(U, G, seq({i}));
    b.read(O, reset, seq({bv, i}), t == 0);
    b.read(O, S, seq({bv, i, t - 1}), t >= 1);
    b.read(A, P, seq({i}));
    b.read(A, O, seq({bv, i, t}));
    b.read(S, A, seq({bv, i, t}));
    Expr stop = n_step > 0 ? min(t + n_step, T) : T;
    b.read(Ret, S, seq({bv, i, slice(t, stop)}));
    b.read(L, Ret, seq({bv, i, t}));
    b.read(L, A, seq({bv, i, t}));
    if (learn_from_obs) b.read(L, O, seq({bv, i, t}));
    b.read(G, L, seq({slice(0, B), i, slice(0, T)}));
  }
};

TEST_P(Schedule_, ReinforceMonteCarlo) {
  Reinforce r(0);
  auto start = std::chrono::steady_clock::now();
  Schedule s = compute_schedule(r.b.g, base());
  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
  std::cout << "compute_schedule: " << ms.count() << " ms\n" << s.str(r.b.g);
  for (int64_t n : {1, 2, 3, 5}) {
    Trace tr = simulate(r.b.g, s, {{"B", 2}, {"I", 3}, {"T", n}}, base());
    EXPECT_TRUE(tr.errors.empty()) << tr.error_text();
  }
}

TEST_P(Schedule_, ReinforceNStepInterleavesActingAndLearning) {
  Reinforce r(3);
  ScheduleOptions opt = base();
  auto start = std::chrono::steady_clock::now();
  Schedule s = compute_schedule(r.b.g, opt);
  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
  std::cout << "compute_schedule: " << ms.count() << " ms\n" << s.str(r.b.g);
  for (int64_t n : {1, 2, 4, 7}) {
    Trace tr = simulate(r.b.g, s, {{"B", 2}, {"I", 2}, {"T", n}}, opt);
    EXPECT_TRUE(tr.errors.empty()) << tr.error_text();
  }
  const int64_t n = 12;
  Trace tr = simulate(r.b.g, s, {{"B", 1}, {"I", 1}, {"T", n}}, opt);
  // The return at t = 0 needs S[0..2]; interleaving computes it long before the episode ends.
  long ret0 = tr.when(r.Ret, {0, 0, 0});
  long last_step = tr.when(r.S, {0, 0, n - 1});
  std::cout << "Ret[0] at event " << ret0 << ", S[T-1] at event " << last_step << ", max live "
            << tr.max_live << "\n";
  EXPECT_LT(ret0, last_step) << s.str(r.b.g);
}

// The learner at t reads O[t] but also needs S up to t + 2: the observation's lifetime bound
// counts that (memory_ops.cpp, latest_dependence), so O[t] is freed before O[t + 3] is made and
// the live points do not grow with T (TEMPO Fig. 23), with proximity for memory statements only.
TEST_P(Schedule_, NStepLearnerReadingTheObservationFreesItEarly) {
  Reinforce r(3, /*learn_from_obs=*/true);
  ScheduleOptions opt = base();
  opt.proximity = false;
  opt.memory_proximity = true;
  Schedule s = compute_schedule(r.b.g, opt);
  std::cout << s.str(r.b.g);
  EXPECT_TRUE(s.bounded);
  std::vector<size_t> live;
  for (int64_t n : {12, 24}) {
    Trace tr = simulate(r.b.g, s, {{"B", 1}, {"I", 2}, {"T", n}}, opt);
    EXPECT_TRUE(tr.errors.empty()) << tr.error_text();
    EXPECT_LT(tr.when(r.L, {0, 0, 0}), tr.when(r.S, {0, 0, n - 1})) << s.str(r.b.g);
    live.push_back(tr.max_live_of[r.O]);
  }
  EXPECT_LE(live[0], 5u) << s.str(r.b.g);
  EXPECT_EQ(live[0], live[1]) << "live observations grow with T";
}

}  // namespace
}  // namespace tempo::schedule

namespace tempo::schedule {
namespace {

// isl's scheduler runs in a child process by default; the schedule read back from its text is
// the one computed in this process, and so are the errors.
TEST_P(Schedule_, ChildProcessGivesTheInProcessSchedule) {
  for (int n_step : {0, 3}) {
    Reinforce r(n_step);
    ScheduleOptions child = base(), here = base();
    here.solve_in_child = false;
    EXPECT_EQ(compute_schedule(r.b.g, child).str(r.b.g), compute_schedule(r.b.g, here).str(r.b.g));
  }
  Builder b;
  OpId x = b.op("x", {t_dim}), y = b.op("y", {t_dim});
  b.read(x, y, seq({t}));
  b.read(y, x, seq({t}));
  std::string messages[2];
  for (bool in_child : {true, false}) {
    ScheduleOptions opt = base();
    opt.solve_in_child = in_child;
    try {
      compute_schedule(b.g, opt);
      ADD_FAILURE() << "expected a UserError";
    } catch (const UserError& e) {
      messages[in_child] = e.what();
    }
  }
  EXPECT_NE(messages[1].find("cycle"), std::string::npos) << messages[1];
  EXPECT_EQ(messages[0], messages[1]);
}

TEST_P(Schedule_, OperationBoundIsAClearError) {
  Reinforce r(3);
  ScheduleOptions opt = base();
  opt.max_isl_operations = 2000;
  for (bool in_child : {true, false}) {
    opt.solve_in_child = in_child;
    try {
      compute_schedule(r.b.g, opt);
      ADD_FAILURE() << "expected a UserError";
    } catch (const UserError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("max_isl_operations"), std::string::npos) << msg;
    }
  }
}

// isl's child runs under a memory limit and every try under a time limit: past either, the
// error names the program's size and what to try, and the child is gone.
TEST_P(Schedule_, ChildMemoryAndTimeLimitsAreClearErrors) {
  // A staircase of 60 ops, each reading the previous one a step earlier: no two fuse, and isl's
  // problem takes more memory than the heap this process leaves free.
  Builder b;
  Dims it = {i_dim, t_dim};
  OpId prev = b.op("x0", it);
  for (int k = 1; k < 60; ++k) {
    OpId x = b.op(cat("x", k), it);
    b.read(x, prev, seq({i, t - 1}), t > 0);
    b.read(x, x, seq({i - 1, t}), i > 0);
    prev = x;
  }
  auto message = [&](const ScheduleOptions& opt) {
    try {
      compute_schedule(b.g, opt);
      ADD_FAILURE() << "expected a UserError";
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  ScheduleOptions opt = base();
  opt.child_memory_limit = 64 << 10;  // 64 KiB beyond what the child inherits
  std::string msg = message(opt);
  EXPECT_NE(msg.find("memory limit of 0 MiB"), std::string::npos) << msg;
  EXPECT_NE(msg.find(" statements and "), std::string::npos) << msg;
  EXPECT_NE(msg.find("--schedule-memory"), std::string::npos) << msg;
  opt = base();
  opt.time_limit_s = 1e-6;
  msg = message(opt);
  EXPECT_NE(msg.find("time limit of 1e-06 s"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--schedule-time"), std::string::npos) << msg;
  EXPECT_GT(default_child_memory_limit(), int64_t{0});
}

}  // namespace
}  // namespace tempo::schedule

namespace tempo::schedule {
namespace {

INSTANTIATE_TEST_SUITE_P(Fuse, Schedule_, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "fused" : "unfused"; });

ScheduleOptions with_fuse(bool fuse) {
  ScheduleOptions opt;
  opt.fuse = fuse;
  return opt;
}

const Dim j_dim("j", "J");
const Expr j = Expr::var("j");

TEST(ScheduleFuse, ChainIsOneStatementFreeingItsTemporaries) {
  Builder b;
  Dims it = {i_dim, t_dim};
  OpId x = b.op("x", it, OpKind::RandNormal);
  OpId y = b.op("y", it, OpKind::Exp);
  OpId z = b.op("z", it, OpKind::Neg);
  b.read(y, x, seq({i, t}));
  b.read(z, y, seq({i, t}));
  Schedule s = check_all(b.g, 1, 5, with_fuse(true), {"I", "T"});
  std::cout << s.str(b.g);
  EXPECT_EQ(s.num_statements, 1);
  EXPECT_EQ(compute_schedule(b.g, with_fuse(false)).num_statements, 6);
  Trace tr = simulate(b.g, s, {{"I", 3}, {"T", 4}});
  // Each point runs x, y, z and then frees all three before the next point starts.
  ASSERT_EQ(tr.events.size(), 3u * 4 * 6);
  for (size_t k = 0; k < tr.events.size(); k += 6) {
    const testing::Point& p = tr.events[k].point;
    for (size_t m = 0; m < 6; ++m) {
      EXPECT_EQ(tr.events[k + m].dealloc, m >= 3);
      EXPECT_EQ(tr.events[k + m].op, std::vector<OpId>({x, y, z, x, y, z})[m]);
      EXPECT_EQ(tr.events[k + m].point, p);
    }
  }
  EXPECT_LE(tr.max_live, 3u);
}

TEST(ScheduleFuse, SidePathThroughAnotherDomainPreventsFusion) {
  // a[t] -> b[t] directly, and a[t] -> c[t, j] -> b[t] (b reads all of c[t, 0:J]): a and b in
  // one statement would have to run both before and after c.
  Builder b;
  OpId a = b.op("a", {t_dim}, OpKind::RandNormal);
  OpId c = b.op("c", {t_dim, j_dim}, OpKind::Exp);
  OpId d = b.op("b", {t_dim}, OpKind::Add);
  b.read(c, a, seq({t}));
  b.read(d, a, seq({t}));
  b.read(d, c, seq({t, slice(0, Expr::bound("J"))}));
  Schedule s = check_all(b.g, 1, 4, with_fuse(true), {"T", "J"});
  std::cout << s.str(b.g);
  // Three groups (no fallback to the unfused program, which has 6 statements): a and c are read
  // by other groups (2 deallocation statements); b's output is freed inside its group.
  EXPECT_EQ(s.num_statements, 5);
  Trace tr = simulate(b.g, s, {{"T", 3}, {"J", 2}});
  for (int64_t k = 0; k < 3; ++k) {
    EXPECT_LT(tr.when(a, {k}), tr.when(c, {k, 1}));
    EXPECT_LT(tr.when(c, {k, 1}), tr.when(d, {k}));
  }
}

// The shape of an RL program: state p[i] (p[i + 1] = upd[i]) is read by acting over (i, t),
// whose observations carry in t (x[i, t + 1] = act[i, t]); learning l[i] reads the whole
// rollout x[i, 0:T] and feeds the update.
struct Rollout {
  Builder b;
  OpId init, p, x, act, l, g, upd;
  Rollout() {
    Dims it = {i_dim, t_dim};
    init = b.op("init", {}, OpKind::Const);
    p = b.op("p", {i_dim}, OpKind::Merge);
    x = b.op("x", it, OpKind::Merge);
    act = b.op("act", it, OpKind::Add);
    l = b.op("l", {i_dim}, OpKind::Sum);
    g = b.op("g", {i_dim}, OpKind::Neg);
    upd = b.op("upd", {i_dim}, OpKind::Add);
    b.read(p, init, seq({}), i == 0);
    b.read(p, upd, seq({i - 1}), i > 0);
    b.read(x, init, seq({}), t == 0);
    b.read(x, act, seq({i, t - 1}), t > 0);
    b.read(act, x, seq({i, t}));
    b.read(act, p, seq({i}));
    b.read(l, x, seq({i, slice(0, T)}));
    b.read(l, p, seq({i}));
    b.read(g, l, seq({i}));
    b.read(upd, g, seq({i}));
    b.read(upd, p, seq({i}));
  }
};

TEST(ScheduleFuse, RolloutCarryReadWholeDoesNotCloseACycle) {
  // p, l and upd are joined by same-point reads over (i), but l must wait for the rollout that
  // p starts: the path p -> act[t] -> x[t + 1] -> l goes through a read carried in t, a
  // dimension the (i) groups do not have. The scheduler must keep p apart from l and still fuse
  // (no fallback to the unfused program).
  Rollout r;
  Schedule s = check_all(r.b.g, 1, 4, with_fuse(true), {"I", "T"});
  std::cout << s.str(r.b.g);
  EXPECT_TRUE(s.fused);
  EXPECT_LT(s.num_statements, compute_schedule(r.b.g, with_fuse(false)).num_statements);
  Trace tr = simulate(r.b.g, s, {{"I", 3}, {"T", 4}});
  for (int64_t n = 0; n < 3; ++n) {
    EXPECT_LT(tr.when(r.p, {n}), tr.when(r.act, {n, 0}));
    EXPECT_LT(tr.when(r.x, {n, 3}), tr.when(r.l, {n}));
    if (n > 0) EXPECT_LT(tr.when(r.upd, {n - 1}), tr.when(r.p, {n}));
  }
}

// The rollout with n parameters, each with its own initial value and update: the shape of an
// RL program's hundreds of parameters and optimizer moments.
struct Parameters {
  Builder b;
  std::vector<OpId> init, p, upd;
  OpId x0, x, act, l, g;
  explicit Parameters(int n) {
    Dims it = {i_dim, t_dim};
    x0 = b.op("x0", {}, OpKind::Const);
    x = b.op("x", it, OpKind::Merge);
    act = b.op("act", it, OpKind::Add);
    l = b.op("l", {i_dim}, OpKind::Sum);
    g = b.op("g", {i_dim}, OpKind::Neg);
    b.read(x, x0, seq({}), t == 0);
    b.read(x, act, seq({i, t - 1}), t > 0);
    b.read(act, x, seq({i, t}));
    b.read(l, x, seq({i, slice(0, T)}));
    b.read(g, l, seq({i}));
    for (int k = 0; k < n; ++k) {
      init.push_back(b.op(cat("init", k), {}, OpKind::Const));
      p.push_back(b.op(cat("p", k), {i_dim}, OpKind::Merge));
      upd.push_back(b.op(cat("upd", k), {i_dim}, OpKind::Add));
      b.read(p[k], init[k], seq({}), i == 0);
      b.read(p[k], upd[k], seq({i - 1}), i > 0);
      b.read(act, p[k], seq({i}));
      b.read(l, p[k], seq({i}));
      b.read(upd[k], g, seq({i}));
      b.read(upd[k], p[k], seq({i}));
    }
  }
};

// The parameters cannot join the learner's statement (the rollout reads them first), but they
// run as one statement with one deallocation: the statements do not grow with their number.
TEST(ScheduleFuse, StateSiblingsShareOneStatement) {
  Parameters one(1), five(5);
  Schedule s1 = check_all(one.b.g, 1, 4, with_fuse(true), {"I", "T"});
  Schedule s5 = check_all(five.b.g, 1, 4, with_fuse(true), {"I", "T"});
  std::cout << s5.str(five.b.g);
  EXPECT_EQ(s5.num_statements, s1.num_statements);
  Trace tr = simulate(five.b.g, s5, {{"I", 3}, {"T", 2}});
  for (int64_t n = 0; n < 3; ++n)
    for (int k = 1; k < 5; ++k) EXPECT_EQ(tr.when(five.p[k], {n}), tr.when(five.p[0], {n}) + k);
}

// A value made once and read only at the first iteration (a parameter's initial value) is freed
// before the second iteration instead of after the loop.
TEST_P(Schedule_, OnceMadeValueIsFreedAfterItsLastRead) {
  Parameters r(3);
  Schedule s = check_all(r.b.g, 1, 4, base(), {"I", "T"});
  std::cout << s.str(r.b.g);
  Trace tr = simulate(r.b.g, s, {{"I", 4}, {"T", 2}}, base());
  for (int k = 0; k < 3; ++k) {
    long freed = -1;
    for (size_t e = 0; e < tr.events.size(); ++e)
      if (tr.events[e].dealloc && tr.events[e].op == r.init[k]) freed = static_cast<long>(e);
    EXPECT_GE(freed, 0);
    EXPECT_LT(freed, tr.when(r.p[k], {1})) << "init" << k;
  }
}

// A program with no ops left (nothing retained: dead-code elimination removed everything) has
// an empty schedule, not isl's "no schedule" error.
TEST(ScheduleFuse, EmptyProgramHasAnEmptySchedule) {
  ir::Graph g;
  Schedule s = compute_schedule(g, with_fuse(true));
  EXPECT_EQ(s.root, nullptr);
  EXPECT_EQ(s.str(g), "");
}

TEST(ScheduleFuse, FutureReadAfterACarryDissolvesOnlyItsGroup) {
  // a and b are joined by a same-point read, but b reads c[t + 1], which reads a[t]: the
  // careful search does not follow c's carried read and fuses a with b, a group isl cannot
  // order around c. Only that group is dissolved: the rest of the program stays fused.
  Builder b;
  Dims it = {t_dim};
  OpId a = b.op("a", it), bb = b.op("b", it), c = b.op("c", it);
  OpId d = b.op("d", it), e = b.op("e", it);
  b.read(bb, a, seq({t}));
  b.read(c, a, seq({t - 1}), t > 0);
  b.read(bb, c, seq({t + 1}), t + 1 < T);
  b.read(d, bb, seq({t}));
  b.read(e, d, seq({t}));
  Schedule s = check_all(b.g, 1, 5, with_fuse(true));
  EXPECT_TRUE(s.fused);
  EXPECT_LT(s.num_statements, compute_schedule(b.g, with_fuse(false)).num_statements);
  Trace tr = simulate(b.g, s, {{"T", 4}});
  for (int64_t n = 0; n + 1 < 4; ++n) {
    EXPECT_LT(tr.when(a, {n}), tr.when(c, {n + 1}));
    EXPECT_LT(tr.when(c, {n + 1}), tr.when(bb, {n}));
  }
}

// Without proximity constraints, deallocations still happen within the iteration that last
// reads the point: live memory does not grow with the number of iterations.
TEST_P(Schedule_, RolloutMemoryIsBoundedWithoutProximity) {
  Rollout r;
  ScheduleOptions opt = base();
  opt.proximity = false;
  Schedule s = check_all(r.b.g, 1, 4, opt, {"I", "T"});
  std::cout << s.str(r.b.g);
  Trace few = simulate(r.b.g, s, {{"I", 2}, {"T", 4}}, opt);
  Trace many = simulate(r.b.g, s, {{"I", 9}, {"T", 4}}, opt);
  EXPECT_EQ(few.max_live, many.max_live);
}

TEST(ScheduleFuse, RecurrenceFusesWithItsState) {
  // The counter's Merge and Add are one group with a loop-carried self-dependence.
  Counter k(i_dim);
  Schedule s = check_all(k.b.g, 1, 8, with_fuse(true), {"I"});
  std::cout << s.str(k.b.g);
  Schedule unfused = compute_schedule(k.b.g, with_fuse(false));
  EXPECT_LT(s.num_statements, unfused.num_statements);
  Trace tr = simulate(k.b.g, s, {{"I", 5}});
  for (int64_t n = 0; n < 5; ++n) EXPECT_EQ(tr.when(k.add, {n}), tr.when(k.c, {n}) + 1);
}

TEST(ScheduleFuse, IndependentUdfsKeepAscendingOrder) {
  Builder b;
  OpId x = b.op("x", {t_dim}, OpKind::RandNormal);
  OpId u1 = b.op("u1", {t_dim}, OpKind::Udf);
  OpId u2 = b.op("u2", {t_dim}, OpKind::Udf);
  OpId y = b.op("y", {t_dim}, OpKind::Exp);
  b.read(y, x, seq({t}));
  b.read(u1, y, seq({t}));
  b.read(u2, x, seq({t}));
  Schedule s = check_all(b.g, 1, 4, with_fuse(true));
  EXPECT_EQ(s.num_statements, 1) << s.str(b.g);
  Trace tr = simulate(b.g, s, {{"T", 3}});
  for (int64_t k = 0; k < 3; ++k) EXPECT_LT(tr.when(u1, {k}), tr.when(u2, {k})) << s.str(b.g);
}

TEST(ScheduleFuse, ReinforceHasFewerStatements) {
  for (int n_step : {0, 3}) {
    Reinforce r(n_step);
    Schedule fused = compute_schedule(r.b.g, with_fuse(true));
    Schedule unfused = compute_schedule(r.b.g, with_fuse(false));
    std::cout << "n_step " << n_step << ": " << r.b.g.num_ops() << " ops, statements fused "
              << fused.num_statements << ", unfused " << unfused.num_statements << "\n";
    EXPECT_LT(fused.num_statements, unfused.num_statements);
  }
}

}  // namespace
}  // namespace tempo::schedule
