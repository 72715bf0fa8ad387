// The world-model agent: random episodes in the real environment, the MDN-RNN's learner, the
// dream, the controller's learner (both Tempo programs fed by UDFs), and the real evaluation.
#include "rewrite/world_model.h"
#include "driver/compile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "api/tempo.h"
#include "nn/module.h"
#include "optim/optim.h"
#include "rewrite/policy_math.h"
#include "util/error.h"

namespace tempo::rewrite {

namespace {

using Clock = std::chrono::steady_clock;
using ir::HostTensor;
using Weights = std::map<std::string, HostTensor>;
using detail::masked_log_softmax;
using detail::episode_advantages;
using detail::sample;

// The shared dense layer over a vector.
void linear(const HostTensor& w, const HostTensor& b, const std::vector<float>& x,
            std::vector<float>& y) {
  detail::linear(w, b, x.data(), y);
}

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int64_t num_actions() { return RewriteEnv::num_rules() + 1; }
int64_t latent_size() { return kNumOps + 4 + 1 + num_actions(); }
int64_t mask_offset() { return kNumOps + 4 + 1; }

// z: op-kind and activation counts (log) of the ops that run, the cost relative to the
// original, and the legal substitutions (no-op included).
std::vector<float> latent(const RewriteEnv& env, const Observation& o) {
  std::vector<float> z(latent_size(), 0.f);
  const Graph& g = env.graph();
  std::vector<bool> folded = g.constant_nodes();
  std::vector<int> kinds(kNumOps + 4, 0);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (folded[n] || g.nodes[n].op == Op::Input) continue;
    ++kinds[static_cast<int>(g.nodes[n].op)];
    ++kinds[kNumOps + static_cast<int>(g.nodes[n].attrs.act)];
  }
  for (size_t k = 0; k < kinds.size(); ++k) z[k] = static_cast<float>(std::log1p(kinds[k]) / 4);
  z[kNumOps + 4] = static_cast<float>(env.cost() / env.initial_cost());
  for (int64_t a = 0; a < num_actions(); ++a) z[mask_offset() + a] = o.rule_mask[a] ? 1.f : 0.f;
  return z;
}

std::vector<float> mlp2(const Weights& w, const std::string& name, const std::vector<float>& x) {
  std::vector<float> h, y;
  linear(w.at(name + ".0.weight"), w.at(name + ".0.bias"), x, h);
  for (float& v : h) v = std::tanh(v);
  linear(w.at(name + ".1.weight"), w.at(name + ".1.bias"), h, y);
  return y;
}

// The MDN-RNN on the CPU.
struct MdnRnn {
  Weights w;
  int64_t hidden = 0, mixtures = 0;
  double reward_scale = 1;  // the learned reward times this: percent of the original runtime
  std::vector<float> step(const std::vector<float>& z, int a, const std::vector<float>& h) const {
    std::vector<float> x = z, y;
    for (int64_t k = 0; k < num_actions(); ++k) x.push_back(k == a ? 1.f : 0.f);
    x.insert(x.end(), h.begin(), h.end());
    linear(w.at("rnn.weight"), w.at("rnn.bias"), x, y);
    for (float& v : y) v = std::tanh(v);
    return y;
  }
  // Samples z' from the mixture at temperature tau; the reward and whether the episode ends.
  void predict(const std::vector<float>& h, double tau, std::mt19937_64& rng,
               std::vector<float>& z, double& reward, bool& done) const {
    std::vector<float> pi, mu, ls, r, d;
    linear(w.at("pi.weight"), w.at("pi.bias"), h, pi);
    linear(w.at("mu.weight"), w.at("mu.bias"), h, mu);
    linear(w.at("logsig.weight"), w.at("logsig.bias"), h, ls);
    linear(w.at("reward.weight"), w.at("reward.bias"), h, r);
    linear(w.at("done.weight"), w.at("done.bias"), h, d);
    std::vector<double> p(mixtures);
    double mx = *std::max_element(pi.begin(), pi.end()), sum = 0;
    for (int64_t k = 0; k < mixtures; ++k) sum += p[k] = std::exp((pi[k] - mx) / tau);
    std::uniform_real_distribution<double> u(0, 1);
    double pick = u(rng) * sum, acc = 0;
    int64_t k = 0;
    for (; k < mixtures - 1; ++k)
      if ((acc += p[k]) >= pick) break;
    std::normal_distribution<double> n(0, 1);
    const int64_t Z = latent_size();
    z.assign(Z, 0.f);
    for (int64_t i = 0; i < Z; ++i) {
      double s = std::exp(std::clamp(double(ls[k * Z + i]), -5.0, 2.0)) * std::sqrt(tau);
      z[i] = static_cast<float>(mu[k * Z + i] + s * n(rng));
    }
    reward = r[0] * reward_scale;
    done = d[0] > 0;  // sigmoid > 0.5
  }
};

// A UDF's parameters by name.
Weights by_name(const std::vector<std::string>& names, const std::vector<HostTensor>& params) {
  Weights w;
  for (size_t k = 0; k < names.size(); ++k) w[names[k]] = params[k];
  return w;
}

// Zero float tensors of the (static, 2-d) `types`: a UDF's outputs, filled in by the caller.
std::vector<HostTensor> zeros(const std::vector<ir::TensorType>& types) {
  std::vector<HostTensor> out;
  for (const auto& t : types)
    out.emplace_back(ir::DType::Float32,
                     std::vector<int64_t>{t.shape.dims[0].value(), t.shape.dims[1].value()});
  return out;
}

struct RealStep {
  std::vector<float> z, next_z;
  int action = 0;
  float reward = 0, done = 0;
};

// ---- the world model's learner: minibatches of recorded sequences ----

class SequenceBatches {
 public:
  SequenceBatches(std::vector<std::vector<RealStep>> episodes, const WorldModelOptions& o)
      : eps_(std::move(episodes)), o_(o), rng_(o.seed + 1) {}
  std::vector<std::string> names;
  int64_t last_step = 0;
  Weights trained;

