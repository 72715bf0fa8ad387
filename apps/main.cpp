// The `tempo` command-line tool: a table of subcommands.
#include <cstdio>
#include <cstring>

#include "commands.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* help;
};

// One row per subcommand; `tempo NAME --help` prints its own usage.
const Command kCommands[] = {
    {"expr", run_expr_command, "inspect symbolic expressions (simplify, invert, isl, equal, eval)"},
};

void usage(FILE* out) {
  std::fprintf(out, "usage: tempo <command> [arguments]\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.help);
  std::fprintf(out, "\n`tempo <command> --help` describes a command.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  for (const Command& c : kCommands)
    if (!std::strcmp(argv[1], c.name)) return c.run(argc - 1, argv + 1);
  std::fprintf(stderr, "tempo: error: unknown command `%s` (try `tempo --help`)\n", argv[1]);
  return 2;
}
