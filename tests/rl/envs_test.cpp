#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "expect_error.h"
#include "rl/envs/env.h"
#include "rl/gym_reference.h"
#include "util/error.h"

namespace tempo::rl {
namespace {

// Picks env i's action at step t from the observation it shows.
using Policy = std::function<float(int64_t t, int64_t i, const float* obs)>;
using RefFactory = std::function<std::unique_ptr<ref::Model>()>;

struct RunCounts {
  int64_t terminated = 0, truncated = 0, steps = 0;
};

bool close(double got, double want, double tol = 1e-5) {
  return std::abs(got - want) <= tol * std::max(1.0, std::abs(want));
}

// Steps the batched env and one scalar reference model per env side by side, checking
// observations, rewards, flags, automatic resets and episode statistics at every step.
void check_against_reference(const std::string& name, const RefFactory& make_ref,
                             const Policy& policy, int64_t num_envs, int64_t steps, uint64_t seed,
                             RunCounts* counts) {
  auto env = make_env(name, num_envs);
  const int64_t od = env->obs_numel();
  std::vector<std::unique_ptr<ref::Model>> refs;
  std::vector<std::mt19937_64> rngs;
  std::vector<int64_t> len(num_envs, 0);
  std::vector<double> ret(num_envs, 0.0);
  std::vector<float> obs = env->reset(seed);
  ASSERT_EQ(static_cast<int64_t>(obs.size()), num_envs * od);
  for (int64_t i = 0; i < num_envs; ++i) {
    refs.push_back(make_ref());
    rngs.emplace_back(seed + i);
    refs[i]->reset(rngs[i]);
    const std::vector<double> want = refs[i]->obs();
    ASSERT_EQ(static_cast<int64_t>(want.size()), od);
    for (int64_t k = 0; k < od; ++k)
      ASSERT_TRUE(close(obs[i * od + k], want[k])) << name << " reset env " << i << " obs " << k;
  }
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<float> actions(num_envs);
    for (int64_t i = 0; i < num_envs; ++i) actions[i] = policy(t, i, &obs[i * od]);
    const StepResult r = env->step(actions);
    ASSERT_EQ(static_cast<int64_t>(r.obs.size()), num_envs * od);
    ASSERT_EQ(static_cast<int64_t>(r.reward.size()), num_envs);
    bool any_done = false;
    for (int64_t i = 0; i < num_envs; ++i) {
      const std::string at = name + " step " + std::to_string(t) + " env " + std::to_string(i);
      const ref::Outcome o = refs[i]->step(actions[i]);
      ++len[i];
      ret[i] += o.reward;
      const bool trunc = len[i] >= refs[i]->time_limit();
      ASSERT_TRUE(close(r.reward[i], o.reward))
          << at << ": reward " << r.reward[i] << " vs " << o.reward;
      ASSERT_EQ(r.terminated[i] != 0, o.terminated) << at;
      ASSERT_EQ(r.truncated[i] != 0, trunc) << at;
      const std::vector<double> last = refs[i]->obs();
      if (o.terminated || trunc) {
        any_done = true;
        counts->terminated += o.terminated;
        counts->truncated += trunc;
        ASSERT_EQ(static_cast<int64_t>(r.final_obs.size()), num_envs * od) << at;
        for (int64_t k = 0; k < od; ++k)
          ASSERT_TRUE(close(r.final_obs[i * od + k], last[k])) << at << " final obs " << k;
        ASSERT_EQ(r.episode_length[i], len[i]) << at;
        ASSERT_TRUE(close(r.episode_return[i], ret[i]))
            << at << ": return " << r.episode_return[i] << " vs " << ret[i];
        refs[i]->reset(rngs[i]);
        len[i] = 0;
        ret[i] = 0.0;
        const std::vector<double> fresh = refs[i]->obs();
        for (int64_t k = 0; k < od; ++k)
          ASSERT_TRUE(close(r.obs[i * od + k], fresh[k])) << at << " reset obs " << k;
      } else {
        ASSERT_EQ(r.episode_length[i], 0) << at;
        ASSERT_EQ(r.episode_return[i], 0.0f) << at;
        for (int64_t k = 0; k < od; ++k)
          ASSERT_TRUE(close(r.obs[i * od + k], last[k]))
              << at << " obs " << k << ": " << r.obs[i * od + k] << " vs " << last[k];
        if (!r.final_obs.empty()) {
          for (int64_t k = 0; k < od; ++k) ASSERT_EQ(r.final_obs[i * od + k], r.obs[i * od + k]);
        }
      }
    }
    if (!any_done) {
      ASSERT_TRUE(r.final_obs.empty()) << name << " step " << t;
    }
    obs = r.obs;
    ++counts->steps;
  }
}

// A cheap deterministic "random" action in [0, n).
float scrambled(int64_t t, int64_t i, int64_t n) {
  uint64_t z = static_cast<uint64_t>(t) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(i) * 977;
  z ^= z >> 29;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 32;
  return static_cast<float>(z % static_cast<uint64_t>(n));
}

TEST(EnvsTest, CartPoleMatchesReference) {
  // env 0 balances (reaches the time limit), env 1 acts at random, env 2 always pushes right.
  Policy p = [](int64_t t, int64_t i, const float* o) -> float {
    if (i == 0) return o[2] + 0.5f * o[3] > 0 ? 1.0f : 0.0f;
    if (i == 1) return scrambled(t, i, 2);
    return 1.0f;
  };
  RunCounts c;
  check_against_reference(
      "CartPole-v1", [] { return std::make_unique<ref::CartPole>(); }, p, 3, 1200, 7, &c);
  EXPECT_EQ(c.steps, 1200);
  EXPECT_GT(c.terminated, 20);
  EXPECT_GE(c.truncated, 1);
}

TEST(EnvsTest, PendulumMatchesReference) {
  // Torques beyond +-2 check the clipping.
  Policy p = [](int64_t t, int64_t i, const float*) -> float {
    return static_cast<float>(3.0 * std::sin(0.07 * t + i));
  };
  RunCounts c;
  check_against_reference(
      "Pendulum-v1", [] { return std::make_unique<ref::Pendulum>(); }, p, 3, 650, 11, &c);
  EXPECT_EQ(c.terminated, 0);
  EXPECT_EQ(c.truncated, 9);  // 3 envs x 3 full episodes of 200 steps
}

TEST(EnvsTest, AcrobotMatchesReference) {
  // env 0 pumps energy (torque against the first joint's velocity) and swings up; the others act
  // at random and hit the time limit.
  Policy p = [](int64_t t, int64_t i, const float* o) -> float {
    if (i == 0) return o[4] > 0 ? 0.0f : 2.0f;
    return scrambled(t, i, 3);
  };
  RunCounts c;
  check_against_reference(
      "Acrobot-v1", [] { return std::make_unique<ref::Acrobot>(); }, p, 3, 1100, 5, &c);
  EXPECT_GT(c.terminated, 0);
  EXPECT_GT(c.truncated, 0);
}

TEST(EnvsTest, MountainCarMatchesReference) {
  // env 0 pushes along its velocity (reaches the goal), env 1 acts at random, env 2 always
  // pushes left (runs into the left wall).
  Policy p = [](int64_t t, int64_t i, const float* o) -> float {
    if (i == 0) return o[1] >= 0 ? 2.0f : 0.0f;
    if (i == 1) return scrambled(t, i, 3);
    return 0.0f;
  };
  RunCounts c;
  check_against_reference(
      "MountainCar-v0", [] { return std::make_unique<ref::MountainCar>(); }, p, 3, 700, 3, &c);
  EXPECT_GT(c.terminated, 0);
  EXPECT_GT(c.truncated, 0);
}

TEST(EnvsTest, MountainCarStopsAtTheLeftWall) {
  auto env = make_env("MountainCar-v0", 1);
  std::vector<float> obs = env->reset(0);
  bool hit = false;
  for (int t = 0; t < 200 && !hit; ++t) {
    // Pushing along the velocity swings the car into the left wall before the goal.
    const StepResult r = env->step({obs[1] >= 0 ? 2.0f : 0.0f});
    obs = r.obs;
    if (r.obs[0] == -1.2f) {
      hit = true;
      EXPECT_EQ(r.obs[1], 0.0f);
    }
  }
  EXPECT_TRUE(hit);
}

TEST(EnvsTest, CartPoleEpisodeStatistics) {
  // Always pushing right topples the pole within a few dozen steps; reward 1 every step, so the
  // return equals the length, and the terminating step is rewarded too.
  auto env = make_env("CartPole-v1", 2);
  env->reset(42);
  int64_t steps = 0;
  for (;;) {
    const StepResult r = env->step({1.0f, 1.0f});
    ++steps;
    ASSERT_LT(steps, 100);
    EXPECT_EQ(r.reward[0], 1.0f);
    if (r.terminated[0]) {
      EXPECT_FALSE(r.truncated[0]);
      EXPECT_EQ(r.episode_length[0], steps);
      EXPECT_EQ(r.episode_return[0], static_cast<float>(steps));
      const float theta = r.final_obs[2];
      EXPECT_GT(std::abs(theta), 12 * 2 * M_PI / 360);
      // The new episode starts near upright.
      for (int k = 0; k < 4; ++k) EXPECT_LE(std::abs(r.obs[k]), 0.05f);
      break;
    }
    EXPECT_EQ(r.episode_length[0], 0);
  }
}

TEST(EnvsTest, PendulumTruncatesAt200) {
  auto env = make_env("Pendulum-v1", 4);
  env->reset(1);
  std::vector<double> ret(4, 0.0);
  for (int t = 1; t <= 400; ++t) {
    const StepResult r = env->step({0.0f, 1.0f, -2.0f, 0.5f});
    for (int i = 0; i < 4; ++i) {
      ret[i] += r.reward[i];
      EXPECT_LE(r.reward[i], 0.0f);
      EXPECT_FALSE(r.terminated[i]);
      EXPECT_EQ(r.truncated[i] != 0, t % 200 == 0) << t;
      if (t % 200 == 0) {
        EXPECT_EQ(r.episode_length[i], 200);
        EXPECT_NEAR(r.episode_return[i], ret[i], 1e-3);
        ret[i] = 0.0;
      }
    }
  }
}

TEST(EnvsTest, SeedingIsDeterministic) {
  for (const std::string& name : env_names()) {
    auto a = make_env(name, 5);
    auto b = make_env(name, 5);
    const int64_t n_act = a->action_space().discrete ? a->action_space().n : 0;
    const int64_t per = a->action_numel();
    auto run = [&](BatchedEnv& env, uint64_t seed) {
      std::vector<float> trace = env.reset(seed);
      const int steps = per > 1 ? 100 : 300;  // several actions: a slower MuJoCo environment
      for (int t = 0; t < steps; ++t) {
        std::vector<float> act(5 * per);
        for (int i = 0; i < 5 * per; ++i)
          act[i] = n_act ? scrambled(t, i, n_act) : static_cast<float>(std::sin(t * 0.3 + i));
        const StepResult r = env.step(act);
        trace.insert(trace.end(), r.obs.begin(), r.obs.end());
        trace.insert(trace.end(), r.reward.begin(), r.reward.end());
      }
      return trace;
    };
    const std::vector<float> first = run(*a, 99);
    EXPECT_EQ(first, run(*b, 99)) << name;
    EXPECT_EQ(first, run(*a, 99)) << name << ": reset must restart the generators";
    EXPECT_NE(first, run(*b, 100)) << name;
    // Envs in one batch start differently.
    std::vector<float> obs = a->reset(99);
    const int64_t od = a->obs_numel();
    EXPECT_FALSE(std::equal(obs.begin(), obs.begin() + od, obs.begin() + od)) << name;
  }
}

TEST(EnvsTest, UnknownNameListsKnownNames) {
  try {
    make_env("CartPole-v0", 2);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("CartPole-v0"), std::string::npos) << msg;
    for (const std::string& n : env_names()) EXPECT_NE(msg.find(n), std::string::npos) << msg;
  }
  EXPECT_THROW(make_env("CartPole-v1", 0), UserError);
}

