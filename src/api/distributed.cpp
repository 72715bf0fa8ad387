#include "api/distributed.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "api/context.h"
#include "util/error.h"

namespace tempo {

namespace {

const char* env_or_null(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

int64_t env_int(const char* name, const char* text) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0')
    throw UserError(cat("distributed: ", name, "='", text, "' is not an integer"));
  return v;
}

}  // namespace

bool DistributedConfig::launched() {
  return env_or_null("WORLD_SIZE") != nullptr;
}

DistributedConfig DistributedConfig::from_env() {
  DistributedConfig c;
  const char* world = env_or_null("WORLD_SIZE");
  const char* rank = env_or_null("RANK");
  if (!world) throw UserError("distributed: WORLD_SIZE is not set (start ranks with tempo launch)");
  if (!rank) throw UserError("distributed: RANK is not set (start ranks with tempo launch)");
  int64_t w = env_int("WORLD_SIZE", world), r = env_int("RANK", rank);
  if (w < 1 || w > 4096)
    throw UserError(cat("distributed: WORLD_SIZE=", w, " must be between 1 and 4096"));
  if (r < 0 || r >= w)
    throw UserError(cat("distributed: RANK=", r, " is outside [0, WORLD_SIZE=", w, ")"));
  c.world_size = static_cast<int>(w);
  c.rank = static_cast<int>(r);
  c.local_rank = c.rank;
  if (const char* lr = env_or_null("LOCAL_RANK")) {
    int64_t v = env_int("LOCAL_RANK", lr);
    if (v < 0 || v >= w)
      throw UserError(cat("distributed: LOCAL_RANK=", v, " is outside [0, WORLD_SIZE=", w, ")"));
    c.local_rank = static_cast<int>(v);
  }
  if (const char* a = env_or_null("MASTER_ADDR")) c.master_addr = a;
  if (const char* p = env_or_null("MASTER_PORT")) {
    int64_t v = env_int("MASTER_PORT", p);
    if (v < 1 || v > 65535)
      throw UserError(cat("distributed: MASTER_PORT=", v, " is not a TCP port (1..65535)"));
    c.master_port = static_cast<int>(v);
  }
  if (const char* t = env_or_null("TEMPO_DIST_TIMEOUT")) {
    char* end = nullptr;
    double v = std::strtod(t, &end);
    if (end == t || *end != '\0' || !(v > 0) || !std::isfinite(v))
      throw UserError(
          cat("distributed: TEMPO_DIST_TIMEOUT='", t, "' must be a positive number of seconds"));
    c.timeout_seconds = v;
  }
  return c;
}

void DistributedConfig::validate() const {
  if (world_size < 1) throw UserError(cat("distributed: world size ", world_size, " must be >= 1"));
  if (rank < 0 || rank >= world_size)
    throw UserError(cat("distributed: rank ", rank, " is outside [0, ", world_size, ")"));
  if (master_port < 1 || master_port > 65535)
    throw UserError(cat("distributed: port ", master_port, " is not a TCP port (1..65535)"));
  if (master_addr.empty()) throw UserError("distributed: the rendezvous address is empty");
  if (!(timeout_seconds > 0) || !std::isfinite(timeout_seconds))
    throw UserError(cat("distributed: timeout ", timeout_seconds, " s must be positive"));
}

int pick_free_port(const std::string& addr) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = 0;
  if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1)
    throw UserError(cat("distributed: '", addr, "' is not an IPv4 address"));
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw UserError(cat("distributed: no socket: ", std::strerror(errno)));
  socklen_t len = sizeof(sa);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    std::string why = std::strerror(errno);
    close(fd);
    throw UserError(cat("distributed: cannot bind a port on ", addr, ": ", why));
  }
  close(fd);
  return ntohs(sa.sin_port);
}

RT all_reduce(const RT& x, bool mean, Loc loc) {
  if (!x.defined()) throw UserError(cat("all_reduce at ", where(loc), ": undefined RT"));
  ir::Attrs a;
  a.ints = {mean ? 1 : 0};
  return x.ctx().add_op1(ir::OpKind::AllReduce, std::move(a), {x}, loc);
}

RT broadcast(const RT& x, int root, Loc loc) {
  if (!x.defined()) throw UserError(cat("broadcast at ", where(loc), ": undefined RT"));
  if (root < 0) throw UserError(cat("broadcast at ", where(loc), ": root rank ", root, " < 0"));
  ir::Attrs a;
  a.ints = {root};
  return x.ctx().add_op1(ir::OpKind::Broadcast, std::move(a), {x}, loc);
}

std::vector<RT> all_reduce_mean(const std::vector<RT>& xs, Loc loc) {
  if (xs.empty()) return {};
  bool one_bucket = true;
  for (const RT& x : xs)
    one_bucket = one_bucket && x.dtype() == xs[0].dtype() && x.domain() == xs[0].domain() &&
                 x.shape().is_static();
  std::vector<RT> out;
  if (!one_bucket || xs.size() == 1) {
    for (const RT& x : xs) out.push_back(all_reduce(x, true, loc));
    return out;
  }
  std::vector<RT> flat;
  for (const RT& x : xs) flat.push_back(x.flatten(loc));
  RT sum = all_reduce(cat(flat, int64_t{0}, loc), true, loc);
  int64_t at = 0;
  for (const RT& x : xs) {
    int64_t n = 1;
    for (const Expr& d : x.shape().dims) n *= d.value();
    out.push_back(sum.slice(0, Expr(at), Expr(at + n), loc).reshape(x.shape(), loc));
    at += n;
  }
  return out;
}

}  // namespace tempo
