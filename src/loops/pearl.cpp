// Pearl: the network's CPU inference, episodes in the loop-nest environment, pre-training and the
// PPO learner as Tempo programs.
#include "loops/pearl.h"
#include "driver/compile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>

#include "nn/distributions.h"
#include "nn/safetensors.h"
#include "optim/optim.h"
#include "util/error.h"

namespace tempo::loops {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

constexpr double kMasked = 1e9;  // subtracted from masked attention scores and action logits

float leaky(float v) { return v > 0 ? v : 0.2f * v; }

void check_sizes(const PearlOptions& o) {
  if (o.hidden < 1 || o.mlp < 1 || o.heads < 1 || o.hidden % o.heads != 0)
    throw UserError(cat("Pearl options: hidden (", o.hidden, ") must be a positive multiple of ",
                        "heads (", o.heads, "), mlp (", o.mlp, ") positive"));
}

}  // namespace

// ---- the network's parameters -----------------------------------------------------------------

std::vector<std::pair<std::string, std::vector<int64_t>>> pearl_parameter_shapes(
    const PearlOptions& o) {
  const int64_t H = o.hidden, M = o.mlp, A = num_actions();
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  for (int l = 0; l < 2; ++l) {
    const int64_t in = l == 0 ? kFeatures : H;
    for (const char* side : {"wl", "wr"}) {
      out.push_back({cat("gat", l, ".", side, ".weight"), {H, in}});
      out.push_back({cat("gat", l, ".", side, ".bias"), {H}});
    }
    out.push_back({cat("gat", l, ".att.weight"), {1, H}});
  }
  auto mlp = [&](const std::string& name, std::vector<int64_t> sizes) {
    for (size_t k = 0; k + 1 < sizes.size(); ++k) {
      out.push_back({cat(name, ".", k, ".weight"), {sizes[k + 1], sizes[k]}});
      out.push_back({cat(name, ".", k, ".bias"), {sizes[k + 1]}});
    }
  };
  mlp("trunk", {4 * H, M, M});
  mlp("pol", {M, M, M, A});
  mlp("val", {M, M, M, 1});
  return out;
}

PearlModel make_pearl_model(Context& ctx, const nn::Steps& steps, const PearlOptions& o) {
  check_sizes(o);
  const int64_t H = o.hidden, M = o.mlp;
  PearlModel m;
  m.heads = o.heads;
  for (int l = 0; l < 2; ++l) {
    const int64_t in = l == 0 ? kFeatures : H;
    m.wl[l] = std::make_shared<nn::Linear>(ctx, in, H, steps);
    m.wr[l] = std::make_shared<nn::Linear>(ctx, in, H, steps);
    m.att[l] = std::make_shared<nn::Linear>(ctx, H, 1, steps, /*bias=*/false);
  }
  m.trunk = std::make_shared<nn::MLP>(ctx, std::vector<int64_t>{4 * H, M, M}, steps, nn::relu,
                                      nn::relu);
  m.pol = std::make_shared<nn::MLP>(ctx, std::vector<int64_t>{M, M, M, num_actions()}, steps,
                                    nn::relu, nn::identity);
  m.val = std::make_shared<nn::MLP>(ctx, std::vector<int64_t>{M, M, M, 1}, steps, nn::relu,
                                    nn::identity);
  return m;
}

std::vector<std::pair<std::string, nn::Parameter>> PearlModel::named_parameters() const {
  std::vector<std::pair<std::string, nn::Parameter>> out;
  auto add = [&](const std::string& prefix, const nn::Module& mod) {
    for (const auto& [name, p] : mod.named_parameters()) out.emplace_back(prefix + name, p);
  };
  for (int l = 0; l < 2; ++l) {
    add(cat("gat", l, ".wl."), *wl[l]);
    add(cat("gat", l, ".wr."), *wr[l]);
    add(cat("gat", l, ".att."), *att[l]);
  }
  add("trunk.", *trunk);
  add("pol.", *pol);
  add("val.", *val);
  return out;
}

