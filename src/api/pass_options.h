// The compiler's optimization switches (part of CompileOptions; read by the passes layer).
#pragma once

namespace tempo {

// One switch per pass of the pipeline (passes/pipeline.cpp), all on by default.
struct PassOptions {
  bool simplify_indices = true;  // simplify every dependence expression and condition
  bool fold_constants = true;    // elementwise ops on constant fills become fills
  bool algebraic = true;         // identities such as x * 1 -> x (passes/algebraic.cpp's table)
  bool cse = true;               // common-subexpression elimination
  bool domain_reduction = true;  // drop dimensions an op's value does not vary along
  bool lifting = true;           // windows over x[t:T] / x[0:t+1] become scans (TEMPO §4.1)
  bool vectorize = true;         // per-timestep ops become batched ops (TEMPO §4.2)
  bool dce = true;               // dead-code elimination
  bool check_ir = false;         // validate the IR after every pass that changed it
  bool verbose = false;          // per pass: time and op count, to stderr

  // Every pass off: the program runs as written.
  static PassOptions none() {
    PassOptions o;
    o.simplify_indices = o.fold_constants = o.algebraic = o.cse = o.domain_reduction = o.lifting =
        o.vectorize = o.dce = false;
    return o;
  }
};

}  // namespace tempo
