#include "loops/schedule_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>

#include "api/tempo.h"
#include "backend/loop_choice.h"
#include "driver/compile.h"
#include "nn/module.h"
#include "nn/safetensors.h"
#include "optim/optim.h"
#include "util/error.h"

namespace tempo::loops {

namespace {

using backend::LoopFeatures;
using backend::LoopOrder;

// The log time ratio the measured search needs before it interchanges (backend/loop_choice.h).
const double kInterchangeBelow = std::log(backend::kSecondBelow);
// Targets are clipped to this log ratio: a cost model need not learn how much slower past 20x.
constexpr double kMaxLogRatio = 3.0;
constexpr int kVersion = 2;  // 2: with the training data's clusters

// The model's inputs before standardization: the cluster's counts, then the size.
std::vector<float> raw_inputs(const LoopFeatures& f, int64_t rows, int64_t cols) {
  std::vector<float> x(f.values, f.values + LoopFeatures::kCount);
  const double r = static_cast<double>(std::max<int64_t>(rows, 1));
  x.push_back(static_cast<float>(std::log2(r)));
  x.push_back(static_cast<float>(cols));
  x.push_back(static_cast<float>(std::log2(r * static_cast<double>(std::max<int64_t>(cols, 1)))));
  x.push_back(static_cast<float>(std::min(r, 64.0) / 64));  // of the interchanged loop's block
  return x;
}

double target(const LoopTiming& t) {
  const double y = std::log(std::max(t.columns_outer_s, 1e-12) / std::max(t.rows_outer_s, 1e-12));
  return std::clamp(y, -kMaxLogRatio, kMaxLogRatio);
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, ',');) out.push_back(field);
  return out;
}

std::string layer_name(size_t k, const char* what) { return cat(k, ".", what); }

std::array<int, LoopFeatures::kCount> counts(const LoopFeatures& f) {
  std::array<int, LoopFeatures::kCount> c;
  std::copy(f.values, f.values + LoopFeatures::kCount, c.begin());
  return c;
}

}  // namespace

std::vector<LoopTiming> read_loop_timings(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(cat("cannot read loop timings from ", path));
  std::string line;
  if (!std::getline(in, line)) throw UserError(cat(path, ": empty, not a file of loop timings"));
  const std::vector<std::string> header = split(line);
  std::vector<std::string> expected(LoopFeatures::kNames,
                                    LoopFeatures::kNames + LoopFeatures::kCount);
  for (const char* name : {"rows", "cols", "rows_outer_s", "columns_outer_s"})
    expected.emplace_back(name);
  if (header != expected)
    throw UserError(cat(path, ": not a file of loop timings (its header is '", line,
                        "'; written with TEMPO_LOOP_TIMINGS=FILE)"));
  std::vector<LoopTiming> out;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const std::vector<std::string> f = split(line);
    const std::string where = cat(path, ":", number);
    if (f.size() != expected.size())
      throw UserError(cat(where, ": ", f.size(), " fields where the header has ", expected.size()));
    LoopTiming t;
    t.source = where;
    try {
      for (int k = 0; k < LoopFeatures::kCount; ++k) t.cluster.values[k] = std::stoi(f[k]);
      t.rows = std::stoll(f[LoopFeatures::kCount]);
      t.cols = std::stoll(f[LoopFeatures::kCount + 1]);
      t.rows_outer_s = std::stod(f[LoopFeatures::kCount + 2]);
      t.columns_outer_s = std::stod(f[LoopFeatures::kCount + 3]);
    } catch (const std::exception&) {
      throw UserError(cat(where, ": a field is not a number: '", line, "'"));
    }
    if (t.rows < 0 || t.cols < 0 || !(t.rows_outer_s > 0) || !(t.columns_outer_s > 0))
      throw UserError(cat(where, ": sizes must not be negative and times must be positive"));
    out.push_back(std::move(t));
  }
  return out;
}

