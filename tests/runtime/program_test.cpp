// Small whole programs through the api, scheduler and executor, checking runtime behaviour:
// values, launches, memory, and driver errors.
#include <gtest/gtest.h>

#include "api/tempo.h"
#include "backend/cpu_allocator.h"
#include "driver/compile.h"
#include "util/error.h"
#include "expect_error.h"

namespace tempo {
namespace {

// A scalar source over `domain` whose value at a point is f(point).
RT scalar_source(Context& ctx, const Dims& domain,
                 std::function<double(const std::vector<int64_t>&)> f) {
  auto fn = [f](const std::vector<HostTensor>&, const std::vector<int64_t>& p) {
    return std::vector<HostTensor>{HostTensor::scalar(f(p))};
  };
  return ctx.udf("src", fn, {}, {TensorType{DType::Float32, {}}}, domain)[0];
}

std::string error_of(const std::function<void()>& f) { return testing::user_error_of(f); }

// The launch profile accounts for every launch and names the ops that took longest; without
// CompileOptions::profile there is none. Tensors come from the caching allocator, which serves
// the second run's tensors from its free lists.
TEST(Program, ProfileAndAllocator) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = scalar_source(ctx, {t}, [](const auto& p) { return static_cast<double>(p[0]); });
  RT s = ctx.placeholder({DType::Float32, {}}, {t}, "s");
  s[0] = ctx.zeros({});
  s[t.var + 1] = (s[t.var] + x[t.var]).named("step");
  RT last = s[t.bound - 1].retain();
  CompileOptions o;
  o.profile = true;
  o.device = "cpu";  // whose caching allocator is checked
  Executable exe = compile(ctx, {{t.bound, 50}}, o);
  exe.run();
  const int64_t hits = backend::cpu_allocator_stats().cache_hits;
  exe.run();
  std::string report = exe.profile_report();
  EXPECT_NE(report.find(std::to_string(2 * exe.ops_executed()) + " launches"), std::string::npos)
      << report;
  EXPECT_NE(report.find("RT 'step'"), std::string::npos) << report;
  EXPECT_TRUE(compile(ctx, {{t.bound, 50}}).profile_report().empty());
  if (std::getenv("TEMPO_CPU_CACHE_MB") == nullptr) {
    EXPECT_TRUE(backend::cpu_allocator_stats().installed);
    EXPECT_GT(backend::cpu_allocator_stats().cache_hits, hits);
  }
}

// CompileOptions::device picks where the program runs; a device that is not one is a one-line
// error naming it.
TEST(Program, DeviceOption) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = scalar_source(ctx, {t}, [](const auto& p) { return static_cast<double>(p[0]); });
  RT y = (x * 2.0).retain();
  CompileOptions o;
  o.device = "cpu";
  Executable exe = compile(ctx, {{t.bound, 4}}, o);
  exe.run();
  EXPECT_DOUBLE_EQ(exe.get(y, {3}).at(0), 6.0);
  auto error_for = [&](const std::string& device) {
    o.device = device;
    return error_of([&] { compile(ctx, {{t.bound, 4}}, o); });
  };
  EXPECT_NE(error_for("gpu").find("unknown device \"gpu\""), std::string::npos);
  EXPECT_NE(error_for("xla").find("device \"xla\" is not supported"), std::string::npos);
#ifndef TEMPO_CUDA
  EXPECT_NE(error_for("cuda").find("needs a CUDA build"), std::string::npos);
#endif
}

TEST(Program, AffineMap) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = scalar_source(ctx, {t}, [](auto& p) { return static_cast<double>(p[0]); });
  RT y = (x * 2.0 + 1.0).retain();
  Executable exe = compile(ctx, {{t.bound, 20}});
  exe.run();
  for (int64_t k = 0; k < 20; ++k) EXPECT_DOUBLE_EQ(exe.get(y, {k}).at(0), 2.0 * k + 1);
  EXPECT_GE(exe.ops_executed(), 20 * 3);
  // Running again gives the same values.
  exe.run();
  EXPECT_DOUBLE_EQ(exe.get(y, {7}).at(0), 15.0);
}

TEST(Program, RecurrenceWithInitialBranch) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = scalar_source(ctx, {t}, [](auto& p) { return p[0] + 1.0; });
  RT s = ctx.placeholder({DType::Float32, {}}, {t}, "s");
  s[0] = x[0];
  s[t.var + 1] = s[t.var] * 0.5 + x;  // x at t
  RT out = s.retain();
  Executable exe = compile(ctx, {{t.bound, 10}});
  exe.run();
  double ref = 1.0;
  for (int64_t k = 0; k < 10; ++k) {
    if (k > 0) ref = ref * 0.5 + k;  // x[k - 1] = k
    EXPECT_NEAR(exe.get(out, {k}).at(0), ref, 1e-5) << k;
  }
}

