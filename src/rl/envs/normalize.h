// Observation and reward normalization around a batched environment, as Gymnasium's
// NormalizeObservation and NormalizeReward wrappers (1.2.2) followed by clipping to +-10, the
// wrappers CleanRL's continuous-action PPO and Stable-Baselines3's VecNormalize put around
// MuJoCo tasks.
//
// Observations: running mean and variance per element (Chan et al.'s parallel update, count
// starting at 1e-4, mean 0, variance 1), updated with every observation the copies see, then
// (obs - mean) / sqrt(var + 1e-8) clipped to +-10. Each step updates them with the copies' step
// observations (a finished episode's last one), then, where episodes ended, with the reset
// observations; final_obs is normalized with the first statistics, obs with the second. With
// one copy this is Gymnasium's single-env wrapper under an autoreset; the copies share one set of
// statistics (as VecNormalize).
// Rewards: each copy keeps a discounted sum of its rewards (gamma, reset where an episode
// terminates); their running variance scales the reward, r / sqrt(var + 1e-8), clipped to +-10.
// Episode returns and lengths stay the raw environment's.
//
//   std::unique_ptr<BatchedEnv> env = normalize(make_env("HalfCheetah-v5", 1), {true, true});
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rl/envs/env.h"

namespace tempo::rl {

struct NormalizeOptions {
  bool observations = false;
  bool rewards = false;
  double gamma = 0.99;  // of the rewards' discounted sums
  double clip = 10.0;
  double epsilon = 1e-8;
};

// Running mean and (population) variance of vectors of `size` elements.
struct RunningMeanStd {
  std::vector<double> mean, var;
  double count = 1e-4;

  explicit RunningMeanStd(size_t size = 0) : mean(size, 0.0), var(size, 1.0) {}
  // Adds `rows` vectors of mean.size() elements each, laid out one after another.
  template <typename T>
  void update(const T* data, int64_t rows);
};

// Fixed observation statistics, as a trained policy keeps them for evaluation.
struct ObservationNormalization {
  std::vector<double> mean, var;
  double epsilon = 1e-8, clip = 10.0;

  bool defined() const { return !mean.empty(); }
  void apply(float* obs, int64_t rows) const;  // in place, rows of mean.size() elements
};

class NormalizedEnv : public BatchedEnv {
 public:
  NormalizedEnv(std::unique_ptr<BatchedEnv> env, const NormalizeOptions& options);

  const Space& observation_space() const override { return env_->observation_space(); }
  const Space& action_space() const override { return env_->action_space(); }
  std::vector<float> reset(uint64_t seed) override;
  void step_into(const std::vector<float>& actions, StepResult& out) override;
  std::string name() const override { return env_->name(); }
  // The wrapped environment's state and the statistics ("" where the environment has none).
  std::string state() const override;
  void set_state(const std::string& text) override;

  // The observation statistics now (undefined without observation normalization).
  ObservationNormalization observation_normalization() const;

 private:
  // In place, with the statistics now (no copy of them on the stepping path).
  void normalize_observations(float* obs, int64_t rows) const;

  std::unique_ptr<BatchedEnv> env_;
  NormalizeOptions options_;
  RunningMeanStd obs_rms_, return_rms_;
  std::vector<double> returns_;  // per copy: the discounted sum of rewards
  std::vector<float> rows_;      // scratch: observations of the copies whose episodes ended
};

// `env` wrapped where `options` normalizes anything, else `env` itself.
std::unique_ptr<BatchedEnv> normalize(std::unique_ptr<BatchedEnv> env,
                                      const NormalizeOptions& options);

}  // namespace tempo::rl
