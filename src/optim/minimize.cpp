// minimize: wires tempo::grad into an optimizer step (separate so that users of the optimizers
// alone do not need the autodiff implementation).
#include "api/autodiff.h"
#include "api/distributed.h"
#include "optim/optim.h"
#include "util/error.h"

namespace tempo::optim {

void minimize(const RT& loss, Optimizer& optimizer, double max_grad_norm, Loc loc) {
  std::vector<RT> grads = tempo::grad(loss, nn::as_rts(optimizer.params()), loc);
  // Data parallel: each rank's gradient is of its own share of the data; their mean is the
  // gradient of the whole batch's mean loss. Averaged before clipping, as PyTorch's DDP does,
  // so every rank clips and steps identically.
  if (loss.ctx().data_parallel()) grads = all_reduce_mean(grads, loc);
  if (max_grad_norm > 0) grads = clip_grad_norm(grads, max_grad_norm, nullptr, loc);
  optimizer.step(grads, loc);
}

void minimize(const RT& loss, const nn::Module& module, Optimizer& optimizer, double max_grad_norm,
              Loc loc) {
  std::vector<nn::Parameter> mp = module.parameters();
  const std::vector<nn::Parameter>& op = optimizer.params();
  bool same = mp.size() == op.size();
  for (size_t k = 0; same && k < mp.size(); ++k) same = mp[k].op() == op[k].op();
  if (!same)
    throw UserError(cat("minimize at ", where(loc), ": the optimizer updates ", op.size(),
                        " parameters that are not the module's ", mp.size(), " parameters"));
  minimize(loss, optimizer, max_grad_norm, loc);
}

}  // namespace tempo::optim
