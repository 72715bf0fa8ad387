// Matrix products of a few float32 rows with a weight matrix of float32, float16 or bfloat16
// values (decoding: one row per sequence): the weights are streamed once, in memory order, and
// the half types widened in registers, the sums kept in float32. Decoding reads every weight once
// per step, so the time is the weights' bytes over the memory bandwidth: half types halve it.
#pragma once

#include <cstdint>

namespace tempo::backend {

enum class WeightType { F32, F16, BF16 };

// y (rows x n) = x (rows x k) · wᵀ, where w is n x k of `type` (each output's weights
// contiguous, the layout of a Hugging Face linear layer) and x and y are row-major float32. Each
// weight is read from memory once for all rows: meant for a few rows (up to tens).
void skinny_matmul(const float* x, int64_t rows, int64_t k, const void* w, WeightType type,
                   int64_t n, float* y);

}  // namespace tempo::backend