  std::vector<ir::TensorType> types() const {
    const int64_t B = o_.batch, Z = latent_size(), A = num_actions();
    std::vector<ir::TensorType> t;
    auto add = [&](int64_t d) {
      t.push_back({ir::DType::Float32, tempo::Shape(std::vector<Expr>{Expr(B), Expr(d)})});
    };
    add(o_.hidden);  // h0
    for (int64_t s = 0; s < o_.seq_len; ++s) {
      add(Z);  // z_t
      add(A);  // a_t
      add(Z);  // z_{t+1}
      add(1);  // reward
      add(1);  // done
      add(1);  // valid
    }
    return t;
  }

  std::vector<HostTensor> operator()(const std::vector<HostTensor>& params, int64_t step) {
    if (step == last_step) trained = by_name(names, params);
    std::vector<HostTensor> out = zeros(types());
    const int64_t Z = latent_size(), A = num_actions();
    std::uniform_int_distribution<size_t> pick_ep(0, eps_.size() - 1);
    for (int64_t b = 0; b < o_.batch; ++b) {
      const auto& ep = eps_[pick_ep(rng_)];
      std::uniform_int_distribution<size_t> pick_start(0, ep.size() - 1);
      size_t start = pick_start(rng_);
      for (int64_t s = 0; s < o_.seq_len && start + s < ep.size(); ++s) {
        const RealStep& r = ep[start + s];
        HostTensor* t = &out[1 + 6 * s];
        std::copy(r.z.begin(), r.z.end(), t[0].ptr<float>() + b * Z);
        t[1].ptr<float>()[b * A + r.action] = 1;
        std::copy(r.next_z.begin(), r.next_z.end(), t[2].ptr<float>() + b * Z);
        t[3].ptr<float>()[b] = r.reward;
        t[4].ptr<float>()[b] = r.done;
        t[5].ptr<float>()[b] = 1;
      }
    }
    return out;
  }

