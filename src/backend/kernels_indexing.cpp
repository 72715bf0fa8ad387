// LibTorch lowering of indexing (selections and scatters) and linear algebra.
#include <algorithm>
#include <optional>
#include <vector>

#ifdef TEMPO_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include "backend/skinny_matmul.h"
#include "backend/torch_kernel_rules.h"

namespace tempo::backend::detail {

std::unique_ptr<Kernel> indexing_kernel(const KernelCtx& c) {
  const std::string& who = c.who;
  switch (c.op.kind) {
    case ir::OpKind::Index: {
      const int64_t d = c.int_attr(0);
      sym::CompiledExpr pos = c.expr_attr(0);
      return kernel(who, [d, pos](const ValuePtr* in, size_t, const int64_t* env, ValuePtr* out) {
        out[0] = wrap(tensor_of(in[0]).select(d, pos.eval(env)));
      });
    }
    // A gather may read a value kept in host memory (a swapped rollout read where it is, e.g.
    // PPO's minibatch rows): it runs there and only the selected elements move to the device.
    case ir::OpKind::IndexSelect:
    case ir::OpKind::Gather: {
      const int64_t d = c.int_attr(0);
      const bool rows = c.op.kind == ir::OpKind::IndexSelect;
      const torch::Device device = c.state.device;
      return kernel(
          who, [d, rows, device](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
            const torch::Tensor& src = tensor_of(in[0]);
            torch::Tensor idx = as(tensor_of(in[1]), torch::kInt64).to(src.device());
            out[0] = wrap((rows ? src.index_select(d, idx) : src.gather(d, idx)).to(device));
          });
    }
    case ir::OpKind::ScatterAdd:
    case ir::OpKind::IndexAdd: {
      const int64_t d = c.int_attr(0);
      const bool scatter = c.op.kind == ir::OpKind::ScatterAdd;
      const torch::ScalarType st = c.st;
      return kernel(
          who, [d, st, scatter](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
            torch::Tensor self = as(tensor_of(in[0]), st);
            torch::Tensor idx = as(tensor_of(in[1]), torch::kInt64);
            torch::Tensor src = as(tensor_of(in[2]), st);
            out[0] = wrap(scatter ? self.scatter_add(d, idx, src) : self.index_add(d, idx, src));
          });
    }
    default:
      c.unknown_kind();
  }
}

namespace {

// a @ b. One row times a matrix on the CPU is a matrix-vector product: the BLAS's GEMV streams
// the matrix, where its GEMM (torch::matmul's path) also packs it. A decoding step at batch 1
// takes 0.57x the time (bench_decode --traffic); from 4 rows on, GEMV per row is slower.
torch::Tensor matmul_or_gemv(const torch::Tensor& a, const torch::Tensor& b) {
  if (b.dim() != 2 || a.dim() < 1 || !a.device().is_cpu() || a.numel() == 0 ||
      a.numel() != a.size(-1))
    return torch::matmul(a, b);
  std::vector<int64_t> shape(a.sizes().begin(), a.sizes().end() - 1);
  shape.push_back(b.size(1));
  return torch::mv(b.t(), a.reshape({-1})).reshape(shape);
}

// The skinny kernels' type for a float32, float16 or bfloat16 operand; empty for others.
std::optional<WeightType> weight_type(torch::ScalarType t) {
  if (t == torch::kFloat32) return WeightType::F32;
  if (t == torch::kHalf) return WeightType::F16;
  if (t == torch::kBFloat16) return WeightType::BF16;
  return std::nullopt;
}

// Whether a matrix's transpose is contiguous, read off its strides: b.t().is_contiguous() makes
// the view to ask, a tensor allocated and dispatched at every launch of a small layer.
bool transpose_contiguous(const torch::Tensor& b) {
  const int64_t k = b.size(0), n = b.size(1);
  return (k <= 1 || b.stride(0) == 1) && (n <= 1 || b.stride(1) == k);
}

// a @ b for a few float32 rows a and b a weight of float32, float16 or bfloat16 whose transpose
// is contiguous (an (n, k) linear layer read as (k, n)), streamed once (skinny_matmul.h): on the
// CPU, and on a GPU for the half types (float32 weights go to cuBLAS there). Empty where the
// operands are not of that kind, or beyond 32 rows (a prefill), where a GEMM is faster (the half
// types widened once for it).
std::optional<torch::Tensor> skinny_weight_matmul(const torch::Tensor& a, const torch::Tensor& b,
                                                  torch::ScalarType st) {
  const std::optional<WeightType> wt = weight_type(b.scalar_type());
  if (!wt || st != torch::kFloat32 || a.scalar_type() != torch::kFloat32 ||
      b.dim() != 2 || a.dim() < 1 || a.device() != b.device() || !transpose_contiguous(b) ||
      a.size(-1) != b.size(0) || b.size(0) == 0)
    return std::nullopt;
  const bool cpu = a.device().is_cpu();
#ifdef TEMPO_CUDA
  if (!cpu && (!a.device().is_cuda() || *wt == WeightType::F32)) return std::nullopt;
#else
  if (!cpu) return std::nullopt;
#endif
  const int64_t k = b.size(0), n = b.size(1), rows = a.numel() / k;
  if (rows == 0 || rows > kPackedRows) return std::nullopt;
  const torch::Tensor x = a.contiguous();
  std::vector<int64_t> shape(a.sizes().begin(), a.sizes().end() - 1);
  shape.push_back(n);
  torch::Tensor y = torch::empty(shape, a.options());
  if (cpu) {
    skinny_matmul(x.data_ptr<float>(), rows, k, b.data_ptr(), *wt, n, y.data_ptr<float>());
  } else {
#ifdef TEMPO_CUDA
    const c10::cuda::CUDAGuard guard(a.device());
    cuda_skinny_matmul(x.data_ptr<float>(), rows, k, b.data_ptr(), *wt, n, y.data_ptr<float>(),
                       at::cuda::getCurrentCUDAStream(a.device().index()).stream());
#endif
  }
  return y;
}

// a @ b for batches of float32 matrices a with a few rows each and b of float32 or a half type,
// equal batch dims, where b's rows or columns are contiguous: attention at decoding, a query
// group against the keys (b the transposed K cache, read in place) and the probabilities against
// the values. LibTorch's
// batched GEMM takes 0.1 ms per layer for 4 x (3 x 64) x (64 x 512) at one thread, most of it
// per-matrix packing; the products themselves are a few microseconds. Empty otherwise.
std::optional<torch::Tensor> strided_batched_matmul(const torch::Tensor& a0, const torch::Tensor& b,
                                                    torch::ScalarType st) {
  constexpr int64_t kMaxRows = 8;
  const std::optional<WeightType> bt = weight_type(b.scalar_type());
  if (st != torch::kFloat32 || a0.scalar_type() != torch::kFloat32 || !bt || a0.dim() < 3 ||
      a0.dim() != b.dim() || !a0.device().is_cpu() || !b.device().is_cpu() ||
      a0.size(-2) > kMaxRows || a0.size(-1) != b.size(-2) ||
      (b.stride(-2) != 1 && b.stride(-1) != 1))
    return std::nullopt;
  const int64_t rank = a0.dim(), m = a0.size(-2), k = a0.size(-1), n = b.size(-1);
  if (a0.sizes().slice(0, rank - 2) != b.sizes().slice(0, rank - 2)) return std::nullopt;
  // a's few rows are made contiguous where they are not (the dot products read them so).
  const torch::Tensor a = a0.stride(-1) == 1 ? a0 : a0.contiguous();
  std::vector<int64_t> shape(a.sizes().begin(), a.sizes().end());
  shape.back() = n;
  torch::Tensor y = torch::empty(shape, a.options());
  const float* ap = a.data_ptr<float>();
  const char* bp = static_cast<const char*>(b.data_ptr());
  const int64_t b_bytes = static_cast<int64_t>(b.element_size());
  float* yp = y.data_ptr<float>();
  // The batch index, in row-major order, and its offsets into a and b.
  std::vector<int64_t> index(static_cast<size_t>(rank - 2), 0);
  int64_t ao = 0, bo = 0;
  for (int64_t e = 0, count = y.numel() / std::max<int64_t>(m * n, 1); e < count; ++e) {
    strided_matmul(ap + ao, a.stride(-2), a.stride(-1), bp + bo * b_bytes, *bt, b.stride(-2),
                   b.stride(-1), m, k, n, yp + e * m * n);
    for (int64_t d = rank - 3; d >= 0; --d) {
      const auto u = static_cast<size_t>(d);
      ao += a.stride(d), bo += b.stride(d);
      if (++index[u] < a.size(d)) break;
      ao -= index[u] * a.stride(d), bo -= index[u] * b.stride(d);
      index[u] = 0;
    }
  }
  return y;
}

}  // namespace

std::unique_ptr<Kernel> linalg_kernel(const KernelCtx& c) {
  const torch::ScalarType st = c.st;
  switch (c.op.kind) {
    case ir::OpKind::MatMul:
      // Both operands are converted to the output type first (the IR's promotion rules).
      return kernel(c.who, [st](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
        const torch::Tensor &a = tensor_of(in[0]), &b = tensor_of(in[1]);
        if (auto y = skinny_weight_matmul(a, b, st)) return void(out[0] = wrap(*y));
        if (auto y = strided_batched_matmul(a, b, st)) return void(out[0] = wrap(*y));
        out[0] = wrap(as(matmul_or_gemv(as(a, st), as(b, st)), st));
      });
    case ir::OpKind::Conv2d: {
      const int64_t stride = c.a.ints.size() > 0 ? c.a.ints[0] : 1;
      const int64_t padding = c.a.ints.size() > 1 ? c.a.ints[1] : 0;
      return kernel(
          c.who, [st, stride, padding](const ValuePtr* in, size_t, const int64_t*, ValuePtr* out) {
            out[0] = wrap(torch::conv2d(as(tensor_of(in[0]), st), as(tensor_of(in[1]), st), {},
                                        stride, padding));
          });
    }
    default:
      c.unknown_kind();
  }
}

}  // namespace tempo::backend::detail
