// Which of two implementations of a generated loop runs, per size (rows, cols). Both must compute
// the same values: the choice changes the time only (LoopSchedules, backend/codegen.h).
//   measured_choice  the search behind LoopSchedules::Measured: the first calls at each size
//                    alternate between the two, kTrials each, and later calls at that size run
//                    the one with the lower best time, the first unless the second is at least
//                    5% faster. With a `decide` function (LoopSchedules::Policy), each size is
//                    first put to it: the sizes it decides are not timed.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "backend/codegen.h"

namespace tempo::backend {

using LoopFn = void (*)(int64_t rows, int64_t cols, const void* const* in, void* const* out);
using LoopCall = std::function<void(int64_t, int64_t, const void* const*, void* const*)>;

constexpr int kTrials = 3;
// The second implementation runs only where its time is below this fraction of the first's.
constexpr double kSecondBelow = 0.95;

// `report` (may be empty) receives each decision: the size, both best times in seconds and
// whether the second was chosen.
using ChoiceReport =
    std::function<void(int64_t rows, int64_t cols, double first_s, double second_s, bool second)>;
// `decide(rows, cols)`: whether that size runs the second implementation, or nullopt to time
// both there. Each is called once per size (where at most 16 sizes are kept).
using SizeDecision = std::function<std::optional<bool>(int64_t rows, int64_t cols)>;
LoopCall measured_choice(LoopFn first, LoopFn second, ChoiceReport report = {},
                         SizeDecision decide = {});

// Appends one measured decision to a CSV file of loop timings (CompileOptions::loop_timings),
// writing the header first into an empty file: the cluster's LoopFeatures (by name), rows, cols
// and the best seconds of the RowsOuter and the ColumnsOuter loop. Safe across threads.
void append_loop_timing(const std::string& path, const LoopFeatures& cluster, int64_t rows,
                        int64_t cols, double rows_outer_s, double columns_outer_s);

}  // namespace tempo::backend
