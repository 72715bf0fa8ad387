// Environment switches: TEMPO_NO_<FEATURE>=1 and the like, read the same way everywhere.
#pragma once

#include <cstdlib>

namespace tempo {

// Whether an environment switch is set (not empty, not 0).
inline bool env_flag(const char* variable) {
  const char* v = std::getenv(variable);
  return v && *v && *v != '0';
}

}  // namespace tempo
