// "synthetic": TEMPO's benchmark environment. It is as cheap as an environment can be while
// still producing observations of a realistic size (e.g. 3x4x4 up to 3x256x256 images), so that
// training loops on it measure the framework's overhead, not the environment's.
//
// Each step gives a fresh observation of pseudo-random values in [0, 1) (splitmix64, two 24-bit
// floats per draw, env i's generator seeded with splitmix64(seed + i)). The hidden target of an
// observation is floor(S * num_actions) mod num_actions, where S is the sum (in double, in
// memory order) of its first channel: the first prod(obs_shape) / obs_shape[0] values. The reward
// of a step is 1 if the action equals the target of the observation the agent acted on, else 0.
// Episodes never terminate; they are truncated after episode_length steps.
#include <cmath>

#include "rl/envs/classic.h"
#include "util/error.h"

namespace tempo::rl::detail {
namespace {

constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class SyntheticEnv final : public BatchedEnv {
 public:
  SyntheticEnv(int64_t num_envs, const EnvOptions& opts)
      : BatchedEnv(num_envs),
        opts_(opts),
        rng_(num_envs, 0),
        steps_(num_envs, 0),
        returns_(num_envs, 0.0),
        target_(num_envs, 0) {
    obs_space_.shape = opts.obs_shape;
    numel_ = obs_space_.numel();
    channel_numel_ = numel_ / opts.obs_shape[0];
    obs_space_.low.assign(numel_, 0.0f);
    obs_space_.high.assign(numel_, 1.0f);
    act_space_ = Space{{}, true, opts.num_actions, {}, {}};
  }

  const Space& observation_space() const override { return obs_space_; }
  const Space& action_space() const override { return act_space_; }
  std::string name() const override { return "synthetic"; }

  std::string state() const override {
    return StateWriter().word("synthetic").values(rng_).values(steps_).values(returns_)
        .values(target_).text();
  }

  void set_state(const std::string& text) override {
    StateReader(text, "synthetic").word("synthetic").values(rng_).values(steps_).values(returns_)
        .values(target_).end();
    started_ = true;
  }

  std::vector<float> reset(uint64_t seed) override {
    const int64_t n = num_envs();
    std::vector<float> obs(n * numel_);
    for (int64_t i = 0; i < n; ++i) {
      rng_[i] = mix64(seed + static_cast<uint64_t>(i));
      steps_[i] = 0;
      returns_[i] = 0.0;
      generate(i, &obs[i * numel_]);
    }
    started_ = true;
    return obs;
  }

  void step_into(const std::vector<float>& actions, StepResult& out) override {
    check_step(actions, started_);
    const int64_t n = num_envs();
    out.prepare(n, numel_);
    bool any_done = false;
    for (int64_t i = 0; i < n; ++i) {
      const float r = static_cast<int64_t>(actions[i]) == target_[i] ? 1.0f : 0.0f;
      ++steps_[i];
      returns_[i] += r;
      const bool done = steps_[i] >= opts_.episode_length;
      any_done |= done;
      out.reward[i] = r;
      out.truncated[i] = done;
      out.episode_return[i] = done ? static_cast<float>(returns_[i]) : 0.0f;
      out.episode_length[i] = done ? steps_[i] : 0;
      generate(i, &out.obs[i * numel_]);
    }
    if (!any_done) return;
    out.final_obs = out.obs;
    for (int64_t i = 0; i < n; ++i) {
      if (!out.truncated[i]) continue;
      steps_[i] = 0;
      returns_[i] = 0.0;
      generate(i, &out.obs[i * numel_]);
    }
  }

 private:
  // Writes env i's next observation and records its target.
  void generate(int64_t i, float* obs) {
    const uint64_t base = rng_[i];
    const int64_t pairs = numel_ / 2;
    // Counter-based draws (no loop-carried state) so the loop vectorizes.
    for (int64_t j = 0; j < pairs; ++j) {
      const uint64_t z = mix64(base + static_cast<uint64_t>(j + 1) * kGamma);
      obs[2 * j] = static_cast<float>(z >> 40) * 0x1.0p-24f;
      obs[2 * j + 1] = static_cast<float>((z >> 16) & 0xFFFFFFull) * 0x1.0p-24f;
    }
    uint64_t next = base + static_cast<uint64_t>(pairs) * kGamma;
    if (numel_ % 2) {
      next += kGamma;
      obs[numel_ - 1] = static_cast<float>(mix64(next) >> 40) * 0x1.0p-24f;
    }
    rng_[i] = next;
    double sum = 0.0;
    for (int64_t k = 0; k < channel_numel_; ++k) sum += obs[k];
    target_[i] = static_cast<int64_t>(std::floor(sum * static_cast<double>(opts_.num_actions))) %
                 opts_.num_actions;
  }

  EnvOptions opts_;
  Space obs_space_, act_space_;
  int64_t numel_ = 0, channel_numel_ = 0;
  std::vector<uint64_t> rng_;    // splitmix64 state per env
  std::vector<int64_t> steps_;   // steps in the current episode
  std::vector<double> returns_;  // return of the current episode so far
  std::vector<int64_t> target_;  // target of the observation each env shows now
  bool started_ = false;
};

}  // namespace

std::unique_ptr<BatchedEnv> make_synthetic(int64_t num_envs, const EnvOptions& opts) {
  if (opts.obs_shape.empty()) throw UserError("synthetic environment: obs_shape is empty");
  for (int64_t d : opts.obs_shape) {
    if (d < 1) {
      throw UserError(cat("synthetic environment: obs_shape dimensions must be >= 1, got ", d));
    }
  }
  if (opts.episode_length < 1) {
    throw UserError(
        cat("synthetic environment: episode_length must be >= 1, got ", opts.episode_length));
  }
  if (opts.num_actions < 1) {
    throw UserError(cat("synthetic environment: num_actions must be >= 1, got ", opts.num_actions));
  }
  return std::make_unique<SyntheticEnv>(num_envs, opts);
}

}  // namespace tempo::rl::detail
