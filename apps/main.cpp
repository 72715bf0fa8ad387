// The `tempo` command-line tool: a table of subcommands.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "commands.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* help;
};

// One row per subcommand; `tempo NAME --help` prints its own usage.
const Command kCommands[] = {
    {"eval", run_eval_command, "run a policy saved by `tempo train --save` (tempo eval --help)"},
    {"expr", run_expr_command, "inspect symbolic expressions (simplify, invert, isl, equal, eval)"},
    {"generate", run_generate_command,
     "decode tokens with a Llama-3.2 decoder (tempo generate --help)"},
    {"launch", run_launch_command,
     "run a command as N data-parallel ranks (tempo launch -n 2 -- tempo train ...)"},
    {"loops", run_loops_command,
     "loop-nest optimization: transformations, isl, beam search, Polly (tempo loops --help)"},
    {"mmap", run_mmap_command,
     "memory placement: MMapGame instances and baselines (tempo mmap --help)"},
    {"rewrite", run_rewrite_command,
     "graph substitutions: TASO's search and the RLFlow agents (tempo rewrite --help)"},
    {"show", run_show_command, "print a built-in example's SDG or schedule (tempo show --list)"},
    {"tokenize", run_tokenize_command,
     "encode JSON-lines text with a tokenizer.json (tempo tokenize --help)"},
    {"train", run_train_command,
     "train a policy with PPO, A2C, REINFORCE, DQN, SAC or TD3 (tempo train --help)"},
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
  if (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  for (const Command& c : kCommands) {
    if (std::strcmp(argv[1], c.name)) continue;
    try {
      return c.run(argc - 1, argv + 1);
    } catch (const std::exception& e) {
      // Errors print as one line; the first line of a multi-line message carries what went wrong.
      std::string msg = e.what();
      std::fprintf(stderr, "tempo: error: %s\n", msg.substr(0, msg.find('\n')).c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "tempo: error: unknown command `%s` (try `tempo --help`)\n", argv[1]);
  return 2;
}
