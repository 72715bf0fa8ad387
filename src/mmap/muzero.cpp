// MMap-MuZero: the networks' CPU inference, self-play into a replay, and the learner as a Tempo
// program.
#include "mmap/muzero.h"
#include "driver/compile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include "api/tempo.h"
#include "mmap/baselines.h"
#include "nn/module.h"
#include "nn/safetensors.h"
#include "optim/optim.h"
#include "util/error.h"

namespace tempo::mmap {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The initial weight of the heuristic's choice in the policy's logits
// (MuZeroOptions::heuristic_hint).
constexpr double kHintLogit = 3.0;

// The five networks: name, input size, output size, latent output (tanh).
struct NetSpec {
  const char* name;
  int64_t in, out;
  bool tanh_out;
};
std::vector<NetSpec> net_specs(const MuZeroOptions& o, int64_t observation_size) {
  return {{"rep", observation_size, o.latent, true},
          {"dyn", o.latent + kNumActions, o.latent, true},
          {"rew", o.latent + kNumActions, 1, false},
          {"val", o.latent, 1, false},
          {"pol", o.latent, kNumActions, false}};
}

int64_t observation_size(const MuZeroOptions& o) {
  // The game's observation's length depends on the options only; measure it on a one-buffer
  // game.
  auto inst = std::make_shared<Instance>();
  inst->name = "probe";
  inst->capacity = 1;
  inst->supply = {1.0};
  Buffer b;
  b.size = 1;
  inst->buffers.push_back(b);
  const size_t game = MMapGame(inst).observe(o.observation).flat().size();
  return static_cast<int64_t>(game) + (o.heuristic_hint ? kNumActions : 0);
}

// The config saved with a network, as one F64 tensor. Version 1 (14 values) predates the
// heuristic's hint and loads without it.
constexpr int kConfigSize = 15;
HostTensor encode_config(const MuZeroOptions& o, int64_t obs_size, double vs, double rs) {
  const ObservationOptions& ob = o.observation;
  const std::vector<double> v = {2.0,  // format version
                                 static_cast<double>(o.latent),
                                 static_cast<double>(o.hidden),
                                 static_cast<double>(ob.grid_time),
                                 static_cast<double>(ob.grid_memory),
                                 static_cast<double>(ob.time_window),
                                 static_cast<double>(ob.profile_bins),
                                 static_cast<double>(ob.supply_window),
                                 static_cast<double>(ob.next_buffers),
                                 static_cast<double>(ob.same_tensor),
                                 static_cast<double>(obs_size),
                                 vs,
                                 rs,
                                 static_cast<double>(o.planning),
                                 o.heuristic_hint ? 1.0 : 0.0};
  HostTensor t(DType::Float64, {kConfigSize});
  for (int k = 0; k < kConfigSize; ++k) t.set(k, v[static_cast<size_t>(k)]);
  return t;
}

// The networks' prior and value at real states, for planning on the real game.
class NetworkEvaluator : public Evaluator {
 public:
  explicit NetworkEvaluator(std::shared_ptr<MuZeroNetwork> net) : net_(std::move(net)) {}
  Evaluation evaluate(const MMapGame& state) override { return net_->initial(state, latent_); }

 private:
  std::shared_ptr<MuZeroNetwork> net_;
  std::vector<float> latent_;
};

// Plays one game by MCTS with the network, as its options say.
MctsResult play_with(const std::shared_ptr<const Instance>& inst,
                     const std::shared_ptr<MuZeroNetwork>& net, const MctsOptions& m,
                     const MoveObserver& on_move = nullptr) {
  if (net->options().planning == Planning::Game)
    return search_game(inst, m, std::make_shared<NetworkEvaluator>(net), nullptr, on_move);
  return search_game(inst, m, nullptr, net, on_move);
}

// A played position: its observation (if the search was asked there), the search's visit
// distribution (one-hot for a forced move), the decision, and the normalized reward and return.
struct Position {
  std::vector<float> obs;
  std::array<float, kNumActions> policy{};
  int action = static_cast<int>(Action::Drop);
  float reward = 0, value = 0;
};

// Self-play and the replay, driven by the learner's batch UDF.
class SelfPlay {
 public:
  SelfPlay(std::shared_ptr<const Instance> inst, const MuZeroOptions& o, int64_t obs_size)
      : inst_(std::move(inst)), o_(o), obs_size_(obs_size), rng_(o.seed) {
    if (o.demonstration || o.heuristic_hint) heuristic_ = heuristic(inst_).decisions;
    double largest = 0;
    for (const Buffer& b : inst_->buffers) largest = std::max(largest, b.benefit);
    value_scale_ = inst_->total_benefit() > 0 ? inst_->total_benefit() : 1.0;
    reward_scale_ = largest > 0 ? largest : 1.0;
    t0_ = Clock::now();
  }

