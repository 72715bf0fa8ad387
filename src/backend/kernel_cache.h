// Generated C++ compiled by the system compiler into a shared object and loaded with dlopen
// (the approach of PyTorch Inductor's CPU backend). Libraries are cached on disk by a hash of the
// source, the compiler command and a format version, so that running the same program again
// does not compile again. A cached library is loaded only if it identifies itself with the
// expected key; a corrupted, truncated or stale entry is removed and rebuilt.
#pragma once

#include <memory>
#include <string>

namespace tempo::backend {

class KernelLibrary {
 public:
  // Loads the library of `source` from the cache, compiling it first if needed. Throws
  // std::runtime_error if the compiler fails (with its output).
  static std::shared_ptr<KernelLibrary> load(const std::string& source);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  void* symbol(const std::string& name) const;  // null if absent
  bool from_cache() const { return from_cache_; }
  double compile_seconds() const { return compile_seconds_; }
  const std::string& path() const { return path_; }

 private:
  KernelLibrary() = default;
  void* handle_ = nullptr;
  bool from_cache_ = false;
  double compile_seconds_ = 0;
  std::string path_;
};

// The compiler and flags a library is built with ($TEMPO_CXX, else c++), without the files.
std::string kernel_compile_command();

// The folder of the on-disk caches (util/env.h: cache_dir()); kernels go in its kernels/.
std::string kernel_cache_dir();

// The name of the cache entry of `text` (a source and all that decides what it compiles to):
// 16 hex digits of a stable hash, the same in every process.
std::string kernel_cache_key(const std::string& text);

}  // namespace tempo::backend
