// Saved policies: training saves them (every K iterations and at the end), loading gives back
// what was saved, greedy evaluation matches the same policy run by hand, and bad directories or
// files are user errors.
#include "rl/algorithms/saved_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "nn/json.h"
#include "rl/algorithms/algorithms.h"
#include "util/error.h"

namespace tempo::rl {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the system's temporary directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("tempo-saved-policy-" + std::to_string(std::random_device()()));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str(const std::string& sub = "") const { return (path_ / sub).string(); }

 private:
  fs::path path_;
};

// The iteration count in DIR/policy.json, or -1 when there is none yet.
int64_t saved_iterations(const std::string& dir) {
  std::ifstream f(fs::path(dir) / "policy.json");
  if (!f) return -1;
  std::stringstream text;
  text << f.rdbuf();
  return nn::parse_json(text.str(), "policy.json").get("iterations")->integer;
}

// A policy of `algo` for `env` with an MLP of random weights (no training).
SavedPolicy random_policy(const std::string& env, const std::vector<int64_t>& hidden,
                          uint32_t seed, const std::string& algo = "ppo") {
  std::unique_ptr<BatchedEnv> e = make_env(env, 1);
  SavedPolicy p;
  p.algo = algo;
  p.env = env;
  p.hidden = hidden;
  p.observation_space = e->observation_space();
  p.action_space = e->action_space();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.7f);
  std::vector<int64_t> sizes{p.obs_dim()};
  sizes.insert(sizes.end(), hidden.begin(), hidden.end());
  sizes.push_back(p.out_dim());
  for (size_t k = 0; k + 1 < sizes.size(); ++k) {
    HostTensor w(DType::Float32, {sizes[k + 1], sizes[k]}), b(DType::Float32, {sizes[k + 1]});
    for (int64_t j = 0; j < w.numel(); ++j) w.set(j, normal(rng));
    for (int64_t j = 0; j < b.numel(); ++j) b.set(j, normal(rng));
    p.tensors[std::to_string(k) + ".weight"] = w;
    p.tensors[std::to_string(k) + ".bias"] = b;
  }
  if (!p.action_space.discrete && !p.relu())
    p.tensors["log_std"] = HostTensor(DType::Float32, {p.out_dim()});
  return p;
}

// The policy's greedy action for one observation, computed with plain loops.
std::vector<float> greedy_by_hand(const SavedPolicy& p, const float* obs) {
  std::vector<double> h(obs, obs + p.obs_dim());
  const auto layers = static_cast<int64_t>(p.hidden.size());
  for (int64_t k = 0; k <= layers; ++k) {
    const HostTensor& w = p.tensors.at(std::to_string(k) + ".weight");
    const HostTensor& b = p.tensors.at(std::to_string(k) + ".bias");
    std::vector<double> next(static_cast<size_t>(w.shape[0]));
    for (int64_t o = 0; o < w.shape[0]; ++o) {
      double s = b.at(o);
      for (int64_t in = 0; in < w.shape[1]; ++in) s += w.at(o * w.shape[1] + in) * h[in];
      next[o] = k == layers ? s : p.relu() ? std::max(s, 0.0) : std::tanh(s);
    }
    h = next;
  }
  if (p.action_space.discrete)
    return {static_cast<float>(std::max_element(h.begin(), h.end()) - h.begin())};
  std::vector<float> a;
  for (size_t k = 0; k < static_cast<size_t>(p.action_space.numel()); ++k) {
    const float low = p.action_space.low[k], high = p.action_space.high[k];
    // SAC's and TD3's mean is squashed into the action box.
    const double v = p.relu() ? std::tanh(h[k]) * (high - low) / 2 + (high + low) / 2 : h[k];
    a.push_back(std::clamp(static_cast<float>(v), low, high));
  }
  return a;
}

// One episode per env copy run by hand: the first episode's return of each.
std::vector<double> returns_by_hand(const SavedPolicy& p, int64_t episodes, uint64_t seed) {
  std::unique_ptr<BatchedEnv> env = make_env(p.env, episodes);
  std::vector<float> obs = env->reset(seed);
  std::vector<double> returns(static_cast<size_t>(episodes), std::nan(""));
  for (int64_t running = episodes; running > 0;) {
    std::vector<float> actions;
    for (int64_t n = 0; n < episodes; ++n) {
      std::vector<float> a = greedy_by_hand(p, &obs[n * p.obs_dim()]);
      actions.insert(actions.end(), a.begin(), a.end());
    }
    StepResult r = env->step(actions);
    for (int64_t n = 0; n < episodes; ++n)
      if (std::isnan(returns[n]) && (r.terminated[n] || r.truncated[n])) {
        returns[n] = r.episode_return[n];
        --running;
      }
    obs = r.obs;
  }
  return returns;
}

