// Baselines for loop-nest optimization, each measured against the unoptimized program: the
// original schedule, isl's own scheduler (validity = proximity = the dependences, parallel loops
// where no dependence is carried), a beam search over the action space guided by measured time,
// and Polly (clang's polyhedral optimizer) on the unoptimized C file.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "loops/codegen.h"
#include "loops/program.h"
#include "loops/transform.h"

namespace tempo::loops {

struct Result {
  std::string method;
  bool ok = false;   // false: skipped or failed (see note)
  std::string note;  // why not ok; for the beam search the chosen transformations
  double ms = 0.0;
  double checksum = 0.0;
  std::string code;                             // the kernel's C code
  std::vector<std::pair<int, Action>> actions;  // beam search: (branch, action) in order
};

// A measurement into a result: ok unless it timed out (the note says so).
void record(Result& r, const Measurement& m);

Result run_unoptimized(const Program& p, Evaluator& ev);
// tile_size > 0: the permutable bands of two or more loops are tiled (the isl+tile column).
Result run_isl_scheduler(const Program& p, const Dependences& deps, Evaluator& ev,
                         int tile_size = 0);

struct BeamOptions {
  int width = 2;
  int depth = 3;
  bool square_tiles = true;  // only tiles of equal sizes (a third of the tiling actions)
  // Candidates' runs (0: the evaluator's repetitions) and, above 0, their time limit in runs of
  // the start schedule (plus 0.5 s): a schedule many times slower is never the beam's pick, and
  // one can run for minutes. Either one times the candidates in an evaluator of their own.
  int candidate_reps = 0;
  double max_slowdown = 0;
  int compile_jobs = 2;  // candidates compiled at a time (their runs are one at a time)
};
// Every step expands each kept schedule by every legal action on every branch; candidates whose
// checksum differs from `reference` are dropped (never expected: every schedule kept respects the
// dependences). The best schedule found is timed once more for the result.
Result run_beam(LoopEnv& env, Evaluator& ev, const BeamOptions& o, double reference);

bool polly_available();  // clang-14 with Polly and OpenMP compiles a test file
Result run_polly(const Program& p, const RunOptions& o);

}  // namespace tempo::loops
