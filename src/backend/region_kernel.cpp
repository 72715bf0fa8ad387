#include "backend/region_kernel.h"

#include <algorithm>

#include "util/error.h"

namespace tempo::backend {

namespace {

using runtime::Kernel;
using runtime::ValuePtr;

class RegionKernel final : public Kernel {
 public:
  RegionKernel(const ir::OpNode& fused, const MakeKernel& make) {
    TEMPO_ASSERT(fused.kind == ir::OpKind::Fused && fused.attrs.region, fused.describe(),
                 " is not a fused region");
    const ir::Region& r = *fused.attrs.region;
    const ir::Graph& body = r.body;
    std::vector<int32_t> base(body.num_ops());
    int32_t slots = 0;
    for (const ir::OpNode& op : body.ops()) {
      base[op.id] = slots;
      slots += static_cast<int32_t>(op.outputs.size());
    }
    size_t max_inputs = 0;
    for (const ir::OpNode& op : body.ops()) {
      if (op.kind == ir::OpKind::Param) {
        params_.emplace_back(base[op.id], static_cast<int32_t>(op.attrs.ints.at(0)));
        continue;
      }
      Step s;
      kernels_.push_back(make(body, op.id));
      s.kernel = kernels_.back().get();
      for (ir::EdgeId e : op.inputs) {
        const ir::Edge& edge = body.edge(e);
        TEMPO_ASSERT(edge.source < op.id, fused.describe(), ": body op ", op.id,
                     " reads a later op");
        s.inputs.push_back(base[edge.source] + edge.source_output);
      }
      s.out_base = base[op.id];
      max_inputs = std::max(max_inputs, s.inputs.size());
      steps_.push_back(std::move(s));
    }
    for (const auto& [id, k] : r.outputs) outputs_.push_back(base[id] + k);
    values_.resize(static_cast<size_t>(slots));
    args_.resize(max_inputs);
  }

  void run(const ValuePtr* in, size_t, const int64_t* env, ValuePtr* out) override {
    for (const auto& [slot, k] : params_) values_[slot] = in[k];
    for (const Step& s : steps_) {
      for (size_t i = 0; i < s.inputs.size(); ++i) args_[i] = values_[s.inputs[i]];
      s.kernel->run(args_.data(), s.inputs.size(), env, &values_[s.out_base]);
    }
    for (size_t j = 0; j < outputs_.size(); ++j) out[j] = values_[outputs_[j]];
    for (ValuePtr& v : values_) v.reset();
    for (ValuePtr& v : args_) v.reset();
  }

 private:
  struct Step {
    Kernel* kernel = nullptr;
    std::vector<int32_t> inputs;  // value slots
    int32_t out_base = 0;
  };
  std::vector<std::unique_ptr<Kernel>> kernels_;
  std::vector<Step> steps_;
  std::vector<std::pair<int32_t, int32_t>> params_;  // value slot, input index
  std::vector<int32_t> outputs_;
  std::vector<ValuePtr> values_, args_;
};

}  // namespace

std::unique_ptr<Kernel> make_region_kernel(const ir::OpNode& fused, const MakeKernel& make) {
  return std::make_unique<RegionKernel>(fused, make);
}

}  // namespace tempo::backend
