#include "passes/dce.h"

#include "passes/graph_edit.h"

namespace tempo::passes {

bool eliminate_dead_code(Program& p) {
  const std::vector<bool> live = needed_ops(p);
  bool changed = false;
  for (bool l : live) changed |= !l;
  if (changed) compact(p, live);
  return changed;
}

}  // namespace tempo::passes
