// RL algorithms as recurrent-tensor programs: the returns sub-program against a hand-computed
// reference, short training runs, and configuration errors.
#include "driver/compile.h"
#include "rl/algorithms/algorithms.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "api/tempo.h"
#include "rl/algorithms/checkpoint.h"
#include "util/error.h"

namespace tempo::rl {
namespace {

// A source over (t) giving row t of `rows` (each of size N).
RT table(Context& ctx, const Dim& t, std::vector<std::vector<float>> rows) {
  int64_t n = static_cast<int64_t>(rows[0].size());
  auto fn = [rows, n](const std::vector<HostTensor>&, const std::vector<int64_t>& p) {
    return std::vector<HostTensor>{HostTensor::from(rows.at(p[0]), {n})};
  };
  return ctx.udf("table", fn, {}, {TensorType{DType::Float32, {n}}}, {t})[0];
}

TEST(Returns, EpisodeBoundariesMatchHandComputed) {
  // Two envs, six steps; env 0 ends an episode after steps 1 and 4, env 1 after step 2.
  std::vector<std::vector<float>> r = {{1, 2}, {2, 0}, {3, 1}, {4, 1}, {5, 3}, {6, 1}};
  std::vector<std::vector<float>> d = {{0, 0}, {1, 0}, {0, 1}, {0, 0}, {1, 0}, {0, 0}};
  const double g = 0.5;
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT ret = discounted_returns(table(ctx, t, r), table(ctx, t, d), g, t).retain();
  Executable exe = compile(ctx, {{t.bound, 6}});
  exe.run();
  // Hand-computed: G_t = r_t + g * (1 - d_t) * G_{t+1}.
  const double want[6][2] = {
      {1 + 0.5 * 2, 2 + 0.5 * 0 + 0.25 * 1}, {2, 0 + 0.5 * 1}, {3 + 0.5 * 4 + 0.25 * 5, 1},
      {4 + 0.5 * 5, 1 + 0.5 * 3 + 0.25 * 1}, {5, 3 + 0.5 * 1}, {6, 1}};
  for (int64_t k = 0; k < 6; ++k) {
    HostTensor got = exe.get(ret, {k});
    for (int64_t n = 0; n < 2; ++n)
      EXPECT_NEAR(got.at(n), want[k][n], 1e-5) << "t=" << k << " n=" << n;
  }
}

TEST(Config, BadInputIsAUserError) {
  auto bad = [](auto change) {
    TrainConfig c;
    change(c);
    EXPECT_THROW(validate(c), UserError);
  };
  bad([](TrainConfig& c) { c.algo = "rainbow"; });
  bad([](TrainConfig& c) { c.env = "Pong-v5"; });
  bad([](TrainConfig& c) { c.lr = -1; });
  bad([](TrainConfig& c) { c.iterations = 0; });
  bad([](TrainConfig& c) { c.num_envs = 0; });
  bad([](TrainConfig& c) { c.steps = 0; });
  bad([](TrainConfig& c) { c.hidden.clear(); });
  bad([](TrainConfig& c) { c.hidden = {64, 0}; });
  EXPECT_THROW(TrainConfig().set_hidden_layers(0), UserError);
  bad([](TrainConfig& c) { c.optimizer = "lbfgs"; });
  bad([](TrainConfig& c) { c.truncation = "sometimes"; });
  bad([](TrainConfig& c) {
    c = TrainConfig::defaults("ppo");
    c.n_step = 8;  // PPO uses GAE
  });
  bad([](TrainConfig& c) { c.n_step = -1; });
  bad([](TrainConfig& c) { c.per_step = true; });
  bad([](TrainConfig& c) {
    c = TrainConfig::defaults("ppo");
    c.minibatches = 3;  // does not divide 4 x 128
  });
  EXPECT_NO_THROW(validate(TrainConfig{}));
  EXPECT_NO_THROW(validate(TrainConfig::defaults("ppo")));
}

// Each algorithm compiles and runs two short iterations, on discrete and continuous actions:
// one test each, so that the suite runs them side by side (under no_passes. their unoptimized
// programs take seconds each to schedule).
struct Case {
  std::string algo, env;
};

class EveryAlgorithm : public ::testing::TestWithParam<Case> {};

TEST_P(EveryAlgorithm, CompilesAndRuns) {
  TrainConfig c = TrainConfig::defaults(GetParam().algo);
  c.env = GetParam().env;
  c.iterations = 2;
  c.num_envs = 2;
  c.steps = 16;
  std::ostringstream log;
  TrainResult res = train(c, &log);
  EXPECT_EQ(res.curve.size(), 2u) << log.str();
  EXPECT_EQ(res.curve.back().env_steps, 2 * 2 * 16);
}

INSTANTIATE_TEST_SUITE_P(Train, EveryAlgorithm,
                         ::testing::Values(Case{"reinforce", "CartPole-v1"},
                                           Case{"a2c", "CartPole-v1"},
                                           Case{"ppo", "CartPole-v1"},
                                           Case{"a2c", "Pendulum-v1"},
                                           Case{"ppo", "Pendulum-v1"}),
                         [](const auto& info) {
                           std::string env = info.param.env;
                           return info.param.algo + "_" + env.substr(0, env.find('-'));
                         });

// n-step REINFORCE on image observations, with one hidden layer.
TEST(Train, ImageObservationsCompileAndRun) {
  TrainConfig c = TrainConfig::defaults("reinforce");
  c.env = "synthetic";
  c.env_options.obs_shape = {3, 8, 8};
  c.n_step = 4;
  c.per_step = true;
  c.normalize_returns = false;
  c.set_hidden_layers(1);
  c.iterations = 3;
  c.num_envs = 2;
  c.steps = 8;
  TrainResult res = train(c, nullptr);
  EXPECT_EQ(res.curve.size(), 3u);
  EXPECT_EQ(res.iteration_seconds.size(), 2u);
  EXPECT_GT(res.peak_tracked_bytes, 0);
}

// PPO with CleanRL's CartPole settings: 4 epochs x 4 minibatches per rollout of 4 x 128 steps,
// parameters as state over (iteration, update). The first 40 iterations of CleanRL's 976: its
// learning rate is still 0.96x the initial one there, so it stays constant here (decayed to 0
// over 40 iterations it would stall the policy, which starts uniform: gain 0.01 on its logits).
TEST(Train, PpoLearnsCartPole) {
  TrainConfig c = TrainConfig::defaults("ppo");
  c.iterations = 40;
  c.lr_decay = false;
  std::ostringstream log;
  TrainResult res = train(c, &log);
  ASSERT_EQ(res.curve.size(), 40u);
  // Random play: about 20, up to 40 over the few episodes 4 envs end in the first rollout.
  EXPECT_LT(res.curve.front().mean_return, 50) << log.str();
  EXPECT_GT(res.final_mean_return, 120) << log.str();
}

// A short fixed-seed run clearly improves CartPole's mean return (random play: about 20).
TEST(Train, A2cLearnsCartPole) {
  TrainConfig c;
  c.algo = "a2c";
  c.iterations = 60;
  c.compile.seed = 1;
  std::ostringstream log;
  TrainResult res = train(c, &log);
  ASSERT_FALSE(res.curve.empty());
  EXPECT_LT(res.curve.front().mean_return, 40) << log.str();
  EXPECT_GT(res.final_mean_return, 60) << log.str();
}

// Every episode lasts one step and is truncated there: observation 0, reward 1 whatever the
// action (two actions).
class TruncatedAtOnce final : public BatchedEnv {
 public:
  explicit TruncatedAtOnce(int64_t n)
      : BatchedEnv(n), obs_{{1}, false, 0, {-1.0f}, {1.0f}}, act_{{}, true, 2, {}, {}} {}
  const Space& observation_space() const override { return obs_; }
  const Space& action_space() const override { return act_; }
  std::string name() const override { return "TruncatedAtOnce"; }
  std::string state() const override { return "stateless"; }  // so that runs save checkpoints
  std::vector<float> reset(uint64_t) override { return std::vector<float>(num_envs(), 0.0f); }
  void step_into(const std::vector<float>& actions, StepResult& out) override {
    check_step(actions, true);
    const size_t n = static_cast<size_t>(num_envs());
    out.obs.assign(n, 0.0f);
    out.final_obs.assign(n, 0.0f);
    out.reward.assign(n, 1.0f);
    out.terminated.assign(n, 0);
    out.truncated.assign(n, 1);
    out.episode_return.assign(n, 1.0f);
    out.episode_length.assign(n, 1);
  }

