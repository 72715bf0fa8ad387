// Baselines for the MMapGame (the paper's §5 comparisons): a heuristic in the spirit of XLA's
// memory-space assignment, random legal play and evolutionary search over decision vectors.
// Each returns the best return it reached and the decisions that reach it; the searches stop
// when their wall-time budget is spent (at least one game each).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "mmap/game.h"

namespace tempo::mmap {

struct SearchResult {
  double best_return = 0.0;
  std::vector<Action> decisions;  // per buffer, replayable with play()
  int64_t games = 0;              // games played
  double seconds = 0.0;           // wall time used
  bool lost = false;              // the best game was lost (return 0)
};

// The action play() takes in `g` for a wanted one: `want` where it is legal, else the other
// fast-memory action (Copy <-> NoCopy), else Drop, else any legal one.
Action playable(const MMapGame& g, Action want);

// Plays `preferred` decisions through the game, buffer by buffer (playable() of each).
// Where a buffer is left without a legal action (its alias group is in fast memory but it fits
// nowhere), the paper's Drop-backup (§4.3.2) goes back to the state before that group's first
// decision and drops the whole group. The decoder of the heuristic and the evolutionary search:
// any vector gives a complete game.
MMapGame play(const std::shared_ptr<const Instance>& inst, const std::vector<Action>& preferred,
              GameOptions options = {});
// The same with the preferred action chosen by `policy` in each state.
MMapGame play(const std::shared_ptr<const Instance>& inst,
              const std::function<Action(const MMapGame&)>& policy, GameOptions options = {});
// The same from the state `start` (not necessarily the first), until the game is done or
// `buffers` (> 0) buffers after start's current one have been decided. The Drop-backup can only
// go back to states from `start` on: a group decided before it that is left without a place
// loses the game.
// `group_sizes` (alias_group_sizes() of the instance; computed if null) saves a pass over the
// buffers when called often.
MMapGame play_from(MMapGame start, const std::function<Action(const MMapGame&)>& policy,
                   int64_t buffers = 0,
                   const std::unordered_map<int64_t, int>* group_sizes = nullptr);
// The number of buffers of each alias group.
std::unordered_map<int64_t, int> alias_group_sizes(const Instance& inst);

// XLA-style memory-space assignment: buffers by benefit per byte, highest first; each (with its
// whole alias group) is placed where it still fits, keeping an earlier allocation of its tensor
// alive (NoCopy) or prefetching it over the latest interval the remaining copy supply allows
// (Copy), whichever holds fewer bytes x steps, at a best-fit offset; the rest are dropped. The
// chosen decisions are then played through the game (play()). The greedy is also played in
// chronological order, keeping an output resident over its live range (NoCopy) where its
// tensor's benefit per byte-step passes one threshold and prefetching (Copy) where a buffer's
// benefit per byte passes another; the thresholds are swept over quantiles (45 games), and the
// best game is the result.
SearchResult heuristic(const std::shared_ptr<const Instance>& inst, GameOptions options = {});

// Uniformly random legal actions, game after game, until `seconds` have passed.
SearchResult random_search(const std::shared_ptr<const Instance>& inst, double seconds,
                           uint64_t seed, GameOptions options = {});

// A steady-state genetic algorithm over decision vectors (one preferred action per buffer,
// decoded by play()): random initial population, tournament selection, uniform crossover and
// per-gene mutation, the worst replaced by better children, until `seconds` have passed.
struct EvolutionOptions {
  int64_t population = 16;
  double mutation = 2.0;  // expected mutated genes per child
};
SearchResult evolutionary_search(const std::shared_ptr<const Instance>& inst, double seconds,
                                 uint64_t seed, EvolutionOptions evo = {},
                                 GameOptions options = {});

}  // namespace tempo::mmap
