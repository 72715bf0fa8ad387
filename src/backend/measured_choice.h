// The faster of two implementations of a generated loop, chosen by measuring them on the
// program's own calls (the search behind LoopSchedules::Measured, backend/codegen.h): the first
// calls at each size (rows, cols) alternate between the two, kTrials each, and later calls at
// that size run the one with the lower best time, the first unless the second is at least 5%
// faster. Both must compute the same values: which one runs changes the time only.
#pragma once

#include <cstdint>
#include <functional>

namespace tempo::backend {

using LoopFn = void (*)(int64_t rows, int64_t cols, const void* const* in, void* const* out);
using LoopCall = std::function<void(int64_t, int64_t, const void* const*, void* const*)>;

constexpr int kTrials = 3;

// `report` (may be empty) receives each decision: the size, both best times in seconds and
// whether the second was chosen.
using ChoiceReport =
    std::function<void(int64_t rows, int64_t cols, double first_s, double second_s, bool second)>;
LoopCall measured_choice(LoopFn first, LoopFn second, ChoiceReport report = {});

}  // namespace tempo::backend
