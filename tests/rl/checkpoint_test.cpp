// Training checkpoints: a run stopped part-way and resumed from its checkpoint gives the curve
// and the parameters (bit for bit) of the uninterrupted run; flags that differ, missing or
// corrupt checkpoints and a full disk are user errors, and a failed save keeps the previous
// checkpoint.
#include "rl/algorithms/checkpoint.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../expect_error.h"
#include "rl/algorithms/algorithms.h"
#include "rl/algorithms/saved_policy.h"
#include "rl/envs/env.h"

namespace tempo::rl {
namespace {

namespace fs = std::filesystem;
using testing::expect_user_error;

class TempDir {
 public:
  TempDir() {
    path_ =
        fs::temp_directory_path() / ("tempo-checkpoint-" + std::to_string(std::random_device()()));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str(const std::string& sub = "") const { return (path_ / sub).string(); }

 private:
  fs::path path_;
};

// A small run of `algo` (a second or two).
TrainConfig small(const std::string& algo, const std::string& env = "CartPole-v1") {
  TrainConfig cfg = TrainConfig::defaults(algo);
  cfg.env = env;
  cfg.iterations = 7;
  cfg.num_envs = 3;
  cfg.steps = 16;
  cfg.set_hidden_width(8);
  cfg.set_hidden_layers(1);
  cfg.epochs = 2;
  cfg.minibatches = 2;
  cfg.keep_parameters = true;
  return cfg;
}

struct StopAfter {};  // thrown by on_iteration to stop a run part-way

void expect_same_run(const TrainResult& a, const TrainResult& b) {
  ASSERT_EQ(a.curve.size(), b.curve.size());
  for (size_t k = 0; k < a.curve.size(); ++k) {
    EXPECT_EQ(a.curve[k].env_steps, b.curve[k].env_steps) << "row " << k;
    const double x = a.curve[k].mean_return, y = b.curve[k].mean_return;
    EXPECT_TRUE((std::isnan(x) && std::isnan(y)) || x == y) << "row " << k << ": " << x << " " << y;
  }
  ASSERT_EQ(a.parameters.size(), b.parameters.size());
  for (size_t k = 0; k < a.parameters.size(); ++k) {
    EXPECT_EQ(a.parameters[k].shape, b.parameters[k].shape);
    EXPECT_TRUE(a.parameters[k].data == b.parameters[k].data) << "parameter " << k << " differs";
  }
  EXPECT_EQ(a.episodes, b.episodes);
}

// Trains `cfg` straight, then again with checkpoints every `every` iterations stopped after
// `stop` iterations, resumed from its checkpoint; both must agree. Returns where it resumed.
int64_t check_resume(TrainConfig cfg, int64_t every, int64_t stop) {
  const TrainResult straight = train(cfg, nullptr);
  TempDir dir;
  TrainConfig first = cfg;
  first.save_dir = dir.str("run");
  first.save_every = every;
  first.on_iteration = [stop](const std::vector<CurvePoint>& curve) {
    if (static_cast<int64_t>(curve.size()) == stop) throw StopAfter{};
  };
  EXPECT_THROW(train(first, nullptr), StopAfter);
  const int64_t at = load_checkpoint(first.save_dir).iterations;
  TrainConfig again = cfg;
  again.resume_dir = first.save_dir;
  const TrainResult resumed = train(again, nullptr);
  expect_same_run(straight, resumed);
  return at;
}

class ResumeEqualsUninterrupted : public ::testing::TestWithParam<const char*> {};

TEST_P(ResumeEqualsUninterrupted, CurveAndParametersBitForBit) {
  // Resuming is the same code for every algorithm; with every pass off, PPO's program takes
  // seconds to schedule and this test compiles it three times: A2C and REINFORCE cover it there.
  if (std::getenv("TEMPO_NO_PASS") && std::string(GetParam()) == "ppo")
    GTEST_SKIP() << "PPO's resume runs with the passes on";
  const int64_t at = check_resume(small(GetParam()), 2, 5);
  EXPECT_GE(at, 2);
  EXPECT_LE(at, 4);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ResumeEqualsUninterrupted,
                         ::testing::Values("ppo", "a2c", "reinforce"));

TEST(TrainCheckpoint, ContinuousActionsResumeToo) {  // normal draws, log_std
  TrainConfig cfg = small("a2c", "Pendulum-v1");
  cfg.iterations = 5;
  check_resume(cfg, 1, 3);
}

// The normalizing environment's running statistics and discounted sums travel with the
// environment's state; the saved policy keeps the observation statistics its last rollout used.
TEST(TrainCheckpoint, NormalizedObservationsAndRewardsResumeToo) {
  TrainConfig cfg = small("a2c", "Pendulum-v1");
  cfg.iterations = 5;
  cfg.normalize_observations = cfg.normalize_rewards = true;
  check_resume(cfg, 1, 3);
  TempDir dir;
  cfg.save_dir = dir.str("run");
  train(cfg, nullptr);
  const SavedPolicy p = load_policy(cfg.save_dir);
  ASSERT_TRUE(p.obs_normalization.defined());
  ASSERT_EQ(p.obs_normalization.mean.size(), 3u);
  for (double v : p.obs_normalization.var) EXPECT_GT(v, 0.0);
  EXPECT_NE(p.obs_normalization.mean, std::vector<double>(3, 0.0));
  // Normalized observations are what the policy was trained on: evaluation feeds them too.
  SavedPolicy raw = p;
  raw.obs_normalization = {};
  EXPECT_NE(evaluate(p, 2, 9).mean_return, evaluate(raw, 2, 9).mean_return);
  // Resuming with normalization that the checkpoint was not trained with is refused.
  TrainConfig plain = small("a2c", "Pendulum-v1");
  plain.iterations = 5;
  plain.resume_dir = cfg.save_dir;
  expect_user_error([&] { train(plain, nullptr); }, {"--normalize-obs"});
}

// A small off-policy run whose replay buffer holds `buffer` iterations' transitions, learning
// from the second iteration, DQN's target network copied every third.
TrainConfig small_off_policy(const std::string& algo, int64_t buffer) {
  TrainConfig cfg = small(algo, algo == "dqn" ? "CartPole-v1" : "Pendulum-v1");
  const int64_t per_iteration = cfg.num_envs * cfg.steps;
  cfg.buffer_size = buffer * per_iteration;
  cfg.learning_starts = per_iteration;
  cfg.target_every = 3 * per_iteration;
  cfg.batch_size = 32;
  return cfg;
}

class OffPolicyResumeEqualsUninterrupted : public ::testing::TestWithParam<const char*> {};

// The checkpoint carries the replay buffer, the targets and every optimizer's states: resumed
// after 4 iterations, a buffer of 2 iterations is all the checkpoint's (it wrapped), one of 10
// is the checkpoint's 4 and then the resumed run's; DQN's target network dates from before.
TEST_P(OffPolicyResumeEqualsUninterrupted, CurveAndParametersBitForBit) {
  for (const int64_t buffer : {2, 10}) {
    SCOPED_TRACE(::testing::Message() << "buffer of " << buffer << " iterations");
    EXPECT_EQ(check_resume(small_off_policy(GetParam(), buffer), 2, 5), 4);
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, OffPolicyResumeEqualsUninterrupted,
                         ::testing::Values("dqn", "sac", "td3"));

TEST(TrainCheckpoint, OffPolicyCheckpointHoldsTheBufferAndTargets) {
  TempDir dir;
  TrainConfig cfg = small_off_policy("td3", 4);
  cfg.save_dir = dir.str();
  cfg.save_every = 3;
  const TrainResult res = train(cfg, nullptr);
  const TrainCheckpoint c = load_checkpoint(dir.str());
  EXPECT_EQ(c.iterations, 7);
  // The actor's and both critics' 4 tensors: Adam's two moments each, one target each.
  EXPECT_EQ(c.parameters.size(), 12u);
  EXPECT_EQ(c.optimizer_states.size(), 24u);
  EXPECT_EQ(c.targets.size(), 12u);
  // The latest 4 iterations of 3 envs x 16 steps: observations, actions, rewards, final
  // observations, terminations.
  ASSERT_EQ(c.replay.size(), 5u);
  EXPECT_EQ(c.replay[0].shape, (std::vector<int64_t>{4 * 48, 3}));
  EXPECT_EQ(c.replay[1].shape, (std::vector<int64_t>{4 * 48, 1}));
  EXPECT_EQ(c.replay[2].shape, (std::vector<int64_t>{4 * 48}));
  EXPECT_EQ(c.replay[3].shape, c.replay[0].shape);
  // The saved policy is the actor, evaluated with its mean squashed into the action box.
  const SavedPolicy policy = load_policy(dir.str());
  EXPECT_EQ(policy.algo, "td3");
  for (double r : evaluate(policy, 2, 3).returns) EXPECT_LT(r, 0.0);  // Pendulum's are negative
  // The resumed run must have the buffer it was trained with.
  TrainConfig again = small_off_policy("td3", 2);
  again.resume_dir = dir.str();
  expect_user_error([&] { train(again, nullptr); }, {"--buffer-size 192", "--buffer-size 96"});
}

TEST(TrainCheckpoint, HoldsEverythingAndKeepsOneTensorsFile) {
  TempDir dir;
  TrainConfig cfg = small("ppo");
  cfg.save_dir = dir.str();
  cfg.save_every = 2;
  const TrainResult res = train(cfg, nullptr);
  int tensors_files = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir.str()))
    tensors_files += e.path().filename().string().rfind("checkpoint-", 0) == 0;
  EXPECT_EQ(tensors_files, 1);
  EXPECT_TRUE(fs::exists(dir.str("checkpoint.json")));
  EXPECT_TRUE(fs::exists(dir.str("policy.json")));
  const TrainCheckpoint c = load_checkpoint(dir.str());
  EXPECT_EQ(c.iterations, 7);
  EXPECT_EQ(c.curve.size(), 7u);
  EXPECT_EQ(c.parameters.size(), res.parameters.size());
  EXPECT_EQ(c.optimizer_states.size(), 2 * res.parameters.size());  // Adam's two moments
  EXPECT_EQ(c.obs.shape, (std::vector<int64_t>{3, 4}));
  EXPECT_FALSE(c.env_state.empty());
  // Resuming a finished run gives its result without training.
  TrainConfig again = small("ppo");
  again.resume_dir = dir.str();
  expect_same_run(res, train(again, nullptr));
}

TEST(TrainCheckpoint, EnvironmentStateRoundTrips) {
  for (const std::string& name : env_names()) {
    std::unique_ptr<BatchedEnv> a = make_env(name, 3), b = make_env(name, 3);
    a->reset(5);
    std::vector<float> act(static_cast<size_t>(3 * a->action_numel()), 0.0f);
    for (int k = 0; k < 40; ++k) a->step(act);
    b->set_state(a->state());
    EXPECT_EQ(a->state(), b->state()) << name;
    for (int k = 0; k < 300; ++k) {
      StepResult x = a->step(act), y = b->step(act);
      ASSERT_EQ(x.obs, y.obs) << name << " step " << k;
      ASSERT_EQ(x.episode_return, y.episode_return) << name << " step " << k;
    }
    expect_user_error([&] { b->set_state("CartPole-v1 3 garbage"); }, {"malformed saved state"});
  }
}

TEST(TrainCheckpoint, BadResumeIsAUserError) {
  TempDir dir;
  TrainConfig cfg = small("a2c");
  cfg.iterations = 3;
  cfg.save_dir = dir.str("run");
  cfg.save_every = 1;
  train(cfg, nullptr);
  TrainConfig again = small("a2c");
  again.iterations = 3;
  again.resume_dir = dir.str("run");
  again.lr = 1e-3;
  expect_user_error([&] { train(again, nullptr); }, {"--lr", "trained with", dir.str("run")});
  again = small("ppo");
  again.iterations = 3;
  again.resume_dir = dir.str("run");
  expect_user_error([&] { train(again, nullptr); }, {"algo a2c", "algo ppo"});
  again = small("a2c");
  again.iterations = 3;
  again.num_envs = 4;
  again.resume_dir = dir.str("run");
  expect_user_error([&] { train(again, nullptr); }, {"--num-envs 3", "--num-envs 4"});
  again.num_envs = 3;
  again.resume_dir = dir.str("nothing");
  expect_user_error([&] { train(again, nullptr); }, {"no training checkpoint", "nothing"});
  // A tensors file changed after its manifest was written.
  const TrainCheckpoint c = load_checkpoint(dir.str("run"));
  std::string tensors;
  for (const fs::directory_entry& e : fs::directory_iterator(dir.str("run")))
    if (e.path().filename().string().rfind("checkpoint-", 0) == 0) tensors = e.path().string();
  ASSERT_FALSE(tensors.empty());
  {
    std::fstream f(tensors, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x7f');
  }
  again.resume_dir = dir.str("run");
  expect_user_error([&] { train(again, nullptr); }, {"corrupt training checkpoint", tensors});
  fs::remove(tensors);
  expect_user_error([&] { load_checkpoint(dir.str("run")); }, {tensors, "missing"});
  { std::ofstream(dir.str("run/checkpoint.json")) << "{\"format\": 3"; }
  expect_user_error([&] { load_checkpoint(dir.str("run")); }, {"checkpoint.json"});
}

// A checkpoint of `iterations` with a parameter of `n` floats (no training).
TrainCheckpoint made_up(int64_t iterations, int64_t n) {
  TrainCheckpoint c;
  c.iterations = iterations;
  c.config = checkpoint_config(TrainConfig::defaults("ppo"));
  c.parameters.push_back(HostTensor(DType::Float32, {n}));
  c.optimizer_states.push_back(HostTensor(DType::Float32, {n}));
  c.obs = HostTensor(DType::Float32, {4, 4});
  c.env_state = "state";
  c.curve.assign(static_cast<size_t>(iterations), CurvePoint{10, 1.5});
  c.recent = {1.0, 2.0};
  return c;
}

TEST(TrainCheckpoint, FullDiskKeepsThePreviousCheckpoint) {
  TempDir dir;
  save_checkpoint(dir.str(), made_up(2, 16));
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // writes fail with EFBIG past 4 KiB, as on a full disk
    std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim {
      4096, 4096
    };
    ::setrlimit(RLIMIT_FSIZE, &lim);
    std::string msg = "no error";
    try {
      save_checkpoint(dir.str(), made_up(3, 100000));
    } catch (const UserError& e) {
      msg = e.what();
    }
    (void)!::write(pipe_fds[1], msg.data(), msg.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string msg;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) msg.append(buf, n);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_NE(msg.find("checkpoint-00000003.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::strerror(EFBIG)), std::string::npos) << msg;
  const TrainCheckpoint c = load_checkpoint(dir.str());
  EXPECT_EQ(c.iterations, 2);
  EXPECT_EQ(c.parameters[0].numel(), 16);
  EXPECT_EQ(c.recent, (std::vector<double>{1.0, 2.0}));
  for (const fs::directory_entry& e : fs::directory_iterator(dir.str()))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

}  // namespace
}  // namespace tempo::rl