TEST(EnvsTest, BadActionsRaiseUserErrors) {
  for (const std::string& name : env_names()) {
    auto env = make_env(name, 3);
    const size_t per = static_cast<size_t>(env->action_numel());
    const std::vector<float> zeros(3 * per, 0.0f);
    EXPECT_THROW(env->step(zeros), UserError) << name << ": step before reset";
    env->reset(0);
    try {
      env->step(std::vector<float>(2 * per, 0.0f));
      FAIL() << name << ": expected a UserError";
    } catch (const UserError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(name), std::string::npos) << msg;
      EXPECT_NE(msg.find(cat("expected ", 3 * per, " ")), std::string::npos) << msg;
    }
    EXPECT_THROW(env->step(std::vector<float>(3 * per + 1, 0.0f)), UserError) << name;
    std::vector<float> with_nan = zeros;
    with_nan[per] = NAN;
    EXPECT_THROW(env->step(with_nan), UserError) << name;
    if (env->action_space().discrete) {
      const float n = static_cast<float>(env->action_space().n);
      EXPECT_THROW(env->step({0, n, 0}), UserError) << name;
      EXPECT_THROW(env->step({0, -1, 0}), UserError) << name;
      EXPECT_THROW(env->step({0, 0.5f, 0}), UserError) << name;
    }
    EXPECT_NO_THROW(env->step(zeros)) << name;
  }
}