TEST(SavedPolicy, SaveLoadRoundTrip) {
  TempDir dir;
  SavedPolicy p = random_policy("Pendulum-v1", {8, 5}, 3);
  p.algo = "ppo";
  p.seed = 7;
  p.iterations = 12;
  p.env_steps = 1234;
  save_policy(dir.str(), p);
  SavedPolicy q = load_policy(dir.str());
  EXPECT_EQ(q.algo, "ppo");
  EXPECT_EQ(q.env, "Pendulum-v1");
  EXPECT_EQ(q.hidden, (std::vector<int64_t>{8, 5}));
  EXPECT_EQ(q.seed, 7u);
  EXPECT_EQ(q.iterations, 12);
  EXPECT_EQ(q.env_steps, 1234);
  EXPECT_FALSE(q.action_space.discrete);
  EXPECT_EQ(q.action_space.low, p.action_space.low);
  EXPECT_EQ(q.action_space.high, p.action_space.high);
  EXPECT_EQ(q.observation_space.shape, p.observation_space.shape);
  ASSERT_EQ(q.tensors.size(), p.tensors.size());
  for (const auto& [name, t] : p.tensors) {
    ASSERT_TRUE(q.tensors.count(name)) << name;
    EXPECT_EQ(q.tensors.at(name).shape, t.shape) << name;
    EXPECT_EQ(q.tensors.at(name).to_vector(), t.to_vector()) << name;
  }
  // Only the two files: no temporary file is left behind.
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(dir.str())) files.insert(e.path().filename());
  EXPECT_EQ(files, (std::set<std::string>{"policy.json", "policy.safetensors"}));
}

// Version 1 recorded one hidden width and a count of layers: such files still load.
TEST(SavedPolicy, ReadsTheFirstVersionsWidthAndLayers) {
  TempDir dir;
  SavedPolicy p = random_policy("CartPole-v1", {8, 8}, 4);
  save_policy(dir.str(), p);
  std::stringstream text;
  text << std::ifstream(dir.str("policy.json")).rdbuf();
  std::string json = text.str();
  for (auto [now, then] : {std::pair<std::string, std::string>{"\"version\": 2", "\"version\": 1"},
                           {"\"hidden\": [8, 8]", "\"hidden\": 8, \"layers\": 2"}}) {
    ASSERT_NE(json.find(now), std::string::npos) << json;
    json.replace(json.find(now), now.size(), then);
  }
  std::ofstream(dir.str("policy.json")) << json;
  EXPECT_EQ(load_policy(dir.str()).hidden, (std::vector<int64_t>{8, 8}));
}

TEST(SavedPolicy, GreedyEvaluationMatchesAHandWrittenLoop) {
  const std::pair<const char*, const char*> cases[] = {
      {"CartPole-v1", "ppo"}, {"Acrobot-v1", "a2c"},  {"Pendulum-v1", "ppo"},
      {"CartPole-v1", "dqn"}, {"Pendulum-v1", "sac"}, {"Pendulum-v1", "td3"}};
  for (const auto& [env, algo] : cases) {
    SCOPED_TRACE(algo);
    SavedPolicy p = random_policy(env, {16, 16}, 11, algo);
    EvalResult got = evaluate(p, 5, 42);
    std::vector<double> want = returns_by_hand(p, 5, 42);
    ASSERT_EQ(got.returns.size(), want.size()) << env;
    double mean = 0;
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_NEAR(got.returns[k], want[k], 1e-3 * (1 + std::abs(want[k])))
          << env << " episode " << k;
      mean += want[k] / static_cast<double>(want.size());
    }
    EXPECT_NEAR(got.mean_return, mean, 1e-3 * (1 + std::abs(mean))) << env;
  }
}

