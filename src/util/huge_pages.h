// Transparent huge pages for large host buffers. Where the kernel backs memory with 2 MiB pages
// only on request (THP in "madvise" mode, the default of Debian's and Ubuntu's kernels), a matrix
// streamed from memory at 40 GB/s crosses a 4 KiB page every 100 ns, and each crossing costs a
// TLB walk and stops the hardware prefetcher, which does not cross pages. From 2 MiB pages the
// decoder's weights kernel took 7-12% less time, float32 decoding at batch 1 3-10% (bench/README,
// "Huge pages").
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "util/env.h"

namespace tempo {

constexpr size_t kHugePageBytes = size_t{2} << 20;

// Asks the kernel for 2 MiB pages over the whole 2 MiB pages inside [p, p + bytes). Call it
// before the memory is first written: a huge page's range that already holds a small page keeps
// small ones. A hint: nothing changes where the kernel does not take it, the range holds no
// whole huge page, or TEMPO_NO_HUGE_PAGES=1 (for comparisons).
inline void advise_huge_pages(void* p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  static const bool off = env_flag("TEMPO_NO_HUGE_PAGES");
  if (off) return;
  const uintptr_t first = reinterpret_cast<uintptr_t>(p);
  const uintptr_t begin = (first + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  const uintptr_t end = (first + bytes) & ~(kHugePageBytes - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p, (void)bytes;
#endif
}

// The kernel's transparent-huge-page mode: "always", "madvise" or "never"; "" where unknown.
inline std::string huge_pages_mode() {
  std::string mode;
  if (FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
    char line[128] = {};
    if (std::fgets(line, sizeof line, f)) {
      const char* open = std::strchr(line, '[');
      const char* close = open ? std::strchr(open, ']') : nullptr;
      if (close) mode.assign(open + 1, close);
    }
    std::fclose(f);
  }
  return mode;
}

// The bytes of huge pages that back the mapping holding p (its AnonHugePages in
// /proc/self/smaps); -1 where they cannot be read.
inline int64_t huge_page_bytes_at(const void* p) {
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  const auto address = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  int64_t bytes = -1;
  char line[512];
  while (bytes < 0 && std::fgets(line, sizeof line, f)) {
    unsigned long begin = 0, end = 0;
    long kib = 0;
    if (std::sscanf(line, "%lx-%lx ", &begin, &end) == 2)  // a mapping's first line
      inside = begin <= address && address < end;
    else if (inside && std::sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
      bytes = int64_t{kib} << 10;
  }
  std::fclose(f);
  return bytes;
}

}  // namespace tempo
