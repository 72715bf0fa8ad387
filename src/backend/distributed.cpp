// c10d over Gloo: the only translation unit that includes the distributed headers.
#include <atomic>
#include <chrono>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "backend/torch_collectives.h"
#include "util/error.h"

namespace tempo::backend {

namespace {

using Clock = std::chrono::steady_clock;

std::string message_of(const std::exception& e) {
  if (const auto* c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
  return e.what();
}

class GlooProcessGroup final : public TorchProcessGroup {
 public:
  explicit GlooProcessGroup(const ProcessGroupConfig& c) : config_(c) {
    const auto timeout =
        std::chrono::milliseconds(static_cast<int64_t>(c.timeout_seconds * 1000.0));
    const std::string where = cat(c.master_addr, ":", c.master_port);
    c10d::TCPStoreOptions so;
    so.port = static_cast<std::uint16_t>(c.master_port);
    so.isServer = c.rank == 0;
    so.numWorkers = c.world_size;
    so.waitWorkers = true;
    so.timeout = timeout;
    try {
      store_ = c10::make_intrusive<c10d::TCPStore>(c.master_addr, so);
    } catch (const std::exception& e) {
      throw UserError(cat("distributed: rank ", c.rank, " of ", c.world_size, ": ",
                          c.rank == 0 ? "cannot serve" : "cannot reach", " the rendezvous at ",
                          where, " within ", c.timeout_seconds, " s (", message_of(e), ")"));
    }
    auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
    // Loopback jobs stay on 127.0.0.1; otherwise Gloo binds the address this host's name
    // resolves to.
    const bool loopback = c.master_addr == "127.0.0.1" || c.master_addr == "localhost";
    opts->devices.push_back(loopback ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                     : c10d::ProcessGroupGloo::createDefaultDevice());
    opts->threads = 1;  // one collective at a time: the executor waits for each
    try {
      pg_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store_, c.rank, c.world_size, opts);
    } catch (const std::exception& e) {
      throw UserError(cat("distributed: rank ", c.rank, " of ", c.world_size,
                          ": the ranks did not all connect within ", c.timeout_seconds,
                          " s (rendezvous ", where, "): ", message_of(e)));
    }
  }

  int rank() const override { return config_.rank; }
  int world_size() const override { return config_.world_size; }
  int64_t collectives() const override { return count_; }
  double collective_seconds() const override { return seconds_; }

  void all_reduce_sum(torch::Tensor& t) override {
    std::vector<torch::Tensor> ts{t};
    run("all-reduce", [&] { return pg_->allreduce(ts); });
  }
  void broadcast(torch::Tensor& t, int root) override {
    std::vector<torch::Tensor> ts{t};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    run("broadcast", [&] { return pg_->broadcast(ts, o); });
  }
  int64_t broadcast_value(int64_t v, int root) override {
    torch::Tensor t = torch::full({1}, v, torch::kInt64);
    broadcast(t, root);
    return t.item<int64_t>();
  }
  void barrier() override {
    run("barrier", [&] { return pg_->barrier(); });
  }

 private:
  template <typename Start>
  void run(const char* what, Start start) {
    Clock::time_point t0 = Clock::now();
    try {
      c10::intrusive_ptr<c10d::Work> work = start();
      work->wait();
    } catch (const std::exception& e) {
      throw UserError(cat("distributed: rank ", config_.rank, " of ", config_.world_size, ": ",
                          what, " failed: another rank died or did not answer within ",
                          config_.timeout_seconds, " s (", message_of(e), ")"));
    }
    seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
    ++count_;
  }

  ProcessGroupConfig config_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
  int64_t count_ = 0;
  double seconds_ = 0;
};

}  // namespace

std::shared_ptr<ProcessGroup> make_process_group(const ProcessGroupConfig& config) {
  if (config.world_size < 1 || config.rank < 0 || config.rank >= config.world_size)
    throw UserError(
        cat("distributed: rank ", config.rank, " is outside [0, ", config.world_size, ")"));
  return std::make_shared<GlooProcessGroup>(config);
}

}  // namespace tempo::backend
