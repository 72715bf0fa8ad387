#include "rl/algorithms/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "nn/json.h"
#include "nn/safetensors.h"
#include "util/error.h"
#include "util/hash.h"

namespace tempo::rl {

namespace fs = std::filesystem;

namespace {

constexpr const char* kManifest = "checkpoint.json";
constexpr const char* kFormat = "tempo-train-checkpoint";
constexpr int64_t kVersion = 1;

// Hidden widths as --hidden takes them: one when all are equal (with --layers, as checkpoints
// recorded them before the widths could differ), else each.
std::string widths(const std::vector<int64_t>& hidden) {
  std::string out;
  for (int64_t w : hidden) out += cat(out.empty() ? "" : ",", w);
  const bool same = std::all_of(hidden.begin(), hidden.end(),
                                [&](int64_t w) { return w == hidden.front(); });
  return same && !hidden.empty() ? cat(hidden.front()) : out;
}

// Doubles exactly (17 significant digits round-trip).
std::string exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string tensors_name(int64_t iterations) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "checkpoint-%08lld.safetensors",
                static_cast<long long>(iterations));
  return buf;
}

HostTensor f64(const std::vector<double>& v, std::vector<int64_t> shape) {
  HostTensor t(DType::Float64, std::move(shape));
  for (size_t k = 0; k < v.size(); ++k) t.ptr<double>()[k] = v[k];
  return t;
}

nn::NamedTensors tensors_of(const TrainCheckpoint& c) {
  nn::NamedTensors out;
  auto numbered = [&](const char* kind, const std::vector<HostTensor>& tensors) {
    for (size_t k = 0; k < tensors.size(); ++k) out.emplace_back(cat(kind, ".", k), tensors[k]);
  };
  numbered("parameter", c.parameters);
  numbered("optimizer", c.optimizer_states);
  numbered("target", c.targets);
  numbered("replay", c.replay);
  out.emplace_back("obs", c.obs);
  std::vector<double> curve;
  for (const CurvePoint& p : c.curve) {
    curve.push_back(static_cast<double>(p.env_steps));
    curve.push_back(p.mean_return);
  }
  out.emplace_back("curve", f64(curve, {static_cast<int64_t>(c.curve.size()), 2}));
  out.emplace_back("recent", f64(c.recent, {static_cast<int64_t>(c.recent.size())}));
  out.emplace_back("last_mean", f64({c.last_mean}, {1}));
  return out;
}

std::string manifest_json(const TrainCheckpoint& c, const std::string& tensors,
                          const std::string& bytes) {
  std::ostringstream o;
  o << "{\n  \"format\": " << nn::json_quote(kFormat) << ",\n  \"version\": " << kVersion
    << ",\n  \"iterations\": " << c.iterations << ",\n  \"tensors\": " << nn::json_quote(tensors)
    << ",\n  \"tensors_bytes\": " << bytes.size()
    // FNV-1a of the tensors file: catches one changed after its manifest was written.
    << ",\n  \"tensors_checksum\": " << nn::json_quote(std::to_string(fnv1a(bytes)))
    << ",\n  \"parameters\": " << c.parameters.size()
    << ",\n  \"optimizer_states\": " << c.optimizer_states.size()
    << ",\n  \"targets\": " << c.targets.size() << ",\n  \"replay\": " << c.replay.size()
    << ",\n  \"episodes\": " << c.episodes << ",\n  \"config\": {";
  for (size_t k = 0; k < c.config.size(); ++k)
    o << (k ? ",\n    " : "\n    ") << nn::json_quote(c.config[k].first) << ": "
      << nn::json_quote(c.config[k].second);
  o << "\n  },\n  \"env_state\": " << nn::json_quote(c.env_state) << "\n}\n";
  return o.str();
}

// Older tensors files once `keep` is the manifest's, and the temporary files of the checkpoint
// and the policy that killed writers (other processes) left.
void remove_stale(const std::string& dir, const std::string& keep) {
  const std::string ours = cat(".tmp.", ::getpid());
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool temporary = name.find(".tmp.") != std::string::npos &&
                           name.find(ours) == std::string::npos &&
                           (name.rfind("checkpoint", 0) == 0 || name.rfind("policy.", 0) == 0);
    if ((name.rfind("checkpoint-", 0) == 0 && name != keep) || temporary) fs::remove(e.path(), ec);
  }
}

