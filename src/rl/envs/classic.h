// Internals shared by the environment implementations: the lockstep driver for the
// classic-control environments (double-precision state per env, as Gymnasium keeps it) and the
// factories make_env dispatches to.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "rl/envs/env.h"

namespace tempo::rl::detail {

// The documented reset distribution (see env.h): 53 random bits scaled onto [lo, hi).
inline double reset_uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * (static_cast<double>(rng() >> 11) * 0x1.0p-53);
}

// Dyn describes one environment with static members:
//   kName, kStateDim, kObsDim, kMaxSteps (truncation limit),
//   Space observation_space(), Space action_space(),
//   void reset(std::mt19937_64&, double* state),
//   double step(double* state, float action, bool* terminated) -> reward,
//   void observe(const double* state, float* obs).
template <class Dyn>
class ClassicEnv final : public BatchedEnv {
 public:
  explicit ClassicEnv(int64_t num_envs)
      : BatchedEnv(num_envs),
        obs_space_(Dyn::observation_space()),
        act_space_(Dyn::action_space()),
        state_(num_envs * Dyn::kStateDim),
        rngs_(num_envs),
        steps_(num_envs, 0),
        returns_(num_envs, 0.0) {}

  const Space& observation_space() const override { return obs_space_; }
  const Space& action_space() const override { return act_space_; }
  std::string name() const override { return Dyn::kName; }

  std::vector<float> reset(uint64_t seed) override {
    const int64_t n = num_envs();
    std::vector<float> obs(n * Dyn::kObsDim);
    for (int64_t i = 0; i < n; ++i) {
      rngs_[i].seed(seed + static_cast<uint64_t>(i));
      restart(i, &obs[i * Dyn::kObsDim]);
    }
    started_ = true;
    return obs;
  }

  std::string state() const override {
    return StateWriter().word(Dyn::kName).values(state_).values(rngs_).values(steps_)
        .values(returns_).text();
  }

  void set_state(const std::string& text) override {
    StateReader(text, Dyn::kName).word(Dyn::kName).values(state_).values(rngs_).values(steps_)
        .values(returns_).end();
    started_ = true;
  }

  void step_into(const std::vector<float>& actions, StepResult& out) override {
    check_step(actions, started_);
    const int64_t n = num_envs();
    out.prepare(n, Dyn::kObsDim);
    bool any_done = false;
    for (int64_t i = 0; i < n; ++i) {
      double* s = &state_[i * Dyn::kStateDim];
      bool terminated = false;
      const double r = Dyn::step(s, actions[i], &terminated);
      ++steps_[i];
      returns_[i] += r;
      const bool truncated = steps_[i] >= Dyn::kMaxSteps;
      Dyn::observe(s, &out.obs[i * Dyn::kObsDim]);
      any_done |= out.record(i, r, terminated, truncated, returns_[i], steps_[i]);
    }
    if (!any_done) return;
    out.final_obs = out.obs;
    for (int64_t i = 0; i < n; ++i)
      if (out.terminated[i] || out.truncated[i]) restart(i, &out.obs[i * Dyn::kObsDim]);
  }

 private:
  void restart(int64_t i, float* obs) {
    double* s = &state_[i * Dyn::kStateDim];
    Dyn::reset(rngs_[i], s);
    Dyn::observe(s, obs);
    steps_[i] = 0;
    returns_[i] = 0.0;
  }

  Space obs_space_, act_space_;
  std::vector<double> state_;  // [num_envs * kStateDim]
  std::vector<std::mt19937_64> rngs_;
  std::vector<int64_t> steps_;   // steps in the current episode
  std::vector<double> returns_;  // return of the current episode so far
  bool started_ = false;
};

std::unique_ptr<BatchedEnv> make_cartpole(int64_t num_envs);
std::unique_ptr<BatchedEnv> make_pendulum(int64_t num_envs);
std::unique_ptr<BatchedEnv> make_acrobot(int64_t num_envs);
std::unique_ptr<BatchedEnv> make_mountain_car(int64_t num_envs);
std::unique_ptr<BatchedEnv> make_mountain_car_continuous(int64_t num_envs);
std::unique_ptr<BatchedEnv> make_synthetic(int64_t num_envs, const EnvOptions& opts);

// The MuJoCo locomotion environments (mujoco_locomotion.cpp). is_mujoco_env knows their names in
// every build; mujoco_env_names() lists them only where Tempo was built with MuJoCo, and
// make_mujoco_env throws UserError saying so elsewhere.
bool is_mujoco_env(const std::string& name);
std::vector<std::string> mujoco_env_names();
std::unique_ptr<BatchedEnv> make_mujoco_env(const std::string& name, int64_t num_envs);

}  // namespace tempo::rl::detail
