// The PPO agent: the network's CPU forward pass, rollouts in the environment, and the learner as
// a Tempo program fed by a rollout UDF (the pattern of mmap/muzero.cpp).
#include "rewrite/agent.h"
#include "driver/compile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>

#include "api/tempo.h"
#include "nn/module.h"
#include "nn/safetensors.h"
#include "optim/optim.h"
#include "rewrite/policy_math.h"
#include "util/error.h"

namespace tempo::rewrite {

namespace {

using Clock = std::chrono::steady_clock;
using ir::HostTensor;
using detail::linear;
using detail::masked_log_softmax;
using detail::episode_advantages;
using detail::sample;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One observation as the agent sees it: at most `max_nodes` nodes, each with its neighbours
// (both directions and itself, without repeats): Â's row i is 1/|nb[i]| on nb[i].
struct AgentObs {
  int64_t nodes = 0;
  std::vector<float> x;                 // nodes x kNodeFeatures
  std::vector<std::vector<int>> nb;
  std::vector<uint8_t> mask, rule_mask;
};

AgentObs agent_obs(const Observation& o, int64_t max_nodes) {
  AgentObs a;
  a.nodes = std::min(o.num_nodes, max_nodes);
  a.x.assign(o.node_features.begin(), o.node_features.begin() + a.nodes * kNodeFeatures);
  std::vector<std::set<int>> nb(a.nodes);
  for (int n = 0; n < a.nodes; ++n) nb[n].insert(n);
  for (auto [p, c] : o.edges)
    if (p < a.nodes && c < a.nodes) {
      nb[p].insert(c);
      nb[c].insert(p);
    }
  for (auto& s : nb) a.nb.emplace_back(s.begin(), s.end());
  a.mask = o.mask;
  a.rule_mask = o.rule_mask;
  return a;
}

// The policy and value network on the CPU, from the learner's parameters by name.
class PolicyNet {
 public:
  PolicyNet(std::map<std::string, HostTensor> w, int64_t rules, int64_t locations)
      : w_(std::move(w)), rules_(rules), locations_(locations) {}

  struct Out {
    std::vector<float> g;          // graph embedding
    std::vector<double> rule_logp;  // masked
    double value = 0;
  };

  Out encode(const AgentObs& o) const {
    const int64_t H = w_.at("enc1.weight").shape[0];
    std::vector<float> h = o.x, agg, z(o.nodes * H), y;
    int64_t width = kNodeFeatures;
    for (const char* layer : {"enc1", "enc2"}) {
      agg.assign(o.nodes * width, 0.f);
      for (int64_t n = 0; n < o.nodes; ++n) {
        float inv = 1.f / static_cast<float>(o.nb[n].size());
        for (int j : o.nb[n])
          for (int64_t k = 0; k < width; ++k) agg[n * width + k] += inv * h[j * width + k];
      }
      const HostTensor &W = w_.at(cat(layer, ".weight")), &B = w_.at(cat(layer, ".bias"));
      for (int64_t n = 0; n < o.nodes; ++n) {
        linear(W, B, &agg[n * width], y);
        for (int64_t k = 0; k < H; ++k) z[n * H + k] = std::max(0.f, y[k]);
      }
      h = z;
      width = H;
    }
    Out r;
    r.g.assign(H, 0.f);
    for (int64_t n = 0; n < o.nodes; ++n)
      for (int64_t k = 0; k < H; ++k) r.g[k] += h[n * H + k] / static_cast<float>(o.nodes);
    r.rule_logp = masked_log_softmax(mlp("rule", r.g), o.rule_mask.data());
    r.value = mlp("value", r.g)[0];
    return r;
  }

  std::vector<double> location_logp(const Out& e, int rule, const AgentObs& o) const {
    std::vector<float> in = e.g;
    for (int64_t k = 0; k < rules_; ++k) in.push_back(k == rule ? 1.f : 0.f);
    return masked_log_softmax(mlp("loc", in), &o.mask[rule * locations_]);
  }

  const std::map<std::string, HostTensor>& weights() const { return w_; }