 private:
  std::vector<std::vector<RealStep>> eps_;
  WorldModelOptions o_;
  std::mt19937_64 rng_;
};

// ---- the controller's learner: episodes imagined by the world model ----

struct DreamStep {
  std::vector<float> obs;  // [z, h]
  std::vector<uint8_t> mask;
  int action = 0;
  double logp = 0, value = 0, reward = 0, adv = 0, ret = 0;
  bool done = false;
};

class Dream {
 public:
  Dream(MdnRnn wm, std::vector<float> z0, const WorldModelOptions& o)
      : wm_(std::move(wm)), z0_(std::move(z0)), o_(o), rng_(o.seed + 2), t0_(Clock::now()) {}
  std::vector<std::string> names;
  int64_t last_step = 0, steps = 0;
  double seconds = 0;
  Weights trained;
  std::vector<CurvePoint> curve;

  int64_t obs_size() const { return latent_size() + o_.hidden; }
  std::vector<ir::TensorType> types() const {
    const int64_t B = o_.batch, A = num_actions();
    std::vector<ir::TensorType> t;
    for (int64_t d : {obs_size(), A, A, int64_t{1}, int64_t{1}, int64_t{1}})
      t.push_back({ir::DType::Float32, tempo::Shape(std::vector<Expr>{Expr(B), Expr(d)})});
    return t;
  }

  std::vector<HostTensor> operator()(const std::vector<HostTensor>& params, int64_t step) {
    Weights w = by_name(names, params);
    if (step == last_step) trained = w;
    if (step % o_.updates_per_rollout == 0 && step < last_step) {
      buffer_.clear();
      for (int64_t e = 0; e < o_.episodes_per_rollout; ++e) imagine(w);
      double mean = 0, var = 0;
      for (const auto& s : buffer_) mean += s.adv;
      mean /= static_cast<double>(buffer_.size());
      for (const auto& s : buffer_) var += (s.adv - mean) * (s.adv - mean);
      double sd = std::sqrt(var / static_cast<double>(buffer_.size())) + 1e-8;
      for (auto& s : buffer_) s.adv = (s.adv - mean) / sd;
    }
    std::vector<HostTensor> out = zeros(types());
    const int64_t A = num_actions(), D = obs_size();
    std::uniform_int_distribution<size_t> pick(0, buffer_.size() - 1);
    for (int64_t b = 0; b < o_.batch; ++b) {
      const DreamStep& s = buffer_[pick(rng_)];
      std::copy(s.obs.begin(), s.obs.end(), out[0].ptr<float>() + b * D);
      for (int64_t a = 0; a < A; ++a) out[1].ptr<float>()[b * A + a] = s.mask[a] ? 0.f : -1e9f;
      out[2].ptr<float>()[b * A + s.action] = 1;
      out[3].ptr<float>()[b] = static_cast<float>(s.logp);
      out[4].ptr<float>()[b] = static_cast<float>(s.adv);
      out[5].ptr<float>()[b] = static_cast<float>(s.ret);
    }
    return out;
  }

 private:
  void imagine(const Weights& w) {
    std::vector<float> z = z0_, h(o_.hidden, 0.f);
    std::vector<DreamStep> ep;
    double total = 0;
    for (int64_t t = 0; t < o_.max_steps; ++t) {
      DreamStep s;
      s.obs = z;
      s.obs.insert(s.obs.end(), h.begin(), h.end());
      s.mask.assign(num_actions(), 0);
      for (int64_t a = 0; a < num_actions(); ++a) s.mask[a] = z[mask_offset() + a] > 0.5f;
      s.mask[num_actions() - 1] = 1;  // the no-op is always legal
      std::vector<double> lp = masked_log_softmax(mlp2(w, "policy", s.obs), s.mask.data());
      s.action = sample(lp, rng_, false);
      s.logp = lp[s.action];
      s.value = mlp2(w, "value", s.obs)[0];
      if (s.action == num_actions() - 1) {
        s.done = true;
        ep.push_back(std::move(s));
        break;
      }
      auto t0 = Clock::now();
      h = wm_.step(z, s.action, h);
      bool done = false;
      wm_.predict(h, o_.tau, rng_, z, s.reward, done);
      seconds += since(t0);
      ++steps;
      s.done = done || t + 1 == o_.max_steps;
      total += s.reward;
      ep.push_back(std::move(s));
      if (ep.back().done) break;
    }
    curve.push_back({since(t0_), static_cast<int64_t>(curve.size()), total});
    episode_advantages(ep, o_.gamma, o_.lambda);
    for (auto& s : ep) buffer_.push_back(std::move(s));
  }