PearlOutputs pearl_forward(const PearlModel& m, const RT& x, const RT& adjacency, const RT& mask) {
  // GATv2 (Brody et al.) with K heads, each on its own D = H / K channels of W_l h and W_r h:
  // e_ijk = a_k . LeakyReLU(W_r h_i + W_l h_j)_k over the neighbours j of i, softmax over j,
  // h_i' = the heads' sum_j alpha_ijk (W_l h_j)_k side by side.
  std::vector<RT> pooled;
  RT h = x;
  const RT count = mask.sum(1);  // (B, 1)
  const Expr B = x.shape()[0];
  const int64_t N = kMaxNodes, H = m.wl[0]->out_features(), K = m.heads, D = H / K;
  for (int l = 0; l < 2; ++l) {
    const RT xl = (*m.wl[l])(h), xr = (*m.wr[l])(h);  // (B, N, H)
    RT s = xr.unsqueeze(2) + xl.unsqueeze(1);         // (B, N, N, H): [b, i, j] = xr_i + xl_j
    s = s.maximum(s * 0.2);
    const RT& a = m.att[l]->weight();  // (1, H): the heads' a_k side by side
    RT e = (s * a).reshape({B, N, N, K, D}).sum(4).permute({0, 3, 1, 2});  // (B, K, N, N)
    e = e + ((adjacency - 1.0) * kMasked).unsqueeze(1);
    const RT v = xl.reshape({B, N, K, D}).permute({0, 2, 1, 3});  // (B, K, N, D)
    h = e.softmax(-1).matmul(v).permute({0, 2, 1, 3}).reshape({B, N, H}).relu() * mask;
    // Mean and max pooling (Fig. 2); padded nodes are 0 and the others >= 0, so the max over
    // all nodes is the max over the real ones.
    pooled.push_back(h.sum(1) / count);
    pooled.push_back(h.max(1));
  }
  const RT g = (*m.trunk)(tempo::cat(pooled, 1));
  return {(*m.pol)(g), (*m.val)(g)};
}

// ---- the network on the CPU ----------------------------------------------------------------------

PearlNetwork::Dense PearlNetwork::get(const std::string& name, int64_t in, int64_t out,
                                      bool bias) const {
  auto fetch = [&](const std::string& n, std::vector<int64_t> shape) {
    auto it = weights_.find(n);
    if (it == weights_.end()) throw UserError(cat("Pearl network: no tensor ", n));
    if (it->second.shape != shape || it->second.dtype != DType::Float32)
      throw UserError(cat("Pearl network: ", n, " has the wrong shape or dtype"));
    const float* p = it->second.ptr<float>();
    return std::vector<float>(p, p + it->second.numel());
  };
  Dense d;
  d.in = in;
  d.out = out;
  d.w = fetch(name + ".weight", {out, in});
  if (bias) d.b = fetch(name + ".bias", {out});
  return d;
}

PearlNetwork::PearlNetwork(const std::map<std::string, HostTensor>& weights, const PearlOptions& o)
    : weights_(weights), hidden_(o.hidden), mlp_(o.mlp), heads_(o.heads) {
  check_sizes(o);
  const int64_t H = o.hidden, M = o.mlp;
  for (int l = 0; l < 2; ++l) {
    const int64_t in = l == 0 ? kFeatures : H;
    wl_[l] = get(cat("gat", l, ".wl"), in, H, true);
    wr_[l] = get(cat("gat", l, ".wr"), in, H, true);
    att_[l] = get(cat("gat", l, ".att"), H, 1, false);
  }
  trunk_[0] = get("trunk.0", 4 * H, M, true);
  trunk_[1] = get("trunk.1", M, M, true);
  for (int k = 0; k < 3; ++k) {
    pol_[k] = get(cat("pol.", k), M, k == 2 ? num_actions() : M, true);
    val_[k] = get(cat("val.", k), M, k == 2 ? 1 : M, true);
  }
}

void PearlNetwork::save(const std::string& path) const {
  nn::NamedTensors t(weights_.begin(), weights_.end());
  HostTensor config(DType::Float64, {5});
  const double v[5] = {2.0, static_cast<double>(hidden_), static_cast<double>(mlp_),
                       static_cast<double>(kFeatures), static_cast<double>(heads_)};
  for (int k = 0; k < 5; ++k) config.set(k, v[k]);
  t.emplace_back("config", config);
  nn::save(path, t);
}

PearlNetwork PearlNetwork::load(const std::string& path, PearlOptions& o) {
  std::map<std::string, HostTensor> t;
  try {
    t = nn::load(path);
  } catch (const UserError& e) {
    throw UserError(cat(path, ": not a Pearl agent saved by tempo loops train (", e.what(), ")"));
  }
  // config: version, hidden, mlp, features and (from version 2) heads.
  auto it = t.find("config");
  const int64_t version = it == t.end() ? 0 : static_cast<int64_t>(it->second.at(0));
  if (version < 1 || version > 2 || it->second.numel() != 3 + version ||
      it->second.at(3) != kFeatures)
    throw UserError(cat(path, ": not a Pearl agent saved by tempo loops train"));
  o.hidden = static_cast<int64_t>(it->second.at(1));
  o.mlp = static_cast<int64_t>(it->second.at(2));
  o.heads = version >= 2 ? static_cast<int64_t>(it->second.at(4)) : 1;
  t.erase(it);
  return PearlNetwork(t, o);
}

