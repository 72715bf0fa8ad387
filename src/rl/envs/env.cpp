#include "rl/envs/env.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "rl/envs/classic.h"
#include "util/error.h"

namespace tempo::rl {

int64_t Space::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void StepResult::prepare(int64_t num_envs, int64_t obs_numel) {
  obs.resize(static_cast<size_t>(num_envs * obs_numel));
  reward.resize(static_cast<size_t>(num_envs));
  terminated.assign(static_cast<size_t>(num_envs), 0);
  truncated.resize(static_cast<size_t>(num_envs));
  episode_return.resize(static_cast<size_t>(num_envs));
  episode_length.resize(static_cast<size_t>(num_envs));
  final_obs.clear();
}

bool StepResult::record(int64_t i, double step_reward, bool is_terminated, bool is_truncated,
                        double episode_so_far, int64_t steps_so_far) {
  const bool done = is_terminated || is_truncated;
  reward[i] = static_cast<float>(step_reward);
  terminated[i] = is_terminated;
  truncated[i] = is_truncated;
  episode_return[i] = done ? static_cast<float>(episode_so_far) : 0.0f;
  episode_length[i] = done ? steps_so_far : 0;
  return done;
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

void BatchedEnv::set_state(const std::string&) {
  throw UserError(cat("environment '", name(), "' cannot restore a saved state"));
}

StateWriter& StateWriter::word(const std::string& w) {
  out_ << w << ' ';
  return *this;
}

StateWriter& StateWriter::values(const std::vector<double>& v) {
  out_ << v.size() << ' ' << std::hexfloat;
  for (double x : v) out_ << x << ' ';
  out_ << std::defaultfloat << '\n';
  return *this;
}

StateWriter& StateWriter::values(const std::vector<int64_t>& v) {
  out_ << v.size() << ' ';
  for (int64_t x : v) out_ << x << ' ';
  out_ << '\n';
  return *this;
}

StateWriter& StateWriter::values(const std::vector<uint64_t>& v) {
  out_ << v.size() << ' ';
  for (uint64_t x : v) out_ << x << ' ';
  out_ << '\n';
  return *this;
}

StateWriter& StateWriter::values(const std::vector<std::mt19937_64>& v) {
  out_ << v.size() << ' ';
  for (const std::mt19937_64& g : v) out_ << g << '\n';
  return *this;
}

std::string StateReader::token() {
  std::string t;
  if (!(in_ >> t)) fail("it ends early");
  return t;
}

void StateReader::fail(const std::string& why) const {
  throw UserError(cat("malformed saved state of environment '", env_, "': ", why));
}

StateReader& StateReader::word(const std::string& w) {
  std::string t = token();
  if (t != w) fail(cat("expected '", w, "', found '", t, "'"));
  return *this;
}

namespace {

// Parses all of `t` with strto* (`end` must reach its end).
template <class T, class F>
T parse_all(const std::string& t, F convert, bool* ok) {
  char* end = nullptr;
  errno = 0;
  T v = convert(t.c_str(), &end);
  *ok = !t.empty() && end == t.c_str() + t.size() && errno == 0;
  return v;
}

}  // namespace

void StateReader::expect_count(size_t n) {
  bool ok = false;
  const std::string t = token();
  uint64_t got = parse_all<uint64_t>(
      t, [](const char* c, char** e) { return std::strtoull(c, e, 10); }, &ok);
  if (!ok || got != n) fail(cat("expected ", n, " values, found '", t, "'"));
}

StateReader& StateReader::values(std::vector<double>& v) {
  expect_count(v.size());
  for (double& x : v) {
    bool ok = false;
    x = parse_all<double>(token(), [](const char* c, char** e) { return std::strtod(c, e); }, &ok);
    if (!ok) fail("a value is not a number");
  }
  return *this;
}

StateReader& StateReader::values(std::vector<int64_t>& v) {
  expect_count(v.size());
  for (int64_t& x : v) {
    bool ok = false;
    x = parse_all<int64_t>(
        token(), [](const char* c, char** e) { return std::strtoll(c, e, 10); }, &ok);
    if (!ok) fail("a value is not an integer");
  }
  return *this;
}

StateReader& StateReader::values(std::vector<uint64_t>& v) {
  expect_count(v.size());
  for (uint64_t& x : v) {
    bool ok = false;
    x = parse_all<uint64_t>(
        token(), [](const char* c, char** e) { return std::strtoull(c, e, 10); }, &ok);
    if (!ok) fail("a value is not an integer");
  }
  return *this;
}

StateReader& StateReader::values(std::vector<std::mt19937_64>& v) {
  expect_count(v.size());
  for (std::mt19937_64& g : v)
    if (!(in_ >> g)) fail("a generator state does not parse");
  return *this;
}

void StateReader::end() {
  std::string t;
  if (in_ >> t) fail(cat("unexpected '", t, "' at the end"));
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
  std::vector<std::string> names = {"CartPole-v1", "Pendulum-v1", "Acrobot-v1", "MountainCar-v0",
                                    "MountainCarContinuous-v0", "synthetic"};
  const std::vector<std::string> mujoco = detail::mujoco_env_names();
  names.insert(names.end(), mujoco.begin(), mujoco.end());
  return names;
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
  if (name == "MountainCarContinuous-v0") return detail::make_mountain_car_continuous(num_envs);
  if (name == "synthetic") return detail::make_synthetic(num_envs, opts);
  if (detail::is_mujoco_env(name)) return detail::make_mujoco_env(name, num_envs);
  std::string known;
  for (const std::string& n : env_names()) known += (known.empty() ? "" : ", ") + n;
  throw UserError(cat("unknown environment \"", name, "\"; known environments: ", known));
}

}  // namespace tempo::rl