 private:
  Space obs_, act_;
};

// PPO's value of observation 0 after training on TruncatedAtOnce with `truncation`, from the
// value network's parameters in the run's final checkpoint (hidden 4, one hidden layer).
double value_after_training(const std::string& truncation) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("tempo-truncation-" + std::to_string(std::random_device()()));
  std::filesystem::create_directories(dir);
  TrainConfig c = TrainConfig::defaults("ppo");
  c.make_env = [](int64_t n) { return std::make_unique<TruncatedAtOnce>(n); };
  c.env = "TruncatedAtOnce";
  c.truncation = truncation;
  c.gamma = 0.5;
  c.lr = 0.02;
  c.lr_decay = false;
  c.iterations = 40;
  c.num_envs = 4;
  c.steps = 8;
  c.set_hidden_width(4);
  c.set_hidden_layers(1);
  c.save_dir = dir.string();
  train(c, nullptr);
  const TrainCheckpoint cp = load_checkpoint(dir.string());
  std::filesystem::remove_all(dir);
  // The policy's 0.weight, 0.bias, 1.weight, 1.bias, then the value network's.
  EXPECT_EQ(cp.parameters.size(), 8u);
  if (cp.parameters.size() != 8u) return NAN;
  const HostTensor &b0 = cp.parameters[5], &w1 = cp.parameters[6], &b1 = cp.parameters[7];
  EXPECT_EQ(b0.numel(), 4);
  EXPECT_EQ(w1.numel(), 4);
  double v = b1.at(0);  // obs 0: V = w1 . tanh(b0) + b1
  for (int64_t k = 0; k < 4; ++k) v += w1.at(k) * std::tanh(b0.at(k));
  return v;
}

// At a truncation, "bootstrap" adds gamma V(final_obs) to the return and "terminate" nothing: with
// reward 1 and gamma 0.5 the values of the one observation converge to 1 / (1 - gamma) = 2 and
// to 1.
TEST(Train, TruncationBootstrapsOrTerminates) {
  // A fresh kernel cache, to see every generated kernel of this small program compile.
  const std::string cache = ::testing::TempDir() + "tempo_truncation." + std::to_string(getpid());
  std::filesystem::remove_all(cache);
  setenv("TEMPO_CACHE_DIR", cache.c_str(), 1);
  const double bootstrapped = value_after_training("bootstrap");
  const double terminated = value_after_training("terminate");
  unsetenv("TEMPO_CACHE_DIR");
  EXPECT_NEAR(bootstrapped, 2.0, 0.15);
  EXPECT_NEAR(terminated, 1.0, 0.1);
  // A source the compiler rejected stays as k<key>.<pid>.cpp (the program then falls back to
  // LibTorch). Adam's cluster over the [4, 1] first layer and its [4] bias read the scalar bias
  // corrections per row, and the scalars were once loaded in the column loop only.
  std::vector<std::string> rejected;
  if (std::filesystem::exists(cache + "/kernels"))
    for (const auto& e : std::filesystem::directory_iterator(cache + "/kernels"))
      if (e.path().stem().has_extension()) rejected.push_back(e.path().filename().string());
  std::filesystem::remove_all(cache);
  EXPECT_TRUE(rejected.empty()) << ::testing::PrintToString(rejected);
}

}  // namespace
}  // namespace tempo::rl

