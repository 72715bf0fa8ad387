// Tempo's two kinds of error (see ARCHITECTURE.md):
//  - UserError: the program or input is wrong; the message says what and, where known, which RT
//    and which line of user code.
//  - InternalError: a bug in Tempo; the message carries Tempo's own file and line.
#pragma once

#include <source_location>
#include <sstream>
#include <stdexcept>
#include <string>

namespace tempo {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class UserError : public Error {
 public:
  using Error::Error;
};

class InternalError : public Error {
 public:
  using Error::Error;
};

// "file.cpp:42" for a captured source location (directory stripped).
inline std::string where(const std::source_location& loc) {
  std::string f = loc.file_name();
  auto slash = f.find_last_of('/');
  if (slash != std::string::npos) f = f.substr(slash + 1);
  return f + ":" + std::to_string(loc.line());
}

// Concatenates streamable pieces into a string.
template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

[[noreturn]] inline void internal_error(const std::string& msg,
                                        std::source_location loc = std::source_location::current()) {
  throw InternalError("internal error at " + where(loc) + ": " + msg);
}

}  // namespace tempo

// Checks an invariant of Tempo itself; failure is an InternalError naming Tempo's source line.
#define TEMPO_ASSERT(cond, ...)                                                         \
  do {                                                                                  \
    if (!(cond)) ::tempo::internal_error(::tempo::cat("assertion `" #cond "` failed. ", \
                                                      ##__VA_ARGS__));                  \
  } while (0)