  // The batch, in this order: observations (B x D); per unrolled action k < K its one-hot and
  // its reward target; per unrolled step k <= K the policy target, whether the step is inside
  // the game, and the value target.
  std::vector<std::vector<int64_t>> batch_shapes() const {
    const int64_t b = o_.batch, K = o_.unroll;
    std::vector<std::vector<int64_t>> s = {{b, obs_size_}};
    for (int64_t k = 0; k < K; ++k) s.push_back({b, kNumActions});
    for (int64_t k = 0; k < K; ++k) s.push_back({b, 1});
    for (int64_t k = 0; k <= K; ++k) s.push_back({b, kNumActions});
    for (int64_t k = 0; k < 2 * (K + 1); ++k) s.push_back({b, 1});
    return s;
  }
  std::vector<TensorType> batch_types() const {
    std::vector<TensorType> t;
    for (const auto& s : batch_shapes())
      t.push_back({DType::Float32, Shape(std::vector<Expr>(s.begin(), s.end()))});
    return t;
  }

  // The learner's step `step` with the current parameters: self-play at the start of a round,
  // then a batch. The weights at the last step are the trained network.
  std::vector<HostTensor> operator()(const std::vector<HostTensor>& params, int64_t step,
                                     const std::vector<std::string>& names) {
    const bool in_time = o_.max_seconds <= 0 || since(t0_) < o_.max_seconds;
    const bool play = step % o_.steps_per_round == 0 && step / o_.steps_per_round < o_.rounds;
    if ((play && in_time) || step == last_step) {
      std::map<std::string, HostTensor> weights;
      for (size_t k = 0; k < names.size(); ++k) weights[names[k]] = params[k];
      network =
          std::make_shared<MuZeroNetwork>(weights, o_, obs_size_, value_scale_, reward_scale_);
      if (o_.heuristic_hint) network->set_hint(inst_, heuristic_);
    }
    if (play && in_time) {
      if (step == 0 && o_.demonstration) demonstrate();
      for (int64_t g = 0; g < o_.games_per_round; ++g) self_play(step / o_.steps_per_round);
      if (on_round) on_round(*this);
    }
    return sample();
  }

  MuZeroTraining report() const {
    MuZeroTraining t;
    t.network = network;
    t.curve = curve;
    t.seconds = since(t0_);
    t.games = games;
    for (const auto& g : replay_) t.positions += static_cast<int64_t>(g.size());
    return t;
  }

  std::shared_ptr<MuZeroNetwork> network;  // with the parameters of the latest round or last step
  std::vector<CurvePoint> curve;
  int64_t games = 0;
  int64_t last_step = -1;  // the learner's last step: its parameters are the trained network
  std::function<void(const SelfPlay&)> on_round;

 private:
  // One self-play game; the temperature of its moves falls from o.temperature to a quarter of
  // it over the rounds (MuZero's schedule: explore early, play sharper later).
  void self_play(int64_t round) {
    std::vector<Position> pos(inst_->buffers.size());
    MctsOptions m;
    m.simulations = o_.simulations;
    m.root_noise = true;
    m.temperature = o_.temperature * (round * 2 < o_.rounds       ? 1.0
                                      : round * 4 < 3 * o_.rounds ? 0.5
                                                                  : 0.25);
    m.seed = rng_();
    auto record = [&](const MMapGame& g, const MoveSearch& s) {
      Position& p = pos[g.current()];
      p.obs = network->observation(g);
      int64_t total = 0;
      for (int a = 0; a < kNumActions; ++a) total += s.visits[a];
      for (int a = 0; a < kNumActions; ++a)
        p.policy[a] = total ? static_cast<float>(s.visits[a]) / static_cast<float>(total) : 0.f;
    };
    const MctsResult r = play_with(inst_, network, m, record);
    ++games;
    best_ = std::max(best_, r.best_return);
    curve.push_back({since(t0_), r.best_return, best_});
    if (!r.lost) store(std::move(pos), r.decisions);  // nothing to learn from a game lost at 0
  }

