// Matmuls of a few rows with float32, float16 and bfloat16 weights: the streaming kernel against
// double-precision sums, and whole programs against the float32 program with the same (rounded)
// weights.
#include <gtest/gtest.h>

#include <cmath>

#include "api/tempo.h"
#include "backend/skinny_matmul.h"
#include "driver/compile.h"

namespace tempo {
namespace {

// Deterministic values in about [-1, 1].
HostTensor wave(std::vector<int64_t> shape, double phase) {
  HostTensor h(DType::Float32, std::move(shape));
  for (int64_t k = 0; k < h.numel(); ++k) h.set(k, std::sin(0.37 * static_cast<double>(k) + phase));
  return h;
}

// Every path of the kernel (one row; pairs of rows and a last one, four outputs at a time and
// the rest one by one) and reduction lengths with and without a tail past the last 8 or 32.
TEST(SkinnyMatmul, KernelMatchesDoubleSums) {
  for (ir::DType dt : {ir::DType::Float32, ir::DType::Float16, ir::DType::BFloat16})
    for (int64_t rows : {1, 2, 3, 4, 5, 7, 16})
      for (int64_t k : {1, 8, 13, 64, 100, 131})
        for (int64_t n : {1, 2, 3, 4, 5, 9}) {
          HostTensor x = wave({rows, k}, 0.5), w = wave({n, k}, 1.5).to(dt);
          std::vector<float> y(static_cast<size_t>(rows * n), NAN);
          const backend::WeightType type = dt == ir::DType::Float32   ? backend::WeightType::F32
                                           : dt == ir::DType::Float16 ? backend::WeightType::F16
                                                                      : backend::WeightType::BF16;
          backend::skinny_matmul(x.ptr<float>(), rows, k, w.data.data(), type, n, y.data());
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t o = 0; o < n; ++o) {
              double want = 0.0;
              for (int64_t j = 0; j < k; ++j) want += x.at(r * k + j) * w.at(o * k + j);
              ASSERT_NEAR(y[r * n + o], want, 1e-5 * static_cast<double>(k))
                  << ir::dtype_name(dt) << " rows " << rows << " k " << k << " n " << n;
            }
        }
}

// x @ wᵀ with w kept as a half type equals the float32 program with w rounded the same way, for
// one row (decoding at batch 1), a batch, and more rows than the kernel takes (LibTorch's GEMM);
// w read without the transpose takes LibTorch's path and agrees too.
TEST(SkinnyMatmul, HalfWeightsMatchFloat32) {
  const int64_t k = 37, n = 11;
  for (ir::DType dt : {ir::DType::Float16, ir::DType::BFloat16})
    for (int64_t rows : {1, 6, 40}) {
      HostTensor w = wave({n, k}, 2.0).to(dt), v = wave({k, n}, 3.0).to(dt);
      Context ctx;
      Dim t = ctx.dim("t", "T");
      // Over t, so that nothing is folded at compile time.
      RT x = ctx.tensor(wave({rows, k}, 0.0)) * (ctx.symbol(t.var).cast(DType::Float32) + 1.0);
      RT y = x.matmul(ctx.tensor(w).transpose(0, 1)).retain();
      RT want = x.matmul(ctx.tensor(w.to(DType::Float32)).transpose(0, 1)).retain();
      RT plain = x.matmul(ctx.tensor(v)).retain();
      RT plain_want = x.matmul(ctx.tensor(v.to(DType::Float32))).retain();
      Executable exe = compile(ctx, {{t.bound, 3}});
      exe.run();
      for (int64_t s = 0; s < 3; ++s) {
        HostTensor a = exe.get(y, {s}), b = exe.get(want, {s});
        HostTensor c = exe.get(plain, {s}), d = exe.get(plain_want, {s});
        ASSERT_EQ(a.dtype, DType::Float32);
        ASSERT_EQ(a.shape, (std::vector<int64_t>{rows, n}));
        for (int64_t e = 0; e < a.numel(); ++e) {
          EXPECT_NEAR(a.at(e), b.at(e), 1e-5 * (s + 1) * k) << ir::dtype_name(dt) << " " << rows;
          EXPECT_NEAR(c.at(e), d.at(e), 1e-5 * (s + 1) * k) << ir::dtype_name(dt) << " " << rows;
        }
      }
    }
}

}  // namespace
}  // namespace tempo