ScheduleModel ScheduleModel::train(const std::vector<LoopTiming>& data,
                                   const ScheduleModelOptions& o, std::vector<double>* losses) {
  if (data.empty()) throw UserError("a loop schedule model needs at least one loop timing");
  if (o.hidden < 1 || o.steps < 1 || !(o.learning_rate > 0))
    throw UserError("a loop schedule model needs hidden >= 1, steps >= 1, learning rate > 0");
  const int64_t n = static_cast<int64_t>(data.size());
  ScheduleModel m;
  m.mean_.assign(kInputs, 0.f);
  m.scale_.assign(kInputs, 1.f);
  std::vector<std::vector<float>> raw;
  for (const LoopTiming& t : data) {
    raw.push_back(raw_inputs(t.cluster, t.rows, t.cols));
    m.known_.insert(counts(t.cluster));
  }
  for (int k = 0; k < kInputs; ++k) {
    double s = 0, s2 = 0;
    for (const auto& x : raw) s += x[k], s2 += static_cast<double>(x[k]) * x[k];
    const double mean = s / n, var = std::max(0.0, s2 / n - mean * mean);
    m.mean_[k] = static_cast<float>(mean);
    // At least a unit (the features are counts and logs): a feature constant in the data must
    // not blow up where a program differs.
    m.scale_[k] = static_cast<float>(1 / std::max(std::sqrt(var), 1.0));
  }
  HostTensor x(DType::Float32, {n, kInputs}), y(DType::Float32, {n, 1});
  for (int64_t i = 0; i < n; ++i) {
    for (int k = 0; k < kInputs; ++k)
      x.ptr<float>()[i * kInputs + k] = (raw[i][k] - m.mean_[k]) * m.scale_[k];
    y.ptr<float>()[i] = static_cast<float>(target(data[i]));
  }

  // The learner: the whole data set at every step of i, from a UDF that also receives the
  // parameters and keeps them at the step after the last update.
  Context ctx;
  Dim i = ctx.dim("i", "I");
  nn::MLP mlp(ctx, {kInputs, o.hidden, o.hidden, 1}, i);
  std::vector<nn::Parameter> params;
  std::vector<std::string> names;
  for (const auto& [name, p] : mlp.named_parameters()) {
    names.push_back(name);
    params.push_back(p);
  }
  auto weights = std::make_shared<std::map<std::string, HostTensor>>();
  const int64_t steps = o.steps;
  auto batch = [=](const std::vector<HostTensor>& in, const std::vector<int64_t>& point) {
    if (point[0] == steps)
      for (size_t k = 0; k < names.size(); ++k) (*weights)[names[k]] = in[k];
    return std::vector<HostTensor>{x, y};
  };
  const std::vector<RT> xy =
      ctx.udf("loop_timings", batch, nn::as_rts(params),
              {{DType::Float32, Shape({n, kInputs})}, {DType::Float32, Shape({n, 1})}}, {i});
  const RT loss = (mlp(xy[0]) - xy[1]).square().mean();
  optim::Adam adam(params, o.learning_rate);
  optim::minimize(loss, adam);
  const RT kept = loss.retain();
  CompileOptions co;
  co.seed = o.seed;
  co.proximity = false;  // a small program: fast scheduling settings
  Executable exe = compile(ctx, {{i.bound, steps + 1}}, co);
  exe.run();
  if (losses)
    for (int64_t k = 0; k < steps; ++k) losses->push_back(exe.get(kept, {k}).at(0));

  for (size_t k = 0; k < mlp.layers().size(); ++k) {
    Dense d;
    const HostTensor& w = weights->at(layer_name(k, "weight"));
    const HostTensor& b = weights->at(layer_name(k, "bias"));
    d.out = w.shape[0];
    d.in = w.shape[1];
    d.w.assign(w.ptr<float>(), w.ptr<float>() + w.numel());
    d.b.assign(b.ptr<float>(), b.ptr<float>() + b.numel());
    m.layers_.push_back(std::move(d));
  }
  return m;
}

double ScheduleModel::predict(const LoopFeatures& cluster, int64_t rows, int64_t cols) const {
  std::vector<float> h = raw_inputs(cluster, rows, cols), next;
  for (int k = 0; k < kInputs; ++k) h[k] = (h[k] - mean_[k]) * scale_[k];
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Dense& d = layers_[l];
    next.resize(static_cast<size_t>(d.out));
    d.apply(h.data(), next.data());
    if (l + 1 < layers_.size())
      for (float& v : next) v = std::tanh(v);
    h.swap(next);
  }
  return h[0];
}

std::optional<LoopOrder> ScheduleModel::choose(const LoopFeatures& cluster, int64_t rows,
                                               int64_t cols, double unsure) const {
  if (!knows(cluster)) return std::nullopt;
  const double p = predict(cluster, rows, cols);
  if (std::abs(p - kInterchangeBelow) < unsure) return std::nullopt;
  return p < kInterchangeBelow ? LoopOrder::ColumnsOuter : LoopOrder::RowsOuter;
}

bool ScheduleModel::knows(const LoopFeatures& cluster) const {
  return known_.count(counts(cluster)) > 0;
}

backend::LoopSchedulePolicy ScheduleModel::policy() const {
  auto m = std::make_shared<const ScheduleModel>(*this);
  return [m](const LoopFeatures& f, int64_t rows, int64_t cols) {
    return m->choose(f, rows, cols);
  };
}