void PearlNetwork::forward(const LoopGraph& g, std::vector<float>& logits, float& value) const {
  const int64_t H = hidden_, M = mlp_, D = hidden_ / heads_;
  const int n = g.nodes;
  std::vector<float> h(g.x.begin(), g.x.begin() + static_cast<int64_t>(n) * kFeatures);
  int64_t width = kFeatures;
  std::vector<float> pooled;
  for (int l = 0; l < 2; ++l) {
    std::vector<float> xl(static_cast<size_t>(n * H)), xr(xl.size()), out(xl.size(), 0.f);
    for (int v = 0; v < n; ++v) {
      wl_[l].apply(h.data() + v * width, xl.data() + v * H);
      wr_[l].apply(h.data() + v * width, xr.data() + v * H);
    }
    const float* att = att_[l].w.data();
    std::vector<float> e(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      for (int64_t c0 = 0; c0 < H; c0 += D) {  // head by head
        float mx = -1e30f;
        for (int j = 0; j < n; ++j) {
          if (g.adjacency[i * kMaxNodes + j] < 0.5f) continue;
          float s = 0;
          for (int64_t c = c0; c < c0 + D; ++c) s += att[c] * leaky(xr[i * H + c] + xl[j * H + c]);
          e[j] = s;
          mx = std::max(mx, s);
        }
        double z = 0;
        for (int j = 0; j < n; ++j)
          if (g.adjacency[i * kMaxNodes + j] >= 0.5f) z += std::exp(e[j] - mx);
        for (int j = 0; j < n; ++j) {
          if (g.adjacency[i * kMaxNodes + j] < 0.5f) continue;
          const float a = static_cast<float>(std::exp(e[j] - mx) / z);
          for (int64_t c = c0; c < c0 + D; ++c) out[i * H + c] += a * xl[j * H + c];
        }
      }
      for (int64_t c = 0; c < H; ++c) out[i * H + c] = std::max(0.f, out[i * H + c]);
    }
    std::vector<float> mean(static_cast<size_t>(H), 0.f), mx(static_cast<size_t>(H), 0.f);
    for (int v = 0; v < n; ++v)
      for (int64_t c = 0; c < H; ++c) {
        mean[c] += out[v * H + c];
        mx[c] = std::max(mx[c], out[v * H + c]);
      }
    for (float& m : mean) m /= static_cast<float>(std::max(n, 1));
    pooled.insert(pooled.end(), mean.begin(), mean.end());
    pooled.insert(pooled.end(), mx.begin(), mx.end());
    h = std::move(out);
    width = H;
  }
  auto relu = [](std::vector<float>& v) {
    for (float& x : v) x = std::max(0.f, x);
  };
  std::vector<float> a(static_cast<size_t>(M)), b(static_cast<size_t>(M));
  trunk_[0].apply(pooled.data(), a.data());
  relu(a);
  trunk_[1].apply(a.data(), b.data());
  relu(b);
  std::vector<float> p1(static_cast<size_t>(M)), p2(static_cast<size_t>(M));
  pol_[0].apply(b.data(), p1.data());
  relu(p1);
  pol_[1].apply(p1.data(), p2.data());
  relu(p2);
  logits.assign(static_cast<size_t>(num_actions()), 0.f);
  pol_[2].apply(p2.data(), logits.data());
  val_[0].apply(b.data(), p1.data());
  relu(p1);
  val_[1].apply(p1.data(), p2.data());
  relu(p2);
  val_[2].apply(p2.data(), &value);
}

// ---- episodes ----------------------------------------------------------------------------------

std::vector<bool> pearl_action_mask(LoopEnv& env, int transformations_on_branch,
                                    int max_per_branch) {
  if (transformations_on_branch < max_per_branch) return env.legal_mask();
  std::vector<bool> mask(static_cast<size_t>(num_actions()), false);
  mask.back() = !env.done();  // next
  return mask;
}

