// Internal to the driver: the backend process group behind a Communicator made by connect().
#pragma once

#include <memory>

#include "api/distributed.h"
#include "backend/distributed.h"

namespace tempo::driver {

// Null for a null communicator; UserError for one that connect() did not make.
std::shared_ptr<backend::ProcessGroup> process_group_of(const std::shared_ptr<Communicator>& c);

// Collectives meet only if every rank runs the same schedule: UserError on a rank whose schedule
// (its text) differs from rank 0's, instead of collectives that never meet or mix tensors.
void check_same_schedule(backend::ProcessGroup& pg, const std::string& schedule,
                         const std::string& where);

}  // namespace tempo::driver
