// Generated CUDA kernels, compiled by NVRTC without a GPU: the clusters of real programs (row
// reductions with argmax, softmax, broadcasts of every access kind, double precision) compile,
// and a kernel that does not compile is an error with the compiler's log.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "api/tempo.h"
#include "backend/codegen.h"
#include "backend/cuda_kernels.h"
#include "backend/kernel_cache.h"
#include "driver/compile.h"
#include "e2e/e2e_util.h"
#include "passes/cuda_emulation.h"
#include "passes/pipeline.h"

namespace tempo {
namespace {

namespace fs = std::filesystem;
using testing::source;

// Per process: the suite may run in several processes at once.
class CudaCodegen : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "tempo_cuda_codegen_test." + std::to_string(getpid());
    fs::remove_all(dir_);
    setenv("TEMPO_CACHE_DIR", dir_.c_str(), 1);
    setenv("TEMPO_CHECK_CUDA_KERNELS", "1", 1);
  }
  void TearDown() override {
    unsetenv("TEMPO_CACHE_DIR");
    unsetenv("TEMPO_CHECK_CUDA_KERNELS");
    fs::remove_all(dir_);
  }
  // The generated files of one kind in the cache.
  std::vector<std::string> cached(const std::string& extension) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(fs::path(dir_) / "kernels"))
      if (e.path().extension() == extension) {
        std::ifstream in(e.path());
        std::stringstream s;
        s << in.rdbuf();
        out.push_back(s.str());
      }
    return out;
  }
  std::string dir_;
};

// Row reductions (one thread block per row), elementwise clusters over broadcast inputs (one
// thread per element), and a double-precision cluster.
std::vector<RT> program(Context& ctx) {
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {5, 4});
  RT bias = source(ctx, {t}, {4}, 1);
  RT column = source(ctx, {t}, {5, 1}, 2);
  auto [m, arg] = (x * 2.0).floor().max_with_indices(1, false);
  RT ent = -(x.softmax(1) * x.log_softmax(1)).sum(1);
  RT y = ((x + bias) * column).maximum(x * 0.0).tanh() + 1.0;
  RT d = (x.cast(DType::Float64) * 0.5).exp().sqrt() + 2.0;
  return {ent.retain(), (m + 0.5).retain(), (arg.cast(DType::Float32) + 0.5).retain(), y.retain(),
          d.retain()};
}

// Rows longer than a block (each thread strides over several columns, eight warps reduce
// together) and more elements than a block has threads.
std::vector<RT> long_rows(Context& ctx) {
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {3, 300});
  RT ties = (x * 2.0).floor();
  auto [m, arg] = ties.max_with_indices(1, false);
  RT lse = x.log_softmax(1);
  RT y = (x * 0.5).sigmoid() - x.relu() * 0.25;
  return {lse.retain(), (arg.cast(DType::Float32) + m).retain(), y.retain()};
}

// Values of a type: normal floats with repeated values (ties for argmax) and NaN-free.
std::vector<uint8_t> random_values(DType d, int64_t n, std::mt19937& rng) {
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * ir::dtype_size(d));
  std::normal_distribution<double> normal;
  for (int64_t i = 0; i < n; ++i) {
    const double v = i % 3 == 0 ? std::floor(normal(rng) * 2.0) : normal(rng);
    switch (d) {
      case DType::Bool:
        bytes[i] = v > 0;
        break;
      case DType::Int32:
        reinterpret_cast<int32_t*>(bytes.data())[i] = static_cast<int32_t>(v * 10);
        break;
      case DType::Int64:
        reinterpret_cast<int64_t*>(bytes.data())[i] = static_cast<int64_t>(v * 10);
        break;
      case DType::Float32:
        reinterpret_cast<float*>(bytes.data())[i] = static_cast<float>(v);
        break;
      case DType::Float64:
        reinterpret_cast<double*>(bytes.data())[i] = v;
        break;
    }
  }
  return bytes;
}

double element(const std::vector<uint8_t>& bytes, DType d, int64_t i) {
  switch (d) {
    case DType::Bool:
      return bytes[i];
    case DType::Int32:
      return reinterpret_cast<const int32_t*>(bytes.data())[i];
    case DType::Int64:
      return static_cast<double>(reinterpret_cast<const int64_t*>(bytes.data())[i]);
    case DType::Float32:
      return reinterpret_cast<const float*>(bytes.data())[i];
    case DType::Float64:
      return reinterpret_cast<const double*>(bytes.data())[i];
  }
  return 0;
}