namespace {

struct StepRecord {
  LoopGraph graph;
  std::vector<bool> mask;
  int action = 0;
  float logp = 0, value = 0;
  float reward = 0;  // log4 of the speedup this step made (per-step rewards)
};

struct Episode {
  std::vector<StepRecord> steps;
  std::vector<std::pair<int, Action>> actions;  // (branch, transformation)
  Measurement m;
  double speedup = 1, measure_seconds = 0;
  int64_t illegal = 0;
  // Per-step timing: the fastest schedule the episode passed through (the original included)
  // and how many of `actions` lead to it.
  Schedule best;
  Measurement best_m;
  size_t best_actions = 0;
};

double log4(double speedup) { return std::log(std::max(speedup, 1e-6)) / std::log(4.0); }

// Plays one episode from the original schedule: actions sampled from the masked policy (rng) or
// the most probable legal one (rng null). The final schedule is timed with `ev` (runs killed
// after limit_s; 0: ev's limit); with `per_step`, so is every schedule after a transformation
// (memoized), for the rewards and the best one.
Episode play(LoopEnv& env, GraphEncoder& enc, const PearlNetwork& net, const PearlOptions& o,
             Evaluator& ev, double base_ms, double limit_s, std::mt19937_64* rng,
             bool per_step) {
  Episode ep;
  env.reset();
  ep.best = env.schedule();
  ep.best_m.ms = base_ms;
  double last_ms = base_ms;
  int on_branch = 0;
  std::vector<float> logits;
  while (!env.done()) {
    StepRecord s;
    s.graph = enc.encode(env.schedule(), env.branch());
    s.mask = pearl_action_mask(env, on_branch, o.max_actions_per_branch);
    net.forward(s.graph, logits, s.value);
    float mx = -1e30f;
    for (int a = 0; a < num_actions(); ++a)
      if (s.mask[a]) mx = std::max(mx, logits[a]);
    double z = 0;
    for (int a = 0; a < num_actions(); ++a)
      if (s.mask[a]) z += std::exp(logits[a] - mx);
    int pick = num_actions() - 1;
    if (rng) {
      double u = std::uniform_real_distribution<double>(0, z)(*rng);
      for (int a = 0; a < num_actions(); ++a) {
        if (!s.mask[a]) continue;
        pick = a;
        u -= std::exp(logits[a] - mx);
        if (u <= 0) break;
      }
    } else {
      float best = -1e30f;
      for (int a = 0; a < num_actions(); ++a)
        if (s.mask[a] && logits[a] > best) best = logits[a], pick = a;
    }
    s.action = pick;
    s.logp = static_cast<float>(logits[pick] - mx - std::log(z));
    const int branch = env.branch();
    if (!env.step(pick)) {
      ++ep.illegal;  // the mask allowed an illegal action: never expected
      pick = num_actions() - 1;
      s.action = pick;
      env.step(pick);
    }
    const Action& a = action_space()[pick];
    if (a.kind == Kind::Next) {
      on_branch = 0;
    } else {
      ++on_branch;
      ep.actions.emplace_back(branch, a);
      if (per_step) {
        const Clock::time_point t0 = Clock::now();
        const Measurement m = ev.measure(env.program(), env.schedule(), limit_s);
        ep.measure_seconds += since(t0);
        s.reward = static_cast<float>(log4(last_ms / m.ms));
        last_ms = m.ms;
        if (m.ms < ep.best_m.ms) {
          ep.best = env.schedule();
          ep.best_m = m;
          ep.best_actions = ep.actions.size();
        }
      }
    }
    ep.steps.push_back(std::move(s));
  }
  const Clock::time_point t0 = Clock::now();
  ep.m = ev.measure(env.program(), env.schedule(), limit_s);  // memoized where timed per step
  ep.measure_seconds += since(t0);
  ep.speedup = base_ms / ep.m.ms;
  return ep;
}

std::string describe(const std::vector<std::pair<int, Action>>& actions) {
  if (actions.empty()) return "(none)";
  std::string out;
  for (const auto& [b, a] : actions) out += cat(out.empty() ? "" : " ", "S", b, ":", a.to_string());
  return out;
}

// A training program with its environment, graph encoder and unoptimized time.
struct Slot {
  std::unique_ptr<LoopEnv> env;
  std::unique_ptr<GraphEncoder> enc;
  double base_ms = 0, base_checksum = 0;
  double limit_s = 0;  // runs killed after this (PearlOptions::max_slowdown)
};

std::map<std::string, HostTensor> by_name(const std::vector<HostTensor>& params,
                                          const std::vector<std::string>& names) {
  std::map<std::string, HostTensor> w;
  for (size_t k = 0; k < names.size(); ++k) w[names[k]] = params[k];
  return w;
}

void copy_graph(const LoopGraph& g, int64_t b, std::vector<HostTensor>& out) {
  std::copy(g.x.begin(), g.x.end(), out[0].ptr<float>() + b * kMaxNodes * kFeatures);
  std::copy(g.adjacency.begin(), g.adjacency.end(),
            out[1].ptr<float>() + b * kMaxNodes * kMaxNodes);
  std::copy(g.mask.begin(), g.mask.end(), out[2].ptr<float>() + b * kMaxNodes);
}

std::vector<TensorType> graph_types(int64_t batch) {
  return {{DType::Float32, Shape({batch, kMaxNodes, kFeatures})},
          {DType::Float32, Shape({batch, kMaxNodes, kMaxNodes})},
          {DType::Float32, Shape({batch, kMaxNodes, 1})}};
}

CompileOptions learner_options(uint64_t seed) {
  CompileOptions co;
  co.whole_component = false;  // a few hundred ops: fast scheduling settings
  co.proximity = false;
  co.seed = seed;
  return co;
}

// A learner: Adam on a loss, a Tempo program over a step dimension i whose batch UDF returns
// make_batch(the trained parameters' current weights by name, step), of `types` (x, adjacency
// and node mask first). Trains the parameters `train` selects, starting from `init` where it
// names them; returns `init` updated with the trained weights after the last step.
using MakeBatch = std::function<std::vector<HostTensor>(
    const std::map<std::string, HostTensor>& weights, int64_t step)>;
using LossFn = std::function<RT(Context& ctx, const Dim& i, const PearlOutputs& out,
                                const std::vector<RT>& batch)>;
std::map<std::string, HostTensor> fit(const PearlOptions& o, int64_t steps, double learning_rate,
                                      const std::map<std::string, HostTensor>& init,
                                      const std::function<bool(const std::string&)>& train,
                                      const std::vector<TensorType>& types,
                                      const MakeBatch& make_batch, const LossFn& loss_fn,
                                      std::vector<double>& losses) {
  Context ctx;
  Dim i = ctx.dim("i", "I");
  PearlModel model = make_pearl_model(ctx, i, o);
  std::vector<nn::Parameter> params;
  std::vector<std::string> names;
  for (const auto& [name, p] : model.named_parameters()) {
    auto it = init.find(name);
    if (it != init.end()) p.set_initial(it->second, "Pearl pre-training");
    if (!train(name)) continue;
    names.push_back(name);
    params.push_back(p);
  }
  auto result = std::make_shared<std::map<std::string, HostTensor>>(init);
  // One more step than the training needs: its UDF call sees the weights after the last update.
  auto batch_fn = [&, result, steps](const std::vector<HostTensor>& in,
                                     const std::vector<int64_t>& point) {
    std::map<std::string, HostTensor> weights = by_name(in, names);
    if (point[0] == steps)
      for (const auto& [name, w] : weights) (*result)[name] = w;
    return make_batch(weights, point[0]);
  };
  const std::vector<RT> in = ctx.udf("pearl_batch", batch_fn, nn::as_rts(params), types, {i});
  const RT loss = loss_fn(ctx, i, pearl_forward(model, in[0], in[1], in[2]), in);
  optim::Adam adam(params, learning_rate);
  optim::minimize(loss, adam, /*max_grad_norm=*/1.0);
  const RT kept = loss.retain();
  Executable exe = compile(ctx, {{i.bound, steps + 1}}, learner_options(o.seed));
  exe.run();
  for (int64_t k = 0; k < steps; ++k) losses.push_back(exe.get(kept, {k}).at(0));
  return *result;
}

// Batches of `batch` samples of a data set for `fit`: fill(b, out) writes sample b into the
// tensors of `types` (x, adjacency and node mask first, then the targets).
MakeBatch sampled(const std::vector<TensorType>& types, int64_t batch,
                  std::function<void(int64_t b, std::vector<HostTensor>& out)> fill) {
  return [types, batch, fill](const std::map<std::string, HostTensor>&, int64_t) {
    std::vector<HostTensor> out;
    for (const TensorType& ty : types) out.emplace_back(ty.dtype, ty.shape.static_dims());
    for (int64_t b = 0; b < batch; ++b) fill(b, out);
    return out;
  };
}

// Sample b of a batch: in order for data sets of at most `batch` samples, else drawn by rng.
size_t sample(int64_t b, int64_t batch, size_t n, std::mt19937_64& rng) {
  return static_cast<int64_t>(n) <= batch ? static_cast<size_t>(b)
                                          : std::uniform_int_distribution<size_t>(0, n - 1)(rng);
}

// Pre-training (§5.2): the encoder, trunk and value head regress the standardized log run time
// of the unoptimized programs (each branch's tagging is one sample). Returns their weights.
std::map<std::string, HostTensor> pretrain(std::vector<Slot>& slots, const PearlOptions& o,
                                           PearlTraining& t) {
  const Clock::time_point t0 = Clock::now();
  std::vector<LoopGraph> graphs;
  std::vector<float> target;
  for (Slot& s : slots) {
    const Schedule orig = Schedule::original(s.env->program());
    for (int b = 0; b < static_cast<int>(orig.rows.size()); ++b) {
      graphs.push_back(s.enc->encode(orig, b));
      target.push_back(static_cast<float>(std::log(s.base_ms)));
    }
  }
  const double mean = std::accumulate(target.begin(), target.end(), 0.0) / target.size();
  double var = 0;
  for (float y : target) var += (y - mean) * (y - mean);
  const double sd = std::max(1e-3, std::sqrt(var / target.size()));
  for (float& y : target) y = static_cast<float>((y - mean) / sd);

  const int64_t B = std::min<int64_t>(o.batch, static_cast<int64_t>(graphs.size()));
  std::mt19937_64 rng(o.seed + 17);
  auto fill = [&](int64_t b, std::vector<HostTensor>& out) {
    const size_t k = sample(b, B, graphs.size(), rng);
    copy_graph(graphs[k], b, out);
    out[3].ptr<float>()[b] = target[k];
  };
  auto loss = [](Context&, const Dim&, const PearlOutputs& out, const std::vector<RT>& in) {
    return (out.value.squeeze(1) - in[3]).square().mean();
  };
  // The policy head has no part in this task.
  auto train = [](const std::string& name) { return name.rfind("pol.", 0) != 0; };
  std::vector<TensorType> types = graph_types(B);
  types.push_back({DType::Float32, Shape({B})});
  std::map<std::string, HostTensor> w =
      fit(o, o.pretrain_steps, o.pretrain_learning_rate, {}, train, types,
          sampled(types, B, fill), loss, t.pretrain_loss);
  t.pretrain_seconds = since(t0);
  return w;
}

// Demonstrations (an extension of §5.2 to the data the paper names as its next step: program,
// schedule, speedup): one episode per training program by a measured one-step look-ahead. At
// each state every legal transformation (square tiles only) is timed, and the fastest is taken
// where it gains more than 5 %, else "next". Each state is a sample: its graph and mask, a
// target distribution over the actions from their measured speedups (a softmax of log4 speedup
// over a temperature; "next" scores a 5 % gain, unmeasured actions 0), and the log4 speedup from
// there to the episode's end. The timings stay in `ev` for PPO.
struct Demo {
  LoopGraph graph;
  std::vector<bool> mask;
  std::vector<float> target;
  float ret = 0;
};

std::vector<Demo> demonstrations(std::vector<Slot>& slots, const PearlOptions& o, Evaluator& ev,
                                 PearlTraining& t) {
  const int next = num_actions() - 1;
  std::vector<Demo> demos;
  for (Slot& s : slots) {
    LoopEnv& env = *s.env;
    env.reset();
    int on_branch = 0;
    double ms = s.base_ms;
    std::vector<double> ms_at;  // per demo of this episode: the time at its state
    const size_t first = demos.size();
    while (!env.done()) {
      Demo d;
      d.graph = s.enc->encode(env.schedule(), env.branch());
      d.mask = pearl_action_mask(env, on_branch, o.max_actions_per_branch);
      std::vector<double> score(static_cast<size_t>(num_actions()), -1e30);
      score[next] = log4(1.05);
      int pick = next;
      double best_ms = ms;
      for (int a = 0; a < next; ++a) {
        const Action& act = action_space()[a];
        if (!d.mask[a] || (act.kind == Kind::Tile && act.size1 != act.size2)) continue;
        std::optional<Schedule> after = env.try_action(act);
        const Clock::time_point t0 = Clock::now();
        const Measurement m = ev.measure(env.program(), *after, s.limit_s);
        t.demo_measure_seconds += since(t0);
        if (m.timed_out) continue;
        score[a] = log4(ms / m.ms);
        if (score[a] > score[pick]) pick = a, best_ms = m.ms;
      }
      const double top = *std::max_element(score.begin(), score.end());
      double z = 0;
      for (double& v : score) z += v = std::exp((v - top) / o.imitation_temperature);
      for (double v : score) d.target.push_back(static_cast<float>(v / z));
      ms_at.push_back(ms);
      env.step(pick);
      if (pick == next) {
        on_branch = 0;
      } else {
        ++on_branch;
        ++t.demonstrated_moves;
        ms = best_ms;
      }
      demos.push_back(std::move(d));
    }
    for (size_t k = first; k < demos.size(); ++k)
      demos[k].ret = static_cast<float>(log4(ms_at[k - first] / ms));
  }
  return demos;
}

// Imitation: the whole network learns the demonstrations' target distributions (cross-entropy
// under the action mask) and their returns (the value head), from the weights `init`.
std::map<std::string, HostTensor> imitate(const std::vector<Demo>& demos, const PearlOptions& o,
                                          const std::map<std::string, HostTensor>& init,
                                          PearlTraining& t) {
  const int64_t B = std::min<int64_t>(o.batch, static_cast<int64_t>(demos.size()));
  const int64_t A = num_actions();
  std::mt19937_64 rng(o.seed + 23);
  auto fill = [&](int64_t b, std::vector<HostTensor>& out) {
    const Demo& d = demos[sample(b, B, demos.size(), rng)];
    copy_graph(d.graph, b, out);
    for (int64_t a = 0; a < A; ++a) {
      out[3].ptr<float>()[b * A + a] = d.mask[a] ? 1.f : 0.f;
      out[4].ptr<float>()[b * A + a] = d.target[a];
    }
    out[5].ptr<float>()[b] = d.ret;
  };
  auto loss = [&](Context&, const Dim&, const PearlOutputs& out, const std::vector<RT>& in) {
    const nn::Categorical dist(out.logits + (in[3] - 1.0) * kMasked);
    return -(in[4] * dist.logits()).sum(1).mean() +
           o.value_coef * (out.value.squeeze(1) - in[5]).square().mean();
  };
  std::vector<TensorType> types = graph_types(B);
  types.push_back({DType::Float32, Shape({B, A})});
  types.push_back({DType::Float32, Shape({B, A})});
  types.push_back({DType::Float32, Shape({B})});
  return fit(o, o.imitation_steps, o.pretrain_learning_rate, init,
             [](const std::string&) { return true; }, types, sampled(types, B, fill), loss,
             t.imitation_loss);
}

// The policy head's last layer at the start of PPO: weights near 0 and a bias that gives every
// kind of transformation, and "next", the same probability. 45 of the 77 actions are tilings: a
// uniform start spends more than half of its exploration on them and one pick in sixteen on
// parallelization, the transformation most often worth taking on two cores.
std::map<std::string, HostTensor> policy_head_start(const PearlOptions& o) {
  const int64_t A = num_actions(), M = o.mlp;
  std::map<Kind, int> per_kind;
  for (const Action& a : action_space()) ++per_kind[a.kind];
  HostTensor w(DType::Float32, {A, M}), b(DType::Float32, {A});
  std::mt19937_64 rng(o.seed + 29);
  std::normal_distribution<float> small(0.f, 0.01f);
  for (int64_t k = 0; k < A * M; ++k) w.ptr<float>()[k] = small(rng);
  for (int64_t a = 0; a < A; ++a)
    b.ptr<float>()[a] = -std::log(static_cast<float>(per_kind[action_space()[a].kind]));
  return {{"pol.2.weight", w}, {"pol.2.bias", b}};
}

// Episodes for the PPO learner, driven by its batch UDF.
class Rollouts {
 public:
  Rollouts(std::vector<Slot>& slots, const PearlOptions& o, Evaluator& ev, PearlTraining& t)
      : slots_(slots), o_(o), ev_(ev), t_(t), rng_(o.seed) {}

