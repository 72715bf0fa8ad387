// Pearl (Automatic Code Optimization Using Deep RL, §4-5): an actor-critic agent that picks loop
// transformations on the loop tree's branches, trained with PPO on generated programs and used
// greedily on programs it never saw.
//
//   state    the loop-nest graph (loops/graph.h) with the current branch tagged
//   encoder  two GATv2 layers (attention over each node's neighbours through a padded adjacency
//            mask; four heads as in the paper), mean and max pooling after each layer,
//            concatenated (Fig. 2), then a 2-layer MLP
//   heads    a 3-layer policy MLP over the 77 actions, masked to the legal ones (the environment's
//            isl legality, and "next" only once a branch has had max_actions_per_branch
//            transformations), and a 3-layer value MLP
//   reward   log4(speedup) (§4.3) of each transformation, timed after it (memoized); the rewards
//            telescope to the log4 of the final speedup, which can instead be paid once at the
//            episode's end (one timed run per episode, PearlOptions::step_rewards = false)
//   learner  PPO (clipped ratio, GAE, value coefficient, entropy bonus decaying to 0, Table 2)
//            as a Tempo program over an iteration dimension i: at each step a UDF receives the
//            current parameters, plays episodes with a C++ forward pass of the same network every
//            `epochs` steps, and returns the batch; the weights after the last step are the agent
//   pre-training (§5.2)  the encoder, trunk and value head first learn to predict the unoptimized
//            programs' (standardized log) run times, also a Tempo program; then (the data the
//            paper leaves for future work: program, schedule, speedup) the whole network imitates
//            measured demonstrations, a one-step look-ahead episode per training program; the
//            weights start the PPO learner
//
// Memoization (§5.1): legality by schedule key in each program's LoopEnv, timings by schedule key
// in one Evaluator for all training programs; both can be turned off to measure what they save.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/tempo.h"
#include "ir/types.h"
#include "loops/baselines.h"
#include "loops/codegen.h"
#include "loops/dense_layer.h"
#include "loops/graph.h"
#include "loops/program.h"
#include "loops/transform.h"
#include "nn/module.h"

namespace tempo::loops {

using ir::HostTensor;

struct PearlOptions {
  int64_t hidden = 64;     // GATv2 width
  int64_t heads = 4;       // GATv2 attention heads, each on hidden / heads channels
  int64_t mlp = 128;       // trunk and heads
  int64_t batch = 64;      // transitions per PPO batch
  int64_t epochs = 4;      // Adam steps on each batch
  int64_t iterations = 8;  // PPO batches
  double learning_rate = 3e-4;
  double clip = 0.3, gamma = 0.99, lambda = 0.95, value_coef = 2.0;
  // The entropy bonus, decaying linearly over the iterations. The paper's 0.1 at the start
  // (Table 2) is for a policy that starts uniform (imitation_steps = 0); after imitation it pulls
  // the policy back towards uniform (measured: lower rewards in PPO).
  double entropy_start = 0.01, entropy_end = 0.0;
  int max_actions_per_branch = 3;
  int64_t pretrain_steps = 150;  // 0: no pre-training
  double pretrain_learning_rate = 1e-3;
  // Adam steps of imitation of measured demonstrations before PPO (0: none): one episode per
  // training program by a one-step look-ahead that times every legal transformation.
  int64_t imitation_steps = 200;
  // The demonstrations' targets: softmax of the measured log4 speedups over this temperature.
  double imitation_temperature = 0.1;
  bool memoize = true;  // legality and timing memoization during training
  // The policy head starts (imitation, then PPO) picking each kind of transformation (and
  // "next") equally often instead of each of the 77 actions (false: its default initialization).
  bool kind_prior = true;
  // Training: each transformation is timed and rewarded with the log4 speedup it made (§4.3);
  // false: one timing per episode, the whole log4 speedup paid at its end (the same return).
  bool step_rewards = true;
  // Inference: time the schedule after each transformation of the greedy episode and return the
  // fastest one on the way (the original included), instead of the episode's last.
  bool select_measured = false;
  // Training runs are killed once they take as long as this many unoptimized runs (plus 0.5 s
  // to start and fill the arrays; within run.time_limit_s): a parallel loop inside millions of
  // sequential iterations can be slower by orders of magnitude, and earns about
  // log4(1 / max_slowdown) anyway.
  double max_slowdown = 16;
  uint64_t seed = 1;
  RunOptions run;  // how training programs are timed
};

// The network on the CPU without Tempo, from named weights as the learner names its parameters
// (gat0.wl.weight, ..., pol.2.bias); UserError where one is missing or of the wrong shape.
class PearlNetwork {
 public:
  PearlNetwork(const std::map<std::string, HostTensor>& weights, const PearlOptions& o);
  // Action logits (unmasked, num_actions()) and the state value.
  void forward(const LoopGraph& g, std::vector<float>& logits, float& value) const;
  const std::map<std::string, HostTensor>& weights() const { return weights_; }
  // A safetensors file of the weights and the sizes; load() checks them (UserError).
  void save(const std::string& path) const;
  static PearlNetwork load(const std::string& path, PearlOptions& o);

