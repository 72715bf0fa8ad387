#include "backend/libtorch_backend.h"

#include <c10/core/InferenceMode.h>
#include <dlfcn.h>
#ifdef TEMPO_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "backend/cpu_allocator.h"
#include "backend/cuda_kernels.h"
#include "backend/loop_choice.h"
#include "backend/skinny_matmul.h"
#include "backend/torch_collectives.h"
#include "backend/torch_value.h"
#include "util/error.h"

namespace tempo::backend {

torch::ScalarType to_torch(ir::DType d) {
  switch (d) {
    case ir::DType::Bool:
      return torch::kBool;
    case ir::DType::Int32:
      return torch::kInt32;
    case ir::DType::Int64:
      return torch::kInt64;
    case ir::DType::Float16:
      return torch::kFloat16;
    case ir::DType::BFloat16:
      return torch::kBFloat16;
    case ir::DType::Float32:
      return torch::kFloat32;
    case ir::DType::Float64:
      return torch::kFloat64;
  }
  internal_error("unknown dtype");
}

ir::DType from_torch(torch::ScalarType s) {
  switch (s) {
    case torch::kBool:
      return ir::DType::Bool;
    case torch::kInt32:
      return ir::DType::Int32;
    case torch::kInt64:
      return ir::DType::Int64;
    case torch::kFloat16:
      return ir::DType::Float16;
    case torch::kBFloat16:
      return ir::DType::BFloat16;
    case torch::kFloat32:
      return ir::DType::Float32;
    case torch::kFloat64:
      return ir::DType::Float64;
    default:
      break;
  }
  throw UserError(cat("tensor type ", c10::toString(s), " is not supported by Tempo"));
}

namespace {

void check_host(const ir::HostTensor& h) {
  int64_t numel = 1;
  for (int64_t d : h.shape) {
    if (d < 0) throw UserError(cat("host tensor with negative size ", d));
    numel *= d;
  }
  size_t want = static_cast<size_t>(numel) * ir::dtype_size(h.dtype);
  if (h.data.size() != want)
    throw UserError(cat("host tensor of type ", ir::dtype_name(h.dtype), " and ", numel,
                        " elements holds ", h.data.size(), " bytes instead of ", want));
}

}  // namespace

torch::Tensor host_to_torch(ir::HostTensor&& h, const torch::Device& device) {
  check_host(h);
  if (device != torch::kCPU || h.data.empty()) return host_to_torch(std::as_const(h), device);
  // The tensor takes the host buffer over instead of copying it.
  auto* owned = new std::vector<uint8_t>(std::move(h.data));
  return torch::from_blob(
      owned->data(), h.shape, [owned](void*) { delete owned; },
      torch::TensorOptions().dtype(to_torch(h.dtype)));
}

torch::Tensor host_to_torch(const ir::HostTensor& h, const torch::Device& device) {
  check_host(h);
  // For a GPU the bytes go through pinned memory, so that the copy is asynchronous on the
  // current stream (LibTorch's pinned allocator keeps the buffer until the copy has run).
  const bool gpu = device != torch::kCPU;
  torch::Tensor t =
      torch::empty(h.shape, torch::TensorOptions().dtype(to_torch(h.dtype)).pinned_memory(gpu));
  if (!h.data.empty()) std::memcpy(t.data_ptr(), h.data.data(), h.data.size());
  if (gpu) t = t.to(device, /*non_blocking=*/true);
  return t;
}

torch::Tensor host_to_torch(const std::shared_ptr<const ir::HostTensor>& h,
                            const torch::Device& device) {
  check_host(*h);
  if (h->data.empty()) return host_to_torch(*h, device);
  torch::Tensor shared = torch::from_blob(
      const_cast<uint8_t*>(h->data.data()), h->shape, [h](void*) {},
      torch::TensorOptions().dtype(to_torch(h->dtype)));
  // On a GPU, one copy straight from the host bytes: a constant is copied once, and a pinned
  // staging buffer of its size would stay in LibTorch's host allocator for the process's life.
  return device == torch::kCPU ? shared : shared.to(device);
}

ir::HostTensor torch_to_host(const torch::Tensor& t) {
  torch::Tensor c = t.to(torch::kCPU).contiguous();
  ir::HostTensor h(from_torch(c.scalar_type()), c.sizes().vec());
  if (!h.data.empty()) std::memcpy(h.data.data(), c.data_ptr(), h.data.size());
  return h;
}

namespace {

template <typename F>
F openblas_function(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

// OpenBLAS (setup.sh installs it as libblas.so.3) picks its kernels by the CPU's model number,
// and on a model it does not know (one newer than its release) falls back to its oldest x86-64
// kernels, Prescott's (SSE3): Debian's 0.3.21 on a Xeon of model 207 ran a 256x256x256 sgemm at
// 31 GFLOP/s where its AVX-512 kernels run 144 (1 thread). Unless the user chose with
// OPENBLAS_CORETYPE, that fallback is replaced by the kernels of the vector width Tempo's own
// kernels use (vector_isa: SkylakeX for AVX-512, Haswell for AVX2); children of the process
// inherit the choice.
void select_blas_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto corename = openblas_function<char* (*)()>("openblas_get_corename");
    auto quit = openblas_function<void (*)()>("gotoblas_dynamic_quit");
    auto init = openblas_function<void (*)()>("gotoblas_dynamic_init");
    if (!corename || !quit || !init || std::getenv("OPENBLAS_CORETYPE") ||
        std::strcmp(corename(), "Prescott") != 0 || vector_isa() == VectorIsa::None)
      return;
    setenv("OPENBLAS_CORETYPE", vector_isa() == VectorIsa::Avx512 ? "SkylakeX" : "Haswell", 0);
    quit();
    init();
  });
}

