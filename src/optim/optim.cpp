// Optimizers, learning-rate schedules and gradient clipping as RT recurrences.
#include "optim/optim.h"

#include <cmath>

#include "util/error.h"

namespace tempo::optim {

namespace {

std::string describe(const RT& x) {
  return x.ctx().graph().op(x.op()).describe();
}

RT f64(Context& ctx, double v, Loc loc) {
  return ctx.constant(v, Shape(), DType::Float64, {}, loc);
}

}  // namespace

RT LearningRate::as_rt(Context& ctx, Loc loc) const {
  if (!rt_.defined()) return f64(ctx, value_, loc);
  if (rt_.rank() != 0)
    throw UserError(
        cat("learning rate ", describe(rt_), " must be a scalar, has shape ", rt_.shape().str()));
  return rt_.dtype() == DType::Float64 ? rt_ : rt_.cast(DType::Float64, loc);
}

RT exponential_decay(Context& ctx, double base, double gamma, const Expr& i, Loc loc) {
  RT n = ctx.symbol(i, loc).cast(DType::Float64, loc);
  return (f64(ctx, gamma, loc).pow(n, loc) * base).cast(DType::Float32, loc);
}

RT linear_decay(Context& ctx, double base, double end, const Expr& i, const Expr& n, Loc loc) {
  RT k = ctx.symbol(sym::min(i, n), loc).cast(DType::Float64, loc);
  RT total = ctx.symbol(n, loc).cast(DType::Float64, loc);
  return (k / total * (end - base) + base).cast(DType::Float32, loc);
}

std::vector<RT> clip_grad_norm(const std::vector<RT>& grads, double max_norm, RT* total_norm,
                               Loc loc) {
  if (grads.empty()) throw UserError(cat("clip_grad_norm at ", where(loc), ": no gradients"));
  if (!(max_norm > 0))
    throw UserError(cat("clip_grad_norm at ", where(loc), ": max_norm must be positive"));
  RT sq;
  for (const RT& g : grads) {
    if (!g.defined())
      throw UserError(cat("clip_grad_norm at ", where(loc), ": undefined gradient"));
    RT s = g.square(loc).sum({}, false, loc);
    sq = sq.defined() ? sq + s : s;
  }
  RT norm = sq.sqrt(loc);
  if (total_norm) *total_norm = norm;
  RT coef = (max_norm / (norm + 1e-6)).minimum(1.0, loc);
  std::vector<RT> out;
  for (const RT& g : grads) out.push_back(g * coef.cast(g.dtype(), loc));
  return out;
}

// ---- Optimizer -------------------------------------------------------------------------------

Optimizer::Optimizer(std::vector<nn::Parameter> params, LearningRate lr, Loc loc)
    : params_(std::move(params)), lr_(std::move(lr)), loc_(loc) {
  if (params_.empty()) throw UserError(cat("optimizer at ", where(loc), " has no parameters"));
  for (const nn::Parameter& p : params_) {
    if (!p.defined()) throw UserError(cat("optimizer at ", where(loc), ": undefined parameter"));
    if (!p.trainable())
      throw UserError(cat("optimizer at ", where(loc), ": parameter '", p.param_name(),
                          "' (created at ", where(p.loc()),
                          ") is constant (created without an iteration dimension)"));
  }
}

RT Optimizer::state(const nn::Parameter& p, const std::string& name, Loc loc) {
  Context& ctx = p.ctx();
  const std::string full = p.param_name() + "." + name;
  RT first;
  if (initial_) {
    const size_t k = states_.size();
    if (k >= initial_->size())
      throw UserError(cat("optimizer created at ", where(loc_), ": the checkpoint holds ",
                          initial_->size(), " optimizer states, the program needs more"));
    const HostTensor& v = (*initial_)[k];
    if (v.shape != p.type().shape.static_dims() || v.dtype != p.type().dtype)
      throw UserError(cat("optimizer state ", k, " ('", full, "') has type ", p.type().str(),
                          " but the checkpoint holds a ", ir::dtype_name(v.dtype), " tensor of ",
                          v.shape.size(), " dims"));
    first = ctx.tensor(v, loc);
  } else {
    first = ctx.constant(0.0, p.type().shape, p.type().dtype, {}, loc);
  }
  RT s = p.steps().state(first, full, loc);
  states_.push_back(StateTensor{full, s, RT()});
  return s;
}

void Optimizer::set_state(const nn::Parameter& p, RT s, const RT& value) {
  RT next_value = gated() ? tempo::where(updating(p, loc_), value, s, loc_) : value;
  p.steps().advance(s, next_value);
  for (StateTensor& st : states_)
    if (st.state.op() == s.op()) st.next = next_value;
}

RT Optimizer::step_count(const nn::Parameter& p, Loc loc) {
  // Steps after the delay, this one included, over the steps between two updates.
  const Expr after = p.steps().count() + (1 + steps_done_ - delay_);
  return p.ctx().symbol(every_ > 1 ? after / every_ : after, loc).cast(DType::Float64, loc);
}

RT Optimizer::updating(const nn::Parameter& p, Loc loc) const {
  Context& ctx = p.ctx();
  const Expr step = p.steps().count() + steps_done_;
  RT started = ctx.symbol(step, loc) >= static_cast<double>(delay_);
  if (every_ == 1) return started;
  return started && ctx.symbol((step + (1 - delay_)) % every_, loc) == 0.0;
}

void Optimizer::delay(int64_t steps, int64_t every) {
  if (stepped_)
    throw UserError(cat("optimizer created at ", where(loc_), ": delay() after step()"));
  if (steps < 0)
    throw UserError(cat("optimizer created at ", where(loc_), ": negative delay ", steps));
  if (every < 1)
    throw UserError(cat("optimizer created at ", where(loc_), ": updates every ", every,
                        " steps (must be at least 1)"));
  delay_ = steps;
  every_ = every;
}

void Optimizer::resume(int64_t steps_done, std::vector<HostTensor> initial) {
  if (stepped_)
    throw UserError(cat("optimizer created at ", where(loc_), ": resume() after step()"));
  steps_done_ = steps_done;
  if (!initial.empty()) initial_ = std::move(initial);
}

void Optimizer::step(const std::vector<RT>& grads, Loc loc) {
  if (stepped_)
    throw UserError(cat("optimizer created at ", where(loc_), ": step() called twice (again at ",
                        where(loc), ")"));
  if (grads.size() != params_.size())
    throw UserError(cat("step at ", where(loc), ": ", grads.size(), " gradients for ",
                        params_.size(), " parameters"));
  Context& ctx = params_[0].ctx();
  RT lr = lr_.as_rt(ctx, loc);
  for (size_t k = 0; k < params_.size(); ++k) {
    const nn::Parameter& p = params_[k];
    const RT& g = grads[k];
    if (!g.defined())
      throw UserError(cat("step at ", where(loc), ": gradient ", k, " (of '", p.param_name(),
                          "') is undefined"));
    bool same_shape = g.shape().rank() == p.type().shape.rank();
    for (size_t d = 0; same_shape && d < g.shape().rank(); ++d)
      same_shape = g.shape()[d].same(p.type().shape[d]);
    if (!same_shape)
      throw UserError(cat("step at ", where(loc), ": gradient ", describe(g), " has shape ",
                          g.shape().str(), " but parameter '", p.param_name(), "' has shape ",
                          p.type().shape.str()));
    for (const Dim& d : g.domain())
      if (!p.steps().contains(d))
        throw UserError(cat("step at ", where(loc), ": gradient ", describe(g), " of '",
                            p.param_name(), "' varies in ", d.name(),
                            ", not only in the parameter's steps ", p.steps().str(),
                            " (reduce it first, e.g. with mean)"));
    for (const Dim& d : lr.domain())
      if (!p.steps().contains(d))
        throw UserError(cat("learning rate ", describe(lr_.rt()), " varies in ", d.name(),
                            "; it may vary only in the steps ", p.steps().str()));
    RT gg = g.dtype() == p.dtype() ? g : g.cast(p.dtype(), loc);
    RT updated = next(k, p, gg, lr, loc);
    p.set_update(gated() ? tempo::where(updating(p, loc), updated, p, loc) : updated, loc);
  }
  if (initial_ && initial_->size() != states_.size())
    throw UserError(cat("optimizer created at ", where(loc_), ": the checkpoint holds ",
                        initial_->size(), " optimizer states, the program has ", states_.size()));
  stepped_ = true;
}

// ---- SGD -------------------------------------------------------------------------------------

SGD::SGD(std::vector<nn::Parameter> params, LearningRate lr, double momentum, double weight_decay,
         bool nesterov, Loc loc)
    : Optimizer(std::move(params), std::move(lr), loc),
      momentum_(momentum),
      weight_decay_(weight_decay),
      nesterov_(nesterov) {
  if (nesterov && momentum <= 0)
    throw UserError(cat("SGD at ", where(loc), ": nesterov needs a positive momentum"));
}

RT SGD::next(size_t, const nn::Parameter& p, const RT& g, const RT& lr, Loc loc) {
  RT d = g;
  if (weight_decay_ != 0) d = d + p * weight_decay_;
  if (momentum_ != 0) {
    RT buf = state(p, "momentum_buffer", loc);
    // buf[0] = 0 makes the first update buf = g, as torch initializes it.
    RT buf_new = buf * momentum_ + d;
    set_state(p, buf, buf_new);
    d = nesterov_ ? d + buf_new * momentum_ : buf_new;
  }
  return p - lr.cast(p.dtype(), loc) * d;
}

// ---- Adam / AdamW ----------------------------------------------------------------------------

Adam::Adam(std::vector<nn::Parameter> params, LearningRate lr, double beta1, double beta2,
           double eps, double weight_decay, Loc loc)
    : Optimizer(std::move(params), std::move(lr), loc),
      beta1_(beta1),
      beta2_(beta2),
      eps_(eps),
      weight_decay_(weight_decay) {
  if (beta1 < 0 || beta1 >= 1 || beta2 < 0 || beta2 >= 1)
    throw UserError(
        cat("Adam at ", where(loc), ": betas must lie in [0, 1), got (", beta1, ", ", beta2, ")"));
}

RT Adam::next(size_t, const nn::Parameter& p, const RT& g, const RT& lr, Loc loc) {
  Context& ctx = p.ctx();
  const DType dt = p.dtype();
  RT d = g;
  RT base = p;
  if (weight_decay_ != 0) {
    if (decoupled_)
      base = p * (1.0 - lr * weight_decay_).cast(dt, loc);
    else
      d = d + p * weight_decay_;
  }
  RT m = state(p, "exp_avg", loc);
  RT v = state(p, "exp_avg_sq", loc);
  RT m_new = m * beta1_ + d * (1.0 - beta1_);
  RT v_new = v * beta2_ + d.square(loc) * (1.0 - beta2_);
  set_state(p, m, m_new);
  set_state(p, v, v_new);
  RT n = step_count(p, loc);
  RT bc1 = 1.0 - f64(ctx, beta1_, loc).pow(n, loc);
  RT bc2 = 1.0 - f64(ctx, beta2_, loc).pow(n, loc);
  RT step_size = (lr / bc1).cast(dt, loc);
  RT denom = v_new.sqrt(loc) / bc2.sqrt(loc).cast(dt, loc) + eps_;
  return base - step_size * m_new / denom;
}

AdamW::AdamW(std::vector<nn::Parameter> params, LearningRate lr, double beta1, double beta2,
             double eps, double weight_decay, Loc loc)
    : Adam(std::move(params), std::move(lr), beta1, beta2, eps, weight_decay, loc) {
  decoupled_ = true;
}

}  // namespace tempo::optim
