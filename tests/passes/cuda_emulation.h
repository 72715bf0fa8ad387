// Runs generated CUDA kernels on the CPU, for tests on machines without a GPU: the kernel source
// is compiled as C++ with a header that gives it CUDA's names (threadIdx, __syncthreads, warp
// shuffles, __shared__), and each block's threads run as real threads, one block at a time.
// Slow, and only the behaviour the generated kernels use is modelled: every thread of a block
// reaches each barrier and each shuffle (the kernels' control flow is uniform there).
#pragma once

#include <string>

namespace tempo::testing {

inline const char* kCudaEmulation = R"(
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

struct tempo_dim3 { unsigned x = 0, y = 1, z = 1; };
static tempo_dim3 blockIdx, blockDim, gridDim;
static thread_local tempo_dim3 threadIdx;

class tempo_barrier {
 public:
  void init(int n) { n_ = n; waiting_ = 0; }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const long phase = phase_;
    if (++waiting_ == n_) { waiting_ = 0; ++phase_; cv_.notify_all(); return; }
    cv_.wait(lock, [&] { return phase_ != phase; });
  }
 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int n_ = 1, waiting_ = 0;
  long phase_ = 0;
};
static tempo_barrier tempo_block_barrier, tempo_warp_barrier[32];
static uint64_t tempo_lanes[32][32];

static inline void __syncthreads() { tempo_block_barrier.wait(); }
template <class T> static T tempo_exchange(T v, int from) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  std::memcpy(&tempo_lanes[warp][lane], &v, sizeof(T));
  tempo_warp_barrier[warp].wait();
  T r = v;
  if (from >= 0 && from < 32) std::memcpy(&r, &tempo_lanes[warp][from], sizeof(T));
  tempo_warp_barrier[warp].wait();
  return r;
}
template <class T> static T __shfl_down_sync(unsigned, T v, int o) {
  return tempo_exchange(v, (int)(threadIdx.x & 31) + o);
}
template <class T> static T __shfl_sync(unsigned, T v, int lane) { return tempo_exchange(v, lane); }
static inline double __longlong_as_double(long long b) { double d; std::memcpy(&d, &b, 8); return d; }

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __restrict__ __restrict
#define __shared__ static

// Runs `body` (one thread's work) for every thread of every block.
template <class F> static void tempo_launch(unsigned blocks, unsigned threads, F body) {
  gridDim.x = blocks;
  blockDim.x = threads;
  tempo_block_barrier.init((int)threads);
  for (auto& b : tempo_warp_barrier) b.init(32);
  for (unsigned b = 0; b < blocks; ++b) {
    blockIdx.x = b;
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; ++t)
      ts.emplace_back([=] { threadIdx.x = t; body(); });
    for (std::thread& t : ts) t.join();
  }
}
)";

// The CUDA library `source` (codegen's library_source, Target::Cuda) as C++ for the emulation:
// its own integer typedefs give way to <cstdint>'s.
inline std::string emulated(std::string source) {
  for (const char* typedef_line : {"typedef long long int64_t;\n", "typedef int int32_t;\n"})
    if (size_t at = source.find(typedef_line); at != std::string::npos)
      source.erase(at, std::string(typedef_line).size());
  return kCudaEmulation + source;
}

}  // namespace tempo::testing
