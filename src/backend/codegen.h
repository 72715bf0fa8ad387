// Code generation for dataflow regions (TEMPO §4.4). A region's body is planned as a sequence of
// steps: single ops, which run as the backend's kernels, and elementwise clusters (connected
// elementwise ops of one shape), which become one generated C++ loop each. All loops of a program
// are compiled together by the system compiler into one shared object, cached on disk by a hash
// of their source (backend/kernel_cache.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/sdg.h"

namespace tempo::backend {

using ValueRef = std::pair<ir::OpId, int>;  // a body op's output

// How a region's body runs: steps in an order where each reads only values before it.
struct RegionPlan {
  struct Step {
    std::vector<ir::OpId> ops;      // one op, or the ops of an elementwise cluster in order
    std::vector<ValueRef> inputs;   // cluster: values it reads from outside, in argument order
    std::vector<ValueRef> outputs;  // cluster: values read after it or by the region's readers
    bool cluster() const { return ops.size() > 1; }
  };
  std::vector<Step> steps;
};

// Plans a Fused op's body. With `clusters` false every op is its own step.
RegionPlan plan_region(const ir::Region& region, bool clusters);

// The C++ source of a cluster step as `extern "C" void <name>(int64_t n, const void* const* in,
// const int64_t* index, void* const* out)`: element i of input k is
// in[k][(i / index[2k]) % index[2k + 1]] (full, scalar, leading or trailing broadcasts), and
// every output has n contiguous elements.
std::string emit_cluster(const ir::Graph& body, const RegionPlan::Step& step,
                         const std::string& name);

// Whether a cluster calls scalar math functions (exp, log, tanh, ...). LibTorch's kernels compute
// those with SIMD, so on large tensors they beat the generated loop, which calls libm per element.
bool calls_libm(const ir::Graph& body, const RegionPlan::Step& step);

// A whole library: the helpers generated functions use, then the functions.
std::string library_source(const std::vector<std::string>& functions);

// Whether an op can be a member of an elementwise cluster.
bool generable(const ir::Graph& body, const ir::OpNode& op);

}  // namespace tempo::backend