void ScheduleModel::save(const std::string& path) const {
  nn::NamedTensors t;
  HostTensor config(DType::Float64, {3});
  config.set(0, kVersion);
  config.set(1, kInputs);
  config.set(2, static_cast<double>(layers_.size()));
  t.emplace_back("config", config);
  t.emplace_back("input.mean", HostTensor::from(mean_, {kInputs}));
  t.emplace_back("input.scale", HostTensor::from(scale_, {kInputs}));
  std::vector<float> known;
  for (const Counts& c : known_) known.insert(known.end(), c.begin(), c.end());
  t.emplace_back("clusters", HostTensor::from(known, {static_cast<int64_t>(known_.size()),
                                                       LoopFeatures::kCount}));
  for (size_t k = 0; k < layers_.size(); ++k) {
    const Dense& d = layers_[k];
    t.emplace_back(layer_name(k, "weight"), HostTensor::from(d.w, {d.out, d.in}));
    t.emplace_back(layer_name(k, "bias"), HostTensor::from(d.b, {d.out}));
  }
  nn::save(path, t);
}

ScheduleModel ScheduleModel::load(const std::string& path) {
  const std::string what = cat(path, ": not a loop schedule model saved by tempo loops schedules");
  std::map<std::string, HostTensor> t;
  try {
    t = nn::load(path);
  } catch (const UserError& e) {
    throw UserError(cat(what, " (", e.what(), ")"));
  }
  auto get = [&](const std::string& name, std::vector<int64_t> shape) -> const HostTensor& {
    auto it = t.find(name);
    if (it == t.end()) throw UserError(cat(what, " (no tensor ", name, ")"));
    if (it->second.shape != shape)
      throw UserError(cat(what, " (", name, " has the wrong shape)"));
    return it->second;
  };
  const HostTensor& config = get("config", {3});
  if (config.at(0) != kVersion || config.at(1) != kInputs || config.at(2) < 1 ||
      config.at(2) > 8)
    throw UserError(cat(what, " (another version or input count)"));
  ScheduleModel m;
  auto floats = [](const HostTensor& h) {
    const HostTensor f = h.to(DType::Float32);
    return std::vector<float>(f.ptr<float>(), f.ptr<float>() + f.numel());
  };
  m.mean_ = floats(get("input.mean", {kInputs}));
  m.scale_ = floats(get("input.scale", {kInputs}));
  auto it = t.find("clusters");
  if (it == t.end() || it->second.shape.size() != 2 || it->second.shape[1] != LoopFeatures::kCount)
    throw UserError(cat(what, " (no clusters of the right shape)"));
  const std::vector<float> known = floats(it->second);
  for (size_t r = 0; r < known.size(); r += LoopFeatures::kCount) {
    Counts c;
    for (int k = 0; k < LoopFeatures::kCount; ++k) c[k] = static_cast<int>(known[r + k]);
    m.known_.insert(c);
  }
  int64_t in = kInputs;
  for (size_t k = 0; k < static_cast<size_t>(config.at(2)); ++k) {
    auto it = t.find(layer_name(k, "weight"));
    if (it == t.end() || it->second.shape.size() != 2 || it->second.shape[1] != in)
      throw UserError(cat(what, " (layer ", k, " is missing or has the wrong shape)"));
    Dense d;
    d.in = in;
    d.out = it->second.shape[0];
    d.w = floats(it->second);
    d.b = floats(get(layer_name(k, "bias"), {d.out}));
    m.layers_.push_back(std::move(d));
    in = d.out;
  }
  if (in != 1) throw UserError(cat(what, " (the last layer has ", in, " outputs, not 1)"));
  return m;
}

namespace {

// A generated program's inputs over rows x cols: per element, per row (a column) and per
// column (a row), one or more of each kind but the first.
struct ChainInputs {
  std::vector<RT> full, column, row;
};

// A random chain from full[0] over `inputs`, reducing rows at least once; the row sums it also
// returns go to `row_outputs`. Light chains (a sum of products, as in a gradient) are as likely
// as heavy ones (exponentials and logarithms, as in a log-softmax): their loops favour
// different orders.
RT random_chain(std::mt19937_64& rng, const ChainInputs& inputs, std::vector<RT>& row_outputs) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  auto other = [&]() -> const RT& {  // another input, of a random kind
    const std::vector<RT>* kinds[] = {&inputs.full, &inputs.column, &inputs.row};
    const std::vector<RT>& k = *kinds[pick(3)];
    return k.empty() ? inputs.full[pick(inputs.full.size())] : k[pick(k.size())];
  };
  RT h = inputs.full[0];
  bool reduced = false;
  const size_t steps = 1 + pick(8);
  for (size_t s = 0; s < steps || !reduced; ++s) {
    switch (pick(s + 1 < steps ? 10 : 4)) {  // the last steps reduce, so that every chain does
      case 0: {
        RT m = h.max(1, true);
        h = pick(2) ? h - m : (h - m).exp();
        reduced = true;
        break;
      }
      case 1: {
        RT sum = h.sum({1}, true);
        if (pick(2)) row_outputs.push_back(sum);
        const size_t how = pick(3);
        h = how == 0 ? h * sum.tanh() : how == 1 ? h - sum : h * sum;
        reduced = true;
        break;
      }
      case 2: h = h.log_softmax(1), reduced = true; break;
      case 3: h = h.softmax(1), reduced = true; break;
      case 4: h = h.tanh(); break;
      case 5: h = pick(2) ? h.sigmoid() * other() : h * other(); break;
      case 6: h = h + other(); break;
      case 7: h = h - other() * other(); break;
      case 8: h = (h.abs() + 1.0).log() - other(); break;
      default: h = h.square().minimum(4.0) * 0.5; break;
    }
  }
  return h;
}

}  // namespace