// OpenBLAS starts one thread per core unless told otherwise; beside LibTorch's own intra-op
// threads they contend, and small matmuls run slower (measured on the RL benchmarks: 1 BLAS
// thread 1.5-1.6x faster than 2 on 2 cores). Unless the user set OPENBLAS_NUM_THREADS, the BLAS
// gets LibTorch's thread count.
void set_blas_threads(int n) {
  select_blas_kernels();
  if (auto set = openblas_function<void (*)(int)>("openblas_set_num_threads")) set(n);
}

void limit_blas_threads() {
  select_blas_kernels();
  if (!std::getenv("OPENBLAS_NUM_THREADS")) set_blas_threads(at::get_num_threads());
}

std::string loop_name(ir::OpId op, size_t step) {
  return cat("tempo_region", op, "_step", step);
}
// A CPU cluster's loop in an order: the cluster's name, with "_columns" for ColumnsOuter.
std::string loop_name(const std::string& cluster, LoopOrder order) {
  return order == LoopOrder::ColumnsOuter ? cluster + "_columns" : cluster;
}

class LibTorchBackend final : public runtime::Backend {
 public:
  LibTorchBackend(torch::Device device, BackendOptions options)
      : codegen_(options.codegen),
        cuda_check_(options.check_cuda_kernels),
        loop_schedules_(options.loop_schedules),
        loop_schedule_policy_(std::move(options.loop_schedule_policy)),
        loop_timings_(std::move(options.loop_timings)),
        log_(std::move(options.log)) {
    if (loop_schedules_ == LoopSchedules::Policy && !loop_schedule_policy_)
      throw UserError("loop schedules by a policy (LoopSchedules::Policy) need the policy: "
                      "CompileOptions::loop_schedule_policy is empty");
    state_.device = device;
    state_.donation = options.donation;
    state_.keep_constants = options.keep_constants;
    if (options.process_group) {
      state_.process_group = std::dynamic_pointer_cast<TorchProcessGroup>(options.process_group);
      if (!state_.process_group)
        internal_error("the process group was not made by backend::make_process_group");
    }
  }

  std::string device() const override { return state_.device.str(); }

