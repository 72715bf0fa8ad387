// Parameter initializers: RTs with no temporal domain (one draw per program run).
#pragma once

#include <cstdint>
#include <vector>

#include "api/tempo.h"

namespace tempo::nn::init {

RT uniform(Context& ctx, const std::vector<int64_t>& shape, double lo, double hi,
           Loc loc = Loc::current());
RT normal(Context& ctx, const std::vector<int64_t>& shape, double mean = 0.0, double std = 1.0,
          Loc loc = Loc::current());
RT zeros(Context& ctx, const std::vector<int64_t>& shape, Loc loc = Loc::current());
RT ones(Context& ctx, const std::vector<int64_t>& shape, Loc loc = Loc::current());

// Fans as PyTorch computes them: dim 1 (in) and dim 0 (out) times the receptive field.
int64_t fan_in(const std::vector<int64_t>& shape);
int64_t fan_out(const std::vector<int64_t>& shape);

// U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
RT xavier_uniform(Context& ctx, const std::vector<int64_t>& shape, double gain = 1.0,
                  Loc loc = Loc::current());
// U(-b, b) with b = sqrt(2 / (1 + a^2)) * sqrt(3 / fan_in) (leaky-relu gain, fan-in mode).
// a = sqrt(5) gives PyTorch's Linear/Conv default, b = 1 / sqrt(fan_in).
RT kaiming_uniform(Context& ctx, const std::vector<int64_t>& shape, double a = 0.0,
                   Loc loc = Loc::current());
// A (semi-)orthogonal matrix (rows x prod(rest)) times gain, from the QR decomposition of a
// standard normal draw with the sign correction of torch.nn.init.orthogonal_ (computed on the
// host once per run).
RT orthogonal(Context& ctx, const std::vector<int64_t>& shape, double gain = 1.0,
              Loc loc = Loc::current());

}  // namespace tempo::nn::init
