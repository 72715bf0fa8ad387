// The parts the RL programs share (internal to src/rl/algorithms/): the acting program every
// algorithm learns from, written once in program.cpp, and one loss per algorithm in its own file
// (reinforce.cpp, a2c.cpp, ppo.cpp, dqn.cpp, sac.cpp, td3.cpp), the way CleanRL gives each
// algorithm one readable file.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "nn/distributions.h"
#include "nn/module.h"
#include "optim/optim.h"
#include "rl/algorithms/algorithms.h"
#include "rl/algorithms/checkpoint.h"

namespace tempo::rl::detail {

// The action distribution of a policy network's output `out`: categorical over discrete actions,
// else a diagonal normal with the state-independent `log_std`.
class Policy {
 public:
  Policy(bool discrete, const RT& out, const RT& log_std);
  // With a shard, the noise of the shard's rows of the whole job's batch (nn::Shard).
  RT sample(const nn::Shard* shard = nullptr) const;
  RT log_prob(const RT& actions) const;
  RT entropy() const;

 private:
  std::optional<nn::Categorical> categorical_;
  std::optional<nn::Normal> normal_;
};

// What a training checkpoint carries besides the parameters and the environments
// (checkpoint.h): optimizer states, target networks and the replay buffer, gathered as the
// learners make them. A resumed run (`resume` set) starts each from the checkpoint's value, taken
// in the order the program makes them; after a warm-up's checkpoint (acting only) only the
// replay buffer, the learners starting afresh.
struct Carried {
  const TrainCheckpoint* resume = nullptr;
  bool learned() const { return resume && !resume->acting_only; }
  std::vector<optim::Optimizer::StateTensor> optimizer_states, targets;
  // The replay buffer's fields (Replay's order) as this process's program holds them: the
  // transitions since it started, (rows, ...) over i; a resumed run's checkpoint holds the ones
  // before.
  std::vector<RT> replay;
  // The checkpoint's next n optimizer states, for one optimizer.
  std::vector<HostTensor> next_optimizer_states(size_t n) const;
  // The checkpoint's value of the next target tensor, a copy of p.
  HostTensor next_target(const nn::Parameter& p) const;
};

// The acting program over iterations i and timesteps t: o[0, 0] = reset(), o[i, t + 1] =
// step(a[i, t]), o[i + 1, 0] = the last observation of iteration i, actions sampled from the
// policy network with the parameters of the start of the iteration.
struct Acting {
  Context& ctx;
  const TrainConfig& cfg;
  Dim i, t;
  std::optional<Dim> u;  // PPO's update dimension: parameters are state over (i, u)
  nn::Steps steps;
  Expr start;  // the parameter point that acts in iteration i
  bool discrete;
  std::function<std::vector<int64_t>(int64_t out)> mlp_sizes;  // obs -> hidden... -> out
  nn::Linear::Init init;
  nn::MLP pi;                         // DQN: the Q-network
  nn::Parameter log_std;              // continuous actions only
  std::vector<nn::Parameter> params;  // what the optimizer updates (learners add theirs)
  std::optional<Policy> policy;       // the acting distribution (none in DQN)
  RT obs, actions;                    // o[i, t], a[i, t]
  // Per step: the reward, whether the episode ended (terminated or truncated), whether it
  // terminated, and the episode's own last observation (before an automatic reset).
  RT reward, done, terminated, final_obs;
  int64_t first_iteration = 0;  // the whole run's iteration at i = 0 (a resumed run's start)
  const Space* action_space = nullptr;
  Carried& carried;
};

// The optimizer of TrainConfig::optimizer minimizing `loss` over `params` (U steps an
// iteration), its learning rate decayed over the whole run's iterations (TrainConfig::lr_decay),
// DQN's after learning starts; a resumed run continues from the checkpoint's optimizer states.
// The states join a.carried.
void add_optimizer(Acting& a, const std::vector<nn::Parameter>& params, const RT& loss, int64_t U);

// The index reading all of x's temporal dims at the current point, with t replaced by `entry`.
Expr index_with(const RT& x, const Dim& t, const Expr& entry);
// x read over the whole of t at the current point of x's other dims: x[i, 0:T] (T, ...).
RT rollout(const RT& x, const Dim& t);
// The mean over all elements, in a data-parallel program over every rank's (an AllReduce).
RT job_mean(const RT& x);
// Normalized over all elements (CleanRL's advantage normalization), every rank's in a
// data-parallel program.
RT normalized(const RT& x);
// The standard deviation of a centered RT over all elements (eps inside the sqrt).
RT deviation(const RT& centered);

// The losses, each over the domain its parameters update on.
RT reinforce_loss(Acting& a);
RT a2c_loss(Acting& a);
RT ppo_loss(Acting& a);
RT dqn_loss(Acting& a);  // a.pi is the Q-network

// The off-policy algorithms' replay buffer (replay.cpp): a minibatch of TrainConfig::batch_size
// transitions drawn at iteration i from the latest buffer_size, each field (B, ...).
struct Replay {
  RT obs, actions, reward, next_obs, terminated;
};
Replay replay_batch(Acting& a);  // its fields join a.carried
// The replay buffer's fields (Replay's order, over the latest buffer_size transitions) into
// a.carried.replay: what replay_batch samples from, and a warm-up's checkpoint saves.
void add_replay_windows(Acting& a);
// The last n rows of cat(before, after) along dim 0 (before may be empty: HostTensor()); the
// replay buffer a checkpoint saves.
HostTensor latest_rows(const HostTensor& before, const HostTensor& after, int64_t n);
// The iterations a size in env steps spans (validate() checks that it divides).
int64_t iterations_of(int64_t env_steps, const TrainConfig& cfg);

// SAC's and TD3's shared pieces (twin_q.cpp).
// The action box: half-widths, centres and bounds, (A) each.
struct ActionBox {
  ActionBox(Context& ctx, const Space& space);
  RT clip(const RT& a) const;  // into [low, high]
  int64_t A;
  RT scale, bias, low, high;
};
// Uniform actions in the box until learning starts, then policy_actions (N, A) at (i, t).
RT random_until_learning(Context& ctx, const TrainConfig& cfg, const ActionBox& box,
                         const RT& policy_actions, const Dim& i, const Dim& t, int64_t first);
// A ReLU MLP's forward pass with the given weights and biases, in nn::Linear's layout.
RT mlp_with(const std::vector<RT>& weights_and_biases, RT x);
// A network's Polyak-averaged copy: states over the parameters' steps that start as the
// network's initial values (a resumed run's: the checkpoint's); advance() defines them after the
// network's update (at the steps where `when` holds, if given; tau 1 copies it). The states join
// `carried`.
struct Target {
  Target(const nn::MLP& net, Carried& carried);
  void advance(double tau, const RT& when = RT()) const;
  std::vector<nn::Parameter> params;
  std::vector<RT> values;

