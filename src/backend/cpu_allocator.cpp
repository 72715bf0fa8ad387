#include "backend/cpu_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "util/error.h"
#include "util/huge_pages.h"

namespace tempo::backend {

namespace {

// LibTorch aligns CPU data to 64 bytes; a header of that size in front of each block keeps the
// alignment and records the block's size class for the deleter.
constexpr size_t kAlignment = 64;
constexpr int64_t kDefaultLimitMiB = 512;

// Eight classes per power of two, so a block wastes at most 1/8 of its size, and sizes that
// differ slightly (a batch of 16 vs 17 rows) still share blocks.
size_t size_class(size_t n) {
  if (n <= kAlignment) return kAlignment;
  int top = 63 - __builtin_clzll(n);
  size_t step = std::max<size_t>(kAlignment, size_t{1} << (top - 3));
  return (n + step - 1) & ~(step - 1);
}

class CachingCpuAllocator final : public c10::Allocator {
 public:
  explicit CachingCpuAllocator(int64_t limit) : limit_(limit) {}

// LibTorch 2 made allocate non-const and asks allocators to copy their own blocks.
#if TORCH_VERSION_MAJOR >= 2
  c10::DataPtr allocate(size_t n) override {
#else
  c10::DataPtr allocate(size_t n) const override {
#endif
    if (n == 0) return {nullptr, nullptr, &release, c10::Device(c10::DeviceType::CPU)};
    void* data = const_cast<CachingCpuAllocator*>(this)->take(size_class(n));
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
#if TORCH_VERSION_MAJOR >= 2
  void copy_data(void* dest, const void* src, size_t n) const override {
    default_copy_data(dest, src, n);
  }
#endif

  CpuAllocatorStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {allocations_, hits_, cached_, limit_, true, in_use_, peak_in_use_};
  }

  void reset_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    peak_in_use_ = in_use_;
  }

  void empty() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [cls, blocks] : free_)
      for (void* base : blocks) std::free(base);
    free_.clear();
    cached_ = 0;
  }

  static CachingCpuAllocator* instance;

 private:
  void* take(size_t cls) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++allocations_;
      in_use_ += static_cast<int64_t>(cls);
      peak_in_use_ = std::max(peak_in_use_, in_use_);
      auto it = free_.find(cls);
      if (it != free_.end() && !it->second.empty()) {
        void* base = it->second.back();
        it->second.pop_back();
        cached_ -= static_cast<int64_t>(cls);
        ++hits_;
        return static_cast<char*>(base) + kAlignment;
      }
    }
    void* base = std::aligned_alloc(kAlignment, cls + kAlignment);
    if (!base) {
      empty();  // the cache may hold what this request needs
      base = std::aligned_alloc(kAlignment, cls + kAlignment);
    }
    TORCH_CHECK(base != nullptr, "Tempo's CPU allocator: out of memory allocating ", cls,
                " bytes");
    advise_huge_pages(base, cls + kAlignment);  // before the header below writes to it
    *static_cast<size_t*>(base) = cls;
    return static_cast<char*>(base) + kAlignment;
  }

  void give_back(void* data) {
    void* base = static_cast<char*>(data) - kAlignment;
    size_t cls = *static_cast<size_t*>(base);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      in_use_ -= static_cast<int64_t>(cls);
      if (cached_ + static_cast<int64_t>(cls) <= limit_) {
        free_[cls].push_back(base);
        cached_ += static_cast<int64_t>(cls);
        return;
      }
    }
    std::free(base);
  }

  static void release(void* data) {
    if (data) instance->give_back(data);
  }

  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // size class -> block bases
  int64_t cached_ = 0, allocations_ = 0, hits_ = 0, in_use_ = 0, peak_in_use_ = 0;
  const int64_t limit_;
};

CachingCpuAllocator* CachingCpuAllocator::instance = nullptr;

int64_t limit_from_env() {
  const char* v = std::getenv("TEMPO_CPU_CACHE_MB");
  if (!v || !*v) return kDefaultLimitMiB << 20;
  char* end = nullptr;
  long long mib = std::strtoll(v, &end, 10);
  if (!end || *end != '\0' || mib < 0)
    throw UserError(
        cat("TEMPO_CPU_CACHE_MB must be a whole number of MiB (0: no cache), got \"", v, "\""));
  return static_cast<int64_t>(mib) << 20;
}

}  // namespace

void install_caching_cpu_allocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    int64_t limit = limit_from_env();
    if (limit == 0) return;
    // Never destroyed: tensors may outlive every other object, including at exit.
    CachingCpuAllocator::instance = new CachingCpuAllocator(limit);
    c10::SetCPUAllocator(CachingCpuAllocator::instance, /*priority=*/1);
  });
}

CpuAllocatorStats cpu_allocator_stats() {
  return CachingCpuAllocator::instance ? CachingCpuAllocator::instance->stats()
                                       : CpuAllocatorStats{};
}

void reset_cpu_peak() {
  if (CachingCpuAllocator::instance) CachingCpuAllocator::instance->reset_peak();
}

}  // namespace tempo::backend