std::string read_file(const fs::path& path, const std::string& dir) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw UserError(cat("no training checkpoint in ", dir, ": ", path.string(), " is missing"));
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Reads the manifest's fields, naming the file in errors.
struct ManifestReader {
  std::string file;
  [[noreturn]] void fail(const std::string& why) const {
    throw UserError(cat("malformed training checkpoint ", file, ": ", why));
  }
  const nn::Json& get(const nn::Json& obj, const std::string& key, nn::Json::Kind kind) const {
    const nn::Json* v = obj.get(key);
    if (!v || v->kind != kind) fail(cat("'", key, "' is missing or of the wrong type"));
    return *v;
  }
  int64_t integer(const nn::Json& obj, const std::string& key) const {
    const nn::Json& v = get(obj, key, nn::Json::Number);
    if (!v.is_int || v.integer < 0) fail(cat("'", key, "' is not a count"));
    return v.integer;
  }
  // A count that manifests written before its field existed leave out: 0 there.
  int64_t count_or_zero(const nn::Json& obj, const std::string& key) const {
    return obj.get(key) ? integer(obj, key) : 0;
  }
  std::string string(const nn::Json& obj, const std::string& key) const {
    return get(obj, key, nn::Json::String).str;
  }
};

const HostTensor& tensor(const std::map<std::string, HostTensor>& m, const std::string& name,
                         const std::string& file) {
  auto it = m.find(name);
  if (it == m.end())
    throw UserError(cat("malformed training checkpoint ", file, ": no tensor '", name, "'"));
  return it->second;
}

// The number of tensors of each numbered kind the manifest records.
struct TensorCounts {
  size_t parameters, optimizer_states, targets, replay;
};

// The tensors file's contents into `c` (the manifest read before).
void read_tensors(const std::string& bytes, const std::string& file, const TensorCounts& n,
                  TrainCheckpoint& c) {
  const std::map<std::string, HostTensor> m = nn::safetensors_decode(bytes, file);
  auto numbered = [&](const char* kind, size_t count, std::vector<HostTensor>& into) {
    for (size_t k = 0; k < count; ++k) into.push_back(tensor(m, cat(kind, ".", k), file));
  };
  numbered("parameter", n.parameters, c.parameters);
  numbered("optimizer", n.optimizer_states, c.optimizer_states);
  numbered("target", n.targets, c.targets);
  numbered("replay", n.replay, c.replay);
  c.obs = tensor(m, "obs", file);
  const HostTensor& curve = tensor(m, "curve", file);
  if (curve.dtype != DType::Float64 || curve.shape.size() != 2 || curve.shape[1] != 2 ||
      curve.shape[0] != c.iterations)
    throw UserError(cat("malformed training checkpoint ", file, ": 'curve' is not (", c.iterations,
                        ", 2) float64"));
  for (int64_t k = 0; k < curve.shape[0]; ++k)
    c.curve.push_back(
        {static_cast<int64_t>(curve.ptr<double>()[2 * k]), curve.ptr<double>()[2 * k + 1]});
  const HostTensor& recent = tensor(m, "recent", file);
  const HostTensor& last = tensor(m, "last_mean", file);
  if (recent.dtype != DType::Float64 || last.dtype != DType::Float64 || last.numel() != 1)
    throw UserError(cat("malformed training checkpoint ", file, ": 'recent' or 'last_mean'"));
  c.recent.assign(recent.ptr<double>(), recent.ptr<double>() + recent.numel());
  c.last_mean = last.ptr<double>()[0];
}

}  // namespace

