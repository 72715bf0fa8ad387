// Code generation for dataflow regions (TEMPO §4.4). A region's body is planned as a sequence of
// steps: single ops, which run as the backend's kernels, and clusters, which become one generated
// C++ loop nest each. A cluster has a shape S: its elementwise ops of shape S, elementwise ops with
// one value per row (S with its last dimension 1 or dropped) and reductions of S's last dimension
// (sum, max with its first argmax): log-softmax, softmax and an MLP layer's epilogue are one
// cluster each. All loops of a program
// are compiled together by the system compiler into one shared object, cached on disk by a hash
// of their source (backend/kernel_cache.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/sdg.h"

namespace tempo::backend {

using ValueRef = std::pair<ir::OpId, int>;  // a body op's output

// How a cluster's loop reads an input, decided from the IR's shapes. The loop runs over rows x
// cols, the cluster's shape split at `RegionPlan::Step::split` (cols = the trailing dimensions).
enum class Access : uint8_t {
  Full,    // the cluster's shape: element r * cols + j
  Scalar,  // one element
  Row,     // the trailing dimensions only (a bias), repeated over rows: element j
  Column,  // the leading dimensions only, repeated over cols: element r
  Expand,  // any other broadcast: materialized at the cluster's shape first, then Full
};

// How a region's body runs: steps in an order where each reads only values before it.
struct RegionPlan {
  struct Step {
    std::vector<ir::OpId> ops;      // one op, or the ops of a cluster in order
    std::vector<ValueRef> inputs;   // cluster: values it reads from outside, in argument order
    std::vector<ValueRef> outputs;  // cluster: values read after it or by the region's readers
    std::vector<Access> access;     // cluster: per input
    size_t split = 0;               // cluster: rows = prod(shape[:split]), cols = the rest
    ir::Shape shape;                // cluster: its elements' shape
    bool cluster() const { return ops.size() > 1; }
  };
  std::vector<Step> steps;
};

// Plans a Fused op's body. With `clusters` false every op is its own step.
RegionPlan plan_region(const ir::Region& region, bool clusters);

// Where generated code runs: C++ compiled by the system compiler, or CUDA C++ compiled by NVRTC.
enum class Target : uint8_t { Cpu, Cuda };

// The source of a cluster step. Cpu: `extern "C" void <name>(int64_t rows, int64_t cols,
// const void* const* in, void* const* out)`, loops written for the compiler to vectorize (float
// exp, log, tanh and sigmoid are branch-free polynomials, not libm calls). Cuda: `extern "C"
// __global__ void <name>(int64_t rows, int64_t cols, <one pointer per input>, <one per
// output>)`, launched with cuda_block_threads threads a block. Inputs are indexed by their
// Access; outputs are contiguous, rows * cols elements (element ops) or rows (per-row ops and
// reductions).
std::string emit_cluster(const ir::Graph& body, const RegionPlan::Step& step,
                         const std::string& name, Target target = Target::Cpu);

// A whole library: the helpers generated functions use, then the functions.
std::string library_source(const std::vector<std::string>& functions, Target target = Target::Cpu);

// Whether a cluster has per-row ops or reductions: its CUDA kernel then runs a thread block per
// row (a grid of min(rows, 65535) blocks), else a thread per element.
bool row_blocks(const ir::Graph& body, const RegionPlan::Step& step);
// The threads of a CUDA kernel's blocks: a power of two from 32 to 256.
int cuda_block_threads(bool row_blocks, int64_t cols);

// The C type of a dtype in generated code (both targets).
const char* c_type(ir::DType d);

// Whether an elementwise op can be generated (as a cluster member of any role).
bool generable(const ir::Graph& body, const ir::OpNode& op);

}  // namespace tempo::backend