 private:
  using Dense = DenseLayer;
  Dense get(const std::string& name, int64_t in, int64_t out, bool bias) const;
  std::map<std::string, HostTensor> weights_;
  int64_t hidden_, mlp_, heads_;
  Dense wl_[2], wr_[2], att_[2], trunk_[2], pol_[3], val_[3];
};

// The names and shapes of the network's parameters (for tests and checkpoints).
std::vector<std::pair<std::string, std::vector<int64_t>>> pearl_parameter_shapes(
    const PearlOptions& o);

// The network's forward pass written with Tempo's api over batched, padded graphs: x
// (B, kMaxNodes, kFeatures), adjacency (B, kMaxNodes, kMaxNodes), mask (B, kMaxNodes, 1).
// Parameters are constants when `steps` is empty. Returns the logits (B, A) and values (B, 1).
struct PearlOutputs {
  RT logits, value;
};
struct PearlModel {
  int64_t heads = 1;
  std::shared_ptr<nn::Linear> wl[2], wr[2], att[2];  // att: the heads' attention vectors, (1, H)
  std::shared_ptr<nn::MLP> trunk, pol, val;
  // Named as PearlNetwork expects them.
  std::vector<std::pair<std::string, nn::Parameter>> named_parameters() const;
};
PearlModel make_pearl_model(Context& ctx, const nn::Steps& steps, const PearlOptions& o);
PearlOutputs pearl_forward(const PearlModel& m, const RT& x, const RT& adjacency, const RT& mask);

// Masks for one state: the environment's legal actions, only "next" once the branch has had
// `max_per_branch` transformations.
std::vector<bool> pearl_action_mask(LoopEnv& env, int transformations_on_branch,
                                    int max_per_branch);

struct PearlTraining {
  std::shared_ptr<PearlNetwork> network;
  double seconds = 0, pretrain_seconds = 0;
  double imitation_seconds = 0;     // demonstrations and imitation
  double demo_measure_seconds = 0;  // of which compiling and timing the demonstrations' schedules
  int64_t demonstrations = 0, demonstrated_moves = 0;  // states, and those not "next"
  std::vector<double> imitation_loss;  // per imitation step
  double episode_seconds = 0;  // playing episodes (legality, encoding, inference, timing)
  double measure_seconds = 0;  // of which compiling and timing schedules
  std::vector<double> pretrain_loss;   // per pre-training step
  std::vector<double> loss;            // per PPO step (epochs per batch)
  std::vector<double> mean_reward;     // per batch: mean episode return (log4 speedup)
  int64_t episodes = 0, transformations = 0, illegal_picks = 0;
  MemoStats memo;  // legality over all training programs, timing of the shared Evaluator
  int64_t unique_schedules = 0;
};

// Trains on `programs` (their unoptimized times are measured first).
PearlTraining train_pearl(const std::vector<Program>& programs, const PearlOptions& o);

// Optimizes a program greedily (the most probable legal action at each step) and times the
// result against the unoptimized program with `ev`; with o.select_measured, the fastest schedule
// of the episode (its note lists the transformations that lead to it).
Result run_pearl(const Program& p, const PearlNetwork& net, const PearlOptions& o, Evaluator& ev);

}  // namespace tempo::loops
