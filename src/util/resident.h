// The process's resident memory, read now or sampled on a thread while a long run goes on: how
// soak tests and benchmarks check that memory stays flat after warm-up.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

namespace tempo {

// This process's address space and resident memory in bytes (/proc/self/statm); 0 where it
// cannot be read.
struct MemoryUse {
  int64_t address_space = 0, resident = 0;
};
inline MemoryUse memory_use() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) pages = resident = 0;
    std::fclose(f);
  }
  const int64_t page = ::sysconf(_SC_PAGESIZE);
  return {pages * page, resident * page};
}
inline int64_t resident_bytes() { return memory_use().resident; }

// Whether resident memory means what the program holds: AddressSanitizer keeps freed blocks in
// a quarantine that fills over a long run, so under it a flat program's memory grows.
#ifdef __SANITIZE_ADDRESS__
inline constexpr bool kResidentMemoryIsTheProgram = false;
#else
inline constexpr bool kResidentMemoryIsTheProgram = true;
#endif

// Samples resident_bytes() every `period` from construction until stop() (or destruction).
class ResidentSampler {
 public:
  explicit ResidentSampler(std::chrono::milliseconds period = std::chrono::milliseconds(20))
      : thread_([this, period] {
          while (!stop_.load()) {
            record();
            std::this_thread::sleep_for(period);
          }
        }) {}
  ~ResidentSampler() { stop(); }
  ResidentSampler(const ResidentSampler&) = delete;
  ResidentSampler& operator=(const ResidentSampler&) = delete;

  // Stops sampling (after one last sample) and returns the samples in order.
  const std::vector<int64_t>& stop() {
    if (thread_.joinable()) {
      stop_ = true;
      thread_.join();
      record();
    }
    return samples_;
  }

  // The largest sample within [from, to) of the run, as fractions of the samples (e.g. 0.2 to
  // 0.4: after warm-up); 0 without samples there.
  int64_t peak_between(double from, double to) const {
    const size_t n = samples_.size();
    const size_t a = static_cast<size_t>(from * static_cast<double>(n));
    const size_t b = std::min(n, static_cast<size_t>(to * static_cast<double>(n)));
    int64_t peak = 0;
    for (size_t k = a; k < b; ++k) peak = std::max(peak, samples_[k]);
    return peak;
  }
  // How much the peak of the last fifth exceeds the peak after warm-up (the second fifth): a
  // leak's growth, about 0 where memory is flat.
  int64_t growth_after_warmup() const { return peak_between(0.8, 1.0) - peak_between(0.2, 0.4); }

 private:
  void record() { samples_.push_back(resident_bytes()); }  // by the thread, then after join

  std::atomic<bool> stop_{false};
  std::vector<int64_t> samples_;
  std::thread thread_;  // last: it starts once the members above exist
};

}  // namespace tempo
