// What every fuzz target shares: bad input may only end in a UserError; anything else (another
// exception, a sanitizer report, a broken promise of the parser) stops the fuzzer with the input.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "util/error.h"

namespace tempo::fuzz {

// Runs f(); a UserError is the expected answer to malformed input.
template <typename F>
void expect_user_errors_only(F&& f) {
  try {
    f();
  } catch (const UserError&) {
  }
}

// A property of a successful parse that does not hold: report it and abort (a finding).
inline void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz check failed: %s\n", what);
  std::abort();
}

// The input split at each occurrence of `sep` (so pieces may hold any other bytes).
inline std::vector<std::string> split(const std::string& in, const std::string& sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t next = in.find(sep, pos);
    if (next == std::string::npos) break;
    out.push_back(in.substr(pos, next - pos));
    pos = next + sep.size();
  }
  out.push_back(in.substr(pos));
  return out;
}

}  // namespace tempo::fuzz
