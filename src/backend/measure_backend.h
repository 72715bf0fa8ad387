// A backend that computes nothing and allocates nothing: each value is only its size, taken from
// the op's output type at the point. Running a schedule on it gives the tracked memory of a real
// run (same stores, same deallocations, evictions and loads) in a fraction of the time: the
// compiler plans memory (budgets, swapping) with it before anything runs.
#pragma once

#include <memory>

#include "ir/op_kind.h"
#include "runtime/backend.h"

namespace tempo::backend {

std::unique_ptr<runtime::Backend> make_measure_backend();

// Kinds whose LibTorch lowering returns a view of its first input (no new memory).
bool is_view(ir::OpKind kind);

}  // namespace tempo::backend