  // The heuristic's game as a demonstration: its decisions as one-hot policy targets.
  void demonstrate() {
    std::vector<Position> pos(inst_->buffers.size());
    auto policy = [&](const MMapGame& g) {
      Position& p = pos[g.current()];
      p.obs = network->observation(g);
      p.policy = {};
      p.policy[static_cast<size_t>(heuristic_[g.current()])] = 1.f;
      return heuristic_[g.current()];
    };
    const MMapGame g = play(inst_, policy);
    if (!g.lost()) demonstration_ = complete(std::move(pos), g.decisions());
  }

  // Completes a game's positions with the final decisions (the Drop-backup may have changed some
  // after they were asked; those it forced unasked get the decision as policy target), rewards
  // and returns, and keeps it.
  std::vector<Position> complete(std::vector<Position> pos, const std::vector<Action>& decisions) {
    double to_go = 0;
    for (size_t k = pos.size(); k-- > 0;) {
      Position& p = pos[k];
      p.action = static_cast<int>(decisions[k]);
      if (p.obs.empty()) p.policy = {}, p.policy[static_cast<size_t>(p.action)] = 1.f;
      const double reward = decisions[k] == Action::Drop ? 0.0 : inst_->buffers[k].benefit;
      to_go = reward + MctsOptions{}.discount * to_go;
      p.reward = static_cast<float>(reward / reward_scale_);
      p.value = static_cast<float>(to_go / value_scale_);
    }
    return pos;
  }
  void store(std::vector<Position> pos, const std::vector<Action>& decisions) {
    replay_.push_back(complete(std::move(pos), decisions));
    trim();
  }

  void trim() {
    int64_t total = 0;
    for (const auto& g : replay_) total += static_cast<int64_t>(g.size());
    while (replay_.size() > 1 && total > o_.replay_positions) {
      total -= static_cast<int64_t>(replay_.front().size());
      replay_.erase(replay_.begin());
    }
  }

  std::vector<HostTensor> sample() {
    std::vector<HostTensor> out;
    for (const auto& s : batch_shapes()) out.emplace_back(DType::Float32, s);
    if (replay_.empty()) return out;  // every game so far was lost: a zero batch
    const int64_t K = o_.unroll;
    std::uniform_int_distribution<size_t> pick_game(0, replay_.size() - 1);
    for (int64_t b = 0; b < o_.batch; ++b) {
      // A quarter of the batch from the demonstration, if any: it keeps the prior near the
      // heuristic's decisions while the search's improvements accumulate.
      const bool demo = !demonstration_.empty() && b % 4 == 0;
      const std::vector<Position>& g = demo ? demonstration_ : replay_[pick_game(rng_)];
      // A root where the search was asked (the first buffer always is: it has an observation).
      size_t t = std::uniform_int_distribution<size_t>(0, g.size() - 1)(rng_);
      while (g[t].obs.empty()) t = t == 0 ? g.size() - 1 : t - 1;
      std::copy(g[t].obs.begin(), g[t].obs.end(), out[0].ptr<float>() + b * obs_size_);
      for (int64_t k = 0; k <= K; ++k) {
        const size_t at = t + static_cast<size_t>(k);
        const bool inside = at < g.size();
        float* pi = out[static_cast<size_t>(1 + 2 * K + k)].ptr<float>() + b * kNumActions;
        for (int a = 0; a < kNumActions; ++a)
          pi[a] = inside ? g[at].policy[static_cast<size_t>(a)] : 1.f / kNumActions;
        out[static_cast<size_t>(2 + 3 * K + k)].ptr<float>()[b] = inside ? 1.f : 0.f;
        out[static_cast<size_t>(3 + 4 * K + k)].ptr<float>()[b] = inside ? g[at].value : 0.f;
        if (k == K) continue;
        // Past the end: the absorbing state, every action dropping with no reward.
        const int action = inside ? g[at].action : static_cast<int>(Action::Drop);
        out[static_cast<size_t>(1 + k)].ptr<float>()[b * kNumActions + action] = 1.f;
        out[static_cast<size_t>(1 + K + k)].ptr<float>()[b] = inside ? g[at].reward : 0.f;
      }
    }
    return out;
  }

