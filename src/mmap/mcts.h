// Monte-Carlo tree search over the MMapGame in the MuZero style (Optimizing Memory Mapping Using
// Deep RL, §4.3; MuZero, Schrittwieser et al. 2020): pUCT selection with MuZero's constants
// (c1 = 1.25, c2 = 19652), Q values normalized by the minimum and maximum seen in the tree,
// backup of the discounted reward plus value (discount 0.9999, the paper's), optional Dirichlet
// noise at the root (the paper's alpha 0.03, fraction 0.25). search() plans with the real game:
// each simulation copies the root state and steps it down the tree, and leaves are valued by an
// Evaluator (rollouts by default, or a network's value and prior). search_latent() plans with a
// LatentModel instead: MuZero's learned dynamics (mmap/muzero.h).
//
//   MctsOptions o;                  // 400 simulations per move, as in the paper
//   MctsResult r = search_game(inst, o);
//   r.best_return, r.decisions      // replayable with mmap::play()
//
// Losing inside the search: a step that leaves the next buffer without a legal action ends the
// simulated path. Its reward is not the game's (which takes the whole return back to 0) but
// minus the benefits its alias group has placed so far: what the Drop-backup would undo when
// acting (§4.3.2), a local signal rather than a spike. Acting: search_game plays through
// mmap::play(), whose Drop-backup goes back to before the failing alias group and drops it whole,
// so a game keeps its progress instead of ending at 0.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "mmap/baselines.h"
#include "mmap/game.h"

namespace tempo::mmap {

// A leaf's evaluation: a prior over the actions (indexed by Action; the search keeps the legal
// ones and renormalizes) and the value, the expected sum of the rewards still to come.
struct Evaluation {
  std::array<double, kNumActions> prior{};
  double value = 0.0;
};

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual Evaluation evaluate(const MMapGame& state) = 0;
};

// The default evaluator, cheap and network-free: a uniform prior over the legal actions, and as
// value the rewards of a rollout over the next `horizon` buffers (0: to the end of the game)
// with a greedy in-order policy in the spirit of the heuristic: a read whose tensor is still
// resident is kept (NoCopy, free); an output is kept resident over its live range (NoCopy) if
// its tensor's benefit per byte-step reaches a threshold; a buffer is copied (Copy) if its
// benefit per byte reaches another; the rest are dropped (placed only where the alias group
// leaves no choice). The two thresholds are calibrated once per instance over quantiles (45
// rollouts of the whole game from the start; the best return wins). A rollout that runs into a
// state with no legal action stops there, less the benefits of the failing alias group (the
// search's loss reward below). A leaf costs a game copy and at most `horizon` steps (tens of
// microseconds at 2048 buffers and horizon 64): a value that sees the near future only, enough
// to rank a few alternatives per move on large instances.
class RolloutEvaluator : public Evaluator {
 public:
  explicit RolloutEvaluator(int64_t horizon = 64) : horizon_(horizon) {}
  Evaluation evaluate(const MMapGame& state) override;

 private:
  struct Policy {
    double keep_at = 0, copy_at = 0;
  };
  void calibrate(const Instance& inst);
  double rollout(MMapGame& g, int64_t horizon, const Policy& p) const;
  int64_t horizon_;
  const Instance* cached_ = nullptr;  // the instance the tables below were computed for
  size_t cached_buffers_ = 0;
  std::vector<double> density_, resident_;  // per buffer: benefit per byte, per byte-step kept
  std::unordered_map<int64_t, int> group_sizes_;
  Policy policy_;
};

// A learned model of the game (MuZero's representation, dynamics and prediction functions) to
// plan with in a latent space instead of stepping the real game.
class LatentModel {
 public:
  virtual ~LatentModel() = default;
  // The latent state of a real one, and its prior and value.
  virtual Evaluation initial(const MMapGame& state, std::vector<float>& latent) = 0;
  // The latent state after `a` and the reward of `a`, and the prior and value there.
  virtual Evaluation recurrent(const std::vector<float>& latent, Action a, std::vector<float>& next,
                               double& reward) = 0;
};

