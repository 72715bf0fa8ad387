// The measuring backend: values that are only sizes (backend/measure_backend.h).
#include "backend/measure_backend.h"

#include <vector>

#include "ir/op_kind.h"
#include "util/error.h"

namespace tempo::backend {
namespace {

// A value's size; views share their base's storage, as LibTorch's views do. A block store's
// block also knows its number of rows.
class SizeValue final : public runtime::Value, public std::enable_shared_from_this<SizeValue> {
 public:
  explicit SizeValue(int64_t bytes, std::shared_ptr<const SizeValue> base = nullptr,
                     int64_t rows = 1)
      : bytes_(bytes), rows_(rows), base_(std::move(base)) {}
  int64_t nbytes() const override { return bytes_; }
  int64_t rows() const { return rows_; }
  const void* storage() const override { return base_ ? base_->storage() : this; }
  int64_t storage_nbytes() const override { return base_ ? base_->storage_nbytes() : bytes_; }
  std::shared_ptr<const SizeValue> base() const { return base_ ? base_ : shared_from_this(); }

 private:
  int64_t bytes_;
  int64_t rows_;
  std::shared_ptr<const SizeValue> base_;
};

const SizeValue& size_of(const runtime::Value& v) {
  return static_cast<const SizeValue&>(v);
}

class SizeKernel final : public runtime::Kernel {
 public:
  SizeKernel(const ir::OpNode& op, const sym::SymbolLayout& layout) : view_(is_view(op.kind)) {
    for (const ir::TensorType& t : op.outputs) {
      Output o;
      o.element = static_cast<int64_t>(ir::dtype_size(t.dtype));
      for (const Expr& d : t.shape.dims) o.dims.emplace_back(d, layout);
      outputs_.push_back(std::move(o));
    }
  }
  void run(runtime::ValuePtr* inputs, size_t num_inputs, const int64_t* env,
           runtime::ValuePtr* outputs) override {
    for (size_t k = 0; k < outputs_.size(); ++k) {
      int64_t bytes = outputs_[k].element;
      for (const sym::CompiledExpr& d : outputs_[k].dims) bytes *= d.eval(env);
      outputs[k] = view_ && num_inputs > 0
                       ? std::make_shared<SizeValue>(bytes, size_of(*inputs[0]).base())
                       : std::make_shared<SizeValue>(bytes);
    }
  }

 private:
  struct Output {
    int64_t element = 0;
    std::vector<sym::CompiledExpr> dims;
  };
  std::vector<Output> outputs_;
  bool view_;
};

class MeasureBackend final : public runtime::Backend {
 public:
  std::string device() const override { return "measure"; }
  std::unique_ptr<runtime::Kernel> make_kernel(const ir::Graph& g, ir::OpId op,
                                               const sym::SymbolLayout& layout) override {
    return std::make_unique<SizeKernel>(g.op(op), layout);
  }
  runtime::ValuePtr stack(const runtime::ValuePtr* values, size_t n, ir::DType dtype,
                          const std::vector<int64_t>& element_shape) override {
    int64_t bytes = static_cast<int64_t>(ir::dtype_size(dtype)) * static_cast<int64_t>(n);
    for (int64_t d : element_shape) bytes *= d;
    return std::make_shared<SizeValue>(bytes);
  }
  runtime::ValuePtr new_block(const runtime::Value& row, int64_t rows, int64_t) override {
    return std::make_shared<SizeValue>(row.nbytes() * rows, nullptr, rows);
  }
  runtime::ValuePtr write_row(const runtime::Value& block, int64_t, int64_t,
                              const runtime::Value& row) override {
    return std::make_shared<SizeValue>(row.nbytes(), size_of(block).base());
  }
  runtime::ValuePtr block_row(const runtime::Value& block, int64_t, int64_t) override {
    return std::make_shared<SizeValue>(block.nbytes() / size_of(block).rows(),
                                       size_of(block).base());
  }
  // A view of the rows; its own size is not needed (the storage is the block's).
  runtime::ValuePtr block_rows(const runtime::Value& block, int64_t, int64_t, int64_t,
                               int64_t) override {
    return std::make_shared<SizeValue>(block.nbytes(), size_of(block).base());
  }
  runtime::ValuePtr rolled_block(const runtime::Value& block, int64_t, int64_t,
                                 int64_t) override {
    return std::make_shared<SizeValue>(block.nbytes(), nullptr, size_of(block).rows());
  }
  runtime::ValuePtr evict(const runtime::Value& v) override {
    return std::make_shared<SizeValue>(v.nbytes());
  }
  runtime::ValuePtr load(const runtime::Value& v) override {
    return std::make_shared<SizeValue>(v.nbytes());
  }
  runtime::ValuePtr from_host(const ir::HostTensor& t) override {
    return std::make_shared<SizeValue>(static_cast<int64_t>(t.data.size()));
  }
  ir::HostTensor to_host(const runtime::ValuePtr&) override {
    throw UserError("a program run to measure its memory has no values to read");
  }
  void seed(uint64_t) override {}
};

}  // namespace

std::unique_ptr<runtime::Backend> make_measure_backend() {
  return std::make_unique<MeasureBackend>();
}

bool is_view(ir::OpKind k) {
  switch (k) {
    case ir::OpKind::Identity:
    case ir::OpKind::Detach:
    case ir::OpKind::Reshape:
    case ir::OpKind::Permute:
    case ir::OpKind::Expand:
    case ir::OpKind::Squeeze:
    case ir::OpKind::Unsqueeze:
    case ir::OpKind::Slice:
    case ir::OpKind::Index:
      return true;
    default:
      return false;
  }
}

}  // namespace tempo::backend