TEST(EnvsTest, Spaces) {
  struct Want {
    std::string name;
    int64_t obs, n;  // n: discrete actions, 0 for a box
  };
  for (const Want& w : std::vector<Want>{{"CartPole-v1", 4, 2},
                                         {"Pendulum-v1", 3, 0},
                                         {"Acrobot-v1", 6, 3},
                                         {"MountainCar-v0", 2, 3}}) {
    auto env = make_env(w.name, 2);
    EXPECT_EQ(env->name(), w.name);
    EXPECT_EQ(env->num_envs(), 2);
    const Space& os = env->observation_space();
    EXPECT_EQ(os.shape, std::vector<int64_t>{w.obs}) << w.name;
    EXPECT_FALSE(os.discrete);
    EXPECT_EQ(static_cast<int64_t>(os.low.size()), w.obs);
    EXPECT_EQ(static_cast<int64_t>(os.high.size()), w.obs);
    const Space& as = env->action_space();
    EXPECT_EQ(as.discrete, w.n > 0) << w.name;
    if (w.n) {
      EXPECT_EQ(as.n, w.n);
      EXPECT_EQ(env->action_numel(), 1);
    } else {
      EXPECT_EQ(as.shape, std::vector<int64_t>{1});
      EXPECT_EQ(as.low, std::vector<float>{-2.0f});
      EXPECT_EQ(as.high, std::vector<float>{2.0f});
    }
    // Observations stay inside the declared box.
    std::vector<float> obs = env->reset(3);
    for (int t = 0; t < 300; ++t) {
      for (size_t k = 0; k < obs.size(); ++k) {
        ASSERT_GE(obs[k], os.low[k % w.obs]) << w.name;
        ASSERT_LE(obs[k], os.high[k % w.obs]) << w.name;
      }
      std::vector<float> act(2);
      for (int i = 0; i < 2; ++i) act[i] = w.n ? scrambled(t, i, w.n) : 2.0f;
      obs = env->step(act).obs;
    }
  }
}

