// Internal to the driver: the backend process group behind a Communicator made by connect().
#pragma once

#include <memory>

#include "api/distributed.h"
#include "backend/distributed.h"

namespace tempo::driver {

// Null for a null communicator; UserError for one that connect() did not make.
std::shared_ptr<backend::ProcessGroup> process_group_of(const std::shared_ptr<Communicator>& c);

}  // namespace tempo::driver
