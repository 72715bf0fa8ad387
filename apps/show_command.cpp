// `tempo show`: prints a built-in example's SDG (Graphviz DOT), its text dump, or its schedule.
#include <cstring>
#include <iostream>
#include <string>

#include "commands.h"
#include "driver/compile.h"
#include "examples.h"
#include "util/error.h"

using namespace tempo;
using namespace tempo::apps;

namespace {
const char* kShowUsage =
    "usage: tempo show --list\n"
    "       tempo show <example> [--sdg | --text | --schedule | --run]\n"
    "  --list       list the built-in examples, one per line, name first\n"
    "  --sdg        print the symbolic dependence graph as Graphviz DOT (default)\n"
    "  --text       print the SDG as text, one op per line\n"
    "  --schedule   compile and print the schedule AST\n"
    "  --run        compile, run, and print memory figures\n";
}  // namespace

int run_show_command(int argc, char** argv) {
  // argv[0] is "show".
  --argc;
  ++argv;
  if (argc < 1 || !std::strcmp(argv[0], "--help") || !std::strcmp(argv[0], "-h")) {
    std::cout << kShowUsage;
    return argc < 1 ? 2 : 0;
  }
  std::string first = argv[0];
  if (first == "--list") {
    for (const Example& e : examples()) std::cout << e.name << "  " << e.description << "\n";
    return 0;
  }
  std::string mode = argc >= 2 ? argv[1] : "--sdg";
  if (mode != "--sdg" && mode != "--text" && mode != "--schedule" && mode != "--run")
    throw UserError(cat("unknown option '", mode, "' for tempo show\n", kShowUsage));
  const Example& ex = find_example(first);
  Context ctx;
  Bounds bounds = ex.build(ctx);
  if (mode == "--sdg") {
    std::cout << ctx.graph().dot();
  } else if (mode == "--text") {
    std::cout << ctx.graph().str();
  } else {
    Executable exe = compile(ctx, bounds);
    if (mode == "--schedule") {
      std::cout << exe.schedule_str();
    } else {
      exe.run();
      MemoryStats m = exe.memory();
      std::cout << "ran " << exe.ops_executed() << " ops; peak tracked memory " << m.peak_bytes
                << " bytes, live at end " << m.live_bytes << " bytes\n";
    }
  }
  return 0;
}
