// skinny_matmul on a GPU for half weights: one warp per output column streams that column's
// weights once, 16 bytes per lane per load, widened in registers and summed in float32 for every
// row. cuBLAS has no GEMM of float32 activations with half weights: its half GEMMs round the
// activations to the weight's type (greedy tokens of the 1B shape then left float32's after 2-12
// steps), and widening the weight first writes and reads a float32 copy of it every step.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "backend/cuda_kernels.h"
#include "backend/skinny_matmul.h"
#include "util/error.h"

namespace tempo::backend {

namespace {
constexpr int kWarpsPerBlock = 8;
}  // namespace

std::string cuda_skinny_matmul_source(WeightType type, int64_t rows) {
  TEMPO_ASSERT(type != WeightType::F32 && rows >= 1 && rows <= kPackedRows,
               "cuda_skinny_matmul: half weights and 1 to ", kPackedRows, " rows, got ", rows);
  const char* widen = type == WeightType::BF16
                          ? "return __uint_as_float(((unsigned int)h) << 16);"
                          : "float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); "
                            "return f;";
  // From 4 rows on, a block stages tiles of the rows in shared memory (8 columns read each value
  // once from there); below, each warp reads its rows through the L1 cache.
  const bool staged = rows >= 4;
  const int64_t tile = std::min<int64_t>(1024, 8192 / rows / 256 * 256);  // 32 KiB at most
  return cat("#define ROWS ", rows, "\n#define STAGED ", staged ? 1 : 0, "\n#define TILE ", tile,
             R"(
struct alignas(16) Words { unsigned int w[4]; };
struct alignas(16) Floats { float f[4]; };
__device__ __forceinline__ float widen(unsigned short h) { )",
             widen, R"( }
__device__ __forceinline__ float dot8(const Floats& a, const Floats& b, const float* f) {
  return a.f[0] * f[0] + a.f[1] * f[1] + a.f[2] * f[2] + a.f[3] * f[3] + b.f[0] * f[4] +
         b.f[1] * f[5] + b.f[2] * f[6] + b.f[3] * f[7];
}
__device__ __forceinline__ void widen8(const unsigned short* p, float* f) {
  const Words v = *reinterpret_cast<const Words*>(p);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    f[2 * j] = widen((unsigned short)(v.w[j] & 0xffffu));
    f[2 * j + 1] = widen((unsigned short)(v.w[j] >> 16));
  }
}
extern "C" __global__ void skinny_matmul(const float* __restrict__ x,
    const unsigned short* __restrict__ w, float* __restrict__ y, long long k, long long n) {
  const int lane = threadIdx.x & 31;
  const long long col = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const bool live = col < n;  // a warp past the last column still stages rows for the others
  const unsigned short* wc = w + (live ? col : 0) * k;
  float acc[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) acc[r] = 0.0f;
  if ((k & 7) == 0 && ((unsigned long long)w & 15) == 0 && ((unsigned long long)x & 15) == 0) {
#if STAGED
    __shared__ Floats xs[ROWS * TILE / 4];
    for (long long base = 0; base < k; base += TILE) {
      const int len = (int)(k - base < TILE ? k - base : TILE);  // a multiple of 8
      __syncthreads();  // the previous tile is read
      for (int i = threadIdx.x; i < ROWS * TILE / 4; i += blockDim.x) {
        const int r = i / (TILE / 4), c = i % (TILE / 4) * 4;
        xs[i] = c < len ? *reinterpret_cast<const Floats*>(x + r * k + base + c) : Floats{};
      }
      __syncthreads();
      if (live) {
        for (int e = lane * 8; e < len; e += 256) {
          float f[8];
          widen8(wc + base + e, f);
#pragma unroll
          for (int r = 0; r < ROWS; ++r)
            acc[r] += dot8(xs[(r * TILE + e) / 4], xs[(r * TILE + e) / 4 + 1], f);
        }
      }
    }
#else
    if (live) {
      for (long long e = (long long)lane * 8; e < k; e += 256) {
        float f[8];
        widen8(wc + e, f);
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
          const Floats* a = reinterpret_cast<const Floats*>(x + r * k + e);
          acc[r] += dot8(a[0], a[1], f);
        }
      }
    }
#endif
  } else if (live) {
    for (long long e = lane; e < k; e += 32) {
      const float f = widen(wc[e]);
#pragma unroll
      for (int r = 0; r < ROWS; ++r) acc[r] += x[r * k + e] * f;
    }
  }
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
    for (int d = 16; d > 0; d >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], d);
  if (live && lane == 0) {
#pragma unroll
    for (int r = 0; r < ROWS; ++r) y[r * n + col] = acc[r];
  }
}
)");
}

namespace {

// The loaded kernel for (device, type, rows), compiled on first use (and cached on disk by
// compile_cuda).
void* kernel_for(WeightType type, int64_t rows) {
  static std::mutex mutex;
  struct Loaded {
    std::shared_ptr<CudaModule> module;
    void* fn = nullptr;
  };
  static std::map<std::tuple<int, WeightType, int64_t>, Loaded> kernels;
  int device = 0;
  cudaGetDevice(&device);
  std::lock_guard<std::mutex> lock(mutex);
  Loaded& k = kernels[{device, type, rows}];
  if (!k.fn) {
    k.module =
        CudaModule::load(compile_cuda(cuda_skinny_matmul_source(type, rows), cuda_device_arch()));
    k.fn = k.module->function("skinny_matmul");
  }
  return k.fn;
}

}  // namespace

void cuda_skinny_matmul(const float* x, int64_t rows, int64_t k, const void* w, WeightType type,
                        int64_t n, float* y, void* stream) {
  void* fn = kernel_for(type, rows);
  const auto blocks = static_cast<unsigned>((n + kWarpsPerBlock - 1) / kWarpsPerBlock);
  void* xp = const_cast<float*>(x);
  void* wp = const_cast<void*>(w);
  void* args[] = {&xp, &wp, &y, &k, &n};
  CudaModule::launch(fn, blocks, 32 * kWarpsPerBlock, args, stream);
}

}  // namespace tempo::backend
