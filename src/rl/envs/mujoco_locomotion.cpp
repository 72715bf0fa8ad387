// Gymnasium 1.2.2's MuJoCo locomotion environments, v5 (HalfCheetah, Hopper, Walker2d, Ant,
// Humanoid, with Gymnasium's default arguments), on the MuJoCo C library that Gymnasium's own
// environments run (PyPI's mujoco 3.3.7 wheel, which CMake finds in the reference packages'
// prefix) and with Gymnasium's own XML models: the same simulator build, model and operations
// give the same float64 trajectories bit for bit.
//
// Per copy one mjData (one mjModel shared by all copies). A step, as Gymnasium's MujocoEnv:
// ctrl = action (no clipping here; MuJoCo clamps ctrl to the actuators' ctrlrange), mj_step
// frame_skip times, mj_rnePostConstraint; x_velocity = (x after - x before) / dt with
// dt = timestep * frame_skip, x being qpos[0], the torso's (Ant) or the mass centre's (Humanoid);
// reward = (forward_weight * x_velocity + healthy_reward) - (ctrl_cost + contact_cost), each
// sum as NumPy computes it (LocoSpec below; a float32 action's squares summed in float32).
// Observation: qpos without x (and y for Ant, Humanoid), qvel (clipped to [-10, 10] for Hopper,
// Walker2d), then Ant's clipped contact forces or Humanoid's body quantities; kept in float64 by
// MuJoCo and rounded to float32 like the classic environments' observations. Terminated when
// unhealthy (not HalfCheetah); truncated at 1000 steps (Gymnasium's registered TimeLimit).
//
// Reset: mj_resetData, then qpos = qpos0 + U(-s, s) for each of the nq values in order, then
// qvel = U(-s, s) (Hopper, Walker2d, Humanoid) or s * N(0, 1) (HalfCheetah, Ant) for each of the
// nv values, then mj_forward. Uniforms as env.h documents; a standard normal is Box-Muller on two
// of them: u1 = 1 - U(0, 1) in (0, 1], u2 = U(0, 1), N = sqrt(-2 ln u1) cos(2 pi u2) (one draw
// per pair). The state() of a copy is MuJoCo's mjSTATE_INTEGRATION vector (mj_getState: time,
// qpos, qvel, act, qacc_warmstart, ctrl, ...), so that a restored copy continues exactly.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "rl/envs/classic.h"
#include "util/error.h"

#ifdef TEMPO_MUJOCO
#include <mujoco/mujoco.h>
#endif

