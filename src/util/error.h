// Tempo's two kinds of error (see ARCHITECTURE.md):
//  - UserError: the program or input is wrong; the message says what and, where known, which RT
//    and which line of user code.
//  - InternalError: a bug in Tempo; the message carries Tempo's own file and line.
#pragma once

#include <cstdint>
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

// A line of user code: where an RT was created. C++ callers capture it as a default argument,
// `Loc loc = Loc::current()`. A frontend in another language (the Python bindings) names its
// user's line with a FrontendLocation while it calls the api; current() returns that line then.
struct SourceLoc {
  const char* file = "";  // static storage: a literal, or a name the frontend keeps
  uint32_t line = 0;      // 0: unknown
  static SourceLoc current(std::source_location s = std::source_location::current());
};

// While alive, SourceLoc::current() on this thread returns `loc` (guards nest).
class FrontendLocation {
 public:
  explicit FrontendLocation(SourceLoc loc) : saved_(slot()) { slot() = loc; }
  ~FrontendLocation() { slot() = saved_; }
  FrontendLocation(const FrontendLocation&) = delete;
  FrontendLocation& operator=(const FrontendLocation&) = delete;
  static SourceLoc& slot() {
    thread_local SourceLoc loc;
    return loc;
  }

 private:
  SourceLoc saved_;
};

inline SourceLoc SourceLoc::current(std::source_location s) {
  const SourceLoc& frontend = FrontendLocation::slot();
  if (frontend.line) return frontend;
  return {s.file_name(), static_cast<uint32_t>(s.line())};
}

// "file.cpp:42" (directory stripped).
inline std::string where(const char* file, uint32_t line) {
  std::string f = file;
  auto slash = f.find_last_of('/');
  if (slash != std::string::npos) f = f.substr(slash + 1);
  return f + ":" + std::to_string(line);
}
inline std::string where(const SourceLoc& loc) {
  return where(loc.file, loc.line);
}

// Concatenates streamable pieces into a string.
template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

[[noreturn]] inline void internal_error(
    const std::string& msg, std::source_location loc = std::source_location::current()) {
  throw InternalError("internal error at " + where(loc.file_name(), loc.line()) + ": " + msg);
}

}  // namespace tempo

// Checks an invariant of Tempo itself; failure is an InternalError naming Tempo's source line.
#define TEMPO_ASSERT(cond, ...)                                                               \
  do {                                                                                        \
    if (!(cond))                                                                              \
      ::tempo::internal_error(::tempo::cat("assertion `" #cond "` failed. ", ##__VA_ARGS__)); \
  } while (0)
