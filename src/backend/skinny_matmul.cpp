#include "backend/skinny_matmul.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "ir/types.h"
#include "util/env.h"

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

// Outputs o..o+NO-1 of float32 weights for every row of x, packed transposed and padded to 8V
// rows (xt: k x 8V): each weight is broadcast once against the rows' vectors, NO x V sums, no
// horizontal reduction. The next NO outputs' weights are prefetched a line at a time.
template <int V, int NO>
TEMPO_AVX2 void packed_tile(const float* xt, int64_t rows, int64_t k, const float* w, int64_t o,
                            int64_t n, float* y) {
  __m256 acc[NO][V];
#pragma GCC unroll 16
  for (int a = 0; a < NO; ++a)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[a][v] = _mm256_setzero_ps();
  const float* wo = w + o * k;
  const float* next = wo + NO * k;
  const float* end = w + n * k;
  for (int64_t j = 0; j < k; ++j) {
    // A line (16 weights) of each of the next outputs every 16 steps: the next tile arrives
    // while this one is computed.
    if ((j & 15) == 0)
#pragma GCC unroll 16
      for (int a = 0; a < NO; ++a)
        _mm_prefetch(reinterpret_cast<const char*>(std::min(next + a * k + j, end - 1)),
                     _MM_HINT_T0);
    __m256 xv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) xv[v] = _mm256_loadu_ps(xt + j * 8 * V + 8 * v);
#pragma GCC unroll 16
    for (int a = 0; a < NO; ++a) {
      const __m256 wb = _mm256_broadcast_ss(wo + a * k + j);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[a][v] = _mm256_fmadd_ps(wb, xv[v], acc[a][v]);
    }
  }
  alignas(32) float out[8 * V];
#pragma GCC unroll 16
  for (int a = 0; a < NO; ++a) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) _mm256_store_ps(out + 8 * v, acc[a][v]);
    for (int64_t r = 0; r < rows; ++r) y[r * n + o + a] = out[r];
  }
}

template <int V>
TEMPO_AVX2 void packed_rows(const float* xt, int64_t rows, int64_t k, const float* w, int64_t n,
                            float* y) {
  constexpr int NO = 12 / V;  // NO x V sums, V row vectors and a broadcast: 15 of 16 registers
  int64_t o = 0;
  for (; o + NO <= n; o += NO) packed_tile<V, NO>(xt, rows, k, w, o, n, y);
  for (; o < n; ++o) packed_tile<V, 1>(xt, rows, k, w, o, n, y);
}

// Float32 weights and 9 to 32 rows: the rows transposed into a packed panel (k x 8V, zero
// padded), read from the cache for every output, and each weight broadcast from memory once.
// Measured with weights cold in memory (2048 x 768): 16 rows 62 GFLOP/s, against 36 for the
// BLAS's GEMM on one thread and 31 for tile().
TEMPO_AVX2 void matmul_packed(const float* x, int64_t rows, int64_t k, const float* w, int64_t n,
                              float* y) {
  const int64_t v = (rows + 7) / 8;
  std::vector<float> xt(static_cast<size_t>(k * 8 * v), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) xt[static_cast<size_t>(j * 8 * v + r)] = x[r * k + j];
  switch (v) {
    case 1: return packed_rows<1>(xt.data(), rows, k, w, n, y);
    case 2: return packed_rows<2>(xt.data(), rows, k, w, n, y);
    case 3: return packed_rows<3>(xt.data(), rows, k, w, n, y);
    default: return packed_rows<4>(xt.data(), rows, k, w, n, y);
  }
}

// The same panel in 16-float vectors, for CPUs with AVX-512 and 17 to 32 rows: a tile holds
// 12 x 2 sums, each weight broadcast into the FMA from memory. Every sum runs over j in the same
// order as in packed_tile, so the two give equal results. Half weights take this path too,
// widened a tile at a time into a float32 scratch (12 outputs x k, in the L2 cache), where
// tile() would widen each weight once per four rows. Measured on 2048 x 768 weights from memory
// (bench_skinny), 32 rows: 1.5-1.7x faster than AVX2 for every weight type; at 16 rows and
// fewer, the weights' bandwidth sets the time and AVX2 and AVX-512 run alike.
#define TEMPO_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma,f16c")))

