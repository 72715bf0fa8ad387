// `tempo expr` with any arguments: the input's lines are the words after `tempo expr` (action,
// expressions, options). The command answers with an exit status (0, 1 for a bad expression, 2
// for a bad command line); a crash or an internal error is a finding.
#include <sstream>

#include "commands.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> words =
      tempo::fuzz::split(std::string(reinterpret_cast<const char*>(data), size), "\n");
  if (words.size() > 16) return 0;  // longer command lines only repeat options
  words.insert(words.begin(), "expr");
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::ostringstream out, err;
  const int status = expr_command(static_cast<int>(words.size()), argv.data(), out, err);
  tempo::fuzz::check(status >= 0 && status <= 2, "exit status 0, 1 or 2");
  // An InternalError reaches the command's catch-all too, but it is a bug, not bad input (its
  // message starts so; the user's words come later in any other message).
  tempo::fuzz::check(err.str().rfind("tempo: error: internal error at ", 0) != 0,
                     "no internal error");
  return 0;
}