// The target of a synthetic observation, recomputed from the documented rule.
int64_t synthetic_target(const float* obs, int64_t channel_numel, int64_t num_actions) {
  double sum = 0.0;
  for (int64_t k = 0; k < channel_numel; ++k) sum += obs[k];
  return static_cast<int64_t>(std::floor(sum * num_actions)) % num_actions;
}

TEST(EnvsTest, SyntheticRewardsTheHiddenTarget) {
  EnvOptions opts;
  opts.obs_shape = {3, 5, 7};  // odd element count
  opts.episode_length = 10;
  opts.num_actions = 3;
  const int64_t n = 6, numel = 105, channel = 35;
  auto env = make_env("synthetic", n, opts);
  EXPECT_EQ(env->name(), "synthetic");
  EXPECT_EQ(env->observation_space().shape, opts.obs_shape);
  EXPECT_EQ(env->obs_numel(), numel);
  EXPECT_TRUE(env->action_space().discrete);
  EXPECT_EQ(env->action_space().n, 3);
  std::vector<float> obs = env->reset(5);
  ASSERT_EQ(static_cast<int64_t>(obs.size()), n * numel);
  std::vector<int64_t> hits(n, 0);
  std::set<int64_t> targets_seen;
  for (int64_t t = 1; t <= 35; ++t) {
    std::vector<float> act(n);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < numel; ++k) {
        ASSERT_GE(obs[i * numel + k], 0.0f);
        ASSERT_LT(obs[i * numel + k], 1.0f);
      }
      const int64_t target = synthetic_target(&obs[i * numel], channel, 3);
      targets_seen.insert(target);
      // Even envs answer right, odd envs answer wrong.
      act[i] = static_cast<float>(i % 2 == 0 ? target : (target + 1) % 3);
    }
    const StepResult r = env->step(act);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(r.reward[i], i % 2 == 0 ? 1.0f : 0.0f);
      hits[i] += r.reward[i] > 0;
      EXPECT_FALSE(r.terminated[i]);
      EXPECT_EQ(r.truncated[i] != 0, t % 10 == 0);
      if (t % 10 == 0) {
        EXPECT_EQ(r.episode_length[i], 10);
        EXPECT_EQ(r.episode_return[i], i % 2 == 0 ? 10.0f : 0.0f);
        ASSERT_EQ(static_cast<int64_t>(r.final_obs.size()), n * numel);
        EXPECT_NE(r.final_obs[i * numel], r.obs[i * numel]);
      } else {
        EXPECT_EQ(r.episode_length[i], 0);
        EXPECT_TRUE(r.final_obs.empty());
      }
    }
    // Consecutive observations differ.
    EXPECT_NE(std::vector<float>(obs.begin(), obs.begin() + numel),
              std::vector<float>(r.obs.begin(), r.obs.begin() + numel));
    obs = r.obs;
  }
  EXPECT_EQ(targets_seen.size(), 3u);
}