TEST(Program, PrefixSumOverSlice) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = scalar_source(ctx, {t}, [](auto& p) { return p[0] * 0.25; });
  RT s = x[sym::slice(0, t.var + 1)].sum(0).retain();
  Executable exe = compile(ctx, {{t.bound, 12}});
  exe.run();
  double acc = 0;
  for (int64_t k = 0; k < 12; ++k) {
    acc += k * 0.25;
    EXPECT_NEAR(exe.get(s, {k}).at(0), acc, 1e-5);
  }
}

TEST(Program, DeallocationBoundsMemory) {
  auto peak = [](bool deallocate) {
    Context ctx;
    Dim t = ctx.dim("t", "T");
    auto fn = [](const std::vector<HostTensor>&, const std::vector<int64_t>&) {
      return std::vector<HostTensor>{HostTensor(DType::Float32, {256})};
    };
    RT x = ctx.udf("big", fn, {}, {TensorType{DType::Float32, {256}}}, {t})[0];
    RT y = (x.exp() + 1.0).sum();
    ctx.udf("sink", [](auto&, auto&) { return std::vector<HostTensor>{}; }, {y}, {}, {t});
    CompileOptions o;
    o.deallocate = deallocate;
    o.passes.vectorize = false;  // batched over t, the whole rollout is live at once
    Executable exe = compile(ctx, {{t.bound, 64}}, o);
    exe.run();
    return exe.memory().peak_bytes;
  };
  int64_t with = peak(true), without = peak(false);
  EXPECT_GT(without, 64 * 256 * 4);
  EXPECT_LT(with, 8 * 256 * 4);
}

TEST(Program, CompiledProgramIgnoresLaterChanges) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = scalar_source(ctx, {t}, [](auto& p) { return 1.0; });
  RT y = (x + 1.0).retain();
  Executable exe = compile(ctx, {{t.bound, 3}});
  RT z = (y * 3.0).retain();  // added after compile
  exe.run();
  EXPECT_DOUBLE_EQ(exe.get(y, {2}).at(0), 2.0);
  EXPECT_NE(error_of([&] { exe.get(z, {0}); }), "");
}

TEST(Program, DriverErrors) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = scalar_source(ctx, {t}, [](auto& p) { return 1.0; });
  RT y = x + 1.0;
  RT r = y.retain();
  std::string m = error_of([&] { compile(ctx, {}); });
  EXPECT_NE(m.find("bound T has no value; pass it to compile({{T, ...}})"), std::string::npos) << m;
  EXPECT_NE(error_of([&] { compile(ctx, {{t.bound, 0}}); }), "");
  Executable exe = compile(ctx, {{t.bound, 4}});
  exe.run();
  m = error_of([&] { exe.get(x, {0}); });
  EXPECT_NE(m.find("retain"), std::string::npos) << m;
  EXPECT_NE(error_of([&] { exe.get(r, {}); }), "");   // wrong point length
  EXPECT_NE(error_of([&] { exe.get(r, {4}); }), "");  // outside the domain
  EXPECT_DOUBLE_EQ(exe.get(r, {3}).at(0), 2.0);
  EXPECT_FALSE(exe.schedule_str().empty());
}

TEST(Program, UdfOutputMismatchNamesTheUdf) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  auto fn = [](const std::vector<HostTensor>&, const std::vector<int64_t>&) {
    return std::vector<HostTensor>{HostTensor(DType::Float32, {3})};
  };
  RT x = ctx.udf("env_step", fn, {}, {TensorType{DType::Float32, {4}}}, {t})[0];
  RT y = (x + 1.0).retain();
  Executable exe = compile(ctx, {{t.bound, 2}});
  std::string m = error_of([&] { exe.run(); });
  EXPECT_NE(m.find("UDF 'env_step'"), std::string::npos) << m;
  EXPECT_NE(m.find("f32(3)"), std::string::npos) << m;
}

TEST(Program, SeededRandomIsReproducible) {
  auto draw = [](uint64_t seed) {
    Context ctx;
    Dim t = ctx.dim("t", "T");
    RT r = ctx.rand_uniform({3}, {t}).retain();
    CompileOptions o;
    o.seed = seed;
    Executable exe = compile(ctx, {{t.bound, 2}}, o);
    exe.run();
    return exe.get(r, {1}).to_vector();
  };
  EXPECT_EQ(draw(5), draw(5));
  EXPECT_NE(draw(5), draw(6));
}

}  // namespace
}  // namespace tempo