 private:
  // nn::MLP with two layers: tanh between them, identity at the output.
  std::vector<float> mlp(const std::string& name, const std::vector<float>& x) const {
    const HostTensor& w0 = w_.at(name + ".0.weight");
    std::vector<float> h, y;
    linear(w0, w_.at(name + ".0.bias"), x.data(), h);
    for (float& v : h) v = std::tanh(v);
    linear(w_.at(name + ".1.weight"), w_.at(name + ".1.bias"), h.data(), y);
    return y;
  }
  std::map<std::string, HostTensor> w_;
  int64_t rules_, locations_;
};

struct Transition {
  AgentObs obs;
  int rule = 0, loc = 0;
  double logp = 0, value = 0, reward = 0, adv = 0, ret = 0;
  bool done = false;
};

struct Episode {
  std::vector<Transition> steps;
  Graph final_graph;
  double final_cost = 0;
  std::vector<Match> taken;
};

// Rollouts with the current parameters, and the learner's minibatches. With several graphs the
// episodes take them in turn.
class Rollouts {
 public:
  Rollouts(const std::vector<Graph>& graphs, CostModel& cost, const PpoOptions& o)
      : o_(o), rng_(o.seed), t0_(Clock::now()) {
    if (graphs.empty()) throw UserError("the rewrite agent needs at least one graph to train on");
    EnvOptions eo;
    eo.max_locations = o.max_locations;
    eo.max_steps = o.max_steps;
    for (const Graph& g : graphs) {
      envs_.push_back(std::make_unique<RewriteEnv>(g, cost, eo));
      best.emplace_back();
      best.back().final_graph = g;
      best.back().final_cost = envs_.back()->initial_cost();
      // Room for the nodes that merges add (concats and splits).
      max_nodes_ = std::max(max_nodes_, static_cast<int64_t>(g.nodes.size()) * 5 / 4 + 16);
    }
    rules_ = RewriteEnv::num_rules() + 1;
  }

  int64_t rules() const { return rules_; }
  int64_t max_nodes() const { return max_nodes_; }
  std::shared_ptr<PolicyNet> net;
  std::vector<CurvePoint> curve;
  std::vector<std::string> names;
  std::vector<Episode> best;  // per graph, the cheapest any episode reached (training, evaluation)
  int64_t last_step = 0, env_steps = 0;
  double env_seconds = 0;

  std::vector<ir::TensorType> batch_types() const {
    const int64_t B = o_.batch, N = max_nodes_, R = rules_, L = o_.max_locations;
    std::vector<std::vector<int64_t>> shapes = {{B, N, kNodeFeatures}, {B, N, N}, {B, 1, N},
                                                {B, 1, R},  {B, 1, R},  {B, 1, L},
                                                {B, 1, L},  {B, 1, 1},  {B, 1, 1},
                                                {B, 1, 1}};
    std::vector<ir::TensorType> t;
    for (const auto& s : shapes)
      t.push_back({ir::DType::Float32, tempo::Shape(std::vector<Expr>(s.begin(), s.end()))});
    return t;
  }

  Episode play(const PolicyNet& n, bool greedy, size_t graph) {
    auto t = Clock::now();
    RewriteEnv& env = *envs_.at(graph);
    Episode e;
    Observation obs = env.reset();
    e.final_cost = env.cost();
    e.final_graph = env.graph();
    AgentObs a = agent_obs(obs, max_nodes_);
    env_seconds += since(t);
    while (true) {
      Transition tr;
      PolicyNet::Out out = n.encode(a);
      tr.rule = sample(out.rule_logp, rng_, greedy);
      std::vector<double> lp = n.location_logp(out, tr.rule, a);
      tr.loc = sample(lp, rng_, greedy);
      tr.logp = out.rule_logp[tr.rule] + lp[tr.loc];
      tr.value = out.value;
      t = Clock::now();
      StepResult s = env.step(tr.rule, tr.loc);
      ++env_steps;
      tr.reward = 100 * s.reward / env.initial_cost();
      tr.done = s.done;
      tr.obs = std::move(a);
      a = agent_obs(s.observation, max_nodes_);
      env_seconds += since(t);
      e.steps.push_back(std::move(tr));
      // The cheapest graph of the episode (a later step may make it worse again).
      if (env.cost() < e.final_cost) {
        e.final_cost = env.cost();
        e.final_graph = env.graph();
        e.taken = env.taken();
      }
      if (s.done) break;
    }
    if (e.final_cost < best[graph].final_cost) best[graph] = e;
    return e;
  }