namespace tempo::rl::detail {
namespace {

// Known in every build, so that a build without MuJoCo can say why they are missing.
const std::vector<std::string>& all_mujoco_names() {
  static const std::vector<std::string> names = {"HalfCheetah-v5", "Hopper-v5", "Walker2d-v5",
                                                 "Ant-v5", "Humanoid-v5"};
  return names;
}

}  // namespace

bool is_mujoco_env(const std::string& name) {
  for (const std::string& n : all_mujoco_names())
    if (n == name) return true;
  return false;
}

#ifndef TEMPO_MUJOCO

std::vector<std::string> mujoco_env_names() { return {}; }

std::unique_ptr<BatchedEnv> make_mujoco_env(const std::string& name, int64_t) {
  throw UserError(cat("environment \"", name, "\" needs MuJoCo, and this Tempo was built without "
                      "it: CMake found no libmujoco.so.3.3.7 in the reference packages' prefix "
                      "(scripts/setup.sh installs PyPI's mujoco there); reconfigure after that"));
}

#else

namespace {

constexpr int64_t kMaxSteps = 1000;

// NumPy's sum of n float32 or float64 values value(0..n): pairwise, eight accumulators in blocks
// of up to 128 values, a plain sum below 8 values, every addition in T (np.sum's order).
template <class T, class F>
T numpy_sum(int64_t n, const F& value, int64_t first = 0) {
  if (n < 8) {
    T s = 0;
    for (int64_t i = 0; i < n; ++i) s += value(first + i);
    return s;
  }
  if (n > 128) {
    int64_t half = n / 2;
    half -= half % 8;
    return numpy_sum<T>(half, value, first) + numpy_sum<T>(n - half, value, first + half);
  }
  T r[8];
  for (int j = 0; j < 8; ++j) r[j] = value(first + j);
  int64_t i = 8;
  for (; i < n - n % 8; i += 8)
    for (int j = 0; j < 8; ++j) r[j] += value(first + i + j);
  T s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
  for (; i < n; ++i) s += value(first + i);
  return s;
}

// ctrl_weight * np.sum(np.square(action)) with a float32 action: squares and sum in float32.
double float32_ctrl_cost(double weight, const float* action, int nu) {
  return weight * static_cast<double>(numpy_sum<float>(nu, [&](int64_t k) {
           return action[k] * action[k];
         }));
}

double square(double x) { return x * x; }
double clip(double x, double lo, double hi) { return std::min(std::max(x, lo), hi); }

bool within(double x, double lo, double hi) { return lo < x && x < hi; }  // false for NaN

// Per-environment parts of the v5 definitions (Gymnasium's defaults).
struct LocoSpec {
  const char* name;
  const char* xml;  // in Gymnasium's assets folder
  int frame_skip;
  int skipped_qpos;  // leading qpos values left out of the observation (x, or x and y)
  double forward_weight, healthy_reward, noise_scale;
  bool normal_velocity_noise;  // qvel noise s * N(0, 1), else U(-s, s)
  bool clip_velocity;          // observation's qvel clipped to [-10, 10]
  // The x position whose change per dt is the forward velocity.
  double (*x_position)(const mjModel*, const mjData*);
  // ctrl_cost + contact_cost after a step with `action`.
  double (*costs)(const mjModel*, const mjData*, const float* action);
  bool (*healthy)(const mjModel*, const mjData*);  // null: never terminates
  // Observation values after qpos and qvel: writes them to `out` (null: only counts them).
  int (*extras)(const mjModel*, const mjData*, float* out);
};

double qpos_x(const mjModel*, const mjData* d) { return d->qpos[0]; }
double torso_x(const mjModel*, const mjData* d) { return d->xpos[3 * 1 + 0]; }  // body 1

// Humanoid: the x of the mass centre, sum_b mass_b xipos_b / sum_b mass_b (np.einsum's
// sequential sum over bodies; np.sum's pairwise one over the masses).
double mass_center_x(const mjModel* m, const mjData* d) {
  double num = 0;
  for (int b = 0; b < m->nbody; ++b) num += m->body_mass[b] * d->xipos[3 * b];
  return num / numpy_sum<double>(m->nbody, [&](int64_t b) { return m->body_mass[b]; });
}

double cheetah_costs(const mjModel* m, const mjData*, const float* action) {
  return float32_ctrl_cost(0.1, action, m->nu);
}
double hopper_costs(const mjModel* m, const mjData*, const float* action) {
  return float32_ctrl_cost(1e-3, action, m->nu);
}

// Ant: 0.5 |action|^2 + 5e-4 |clip(cfrc_ext, -1, 1)|^2 (every body's 6 values, the world's too).
double ant_costs(const mjModel* m, const mjData* d, const float* action) {
  const double contact = 5e-4 * numpy_sum<double>(6 * m->nbody, [&](int64_t k) {
    return square(clip(d->cfrc_ext[k], -1.0, 1.0));
  });
  return float32_ctrl_cost(0.5, action, m->nu) + contact;
}

// Humanoid: 0.1 |ctrl|^2 (the float64 ctrl) + min(5e-7 |cfrc_ext|^2, 10).
double humanoid_costs(const mjModel* m, const mjData* d, const float*) {
  const double ctrl = 0.1 * numpy_sum<double>(m->nu, [&](int64_t k) { return square(d->ctrl[k]); });
  const double contact =
      5e-7 * numpy_sum<double>(6 * m->nbody, [&](int64_t k) { return square(d->cfrc_ext[k]); });
  return ctrl + std::min(contact, 10.0);
}

// Hopper: every qpos[2:] and qvel in (-100, 100), height qpos[1] > 0.7, angle qpos[2] in
// (-0.2, 0.2).
bool hopper_healthy(const mjModel* m, const mjData* d) {
  for (int k = 2; k < m->nq; ++k)
    if (!within(d->qpos[k], -100.0, 100.0)) return false;
  for (int k = 0; k < m->nv; ++k)
    if (!within(d->qvel[k], -100.0, 100.0)) return false;
  return within(d->qpos[1], 0.7, std::numeric_limits<double>::infinity()) &&
         within(d->qpos[2], -0.2, 0.2);
}

// Walker2d: height qpos[1] in (0.8, 2), angle qpos[2] in (-1, 1).
bool walker_healthy(const mjModel*, const mjData* d) {
  return within(d->qpos[1], 0.8, 2.0) && within(d->qpos[2], -1.0, 1.0);
}

// Ant: qpos and qvel finite, torso height qpos[2] in [0.2, 1] (bounds included).
bool ant_healthy(const mjModel* m, const mjData* d) {
  for (int k = 0; k < m->nq; ++k)
    if (!std::isfinite(d->qpos[k])) return false;
  for (int k = 0; k < m->nv; ++k)
    if (!std::isfinite(d->qvel[k])) return false;
  return 0.2 <= d->qpos[2] && d->qpos[2] <= 1.0;
}

// Humanoid: torso height qpos[2] in (1, 2).
bool humanoid_healthy(const mjModel*, const mjData* d) { return within(d->qpos[2], 1.0, 2.0); }

int no_extras(const mjModel*, const mjData*, float*) { return 0; }

// Copies n doubles to out (when not null) as float32; returns n.
int put(const double* v, int n, float* out, double lo = -HUGE_VAL, double hi = HUGE_VAL) {
  if (out != nullptr)
    for (int k = 0; k < n; ++k) out[k] = static_cast<float>(clip(v[k], lo, hi));
  return n;
}

// Ant: clip(cfrc_ext, -1, 1) of the bodies after the world.
int ant_extras(const mjModel* m, const mjData* d, float* out) {
  return put(d->cfrc_ext + 6, 6 * (m->nbody - 1), out, -1.0, 1.0);
}

// Humanoid: cinert, cvel of the bodies after the world, qfrc_actuator[6:], cfrc_ext likewise.
int humanoid_extras(const mjModel* m, const mjData* d, float* out) {
  const int nb = m->nbody - 1;
  int n = put(d->cinert + 10, 10 * nb, out);
  n += put(d->cvel + 6, 6 * nb, out ? out + n : nullptr);
  n += put(d->qfrc_actuator + 6, m->nv - 6, out ? out + n : nullptr);
  n += put(d->cfrc_ext + 6, 6 * nb, out ? out + n : nullptr);
  return n;
}

const LocoSpec kSpecs[] = {
    {"HalfCheetah-v5", "half_cheetah.xml", 5, 1, 1.0, 0.0, 0.1, true, false, qpos_x,
     cheetah_costs, nullptr, no_extras},
    {"Hopper-v5", "hopper.xml", 4, 1, 1.0, 1.0, 5e-3, false, true, qpos_x, hopper_costs,
     hopper_healthy, no_extras},
    {"Walker2d-v5", "walker2d_v5.xml", 4, 1, 1.0, 1.0, 5e-3, false, true, qpos_x, hopper_costs,
     walker_healthy, no_extras},
    {"Ant-v5", "ant.xml", 5, 2, 1.0, 1.0, 0.1, true, false, torso_x, ant_costs, ant_healthy,
     ant_extras},
    {"Humanoid-v5", "humanoid.xml", 5, 2, 1.25, 5.0, 1e-2, false, false, mass_center_x,
     humanoid_costs, humanoid_healthy, humanoid_extras},
};

double standard_normal(std::mt19937_64& rng) {
  const double u1 = 1.0 - reset_uniform(rng, 0.0, 1.0);
  const double u2 = reset_uniform(rng, 0.0, 1.0);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

struct ModelDeleter {
  void operator()(mjModel* m) const { mj_deleteModel(m); }
};
struct DataDeleter {
  void operator()(mjData* d) const { mj_deleteData(d); }
};
using ModelPtr = std::unique_ptr<mjModel, ModelDeleter>;
using DataPtr = std::unique_ptr<mjData, DataDeleter>;

// $TEMPO_MUJOCO_ASSETS, else the Gymnasium assets folder CMake found.
std::string assets_dir() {
  const char* env = std::getenv("TEMPO_MUJOCO_ASSETS");
  if (env != nullptr && *env != '\0') return env;
  return TEMPO_MUJOCO_ASSETS_DIR;
}

ModelPtr load_model(const LocoSpec& spec) {
  const std::string path = assets_dir() + "/" + spec.xml;
  if (!std::filesystem::is_regular_file(path)) {
    throw UserError(cat(spec.name, ": model file ", path, " not found; set TEMPO_MUJOCO_ASSETS "
                        "to Gymnasium's gymnasium/envs/mujoco/assets folder"));
  }
  char error[1000] = "";
  ModelPtr model(mj_loadXML(path.c_str(), nullptr, error, sizeof(error)));
  if (!model) throw UserError(cat(spec.name, ": MuJoCo cannot load ", path, ": ", error));
  return model;
}

Space box(int64_t n, const double* range) {  // range: [n][2] (low, high) pairs, or null
  Space s{{n}, false, 0, std::vector<float>(n), std::vector<float>(n)};
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t k = 0; k < n; ++k) {
    s.low[k] = range ? static_cast<float>(range[2 * k]) : -inf;
    s.high[k] = range ? static_cast<float>(range[2 * k + 1]) : inf;
  }
  return s;
}

class LocomotionEnv final : public BatchedEnv {
 public:
  LocomotionEnv(const LocoSpec& spec, int64_t num_envs)
      : BatchedEnv(num_envs),
        spec_(spec),
        model_(load_model(spec)),
        state_size_(mj_stateSize(model_.get(), mjSTATE_INTEGRATION)),
        dt_(model_->opt.timestep * spec.frame_skip),
        act_space_(box(model_->nu, model_->actuator_ctrlrange)),
        rngs_(num_envs),
        steps_(num_envs, 0),
        returns_(num_envs, 0.0) {
    for (int64_t i = 0; i < num_envs; ++i) {
      data_.emplace_back(mj_makeData(model_.get()));
      if (!data_.back()) throw UserError(cat(spec.name, ": MuJoCo could not allocate its data"));
    }
    obs_dim_ = model_->nq - spec.skipped_qpos + model_->nv +
               spec.extras(model_.get(), data_[0].get(), nullptr);
    obs_space_ = box(obs_dim_, nullptr);
  }

