// A training checkpoint: everything rl::train needs to continue a run where it stopped, so that
// the resumed run computes what the uninterrupted one would have (TrainConfig::resume_dir).
//
// A directory holds, next to the policy (saved_policy.h):
//   checkpoint-<iterations>.safetensors  the tensors: "parameter.<k>" (every trained parameter,
//                        the policy's then the value network's), "optimizer.<k>" (each optimizer
//                        state, e.g. Adam's moments, in optim::Optimizer::states() order),
//                        "target.<k>" (each target network's tensor, SAC, TD3 and DQN),
//                        "replay.<k>" (the off-policy algorithms' replay buffer: each per-step
//                        field's latest transitions, one row each, oldest first), "obs"
//                        (the observations the next iteration starts from), "curve" (one row
//                        (env_steps, mean_return) per iteration done), "recent" (the returns of
//                        the latest episodes, the reported mean's window), "last_mean"
//   checkpoint.json      the manifest, written last: the iterations done, the tensors file's
//                        name, size and checksum, the flags the run must match, the episode
//                        count and the environments' state (BatchedEnv::state: physical state,
//                        generators, episode steps and returns)
// Every file goes through a temporary file and a rename, and a tensors file is removed only once
// a newer manifest names another: a process killed at any moment leaves the previous complete
// checkpoint loadable. What else the run depends on needs no saving: the learning rate and
// Adam's bias corrections are functions of the iteration, action sampling draws are functions of
// (seed, point) (api/random_offset.h) and PPO's minibatch order of (seed, iteration).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "api/tempo.h"
#include "rl/algorithms/algorithms.h"

namespace tempo::rl {

struct TrainCheckpoint {
  int64_t iterations = 0;  // iterations done
  // The flags a resumed run must share ("--lr", "0.00025"), in a fixed order.
  std::vector<std::pair<std::string, std::string>> config;
  std::vector<HostTensor> parameters;
  std::vector<HostTensor> optimizer_states;
  std::vector<HostTensor> targets;  // target networks' tensors, in the order the program makes them
  // The replay buffer (DQN, SAC, TD3): observations, actions, rewards, final observations and
  // terminations of the latest transitions, (rows, ...) each, oldest first.
  std::vector<HostTensor> replay;
  HostTensor obs;         // (num_envs, obs_dim)
  std::string env_state;  // BatchedEnv::state()
  std::vector<CurvePoint> curve;
  std::vector<double> recent;
  double last_mean = 0.0;
  int64_t episodes = 0;
  // A warm-up's (never saved): acting only, so the parameters, optimizer states and targets are
  // left out and the learners start from their initial values.
  bool acting_only = false;
};

// The flags of `cfg` that a checkpoint records and a resumed run must match.
std::vector<std::pair<std::string, std::string>> checkpoint_config(const TrainConfig& cfg);

// Writes the checkpoint into `dir` (which exists). UserError naming the file and the system's
// error when a write fails (e.g. a full disk); the previous checkpoint then stays loadable.
void save_checkpoint(const std::string& dir, const TrainCheckpoint& c);
// UserError naming the directory or file when there is no checkpoint or it is malformed.
TrainCheckpoint load_checkpoint(const std::string& dir);
// UserError naming the first flag that differs between `cfg` and the checkpoint in `dir`.
void check_resumable(const TrainConfig& cfg, const TrainCheckpoint& c, const std::string& dir);

namespace detail {

// Assembles the checkpoint after an iteration from what the program's host functions see at
// different times (the environments after the iteration's last step, the curve after its
// progress line, the trained tensors after its updates) and saves it once all three arrived,
// whatever order the schedule runs them in. Iterations count from the start of the whole run.
class CheckpointParts {
 public:
  CheckpointParts(const TrainConfig& cfg, std::string dir);
  // Hands the checkpoint after `total` iterations to `sink` instead of saving (a warm-up's end).
  CheckpointParts(int64_t total, std::function<void(TrainCheckpoint)> sink);
  // Whether the run saves a checkpoint after `done` iterations (every save_every, and the last).
  bool wanted(int64_t done) const;
  void env(int64_t done, HostTensor obs, std::string state);
  void stats(int64_t done, std::vector<CurvePoint> curve, std::vector<double> recent,
             double last_mean, int64_t episodes);
  // The tensors of `part`: parameters, optimizer states, targets and replay buffer.
  void tensors(int64_t done, TrainCheckpoint part);

 private:
  void arrived(int64_t done);  // saves when all three parts are there

  std::string dir_;
  std::function<void(TrainCheckpoint)> sink_;
  std::vector<std::pair<std::string, std::string>> config_;
  int64_t every_ = 0, total_;
  std::map<int64_t, TrainCheckpoint> pending_;
  std::map<int64_t, int> parts_;
};

}  // namespace detail

}  // namespace tempo::rl
