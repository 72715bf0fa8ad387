// Memory placement back in Tempo: a finished MMapGame on a program's traced instance becomes the
// swap policy (CompileOptions::swap_policy) of that program under a device-memory budget. The
// game decides, buffer by buffer, what stays in fast (device) memory; the outputs whose buffers
// it left in slow memory are what the program should swap to the host first.
//
//   ProgramPlacement p = place_rl_program(program, "learned:net.safetensors");
//   cfg.compile.swap_policy = swap_policy(p);  // then compile under cfg.compile.memory_budget
#pragma once

#include <map>
#include <string>
#include <vector>

#include "api/context.h"
#include "driver/compile.h"
#include "mmap/extract.h"
#include "mmap/game.h"

namespace tempo::mmap {

struct ProgramPlacement {
  std::string solver;  // "heuristic" or "learned:FILE"
  double game_return = 0, heuristic_return = 0;
  // Per op output (its description, as SwapCandidate::rt names it): the share of the bytes of the
  // buffers it holds (its own storages and those it shares, e.g. as a Merge) that the game left
  // in slow memory.
  std::map<std::string, double> slow_share;
  std::map<std::string, double> bytes;  // per op output: the bytes of those buffers
  // The `n` op outputs with the most bytes, with their share in slow memory ("RT 'obs' ...: 75%").
  std::string largest(size_t n) const;
};

// What a game's decisions (per buffer of `inst`) leave in slow memory, per op of the program.
ProgramPlacement placement_from_game(const Instance& inst, const TraceSummary& summary,
                                     const std::vector<Action>& decisions);

// Candidates the placement left mostly in slow memory first (by that share, then bytes), then the
// others by bytes, until the excess is covered; candidates under 1% of the excess (or 64 KiB) are
// left alone, as in the default policy.
SwapPolicy swap_policy(const ProgramPlacement& placement);

// Traces two iterations of the program, extracts its instance, and plays it with `solver`:
// "heuristic" (the XLA-style baseline) or "learned:FILE" (a network from `tempo mmap train`,
// searching with up to 400 simulations per move within 5 s for the game). UserError on another
// solver.
ProgramPlacement place_rl_program(const RlProgram& program, const std::string& solver);

}  // namespace tempo::mmap