// Outputs o..o+NO-1 from their float32 weights wo (NO x k) into y; `next` (null: none) is
// prefetched a line per output every 16 steps, up to `end`.
template <int V, int NO>
TEMPO_AVX512 void packed_tile512(const float* xt, int64_t rows, int64_t k, const float* wo,
                                 const float* next, const float* end, float* y, int64_t o,
                                 int64_t n) {
  __m512 acc[NO][V];
#pragma GCC unroll 32
  for (int a = 0; a < NO; ++a)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) acc[a][v] = _mm512_setzero_ps();
  for (int64_t j = 0; j < k; ++j) {
    if (next && (j & 15) == 0)
#pragma GCC unroll 32
      for (int a = 0; a < NO; ++a)
        _mm_prefetch(reinterpret_cast<const char*>(std::min(next + a * k + j, end - 1)),
                     _MM_HINT_T0);
    __m512 xv[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) xv[v] = _mm512_loadu_ps(xt + j * 16 * V + 16 * v);
#pragma GCC unroll 32
    for (int a = 0; a < NO; ++a) {
      const __m512 wb = _mm512_set1_ps(wo[a * k + j]);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) acc[a][v] = _mm512_fmadd_ps(wb, xv[v], acc[a][v]);
    }
  }
  alignas(64) float out[16 * V];
#pragma GCC unroll 32
  for (int a = 0; a < NO; ++a) {
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) _mm512_store_ps(out + 16 * v, acc[a][v]);
    for (int64_t r = 0; r < rows; ++r) y[r * n + o + a] = out[r];
  }
}

// GCC 12 takes the widening intrinsics' own placeholder results for uninitialized reads.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Weights w[from, to) of type T as float32 into out.
template <WeightType T>
TEMPO_AVX512 void widen(const void* w, int64_t from, int64_t to, float* out) {
  const uint16_t* h = static_cast<const uint16_t*>(w);
  int64_t i = from;
  for (; i + 16 <= to; i += 16, out += 16) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i));
    if constexpr (T == WeightType::F16)
      _mm512_storeu_ps(out, _mm512_cvtph_ps(v));
    else
      _mm512_storeu_ps(out, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16)));
  }
  for (; i < to; ++i) *out++ = weight<T>(w, i);
}

template <WeightType T, int V, int NO>
TEMPO_AVX512 void tile512(const float* xt, int64_t rows, int64_t k, const void* w, int64_t o,
                          int64_t n, float* y, float* scratch) {
  if constexpr (T == WeightType::F32) {
    const float* wf = static_cast<const float*>(w);
    packed_tile512<V, NO>(xt, rows, k, wf + o * k, wf + (o + NO) * k, wf + n * k, y, o, n);
  } else {
    widen<T>(w, o * k, (o + NO) * k, scratch);
    packed_tile512<V, NO>(xt, rows, k, scratch, nullptr, nullptr, y, o, n);
  }
}

// 17 to 32 rows, packed transposed and padded to 32 (xt: k x 32).
template <WeightType T>
TEMPO_AVX512 void matmul_packed512(const float* x, int64_t rows, int64_t k, const void* w,
                                   int64_t n, float* y) {
  constexpr int V = 2, NO = 12;  // 24 sums, 2 row vectors and a broadcast: 27 of 32 registers
  std::vector<float> xt(static_cast<size_t>(k * 16 * V), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) xt[static_cast<size_t>(j * 16 * V + r)] = x[r * k + j];
  std::vector<float> scratch(T == WeightType::F32 ? 0 : static_cast<size_t>(NO * k));
  int64_t o = 0;
  for (; o + NO <= n; o += NO) tile512<T, V, NO>(xt.data(), rows, k, w, o, n, y, scratch.data());
  for (; o < n; ++o) tile512<T, V, 1>(xt.data(), rows, k, w, o, n, y, scratch.data());
}

#pragma GCC diagnostic pop

// The weights are read in memory order: on the 2-core EPYC machines measured (bench/README.md,
// "bench_decode"), the hardware prefetcher keeps one stream at 18-21 GB/s but two or more
// interleaved streams at 7-9 GB/s. Three outputs are taken at a time, their weights read from
// memory once (prefetched) and from the L1 cache for every four rows (3 x 4 sums, 3 weight
// vectors and a row's vector fill the 16 registers; 4 x 2 sums measured 8-18% slower at 16
// rows). One row too: on the Xeon machines (bench_skinny) that took 0.3x the time of a dot
// product per output for half weights, 0.75x for float32.
template <WeightType T>
TEMPO_AVX2 void matmul_avx2(const float* x, int64_t rows, int64_t k, const void* w, int64_t n,
                            float* y) {
  constexpr int NO = 3;
  const char* base = static_cast<const char*>(w);
  const char* end = base + n * k * kBytes<T>;
  int64_t o = 0;
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
  for (; o < n; ++o)
    for (int64_t r = 0; r < rows; ++r) y[r * n + o] = dot<T>(x + r * k, k, w, o * k);
}

