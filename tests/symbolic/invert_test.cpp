#include "symbolic/invert.h"

#include <gtest/gtest.h>

#include "symbolic/isl_bridge.h"
#include "symbolic/parse.h"
#include "symbolic/random_dependence.h"
#include "util/error.h"

namespace tempo::sym {
namespace {

using testing::Env;
using testing::Point;

const Dims kT = parse_dims("t:T");

Dims dims_of(const std::string& s) { return s.empty() ? Dims{} : parse_dims(s); }

// Inverts phi (parsed over the union of both domains) and prints the result.
std::string inv(const std::string& phi, const std::string& sink = "t:T", const std::string& source = "t:T") {
  Dims si = dims_of(sink), so = dims_of(source);
  return invert(parse(phi, testing::union_dims(si, so)), si, so).str();
}

std::string when(const std::string& phi, const std::string& sink = "t:T", const std::string& source = "t:T") {
  Dims si = dims_of(sink), so = dims_of(source);
  return invert_when(parse(phi, testing::union_dims(si, so)), si, so).when.str();
}

std::string inv_error(const std::string& phi, const std::string& sink = "t:T", const std::string& source = "t:T") {
  try {
    inv(phi, sink, source);
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Invert, PaperExamples) {
  EXPECT_EQ(inv("t+3"), "t - 3");
  EXPECT_EQ(inv("max(0,t-3):t+1"), "t:min(t + 4, T)");
  EXPECT_EQ(inv("t:T"), "0:t + 1");
  EXPECT_EQ(inv("0:t+1"), "t:T");
  EXPECT_EQ(inv("0:T"), "0:T");
}

TEST(Invert, ShiftsWindowsAndReversal) {
  EXPECT_EQ(inv("t-1"), "t + 1");
  EXPECT_EQ(inv("t:min(t+5,T)"), "max(t - 4, 0):t + 1");
  EXPECT_EQ(inv("t-1:t+2"), "max(t - 1, 0):min(t + 2, T)");
  EXPECT_EQ(inv("T-1-t"), "T - t - 1");
  EXPECT_EQ(inv("t//2"), "2*t:min(2*t + 2, T)");
  EXPECT_EQ(inv("(t+1)//3"), "max(3*t - 1, 0):min(3*t + 2, T)");
}

TEST(Invert, ConstantIndexReadsAllOfTheSinkDimension) {
  EXPECT_EQ(inv("0"), "0:T");
  EXPECT_EQ(when("0"), "t == 0");
  EXPECT_EQ(inv("T-1"), "0:T");
  EXPECT_EQ(when("T-1"), "t + 1 == T");
  // y[] = f(x[0:T]): the sink has no dimension.
  EXPECT_EQ(inv("[0:T]", "", "t:T").size(), 2u);  // "[]"
  EXPECT_EQ(when("t+3"), "true");
  EXPECT_EQ(when("0:t+1"), "true");
}

TEST(Invert, MultiDimensional) {
  // sink [b,i,t] reads source [b,i] at [b,i]: every t reads it.
  EXPECT_EQ(inv("[b, i]", "b:B,i:I,t:T", "b:B,i:I"), "[b, i, 0:T]");
  EXPECT_EQ(when("[b, i]", "b:B,i:I,t:T", "b:B,i:I"), "true");
  // sink [b,i] reads source [b,i,t] at [b, i, 0:T]: a reduction over t.
  EXPECT_EQ(inv("[b, i, 0:T]", "b:B,i:I", "b:B,i:I,t:T"), "[b, i]");
  EXPECT_EQ(inv("[i - 1, t:T]", "i:I,t:T", "i:I,t:T"), "[i + 1, 0:t + 1]");
  // The order of dimensions may differ between sink and source.
  EXPECT_EQ(inv("[t, i+1]", "t:T,i:I", "i:I,t:T"), "[i, t - 1]");
  EXPECT_EQ(inv("[0, t]", "t:T", "i:I,t:T"), "[t]");
  EXPECT_EQ(when("[0, t]", "t:T", "i:I,t:T"), "i == 0");
}

TEST(Invert, StridedAccessInvertsWhereItReads) {
  EXPECT_EQ(inv("2*t"), "t // 2");
  EXPECT_EQ(when("2*t"), "t % 2 == 0");
  EXPECT_EQ(inv("0:T:2"), "0:T");
  EXPECT_EQ(when("0:T:2"), "t % 2 == 0");
}

TEST(Invert, Errors) {
  std::string e = inv_error("t*t");
  EXPECT_NE(e.find("cannot invert `t*t`"), std::string::npos) << e;
  EXPECT_NE(e.find("not affine"), std::string::npos) << e;
  e = inv_error("t*T");
  EXPECT_NE(e.find("`t*T` is not affine"), std::string::npos) << e;
  e = inv_error("s", "t:T", "t:T,s:S");
  EXPECT_NE(e.find("has 1 entry but the source domain [t:T,s:S] has 2 dimensions"), std::string::npos) << e;
  e = inv_error("[s]", "t:T", "s:S");  // s is a source variable, not the sink's
  EXPECT_NE(e.find("unbound symbol `s`"), std::string::npos) << e;
  // Readers with holes (every other sink point) or along a diagonal are no box of slices.
  e = inv_error("t%2");
  EXPECT_NE(e.find("do not form a box"), std::string::npos) << e;
  e = inv_error("[t+i]", "i:I,t:T", "t:T");
  EXPECT_NE(e.find("do not form a box"), std::string::npos) << e;
  // The first reader is 0 for source point 0 but t + 3 after it: no min/max form.
  e = inv_error("max(t-3, 0)");
  EXPECT_NE(e.find("cannot be written with min and max"), std::string::npos) << e;
  e = inv_error("T");
  EXPECT_NE(e.find("reads no point"), std::string::npos) << e;
}

// ---- property: inversion agrees with brute-force enumeration ----------------------------------

struct Config {
  Dims sink, source;
  int64_t max_bound;
};

// Checks inverse/when against the readers of every source point for every small bound; returns
// an empty string or a description of the first disagreement.
std::string check_inversion(const Expr& phi, const Config& c, const Inversion& r) {
  Dims all = testing::union_dims(c.sink, c.source);
  std::string failure;
  testing::for_each_bounds(all, c.max_bound, [&](const Env& bounds) {
    if (!failure.empty()) return;
    std::map<Point, std::set<Point>> readers;
    testing::for_each_point(c.sink, bounds, [&](const Env& env, const Point& p) {
      for (const Point& q : testing::expand(phi, env, c.source)) readers[q].insert(p);
    });
    testing::for_each_point(c.source, bounds, [&](const Env& env, const Point& q) {
      if (!failure.empty()) return;
      std::set<Point> want = readers.count(q) ? readers[q] : std::set<Point>{};
      bool w = testing::ref_eval(r.when, env) != 0;
      std::set<Point> got = testing::expand(r.inverse, env, c.sink);
      bool ok = want.empty() ? (!w || got.empty()) : (w && got == want);
      if (!ok) {
        std::ostringstream os;
        os << "phi = " << phi << ", inverse = " << r.inverse << " when " << r.when << " at";
        for (const auto& [k, v] : env) os << " " << k << "=" << v;
        os << ": brute force has " << want.size() << " readers, inverse " << got.size() << " (when=" << w << ")";
        failure = os.str();
      }
    });
  });
  return failure;
}

TEST(InvertProperty, AgreesWithBruteForceOnRandomAffineDependences) {
  std::mt19937 rng(2024);
  std::vector<Config> configs = {
      {kT, kT, 7},
      {parse_dims("i:I,t:T"), parse_dims("i:I,t:T"), 4},
      {parse_dims("b:B,i:I,t:T"), parse_dims("b:B,i:I"), 3},
      {parse_dims("i:I"), parse_dims("i:I,t:T"), 4},
      {parse_dims("t:T"), parse_dims("s:S"), 5},
      {parse_dims("i:I,t:T"), parse_dims("t:T"), 4},
  };
  int inverted = 0, refused = 0;
  const int n = 2000;
  for (int iter = 0; iter < n; ++iter) {
    const Config& c = configs[iter % configs.size()];
    Expr phi = testing::random_dependence(rng, c.sink, c.source);
    Inversion r;
    try {
      r = invert_when(phi, c.sink, c.source);
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("cannot invert `", 0), 0u) << e.what();
      ++refused;
      continue;
    }
    ++inverted;
    std::string failure = check_inversion(phi, c, r);
    ASSERT_TRUE(failure.empty()) << failure;
  }
  // Most of the shapes Tempo programs use are invertible.
  EXPECT_GT(inverted, n * 6 / 10) << refused << " refused";
}

// Inverting twice gives back the original relation where the first inverse is exact everywhere.
TEST(InvertProperty, DoubleInversionOfCommonShapes) {
  for (const char* phi : {"t+3", "t-2", "max(0,t-3):t+1", "t:min(t+4,T)", "t:T", "0:t+1", "T-1-t"}) {
    Dims d = kT;
    Expr e = parse(phi, d);
    Expr once = invert(e, d, d);
    Expr twice = invert(once, d, d);
    IslContext ctx;
    EXPECT_TRUE(edge_to_isl(ctx, "a", d, "b", d, twice).is_equal(edge_to_isl(ctx, "a", d, "b", d, e)))
        << phi << " -> " << once << " -> " << twice;
  }
}

}  // namespace
}  // namespace tempo::sym
