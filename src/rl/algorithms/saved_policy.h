// A trained policy kept on disk, and its greedy evaluation.
//
// A directory holds two files, each written through a temporary file and a rename (a crash
// never leaves one half-written):
//   policy.safetensors  the policy network's parameters, named as in nn::MLP ("0.weight",
//                       "0.bias", ...), plus "log_std" for continuous actions
//   policy.json         what rebuilds the network and its environment: algorithm, environment
//                       (and the synthetic one's options), hidden width and layers, observation
//                       and action spaces, seed, how far training had got, and the observation
//                       statistics of a policy trained on normalized observations
//
//   rl::TrainConfig cfg = rl::TrainConfig::defaults("ppo");
//   cfg.save_dir = "run/";  cfg.save_every = 50;
//   rl::train(cfg, &std::cout);                            // saves every 50 iterations and at the
//   end rl::EvalResult r = rl::evaluate(rl::load_policy("run/"), /*episodes=*/10, /*seed=*/1);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "api/tempo.h"
#include "rl/envs/env.h"
#include "rl/envs/normalize.h"

namespace tempo::rl {

struct SavedPolicy {
  std::string algo;  // the algorithm that trained it
  std::string env;   // the environment's name (make_env)
  EnvOptions env_options;
  // The MLP: obs -> hidden layers of these widths -> outputs, tanh (PPO, A2C, REINFORCE) or
  // ReLU (DQN's Q-network, SAC's and TD3's actors).
  std::vector<int64_t> hidden;
  Space observation_space, action_space;
  uint64_t seed = 0;
  int64_t iterations = 0;  // training iterations done when it was saved
  int64_t env_steps = 0;
  std::map<std::string, HostTensor> tensors;
  // Trained with normalized observations (TrainConfig::normalize_observations): the statistics
  // evaluation normalizes with, as training last did; undefined otherwise.
  ObservationNormalization obs_normalization;

  int64_t obs_dim() const { return observation_space.numel(); }
  bool relu() const;  // DQN's, SAC's and TD3's layers
  // The network's outputs: logits (Q-values for DQN) for discrete actions, else the actions'
  // mean (SAC: and their log-stds; SAC and TD3 squash the mean into the action box).
  int64_t out_dim() const {
    return action_space.discrete ? action_space.n : (algo == "sac" ? 2 : 1) * action_space.numel();
  }
};

// The directory's two files (see the top of this file); the directory must exist.
void save_policy(const std::string& dir, const SavedPolicy& policy);
// UserError naming the file when a file is missing or malformed, or the tensors do not fit the
// network the configuration describes.
SavedPolicy load_policy(const std::string& dir);

// Makes `dir` (with its parents) and checks that a file can be written in it; UserError naming
// `what` (e.g. "--out") otherwise. Run before a long computation whose results go there.
void check_writable_dir(const std::string& dir, const std::string& what);

struct EvalResult {
  std::vector<double> returns;  // one per episode
  double mean_return = 0.0;
};

// Runs the policy greedily (the most likely action; for continuous actions the mean, squashed
// into the action box for SAC and TD3, clipped to the action bounds) for one episode in each of
// `episodes` copies of its environment, reset with `seed` (copy k with seed + k), as a compiled
// recurrent-tensor program over the timesteps.
EvalResult evaluate(const SavedPolicy& policy, int64_t episodes, uint64_t seed);
// The same in a given environment (one episode per env copy); its spaces must match the policy's.
EvalResult evaluate(const SavedPolicy& policy, BatchedEnv& env, uint64_t seed);

}  // namespace tempo::rl
