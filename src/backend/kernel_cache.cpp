#include "backend/kernel_cache.h"

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "util/env.h"
#include "util/hash.h"

namespace tempo::backend {

namespace {

namespace fs = std::filesystem;

// Bumped whenever the generated code's calling convention changes.
constexpr const char* kFormat = "tempo-kernels-1";

std::string compiler() {
  const char* cxx = std::getenv("TEMPO_CXX");
  return cxx && *cxx ? cxx : "c++";
}

// IEEE results as LibTorch computes them: no -ffast-math. -fno-math-errno lets sqrt inline and
// -fno-trapping-math lets selects vectorize (no program here enables floating-point traps),
// -fopenmp-simd honours the generated `omp simd` reductions (no OpenMP runtime). The
// code is tuned for this CPU (-march=native), so the CPU's features are part of the cache key.
// A sanitizer build (TEMPO_SANITIZE) instruments the generated kernels as it does the rest (the
// flags come with a leading space): the library then resolves the sanitizers' runtime from the
// program that loads it.
#ifndef TEMPO_KERNEL_SANITIZE_FLAGS
#define TEMPO_KERNEL_SANITIZE_FLAGS ""
#endif
constexpr const char* kFlags =
    "-std=c++17 -O3 -march=native -fno-math-errno -fno-trapping-math -fopenmp-simd -fPIC "
    "-shared" TEMPO_KERNEL_SANITIZE_FLAGS;

// The CPU's model and feature flags (/proc/cpuinfo), so that a cache shared between machines
// never hands one machine code built for another.
std::string cpu_signature() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, sig;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0) sig += line + "\n";
    if (line.empty() && !sig.empty()) break;  // the first processor is enough
  }
  return sig;
}

// The library's own record of its key, checked on load.
std::string key_function(const std::string& key) {
  return "extern \"C\" const char* tempo_kernel_key() { return \"" + key + "\"; }\n";
}

void* open_checked(const std::string& path, const std::string& key) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return nullptr;
  using KeyFn = const char* (*)();
  auto fn = reinterpret_cast<KeyFn>(dlsym(h, "tempo_kernel_key"));
  if (!fn || key != fn()) {
    dlclose(h);
    return nullptr;
  }
  return h;
}

}  // namespace

std::string kernel_cache_key(const std::string& text) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a(text)));
  return buf;
}

std::string kernel_cache_dir() { return cache_dir(); }

std::string kernel_compile_command() { return compiler() + " " + kFlags; }

std::shared_ptr<KernelLibrary> KernelLibrary::load(const std::string& source) {
  const std::string command = kernel_compile_command();
  static const std::string cpu = cpu_signature();
  const std::string key =
      kernel_cache_key(std::string(kFormat) + "\n" + command + "\n" + cpu + source);
  const fs::path dir = fs::path(kernel_cache_dir()) / "kernels";
  const fs::path so = dir / ("k" + key + ".so");
  std::shared_ptr<KernelLibrary> lib(new KernelLibrary());
  lib->path_ = so.string();

  if (fs::exists(so)) {
    if ((lib->handle_ = open_checked(so.string(), key))) {
      lib->from_cache_ = true;
      return lib;
    }
    std::cerr << "[tempo] kernel cache entry " << so.string()
              << " is corrupted or stale; rebuilding it\n";
    std::error_code ec;
    fs::remove(so, ec);
  }

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("cannot create the kernel cache " + dir.string() + ": " +
                             ec.message());
  // Unique temporary names: several processes may build the same library at once; the rename
  // that publishes it is atomic.
  const std::string tmp = (dir / ("k" + key + "." + std::to_string(getpid()))).string();
  {
    std::ofstream out(tmp + ".cpp");
    out << source << "\n" << key_function(key);
    if (!out) throw std::runtime_error("cannot write " + tmp + ".cpp");
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::string cmd =
      command + " -o '" + tmp + ".so' '" + tmp + ".cpp' > '" + tmp + ".log' 2>&1";
  const int rc = std::system(cmd.c_str());
  lib->compile_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rc != 0) {
    std::ifstream log(tmp + ".log");
    std::stringstream msg;
    msg << log.rdbuf();
    fs::remove(tmp + ".so", ec);
    fs::remove(tmp + ".log", ec);
    throw std::runtime_error("the kernel compiler failed (" + cmd + "):\n" + msg.str() +
                             "\nsource kept in " + tmp + ".cpp");
  }
  fs::remove(tmp + ".log", ec);
  fs::rename(tmp + ".so", so, ec);
  if (ec) throw std::runtime_error("cannot publish " + so.string() + ": " + ec.message());
  fs::rename(tmp + ".cpp", dir / ("k" + key + ".cpp"), ec);  // kept for reading only
  if (!(lib->handle_ = open_checked(so.string(), key)))
    throw std::runtime_error("cannot load the kernels just built in " + so.string() + ": " +
                             (dlerror() ? dlerror() : "key mismatch"));
  return lib;
}

KernelLibrary::~KernelLibrary() {
  if (handle_) dlclose(handle_);
}

void* KernelLibrary::symbol(const std::string& name) const {
  return handle_ ? dlsym(handle_, name.c_str()) : nullptr;
}

}  // namespace tempo::backend
