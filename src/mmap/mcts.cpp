// MCTS over the MMapGame: the search tree, the rollout evaluator and whole games played by search.
#include "mmap/mcts.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "util/error.h"

namespace tempo::mmap {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The benefit `a` earns on the current buffer when legal (the game's reward before any loss).
double action_benefit(const MMapGame& g, Action a) {
  return a == Action::Drop ? 0.0 : g.instance().buffers[g.current()].benefit;
}

// Steps `a` and returns the search's reward: the game's, except that a step into a lost state
// earns its benefit less the failing alias group's placed benefits (drop_backup_penalty).
double search_step(MMapGame& g, Action a) {
  const double benefit = action_benefit(g, a);
  const double r = g.step(a);
  return g.lost() ? benefit - drop_backup_penalty(g) : r;
}

// MuZero's MinMaxStats: Q values normalized to [0, 1] by the extremes seen in the tree.
struct MinMax {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void update(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  double normalize(double v) const { return hi > lo ? (v - lo) / (hi - lo) : v; }
};

}  // namespace

double drop_backup_penalty(const MMapGame& g) {
  const auto& bufs = g.instance().buffers;
  const size_t failed = g.current();
  if (failed >= bufs.size()) return 0.0;
  const int64_t alias = bufs[failed].alias_id;
  double placed = 0;
  for (size_t k = 0; k < failed; ++k)
    if (bufs[k].alias_id == alias && g.decisions()[k] != Action::Drop) placed += bufs[k].benefit;
  return placed;
}

void RolloutEvaluator::calibrate(const Instance& inst) {
  const auto& bufs = inst.buffers;
  const size_t n = bufs.size();
  group_sizes_ = alias_group_sizes(inst);
  std::unordered_map<int64_t, double> tensor_benefit;
  for (const Buffer& b : bufs) tensor_benefit[b.tensor_id] += b.benefit;
  density_.assign(n, 0.0);
  resident_.assign(n, 0.0);
  std::vector<double> density_sorted, resident_sorted;
  for (size_t k = 0; k < n; ++k) {
    const Buffer& b = bufs[k];
    density_[k] = b.benefit / static_cast<double>(b.size);
    density_sorted.push_back(density_[k]);
    if (b.is_output) {
      resident_[k] = tensor_benefit[b.tensor_id] /
                     (static_cast<double>(b.size) * static_cast<double>(b.end - b.start + 1));
      resident_sorted.push_back(resident_[k]);
    }
  }
  std::sort(density_sorted.begin(), density_sorted.end());
  std::sort(resident_sorted.begin(), resident_sorted.end());
  constexpr int kOf = 8;
  auto quantile = [](const std::vector<double>& v, int q) {
    if (v.empty()) return 0.0;
    if (q >= kOf) return std::numeric_limits<double>::infinity();  // never
    return v[v.size() * static_cast<size_t>(q) / kOf];
  };
  const MMapGame start(inst);
  double best = -std::numeric_limits<double>::infinity();
  for (int qr = 0; qr <= kOf; ++qr)
    for (int qc = 0; qc <= kOf; qc += 2) {
      const Policy p{quantile(resident_sorted, qr), quantile(density_sorted, qc)};
      MMapGame g = start;
      const double r = rollout(g, 0, p);
      if (r > best) best = r, policy_ = p;
    }
  cached_ = &inst;
  cached_buffers_ = n;
}

double RolloutEvaluator::rollout(MMapGame& g, int64_t horizon, const Policy& p) const {
  const Instance& inst = g.instance();
  auto policy = [&](const MMapGame& s) {
    const size_t i = s.current();
    const Buffer& b = inst.buffers[i];
    const Placement& c = s.placement(Action::Copy);
    const Placement& nc = s.placement(Action::NoCopy);
    if (nc.legal && !b.is_output && nc.end < nc.start) return Action::NoCopy;  // resident: free
    if (nc.legal && b.is_output && resident_[i] >= p.keep_at) return Action::NoCopy;
    if (c.legal && density_[i] >= p.copy_at) return Action::Copy;
    return Action::Drop;  // play_from places it where the alias group leaves no choice
  };
  const double before = g.total_return();
  g = play_from(std::move(g), policy, horizon, &group_sizes_);
  if (!g.lost()) return g.total_return() - before;
  // Lost where the Drop-backup could not go back (a group decided before the rollout began):
  // the benefits placed up to the failure, less the failing group's (the search's loss reward).
  double placed = 0;
  for (size_t k = 0; k < g.current(); ++k)
    if (g.decisions()[k] != Action::Drop) placed += inst.buffers[k].benefit;
  return placed - drop_backup_penalty(g) - before;
}

Evaluation RolloutEvaluator::evaluate(const MMapGame& state) {
  Evaluation e;
  const std::vector<Action> legal = state.legal_actions();
  for (Action a : legal) e.prior[static_cast<int>(a)] = 1.0 / static_cast<double>(legal.size());
  const Instance& inst = state.instance();
  if (cached_ != &inst || cached_buffers_ != inst.buffers.size()) calibrate(inst);
  MMapGame g = state;
  e.value = rollout(g, horizon_, policy_);
  return e;
}

Mcts::Mcts(MctsOptions options, std::shared_ptr<Evaluator> evaluator)
    : options_(options), evaluator_(std::move(evaluator)), rng_(options.seed) {
  if (!evaluator_) evaluator_ = std::make_shared<RolloutEvaluator>(options_.rollout_horizon);
}

namespace {

// What the tree plans with. GameWalker steps copies of the real game (true dynamics, exact
// legality); LatentWalker steps a learned model's latent states (MuZero), where every action is
// open below the root. A walker keeps the state of the path being simulated.
//   begin()                   back to the root
//   step(parent, child, a)    the reward of a from the path's state, moved to child; terminal
//   evaluate(node)            prior and value at the path's state, and which actions are open
class GameWalker {
 public:
  GameWalker(const MMapGame& root, Evaluator& evaluator) : root_(root), evaluator_(evaluator) {}
  void begin() { g_ = root_; }
  double step(int32_t, int32_t, Action a, bool& terminal) {
    const double r = search_step(g_, a);
    terminal = g_.done();
    return r;
  }
  Evaluation evaluate(int32_t, std::vector<Action>& open) {
    open = g_.legal_actions();
    return evaluator_.evaluate(g_);
  }

 private:
  const MMapGame& root_;
  Evaluator& evaluator_;
  MMapGame g_ = root_;
};

class LatentWalker {
 public:
  LatentWalker(const MMapGame& root, LatentModel& model)
      : root_(root), model_(model), depth_left_(root.instance().buffers.size() - root.current()) {}
  void begin() { depth_ = 0; }
  double step(int32_t parent, int32_t child, Action a, bool& terminal) {
    ++depth_;
    terminal = depth_ >= depth_left_;  // the game has no more buffers to decide
    grow(child);
    if (!known_[static_cast<size_t>(child)]) {
      known_[static_cast<size_t>(child)] = 1;
      eval_[static_cast<size_t>(child)] = model_.recurrent(latent_[static_cast<size_t>(parent)], a,
                                                           latent_[static_cast<size_t>(child)],
                                                           reward_[static_cast<size_t>(child)]);
    }
    return reward_[static_cast<size_t>(child)];
  }
  Evaluation evaluate(int32_t node, std::vector<Action>& open) {
    grow(node);
    if (node == 0) {  // the real state: its legal actions, and the representation
      open = root_.legal_actions();
      known_[0] = 1;
      return eval_[0] = model_.initial(root_, latent_[0]);
    }
    open = {Action::Copy, Action::NoCopy, Action::Drop};
    return eval_[static_cast<size_t>(node)];
  }

 private:
  void grow(int32_t node) {
    const size_t n = static_cast<size_t>(node) + 1;
    if (latent_.size() >= n) return;
    latent_.resize(n);
    eval_.resize(n);
    reward_.resize(n);
    known_.resize(n);
  }
  const MMapGame& root_;
  LatentModel& model_;
  size_t depth_ = 0, depth_left_;
  std::vector<std::vector<float>> latent_;
  std::vector<Evaluation> eval_;
  std::vector<double> reward_;
  std::vector<uint8_t> known_;
};

}  // namespace

template <class Walker>
MoveSearch Mcts::run(Walker& walker, std::vector<Node>& nodes, int64_t simulations,
                     double deadline_seconds) {
  const auto t0 = Clock::now();
  const bool reused = !nodes.empty() && nodes[0].expanded;
  if (!reused) nodes.assign(1, Node{});
  MinMax minmax;
  std::vector<Action> open;
  // Creates the children of `node` for the actions open at the walker's state with the prior
  // (renormalized over them; uniform if it gives them no mass) and returns its value.
  auto expand = [&](int32_t node) {
    const Evaluation e = walker.evaluate(node, open);
    double mass = 0;
    for (Action a : open) mass += std::max(0.0, e.prior[static_cast<int>(a)]);
    for (Action a : open) {
      Node child;
      child.prior = mass > 0 ? std::max(0.0, e.prior[static_cast<int>(a)]) / mass
                             : 1.0 / static_cast<double>(open.size());
      nodes[static_cast<size_t>(node)].children[static_cast<int>(a)] =
          static_cast<int32_t>(nodes.size());
      nodes.push_back(child);
    }
    nodes[static_cast<size_t>(node)].expanded = true;
    return e.value;
  };
  auto q_of = [&](const Node& n) { return n.reward + options_.discount * n.value(); };
  auto select = [&](const Node& parent) {
    const double n = static_cast<double>(parent.visits);
    int best = -1;
    double best_score = -std::numeric_limits<double>::infinity();
    for (int a = 0; a < kNumActions; ++a) {
      if (parent.children[a] < 0) continue;
      const Node& c = nodes[static_cast<size_t>(parent.children[a])];
      const double pb = (std::log((n + options_.c2 + 1) / options_.c2) + options_.c1) *
                        std::sqrt(n) / static_cast<double>(c.visits + 1);
      const double score = pb * c.prior + (c.visits ? minmax.normalize(q_of(c)) : 0.0);
      if (score > best_score) best = a, best_score = score;
    }
    return best;
  };

  walker.begin();
  if (!reused) expand(0);
  if (options_.root_noise) {
    std::gamma_distribution<double> gamma(options_.noise_alpha, 1.0);
    std::array<double, kNumActions> noise{};
    double sum = 0;
    for (int a = 0; a < kNumActions; ++a)
      if (nodes[0].children[a] >= 0) sum += noise[a] = gamma(rng_);
    for (int a = 0; a < kNumActions; ++a) {
      if (nodes[0].children[a] < 0) continue;
      Node& c = nodes[static_cast<size_t>(nodes[0].children[a])];
      c.prior = (1 - options_.noise_fraction) * c.prior +
                options_.noise_fraction * (sum > 0 ? noise[a] / sum : 0.0);
    }
  }

  MoveSearch out;
  std::vector<int32_t> path;
  for (int64_t sim = 0;; ++sim) {
    if (sim >= options_.min_simulations &&
        (sim >= simulations || (deadline_seconds > 0 && since(t0) >= deadline_seconds)))
      break;
    walker.begin();
    path.assign(1, 0);
    int32_t node = 0;
    while (nodes[static_cast<size_t>(node)].expanded &&
           !nodes[static_cast<size_t>(node)].terminal) {
      const int a = select(nodes[static_cast<size_t>(node)]);
      const int32_t child = nodes[static_cast<size_t>(node)].children[a];
      bool terminal = false;
      const double r = walker.step(node, child, static_cast<Action>(a), terminal);
      Node& c = nodes[static_cast<size_t>(child)];
      c.reward = r;
      c.terminal = terminal;
      path.push_back(child);
      node = child;
    }
    double value = nodes[static_cast<size_t>(node)].terminal ? 0.0 : expand(node);
    for (size_t k = path.size(); k-- > 0;) {
      Node& n = nodes[static_cast<size_t>(path[k])];
      n.value_sum += value;
      ++n.visits;
      if (k > 0) minmax.update(q_of(n));
      value = n.reward + options_.discount * value;
    }
    ++out.simulations;
  }

  // The move: the most visited child (ties: the higher Q), or sampled by visits^(1/T).
  std::array<double, kNumActions> weight{};
  double total = 0;
  int best = -1;
  for (int a = 0; a < kNumActions; ++a) {
    if (nodes[0].children[a] < 0) continue;
    const Node& c = nodes[static_cast<size_t>(nodes[0].children[a])];
    out.visits[a] = c.visits;
    out.q[a] = c.visits ? q_of(c) : 0.0;
    if (best < 0 || c.visits > out.visits[best] ||
        (c.visits == out.visits[best] && out.q[a] > out.q[best]))
      best = a;
    if (options_.temperature > 0)
      total += weight[a] = std::pow(static_cast<double>(c.visits), 1.0 / options_.temperature);
  }
  if (options_.temperature > 0 && total > 0) {
    double u = std::uniform_real_distribution<double>(0.0, total)(rng_);
    for (int a = 0; a < kNumActions; ++a) {
      if (nodes[0].children[a] < 0 || weight[a] <= 0) continue;
      best = a;
      if ((u -= weight[a]) < 0) break;
    }
  }
  out.action = static_cast<Action>(best);
  return out;
}

MoveSearch Mcts::search(const MMapGame& root, int64_t simulations, double deadline_seconds) {
  if (root.done()) internal_error("Mcts::search on a finished game");
  GameWalker walker(root, *evaluator_);
  if (!options_.reuse_tree) tree_.clear();
  return run(walker, tree_, simulations, deadline_seconds);
}

void Mcts::advance(Action a) {
  const int32_t child = tree_.empty() ? -1 : tree_[0].children[static_cast<int>(a)];
  if (child < 0 || !options_.reuse_tree) {
    tree_.clear();
    return;
  }
  // The child's subtree, renumbered breadth first from 0.
  std::vector<Node> kept;
  std::vector<int32_t> todo = {child};
  kept.push_back(tree_[static_cast<size_t>(child)]);
  for (size_t k = 0; k < kept.size(); ++k)
    for (int a = 0; a < kNumActions; ++a) {
      const int32_t c = kept[k].children[a];
      if (c < 0) continue;
      kept.push_back(tree_[static_cast<size_t>(c)]);  // may move kept[k]: index, no reference
      kept[k].children[a] = static_cast<int32_t>(kept.size() - 1);
    }
  tree_ = std::move(kept);
}

MoveSearch Mcts::search_latent(const MMapGame& root, LatentModel& model, int64_t simulations,
                               double deadline_seconds) {
  if (root.done()) internal_error("Mcts::search_latent on a finished game");
  LatentWalker walker(root, model);
  std::vector<Node> nodes;  // latent states live in the walker: no tree is kept between moves
  return run(walker, nodes, simulations, deadline_seconds);
}

MctsResult search_game(const std::shared_ptr<const Instance>& inst, const MctsOptions& options,
                       std::shared_ptr<Evaluator> evaluator, std::shared_ptr<LatentModel> model,
                       const MoveObserver& on_move) {
  const auto t0 = Clock::now();
  Mcts mcts(options, std::move(evaluator));
  MctsResult r;
  size_t last = 0;
  bool first = true;
  const size_t n = inst->buffers.size();
  auto policy = [&](const MMapGame& g) {
    if (!first && g.current() <= last) {
      ++r.backtracks;
      mcts.forget();  // the Drop-backup went back: the kept subtree is of another state
    }
    first = false;
    last = g.current();
    const std::vector<Action> legal = g.legal_actions();
    if (legal.size() == 1) {
      if (on_move) {
        MoveSearch forced;
        forced.action = legal[0];
        forced.visits[static_cast<int>(legal[0])] = 1;
        on_move(g, forced);
      }
      mcts.advance(legal[0]);
      return legal[0];
    }
    double deadline = 0;
    if (options.seconds > 0) {
      const double left = std::max(0.0, options.seconds - since(t0));
      deadline = std::max(1e-9, left / static_cast<double>(n - g.current()));
    }
    const MoveSearch s = model ? mcts.search_latent(g, *model, options.simulations, deadline)
                               : mcts.search(g, options.simulations, deadline);
    if (on_move) on_move(g, s);
    if (!model) mcts.advance(s.action);
    r.simulations += s.simulations;
    ++r.searched_moves;
    return s.action;
  };
  const MMapGame g = play(inst, policy, options.game);
  r.best_return = g.total_return();
  r.decisions = g.decisions();
  r.lost = g.lost();
  r.seconds = since(t0);
  return r;
}

}  // namespace tempo::mmap
