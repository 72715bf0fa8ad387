// RL algorithms written as recurrent-tensor programs (TEMPO §3, Alg. 1), over an iteration
// dimension i and a timestep dimension t; the N environments of a batched env form a leading
// spatial dimension. The policy-gradient ones (REINFORCE, A2C, PPO) learn from each rollout of
// T steps; PPO adds an update dimension u (epochs x minibatches): its parameters are state over
// (i, u). DQN and SAC learn once per T steps from a replay buffer: a window of the latest
// transitions over (i, t), sampled at random.
//
//   rl::TrainConfig cfg = rl::TrainConfig::defaults("ppo");  cfg.env = "CartPole-v1";
//   rl::TrainResult res = rl::train(cfg, &std::cout);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "api/tempo.h"
#include "driver/compile.h"
#include "rl/envs/env.h"

namespace tempo::rl {

// Discounted sums within a rollout that respect episode boundaries: at (..., t),
//   sum_{k >= t} gamma^(k - t) x[..., k] * alive(t, k),  alive(t, k) = no done in [t, k),
// for x and done of the same shape over a domain containing t (done is 1 where an episode ended
// after step k). Written with the future slice x[..., t:T] (a dynamic (T - t) dimension), or
// with the window x[..., t:min(t + n, T)] for n-step returns (n > 0).
RT discounted_returns(const RT& x, const RT& done, double gamma, const Dim& t, int64_t n = 0,
                      Loc loc = Loc::current());

struct CurvePoint;

// DQN, SAC and TD3: they learn from a replay buffer, with target networks and ReLU layers.
bool is_off_policy(const std::string& algo);

// An MLP's layer sizes: `in`, the hidden layers' widths (TrainConfig::hidden), `out`.
std::vector<int64_t> mlp_layer_sizes(int64_t in, const std::vector<int64_t>& hidden, int64_t out);

// CompileOptions' defaults for training (TrainConfig::compile): seed 1, no proximity constraints.
CompileOptions default_train_compile();

struct TrainConfig {
  // The defaults of `algo` ("reinforce", "a2c", "ppo", "dqn", "sac" or "td3"): CleanRL's for PPO on
  // CartPole (4 envs x 128 steps, 4 epochs x 4 minibatches, lr 2.5e-4, 500k env steps), for DQN
  // (1 env, an update every 10 steps, constant lr 2.5e-4, Adam without gradient clipping, ReLU
  // layers of 120 and 84 with PyTorch's initialization, 500k env steps) and for SAC on
  // continuous actions (1 env, an update per step, batch 256, critics' and entropy lr 1e-3,
  // actor's 3e-4, learning from step 5000, 20k env steps where CleanRL runs 1M), for TD3 (as
  // SAC, with lr 3e-4 for the critics and the actor, the actor updated every second step;
  // learning from step 5000 where CleanRL starts at 25k of 1M); for A2C and REINFORCE, 8 envs x
  // 64 steps and lr 2.5e-3 over 500 iterations.
  static TrainConfig defaults(const std::string& algo);

