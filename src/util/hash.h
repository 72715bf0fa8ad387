// A stable 64-bit hash of bytes (FNV-1a): names on-disk cache entries by their content, the same
// in every process and build (std::hash promises neither).
#pragma once

#include <cstdint>
#include <string>

namespace tempo {

// `basis` other than FNV's own offset basis gives an independent hash of the same bytes.
inline uint64_t fnv1a(const std::string& s, uint64_t basis = 1469598103934665603ULL) {
  uint64_t h = basis;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace tempo