 private:
  Carried* carried_;
};
// Two Q-networks over cat(observation, action) and their targets.
struct TwinQ {
  explicit TwinQ(Acting& a);
  // Both networks' mean squared error to target at (obs, actions).
  RT loss(const RT& obs, const RT& actions, const RT& target) const;
  // The smaller of the targets' values (B).
  RT target_min(const RT& obs, const RT& actions) const;
  std::vector<nn::Parameter> parameters() const;
  nn::MLP q1, q2;
  Target target1, target2;
};
// Adam minimizing `loss` over `params`, updating after `delay` iterations, then every `every`-th;
// returns whether it updates at the current iteration (Optimizer::updating). A resumed run
// continues from the checkpoint's states; the states join a.carried.
RT minimize_after(Acting& a, const RT& loss, const std::vector<nn::Parameter>& params, double lr,
                  int64_t delay, int64_t every = 1);

RT sac_loss(Acting& a);  // a.pi is the actor; returns the critics' loss, minimized with the rest
// SAC's actions from the actor's output (N, 2A) at (i, t): uniform in the action box until
// learning starts, then a sample of the squashed Gaussian.
RT sac_actions(Context& ctx, const TrainConfig& cfg, const RT& actor_out, const Space& space,
               const Dim& i, const Dim& t, int64_t first);

RT td3_loss(Acting& a);  // a.pi is the actor; returns the critics' loss, minimized with the rest
// TD3's actions from the actor's output (N, A) at (i, t): uniform in the action box until
// learning starts, then the deterministic action plus Gaussian exploration noise, clipped.
RT td3_actions(Context& ctx, const TrainConfig& cfg, const RT& actor_out, const Space& space,
               const Dim& i, const Dim& t, int64_t first);

// DQN's actions from the Q-values q (N, n) at (i, t): uniform at random with probability epsilon
// (TrainConfig's schedule over the run's steps; `first`: the run's iteration at i = 0), else
// greedy.
RT epsilon_greedy(Context& ctx, const TrainConfig& cfg, const RT& q, int64_t n, const Dim& i,
                  const Dim& t, int64_t first);

// GAE over the rollout with the acting parameters (A2C, PPO): the value network (its
// parameters added to a.params), its values V0 of the rollout's observations, the advantages
// and the returns ADV + V0, each (T, N) and detached.
struct Advantages {
  nn::MLP vf;
  RT values, advantages, returns;
};
Advantages advantages(Acting& a);

}  // namespace tempo::rl::detail
