// Matrix products of a few float32 rows with a weight matrix of float32, float16 or bfloat16
// values (decoding: one row per sequence): the weights are streamed once, in memory order, and
// the half types widened in registers, the sums kept in float32. Decoding reads every weight once
// per step, so the time is the weights' bytes over the memory bandwidth: half types halve it.
#pragma once

#include <cstdint>
#include <string>

namespace tempo::backend {

enum class WeightType { F32, F16, BF16 };

// The widest vector instructions the CPU kernels use, here and in the BLAS's choice of kernels
// (libtorch_backend.h): AVX-512 where the CPU has it (unless $TEMPO_NO_AVX512 is set), else AVX2
// with FMA and F16C, else none (portable loops).
enum class VectorIsa { None, Avx2, Avx512 };
VectorIsa vector_isa();

// y (rows x n) = x (rows x k) · wᵀ, where w is n x k of `type` (each output's weights
// contiguous, the layout of a Hugging Face linear layer) and x and y are row-major float32. Each
// weight is read from memory once for all rows: meant for a few rows (up to tens). `isa` above
// the CPU's is undefined behaviour; below it, the same sums in narrower vectors.
void skinny_matmul(const float* x, int64_t rows, int64_t k, const void* w, WeightType type,
                   int64_t n, float* y, VectorIsa isa = vector_isa());
// Float32 weights with 9 rows up to this many go through a packed panel of the rows; above 16
// rows, where the CPU has AVX-512, half weights too (widened a tile of outputs at a time).
constexpr int64_t kPackedRows = 32;

// skinny_matmul on a GPU for float16 and bfloat16 weights and 1 to kPackedRows rows (x, w and y
// in device memory), queued on `stream` (a cudaStream_t); its source for NVRTC. Only a CUDA build
// defines these.
void cuda_skinny_matmul(const float* x, int64_t rows, int64_t k, const void* w, WeightType type,
                        int64_t n, float* y, void* stream);
std::string cuda_skinny_matmul_source(WeightType type, int64_t rows);

// y (m x n, row-major) = a (m x k) · b (k x n), a float32 and b of `b_type`, for any strides
// (element (i, j) of a at a[i * a_rs + j * a_cs]) where b's rows or b's columns are contiguous
// (b_cs or b_rs is 1): attention at decoding, a head's few queries against the cached keys
// (b = Kᵀ read in place) and its probabilities against the cached values, the cache in float32
// or a half type. Each of b's rows or columns is read once for all rows of a; meant for small m,
// where a GEMM's packing costs more than the product.
void strided_matmul(const float* a, int64_t a_rs, int64_t a_cs, const void* b, WeightType b_type,
                    int64_t b_rs, int64_t b_cs, int64_t m, int64_t k, int64_t n, float* y);

}  // namespace tempo::backend
