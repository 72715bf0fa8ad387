// Batched reinforcement-learning environments (Gym-like, float32 observations, plain C++).
//
// A BatchedEnv steps num_envs independent copies of one environment in lockstep. Every copy
// resets itself automatically when its episode ends (terminated or truncated): step() then
// returns the first observation of the new episode in `obs`, the last observation of the finished
// one in `final_obs`, and the finished episode's return and length.
//
// Determinism: reset(seed) seeds copy i's generator with std::mt19937_64(seed + i); the same seed
// and the same actions give the same trajectories. The classic-control environments draw their
// reset states, value by value in the order listed in each environment's comment, as
//   uniform(lo, hi) = lo + (hi - lo) * ((rng() >> 11) * 2^-53).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tempo::rl {

struct Space {
  std::vector<int64_t> shape;  // {} for a discrete space (one action index per env)
  bool discrete = false;
  int64_t n = 0;                 // discrete: number of actions
  std::vector<float> low, high;  // box: per element bounds, prod(shape) entries each

  int64_t numel() const;  // elements per env: prod(shape), 1 for a discrete space
};

struct StepResult {
  std::vector<float> obs;     // [num_envs * obs_numel]; the reset observation for envs that ended
  std::vector<float> reward;  // [num_envs]
  std::vector<uint8_t> terminated;  // [num_envs]: the MDP reached a terminal state
  std::vector<uint8_t> truncated;   // [num_envs]: the time limit cut the episode
  // Empty when no env ended in this step; otherwise [num_envs * obs_numel]: the rows of envs that
  // ended hold their last observation (before the automatic reset), the other rows equal `obs`.
  std::vector<float> final_obs;
  // For envs whose episode ended in this step (terminated or truncated), else 0.
  std::vector<float> episode_return;
  std::vector<int64_t> episode_length;

  // Sizes every field for a step of num_envs copies (no episode ended yet: final_obs empty,
  // terminated 0), reusing the buffers.
  void prepare(int64_t num_envs, int64_t obs_numel);
  // Records copy i's step: its reward and flags, and the episode's return and length if it
  // ended. Returns whether it ended.
  bool record(int64_t i, double step_reward, bool is_terminated, bool is_truncated,
              double episode_so_far, int64_t steps_so_far);
};

// Options; only the "synthetic" environment reads them (the classic ones have fixed constants).
struct EnvOptions {
  std::vector<int64_t> obs_shape = {3, 4, 4};  // e.g. {3, 4, 4} up to {3, 256, 256}
  int64_t episode_length = 250;                // truncation limit
  int64_t num_actions = 4;
};

class BatchedEnv {
 public:
  explicit BatchedEnv(int64_t num_envs);
  virtual ~BatchedEnv();
  BatchedEnv(const BatchedEnv&) = delete;
  BatchedEnv& operator=(const BatchedEnv&) = delete;

  virtual const Space& observation_space() const = 0;
  virtual const Space& action_space() const = 0;
  int64_t num_envs() const { return num_envs_; }
  int64_t obs_numel() const { return observation_space().numel(); }
  int64_t action_numel() const { return action_space().numel(); }

  // Starts a new episode in every env; returns the observations [num_envs * obs_numel].
  virtual std::vector<float> reset(uint64_t seed) = 0;
  // Actions: [num_envs] action indices (as floats) for a discrete action space, else
  // [num_envs * action_numel]. Throws UserError on a wrong size, a discrete action that is not an
  // index in [0, n), or a step before the first reset.
  virtual StepResult step(const std::vector<float>& actions);
  // step() writing into `out`, reusing its buffers (no allocation after the first call).
  virtual void step_into(const std::vector<float>& actions, StepResult& out) = 0;
  virtual std::string name() const = 0;

  // The whole state of every copy (physical state, generator, episode step and return) as text,
  // what a training checkpoint keeps; set_state() restores it exactly. Environments that cannot
  // return "" (the default; set_state then throws UserError).
  virtual std::string state() const { return ""; }
  // UserError naming the environment when `text` is malformed or from another environment.
  virtual void set_state(const std::string& text);

 protected:
  // The UserError checks described at step(); `started` says whether reset() has run.
  void check_step(const std::vector<float>& actions, bool started) const;

 private:
  int64_t num_envs_;
};

// Writes and reads the text of BatchedEnv::state(): words and numbers separated by spaces,
// doubles in hexadecimal (exact), generators in the standard library's text form.
class StateWriter {
 public:
  StateWriter& word(const std::string& w);
  StateWriter& values(const std::vector<double>& v);
  StateWriter& values(const std::vector<int64_t>& v);
  StateWriter& values(const std::vector<uint64_t>& v);
  StateWriter& values(const std::vector<std::mt19937_64>& v);
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

class StateReader {
 public:
  StateReader(const std::string& text, std::string env) : in_(text), env_(std::move(env)) {}
  StateReader& word(const std::string& w);  // expects w
  // Each expects exactly v.size() values (the environment's own size).
  StateReader& values(std::vector<double>& v);
  StateReader& values(std::vector<int64_t>& v);
  StateReader& values(std::vector<uint64_t>& v);
  StateReader& values(std::vector<std::mt19937_64>& v);
  void end();  // expects nothing more

 private:
  std::string token();
  void expect_count(size_t n);
  [[noreturn]] void fail(const std::string& why) const;
  std::istringstream in_;
  std::string env_;
};

// "CartPole-v1", "Pendulum-v1", "Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0",
// "synthetic", or (where Tempo was built with MuJoCo; env_names() then lists them)
// "HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5". An unknown name or a bad
// option (num_envs < 1, non-positive sizes) throws UserError.
std::unique_ptr<BatchedEnv> make_env(const std::string& name, int64_t num_envs,
                                     const EnvOptions& opts = {});
std::vector<std::string> env_names();

}  // namespace tempo::rl
