// MMap-MuZero (Optimizing Memory Mapping Using Deep RL, §4.3): MuZero's five networks over the
// MMapGame's observation, trained per instance from self-play, planning with MCTS in their
// latent space (mmap/mcts.h) and acting through the Drop-backup.
//
//   representation  h0 = f_rep(observation)               MLP, tanh latent
//   dynamics        h' = f_dyn(h, one-hot a)              MLP, tanh latent
//   reward          r  = f_rew(h, one-hot a)              MLP
//   value, policy   v  = f_val(h), logits = f_pol(h)      MLPs
//
// The learner is a Tempo program (nn::MLP, optim::Adam over an iteration dimension i): at each
// step a UDF receives the current parameters, plays self-play games with them every
// `steps_per_round` steps (MCTS with Dirichlet noise at the root, moves sampled by visit count),
// stores the trajectories, and returns a batch of positions with K unrolled actions and their
// targets: the search's visit distribution, the return to the end of the game and the reward of
// each action. The loss sums over the K + 1 unrolled steps the policy's cross-entropy, the
// value's and the reward's squared errors (MuZero's loss with scalar heads).
//
// Values are learned in units of the instance's total benefit and rewards in units of its
// largest buffer benefit, so both lie in [0, 1]; the model converts back before the search sees
// them. Differences from the paper, for size: MLPs instead of its ResNet encoder, scalar value
// and reward heads instead of categorical ones, uniform replay instead of prioritized; and the
// observation shows the heuristic's choice for the current buffer (MuZeroOptions::heuristic_hint),
// which seconds of training per instance cannot learn from the demonstration alone.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/types.h"
#include "mmap/game.h"
#include "mmap/mcts.h"

namespace tempo::mmap {

using ir::HostTensor;

// What the search steps: the learned dynamics in latent space (MuZero), or copies of the real game
// with the networks' prior and value at its states (the true-dynamics variant of the paper's
// ablation; exact legality below the root). The default is the game: with training budgets of
// seconds per instance it plays better (e.g. synthetic n128, 15 s: +4.8% over the heuristic on
// the game, -7.6% in latent space), the learned model being trained all the same.
enum class Planning { Latent, Game };

struct MuZeroOptions {
  Planning planning = Planning::Game;
  int64_t latent = 64, hidden = 128;
  int64_t unroll = 3;  // K
  int64_t batch = 64;
  double learning_rate = 3e-3;
  int64_t rounds = 6;                // self-play then learning, alternately
  int64_t games_per_round = 2;       // self-play games at the start of each round
  int64_t steps_per_round = 40;      // Adam steps per round
  int64_t simulations = 24;          // per self-play move
  double temperature = 1.0;          // self-play moves sampled by visits^(1/T)
  int64_t replay_positions = 50000;  // the replay keeps the newest positions
  uint64_t seed = 1;
  bool demonstration = true;  // the heuristic's game seeds the replay (policy targets)
  // The observation shows the heuristic's choice for the current buffer (one-hot, as play()
  // would take it in that state), and the policy's logits at a real state add a learned weight
  // times it (`pol.hint`, starting at 3: a prior of about 0.9 on that choice before training),
  // so that the agent follows the heuristic from its first steps and leaves it where the search
  // finds better.
  bool heuristic_hint = true;
  double max_seconds = 0;     // > 0: no new self-play games after this much training time
  ObservationOptions observation{16, 16, 256, 32, 16, 4, 2};
};

// One point of the training curve: a self-play game's return (and the best so far) after
// `seconds` of training.
struct CurvePoint {
  double seconds = 0, game_return = 0, best_return = 0;
};

// The five networks with their weights, evaluated on the CPU without Tempo (a search calls them
// once per simulation, microseconds each).
class MuZeroNetwork : public LatentModel {
 public:
  // From named weights (`rep.0.weight`, ..., as the learner names its parameters) and the value
  // and reward scales; UserError where one is missing or of the wrong shape.
  MuZeroNetwork(const std::map<std::string, HostTensor>& weights, const MuZeroOptions& options,
                int64_t observation_size, double value_scale, double reward_scale);
  // Reads a network saved by save(); UserError naming the file if it is not one.
  static MuZeroNetwork load(const std::string& path);
  void save(const std::string& path) const;

  // What the networks see of a state: the game's observation, then the heuristic's choice
  // where options().heuristic_hint. The heuristic's decisions are computed once per instance
  // (or given by set_hint).
  std::vector<float> observation(const MMapGame& state);
  void set_hint(std::shared_ptr<const Instance> inst, std::vector<Action> decisions);

  Evaluation initial(const MMapGame& state, std::vector<float>& latent) override;
  Evaluation recurrent(const std::vector<float>& latent, Action a, std::vector<float>& next,
                       double& reward) override;
  const MuZeroOptions& options() const { return options_; }

 private:
  struct Mlp {
    std::vector<std::vector<float>> weight, bias;  // per layer: (out x in) row-major, (out)
    std::vector<int64_t> sizes;
    bool tanh_out = false;
    void forward(const float* x, std::vector<float>& y) const;
  };
  // The prior and value at a latent state; `hint` (at a real state) the observation's one-hot
  // heuristic choice.
  Evaluation predict(const std::vector<float>& latent, const float* hint = nullptr) const;
  MuZeroOptions options_;
  int64_t observation_size_;
  double value_scale_, reward_scale_;
  std::map<std::string, HostTensor> weights_;  // as given, for save()
  Mlp rep_, dyn_, rew_, val_, pol_;
  float hint_logit_ = 0;                           // pol.hint
  std::shared_ptr<const Instance> hint_instance_;  // the instance hint_ is for
  std::vector<Action> hint_;
  mutable std::vector<float> in_, out_;
};

struct MuZeroTraining {
  std::shared_ptr<MuZeroNetwork> network;
  std::vector<CurvePoint> curve;
  double seconds = 0;
  int64_t games = 0, positions = 0, learner_steps = 0;
  std::vector<double> round_loss;  // the learner's mean loss over each round's steps
};

// Trains the agent on one instance (the paper trains per instance). `on_round` (optional) is
// called after each round's self-play with the curve so far.
MuZeroTraining train_muzero(const std::shared_ptr<const Instance>& inst,
                            const MuZeroOptions& options = {},
                            const std::function<void(const MuZeroTraining&)>& on_round = nullptr);

// Plays the instance with the trained agent: MCTS in the latent space (options.simulations per
// move or options.seconds for the game), most visited move, Drop-backup.
MctsResult play_muzero(const std::shared_ptr<const Instance>& inst,
                       const std::shared_ptr<MuZeroNetwork>& network, MctsOptions options);

}  // namespace tempo::mmap