  const Space& observation_space() const override { return obs_space_; }
  const Space& action_space() const override { return act_space_; }
  std::string name() const override { return spec_.name; }

  std::vector<float> reset(uint64_t seed) override {
    std::vector<float> obs(num_envs() * obs_dim_);
    for (int64_t i = 0; i < num_envs(); ++i) {
      rngs_[i].seed(seed + static_cast<uint64_t>(i));
      restart(i, &obs[i * obs_dim_]);
    }
    started_ = true;
    return obs;
  }

  void step_into(const std::vector<float>& actions, StepResult& out) override;

  std::string state() const override {
    std::vector<double> sim(num_envs() * state_size_);
    for (int64_t i = 0; i < num_envs(); ++i)
      mj_getState(model_.get(), data_[i].get(), &sim[i * state_size_], mjSTATE_INTEGRATION);
    return StateWriter().word(spec_.name).values(sim).values(rngs_).values(steps_)
        .values(returns_).text();
  }

  void set_state(const std::string& text) override {
    std::vector<double> sim(num_envs() * state_size_);
    StateReader(text, spec_.name).word(spec_.name).values(sim).values(rngs_).values(steps_)
        .values(returns_).end();
    for (int64_t i = 0; i < num_envs(); ++i) {
      mj_setState(model_.get(), data_[i].get(), &sim[i * state_size_], mjSTATE_INTEGRATION);
      mj_forward(model_.get(), data_[i].get());
    }
    started_ = true;
  }

