// `tempo eval --load DIR [--episodes N] [--seed S]`: runs a policy saved by `tempo train --save
// DIR` greedily on its environment and prints its mean return.
#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "parse_args.h"
#include "rl/algorithms/saved_policy.h"
#include "util/error.h"

namespace {

const char* kUsage =
    "usage: tempo eval --load DIR [--episodes N] [--seed S] [--env NAME]\n"
    "  --load DIR    a policy saved by `tempo train --save DIR`\n"
    "  --episodes N  episodes to run, one per environment copy, together (default 10)\n"
    "  --seed S      seed of the environments' resets (copy k: S + k; default 1000)\n"
    "  --env NAME    another environment with the same spaces (default: the one it trained on)\n"
    "The policy acts greedily: its most likely action, or the mean of a continuous one.\n";

}  // namespace

int run_eval_command(int argc, char** argv) {
  using tempo::cat;
  using tempo::UserError;
  std::string dir, env;
  int64_t episodes = 10;
  int64_t seed = 1000;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a != "--load" && a != "--episodes" && a != "--seed" && a != "--env")
      throw UserError(a.rfind("--", 0) == 0
                          ? cat("unknown option ", a, " (try `tempo eval --help`)")
                          : cat("unexpected argument '", a, "'"));
    if (k + 1 >= argc) throw UserError(cat(a, " expects a value"));
    std::string v = argv[++k];
    if (a == "--load") dir = v;
    if (a == "--env") env = v;
    if (a == "--episodes") episodes = tempo::cli::parse_int(a, v);
    if (a == "--seed") seed = tempo::cli::parse_int(a, v);
  }
  if (dir.empty())
    throw UserError("missing --load DIR (a directory written by `tempo train --save`)");
  if (episodes < 1) throw UserError(cat("--episodes must be positive, got ", episodes));
  if (seed < 0) throw UserError(cat("--seed must not be negative, got ", seed));
  tempo::rl::SavedPolicy policy = tempo::rl::load_policy(dir);
  std::unique_ptr<tempo::rl::BatchedEnv> environment =
      tempo::rl::make_env(env.empty() ? policy.env : env, episodes, policy.env_options);
  tempo::rl::EvalResult res =
      tempo::rl::evaluate(policy, *environment, static_cast<uint64_t>(seed));
  double lo = res.returns[0], hi = res.returns[0];
  for (double r : res.returns) lo = std::min(lo, r), hi = std::max(hi, r);
  std::cout << "evaluated the " << policy.algo << " policy of " << dir << " (trained on "
            << policy.env << " for " << policy.iterations << " iterations, " << policy.env_steps
            << " env steps) on " << environment->name() << ": " << episodes << " episodes, seed "
            << seed << "\n"
            << std::fixed << std::setprecision(2) << "returns: min " << lo << ", max " << hi
            << "\nmean return: " << res.mean_return << std::endl;
  return 0;
}
