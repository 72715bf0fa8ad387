// RLFlow's model-based agent (§3.5): a world model of the rewrite environment learned from
// random-policy episodes, and a controller trained inside it ("in a dream") with PPO.
//
//   latent     z_t: a fixed graph embedding (counts of each op kind and fused activation among
//              the ops that run, the estimated runtime relative to the original, and the mask of
//              substitutions with a legal location), so that the mask is part of what is predicted
//   MDN-RNN    h_{t+1} = tanh(W [z_t, one-hot a_t, h_t] + b); from h_{t+1}: a mixture of K
//              diagonal Gaussians over z_{t+1}, the reward and the termination (logit)
//   controller an MLP over [z_t, h_t] with a substitution head masked by the (predicted) legal
//              substitutions, no-op included, and a value head; trained by PPO on episodes
//              imagined by the MDN-RNN, sampled with the temperature tau (mixture weights
//              softmax(logits / tau), deviations times sqrt(tau))
//   iterations World Models' iterative procedure: the controller's real episodes join the data,
//              and the world model and a new controller are trained again. Random episodes are
//              mostly substitutions that cost more, so a world model of them alone predicts
//              mostly losses and its controller learns to stop early.
//
// Both learners are Tempo programs fed by UDFs (the world model: minibatches of recorded
// sequences; the controller: imagined rollouts). Differences from the dissertation, for size: the
// latent is a fixed embedding rather than a learned graph encoding, the RNN is a plain tanh RNN
// rather than an LSTM, and an action is a substitution at its first legal location (the
// location head is the model-free agent's).
#pragma once

#include <cstdint>
#include <vector>

#include "rewrite/agent.h"

namespace tempo::rewrite {

struct WorldModelOptions {
  int64_t hidden = 64;      // RNN state
  int64_t mixtures = 3;     // K
  int64_t random_episodes = 24;
  int64_t max_steps = 40;   // real and imagined episode length
  int64_t seq_len = 12;     // training sequences' length (chunks of episodes)
  int64_t wm_steps = 300;   // world-model Adam steps
  int64_t batch = 32;
  double wm_learning_rate = 3e-3;
  double tau = 1.0;         // the dream's temperature
  // The controller, trained in the dream (PPO).
  int64_t rollouts = 20, episodes_per_rollout = 16, updates_per_rollout = 4;
  double learning_rate = 3e-3, clip = 0.2, gamma = 0.99, lambda = 0.95, entropy = 0.01;
  int64_t eval_episodes = 8;  // real episodes with the trained controller
  // World Models' iterative training: after the first controller, its real episodes join the
  // random ones and the world model and the controller are trained again on all of them.
  int64_t iterations = 3;
  uint64_t seed = 1;
};

struct WorldModelResult {
  Graph best;  // the cheapest graph the trained controller reached in the real environment
  double initial_cost = 0, best_cost = 0;
  std::vector<Match> steps;
  double seconds = 0;  // all of it: random episodes, world model, controller, evaluation
  int64_t real_steps = 0, dream_steps = 0;     // real: the random episodes' and the controllers'
  double real_seconds = 0, dream_seconds = 0;  // environment time in each
  std::vector<double> wm_losses;  // per 10% of the world model's steps, iteration after iteration
  std::vector<CurvePoint> dream_curve;  // imagined return (percent) per dream episode, in order
};

WorldModelResult train_world_model(const Graph& g, CostModel& cost,
                                   const WorldModelOptions& options = {});

}  // namespace tempo::rewrite
