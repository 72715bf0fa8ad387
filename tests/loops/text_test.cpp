// The loop-program text format: programs parse into what the builder would make; mistakes are
// UserErrors naming the line.
#include "loops/text.h"

#include <gtest/gtest.h>

#include "loops/transform.h"
#include "util/error.h"

namespace tempo::loops {
namespace {

const char* kSweep =
    "# two sweeps\n"
    "array A 16 16\n"
    "array B 16 16\n"
    "statement S0 t i j : 0 <= t < 2 and 1 <= i < 15 and 1 <= j < 15\n"
    "  B[i][j] = 0.25 * (A[i-1][j] + A[i+1][j] + A[i][j-1] + A[i][j+1]);\n"
    "schedule 0 t 0 i 0 j 0\n"
    "statement S1 t i j : 0 <= t < 2 and 1 <= i < 15 and 1 <= j < 15\n"
    "  A[i][j] += sqrt(B[i][j])\n"
    "schedule 0 t 1 i 0 j 0\n";

TEST(Text, ParsesAProgram) {
  Program p = parse_program(kSweep, "sweep.loop", "sweep");
  ASSERT_EQ(p.statements.size(), 2u);
  EXPECT_EQ(p.name, "sweep");
  EXPECT_NE(p.statements[0].reads.find("A[i-1,j]"), std::string::npos) << p.statements[0].reads;
  EXPECT_NE(p.statements[1].reads.find("A[i,j]"), std::string::npos);  // += reads its target
  EXPECT_EQ(p.statements[1].schedule[2], "1");
  // Dependences as in the benchmark of the same shape: the time loop carries them.
  LoopEnv env(p);
  EXPECT_FALSE(env.try_action({Kind::Parallelize, 0, 0}));
  EXPECT_TRUE(env.try_action({Kind::Parallelize, 1, 1}));
}

TEST(Text, DefaultScheduleIsOneNestPerStatement) {
  Program p = parse_program("array x 4\nstatement S i : 0 <= i < 4\n x[i] = 1.0\n"
                            "statement T i : 0 <= i < 4\n x[i] = x[i] * 2\n",
                            "f", "f");
  EXPECT_EQ(p.statements[1].schedule, (std::vector<std::string>{"1", "i", "0"}));
}

void expect_error(const std::string& text, const std::string& needle) {
  try {
    parse_program(text, "f.loop", "f");
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Text, BadInputNamesTheLine) {
  const std::string head = "array A 8 8\nstatement S i j : 0 <= i < 8 and 0 <= j < 8\n";
  expect_error(head + "A[i][j] = A[i*j][j]\n", "f.loop:3: index `i*j` of A is not an affine");
  expect_error(head + "A[i][j] = C[i][j]\n", "f.loop:3: unknown array `C`");
  expect_error(head + "A[i] = 1\n", "`A` has 2 dimensions, not 1");
  expect_error(head + "A[i][j] = A\n", "array `A` is used without indices");
  expect_error(head + "A[i][j] = k\n", "unknown name `k`");
  expect_error(head + "A[i][j] + 1\n", "must be an assignment");
  expect_error(head + "A[i][j] = 1\nschedule 0 i 0\n", "f.loop:4: statement S needs a schedule of 5");
  expect_error("array A 8 x\n", "f.loop:1: array A: size `x`");
  // Sizes past 64 bits, or whose product is, were capped or wrapped without a word.
  expect_error("array A 99999999999999999999\n", "f.loop:1: array A: size `99999999999999999999` is too large");
  const std::string statement = "statement S i : 0 <= i < 8\n A[i][i] = 1\n";
  expect_error("array A 4294967296 4294967296\n" + statement, "array A is too large to allocate");
  expect_error("array A 8\nstatement S i : 0 <= i\n A[i] = 1\n", "is not bounded");
  expect_error("loop\n", "unknown line `loop`");
  expect_error("array A 8\n", "no statements");
}

}  // namespace
}  // namespace tempo::loops