// The reward the search gives a step into a lost state: minus the benefits placed so far by the
// alias group of the buffer left without a legal action (g must be lost).
double drop_backup_penalty(const MMapGame& g);

struct MctsOptions {
  int64_t simulations = 400;  // per move (the paper's num_mcts_simulations)
  double seconds = 0.0;       // wall time for the whole game (0: no limit); split evenly over
                              // the moves left, at least min_simulations per move
  int64_t min_simulations = 3;
  double discount = 0.9999;
  double c1 = 1.25, c2 = 19652.0;  // pUCT
  bool root_noise = false;         // Dirichlet noise on the root prior (self-play)
  double noise_alpha = 0.03, noise_fraction = 0.25;
  double temperature = 0.0;  // 0: the most visited action (ties: the best value); else visits^(1/T)
  uint64_t seed = 1;
  int64_t rollout_horizon = 64;  // of the default evaluator
  // search() keeps the chosen move's subtree for the next move (advance()), as MuZero does.
  bool reuse_tree = true;
  GameOptions game;
};

// One search from `root` (not done): the visit counts and values of the root's children.
struct MoveSearch {
  Action action = Action::Drop;
  std::array<int64_t, kNumActions> visits{};
  std::array<double, kNumActions> q{};  // reward + discounted value, unnormalized
  int64_t simulations = 0;
};

class Mcts {
 public:
  // `evaluator` null: a RolloutEvaluator with the options' horizon.
  explicit Mcts(MctsOptions options = {}, std::shared_ptr<Evaluator> evaluator = nullptr);
  // Runs up to `simulations` simulations (at least options.min_simulations) or until `deadline`
  // seconds of wall time (0: none) and picks the move.
  MoveSearch search(const MMapGame& root, int64_t simulations, double deadline_seconds = 0.0);
  // The same search planning with `model`: the root's legal actions come from the real game,
  // every action is open below it, a path ends when the game would have no buffer left.
  MoveSearch search_latent(const MMapGame& root, LatentModel& model, int64_t simulations,
                           double deadline_seconds = 0.0);
  const MctsOptions& options() const { return options_; }
  // The game moved by `a` from the last searched root: its subtree becomes the next root's tree
  // (with reuse_tree). forget() drops the tree (the next root is another state).
  void advance(Action a);
  void forget() { tree_.clear(); }

 private:
  struct Node {
    double prior = 0;
    int64_t visits = 0;
    double value_sum = 0;
    double reward = 0;
    bool expanded = false, terminal = false;
    std::array<int32_t, kNumActions> children{-1, -1, -1};
    double value() const { return visits ? value_sum / static_cast<double>(visits) : 0.0; }
  };
  template <class Walker>
  MoveSearch run(Walker& walker, std::vector<Node>& nodes, int64_t simulations,
                 double deadline_seconds);
  MctsOptions options_;
  std::shared_ptr<Evaluator> evaluator_;
  std::mt19937_64 rng_;
  std::vector<Node> tree_;  // of the last search(), kept for the next move
};

struct MctsResult {
  double best_return = 0.0;
  std::vector<Action> decisions;
  bool lost = false;
  double seconds = 0.0;
  int64_t simulations = 0;     // over the whole game
  int64_t searched_moves = 0;  // moves with more than one legal action
  int64_t backtracks = 0;      // moves asked again after the Drop-backup went back
};

// Plays a whole game, each move chosen by MCTS from the current state, through mmap::play()'s
// Drop-backup. Deterministic for fixed options and seed unless options.seconds limits it.
// With `model` the search plans with it (search_latent); `on_move` sees each state asked and
// its search (forced moves: one visit on the only legal action).
using MoveObserver = std::function<void(const MMapGame& state, const MoveSearch& search)>;
MctsResult search_game(const std::shared_ptr<const Instance>& inst, const MctsOptions& options = {},
                       std::shared_ptr<Evaluator> evaluator = nullptr,
                       std::shared_ptr<LatentModel> model = nullptr,
                       const MoveObserver& on_move = nullptr);

}  // namespace tempo::mmap