 private:
  void restart(int64_t i, float* obs) {
    const mjModel* m = model_.get();
    mjData* d = data_[i].get();
    std::mt19937_64& rng = rngs_[i];
    const double s = spec_.noise_scale;
    mj_resetData(m, d);
    for (int k = 0; k < m->nq; ++k) d->qpos[k] = m->qpos0[k] + reset_uniform(rng, -s, s);
    for (int k = 0; k < m->nv; ++k)
      d->qvel[k] = spec_.normal_velocity_noise ? s * standard_normal(rng)
                                               : reset_uniform(rng, -s, s);
    mj_forward(m, d);
    observe(d, obs);
    steps_[i] = 0;
    returns_[i] = 0.0;
  }

  // One environment step of copy i; returns the reward.
  double advance(int64_t i, const float* action, bool* terminated) {
    const mjModel* m = model_.get();
    mjData* d = data_[i].get();
    const double x_before = spec_.x_position(m, d);
    for (int k = 0; k < m->nu; ++k) d->ctrl[k] = action[k];
    for (int f = 0; f < spec_.frame_skip; ++f) mj_step(m, d);
    mj_rnePostConstraint(m, d);  // as Gymnasium does: cfrc_ext, read by Ant and Humanoid
    const double x_velocity = (spec_.x_position(m, d) - x_before) / dt_;
    double reward = spec_.forward_weight * x_velocity;
    *terminated = false;
    if (spec_.healthy != nullptr) {
      const bool healthy = spec_.healthy(m, d);
      reward = reward + (healthy ? spec_.healthy_reward : 0.0);
      *terminated = !healthy;
    }
    return reward - spec_.costs(m, d, action);
  }