  std::string prepare(const ir::Graph& g, const sym::SymbolLayout&) override {
    state_.regions.clear();
    if (!codegen_ && !cuda_check_) return "";
    std::vector<Cluster> clusters;
    std::vector<std::string> cpu, cuda;  // their sources, per target
    int ops = 0;
    for (const ir::OpNode& op : g.ops()) {
      if (op.kind != ir::OpKind::Fused) continue;
      CompiledRegion& r = state_.regions[op.id];
      r.plan = plan_region(*op.attrs.region, true);
      r.loops.assign(r.plan.steps.size(), nullptr);
      for (size_t k = 0; k < r.plan.steps.size(); ++k) {
        const RegionPlan::Step& step = r.plan.steps[k];
        if (!step.cluster()) continue;
        const ir::Graph& body = op.attrs.region->body;
        const std::string name = loop_name(op.id, k);
        Cluster c{name, op.id, k, row_blocks(body, step), {}, step.inputs.size(),
                  step.outputs.size()};
        if (state_.device.is_cpu()) {
          c.orders = cpu_orders(body, step, name);
          for (LoopOrder order : {LoopOrder::RowsOuter, LoopOrder::ColumnsOuter})
            if (c.orders.count(order))
              cpu.push_back(emit_cluster(body, step, loop_name(name, order), Target::Cpu, order));
          if (c.orders.size() == 2) c.features = loop_features(body, step);
        }
        clusters.push_back(std::move(c));
        if (!state_.device.is_cpu() || cuda_check_)
          cuda.push_back(emit_cluster(body, step, name, Target::Cuda));
        ops += static_cast<int>(step.ops.size());
      }
    }
    if (clusters.empty()) return "";
    if (cuda_check_ && state_.device.is_cpu()) check_cuda_kernels(cuda);
    if (!codegen_) {
      state_.regions.clear();
      return "";
    }
    std::string report;
    try {
      report = state_.device.is_cpu() ? load_cpu_loops(cpu, clusters)
                                      : load_cuda_kernels(cuda, clusters);
    } catch (const std::exception& e) {
      // Correct either way: without generated code every region runs on LibTorch kernels.
      std::cerr << "[tempo] warning: code generation failed, fused regions run op by op: "
                << e.what() << "\n";
      state_.regions.clear();
      return "code generation failed";
    }
    return cat("generated ", clusters.size(), " ", state_.device.is_cpu() ? "loops" : "kernels",
               " (", ops, " ops) ", report);
  }

  std::unique_ptr<runtime::Kernel> make_kernel(const ir::Graph& g, ir::OpId op,
                                               const sym::SymbolLayout& layout) override {
    return make_torch_kernel(g, op, layout, state_);
  }

  runtime::ValuePtr stack(const runtime::ValuePtr* values, size_t n, ir::DType dtype,
                          const std::vector<int64_t>& element_shape) override {
    if (n == 0) {
      std::vector<int64_t> shape{0};
      shape.insert(shape.end(), element_shape.begin(), element_shape.end());
      return wrap(
          torch::empty(shape, torch::TensorOptions().dtype(to_torch(dtype)).device(state_.device)));
    }
    std::vector<torch::Tensor> ts;
    ts.reserve(n);
    for (size_t i = 0; i < n; ++i) ts.push_back(tensor_of(values[i]));
    try {
      return wrap(torch::stack(ts));
    } catch (const c10::Error& e) {
      throw UserError(cat("cannot stack the points of a slice read: ", e.what_without_backtrace()));
    }
  }

