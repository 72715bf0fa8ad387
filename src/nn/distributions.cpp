// Categorical and diagonal Normal distributions as RT expressions.
#include "nn/distributions.h"

#include <cmath>

#include "util/error.h"

namespace tempo::nn {

namespace {

std::string describe(const RT& x) {
  return x.ctx().graph().op(x.op()).describe();
}

// Broadcasts two static-or-symbolic shapes (a size-1 dimension stretches).
Shape broadcast(const RT& a, const RT& b, const char* what, Loc loc) {
  const Shape &x = a.shape(), &y = b.shape();
  size_t n = std::max(x.rank(), y.rank());
  std::vector<Expr> out(n);
  for (size_t k = 0; k < n; ++k) {
    const Expr* ex = k < n - x.rank() ? nullptr : &x[k - (n - x.rank())];
    const Expr* ey = k < n - y.rank() ? nullptr : &y[k - (n - y.rank())];
    if (!ex)
      out[k] = *ey;
    else if (!ey)
      out[k] = *ex;
    else if (ex->same(*ey) || ey->is_const(1))
      out[k] = *ex;
    else if (ex->is_const(1))
      out[k] = *ey;
    else
      throw UserError(cat(what, " at ", where(loc), ": shapes ", x.str(), " of ", describe(a),
                          " and ", y.str(), " of ", describe(b), " do not broadcast"));
  }
  return Shape(out);
}

// Noise of `shape` over `dom`: with a shard, rows shard.index*B .. +B of a draw for count*B rows
// (always sliced, so that a program's ops are the same for every count).
RT draw(const RT& like, const Shape& shape, const Dims& dom, const Shard* shard, bool normal,
        Loc loc) {
  Context& ctx = like.ctx();
  if (!shard)
    return normal ? ctx.rand_normal(shape, dom, like.dtype(), loc)
                  : ctx.rand_uniform(shape, dom, like.dtype(), loc);
  if (shape.rank() == 0 || shard->count < 1 || shard->index < 0 || shard->index >= shard->count)
    throw UserError(cat("sample at ", where(loc), ": shard ", shard->index, " of ", shard->count,
                        " needs 0 <= index < count and a batch dimension, shape ", shape.str()));
  std::vector<Expr> whole = shape.dims;
  const Expr rows = shape[0];
  whole[0] = rows * shard->count;
  RT full = normal ? ctx.rand_normal(Shape(whole), dom, like.dtype(), loc)
                   : ctx.rand_uniform(Shape(whole), dom, like.dtype(), loc);
  return full.slice(0, rows * shard->index, rows * (shard->index + 1), loc);
}

}  // namespace

Categorical::Categorical(const RT& logits, Loc loc) {
  if (!logits.defined()) throw UserError(cat("Categorical at ", where(loc), ": undefined logits"));
  if (logits.rank() == 0 || !ir::is_floating(logits.dtype()))
    throw UserError(cat("Categorical at ", where(loc),
                        ": logits must be a floating tensor with a "
                        "last (category) dimension, got ",
                        describe(logits)));
  logits_ = logits.log_softmax(-1, loc);
}

RT Categorical::probs(Loc loc) const {
  return logits_.exp(loc);
}

RT Categorical::sample(Loc loc) const {
  return sample_with(nullptr, loc);
}

RT Categorical::sample(const Shard& shard, Loc loc) const {
  return sample_with(&shard, loc);
}

RT Categorical::sample_with(const Shard* shard, Loc loc) const {
  RT u = draw(logits_, logits_.shape(), logits_.domain(), shard, false, loc);
  // Gumbel noise -log(-log(u)); u is kept away from 0 so that both logs stay finite.
  RT g = -((-(u.clamp(1e-10, 1.0, loc).log(loc))).log(loc));
  return (logits_ + g).detach(loc).argmax(-1, false, loc);
}

RT Categorical::log_prob(const RT& actions, Loc loc) const {
  RT a = actions.dtype() == DType::Int64 ? actions : actions.cast(DType::Int64, loc);
  if (a.rank() + 1 != logits_.rank())
    throw UserError(cat("Categorical::log_prob at ", where(loc), ": actions ", describe(actions),
                        " of shape ", actions.shape().str(), " do not match logits of shape ",
                        logits_.shape().str(),
                        " (expected the logits' shape without the last "
                        "dimension)"));
  return logits_.gather(-1, a.unsqueeze(-1, loc), loc).squeeze(-1, loc);
}

RT Categorical::entropy(Loc loc) const {
  return -((probs(loc) * logits_).sum(-1, false, loc));
}

Normal::Normal(const RT& mean, const RT& log_std, Loc loc) : mean_(mean), log_std_(log_std) {
  if (!mean.defined() || !log_std.defined())
    throw UserError(cat("Normal at ", where(loc), ": undefined mean or log_std"));
  shape_ = broadcast(mean, log_std, "Normal", loc);
  if (shape_.rank() == 0)
    throw UserError(cat("Normal at ", where(loc), ": needs at least one (event) dimension"));
}

RT Normal::stddev(Loc loc) const {
  return log_std_.exp(loc);
}

RT Normal::rsample(Loc loc) const {
  return rsample_with(nullptr, loc);
}

RT Normal::rsample(const Shard& shard, Loc loc) const {
  return rsample_with(&shard, loc);
}

RT Normal::rsample_with(const Shard* shard, Loc loc) const {
  Context& ctx = mean_.ctx();
  Dims dom = ctx.domain_union(mean_.domain(), log_std_.domain());
  RT z = draw(mean_, shape_, dom, shard, true, loc);
  return mean_ + stddev(loc) * z;
}

RT Normal::sample(Loc loc) const {
  return rsample(loc).detach(loc);
}

RT Normal::sample(const Shard& shard, Loc loc) const {
  return rsample(shard, loc).detach(loc);
}

RT Normal::log_prob(const RT& x, Loc loc) const {
  const double half_log_2pi = 0.5 * std::log(2.0 * M_PI);
  RT z = (x - mean_) / stddev(loc);
  RT lp = z.square(loc) * -0.5 - log_std_ - half_log_2pi;
  return lp.sum(-1, false, loc);
}

RT Normal::entropy(Loc loc) const {
  const double c = 0.5 + 0.5 * std::log(2.0 * M_PI);
  RT h = log_std_ + c;
  // Broadcast to the full event shape before summing (log_std may be shared across a batch).
  if (!h.shape().same(shape_)) h = h.expand(shape_, loc);
  return h.sum(-1, false, loc);
}

}  // namespace tempo::nn
