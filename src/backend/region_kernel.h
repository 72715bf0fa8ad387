// The kernel of a Fused op (a dataflow region): runs the steps of its plan (backend/codegen.h)
// with the values between them held by the kernel instead of the executor's stores, so that the
// region is one launch. Single ops run as the backend's kernels; a cluster runs as its generated
// loop where one was made, else op by op.
#pragma once

#include <functional>
#include <memory>

#include "backend/codegen.h"
#include "runtime/backend.h"

namespace tempo::backend {

using MakeKernel = std::function<std::unique_ptr<runtime::Kernel>(const ir::Graph&, ir::OpId)>;
// The generated kernel of cluster step `step` of the plan, or null.
using MakeClusterKernel = std::function<std::unique_ptr<runtime::Kernel>(size_t step)>;

std::unique_ptr<runtime::Kernel> make_region_kernel(const ir::OpNode& fused,
                                                    const RegionPlan& plan,
                                                    const MakeKernel& make_op,
                                                    const MakeClusterKernel& make_cluster);

}  // namespace tempo::backend
