// Internal to the backend layer (includes LibTorch): the value type and dtype conversions.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <unordered_map>

#include "backend/codegen.h"
#include "backend/kernel_cache.h"
#include "ir/types.h"
#include "runtime/backend.h"

namespace tempo::backend {

class TorchValue final : public runtime::Value {
 public:
  explicit TorchValue(torch::Tensor t) : tensor(std::move(t)) {}
  int64_t nbytes() const override {
    return static_cast<int64_t>(tensor.numel()) * static_cast<int64_t>(tensor.element_size());
  }
  const void* storage() const override {
    return tensor.has_storage() ? tensor.storage().unsafeGetStorageImpl()
                                : static_cast<const void*>(this);
  }
  int64_t storage_nbytes() const override {
    return tensor.has_storage() ? static_cast<int64_t>(tensor.storage().nbytes()) : nbytes();
  }
  torch::Tensor tensor;
};

inline const torch::Tensor& tensor_of(const runtime::ValuePtr& v) {
  return static_cast<const TorchValue&>(*v).tensor;
}
inline runtime::ValuePtr wrap(torch::Tensor t) {
  return std::make_shared<TorchValue>(std::move(t));
}

torch::ScalarType to_torch(ir::DType d);
ir::DType from_torch(torch::ScalarType s);  // UserError for a type Tempo does not know

// Conversions between host tensors and tensors on `device`.
torch::Tensor host_to_torch(const ir::HostTensor& h, const torch::Device& device);
// The same, taking h's buffer over on the CPU (no copy).
torch::Tensor host_to_torch(ir::HostTensor&& h, const torch::Device& device);
// The same, sharing h's buffer on the CPU (no copy; the tensor keeps h alive) and copying it
// without a pinned staging buffer elsewhere: for values that no kernel may write into, which a
// reference held elsewhere ensures (donation needs the only one).
torch::Tensor host_to_torch(const std::shared_ptr<const ir::HostTensor>& h,
                            const torch::Device& device);
ir::HostTensor torch_to_host(const torch::Tensor& t);

// A generated cluster (backend/codegen.h): a call of its CPU loop, or a launch of its CUDA kernel
// on the current stream. Pointers are to the backend device's memory.
using ClusterFn =
    std::function<void(int64_t rows, int64_t cols, const void* const* in, void* const* out)>;

// The plan of a Fused op's region and, per step, its generated loop (null: op by op).
struct CompiledRegion {
  RegionPlan plan;
  std::vector<ClusterFn> loops;
};

class TorchProcessGroup;  // torch_collectives.h

// State the kernels share with the backend.
struct TorchState {
  torch::Device device = torch::kCPU;
  uint64_t seed = 0;  // Backend::seed
  bool donation = true;  // BackendOptions::donation
  bool keep_constants = true;  // BackendOptions::keep_constants
  std::shared_ptr<KernelLibrary> library;  // the program's generated loops (CPU)
  // BackendOptions::process_group as its torch-facing side (null: one process).
  std::shared_ptr<TorchProcessGroup> process_group;
  std::unordered_map<ir::OpId, CompiledRegion> regions;
};

// One kernel per op (kernels.cpp).
std::unique_ptr<runtime::Kernel> make_torch_kernel(const ir::Graph& g, ir::OpId op,
                                                   const sym::SymbolLayout& layout,
                                                   TorchState& state);

}  // namespace tempo::backend
