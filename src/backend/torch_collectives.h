// Internal to the backend layer (includes LibTorch, not c10d): the collectives the kernels of
// AllReduce and Broadcast call. distributed.cpp implements them over c10d.
#pragma once

#include <torch/torch.h>

#include "backend/distributed.h"

namespace tempo::backend {

class TorchProcessGroup : public ProcessGroup {
 public:
  // In place, on a contiguous CPU tensor; UserError when a rank died or the timeout passed.
  virtual void all_reduce_sum(torch::Tensor& t) = 0;
  virtual void broadcast(torch::Tensor& t, int root) = 0;
};

}  // namespace tempo::backend
