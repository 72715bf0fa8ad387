// Matmuls of a few rows with float32, float16 and bfloat16 weights: the streaming kernel against
// double-precision sums, and whole programs against the float32 program with the same (rounded)
// weights.
#include <gtest/gtest.h>

#include <cmath>

#include "api/tempo.h"
#include "backend/cuda_kernels.h"
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

backend::WeightType weight_type(ir::DType dt) {
  return dt == ir::DType::Float32   ? backend::WeightType::F32
         : dt == ir::DType::Float16 ? backend::WeightType::F16
                                    : backend::WeightType::BF16;
}

// The vector widths this CPU runs, narrowest first.
std::vector<backend::VectorIsa> isas() {
  std::vector<backend::VectorIsa> all;
  for (auto isa : {backend::VectorIsa::None, backend::VectorIsa::Avx2, backend::VectorIsa::Avx512})
    if (isa <= backend::vector_isa()) all.push_back(isa);
  return all;
}

std::vector<float> skinny(const HostTensor& x, const HostTensor& w, backend::VectorIsa isa) {
  const int64_t rows = x.shape[0], k = x.shape[1], n = w.shape[0];
  std::vector<float> y(static_cast<size_t>(rows * n), NAN);
  backend::skinny_matmul(x.ptr<float>(), rows, k, w.data.data(), weight_type(w.dtype), n,
                         y.data(), isa);
  return y;
}

// Every path of the kernel (one row; pairs of rows and a last one, four outputs at a time and
// the rest one by one) and reduction lengths with and without a tail past the last 8 or 32, at
// every vector width this CPU has.
TEST(SkinnyMatmul, KernelMatchesDoubleSums) {
  for (backend::VectorIsa isa : isas())
    for (ir::DType dt : {ir::DType::Float32, ir::DType::Float16, ir::DType::BFloat16})
      for (int64_t rows : {1, 2, 3, 4, 5, 7, 16, 17, 32, 33})
        for (int64_t k : {1, 8, 13, 64, 100, 131})
          for (int64_t n : {1, 2, 3, 4, 5, 9}) {
            HostTensor x = wave({rows, k}, 0.5), w = wave({n, k}, 1.5).to(dt);
            std::vector<float> y = skinny(x, w, isa);
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t o = 0; o < n; ++o) {
                double want = 0.0;
                for (int64_t j = 0; j < k; ++j) want += x.at(r * k + j) * w.at(o * k + j);
                ASSERT_NEAR(y[r * n + o], want, 1e-5 * static_cast<double>(k))
                    << ir::dtype_name(dt) << " rows " << rows << " k " << k << " n " << n
                    << " isa " << static_cast<int>(isa);
              }
          }
}

// The packed panel of float32 weights in AVX-512 vectors (17 to 32 rows) sums in AVX2's
// order: equal results, whole tiles of 12 outputs and their remainders.
TEST(SkinnyMatmul, VectorWidthsGiveEqualSums) {
  if (backend::vector_isa() < backend::VectorIsa::Avx512) GTEST_SKIP() << "no AVX-512";
  for (int64_t rows : {16, 17, 24, 31, 32})
    for (int64_t k : {1, 13, 64, 131})
      for (int64_t n : {1, 5, 12, 25, 49}) {
        HostTensor x = wave({rows, k}, 0.5), w = wave({n, k}, 1.5);
        EXPECT_EQ(skinny(x, w, backend::VectorIsa::Avx2), skinny(x, w, backend::VectorIsa::Avx512))
            << "rows " << rows << " k " << k << " n " << n;
      }
}

// The strided kernel's three paths (b's columns contiguous: dot products; b's rows contiguous:
// scaled rows; neither: one sum at a time) against double sums, with b in float32 and the half
// types (a cache kept in them), and row, column and reduction counts on and off its tiles.
TEST(SkinnyMatmul, StridedKernelMatchesDoubleSums) {
  for (ir::DType dt : {ir::DType::Float32, ir::DType::Float16, ir::DType::BFloat16})
    for (int form = 0; form < 3; ++form)
      for (int64_t m : {1, 2, 3, 4, 5, 8})
        for (int64_t k : {1, 7, 8, 64, 67})
          for (int64_t n : {1, 7, 8, 16, 17, 33}) {
            // a is (m, k) inside a wider buffer; b is (k, n) stored as (n, k + 3), as (k, n + 5)
            // or with neither stride 1.
            const int64_t a_rs = k + 2;
            const int64_t b_rs = form == 0 ? 1 : form == 1 ? n + 5 : 2 * n;
            const int64_t b_cs = form == 0 ? k + 3 : form == 1 ? 1 : 2;
            HostTensor a = wave({m * a_rs}, 0.25), b = wave({(k + 5) * (n + 5) * 2}, 0.75).to(dt);
            std::vector<float> y(static_cast<size_t>(m * n), NAN);
            backend::strided_matmul(a.ptr<float>(), a_rs, 1, b.data.data(), weight_type(dt), b_rs,
                                    b_cs, m, k, n, y.data());
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                double want = 0.0;
                for (int64_t l = 0; l < k; ++l)
                  want += a.at(i * a_rs + l) * b.at(l * b_rs + j * b_cs);
                ASSERT_NEAR(y[i * n + j], want, 1e-5 * static_cast<double>(k))
                    << ir::dtype_name(dt) << " form " << form << " m " << m << " k " << k << " n "
                    << n;
              }
          }
}

