// The schedule cache: schedules computed before, read back from disk. isl takes most of a
// compile's time (0.8-1.2 s for the RL programs, minutes for the largest); the next run of the
// same program (a training script started again, a sweep over seeds, a test) schedules nothing.
//
// An entry is named by a 128-bit hash of everything compute_schedule's result depends on: the
// optimized SDG's text form with its dimensions, the ScheduleOptions that shape the schedule,
// isl's version, and the build of the scheduler (the file it was loaded from, its size and
// modification time), so that a rebuilt Tempo never reads an older build's schedules. Only
// schedules that were computed are stored; failures are computed again, and so report their
// errors every time. An entry that does not parse (truncated, edited) is computed again and
// replaced.
#pragma once

#include <optional>
#include <string>

#include "schedule/schedule.h"

namespace tempo::schedule {

// The text form of a schedule (one statement per line, fields separated by tabs, children after
// their parent) and back. parse_schedule(schedule_text(s)).str(g) == s.str(g); malformed text
// is a UserError naming the line.
std::string schedule_text(const Schedule& s);
Schedule parse_schedule(const std::string& text);

// The cache entry of one compute_schedule call in `dir` (created on first store).
class ScheduleCache {
 public:
  ScheduleCache(std::string dir, const ir::Graph& g, const ScheduleOptions& options);
  // The stored schedule, with `from_cache` set; nothing if there is none or it does not parse.
  std::optional<Schedule> load() const;
  // Writes the entry (atomically: concurrent compiles of one program may both store it). A
  // cache that cannot be written is skipped with one warning per process.
  void store(const Schedule& s) const;
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_, header_;
};

}  // namespace tempo::schedule