  std::shared_ptr<const Instance> inst_;
  MuZeroOptions o_;
  int64_t obs_size_;
  std::mt19937_64 rng_;
  double value_scale_ = 1, reward_scale_ = 1, best_ = 0;
  Clock::time_point t0_;
  std::vector<std::vector<Position>> replay_;
  std::vector<Position> demonstration_;
  std::vector<Action> heuristic_;  // the heuristic's decisions: demonstration and hint
};

}  // namespace

// ---- the networks on the CPU -----------------------------------------------------------------

void MuZeroNetwork::Mlp::forward(const float* x, std::vector<float>& y) const {
  std::vector<float> a(x, x + sizes[0]), b;
  for (size_t l = 0; l < weight.size(); ++l) {
    const int64_t in = sizes[l], out = sizes[l + 1];
    b.assign(static_cast<size_t>(out), 0.f);
    for (int64_t o = 0; o < out; ++o) {
      const float* w = weight[l].data() + o * in;
      float s = bias[l][static_cast<size_t>(o)];
      for (int64_t i = 0; i < in; ++i) s += w[i] * a[static_cast<size_t>(i)];
      const bool last = l + 1 == weight.size();
      b[static_cast<size_t>(o)] = last ? (tanh_out ? std::tanh(s) : s) : std::max(0.f, s);
    }
    a.swap(b);
  }
  y = std::move(a);
}

MuZeroNetwork::MuZeroNetwork(const std::map<std::string, HostTensor>& weights,
                             const MuZeroOptions& options, int64_t observation_size,
                             double value_scale, double reward_scale)
    : options_(options),
      observation_size_(observation_size),
      value_scale_(value_scale),
      reward_scale_(reward_scale),
      weights_(weights) {
  Mlp* nets[] = {&rep_, &dyn_, &rew_, &val_, &pol_};
  const std::vector<NetSpec> specs = net_specs(options, observation_size);
  for (size_t n = 0; n < specs.size(); ++n) {
    Mlp& m = *nets[n];
    m.sizes = {specs[n].in, options.hidden, specs[n].out};
    m.tanh_out = specs[n].tanh_out;
    for (int l = 0; l < 2; ++l) {
      const std::string base = cat(specs[n].name, ".", l, ".");
      auto get = [&](const std::string& what, std::vector<int64_t> shape) {
        auto it = weights.find(base + what);
        if (it == weights.end()) throw UserError(cat("MuZero network: no tensor ", base, what));
        if (it->second.shape != shape || it->second.dtype != DType::Float32)
          throw UserError(cat("MuZero network: ", base, what, " has the wrong shape or dtype"));
        const float* p = it->second.ptr<float>();
        return std::vector<float>(p, p + it->second.numel());
      };
      m.weight.push_back(get("weight", {m.sizes[l + 1], m.sizes[l]}));
      m.bias.push_back(get("bias", {m.sizes[l + 1]}));
    }
  }
  if (options.heuristic_hint) {
    auto it = weights.find("pol.hint");
    if (it == weights.end() || it->second.numel() != 1 || it->second.dtype != DType::Float32)
      throw UserError("MuZero network: no tensor pol.hint of one float32");
    hint_logit_ = it->second.ptr<float>()[0];
  }
}

void MuZeroNetwork::save(const std::string& path) const {
  nn::NamedTensors t(weights_.begin(), weights_.end());
  t.emplace_back("config", encode_config(options_, observation_size_, value_scale_, reward_scale_));
  nn::save(path, t);
}

