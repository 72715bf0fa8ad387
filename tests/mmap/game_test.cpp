// The MMapGame: legality (capacity, bandwidth, NoCopy's earlier allocation, aliasing), intervals
// and offsets, a hand-solved instance, infeasible states, copies of states, observations.
#include "mmap/game.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "mmap/instance.h"
#include "mmap/test_instances.h"

namespace tempo::mmap {
namespace {

using namespace fixtures;

bool legal(const MMapGame& g, Action a) {
  return g.is_legal(a);
}

// The best return over every sequence of legal actions (small instances only).
double exhaustive_best(const MMapGame& g) {
  if (g.done()) return g.total_return();
  double best = 0;
  for (Action a : g.legal_actions()) {
    MMapGame next = g;
    next.step(a);
    best = std::max(best, exhaustive_best(next));
  }
  return best;
}

TEST(MMapGame, HandSolvedInstance) {
  MMapGame g(hand_solved());
  EXPECT_DOUBLE_EQ(exhaustive_best(g), 8.0);
  EXPECT_DOUBLE_EQ(g.step(Action::Copy), 1.0);
  EXPECT_EQ(g.placements()[0].start, 0);
  EXPECT_EQ(g.placements()[0].end, 0);
  EXPECT_EQ(g.placements()[0].offset, 0);
  EXPECT_DOUBLE_EQ(g.step(Action::Copy), 5.0);
  EXPECT_EQ(g.placements()[1].offset, 0);  // A's allocation has ended: the lowest offset
  ASSERT_TRUE(legal(g, Action::Copy));
  EXPECT_FALSE(legal(g, Action::NoCopy));  // (0, 4] would overlap B at step 1
  EXPECT_EQ(g.placement(Action::Copy).start, 2);
  EXPECT_EQ(g.placement(Action::Copy).end, 4);
  EXPECT_EQ(g.placement(Action::Copy).copy_start, 2);
  EXPECT_EQ(g.placement(Action::Copy).copy_end, 3);
  EXPECT_DOUBLE_EQ(g.step(Action::Copy), 2.0);
  EXPECT_TRUE(g.done());
  EXPECT_FALSE(g.lost());
  EXPECT_DOUBLE_EQ(g.total_return(), 8.0);
  EXPECT_EQ(g.check(), "");
  EXPECT_DOUBLE_EQ(g.supply_left()[2], 0.0);
  EXPECT_DOUBLE_EQ(g.supply_left()[3], 0.0);

  MMapGame keep(hand_solved());
  keep.step(Action::NoCopy);  // A stays over [0, 4]
  EXPECT_EQ(keep.legal_actions(), std::vector<Action>{Action::Drop});
  keep.step(Action::Drop);
  ASSERT_TRUE(legal(keep, Action::NoCopy));  // already in fast memory: nothing new
  EXPECT_EQ(keep.placement(Action::NoCopy).offset, 0);
  keep.step(Action::NoCopy);
  EXPECT_DOUBLE_EQ(keep.total_return(), 3.0);
}

TEST(MMapGame, CapacityBoundsPlacements) {
  // Two overlapping tensors of 60 in 100 bytes: the second only fits once the first has ended.
  MMapGame g(make(100, 4, {buf(60, 0, 0, 2, true, 0, 0, 1), buf(60, 1, 1, 3, true, 1, 1, 1)}));
  g.step(Action::NoCopy);                  // [0, 2]
  EXPECT_FALSE(legal(g, Action::NoCopy));  // [1, 3] overlaps it
  EXPECT_FALSE(legal(g, Action::Copy));    // [1, 1] too
  EXPECT_TRUE(legal(g, Action::Drop));
  // A tensor of 40 fits beside it, at the lowest free offset.
  MMapGame h(make(100, 4, {buf(60, 0, 0, 2, true, 0, 0, 1), buf(40, 1, 1, 3, true, 1, 1, 1)}));
  h.step(Action::NoCopy);
  ASSERT_TRUE(legal(h, Action::NoCopy));
  EXPECT_EQ(h.placement(Action::NoCopy).offset, 60);
}

TEST(MMapGame, BandwidthBoundsPrefetches) {
  // A read at step 2 of a tensor alive from 0: two steps of supply (1 each) before it.
  auto read = [](double demand) {
    return make(100, 4, {buf(10, 2, 0, 3, false, 0, 0, 1, demand)});
  };
  MMapGame over(read(2.5));
  EXPECT_FALSE(legal(over, Action::Copy));
  EXPECT_FALSE(legal(over, Action::NoCopy));  // no earlier allocation of the tensor
  MMapGame fits(read(1.5));
  ASSERT_TRUE(legal(fits, Action::Copy));
  EXPECT_EQ(fits.placement(Action::Copy).start, 0);  // the latest start that covers 1.5
  fits.step(Action::Copy);
  EXPECT_DOUBLE_EQ(fits.supply_left()[1], 0.0);  // the nearest step first
  EXPECT_DOUBLE_EQ(fits.supply_left()[0], 0.5);

  // Copies may not share more than one step (Eq. 6): a second prefetch over the same steps fails
  // even where supply is left.
  MMapGame two(make(100, 6,
                    {buf(10, 3, 0, 3, false, 0, 0, 1, 1.5), buf(10, 3, 0, 3, false, 1, 1, 1, 0.1)},
                    10.0));
  two.step(Action::Copy);                 // copy over [2, 2]: supply 10 covers 1.5 in one step
  ASSERT_TRUE(legal(two, Action::Copy));  // one shared step is allowed
  MMapGame three(
      make(100, 6, {buf(10, 3, 0, 3, false, 0, 0, 1, 2.5), buf(10, 3, 0, 3, false, 1, 1, 1, 2.5)}));
  three.step(Action::Copy);  // copy over [0, 2]
  EXPECT_FALSE(legal(three, Action::Copy));
}

TEST(MMapGame, NoCopyExtendsAnEarlierAllocation) {
  // Tensor written at 0, read at 3: NoCopy of the read extends the write's allocation.
  Instance inst =
      make(100, 5, {buf(10, 0, 0, 3, true, 0, 0, 1), buf(10, 3, 0, 3, false, 0, 1, 1, 9)});
  MMapGame dropped(inst);
  dropped.step(Action::Drop);
  EXPECT_FALSE(legal(dropped, Action::NoCopy));
  EXPECT_FALSE(legal(dropped, Action::Copy));  // 3 steps of supply for a demand of 9
  MMapGame kept(inst);
  kept.step(Action::Copy);  // [0, 0]
  ASSERT_TRUE(legal(kept, Action::NoCopy));
  EXPECT_EQ(kept.placement(Action::NoCopy).start, 1);
  EXPECT_EQ(kept.placement(Action::NoCopy).end, 3);
  kept.step(Action::NoCopy);
  EXPECT_DOUBLE_EQ(kept.total_return(), 2.0);
  EXPECT_EQ(kept.check(), "");
}

// x (alias 7), z, y (alias 7): x and y are all in fast memory at one offset, or all dropped.
Instance aliased(int64_t z_size) {
  return make(100, 4,
              {buf(50, 0, 0, 0, true, 0, 7, 1), buf(z_size, 1, 1, 3, true, 1, 8, 3),
               buf(50, 2, 2, 3, true, 2, 7, 1)});
}

TEST(MMapGame, AliasGroupsAreAllInOrAllOut) {
  MMapGame out(aliased(40));
  out.step(Action::Drop);
  out.step(Action::Drop);
  EXPECT_EQ(out.legal_actions(), std::vector<Action>{Action::Drop});

  MMapGame in(aliased(40));
  in.step(Action::Copy);  // x at offset 0
  in.step(Action::Drop);
  EXPECT_FALSE(legal(in, Action::Drop));
  ASSERT_TRUE(legal(in, Action::Copy));
  EXPECT_EQ(in.placement(Action::Copy).offset, 0);  // Eq. 4: x's offset

  // Kept over [1, 3], z takes the lowest offset, 0 (x's allocation ended at step 0), where y
  // must go: y has no legal action left.
  MMapGame side(aliased(40));
  side.step(Action::Copy);
  side.step(Action::NoCopy);
  EXPECT_EQ(side.placements()[1].offset, 0);
  EXPECT_TRUE(side.lost());
}

TEST(MMapGame, InfeasibleStatesLoseWithReturnZero) {
  MMapGame g(aliased(60));
  EXPECT_DOUBLE_EQ(g.step(Action::Copy), 1.0);
  // Keeping z over [1, 3] at offset 0 leaves y (which must sit at offset 0) no legal action.
  EXPECT_DOUBLE_EQ(g.step(Action::NoCopy), 3.0 - 4.0);
  EXPECT_TRUE(g.done());
  EXPECT_TRUE(g.lost());
  EXPECT_DOUBLE_EQ(g.total_return(), 0.0);
  EXPECT_TRUE(g.legal_actions().empty());
  // The same choices without aliasing are fine.
  Instance free = aliased(60);
  free.buffers[2].alias_id = 9;
  MMapGame h(free);
  h.step(Action::Copy);
  h.step(Action::NoCopy);
  EXPECT_FALSE(h.lost());
}

TEST(MMapGame, IllegalActionsLose) {
  MMapGame g(hand_solved());
  g.step(Action::NoCopy);
  EXPECT_DOUBLE_EQ(g.step(Action::Copy), -1.0);  // not legal: the return goes back to 0
  EXPECT_TRUE(g.lost());
  EXPECT_DOUBLE_EQ(g.total_return(), 0.0);
}

TEST(MMapGame, CopiesAreIndependentStates) {
  MMapGame g(hand_solved());
  g.step(Action::Copy);
  MMapGame branch = g;
  branch.step(Action::NoCopy);
  branch.step(Action::Drop);
  EXPECT_TRUE(branch.done());
  EXPECT_EQ(g.current(), 1u);
  EXPECT_DOUBLE_EQ(g.total_return(), 1.0);
  EXPECT_TRUE(legal(g, Action::Copy));
}

TEST(MMapGame, RandomPlayKeepsEveryConstraint) {
  std::mt19937_64 rng(3);
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SyntheticOptions o;
    o.buffers = 40 + 10 * static_cast<int64_t>(seed);
    o.pressure = 1.0 + 0.2 * static_cast<double>(seed);
    o.alias_fraction = 0.3;
    o.seed = seed;
    const Instance inst = generate_instance(o);
    for (int game = 0; game < 5; ++game) {
      MMapGame g(inst);
      double sum = 0;
      while (!g.done()) {
        auto legal_now = g.legal_actions();
        ASSERT_FALSE(legal_now.empty());
        sum += g.step(legal_now[rng() % legal_now.size()]);
        ASSERT_EQ(g.check(), "") << inst.name << " after " << g.moves() << " moves";
      }
      EXPECT_NEAR(sum, g.total_return(), 1e-9);
      if (!g.lost()) {
        double placed = 0;
        for (size_t k = 0; k < inst.buffers.size(); ++k)
          if (g.decisions()[k] != Action::Drop) placed += inst.buffers[k].benefit;
        EXPECT_NEAR(placed, g.total_return(), 1e-6);
      }
    }
  }
}

TEST(MMapGame, ObservationsHaveAFixedShape) {
  SyntheticOptions o;
  o.buffers = 100;
  MMapGame g(generate_instance(o));
  ObservationOptions oo;
  const size_t features = g.observe(oo).features.size();
  const size_t expected = static_cast<size_t>(
      oo.profile_bins + oo.supply_window +
      kBufferFeatures * (1 + oo.next_buffers + oo.same_tensor) + 4 * kNumActions + 4);
  EXPECT_EQ(features, expected);
  std::mt19937_64 rng(1);
  bool any_occupied = false;
  while (!g.done()) {
    Observation obs = g.observe(oo);
    EXPECT_EQ(obs.grid.size(), static_cast<size_t>(oo.grid_time * oo.grid_memory));
    EXPECT_EQ(obs.features.size(), features);
    for (float v : obs.flat()) ASSERT_TRUE(std::isfinite(v));
    for (float v : obs.grid) any_occupied |= v > 0;
    // The action features carry the legality.
    for (int a = 0; a < kNumActions; ++a)
      EXPECT_EQ(obs.features[expected - 4 - 4 * kNumActions + 4 * a] > 0.5f,
                g.is_legal(static_cast<Action>(a)));
    auto legal_now = g.legal_actions();
    g.step(legal_now[rng() % legal_now.size()]);
  }
  EXPECT_TRUE(any_occupied);
}

}  // namespace
}  // namespace tempo::mmap
