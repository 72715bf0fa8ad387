// Optimizers as recurrences over the parameters' steps (TEMPO §3, Fig. 8), usually the iteration
// dimension: each optimizer state (momentum, Adam's moments) is a placeholder m over (i) with
// m[0] = zeros and m[i + 1] = f(m[i], grad[i]); step() defines each parameter's
// p[i + 1] = p[i] - update. Nested steps (i, u) work the same way (nn::Steps).
//
//   RT lr = optim::exponential_decay(ctx, 1e-3, 0.99, i.var);   // 1e-3 * 0.99^i
//   optim::Adam opt(model.parameters(), lr);
//   optim::minimize(loss, opt);                                 // grad + step
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/tempo.h"
#include "nn/module.h"

namespace tempo::optim {

// A learning rate: a constant or an RT that may vary in the iteration dimension (a schedule).
class LearningRate {
 public:
  LearningRate(double value) : value_(value) {}  // NOLINT
  LearningRate(const RT& rt) : rt_(rt) {}        // NOLINT
  bool is_constant() const { return !rt_.defined(); }
  double value() const { return value_; }
  const RT& rt() const { return rt_; }
  // The rate as a float64 scalar RT.
  RT as_rt(Context& ctx, Loc loc) const;

 private:
  double value_ = 0.0;
  RT rt_;
};

// base * gamma^i (float32 scalar RT over i).
RT exponential_decay(Context& ctx, double base, double gamma, const Expr& i,
                     Loc loc = Loc::current());
// base + (end - base) * min(i, n) / n: linear from base at i = 0 to end at i = n (e.g. n = I).
RT linear_decay(Context& ctx, double base, double end, const Expr& i, const Expr& n,
                Loc loc = Loc::current());

// Scales gradients so that their global L2 norm is at most max_norm, as
// torch.nn.utils.clip_grad_norm_: coef = min(1, max_norm / (norm + 1e-6)). `total_norm`, if
// given, receives the norm before clipping.
std::vector<RT> clip_grad_norm(const std::vector<RT>& grads, double max_norm,
                               RT* total_norm = nullptr, Loc loc = Loc::current());

class Optimizer {
 public:
  explicit Optimizer(std::vector<nn::Parameter> params, LearningRate lr, Loc loc = Loc::current());
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Defines p[i + 1] for every parameter from its gradient (one per parameter, in order; each
  // of the parameter's type and domain). Call once.
  void step(const std::vector<RT>& grads, Loc loc = Loc::current());
  const std::vector<nn::Parameter>& params() const { return params_; }
  const LearningRate& lr() const { return lr_; }

  // One state tensor (a moment, a momentum buffer) of one parameter, in creation order: its
  // placeholder over the parameter's steps and its value after the current step (what a
  // checkpoint saves, read at the last step of an iteration).
  struct StateTensor {
    std::string name;  // "<parameter>.<state>", e.g. "weight.exp_avg"
    RT state, next;
  };
  const std::vector<StateTensor>& states() const { return states_; }
  // Continues a run from a checkpoint: `steps_done` steps ran before the first one here (Adam's
  // bias corrections count them, as do delay()'s) and the states start from `initial` (one per
  // state, in the order states() lists them; none: from zeros, e.g. after a warm-up that did
  // not update). Call before step(); step() throws UserError
  // when `initial` does not match the states it makes.
  void resume(int64_t steps_done, std::vector<HostTensor> initial);
  // The first `steps` steps leave the parameters and the states as they are (a warm-up, e.g.
  // DQN's acting before learning starts); after them, every `every`-th step updates (the
  // every-th, 2 every-th, ...: TD3's delayed policy updates) and the others leave them too. The
  // step count (Adam's bias corrections) counts the updates. Call before step().
  void delay(int64_t steps, int64_t every = 1);
  // A bool scalar RT over p's steps: whether step() updates p at its current step (e.g. to
  // update a target network along with it).
  RT updating(const nn::Parameter& p, Loc loc = Loc::current()) const;

 protected:
  // The next value of p given its gradient g (both at iteration i) and the learning rate
  // (float64 scalar RT).
  virtual RT next(size_t k, const nn::Parameter& p, const RT& g, const RT& lr, Loc loc) = 0;
  // A state placeholder s over p's steps, zeros of p's type at the first step.
  RT state(const nn::Parameter& p, const std::string& name, Loc loc);
  // Defines s at the next step as value.
  void set_state(const nn::Parameter& p, RT s, const RT& value);
  // A float64 scalar RT of the step count (1 at the first update).
  RT step_count(const nn::Parameter& p, Loc loc);

 private:
  std::vector<nn::Parameter> params_;
  LearningRate lr_;
  Loc loc_;
  bool stepped_ = false;
  std::vector<StateTensor> states_;
  int64_t steps_done_ = 0;
  int64_t delay_ = 0, every_ = 1;
  bool gated() const { return delay_ > 0 || every_ > 1; }
  std::optional<std::vector<HostTensor>> initial_;
};

// p <- p - lr * (momentum buffer or gradient), as torch.optim.SGD (dampening 0).
class SGD : public Optimizer {
 public:
  SGD(std::vector<nn::Parameter> params, LearningRate lr, double momentum = 0.0,
      double weight_decay = 0.0, bool nesterov = false, Loc loc = Loc::current());

 protected:
  RT next(size_t k, const nn::Parameter& p, const RT& g, const RT& lr, Loc loc) override;

 private:
  double momentum_, weight_decay_;
  bool nesterov_;
};

// torch.optim.Adam (L2 weight decay added to the gradient) and AdamW (decoupled weight decay).
class Adam : public Optimizer {
 public:
  Adam(std::vector<nn::Parameter> params, LearningRate lr = 1e-3, double beta1 = 0.9,
       double beta2 = 0.999, double eps = 1e-8, double weight_decay = 0.0,
       Loc loc = Loc::current());

 protected:
  RT next(size_t k, const nn::Parameter& p, const RT& g, const RT& lr, Loc loc) override;
  bool decoupled_ = false;

 private:
  double beta1_, beta2_, eps_, weight_decay_;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<nn::Parameter> params, LearningRate lr = 1e-3, double beta1 = 0.9,
        double beta2 = 0.999, double eps = 1e-8, double weight_decay = 1e-2,
        Loc loc = Loc::current());
};

// Gradients of loss with respect to the optimizer's parameters (tempo::grad), optionally clipped
// to a global norm (max_grad_norm > 0), then step().
void minimize(const RT& loss, Optimizer& optimizer, double max_grad_norm = 0.0,
              Loc loc = Loc::current());
// The same, checking that the optimizer updates exactly the module's parameters.
void minimize(const RT& loss, const nn::Module& module, Optimizer& optimizer,
              double max_grad_norm = 0.0, Loc loc = Loc::current());

}  // namespace tempo::optim
