// The interface between the runtime and a tensor backend. The runtime stores and moves opaque
// values; only a backend knows what an op computes (ARCHITECTURE.md: runtime must not know op
// semantics). The interface lives here, below the backend layer, so that backends implement it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/sdg.h"
#include "symbolic/eval.h"

namespace tempo::runtime {

// An opaque backend tensor.
class Value {
 public:
  virtual ~Value() = default;
  virtual int64_t nbytes() const = 0;
  // The memory this value's elements live in, and its size: views (reshape, permute, slices)
  // share their base's storage, which the runtime's memory accounting counts once.
  virtual const void* storage() const { return this; }
  virtual int64_t storage_nbytes() const { return nbytes(); }
};
using ValuePtr = std::shared_ptr<Value>;

// Executes one op at one point of its domain. Symbolic attributes (shapes, slice bounds, ...) are
// compiled once when the kernel is made and evaluated against `env` (laid out by the layout
// passed to make_kernel) at each launch.
class Kernel {
 public:
  virtual ~Kernel() = default;
  // A kernel may move an input out to take its buffer over (the caller drops them after the
  // call); it can reuse the buffer only where that leaves no other reference (use_count 1).
  virtual void run(ValuePtr* inputs, size_t num_inputs, const int64_t* env,
                   ValuePtr* outputs) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string device() const = 0;
  // Called once per program before its kernels are made, for work a backend does per program
  // (e.g. generating and compiling code for all fused regions at once). Returns a one-line
  // report for verbose output (empty: nothing to say).
  virtual std::string prepare(const ir::Graph& g, const sym::SymbolLayout& layout) {
    (void)g;
    (void)layout;
    return "";
  }
  // One kernel per op; never called for Merge (the executor moves merge inputs itself).
  virtual std::unique_ptr<Kernel> make_kernel(const ir::Graph& g, ir::OpId op,
                                              const sym::SymbolLayout& layout) = 0;
  // Stacks equally shaped values along a new leading dimension. With n == 0 returns an empty
  // tensor of shape (0, element_shape...).
  virtual ValuePtr stack(const ValuePtr* values, size_t n, ir::DType dtype,
                         const std::vector<int64_t>& element_shape) = 0;
  // Block stores (TEMPO §6): a block of `rows` uninitialized rows shaped and typed like `row`;
  // `row` copied into row `index` of `block`, returning that row as a view of the block (null,
  // copying nothing, where `row` does not fit: another shape or type); the rows start:stop:step
  // of a block as one view, stacked along a new leading dim; a new block of as many rows as
  // `block` whose first stop - start rows are copies of rows start:stop of `block` (window stores
  // rolling forward); row `index` of `block` as a view. The rows lie along dim `axis` of the
  // block: before the row's dim `axis` (0: the rows are the block's leading dim, each contiguous).
  virtual ValuePtr new_block(const Value& row, int64_t rows, int64_t axis) = 0;
  virtual ValuePtr write_row(const Value& block, int64_t axis, int64_t index, const Value& row) = 0;
  virtual ValuePtr block_row(const Value& block, int64_t axis, int64_t index) = 0;
  virtual ValuePtr block_rows(const Value& block, int64_t axis, int64_t start, int64_t stop,
                              int64_t step) = 0;
  virtual ValuePtr rolled_block(const Value& block, int64_t axis, int64_t start, int64_t stop) = 0;
  // Swapping (TEMPO §5.2): a copy of `v` in host memory, and a copy of such a host value back on
  // this backend's device (on the CPU both are real copies into separate buffers).
  virtual ValuePtr evict(const Value& v) = 0;
  virtual ValuePtr load(const Value& v) = 0;
  virtual ValuePtr from_host(const ir::HostTensor& t) = 0;
  virtual ir::HostTensor to_host(const ValuePtr& v) = 0;
  // Seeds the backend's random number generator (RandUniform, RandNormal).
  virtual void seed(uint64_t seed) = 0;
  // Held by the executor's thread while it runs a program (its kernels and stores): the state a
  // backend runs under, undone at the scope's end. Null: none.
  struct RunScope {
    virtual ~RunScope() = default;
  };
  virtual std::unique_ptr<RunScope> run_scope() { return nullptr; }
};

}  // namespace tempo::runtime
