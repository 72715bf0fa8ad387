// Code generation for dataflow regions (TEMPO §4.4). A region's body is planned as a sequence of
// steps: single ops, which run as the backend's kernels, and clusters, which become one generated
// C++ loop nest each. A cluster has a shape S: its elementwise ops of shape S, elementwise ops with
// one value per row (S with its last dimension 1 or dropped) and reductions of S's last dimension
// (sum, max with its first argmax): log-softmax, softmax and an MLP layer's epilogue are one
// cluster each. All loops of a program
// are compiled together by the system compiler into one shared object, cached on disk by a hash
// of their source (backend/kernel_cache.h).
#pragma once

#include <functional>
#include <optional>
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

// The order of a CPU cluster's loops. RowsOuter: a loop over rows, and in it a pass over the
// row's columns per reduction and one for the element outputs (vectorized along a row).
// ColumnsOuter (loop interchange): blocks of 64 rows, and in each block the same passes with the
// loop over the block's rows inside the loop over columns, per-row values in arrays (vectorized
// across rows): for narrow rows, e.g. a log-softmax over two actions, where a row's loop has too
// few columns to vectorize and costs a loop's overhead per row.
enum class LoopOrder : uint8_t { RowsOuter, ColumnsOuter };

// Which order the CPU clusters where both apply run with: always RowsOuter, always
// ColumnsOuter, Measured: both are compiled and each cluster's first calls at a size time them,
// the later ones run the faster (backend/loop_choice.h), or Policy: a LoopSchedulePolicy
// chooses per cluster and size (a learned one: loops/schedule_model.h), the measurement where it
// is not sure.
enum class LoopSchedules : uint8_t { RowsOuter, Measured, ColumnsOuter, Policy };
// "rows", "measured", "columns" (a policy is not named: it is a value); UserError naming `what`
// on another name.
LoopSchedules parse_loop_schedules(const std::string& name, const std::string& what);
const char* loop_schedules_name(LoopSchedules s);  // also "policy"

// A cluster's columns per row where that is a constant, else -1; its rows where constant.
int64_t constant_columns(const RegionPlan::Step& step);
std::optional<int64_t> constant_rows(const RegionPlan::Step& step);

// Whether a CPU cluster reduces rows of a constant count of at most kNarrowColumns columns: it
// then has the same values in either LoopOrder (over such rows both add a sum's terms in order,
// where wider rows' sums are reassociated to vectorize).
constexpr int64_t kNarrowColumns = 16;
bool columns_outer_applies(const ir::Graph& body, const RegionPlan::Step& step);

// What a loop schedule policy sees of a cluster where both orders apply: its ops by role, its
// inputs by Access and its outputs by kind. The size (rows, cols) comes with each call.
struct LoopFeatures {
  static constexpr int kCount = 10;
  static constexpr const char* kNames[kCount] = {
      "sums",         "maxima",        "element_ops",  "row_ops",         "transcendental",
      "full_inputs", "column_inputs", "other_inputs", "element_outputs", "row_outputs"};
  int values[kCount] = {};  // in kNames' order
};
LoopFeatures loop_features(const ir::Graph& body, const RegionPlan::Step& step);

// Chooses the order of a cluster's loops at a size, or nullopt where it is not sure: both orders
// are then compiled and timed at that size, as LoopSchedules::Measured does. The order changes the
// time only, never the values (columns_outer_applies).
using LoopSchedulePolicy = std::function<std::optional<LoopOrder>(const LoopFeatures& cluster,
                                                                   int64_t rows, int64_t cols)>;

// The source of a cluster step. Cpu: `extern "C" void <name>(int64_t rows, int64_t cols,
// const void* const* in, void* const* out)`, loops written for the compiler to vectorize (float
// exp, log, tanh and sigmoid are branch-free polynomials, not libm calls). Cuda: `extern "C"
// __global__ void <name>(int64_t rows, int64_t cols, <one pointer per input>, <one per
// output>)`, launched with cuda_block_threads threads a block. Inputs are indexed by their
// Access; outputs are contiguous, rows * cols elements (element ops) or rows (per-row ops and
// reductions). `order` is the CPU's (ColumnsOuter where columns_outer_applies).
std::string emit_cluster(const ir::Graph& body, const RegionPlan::Step& step,
                         const std::string& name, Target target = Target::Cpu,
                         LoopOrder order = LoopOrder::RowsOuter);

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
