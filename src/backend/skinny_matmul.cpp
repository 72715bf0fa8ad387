#include "backend/skinny_matmul.h"

#include <immintrin.h>

#include "ir/types.h"

namespace tempo::backend {

namespace {

// Bytes per weight.
template <WeightType T>
constexpr int64_t kBytes = T == WeightType::F32 ? 4 : 2;

// Element i of w as a float32.
template <WeightType T>
float weight(const void* w, int64_t i) {
  if constexpr (T == WeightType::F32) {
    return static_cast<const float*>(w)[i];
  } else {
    const uint16_t h = static_cast<const uint16_t*>(w)[i];
    return T == WeightType::F16 ? ir::f16_to_float(h) : ir::bf16_to_float(h);
  }
}

template <WeightType T>
void matmul_portable(const float* x, int64_t rows, int64_t k, const void* w, int64_t n,
                     float* y) {
  for (int64_t o = 0; o < n; ++o)
    for (int64_t r = 0; r < rows; ++r) {
      float s = 0.0f;
      for (int64_t j = 0; j < k; ++j) s += weight<T>(w, o * k + j) * x[r * k + j];
      y[r * n + o] = s;
    }
}

// The AVX2 path, compiled for it whatever the build's target and chosen at run time.
#define TEMPO_AVX2 __attribute__((target("avx2,fma,f16c")))

// Elements i..i+7 of w as float32.
template <WeightType T>
TEMPO_AVX2 inline __m256 load8(const void* w, int64_t i) {
  if constexpr (T == WeightType::F32) {
    return _mm256_loadu_ps(static_cast<const float*>(w) + i);
  } else {
    const __m128i h =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(w) + i));
    if constexpr (T == WeightType::F16) return _mm256_cvtph_ps(h);
    // bfloat16 is the top half of a float32
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

TEMPO_AVX2 inline float sum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The weights of one output (from element wo of w) dotted with one row of x, with four sums over
// alternating blocks of 8 so that the FMAs do not wait on each other.
template <WeightType T>
TEMPO_AVX2 float dot(const float* x, int64_t k, const void* w, int64_t wo) {
  __m256 acc[4];
  for (auto& a : acc) a = _mm256_setzero_ps();
  const int64_t k32 = k & ~int64_t{31};
  for (int64_t j = 0; j < k32; j += 32)
    for (int u = 0; u < 4; ++u)
      acc[u] =
          _mm256_fmadd_ps(load8<T>(w, wo + j + 8 * u), _mm256_loadu_ps(x + j + 8 * u), acc[u]);
  float s = sum8(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  for (int64_t j = k32; j < k; ++j) s += weight<T>(w, wo + j) * x[j];
  return s;
}

// Outputs o..o+NO-1 for NR rows of x: NO x NR sums, each weight vector widened once for all
// rows. The NO outputs' rows of w are adjacent in memory; the next NO's are prefetched in memory
// order meanwhile, as interleaved streams would not be.
template <WeightType T, int NO, int NR>
TEMPO_AVX2 void tile(const float* x, int64_t k, const void* w, int64_t wo, int64_t n, float* y,
                     const char* next, const char* end) {
  __m256 acc[NO][NR];
  for (auto& per_output : acc)
    for (auto& a : per_output) a = _mm256_setzero_ps();
  const int64_t k8 = k & ~int64_t{7};
  constexpr int64_t step_bytes = NO * 8 * kBytes<T>;  // NO outputs x 8
  for (int64_t j = 0; j < k8; j += 8, next += step_bytes) {
    for (int64_t line = 0; line < step_bytes; line += 64)
      if (next + line < end) _mm_prefetch(next + line, _MM_HINT_T0);
    __m256 wv[NO];
    for (int a = 0; a < NO; ++a) wv[a] = load8<T>(w, wo + a * k + j);
    for (int r = 0; r < NR; ++r) {
      const __m256 xv = _mm256_loadu_ps(x + r * k + j);
      for (int a = 0; a < NO; ++a) acc[a][r] = _mm256_fmadd_ps(wv[a], xv, acc[a][r]);
    }
  }
  for (int a = 0; a < NO; ++a)
    for (int r = 0; r < NR; ++r) {
      float s = sum8(acc[a][r]);
      for (int64_t j = k8; j < k; ++j) s += weight<T>(w, wo + a * k + j) * x[r * k + j];
      y[r * n + a] = s;
    }
}

// The weights are read in memory order: on the 2-core EPYC machines measured (bench/README.md,
// "bench_decode"), the hardware prefetcher keeps one stream at 18-21 GB/s but two or more
// interleaved streams at 7-9 GB/s. One row of x takes each output's dot product in turn; more
// rows take three outputs at a time, their weights read from memory once (prefetched) and from
// the L1 cache for every four rows (3 x 4 sums, 3 weight vectors and a row's vector fill the 16
// registers; 4 x 2 sums measured 8-18% slower at 16 rows).
template <WeightType T>
TEMPO_AVX2 void matmul_avx2(const float* x, int64_t rows, int64_t k, const void* w, int64_t n,
                            float* y) {
  constexpr int NO = 3;
  const char* base = static_cast<const char*>(w);
  const char* end = base + n * k * kBytes<T>;
  int64_t o = 0;
  if (rows > 1) {
    for (; o + NO <= n; o += NO) {
      const char* next = base + (o + NO) * k * kBytes<T>;
      int64_t r = 0;
      for (; r + 4 <= rows; r += 4)
        tile<T, NO, 4>(x + r * k, k, w, o * k, n, y + r * n + o, next, end);
      const float* xr = x + r * k;
      float* yr = y + r * n + o;
      switch (rows - r) {
        case 3: tile<T, NO, 3>(xr, k, w, o * k, n, yr, next, end); break;
        case 2: tile<T, NO, 2>(xr, k, w, o * k, n, yr, next, end); break;
        case 1: tile<T, NO, 1>(xr, k, w, o * k, n, yr, next, end); break;
        default: break;
      }
    }
  }
  for (; o < n; ++o)
    for (int64_t r = 0; r < rows; ++r) y[r * n + o] = dot<T>(x + r * k, k, w, o * k);
}

bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return yes;
}

}  // namespace

void skinny_matmul(const float* x, int64_t rows, int64_t k, const void* w, WeightType type,
                   int64_t n, float* y) {
  const bool avx2 = has_avx2();
  switch (type) {
    case WeightType::F32:
      return avx2 ? matmul_avx2<WeightType::F32>(x, rows, k, w, n, y)
                  : matmul_portable<WeightType::F32>(x, rows, k, w, n, y);
    case WeightType::F16:
      return avx2 ? matmul_avx2<WeightType::F16>(x, rows, k, w, n, y)
                  : matmul_portable<WeightType::F16>(x, rows, k, w, n, y);
    case WeightType::BF16:
      return avx2 ? matmul_avx2<WeightType::BF16>(x, rows, k, w, n, y)
                  : matmul_portable<WeightType::BF16>(x, rows, k, w, n, y);
  }
}

}  // namespace tempo::backend
