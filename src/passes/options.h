// The optimization switches of the pass pipeline (CompileOptions::passes).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "passes/rewrite_region.h"
#include "util/error.h"

namespace tempo {

// One switch per pass of the pipeline (passes/pipeline.cpp), all on by default but `recompute`.
struct PassOptions {
  bool simplify_indices = true;  // simplify every dependence expression and condition
  bool fold_constants = true;    // elementwise ops on constant fills become fills
  bool algebraic = true;         // identities such as x * 1 -> x (passes/algebraic.cpp's table)
  bool cse = true;               // common-subexpression elimination
  bool domain_reduction = true;  // drop dimensions an op's value does not vary along
  bool lifting = true;           // windows over x[t:T] / x[0:t+1] become scans (TEMPO §4.1)
  bool vectorize = true;         // per-timestep ops become batched ops (TEMPO §4.2)
  bool tiling = true;            // windows along the dims in `tiles` run tile by tile (§4.3)
  // A where() on a condition of the point alone (an optimizer's every-k-th step) runs only the
  // branch it takes, and what only that branch reads runs at those points only.
  bool conditional_execution = true;
  bool dce = true;               // dead-code elimination
  bool fusion = true;            // same-point dataflow regions become one op each (TEMPO §4.4)
  // Tile sizes per temporal dimension, {{"t", 64}}: a window x[a:b] along t that feeds a
  // reduction runs as tiles of at most 64 points along t (passes/tiling.h). Empty: no tiling.
  std::vector<std::pair<std::string, int64_t>> tiles;
  // Dimensions not in `tiles` whose stacked windows (x[0:T], k[0:t+1]) can exceed this many bytes
  // are tiled too, with the largest power-of-two tile whose window stays under it. 0: never.
  int64_t tile_above_bytes = 0;
  // Static tiling: the first and last tile of a window are padded to the tile size and masked in
  // the reductions, so every tile has one shape (the window's points stay dynamic in number).
  bool static_tiles = false;
  // Interleaving (TEMPO Fig. 23): what needs a recurrence only a bounded number of steps ahead
  // (an n-step learner reading r[t:min(t + n, T)]) stays per step instead of being vectorized,
  // and running sums of it stay recurrences instead of being lifted, so that the schedule runs
  // it as the recurrence goes and frees what it reads n steps later; a large sum over tiles
  // (passes/tiling.h) accumulates as the tiles run. CompileOptions::proximity turns it on, as
  // does the memory planner. What needs a whole recurrence (Monte-Carlo returns) is batched as
  // before.
  bool interleave = false;
  // Recomputation (passes/recompute.h): an elementwise activation kept through a loop for a
  // later reader is recomputed there from the inputs that reader keeps anyway. Off by default
  // (it trades compute for memory); the memory planner turns it on, with `interleave`, when a
  // program does not fit its budget, before it swaps anything.
  bool recompute = false;
  // Graph rewrites (passes/rewrites.h): each same-point region of matmuls, elementwise and
  // movement ops is handed to `rewrite_policy` (TASO's search: rewrite::set_rewrites), which may
  // replace it by an equivalent graph. Without a policy the pass changes nothing.
  bool rewrites = true;
  RewritePolicy rewrite_policy;
  bool check_ir = false;  // validate the IR after every pass that changed it
  bool verbose = false;   // per pass: time and op count, to stderr

  // Each pass's name (as verbose output and `tempo train --no-pass NAME` write it) and switch,
  // in pipeline order (passes/pipeline.cpp's kPipeline, where the names are written once).
  struct Switch {
    const char* name;
    bool PassOptions::*on;
  };
  static const std::vector<Switch>& switches();
  // Turns the named pass on or off ("all" names every pass); a UserError lists the names.
  void set(const std::string& name, bool on) {
    std::string names = "all";
    for (const Switch& s : switches()) {
      if (name == s.name || name == "all") this->*s.on = on;
      names += std::string(", ") + s.name;
    }
    if (name == "all") return;
    for (const Switch& s : switches())
      if (name == s.name) return;
    throw UserError(cat("unknown pass '", name, "'; the passes are ", names));
  }

  // Every pass off: the program runs as written.
  static PassOptions none() {
    PassOptions o;
    o.set("all", false);
    return o;
  }
};

}  // namespace tempo