  MdnRnn wm_;
  std::vector<float> z0_;
  WorldModelOptions o_;
  std::mt19937_64 rng_;
  Clock::time_point t0_;
  std::vector<DreamStep> buffer_;
};

CompileOptions learner_options(uint64_t seed) {
  CompileOptions co;
  co.whole_component = false;
  co.proximity = false;
  co.seed = seed;
  return co;
}

// Names the parameters of `modules` "prefix.name" in a stable order.
void collect(const std::vector<std::pair<const char*, const nn::Module*>>& modules,
             std::vector<nn::Parameter>& params, std::vector<std::string>& names) {
  for (const auto& [prefix, m] : modules)
    for (const auto& [name, p] : m->named_parameters()) {
      names.push_back(cat(prefix, ".", name));
      params.push_back(p);
    }
}

// Random episodes in the real environment (the no-op rarely, to reach deeper graphs); `z0`:
// the initial latent.
std::vector<std::vector<RealStep>> random_episodes(RewriteEnv& env, const WorldModelOptions& o,
                                                   std::mt19937_64& rng, WorldModelResult& res,
                                                   std::vector<float>& z0) {
  const int64_t A = num_actions();
  std::vector<std::vector<RealStep>> episodes;
  for (int64_t e = 0; e < o.random_episodes; ++e) {
    auto t = Clock::now();
    Observation obs = env.reset();
    std::vector<float> z = latent(env, obs);
    z0 = z;
    std::vector<RealStep> ep;
    while (true) {
      std::vector<int> legal;
      for (int a = 0; a + 1 < A; ++a)
        if (obs.rule_mask[a]) legal.push_back(a);
      std::uniform_real_distribution<double> u(0, 1);
      int a = legal.empty() || u(rng) < 0.05
                  ? static_cast<int>(A - 1)
                  : legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)];
      StepResult s = env.step(a, 0);
      ++res.real_steps;
      RealStep r{z, {}, a, static_cast<float>(100 * s.reward / env.initial_cost()),
                 s.done ? 1.f : 0.f};
      obs = std::move(s.observation);
      z = latent(env, obs);
      r.next_z = z;
      ep.push_back(std::move(r));
      if (s.done) break;
    }
    res.real_seconds += since(t);
    episodes.push_back(std::move(ep));
  }
  return episodes;
}

// Rewards are learned in units of their standard deviation over the recorded steps (percent of
// the original runtime can be tens on a small graph); the dream scales them back by the result.
double normalize_rewards(std::vector<std::vector<RealStep>>& episodes) {
  double sum = 0, sq = 0, count = 0;
  for (const auto& ep : episodes)
    for (const RealStep& r : ep) sum += r.reward, sq += r.reward * r.reward, ++count;
  const double reward_scale =
      std::max(1e-3, std::sqrt(std::max(0.0, sq / count - (sum / count) * (sum / count))));
  for (auto& ep : episodes)
    for (RealStep& r : ep) r.reward = static_cast<float>(r.reward / reward_scale);
  return reward_scale;
}