std::vector<std::pair<std::string, std::string>> checkpoint_config(const TrainConfig& cfg) {
  std::string shape;
  for (int64_t d : cfg.env_options.obs_shape) shape += cat(shape.empty() ? "" : "x", d);
  std::vector<std::pair<std::string, std::string>> flags{
          {"algo", cfg.algo},
          {"--env", cfg.env},
          {"--obs-shape", shape},
          {"--episode-length", cat(cfg.env_options.episode_length)},
          {"num_actions", cat(cfg.env_options.num_actions)},
          {"--seed", cat(cfg.compile.seed)},
          {"--iterations", cat(cfg.iterations)},
          {"--num-envs", cat(cfg.num_envs)},
          {"--steps", cat(cfg.steps)},
          {"--lr", exact(cfg.lr)},
          {"--constant-lr", cfg.lr_decay ? "no" : "yes"},
          {"--default-init", cfg.orthogonal_init ? "no" : "yes"},
          {"--truncation", cfg.truncation},
          {"--normalize-obs", cfg.normalize_observations ? "yes" : "no"},
          {"--normalize-reward", cfg.normalize_rewards ? "yes" : "no"},
          {"gamma", exact(cfg.gamma)},
          {"--gae-lambda", exact(cfg.gae_lambda)},
          {"--ent-coef", exact(cfg.ent_coef)},
          {"--vf-coef", exact(cfg.vf_coef)},
          {"max_grad_norm", exact(cfg.max_grad_norm)},
          {"clip", exact(cfg.clip)},
          {"--epochs", cat(cfg.epochs)},
          {"--minibatches", cat(cfg.minibatches)},
          {"--n-step", cat(cfg.n_step)},
          {"--no-normalize", cfg.normalize_returns ? "no" : "yes"},
          {"--per-step", cfg.per_step ? "yes" : "no"},
          {"--hidden", widths(cfg.hidden)},
          {"--layers", cat(cfg.hidden.size())},
          {"--optimizer", cfg.optimizer}};
  if (!is_off_policy(cfg.algo)) return flags;
  // The off-policy algorithms' own (recorded only for them: older checkpoints lack them).
  flags.insert(flags.end(), {{"--buffer-size", cat(cfg.buffer_size)},
                             {"--batch-size", cat(cfg.batch_size)},
                             {"--learning-starts", cat(cfg.learning_starts)},
                             {"--target-every", cat(cfg.target_every)},
                             {"--eps-start", exact(cfg.eps_start)},
                             {"--eps-end", exact(cfg.eps_end)},
                             {"--exploration-fraction", exact(cfg.exploration_fraction)},
                             {"--policy-lr", exact(cfg.policy_lr)},
                             {"--tau", exact(cfg.tau)},
                             {"--exploration-noise", exact(cfg.exploration_noise)},
                             {"--policy-noise", exact(cfg.policy_noise)},
                             {"--noise-clip", exact(cfg.noise_clip)},
                             {"--policy-frequency", cat(cfg.policy_every)}});
  return flags;
}

void save_checkpoint(const std::string& dir, const TrainCheckpoint& c) {
  const std::string name = tensors_name(c.iterations);
  const std::string bytes = nn::safetensors_encode(tensors_of(c));
  // The tensors first: a manifest always names a complete tensors file.
  nn::write_atomic((fs::path(dir) / name).string(), bytes, "training checkpoint");
  nn::write_atomic((fs::path(dir) / kManifest).string(), manifest_json(c, name, bytes),
                   "training checkpoint manifest");
  remove_stale(dir, name);
}

