#include "backend/region_kernel.h"

#include <algorithm>

#include "util/error.h"

namespace tempo::backend {

namespace {

using runtime::Kernel;
using runtime::ValuePtr;

class RegionKernel final : public Kernel {
 public:
  RegionKernel(const ir::OpNode& fused, const RegionPlan& plan, const MakeKernel& make_op,
               const MakeClusterKernel& make_cluster) {
    TEMPO_ASSERT(fused.kind == ir::OpKind::Fused && fused.attrs.region, fused.describe(),
                 " is not a fused region");
    const ir::Region& r = *fused.attrs.region;
    const ir::Graph& body = r.body;
    std::vector<int32_t> base(body.num_ops());
    int32_t slots = 0;
    for (const ir::OpNode& op : body.ops()) {
      base[op.id] = slots;
      slots += static_cast<int32_t>(op.outputs.size());
      if (op.kind == ir::OpKind::Param)
        params_.emplace_back(base[op.id], static_cast<int32_t>(op.attrs.ints.at(0)));
    }
    auto slot = [&](const ValueRef& v) { return base[v.first] + v.second; };
    auto op_step = [&](ir::OpId id) {
      const ir::OpNode& op = body.op(id);
      Step s;
      s.kernel = add_kernel(make_op(body, id));
      for (ir::EdgeId e : op.inputs)
        s.inputs.push_back(slot({body.edge(e).source, body.edge(e).source_output}));
      for (size_t k = 0; k < op.outputs.size(); ++k)
        s.outputs.push_back(base[id] + static_cast<int32_t>(k));
      return s;
    };
    for (size_t k = 0; k < plan.steps.size(); ++k) {
      const RegionPlan::Step& ps = plan.steps[k];
      std::unique_ptr<Kernel> generated = ps.cluster() ? make_cluster(k) : nullptr;
      if (!generated) {
        for (ir::OpId id : ps.ops) steps_.push_back(op_step(id));
        continue;
      }
      Step s;
      s.kernel = add_kernel(std::move(generated));
      for (const ValueRef& v : ps.inputs) s.inputs.push_back(slot(v));
      for (const ValueRef& v : ps.outputs) s.outputs.push_back(slot(v));
      steps_.push_back(std::move(s));
    }
    size_t max_in = 0, max_out = 0;
    for (const Step& s : steps_) {
      max_in = std::max(max_in, s.inputs.size());
      max_out = std::max(max_out, s.outputs.size());
    }
    for (const auto& [id, k] : r.outputs) outputs_.push_back(base[id] + k);
    // Each value is released after the last step that reads it (or, if none does, the step that
    // made it), so a region holds no more intermediates than the ops would unfused; params too
    // (the region takes its inputs over). The region's outputs stay until the end of the run.
    std::vector<int> last(static_cast<size_t>(slots), -1);
    for (size_t i = 0; i < steps_.size(); ++i) {
      for (int32_t v : steps_[i].outputs) last[v] = static_cast<int>(i);
      for (int32_t v : steps_[i].inputs) last[v] = static_cast<int>(i);
    }
    for (int32_t v : outputs_) last[v] = -1;
    for (size_t v = 0; v < last.size(); ++v)
      if (last[v] >= 0) steps_[last[v]].frees.push_back(static_cast<int32_t>(v));
    // A value read once by the step that frees it is handed over (moved), so that the step's
    // kernel holds its only reference and may reuse its buffer (donation).
    for (Step& s : steps_)
      for (int32_t v : s.inputs)
        s.hand_over.push_back(std::count(s.frees.begin(), s.frees.end(), v) == 1 &&
                              std::count(s.inputs.begin(), s.inputs.end(), v) == 1);
    values_.resize(static_cast<size_t>(slots));
    args_.resize(max_in);
    results_.resize(max_out);
  }

  void run(ValuePtr* in, size_t n, const int64_t* env, ValuePtr* out) override {
    // The region takes its inputs over: one the caller no longer holds (a donated point) has
    // its only reference here, and the step that reads it last may write into its buffer.
    for (const auto& [slot, k] : params_) values_[slot] = in[k];
    for (size_t k = 0; k < n; ++k) in[k].reset();
    for (const Step& s : steps_) {
      for (size_t i = 0; i < s.inputs.size(); ++i)
        args_[i] = s.hand_over[i] ? std::move(values_[s.inputs[i]]) : values_[s.inputs[i]];
      s.kernel->run(args_.data(), s.inputs.size(), env, results_.data());
      for (size_t i = 0; i < s.inputs.size(); ++i) args_[i].reset();
      for (size_t i = 0; i < s.outputs.size(); ++i) values_[s.outputs[i]] = std::move(results_[i]);
      for (int32_t v : s.frees) values_[v].reset();
    }
    for (size_t j = 0; j < outputs_.size(); ++j) out[j] = values_[outputs_[j]];
    for (ValuePtr& v : values_) v.reset();
  }

 private:
  struct Step {
    Kernel* kernel = nullptr;
    std::vector<int32_t> inputs, outputs;  // value slots
    std::vector<int32_t> frees;            // value slots last used by this step
    std::vector<bool> hand_over;           // per input: moved in (its last use)
  };
  Kernel* add_kernel(std::unique_ptr<Kernel> k) {
    kernels_.push_back(std::move(k));
    return kernels_.back().get();
  }
  std::vector<std::unique_ptr<Kernel>> kernels_;
  std::vector<Step> steps_;
  std::vector<std::pair<int32_t, int32_t>> params_;  // value slot, input index
  std::vector<int32_t> outputs_;
  std::vector<ValuePtr> values_, args_, results_;
};

}  // namespace

std::unique_ptr<Kernel> make_region_kernel(const ir::OpNode& fused, const RegionPlan& plan,
                                           const MakeKernel& make_op,
                                           const MakeClusterKernel& make_cluster) {
  return std::make_unique<RegionKernel>(fused, plan, make_op, make_cluster);
}

}  // namespace tempo::backend
