// Option values of the `tempo` subcommands: numbers with errors that name the flag.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

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

// The items of a comma-separated list ("a,b,,c": a, b, c; empty items are skipped).
inline std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  for (size_t from = 0; from <= s.size();) {
    size_t to = s.find(',', from);
    if (to == std::string::npos) to = s.size();
    if (to > from) out.push_back(s.substr(from, to - from));
    from = to + 1;
  }
  return out;
}

// A subcommand's arguments: the positional ones, and the --options in order (flags with "").
struct Args {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> options;
  bool has(const std::string& k) const {
    for (const auto& [a, b] : options)
      if (a == k) return true;
    return false;
  }
  std::string get(const std::string& k, const std::string& dflt) const {
    for (const auto& [a, b] : options)
      if (a == k) return b;
    return dflt;
  }
};

// Parses argv[first..]: options in `flags` take no value, those in `valued` take one; any other
// --option is an error that points to `tempo <command> --help`.
inline Args parse_options(int argc, char** argv, int first, const std::vector<std::string>& valued,
                          const std::vector<std::string>& flags, const std::string& command) {
  Args a;
  for (int k = first; k < argc; ++k) {
    std::string s = argv[k];
    if (s.rfind("--", 0) != 0) {
      a.positional.push_back(s);
      continue;
    }
    bool flag = false, value = false;
    for (const auto& f : flags) flag |= f == s;
    for (const auto& v : valued) value |= v == s;
    if (flag) {
      a.options.emplace_back(s, "");
    } else if (value) {
      if (k + 1 >= argc) throw UserError(cat(s, " needs a value"));
      a.options.emplace_back(s, argv[++k]);
    } else {
      throw UserError(cat("unknown option ", s, " (try `tempo ", command, " --help`)"));
    }
  }
  return a;
}

// The usage of a command with subcommands (`tempo <command> <sub> ...`): printed on stdout for
// --help or -h anywhere (exit code 0), on stderr without a subcommand (2). Returns that exit code,
// or -1 when the command should run.
inline int usage_exit_code(int argc, char** argv, const char* usage) {
  if (argc < 2) {
    std::fputs(usage, stderr);
    return 2;
  }
  for (int k = 1; k < argc; ++k)
    if (std::string(argv[k]) == "--help" || std::string(argv[k]) == "-h") {
      std::fputs(usage, stdout);
      return 0;
    }
  return -1;
}

// A subcommand of a `tempo` command: its name, the options that take a value, the flags, and
// the function that runs it with them parsed.
struct Subcommand {
  const char* name;
  std::vector<std::string> valued, flags;
  int (*run)(const Args&);
};

// `tempo <command> <subcommand> ...`: prints `usage` for --help or no arguments, else runs the
// subcommand argv[1] names; an unknown one is an error that lists them.
inline int run_subcommand(int argc, char** argv, const char* command, const char* usage,
                          const std::vector<Subcommand>& subcommands) {
  if (const int code = usage_exit_code(argc, argv, usage); code >= 0) return code;
  const std::string name = argv[1];
  std::string names;
  for (size_t k = 0; k < subcommands.size(); ++k) {
    const Subcommand& s = subcommands[k];
    if (name == s.name) return s.run(parse_options(argc, argv, 2, s.valued, s.flags, command));
    names += cat(k == 0 ? "" : k + 1 == subcommands.size() ? " or " : ", ", s.name);
  }
  throw UserError(cat("unknown ", command, " command '", name, "' (", names, ")"));
}

}  // namespace tempo::cli