// a · b for any strides, one sum at a time.
template <WeightType T>
void strided_portable(const float* a, int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs,
                      int64_t b_cs, int64_t m, int64_t k, int64_t n, float* y) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float s = 0.0f;
      for (int64_t l = 0; l < k; ++l)
        s += a[i * a_rs + l * a_cs] * weight<T>(b, l * b_rs + j * b_cs);
      y[i * n + j] = s;
    }
}

// The horizontal sums of s[0..7], as one vector.
TEMPO_AVX2 inline __m256 sums8(const __m256 s[8]) {
  const __m256 s01 = _mm256_hadd_ps(s[0], s[1]), s23 = _mm256_hadd_ps(s[2], s[3]);
  const __m256 s45 = _mm256_hadd_ps(s[4], s[5]), s67 = _mm256_hadd_ps(s[6], s[7]);
  const __m256 lo = _mm256_hadd_ps(s01, s23), hi = _mm256_hadd_ps(s45, s67);
  return _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31));
}

// Prefetches the `count` elements of b from element i on: a row of b that a later step reads.
// Attention reads its cache from memory, where the hardware's prefetch alone leaves it at a
// third of the read bandwidth.
template <WeightType T>
TEMPO_AVX2 inline void prefetch(const void* b, int64_t i, int64_t count) {
  const char* p = static_cast<const char*>(b) + i * kBytes<T>;
  for (int64_t line = 0; line < count * kBytes<T>; line += 64) _mm_prefetch(p + line, _MM_HINT_T0);
}

// a's rows and b's columns contiguous: y[i, j] = a_i · b_j, eight columns at a time (eight
// independent sums, reduced together), every row of a against them while they are in the cache;
// the columns 4 to 11 past them are prefetched meanwhile.
template <WeightType T>
TEMPO_AVX2 void strided_dots(const float* a, int64_t a_rs, const void* b, int64_t b_cs, int64_t m,
                             int64_t k, int64_t n, float* y) {
  const int64_t k8 = k & ~int64_t{7};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int64_t c = j + 12; c < std::min(j + 20, n); ++c) prefetch<T>(b, c * b_cs, k);
    for (int64_t i = 0; i < m; ++i) {
      const float* ai = a + i * a_rs;
      __m256 acc[8];
      for (auto& s : acc) s = _mm256_setzero_ps();
      for (int64_t l = 0; l < k8; l += 8) {
        const __m256 av = _mm256_loadu_ps(ai + l);
        for (int c = 0; c < 8; ++c)
          acc[c] = _mm256_fmadd_ps(load8<T>(b, (j + c) * b_cs + l), av, acc[c]);
      }
      alignas(32) float out[8];
      _mm256_store_ps(out, sums8(acc));
      for (int c = 0; c < 8; ++c) {
        for (int64_t l = k8; l < k; ++l) out[c] += ai[l] * weight<T>(b, (j + c) * b_cs + l);
        y[i * n + j + c] = out[c];
      }
    }
  }
  for (; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) y[i * n + j] = dot<T>(a + i * a_rs, k, b, j * b_cs);
}

// Rows i..i+NR-1 and columns j..j+8V-1 of y where b's rows are contiguous (b's element (l, j)
// at l * b_rs + j): each row of b (V vectors) scaled by a[i, l] and summed, NR x V sums in
// registers. The first columns' tile (j = 0) prefetches b's rows 8 ahead, n elements each, for
// itself and the tiles after it.
template <WeightType T, int NR, int V>
TEMPO_AVX2 void axpy_tile(const float* a, int64_t a_rs, int64_t a_cs, const void* b, int64_t j,
                          int64_t b_rs, int64_t k, int64_t n, float* y) {
  __m256 acc[NR][V];
  for (auto& row : acc)
    for (auto& s : row) s = _mm256_setzero_ps();
  for (int64_t l = 0; l < k; ++l) {
    if (j == 0 && l + 8 < k) prefetch<T>(b, (l + 8) * b_rs, n);
    __m256 bv[V];
    for (int v = 0; v < V; ++v) bv[v] = load8<T>(b, l * b_rs + j + 8 * v);
    for (int r = 0; r < NR; ++r) {
      const __m256 ar = _mm256_broadcast_ss(a + r * a_rs + l * a_cs);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(bv[v], ar, acc[r][v]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int v = 0; v < V; ++v) _mm256_storeu_ps(y + r * n + j + 8 * v, acc[r][v]);
}

template <WeightType T, int NR>
TEMPO_AVX2 void axpy_rows(const float* a, int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs,
                          int64_t k, int64_t n, float* y) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) axpy_tile<T, NR, 2>(a, a_rs, a_cs, b, j, b_rs, k, n, y);
  for (; j + 8 <= n; j += 8) axpy_tile<T, NR, 1>(a, a_rs, a_cs, b, j, b_rs, k, n, y);
  for (; j < n; ++j)
    for (int r = 0; r < NR; ++r) {
      float s = 0.0f;
      for (int64_t l = 0; l < k; ++l) s += a[r * a_rs + l * a_cs] * weight<T>(b, l * b_rs + j);
      y[r * n + j] = s;
    }
}

