// What a compiled program holds: its own copy of the SDG, the schedule, the backend and the
// executor (Executable::Impl, declared in api/context.h).
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "api/context.h"
#include "driver/compile.h"
#include "runtime/backend.h"
#include "runtime/executor.h"
#include "schedule/schedule.h"

namespace tempo {

class Executable::Impl {
 public:
  const Context* ctx = nullptr;  // the Context compiled (only to check where RTs come from)
  ir::Graph graph;               // a copy: later changes to the Context do not affect it
  Dims dims;
  schedule::Schedule schedule;
  Bounds bounds;
  CompileOptions options;
  std::vector<std::pair<ir::OpId, int>> retained;
  std::vector<ir::OpId> op_map;  // the Context's op ids -> ids in `graph` (passes renumber)
  // Declared in this order so that the executor (which refers to the graph and the backend) is
  // destroyed first.
  std::unique_ptr<runtime::Backend> backend;
  std::unique_ptr<runtime::Executor> executor;
};

}  // namespace tempo