// Attention's shapes in a program: queries (2, 3, G, 16) against keys cached as (n, 2, 3, 16)
// and read permuted, and the probabilities against the values, equal to double sums.
TEST(SkinnyMatmul, AttentionOverPermutedCache) {
  const int64_t G = 3, hd = 16, n = 21;
  HostTensor qh = wave({2, 3, G, hd}, 0.1), kh = wave({n, 2, 3, hd}, 0.2);
  HostTensor ph = wave({2, 3, G, n}, 0.3), vh = wave({n, 2, 3, hd}, 0.4);
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT s = ctx.symbol(t.var).cast(DType::Float32) + 1.0;  // over t, so that nothing is folded
  RT scores = (ctx.tensor(qh) * s).matmul(ctx.tensor(kh).permute({1, 2, 3, 0})).retain();
  RT attended = (ctx.tensor(ph) * s).matmul(ctx.tensor(vh).permute({1, 2, 0, 3})).retain();
  Executable exe = compile(ctx, {{t.bound, 2}});
  exe.run();
  HostTensor got_s = exe.get(scores, {1}), got_a = exe.get(attended, {1});
  ASSERT_EQ(got_s.shape, (std::vector<int64_t>{2, 3, G, n}));
  ASSERT_EQ(got_a.shape, (std::vector<int64_t>{2, 3, G, hd}));
  for (int64_t b = 0; b < 6; ++b)
    for (int64_t i = 0; i < G; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double want = 0.0;
        for (int64_t l = 0; l < hd; ++l) want += 2.0 * qh.at((b * G + i) * hd + l) * kh.at((j * 6 + b) * hd + l);
        EXPECT_NEAR(got_s.at((b * G + i) * n + j), want, 1e-4);
      }
      for (int64_t j = 0; j < hd; ++j) {
        double want = 0.0;
        for (int64_t l = 0; l < n; ++l) want += 2.0 * ph.at((b * G + i) * n + l) * vh.at((l * 6 + b) * hd + j);
        EXPECT_NEAR(got_a.at((b * G + i) * hd + j), want, 1e-4);
      }
    }
}

// x @ wᵀ with w kept as a half type equals the float32 program with w rounded the same way, for
// one row (decoding at batch 1), a batch, and more rows than the kernel takes (LibTorch's GEMM),
// with reduction lengths that the GPU kernel reads 8 weights at a time and one at a time; w read
// without the transpose takes LibTorch's path and agrees too.
TEST(SkinnyMatmul, HalfWeightsMatchFloat32) {
  const int64_t n = 11;
  for (int64_t k : {37, 264})
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
            EXPECT_NEAR(a.at(e), b.at(e), 1e-5 * (s + 1) * k)
                << ir::dtype_name(dt) << " " << rows << " rows, k " << k;
            EXPECT_NEAR(c.at(e), d.at(e), 1e-5 * (s + 1) * k)
                << ir::dtype_name(dt) << " " << rows << " rows, k " << k;
          }
        }
      }
}

#ifdef TEMPO_CUDA
// The GPU kernel for half weights compiles for every row count it is asked for (no GPU needed).
TEST(SkinnyMatmul, CudaKernelCompiles) {
  for (backend::WeightType type : {backend::WeightType::F16, backend::WeightType::BF16})
    for (int64_t rows : {int64_t{1}, int64_t{5}, backend::kPackedRows}) {
      const backend::CudaImage image =
          backend::compile_cuda(backend::cuda_skinny_matmul_source(type, rows), "compute_80");
      EXPECT_NE(image.data.find(".entry skinny_matmul"), std::string::npos) << rows;
    }
}
#endif

}  // namespace
}  // namespace tempo