TEST(SavedPolicy, TrainingSavesEveryKIterationsAndAtTheEnd) {
  TempDir dir;
  TrainConfig cfg = TrainConfig::defaults("ppo");
  cfg.iterations = 5;
  cfg.num_envs = 2;
  cfg.steps = 16;
  cfg.set_hidden_width(8);
  cfg.epochs = 1;  // parameters over (i, u) with U = 2: saved as they are after (i, U - 1)
  cfg.minibatches = 2;
  cfg.save_dir = dir.str("run");  // made by train()
  cfg.save_every = 2;
  std::set<int64_t> seen;  // the saved iteration counts seen during training
  cfg.on_iteration = [&](const std::vector<CurvePoint>&) {
    seen.insert(saved_iterations(cfg.save_dir));
  };
  train(cfg, nullptr);
  EXPECT_TRUE(seen.count(2) || seen.count(4))
      << "no checkpoint before the end: " << ::testing::PrintToString(seen);
  SavedPolicy p = load_policy(cfg.save_dir);
  EXPECT_EQ(p.iterations, 5);
  EXPECT_EQ(p.env_steps, 5 * 2 * 16);
  EXPECT_EQ(p.algo, "ppo");
  EXPECT_TRUE(p.action_space.discrete);
  EXPECT_EQ(p.tensors.size(), 6u);  // three layers' weights and biases
  EXPECT_EQ(p.tensors.at("0.weight").shape, (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(p.tensors.at("2.weight").shape, (std::vector<int64_t>{2, 8}));
  EvalResult r = evaluate(p, 3, 1);
  EXPECT_EQ(r.returns.size(), 3u);
  for (double x : r.returns) EXPECT_GE(x, 1.0);
}

TEST(SavedPolicy, ContinuousPolicySavesItsLogStd) {
  TempDir dir;
  TrainConfig cfg = TrainConfig::defaults("a2c");
  cfg.env = "Pendulum-v1";
  cfg.iterations = 2;
  cfg.num_envs = 2;
  cfg.steps = 8;
  cfg.set_hidden_width(8);
  cfg.set_hidden_layers(1);
  cfg.save_dir = dir.str();
  train(cfg, nullptr);
  SavedPolicy p = load_policy(dir.str());
  EXPECT_EQ(p.tensors.at("log_std").shape, (std::vector<int64_t>{1}));
  EXPECT_EQ(p.tensors.at("1.weight").shape, (std::vector<int64_t>{1, 8}));
  EvalResult r = evaluate(p, 2, 5);
  for (double x : r.returns) EXPECT_LT(x, 0.0);  // Pendulum's rewards are negative
}

std::string user_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SavedPolicy, BadInputIsAUserError) {
  TempDir dir;
  EXPECT_NE(user_error([&] { load_policy(dir.str("missing")); }).find("no such directory"),
            std::string::npos);
  EXPECT_NE(user_error([&] { load_policy(dir.str()); }).find("policy.json is missing"),
            std::string::npos);
  std::ofstream(dir.str("policy.json")) << "{\"format\": \"tempo-policy\", \"version\": 1}";
  EXPECT_NE(user_error([&] { load_policy(dir.str()); }).find("no 'algo'"), std::string::npos);
  std::ofstream(dir.str("policy.json")) << "{\"format\": ";
  EXPECT_NE(user_error([&] { load_policy(dir.str()); }).find("malformed"), std::string::npos);

  // Tensors that do not fit the network, and an environment with other spaces.
  SavedPolicy p = random_policy("CartPole-v1", {8}, 1);
  p.tensors["0.weight"] = HostTensor(DType::Float32, {8, 3});
  EXPECT_NE(user_error([&] { evaluate(p, 1, 1); }).find("0.weight"), std::string::npos);
  p = random_policy("CartPole-v1", {8}, 1);
  p.env = "Pendulum-v1";
  EXPECT_NE(user_error([&] { evaluate(p, 1, 1); }).find("same spaces"), std::string::npos);

  // Where nothing can be written: checked before training compiles anything.
  std::ofstream(dir.str("file")) << "x";
  EXPECT_NE(
      user_error([&] { check_writable_dir(dir.str("file"), "--out"); }).find("not a directory"),
      std::string::npos);
  TrainConfig cfg = TrainConfig::defaults("reinforce");
  cfg.save_dir = dir.str("file/sub");
  EXPECT_NE(user_error([&] { train(cfg, nullptr); }).find("--save"), std::string::npos);
  cfg.save_dir = "";
  cfg.save_every = 3;
  EXPECT_NE(user_error([&] { validate(cfg); }).find("--save DIR"), std::string::npos);
}

}  // namespace
}  // namespace tempo::rl
