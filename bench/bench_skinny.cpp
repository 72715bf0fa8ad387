// The decoding matmul (backend::skinny_matmul): a few rows against a layer's weights, at each
// vector width this CPU runs, float32 and half weights. The weights are those of the D768 model's
// up projection (2048 x 768), 24 copies (144 MB at float32) visited in turn, so that each product
// reads its weights from memory as a decoding step does, not from the caches. Counters: GFLOP/s
// and the weights' GB/s.
//
//   bench_skinny [--benchmark_filter=f32]
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/skinny_matmul.h"
#include "ir/types.h"

namespace {

using tempo::backend::VectorIsa;
using tempo::backend::WeightType;

constexpr int64_t kOut = 2048, kIn = 768, kCopies = 24;

struct Weights {
  std::vector<std::vector<uint16_t>> half;
  std::vector<std::vector<float>> f32;
};

const Weights& weights(WeightType type) {
  static Weights w[3];
  Weights& mine = w[static_cast<int>(type)];
  if (mine.half.empty() && mine.f32.empty())
    for (int64_t c = 0; c < kCopies; ++c) {
      std::vector<float> v(static_cast<size_t>(kOut * kIn));
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.37 * i + c));
      if (type == WeightType::F32) {
        mine.f32.push_back(std::move(v));
        continue;
      }
      std::vector<uint16_t> h(v.size());
      for (size_t i = 0; i < v.size(); ++i)
        h[i] = type == WeightType::F16 ? tempo::ir::float_to_f16(v[i])
                                       : tempo::ir::float_to_bf16(v[i]);
      mine.half.push_back(std::move(h));
    }
  return mine;
}

void BM_Skinny(benchmark::State& state, WeightType type, VectorIsa isa) {
  if (isa > tempo::backend::vector_isa()) {
    state.SkipWithError("this CPU lacks the vector width");
    return;
  }
  const int64_t rows = state.range(0);
  const Weights& w = weights(type);
  std::vector<float> x(static_cast<size_t>(rows * kIn), 0.5f), y(static_cast<size_t>(rows * kOut));
  int64_t c = 0;
  for (auto _ : state) {
    const void* wc = type == WeightType::F32 ? static_cast<const void*>(w.f32[c].data())
                                             : static_cast<const void*>(w.half[c].data());
    tempo::backend::skinny_matmul(x.data(), rows, kIn, wc, type, kOut, y.data(), isa);
    benchmark::DoNotOptimize(y.data());
    c = (c + 1) % kCopies;
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * rows * kIn * kOut * iters * 1e-9,
                                                 benchmark::Counter::kIsRate);
  const double bytes = (type == WeightType::F32 ? 4.0 : 2.0) * kIn * kOut;
  state.counters["weights GB/s"] =
      benchmark::Counter(bytes * iters * 1e-9, benchmark::Counter::kIsRate);
}

void rows(benchmark::internal::Benchmark* b) {
  for (int64_t r : {1, 4, 8, 16, 32}) b->Arg(r);
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(BM_Skinny, f32_avx2, WeightType::F32, VectorIsa::Avx2)->Apply(rows);
BENCHMARK_CAPTURE(BM_Skinny, f32_avx512, WeightType::F32, VectorIsa::Avx512)->Apply(rows);
BENCHMARK_CAPTURE(BM_Skinny, f16_avx2, WeightType::F16, VectorIsa::Avx2)->Apply(rows);
BENCHMARK_CAPTURE(BM_Skinny, f16_avx512, WeightType::F16, VectorIsa::Avx512)->Apply(rows);
BENCHMARK_CAPTURE(BM_Skinny, bf16_avx2, WeightType::BF16, VectorIsa::Avx2)->Apply(rows);
BENCHMARK_CAPTURE(BM_Skinny, bf16_avx512, WeightType::BF16, VectorIsa::Avx512)->Apply(rows);

}  // namespace

BENCHMARK_MAIN();
