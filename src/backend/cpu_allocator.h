// A caching allocator for LibTorch's CPU tensors. A compiled program allocates the same sizes
// at every step of its loops; glibc's malloc pays for each of them (bin searches, consolidation,
// and for large blocks an mmap plus page faults on every first touch). This allocator keeps freed
// blocks in per-size-class free lists and hands them out again.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tempo::backend {

struct CpuAllocatorStats {
  int64_t allocations = 0;  // requests served
  int64_t cache_hits = 0;   // requests served from a free list
  int64_t cached_bytes = 0;  // bytes held in free lists now
  int64_t limit_bytes = 0;
  bool installed = false;
  int64_t in_use_bytes = 0;  // bytes of live tensors (rounded up to their size class)
  int64_t peak_in_use_bytes = 0;  // the most in use since install or reset_cpu_peak()
};

// Makes the caching allocator LibTorch's CPU allocator (once per process; later calls do
// nothing). Free lists hold at most $TEMPO_CPU_CACHE_MB MiB (default 512); 0 leaves LibTorch's
// own allocator in place. Tensors allocated before keep their own deleters, so this is safe at
// any time.
void install_caching_cpu_allocator();

CpuAllocatorStats cpu_allocator_stats();
// Starts a new peak: peak_in_use_bytes becomes in_use_bytes (benchmarks measure one run each).
void reset_cpu_peak();

}  // namespace tempo::backend