MuZeroNetwork MuZeroNetwork::load(const std::string& path) {
  std::map<std::string, HostTensor> t = nn::load(path);
  auto it = t.find("config");
  const bool v1 = it != t.end() && it->second.numel() == kConfigSize - 1 && it->second.at(0) == 1;
  const bool v2 = it != t.end() && it->second.numel() == kConfigSize && it->second.at(0) == 2;
  if (!v1 && !v2)
    throw UserError(cat(path, ": not a MuZero network saved by tempo (no config of version 1-2)"));
  const HostTensor c = it->second;
  t.erase(it);
  auto i = [&](int k) { return static_cast<int64_t>(c.at(k)); };
  MuZeroOptions o;
  o.latent = i(1);
  o.hidden = i(2);
  o.observation = {i(3), i(4), i(5), i(6), i(7), i(8), i(9)};
  o.planning = i(13) == 1 ? Planning::Game : Planning::Latent;
  o.heuristic_hint = v2 && i(14) == 1;
  if (observation_size(o) != i(10))
    throw UserError(cat(path, ": its observation size does not match its options"));
  return MuZeroNetwork(t, o, i(10), c.at(11), c.at(12));
}

Evaluation MuZeroNetwork::predict(const std::vector<float>& latent, const float* hint) const {
  Evaluation e;
  pol_.forward(latent.data(), out_);
  if (hint)
    for (int a = 0; a < kNumActions; ++a) out_[a] += hint_logit_ * hint[a];
  const float mx = *std::max_element(out_.begin(), out_.end());
  double sum = 0;
  for (int a = 0; a < kNumActions; ++a) sum += e.prior[a] = std::exp(out_[a] - mx);
  for (double& p : e.prior) p /= sum;
  val_.forward(latent.data(), out_);
  e.value = static_cast<double>(out_[0]) * value_scale_;
  return e;
}

void MuZeroNetwork::set_hint(std::shared_ptr<const Instance> inst, std::vector<Action> decisions) {
  if (decisions.size() != inst->buffers.size())
    internal_error("MuZero hint: one decision per buffer expected");
  hint_instance_ = std::move(inst);
  hint_ = std::move(decisions);
}

std::vector<float> MuZeroNetwork::observation(const MMapGame& state) {
  std::vector<float> obs = state.observe(options_.observation).flat();
  if (!options_.heuristic_hint) return obs;
  if (hint_instance_ != state.shared_instance())
    set_hint(state.shared_instance(), heuristic(state.shared_instance()).decisions);
  // The action play() would take for the heuristic's decision here (none once done).
  const int hint = state.done() ? -1 : static_cast<int>(playable(state, hint_[state.current()]));
  for (int k = 0; k < kNumActions; ++k) obs.push_back(k == hint ? 1.f : 0.f);
  return obs;
}

Evaluation MuZeroNetwork::initial(const MMapGame& state, std::vector<float>& latent) {
  const std::vector<float> obs = observation(state);
  if (static_cast<int64_t>(obs.size()) != observation_size_)
    internal_error("MuZero observation of the wrong size");
  rep_.forward(obs.data(), latent);
  return predict(latent, options_.heuristic_hint ? obs.data() + obs.size() - kNumActions : nullptr);
}

Evaluation MuZeroNetwork::recurrent(const std::vector<float>& latent, Action a,
                                    std::vector<float>& next, double& reward) {
  in_.assign(latent.begin(), latent.end());
  for (int k = 0; k < kNumActions; ++k) in_.push_back(k == static_cast<int>(a) ? 1.f : 0.f);
  rew_.forward(in_.data(), out_);
  reward = static_cast<double>(out_[0]) * reward_scale_;
  dyn_.forward(in_.data(), next);
  return predict(next);
}

// ---- training --------------------------------------------------------------------------------