  runtime::ValuePtr new_block(const runtime::Value& row, int64_t rows, int64_t axis) override {
    const torch::Tensor& r = static_cast<const TorchValue&>(row).tensor;
    std::vector<int64_t> shape(r.sizes().begin(), r.sizes().end());
    shape.insert(shape.begin() + axis, rows);
    return wrap(torch::empty(shape, r.options()));
  }
  runtime::ValuePtr write_row(const runtime::Value& block, int64_t axis, int64_t index,
                              const runtime::Value& row) override {
    const torch::Tensor& b = static_cast<const TorchValue&>(block).tensor;
    const torch::Tensor& r = static_cast<const TorchValue&>(row).tensor;
    if (r.scalar_type() != b.scalar_type() || r.device() != b.device() ||
        r.dim() + 1 != b.dim())
      return nullptr;
    torch::Tensor dst = b.select(axis, index);
    if (r.sizes() != dst.sizes()) return nullptr;
    dst.copy_(r);
    return wrap(std::move(dst));
  }
  runtime::ValuePtr block_row(const runtime::Value& block, int64_t axis, int64_t index) override {
    return wrap(static_cast<const TorchValue&>(block).tensor.select(axis, index));
  }
  runtime::ValuePtr block_rows(const runtime::Value& block, int64_t axis, int64_t start,
                               int64_t stop, int64_t step) override {
    const torch::Tensor& b = static_cast<const TorchValue&>(block).tensor;
    return wrap(b.slice(axis, start, stop, step).movedim(axis, 0));
  }

  runtime::ValuePtr rolled_block(const runtime::Value& block, int64_t axis, int64_t start,
                                 int64_t stop) override {
    const torch::Tensor& b = static_cast<const TorchValue&>(block).tensor;
    torch::Tensor fresh = torch::empty_like(b);
    fresh.slice(axis, 0, stop - start).copy_(b.slice(axis, start, stop));
    return wrap(std::move(fresh));
  }

  runtime::ValuePtr evict(const runtime::Value& v) override {
    const torch::Tensor& t = static_cast<const TorchValue&>(v).tensor;
    if (t.is_cpu()) return wrap(t.clone());
    torch::Tensor host =
        torch::empty(t.sizes(), t.options().device(torch::kCPU).pinned_memory(true));
    host.copy_(t);
    return wrap(std::move(host));
  }
  runtime::ValuePtr load(const runtime::Value& v) override {
    return wrap(static_cast<const TorchValue&>(v).tensor.to(state_.device, false, /*copy=*/true));
  }

  runtime::ValuePtr from_host(const ir::HostTensor& t) override {
    return wrap(host_to_torch(t, state_.device));
  }
  ir::HostTensor to_host(const runtime::ValuePtr& v) override {
    return torch_to_host(tensor_of(v));
  }
  void seed(uint64_t seed) override { state_.seed = seed; }
  // Inference mode: the tensors a program makes carry no autograd state (no version counters, no
  // view metadata) and ops skip autograd's dispatch: 0.46 us of overhead per launch, not 0.59.
  // The program's own gradients are ops of its graph, never LibTorch's autograd.
  struct InferenceScope final : RunScope {
    c10::InferenceMode mode;
  };
  std::unique_ptr<RunScope> run_scope() override { return std::make_unique<InferenceScope>(); }

 private:
  struct Cluster {  // a generated cluster step
    std::string name;
    ir::OpId region;
    size_t step;
    bool row_blocks;  // codegen.h's row_blocks
    std::set<LoopOrder> orders;  // CPU: the loop orders compiled (loop_name)
    size_t inputs, outputs;
    LoopFeatures features;  // with both orders
  };

  // The orders a CPU cluster's loop is compiled in: RowsOuter where ColumnsOuter does not apply;
  // else as the LoopSchedules say, both where the choice depends on the size at run time.
  std::set<LoopOrder> cpu_orders(const ir::Graph& body, const RegionPlan::Step& step,
                                 const std::string& name) const {
    if (!columns_outer_applies(body, step)) return {LoopOrder::RowsOuter};
    switch (loop_schedules_) {
      case LoopSchedules::RowsOuter: return {LoopOrder::RowsOuter};
      case LoopSchedules::ColumnsOuter: return {LoopOrder::ColumnsOuter};
      case LoopSchedules::Measured: break;
      case LoopSchedules::Policy:
        if (std::optional<int64_t> rows = constant_rows(step)) {  // decided now where it can be
          const int64_t cols = constant_columns(step);
          if (std::optional<LoopOrder> order =
                  loop_schedule_policy_(loop_features(body, step), *rows, cols)) {
            log_order(name, *rows, cols, *order, "the policy's choice");
            return {*order};
          }
        }
        break;
    }
    return {LoopOrder::RowsOuter, LoopOrder::ColumnsOuter};
  }

