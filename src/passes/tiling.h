#pragma once

#include "passes/pipeline.h"

namespace tempo::passes {

// Tiling (TEMPO §4.3): for each temporal dimension d named in `PassOptions::tiles` with a tile
// size Z, a window read along d, `x[a:b]` (an edge's slice entry, or a Slice op over a vectorized
// d), that feeds ops reducing the window's axis (sums, matmul contractions, maxima) is split into
// tiles over a new temporal dimension `n_d` (bound: d's): the tiled ops run once per tile on
// `x[max(a, Z n):min(b, Z n + Z)]`, where the tile overlaps the window, and each reduction of the
// window axis becomes a partial over its tile followed by an aggregation over the tiles read as
// `[a // Z:(b + Z - 1) // Z]` (a sum, or a max for maxima). A reduced value the tiled ops read
// again (a softmax's max and sum) comes from its aggregation, so attention over `k[0:t+1]` runs as
// ceil((t + 1) / Z) tiles of at most Z rows, and a learner over a rollout `x[0:T]` runs T / Z
// tiles whose weight gradients are accumulated (gradient accumulation): with
// `PassOptions::interleave` (tiling for memory) a sum whose partial is 64 KiB or more is a running
// sum over the tiles, so one tile's partial is held at a time. Values the tiled ops read
// that span the whole window are sliced to the tile; an Expand or Reshape that makes the window
// axis gets the tile's size. Only the first and last tile of a window can be smaller than Z.
//
// A window whose ops cannot all be tiled is left as it is (documented no-op; `verbose` says why):
// the window's value read by a user function, a merge, a retained output or at another point; a
// reduction's indices read (argmax); ops without a tiling rule (gathers along the window axis,
// scans along it, convolutions, ...). Runs after vectorization, which creates the windows over
// rollouts that tiling splits.
bool tile_windows(Program& p);

}  // namespace tempo::passes
