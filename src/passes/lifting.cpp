#include "passes/lifting.h"

namespace tempo::passes {

bool lift_scans(Program& p) {
  return false;
}

}  // namespace tempo::passes
