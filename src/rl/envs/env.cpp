#include "rl/envs/env.h"

#include <cmath>

#include "rl/envs/classic.h"
#include "util/error.h"

namespace tempo::rl {

int64_t Space::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

BatchedEnv::BatchedEnv(int64_t num_envs) : num_envs_(num_envs) {
  if (num_envs < 1) throw UserError(cat("an environment needs num_envs >= 1, got ", num_envs));
}

BatchedEnv::~BatchedEnv() = default;

StepResult BatchedEnv::step(const std::vector<float>& actions) {
  StepResult r;
  step_into(actions, r);
  return r;
}

void BatchedEnv::check_step(const std::vector<float>& actions, bool started) const {
  if (!started) throw UserError(cat(name(), ": step() called before reset()"));
  const Space& as = action_space();
  const int64_t per_env = as.numel();
  const int64_t expected = num_envs_ * per_env;
  if (static_cast<int64_t>(actions.size()) != expected) {
    throw UserError(cat(name(), ": step() got ", actions.size(), " action values, expected ",
                        expected, " (num_envs ", num_envs_, " x ", per_env, " per env)"));
  }
  for (size_t i = 0; i < actions.size(); ++i) {
    const float a = actions[i];
    if (!std::isfinite(a)) {
      throw UserError(cat(name(), ": action ", i, " is not finite (", a, ")"));
    }
    if (as.discrete && (a != std::floor(a) || a < 0 || a >= static_cast<float>(as.n))) {
      throw UserError(cat(name(), ": action for env ", i, " is ", a,
                          ", not an action index in [0, ", as.n, ")"));
    }
  }
}

std::vector<std::string> env_names() {
  return {"CartPole-v1", "Pendulum-v1", "Acrobot-v1", "MountainCar-v0", "synthetic"};
}

std::unique_ptr<BatchedEnv> make_env(const std::string& name, int64_t num_envs,
                                     const EnvOptions& opts) {
  if (num_envs < 1) {
    throw UserError(cat("make_env(\"", name, "\"): num_envs must be >= 1, got ", num_envs));
  }
  if (name == "CartPole-v1") return detail::make_cartpole(num_envs);
  if (name == "Pendulum-v1") return detail::make_pendulum(num_envs);
  if (name == "Acrobot-v1") return detail::make_acrobot(num_envs);
  if (name == "MountainCar-v0") return detail::make_mountain_car(num_envs);
  if (name == "synthetic") return detail::make_synthetic(num_envs, opts);
  std::string known;
  for (const std::string& n : env_names()) known += (known.empty() ? "" : ", ") + n;
  throw UserError(cat("unknown environment \"", name, "\"; known environments: ", known));
}

}  // namespace tempo::rl