int64_t generate_loop_timings(int programs, uint64_t seed, const std::string& path) {
  if (programs < 1) throw UserError("generate at least one program");
  auto lines = [&] {
    std::ifstream in(path);
    int64_t n = 0;
    for (std::string l; std::getline(in, l);) n += !l.empty();
    return n;
  };
  const int64_t before = lines();
  std::mt19937_64 rng(seed);
  constexpr int64_t kSteps = 8;  // calls per loop: the measured search's 6 trials and more
  for (int p = 0; p < programs; ++p) {
    const int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(std::exp2(
                                                  static_cast<double>(rng() % 1500) / 100)));
    const int64_t cols = 1 + static_cast<int64_t>(rng() % backend::kNarrowColumns);
    Context ctx;
    Dim t = ctx.dim("t", "T");
    ChainInputs in;
    for (uint64_t k = 0, n = 1 + rng() % 4; k < n; ++k)
      in.full.push_back(ctx.rand_normal(Shape({rows, cols}), {t}));
    for (uint64_t k = 0, n = rng() % 3; k < n; ++k)
      in.column.push_back(ctx.rand_normal(Shape({rows, 1}), {t}));
    if (rng() % 3 == 0) in.row.push_back(ctx.rand_normal(Shape({cols}), {t}));
    std::vector<RT> row_outputs;
    const RT out = random_chain(rng, in, row_outputs);
    (rng() % 3 == 0 ? out.sum({1}) : out).retain();  // a third keep only a row sum
    for (const RT& r : row_outputs) r.retain();
    CompileOptions o;
    o.passes.vectorize = false;  // the loops run once per step, at (rows, cols)
    o.loop_schedules = backend::LoopSchedules::Measured;
    o.loop_timings = path;
    o.seed = seed + static_cast<uint64_t>(p);
    Executable exe = compile(ctx, {{t.bound, kSteps}}, o);
    exe.run();
  }
  const int64_t after = lines();
  return before > 0 ? after - before : std::max<int64_t>(0, after - 1);  // less the header
}

ScheduleScore score_schedules(
    const std::vector<LoopTiming>& data,
    const std::function<std::optional<LoopOrder>(const LoopTiming&)>& choose) {
  ScheduleScore s;
  for (const LoopTiming& t : data) {
    const bool measured_columns = t.columns_outer_s < backend::kSecondBelow * t.rows_outer_s;
    const std::optional<LoopOrder> order = choose(t);
    s.measured += !order;
    const bool columns = order ? *order == LoopOrder::ColumnsOuter : measured_columns;
    ++s.decisions;
    s.agreements += columns == measured_columns;
    s.chosen_s += columns ? t.columns_outer_s : t.rows_outer_s;
    s.rows_outer_s += t.rows_outer_s;
    s.columns_outer_s += t.columns_outer_s;
    s.best_s += std::min(t.rows_outer_s, t.columns_outer_s);
  }
  return s;
}

void set_loop_schedules(CompileOptions& o, const std::string& name, const std::string& what) {
  if (name.rfind("learned:", 0) == 0) {
    const std::string path = name.substr(8);
    if (path.empty()) throw UserError(cat(what, " learned:FILE needs the model's file"));
    o.loop_schedules = backend::LoopSchedules::Policy;
    o.loop_schedule_policy = ScheduleModel::load(path).policy();
    return;
  }
  try {
    o.loop_schedules = backend::parse_loop_schedules(name, what);
  } catch (const UserError&) {
    throw UserError(cat(what, " '", name,
                        "': expected rows, measured, columns or learned:FILE (a model from "
                        "tempo loops schedules)"));
  }
}

}  // namespace tempo::loops
