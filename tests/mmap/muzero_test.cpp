// MMap-MuZero: the learner (a Tempo program) fits its targets, the trained agent plays complete
// legal games better than random play in both planning modes, the latent search follows its
// model, the observation shows the heuristic's choice, networks survive a save and load, and bad
// files and options are clear errors.
#include "mmap/muzero.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "expect_error.h"
#include "mmap/test_instances.h"
#include "nn/safetensors.h"

namespace tempo::mmap {
namespace {

using namespace fixtures;

MuZeroOptions small_options(Planning planning) {
  MuZeroOptions o;
  o.planning = planning;
  o.latent = 16;
  o.hidden = 32;
  o.batch = 32;
  o.rounds = 6;
  o.games_per_round = 2;
  o.steps_per_round = 30;
  o.simulations = 16;
  return o;
}

// One round of two learner steps: a network to check, in a second.
MuZeroTraining brief_training(const std::shared_ptr<const Instance>& inst, MuZeroOptions o) {
  o.rounds = 1;
  o.steps_per_round = 2;
  return train_muzero(inst, o);
}

// Steps the decisions exactly: they must form a legal, complete game.
MMapGame replay(const std::shared_ptr<const Instance>& inst, const std::vector<Action>& d) {
  MMapGame g(inst);
  for (size_t k = 0; k < d.size() && !g.done(); ++k) g.step(d[k]);
  return g;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

class MuZeroTrained : public ::testing::TestWithParam<Planning> {};

TEST_P(MuZeroTrained, LearnsAndPlaysBetterThanRandom) {
  auto inst = synthetic(48, 2.0, 5);
  int rounds_seen = 0;
  const MuZeroTraining t =
      train_muzero(inst, small_options(GetParam()), [&](const MuZeroTraining&) { ++rounds_seen; });
  EXPECT_EQ(rounds_seen, 6);
  EXPECT_EQ(t.games, 12);
  EXPECT_EQ(t.curve.size(), 12u);
  EXPECT_EQ(t.learner_steps, 180);
  ASSERT_EQ(t.round_loss.size(), 6u);
  // The policy targets are visit distributions (their entropy stays), so the loss falls but
  // not to zero.
  EXPECT_LT(t.round_loss.back(), 0.9 * t.round_loss.front());
  MctsOptions m;
  m.simulations = 32;
  const MctsResult r = play_muzero(inst, t.network, m);
  EXPECT_FALSE(r.lost);
  const MMapGame g = replay(inst, r.decisions);
  EXPECT_TRUE(g.done());
  EXPECT_EQ(g.check(), "");
  EXPECT_DOUBLE_EQ(g.total_return(), r.best_return);
  EXPECT_GT(r.best_return, mean_random_return(inst, 50, 1));
}

INSTANTIATE_TEST_SUITE_P(Planning, MuZeroTrained,
                         ::testing::Values(Planning::Game, Planning::Latent), [](const auto& info) {
                           return std::string(info.param == Planning::Game ? "Game" : "Latent");
                         });

// A model that knows Copy earns 1 and the rest 0: the latent search must pick Copy.
class CopyModel : public LatentModel {
 public:
  Evaluation initial(const MMapGame&, std::vector<float>& latent) override {
    latent = {0.f};
    return uniform();
  }
  Evaluation recurrent(const std::vector<float>& latent, Action a, std::vector<float>& next,
                       double& reward) override {
    next = latent;
    reward = a == Action::Copy ? 1.0 : 0.0;
    ++calls;
    return uniform();
  }
  int calls = 0;

 private:
  static Evaluation uniform() {
    Evaluation e;
    e.prior.fill(1.0 / kNumActions);
    return e;
  }
};

TEST(MuZero, LatentSearchFollowsItsModel) {
  auto inst = std::make_shared<const Instance>(hand_solved());
  MMapGame g(inst);
  ASSERT_TRUE(g.is_legal(Action::Copy));
  CopyModel model;
  Mcts mcts;
  const MoveSearch s = mcts.search_latent(g, model, 60);
  EXPECT_EQ(s.action, Action::Copy);
  EXPECT_EQ(s.simulations, 60);
  // Each expanded latent node costs one model call; a path never runs past the game's end (three
  // buffers), so the tree has at most 3 + 9 + 27 nodes below the root.
  EXPECT_GT(model.calls, 3);
  EXPECT_LE(model.calls, 39);
}

TEST(MuZero, NetworkSurvivesSaveAndLoad) {
  auto inst = synthetic(24, 2.0, 3);
  const MuZeroTraining t = brief_training(inst, small_options(Planning::Latent));
  const std::string path = temp_path("tempo_muzero_net.safetensors");
  t.network->save(path);
  MuZeroNetwork loaded = MuZeroNetwork::load(path);
  EXPECT_EQ(loaded.options().planning, Planning::Latent);
  EXPECT_EQ(loaded.options().latent, 16);
  MMapGame g(inst);
  std::vector<float> h1, h2, n1, n2;
  const Evaluation a = t.network->initial(g, h1), b = loaded.initial(g, h2);
  EXPECT_EQ(h1, h2);
  EXPECT_DOUBLE_EQ(a.value, b.value);
  double r1 = 0, r2 = 0;
  t.network->recurrent(h1, Action::NoCopy, n1, r1);
  loaded.recurrent(h2, Action::NoCopy, n2, r2);
  EXPECT_EQ(n1, n2);
  EXPECT_DOUBLE_EQ(r1, r2);
  std::filesystem::remove(path);
}

// The observation ends with the heuristic's decision for the current buffer, as play() would take
// it there; without the hint it is the game's observation alone.
TEST(MuZero, ObservationShowsTheHeuristicsChoice) {
  auto inst = synthetic(24, 2.0, 3);
  MuZeroOptions o = small_options(Planning::Game);
  const MuZeroTraining t = brief_training(inst, o);
  const std::vector<Action> h = heuristic(inst).decisions;
  MMapGame g(inst);
  int followed = 0;
  while (!g.done()) {
    const std::vector<float> obs = t.network->observation(g);
    const std::vector<float> game = g.observe(o.observation).flat();
    ASSERT_EQ(obs.size(), game.size() + kNumActions);
    EXPECT_TRUE(std::equal(game.begin(), game.end(), obs.begin()));
    const Action want = playable(g, h[g.current()]);
    for (int a = 0; a < kNumActions; ++a)
      EXPECT_EQ(obs[game.size() + static_cast<size_t>(a)], a == static_cast<int>(want) ? 1.f : 0.f);
    followed += want != Action::Drop;
    g.step(want);
  }
  EXPECT_GT(followed, 0);  // the heuristic placed something: the hint is not all Drop
  std::vector<float> done = t.network->observation(g);
  EXPECT_EQ(std::count(done.end() - kNumActions, done.end(), 1.f), 0);

  o.heuristic_hint = false;
  const MuZeroTraining plain = brief_training(inst, o);
  EXPECT_EQ(plain.network->observation(MMapGame(inst)).size(),
            MMapGame(inst).observe(o.observation).flat().size());
  const std::string path = temp_path("tempo_muzero_plain.safetensors");
  plain.network->save(path);
  EXPECT_FALSE(MuZeroNetwork::load(path).options().heuristic_hint);
  std::filesystem::remove(path);
}

TEST(MuZero, BadFilesAndOptionsAreClearErrors) {
  const std::string path = temp_path("tempo_not_a_network.safetensors");
  nn::save(path, {{"weight", HostTensor(DType::Float32, {2, 2})}});
  testing::expect_user_error([&] { MuZeroNetwork::load(path); }, {"not a MuZero network"});
  std::filesystem::remove(path);
  const std::string missing = temp_path("tempo_missing_network.safetensors");
  testing::expect_user_error([&] { MuZeroNetwork::load(missing); }, {"tempo_missing_network"});
  auto inst = synthetic(16, 2.0, 1);
  MuZeroOptions o;
  o.rounds = 0;
  testing::expect_user_error([&] { train_muzero(inst, o); }, {"must be positive"});
  testing::expect_user_error([&] { MuZeroNetwork({}, MuZeroOptions{}, 10, 1.0, 1.0); },
                             {"no tensor rep.0.weight"});
}

}  // namespace
}  // namespace tempo::mmap
