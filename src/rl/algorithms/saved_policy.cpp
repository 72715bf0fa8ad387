// Trained policies on disk (safetensors + JSON) and their greedy evaluation as a compiled
// recurrent-tensor program: o[0] = the current observations, o[t + 1] = step(greedy(pi(o[t]))).
#include "rl/algorithms/saved_policy.h"

#include "rl/algorithms/program.h"
#include "driver/compile.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <numeric>
#include <sstream>

#include "nn/json.h"
#include "nn/module.h"
#include "nn/safetensors.h"
#include "util/error.h"

namespace tempo::rl {

namespace fs = std::filesystem;

bool SavedPolicy::relu() const { return is_off_policy(algo); }

namespace {

constexpr const char* kTensorsFile = "policy.safetensors";
constexpr const char* kConfigFile = "policy.json";
// Version 2: the hidden layers' widths as a list (version 1: one width and a count; read too).
constexpr int64_t kFormatVersion = 2;

// ---- writing JSON ----

std::string number(double v) {
  if (!std::isfinite(v)) return v > 0 ? "\"inf\"" : v < 0 ? "\"-inf\"" : "\"nan\"";
  std::ostringstream s;
  s.precision(std::numeric_limits<float>::max_digits10);
  s << v;
  return s.str();
}

template <typename T>
std::string array(const std::vector<T>& values) {
  std::string s = "[";
  for (size_t k = 0; k < values.size(); ++k)
    s += (k ? ", " : "") + number(static_cast<double>(values[k]));
  return s + "]";
}

std::string space_json(const Space& s) {
  std::string out =
      cat("{\"shape\": ", array(s.shape), ", \"discrete\": ", s.discrete ? "true" : "false");
  if (s.discrete) return out + cat(", \"n\": ", s.n, "}");
  return out + cat(", \"low\": ", array(s.low), ", \"high\": ", array(s.high), "}");
}

// Doubles as read back exactly (17 significant digits).
std::string exact_array(const std::vector<double>& values) {
  std::ostringstream s;
  s.precision(std::numeric_limits<double>::max_digits10);
  s << "[";
  for (size_t k = 0; k < values.size(); ++k) s << (k ? ", " : "") << values[k];
  return s.str() + "]";
}

std::string normalization_json(const ObservationNormalization& n) {
  if (!n.defined()) return "";
  std::ostringstream s;
  s.precision(std::numeric_limits<double>::max_digits10);
  s << "  \"obs_normalization\": {\"mean\": " << exact_array(n.mean)
    << ", \"var\": " << exact_array(n.var) << ", \"epsilon\": " << n.epsilon
    << ", \"clip\": " << n.clip << "},\n";
  return s.str();
}

std::string config_json(const SavedPolicy& p) {
  std::ostringstream s;
  s << "{\n"
    << "  \"format\": \"tempo-policy\",\n"
    << "  \"version\": " << kFormatVersion << ",\n"
    << "  \"algo\": " << nn::json_quote(p.algo) << ",\n"
    << "  \"env\": " << nn::json_quote(p.env) << ",\n"
    << "  \"env_options\": {\"obs_shape\": " << array(p.env_options.obs_shape)
    << ", \"episode_length\": " << p.env_options.episode_length
    << ", \"num_actions\": " << p.env_options.num_actions << "},\n"
    << "  \"network\": {\"kind\": \"mlp\", \"hidden\": " << array(p.hidden)
    << ", \"activation\": \"" << (p.relu() ? "relu" : "tanh") << "\"},\n"
    << "  \"observation_space\": " << space_json(p.observation_space) << ",\n"
    << "  \"action_space\": " << space_json(p.action_space) << ",\n"
    << "  \"seed\": " << p.seed << ",\n"
    << "  \"iterations\": " << p.iterations << ",\n"
    << "  \"env_steps\": " << p.env_steps << ",\n"
    << normalization_json(p.obs_normalization)
    << "  \"tensors\": " << nn::json_quote(kTensorsFile) << "\n"
    << "}\n";
  return s.str();
}

// ---- reading JSON ----

// Reads the members of one document, naming it in errors.
struct Reader {
  std::string what;  // the file

