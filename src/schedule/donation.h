// Buffer donation (TEMPO §5.2) on a computed schedule: an op takes over an input point that it
// is the last to read, so its kernel may write its outputs into that buffer (parameters and
// optimizer state updated in place).
#pragma once

#include "ir/sdg.h"
#include "schedule/ast.h"

namespace tempo::schedule {

// The schedule with every deallocation moved up its statement list as far as no statement in
// between reads, moves or produces the points it frees (isl places them anywhere after the last
// reader), and each Exec followed by the deallocation of a point it reads marked as taking that
// input over (Stmt::donated): the paper's condition that the receiver runs after every other
// reader of the point, read off the schedule.
Schedule donate_buffers(const ir::Graph& g, const Schedule& s);

}  // namespace tempo::schedule