MuZeroTraining train_muzero(const std::shared_ptr<const Instance>& inst,
                            const MuZeroOptions& options,
                            const std::function<void(const MuZeroTraining&)>& on_round) {
  const MuZeroOptions& o = options;
  if (o.rounds < 1 || o.games_per_round < 1 || o.steps_per_round < 1 || o.batch < 1 ||
      o.unroll < 0 || o.simulations < 1 || o.latent < 1 || o.hidden < 1)
    throw UserError(
        "MuZero options: rounds, games, steps, batch, simulations and sizes must be "
        "positive (unroll at least 0)");
  const int64_t obs_size = observation_size(o);
  auto play = std::make_shared<SelfPlay>(inst, o, obs_size);
  if (on_round) play->on_round = [&](const SelfPlay& s) { on_round(s.report()); };

  // The learner: parameters over the iteration dimension i, one Adam step per i.
  Context ctx;
  Dim i = ctx.dim("i", "I");
  std::vector<std::unique_ptr<nn::MLP>> nets;
  for (const NetSpec& s : net_specs(o, obs_size))
    nets.push_back(std::make_unique<nn::MLP>(ctx, std::vector<int64_t>{s.in, o.hidden, s.out}, i,
                                             nn::relu, s.tanh_out ? nn::tanh : nn::identity));
  const nn::MLP &rep = *nets[0], &dyn = *nets[1], &rew = *nets[2], &val = *nets[3], &pol = *nets[4];
  std::vector<nn::Parameter> params;
  std::vector<std::string> names;
  const std::vector<NetSpec> specs = net_specs(o, obs_size);
  for (size_t n = 0; n < nets.size(); ++n)
    for (const auto& [name, p] : nets[n]->named_parameters()) {
      names.push_back(cat(specs[n].name, ".", name));
      params.push_back(p);
    }
  nn::Parameter hint_weight;
  if (o.heuristic_hint) {
    hint_weight = nn::Parameter(ctx.constant(kHintLogit, {1}), i, "pol.hint");
    params.push_back(hint_weight);
    names.push_back("pol.hint");
  }

  auto batch_fn = [play, names](const std::vector<HostTensor>& in,
                                const std::vector<int64_t>& point) {
    return (*play)(in, point[0], names);
  };
  const std::vector<RT> b =
      ctx.udf("muzero_self_play", batch_fn, nn::as_rts(params), play->batch_types(), {i});
  const int64_t K = o.unroll;
  auto at = [&](int64_t offset, int64_t k) { return b[static_cast<size_t>(offset + k)]; };
  RT h = rep(b[0]);
  RT total;
  for (int64_t k = 0; k <= K; ++k) {
    const RT pi = at(1 + 2 * K, k), mask = at(2 + 3 * K, k), z = at(3 + 4 * K, k);
    RT logits = pol(h);
    // At the real state the heuristic's choice (the observation's last features) adds its logit.
    if (k == 0 && o.heuristic_hint)
      logits = logits + hint_weight * b[0].slice(1, obs_size - kNumActions, obs_size);
    RT term = -(pi * logits.log_softmax(-1)).sum(-1, true) * mask + (val(h) - z).square();
    if (k < K) {
      const RT x = tempo::cat(std::vector<RT>{h, at(1, k)}, 1);
      term = term + (rew(x) - at(1 + K, k)).square();
      h = dyn(x);
    }
    total = k == 0 ? term : total + term;
  }
  const RT loss = total.mean();
  optim::Adam adam(params, o.learning_rate);
  optim::minimize(loss, adam, /*max_grad_norm=*/5.0);
  const RT kept_loss = loss.retain();

  // One more step than the rounds need: its UDF call sees the parameters after the last update.
  const int64_t steps = o.rounds * o.steps_per_round;
  play->last_step = steps;
  CompileOptions co;
  co.whole_component = false;  // a few hundred ops: fast scheduling settings
  co.proximity = false;
  co.seed = o.seed;
  Executable exe = compile(ctx, {{i.bound, steps + 1}}, co);
  exe.run();

  MuZeroTraining t = play->report();
  t.learner_steps = steps;
  for (int64_t r = 0; r < o.rounds; ++r) {
    double sum = 0;
    for (int64_t k = 0; k < o.steps_per_round; ++k)
      sum += exe.get(kept_loss, {r * o.steps_per_round + k}).at(0);
    t.round_loss.push_back(sum / static_cast<double>(o.steps_per_round));
  }
  return t;
}

MctsResult play_muzero(const std::shared_ptr<const Instance>& inst,
                       const std::shared_ptr<MuZeroNetwork>& network, MctsOptions options) {
  options.root_noise = false;
  options.temperature = 0;
  return play_with(inst, network, options);
}

}  // namespace tempo::mmap