TrainCheckpoint load_checkpoint(const std::string& dir) {
  if (!fs::is_directory(dir))
    throw UserError(cat("no training checkpoint in ", dir, ": no such directory"));
  const fs::path manifest = fs::path(dir) / kManifest;
  const ManifestReader r{manifest.string()};
  const nn::Json doc = nn::parse_json(read_file(manifest, dir), manifest.string());
  if (doc.kind != nn::Json::Object || r.string(doc, "format") != kFormat)
    r.fail(cat("not a ", kFormat, " manifest"));
  if (r.integer(doc, "version") != kVersion)
    r.fail(cat("version ", r.integer(doc, "version"), " (this build reads ", kVersion, ")"));
  TrainCheckpoint c;
  c.iterations = r.integer(doc, "iterations");
  c.episodes = r.integer(doc, "episodes");
  c.env_state = r.string(doc, "env_state");
  for (const auto& [k, v] : r.get(doc, "config", nn::Json::Object).members) {
    if (v.kind != nn::Json::String) r.fail(cat("config entry '", k, "' is not a string"));
    c.config.emplace_back(k, v.str);
  }
  const std::string name = r.string(doc, "tensors");
  if (name.find('/') != std::string::npos) r.fail("the tensors file is not in the directory");
  const fs::path file = fs::path(dir) / name;
  const std::string bytes = read_file(file, dir);
  if (static_cast<int64_t>(bytes.size()) != r.integer(doc, "tensors_bytes") ||
      std::to_string(fnv1a(bytes)) != r.string(doc, "tensors_checksum"))
    throw UserError(cat("corrupt training checkpoint: ", file.string(),
                        " does not have the size and checksum its manifest records"));
  const TensorCounts counts{static_cast<size_t>(r.integer(doc, "parameters")),
                            static_cast<size_t>(r.integer(doc, "optimizer_states")),
                            static_cast<size_t>(r.count_or_zero(doc, "targets")),
                            static_cast<size_t>(r.count_or_zero(doc, "replay"))};
  read_tensors(bytes, file.string(), counts, c);
  return c;
}

void check_resumable(const TrainConfig& cfg, const TrainCheckpoint& c, const std::string& dir) {
  std::map<std::string, std::string> saved(c.config.begin(), c.config.end());
  for (const auto& [flag, value] : checkpoint_config(cfg)) {
    auto it = saved.find(flag);
    // Checkpoints from before these flags existed were trained with their defaults.
    if (it == saved.end() && ((flag == "--truncation" && value == "bootstrap") ||
                              (flag.rfind("--normalize-", 0) == 0 && value == "no")))
      continue;
    if (it == saved.end())
      throw UserError(cat("--resume ", dir, ": the checkpoint does not record ", flag));
    if (it->second != value)
      throw UserError(cat("--resume ", dir, ": the checkpoint was trained with ", flag, " ",
                          it->second, ", this run has ", flag, " ", value,
                          " (resume with the flags the checkpoint was trained with)"));
  }
  if (c.iterations > cfg.iterations)
    throw UserError(cat("--resume ", dir, ": the checkpoint holds ", c.iterations,
                        " iterations, more than --iterations ", cfg.iterations));
}

namespace detail {

CheckpointParts::CheckpointParts(const TrainConfig& cfg, std::string dir)
    : dir_(std::move(dir)),
      config_(checkpoint_config(cfg)),
      every_(cfg.save_every),
      total_(cfg.iterations) {}

CheckpointParts::CheckpointParts(int64_t total, std::function<void(TrainCheckpoint)> sink)
    : sink_(std::move(sink)), total_(total) {}

bool CheckpointParts::wanted(int64_t done) const {
  return done == total_ || (every_ > 0 && done % every_ == 0);
}

void CheckpointParts::env(int64_t done, HostTensor obs, std::string state) {
  TrainCheckpoint& c = pending_[done];
  c.obs = std::move(obs);
  c.env_state = std::move(state);
  arrived(done);
}

void CheckpointParts::stats(int64_t done, std::vector<CurvePoint> curve, std::vector<double> recent,
                            double last_mean, int64_t episodes) {
  TrainCheckpoint& c = pending_[done];
  c.curve = std::move(curve);
  c.recent = std::move(recent);
  c.last_mean = last_mean;
  c.episodes = episodes;
  arrived(done);
}

void CheckpointParts::tensors(int64_t done, TrainCheckpoint part) {
  TrainCheckpoint& c = pending_[done];
  c.parameters = std::move(part.parameters);
  c.optimizer_states = std::move(part.optimizer_states);
  c.targets = std::move(part.targets);
  c.replay = std::move(part.replay);
  arrived(done);
}

void CheckpointParts::arrived(int64_t done) {
  if (++parts_[done] < 3) return;
  TrainCheckpoint c = std::move(pending_[done]);
  pending_.erase(done);
  parts_.erase(done);
  c.iterations = done;
  c.config = config_;
  if (sink_)
    sink_(std::move(c));
  else
    save_checkpoint(dir_, c);
}

}  // namespace detail

}  // namespace tempo::rl