  void log_order(const std::string& loop, int64_t rows, int64_t cols, LoopOrder order,
                 const std::string& why) const {
    if (log_)
      log_(cat("loop ", loop, " at ", rows, " x ", cols, ": ",
               order == LoopOrder::ColumnsOuter ? "columns" : "rows", " outer (", why, ")"));
  }

  // The loop of a cluster compiled in both orders.
  LoopCall choose_order(const Cluster& c, LoopFn rows_outer, LoopFn columns_outer) const {
    // The decisions come after compilation: this backend outlives them (the executable owns it).
    SizeDecision policy;
    if (loop_schedules_ == LoopSchedules::Policy)
      policy = [this, c](int64_t rows, int64_t cols) -> std::optional<bool> {
        const std::optional<LoopOrder> order = loop_schedule_policy_(c.features, rows, cols);
        if (!order) return std::nullopt;  // measured
        log_order(c.name, rows, cols, *order, "the policy's choice");
        return order == LoopOrder::ColumnsOuter;
      };
    return measured_choice(rows_outer, columns_outer,
                           [this, c](int64_t rows, int64_t cols, double rows_s, double columns_s,
                                     bool columns) {
                             if (!loop_timings_.empty())
                               append_loop_timing(loop_timings_, c.features, rows, cols, rows_s,
                                                  columns_s);
                             log_order(c.name, rows, cols,
                                       columns ? LoopOrder::ColumnsOuter : LoopOrder::RowsOuter,
                                       cat("measured: ", rows_s * 1e6, " us rows outer, ",
                                           columns_s * 1e6, " us columns outer"));
                           },
                           std::move(policy));
  }

  static std::string cache_report(bool from_cache, double seconds, const std::string& path) {
    return cat(
        from_cache ? std::string("from the kernel cache") : cat("compiled in ", seconds, " s"),
        ": ", path);
  }

  std::string load_cpu_loops(const std::vector<std::string>& functions,
                             const std::vector<Cluster>& clusters) {
    state_.library = KernelLibrary::load(library_source(functions));
    auto loop = [&](const std::string& name) {
      auto fn = reinterpret_cast<LoopFn>(state_.library->symbol(name));
      TEMPO_ASSERT(fn, "generated loop ", name, " is missing");
      return fn;  // state_.library keeps it loaded
    };
    for (const Cluster& c : clusters) {
      ClusterFn& fn = state_.regions[c.region].loops[c.step];
      if (c.orders.size() == 1)
        fn = loop(loop_name(c.name, *c.orders.begin()));
      else
        fn = choose_order(c, loop(loop_name(c.name, LoopOrder::RowsOuter)),
                          loop(loop_name(c.name, LoopOrder::ColumnsOuter)));
    }
    return cache_report(state_.library->from_cache(), state_.library->compile_seconds(),
                        state_.library->path());
  }

#ifdef TEMPO_CUDA
  std::string load_cuda_kernels(const std::vector<std::string>& functions,
                                const std::vector<Cluster>& clusters) {
    const c10::DeviceIndex device = state_.device.index() < 0 ? 0 : state_.device.index();
    c10::cuda::CUDAGuard guard(device);  // the module belongs to this device's context
    const CudaImage image =
        compile_cuda(library_source(functions, Target::Cuda), cuda_device_arch());
    std::shared_ptr<CudaModule> module = CudaModule::load(image);
    for (const Cluster& c : clusters) {
      void* fn = module->function(c.name);
      state_.regions[c.region].loops[c.step] = [module, fn, c, device](int64_t rows, int64_t cols,
                                                                       const void* const* in,
                                                                       void* const* out) {
        const int64_t work = c.row_blocks ? rows : rows * cols;
        if (work <= 0) return;
        const int threads = cuda_block_threads(c.row_blocks, cols);
        const int64_t blocks = c.row_blocks ? rows : (work + threads - 1) / threads;
        c10::SmallVector<void*, 16> pointers, args{&rows, &cols};
        for (size_t k = 0; k < c.inputs; ++k) pointers.push_back(const_cast<void*>(in[k]));
        for (size_t k = 0; k < c.outputs; ++k) pointers.push_back(out[k]);
        for (void*& p : pointers) args.push_back(&p);
        c10::cuda::CUDAGuard launch_guard(device);
        CudaModule::launch(fn, static_cast<unsigned>(std::min<int64_t>(blocks, 65535)),
                           static_cast<unsigned>(threads), args.data(),
                           at::cuda::getCurrentCUDAStream(device).stream());
      };
    }
    return cache_report(image.from_cache, image.compile_seconds, image.path);
  }

