// The kernel of a Fused op (a dataflow region) that runs its body op by op with the backend's own
// kernels: values stay in registers of the kernel instead of the executor's stores, and the
// region is one launch. Code generation (backend/codegen.h) replaces it where it can.
#pragma once

#include <functional>
#include <memory>

#include "runtime/backend.h"

namespace tempo::backend {

using MakeKernel = std::function<std::unique_ptr<runtime::Kernel>(const ir::Graph&, ir::OpId)>;

// `fused` is a Fused op; `make` makes the kernel of one body op.
std::unique_ptr<runtime::Kernel> make_region_kernel(const ir::OpNode& fused,
                                                    const MakeKernel& make);

}  // namespace tempo::backend