  // The learner's step `step`: new rollouts at the start of each round, then a minibatch.
  std::vector<HostTensor> operator()(const std::vector<HostTensor>& params, int64_t step) {
    const int64_t per = o_.updates_per_rollout;
    const bool in_time = o_.max_seconds <= 0 || since(t0_) < o_.max_seconds;
    const bool collect = step % per == 0 && step < last_step && (in_time || buffer_.empty());
    if (collect || step == last_step) {
      std::map<std::string, HostTensor> w;
      for (size_t k = 0; k < names.size(); ++k) w[names[k]] = params[k];
      net = std::make_shared<PolicyNet>(w, rules_, o_.max_locations);
    }
    if (collect) {
      buffer_.clear();
      for (int64_t k = 0; k < o_.episodes_per_rollout; ++k) {
        Episode e = play(*net, false, episodes_++ % envs_.size());
        double total = 0;
        for (const auto& t : e.steps) total += t.reward;
        curve.push_back({since(t0_), static_cast<int64_t>(curve.size()), total});
        advantages(e.steps);
        for (auto& t : e.steps) buffer_.push_back(std::move(t));
      }
      normalize_advantages();
    }
    return batch();
  }

 private:
  void advantages(std::vector<Transition>& ep) const {
    episode_advantages(ep, o_.gamma, o_.lambda);
  }

  void normalize_advantages() {
    double mean = 0, var = 0;
    for (const auto& t : buffer_) mean += t.adv;
    mean /= static_cast<double>(buffer_.size());
    for (const auto& t : buffer_) var += (t.adv - mean) * (t.adv - mean);
    double sd = std::sqrt(var / static_cast<double>(buffer_.size())) + 1e-8;
    norm_.assign(buffer_.size(), 0);
    for (size_t k = 0; k < buffer_.size(); ++k) norm_[k] = (buffer_[k].adv - mean) / sd;
  }

  std::vector<HostTensor> batch() {
    auto types = batch_types();
    std::vector<HostTensor> out;
    for (const auto& t : types) {
      std::vector<int64_t> s;
      for (const Expr& d : t.shape.dims) s.push_back(d.value());
      out.emplace_back(ir::DType::Float32, s);
    }
    const int64_t N = max_nodes_, R = rules_, L = o_.max_locations, F = kNodeFeatures;
    std::uniform_int_distribution<size_t> pick(0, buffer_.size() - 1);
    for (int64_t b = 0; b < o_.batch; ++b) {
      size_t k = pick(rng_);
      const Transition& t = buffer_[k];
      const AgentObs& a = t.obs;
      float* x = out[0].ptr<float>() + b * N * F;
      std::copy(a.x.begin(), a.x.end(), x);
      float* adj = out[1].ptr<float>() + b * N * N;
      float* m = out[2].ptr<float>() + b * N;
      for (int64_t n = 0; n < a.nodes; ++n) {
        for (int j : a.nb[n]) adj[n * N + j] = 1.f / static_cast<float>(a.nb[n].size());
        m[n] = 1.f / static_cast<float>(a.nodes);
      }
      float* rpen = out[3].ptr<float>() + b * R;
      for (int64_t r = 0; r < R; ++r) rpen[r] = a.rule_mask[r] ? 0.f : -1e9f;
      out[4].ptr<float>()[b * R + t.rule] = 1;
      float* lpen = out[5].ptr<float>() + b * L;
      for (int64_t l = 0; l < L; ++l) lpen[l] = a.mask[t.rule * L + l] ? 0.f : -1e9f;
      out[6].ptr<float>()[b * L + t.loc] = 1;
      out[7].ptr<float>()[b] = static_cast<float>(t.logp);
      out[8].ptr<float>()[b] = static_cast<float>(norm_[k]);
      out[9].ptr<float>()[b] = static_cast<float>(t.ret);
    }
    return out;
  }