  // Compiles the CUDA kernels of a program that runs on the CPU: a kernel that does not compile
  // is an error even without a GPU (the suite of a CUDA build runs so).
  static void check_cuda_kernels(const std::vector<std::string>& functions) {
    compile_cuda(library_source(functions, Target::Cuda), "compute_80");  // PTX: Ampere on
  }
#else
  std::string load_cuda_kernels(const std::vector<std::string>&, const std::vector<Cluster>&) {
    internal_error("generated CUDA kernels in a build without CUDA");
  }
  static void check_cuda_kernels(const std::vector<std::string>&) {
    internal_error("checking CUDA kernels in a build without CUDA");
  }
#endif

  const bool codegen_;     // generate code for fused regions
  const bool cuda_check_;  // BackendOptions::check_cuda_kernels
  const LoopSchedules loop_schedules_;
  const LoopSchedulePolicy loop_schedule_policy_;
  const std::string loop_timings_;
  const std::function<void(const std::string&)> log_;
  TorchState state_;
};

}  // namespace

std::unique_ptr<runtime::Backend> make_libtorch_backend(const std::string& device,
                                                        BackendOptions options) {
  torch::Device dev = torch::kCPU;
  try {
    dev = torch::Device(device);
  } catch (const c10::Error& e) {
    throw UserError(cat("unknown device \"", device, "\": ", e.what_without_backtrace()));
  }
  if (dev.is_cuda()) {
#ifndef TEMPO_CUDA
    throw UserError(cat("device \"", device,
                        "\" needs a CUDA build: configure with -DTEMPO_CUDA=ON and Torch_DIR "
                        "pointing at a CUDA LibTorch"));
#endif
    if (!torch::cuda::is_available())
      throw UserError(cat("device \"", device, "\" requested but no CUDA GPU is available"));
  } else if (!dev.is_cpu()) {
    throw UserError(cat("device \"", device, "\" is not supported (use cpu or cuda)"));
  }
#ifndef TEMPO_CUDA
  if (options.check_cuda_kernels)
    throw UserError("checking the generated CUDA kernels needs a CUDA build (-DTEMPO_CUDA=ON)");
#endif
  limit_blas_threads();
  install_caching_cpu_allocator();
  return std::make_unique<LibTorchBackend>(dev, options);
}

void set_num_threads(int n) {
  torch::set_num_threads(n);
  set_blas_threads(n);
}

std::string blas_kernels() {
  auto corename = openblas_function<char* (*)()>("openblas_get_corename");
  return corename ? cat("OpenBLAS ", corename()) : "";
}

std::string default_device() {
  if (const char* d = std::getenv("TEMPO_DEVICE"); d && *d) return d;
#ifdef TEMPO_CUDA
  if (torch::cuda::is_available()) return "cuda";
#endif
  return "cpu";
}

}  // namespace tempo::backend