  // In this order: x, adjacency, node mask, action mask (B, A), action (B, int64), old log-prob,
  // advantage, return (B).
  std::vector<TensorType> types() const {
    const int64_t B = o_.batch;
    std::vector<TensorType> t = graph_types(B);
    t.push_back({DType::Float32, Shape({B, static_cast<int64_t>(num_actions())})});
    t.push_back({DType::Int64, Shape({B})});
    for (int k = 0; k < 3; ++k) t.push_back({DType::Float32, Shape({B})});
    return t;
  }

  // The batch of PPO step `step`: new episodes with the current weights every `epochs` steps.
  std::vector<HostTensor> operator()(const std::map<std::string, HostTensor>& weights,
                                     int64_t step) {
    if (step % o_.epochs == 0 && step / o_.epochs < o_.iterations) {
      network_ = std::make_shared<PearlNetwork>(weights, o_);
      batch_ = collect_batch();
    }
    return batch_;
  }

 private:
  std::vector<HostTensor> collect_batch() {
    const int64_t B = o_.batch;
    std::vector<HostTensor> out;
    for (const TensorType& ty : types()) out.emplace_back(ty.dtype, ty.shape.static_dims());
    int64_t filled = 0;
    double reward_sum = 0;
    int64_t episodes = 0;
    while (filled < B) {
      Slot& s = slots_[std::uniform_int_distribution<size_t>(0, slots_.size() - 1)(rng_)];
      const Clock::time_point t0 = Clock::now();
      Episode ep = play(*s.env, *s.enc, *network_, o_, ev_, s.base_ms, s.limit_s, &rng_,
                        o_.step_rewards);
      t_.episode_seconds += since(t0);
      t_.measure_seconds += ep.measure_seconds;
      ++episodes;
      ++t_.episodes;
      t_.transformations += static_cast<int64_t>(ep.actions.size());
      t_.illegal_picks += ep.illegal;
      const double reward = log4(ep.speedup);
      reward_sum += reward;
      // GAE over the per-step rewards, or with the whole reward paid at the last step (its next
      // value is 0).
      const size_t n = ep.steps.size();
      std::vector<float> adv(n), ret(n);
      double next_value = 0, gae = 0;
      for (size_t k = n; k-- > 0;) {
        const double r = o_.step_rewards ? ep.steps[k].reward : k + 1 == n ? reward : 0.0;
        const double delta = r + o_.gamma * next_value - ep.steps[k].value;
        gae = delta + o_.gamma * o_.lambda * gae;
        adv[k] = static_cast<float>(gae);
        ret[k] = static_cast<float>(gae + ep.steps[k].value);
        next_value = ep.steps[k].value;
      }
      for (size_t k = 0; k < n && filled < B; ++k, ++filled) {
        const StepRecord& st = ep.steps[k];
        copy_graph(st.graph, filled, out);
        float* am = out[3].ptr<float>() + filled * num_actions();
        for (int a = 0; a < num_actions(); ++a) am[a] = st.mask[a] ? 1.f : 0.f;
        out[4].ptr<int64_t>()[filled] = st.action;
        out[5].ptr<float>()[filled] = st.logp;
        out[6].ptr<float>()[filled] = adv[k];
        out[7].ptr<float>()[filled] = ret[k];
      }
    }
    // Normalized advantages (as PPO implementations do).
    float* adv = out[6].ptr<float>();
    double m = 0, v = 0;
    for (int64_t b = 0; b < B; ++b) m += adv[b];
    m /= B;
    for (int64_t b = 0; b < B; ++b) v += (adv[b] - m) * (adv[b] - m);
    const double sd = std::sqrt(v / B) + 1e-6;
    for (int64_t b = 0; b < B; ++b) adv[b] = static_cast<float>((adv[b] - m) / sd);
    t_.mean_reward.push_back(reward_sum / static_cast<double>(episodes));
    return out;
  }