TEST(EnvsTest, SyntheticObservationsLookUniform) {
  EnvOptions opts;
  opts.obs_shape = {3, 64, 64};
  auto env = make_env("synthetic", 4, opts);
  const std::vector<float> obs = env->reset(0);
  double sum = 0, sq = 0;
  for (float v : obs) {
    sum += v;
    sq += v * v;
  }
  const double mean = sum / obs.size(), var = sq / obs.size() - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.01);
  EXPECT_NEAR(var, 1.0 / 12.0, 0.005);
}

TEST(EnvsTest, SyntheticRejectsBadOptions) {
  EnvOptions opts;
  opts.obs_shape = {};
  EXPECT_THROW(make_env("synthetic", 2, opts), UserError);
  opts.obs_shape = {3, 0, 4};
  EXPECT_THROW(make_env("synthetic", 2, opts), UserError);
  opts = EnvOptions{};
  opts.episode_length = 0;
  EXPECT_THROW(make_env("synthetic", 2, opts), UserError);
  opts = EnvOptions{};
  opts.num_actions = 0;
  EXPECT_THROW(make_env("synthetic", 2, opts), UserError);
}

TEST(EnvsTest, StepIntoReusesTheResult) {
  auto env = make_env("CartPole-v1", 8);
  auto twin = make_env("CartPole-v1", 8);
  env->reset(4);
  twin->reset(4);
  StepResult reused;
  for (int t = 0; t < 100; ++t) {
    std::vector<float> act(8);
    for (int i = 0; i < 8; ++i) act[i] = scrambled(t, i, 2);
    env->step_into(act, reused);
    const StepResult fresh = twin->step(act);
    ASSERT_EQ(reused.obs, fresh.obs);
    ASSERT_EQ(reused.final_obs, fresh.final_obs);
    ASSERT_EQ(reused.episode_length, fresh.episode_length);
  }
}

// The MuJoCo locomotion environments (their steps are compared with Gymnasium's in
// python/tests/test_gym_mujoco.py). In a build without MuJoCo they are a clear UserError.
bool built_with_mujoco() {
  const std::vector<std::string> names = env_names();
  return std::find(names.begin(), names.end(), "HalfCheetah-v5") != names.end();
}

TEST(MujocoEnvsTest, SpacesOrAClearError) {
  if (!built_with_mujoco()) {
    testing::expect_user_error([] { make_env("Hopper-v5", 1); }, {"Hopper-v5", "without"});
    GTEST_SKIP() << "built without MuJoCo";
  }
  struct Want {
    std::string name;
    int64_t obs, act;
    float bound;  // actions in [-bound, bound]
  };
  for (const Want& w : std::vector<Want>{{"HalfCheetah-v5", 17, 6, 1.0f},
                                         {"Hopper-v5", 11, 3, 1.0f},
                                         {"Walker2d-v5", 17, 6, 1.0f},
                                         {"Ant-v5", 105, 8, 1.0f},
                                         {"Humanoid-v5", 348, 17, 0.4f}}) {
    auto env = make_env(w.name, 2);
    EXPECT_EQ(env->name(), w.name);
    EXPECT_EQ(env->observation_space().shape, std::vector<int64_t>{w.obs}) << w.name;
    const Space& a = env->action_space();
    EXPECT_FALSE(a.discrete);
    EXPECT_EQ(a.shape, std::vector<int64_t>{w.act}) << w.name;
    EXPECT_EQ(a.low, std::vector<float>(w.act, -w.bound)) << w.name;
    EXPECT_EQ(a.high, std::vector<float>(w.act, w.bound)) << w.name;
  }
}