// Every cluster of the programs as its CUDA kernel, run by the emulation with the grid and
// blocks the backend launches it with, against its generated C++ loop on the same inputs
// (which the fusion tests check against LibTorch): same indexing, same reductions, the same
// first argmax, floats within 1e-5 (CUDA's expf and tanhf against the loops' polynomials, sums
// in another order).
TEST(CudaCodegenEmulated, KernelsMatchTheGeneratedLoops) {
  struct Kernel {
    std::string name;
    const ir::Graph* body;
    backend::RegionPlan::Step step;
    int64_t rows = 1, cols = 1;
  };
  std::vector<passes::Program> programs;
  for (const auto& build : {program, long_rows}) {
    Context ctx;
    build(ctx);
    passes::Program p(ctx.graph(), ctx.retained());
    PassOptions o;
    o.vectorize = false;
    passes::run_pipeline(p, o);
    programs.push_back(std::move(p));
  }
  std::vector<Kernel> kernels;
  std::vector<std::string> cpu, cuda;
  std::string launchers;
  for (const passes::Program& p : programs)
    for (const ir::OpNode& op : p.graph.ops()) {
      if (op.kind != ir::OpKind::Fused) continue;
      const ir::Graph& body = op.attrs.region->body;
      const backend::RegionPlan plan = backend::plan_region(*op.attrs.region, true);
      for (const backend::RegionPlan::Step& step : plan.steps) {
        if (!step.cluster()) continue;
        Kernel k{cat("k", kernels.size()), &body, step};
        bool concrete = true;
        for (size_t d = 0; d < step.shape.rank(); ++d) {
          concrete &= step.shape[d].is_const();
          if (concrete) (d < step.split ? k.rows : k.cols) *= step.shape[d].value();
        }
        ASSERT_TRUE(concrete) << "a cluster of symbolic shape";
        cpu.push_back(backend::emit_cluster(body, step, k.name));
        cuda.push_back(backend::emit_cluster(body, step, k.name, backend::Target::Cuda));
        std::string args;
        for (size_t i = 0; i < step.inputs.size(); ++i) {
          const auto& [id, o] = step.inputs[i];
          args += cat(", (const ", backend::c_type(body.op(id).outputs[o].dtype), "*)in[", i,
                      "]");
        }
        for (size_t i = 0; i < step.outputs.size(); ++i) {
          const auto& [id, o] = step.outputs[i];
          args +=
              cat(", (", backend::c_type(body.op(id).outputs[o].dtype), "*)out[", i, "]");
        }
        launchers += cat("extern \"C\" void run_", k.name,
                         "(int64_t rows, int64_t cols, const void* const* in, void* const* out, "
                         "unsigned blocks, unsigned threads) {\n  tempo_launch(blocks, threads, "
                         "[=] { ",
                         k.name, "(rows, cols", args, "); });\n}\n");
        kernels.push_back(std::move(k));
      }
    }
  ASSERT_GE(kernels.size(), 4u);
  auto loops = backend::KernelLibrary::load(backend::library_source(cpu));
  auto emulation = backend::KernelLibrary::load(
      testing::emulated(backend::library_source(cuda, backend::Target::Cuda)) + launchers);
  using Loop = void (*)(int64_t, int64_t, const void* const*, void* const*);
  using Launch = void (*)(int64_t, int64_t, const void* const*, void* const*, unsigned, unsigned);
  std::mt19937 rng(7);
  bool row_kernel = false, element_kernel = false;
  for (const Kernel& k : kernels) {
    const ir::Graph& body = *k.body;
    std::vector<std::vector<uint8_t>> inputs;
    std::vector<const void*> in;
    for (size_t i = 0; i < k.step.inputs.size(); ++i) {
      const auto& [id, o] = k.step.inputs[i];
      const backend::Access a = k.step.access[i];
      const int64_t n = a == backend::Access::Scalar ? 1
                        : a == backend::Access::Row  ? k.cols
                        : a == backend::Access::Column ? k.rows
                                                       : k.rows * k.cols;
      inputs.push_back(random_values(body.op(id).outputs[o].dtype, n, rng));
      in.push_back(inputs.back().data());
    }
    std::vector<std::vector<uint8_t>> want, got;
    std::vector<void*> want_ptrs, got_ptrs;
    for (const auto& [id, o] : k.step.outputs) {
      const ir::TensorType& type = body.op(id).outputs[o];
      const int64_t n = type.shape.same(k.step.shape) ? k.rows * k.cols : k.rows;
      want.emplace_back(static_cast<size_t>(n) * ir::dtype_size(type.dtype));
      got.emplace_back(want.back().size());
    }
    for (size_t i = 0; i < want.size(); ++i) {
      want_ptrs.push_back(want[i].data());
      got_ptrs.push_back(got[i].data());
    }
    reinterpret_cast<Loop>(loops->symbol(k.name))(k.rows, k.cols, in.data(), want_ptrs.data());
    const bool blocks = backend::row_blocks(body, k.step);
    (blocks ? row_kernel : element_kernel) = true;
    const int threads = backend::cuda_block_threads(blocks, k.cols);
    const int64_t grid = blocks ? k.rows : (k.rows * k.cols + threads - 1) / threads;
    reinterpret_cast<Launch>(emulation->symbol("run_" + k.name))(
        k.rows, k.cols, in.data(), got_ptrs.data(), static_cast<unsigned>(grid), threads);
    for (size_t i = 0; i < want.size(); ++i) {
      const auto& [id, o] = k.step.outputs[i];
      const DType d = body.op(id).outputs[o].dtype;
      const int64_t n = static_cast<int64_t>(want[i].size() / ir::dtype_size(d));
      for (int64_t j = 0; j < n; ++j) {
        const double a = element(got[i], d, j), b = element(want[i], d, j);
        const double tol = ir::is_floating(d) ? 1e-5 * (1 + std::abs(b)) : 0;
        ASSERT_TRUE(std::abs(a - b) <= tol || (a != a && b != b))
            << k.name << " output " << i << " element " << j << ": CUDA " << a << ", C++ " << b
            << " (" << k.rows << " x " << k.cols << ")\n"
            << cuda[&k - kernels.data()];
      }
    }
  }
  EXPECT_TRUE(row_kernel && element_kernel) << "both kinds of kernel";
}

