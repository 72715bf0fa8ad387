// Generated CUDA kernels (backend/codegen.h, Target::Cuda): compiled at run time by NVRTC, cached
// on disk beside the CPU kernels (kernel_cache.h) by a hash of the source, the architecture and
// NVRTC's version, and loaded through the CUDA driver API. Only a CUDA build (TEMPO_CUDA)
// defines these; compiling needs no GPU, loading and launching do. The driver library
// (libcuda.so.1) is opened on first use, so CUDA builds run on machines without one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace tempo::backend {

struct CudaImage {
  std::string data;  // PTX text (arch compute_XY) or a cubin (arch sm_XY)
  bool from_cache = false;
  double compile_seconds = 0;
  std::string path;  // the cache entry
};

// Compiles CUDA C++ for `arch` ("compute_80": PTX; "sm_90": a cubin). Throws
// std::runtime_error with NVRTC's log if the source does not compile.
CudaImage compile_cuda(const std::string& source, const std::string& arch);

// A loaded image on the current device.
class CudaModule {
 public:
  static std::shared_ptr<CudaModule> load(const CudaImage& image);
  ~CudaModule();
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;

  // The kernel `name` (a CUfunction); throws if the image lacks it.
  void* function(const std::string& name) const;
  // Launches `fn` with `blocks` x `threads` on `stream` (a cudaStream_t); `args` points at each
  // kernel argument in order.
  static void launch(void* fn, unsigned blocks, unsigned threads, void** args, void* stream);

 private:
  CudaModule() = default;
  void* module_ = nullptr;
};

// "sm_XY" of the current device.
std::string cuda_device_arch();

}  // namespace tempo::backend
