// Option values of the `tempo` subcommands: numbers with errors that name the flag.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "util/error.h"

namespace tempo::cli {

inline int64_t parse_int(const std::string& flag, const std::string& s) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end || errno) throw UserError(cat(flag, " expects an integer, got '", s, "'"));
  return v;
}

inline double parse_double(const std::string& flag, const std::string& s) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end || errno || !std::isfinite(v))
    throw UserError(cat(flag, " expects a number, got '", s, "'"));
  return v;
}

}  // namespace tempo::cli