// The MDN-RNN, unrolled over sequences of seq_len steps, learned from `episodes` (rewards in
// units of reward_scale).
MdnRnn train_mdn_rnn(const std::vector<std::vector<RealStep>>& episodes, double reward_scale,
                     const WorldModelOptions& o, WorldModelResult& res) {
  const int64_t A = num_actions(), Z = latent_size(), Hd = o.hidden, K = o.mixtures;
  MdnRnn wm;
  wm.reward_scale = reward_scale;
  wm.hidden = Hd;
  wm.mixtures = K;
  auto batches = std::make_shared<SequenceBatches>(episodes, o);
  Context ctx;
  Dim i = ctx.dim("i", "I");
  nn::Linear rnn(ctx, Z + A + Hd, Hd, i), pi(ctx, Hd, K, i), mu(ctx, Hd, K * Z, i),
      logsig(ctx, Hd, K * Z, i), reward(ctx, Hd, 1, i), done(ctx, Hd, 1, i);
  std::vector<nn::Parameter> params;
  collect({{"rnn", &rnn}, {"pi", &pi}, {"mu", &mu}, {"logsig", &logsig}, {"reward", &reward},
           {"done", &done}},
          params, batches->names);
  auto fn = [batches](const std::vector<HostTensor>& in, const std::vector<int64_t>& p) {
    return (*batches)(in, p[0]);
  };
  const std::vector<RT> b =
      ctx.udf("rewrite_sequences", fn, nn::as_rts(params), batches->types(), {i});
  const int64_t B = o.batch;
  RT h = b[0], total;
  for (int64_t s = 0; s < o.seq_len; ++s) {
    const RT* t = &b[1 + 6 * s];
    h = rnn(tempo::cat(std::vector<RT>{t[0], t[1], h}, 1)).tanh();
    RT m = mu(h).reshape({B, K, Z});
    RT ls = logsig(h).reshape({B, K, Z}).clamp(-5, 2);
    RT x = t[2].reshape({B, 1, Z});
    RT log_n = ((x - m) * (-ls).exp()).square().sum(-1) * -0.5 - ls.sum(-1);
    RT nll = -(pi(h).log_softmax(-1) + log_n).logsumexp(-1, true) * (1.0 / Z);
    RT l = done(h);
    RT bce = l.relu() - l * t[4] + ((-l.abs()).exp() + 1.0).log();
    RT term = (nll + (reward(h) - t[3]).square() + bce) * t[5];
    total = s == 0 ? term : total + term;
  }
  RT loss = total.mean();
  optim::Adam adam(params, o.wm_learning_rate);
  optim::minimize(loss, adam, /*max_grad_norm=*/5.0);
  RT kept = loss.retain();
  batches->last_step = o.wm_steps;
  Executable exe = compile(ctx, {{i.bound, o.wm_steps + 1}}, learner_options(o.seed));
  exe.run();
  const int64_t chunk = std::max<int64_t>(1, o.wm_steps / 10);
  for (int64_t s = 0; s + chunk <= o.wm_steps; s += chunk) {
    double sum = 0;
    for (int64_t k = s; k < s + chunk; ++k) sum += exe.get(kept, {k}).at(0);
    res.wm_losses.push_back(sum / static_cast<double>(chunk));
  }
  wm.w = batches->trained;
  return wm;
}

