#include "loops/benchmarks.h"

#include "util/error.h"

namespace tempo::loops {
namespace {

using S = std::vector<std::string>;

// Two sweeps per time step (out-of-place, A -> B -> A), as in jacobi2d and heat2d.
Program two_sweep_2d(const std::string& name, int T, int N, const std::string& a_to_b,
                     const std::string& b_to_a) {
  std::string in = cat("0 <= t < ", T, " and 1 <= i < ", N - 1, " and 1 <= j < ", N - 1);
  auto stencil = [](const std::string& x) {
    return S{x + "[i,j]", x + "[i-1,j]", x + "[i+1,j]", x + "[i,j-1]", x + "[i,j+1]"};
  };
  return ProgramBuilder(name)
      .array("A", {N, N})
      .array("B", {N, N})
      .statement("S0", {"t", "i", "j"}, in, a_to_b, stencil("A"), {"B[i,j]"},
                 {"0", "t", "0", "i", "0", "j", "0"})
      .statement("S1", {"t", "i", "j"}, in, b_to_a, stencil("B"), {"A[i,j]"},
                 {"0", "t", "1", "i", "0", "j", "0"})
      .build();
}

std::string jacobi_body(const char* dst, const char* x) {
  return cat(dst, "[i][j] = 0.2 * (", x, "[i][j] + ", x, "[i][j-1] + ", x, "[i][j+1] + ", x,
             "[i+1][j] + ", x, "[i-1][j])");
}

std::string heat_body(const char* dst, const char* x) {
  return cat(dst, "[i][j] = ", x, "[i][j] + 0.125 * (", x, "[i+1][j] - 2.0 * ", x, "[i][j] + ", x,
             "[i-1][j]) + 0.125 * (", x, "[i][j+1] - 2.0 * ", x, "[i][j] + ", x, "[i][j-1])");
}

Program heat3d(int T, int N) {
  std::string in = cat("0 <= t < ", T, " and 1 <= i < ", N - 1, " and 1 <= j < ", N - 1,
                       " and 1 <= k < ", N - 1);
  auto reads = [](const std::string& x) {
    return S{x + "[i,j,k]",   x + "[i-1,j,k]", x + "[i+1,j,k]", x + "[i,j-1,k]",
             x + "[i,j+1,k]", x + "[i,j,k-1]", x + "[i,j,k+1]"};
  };
  auto body = [](const char* d, const char* x) {
    return cat(d, "[i][j][k] = 0.125 * (", x, "[i+1][j][k] - 2.0 * ", x, "[i][j][k] + ", x,
               "[i-1][j][k]) + 0.125 * (", x, "[i][j+1][k] - 2.0 * ", x, "[i][j][k] + ", x,
               "[i][j-1][k]) + 0.125 * (", x, "[i][j][k+1] - 2.0 * ", x, "[i][j][k] + ", x,
               "[i][j][k-1]) + ", x, "[i][j][k]");
  };
  return ProgramBuilder("heat3d")
      .array("A", {N, N, N})
      .array("B", {N, N, N})
      .statement("S0", {"t", "i", "j", "k"}, in, body("B", "A"), reads("A"), {"B[i,j,k]"},
                 {"0", "t", "0", "i", "0", "j", "0", "k", "0"})
      .statement("S1", {"t", "i", "j", "k"}, in, body("A", "B"), reads("B"), {"A[i,j,k]"},
                 {"0", "t", "1", "i", "0", "j", "0", "k", "0"})
      .build();
}

Program seidel2d(int T, int N) {
  std::string in = cat("0 <= t < ", T, " and 1 <= i < ", N - 1, " and 1 <= j < ", N - 1);
  S reads;
  std::string sum;
  for (int di = -1; di <= 1; ++di)
    for (int dj = -1; dj <= 1; ++dj) {
      reads.push_back(cat("A[i+(", di, "),j+(", dj, ")]"));
      sum += cat(sum.empty() ? "" : " + ", "A[i+(", di, ")][j+(", dj, ")]");
    }
  return ProgramBuilder("seidel2d")
      .array("A", {N, N})
      .statement("S0", {"t", "i", "j"}, in, "A[i][j] = (" + sum + ") / 9.0", reads, {"A[i,j]"},
                 {"0", "t", "0", "i", "0", "j", "0"})
      .build();
}

Program mvt(int N) {
  std::string in = cat("0 <= i < ", N, " and 0 <= j < ", N);
  return ProgramBuilder("mvt")
      .array("A", {N, N})
      .array("x1", {N})
      .array("x2", {N})
      .array("y1", {N})
      .array("y2", {N})
      .statement("S0", {"i", "j"}, in, "x1[i] = x1[i] + A[i][j] * y1[j]",
                 {"x1[i]", "A[i,j]", "y1[j]"}, {"x1[i]"}, {"0", "i", "0", "j", "0"})
      .statement("S1", {"i", "j"}, in, "x2[i] = x2[i] + A[j][i] * y2[j]",
                 {"x2[i]", "A[j,i]", "y2[j]"}, {"x2[i]"}, {"1", "i", "0", "j", "0"})
      .build();
}

Program doitgen(int R, int Q, int P) {
  std::string rqp = cat("0 <= r < ", R, " and 0 <= q < ", Q, " and 0 <= p < ", P);
  return ProgramBuilder("doitgen")
      .array("A", {R, Q, P})
      .array("C4", {P, P})
      .array("sum", {R, Q, P})
      .statement("S0", {"r", "q", "p"}, rqp, "sum[r][q][p] = 0.0", {}, {"sum[r,q,p]"},
                 {"0", "r", "0", "q", "0", "p", "0"})
      .statement("S1", {"r", "q", "p", "s"}, rqp + cat(" and 0 <= s < ", P),
                 "sum[r][q][p] = sum[r][q][p] + A[r][q][s] * C4[s][p]",
                 {"sum[r,q,p]", "A[r,q,s]", "C4[s,p]"}, {"sum[r,q,p]"},
                 {"0", "r", "0", "q", "1", "p", "0", "s", "0"})
      .statement("S2", {"r", "q", "p"}, rqp, "A[r][q][p] = sum[r][q][p]", {"sum[r,q,p]"},
                 {"A[r,q,p]"}, {"0", "r", "0", "q", "2", "p", "0"})
      .build();
}

Program blur(int H, int W) {
  std::string bx = cat("0 <= c < 3 and 0 <= i < ", H, " and 0 <= j < ", W - 2);
  std::string by = cat("0 <= c < 3 and 0 <= i < ", H - 2, " and 0 <= j < ", W - 2);
  return ProgramBuilder("blur")
      .array("in", {3, H, W})
      .array("bx", {3, H, W})
      .array("by", {3, H, W})
      .statement("S0", {"c", "i", "j"}, bx,
                 "bx[c][i][j] = (in[c][i][j] + in[c][i][j+1] + in[c][i][j+2]) / 3.0",
                 {"in[c,i,j]", "in[c,i,j+1]", "in[c,i,j+2]"}, {"bx[c,i,j]"},
                 {"0", "c", "0", "i", "0", "j", "0"})
      .statement("S1", {"c", "i", "j"}, by,
                 "by[c][i][j] = (bx[c][i][j] + bx[c][i+1][j] + bx[c][i+2][j]) / 3.0",
                 {"bx[c,i,j]", "bx[c,i+1,j]", "bx[c,i+2,j]"}, {"by[c,i,j]"},
                 {"1", "c", "0", "i", "0", "j", "0"})
      .build();
}

// RGB to grayscale; the channel-last input makes the original (i, j) order the natural one.
Program cvtcolor(int H, int W) {
  return ProgramBuilder("cvtcolor")
      .array("img", {H, W, 3})
      .array("gray", {H, W})
      .statement("S0", {"i", "j"}, cat("0 <= i < ", H, " and 0 <= j < ", W),
                 "gray[i][j] = 0.299 * img[i][j][0] + 0.587 * img[i][j][1] + 0.114 * img[i][j][2]",
                 {"img[i,j,0]", "img[i,j,1]", "img[i,j,2]"}, {"gray[i,j]"},
                 {"0", "i", "0", "j", "0"})
      .build();
}

}  // namespace

std::vector<std::string> benchmark_names() {
  return {"blur", "cvtcolor", "doitgen", "heat2d", "heat3d", "jacobi2d", "mvt", "seidel2d"};
}

Program benchmark(const std::string& name, Size size) {
  bool small = size == Size::Small;
  if (name == "jacobi2d") {
    int T = small ? 3 : 40, N = small ? 10 : 1000;
    return two_sweep_2d(name, T, N, jacobi_body("B", "A"), jacobi_body("A", "B"));
  }
  if (name == "heat2d") {
    int T = small ? 3 : 40, N = small ? 10 : 1000;
    return two_sweep_2d(name, T, N, heat_body("B", "A"), heat_body("A", "B"));
  }
  if (name == "heat3d") return small ? heat3d(2, 7) : heat3d(20, 120);
  if (name == "seidel2d") return small ? seidel2d(3, 10) : seidel2d(10, 1000);
  if (name == "mvt") return small ? mvt(9) : mvt(3000);
  if (name == "doitgen") return small ? doitgen(3, 4, 5) : doitgen(64, 64, 128);
  if (name == "blur") return small ? blur(9, 11) : blur(2000, 2000);
  if (name == "cvtcolor") return small ? cvtcolor(7, 9) : cvtcolor(3000, 3000);
  std::string known;
  for (const std::string& n : benchmark_names()) known += " " + n;
  throw UserError(cat("unknown loop benchmark `", name, "` (known:", known, ")"));
}

}  // namespace tempo::loops