// b's rows contiguous: up to four rows of y at a time (8 sums of 8 columns, 2 of b's vectors and
// a broadcast of a fill 11 of the 16 registers).
template <WeightType T>
TEMPO_AVX2 void strided_axpys(const float* a, int64_t a_rs, int64_t a_cs, const void* b,
                              int64_t b_rs, int64_t m, int64_t k, int64_t n, float* y) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) axpy_rows<T, 4>(a + i * a_rs, a_rs, a_cs, b, b_rs, k, n, y + i * n);
  const float* ai = a + i * a_rs;
  switch (m - i) {
    case 3: return axpy_rows<T, 3>(ai, a_rs, a_cs, b, b_rs, k, n, y + i * n);
    case 2: return axpy_rows<T, 2>(ai, a_rs, a_cs, b, b_rs, k, n, y + i * n);
    case 1: return axpy_rows<T, 1>(ai, a_rs, a_cs, b, b_rs, k, n, y + i * n);
    default: return;
  }
}

bool has_avx2() { return vector_isa() >= VectorIsa::Avx2; }

template <WeightType T>
void strided_typed(const float* a, int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs,
                   int64_t b_cs, int64_t m, int64_t k, int64_t n, float* y) {
  if (has_avx2() && b_rs == 1 && a_cs == 1) return strided_dots<T>(a, a_rs, b, b_cs, m, k, n, y);
  if (has_avx2() && b_cs == 1) return strided_axpys<T>(a, a_rs, a_cs, b, b_rs, m, k, n, y);
  strided_portable<T>(a, a_rs, a_cs, b, b_rs, b_cs, m, k, n, y);
}

}  // namespace

VectorIsa vector_isa() {
  static const VectorIsa isa = [] {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
        !__builtin_cpu_supports("f16c"))
      return VectorIsa::None;
    if (env_flag("TEMPO_NO_AVX512") || !__builtin_cpu_supports("avx512f") ||
        !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512dq"))
      return VectorIsa::Avx2;
    return VectorIsa::Avx512;
  }();
  return isa;
}

void skinny_matmul(const float* x, int64_t rows, int64_t k, const void* w, WeightType type,
                   int64_t n, float* y, VectorIsa isa) {
  const bool avx2 = isa >= VectorIsa::Avx2;
  if (isa == VectorIsa::Avx512 && rows > 16 && rows <= kPackedRows) {
    switch (type) {
      case WeightType::F32: return matmul_packed512<WeightType::F32>(x, rows, k, w, n, y);
      case WeightType::F16: return matmul_packed512<WeightType::F16>(x, rows, k, w, n, y);
      case WeightType::BF16: return matmul_packed512<WeightType::BF16>(x, rows, k, w, n, y);
    }
  }
  // The panel from two row vectors on: with one (4 to 8 rows, half of it padding at 4) its
  // broadcasts and FMAs bound it below the memory's bandwidth on the EPYC machines (decoding the
  // Llama-3.2-1B shape, ms a step through the tiles and the panel: 4 rows 214 and 324, 8 rows 255
  // and 341; the D768 model at 4 rows 6.1-7.7 and 8.5-8.8), where on the Xeons measured before
  // (7-9 GB/s) 4 rows took 0.72x tile()'s time.
  if (avx2 && type == WeightType::F32 && rows > 8 && rows <= kPackedRows)
    return matmul_packed(x, rows, k, static_cast<const float*>(w), n, y);
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

void strided_matmul(const float* a, int64_t a_rs, int64_t a_cs, const void* b, WeightType b_type,
                    int64_t b_rs, int64_t b_cs, int64_t m, int64_t k, int64_t n, float* y) {
  switch (b_type) {
    case WeightType::F32:
      return strided_typed<WeightType::F32>(a, a_rs, a_cs, b, b_rs, b_cs, m, k, n, y);
    case WeightType::F16:
      return strided_typed<WeightType::F16>(a, a_rs, a_cs, b, b_rs, b_cs, m, k, n, y);
    case WeightType::BF16:
      return strided_typed<WeightType::BF16>(a, a_rs, a_cs, b, b_rs, b_cs, m, k, n, y);
  }
}

}  // namespace tempo::backend