// The controller, trained by PPO in the dream of `wm` from the initial latent z0.
Weights train_controller(const MdnRnn& wm, const std::vector<float>& z0, const WorldModelOptions& o,
                         WorldModelResult& res) {
  const int64_t A = num_actions();
  auto dream = std::make_shared<Dream>(wm, z0, o);
  Context ctx;
  Dim i = ctx.dim("i", "I");
  const int64_t D = dream->obs_size();
  nn::MLP policy(ctx, {D, 64, A}, i, nn::tanh), value(ctx, {D, 64, 1}, i, nn::tanh);
  std::vector<nn::Parameter> params;
  collect({{"policy", &policy}, {"value", &value}}, params, dream->names);
  auto fn = [dream](const std::vector<HostTensor>& in, const std::vector<int64_t>& p) {
    return (*dream)(in, p[0]);
  };
  const std::vector<RT> b = ctx.udf("rewrite_dream", fn, nn::as_rts(params), dream->types(), {i});
  RT lp = (policy(b[0]) + b[1]).log_softmax(-1);
  RT logp = (b[2] * lp).sum(-1, true);
  RT ratio = (logp - b[3]).exp();
  RT surrogate = (ratio * b[4]).minimum(ratio.clamp(1 - o.clip, 1 + o.clip) * b[4]);
  RT entropy = -(lp.exp() * lp).sum(-1, true);
  RT loss = (-surrogate + (value(b[0]) - b[5]).square() * 0.5 - entropy * o.entropy).mean();
  optim::Adam adam(params, o.learning_rate);
  optim::minimize(loss, adam, /*max_grad_norm=*/1.0);
  const int64_t steps = o.rollouts * o.updates_per_rollout;
  dream->last_step = steps;
  Executable exe = compile(ctx, {{i.bound, steps + 1}}, learner_options(o.seed));
  exe.run();
  res.dream_steps += dream->steps;
  res.dream_seconds += dream->seconds;
  res.dream_curve.insert(res.dream_curve.end(), dream->curve.begin(), dream->curve.end());
  return dream->trained;
}

}  // namespace

WorldModelResult train_world_model(const Graph& g, CostModel& cost, const WorldModelOptions& o) {
  if (o.random_episodes < 1 || o.seq_len < 1 || o.wm_steps < 1 || o.batch < 1 || o.rollouts < 1 ||
      o.episodes_per_rollout < 1 || o.updates_per_rollout < 1 || o.mixtures < 1 || o.tau <= 0 ||
      o.iterations < 1)
    throw UserError("world model options: counts, sizes and tau must be positive");
  auto t0 = Clock::now();
  WorldModelResult res;
  EnvOptions eo;
  eo.max_steps = o.max_steps;
  eo.max_locations = 1;  // a substitution at its first location
  RewriteEnv env(g, cost, eo);
  res.initial_cost = env.initial_cost();
  res.best = g;
  res.best_cost = res.initial_cost;
  std::mt19937_64 rng(o.seed);

  // Random episodes in the real environment, rewards in units of their deviation.
  std::vector<float> z0;
  std::vector<std::vector<RealStep>> episodes = random_episodes(env, o, rng, res, z0);
  const double reward_scale = normalize_rewards(episodes);

  for (int64_t it = 0; it < o.iterations; ++it) {
    const MdnRnn wm = train_mdn_rnn(episodes, reward_scale, o, res);
    const Weights controller = train_controller(wm, z0, o, res);
    // The controller in the real environment (greedy, then sampled), h from the real latents;
    // the result is the cheapest graph these episodes reach (not the random episodes'). Its
    // steps join the world model's data for the next iteration.
    auto t = Clock::now();
    for (int64_t e = 0; e <= o.eval_episodes; ++e) {
      Observation obs = env.reset();
      std::vector<float> z = latent(env, obs), h(o.hidden, 0.f);
      std::vector<RealStep> ep;
      while (!env.done()) {
        std::vector<float> in = z;
        in.insert(in.end(), h.begin(), h.end());
        std::vector<uint8_t> mask(obs.rule_mask.begin(), obs.rule_mask.end());
        int a =
            sample(masked_log_softmax(mlp2(controller, "policy", in), mask.data()), rng, e == 0);
        StepResult s = env.step(a, 0);
        ++res.real_steps;
        if (env.cost() < res.best_cost) {
          res.best_cost = env.cost();
          res.best = env.graph();
          res.steps = env.taken();
        }
        h = wm.step(z, a, h);
        obs = std::move(s.observation);
        const std::vector<float> next = latent(env, obs);
        const double percent = 100 * s.reward / env.initial_cost();
        ep.push_back({z, next, a, static_cast<float>(percent / reward_scale), s.done ? 1.f : 0.f});
        z = next;
      }
      episodes.push_back(std::move(ep));
    }
    res.real_seconds += since(t);
  }
  res.seconds = since(t0);
  return res;
}

}  // namespace tempo::rewrite