TEST(MujocoEnvsTest, HalfCheetahTruncatesAt1000Steps) {
  if (!built_with_mujoco()) GTEST_SKIP() << "built without MuJoCo";
  auto env = make_env("HalfCheetah-v5", 2);
  env->reset(3);
  std::vector<float> act(12);
  for (int t = 1; t <= 1000; ++t) {
    for (int k = 0; k < 12; ++k) act[k] = static_cast<float>(std::sin(0.1 * t + k));
    const StepResult r = env->step(act);
    for (int i = 0; i < 2; ++i) {
      ASSERT_FALSE(r.terminated[i]) << "step " << t;
      ASSERT_EQ(r.truncated[i] != 0, t == 1000) << "step " << t;
    }
    if (t < 1000) continue;
    EXPECT_EQ(r.episode_length, (std::vector<int64_t>{1000, 1000}));
    ASSERT_EQ(r.final_obs.size(), r.obs.size());
    EXPECT_NE(r.final_obs, r.obs);  // obs holds the new episodes' first observations
    for (float x : r.final_obs) EXPECT_TRUE(std::isfinite(x));
  }
}

TEST(MujocoEnvsTest, HopperTerminatesWhenUnhealthy) {
  if (!built_with_mujoco()) GTEST_SKIP() << "built without MuJoCo";
  auto env = make_env("Hopper-v5", 1);
  const std::vector<float> start = env->reset(1);
  // Reset: qpos = (0, 1.25, 0, 0, 0, 0) + U(-0.005, 0.005); the observation drops qpos[0].
  EXPECT_NEAR(start[0], 1.25, 0.005);
  for (int k = 1; k < 11; ++k) EXPECT_LE(std::abs(start[k]), 0.005f) << k;
  const std::vector<float> push = {1.0f, -1.0f, 1.0f};  // falls within a few hundred steps
  for (int t = 1; t <= 1000; ++t) {
    const StepResult r = env->step(push);
    if (!r.terminated[0]) continue;
    const float z = r.final_obs[0], angle = r.final_obs[1];
    EXPECT_TRUE(z <= 0.7f || std::abs(angle) >= 0.2f) << "z " << z << " angle " << angle;
    EXPECT_EQ(r.episode_length[0], t);
    EXPECT_NEAR(r.obs[0], 1.25, 0.005);  // the automatic reset
    return;
  }
  FAIL() << "Hopper did not fall in 1000 steps";
}

TEST(MujocoEnvsTest, ResetNoiseFollowsGymnasium) {
  if (!built_with_mujoco()) GTEST_SKIP() << "built without MuJoCo";
  // HalfCheetah's qvel noise is 0.1 * N(0, 1): observation values 8..16 of each reset.
  auto env = make_env("HalfCheetah-v5", 400);
  const std::vector<float> obs = env->reset(0);
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < 400; ++i)
    for (int k = 8; k < 17; ++k) {
      sum += obs[i * 17 + k];
      sum_sq += obs[i * 17 + k] * obs[i * 17 + k];
    }
  const double n = 400 * 9, mean = sum / n, sd = std::sqrt(sum_sq / n - mean * mean);
  EXPECT_LT(std::abs(mean), 0.01);
  EXPECT_NEAR(sd, 0.1, 0.005);
}

TEST(MujocoEnvsTest, MissingModelFileIsAUserError) {
  if (!built_with_mujoco()) GTEST_SKIP() << "built without MuJoCo";
  setenv("TEMPO_MUJOCO_ASSETS", "/nonexistent/assets", 1);
  testing::expect_user_error([] { make_env("Walker2d-v5", 1); },
                             {"/nonexistent/assets/walker2d_v5.xml", "TEMPO_MUJOCO_ASSETS"});
  unsetenv("TEMPO_MUJOCO_ASSETS");
}

}  // namespace
}  // namespace tempo::rl
