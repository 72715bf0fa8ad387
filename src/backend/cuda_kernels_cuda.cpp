#include "backend/cuda_kernels.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "backend/kernel_cache.h"
#include "util/error.h"

namespace tempo::backend {

namespace {

namespace fs = std::filesystem;

// Bumped whenever the generated kernels' calling convention changes.
constexpr const char* kFormat = "tempo-cuda-kernels-1";

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return cat(major, ".", minor);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string nvrtc_compile(const std::string& source, const std::string& arch) {
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, source.c_str(), "tempo_kernels.cu", 0, nullptr, nullptr) !=
      NVRTC_SUCCESS)
    throw std::runtime_error("NVRTC cannot create a program");
  const std::string arch_flag = "--gpu-architecture=" + arch;
  // IEEE results as LibTorch's CUDA kernels compute them: no fast math, no flushed denormals.
  const char* flags[] = {arch_flag.c_str(), "--std=c++17",      "--ftz=false",
                         "--prec-div=true", "--prec-sqrt=true", "--fmad=true"};
  const nvrtcResult rc = nvrtcCompileProgram(prog, std::size(flags), flags);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size) nvrtcGetProgramLog(prog, log.data());
  std::string image;
  if (rc == NVRTC_SUCCESS) {
    const bool cubin = arch.rfind("sm_", 0) == 0;
    size_t n = 0;
    (cubin ? nvrtcGetCUBINSize : nvrtcGetPTXSize)(prog, &n);
    image.resize(n);
    (cubin ? nvrtcGetCUBIN : nvrtcGetPTX)(prog, image.data());
  }
  nvrtcDestroyProgram(&prog);
  if (rc != NVRTC_SUCCESS)
    throw std::runtime_error(cat("NVRTC failed to compile the generated CUDA kernels (", arch,
                                 "): ", nvrtcGetErrorString(rc), "\n", log));
  return image;
}

// The driver API, opened on first use.
struct Driver {
  CUresult (*init)(unsigned);
  CUresult (*load)(CUmodule*, const void*);
  CUresult (*unload)(CUmodule);
  CUresult (*get_function)(CUfunction*, CUmodule, const char*);
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, CUstream, void**, void**);
  CUresult (*error_string)(CUresult, const char**);

  static const Driver& get() {
    static const Driver d = open();
    return d;
  }
  void check(CUresult rc, const char* what) const {
    if (rc == CUDA_SUCCESS) return;
    const char* msg = nullptr;
    error_string(rc, &msg);
    throw std::runtime_error(cat("CUDA driver: ", what, " failed: ", msg ? msg : "unknown error"));
  }

 private:
  static Driver open() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) throw UserError("generated CUDA kernels need the NVIDIA driver (libcuda.so.1)");
    auto sym = [&](const char* name) {
      void* f = dlsym(lib, name);
      if (!f) throw std::runtime_error(cat("libcuda.so.1 lacks ", name));
      return f;
    };
    Driver d;
    d.init = reinterpret_cast<decltype(d.init)>(sym("cuInit"));
    d.load = reinterpret_cast<decltype(d.load)>(sym("cuModuleLoadData"));
    d.unload = reinterpret_cast<decltype(d.unload)>(sym("cuModuleUnload"));
    d.get_function = reinterpret_cast<decltype(d.get_function)>(sym("cuModuleGetFunction"));
    d.launch = reinterpret_cast<decltype(d.launch)>(sym("cuLaunchKernel"));
    d.error_string = reinterpret_cast<decltype(d.error_string)>(sym("cuGetErrorString"));
    d.check(d.init(0), "cuInit");
    return d;
  }
};

}  // namespace

CudaImage compile_cuda(const std::string& source, const std::string& arch) {
  const std::string key =
      kernel_cache_key(cat(kFormat, "\n", nvrtc_version(), "\n", arch, "\n", source));
  const bool cubin = arch.rfind("sm_", 0) == 0;
  const fs::path dir = fs::path(kernel_cache_dir()) / "kernels";
  const fs::path file = dir / ("c" + key + (cubin ? ".cubin" : ".ptx"));
  CudaImage image;
  image.path = file.string();
  // An entry starts with its key and the image's size, so that a corrupted, truncated or stale
  // one is rebuilt rather than loaded (as the CPU kernels' entries identify themselves).
  std::error_code ec;
  if (fs::exists(file, ec)) {
    const std::string entry = read_file(file);
    const size_t eol = entry.find('\n');
    const std::string header = eol == std::string::npos ? "" : entry.substr(0, eol);
    if (header == cat(key, " ", entry.size() - eol - 1)) {
      image.data = entry.substr(eol + 1);
      image.from_cache = true;
      return image;
    }
    fs::remove(file, ec);
  }
  const auto t0 = std::chrono::steady_clock::now();
  image.data = nvrtc_compile(source, arch);
  image.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Published by an atomic rename, as the CPU kernels: processes may compile the same source.
  fs::create_directories(dir, ec);
  const fs::path tmp = dir / cat("c", key, ".", getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << key << " " << image.data.size() << "\n" << image.data;
  }
  fs::rename(tmp, file, ec);
  if (ec) fs::remove(tmp, ec);  // the cache is an optimization: the image is in hand
  {
    std::ofstream src(dir / ("c" + key + ".cu"));  // kept for reading only
    src << source;
  }
  return image;
}

std::shared_ptr<CudaModule> CudaModule::load(const CudaImage& image) {
  const Driver& d = Driver::get();
  cudaFree(nullptr);  // the runtime's primary context is current on this thread
  std::shared_ptr<CudaModule> m(new CudaModule());
  CUmodule module;
  d.check(d.load(&module, image.data.c_str()), "loading the generated kernels");
  m->module_ = module;
  return m;
}

CudaModule::~CudaModule() {
  if (module_) Driver::get().unload(static_cast<CUmodule>(module_));
}

void* CudaModule::function(const std::string& name) const {
  const Driver& d = Driver::get();
  CUfunction f;
  d.check(d.get_function(&f, static_cast<CUmodule>(module_), name.c_str()),
          cat("finding kernel ", name).c_str());
  return f;
}

void CudaModule::launch(void* fn, unsigned blocks, unsigned threads, void** args, void* stream) {
  const Driver& d = Driver::get();
  d.check(d.launch(static_cast<CUfunction>(fn), blocks, 1, 1, threads, 1, 1, 0,
                   static_cast<CUstream>(stream), args, nullptr),
          "launching a generated kernel");
}

std::string cuda_device_arch() {
  int device = 0, major = 0, minor = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  return cat("sm_", major, minor);
}

}  // namespace tempo::backend