  std::string algo = "a2c";  // "reinforce", "a2c", "ppo", "dqn", "sac" or "td3"
  std::string env = "CartPole-v1";
  EnvOptions env_options;  // the synthetic environment's observation shape and episode length
  // Makes the environment instead of `env` (e.g. one written in Python); `env` then only names
  // it in logs.
  std::function<std::unique_ptr<BatchedEnv>(int64_t num_envs)> make_env;
  int64_t iterations = 500;
  int64_t num_envs = 8;
  int64_t steps = 64;  // timesteps per rollout (T)
  double lr = 2.5e-3;
  bool lr_decay = true;         // linear decay of lr to 0 over the iterations
  // Orthogonal weights (gain sqrt(2); the policy's last layer 0.01, the value's 1, as CleanRL's
  // PPO) and zero biases; false: PyTorch's default init.
  bool orthogonal_init = true;
  // What a time-limit truncation means to A2C's and PPO's advantages and DQN's TD targets:
  // "bootstrap" (the value of the episode's last observation stands in for the rest of the
  // episode, as CleanRL's dqn.py) or "terminate" (no value after it, as CleanRL's ppo.py, which
  // treats truncation as termination).
  std::string truncation = "bootstrap";
  // Observation and reward normalization around the environment (rl/envs/normalize.h: Gymnasium's
  // wrappers, then clipping to +-10), as CleanRL's continuous-action PPO wraps MuJoCo tasks; the
  // rewards' discounted sums use gamma. A saved policy keeps the observation statistics.
  bool normalize_observations = false;
  bool normalize_rewards = false;
  double gamma = 0.99;
  double gae_lambda = 0.95;  // advantages of A2C and PPO (1: bootstrapped full-rollout returns)
  double ent_coef = 0.01;
  double vf_coef = 0.5;
  double max_grad_norm = 0.5;
  double clip = 0.2;        // PPO ratio clip (and value clip)
  int64_t epochs = 4;       // PPO: passes over each rollout
  int64_t minibatches = 4;  // PPO: minibatches per epoch (must divide num_envs * steps)
  int64_t n_step = 0;  // REINFORCE: 0 for Monte-Carlo returns, n for n-step; A2C: n-step, not GAE
  bool normalize_returns = true;  // REINFORCE: returns normalized over the rollout
  // REINFORCE: learn from the acting forward pass, one loss term per timestep (TEMPO Alg. 1),
  // instead of recomputing the forward pass over the rollout. The passes batch the per-step
  // backward passes over t (one batched backward pass per iteration). On in
  // defaults("reinforce"): at 3x64x64 it takes 0.86x the time of recomputing; it keeps the
  // acting activations until the update (1.9x the tracked peak at 512 CartPole envs).
  bool per_step = false;
  // DQN (CleanRL's dqn.py), SAC and TD3: the replay buffer holds the latest buffer_size transitions
  // and each update (one per iteration) samples batch_size of them, with replacement; updates
  // start once learning_starts env steps acted (SAC and TD3 act at random until then). DQN's target
  // network is the Q-network of every target_every env steps; DQN acts epsilon-greedily, epsilon
  // linear from eps_start to eps_end over exploration_fraction of the run's steps. The sizes in
  // env steps are multiples of num_envs x steps.
  int64_t buffer_size = 10000;
  int64_t batch_size = 128;
  int64_t learning_starts = 10000;
  int64_t target_every = 500;
  double eps_start = 1.0;
  double eps_end = 0.05;
  double exploration_fraction = 0.5;
  // SAC and TD3: the actor's learning rate (lr is the critics' and SAC's entropy
  // coefficient's) and the target networks' Polyak factor.
  double policy_lr = 3e-4;
  double tau = 0.005;
  // TD3: the exploration noise's and the target actions' noise's standard deviations, in units
  // of the action box's half-width, the latter clipped to +-noise_clip; the actor and the
  // targets update every policy_every-th step (CleanRL's policy_frequency).
  double exploration_noise = 0.1;
  double policy_noise = 0.2;
  double noise_clip = 0.5;
  int64_t policy_every = 2;
  // The hidden layers' widths of the policy and value networks, the input's side first.
  std::vector<int64_t> hidden = {64, 64};
  // `--hidden W` and `--layers N`: every hidden layer W wide; N hidden layers of the first width.
  void set_hidden_width(int64_t width);
  void set_hidden_layers(int64_t n);
  std::string optimizer = "adam";  // or "sgd" (a much smaller program)
  // How the training program compiles (profile: TrainResult::profile). compile.seed also seeds
  // the environments (copy k: seed + k). compile.proximity also turns on PassOptions::interleave:
  // learning interleaves with acting (n-step REINFORCE learns from step t once step t + n - 1
  // acted, and frees its observation) at a higher compile time; PPO exceeds isl's operation bound.
  // compile.communicator (api/distributed.h; null: one process) makes training data-parallel:
  // each rank acts on its own num_envs environments, the global ones rank*num_envs ..
  // rank*num_envs + num_envs - 1 (their seeds and action noise are those one process with
  // world_size*num_envs would use); gradients are averaged across ranks before the optimizer and
  // the initial parameters come from rank 0, so every rank holds the same parameters. Only rank 0
  // prints progress and saves the policy (save_dir); progress counts every rank's env steps.
  CompileOptions compile = default_train_compile();
  // Saves the policy network (rl/algorithms/saved_policy.h) in this directory after the last
  // iteration and, with save_every > 0, after every save_every iterations; train() checks that
  // it can write there before it compiles. Empty: not saved.
  // With a save_dir, and in one process with a built-in environment, each save also writes a
  // training checkpoint there (rl/algorithms/checkpoint.h): parameters, optimizer states,
  // environments' state, the curve so far.
  std::string save_dir;
  int64_t save_every = 0;
  // Continues the run whose checkpoint is in this directory from the iteration it reached, to the
  // result the uninterrupted run gets (curve and parameters bit for bit). The flags that shape
  // the run must be those the checkpoint was trained with (UserError naming one that differs).
  // Without a save_dir, checkpoints keep going to this directory.
  std::string resume_dir;
  // SAC and TD3: the iterations before learning starts run as a program of their own that only
  // acts (the learning program continues from its replay buffer and environments), so no update
  // is computed before the first one counts. The same curve and parameters either way; training
  // checkpoints start after it.
  bool warm_up = true;
  // Returns the trained parameters (TrainResult::parameters), e.g. to compare ranks.
  bool keep_parameters = false;
  // Called after each iteration (with its progress line) with the learning curve so far.
  std::function<void(const std::vector<CurvePoint>& curve)> on_iteration;
  // Called with the compiled program before it runs (e.g. to record its memory use).
  std::function<void(Executable& exe)> on_compiled;
};

// Throws UserError on an unknown algorithm or environment or an invalid number.
void validate(const TrainConfig& cfg);

struct CurvePoint {
  int64_t env_steps = 0;
  double mean_return = 0.0;  // mean over the last 20 episodes finished by that iteration
};

struct TrainResult {
  std::vector<CurvePoint> curve;  // one point per iteration
  // Wall seconds between the last env steps of consecutive iterations (a full iteration of
  // acting and learning in steady state); iterations - 1 entries.
  std::vector<double> iteration_seconds;
  int64_t peak_tracked_bytes = 0;  // the runtime's peak tensor-store (device) memory
  int64_t peak_host_bytes = 0;     // swapped-out values in host memory at their fullest
  double final_mean_return = 0.0;  // mean over the last iterations' returns
  double compile_seconds = 0.0;
  int64_t launches = 0;  // ops (kernels and user functions) the run executed
  double run_seconds = 0.0;
  int64_t episodes = 0;
  std::string profile;  // Executable::profile_report() with TrainConfig::compile.profile
  // Data parallel: collectives this rank ran and the wall time it spent in them.
  int64_t collectives = 0;
  double collective_seconds = 0.0;
  // With TrainConfig::keep_parameters: every trained parameter after the last iteration (the
  // policy's, then the value network's), in order.
  std::vector<HostTensor> parameters;
};

// Builds, compiles and runs the training program; prints one progress line per iteration to
// `log` (if given).
TrainResult train(const TrainConfig& cfg, std::ostream* log);

}  // namespace tempo::rl
