// MCTS over the MMapGame: the hand-solved optimum, no worse than random play, the Drop-backup
// keeps games complete, determinism for a seed, and the evaluator steering the search.
#include "mmap/mcts.h"

#include <gtest/gtest.h>

#include <random>

#include "mmap/test_instances.h"

namespace tempo::mmap {
namespace {

using namespace fixtures;

// Replays decisions exactly (no fallbacks): they must form a legal, complete game.
MMapGame replay(const std::shared_ptr<const Instance>& inst, const std::vector<Action>& d) {
  MMapGame g(inst);
  for (size_t k = 0; k < d.size() && !g.done(); ++k) g.step(d[k]);
  return g;
}

TEST(Mcts, FindsTheHandSolvedOptimum) {
  auto inst = std::make_shared<const Instance>(hand_solved());
  MctsOptions o;
  o.simulations = 50;
  const MctsResult r = search_game(inst, o);
  EXPECT_DOUBLE_EQ(r.best_return, 8.0);
  EXPECT_FALSE(r.lost);
  EXPECT_EQ(r.decisions, std::vector<Action>({Action::Copy, Action::Copy, Action::Copy}));
  // With one-step rollouts (leaf values that barely look ahead) the tree alone still finds it.
  o.rollout_horizon = 1;
  o.simulations = 400;
  EXPECT_DOUBLE_EQ(search_game(inst, o).best_return, 8.0);
}

TEST(Mcts, RootSearchSeesEveryLegalAction) {
  MMapGame g(hand_solved());
  Mcts m;
  const MoveSearch s = m.search(g, 100);
  EXPECT_EQ(s.simulations, 100);
  int64_t visits = 0;
  for (int a = 0; a < kNumActions; ++a) {
    EXPECT_EQ(s.visits[a] > 0, g.is_legal(static_cast<Action>(a))) << a;
    visits += s.visits[a];
  }
  EXPECT_EQ(visits, 100);
  EXPECT_EQ(s.action, Action::Copy);
}

TEST(Mcts, AtLeastRandomAndNeverLost) {
  for (uint64_t seed : {1, 2, 3}) {
    for (double pressure : {1.5, 3.0}) {
      auto inst = synthetic(48, pressure, seed, 0.3);
      MctsOptions o;
      o.simulations = 60;
      const MctsResult r = search_game(inst, o);
      EXPECT_FALSE(r.lost) << seed << " " << pressure;
      EXPECT_GE(r.best_return, mean_random_return(inst, 50, seed)) << seed << " " << pressure;
      const MMapGame g = replay(inst, r.decisions);
      EXPECT_TRUE(g.done());
      EXPECT_FALSE(g.lost());
      EXPECT_DOUBLE_EQ(g.total_return(), r.best_return);
      EXPECT_EQ(g.check(), "");
    }
  }
}

// An instance made to become infeasible: one alias group (an in-place update) whose second
// buffer can never fit once the first is placed, because a large buffer in between is forced.
TEST(Mcts, DropBackupKeepsProgress) {
  Instance inst;
  inst.name = "backup";
  inst.capacity = 100;
  inst.supply.assign(4, 1.0);
  // b0 (alias 7) is worth a lot now; b2 (alias 7 too) then needs 60 bytes at step 2 where b1 (an
  // output kept over 1..3) may hold 60: placing b0 and b1 leaves b2 nowhere.
  inst.buffers = {buf(60, 0, 0, 2, true, 0, 7, 10), buf(60, 1, 1, 3, true, 1, 1, 3),
                  buf(60, 2, 0, 2, false, 0, 7, 1, 5)};
  auto shared = std::make_shared<const Instance>(inst);
  // A search that always wants to place things (its prior puts no mass on Drop).
  struct Greedy : Evaluator {
    Evaluation evaluate(const MMapGame&) override {
      Evaluation e;
      e.prior = {0.5, 0.5, 0.0};
      e.value = 0;
      return e;
    }
  };
  MctsOptions o;
  o.simulations = 1;
  o.min_simulations = 1;
  const MctsResult r = search_game(shared, o, std::make_shared<Greedy>());
  EXPECT_FALSE(r.lost);
  EXPECT_DOUBLE_EQ(r.best_return, 3.0);  // b0 and b2 dropped, b1 kept
  EXPECT_GE(r.backtracks, 1);
  EXPECT_TRUE(replay(shared, r.decisions).done());
  // With a real search the same instance keeps the best of the two: 10 + 1 (b0 and b2) over 3.
  o.simulations = 100;
  o.min_simulations = 3;
  const MctsResult full = search_game(shared, o);
  EXPECT_FALSE(full.lost);
  EXPECT_DOUBLE_EQ(full.best_return, 11.0);
}

TEST(Mcts, DeterministicForASeed) {
  auto inst = synthetic(40, 2.0, 4, 0.2);
  MctsOptions o;
  o.simulations = 40;
  o.root_noise = true;
  o.temperature = 1.0;
  o.seed = 9;
  const MctsResult a = search_game(inst, o);
  const MctsResult b = search_game(inst, o);
  EXPECT_EQ(a.decisions, b.decisions);
  EXPECT_DOUBLE_EQ(a.best_return, b.best_return);
  EXPECT_EQ(a.simulations, b.simulations);
}

TEST(Mcts, EvaluatorSteersTheSearch) {
  // An evaluator that prefers Drop and values every state at 0: the search follows its prior,
  // and the game returns less than with the default evaluator.
  struct PrefersDrop : Evaluator {
    int64_t calls = 0;
    Evaluation evaluate(const MMapGame&) override {
      ++calls;
      Evaluation e;
      e.prior = {0.0, 0.0, 1.0};
      e.value = 0;
      return e;
    }
  };
  auto inst = synthetic(64, 2.0, 6, 0.0);
  MctsOptions o;
  o.simulations = 30;
  auto drop = std::make_shared<PrefersDrop>();
  const MctsResult steered = search_game(inst, o, drop);
  const MctsResult plain = search_game(inst, o);
  EXPECT_GT(drop->calls, 0);
  EXPECT_LT(steered.best_return, plain.best_return);
}

TEST(Mcts, WallTimeBudget) {
  auto inst = synthetic(256, 2.0, 2);
  MctsOptions o;
  o.simulations = 1000000;
  o.seconds = 0.3;
  const MctsResult r = search_game(inst, o);
  EXPECT_FALSE(r.lost);
  EXPECT_LT(r.seconds, 1.5);
  EXPECT_GE(r.simulations, r.searched_moves * o.min_simulations);
}

TEST(Mcts, KeepsTheChosenSubtreeForTheNextMove) {
  auto inst = synthetic(32, 2.0, 4);
  MMapGame g(inst);
  Mcts m;
  const MoveSearch first = m.search(g, 200);
  g.step(first.action);
  m.advance(first.action);
  const MoveSearch next = m.search(g, 10);
  int64_t visits = 0;
  for (int64_t v : next.visits) visits += v;
  EXPECT_EQ(next.simulations, 10);
  EXPECT_GT(visits, 10) << "the visits of the kept subtree count";
  m.forget();
  const MoveSearch fresh = m.search(g, 10);
  visits = 0;
  for (int64_t v : fresh.visits) visits += v;
  EXPECT_EQ(visits, 10);
}

}  // namespace
}  // namespace tempo::mmap