  [[noreturn]] void fail(const std::string& msg) const {
    throw UserError(cat("malformed ", what, ": ", msg));
  }
  const nn::Json& get(const nn::Json& obj, const std::string& key, nn::Json::Kind kind) const {
    const nn::Json* v = obj.get(key);
    if (!v) fail(cat("no '", key, "'"));
    if (v->kind != kind) fail(cat("'", key, "' has the wrong type"));
    return *v;
  }
  int64_t integer(const nn::Json& obj, const std::string& key) const {
    const nn::Json& v = get(obj, key, nn::Json::Number);
    if (!v.is_int) fail(cat("'", key, "' is not an integer"));
    return v.integer;
  }
  std::string string(const nn::Json& obj, const std::string& key) const {
    return get(obj, key, nn::Json::String).str;
  }
  double value(const nn::Json& v, const std::string& key) const {
    if (v.kind == nn::Json::Number) return v.number;
    if (v.kind == nn::Json::String && (v.str == "inf" || v.str == "-inf" || v.str == "nan"))
      return v.str == "nan" ? std::nan("") : (v.str == "inf" ? 1 : -1) * HUGE_VAL;
    fail(cat("'", key, "' holds something other than numbers"));
  }
  template <typename T>
  std::vector<T> numbers(const nn::Json& obj, const std::string& key) const {
    std::vector<T> out;
    for (const nn::Json& v : get(obj, key, nn::Json::Array).items)
      out.push_back(static_cast<T>(value(v, key)));
    return out;
  }
  // The network's hidden layers' widths.
  std::vector<int64_t> widths(const nn::Json& net) const {
    const nn::Json* one = net.get("hidden");
    std::vector<int64_t> out;
    if (one && one->kind == nn::Json::Number) {  // version 1
      const int64_t layers = integer(net, "layers");
      if (layers < 0) fail(cat("the network has ", layers, " hidden layers"));
      out.assign(static_cast<size_t>(layers), integer(net, "hidden"));
    } else {
      out = numbers<int64_t>(net, "hidden");
    }
    for (int64_t w : out)
      if (w < 1) fail(cat("the network has a hidden layer of width ", w));
    return out;
  }
  Space space(const nn::Json& obj, const std::string& key) const {
    const nn::Json& s = get(obj, key, nn::Json::Object);
    Space out;
    out.shape = numbers<int64_t>(s, "shape");
    out.discrete = get(s, "discrete", nn::Json::Bool).boolean;
    if (out.discrete) {
      out.n = integer(s, "n");
      if (out.n < 1) fail(cat("'", key, "' has ", out.n, " actions"));
    } else {
      out.low = numbers<float>(s, "low");
      out.high = numbers<float>(s, "high");
      if (static_cast<int64_t>(out.low.size()) != out.numel() ||
          static_cast<int64_t>(out.high.size()) != out.numel())
        fail(cat("'", key, "': low and high need one bound per element"));
    }
    for (int64_t d : out.shape)
      if (d < 1) fail(cat("'", key, "' has a non-positive size"));
    return out;
  }
};

std::vector<int64_t> mlp_sizes(const SavedPolicy& p) {
  return mlp_layer_sizes(p.obs_dim(), p.hidden, p.out_dim());
}

bool same_space(const Space& a, const Space& b) {
  return a.discrete == b.discrete && (a.discrete ? a.n == b.n : a.numel() == b.numel());
}

}  // namespace

void check_writable_dir(const std::string& dir, const std::string& what) {
  if (dir.empty()) throw UserError(cat(what, " needs a directory"));
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw UserError(cat(what, " ", dir, " is a file, not a directory"));
  fs::create_directories(dir, ec);
  if (ec) throw UserError(cat(what, " ", dir, ": cannot create the directory: ", ec.message()));
  if (!fs::is_directory(dir)) throw UserError(cat(what, " ", dir, " is not a directory"));
  fs::path probe = fs::path(dir) / ".tempo-write-test";
  bool ok;
  {
    std::ofstream f(probe, std::ios::trunc);
    f << "ok\n";
    f.flush();
    ok = static_cast<bool>(f);
  }
  fs::remove(probe, ec);
  if (!ok) throw UserError(cat(what, " ", dir, ": cannot write files in the directory"));
}

void save_policy(const std::string& dir, const SavedPolicy& policy) {
  nn::NamedTensors tensors(policy.tensors.begin(), policy.tensors.end());
  // The tensors first: a policy.json always describes tensors that are already on disk.
  nn::save((fs::path(dir) / kTensorsFile).string(), tensors);
  nn::write_atomic((fs::path(dir) / kConfigFile).string(), config_json(policy), "policy config");
}

SavedPolicy load_policy(const std::string& dir) {
  const fs::path config = fs::path(dir) / kConfigFile;
  if (!fs::is_directory(dir))
    throw UserError(cat("no saved policy in ", dir, ": no such directory"));
  std::ifstream f(config, std::ios::binary);
  if (!f) throw UserError(cat("no saved policy in ", dir, ": ", config.string(), " is missing"));
  std::stringstream text;
  text << f.rdbuf();
  const Reader r{config.string()};
  nn::Json doc = nn::parse_json(text.str(), config.string());
  if (doc.kind != nn::Json::Object) r.fail("not a JSON object");
  if (doc.get("format") == nullptr || r.string(doc, "format") != "tempo-policy")
    r.fail("not a Tempo policy (no \"format\": \"tempo-policy\")");
  if (r.integer(doc, "version") < 1 || r.integer(doc, "version") > kFormatVersion)
    r.fail(cat("version ", r.integer(doc, "version"), " (this Tempo reads versions 1 to ",
               kFormatVersion, ")"));
  SavedPolicy p;
  p.algo = r.string(doc, "algo");
  p.env = r.string(doc, "env");
  const nn::Json& eo = r.get(doc, "env_options", nn::Json::Object);
  p.env_options.obs_shape = r.numbers<int64_t>(eo, "obs_shape");
  p.env_options.episode_length = r.integer(eo, "episode_length");
  p.env_options.num_actions = r.integer(eo, "num_actions");
  const nn::Json& net = r.get(doc, "network", nn::Json::Object);
  const char* activation = p.relu() ? "relu" : "tanh";
  if (r.string(net, "kind") != "mlp" || r.string(net, "activation") != activation)
    r.fail(cat("the network is not a ", activation, " MLP (", p.algo, "'s policy network)"));
  p.hidden = r.widths(net);
  p.observation_space = r.space(doc, "observation_space");
  p.action_space = r.space(doc, "action_space");
  p.seed = static_cast<uint64_t>(r.integer(doc, "seed"));
  p.iterations = r.integer(doc, "iterations");
  p.env_steps = r.integer(doc, "env_steps");
  if (doc.get("obs_normalization")) {
    const nn::Json& n = r.get(doc, "obs_normalization", nn::Json::Object);
    p.obs_normalization.mean = r.numbers<double>(n, "mean");
    p.obs_normalization.var = r.numbers<double>(n, "var");
    p.obs_normalization.epsilon = r.value(r.get(n, "epsilon", nn::Json::Number), "epsilon");
    p.obs_normalization.clip = r.value(r.get(n, "clip", nn::Json::Number), "clip");
    const auto size = static_cast<size_t>(p.obs_dim());
    if (p.obs_normalization.mean.size() != size || p.obs_normalization.var.size() != size)
      r.fail(cat("'obs_normalization' does not have ", size, " means and variances"));
  }
  p.tensors = nn::load((fs::path(dir) / r.string(doc, "tensors")).string());
  return p;
}

EvalResult evaluate(const SavedPolicy& policy, int64_t episodes, uint64_t seed) {
  if (episodes < 1) throw UserError(cat("--episodes must be positive, got ", episodes));
  std::unique_ptr<BatchedEnv> env = make_env(policy.env, episodes, policy.env_options);
  return evaluate(policy, *env, seed);
}

EvalResult evaluate(const SavedPolicy& policy, BatchedEnv& env, uint64_t seed) {
  const Space& aspace = env.action_space();
  if (env.obs_numel() != policy.obs_dim() || !same_space(aspace, policy.action_space))
    throw UserError(cat("the policy was trained on ", policy.env, " (", policy.obs_dim(),
                        " observations, ", policy.out_dim(), " action outputs); ", env.name(),
                        " does not have the same spaces"));
  const int64_t N = env.num_envs(), D = policy.obs_dim(), A = aspace.numel();
  const bool discrete = aspace.discrete;
  // Between runs of the program: the observations to continue from and the episodes' returns.
  struct State {
    std::vector<float> obs;
    StepResult step;
    std::vector<double> returns;
    std::vector<bool> ended;
    int64_t running = 0;
  };
  auto st = std::make_shared<State>();
  st->obs = env.reset(seed);
  st->returns.assign(static_cast<size_t>(N), 0.0);
  st->ended.assign(static_cast<size_t>(N), false);
  st->running = N;

  Context ctx;
  Dim t = ctx.dim("t", "T");
  const TensorType obs_type{DType::Float32, {N, D}};
  const ObservationNormalization& norm = policy.obs_normalization;
  if (norm.defined()) norm.apply(st->obs.data(), N);
  auto observe = [st, N, D](const std::vector<HostTensor>&, const std::vector<int64_t>&) {
    return std::vector<HostTensor>{HostTensor::from(st->obs, {N, D})};
  };
  nn::MLP pi(ctx, mlp_sizes(policy), nn::Steps(), policy.relu() ? nn::relu : nn::tanh);
  pi.init_from(policy.tensors, "the saved policy.safetensors");
  RT o = ctx.placeholder(obs_type, {t}, "obs");
  RT out = pi(o);  // (N, outputs): logits or the actions' mean (SAC: then their log-stds)
  RT action = discrete ? out.argmax(-1) : out;
  if (policy.algo == "sac" || policy.algo == "td3") {  // the mean squashed into the box
    const detail::ActionBox box(ctx, aspace);
    action = (policy.algo == "sac" ? out.slice(1, 0, A) : out).tanh() * box.scale + box.bias;
  }
  auto step = [st, &env, &aspace, &norm, discrete, N, D, A](const std::vector<HostTensor>& in,
                                                            const std::vector<int64_t>&) {
    std::vector<float> act(static_cast<size_t>(in[0].numel()));
    for (size_t k = 0; k < act.size(); ++k) {
      double v = in[0].at(static_cast<int64_t>(k));
      if (!discrete) v = std::clamp<double>(v, aspace.low[k % A], aspace.high[k % A]);
      act[k] = static_cast<float>(v);
    }
    env.step_into(act, st->step);
    for (int64_t n = 0; n < N; ++n)
      if (!st->ended[n] && (st->step.terminated[n] || st->step.truncated[n])) {
        st->ended[n] = true;
        st->returns[n] = st->step.episode_return[n];
        --st->running;
      }
    st->obs = st->step.obs;
    if (norm.defined()) norm.apply(st->obs.data(), N);
    return std::vector<HostTensor>{HostTensor::from(st->obs, {N, D})};
  };
  o[0] = ctx.udf("observe", observe, {}, {obs_type}, {})[0];
  o[t.var + 1] = ctx.udf("env_step", step, {action}, {obs_type}, {t})[0];

  // Each run steps the envs kChunk times and the next run goes on from there, until every env
  // has finished its first episode.
  constexpr int64_t kChunk = 128, kMaxSteps = 1 << 20;
  CompileOptions co;
  co.seed = seed;
  Executable exe = compile(ctx, {{t.bound, kChunk}}, co);
  for (int64_t steps = 0; st->running > 0; steps += kChunk) {
    if (steps >= kMaxSteps)
      throw UserError(cat(st->running, " of ", N, " episodes of ", env.name(),
                          " did not end within ", kMaxSteps, " steps"));
    exe.run();
  }
  EvalResult res;
  res.returns = st->returns;
  res.mean_return =
      std::accumulate(res.returns.begin(), res.returns.end(), 0.0) / static_cast<double>(N);
  return res;
}

}  // namespace tempo::rl
