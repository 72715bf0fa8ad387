// Environment switches: TEMPO_NO_<FEATURE>=1 and the like, read the same way everywhere.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tempo {

// Whether an environment switch is set (not empty, not 0).
inline bool env_flag(const char* variable) {
  const char* v = std::getenv(variable);
  return v && *v && *v != '0';
}

// The folder of Tempo's on-disk caches (generated kernels, schedules): $TEMPO_CACHE_DIR, else
// $XDG_CACHE_HOME/tempo, else $HOME/.cache/tempo, else tempo-cache in the temporary folder.
inline std::string cache_dir() {
  if (const char* d = std::getenv("TEMPO_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/tempo";
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/tempo";
  return (std::filesystem::temp_directory_path() / "tempo-cache").string();
}

}  // namespace tempo
