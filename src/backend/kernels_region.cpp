// LibTorch lowering of fused regions: op by op, or a cluster's generated loop.
#include "backend/region_kernel.h"
#include "backend/torch_kernel_rules.h"

namespace tempo::backend::detail {

namespace {

// A cluster of a region (RegionPlan::Step) run by its generated loop.
std::unique_ptr<Kernel> cluster_kernel(const std::string& who, const ir::Graph& body,
                                       const RegionPlan::Step& step, ClusterFn loop,
                                       const sym::SymbolLayout& layout, bool donation,
                                       torch::Device device) {
  SymShape shape(step.shape.dims, layout);
  std::vector<SymShape> out_shapes;
  std::vector<torch::ScalarType> in_types, out_types;
  for (const auto& [id, k] : step.inputs)
    in_types.push_back(to_torch(body.op(id).outputs[k].dtype));
  for (const auto& [id, k] : step.outputs) {
    out_types.push_back(to_torch(body.op(id).outputs[k].dtype));
    out_shapes.emplace_back(body.op(id).outputs[k].shape.dims, layout);
  }
  const std::vector<Access> access = step.access;
  const size_t split = step.split;
  return kernel(who, [=](const ValuePtr* in, size_t, const int64_t* env, ValuePtr* out) {
    const Sizes sh = shape.eval(env);
    int64_t rows = 1, cols = 1;
    for (size_t d = 0; d < sh.size(); ++d) (d < split ? rows : cols) *= sh[d];
    c10::SmallVector<torch::Tensor, 8> inputs, outputs;
    c10::SmallVector<const void*, 8> in_ptrs;
    c10::SmallVector<void*, 8> out_ptrs;
    for (size_t k = 0; k < in_types.size(); ++k) {
      torch::Tensor t = as(tensor_of(in[k]), in_types[k]);
      if (t.device() != device) t = t.to(device);  // e.g. a value swapped to host memory
      t = access[k] == Access::Expand ? t.expand(sh).contiguous() : t.contiguous();
      const int64_t want = access[k] == Access::Scalar   ? 1
                           : access[k] == Access::Row    ? cols
                           : access[k] == Access::Column ? rows
                                                         : rows * cols;
      if (t.numel() != want)
        internal_error(cat(who, ": generated loop input ", k, " has ", t.numel(),
                           " elements, expected ", want));
      in_ptrs.push_back(t.data_ptr());
      inputs.push_back(std::move(t));
    }
    // Buffer donation (TEMPO §5.2): an element output takes over the buffer of a full input
    // that nothing else can see any more (the caller passed its last reference, no view shares
    // its storage); the loop reads each element before it writes it.
    c10::SmallVector<bool, 8> donated(in_types.size(), false);
    auto donor = [&](const Sizes& want, torch::ScalarType type) -> int {
      for (size_t j = 0; j < in_types.size(); ++j) {
        if (donated[j] || access[j] != Access::Full || in[j].use_count() != 1) continue;
        const torch::Tensor& t = tensor_of(in[j]);
        if (t.scalar_type() != type || !t.is_contiguous() || t.use_count() != 2 ||
            t.storage().use_count() != 1 || t.sizes() != c10::IntArrayRef(want) ||
            t.data_ptr() != inputs[j].data_ptr())
          continue;
        return static_cast<int>(j);
      }
      return -1;
    };
    for (size_t k = 0; k < out_types.size(); ++k) {
      const Sizes want = out_shapes[k].eval(env);
      const int j = donation ? donor(want, out_types[k]) : -1;
      if (j >= 0) {
        donated[j] = true;
        outputs.push_back(inputs[j]);
      } else {
        outputs.push_back(
            torch::empty(want, torch::TensorOptions().dtype(out_types[k]).device(device)));
      }
      out_ptrs.push_back(outputs.back().data_ptr());
    }
    loop(rows, cols, in_ptrs.data(), out_ptrs.data());
    for (size_t k = 0; k < outputs.size(); ++k) out[k] = wrap(std::move(outputs[k]));
  });
}

}  // namespace

std::unique_ptr<Kernel> region_kernel(const KernelCtx& c) {
  if (c.op.kind != ir::OpKind::Fused) c.unknown_kind();  // a Param is read by the region kernel
  const ir::Attrs& a = c.a;
  auto it = c.state.regions.find(c.op.id);
  const CompiledRegion* compiled = it == c.state.regions.end() ? nullptr : &it->second;
  const RegionPlan plan = compiled ? compiled->plan : plan_region(*a.region, false);
  return make_region_kernel(
      c.op, plan,
      [&](const ir::Graph& body, ir::OpId b) {
        return make_torch_kernel(body, b, c.layout, c.state);
      },
      [&](size_t k) -> std::unique_ptr<Kernel> {
        if (!compiled || !compiled->loops[k]) return nullptr;
        return cluster_kernel(c.who, a.region->body, plan.steps[k], compiled->loops[k], c.layout,
                              c.state.donation, c.state.device);
      });
}

}  // namespace tempo::backend::detail
