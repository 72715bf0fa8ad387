// A stable 64-bit hash of bytes (FNV-1a): names on-disk cache entries by their content, the same
// in every process and build (std::hash promises neither).
#pragma once

#include <cstdint>
#include <string>

namespace tempo {

inline uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace tempo
