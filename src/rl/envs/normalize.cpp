#include "rl/envs/normalize.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "util/error.h"

namespace tempo::rl {

template <typename T>
void RunningMeanStd::update(const T* data, int64_t rows) {
  if (rows <= 0) return;
  const size_t n = mean.size();
  std::vector<double> batch_mean(n, 0.0), batch_var(n, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (size_t k = 0; k < n; ++k) batch_mean[k] += static_cast<double>(data[r * n + k]);
  for (double& m : batch_mean) m /= static_cast<double>(rows);
  for (int64_t r = 0; r < rows; ++r)
    for (size_t k = 0; k < n; ++k) {
      const double d = static_cast<double>(data[r * n + k]) - batch_mean[k];
      batch_var[k] += d * d;
    }
  const double b = static_cast<double>(rows), total = count + b;
  for (size_t k = 0; k < n; ++k) {
    const double delta = batch_mean[k] - mean[k];
    mean[k] += delta * b / total;
    var[k] = (var[k] * count + batch_var[k] + delta * delta * count * b / total) / total;
  }
  count = total;
}

template void RunningMeanStd::update(const float*, int64_t);
template void RunningMeanStd::update(const double*, int64_t);

namespace {

// (x - mean) / sqrt(var + epsilon), clipped to +-clip, over rows of mean.size() elements.
void standardize(float* obs, int64_t rows, const std::vector<double>& mean,
                 const std::vector<double>& var, double epsilon, double clip) {
  const size_t n = mean.size();
  for (int64_t r = 0; r < rows; ++r)
    for (size_t k = 0; k < n; ++k) {
      float& x = obs[r * n + k];
      const double z = (static_cast<double>(x) - mean[k]) / std::sqrt(var[k] + epsilon);
      x = static_cast<float>(std::clamp(z, -clip, clip));
    }
}

}  // namespace

void ObservationNormalization::apply(float* obs, int64_t rows) const {
  standardize(obs, rows, mean, var, epsilon, clip);
}

NormalizedEnv::NormalizedEnv(std::unique_ptr<BatchedEnv> env, const NormalizeOptions& options)
    : BatchedEnv(env->num_envs()),
      env_(std::move(env)),
      options_(options),
      obs_rms_(static_cast<size_t>(options.observations ? env_->obs_numel() : 0)),
      return_rms_(1),
      returns_(static_cast<size_t>(num_envs()), 0.0) {
  if (!(options.gamma >= 0 && options.gamma <= 1) || !(options.clip > 0) ||
      !(options.epsilon > 0))
    throw UserError(cat("normalizing ", env_->name(), ": gamma must be in [0, 1] (got ",
                        options.gamma, "), clip and epsilon positive (got ", options.clip, ", ",
                        options.epsilon, ")"));
}

ObservationNormalization NormalizedEnv::observation_normalization() const {
  if (!options_.observations) return {};
  return {obs_rms_.mean, obs_rms_.var, options_.epsilon, options_.clip};
}

void NormalizedEnv::normalize_observations(float* obs, int64_t rows) const {
  standardize(obs, rows, obs_rms_.mean, obs_rms_.var, options_.epsilon, options_.clip);
}

std::vector<float> NormalizedEnv::reset(uint64_t seed) {
  std::vector<float> obs = env_->reset(seed);
  std::fill(returns_.begin(), returns_.end(), 0.0);
  if (options_.observations) {
    obs_rms_.update(obs.data(), num_envs());
    normalize_observations(obs.data(), num_envs());
  }
  return obs;
}

void NormalizedEnv::step_into(const std::vector<float>& actions, StepResult& out) {
  env_->step_into(actions, out);
  const int64_t N = num_envs(), D = obs_numel();
  if (options_.observations) {
    // What each copy's step observed (a finished episode's last observation), then the reset
    // observations of the copies that started a new one.
    const bool ended = !out.final_obs.empty();
    obs_rms_.update(ended ? out.final_obs.data() : out.obs.data(), N);
    if (ended) {
      normalize_observations(out.final_obs.data(), N);
      rows_.clear();
      for (int64_t n = 0; n < N; ++n)
        if (out.terminated[n] || out.truncated[n])
          rows_.insert(rows_.end(), out.obs.begin() + n * D, out.obs.begin() + (n + 1) * D);
      obs_rms_.update(rows_.data(), static_cast<int64_t>(rows_.size()) / D);
    }
    normalize_observations(out.obs.data(), N);
    if (ended)  // the rows of copies that go on equal obs, as before
      for (int64_t n = 0; n < N; ++n)
        if (!out.terminated[n] && !out.truncated[n])
          std::copy(out.obs.begin() + n * D, out.obs.begin() + (n + 1) * D,
                    out.final_obs.begin() + n * D);
  }
  if (options_.rewards) {
    for (int64_t n = 0; n < N; ++n)
      returns_[n] = returns_[n] * options_.gamma * (out.terminated[n] ? 0.0 : 1.0) +
                    static_cast<double>(out.reward[n]);
    return_rms_.update(returns_.data(), N);
    const double scale = std::sqrt(return_rms_.var[0] + options_.epsilon);
    for (float& r : out.reward)
      r = static_cast<float>(
          std::clamp(static_cast<double>(r) / scale, -options_.clip, options_.clip));
  }
}

std::string NormalizedEnv::state() const {
  const std::string inner = env_->state();
  if (inner.empty()) return "";
  StateWriter w;
  w.word("obs").values(obs_rms_.mean).values(obs_rms_.var).values(std::vector{obs_rms_.count});
  w.word("returns").values(returns_).values(return_rms_.mean).values(return_rms_.var);
  w.values(std::vector{return_rms_.count});
  // The wrapped state first, prefixed by its length: its text is the environment's own.
  return cat("normalized ", inner.size(), "\n", inner, w.text());
}

void NormalizedEnv::set_state(const std::string& text) {
  std::istringstream in(text);
  std::string word;
  size_t length = 0;
  in >> word >> length;
  if (!in || word != "normalized" || in.get() != '\n' ||
      static_cast<size_t>(in.tellg()) + length > text.size())
    throw UserError(cat("malformed state of ", name(), " with normalization"));
  const size_t start = static_cast<size_t>(in.tellg());
  env_->set_state(text.substr(start, length));
  StateReader r(text.substr(start + length), name());
  std::vector<double> obs_count(1), return_count(1);
  r.word("obs").values(obs_rms_.mean).values(obs_rms_.var).values(obs_count);
  r.word("returns").values(returns_).values(return_rms_.mean).values(return_rms_.var);
  r.values(return_count);
  r.end();
  obs_rms_.count = obs_count[0];
  return_rms_.count = return_count[0];
}

std::unique_ptr<BatchedEnv> normalize(std::unique_ptr<BatchedEnv> env,
                                      const NormalizeOptions& options) {
  if (!options.observations && !options.rewards) return env;
  return std::make_unique<NormalizedEnv>(std::move(env), options);
}

}  // namespace tempo::rl
