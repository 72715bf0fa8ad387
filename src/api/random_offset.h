// Resuming a random program part-way: the draws of rand_uniform / rand_normal are functions of
// (seed, stream, point) (backend/kernels.cpp), so a program that restarts its dimension d at 0
// to continue a longer run from d = offset repeats that run's draws once every draw over d is
// shifted by the offset.
#pragma once

#include <cstdint>

#include "api/context.h"

namespace tempo {

// Makes every random draw made so far in `ctx` over `d` the one of point d + offset. Call after
// the program is built (draws made later are not shifted).
void offset_random_draws(Context& ctx, const Dim& d, int64_t offset);

}  // namespace tempo
