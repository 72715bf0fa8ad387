// Generated CUDA kernels, compiled by NVRTC without a GPU: the clusters of real programs (row
// reductions with argmax, softmax, broadcasts of every access kind, double precision) compile,
// and a kernel that does not compile is an error with the compiler's log.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "api/tempo.h"
#include "backend/codegen.h"
#include "backend/cuda_kernels.h"
#include "e2e/e2e_util.h"

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

#ifdef TEMPO_CUDA

TEST_F(CudaCodegen, KernelsOfAProgramCompileWithNvrtc) {
  Context ctx;
  std::vector<RT> outs = program(ctx);
  CompileOptions o;
  o.passes.vectorize = false;
  Executable exe = ctx.compile({{Expr::bound("T"), 2}}, o);
  exe.run();  // on the CPU, with the generated C++ loops
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
    ctx.compile({{Expr::bound("T"), 2}});
    FAIL() << "the check ran without CUDA";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("-DTEMPO_CUDA=ON"), std::string::npos) << e.what();
  }
}

#endif

}  // namespace
}  // namespace tempo
