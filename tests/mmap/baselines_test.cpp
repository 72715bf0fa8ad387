// The baselines: legal games, the decoder, the heuristic against random play, the searches
// within their budgets.
#include "mmap/baselines.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "mmap/test_instances.h"

namespace tempo::mmap {
namespace {

using namespace fixtures;

TEST(Baselines, PlayDecodesAnyVectorIntoALegalGame) {
  auto inst = synthetic(200, 2.0, 5, 0.3);
  std::mt19937_64 rng(1);
  for (int k = 0; k < 10; ++k) {
    std::vector<Action> prefs(inst->buffers.size());
    for (Action& a : prefs) a = static_cast<Action>(rng() % kNumActions);
    MMapGame g = play(inst, prefs);
    EXPECT_TRUE(g.done());
    EXPECT_EQ(g.check(), "");
  }
  // All Drop is always a complete game with return 0.
  MMapGame none = play(inst, std::vector<Action>(inst->buffers.size(), Action::Drop));
  EXPECT_FALSE(none.lost());
  EXPECT_DOUBLE_EQ(none.total_return(), 0.0);
}

TEST(Baselines, HeuristicBeatsRandomPlayOnSyntheticInstances) {
  for (int64_t n : {64, 256, 1024})
    for (double pressure : {1.5, 3.0}) {
      auto inst = synthetic(n, pressure, static_cast<uint64_t>(n));
      const SearchResult h = heuristic(inst);
      EXPECT_GT(h.games, 1);
      EXPECT_FALSE(h.lost);
      const double random = mean_random_return(inst, 10, 7);
      EXPECT_GE(h.best_return, random) << inst->name;
      // Replaying the heuristic's decisions gives its return.
      EXPECT_DOUBLE_EQ(play(inst, h.decisions).total_return(), h.best_return);
    }
}

TEST(Baselines, SearchesKeepTheirBestGameWithinTheBudget) {
  auto inst = synthetic(128, 2.0, 3);
  const SearchResult r = random_search(inst, 0.2, 1);
  EXPECT_GT(r.games, 1);
  EXPECT_LT(r.seconds, 1.0);
  EXPECT_GE(r.best_return, mean_random_return(inst, 5, 2) * 0.999);
  EXPECT_NEAR(play(inst, r.decisions).total_return(), r.best_return, 1e-9);
  const SearchResult e = evolutionary_search(inst, 0.2, 1);
  EXPECT_GT(e.games, 16);
  EXPECT_LT(e.seconds, 1.0);
  EXPECT_NEAR(play(inst, e.decisions).total_return(), e.best_return, 1e-9);
  EXPECT_LE(e.best_return, inst->total_benefit());
}

TEST(Baselines, EvolutionFindsTheHandSolvedOptimum) {
  // The instance of game_test.cpp's HandSolvedInstance: the optimum is 8.
  auto inst = std::make_shared<Instance>();
  inst->capacity = 100;
  inst->supply.assign(6, 1.0);
  auto add = [&](int64_t time, int64_t start, int64_t end, bool out, int64_t tensor, double benefit,
                 double demand) {
    Buffer b;
    b.size = 60;
    b.time = time;
    b.start = start;
    b.end = end;
    b.is_output = out;
    b.tensor_id = tensor;
    b.alias_id = static_cast<int64_t>(inst->buffers.size());
    b.benefit = benefit;
    b.demand = demand;
    inst->buffers.push_back(b);
  };
  add(0, 0, 4, true, 0, 1, 0);
  add(1, 1, 3, true, 1, 5, 0);
  add(4, 0, 4, false, 0, 2, 2);
  EXPECT_DOUBLE_EQ(evolutionary_search(inst, 0.05, 1).best_return, 8.0);
  EXPECT_DOUBLE_EQ(random_search(inst, 0.05, 1).best_return, 8.0);
  EXPECT_DOUBLE_EQ(heuristic(inst).best_return, 8.0);
}

}  // namespace
}  // namespace tempo::mmap

namespace tempo::mmap {
namespace {

TEST(Baselines, PlayFromAStateAndForSomeBuffers) {
  auto inst = synthetic(120, 2.0, 8, 0.3);
  std::vector<Action> pref(inst->buffers.size(), Action::Copy);
  auto policy = [&](const MMapGame& g) { return pref[g.current()]; };
  const MMapGame whole = play(inst, pref);
  const MMapGame from_start = play_from(MMapGame(inst), policy);
  EXPECT_EQ(from_start.decisions(), whole.decisions());
  EXPECT_DOUBLE_EQ(from_start.total_return(), whole.total_return());
  // Ten buffers from the middle: the game stops after them, not lost.
  MMapGame mid(inst);
  for (int k = 0; k < 40; ++k) mid.step(Action::Drop);
  const MMapGame part = play_from(mid, policy, 10);
  EXPECT_FALSE(part.done());
  EXPECT_EQ(part.current(), 50u);
  EXPECT_EQ(part.check(), "");
}

}  // namespace
}  // namespace tempo::mmap