  std::vector<Slot>& slots_;
  PearlOptions o_;
  Evaluator& ev_;
  PearlTraining& t_;
  std::mt19937_64 rng_;
  std::shared_ptr<PearlNetwork> network_;
  std::vector<HostTensor> batch_;
};

}  // namespace

PearlTraining train_pearl(const std::vector<Program>& programs, const PearlOptions& o) {
  if (programs.empty()) throw UserError("Pearl: no training programs");
  check_sizes(o);  // before the programs are timed
  if (o.batch < 1 || o.epochs < 1 || o.iterations < 0 || o.max_actions_per_branch < 0 ||
      o.pretrain_steps < 0 || o.imitation_steps < 0 || !(o.max_slowdown > 1) ||
      !(o.imitation_temperature > 0))
    throw UserError("Pearl options: batch and epochs must be positive, iterations not negative, "
                    "max_slowdown above 1, imitation_temperature positive");
  const Clock::time_point t0 = Clock::now();
  PearlTraining t;
  Evaluator ev(o.run, o.memoize);
  std::vector<Slot> slots;
  for (const Program& p : programs) {
    Slot s;
    s.env = std::make_unique<LoopEnv>(p);
    s.env->set_memoize(o.memoize);
    s.enc = std::make_unique<GraphEncoder>(p);
    const Measurement m = ev.measure(p, Schedule::original(p));
    s.base_ms = m.ms;
    s.base_checksum = m.checksum;
    s.limit_s = 0.5 + o.run.reps * m.ms * o.max_slowdown / 1e3;
    if (o.run.time_limit_s > 0) s.limit_s = std::min(s.limit_s, o.run.time_limit_s);
    slots.push_back(std::move(s));
  }
  std::map<std::string, HostTensor> init;
  if (o.pretrain_steps > 0) init = pretrain(slots, o, t);
  if (o.kind_prior) init.merge(policy_head_start(o));
  if (o.imitation_steps > 0) {
    const Clock::time_point t1 = Clock::now();
    const std::vector<Demo> demos = demonstrations(slots, o, ev, t);
    t.demonstrations = static_cast<int64_t>(demos.size());
    init = imitate(demos, o, init, t);
    t.imitation_seconds = since(t1);
  }

  // PPO: one Adam step per i, on a batch of new episodes every `epochs` steps.
  Rollouts roll(slots, o, ev, t);
  auto batch = [&](const std::map<std::string, HostTensor>& w, int64_t step) {
    return roll(w, step);
  };
  auto loss = [&](Context& ctx, const Dim& i, const PearlOutputs& out, const std::vector<RT>& b) {
    // Illegal actions get no probability: their logits sink by kMasked.
    const nn::Categorical dist(out.logits + (b[3] - 1.0) * kMasked);
    const RT ratio = (dist.log_prob(b[4]) - b[5]).exp();
    const RT& adv = b[6];
    const RT surrogate = (ratio * adv).minimum(ratio.clamp(1 - o.clip, 1 + o.clip) * adv);
    const RT entropy_coef = optim::linear_decay(ctx, o.entropy_start, o.entropy_end, i.var,
                                                Expr(o.iterations * o.epochs));
    return -surrogate.mean() + o.value_coef * (out.value.squeeze(1) - b[7]).square().mean() -
           entropy_coef * dist.entropy().mean();
  };
  // No PPO iterations: the imitated network is the agent.
  const std::map<std::string, HostTensor> trained =
      o.iterations == 0 ? init
                        : fit(o, o.iterations * o.epochs, o.learning_rate, init,
                              [](const std::string&) { return true; }, roll.types(), batch, loss,
                              t.loss);
  t.network = std::make_shared<PearlNetwork>(trained, o);
  t.seconds = since(t0);
  t.memo = ev.stats();
  for (const Slot& s : slots) {
    t.memo.legality_hits += s.env->stats().legality_hits;
    t.memo.legality_misses += s.env->stats().legality_misses;
  }
  t.unique_schedules = t.memo.time_misses;
  return t;
}

Result run_pearl(const Program& p, const PearlNetwork& net, const PearlOptions& o, Evaluator& ev) {
  const Result base = run_unoptimized(p, ev);
  LoopEnv env(p);
  GraphEncoder enc(p);
  Episode ep = play(env, enc, net, o, ev, base.ms, 0, nullptr, o.select_measured);
  Result r;
  r.method = o.select_measured ? "pearl+select" : "pearl";
  r.ok = ep.illegal == 0;
  if (!r.ok) r.note = "the policy picked an illegal action";
  if (o.select_measured && ep.best_actions < ep.actions.size()) {
    // The fastest schedule on the way: the episode's prefix that leads to it.
    ep.actions.resize(ep.best_actions);
    ep.m = ep.best_actions ? ep.best_m : Measurement{base.ms, base.checksum};
  }
  r.actions = ep.actions;
  r.code = kernel_code(p, o.select_measured ? ep.best : env.schedule());
  if (r.ok) {
    record(r, ep.m);
    if (r.ok) r.note = describe(ep.actions);
  }
  return r;
}

}  // namespace tempo::loops
