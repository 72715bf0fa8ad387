// tempo::connect: the api's Communicator over the backend's process group (the driver is the
// layer that sees both).
#include "driver/distributed.h"
#include "driver/compile.h"

#include "util/error.h"
#include "util/hash.h"

namespace tempo {

namespace {

class BackendCommunicator final : public Communicator {
 public:
  explicit BackendCommunicator(std::shared_ptr<backend::ProcessGroup> pg) : pg_(std::move(pg)) {}
  int rank() const override { return pg_->rank(); }
  int world_size() const override { return pg_->world_size(); }
  int64_t collectives() const override { return pg_->collectives(); }
  double collective_seconds() const override { return pg_->collective_seconds(); }
  void barrier() override { pg_->barrier(); }
  const std::shared_ptr<backend::ProcessGroup>& process_group() const { return pg_; }

 private:
  std::shared_ptr<backend::ProcessGroup> pg_;
};

}  // namespace

std::shared_ptr<Communicator> connect(const DistributedConfig& config) {
  config.validate();
  backend::ProcessGroupConfig c;
  c.rank = config.rank;
  c.world_size = config.world_size;
  c.master_addr = config.master_addr;
  c.master_port = config.master_port;
  c.timeout_seconds = config.timeout_seconds;
  return std::make_shared<BackendCommunicator>(backend::make_process_group(c));
}

namespace driver {

std::shared_ptr<backend::ProcessGroup> process_group_of(const std::shared_ptr<Communicator>& c) {
  if (!c) return nullptr;
  auto* bc = dynamic_cast<BackendCommunicator*>(c.get());
  if (!bc)
    throw UserError(
        "CompileOptions::communicator must come from tempo::connect (another "
        "Communicator cannot carry the backend's collectives)");
  return bc->process_group();
}

void check_same_schedule(backend::ProcessGroup& pg, const std::string& schedule,
                         const std::string& where) {
  if (pg.world_size() == 1) return;
  const auto mine = static_cast<int64_t>(fnv1a(schedule));
  if (pg.broadcast_value(mine, 0) != mine)
    throw UserError(cat("compile at ", where, ": rank ", pg.rank(), " of ", pg.world_size(),
                        " compiled another schedule than rank 0; every rank must build the same "
                        "program with the same options and bounds, or their collectives would "
                        "not meet"));
}

}  // namespace driver

}  // namespace tempo