  PpoOptions o_;
  std::vector<std::unique_ptr<RewriteEnv>> envs_;
  size_t episodes_ = 0;
  std::mt19937_64 rng_;
  Clock::time_point t0_;
  int64_t rules_ = 0, max_nodes_ = 0;
  std::vector<Transition> buffer_;
  std::vector<double> norm_;
};

void check_options(const PpoOptions& o) {
  if (o.rollouts < 1 || o.episodes_per_rollout < 1 || o.updates_per_rollout < 1 || o.batch < 1 ||
      o.hidden < 1 || o.max_locations < 1)
    throw UserError(
        "PPO options: rollouts, episodes, updates, batch, hidden and locations must be positive");
}

struct Learned {
  std::vector<double> losses;  // per rollout, the mean over its updates
  double logp_gap = 0;
};

// The learner, a Tempo program over the updates, fed by `roll`; afterwards `roll->net` holds the
// trained parameters.
Learned learn(const std::shared_ptr<Rollouts>& roll, const PpoOptions& o) {
  const int64_t R = roll->rules(), L = o.max_locations, H = o.hidden;
  Context ctx;
  Dim i = ctx.dim("i", "I");
  nn::Linear enc1(ctx, kNodeFeatures, H, i), enc2(ctx, H, H, i);
  nn::MLP rule_head(ctx, {H, H, R}, i, nn::tanh), loc_head(ctx, {H + R, H, L}, i, nn::tanh),
      value_head(ctx, {H, H, 1}, i, nn::tanh);
  std::vector<nn::Parameter> params;
  std::vector<std::pair<const char*, const nn::Module*>> modules = {
      {"enc1", &enc1}, {"enc2", &enc2}, {"rule", &rule_head}, {"loc", &loc_head},
      {"value", &value_head}};
  for (const auto& [prefix, m] : modules)
    for (const auto& [name, p] : m->named_parameters()) {
      roll->names.push_back(cat(prefix, ".", name));
      params.push_back(p);
    }
  auto batch_fn = [roll](const std::vector<HostTensor>& in, const std::vector<int64_t>& point) {
    return (*roll)(in, point[0]);
  };
  const std::vector<RT> b =
      ctx.udf("rewrite_rollouts", batch_fn, nn::as_rts(params), roll->batch_types(), {i});
  const RT &X = b[0], &A = b[1], &M = b[2], &rpen = b[3], &rhot = b[4], &lpen = b[5],
           &lhot = b[6], &old_logp = b[7], &adv = b[8], &ret = b[9];
  RT h1 = enc1(A.matmul(X)).relu();
  RT h2 = enc2(A.matmul(h1)).relu();
  RT emb = M.matmul(h2);  // [B, 1, H]: the mean over the graph's nodes
  RT rule_lp = (rule_head(emb) + rpen).log_softmax(-1);
  RT loc_lp = (loc_head(tempo::cat(std::vector<RT>{emb, rhot}, 2)) + lpen).log_softmax(-1);
  RT logp = (rhot * rule_lp).sum(-1, true) + (lhot * loc_lp).sum(-1, true);
  RT ratio = (logp - old_logp).exp();
  RT surrogate = (ratio * adv).minimum(ratio.clamp(1 - o.clip, 1 + o.clip) * adv);
  RT value_loss = (value_head(emb) - ret).square() * 0.5;
  RT entropy = -(rule_lp.exp() * rule_lp).sum(-1, true);
  RT loss = (-surrogate + value_loss - entropy * o.entropy).mean();
  optim::Adam adam(params, o.learning_rate);
  optim::minimize(loss, adam, /*max_grad_norm=*/1.0);
  const RT kept_loss = loss.retain();
  // At a rollout's first update the parameters are those that acted: the learner's log-probs
  // must equal the CPU forward pass's (a check of one against the other).
  const RT kept_gap = (logp - old_logp).abs().mean().retain();

  // One more step than the rounds need: its UDF call sees the parameters after the last update.
  const int64_t steps = o.rollouts * o.updates_per_rollout;
  roll->last_step = steps;
  CompileOptions co;
  co.whole_component = false;
  co.proximity = false;
  co.seed = o.seed;
  Executable exe = compile(ctx, {{i.bound, steps + 1}}, co);
  exe.run();

  Learned r;
  for (int64_t k = 0; k < o.rollouts; ++k) {
    double sum = 0;
    for (int64_t u = 0; u < o.updates_per_rollout; ++u)
      sum += exe.get(kept_loss, {k * o.updates_per_rollout + u}).at(0);
    r.losses.push_back(sum / static_cast<double>(o.updates_per_rollout));
    r.logp_gap = std::max(r.logp_gap, exe.get(kept_gap, {k * o.updates_per_rollout}).at(0));
  }
  return r;
}

// The greedy episode and o.eval_episodes sampled ones on `roll`'s only graph with `roll->net`:
// the cheapest graph that any episode reached, in training or after it.
AgentResult evaluate_agent(Rollouts& roll, const Graph& g, CostModel& cost, const PpoOptions& o) {
  AgentResult r;
  r.initial_cost = cost.graph_cost(g);
  for (int64_t k = 0; k <= o.eval_episodes; ++k) roll.play(*roll.net, k == 0, 0);
  r.best = roll.best[0].final_graph;
  r.best_cost = roll.best[0].final_cost;
  r.steps = roll.best[0].taken;
  r.curve = roll.curve;
  r.env_steps = roll.env_steps;
  r.env_seconds = roll.env_seconds;
  return r;
}

// The layers of the network as (name, inputs, outputs) for hidden width H, R substitutions
// (no-op included) and L locations.
std::vector<std::tuple<std::string, int64_t, int64_t>> agent_layers(int64_t H, int64_t R,
                                                                     int64_t L) {
  return {{"enc1", kNodeFeatures, H}, {"enc2", H, H},       {"rule.0", H, H}, {"rule.1", H, R},
          {"loc.0", H + R, H},        {"loc.1", H, L},      {"value.0", H, H}, {"value.1", H, 1}};
}

}  // namespace

AgentResult train_ppo(const Graph& g, CostModel& cost, const PpoOptions& o) {
  check_options(o);
  auto t0 = Clock::now();
  auto roll = std::make_shared<Rollouts>(std::vector<Graph>{g}, cost, o);
  Learned l = learn(roll, o);
  AgentResult r = evaluate_agent(*roll, g, cost, o);
  r.losses = std::move(l.losses);
  r.logp_gap = l.logp_gap;
  r.seconds = since(t0);
  return r;
}

AgentTraining train_agent(const std::vector<Graph>& graphs, CostModel& cost, const PpoOptions& o) {
  check_options(o);
  auto t0 = Clock::now();
  auto roll = std::make_shared<Rollouts>(graphs, cost, o);
  AgentTraining r;
  r.losses = learn(roll, o).losses;
  r.agent.weights = roll->net->weights();
  r.curve = roll->curve;
  r.seconds = since(t0);
  return r;
}

AgentResult play_agent(const Graph& g, CostModel& cost, const RewriteAgent& agent,
                       const PpoOptions& options) {
  auto t0 = Clock::now();
  PpoOptions o = options;
  o.max_locations = agent.max_locations();
  check_options(o);
  Rollouts roll({g}, cost, o);
  roll.net = std::make_shared<PolicyNet>(agent.weights, roll.rules(), o.max_locations);
  AgentResult r = evaluate_agent(roll, g, cost, o);
  r.seconds = since(t0);
  return r;
}

void RewriteAgent::save(const std::string& path) const {
  nn::save(path, nn::NamedTensors(weights.begin(), weights.end()));
}

RewriteAgent RewriteAgent::load(const std::string& path) {
  RewriteAgent a;
  a.weights = nn::load(path);
  auto shape = [&](const std::string& name) -> std::vector<int64_t> {
    auto it = a.weights.find(name);
    if (it == a.weights.end())
      throw UserError(cat("rewrite agent ", path, ": no tensor '", name,
                          "' (not a file saved by `tempo rewrite train`)"));
    if (it->second.dtype != ir::DType::Float32)
      throw UserError(cat("rewrite agent ", path, ": '", name, "' is not float32"));
    return it->second.shape;
  };
  // The width and the locations are the file's; the rest must be this build's.
  const std::vector<int64_t> enc1 = shape("enc1.weight"), loc = shape("loc.1.weight");
  const int64_t H = enc1.empty() ? 0 : enc1[0], R = RewriteEnv::num_rules() + 1,
                L = loc.empty() ? 0 : loc[0];
  for (const auto& [layer, in, out] : agent_layers(H, R, L)) {
    const std::vector<int64_t> w = shape(layer + ".weight"), b = shape(layer + ".bias");
    if (H < 1 || L < 1 || w != std::vector<int64_t>{out, in} || b != std::vector<int64_t>{out})
      throw UserError(cat("rewrite agent ", path, ": layer '", layer, "' has the shapes ",
                          shape_str(w), " and ", shape_str(b), " where this build's agent needs ",
                          shape_str({out, in}), " and ", shape_str({out}), " (", R - 1,
                          " substitutions, ", kNodeFeatures,
                          " node features): saved by another version of Tempo?"));
  }
  return a;
}

}  // namespace tempo::rewrite
