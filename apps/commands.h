// Subcommands of the `tempo` command-line tool. Each takes the arguments after `tempo`
// (argv[0] is the subcommand's own name) and returns the process exit status.
#pragma once

#include <ostream>

int run_eval_command(int argc, char** argv);
int run_expr_command(int argc, char** argv);
// `tempo expr` writing its results to `out` and its errors to `err` (what the fuzzer calls).
int expr_command(int argc, char** argv, std::ostream& out, std::ostream& err);
int run_generate_command(int argc, char** argv);
int run_launch_command(int argc, char** argv);
int run_loops_command(int argc, char** argv);
int run_mmap_command(int argc, char** argv);
int run_rewrite_command(int argc, char** argv);
int run_show_command(int argc, char** argv);
int run_tokenize_command(int argc, char** argv);
int run_train_command(int argc, char** argv);