  void observe(const mjData* d, float* obs) const {
    const mjModel* m = model_.get();
    const int nq = m->nq, nv = m->nv, skip = spec_.skipped_qpos;
    for (int k = skip; k < nq; ++k) obs[k - skip] = static_cast<float>(d->qpos[k]);
    const double bound = spec_.clip_velocity ? 10.0 : HUGE_VAL;
    put(d->qvel, nv, obs + nq - skip, -bound, bound);  // NaN stays NaN
    spec_.extras(m, d, obs + nq - skip + nv);
  }

  const LocoSpec& spec_;
  ModelPtr model_;
  std::vector<DataPtr> data_;
  int64_t obs_dim_ = 0, state_size_;
  double dt_;
  Space obs_space_, act_space_;
  std::vector<std::mt19937_64> rngs_;
  std::vector<int64_t> steps_;   // steps in the current episode
  std::vector<double> returns_;  // return of the current episode so far
  bool started_ = false;
};

void LocomotionEnv::step_into(const std::vector<float>& actions, StepResult& out) {
  check_step(actions, started_);
  const int64_t n = num_envs(), nu = model_->nu;
  out.prepare(n, obs_dim_);
  bool any_done = false;
  for (int64_t i = 0; i < n; ++i) {
    bool terminated = false;
    const double r = advance(i, &actions[i * nu], &terminated);
    ++steps_[i];
    returns_[i] += r;
    const bool truncated = steps_[i] >= kMaxSteps;
    observe(data_[i].get(), &out.obs[i * obs_dim_]);
    any_done |= out.record(i, r, terminated, truncated, returns_[i], steps_[i]);
  }
  if (!any_done) return;
  out.final_obs = out.obs;
  for (int64_t i = 0; i < n; ++i)
    if (out.terminated[i] || out.truncated[i]) restart(i, &out.obs[i * obs_dim_]);
}

}  // namespace

std::vector<std::string> mujoco_env_names() { return all_mujoco_names(); }

std::unique_ptr<BatchedEnv> make_mujoco_env(const std::string& name, int64_t num_envs) {
  for (const LocoSpec& spec : kSpecs)
    if (name == spec.name) return std::make_unique<LocomotionEnv>(spec, num_envs);
  throw UserError(cat("unknown MuJoCo environment \"", name, "\""));
}

#endif  // TEMPO_MUJOCO

}  // namespace tempo::rl::detail
