// Probability distributions over RTs (for policies): sampling draws fresh noise at every point
// of the parameters' domain.
#pragma once

#include "api/tempo.h"

namespace tempo::nn {

// The rows of a larger batch whose noise a sample draws: rank `index` of `count` data-parallel
// ranks holds rows index*B .. index*B + B - 1 of a batch of count*B (B: the first dimension), so
// the ranks together draw exactly what one process draws for the whole batch.
struct Shard {
  int64_t index = 0;
  int64_t count = 1;
};

// A categorical distribution over the last dimension of `logits` (unnormalized log-probs).
class Categorical {
 public:
  explicit Categorical(const RT& logits, Loc loc = Loc::current());
  const RT& logits() const { return logits_; }  // normalized: log-probabilities
  RT probs(Loc loc = Loc::current()) const;
  // Gumbel-max: argmax(logits + Gumbel noise), int64 of shape logits.shape[:-1].
  RT sample(Loc loc = Loc::current()) const;
  RT sample(const Shard& shard, Loc loc = Loc::current()) const;
  // log p(actions); actions of shape logits.shape[:-1] (any integer dtype).
  RT log_prob(const RT& actions, Loc loc = Loc::current()) const;
  RT entropy(Loc loc = Loc::current()) const;

 private:
  RT sample_with(const Shard* shard, Loc loc) const;
  RT logits_;
};

// A diagonal normal distribution; log_prob and entropy sum over the last dimension.
class Normal {
 public:
  Normal(const RT& mean, const RT& log_std, Loc loc = Loc::current());
  const RT& mean() const { return mean_; }
  const RT& log_std() const { return log_std_; }
  RT stddev(Loc loc = Loc::current()) const;
  // Reparameterized sample mean + std * N(0, 1) (gradients flow to mean and log_std).
  RT rsample(Loc loc = Loc::current()) const;
  RT rsample(const Shard& shard, Loc loc = Loc::current()) const;
  RT sample(Loc loc = Loc::current()) const;  // rsample without gradients
  RT sample(const Shard& shard, Loc loc = Loc::current()) const;
  RT log_prob(const RT& x, Loc loc = Loc::current()) const;
  RT entropy(Loc loc = Loc::current()) const;

 private:
  RT rsample_with(const Shard* shard, Loc loc) const;
  RT mean_, log_std_;
  Shape shape_;  // broadcast shape of mean and log_std
};

}  // namespace tempo::nn