#ifdef TEMPO_CUDA

TEST_F(CudaCodegen, KernelsOfAProgramCompileWithNvrtc) {
  Context ctx;
  std::vector<RT> outs = program(ctx);
  CompileOptions o;
  o.passes.vectorize = false;
  o.device = "cpu";  // the C++ loops run, and every CUDA kernel is compiled to PTX beside them
  Executable exe = compile(ctx, {{Expr::bound("T"), 2}}, o);
  exe.run();
  const std::vector<std::string> sources = cached(".cu"), ptx = cached(".ptx");
  ASSERT_EQ(sources.size(), 1u);
  ASSERT_EQ(ptx.size(), 1u);
  // Both forms of kernel, each in the PTX.
  EXPECT_NE(sources[0].find("tempo_block_argmax("), std::string::npos);
  EXPECT_NE(sources[0].find("tempo_block_sum("), std::string::npos);
  EXPECT_NE(sources[0].find("const int64_t r = i / cols"), std::string::npos);
  int kernels = 0;
  for (size_t at = 0; (at = sources[0].find("__global__", at)) != std::string::npos; ++at)
    ++kernels;
  int entries = 0;
  for (size_t at = 0; (at = ptx[0].find(".entry tempo_region", at)) != std::string::npos; ++at)
    ++entries;
  EXPECT_GE(kernels, 3);
  EXPECT_EQ(entries, kernels);
  // Compiled once: the same program again finds the image in the cache.
  EXPECT_TRUE(backend::compile_cuda(sources[0], "compute_80").from_cache);
}

TEST_F(CudaCodegen, InvalidKernelIsAnErrorWithTheCompilerLog) {
  const std::string bad = backend::library_source(
      {"extern \"C\" __global__ void k(int64_t n, float* out) { out[0] = undefined_name; }"},
      backend::Target::Cuda);
  try {
    backend::compile_cuda(bad, "compute_80");
    FAIL() << "an invalid kernel compiled";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("NVRTC"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("undefined_name"), std::string::npos) << e.what();
  }
}

// A truncated cache entry is compiled again, not handed to the driver.
TEST_F(CudaCodegen, CorruptedImageIsRebuiltNotLoaded) {
  const std::string src = backend::library_source(
      {"extern \"C\" __global__ void k(int64_t n, float* out) { out[0] = 1.0f; }"},
      backend::Target::Cuda);
  const backend::CudaImage first = backend::compile_cuda(src, "compute_80");
  {
    std::ofstream out(first.path, std::ios::binary | std::ios::trunc);
    out << first.data.substr(0, 10);
  }
  const backend::CudaImage again = backend::compile_cuda(src, "compute_80");
  EXPECT_FALSE(again.from_cache);
  EXPECT_EQ(again.data, first.data);
  const backend::CudaImage cached = backend::compile_cuda(src, "compute_80");
  EXPECT_TRUE(cached.from_cache);
  EXPECT_EQ(cached.data, first.data);
}

TEST_F(CudaCodegen, CubinForAnArchitecture) {
  const std::string src = backend::library_source(
      {"extern \"C\" __global__ void k(int64_t n, float* out) { out[0] = tempo_exp(1.0f); }"},
      backend::Target::Cuda);
  const backend::CudaImage image = backend::compile_cuda(src, "sm_90");
  EXPECT_FALSE(image.from_cache);
  EXPECT_EQ(image.data.substr(1, 3), "ELF");  // a cubin is an ELF image
}

#else

TEST_F(CudaCodegen, CheckingKernelsNeedsACudaBuild) {
  Context ctx;
  program(ctx);
  try {
    compile(ctx, {{Expr::bound("T"), 2}});
    FAIL() << "the check ran without CUDA";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("-DTEMPO_CUDA=ON"), std::string::npos) << e.what();
  }
}

#endif

}  // namespace
}  // namespace tempo