namespace tempo::rl {
namespace {

// Fusion only regroups ops: with the regions running the same LibTorch kernels (no code
// generation), PPO's returns are bit for bit those of the unfused program, with far fewer
// launches. Generated loops round differently (last bits) but learn the same.
TEST(Train, FusionIsExactAndCutsLaunches) {
  if (std::getenv("TEMPO_NO_PASS")) GTEST_SKIP() << "compares fusion on and off itself";
  TrainConfig c = TrainConfig::defaults("ppo");
  c.iterations = 3;
  c.compile.codegen = false;
  TrainResult fused = train(c, nullptr);
  c.compile.passes.fusion = false;
  TrainResult unfused = train(c, nullptr);
  ASSERT_EQ(fused.curve.size(), unfused.curve.size());
  for (size_t k = 0; k < fused.curve.size(); ++k)
    EXPECT_EQ(fused.curve[k].mean_return, unfused.curve[k].mean_return) << "iteration " << k;
  EXPECT_LT(fused.launches * 3, unfused.launches);
}

// Tiling the learner's rollout along t (gradient accumulation over tiles of 16 steps) learns the
// same: only the order of float sums changes.
TEST(Train, TiledLearnerLearnsTheSame) {
  if (std::getenv("TEMPO_NO_PASS")) GTEST_SKIP() << "compares tiling on and off itself";
  for (const char* algo : {"reinforce", "a2c"}) {
    TrainConfig c = TrainConfig::defaults(algo);
    c.per_step = false;  // the learner reads the rollout whole
    c.iterations = 4;
    c.compile.codegen = false;
    TrainResult whole = train(c, nullptr);
    c.compile.passes.tiles = {{"t", 16}};
    TrainResult tiled = train(c, nullptr);
    ASSERT_EQ(whole.curve.size(), tiled.curve.size());
    for (size_t k = 0; k < whole.curve.size(); ++k)
      EXPECT_NEAR(whole.curve[k].mean_return, tiled.curve[k].mean_return, 1e-9)
          << algo << " iteration " << k;
    EXPECT_NE(whole.launches, tiled.launches) << algo << ": nothing was tiled";
  }
}

// Under a device-memory budget below one rollout, the learner's rollout is tiled and swapped to
// host memory between acting and learning: the same learning, within the budget, with the
// rollout held in host memory instead.
TEST(Train, MemoryBudgetLearnsTheSame) {
  for (const char* algo : {"reinforce"}) {
    TrainConfig c = TrainConfig::defaults(algo);
    c.env = "synthetic";
    c.env_options.obs_shape = {3, 32, 32};
    c.env_options.episode_length = 16;
    c.num_envs = 16;
    c.set_hidden_width(16);  // the rollout dominates memory, as with image observations
    c.iterations = 4;
    c.compile.codegen = false;
    TrainResult free = train(c, nullptr);
    const int64_t rollout = c.num_envs * (c.steps + 1) * 3 * 32 * 32 * 4;
    c.compile.memory_budget = rollout / 2;
    TrainResult bounded = train(c, nullptr);
    ASSERT_EQ(free.curve.size(), bounded.curve.size());
    for (size_t k = 0; k < free.curve.size(); ++k)
      EXPECT_NEAR(free.curve[k].mean_return, bounded.curve[k].mean_return, 1e-9)
          << algo << " iteration " << k;
    EXPECT_GT(free.peak_tracked_bytes, rollout) << algo;
    EXPECT_LE(bounded.peak_tracked_bytes, c.compile.memory_budget) << algo;
    EXPECT_GT(bounded.peak_host_bytes, rollout / 2) << algo;
  }
}

// PPO's rollout of image observations is only read whole (the value batch and the minibatches
// source): with block stores it lives in one block per iteration, allocated at its second step
// (the first is made at the end of the previous iteration, while that iteration's block is still
// in use), and those reads are views instead of stacked copies of the rollout. The same returns;
// the peak lower by more than half a rollout.
TEST(Train, ImageRolloutsReadWholeLiveInBlocks) {
  if (std::getenv("TEMPO_NO_BLOCK_STORES")) GTEST_SKIP() << "block stores are switched off";
  // Per-step learners (no vectorization) do not read the rollout whole.
  if (std::getenv("TEMPO_NO_PASS")) GTEST_SKIP() << "needs the passes (vectorize)";
  TrainConfig c = TrainConfig::defaults("ppo");
  c.env = "synthetic";
  c.env_options.obs_shape = {3, 32, 32};  // 192 KiB a step for 16 envs
  c.env_options.episode_length = 16;
  c.num_envs = 16;
  c.steps = 16;
  c.set_hidden_width(16);
  c.iterations = 3;
  TrainResult blocks = train(c, nullptr);
  ::setenv("TEMPO_NO_BLOCK_STORES", "1", 1);
  TrainResult points = train(c, nullptr);
  ::unsetenv("TEMPO_NO_BLOCK_STORES");
  ASSERT_EQ(blocks.curve.size(), points.curve.size());
  for (size_t k = 0; k < blocks.curve.size(); ++k)
    EXPECT_NEAR(blocks.curve[k].mean_return, points.curve[k].mean_return, 1e-9) << k;
  const int64_t rollout = c.num_envs * (c.steps + 1) * 3 * 32 * 32 * 4;
  EXPECT_LE(blocks.peak_tracked_bytes, points.peak_tracked_bytes - rollout / 2)
      << blocks.peak_tracked_bytes << " vs " << points.peak_tracked_bytes;
}

// n-step REINFORCE learning from the acting pass (TEMPO Fig. 23): with proximity the learner
// at t runs once step t + n - 1 has acted, so only about n steps of observations are alive
// instead of the rollout, and it learns the same (the gradient summed step by step instead of
// in one batched sum: equal up to rounding, the same actions).
// n-step learning interleaved with acting (TEMPO Fig. 23): with --proximity the learner of step t
// runs n steps behind acting and frees o[t] then, instead of keeping the rollout; the values are
// those of the batched program. The interleaved peak is at most `fraction` of the rollout. The
// batched program holds the rollout of observations once: the reward windows of n-step returns
// leave the environment step's next observation its lifetime bound within the acting loop.
void expect_nstep_interleaves(const std::string& algo, double fraction) {
  TrainConfig c = TrainConfig::defaults(algo);
  c.env = "synthetic";
  c.env_options.obs_shape = {3, 32, 32};
  c.num_envs = 16;
  c.set_hidden_width(16);  // the rollout dominates memory, as with image observations
  c.n_step = 4;
  c.normalize_returns = false;  // statistics of the whole rollout would wait for its end
  c.iterations = 3;
  c.compile.codegen = false;
  TrainResult batched = train(c, nullptr);
  c.compile.proximity = true;
  TrainResult interleaved = train(c, nullptr);
  const int64_t rollout = c.num_envs * (c.steps + 1) * 3 * 32 * 32 * 4;
  EXPECT_GT(batched.peak_tracked_bytes, rollout);
  EXPECT_LT(batched.peak_tracked_bytes, 1.5 * static_cast<double>(rollout));
  EXPECT_LT(interleaved.peak_tracked_bytes, fraction * static_cast<double>(rollout));

  TrainConfig cartpole = TrainConfig::defaults(algo);
  cartpole.n_step = 4;
  cartpole.normalize_returns = false;
  cartpole.iterations = 6;
  cartpole.compile.codegen = false;
  TrainResult a = train(cartpole, nullptr);
  cartpole.compile.proximity = true;
  TrainResult b = train(cartpole, nullptr);
  ASSERT_EQ(a.curve.size(), b.curve.size());
  for (size_t k = 0; k < a.curve.size(); ++k)
    EXPECT_NEAR(a.curve[k].mean_return, b.curve[k].mean_return, 1e-9) << "iteration " << k;
}

// Unfused, the per-op statements with proximity exceed isl's operation bound.
TEST(Train, NStepLearningInterleavesWithActing) {
  if (std::getenv("TEMPO_NO_PASS")) GTEST_SKIP() << "needs the passes (interleaving, fusion)";
  expect_nstep_interleaves("reinforce", 0.25);
}

// A2C with n-step advantages: the target of step t reads V(o[t + n]) and the rewards up to
// t + n - 1 only (its peak holds two networks' parameters and Adam states: 0.32 of the rollout).
TEST(Train, NStepA2cInterleavesWithActing) {
  if (std::getenv("TEMPO_NO_PASS")) GTEST_SKIP() << "needs the passes (interleaving, fusion)";
  expect_nstep_interleaves("a2c", 0.4);
}

// n-step A2C learns: CartPole's mean return rises well above a random policy's (~22).
TEST(Train, NStepA2cLearnsCartPole) {
  TrainConfig c = TrainConfig::defaults("a2c");
  c.n_step = 8;
  c.iterations = 200;
  TrainResult r = train(c, nullptr);
  EXPECT_GT(r.curve.back().mean_return, 80.0);
}

}  // namespace
}  // namespace tempo::rl
